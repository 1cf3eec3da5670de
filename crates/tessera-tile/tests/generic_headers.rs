//! insta snapshots (a JSON view) of the generic-tile headers of every filter fixture's schema
//! file and fragment metadata file, as libtiledb 2.30 wrote them; each tile also decodes.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tessera_tile::{GenericTileHeader, read_generic_tile_at};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn view(h: &GenericTileHeader) -> Value {
    let filters: Vec<Value> = h
        .pipeline
        .filters
        .iter()
        .map(|f| {
            let mut bytes = Vec::new();
            f.write(&mut bytes);
            json!({"type": f.filter_type().name(), "options": hex::encode(&bytes[5..])})
        })
        .collect();
    json!({
        "version": h.version,
        "persisted_size": h.persisted_size,
        "tile_size": h.tile_size,
        "datatype": h.datatype.name(),
        "cell_size": h.cell_size,
        "encryption_type": h.encryption_type.name(),
        "filter_pipeline_size": h.filter_pipeline_size,
        "max_chunk_size": h.pipeline.max_chunk_size,
        "filters": filters,
    })
}

/// Headers of the generic tiles in `bytes[..end]`, each decoded to check it is whole.
fn headers(bytes: &[u8], end: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < end {
        let (header, _) = GenericTileHeader::parse(&bytes[at as usize..]).unwrap();
        let (_, next) = read_generic_tile_at(bytes, at).unwrap();
        out.push(view(&header));
        at = next;
    }
    assert_eq!(at, end);
    out
}

#[test]
fn generic_tile_headers_of_the_filter_fixtures() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(testdata().join("filters/manifest.json")).unwrap(),
    )
    .unwrap();
    for array in manifest["arrays"].as_array().unwrap() {
        let name = array["name"].as_str().unwrap();
        let schema =
            std::fs::read(testdata().join(array["schema_file"].as_str().unwrap())).unwrap();
        let fm = std::fs::read(testdata().join(array["fragment_metadata_file"].as_str().unwrap()))
            .unwrap();
        // The fragment metadata file ends with a footer and its u64 length.
        let footer_len = u64::from_le_bytes(fm[fm.len() - 8..].try_into().unwrap());
        let tiles_end = fm.len() as u64 - 8 - footer_len;
        let view = json!({
            "schema": headers(&schema, schema.len() as u64),
            "fragment_metadata": headers(&fm, tiles_end),
        });
        insta::assert_json_snapshot!(name, view);
    }
}
