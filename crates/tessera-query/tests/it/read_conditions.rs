//! Query conditions and aggregates beyond libtiledb's recorded results: a read with a
//! condition equals the read without it filtered here (so tile skipping never changes a
//! result), tiles whose metadata rules out every cell are not read, and aggregates answered
//! from tile metadata read no data tiles.

use crate::common;

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use serde_json::Value as Json;
use tessera_query::Array;
use tessera_query::aggregate::Aggregate;
use tessera_query::condition::QueryCondition;
use tessera_schema::json::cell_json;
use tessera_storage::{Entry, LocalStorage, Result as SResult, Storage};

/// Local storage that records every path read.
#[derive(Debug)]
struct Recording {
    inner: LocalStorage,
    reads: Mutex<Vec<String>>,
}

impl Recording {
    fn open(rel: &str) -> (Arc<Recording>, Array) {
        let s = Arc::new(Recording {
            inner: LocalStorage::new(testdata().join(rel)),
            reads: Mutex::new(Vec::new()),
        });
        let array = Array::open(s.clone()).unwrap();
        (s, array)
    }

    /// Reads of data files (not fragment metadata) since the last call.
    fn data_reads(&self) -> usize {
        let mut reads = self.reads.lock().unwrap();
        let n = reads
            .iter()
            .filter(|p| p.contains("__fragments/") && !p.ends_with("__fragment_metadata.tdb"))
            .count();
        reads.clear();
        n
    }

