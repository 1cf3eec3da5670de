//! Aggregates of dimensions (`sum(x)`, `min(x)`, `max(x)`, `mean(x)` next to `count`):
//! checked against values libtiledb computed, against the same aggregates computed here
//! from a read of the same cells, and between the tile-metadata and decoding paths.

use crate::common;

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use serde_json::Value as Json;
use tessera_query::aggregate::{Aggregate, AggregateValue};
use tessera_query::condition::QueryCondition;
use tessera_query::{Array, Error, ReadQuery};
use tessera_storage::{Entry, LocalStorage, Result as SResult, Storage};

/// libtiledb 2.30.0's values for aggregates of dimensions over fixture arrays, one case per
/// line: the array under `testdata/`, the time it is opened at, the ranges and the condition
/// (as `--where` text), and the values.
///
/// How they were computed (`tests/data/read/gen_dimension_aggregates.py` prints these
/// lines): tiledb-py 0.36.1's `query().agg(...)` refuses dimensions ("Attribute name: x does
/// not exist"), so libtiledb's own C API was called through Python's `ctypes` on the
/// `libtiledb.so.2.30` inside the tiledb-py wheel of the reference venv:
/// `tiledb_query_alloc` (read; layout unordered for sparse arrays, row-major for dense
/// ones), `tiledb_subarray_add_range` for each range (dense arrays: the non-empty domain when
/// no range is given, as Tessera's default), `tiledb_query_condition_init` with the same
/// condition, then on the default channel `tiledb_create_unary_aggregate` with the
/// sum/min/max/mean operators (`tiledb_aggregate_count_get` for `count`), output buffers of
/// one value (offsets and data for `string_ascii` dimensions), `tiledb_query_submit`; the
/// output bytes were decoded as libtiledb types them: sums of integer dimensions as `int64`,
/// of float ones as `float64`, means as `float64`, mins and maxs in the dimension's type.
///
/// Every case was also cross-checked in Python against the same aggregates of a tiledb-py
/// read of the same cells. The dense cases stay inside the fragments' non-empty domains:
/// over dense cells that no fragment holds, libtiledb's dimension (and attribute) sums,
/// mins, maxs and means skip the cells while its `count` includes them (e.g.
/// `dense_overwrites` over `r=1:30, c=0:39`: count 1200, sum(r) 11115 over the 900 cells
/// the fragments hold, mean(r) 12.35); Tessera aggregates every cell a read returns (sum(r)
/// 18600 there). The dense cases with a condition leave `count` out: libtiledb 2.30.0's dense
/// count ignores the condition (Tessera counts the matching cells).
const LIBTILEDB: &str = r#"
{"array": "fragments/sparse_int64", "at": null, "ranges": [], "where": null, "expected": {"count": 580, "sum(x)": -523, "min(x)": -50, "max(x)": 49, "mean(x)": -0.9017241379310345, "sum(y)": 29523, "min(y)": 0, "max(y)": 99, "mean(y)": 50.90172413793103}}
{"array": "fragments/sparse_int64", "at": null, "ranges": ["x=-20:5", "x=30:40", "y=10:70"], "where": "v > 0.0", "expected": {"count": 70, "sum(x)": 328, "min(x)": -20, "max(x)": 40, "mean(x)": 4.685714285714286, "sum(y)": 2685, "min(y)": 11, "max(y)": 70, "mean(y)": 38.357142857142854}}
{"array": "fragments/sparse_int64", "at": 15, "ranges": ["y=0:49"], "where": null, "expected": {"count": 225, "sum(x)": -37, "min(x)": -50, "max(x)": 49, "mean(x)": -0.16444444444444445, "sum(y)": 5483, "min(y)": 0, "max(y)": 49, "mean(y)": 24.36888888888889}}
{"array": "fragments/sparse_int64_dups", "at": null, "ranges": [], "where": "y >= 40", "expected": {"count": 446, "sum(x)": -705, "min(x)": -50, "max(x)": 48, "mean(x)": -1.5807174887892377, "sum(y)": 31352, "min(y)": 40, "max(y)": 99, "mean(y)": 70.29596412556054}}
{"array": "fragments/sparse_string_float_dims", "at": null, "ranges": [], "where": null, "expected": {"count": 70, "sum(x)": -19.814290658898432, "min(x)": -10.0, "max(x)": 10.0, "mean(x)": -0.28306129512712047, "min(k)": "", "max(k)": "zzz"}}
{"array": "fragments/sparse_string_float_dims", "at": null, "ranges": ["x=-2.5:7.25"], "where": "a > 0", "expected": {"count": 19, "sum(x)": 52.26583232712773, "min(x)": -2.375, "max(x)": 7.0, "mean(x)": 2.7508332803751436, "min(k)": "", "max(k)": "zz"}}
{"array": "fragments/sparse_hilbert", "at": null, "ranges": ["x=100:700"], "where": null, "expected": {"count": 100, "sum(x)": 40753, "min(x)": 101, "max(x)": 696, "mean(x)": 407.53, "sum(y)": -1.7479999999999982, "min(y)": -0.9873, "max(y)": 0.9956, "mean(y)": -0.01747999999999998}}
{"array": "fragments/sparse_deletes", "at": null, "ranges": [], "where": null, "expected": {"count": 115, "sum(r)": 1119, "min(r)": 0, "max(r)": 19, "mean(r)": 9.730434782608695, "sum(c)": 1058, "min(c)": 0, "max(c)": 19, "mean(c)": 9.2}}
{"array": "fragments/sparse_deletes", "at": 35, "ranges": ["r=2:15"], "where": null, "expected": {"count": 61, "sum(r)": 520, "min(r)": 2, "max(r)": 15, "mean(r)": 8.524590163934427, "sum(c)": 583, "min(c)": 0, "max(c)": 19, "mean(c)": 9.557377049180328}}
{"array": "fragments/sparse_consolidated_deletes", "at": null, "ranges": [], "where": null, "expected": {"count": 146, "sum(r)": 1397, "min(r)": 0, "max(r)": 19, "mean(r)": 9.568493150684931, "sum(c)": 1336, "min(c)": 0, "max(c)": 19, "mean(c)": 9.150684931506849}}
{"array": "fragments/sparse_consolidated", "at": 25, "ranges": ["c=3:17"], "where": "v > 0.0", "expected": {"count": 74, "sum(r)": 662, "min(r)": 0, "max(r)": 19, "mean(r)": 8.945945945945946, "sum(c)": 697, "min(c)": 3, "max(c)": 17, "mean(c)": 9.41891891891892}}
{"array": "fragments/dense_consolidated", "at": null, "ranges": [], "where": null, "expected": {"count": 1200, "sum(r)": 18600, "min(r)": 1, "max(r)": 30, "mean(r)": 15.5, "sum(c)": 23400, "min(c)": 0, "max(c)": 39, "mean(c)": 19.5}}
{"array": "fragments/dense_consolidated", "at": null, "ranges": ["r=3:7", "r=5:9", "c=2:4", "c=30:31"], "where": null, "expected": {"count": 50, "sum(r)": 300, "min(r)": 3, "max(r)": 9, "mean(r)": 6.0, "sum(c)": 700, "min(c)": 2, "max(c)": 31, "mean(c)": 14.0}}
{"array": "fragments/dense_consolidated", "at": null, "ranges": ["r=2:20", "c=5:35"], "where": "a > 0", "expected": {"sum(r)": 3078, "min(r)": 2, "max(r)": 20, "mean(r)": 10.46938775510204, "sum(c)": 5748, "min(c)": 5, "max(c)": 35, "mean(c)": 19.551020408163264}}
{"array": "fragments/dense_consolidated", "at": null, "ranges": ["r=2:20", "r=4:6", "c=5:35"], "where": "c < 17", "expected": {"sum(r)": 2688, "min(r)": 2, "max(r)": 20, "mean(r)": 10.181818181818182, "sum(c)": 2772, "min(c)": 5, "max(c)": 16, "mean(c)": 10.5}}
{"array": "fragments/dense_overwrites", "at": null, "ranges": ["r=1:16"], "where": null, "expected": {"count": 640, "sum(r)": 5440, "min(r)": 1, "max(r)": 16, "mean(r)": 8.5, "sum(c)": 12480, "min(c)": 0, "max(c)": 39, "mean(c)": 19.5}}
{"array": "fragments/dense_overwrites", "at": 40, "ranges": ["r=20:30", "c=30:39"], "where": null, "expected": {"count": 110, "sum(r)": 2750, "min(r)": 20, "max(r)": 30, "mean(r)": 25.0, "sum(c)": 3795, "min(c)": 30, "max(c)": 39, "mean(c)": 34.5}}
{"array": "fragments/dense_attrs", "at": null, "ranges": [], "where": null, "expected": {"count": 58, "sum(d)": 1827, "min(d)": 3, "max(d)": 60, "mean(d)": 31.5}}
"#;

