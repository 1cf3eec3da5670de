//! Dense aggregates, with and without conditions, equal the aggregates of the cells a read
//! of the same subarray returns, whichever path computes them: tile metadata, the one-pass
//! scan of whole fragment tiles (one field streamed chunk by chunk, or several decoded
//! whole; plain or zstd), or the positional batches of partial tiles, overlapping fragments
//! and fill values. Random fragments, subarrays and conditions over an int32, a nullable
//! float64 and a var-sized string attribute; tiles of several 64 KiB chunks.

use std::sync::Arc;

use proptest::prelude::*;
use tessera_filters::{Filter, FilterPipeline};
use tessera_query::Array;
use tessera_query::aggregate::{Aggregate, AggregateValue};
use tessera_query::condition::QueryCondition;
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::MemoryStorage;
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype};

/// A box of cells: (first row, last row), (first column, last column).
type CellBox = ((i64, i64), (i64, i64));

const ROWS: i64 = 400;
const COLS: i64 = 200;

/// Conditions tried (`None`: no condition).
const CONDITIONS: [Option<&str>; 8] = [
    None,
    Some("a >= 0"),
    Some("a < 10 and a != -3"),
    Some("b > 0.5"),
    Some("a > 20 or b < -1.0"),
    Some("s >= 'm'"),
    Some("a in [1, 2, 3, 40]"),
    Some("b is null"),
];

/// A small deterministic generator (the values need not be proptest's: only their seed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Makes the array (`zstd`: every attribute compressed) and writes `boxes` (inclusive rows
/// and columns), oldest first, with values from `seed`.
fn make(zstd: bool, boxes: &[CellBox], seed: u64) -> Array {
    let storage = Arc::new(MemoryStorage::new());
    let pipe = || FilterPipeline::new(if zstd { vec![Filter::zstd(1)] } else { Vec::new() });
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int64).domain_i64(0, ROWS - 1).tile_i64(200))
        .dimension(Dimension::new("c", Datatype::Int64).domain_i64(0, COLS - 1).tile_i64(100))
        .attribute(Attribute::new("a", Datatype::Int32).filters(pipe()))
        .attribute(Attribute::new("b", Datatype::Float64).nullable(true).filters(pipe()))
        .attribute(
            Attribute::new("s", Datatype::StringAscii)
                .cell_val_num(CELL_VAL_NUM_VAR)
                .filters(pipe()),
        )
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    let mut rng = Lcg(seed);
    for (k, &((r0, r1), (c0, c1))) in boxes.iter().enumerate() {
        let n = ((r1 - r0 + 1) * (c1 - c0 + 1)) as usize;
        let a: Vec<i32> = (0..n).map(|_| (rng.next() % 101) as i32 - 50).collect();
        let b: Vec<f64> = (0..n).map(|_| (rng.next() % 17) as f64 / 4.0 - 2.0).collect();
        let valid: Vec<u8> = (0..n).map(|_| u8::from(!rng.next().is_multiple_of(5))).collect();
        let s: Vec<String> = (0..n)
            .map(|_| {
                let len = (rng.next() % 4) as usize;
                (0..len).map(|_| char::from(b'a' + (rng.next() % 26) as u8)).collect()
            })
            .collect();
        array
            .write()
            .range_i64("r", r0, r1)
            .range_i64("c", c0, c1)
            .values("a", &a)
            .values("b", &b)
            .validity("b", valid)
            .var_values("s", &s)
            .timestamp(k as u64 + 1)
            .submit()
            .unwrap()
            .unwrap();
    }
    Array::open(storage).unwrap()
}

/// The aggregates asked for.
fn aggregates() -> Vec<Aggregate> {
    [
        "count",
        "sum(a)",
        "min(a)",
        "max(a)",
        "mean(a)",
        "sum(b)",
        "min(b)",
        "max(b)",
        "null_count(b)",
        "mean(b)",
        "min(s)",
        "max(s)",
    ]
    .iter()
    .map(|t| t.parse().unwrap())
    .collect()
}

