//! `tessera-bench SPEC.json`: runs one benchmark workload through Tessera and prints one JSON
//! line with the time it took, the number of cells and a checksum.
//!
//! This is the Tessera half of `cargo xtask bench` (the orchestrator is
//! `xtask/bench/bench.py`, the libtiledb half `xtask/bench/run_tiledb.py`; both halves read the
//! same spec). Each run is its own process, so the orchestrator measures this process's peak
//! RSS. It can also be run by hand, e.g. under `perf record`, on a spec the orchestrator left in
//! `target/bench/specs/`.
//!
//! The spec (JSON):
//!
//! ```json
//! {"workload": "dense_int32_box1pct", "op": "read", "array": "/abs/path/to/array",
//!  "open_in_timer": false, "layout": "row-major", "dims": [], "attrs": ["a"],
//!  "checksum_field": "a",
//!  "queries": [{"ranges": [["rows", [[4500, 5499]]], ["cols", [[2500, 3499]]]]}]}
//! ```
//!
//! * `op`: `read` (every query runs on one opened array, one after the other), `aggregate`,
//!   `consolidate` or `write` (below). An op the driver does not know prints
//!   `{"unsupported": "..."}` and exits 0, and the orchestrator shows the row without a
//!   Tessera time.
//! * `open_in_timer`: whether opening the array is timed (else only the queries are). A
//!   dense read of one fixed-size, non-nullable attribute with every dimension's ranges given
//!   fills a buffer mapped as numpy maps a large result (huge pages asked for), as the Python
//!   package's reads do (`ReadQuery::read_into`; the mapping is timed);
//!   `TESSERA_BENCH_VEC=1` makes it return the engine's result columns instead.
//! * `layout`: `row-major`, `col-major`, `global` or `unordered` (absent: the engine's
//!   default). `dims` / `attrs`: the fields returned (dimensions first).
//! * `ranges`: per dimension, in order, a list of inclusive `[low, high]` ranges (integers,
//!   floats or strings); several ranges on one dimension make a multi-range subarray; a
//!   dimension not listed gets the non-empty domain.
//!
//! An `aggregate` spec is a `read` spec with `"aggregate": "sum"` (or `min`, `max`, `mean`,
//! `null_count`): each query computes that aggregate of `checksum_field` (timed) instead of
//! returning cells. `cells` is the number of queries and `checksum` `[v, 0, 0]` where `v` is
//! the wrapping sum of the results as 64-bit integers (a float sum or mean: the bits of its
//! value rounded to 12 significant digits, since the engines add in different orders; a
//! float minimum or maximum: its bits).
//!
//! A `read` or `aggregate` spec may hold `"condition": "a >= 500"`, a query condition every
//! query applies (dense reads return the fill value for cells failing it, as libtiledb does).
//! `"aggregate": "count"` counts the cells (of no field).
//!
//! A `consolidate` spec (`{"op": "consolidate", "array": ..., "scratch": ...,
//! "checksum_field": "a"}`) copies `array` to `<scratch>/tessera` (not timed), consolidates its
//! fragments with the default options (timed), then reads the copy back whole for `cells` and
//! `checksum` (not timed) and deletes it.
//!
//! A `write` spec writes input files into a fresh array as one fragment:
//!
//! ```json
//! {"workload": "strings_write", "op": "write", "array": "/abs/path/to/dataset/array",
//!  "scratch": "/abs/target/bench/scratch/strings_write", "layout": "row-major",
//!  "timestamp": 1, "ranges": [["i", [[0, 4999999]]]],
//!  "columns": [{"name": "s", "data": "/abs/s.data", "offsets": "/abs/s.offsets"}],
//!  "checksum_field": "s"}
//! ```
//!
//! * `array`: the array whose schema is copied (never written); each engine creates an empty
//!   array with that schema at `<scratch>/<engine>` (here `<scratch>/tessera`; one left over
//!   is deleted first).
//! * `columns`: every field the write needs (sparse: the dimensions too), each a file of
//!   little-endian values of the field's type (`data`), plus for var-sized fields a file of
//!   u64 start offsets, one per cell (`offsets`).
//! * `layout`: the order of the cells (`row-major`, `col-major`, `global`, `unordered`;
//!   absent: row-major for dense arrays, unordered for sparse ones); `ranges`: a dense write's
//!   subarray, one `[low, high]` per dimension (a dimension not listed: its whole domain);
//!   `timestamp`: the fragment's timestamp (ms; absent: now).
//!
//! Creating the array and loading the inputs are not timed; the time covers opening the array,
//! the write (`submit`, which syncs every file it writes) and closing it. Then (not timed)
//! the array is read back whole, `checksum_field` only, for `cells` and `checksum` as a
//! `read` computes them, and deleted. `setup_peak_rss_mb` is the peak RSS once the inputs
//! are loaded, `peak_rss_mb` at the end of the write (the orchestrator reports this one for
//! writes), `process_peak_rss_mb` at the end (read-back included); `verify_seconds` is the
//! read-back's time.
//!
//! The output (one line on standard output):
//!
//! ```json
//! {"engine": "tessera", "workload": "...", "seconds": 0.12, "cells": 1000000,
//!  "checksum": [123, 4000000, 0], "queries": 1, "setup_peak_rss_mb": 3.1,
//!  "peak_rss_mb": 20.5}
//! ```
//!
//! `seconds` sums the timed parts; `cells` sums the cells of every query; `checksum` is
//! computed on `checksum_field` outside the timer and does not depend on the cell order:
//! `[sum, bytes, len_sq]` where `sum` is the wrapping sum of the values as unsigned
//! little-endian integers (for 4- and 8-byte fixed-size cells; else of the bytes), `bytes`
//! the number of data bytes and `len_sq` the sum of the squared cell lengths in bytes
//! (var-sized cells only, else 0). All sums wrap at 2^64. `setup_peak_rss_mb` and
//! `peak_rss_mb` are the process's own peak RSS (`VmHWM`) before the timed work and at the
//! end (the orchestrator also measures it from outside).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::json;
use tessera::layers::query::consolidate;
use tessera::layers::query::{Column, ReadResult};
use tessera::layers::types::CELL_VAL_NUM_VAR;
use tessera::{Aggregate, AggregateValue, Array, ArraySchema, Layout, LocalStorage, ReadLayout};

