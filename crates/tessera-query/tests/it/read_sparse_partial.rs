//! Sparse reads of small boxes over large, many-chunk tiles: the first dimension is decoded
//! whole, the others and the attributes only in the chunks holding selected cells. Every read
//! is checked against a model of the cells written (two overlapping fragments, newest wins),
//! with conditions (which read whole tiles), in every layout, on local files.

use std::collections::BTreeMap;
use std::sync::Arc;

use tessera_filters::{Filter, FilterPipeline};
use tessera_query::{Array, ReadResult};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::LocalStorage;
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, ReadLayout};

/// One cell's attribute values: v (int64, zstd), w (float64, unfiltered), s (string), n
/// (nullable int32, lz4; `None` for null).
#[derive(Debug, Clone, PartialEq)]
struct Values {
    v: i64,
    w: f64,
    s: String,
    n: Option<i32>,
}

/// A small deterministic generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

const SIDE: i64 = 10_000;

fn values_of(x: i64, y: i64, version: i64) -> Values {
    let k = x * SIDE + y;
    Values {
        v: k * 3 + version,
        w: (k as f64) / 8.0 + version as f64,
        s: format!("s{}", k % 97 + version),
        n: if k % 5 == 0 { None } else { Some((k % 1000) as i32 + version as i32) },
    }
}

/// Writes fragment `version` holding `cells`.
fn write(array: &Array, cells: &[(i64, i64)], version: i64) {
    let xs: Vec<i64> = cells.iter().map(|c| c.0).collect();
    let ys: Vec<i64> = cells.iter().map(|c| c.1).collect();
    let vals: Vec<Values> = cells.iter().map(|&(x, y)| values_of(x, y, version)).collect();
    let v: Vec<i64> = vals.iter().map(|c| c.v).collect();
    let w: Vec<f64> = vals.iter().map(|c| c.w).collect();
    let s: Vec<String> = vals.iter().map(|c| c.s.clone()).collect();
    let n: Vec<i32> = vals.iter().map(|c| c.n.unwrap_or(0)).collect();
    let valid: Vec<u8> = vals.iter().map(|c| u8::from(c.n.is_some())).collect();
    array
        .write()
        .values("x", &xs)
        .values("y", &ys)
        .values("v", &v)
        .values("w", &w)
        .var_values("s", &s)
        .values("n", &n)
        .validity("n", valid)
        .timestamp(version as u64)
        .submit()
        .unwrap();
}

fn column_cells(res: &ReadResult) -> Vec<((i64, i64), Values)> {
    let i64s = |name: &str| -> Vec<i64> {
        let c = res.column(name).unwrap();
        c.data.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect()
    };
    let (x, y, v) = (i64s("x"), i64s("y"), i64s("v"));
    let w = res.column("w").unwrap();
    let s = res.column("s").unwrap();
    let n = res.column("n").unwrap();
    (0..x.len())
        .map(|i| {
            let wv = f64::from_le_bytes(w.data[i * 8..i * 8 + 8].try_into().unwrap());
            let nv = i32::from_le_bytes(n.data[i * 4..i * 4 + 4].try_into().unwrap());
            let sv = String::from_utf8(s.cell(i).unwrap().to_vec()).unwrap();
            ((x[i], y[i]), Values { v: v[i], w: wv, s: sv, n: n.is_valid(i).then_some(nv) })
        })
        .collect()
}

#[test]
fn small_boxes_over_many_chunk_tiles() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(LocalStorage::new(dir.path().join("a")));
    let zstd = || FilterPipeline::new(vec![Filter::zstd(1)]);
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, SIDE - 1).tile_i64(SIDE))
        .dimension(Dimension::new("y", Datatype::Int64).domain_i64(0, SIDE - 1).tile_i64(SIDE))
        .attribute(Attribute::new("v", Datatype::Int64).filters(zstd()))
        .attribute(Attribute::new("w", Datatype::Float64))
        .attribute(Attribute::new("s", Datatype::StringUtf8).cell_val_num(CELL_VAL_NUM_VAR))
        .attribute(
            Attribute::new("n", Datatype::Int32)
                .nullable(true)
                .filters(FilterPipeline::new(vec![Filter::Lz4 { level: 1 }])),
        )
        .capacity(20_000)
        .coords_filters(zstd())
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    // Two fragments of distinct random cells; the second rewrites a third of the first's.
    let mut rng = Lcg(7);
    let mut model: BTreeMap<(i64, i64), Values> = BTreeMap::new();
    let mut first = Vec::new();
    while first.len() < 60_000 {
        let c = (rng.next(SIDE as u64) as i64, rng.next(SIDE as u64) as i64);
        if let std::collections::btree_map::Entry::Vacant(e) = model.entry(c) {
            e.insert(values_of(c.0, c.1, 1));
            first.push(c);
        }
    }
    write(&array, &first, 1);
    let mut second: Vec<(i64, i64)> = first.iter().step_by(3).copied().collect();
    while second.len() < 40_000 {
        let c = (rng.next(SIDE as u64) as i64, rng.next(SIDE as u64) as i64);
        if let std::collections::btree_map::Entry::Vacant(e) = model.entry(c) {
            e.insert(values_of(c.0, c.1, 2));
            second.push(c);
        }
    }
    for c in &second {
        model.insert(*c, values_of(c.0, c.1, 2));
    }
    write(&array, &second, 2);
    let array = Array::open(storage).unwrap();
    assert!(array.fragments().len() == 2);

    for q in 0..60 {
        let w = [3, 40, 300, 2000][q % 4];
        let (x0, y0) = (rng.next((SIDE - w) as u64) as i64, rng.next((SIDE - w) as u64) as i64);
        let layout = [ReadLayout::GlobalOrder, ReadLayout::RowMajor, ReadLayout::Unordered][q % 3];
        // Every fifth query has a condition keeping about half of the box's cells.
        let cond = q % 5 == 4;
        let cutoff = (x0 + w / 2) * SIDE * 3;
        let mut want: Vec<((i64, i64), Values)> = model
            .range((x0, y0)..=(x0 + w, y0 + w))
            .filter(|((_, y), _)| (y0..=y0 + w).contains(y))
            .filter(|(_, v)| !cond || v.v >= cutoff)
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let mut query =
            array.read().range_i64("x", x0, x0 + w).range_i64("y", y0, y0 + w).layout(layout);
        if cond {
            query = query.where_text(&format!("v >= {cutoff}"));
        }
        let res = query.execute().unwrap();
        let mut got = column_cells(&res);
        if layout == ReadLayout::RowMajor {
            assert!(got.windows(2).all(|p| p[0].0 < p[1].0), "query {q}: not in row-major order");
        }
        got.sort_by_key(|c| c.0);
        want.sort_by_key(|c| c.0);
        assert_eq!(got.len(), want.len(), "query {q}: box {x0},{y0} +{w}, {layout:?}");
        assert!(got == want, "query {q}: box {x0},{y0} +{w}, {layout:?}: values differ");
    }
}
