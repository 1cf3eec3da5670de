//! Every query of the `queries` fixture family (`testdata/queries/*.jsonl`, libtiledb's
//! results) run through the read API: ranges, multi-ranges, attribute subsets, layouts,
//! `--at` and `--between`, `--where` conditions, deletes, and aggregates. The same queries
//! run through the CLI in `cargo xtask conformance`; this runs them in `cargo test` too, so
//! CI checks them without Python.
//!
//! Besides libtiledb's results, reads are checked in small batches (a memory budget) against
//! the unbounded read, and aggregates computed from tile metadata against aggregates computed
//! from the cells alone.

use crate::common;

use std::sync::Arc;

use common::*;
use serde_json::Value as Json;
use tessera_query::aggregate::Aggregate;
use tessera_query::{Array, Column, ReadQuery, ReadResult};
use tessera_storage::LocalStorage;
use tessera_types::ReadLayout;

/// Splits `LO:HI` where either bound may be a double-quoted JSON string.
fn split_bounds(text: &str) -> (String, String) {
    fn token(s: &str) -> (String, &str) {
        if s.starts_with('"') {
            let mut de = serde_json::Deserializer::from_str(s).into_iter::<String>();
            let v = de.next().unwrap().unwrap();
            let used = de.byte_offset();
            (v, &s[used..])
        } else {
            let end = s.find(':').unwrap_or(s.len());
            (s[..end].to_owned(), &s[end..])
        }
    }
    let (lo, rest) = token(text);
    let rest = rest.strip_prefix(':').expect("a ':' between the bounds");
    let (hi, rest) = token(rest);
    assert!(rest.is_empty(), "{text}");
    (lo, hi)
}

fn add_range<'a>(array: &'a Array, q: ReadQuery<'a>, arg: &str) -> ReadQuery<'a> {
    let (dim, bounds) = arg.split_once('=').unwrap();
    let (lo, hi) = split_bounds(bounds);
    let d = array.schema().dimension(dim).unwrap();
    if d.is_var() {
        q.range_str(dim, lo, hi)
    } else if d.datatype.is_float() {
        q.range_f64(dim, lo.parse().unwrap(), hi.parse().unwrap())
    } else {
        let (lo, hi): (i128, i128) = (lo.parse().unwrap(), hi.parse().unwrap());
        if lo < 0 || hi < 0 {
            q.range_i64(dim, lo as i64, hi as i64)
        } else {
            q.range_u64(dim, lo as u64, hi as u64)
        }
    }
}

/// One recorded query, its array opened at the query's time.
struct Query {
    id: String,
    command: String,
    args: Vec<String>,
    record: Json,
    array: Array,
}

impl Query {
    fn what(&self) -> String {
        format!("{} {:?}", self.id, self.args)
    }

    /// The read of the query's arguments (`--agg` ignored).
    fn read(&self) -> ReadQuery<'_> {
        let mut read = self.array.read();
        let args = &self.args;
        let mut i = 0;
        while i < args.len() {
            let v = args[i + 1].as_str();
            read = match args[i].as_str() {
                "--range" => add_range(&self.array, read, v),
                "--attrs" => read.attributes(v.split(',')),
                "--where" => read.where_text(v),
                "--layout" => read.layout(match v {
                    "row-major" => ReadLayout::RowMajor,
                    "col-major" => ReadLayout::ColMajor,
                    "global" => ReadLayout::GlobalOrder,
                    "unordered" => ReadLayout::Unordered,
                    _ => panic!("{}: layout {v}", self.id),
                }),
                "--at" | "--between" | "--agg" => read,
                a => panic!("{}: option {a}", self.id),
            };
            i += 2;
        }
        read
    }

    fn aggregates(&self) -> Vec<Aggregate> {
        self.args
            .chunks(2)
            .filter(|c| c[0] == "--agg")
            .map(|c| Aggregate::parse(&c[1]).unwrap())
            .collect()
    }
}