/// One workload run, as the orchestrator writes it.
#[derive(Debug, Deserialize)]
struct Spec {
    workload: String,
    op: String,
    array: PathBuf,
    #[serde(default)]
    open_in_timer: bool,
    #[serde(default)]
    layout: Option<String>,
    #[serde(default)]
    dims: Vec<String>,
    #[serde(default)]
    attrs: Vec<String>,
    checksum_field: String,
    #[serde(default)]
    queries: Vec<QuerySpec>,
    /// `write`: the folder of the array written (`<scratch>/tessera`).
    #[serde(default)]
    scratch: Option<PathBuf>,
    /// `write`: the dense subarray.
    #[serde(default)]
    ranges: Vec<(String, Vec<(Bound, Bound)>)>,
    /// `write`: the fragment's timestamp.
    #[serde(default)]
    timestamp: Option<u64>,
    /// `write`: the input files.
    #[serde(default)]
    columns: Vec<ColumnSpec>,
    /// `aggregate`: the aggregate of `checksum_field` each query computes.
    #[serde(default)]
    aggregate: Option<String>,
    /// `read` and `aggregate`: a query condition every query applies (text that both
    /// `tessera read --where` and tiledb-py's `QueryCondition` parse alike).
    #[serde(default)]
    condition: Option<String>,
}

/// One field's input files of a `write`.
#[derive(Debug, Deserialize)]
struct ColumnSpec {
    name: String,
    data: PathBuf,
    #[serde(default)]
    offsets: Option<PathBuf>,
}

/// One query: the ranges of each dimension, in order.
#[derive(Debug, Deserialize)]
struct QuerySpec {
    #[serde(default)]
    ranges: Vec<(String, Vec<(Bound, Bound)>)>,
}

/// A range bound as JSON gives it.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Bound {
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
}

impl Bound {
    fn as_f64(&self) -> Option<f64> {
        match *self {
            Bound::Int(v) => Some(v as f64),
            Bound::UInt(v) => Some(v as f64),
            Bound::Float(v) => Some(v),
            Bound::Str(_) => None,
        }
    }
}

/// The order-independent checksum of one column (see the crate docs).
#[derive(Debug, Default, Clone, Copy)]
struct Checksum {
    sum: u64,
    bytes: u64,
    len_sq: u64,
}

