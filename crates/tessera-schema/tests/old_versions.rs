//! Schemas of older format versions (`testdata/old/`: `__schema/` files written by libtiledb
//! 2.13 to 2.27, and TileDB's own old arrays, including a format 1 `__array_schema.tdb`): each
//! parses with its version's layout, the version is kept, and the parsed schema written as
//! today's version 22 parses back to the same schema.

use std::path::{Path, PathBuf};

use tessera_schema::ArraySchema;

fn old_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/old")
}

fn schema_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            schema_files(&p, out);
        } else if p.parent().and_then(Path::file_name).is_some_and(|n| n == "__schema")
            || p.file_name().is_some_and(|n| n == tessera_schema::previous::LEGACY_SCHEMA_FILE)
        {
            out.push(p);
        }
    }
}

#[test]
fn old_schemas_parse_with_their_versions_layout() {
    let mut files = Vec::new();
    schema_files(&old_dir(), &mut files);
    files.sort();
    let mut versions = std::collections::BTreeSet::new();
    for path in &files {
        let file = std::fs::read(path).unwrap();
        let schema =
            ArraySchema::parse_file(&file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        versions.insert(schema.version);
        if schema.version == 22 {
            assert_eq!(schema.to_file().unwrap(), file, "{}", path.display());
        }
        // Today's form of the same schema reads back as the same schema.
        let again = ArraySchema::parse(&schema.to_bytes()).unwrap();
        assert_eq!(ArraySchema { version: schema.version, ..again }, schema, "{}", path.display());
    }
    assert!(
        versions.contains(&1) && versions.contains(&10) && versions.contains(&11),
        "{versions:?}"
    );
    assert!(versions.len() >= 9, "{versions:?}");
}

/// Dimensions of schemas 1-4 have no filters of their own and libtiledb 2.30 writes their
/// files in new fragments unfiltered; from version 5 a dimension without filters takes the
/// coords filters (both checked against libtiledb by the old-formats conformance step).
#[test]
fn dimension_filters_fall_back_to_the_coords_filters_from_version_5() {
    for (release, fallback) in
        [("tiledb-0.4.4", false), ("tiledb-0.5.9", false), ("tiledb-0.6.6", true)]
    {
        let path = old_dir().join(release).join("sparse").join("__array_schema.tdb");
        let schema = ArraySchema::parse_file(&std::fs::read(&path).unwrap()).unwrap();
        assert!(!schema.coords_filters.is_empty(), "{release}");
        let d = &schema.dimensions[0];
        assert_eq!(
            std::ptr::eq(schema.dimension_filters(d), &schema.coords_filters),
            fallback,
            "{release}"
        );
    }
}
