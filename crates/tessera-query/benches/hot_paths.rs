//! Engine hot paths on arrays held in memory (no disk, no filters), so what is measured is
//! the engine's own work:
//!
//! * `tile_copy`: dense reads that copy unfiltered tiles into the result: the whole array
//!   (every tile, slab by slab into row-major order) and a 1 % box across tile borders;
//! * `sparse_sort`: the sort of 1 M random 2-D points into the global order that an unordered
//!   sparse write does ([`tessera_query::write::global_order`]).
//!
//! Run with `cargo bench -p tessera-query --bench hot_paths`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tessera_query::{Array, Column};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::MemoryStorage;
use tessera_types::{ArrayType, Datatype};

const N: i64 = 2048;
const TILE: i64 = 256;
const POINTS: usize = 1_000_000;

fn dense_array() -> Array {
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("rows", Datatype::Int64).domain_i64(0, N - 1).tile_i64(TILE))
        .dimension(Dimension::new("cols", Datatype::Int64).domain_i64(0, N - 1).tile_i64(TILE))
        .attribute(Attribute::new("a", Datatype::Int32))
        .build()
        .expect("schema");
    let storage = Arc::new(MemoryStorage::new());
    Array::create(storage.clone(), &schema, &[]).expect("create");
    let array = Array::open(storage.clone()).expect("open");
    let values: Vec<u8> = (0..N * N).flat_map(|v| (v as i32).to_le_bytes()).collect();
    array
        .write()
        .range_i64("rows", 0, N - 1)
        .range_i64("cols", 0, N - 1)
        .column(Column {
            name: "a".into(),
            datatype: Datatype::Int32,
            cell_val_num: 1,
            data: values,
            offsets: None,
            validity: None,
        })
        .submit()
        .expect("write");
    Array::open(storage).expect("reopen")
}

fn tile_copy(c: &mut Criterion) {
    let array = dense_array();
    let mut group = c.benchmark_group("tile_copy");
    group.throughput(Throughput::Bytes((N * N * 4) as u64));
    group.bench_function("dense_full_row_major", |b| {
        b.iter(|| {
            let r = array
                .read()
                .range_i64("rows", 0, N - 1)
                .range_i64("cols", 0, N - 1)
                .attributes(["a"])
                .with_coordinates(false)
                .execute()
                .expect("read");
            black_box(r.cell_num())
        })
    });
    let side = N / 10;
    group.throughput(Throughput::Bytes((side * side * 4) as u64));
    group.bench_function("dense_box_1pct", |b| {
        b.iter(|| {
            let r = array
                .read()
                .range_i64("rows", 900, 900 + side - 1)
                .range_i64("cols", 333, 333 + side - 1)
                .attributes(["a"])
                .with_coordinates(false)
                .execute()
                .expect("read");
            black_box(r.cell_num())
        })
    });
    group.finish();
}

fn sparse_sort(c: &mut Criterion) {
    let d = 1_000_000i64;
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, d - 1).tile_i64(100_000))
        .dimension(Dimension::new("y", Datatype::Int64).domain_i64(0, d - 1).tile_i64(100_000))
        .attribute(Attribute::new("a", Datatype::Float64))
        .allows_duplicates(true)
        .build()
        .expect("schema");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % d as u64) as i64
    };
    let column = |name: &str, values: Vec<u8>| Column {
        name: name.into(),
        datatype: Datatype::Int64,
        cell_val_num: 1,
        data: values,
        offsets: None,
        validity: None,
    };
    let mut xs = Vec::with_capacity(POINTS * 8);
    let mut ys = Vec::with_capacity(POINTS * 8);
    for _ in 0..POINTS {
        xs.extend_from_slice(&next().to_le_bytes());
        ys.extend_from_slice(&next().to_le_bytes());
    }
    let mut group = c.benchmark_group("sparse_sort");
    group.sample_size(10);
    group.throughput(Throughput::Elements(POINTS as u64));
    group.bench_function("global_order_1m_points_2d", |b| {
        b.iter_batched(
            || vec![column("x", xs.clone()), column("y", ys.clone())],
            |cols| tessera_query::write::global_order(&schema, cols).expect("sort").len(),
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, tile_copy, sparse_sort);
criterion_main!(benches);