impl Checksum {
    fn add_column(&mut self, col: &Column) {
        if let Some(offsets) = &col.offsets {
            self.bytes = self.bytes.wrapping_add(col.data.len() as u64);
            self.sum = self.sum.wrapping_add(sum_bytes(&col.data));
            let total = col.data.len() as u64;
            for (i, &start) in offsets.iter().enumerate() {
                let end = offsets.get(i + 1).copied().unwrap_or(total);
                let len = end.wrapping_sub(start);
                self.len_sq = self.len_sq.wrapping_add(len.wrapping_mul(len));
            }
            return;
        }
        self.add_fixed(&col.data, col.cell_size());
    }

    /// Fixed-size cells of `cell_size` bytes.
    fn add_fixed(&mut self, data: &[u8], cell_size: Option<usize>) {
        self.bytes = self.bytes.wrapping_add(data.len() as u64);
        let s = match cell_size {
            Some(8) => data
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                .fold(0u64, u64::wrapping_add),
            Some(4) => data
                .chunks_exact(4)
                .map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap_or_default())))
                .fold(0u64, u64::wrapping_add),
            _ => sum_bytes(data),
        };
        self.sum = self.sum.wrapping_add(s);
    }
}

fn sum_bytes(data: &[u8]) -> u64 {
    data.iter().map(|&b| u64::from(b)).fold(0u64, u64::wrapping_add)
}

/// The process's peak resident set so far (`VmHWM`), in MiB, when /proc tells it.
fn peak_rss_mb() -> Option<f64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tessera-bench: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<()> {
    let mut args = std::env::args_os().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        bail!("usage: tessera-bench SPEC.json (or - for standard input)");
    };
    let text = if path == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("reading the spec from stdin")?;
        s
    } else {
        fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?
    };
    let spec: Spec = serde_json::from_str(&text).context("parsing the workload spec")?;
    let out = match spec.op.as_str() {
        "read" => run_read(&spec)?,
        "write" => run_write(&spec)?,
        "aggregate" => run_aggregate(&spec)?,
        "consolidate" => run_consolidate(&spec)?,
        other => json!({
            "engine": "tessera",
            "workload": spec.workload,
            "unsupported": format!("op {other:?} is not implemented in Tessera yet"),
        }),
    };
    println!("{out}");
    Ok(())
}

/// What the queries of a `read` spec gave.
struct ReadOutcome {
    seconds: f64,
    cells: u64,
    checksum: Checksum,
    setup_rss: Option<f64>,
}

/// Opens the array and runs every query of a `read` spec.
fn run_read(spec: &Spec) -> Result<serde_json::Value> {
    let out = read_all(spec)?;
    Ok(json!({
        "engine": "tessera",
        "workload": spec.workload,
        "seconds": out.seconds,
        "cells": out.cells,
        "checksum": [out.checksum.sum, out.checksum.bytes, out.checksum.len_sq],
        "queries": spec.queries.len(),
        "setup_peak_rss_mb": out.setup_rss,
        "peak_rss_mb": peak_rss_mb(),
    }))
}

/// Runs the queries of a `read` spec on its array (opened once).
fn read_all(spec: &Spec) -> Result<ReadOutcome> {
    let layout = spec
        .layout
        .as_deref()
        .map(str::parse::<ReadLayout>)
        .transpose()
        .with_context(|| format!("layout {:?}", spec.layout))?;
    let setup_rss = peak_rss_mb();
    let mut timed = Duration::ZERO;
    let start = Instant::now();
    let array =
        tessera::open(&spec.array).with_context(|| format!("opening {}", spec.array.display()))?;
    if spec.open_in_timer {
        timed += start.elapsed();
    }
    let mut cells = 0u64;
    let mut checksum = Checksum::default();
    let into = into_buffer(&array, spec, layout);
    for (i, q) in spec.queries.iter().enumerate() {
        if let Some((attr, size)) = into
            && let Some(n) = box_cells(&array, q)
        {
            let start = Instant::now();
            // Memory as numpy allocates a large result: an anonymous mapping with the
            // kernel's huge pages asked for (`madvise(MADV_HUGEPAGE)`), filled in place.
            let len = usize::try_from(n)
                .ok()
                .and_then(|n| n.checked_mul(size))
                .with_context(|| format!("query {i}: {n} cells of {size} bytes do not fit"))?;
            let mut buf = memmap2::MmapMut::map_anon(len)
                .with_context(|| format!("mapping the result of query {i}"))?;
            #[cfg(unix)]
            buf.advise(memmap2::Advice::HugePage).context("madvise(MADV_HUGEPAGE)")?;
            build_query(&array, spec, q, layout)?
                .read_into(attr, &mut buf)
                .with_context(|| format!("query {i} of {}", spec.workload))?;
            timed += start.elapsed();
            cells += n;
            checksum.add_fixed(&buf, Some(size));
            continue;
        }
        let start = Instant::now();
        let result = build_query(&array, spec, q, layout)?
            .execute()
            .with_context(|| format!("query {i} of {}", spec.workload))?;
        timed += start.elapsed();
        account(&result, &spec.checksum_field, &mut cells, &mut checksum)?;
    }
    Ok(ReadOutcome { seconds: timed.as_secs_f64(), cells, checksum, setup_rss })
}

