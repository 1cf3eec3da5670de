//! Full reads of every libtiledb fixture (`testdata/fragments`, `testdata/filters`), at the
//! latest time and at the earlier times the manifests list (delete commits applied), compared
//! cell for cell with what libtiledb read.

use crate::common;

use common::*;
use serde_json::Value as Json;

#[test]
fn fragments_fixtures_read_as_libtiledb_reads_them() {
    let manifest: Json = serde_json::from_str(
        &std::fs::read_to_string(testdata().join("fragments/manifest.json")).unwrap(),
    )
    .unwrap();
    let mut checked = Vec::new();
    let mut with_deletes = 0;
    for a in manifest["arrays"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap();
        let path = a["path"].as_str().unwrap();
        for r in a["reads"].as_array().unwrap() {
            let at = r["at"].as_u64();
            let what = format!("{name} at {at:?}");
            let array = open(path, at);
            with_deletes += usize::from(!array.directory().deletes.is_empty());
            let result = array.read().execute().unwrap_or_else(|e| panic!("{what}: {e}"));
            check_shape(&result);
            let expected = read_jsonl(r["cells_file"].as_str().unwrap());
            assert_eq!(result.cell_num() as u64, r["cell_num"].as_u64().unwrap(), "{what}");
            let actual = rows(&result);
            if a["allows_duplicates"].as_bool() == Some(true) {
                assert_rows_eq_unordered(&actual, &expected, &what);
            } else {
                assert_rows_eq(&actual, &expected, &what);
            }
            checked.push(what);
        }
    }
    eprintln!("checked: {checked:?} ({with_deletes} with delete commits)");
    assert!(checked.len() >= 30, "{checked:?}");
    assert!(with_deletes >= 5, "{with_deletes}");
}

#[test]
fn filters_fixtures_read_as_libtiledb_reads_them() {
    let manifest: Json = serde_json::from_str(
        &std::fs::read_to_string(testdata().join("filters/manifest.json")).unwrap(),
    )
    .unwrap();
    let arrays = manifest["arrays"].as_array().unwrap();
    for a in arrays {
        let name = a["name"].as_str().unwrap();
        let array = open(a["path"].as_str().unwrap(), None);
        let result = array.read().execute().unwrap_or_else(|e| panic!("{name}: {e}"));
        check_shape(&result);
        let expected = read_jsonl(a["cells_file"].as_str().unwrap());
        assert_rows_eq(&rows(&result), &expected, name);
    }
    assert!(arrays.len() >= 25);
}
