//! The bad-data corpus (`testdata/bad/`, made by `cargo xtask bad-corpus`): every corrupt
//! file gives exactly the error listed in [`EXPECTED`] (its variant, as the `Debug` form
//! starts, and the words its message must hold: the structure, the field, the offset), when
//! read the way the engine reads a file of its kind. The inventory test fails when a file of
//! the folder has no expectation here or no entry in `manifest.json`, or the reverse.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use tessera::EncryptionKey;
use tessera::layers::fragment::{
    ConsolidatedCommits, ConsolidatedFragmentMeta, DeleteCommit, FragmentMetadata, FragmentName,
    IgnoreFile, VacuumFile,
};
use tessera::layers::query::condition::DeleteCondition;
use tessera::layers::query::metadata;
use tessera::layers::schema::{ArraySchema, Enumeration};
use tessera::layers::tile::{TileCodec, read_generic_tile};
use tessera::layers::types::FORMAT_VERSION;

/// What reading a file must give.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// An error whose `Debug` form starts with `variant` and whose message holds every word.
    Err { variant: &'static str, words: &'static [&'static str] },
    /// No error (the format cannot tell the corruption), and a value whose `Debug` form holds
    /// every word.
    Ok { words: &'static [&'static str] },
}

const fn err(variant: &'static str, words: &'static [&'static str]) -> Expect {
    Expect::Err { variant, words }
}

/// The expected outcome of every file of `testdata/bad/`.
#[rustfmt::skip]
const EXPECTED: &[(&str, Expect)] = &[
    // Files of an array libtiledb encrypted with AES-256-GCM, read with the manifest's key.
    ("encrypted/schema_bitflip_tag.tdb", err("Tile(DecodeChunk { chunk: 0, offset: 65, source: Authentication { what: \"metadata\", part: 0 }", &["fails authentication (wrong encryption key, or the data was altered)"])),
    ("encrypted/schema_bitflip_ciphertext.tdb", err("Tile(DecodeChunk { chunk: 0, offset: 65, source: Authentication { what: \"data\", part: 0 }", &["fails authentication"])),
    ("encrypted/schema_truncated.tdb", err(r#"Tile(Format(Truncated { structure: "generic tile", field: "tile data","#, &["truncated at tile data"])),
    ("encrypted/schema_wrong_key.tdb", err("Tile(DecodeChunk { chunk: 0, offset: 65, source: Authentication { what: \"metadata\", part: 0 }", &["wrong encryption key"])),
    ("encrypted/schema_no_key.tdb", err("Tile(Encryption(", &["encrypted with AES-256-GCM: an encryption key is needed"])),
    ("encrypted/data_tile_bitflip_tag.tdb", err("DecodeChunk { chunk: 0, offset: 8, source: Authentication { what: \"metadata\", part: 0 }", &["fails authentication"])),
    ("encrypted/data_tile_truncated.tdb", err("Framing {", &["chunk 0"])),
    // Schema files (`ArraySchema::parse_file`).
    ("schema/truncated.tdb", err(r#"Tile(Format(Truncated { structure: "generic tile", field: "tile data", offset: 52,"#, &["generic tile: truncated at tile data (offset 52: need 109 bytes, 99 left)"])),
    ("schema/truncated_header.tdb", err(r#"Tile(Format(Truncated { structure: "generic tile header", field: "datatype", offset: 20,"#, &["truncated at datatype (offset 20"])),
    ("schema/bitflip_deflate.tdb", err("Tile(DecodeChunk { chunk: 0, offset: 60, source: Corrupt { filter: Gzip,", &["tile chunk 0 (framed at offset 60)", "gzip", "incorrect data check"])),
    ("schema/inflated_persisted_size.tdb", err(r#"Tile(Format(Truncated { structure: "generic tile", field: "tile data", offset: 52, needed: 1109,"#, &["need 1109 bytes, 109 left"])),
    ("schema/inflated_tile_size.tdb", err(r#"Tile(SizeMismatch { structure: "generic tile", expected: 172, actual: 171 })"#, &["generic tile: unfiltered size is 171 bytes, expected 172"])),
    ("schema/inflated_filter_count.tdb", err(r#"Malformed { structure: "array schema", field: "coords filters", offset: 16,"#, &["coords filters at offset 16", "filter count at offset 4", "1000000 filters cannot fit in 147 bytes"])),
    ("schema/version_23.tdb", err(r#"Tile(Format(Invalid { structure: "generic tile header", field: "version", offset: 0,"#, &["format version 23 is not one TileDB 2.30 writes or reads"])),
    ("schema/version_payload_23.tdb", err(r#"UnsupportedVersion { structure: "array schema", version: 23,"#, &["format version 23 is not supported"])),
    // Version 4 is read since old formats are (tessera_schema::previous::v1_v4): a version-22
    // payload read with the version-4 layout fails on its coords filters.
    ("schema/version_payload_4.tdb", err(r#"Malformed { structure: "array schema", field: "coords filters", offset: 15,"#, &["256 filters cannot fit in 148 bytes"])),
    // Enumeration files (generic tile, then `Enumeration::parse`).
    ("enumeration/truncated.tdb", err(r#"Format(Truncated { structure: "generic tile", field: "tile data", offset: 52,"#, &["need 133 bytes, 123 left"])),
    ("enumeration/bitflip_deflate.tdb", err("DecodeChunk { chunk: 0, offset: 60, source: Corrupt { filter: Gzip,", &["tile chunk 0 (framed at offset 60)", "deflate decompression error"])),
    ("enumeration/inflated_persisted_size.tdb", err(r#"Format(Truncated { structure: "generic tile", field: "tile data", offset: 52, needed: 1133,"#, &["need 1133 bytes, 133 left"])),
    ("enumeration/inflated_name_length.tdb", err(r#"Malformed { structure: "enumeration", field: "enumeration name", offset: 8,"#, &["length 1000000 exceeds the 125 bytes left"])),
    ("enumeration/version_23.tdb", err(r#"Format(Invalid { structure: "generic tile header", field: "version", offset: 0,"#, &["format version 23"])),
    ("enumeration/version_payload_9.tdb", err(r#"Malformed { structure: "enumeration", field: "enumeration version", offset: 0,"#, &["version 9 is newer than 0"])),
    // Generic tiles (`read_generic_tile`).
    ("generic_tile/truncated_pipeline.tdb", err(r#"Format(Truncated { structure: "generic tile header", field: "filter pipeline", offset: 34, needed: 18, available: 6 })"#, &["truncated at filter pipeline (offset 34: need 18 bytes, 6 left)"])),
    ("generic_tile/bitflip_datatype.tdb", err(r#"Format(Invalid { structure: "generic tile header", field: "datatype", offset: 20,"#, &["unknown datatype id 132"])),
    ("generic_tile/bitflip_encryption.tdb", err("Encryption(", &["the tile is encrypted with AES-256-GCM: an encryption key is needed"])),
    ("generic_tile/inflated_persisted_size.tdb", err(r#"Format(Invalid { structure: "generic tile header", field: "persisted_size", offset: 4,"#, &["puts the end of the tile past u64::MAX"])),
    ("generic_tile/inflated_pipeline_size.tdb", err(r#"Format(Invalid { structure: "generic tile header", field: "filter_pipeline_size", offset: 30,"#, &["is 22 but the pipeline uses 18 bytes"])),
    ("generic_tile/inflated_filter_count.tdb", err(r#"Format(Invalid { structure: "filter pipeline", field: "filter count", offset: 38,"#, &["1000 filters cannot fit in 10 bytes"])),
    ("generic_tile/version_0.tdb", err(r#"Format(Invalid { structure: "generic tile header", field: "version", offset: 0,"#, &["format version 0 is not one TileDB 2.30 writes or reads"])),
    // Array metadata files (generic tile, then `metadata::parse_payload`).
    ("array_metadata/truncated.tdb", err(r#"Format(Truncated { structure: "generic tile", field: "tile data", offset: 52,"#, &["need 224 bytes, 214 left"])),
    ("array_metadata/bitflip_deflate.tdb", err("DecodeChunk { chunk: 0, offset: 60, source: Corrupt { filter: Gzip,", &["incorrect data check"])),
    ("array_metadata/inflated_persisted_size.tdb", err(r#"Format(Truncated { structure: "generic tile", field: "tile data", offset: 52, needed: 1224,"#, &["need 1224 bytes, 224 left"])),
    ("array_metadata/inflated_key_len.tdb", err(r#"Truncated { structure: "array metadata", field: "key", offset: 4, needed: 1000000,"#, &["array metadata: truncated at key (offset 4: need 1000000 bytes"])),
    ("array_metadata/inflated_value_num.tdb", err(r#"Truncated { structure: "array metadata", field: "value", offset: 102, needed: 2000000,"#, &["truncated at value (offset 102"])),
    ("array_metadata/bitflip_value_datatype.tdb", err(r#"Invalid { structure: "array metadata", field: "datatype", offset: 97,"#, &["unknown datatype id 135"])),
    ("array_metadata/version_23.tdb", err(r#"Format(Invalid { structure: "generic tile header", field: "version", offset: 0,"#, &["format version 23"])),
    // Fragment metadata files (`FragmentMetadata::parse_all`).
    ("fragment_metadata/truncated.tdb", err(r#"Malformed { structure: "fragment metadata footer", field: "footer length", offset: 3100,"#, &["exceeds the 3100 bytes before it"])),
    ("fragment_metadata/truncated_length.tdb", err(r#"Malformed { structure: "fragment metadata footer", field: "footer length", offset: 0,"#, &["a fragment metadata file of 5 bytes cannot hold the footer length"])),
    ("fragment_metadata/bitflip_rtree.tdb", err(r#"Tile { structure: "R-tree", offset: 0, source: DecodeChunk { chunk: 0, offset: 60,"#, &["R-tree: generic tile at offset 0 cannot be decoded", "deflate decompression error"])),
    ("fragment_metadata/bitflip_dense_flag.tdb", err(r#"Malformed { structure: "fragment metadata footer", field: "dense", offset: 2876,"#, &["boolean byte 2 is not 0 or 1"])),
    ("fragment_metadata/inflated_footer_length.tdb", err(r#"Malformed { structure: "fragment metadata footer", field: "footer length", offset: 3200,"#, &["footer length 3208 exceeds the 3200 bytes before it"])),
    ("fragment_metadata/inflated_schema_name.tdb", err(r#"Malformed { structure: "fragment metadata footer", field: "schema_name", offset: 2814,"#, &["length 1000000 exceeds the 386 bytes left"])),
    ("fragment_metadata/inflated_rtree_tile.tdb", err(r#"Tile { structure: "R-tree", offset: 0, source: Framing { chunk: None, field: "end of tile", offset: 132,"#, &["8 bytes left after the last chunk"])),
    ("fragment_metadata/version_23.tdb", err(r#"UnsupportedVersion { structure: "fragment metadata footer", version: 23,"#, &["format version 23 is not supported"])),
    ("fragment_metadata/version_9.tdb", err(r#"UnsupportedVersion { structure: "fragment metadata footer", version: 9,"#, &["format version 9 is not supported"])),
    // Data tiles (`TileCodec::decode_exact` with the fixture's pipeline and tile size). A
    // tile holds no version: the fragment's version is in its name and footer.
    ("data_tile/gzip_truncated.tdb", err(r#"Framing { chunk: Some(0), field: "data", offset: 36,"#, &["chunk 0: data at offset 36: needs 206 bytes, 85 left"])),
    ("data_tile/gzip_bitflip.tdb", err("DecodeChunk { chunk: 0, offset: 8, source: Corrupt { filter: Gzip,", &["tile chunk 0 (framed at offset 8)", "incorrect data check"])),
    ("data_tile/checksums_bitflip.tdb", err(r#"DecodeChunk { chunk: 0, offset: 8, source: ChecksumMismatch { filter: ChecksumMd5, what: "data", part: 0 } }"#, &["checksum mismatch on data part 0"])),
    ("data_tile/gzip_inflated_num_chunks.tdb", err(r#"Framing { chunk: None, field: "num_chunks", offset: 0,"#, &["1099511627776 chunks cannot fit in the 234 bytes that follow"])),
    ("data_tile/gzip_inflated_filtered_len.tdb", err(r#"Framing { chunk: Some(0), field: "data", offset: 36,"#, &["needs 1206 bytes, 206 left"])),
    ("data_tile/gzip_inflated_orig_len.tdb", err(r#"SizeMismatch { structure: "tile", expected: 300, actual: 4294967295 }"#, &["unfiltered size is 4294967295 bytes, expected 300"])),
    // Delete commits (`DeleteCondition::from_file`, as an array loads them).
    ("commits/del_truncated.del", err(r#"Fragment { file: "__commits/"#, &[".del: delete commit: generic tile at offset 0 cannot be decoded", "truncated at tile data (offset 52: need 57 bytes, 47 left)"])),
    ("commits/del_bitflip_deflate.del", err(r#"Fragment { file: "__commits/"#, &["delete commit: generic tile at offset 0 cannot be decoded", "tile chunk 0 (framed at offset 60)", "deflate decompression error"])),
    ("commits/del_inflated_persisted_size.del", err(r#"Fragment { file: "__commits/"#, &["truncated at tile data (offset 52: need 1057 bytes, 57 left)"])),
    ("commits/del_inflated_value_size.del", err(r#"Fragment { file: "__commits/"#, &["query condition: value at offset 15: length 1000000 exceeds the 8 bytes left"])),
    ("commits/del_bitflip_op.del", err(r#"Fragment { file: "__commits/"#, &["query condition: op at offset 1: unknown query condition op 67"])),
    ("commits/del_version_23.del", err(r#"Fragment { file: "__commits/"#, &["generic tile header: invalid version at offset 0: format version 23"])),
    // Consolidated commits (`ConsolidatedCommits::parse`, each entry's name and .del).
    ("commits/con_truncated.con", err(r#"Malformed { structure: "consolidated commits (.con)", field: "delete file", offset: 182,"#, &["size 110 exceeds the 55 bytes left"])),
    ("commits/con_inflated_delete_size.con", err(r#"Malformed { structure: "consolidated commits (.con)", field: "delete file", offset: 182,"#, &["size 1110 exceeds the 168 bytes left"])),
    ("commits/con_bitflip_path.con", err(r#"Malformed { structure: "consolidated commits (.con)", field: "line", offset: 3,"#, &["not UTF-8 (the line starts at offset 0)"])),
    ("commits/con_bitflip_delete.con", err(r#"Tile { structure: "delete commit", offset: 0, source: DecodeChunk { chunk: 0, offset: 60,"#, &["delete commit: generic tile at offset 0 cannot be decoded", "incorrect data check"])),
    ("commits/con_version_99999999999.con", err(r#"Name { name: "__10_10_"#, &["_99999999999.wrt", "version does not fit u32"])),
    // Vacuum files (`VacuumFile::parse`, then the paths it names).
    ("commits/vac_bitflip_utf8.vac", err(r#"Malformed { structure: "vacuum file (.vac)", field: "line", offset: 20,"#, &["not UTF-8 (the line starts at offset 0)"])),
    ("commits/vac_truncated.vac", Expect::Ok { words: &[r#""__fragments/__30_30_74e67db6aa179eb5""#] }),
    ("commits/vac_version_bare_names.vac", err(r#"Malformed { structure: "vacuum file (.vac)", field: "line", offset: 0,"#, &["names no __fragments, __meta or path"])),
    // Ignore files (`IgnoreFile::parse`).
    ("commits/ign_bitflip_utf8.ign", err(r#"Malformed { structure: "ignore file (.ign)", field: "line", offset: 12,"#, &["not UTF-8 (the line starts at offset 0)"])),
    ("commits/ign_truncated.ign", Expect::Ok { words: &[r#""__commits/__30_30_0d40dcbd345967d663c089ea443c""#] }),
    // Consolidated fragment metadata (`ConsolidatedFragmentMeta::parse_file`, each footer).
    ("fragment_meta/truncated.meta", err(r#"Tile { structure: "consolidated fragment metadata", offset: 0, source: Format(Truncated {"#, &["need 502 bytes, 492 left"])),
    ("fragment_meta/bitflip_deflate.meta", err(r#"Tile { structure: "consolidated fragment metadata", offset: 0, source: DecodeChunk { chunk: 0, offset: 60,"#, &["incorrect data check"])),
    ("fragment_meta/inflated_persisted_size.meta", err(r#"Tile { structure: "consolidated fragment metadata", offset: 0, source: Format(Truncated {"#, &["need 1502 bytes, 502 left"])),
    ("fragment_meta/inflated_count.meta", err(r#"Malformed { structure: "consolidated fragment metadata", field: "fragment count", offset: 0,"#, &["1000000 fragments cannot fit in 1635 bytes"])),
    ("fragment_meta/inflated_name_length.meta", err(r#"Malformed { structure: "consolidated fragment metadata", field: "name", offset: 12,"#, &["length 1000000 exceeds the 1627 bytes left"])),
    ("fragment_meta/version_23.meta", err(r#"Tile { structure: "consolidated fragment metadata", offset: 0, source: Format(Invalid {"#, &["format version 23"])),
    ("fragment_meta/version_footer_23.meta", err(r#"UnsupportedVersion { structure: "fragment metadata footer", version: 23,"#, &["format version 23 is not supported"])),
];

/// An error as the test compares it.
#[derive(Debug)]
struct Failure {
    debug: String,
    display: String,
}

/// The error's `Debug` form, and its message followed by those of its sources, as the CLI
/// prints them.
fn fail<E: std::error::Error>(e: E) -> Failure {
    let mut display = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        display.push_str(": ");
        display.push_str(&s.to_string());
        source = s.source();
    }
    Failure { debug: format!("{e:?}"), display }
}

/// The key of the `encrypted` fixture family (`xtask/fixtures/gen_encrypted.py`).
fn encryption_key() -> EncryptionKey {
    EncryptionKey::parse("0123456789abcdeF0123456789abcdeF").expect("32 bytes")
}

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn bad_dir() -> PathBuf {
    testdata().join("bad")
}

fn manifest() -> Vec<Json> {
    let text = std::fs::read_to_string(bad_dir().join("manifest.json")).expect("manifest.json");
    let m: Json = serde_json::from_str(&text).expect("manifest JSON");
    m["files"].as_array().expect("files").clone()
}

/// The schema and enumerations of the fixture array an entry names.
fn array_of(entry: &Json) -> tessera::Array {
    let array = entry["array"].as_str().expect("the entry names its array");
    tessera::open(testdata().join(array)).expect("fixture array opens")
}

/// Reads `bytes` as the engine reads a file of the entry's kind; `Ok` holds a description of
/// what was read.
fn load(entry: &Json, bytes: &[u8]) -> Result<String, Failure> {
    let kind = entry["kind"].as_str().expect("kind");
    match kind {
        "schema" => ArraySchema::parse_file(bytes).map(|s| format!("{s:?}")).map_err(fail),
        "enumeration" => {
            let payload = read_generic_tile(bytes).map_err(fail)?;
            Enumeration::parse(&payload).map(|e| format!("{e:?}")).map_err(fail)
        }
        "generic_tile" => read_generic_tile(bytes).map(|p| format!("{p:?}")).map_err(fail),
        "array_metadata" => {
            let payload = read_generic_tile(bytes).map_err(fail)?;
            metadata::parse_payload(&payload).map(|e| format!("{e:?}")).map_err(fail)
        }
        "fragment_metadata" => {
            let array = array_of(entry);
            FragmentMetadata::parse_all(bytes, array.schema())
                .map(|m| format!("{m:?}"))
                .map_err(fail)
        }
        "data_tile" => {
            let array = array_of(entry);
            let i = entry["attribute"].as_u64().expect("attribute") as usize;
            let a = &array.schema().attributes[i];
            let codec =
                TileCodec::fixed_data(&a.filters, a.datatype, a.cell_val_num, FORMAT_VERSION)
                    .expect("fixture pipeline");
            let len = entry["tile_size"].as_u64().expect("tile_size");
            codec.decode_exact(bytes, len).map(|t| format!("{} bytes", t.len())).map_err(fail)
        }
        "delete" => {
            let array = array_of(entry);
            let name = FragmentName::parse(entry["source"].as_str().expect("source"))
                .expect("the source is a commit file");
            let kind = tessera::layers::fragment::CommitKind::Delete;
            DeleteCondition::from_file(&name, kind, bytes, array.schema(), array.enumerations())
                .map(|d| format!("{d:?}"))
                .map_err(fail)
        }
        "consolidated_commits" => {
            let con = ConsolidatedCommits::parse(bytes).map_err(fail)?;
            for e in &con.entries {
                e.commit().map_err(fail)?;
                if let Some(d) = &e.delete_file {
                    DeleteCommit::parse_file(d).map_err(fail)?;
                }
            }
            Ok(format!("{con:?}"))
        }
        "vacuum" => {
            let vac = VacuumFile::parse(bytes).map_err(fail)?;
            vac.relative_paths().map(|p| format!("{p:?}")).map_err(fail)
        }
        "ignore" => IgnoreFile::parse(bytes).map(|i| format!("{i:?}")).map_err(fail),
        "fragment_meta" => {
            let array = array_of(entry);
            let meta = ConsolidatedFragmentMeta::parse_file(bytes).map_err(fail)?;
            for e in &meta.entries {
                e.parse_footer(array.schema()).map_err(fail)?;
            }
            Ok(format!("{meta:?}"))
        }
        "encrypted_schema" => {
            let key = match entry["key"].as_str().expect("key") {
                "right" => Some(encryption_key()),
                "wrong" => Some(EncryptionKey::from_bytes(&[b'w'; 32]).expect("32 bytes")),
                _ => None,
            };
            ArraySchema::parse_file_with_key(bytes, key.as_ref())
                .map(|s| format!("{s:?}"))
                .map_err(fail)
        }
        "encrypted_data_tile" => {
            let array = entry["array"].as_str().expect("the entry names its array");
            let array = tessera::open_with_key(testdata().join(array), encryption_key())
                .expect("fixture array opens");
            let i = entry["attribute"].as_u64().expect("attribute") as usize;
            let a = &array.schema().attributes[i];
            let codec =
                TileCodec::fixed_data(&a.filters, a.datatype, a.cell_val_num, FORMAT_VERSION)
                    .expect("fixture pipeline")
                    .encrypted(Some(&encryption_key()));
            let len = entry["tile_size"].as_u64().expect("tile_size");
            codec.decode_exact(bytes, len).map(|t| format!("{} bytes", t.len())).map_err(fail)
        }
        k => panic!("unknown kind {k:?}"),
    }
}

/// Checks every file of `kind` against [`EXPECTED`].
fn check_kind(kind: &str) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for entry in manifest().iter().filter(|e| e["kind"] == kind) {
        let file = entry["file"].as_str().expect("file");
        let bytes = std::fs::read(bad_dir().join(file)).expect("bad file");
        let got = load(entry, &bytes);
        if std::env::var_os("BAD_DATA_PRINT").is_some() {
            println!("{file}: {got:?}");
        }
        let Some((_, expect)) = EXPECTED.iter().find(|(f, _)| *f == file) else {
            problems.push(format!("{file}: no expectation (got {got:?})"));
            continue;
        };
        checked += 1;
        match (expect, &got) {
            (Expect::Err { variant, words }, Err(f)) => {
                if !f.debug.starts_with(variant) {
                    problems.push(format!("{file}: expected {variant}…, got {}", f.debug));
                }
                for w in *words {
                    if !f.display.contains(w) {
                        problems
                            .push(format!("{file}: {w:?} is not in the message {:?}", f.display));
                    }
                }
            }
            (Expect::Ok { words }, Ok(value)) => {
                for w in *words {
                    if !value.contains(w) {
                        problems.push(format!("{file}: {w:?} is not in the value read {value}"));
                    }
                }
            }
            (expect, got) => problems.push(format!("{file}: expected {expect:?}, got {got:?}")),
        }
    }
    assert!(checked > 0, "no file of kind {kind} in testdata/bad/manifest.json");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn schema_files() {
    check_kind("schema");
}

#[test]
fn enumeration_files() {
    check_kind("enumeration");
}

#[test]
fn generic_tiles() {
    check_kind("generic_tile");
}

#[test]
fn array_metadata_files() {
    check_kind("array_metadata");
}

#[test]
fn fragment_metadata_files() {
    check_kind("fragment_metadata");
}

#[test]
fn data_tiles() {
    check_kind("data_tile");
}

#[test]
fn encrypted_files() {
    check_kind("encrypted_schema");
    check_kind("encrypted_data_tile");
}

#[test]
fn delete_commits() {
    check_kind("delete");
}

#[test]
fn consolidated_commits() {
    check_kind("consolidated_commits");
}

#[test]
fn vacuum_files() {
    check_kind("vacuum");
}

#[test]
fn ignore_files() {
    check_kind("ignore");
}

#[test]
fn consolidated_fragment_metadata() {
    check_kind("fragment_meta");
}

/// Every file of `testdata/bad/` is in the manifest and has an expectation here, and every
/// manifest entry and expectation names a file that is there.
#[test]
fn inventory() {
    let dir = bad_dir();
    let mut on_disk = BTreeSet::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("testdata/bad") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&dir).expect("inside").to_string_lossy().into_owned();
                if rel != "manifest.json" {
                    on_disk.insert(rel);
                }
            }
        }
    }
    let listed: BTreeSet<String> =
        manifest().iter().map(|e| e["file"].as_str().expect("file").to_owned()).collect();
    let expected: BTreeSet<String> = EXPECTED.iter().map(|(f, _)| (*f).to_owned()).collect();
    assert_eq!(EXPECTED.len(), expected.len(), "a file is listed twice in EXPECTED");
    let report = |what: &str, a: &BTreeSet<String>, b: &BTreeSet<String>| {
        let missing: Vec<&String> = a.difference(b).collect();
        assert!(missing.is_empty(), "{what}: {missing:?}");
    };
    report("files in testdata/bad without a manifest entry", &on_disk, &listed);
    report("files in testdata/bad without an expectation (a test)", &on_disk, &expected);
    report("manifest entries without a file", &listed, &on_disk);
    report("expectations without a file", &expected, &on_disk);
    assert!(on_disk.len() >= 40, "the corpus has only {} files", on_disk.len());
}