/// The attribute and cell size of a read that fills a caller-provided buffer
/// ([`ReadQuery::read_into`](tessera::layers::query::ReadQuery::read_into)), as the Python
/// package fills numpy's memory: a dense array, one fixed-size non-nullable attribute and no
/// dimension returned, no condition, row- or col-major. `TESSERA_BENCH_VEC=1` turns it off
/// (every read then returns the engine's own result columns).
fn into_buffer<'s>(
    array: &tessera::Array,
    spec: &'s Spec,
    layout: Option<ReadLayout>,
) -> Option<(&'s str, usize)> {
    if std::env::var_os("TESSERA_BENCH_VEC").is_some_and(|v| v == "1") {
        return None;
    }
    let schema = array.schema();
    let ([attr], [], None) = (spec.attrs.as_slice(), spec.dims.as_slice(), &spec.condition) else {
        return None;
    };
    let a = schema.attribute(attr)?;
    let ordered = matches!(layout, None | Some(ReadLayout::RowMajor | ReadLayout::ColMajor));
    (schema.is_dense() && ordered && !a.nullable).then_some(())?;
    Some((attr.as_str(), a.cell_size()?))
}

/// The cells of a query whose ranges give every dimension integer bounds, if any (else
/// `None`).
fn box_cells(array: &tessera::Array, q: &QuerySpec) -> Option<u64> {
    let dims = &array.schema().dimensions;
    let mut cells = 1u64;
    for d in dims {
        let (_, ranges) = q.ranges.iter().find(|(name, _)| *name == d.name)?;
        let mut n = 0u64;
        for r in ranges {
            let len = match r {
                (Bound::Int(lo), Bound::Int(hi)) if hi >= lo => hi.abs_diff(*lo).checked_add(1)?,
                (Bound::UInt(lo), Bound::UInt(hi)) if hi >= lo => (hi - lo).checked_add(1)?,
                _ => return None,
            };
            n = n.checked_add(len)?;
        }
        cells = cells.checked_mul(n)?;
    }
    // (an empty box reads through the result columns: nothing to map)
    (cells > 0).then_some(cells)
}

/// Creates a fresh array with the schema of the spec's `array` at `<scratch>/tessera`,
/// writes the input files into it as one fragment (timed: open, submit, close), reads it
/// back for the cell count and checksum, and deletes it.
fn run_write(spec: &Spec) -> Result<serde_json::Value> {
    let scratch = spec.scratch.as_ref().context("a write spec needs \"scratch\"")?;
    let target = scratch.join("tessera");
    remove_dir(&target)?;
    let source =
        tessera::open(&spec.array).with_context(|| format!("opening {}", spec.array.display()))?;
    let storage = Arc::new(LocalStorage::new(&target));
    Array::create(storage, source.schema(), source.enumerations())
        .with_context(|| format!("creating {}", target.display()))?;
    let columns =
        spec.columns.iter().map(|c| load_column(source.schema(), c)).collect::<Result<Vec<_>>>()?;
    drop(source);
    let layout = spec
        .layout
        .as_deref()
        .map(Layout::from_name)
        .transpose()
        .with_context(|| format!("layout {:?}", spec.layout))?;
    let setup_rss = peak_rss_mb();

    let start = Instant::now();
    let array = tessera::open(&target).with_context(|| format!("opening {}", target.display()))?;
    let mut write = array.write();
    if let Some(layout) = layout {
        write = write.layout(layout);
    }
    if let Some(ms) = spec.timestamp {
        write = write.timestamp(ms);
    }
    for (dim, ranges) in &spec.ranges {
        let [(lo, hi)] = ranges.as_slice() else {
            bail!("a write takes one range on {dim:?}, not {}", ranges.len());
        };
        write = match (lo, hi) {
            (Bound::Int(lo), Bound::Int(hi)) => write.range_i64(dim, *lo, *hi),
            (Bound::UInt(lo), Bound::UInt(hi)) => write.range_u64(dim, *lo, *hi),
            _ => bail!("the range on {dim:?} of a write must be integers"),
        };
    }
    for column in columns {
        write = write.column(column);
    }
    write.submit().with_context(|| format!("writing {}", target.display()))?;
    drop(array);
    let seconds = start.elapsed().as_secs_f64();
    let write_rss = peak_rss_mb();

    // Read back what was written (not timed).
    let start = Instant::now();
    let check = read_back(spec, &target)?;
    let verify_seconds = start.elapsed().as_secs_f64();
    remove_dir(&target)?;
    Ok(json!({
        "engine": "tessera",
        "workload": spec.workload,
        "seconds": seconds,
        "cells": check.cells,
        "checksum": [check.checksum.sum, check.checksum.bytes, check.checksum.len_sq],
        "verify_seconds": verify_seconds,
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": write_rss,
        "process_peak_rss_mb": peak_rss_mb(),
    }))
}

