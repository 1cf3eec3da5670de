//! Point reads (`ReadQuery::points`): a property test against a brute-force filter of a full
//! read (dense and sparse, duplicates in the request and in the array, absent points,
//! conditions, field selection, several fragments), libtiledb's values of the fixtures at the
//! same coordinates, and the errors.

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use serde_json::Value as Json;
use tessera_query::read::Points;
use tessera_query::{Array, Error, ReadResult};
use tessera_schema::json::value_from_json;
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::MemoryStorage;
use tessera_types::{ArrayType, Datatype, Layout};

const X: (i64, i64) = (0, 2999);
const Y: (i64, i64) = (-6, 9);

/// A fragment: a dense box (x0, width, y0, height), the sparse cells, the seed of values.
type Write = ((i64, i64, i64, i64), Vec<(i64, i64)>, u64);

#[derive(Debug, Clone)]
struct Case {
    dense: bool,
    extents: (i64, i64),
    capacity: u64,
    dups: bool,
    /// 0 row-major, 1 col-major, 2 Hilbert (sparse) cell order.
    order: u8,
    /// Per fragment: a dense box (x0, width, y0, height) and the sparse cells.
    writes: Vec<Write>,
    /// Points anywhere in the domain.
    points: Vec<(i64, i64)>,
    /// Points at written sparse cells (indexes into all written cells).
    hits: Vec<prop::sample::Index>,
    /// Points repeated (indexes into the points so far).
    repeats: Vec<prop::sample::Index>,
    /// 0 plain, 1 with a condition, 2 with a field selection.
    variant: u8,
}

fn case() -> impl Strategy<Value = Case> {
    let write = (
        (X.0..=X.1, 1i64..400, Y.0..=Y.1, 1i64..16),
        prop::collection::vec((X.0..=X.1, Y.0..=Y.1), 0..60),
        any::<u64>(),
    );
    (
        any::<bool>(),
        (1i64..80, 1i64..8),
        2u64..9,
        any::<bool>(),
        0u8..3,
        prop::collection::vec(write, 0..4),
        prop::collection::vec((X.0..=X.1, Y.0..=Y.1), 0..40),
        prop::collection::vec(any::<prop::sample::Index>(), 0..30),
        prop::collection::vec(any::<prop::sample::Index>(), 0..15),
        0u8..3,
    )
        .prop_map(
            |(dense, extents, capacity, dups, order, writes, points, hits, repeats, variant)| {
                Case {
                    dense,
                    extents,
                    capacity,
                    dups,
                    order,
                    writes,
                    points,
                    hits,
                    repeats,
                    variant,
                }
            },
        )
}

