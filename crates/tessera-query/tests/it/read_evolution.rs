//! Reads across schema evolution: fragments written before an attribute was added give its
//! fill value; reads at an earlier time use the schema in force then (libtiledb's results in
//! `tests/data/read/evolved.jsonl`, from `gen_evolved.py`).

use crate::common;

use std::sync::Arc;

use common::*;
use serde_json::Value as Json;
use tessera_query::Array;
use tessera_storage::LocalStorage;

#[test]
fn evolved_arrays_read_as_libtiledb_reads_them() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/read");
    let text = std::fs::read_to_string(dir.join("evolved.jsonl")).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let q: Json = serde_json::from_str(line).unwrap();
        let name = q["array"].as_str().unwrap();
        let storage = Arc::new(LocalStorage::new(dir.join(name)));
        let array = match q["at"].as_u64() {
            Some(t) => Array::open_at(storage, t).unwrap(),
            None => Array::open(storage).unwrap(),
        };
        let what = format!("{name} at {:?}", q["at"]);
        let result = array.read().execute().unwrap_or_else(|e| panic!("{what}: {e}"));
        check_shape(&result);
        assert_rows_eq(&rows(&result), q["expected"].as_array().unwrap(), &what);
        // Batches of a few cells give the same.
        let mut all = Vec::new();
        for b in array.read().memory_budget(30).batches().unwrap() {
            all.extend(rows(&b.unwrap()));
        }
        assert_rows_eq(&all, q["expected"].as_array().unwrap(), &what);
        n += 1;
    }
    assert_eq!(n, 4);
}
