//! Sparse row- and col-major reads under a memory budget, which read the cells in
//! partitions of the layout's order: their batches concatenate to the unbounded read (same
//! cells, same order: duplicates, deletes, conditions, overlapping fragments, time travel),
//! they match libtiledb, and the decoded tiles they hold stay near the budget even on an
//! array whose every tile spans the domain.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use serde_json::Value as Json;
use tessera_query::{Array, ReadQuery, ReadResult};
use tessera_storage::LocalStorage;
use tessera_types::ReadLayout;

/// `crates/tessera-query/tests/data/read/`.
fn read_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/read")
}

/// Opens `path` (under `testdata/`, or `tests/data/read/` for `orders/...`) at `at`.
fn open_any(path: &str, at: Option<u64>) -> Array {
    let base = if path.starts_with("orders/") { read_data() } else { testdata() };
    let storage = Arc::new(LocalStorage::new(base.join(path)));
    match at {
        Some(t) => Array::open_at(storage, t).unwrap(),
        None => Array::open(storage).unwrap(),
    }
}

/// One read: the array, the time, `DIM=LO:HI` ranges, a condition.
struct Case {
    array: &'static str,
    at: Option<u64>,
    ranges: &'static [&'static str],
    condition: Option<&'static str>,
}

const fn case(
    array: &'static str,
    at: Option<u64>,
    ranges: &'static [&'static str],
    condition: Option<&'static str>,
) -> Case {
    Case { array, at, ranges, condition }
}

/// Reads over every kind of sparse array of the fixtures.
const CASES: &[Case] = &[
    case("fragments/sparse_int64", None, &[], None),
    case("fragments/sparse_int64", Some(15), &["x=-30:20", "y=10:90"], None),
    case("fragments/sparse_int64", None, &["x=-50:-10", "x=0:30"], Some("v > 0.0")),
    case("fragments/sparse_int64_dups", None, &[], None),
    case("fragments/sparse_int64_dups", None, &["y=20:80"], Some("v < 100.0")),
    case("fragments/sparse_string_float_dims", None, &[], None),
    case("fragments/sparse_string_float_dims", None, &[], Some("a > 0")),
    case("fragments/sparse_hilbert", None, &[], None),
    case("fragments/sparse_attrs", None, &[], None),
    case("fragments/sparse_attrs", None, &["r=5:50"], Some("n is not null")),
    case("fragments/sparse_deletes", None, &[], None),
    case("fragments/sparse_deletes", Some(35), &[], None),
    case("fragments/sparse_consolidated", Some(25), &[], None),
    case("fragments/sparse_consolidated_deletes", None, &[], Some("v > -0.5")),
    case("fragments/commits_consolidated", None, &[], None),
    case("orders/sparse_spanning", None, &[], None),
    case("orders/sparse_spanning", Some(2), &[], Some("a >= 1000")),
    case("orders/sparse_spanning", None, &["x=100:800", "x=850:900", "y=200:900"], None),
    case("orders/sparse_cc", None, &[], None),
    case("orders/sparse_rc", Some(2), &[], None),
    case("orders/sparse_dt", None, &[], None),
    case("orders/sparse_hilbert_str", None, &[], None),
    case("orders/sparse_hilbert3", None, &[], None),
];

/// The read of `c` in `layout`.
fn build<'a>(array: &'a Array, c: &Case, layout: ReadLayout) -> ReadQuery<'a> {
    let mut q = array.read().layout(layout);
    for r in c.ranges {
        let (dim, bounds) = r.split_once('=').unwrap();
        let (lo, hi) = bounds.split_once(':').unwrap();
        let d = array.schema().dimension(dim).unwrap();
        q = if d.is_var() {
            q.range_str(dim, lo, hi)
        } else if d.datatype.is_float() {
            q.range_f64(dim, lo.parse().unwrap(), hi.parse().unwrap())
        } else {
            q.range_i64(dim, lo.parse().unwrap(), hi.parse().unwrap())
        };
    }
    match c.condition {
        Some(w) => q.where_text(w),
        None => q,
    }
}

/// Result bytes as the budget counts them.
fn result_bytes(r: &ReadResult) -> u64 {
    r.columns
        .iter()
        .map(|c| {
            c.data.len() as u64
                + c.offsets.as_ref().map_or(0, |o| 8 * o.len() as u64)
                + c.validity.as_ref().map_or(0, |v| v.len() as u64)
        })
        .sum()
}

/// Every batch of `q`, checked against the budget, as rows; and the peak decoded tile bytes.
fn batched_rows(q: ReadQuery<'_>, budget: u64, what: &str) -> (Vec<Json>, u64) {
    let mut batches = q.memory_budget(budget).batches().unwrap();
    let mut all = Vec::new();
    for b in batches.by_ref() {
        let b = b.unwrap_or_else(|e| panic!("{what}: {e}"));
        check_shape(&b);
        assert!(b.cell_num() > 0, "{what}: empty batch");
        let bytes = result_bytes(&b);
        assert!(b.cell_num() == 1 || bytes <= budget, "{what}: batch of {bytes} bytes");
        all.extend(rows(&b));
    }
    (all, batches.peak_tile_bytes().unwrap())
}