    fn record(&self, path: &str, n: usize) {
        let mut reads = self.reads.lock().unwrap();
        reads.extend(std::iter::repeat_n(path.to_owned(), n));
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

fn aggs(texts: &[&str]) -> Vec<Aggregate> {
    texts.iter().map(|t| Aggregate::parse(t).unwrap()).collect()
}

#[test]
fn aggregates_from_tile_metadata_read_no_data_tiles() {
    for (rel, texts) in [
        // Duplicates allowed: every whole tile from its metadata, floats included.
        ("fragments/sparse_int64_dups", &["count", "sum(v)", "min(v)", "max(v)", "mean(v)"][..]),
        // One dense fragment covering the array.
        ("filters/nofilter", &["count", "sum(i32)", "min(i64)", "max(u16)", "mean(i8)"][..]),
        ("filters/delta", &["sum(i16)", "min(i8)", "max(ts)", "mean(u16)", "max(f64_as_i64)"][..]),
    ] {
        let (s, array) = Recording::open(rel);
        let with = array.read().aggregate_with(&aggs(texts), true).unwrap();
        let meta_reads = s.data_reads();
        let without = array.read().aggregate_with(&aggs(texts), false).unwrap();
        let cell_reads = s.data_reads();
        assert_eq!(with, without, "{rel}");
        assert_eq!(meta_reads, 0, "{rel}: {texts:?} read data tiles");
        assert!(cell_reads > 0, "{rel}");
    }
    // Overlapping dense fragments: only the tiles one fragment covers whole come from
    // metadata.
    let (s, array) = Recording::open("fragments/dense_overwrites");
    let a = aggs(&["sum(a)", "min(a)", "max(a)", "count"]);
    let with = array.read().aggregate_with(&a, true).unwrap();
    let meta_reads = s.data_reads();
    let without = array.read().aggregate_with(&a, false).unwrap();
    assert_eq!(with, without);
    assert!(meta_reads < s.data_reads());
    // A count of a dense subarray without a condition reads nothing at all.
    let (s, array) = Recording::open("fragments/dense_overwrites");
    let v = array.read().range_i64("r", 3, 7).aggregate(&aggs(&["count"])).unwrap();
    assert_eq!(v[0].to_json(), Json::from(5 * 40));
    assert_eq!(s.data_reads(), 0);
}

#[test]
fn aggregates_under_a_condition_the_metadata_decides_read_no_data_tiles() {
    // Conditions every cell of a tile satisfies (its metadata shows it) answer the tile from
    // its metadata; conditions no cell satisfies skip it; either way no data tile is read.
    // `v` of sparse_int64_dups lies in [-1000, 1000] (tiles with a NaN are decided by
    // nothing: their float bounds are not trusted), `i32` of nofilter is one dense tile.
    for (rel, texts, decided, mixed) in [
        (
            "fragments/sparse_int64_dups",
            &["count", "sum(v)", "min(v)", "max(v)", "mean(v)"][..],
            &["v > -2000", "v >= -2000 and v < 2000", "v > 2000", "v < -2000 or v >= -1000.5"][..],
            &["v >= 990", "v != 0"][..],
        ),
        (
            "filters/nofilter",
            &["count", "sum(i32)", "min(i64)", "max(u16)", "mean(i8)", "null_count(n_i32)"][..],
            &["i32 >= -2147483648", "i32 < -2147483648", "u16 <= 65535 and i8 >= -128"][..],
            &["i32 > 0", "i8 < 3 or u16 > 7"][..],
        ),
    ] {
        let (s, array) = Recording::open(rel);
        for (cond, must_be_free) in
            decided.iter().map(|c| (c, true)).chain(mixed.iter().map(|c| (c, false)))
        {
            let with = array.read().where_text(cond).aggregate_with(&aggs(texts), true).unwrap();
            let meta_reads = s.data_reads();
            let without =
                array.read().where_text(cond).aggregate_with(&aggs(texts), false).unwrap();
            s.data_reads();
            assert_eq!(with, without, "{rel}: {cond}");
            if must_be_free {
                assert_eq!(meta_reads, 0, "{rel}: {cond} read data tiles");
            }
            // The cells the condition keeps, counted from a plain read.
            let read = array.read().where_text(cond).execute().unwrap();
            let count = array.read().where_text(cond).aggregate(&aggs(&["count"])).unwrap();
            if rel.starts_with("fragments/") {
                assert_eq!(count[0].to_json(), Json::from(read.cell_num()), "{rel}: {cond}");
            }
            s.data_reads();
        }
    }
}

#[test]
fn tiles_no_cell_of_which_can_match_are_not_read() {
    // Duplicates allowed: skipping a tile cannot let another version of a cell through.
    // `v` (float64) lies in [-1000, 1000]; tiles whose sum is finite hold no NaN, so their
    // min and max bound every cell.
    let (s, array) = Recording::open("fragments/sparse_int64_dups");
    let all = array.read().where_text("v > -2000").execute().unwrap();
    let reads_all = s.data_reads();
    let none = array.read().where_text("v > 2000 or v < -2000").execute().unwrap();
    assert_eq!((all.cell_num(), none.cell_num()), (710, 0));
    assert_eq!(s.data_reads(), 0, "no tile can match");
    let some = array.read().where_text("v >= 990").execute().unwrap();
    let reads_some = s.data_reads();
    assert!(some.cell_num() > 0 && reads_some < reads_all, "{reads_some} of {reads_all}");
    // Fragments overlapping others: a skipped tile could hide a newer version failing the
    // condition and let an older one through, so nothing is skipped (the result is still
    // exact, see below).
    let (s, array) = Recording::open("fragments/sparse_attrs");
    array.read().where_text("n > -5").execute().unwrap();
    let reads_some = s.data_reads();
    let none = array.read().where_text("n >= 2147483647").execute().unwrap();
    assert_eq!(none.cell_num(), 0);
    assert_eq!(s.data_reads(), reads_some);
}

/// The JSON of `attr`'s fill value as a read prints it.
fn fill_json(array: &Array, name: &str) -> Json {
    let a = array.schema().attribute(name).unwrap();
    if a.nullable && !a.fill_value_validity {
        return Json::Null;
    }
    let cell = a.fill_value.clone();
    cell_json(a.datatype, a.cell_val_num, &cell)
}

/// Every read with a condition of the query family equals the same read without the
/// condition (all fields), filtered here: sparse cells failing it dropped, dense ones set to
/// the fill values. Tile skipping, deduplication order and deletes thus never change which
/// cells a condition keeps.
#[test]
fn condition_reads_equal_unconditioned_reads_filtered() {
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
            let Some(w) = args.iter().position(|a| *a == "--where") else { continue };
            let cond_text = args[w + 1];
            let storage =
                Arc::new(LocalStorage::new(testdata().join(q["array"].as_str().unwrap())));
            let mut at = None;
            for pair in args.chunks(2) {
                match pair[0] {
                    "--at" => at = Some((0, pair[1].parse::<u64>().unwrap())),
                    "--between" => {
                        let (s, e) = pair[1].split_once(':').unwrap();
                        at = Some((s.parse().unwrap(), e.parse().unwrap()));
                    }
                    _ => {}
                }
            }
            let array = match at {
                Some((s, e)) => Array::open_between(storage, s, e).unwrap(),
                None => Array::open(storage).unwrap(),
            };
            let attrs: Vec<String> = match args.iter().position(|a| *a == "--attrs") {
                Some(i) => args[i + 1].split(',').map(str::to_owned).collect(),
                None => array.schema().attributes.iter().map(|a| a.name.clone()).collect(),
            };
            let got = with_args(
                &array,
                array.read().attributes(attrs.clone()).where_text(cond_text),
                &args,
            )
            .execute()
            .unwrap();
            let whole = with_args(&array, array.read(), &args).execute().unwrap();
            let cond =
                QueryCondition::parse(cond_text, array.schema(), array.enumerations()).unwrap();
            let mut keep = Vec::new();
            cond.evaluate(&|name: &str| whole.column(name), whole.cell_num(), &mut keep).unwrap();
            let dims: Vec<String> =
                array.schema().dimensions.iter().map(|d| d.name.clone()).collect();
            let mut want: Vec<Json> = Vec::new();
            for (i, k) in keep.iter().enumerate() {
                let row = cell_row(&whole, i);
                let mut m = serde_json::Map::new();
                for d in &dims {
                    m.insert(d.clone(), row[d].clone());
                }
                if array.schema().is_dense() || *k {
                    for a in &attrs {
                        let v = if *k { row[a].clone() } else { fill_json(&array, a) };
                        m.insert(a.clone(), v);
                    }
                    want.push(Json::Object(m));
                }
            }
            let what = format!("{} {args:?}", q["id"]);
            if q["order_insensitive"].as_bool().unwrap() {
                assert_rows_eq_unordered(&rows(&got), &want, &what);
            } else {
                assert_rows_eq(&rows(&got), &want, &what);
            }
            n += 1;
        }
    }
    assert!(n >= 200, "{n}");
}