/// Opens the array once and computes the spec's aggregate of `checksum_field` per query.
fn run_aggregate(spec: &Spec) -> Result<serde_json::Value> {
    let name = spec.aggregate.as_deref().context("an aggregate spec needs \"aggregate\"")?;
    let aggregate = if name == "count" {
        Aggregate::count()
    } else {
        Aggregate::parse(&format!("{name}({})", spec.checksum_field))
            .with_context(|| format!("aggregate {name:?}"))?
    };
    let setup_rss = peak_rss_mb();
    let mut timed = Duration::ZERO;
    let start = Instant::now();
    let array =
        tessera::open(&spec.array).with_context(|| format!("opening {}", spec.array.display()))?;
    if spec.open_in_timer {
        timed += start.elapsed();
    }
    let mut total = 0u64;
    for (i, q) in spec.queries.iter().enumerate() {
        let query = build_query(&array, spec, q, None)?;
        let start = Instant::now();
        let values = query
            .aggregate(std::slice::from_ref(&aggregate))
            .with_context(|| format!("query {i} of {}", spec.workload))?;
        timed += start.elapsed();
        let bits = match values.first() {
            Some(AggregateValue::Int(v)) => *v as u64,
            Some(AggregateValue::UInt(v)) => *v,
            // Sums and means of floats depend on the order of the additions, which differs
            // between the engines: compared to 12 significant digits.
            Some(AggregateValue::Float(v)) => {
                format!("{v:.11e}").parse::<f64>().unwrap_or(*v).to_bits()
            }
            Some(AggregateValue::Null) => 0,
            // A minimum or maximum: as tiledb-py's number (a float's f64 bits, an integer
            // as a 64-bit integer).
            Some(v @ AggregateValue::Value { datatype, .. }) => match v.as_f64() {
                Some(x) if datatype.is_float() => x.to_bits(),
                Some(x) => x as i64 as u64,
                None => bail!("unexpected aggregate value {v:?}"),
            },
            other => bail!("unexpected aggregate value {other:?}"),
        };
        total = total.wrapping_add(bits);
    }
    Ok(json!({
        "engine": "tessera",
        "workload": spec.workload,
        "seconds": timed.as_secs_f64(),
        "cells": spec.queries.len(),
        "checksum": [total, 0, 0],
        "queries": spec.queries.len(),
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": peak_rss_mb(),
    }))
}

