//! The filter fixtures: every data file libtiledb wrote under `testdata/filters/` (one tile per
//! file) decodes with the pipeline read from the array's own schema to exactly the cells
//! libtiledb reads back, and re-encoding those bytes gives libtiledb's file byte for byte for
//! every deterministic pipeline.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use tessera_filters::FilterPipeline;
use tessera_schema::{ArraySchema, Attribute, json::cell_json};
use tessera_tile::{TileCodec, VarTileCodec};
use tessera_types::{FORMAT_VERSION, FilterType};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn manifest() -> Json {
    let text = std::fs::read_to_string(testdata().join("filters/manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether encoding with `p` is reproducible: LZ4 output depends on the implementation
/// (lz4_flex vs C lz4 1.10), every other filter is byte-exact in Tessera.
fn deterministic(p: &FilterPipeline) -> bool {
    !p.contains(FilterType::Lz4)
}

/// Whether libtiledb's output for `data` through `p` holds uninitialised bytes: a
/// bit-width-reduction window stored raw (bits = type width) leaves its `window_min` unset.
fn has_raw_bwr_window(
    p: &FilterPipeline,
    datatype: tessera_types::Datatype,
    cell_size: usize,
    data: &[u8],
) -> bool {
    let Some(k) = p.filters.iter().position(|f| f.filter_type() == FilterType::BitWidthReduction)
    else {
        return false;
    };
    let prefix = FilterPipeline::new(p.filters[..=k].to_vec());
    let types = prefix.stage_datatypes(datatype);
    let width = types[k].size();
    let codec = prefix.codec(datatype, cell_size, FORMAT_VERSION).unwrap();
    let chunk = (65_536 / cell_size).max(1) * cell_size;
    data.chunks(chunk).any(|c| {
        let md = codec.encode_chunk(c).unwrap().metadata;
        // u32 total, u32 windows, then per window: min (width bytes), u8 bits, u32 bytes
        let windows =
            md.get(4..8).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap())) as usize;
        (0..windows).any(|w| {
            let at = 8 + w * (width + 5) + width;
            md.get(at).is_some_and(|&bits| usize::from(bits) >= 8 * width)
        })
    })
}

struct Decoded {
    /// The unfiltered bytes of each file, by file name.
    raw: HashMap<String, Vec<u8>>,
    /// Each attribute's cells as JSON.
    cells: Vec<Vec<Json>>,
}

fn decode_array(array: &Json, schema: &ArraySchema) -> Decoded {
    let dir = testdata().join(array["fragment"].as_str().unwrap());
    let n = array["cell_num"].as_u64().unwrap() as usize;
    let read = |f: &str| {
        std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{}/{f}: {e}", dir.display()))
    };
    let mut raw = HashMap::new();
    let mut cells = Vec::new();
    for (i, attr) in schema.attributes.iter().enumerate() {
        let what = format!("{} attribute {}", array["name"], attr.name);
        let validity = attr.nullable.then(|| {
            let codec = TileCodec::validity(&schema.validity_filters, FORMAT_VERSION).unwrap();
            let v = codec
                .decode(&read(&format!("a{i}_validity.tdb")))
                .unwrap_or_else(|e| panic!("{what} validity: {e}"));
            raw.insert(format!("a{i}_validity.tdb"), v.clone());
            v
        });
        let values: Vec<Json> = if attr.is_var() {
            let codec = VarTileCodec::new(
                &attr.filters,
                &schema.offsets_filters,
                attr.datatype,
                FORMAT_VERSION,
            )
            .unwrap();
            let var = codec
                .decode(&read(&format!("a{i}.tdb")), &read(&format!("a{i}_var.tdb")))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(var.cell_count(), n, "{what}");
            raw.insert(format!("a{i}_var.tdb"), var.data.clone());
            if !codec.is_string_path() {
                raw.insert(
                    format!("a{i}.tdb"),
                    var.offsets.iter().flat_map(|o| o.to_le_bytes()).collect(),
                );
            }
            (0..n)
                .map(|c| cell_json(attr.datatype, attr.cell_val_num, var.cell(c).unwrap()))
                .collect()
        } else {
            let codec = TileCodec::fixed_data(
                &attr.filters,
                attr.datatype,
                attr.cell_val_num,
                FORMAT_VERSION,
            )
            .unwrap();
            let data =
                codec.decode(&read(&format!("a{i}.tdb"))).unwrap_or_else(|e| panic!("{what}: {e}"));
            let size = attr.cell_size().unwrap();
            assert_eq!(data.len(), n * size, "{what}");
            let values = data
                .chunks_exact(size)
                .map(|c| cell_json(attr.datatype, attr.cell_val_num, c))
                .collect();
            raw.insert(format!("a{i}.tdb"), data);
            values
        };
        let values = match validity {
            Some(v) => values
                .into_iter()
                .zip(v)
                .map(|(x, valid)| if valid == 0 { Json::Null } else { x })
                .collect(),
            None => values,
        };
        cells.push(values);
    }
    Decoded { raw, cells }
}

fn expected_cells(array: &Json, attrs: &[Attribute]) -> Vec<Vec<Json>> {
    let text =
        std::fs::read_to_string(testdata().join(array["cells_file"].as_str().unwrap())).unwrap();
    let rows: Vec<serde_json::Map<String, Json>> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    attrs.iter().map(|a| rows.iter().map(|r| r[&a.name].clone()).collect()).collect()
}

#[test]
fn every_filter_fixture_decodes_to_what_libtiledb_reads() {
    let m = manifest();
    let arrays = m["arrays"].as_array().unwrap();
    assert!(arrays.len() >= 28);
    let mut files_checked = 0;
    for array in arrays {
        let name = array["name"].as_str().unwrap();
        let schema_file =
            std::fs::read(testdata().join(array["schema_file"].as_str().unwrap())).unwrap();
        let schema = ArraySchema::parse_file(&schema_file).unwrap();
        let decoded = decode_array(array, &schema);
        let expected = expected_cells(array, &schema.attributes);
        for (a, (got, want)) in schema.attributes.iter().zip(decoded.cells.iter().zip(&expected)) {
            for (c, (g, w)) in got.iter().zip(want).enumerate() {
                assert_eq!(g, w, "{name}.{} cell {c}", a.name);
            }
        }
        for f in array["files"].as_array().unwrap() {
            let file = f["file"].as_str().unwrap();
            if f.get("skipped").and_then(Json::as_bool) == Some(true) {
                let bytes =
                    std::fs::read(testdata().join(array["fragment"].as_str().unwrap()).join(file))
                        .unwrap();
                assert_eq!(bytes, [0u8; 8], "{name}/{file}: skipped offsets tile");
                continue;
            }
            let raw = decoded.raw.get(file).unwrap_or_else(|| panic!("{name}/{file} not decoded"));
            assert_eq!(sha256_hex(raw), f["unfiltered_sha256"].as_str().unwrap(), "{name}/{file}");
            files_checked += 1;
        }
    }
    assert!(files_checked > 200, "{files_checked}");
}

#[test]
fn deterministic_pipelines_encode_byte_identical_to_libtiledb() {
    let m = manifest();
    let mut identical = 0;
    for array in m["arrays"].as_array().unwrap() {
        let name = array["name"].as_str().unwrap();
        let schema_file =
            std::fs::read(testdata().join(array["schema_file"].as_str().unwrap())).unwrap();
        let schema = ArraySchema::parse_file(&schema_file).unwrap();
        let decoded = decode_array(array, &schema);
        let dir = testdata().join(array["fragment"].as_str().unwrap());
        for (i, attr) in schema.attributes.iter().enumerate() {
            let what = format!("{name}.{}", attr.name);
            if attr.is_var() {
                let codec = VarTileCodec::new(
                    &attr.filters,
                    &schema.offsets_filters,
                    attr.datatype,
                    FORMAT_VERSION,
                )
                .unwrap();
                let data = &decoded.raw[&format!("a{i}_var.tdb")];
                let var = codec
                    .decode(
                        &std::fs::read(dir.join(format!("a{i}.tdb"))).unwrap(),
                        &std::fs::read(dir.join(format!("a{i}_var.tdb"))).unwrap(),
                    )
                    .unwrap();
                let enc =
                    codec.encode(&var.offsets, data).unwrap_or_else(|e| panic!("{what}: {e}"));
                if deterministic(&attr.filters) {
                    assert_eq!(
                        enc.data,
                        std::fs::read(dir.join(format!("a{i}_var.tdb"))).unwrap(),
                        "{what}: var data tile"
                    );
                    identical += 1;
                }
                if deterministic(&schema.offsets_filters) || codec.is_string_path() {
                    assert_eq!(
                        enc.offsets,
                        std::fs::read(dir.join(format!("a{i}.tdb"))).unwrap(),
                        "{what}: offsets tile"
                    );
                    identical += 1;
                }
            } else if deterministic(&attr.filters)
                && !has_raw_bwr_window(
                    &attr.filters,
                    attr.datatype,
                    attr.cell_size().unwrap(),
                    &decoded.raw[&format!("a{i}.tdb")],
                )
            {
                let codec = TileCodec::fixed_data(
                    &attr.filters,
                    attr.datatype,
                    attr.cell_val_num,
                    FORMAT_VERSION,
                )
                .unwrap();
                let enc = codec
                    .encode(&decoded.raw[&format!("a{i}.tdb")])
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(
                    enc,
                    std::fs::read(dir.join(format!("a{i}.tdb"))).unwrap(),
                    "{what}: data tile"
                );
                identical += 1;
            }
            if attr.nullable && deterministic(&schema.validity_filters) {
                let codec = TileCodec::validity(&schema.validity_filters, FORMAT_VERSION).unwrap();
                let enc = codec.encode(&decoded.raw[&format!("a{i}_validity.tdb")]).unwrap();
                assert_eq!(
                    enc,
                    std::fs::read(dir.join(format!("a{i}_validity.tdb"))).unwrap(),
                    "{what}: validity tile"
                );
                identical += 1;
            }
        }
    }
    assert!(identical > 200, "{identical}");
}