/// The value of attribute `v` of a cell written by the fragment of `seed`.
fn v_of(seed: u64, x: i64, y: i64) -> i32 {
    let h = seed ^ (x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (y as u64).wrapping_mul(31);
    (h.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 40) as i32 % 100
}

fn s_of(v: i32) -> Option<String> {
    (v % 5 != 0).then(|| format!("s{v}"))
}

fn build(case: &Case) -> Array {
    let order = match case.order {
        0 => Layout::RowMajor,
        1 => Layout::ColMajor,
        _ if case.dense => Layout::RowMajor,
        _ => Layout::Hilbert,
    };
    let mut b = ArraySchema::builder(if case.dense { ArrayType::Dense } else { ArrayType::Sparse })
        .dimension(
            Dimension::new("x", Datatype::Int64).domain_i64(X.0, X.1).tile_i64(case.extents.0),
        )
        .dimension(
            // (Dense dimensions share one datatype.)
            Dimension::new("y", if case.dense { Datatype::Int64 } else { Datatype::Int32 })
                .domain_i64(Y.0, Y.1)
                .tile_i64(case.extents.1),
        )
        .attribute(Attribute::new("v", Datatype::Int32))
        .attribute(Attribute::new("s", Datatype::StringUtf8).var().nullable(true))
        .cell_order(order);
    if !case.dense {
        b = b.capacity(case.capacity).allows_duplicates(case.dups);
    }
    let schema = b.build().unwrap();
    let storage = Arc::new(MemoryStorage::new());
    Array::create(storage.clone(), &schema, &[]).unwrap();
    for (k, ((x0, w, y0, h), cells, seed)) in case.writes.iter().enumerate() {
        let array = Array::open(storage.clone()).unwrap();
        let mut cells: Vec<(i64, i64)> = if case.dense {
            let (x1, y1) = ((x0 + w - 1).min(X.1), (y0 + h - 1).min(Y.1));
            (*x0..=x1).flat_map(|x| (*y0..=y1).map(move |y| (x, y))).collect()
        } else {
            cells.clone()
        };
        if !case.dense && !case.dups {
            let mut seen = std::collections::HashSet::new();
            cells.retain(|c| seen.insert(*c));
        }
        if cells.is_empty() {
            continue;
        }
        let v: Vec<i32> = cells.iter().map(|&(x, y)| v_of(*seed, x, y)).collect();
        let s: Vec<Option<String>> = v.iter().map(|&v| s_of(v)).collect();
        let mut q = array.write().timestamp(k as u64 + 1);
        if case.dense {
            let (x1, y1) = ((x0 + w - 1).min(X.1), (y0 + h - 1).min(Y.1));
            q = q.range_i64("x", *x0, x1).range_i64("y", *y0, y1);
        } else {
            let xs: Vec<i64> = cells.iter().map(|c| c.0).collect();
            let ys: Vec<i32> = cells.iter().map(|c| c.1 as i32).collect();
            q = q.layout(Layout::Unordered).values("x", &xs).values("y", &ys);
        }
        q.values("v", &v)
            .var_values("s", s.iter().map(|s| s.clone().unwrap_or_default()))
            .validity("s", s.iter().map(|s| u8::from(s.is_some())).collect())
            .submit()
            .unwrap();
    }
    Array::open(storage).unwrap()
}

/// The points of a case: the random ones, the written cells picked, then the repeats.
fn points_of(case: &Case) -> Vec<(i64, i64)> {
    let written: Vec<(i64, i64)> = case.writes.iter().flat_map(|w| w.1.iter().copied()).collect();
    let mut points = case.points.clone();
    if !written.is_empty() {
        points.extend(case.hits.iter().map(|i| written[i.index(written.len())]));
    }
    if !points.is_empty() {
        let before = points.len();
        let again: Vec<(i64, i64)> = case.repeats.iter().map(|i| points[i.index(before)]).collect();
        points.extend(again);
    }
    points
}

/// `row` with only the keys `keep`.
fn project(row: &Json, keep: &[&str]) -> Json {
    let m = row.as_object().unwrap();
    Json::Object(keep.iter().map(|k| ((*k).to_owned(), m[*k].clone())).collect())
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let array = build(case);
    let points = points_of(case);
    let xs: Vec<i64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<i64> = points.iter().map(|p| p.1).collect();
    let condition = "v > 0 or s is null";
    // The brute force: every cell of the domain (dense) or every cell (sparse), filtered.
    let mut full = array.read().range_i64("x", X.0, X.1).range_i64("y", Y.0, Y.1);
    let mut q = array.read().points(Points::new().coords_i64("y", &ys).coords("x", &xs));
    if case.variant == 1 {
        full = full.where_text(condition);
        q = q.where_text(condition);
    }
    let keep: &[&str] = if case.variant == 2 { &["s", "y"] } else { &["x", "y", "v", "s"] };
    if case.variant == 2 {
        q = q.attributes(["s"]).dimensions(["y"]);
    }
    let full = full.execute().unwrap();
    let got: ReadResult = q.execute().unwrap();
    check_shape(&got);
    let names: Vec<&str> = got.columns.iter().map(|c| c.name.as_str()).collect();
    prop_assert_eq!(
        names,
        if case.variant == 2 { vec!["y", "s"] } else { vec!["x", "y", "v", "s"] }
    );
    // The cells of the full read at each coordinate, in its order.
    let fx = full.values::<i64>("x").unwrap();
    let fy: Vec<i64> = if case.dense {
        full.values::<i64>("y").unwrap().into_owned()
    } else {
        full.values::<i32>("y").unwrap().iter().map(|&y| i64::from(y)).collect()
    };
    let mut cells: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    for (i, c) in fx.iter().zip(&fy).enumerate() {
        cells.entry((*c.0, *c.1)).or_default().push(i);
    }
    let mut expected = Vec::new();
    for p in &points {
        let here = cells.get(p).map_or(&[][..], Vec::as_slice);
        if case.dense {
            prop_assert_eq!(here.len(), 1, "dense point {:?}", p);
        }
        expected.extend(here.iter().map(|&i| project(&cell_row(&full, i), keep)));
    }
    let got = rows(&got);
    prop_assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        prop_assert_eq!(g, e, "cell {}", i);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn point_reads_equal_a_filter_of_a_full_read(case in case()) {
        check(&case)?;
    }
}

#[test]
fn dense_points_far_apart_read_tile_by_tile() {
    // Points spread over many space tiles (the grouped path), with a second fragment.
    let case = Case {
        dense: true,
        extents: (7, 3),
        capacity: 4,
        dups: false,
        order: 1,
        writes: vec![((0, 3000, -6, 16), vec![], 1), ((100, 900, 0, 3), vec![], 2)],
        points: (0..300).map(|i| ((i * 997) % 3000, (i % 16) - 6)).collect(),
        hits: vec![],
        repeats: vec![],
        variant: 0,
    };
    check(&case).unwrap();
    check(&Case { variant: 1, ..case.clone() }).unwrap();
    check(&Case { variant: 2, ..case }).unwrap();
}

#[test]
fn batches_of_a_point_read_are_one_result() {
    let case = Case {
        dense: false,
        extents: (10, 4),
        capacity: 3,
        dups: true,
        order: 0,
        writes: vec![((0, 1, 0, 1), (0..50).map(|i| (i * 7 % 40, i % 5)).collect(), 3)],
        points: vec![(0, 0), (7, 1), (7, 1), (39, 4)],
        hits: vec![],
        repeats: vec![],
        variant: 0,
    };
    let array = build(&case);
    let points = Points::new().coords("x", [0i64, 7, 7, 39]).coords("y", [0i32, 1, 1, 4]);
    let whole = array.read().points(points.clone()).execute().unwrap();
    let batches: Vec<ReadResult> = array
        .read()
        .points(points)
        .memory_budget(64)
        .batches()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0], whole);
    check(&case).unwrap();
}