fn queries() -> Vec<Query> {
    let mut out = Vec::new();
    for file in ["queries/fragments.jsonl", "queries/filters.jsonl"] {
        let Ok(text) = std::fs::read_to_string(testdata().join(file)) else { continue };
        for line in text.lines() {
            let record: Json = serde_json::from_str(line).unwrap();
            let args: Vec<String> = record["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_owned())
                .collect();
            let storage =
                Arc::new(LocalStorage::new(testdata().join(record["array"].as_str().unwrap())));
            let mut opened = None;
            for pair in args.chunks(2) {
                match pair[0].as_str() {
                    "--at" => opened = Some((0, pair[1].parse::<u64>().unwrap())),
                    "--between" => {
                        let (s, e) = pair[1].split_once(':').unwrap();
                        opened = Some((s.parse().unwrap(), e.parse().unwrap()));
                    }
                    _ => {}
                }
            }
            let array = match opened {
                Some((s, e)) => Array::open_between(storage, s, e).unwrap(),
                None => Array::open(storage).unwrap(),
            };
            out.push(Query {
                id: record["id"].as_str().unwrap().to_owned(),
                command: record["command"].as_str().unwrap().to_owned(),
                args,
                record,
                array,
            });
        }
    }
    out
}

/// Every column of `b` appended to `a`'s.
fn append(a: &mut ReadResult, b: &ReadResult) {
    for (x, y) in a.columns.iter_mut().zip(&b.columns) {
        for i in 0..y.len() {
            x.push_from(y, i);
        }
    }
}

#[test]
fn query_family_reads_match_libtiledb() {
    let (mut checked, mut with_condition) = (0, 0);
    for q in queries().iter().filter(|q| q.command == "read") {
        let what = q.what();
        let result = q.read().execute().unwrap_or_else(|e| panic!("{what}: {e}"));
        check_shape(&result);
        let expected = q.record["expected"].as_array().unwrap();
        let actual = rows(&result);
        if q.record["order_insensitive"].as_bool().unwrap() {
            assert_rows_eq_unordered(&actual, expected, &what);
        } else {
            assert_rows_eq(&actual, expected, &what);
        }
        checked += 1;
        with_condition += usize::from(q.args.iter().any(|a| a == "--where"));
    }
    eprintln!("checked {checked} reads ({with_condition} with a condition)");
    assert!(checked >= 400, "only {checked} reads");
}

#[test]
fn query_family_budgeted_reads_equal_unbounded_ones() {
    let mut checked = 0;
    for q in queries().iter().filter(|q| q.command == "read") {
        let what = q.what();
        let whole = q.read().execute().unwrap();
        // One cell per batch, then about a hundred bytes per batch.
        for budget in [1, 100] {
            let mut joined: Option<ReadResult> = None;
            let mut batches = 0;
            for b in q.read().memory_budget(budget).batches().unwrap() {
                let b = b.unwrap_or_else(|e| panic!("{what}: {e}"));
                check_shape(&b);
                assert!(b.cell_num() > 0, "{what}: an empty batch");
                batches += 1;
                match &mut joined {
                    None => joined = Some(b),
                    Some(j) => append(j, &b),
                }
            }
            if budget == 1 {
                assert_eq!(batches, whole.cell_num(), "{what}: one cell per batch");
            }
            let joined = joined.unwrap_or_else(|| ReadResult {
                columns: whole
                    .columns
                    .iter()
                    .map(|c| {
                        Column::new(
                            c.name.clone(),
                            c.datatype,
                            c.cell_val_num,
                            c.validity.is_some(),
                        )
                    })
                    .collect(),
            });
            if q.record["order_insensitive"].as_bool().unwrap() {
                assert_rows_eq_unordered(&rows(&joined), &rows(&whole), &what);
            } else {
                assert_rows_eq(&rows(&joined), &rows(&whole), &what);
            }
        }
        checked += 1;
    }
    assert!(checked >= 400);
}

#[test]
fn query_family_aggregates_match_libtiledb() {
    let mut checked = 0;
    for q in queries().iter().filter(|q| q.command == "aggregate") {
        let what = q.what();
        let aggs = q.aggregates();
        let values = q.read().aggregate(&aggs).unwrap_or_else(|e| panic!("{what}: {e}"));
        let expected = q.record["expected_json"].as_object().unwrap();
        assert_eq!(values.len(), expected.len(), "{what}");
        for (agg, v) in aggs.iter().zip(&values) {
            let key = agg.to_string();
            let want = &expected[&key];
            let got = v.to_json();
            assert!(strict_eq(&got, want), "{what}: {key} = {got}, libtiledb {want}");
        }
        checked += 1;
    }
    eprintln!("checked {checked} aggregates");
    assert!(checked >= 70, "only {checked} aggregates");
}

/// JSON equality telling integers from floats (1 is not 1.0).
fn strict_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            x.is_f64() == y.is_f64()
                && match (x.as_f64(), y.as_f64()) {
                    _ if !x.is_f64() => x == y,
                    (Some(p), Some(q)) => p.to_bits() == q.to_bits(),
                    _ => false,
                }
        }
        _ => a == b,
    }
}

