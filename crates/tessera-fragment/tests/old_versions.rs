//! Fragment metadata of older format versions (`testdata/old/`, written by older libtiledb
//! releases and taken from TileDB's repository): every `__fragment_metadata.tdb` parses with
//! the reader of its version, every part its footer points at decodes (versions 3 to 9: the
//! R-tree parses too), and versions 10 on rewrite byte for byte (the writer follows the
//! version's layout).

use std::path::{Path, PathBuf};

use tessera_fragment::previous::v1_v2::V1V2Metadata;
use tessera_fragment::{FragmentMetadata, FragmentName, footer_length_range, parse_footer_length};
use tessera_schema::ArraySchema;

fn old_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/old")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.file_name().is_some_and(|n| n == "__fragment_metadata.tdb") {
            out.push(p);
        }
    }
}

/// The array folder of a fragment folder (in `__fragments/` or, before version 12, in the
/// array folder itself).
fn array_of(fragment_dir: &Path) -> PathBuf {
    let parent = fragment_dir.parent().unwrap();
    if parent.file_name().is_some_and(|n| n == "__fragments") {
        parent.parent().unwrap().to_path_buf()
    } else {
        parent.to_path_buf()
    }
}

#[test]
fn old_fragment_metadata_parses_and_rewrites() {
    let mut files = Vec::new();
    walk(&old_dir(), &mut files);
    let mut versions = std::collections::BTreeSet::new();
    for file in &files {
        let what = file.display();
        let dir = file.parent().unwrap();
        let name = FragmentName::parse(dir.file_name().unwrap().to_str().unwrap()).unwrap();
        let bytes = std::fs::read(file).unwrap();
        let array = array_of(dir);
        if name.format_version() <= 2 {
            let schema =
                ArraySchema::parse_file(&std::fs::read(array.join("__array_schema.tdb")).unwrap())
                    .unwrap();
            let payload = tessera_tile::read_generic_tile(&bytes).unwrap();
            let md =
                V1V2Metadata::parse(&payload, &schema).unwrap_or_else(|e| panic!("{what}: {e}"));
            versions.insert(md.version);
            let sparse = dir.join("__coords.tdb").is_file();
            let footer = md.footer(&schema, sparse);
            assert_eq!(footer.tile_num(&schema).unwrap(), md.mbrs.len() as u64, "{what}");
            assert!(md.parts(&schema).is_ok(), "{what}");
            continue;
        }
        if name.format_version() <= 9 {
            check_v3_v9(&name, &bytes, &array, &what.to_string());
            versions.insert(v3_v9_version(&bytes, &name, &array));
            continue;
        }
        let r = footer_length_range(bytes.len() as u64).unwrap();
        let len = parse_footer_length(&bytes[r.start as usize..]).unwrap();
        let start = bytes.len() - 8 - len as usize;
        let (_, schema_name) =
            tessera_fragment::Footer::peek_schema_name(&bytes[start..bytes.len() - 8]).unwrap();
        let schema = ArraySchema::parse_file(
            &std::fs::read(array.join("__schema").join(schema_name)).unwrap(),
        )
        .unwrap();
        let md =
            FragmentMetadata::parse_all(&bytes, &schema).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(md.footer.version, name.format_version(), "{what}");
        versions.insert(md.footer.version);
        let out = md.to_bytes(&schema).unwrap();
        assert!(out == bytes, "{what}: rewritten file differs");
    }
    assert!(
        [1, 3, 4, 5, 6, 7, 8, 9, 10, 16, 17, 18, 19, 20, 21, 22]
            .iter()
            .all(|v| versions.contains(v)),
        "{versions:?}"
    );
}

/// The footer of a version 3-9 file: fixed size from the schema, or the trailing length.
fn v3_v9_footer(
    name: &FragmentName,
    bytes: &[u8],
    array: &Path,
) -> (tessera_fragment::Footer, u64, ArraySchema) {
    use tessera_fragment::previous::v3_v9;
    let schema =
        ArraySchema::parse_file(&std::fs::read(array.join("__array_schema.tdb")).unwrap()).unwrap();
    let size = bytes.len() as u64;
    let start = match v3_v9::fixed_footer_size(name.format_version(), &schema) {
        Some(n) => size - n,
        None => {
            let r = footer_length_range(size).unwrap();
            let len = parse_footer_length(&bytes[r.start as usize..]).unwrap();
            size - 8 - len
        }
    };
    let end = if v3_v9::fixed_footer_size(name.format_version(), &schema).is_some() {
        size
    } else {
        size - 8
    };
    let footer = v3_v9::parse(&bytes[start as usize..end as usize], &schema).unwrap();
    (footer, start, schema)
}

fn v3_v9_version(bytes: &[u8], name: &FragmentName, array: &Path) -> u32 {
    v3_v9_footer(name, bytes, array).0.version
}

/// Every part a version 3-9 footer points at decodes, and the R-tree parses.
fn check_v3_v9(name: &FragmentName, bytes: &[u8], array: &Path, what: &str) {
    use tessera_fragment::LazyPart;
    let (footer, footer_offset, schema) = v3_v9_footer(name, bytes, array);
    assert!((3..=9).contains(&footer.version), "{what}");
    if name.format_version() >= 5 {
        assert_eq!(footer.version, name.format_version(), "{what}");
    }
    for (part, offset) in footer.parts() {
        if offset == tessera_fragment::previous::v3_v9::ABSENT {
            continue;
        }
        let range = footer.part_range(part, footer_offset).unwrap();
        let payload = part
            .decode_tile(&bytes[range.start as usize..range.end as usize], range.start)
            .unwrap_or_else(|e| panic!("{what}: {part}: {e}"));
        if part == LazyPart::RTree {
            let payload = tessera_fragment::previous::v3_v9::rtree_payload(
                footer.version,
                payload,
                schema.dimensions.len(),
            )
            .unwrap();
            tessera_rtree::RTree::parse(&payload, &tessera_fragment::dim_types(&schema))
                .unwrap_or_else(|e| panic!("{what}: R-tree: {e}"));
        } else {
            tessera_fragment::parse_u64s(part, &payload)
                .unwrap_or_else(|e| panic!("{what}: {part}: {e}"));
        }
    }
}
