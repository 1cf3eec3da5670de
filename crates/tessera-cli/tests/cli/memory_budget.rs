//! `--memory-budget` is a bound, not a hint: the peak resident memory of `tessera read` and
//! `tessera consolidate` (as `--stats` reports it) stays within the budget plus the fixed
//! overhead `docs/cli.md` states, on sparse and dense arrays whose whole result is several
//! times larger. Reads go to an Arrow IPC file (`--format arrow`), so tessera-arrow's
//! record-batch iterator is what streams them.

use std::path::Path;
use std::process::Command;

use tessera::{ArraySchema, ArrayType, Attribute, Datatype, Dimension, Filter, FilterPipeline};

use crate::support::tessera_bin;

const MB: u64 = 1 << 20;
/// What `docs/cli.md` promises a read holds besides its budget (the program, the array's
/// fragment metadata, the allocator's slack), measured from a read of next to nothing.
const OVERHEAD: u64 = 32 * MB;

/// Peak RSS in bytes of `tessera --stats ARGS` (its stdout discarded).
fn peak_rss(args: &[&str]) -> u64 {
    let out = Command::new(tessera_bin())
        .arg("--stats")
        .args(args)
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tessera {args:?}: {err}");
    eprintln!("tessera {}: {}", args.join(" "), err.trim());
    let kib: u64 = err
        .lines()
        .find_map(|l| l.split("peak RSS ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {err:?}"));
    kib * 1024
}

/// Whether this system reports peak memory (Linux's `/proc`).
fn measurable() -> bool {
    let ok = std::fs::read_to_string("/proc/self/status").is_ok();
    if !ok {
        eprintln!("no /proc/self/status: peak memory is not reported here");
    }
    ok
}

/// The peak RSS of `tessera read ARRAY EXTRA... --format arrow --output /dev/null`.
fn read_peak(array: &str, extra: &[&str]) -> u64 {
    let mut args = vec!["read", array];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--format", "arrow", "--output", "/dev/null"]);
    peak_rss(&args)
}

/// Checks the budgeted reads of `array` in `layouts` against `base` (a read of next to
/// nothing), for each budget.
fn check_reads(array: &str, base: u64, budgets: &[u64], layouts: &[&str]) {
    for &budget in budgets {
        for layout in layouts {
            let b = budget.to_string();
            let peak = read_peak(array, &["--memory-budget", &b, "--layout", layout]);
            assert!(
                peak <= base + budget + OVERHEAD,
                "{array}: --memory-budget {} MB, {layout}: peak RSS {} MB (the program alone {} MB)",
                budget / MB,
                peak / MB,
                base / MB
            );
        }
    }
}

