//! Subarray, multi-range, layout and attribute-subset reads checked against libtiledb
//! (`tests/data/read/expected.jsonl`, written by `gen_expected.py` with the reference venv),
//! and sparse multi-range reads checked against the full read filtered here.

use crate::common;

use std::cmp::Ordering;

use common::*;
use serde_json::Value as Json;
use tessera_query::{Array, ReadQuery};
use tessera_storage::LocalStorage;
use tessera_types::ReadLayout;

fn layout(name: &str) -> ReadLayout {
    match name {
        "row-major" => ReadLayout::RowMajor,
        "col-major" => ReadLayout::ColMajor,
        "global" => ReadLayout::GlobalOrder,
        "unordered" => ReadLayout::Unordered,
        _ => panic!("{name}"),
    }
}

/// Adds JSON ranges `[[lo, hi], ...]` per dimension to `q`.
fn with_ranges<'a>(array: &'a Array, mut q: ReadQuery<'a>, ranges: &Json) -> ReadQuery<'a> {
    for (dim, rs) in array.schema().dimensions.iter().zip(ranges.as_array().unwrap()) {
        for r in rs.as_array().unwrap() {
            let (lo, hi) = (&r[0], &r[1]);
            q = if dim.is_var() {
                q.range_str(&dim.name, lo.as_str().unwrap(), hi.as_str().unwrap())
            } else if dim.datatype.is_float() {
                q.range_f64(&dim.name, lo.as_f64().unwrap(), hi.as_f64().unwrap())
            } else {
                q.range_i64(&dim.name, lo.as_i64().unwrap(), hi.as_i64().unwrap())
            };
        }
    }
    q
}

/// Every query with libtiledb's result: `expected.jsonl` (arrays of `testdata/`) and
/// `orders.jsonl` (arrays of `tests/data/read/`), each with the array opened.
fn queries() -> Vec<(Json, Array)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/read");
    let mut out = Vec::new();
    for (file, base) in [("expected.jsonl", testdata()), ("orders.jsonl", dir.clone())] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        for l in text.lines() {
            let q: Json = serde_json::from_str(l).unwrap();
            let storage =
                std::sync::Arc::new(LocalStorage::new(base.join(q["array"].as_str().unwrap())));
            let array = match q["at"].as_u64() {
                Some(t) => Array::open_at(storage, t).unwrap(),
                None => Array::open(storage).unwrap(),
            };
            out.push((q, array));
        }
    }
    out
}

fn build<'a>(array: &'a Array, q: &Json) -> ReadQuery<'a> {
    let mut read = with_ranges(array, array.read(), &q["ranges"]);
    read = read.layout(layout(q["layout"].as_str().unwrap()));
    if let Some(attrs) = q["attrs"].as_array() {
        read = read.attributes(attrs.iter().map(|a| a.as_str().unwrap().to_owned()));
    }
    read.with_coordinates(q["dims"].as_bool().unwrap())
}

#[test]
fn subarray_reads_match_libtiledb() {
    let qs = queries();
    assert!(qs.len() >= 50);
    for (q, array) in &qs {
        let id = q["id"].as_str().unwrap();
        let result = build(array, q).execute().unwrap_or_else(|e| panic!("{id}: {e}"));
        check_shape(&result);
        let expected = q["expected"].as_array().unwrap();
        if array.schema().allows_duplicates {
            assert_rows_eq_unordered(&rows(&result), expected, id);
        } else {
            assert_rows_eq(&rows(&result), expected, id);
        }
    }
}

#[test]
fn budgeted_batches_equal_the_unbounded_read() {
    for (q, array) in &queries() {
        let id = q["id"].as_str().unwrap();
        let full = build(array, q).execute().unwrap();
        let total = rows(&full);
        for budget in [1u64, 7, 40, 333, 4096] {
            let mut all = Vec::new();
            let mut batches = 0;
            for b in build(array, q).memory_budget(budget).batches().unwrap() {
                let b = b.unwrap_or_else(|e| panic!("{id} budget {budget}: {e}"));
                check_shape(&b);
                assert!(b.cell_num() > 0, "{id}: empty batch");
                let bytes = result_bytes(&b);
                assert!(
                    b.cell_num() == 1 || bytes <= budget,
                    "{id} budget {budget}: batch of {} cells holds {bytes} bytes",
                    b.cell_num()
                );
                all.extend(rows(&b));
                batches += 1;
            }
            assert_rows_eq(&all, &total, &format!("{id} budget {budget}"));
            if budget == 1 {
                assert_eq!(batches, total.len(), "{id}: one cell per batch");
            }
        }
    }
}

/// Result bytes as the budget counts them.
fn result_bytes(r: &tessera_query::ReadResult) -> u64 {
    r.columns
        .iter()
        .map(|c| {
            c.data.len() as u64
                + c.offsets.as_ref().map_or(0, |o| 8 * o.len() as u64)
                + c.validity.as_ref().map_or(0, |v| v.len() as u64)
        })
        .sum()
}

