//! `tessera show --png`, `tessera fragments --svg` and `tessera read --format arrow|parquet`
//! on the libtiledb-written fixtures: golden snapshots of the SVG text and of the decoded PNG
//! (size, text chunks, a digest of the pixels and a few pixels), and exports read back.

use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::tessera;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/fragments")
        .join(name)
        .display()
        .to_string()
}

fn ok(args: &[&str]) -> String {
    let (success, out, err) = tessera(args);
    assert!(success, "tessera {args:?}: {err}");
    out
}

/// The decoded PNG as a JSON view: size, text chunks, a digest of the RGBA pixels, the
/// pixels at a few places.
fn png_view(path: &Path) -> serde_json::Value {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let pixels = &pixels[..info.buffer_size()];
    let texts: Vec<(String, String)> = reader
        .info()
        .uncompressed_latin1_text
        .iter()
        .map(|t| (t.keyword.clone(), t.text.clone()))
        .collect();
    let at = |x: u32, y: u32| {
        let i = ((y * info.width + x) * 4) as usize;
        hex::encode(&pixels[i..i + 4])
    };
    json!({
        "width": info.width,
        "height": info.height,
        "color": format!("{:?}", info.color_type),
        "texts": texts,
        "sha256": hex::encode(Sha256::digest(pixels)),
        "pixels": {
            "top_left": at(0, 0),
            "centre": at(info.width / 2, info.height / 2),
            "bar_top": at(info.width - 10, 0),
            "bar_bottom": at(info.width - 10, info.height - 1),
        },
    })
}

#[test]
fn show_dense_heat_map() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("a.png");
    let png = png.to_str().unwrap();
    let out = ok(&["show", &fixture("dense_overwrites"), "--attr", "b", "--png", png]);
    assert!(out.starts_with("wrote ") && out.contains("1200 cells"), "{out}");
    insta::assert_json_snapshot!("show_dense_overwrites_b", png_view(Path::new(png)));
    // A slice.
    let out = ok(&[
        "show",
        &fixture("dense_overwrites"),
        "--attr",
        "a",
        "--range",
        "r=5:12",
        "--range",
        "c=0:20",
        "--png",
        png,
    ]);
    assert!(out.contains("168 cells"), "{out}");
    insta::assert_json_snapshot!("show_dense_overwrites_a_slice", png_view(Path::new(png)));
}

#[test]
fn show_sparse_scatter() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("v.png");
    let png = png.to_str().unwrap();
    let out = ok(&["show", &fixture("sparse_int64"), "--attr", "v", "--png", png]);
    assert!(out.starts_with("wrote "), "{out}");
    insta::assert_json_snapshot!("show_sparse_int64_v", png_view(Path::new(png)));
}

#[test]
fn show_refusals() {
    let png = std::env::temp_dir().join("tessera-never-written.png");
    let png = png.to_str().unwrap();
    for (args, words) in [
        (
            vec!["show", &fixture("sparse_string_float_dims"), "--attr", "a", "--png", png],
            "numeric",
        ),
        (vec!["show", &fixture("dense_overwrites"), "--attr", "nope", "--png", png], "nope"),
    ] {
        let (success, _, err) = tessera(&args);
        assert!(
            !success && err.trim().lines().count() == 1 && err.contains(words),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn fragments_svg() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["dense_overwrites", "sparse_int64", "dense_attrs"] {
        let svg = dir.path().join(format!("{name}.svg"));
        let out = ok(&["fragments", &fixture(name), "--svg", svg.to_str().unwrap()]);
        assert!(out.starts_with("wrote "), "{out}");
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg ") && text.trim_end().ends_with("</svg>"));
        insta::assert_snapshot!(format!("fragments_svg_{name}"), text);
    }
}

fn jsonl_rows(array: &str) -> usize {
    ok(&["read", array, "--format", "jsonl"]).lines().count()
}

#[test]
fn read_as_arrow_and_parquet() {
    use arrow_array::RecordBatchReader;

    let dir = tempfile::tempdir().unwrap();
    for name in ["sparse_int64", "dense_attrs", "sparse_attrs"] {
        let array = fixture(name);
        let rows = jsonl_rows(&array);
        let arrow: PathBuf = dir.path().join(format!("{name}.arrow"));
        ok(&["read", &array, "--format", "arrow", "--output", arrow.to_str().unwrap()]);
        let reader =
            arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&arrow).unwrap(), None)
                .unwrap();
        let names: Vec<String> =
            reader.schema().fields().iter().map(|f| f.name().clone()).collect();
        let got: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(got, rows, "{name}");

        let parquet: PathBuf = dir.path().join(format!("{name}.parquet"));
        ok(&["read", &array, "--format", "parquet", "--output", parquet.to_str().unwrap()]);
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(&parquet).unwrap(),
        )
        .unwrap()
        .build()
        .unwrap();
        let p_names: Vec<String> =
            reader.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(p_names, names, "{name}");
        let got: usize = reader.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(got, rows, "{name}");
    }
    // --output only with those formats, and they need it.
    let (success, _, err) = tessera(&["read", &fixture("sparse_int64"), "--format", "arrow"]);
    assert!(!success && err.contains("--output"), "{err}");
    let (success, _, err) =
        tessera(&["read", &fixture("sparse_int64"), "--format", "csv", "--output", "x"]);
    assert!(!success && err.contains("--output"), "{err}");
}