/// Opens `testdata/<rel>`, at `at` if given.
fn open_array(rel: &str, at: Option<u64>) -> Array {
    open(rel, at)
}

/// `q` with the `DIM=LO:HI` ranges of `ranges`.
fn with_ranges<'a>(array: &'a Array, mut q: ReadQuery<'a>, ranges: &[&str]) -> ReadQuery<'a> {
    for r in ranges {
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
    q
}

fn aggs(texts: &[&str]) -> Vec<Aggregate> {
    texts.iter().map(|t| Aggregate::parse(t).unwrap()).collect()
}

#[test]
fn dimension_aggregates_match_libtiledb() {
    let mut n = 0;
    for line in LIBTILEDB.lines().filter(|l| !l.trim().is_empty()) {
        let case: Json = serde_json::from_str(line).unwrap();
        let array = open_array(case["array"].as_str().unwrap(), case["at"].as_u64());
        let ranges: Vec<&str> =
            case["ranges"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
        let expected = case["expected"].as_object().unwrap();
        let keys: Vec<&str> = expected.keys().map(String::as_str).collect();
        let mut q = with_ranges(&array, array.read(), &ranges);
        if let Some(w) = case["where"].as_str() {
            q = q.where_text(w);
        }
        for use_metadata in [true, false] {
            let got = q.clone().aggregate_with(&aggs(&keys), use_metadata).unwrap();
            for (key, value) in keys.iter().zip(&got) {
                let (g, e) = (value.to_json(), &expected[*key]);
                // Float sums depend on the order cells are added in: libtiledb's sparse
                // readers add them in an order of their own, not even the same from one run
                // to the next (sum(x) of sparse_string_float_dims came out as
                // -19.814290658898432 and -19.814290658898457).
                let float_sum = key.starts_with("mean") || e.is_f64() && key.starts_with("sum");
                if float_sum {
                    assert!(close(&g, e), "{line}: {key} = {g}");
                } else {
                    assert_eq!(&g, e, "{line}: {key}");
                }
            }
        }
        n += 1;
    }
    assert_eq!(n, 18);
}

/// Whether `a` and `b` (JSON numbers) are equal, floats within a relative `1e-12` (sums of
/// floats depend on the order of the cells).
fn close(a: &Json, b: &Json) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_f64() || b.is_f64() => {
            x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        _ => a == b,
    }
}

/// The aggregates of every dimension of `array` over the cells `keep` selects of `whole` (a
/// read returning the dimensions), as `(aggregate text, value)`.
fn brute_force(
    array: &Array,
    whole: &tessera_query::ReadResult,
    keep: &[bool],
) -> Vec<(String, Json)> {
    let mut out = vec![("count".to_owned(), Json::from(keep.iter().filter(|&&k| k).count()))];
    for d in &array.schema().dimensions {
        let col = whole.column(&d.name).unwrap();
        let kept = (0..whole.cell_num()).filter(|&i| keep[i]);
        if d.is_var() {
            let values: Vec<&[u8]> = kept.map(|i| col.cell(i).unwrap()).collect();
            let s = |v: Option<&&[u8]>| {
                v.map_or(Json::Null, |b| Json::from(String::from_utf8(b.to_vec()).unwrap()))
            };
            out.push((format!("min({})", d.name), s(values.iter().min())));
            out.push((format!("max({})", d.name), s(values.iter().max())));
            continue;
        }
        let values: Vec<Json> = kept
            .map(|i| tessera_schema::json::cell_json(d.datatype, 1, col.cell(i).unwrap()))
            .collect();
        let float = d.datatype.is_float();
        let f = |v: &Json| v.as_f64().unwrap();
        let sum = if float {
            Json::from(values.iter().map(f).sum::<f64>())
        } else {
            Json::from(values.iter().map(|v| i128::from(v.as_i64().unwrap())).sum::<i128>() as i64)
        };
        let by = |a: &&Json, b: &&Json| f(a).partial_cmp(&f(b)).unwrap();
        let mean = if values.is_empty() {
            Json::Null
        } else {
            Json::from(values.iter().map(f).sum::<f64>() / values.len() as f64)
        };
        out.push((format!("sum({})", d.name), sum));
        out.push((
            format!("min({})", d.name),
            values.iter().min_by(by).cloned().unwrap_or(Json::Null),
        ));
        out.push((
            format!("max({})", d.name),
            values.iter().max_by(by).cloned().unwrap_or(Json::Null),
        ));
        out.push((format!("mean({})", d.name), mean));
    }
    out
}

/// Over every read of the query family (ranges, time travel, conditions, deletes,
/// duplicates, dense and sparse arrays), each dimension's count, sum, min, max and mean equal
/// those computed here from a read of the same cells without the condition, keeping the
/// cells whose values satisfy it.
#[test]
fn dimension_aggregates_equal_aggregates_of_reads() {
    let mut n = 0;
    for file in ["queries/fragments.jsonl", "queries/filters.jsonl"] {
        let text = std::fs::read_to_string(testdata().join(file)).unwrap();
        for line in text.lines() {
            let q: Json = serde_json::from_str(line).unwrap();
            if q["command"] != "read" {
                continue;
            }
            let args: Vec<&str> =
                q["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            let storage =
                Arc::new(LocalStorage::new(testdata().join(q["array"].as_str().unwrap())));
            let mut at = None;
            let mut ranges = Vec::new();
            let mut cond_text = None;
            for pair in args.chunks(2) {
                match pair[0] {
                    "--at" => at = Some((0, pair[1].parse::<u64>().unwrap())),
                    "--between" => {
                        let (s, e) = pair[1].split_once(':').unwrap();
                        at = Some((s.parse().unwrap(), e.parse().unwrap()));
                    }
                    "--range" => ranges.push(pair[1]),
                    "--where" => cond_text = Some(pair[1]),
                    _ => {}
                }
            }
            // Quoted bounds (string dimensions with ':' in them) are left to other tests.
            if ranges.iter().any(|r| r.contains('"')) {
                continue;
            }
            let array = match at {
                Some((s, e)) => Array::open_between(storage, s, e).unwrap(),
                None => Array::open(storage).unwrap(),
            };
            let whole = with_ranges(&array, array.read(), &ranges).execute().unwrap();
            let mut keep = vec![true; whole.cell_num()];
            let mut read = with_ranges(&array, array.read(), &ranges);
            if let Some(c) = cond_text {
                let cond = QueryCondition::parse(c, array.schema(), array.enumerations()).unwrap();
                cond.evaluate(&|name: &str| whole.column(name), whole.cell_num(), &mut keep)
                    .unwrap();
                read = read.where_text(c);
            }
            let expect = brute_force(&array, &whole, &keep);
            let texts: Vec<&str> = expect.iter().map(|(t, _)| t.as_str()).collect();
            for use_metadata in [true, false] {
                let got = read.clone().aggregate_with(&aggs(&texts), use_metadata).unwrap();
                for ((text, e), g) in expect.iter().zip(&got) {
                    assert!(
                        close(&g.to_json(), e),
                        "{} {args:?} metadata={use_metadata}: {text} = {} (read: {e})",
                        q["id"],
                        g.to_json()
                    );
                }
            }
            n += 1;
        }
    }
    assert!(n >= 400, "{n}");
}

/// Local storage that counts the reads of data files.
#[derive(Debug)]
struct Recording {
    inner: LocalStorage,
    data_reads: Mutex<usize>,
}

impl Recording {
    fn record(&self, path: &str, n: usize) {
        if path.contains("__fragments/") && !path.ends_with("__fragment_metadata.tdb") {
            *self.data_reads.lock().unwrap() += n;
        }
    }

    /// Reads of data files since the last call.
    fn take(&self) -> usize {
        std::mem::take(&mut *self.data_reads.lock().unwrap())
    }
}

impl Storage for Recording {
    fn read(&self, path: &str) -> SResult<Bytes> {
        self.record(path, 1);
        self.inner.read(path)
    }
    fn read_range(&self, path: &str, range: Range<u64>) -> SResult<Bytes> {
        self.record(path, 1);
        self.inner.read_range(path, range)
    }
    fn read_ranges(&self, path: &str, ranges: &[Range<u64>]) -> SResult<Vec<Bytes>> {
        self.record(path, ranges.len());
        self.inner.read_ranges(path, ranges)
    }
    fn size(&self, path: &str) -> SResult<u64> {
        self.inner.size(path)
    }
    fn exists(&self, path: &str) -> SResult<bool> {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &str) -> SResult<bool> {
        self.inner.is_dir(path)
    }
    fn list(&self, dir: &str) -> SResult<Vec<Entry>> {
        self.inner.list(dir)
    }
    fn write(&self, path: &str, data: Bytes) -> SResult<()> {
        self.inner.write(path, data)
    }
    fn create_dir(&self, path: &str) -> SResult<()> {
        self.inner.create_dir(path)
    }
    fn remove(&self, path: &str) -> SResult<()> {
        self.inner.remove(path)
    }
    fn remove_dir_all(&self, dir: &str) -> SResult<()> {
        self.inner.remove_dir_all(dir)
    }
    fn publish(&self, path: &str, data: Bytes) -> SResult<()> {
        self.inner.publish(path, data)
    }
    fn rename(&self, from: &str, to: &str) -> SResult<()> {
        self.inner.rename(from, to)
    }
}

/// Whole sparse tiles answer sums from their tile metadata and minimums and maximums from
/// their MBRs: with duplicates allowed (every tile inside the subarray qualifies), nothing
/// is decoded, and the values equal decoding's.
#[test]
fn sparse_dimension_aggregates_come_from_metadata_and_mbrs() {
    let storage = Arc::new(Recording {
        inner: LocalStorage::new(testdata().join("fragments/sparse_int64_dups")),
        data_reads: Mutex::new(0),
    });
    let array = Array::open(storage.clone()).unwrap();
    let a = aggs(&["count", "sum(x)", "min(x)", "max(x)", "mean(y)", "min(y)", "sum(v)"]);
    storage.take();
    let with = array.read().aggregate_with(&a, true).unwrap();
    assert_eq!(storage.take(), 0, "data tiles read");
    let without = array.read().aggregate_with(&a, false).unwrap();
    assert!(storage.take() > 0);
    assert_eq!(with, without);
    assert_eq!(with[0], AggregateValue::UInt(710));
}

/// What libtiledb refuses is refused: a null count of a dimension ("Aggregate must only be
/// requested for nullable fields"), the sum of a string dimension ("SUM aggregates can only
/// be requested on numeric types"); minimums and maximums of string dimensions are fine.
#[test]
fn dimension_aggregates_libtiledb_refuses_are_refused() {
    let array = open_array("fragments/sparse_string_float_dims", None);
    for bad in ["null_count(x)", "sum(k)", "mean(k)"] {
        let e = array.read().aggregate(&aggs(&[bad])).unwrap_err();
        assert!(matches!(e, Error::InvalidQuery(_)), "{bad}: {e}");
    }
    let v = array.read().range_f64("x", 0.0, 10.0).aggregate(&aggs(&["min(k)", "max(k)"])).unwrap();
    assert!(matches!(v[0], AggregateValue::Value { .. }), "{v:?}");
    let e = array.read().aggregate(&aggs(&["sum(nope)"])).unwrap_err();
    assert!(matches!(e, Error::UnknownField(_)), "{e}");
}
