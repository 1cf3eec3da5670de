//! Helpers of the crash and concurrency tests: a seeded random generator, the test array
//! (sparse, `x` int64, `v` float64 with zstd, `s` nullable UTF-8 with an MD5 checksum and
//! zstd), write batches as cells JSONL, and reading the array back as cells.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `tessera` binary under test.
pub fn tessera_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tessera"))
}

/// Runs `tessera args...` to the end; returns (success, stdout, stderr).
pub fn tessera(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(tessera_bin()).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// splitmix64: a small seeded generator (the tests need no statistical quality).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A seed from the environment variable `var`, or from the clock; printed so a failure can
/// be replayed.
pub fn seed_from_env(var: &str) -> u64 {
    let seed = std::env::var(var).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    eprintln!("{var}={seed}");
    seed
}

/// One cell of the test array.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Coordinate.
    pub x: i64,
    /// Float attribute.
    pub v: f64,
    /// Nullable string attribute.
    pub s: Option<String>,
}

/// The schema JSON of the test array; `dups` allows duplicate coordinates.
pub fn schema_json(dups: bool) -> String {
    format!(
        r#"{{"array_type": "sparse", "capacity": 500, "allows_duplicates": {dups},
 "dimensions": [{{"name": "x", "type": "int64", "domain": [0, 1000000000], "tile": 100000}}],
 "attributes": [{{"name": "v", "type": "float64", "filters": [{{"type": "zstd", "level": 1}}]}},
   {{"name": "s", "type": "string_utf8", "cell_val_num": "var", "nullable": true,
    "filters": [{{"type": "checksum_md5"}}, {{"type": "zstd", "level": 1}}]}}]}}"#
    )
}

/// Creates the test array at `path` with `tessera create`.
pub fn create_array(path: &Path, dups: bool) {
    let schema = path.with_extension("schema.json");
    std::fs::write(&schema, schema_json(dups)).unwrap();
    let (ok, _, err) =
        tessera(&["create", path.to_str().unwrap(), "--schema", schema.to_str().unwrap()]);
    assert!(ok, "create: {err}");
}

/// `n` cells with coordinates `base, base + step, ...`; values unique to `tag`.
pub fn batch(rng: &mut Rng, tag: u64, base: i64, step: i64, n: usize) -> Vec<Cell> {
    (0..n)
        .map(|k| {
            let x = base + step * k as i64;
            let v = tag as f64 * 1e7 + k as f64 + rng.unit();
            let s = (k % 7 != 0).then(|| format!("w{tag}-{k}-{:016x}", rng.next_u64()));
            Cell { x, v, s }
        })
        .collect()
}

/// The cells as the cells JSONL `tessera write` reads.
pub fn to_jsonl(cells: &[Cell]) -> String {
    let mut out = String::with_capacity(cells.len() * 64);
    for c in cells {
        let s = match &c.s {
            Some(s) => format!("\"{s}\""),
            None => "null".to_owned(),
        };
        // `{:?}` of an f64 is the shortest text that reads back to the same value.
        let _ = writeln!(out, "{{\"x\": {}, \"v\": {:?}, \"s\": {s}}}", c.x, c.v);
    }
    out
}

/// Every cell of the array open at `[start, end]` (the whole history when `None`), in `x`
/// order (`v` breaks ties for arrays with duplicates).
///
/// # Errors
/// The engine's error when the array does not open or read.
pub fn read_cells(path: &Path, between: Option<(u64, u64)>) -> tessera::Result<Vec<Cell>> {
    let array = match between {
        Some((s, e)) => tessera::open_between(path, s, e)?,
        None => tessera::open(path)?,
    };
    let r = array.read().execute()?;
    let (Some(x), Some(v), Some(s)) = (r.column("x"), r.column("v"), r.column("s")) else {
        panic!("the result lacks a column");
    };
    let mut cells: Vec<Cell> = (0..r.cell_num())
        .map(|i| Cell {
            x: i64::from_le_bytes(x.cell(i).unwrap().try_into().unwrap()),
            v: f64::from_le_bytes(v.cell(i).unwrap().try_into().unwrap()),
            s: s.is_valid(i).then(|| String::from_utf8(s.cell(i).unwrap().to_vec()).unwrap()),
        })
        .collect();
    cells.sort_by(|a, b| a.x.cmp(&b.x).then(a.v.total_cmp(&b.v)));
    Ok(cells)
}

/// The committed writes of an array without duplicates: timestamp → cells.
#[derive(Debug, Default, Clone)]
pub struct Model {
    /// Committed writes by timestamp.
    pub writes: BTreeMap<u64, Vec<Cell>>,
}

impl Model {
    /// What a read at the latest time returns: per coordinate, the newest write's cell.
    pub fn expected(&self) -> Vec<Cell> {
        let mut by_x: BTreeMap<i64, &Cell> = BTreeMap::new();
        for cells in self.writes.values() {
            for c in cells {
                by_x.insert(c.x, c);
            }
        }
        by_x.into_values().cloned().collect()
    }

    /// Every valid state a reader may see while writes with the timestamps `pending` may
    /// commit: the committed writes plus any subset of the pending ones, as a list of
    /// expected cell lists.
    pub fn states_with(&self, pending: &[(u64, Vec<Cell>)]) -> Vec<Vec<Cell>> {
        let mut out = Vec::new();
        for mask in 0..(1u32 << pending.len()) {
            let mut m = self.clone();
            for (i, (t, cells)) in pending.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    m.writes.insert(*t, cells.clone());
                }
            }
            out.push(m.expected());
        }
        out
    }
}

/// The first difference between two cell lists, for assertion messages.
pub fn first_difference(got: &[Cell], want: &[Cell]) -> String {
    if got.len() != want.len() {
        return format!("{} cells, expected {}", got.len(), want.len());
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => format!("cell {i}: got {:?}, expected {:?}", got[i], want[i]),
        None => "equal".to_owned(),
    }
}

/// Names of the entries of `dir` (empty when it does not exist).
pub fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Whether `__commits/` holds a `.wrt` file of a fragment written at timestamp `t`.
pub fn committed_at(array: &Path, t: u64) -> bool {
    let prefix = format!("__{t}_{t}_");
    names(&array.join("__commits")).iter().any(|n| n.starts_with(&prefix) && n.ends_with(".wrt"))
}
