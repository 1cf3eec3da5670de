//! `--memory-budget` is a bound, not a hint: the peak resident memory of `tessera read` (as
//! `--stats` reports it) stays within the budget plus the fixed overhead `docs/cli.md`
//! states, for three budgets, on a sparse array whose whole result is several times larger.

use std::process::Command;

use tessera::{ArraySchema, ArrayType, Attribute, Datatype, Dimension, Filter, FilterPipeline};

use crate::support::tessera_bin;

/// Cells of the test array: 24 bytes of results each (x, y, a), 48 MB in all.
const CELLS: usize = 2_000_000;
const MB: u64 = 1 << 20;
/// What `docs/cli.md` promises a read holds besides its budget (the program, the array's
/// fragment metadata, the allocator's slack).
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
    let kib: u64 = err
        .lines()
        .find_map(|l| l.split("peak RSS ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {err:?}"));
    kib * 1024
}

#[test]
fn a_sparse_read_holds_no_more_than_its_budget() {
    if std::fs::read_to_string("/proc/self/status").is_err() {
        eprintln!("no /proc/self/status: peak memory is not reported here");
        return;
    }
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
    let xs: Vec<i64> = (0..CELLS as i64).map(|i| (i * 7_919) % 1_000_000).collect();
    let ys: Vec<i64> =
        (0..CELLS as i64).map(|i| (i * 104_729 + i / 1_000_000) % 1_000_000).collect();
    let a: Vec<f64> = (0..CELLS).map(|i| i as f64 * 0.5).collect();
    tessera::open(&path)
        .unwrap()
        .write()
        .values("x", &xs)
        .values("y", &ys)
        .values("a", &a)
        .submit()
        .unwrap();
    let arr = path.to_str().unwrap();

    // The program and the array's metadata, with next to nothing read.
    let base = peak_rss(&["read", arr, "--range", "x=0:0", "--format", "csv"]);
    let whole = peak_rss(&["read", arr, "--format", "csv"]);
    assert!(whole > base + 40 * MB, "an unbounded read holds the result: {whole} vs {base}");
    for budget in [4 * MB, 16 * MB, 32 * MB] {
        for layout in ["global", "unordered", "row-major"] {
            let b = budget.to_string();
            let peak = peak_rss(&[
                "read",
                arr,
                "--memory-budget",
                &b,
                "--layout",
                layout,
                "--format",
                "csv",
            ]);
            assert!(
                peak <= base + budget + OVERHEAD,
                "--memory-budget {} MB, {layout}: peak RSS {} MB (the program alone {} MB)",
                budget / MB,
                peak / MB,
                base / MB
            );
        }
    }
}