/// A point's coordinates from a fixture row, as the bytes of each dimension.
fn coords_of(array: &Array, row: &Json) -> Vec<Vec<u8>> {
    array
        .schema()
        .dimensions
        .iter()
        .map(|d| match &row[&d.name] {
            Json::String(s) if d.is_var() => s.clone().into_bytes(),
            v => value_from_json(d.datatype, v).unwrap(),
        })
        .collect()
}

#[test]
fn fixture_points_read_libtiledbs_values() {
    let manifest: Json = serde_json::from_str(
        &std::fs::read_to_string(testdata().join("fragments/manifest.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for a in manifest["arrays"].as_array().unwrap() {
        let dups = a["allows_duplicates"].as_bool() == Some(true);
        for r in a["reads"].as_array().unwrap() {
            let at = r["at"].as_u64();
            let what = format!("{} at {at:?}", a["name"]);
            let array = open(a["path"].as_str().unwrap(), at);
            let expected = read_jsonl(r["cells_file"].as_str().unwrap());
            if expected.is_empty() {
                continue;
            }
            let dims: Vec<String> =
                array.schema().dimensions.iter().map(|d| d.name.clone()).collect();
            // Every third cell backwards, the first one twice, and points mixing the
            // coordinates of different cells (absent from sparse arrays, mostly).
            let mut asked: Vec<Json> = expected.iter().rev().step_by(3).cloned().collect();
            asked.push(expected[0].clone());
            for k in 0..expected.len().min(20) {
                let mut mixed = expected[k].clone();
                for (i, d) in dims.iter().enumerate() {
                    let other = &expected[(k * 7 + i * 13 + 5) % expected.len()];
                    mixed[d] = other[d].clone();
                }
                asked.push(mixed);
            }
            asked.push(expected[0].clone());
            let mut points = Points::new();
            let coords: Vec<Vec<Vec<u8>>> =
                asked.iter().map(|row| coords_of(&array, row)).collect();
            for (i, d) in dims.iter().enumerate() {
                points = points.coords_bytes(d, coords.iter().map(|c| c[i].clone()));
            }
            let result =
                array.read().points(points).execute().unwrap_or_else(|e| panic!("{what}: {e}"));
            check_shape(&result);
            let got = rows(&result);
            // libtiledb's cells at each point, in the order asked.
            let mut want = Vec::new();
            let mut at_point = Vec::new();
            for row in &asked {
                let here: Vec<Json> = expected
                    .iter()
                    .filter(|e| dims.iter().all(|d| e[d] == row[d]))
                    .cloned()
                    .collect();
                if array.schema().is_dense() {
                    assert_eq!(here.len(), 1, "{what}: {row}");
                }
                at_point.push(here.len());
                want.extend(here);
            }
            if dups {
                // Duplicates come in the array's order; libtiledb's read order of them is
                // not fixed: compare each point's cells as a set.
                let mut k = 0;
                for n in at_point {
                    assert_rows_eq_unordered(&got[k..k + n], &want[k..k + n], &what);
                    k += n;
                }
                assert_eq!(got.len(), want.len(), "{what}");
            } else {
                assert_rows_eq(&got, &want, &what);
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked}");
}

fn small_sparse() -> Array {
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
        .dimension(Dimension::new("s", Datatype::StringAscii))
        .attribute(Attribute::new("v", Datatype::Float64))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    array
        .write()
        .values("x", &[3i64, 7, 50, 7])
        .var_values("s", ["a", "b", "c", "bb"])
        .values("v", &[0.3, 0.7, 5.0, 0.77])
        .submit()
        .unwrap();
    Array::open(storage).unwrap()
}

#[test]
fn string_dimensions_and_selections() {
    let array = small_sparse();
    let points = Points::new()
        .coords_i64("x", [7, 50, 7, 3, 7])
        .coords_str("s", ["bb", "c", "b", "zz", "bb"]);
    let r = array.read().points(points.clone()).execute().unwrap();
    assert_eq!(&r.values::<i64>("x").unwrap()[..], &[7, 50, 7, 7]);
    assert_eq!(
        r.column("s").unwrap().strings().unwrap().collect::<Vec<_>>(),
        ["bb", "c", "b", "bb"]
    );
    assert_eq!(&r.values::<f64>("v").unwrap()[..], &[0.77, 5.0, 0.7, 0.77]);
    let r = array.read().points(points.clone()).with_coordinates(false).execute().unwrap();
    assert_eq!(r.columns.len(), 1);
    assert_eq!(&r.values::<f64>("v").unwrap()[..], &[0.77, 5.0, 0.7, 0.77]);
    let r = array.read().points(points).where_text("v < 1.0").execute().unwrap();
    assert_eq!(&r.values::<f64>("v").unwrap()[..], &[0.77, 0.7, 0.77]);
    // No points: no cells, the columns asked.
    let empty = Points::new().coords_i64("x", []).coords_str("s", Vec::<String>::new());
    let r = array.read().points(empty).execute().unwrap();
    assert_eq!((r.cell_num(), r.columns.len()), (0, 3));
}

/// The message of an error, checked to be `kind`.
fn err_text(r: tessera_query::Result<ReadResult>) -> (String, Error) {
    let e = r.unwrap_err();
    (e.to_string(), e)
}

#[test]
fn bad_points_are_errors_naming_the_dimension() {
    let array = small_sparse();
    let read = |p: Points| err_text(array.read().points(p).execute());
    let (text, e) = read(Points::new().coords_i64("x", [5, 100]).coords_str("s", ["a", "b"]));
    assert!(matches!(e, Error::InvalidRange { ref dimension, .. } if dimension == "x"), "{e}");
    assert_eq!(text, "range on dimension \"x\": point 1: 100 is outside the domain [0, 99]");
    let (text, _) = read(Points::new().coords("x", [5i64, -1]).coords_str("s", ["a", "b"]));
    assert_eq!(text, "range on dimension \"x\": point 1: -1 is outside the domain [0, 99]");
    let (text, _) = read(Points::new().coords("x", [5i32]).coords_str("s", ["a"]));
    assert_eq!(
        text,
        "range on dimension \"x\": int32 coordinates given for a dimension of type int64"
    );
    let (text, _) = read(Points::new().coords_str("x", ["5"]).coords_str("s", ["a"]));
    assert_eq!(
        text,
        "range on dimension \"x\": string coordinates given for a dimension of type int64"
    );
    let (text, _) = read(Points::new().coords_bytes("x", [[1u8, 0]]).coords_str("s", ["a"]));
    assert_eq!(
        text,
        "range on dimension \"x\": point 0: a coordinate of 2 bytes given for int64 values of 8 bytes"
    );
    let (text, _) = read(Points::new().coords_i64("x", [5]));
    assert_eq!(text, "invalid query: the points give no coordinates on dimension \"s\"");
    let (text, _) = read(Points::new().coords_i64("x", [5, 6]).coords_str("s", ["a"]));
    assert_eq!(
        text,
        "invalid query: the points give 2 coordinates on dimension \"x\" and 1 on \"s\""
    );
    let (_, e) =
        read(Points::new().coords_i64("x", [5]).coords_str("s", ["a"]).coords_i64("z", [1]));
    assert!(matches!(e, Error::UnknownField(ref n) if n == "z"), "{e}");
    let p = Points::new().coords_i64("x", [5]).coords_str("s", ["a"]);
    let (text, _) = err_text(array.read().range_i64("x", 0, 5).points(p.clone()).execute());
    assert!(text.contains("takes no ranges"), "{text}");
    let e = array
        .read()
        .points(p)
        .aggregate(&[tessera_query::aggregate::Aggregate::count()])
        .unwrap_err();
    assert!(matches!(e, Error::InvalidQuery(_)), "{e}");
    // Dense: the domain, and the current domain's message.
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::UInt8).domain_i64(1, 10).tile_i64(5))
        .dimension(Dimension::new("c", Datatype::UInt8).domain_i64(0, 3).tile_i64(2))
        .attribute(Attribute::new("a", Datatype::Int32))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let dense = Array::open(storage).unwrap();
    let (text, _) = err_text(
        dense
            .read()
            .points(Points::new().coords_i64("r", [1, 11]).coords_i64("c", [0, 0]))
            .execute(),
    );
    assert_eq!(text, "range on dimension \"r\": point 1: 11 is outside the domain [1, 10]");
    let (text, _) = err_text(
        dense.read().points(Points::new().coords_i64("r", [1]).coords_i64("c", [300])).execute(),
    );
    assert_eq!(
        text,
        "range on dimension \"c\": point 0: 300 does not fit the dimension's type uint8"
    );
    // Nothing written: fill values, in the order asked.
    let r = dense
        .read()
        .points(Points::new().coords("r", [10u8, 1]).coords("c", [3u8, 0]))
        .execute()
        .unwrap();
    assert_eq!(&r.values::<u8>("r").unwrap()[..], &[10, 1]);
    assert_eq!(&r.values::<u8>("c").unwrap()[..], &[3, 0]);
    assert_eq!(&r.values::<i32>("a").unwrap()[..], &[i32::MIN, i32::MIN]);
}
