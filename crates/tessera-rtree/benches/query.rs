//! R-tree hot paths: building a tree over the MBRs of 100,000 sparse tiles, and 1000 small-box
//! queries against it (what a sparse read does per fragment before fetching tiles).
//!
//! Run with `cargo bench -p tessera-rtree --bench query`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tessera_rtree::{DimType, Mbr, RTree, Range};
use tessera_types::Datatype;

const TILES: u64 = 100_000;
const SIDE: u64 = 316; // ~sqrt(TILES): the tiles form a grid of SIDE x SIDE cells of 1000.
const FANOUT: u32 = 10;

/// Leaf MBRs laid out the way a global-order write produces them: row-major over a grid,
/// each tile a 1000 x 1000 square, 2-D int64.
fn leaves() -> Vec<Mbr> {
    (0..TILES)
        .map(|t| {
            let (r, c) = ((t / SIDE) as i64 * 1000, (t % SIDE) as i64 * 1000);
            Mbr(vec![Range::from_values(r, r + 999), Range::from_values(c, c + 999)])
        })
        .collect()
}

/// 1000 boxes of 1500 x 1500 at pseudo-random places (each overlaps 4 to 9 tiles).
fn boxes() -> Vec<[[Range; 1]; 2]> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m) as i64
    };
    let extent = SIDE * 1000 - 1500;
    (0..1000)
        .map(|_| {
            let (r, c) = (next(extent), next(extent));
            [[Range::from_values(r, r + 1499)], [Range::from_values(c, c + 1499)]]
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let dims = [DimType::fixed(Datatype::Int64), DimType::fixed(Datatype::Int64)];
    let leaves = leaves();
    let mut group = c.benchmark_group("rtree");
    group.throughput(Throughput::Elements(TILES));
    group.bench_function("build_100k_leaves", |b| {
        b.iter(|| RTree::build(&dims, black_box(&leaves), FANOUT).expect("build"))
    });
    let tree = RTree::build(&dims, &leaves, FANOUT).expect("build");
    let boxes = boxes();
    group.throughput(Throughput::Elements(boxes.len() as u64));
    group.bench_function("query_1000_small_boxes", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            let mut hits = 0;
            for q in &boxes {
                out.clear();
                tree.query_into(&dims, black_box(q.as_slice()), &mut out);
                hits += out.len();
            }
            hits
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