#[test]
fn a_sparse_read_and_consolidation_hold_no_more_than_their_budget() {
    if !measurable() {
        return;
    }
    /// Cells of the test array: 24 bytes of results each (x, y, a), 14 MB in all, written
    /// as two fragments (consolidated at the end).
    const CELLS: usize = 600_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("points");
    let zstd = FilterPipeline::new(vec![Filter::zstd(1)]);
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .capacity(10_000)
        .dimension(
            Dimension::new("x", Datatype::Int64)
                .domain_i64(0, 999_999)
                .tile_i64(100_000)
                .filters(zstd.clone()),
        )
        .dimension(
            Dimension::new("y", Datatype::Int64)
                .domain_i64(0, 999_999)
                .tile_i64(100_000)
                .filters(zstd),
        )
        .attribute(Attribute::new("a", Datatype::Float64))
        .build()
        .unwrap();
    tessera::create(&path, &schema).unwrap();
    // Scattered points (a multiplicative walk), as the sparse bench array.
    let array = tessera::open(&path).unwrap();
    for part in 0..2i64 {
        let cells = (CELLS / 2) as i64;
        let ids = part * cells..(part + 1) * cells;
        let xs: Vec<i64> = ids.clone().map(|i| (i * 7_919) % 1_000_000).collect();
        let ys: Vec<i64> = ids.clone().map(|i| (i * 104_729 + i / 500_000) % 1_000_000).collect();
        let a: Vec<f64> = ids.map(|i| i as f64 * 0.5).collect();
        array.write().values("x", &xs).values("y", &ys).values("a", &a).submit().unwrap();
    }
    drop(array);
    let arr = path.to_str().unwrap();

    // The program and the array's metadata, with next to nothing read.
    let base = read_peak(arr, &["--range", "x=0:0"]);
    let whole = read_peak(arr, &[]);
    assert!(whole > base + 20 * MB, "an unbounded read holds the result: {whole} vs {base}");
    // (Row-major sorts partitions of the budget: slow in a debug build at small budgets.)
    check_reads(arr, base, &[4 * MB, 16 * MB], &["global"]);
    check_reads(arr, base, &[16 * MB], &["row-major"]);

    // A merge of the two fragments: one tile per input, the merged tiles waiting to be
    // written, within the budget.
    let budget = 8 * MB;
    let b = budget.to_string();
    let peak = peak_rss(&["consolidate", arr, "--memory-budget", &b]);
    assert!(
        peak <= base + budget + OVERHEAD,
        "sparse consolidation, --memory-budget 8 MB: peak RSS {} MB (the program alone {} MB)",
        peak / MB,
        base / MB
    );
    assert_eq!(tessera::open(&path).unwrap().fragments().len(), 1, "the fragments were merged");
}

/// A dense int32 array of `side` x `side` cells in 1000 x 1000 tiles (4 MB decoded each),
/// zstd-compressed, written as two fragments (the top and bottom halves).
fn dense_array(path: &Path, side: i64) {
    let zstd = FilterPipeline::new(vec![Filter::zstd(1)]);
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int64).domain_i64(0, side - 1).tile_i64(1000))
        .dimension(Dimension::new("c", Datatype::Int64).domain_i64(0, side - 1).tile_i64(1000))
        .attribute(Attribute::new("a", Datatype::Int32).filters(zstd))
        .build()
        .unwrap();
    tessera::create(path, &schema).unwrap();
    let array = tessera::open(path).unwrap();
    let half = side / 2;
    for (lo, hi) in [(0, half - 1), (half, side - 1)] {
        let values: Vec<i32> = (lo * side..(hi + 1) * side).map(|i| (i % 65_521) as i32).collect();
        array
            .write()
            .range_i64("r", lo, hi)
            .range_i64("c", 0, side - 1)
            .values("a", &values)
            .submit()
            .unwrap();
    }
}

#[test]
fn a_dense_read_and_consolidation_hold_no_more_than_their_budget() {
    if !measurable() {
        return;
    }
    // 36 MB of int32 results; a row of cells crosses three 4 MB tiles.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grid");
    dense_array(&path, 3000);
    let arr = path.to_str().unwrap();
    let base = read_peak(arr, &["--range", "r=0:0", "--range", "c=0:0"]);
    let whole = read_peak(arr, &[]);
    assert!(whole > base + 40 * MB, "an unbounded read holds the result: {whole} vs {base}");
    // (Col-major across row-major tiles is bounded too, but decodes the tiles of a batch's
    // columns again for every batch: too slow for a debug build.)
    check_reads(arr, base, &[4 * MB], &["global"]);
    check_reads(arr, base, &[8 * MB], &["row-major"]);

    // Merging the halves: tile rows read in batches under the budget, written as they come.
    let budget = 8 * MB;
    let b = budget.to_string();
    let peak = peak_rss(&["consolidate", arr, "--memory-budget", &b]);
    assert!(
        peak <= base + budget + OVERHEAD,
        "dense consolidation, --memory-budget 8 MB: peak RSS {} MB (the program alone {} MB)",
        peak / MB,
        base / MB
    );
    assert_eq!(tessera::open(&path).unwrap().fragments().len(), 1, "the fragments were merged");
}