/// Copies the spec's array to `<scratch>/tessera`, consolidates its fragments (timed), reads
/// the copy back whole for the checksum and deletes it.
fn run_consolidate(spec: &Spec) -> Result<serde_json::Value> {
    let scratch = spec.scratch.as_ref().context("a consolidate spec needs \"scratch\"")?;
    let target = scratch.join("tessera");
    remove_dir(&target)?;
    copy_dir(&spec.array, &target)?;
    let setup_rss = peak_rss_mb();
    let start = Instant::now();
    let report = consolidate::consolidate(
        Arc::new(LocalStorage::new(&target)),
        consolidate::Mode::Fragments,
        &consolidate::Options::default(),
    )
    .with_context(|| format!("consolidating {}", target.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    let work_rss = peak_rss_mb();
    let start = Instant::now();
    let check = read_back(spec, &target)?;
    let verify_seconds = start.elapsed().as_secs_f64();
    remove_dir(&target)?;
    Ok(json!({
        "engine": "tessera",
        "workload": spec.workload,
        "seconds": seconds,
        "cells": check.cells,
        "checksum": [check.checksum.sum, check.checksum.bytes, check.checksum.len_sq],
        "fragments_merged": report.inputs.len(),
        "verify_seconds": verify_seconds,
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": work_rss,
        "process_peak_rss_mb": peak_rss_mb(),
    }))
}

/// Copies the folder `from` (files and sub-folders) to `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &dest)?;
        } else {
            fs::copy(entry.path(), &dest)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Reads the array at `target` back whole (its non-empty domain), `checksum_field` only, for
/// the cell count and checksum of a write or a consolidation.
fn read_back(spec: &Spec, target: &Path) -> Result<ReadOutcome> {
    read_all(&Spec {
        workload: spec.workload.clone(),
        op: "read".into(),
        array: target.to_path_buf(),
        open_in_timer: false,
        layout: None,
        dims: Vec::new(),
        attrs: vec![spec.checksum_field.clone()],
        checksum_field: spec.checksum_field.clone(),
        queries: vec![QuerySpec { ranges: Vec::new() }],
        scratch: None,
        ranges: Vec::new(),
        timestamp: None,
        columns: Vec::new(),
        aggregate: None,
        condition: None,
    })
}

/// Deletes a folder and everything in it, if it is there.
fn remove_dir(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("deleting {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// One field's input files as a write column of the field's type.
fn load_column(schema: &ArraySchema, spec: &ColumnSpec) -> Result<Column> {
    let (datatype, cell_val_num) =
        if let Some(a) = schema.attributes.iter().find(|a| a.name == spec.name) {
            if a.nullable {
                bail!("{:?}: nullable attributes are not supported by write specs", spec.name);
            }
            (a.datatype, a.cell_val_num)
        } else if let Some(d) = schema.dimensions.iter().find(|d| d.name == spec.name) {
            (d.datatype, d.cell_val_num)
        } else {
            bail!("the schema has no field {:?}", spec.name);
        };
    let read = |p: &Path| fs::read(p).with_context(|| format!("reading {}", p.display()));
    let data = read(&spec.data)?;
    let offsets = if cell_val_num == CELL_VAL_NUM_VAR {
        let path = spec
            .offsets
            .as_ref()
            .with_context(|| format!("{:?} is var-sized: it needs \"offsets\"", spec.name))?;
        let bytes = read(path)?;
        let offsets: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        Some(offsets)
    } else {
        None
    };
    Ok(Column { name: spec.name.clone(), datatype, cell_val_num, data, offsets, validity: None })
}

/// The Tessera read for one query of the spec.
fn build_query<'a>(
    array: &'a tessera::Array,
    spec: &Spec,
    q: &QuerySpec,
    layout: Option<ReadLayout>,
) -> Result<tessera::layers::query::ReadQuery<'a>> {
    let mut read =
        array.read().dimensions(spec.dims.iter().cloned()).attributes(spec.attrs.iter().cloned());
    if let Some(layout) = layout {
        read = read.layout(layout);
    }
    if let Some(text) = &spec.condition {
        read = read.where_text(text);
    }
    for (dim, ranges) in &q.ranges {
        for (lo, hi) in ranges {
            read = match (lo, hi) {
                (Bound::Int(lo), Bound::Int(hi)) => read.range_i64(dim, *lo, *hi),
                (Bound::UInt(lo), Bound::UInt(hi)) => read.range_u64(dim, *lo, *hi),
                (Bound::Str(lo), Bound::Str(hi)) => read.range_str(dim, lo, hi),
                (lo, hi) => match (lo.as_f64(), hi.as_f64()) {
                    (Some(lo), Some(hi)) => read.range_f64(dim, lo, hi),
                    _ => bail!("range on {dim:?} mixes strings and numbers"),
                },
            };
        }
    }
    Ok(read)
}

/// Adds a result's cells and checksum to the totals.
fn account(
    result: &ReadResult,
    field: &str,
    cells: &mut u64,
    checksum: &mut Checksum,
) -> Result<()> {
    *cells += result.cell_num() as u64;
    let col = result
        .column(field)
        .with_context(|| format!("the result has no column {field:?} (the checksum field)"))?;
    checksum.add_column(col);
    Ok(())
}