/// The coordinates of a row, compared in row- or col-major order.
fn cmp_coords(a: &Json, b: &Json, dims: &[String], col: bool) -> Ordering {
    let mut order: Vec<&String> = dims.iter().collect();
    if col {
        order.reverse();
    }
    for d in order {
        let o = match (&a[d], &b[d]) {
            (Json::String(x), Json::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            (x, y) => x.as_f64().unwrap().partial_cmp(&y.as_f64().unwrap()).unwrap(),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[test]
fn sparse_multi_range_reads_return_each_cell_once_in_the_layout() {
    // (array, ranges per dimension)
    let cases: Vec<(&str, Json)> = vec![
        (
            "fragments/sparse_int64",
            serde_json::json!([[[-20, -5], [30, 40], [-10, 10]], [[0, 50], [40, 99]]]),
        ),
        (
            "fragments/sparse_int64_dups",
            serde_json::json!([[[-50, 0], [-3, 3]], [[5, 5], [0, 99]]]),
        ),
        (
            "fragments/sparse_string_float_dims",
            serde_json::json!([[["m", "z"], ["a", "c"], ["b", "n"]], [[-10.0, 0.0], [2.5, 9.0]]]),
        ),
        ("fragments/sparse_hilbert", serde_json::json!([[[0, 300], [600, 999]], [[-1.0, 0.0]]])),
        ("fragments/sparse_attrs", serde_json::json!([[[0, 10], [50, 63]], [[0, 63]]])),
    ];
    for (rel, ranges) in cases {
        let array = open(rel, None);
        let dims: Vec<String> = array.schema().dimensions.iter().map(|d| d.name.clone()).collect();
        let full = rows(&array.read().execute().unwrap());
        let inside = |row: &Json| {
            array.schema().dimensions.iter().zip(ranges.as_array().unwrap()).all(|(d, rs)| {
                rs.as_array().unwrap().iter().any(|r| {
                    let v = &row[&d.name];
                    cmp_coords(
                        &serde_json::json!({"k": &r[0]}),
                        &serde_json::json!({"k": v}),
                        &["k".into()],
                        false,
                    ) != Ordering::Greater
                        && cmp_coords(
                            &serde_json::json!({"k": v}),
                            &serde_json::json!({"k": &r[1]}),
                            &["k".into()],
                            false,
                        ) != Ordering::Greater
                })
            })
        };
        let global: Vec<Json> = full.iter().filter(|r| inside(r)).cloned().collect();
        assert!(!global.is_empty(), "{rel}");
        let dups = array.schema().allows_duplicates;
        for (lay, col) in
            [("row-major", false), ("col-major", true), ("unordered", false), ("global", false)]
        {
            let q = with_ranges(&array, array.read(), &ranges).layout(layout(lay));
            let got = rows(&q.execute().unwrap());
            if lay == "unordered" {
                assert_rows_eq_unordered(&got, &global, &format!("{rel} {lay}"));
                continue;
            }
            if lay == "global" {
                // Each cell once, in the full read's (global) order.
                if dups {
                    assert_rows_eq_unordered(&got, &global, &format!("{rel} {lay}"));
                } else {
                    assert_rows_eq(&got, &global, &format!("{rel} {lay}"));
                }
                continue;
            }
            let mut expected = global.clone();
            expected.sort_by(|a, b| cmp_coords(a, b, &dims, col));
            if dups {
                assert_rows_eq_unordered(&got, &expected, &format!("{rel} {lay}"));
                for w in got.windows(2) {
                    assert_ne!(
                        cmp_coords(&w[0], &w[1], &dims, col),
                        Ordering::Greater,
                        "{rel} {lay}"
                    );
                }
            } else {
                assert_rows_eq(&got, &expected, &format!("{rel} {lay}"));
            }
        }
        // Global order with one range per dimension: the full read's order, restricted.
        let bbox: Vec<Json> = ranges
            .as_array()
            .unwrap()
            .iter()
            .map(|rs| {
                let rs = rs.as_array().unwrap();
                let key = |v: &Json| v.clone();
                let lo = rs
                    .iter()
                    .map(|r| key(&r[0]))
                    .min_by(|a, b| {
                        cmp_coords(
                            &serde_json::json!({"k": a}),
                            &serde_json::json!({"k": b}),
                            &["k".into()],
                            false,
                        )
                    })
                    .unwrap();
                let hi = rs
                    .iter()
                    .map(|r| key(&r[1]))
                    .max_by(|a, b| {
                        cmp_coords(
                            &serde_json::json!({"k": a}),
                            &serde_json::json!({"k": b}),
                            &["k".into()],
                            false,
                        )
                    })
                    .unwrap();
                serde_json::json!([[lo, hi]])
            })
            .collect();
        let bbox = Json::Array(bbox);
        let got = rows(
            &with_ranges(&array, array.read(), &bbox)
                .layout(ReadLayout::GlobalOrder)
                .execute()
                .unwrap(),
        );
        let in_box: Vec<Json> = full
            .iter()
            .filter(|row| {
                dims.iter().zip(bbox.as_array().unwrap()).all(|(d, rs)| {
                    let r = &rs[0];
                    let k = |v: &Json| serde_json::json!({"k": v});
                    cmp_coords(&k(&r[0]), &k(&row[d]), &["k".into()], false) != Ordering::Greater
                        && cmp_coords(&k(&row[d]), &k(&r[1]), &["k".into()], false)
                            != Ordering::Greater
                })
            })
            .cloned()
            .collect();
        if dups {
            assert_rows_eq_unordered(&got, &in_box, &format!("{rel} global box"));
        } else {
            assert_rows_eq(&got, &in_box, &format!("{rel} global box"));
        }
    }
}
