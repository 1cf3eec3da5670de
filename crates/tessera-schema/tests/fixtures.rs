//! Every schema file libtiledb wrote into `testdata/` parses, and writing it back gives the
//! same bytes: both the payload and the whole generic-tile file (zlib is the real zlib).

use std::path::{Path, PathBuf};

use tessera_schema::{ArraySchema, Enumeration};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Every file under a `__schema/` folder (schemas) and `__schema/__enumerations/`.
fn schema_files() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut schemas, mut enums) = (Vec::new(), Vec::new());
    let mut stack = vec![testdata()];
    // Older format versions (testdata/old) are checked by tests/old_versions.rs; encrypted
    // arrays (testdata/encrypted), which need their key, by tessera-query's tests/encrypted.rs.
    let skip = [testdata().join("old"), testdata().join("encrypted")];
    while let Some(dir) = stack.pop() {
        if skip.contains(&dir) {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.parent().and_then(Path::file_name).is_some_and(|n| n == "__schema") {
                schemas.push(p);
            } else if p.parent().and_then(Path::file_name).is_some_and(|n| n == "__enumerations") {
                enums.push(p);
            }
        }
    }
    schemas.sort();
    enums.sort();
    (schemas, enums)
}

#[test]
fn every_fixture_schema_parses_and_writes_back_identically() {
    let (schemas, _) = schema_files();
    assert!(schemas.len() >= 28, "found only {} schema files", schemas.len());
    for path in schemas {
        let file = std::fs::read(&path).unwrap();
        let payload = tessera_tile::read_generic_tile(&file).unwrap();
        let schema =
            ArraySchema::parse(&payload).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(schema.to_bytes(), payload, "{}: payload differs", path.display());
        assert_eq!(schema.to_file().unwrap(), file, "{}: file differs", path.display());
        assert_eq!(ArraySchema::parse_file(&file).unwrap(), schema);
    }
}

#[test]
fn every_fixture_enumeration_parses_and_writes_back_identically() {
    let (_, enums) = schema_files();
    for path in enums {
        let file = std::fs::read(&path).unwrap();
        let payload = tessera_tile::read_generic_tile(&file).unwrap();
        let e = Enumeration::parse(&payload).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(e.path, path.file_name().unwrap().to_str().unwrap());
        assert_eq!(e.to_bytes(), payload, "{}", path.display());
    }
}