/// `r` with the ranges and layout of `args`.
fn with_args<'a>(
    array: &'a Array,
    mut r: tessera_query::ReadQuery<'a>,
    args: &[&str],
) -> tessera_query::ReadQuery<'a> {
    for pair in args.chunks(2) {
        if pair[0] == "--range" {
            r = add_range(array, r, pair[1]);
        }
        if pair[0] == "--layout" {
            r = r.layout(match pair[1] {
                "row-major" => tessera_types::ReadLayout::RowMajor,
                "col-major" => tessera_types::ReadLayout::ColMajor,
                "global" => tessera_types::ReadLayout::GlobalOrder,
                _ => tessera_types::ReadLayout::Unordered,
            });
        }
    }
    r
}

fn add_range<'a>(
    array: &'a Array,
    q: tessera_query::ReadQuery<'a>,
    arg: &str,
) -> tessera_query::ReadQuery<'a> {
    let (dim, bounds) = arg.split_once('=').unwrap();
    let d = array.schema().dimension(dim).unwrap();
    let (lo, hi) = if let Some(rest) = bounds.strip_prefix('"') {
        // "lo":"hi" (quoted bounds only occur on string dimensions)
        let mut de = serde_json::Deserializer::from_str(bounds).into_iter::<String>();
        let lo = de.next().unwrap().unwrap();
        let used = de.byte_offset();
        let _ = rest;
        let tail = &bounds[used + 1..];
        let hi = if tail.starts_with('"') {
            serde_json::from_str::<String>(tail).unwrap()
        } else {
            tail.to_owned()
        };
        (lo, hi)
    } else {
        let (lo, tail) = bounds.split_once(':').unwrap();
        let hi = if tail.starts_with('"') {
            serde_json::from_str::<String>(tail).unwrap()
        } else {
            tail.to_owned()
        };
        (lo.to_owned(), hi)
    };
    if d.is_var() {
        q.range_str(dim, lo, hi)
    } else if d.datatype.is_float() {
        q.range_f64(dim, lo.parse().unwrap(), hi.parse().unwrap())
    } else {
        q.range_i64(dim, lo.parse().unwrap(), hi.parse().unwrap())
    }
}