/// The aggregates of the cells a read of `box_` returns that satisfy `cond`, computed here.
fn expected(array: &Array, box_: CellBox, cond: Option<&str>) -> Vec<AggregateValue> {
    let ((r0, r1), (c0, c1)) = box_;
    let res = array.read().range_i64("r", r0, r1).range_i64("c", c0, c1).execute().unwrap();
    let n = res.cell_num();
    let mut keep = vec![true; n];
    if let Some(text) = cond {
        let c = QueryCondition::parse(text, array.schema(), array.enumerations()).unwrap();
        c.evaluate(&|name: &str| res.column(name), n, &mut keep).unwrap();
    }
    let (a, b, s) = (res.column("a").unwrap(), res.column("b").unwrap(), res.column("s").unwrap());
    let kept: Vec<usize> = (0..n).filter(|&i| keep[i]).collect();
    let av: Vec<i64> = kept
        .iter()
        .map(|&i| i64::from(i32::from_le_bytes(a.cell(i).unwrap().try_into().unwrap())))
        .collect();
    let bv: Vec<f64> = kept
        .iter()
        .filter(|&&i| b.is_valid(i))
        .map(|&i| f64::from_le_bytes(b.cell(i).unwrap().try_into().unwrap()))
        .collect();
    let sv: Vec<&[u8]> = kept.iter().map(|&i| s.cell(i).unwrap()).collect();
    let value = |datatype, cell_val_num, bytes: Vec<u8>| AggregateValue::Value {
        datatype,
        cell_val_num,
        bytes,
    };
    let int = |v: Option<&i64>| match v {
        Some(&v) => value(Datatype::Int32, 1, (v as i32).to_le_bytes().to_vec()),
        None => AggregateValue::Null,
    };
    let float = |v: Option<f64>| match v {
        Some(v) => value(Datatype::Float64, 1, v.to_le_bytes().to_vec()),
        None => AggregateValue::Null,
    };
    let text = |v: Option<&&[u8]>| match v {
        Some(v) => value(Datatype::StringAscii, CELL_VAL_NUM_VAR, v.to_vec()),
        None => AggregateValue::Null,
    };
    let mean = |sum: f64, count: usize| {
        if count == 0 { AggregateValue::Null } else { AggregateValue::Float(sum / count as f64) }
    };
    let a_sum: i64 = av.iter().sum();
    let b_sum: f64 = bv.iter().sum();
    vec![
        AggregateValue::UInt(kept.len() as u64),
        AggregateValue::Int(a_sum),
        int(av.iter().min()),
        int(av.iter().max()),
        mean(a_sum as f64, av.len()),
        if bv.is_empty() { AggregateValue::Null } else { AggregateValue::Float(b_sum) },
        float(bv.iter().copied().reduce(f64::min)),
        float(bv.iter().copied().reduce(f64::max)),
        AggregateValue::UInt((kept.len() - bv.len()) as u64),
        mean(b_sum, bv.len()),
        text(sv.iter().min()),
        text(sv.iter().max()),
    ]
}

/// A fragment's box: the whole domain, a row of tiles, one tile, or any box.
fn fragment_box() -> impl Strategy<Value = CellBox> {
    prop_oneof![
        Just(((0, ROWS - 1), (0, COLS - 1))),
        (0..2i64).prop_map(|t| ((t * 200, t * 200 + 199), (0, COLS - 1))),
        (0..2i64, 0..2i64).prop_map(|(r, c)| ((r * 200, r * 200 + 199), (c * 100, c * 100 + 99))),
        any_box(),
    ]
}

fn any_box() -> impl Strategy<Value = CellBox> {
    (0..ROWS, 0..ROWS, 0..COLS, 0..COLS)
        .prop_map(|(a, b, c, d)| ((a.min(b), a.max(b)), (c.min(d), c.max(d))))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn dense_aggregates_equal_those_of_reads(
        zstd in any::<bool>(),
        boxes in proptest::collection::vec(fragment_box(), 1..4),
        seed in any::<u64>(),
        whole in any::<bool>(),
        sub in any_box(),
        conds in proptest::collection::vec(0..CONDITIONS.len(), 3),
    ) {
        let array = make(zstd, &boxes, seed);
        let box_ = if whole { ((0, ROWS - 1), (0, COLS - 1)) } else { sub };
        let ((r0, r1), (c0, c1)) = box_;
        for &k in &conds {
            let cond = CONDITIONS[k];
            let want = expected(&array, box_, cond);
            for use_metadata in [true, false] {
                let mut q = array.read().range_i64("r", r0, r1).range_i64("c", c0, c1);
                if let Some(text) = cond {
                    q = q.where_text(text);
                }
                let got = q.aggregate_with(&aggregates(), use_metadata).unwrap();
                for ((agg, g), w) in aggregates().iter().zip(&got).zip(&want) {
                    prop_assert_eq!(
                        g, w, "{} where {:?} over {:?} (metadata {}, zstd {}, fragments {:?})",
                        agg, cond, box_, use_metadata, zstd, boxes
                    );
                }
            }
        }
    }
}