/// Aggregates answered partly from tile metadata equal aggregates computed from the cells
/// alone, over every aggregate the fixtures' attributes allow, on each query's subarray and
/// time (a property over the fixtures: every array, every numeric and string attribute).
#[test]
fn aggregates_from_tile_metadata_equal_aggregates_from_cells() {
    let all = queries();
    compare_metadata_and_cells(&all);
}

fn compare_metadata_and_cells<'a>(all: &'a [Query]) {
    let mut compared = 0;
    for q in all.iter().filter(|q| q.command == "aggregate") {
        let schema = q.array.schema();
        let mut aggs = vec![Aggregate::count()];
        for a in &schema.attributes {
            for op in ["sum", "mean", "min", "max", "null_count"] {
                if let Ok(agg) = Aggregate::parse(&format!("{op}({})", a.name)) {
                    aggs.push(agg);
                }
            }
        }
        // Only those the schema accepts, each on its own.
        let aggs: Vec<Aggregate> = aggs
            .into_iter()
            .filter(|agg| q.read().aggregate_with(std::slice::from_ref(agg), false).is_ok())
            .collect();
        // With and without the query's condition.
        let plain = || {
            let mut r = q.array.read();
            for pair in q.args.chunks(2) {
                if pair[0] == "--range" {
                    r = add_range(&q.array, r, &pair[1]);
                }
            }
            r
        };
        let with_condition = || q.read();
        let runs: [&dyn Fn() -> ReadQuery<'a>; 2] = [&with_condition, &plain];
        for make in runs {
            let from_cells = make().aggregate_with(&aggs, false).unwrap();
            let with_meta = make().aggregate_with(&aggs, true).unwrap();
            for ((agg, a), b) in aggs.iter().zip(&from_cells).zip(&with_meta) {
                let (a, b) = (a.to_json(), b.to_json());
                assert!(strict_eq(&a, &b), "{}: {agg}: cells {a}, metadata {b}", q.what());
            }
            compared += aggs.len();
        }
    }
    eprintln!("compared {compared} aggregates");
}

#[test]
fn malformed_conditions_and_unknown_fields_are_clear_errors() {
    let array = open("fragments/sparse_int64", None);
    let err = array.read().where_text("v > ").execute().unwrap_err().to_string();
    assert!(err.starts_with("invalid condition at column"), "{err}");
    let err = array.read().where_text("nope == 3").execute().unwrap_err().to_string();
    assert!(err.contains("no field named 'nope'"), "{err}");
    let err = array.read().where_text("(v > 1").aggregate(&[Aggregate::count()]).unwrap_err();
    assert!(err.to_string().starts_with("invalid condition"), "{err}");
    let dense = open("fragments/dense_overwrites", None);
    let err = dense.read().where_text("a in [1, 'x']").execute().unwrap_err().to_string();
    assert!(err.starts_with("invalid condition at column"), "{err}");
    // Aggregates libtiledb refuses.
    let err = array.read().aggregate(&[Aggregate::parse("sum(zz)").unwrap()]).unwrap_err();
    assert_eq!(err.to_string(), "no dimension or attribute named \"zz\"");
    // Dimensions aggregate (tests/read_dimension_aggregates.rs), but are never nullable.
    let err = array.read().aggregate(&[Aggregate::parse("null_count(x)").unwrap()]).unwrap_err();
    assert!(err.to_string().contains("dimension \"x\" is not nullable"), "{err}");
    let err = array.read().aggregate(&[Aggregate::parse("null_count(v)").unwrap()]).unwrap_err();
    assert!(err.to_string().contains("not nullable"), "{err}");
}
