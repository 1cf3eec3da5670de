//! Helpers shared by the read tests: results as cells-JSONL values, fixture paths.

#![allow(dead_code, unreachable_pub)]

pub mod failing;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value as Json};
use tessera_query::{Array, ReadResult};
use tessera_schema::json::cell_json;
use tessera_storage::LocalStorage;

/// `testdata/` of the workspace.
pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Opens the array at `testdata/<rel>`, at the latest time or at `at`.
pub fn open(rel: &str, at: Option<u64>) -> Array {
    let storage = Arc::new(LocalStorage::new(testdata().join(rel)));
    match at {
        Some(t) => Array::open_at(storage, t).unwrap(),
        None => Array::open(storage).unwrap(),
    }
}

/// Cell `i` of `result` as a cells-JSONL object (null where validity is 0).
pub fn cell_row(result: &ReadResult, i: usize) -> Json {
    let mut m = Map::new();
    for c in &result.columns {
        let v = if c.is_valid(i) {
            cell_json(c.datatype, c.cell_val_num, c.cell(i).expect("cell in range"))
        } else {
            Json::Null
        };
        m.insert(c.name.clone(), v);
    }
    Json::Object(m)
}

/// Every cell of `result` as cells-JSONL objects.
pub fn rows(result: &ReadResult) -> Vec<Json> {
    (0..result.cell_num()).map(|i| cell_row(result, i)).collect()
}

/// The objects of a cells-JSONL file.
pub fn read_jsonl(rel: &str) -> Vec<Json> {
    let text = std::fs::read_to_string(testdata().join(rel)).unwrap();
    text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Checks that every column of `result` has the same number of cells.
pub fn check_shape(result: &ReadResult) {
    let n = result.cell_num();
    for c in &result.columns {
        assert_eq!(c.len(), n, "column {}", c.name);
        if let Some(v) = &c.validity {
            assert_eq!(v.len(), n, "validity of {}", c.name);
        }
    }
}

/// Compares two lists of rows, reporting the first difference.
pub fn assert_rows_eq(actual: &[Json], expected: &[Json], what: &str) {
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_eq!(a, e, "{what}: cell {i} differs");
    }
    assert_eq!(actual.len(), expected.len(), "{what}: cell count");
}

/// Compares two lists of rows as multisets.
pub fn assert_rows_eq_unordered(actual: &[Json], expected: &[Json], what: &str) {
    let mut a: Vec<String> = actual.iter().map(Json::to_string).collect();
    let mut e: Vec<String> = expected.iter().map(Json::to_string).collect();
    a.sort();
    e.sort();
    assert_eq!(a.len(), e.len(), "{what}: cell count");
    for (i, (x, y)) in a.iter().zip(&e).enumerate() {
        assert_eq!(x, y, "{what}: sorted cell {i} differs");
    }
}