#[test]
fn budgeted_sorted_reads_equal_unbounded_reads() {
    for c in CASES {
        let array = open_any(c.array, c.at);
        for layout in [ReadLayout::RowMajor, ReadLayout::ColMajor] {
            let what =
                format!("{} at {:?} {:?} {:?} {layout:?}", c.array, c.at, c.ranges, c.condition);
            let full = rows(&build(&array, c, layout).execute().unwrap());
            assert!(!full.is_empty(), "{what}: no cells");
            // A few cells per batch, partitions of the smallest cap (four tiles); partitions
            // set by the budget; one partition. (`read_queries.rs` reads one cell per batch.)
            for budget in [64u64, 3000, 20_000, 1 << 24] {
                let (got, _) = batched_rows(build(&array, c, layout), budget, &what);
                assert_rows_eq(&got, &full, &format!("{what} budget {budget}"));
            }
        }
    }
}

/// libtiledb's reads of the spanning array (`tests/data/read/spanning.jsonl`, written by
/// `gen_spanning.py`), unbounded and in partitions.
#[test]
fn spanning_reads_match_libtiledb() {
    let text = std::fs::read_to_string(read_data().join("spanning.jsonl")).unwrap();
    for line in text.lines() {
        let q: Json = serde_json::from_str(line).unwrap();
        let id = q["id"].as_str().unwrap();
        let array = open_any(q["array"].as_str().unwrap(), q["at"].as_u64());
        let layout = match q["layout"].as_str().unwrap() {
            "row-major" => ReadLayout::RowMajor,
            _ => ReadLayout::ColMajor,
        };
        let build = || {
            let mut r = array.read().layout(layout);
            for (dim, rs) in array.schema().dimensions.iter().zip(q["ranges"].as_array().unwrap()) {
                for x in rs.as_array().unwrap() {
                    r = r.range_i64(&dim.name, x[0].as_i64().unwrap(), x[1].as_i64().unwrap());
                }
            }
            if let Some(attrs) = q["attrs"].as_array() {
                r = r.attributes(attrs.iter().map(|a| a.as_str().unwrap().to_owned()));
            }
            r
        };
        let expected = q["expected"].as_array().unwrap();
        assert_rows_eq(&rows(&build().execute().unwrap()), expected, id);
        for budget in [500u64, 5000] {
            let (got, _) = batched_rows(build(), budget, id);
            assert_rows_eq(&got, expected, &format!("{id} budget {budget}"));
        }
    }
}

/// On the spanning array every data tile meets nearly every stretch of a col-major read's
/// order, so an unbounded sort holds every tile at once. Under a budget the decoded tile
/// bytes held at once stay near the budget: at most about 1.5 times the partition cap,
/// which is two thirds of the budget, or four of the largest tiles (about 2.4 KB each here)
/// when that is more.
#[test]
fn budgeted_sorted_reads_hold_bounded_tile_bytes() {
    let array = open_any("orders/sparse_spanning", None);
    // The tiles do span the domain along y, the slowest dimension of a col-major read.
    let storage = LocalStorage::new(read_data().join("orders/sparse_spanning"));
    let (mut tiles, mut wide) = (0, 0);
    for f in array.fragments() {
        let rtree = f.rtree(&storage).unwrap();
        for t in 0..rtree.leaf_count() {
            let y = rtree.leaf(t).unwrap().range(1).unwrap();
            let lo = i32::from_le_bytes(y.low.try_into().unwrap());
            let hi = i32::from_le_bytes(y.high.try_into().unwrap());
            tiles += 1;
            wide += usize::from(hi - lo >= 800);
        }
    }
    assert!(tiles >= 20 && wide * 10 >= tiles * 9, "{wide} of {tiles} tiles span y");

    let c = case("orders/sparse_spanning", None, &[], None);
    let mut batches = build(&array, &c, ReadLayout::ColMajor).batches().unwrap();
    let full: usize = batches.by_ref().map(|b| b.unwrap().cell_num()).sum();
    let unbounded = batches.peak_tile_bytes().unwrap();
    assert!(unbounded > 50_000, "{unbounded}");
    let mut peaks = Vec::new();
    for budget in [16_384u64, 12_288, 2048, 256] {
        let (got, peak) = batched_rows(build(&array, &c, ReadLayout::ColMajor), budget, "spanning");
        assert_eq!(got.len(), full);
        eprintln!("budget {budget}: peak {peak} of {unbounded} unbounded");
        peaks.push(peak);
    }
    // The budget sets the cap: peaks near the budget.
    assert!(peaks[0] <= 16_384 * 5 / 4, "{peaks:?}");
    // Below four tiles' bytes the cap stops shrinking: the peak does not grow.
    assert!(peaks[2] <= peaks[1] * 11 / 10 && peaks[3] <= peaks[1] * 11 / 10, "{peaks:?}");
    assert!(peaks[3] * 4 <= unbounded, "{peaks:?} of {unbounded}");
}