/// Aggregates with a condition equal the same aggregates computed here from the
/// unconditioned read of the same cells, keeping the cells whose values (fill values for
/// cells no fragment wrote) satisfy the condition: counts, null counts, and the sums, minimums
/// and maximums of integer attributes, over every read with a condition of the query family
/// (dense and sparse, conditions on attributes and dimensions).
#[test]
fn aggregates_with_conditions_equal_filtered_reads() {
    use tessera_query::aggregate::AggregateValue;
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
            let Some(w) = args.iter().position(|a| *a == "--where") else { continue };
            let cond_text = args[w + 1];
            let storage =
                Arc::new(LocalStorage::new(testdata().join(q["array"].as_str().unwrap())));
            let mut at = None;
            for pair in args.chunks(2) {
                match pair[0] {
                    "--at" => at = Some((0, pair[1].parse::<u64>().unwrap())),
                    "--between" => {
                        let (s, e) = pair[1].split_once(':').unwrap();
                        at = Some((s.parse().unwrap(), e.parse().unwrap()));
                    }
                    _ => {}
                }
            }
            let array = match at {
                Some((s, e)) => Array::open_between(storage, s, e).unwrap(),
                None => Array::open(storage).unwrap(),
            };
            let ranges: Vec<&str> = args
                .chunks(2)
                .filter(|p| p[0] == "--range")
                .flat_map(|p| p.iter().copied())
                .collect();
            let whole = with_args(&array, array.read(), &ranges).execute().unwrap();
            let cond =
                QueryCondition::parse(cond_text, array.schema(), array.enumerations()).unwrap();
            let mut keep = Vec::new();
            cond.evaluate(&|name: &str| whole.column(name), whole.cell_num(), &mut keep).unwrap();
            let mut aggs = vec![Aggregate::count()];
            let mut expect: Vec<Json> = vec![Json::from(keep.iter().filter(|&&k| k).count())];
            for a in &array.schema().attributes {
                let col = whole.column(&a.name).unwrap();
                let kept = (0..whole.cell_num()).filter(|&i| keep[i]);
                if a.nullable {
                    aggs.push(Aggregate::parse(&format!("null_count({})", a.name)).unwrap());
                    expect.push(Json::from(kept.clone().filter(|&i| !col.is_valid(i)).count()));
                }
                let int = |b: &[u8]| -> Option<i128> {
                    use tessera_types::Datatype as D;
                    Some(match a.datatype {
                        D::Int8 => i128::from(b[0] as i8),
                        D::UInt8 => i128::from(b[0]),
                        D::Int16 => i128::from(i16::from_le_bytes(b.try_into().ok()?)),
                        D::UInt16 => i128::from(u16::from_le_bytes(b.try_into().ok()?)),
                        D::Int32 => i128::from(i32::from_le_bytes(b.try_into().ok()?)),
                        D::UInt32 => i128::from(u32::from_le_bytes(b.try_into().ok()?)),
                        D::Int64 => i128::from(i64::from_le_bytes(b.try_into().ok()?)),
                        _ => return None,
                    })
                };
                if a.cell_val_num != 1 || int(&vec![0; a.datatype.size()]).is_none() {
                    continue;
                }
                let values: Vec<i128> = kept
                    .filter(|&i| col.is_valid(i))
                    .map(|i| int(col.cell(i).unwrap()).unwrap())
                    .collect();
                // Sums whose partial sums may overflow saturate in an order-dependent way.
                let safe = values.iter().map(|v| v.abs()).sum::<i128>() <= i128::from(i64::MAX);
                for (op, v) in [
                    ("sum", Some(values.iter().sum::<i128>())),
                    ("min", values.iter().min().copied()),
                    ("max", values.iter().max().copied()),
                ] {
                    if op == "sum" && !safe {
                        continue;
                    }
                    let v = match v {
                        _ if op == "sum" && values.is_empty() && a.nullable => Json::Null,
                        Some(v) => Json::from(i64::try_from(v).unwrap()),
                        None => Json::Null,
                    };
                    aggs.push(Aggregate::parse(&format!("{op}({})", a.name)).unwrap());
                    expect.push(v);
                }
            }
            let read = with_args(&array, array.read().where_text(cond_text), &ranges);
            let got: Vec<AggregateValue> = read.aggregate(&aggs).unwrap();
            for ((agg, g), e) in aggs.iter().zip(&got).zip(&expect) {
                assert_eq!(&g.to_json(), e, "{} {args:?}: {agg}", q["id"]);
            }
            n += 1;
        }
    }
    assert!(n >= 200, "{n}");
}
