//! Fragment consolidation (`FragmentConsolidator` in libtiledb 2.30,
//! `docs/format/commits-and-names.md`, "Consolidation"):
//! the fragments of a timestamp range become one fragment named
//! `__<first t1>_<last t2>_<label>_22`, committed, then a `.vac` file names the merged ones
//! so that readers skip them until they are vacuumed.
//!
//! * Which fragments: libtiledb's steps ([`Options`]): each step merges the best run of
//!   consecutive fragments ([`next_to_consolidate`]) and the next step sees its output in
//!   their place. With the default settings, every fragment the range shows, in one step. A
//!   dense run is consolidated only when its non-empty domains' bounding box overlaps no older
//!   fragment and holds no more cells than `amplification` times their tile-expanded domains
//!   together; otherwise nothing happens, as in libtiledb.
//! * Dense: the bounding box is read tile row by tile row in global order (fill values
//!   where no fragment wrote) and written as one global-order fragment over it.
//! * Sparse: the fragments are merged tile by tile in global order, every version of a
//!   cell kept with its timestamp (`t.tdb`), the newest first among equal coordinates, so
//!   that time travel still works. Visible deletes are recorded per cell (`dt.tdb`,
//!   `dci.tdb`) when a delete is newer than the first fragment or a fragment already has
//!   delete metadata, or the deleted cells are dropped when purging; every visible delete
//!   becomes a processed condition of the new fragment.
//!
//! Memory stays bounded: one decoded tile per input fragment and one batch of output tiles
//! for sparse arrays, one tile row for dense ones.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tessera_fragment::stats::VarMinMaxCopy;
use tessera_fragment::{CommitEntry, CommitKind, FragmentName, VacuumFile};
use tessera_rtree::Mbr;
use tessera_schema::ArraySchema;
use tessera_storage::Storage;
use tessera_types::names::now_ms;
use tessera_types::{CELL_VAL_NUM_VAR, Layout};

use crate::condition::{ColumnView, DeleteCondition, FragmentDeleteInfo, delete_marks_views};
use crate::consolidate::commits::BACK_COMPAT_WRITES_MIN_VERSION;
use crate::consolidate::{Options, Report};
use crate::fragment::Fragment;
use crate::read::column::OutField;
use crate::read::order::{GlobalOrder, int_value, ord_key, tile_index};
use crate::read::tiles::{DecodedTile, FieldReader, QField, TileCells, TileJob, load_tiles};
use crate::write::FragmentWrite;
use crate::write::sink::{FieldTile, FragmentSink, Tile};
use crate::{Array, Error, Result};

pub(crate) fn consolidate(storage: Arc<dyn Storage>, options: &Options) -> Result<Report> {
    options.validate()?;
    let (start, end) = options.range.unwrap_or((0, now_ms()));
    let mut array = Array::open_between(storage.clone(), start, end)?;
    if array.fragments().len() <= 1 {
        return Ok(Report::default());
    }
    // Fragments in the array folder (before `__fragments/`): only arrays whose new fragments
    // libtiledb writes in format 22 (schemas before format 7).
    refuse_old(&array)?;
    // Dense: what fragments older than the range cover (libtiledb's anterior range).
    let anterior = if array.schema().is_dense() && start > 0 {
        let before = Array::open_between(storage.clone(), 0, start - 1)?;
        let mut b = Vec::new();
        for f in before.fragments() {
            if let Some(ned) = &f.footer().non_empty_domain {
                union(&mut b, &int_box(before.schema(), ned)?);
            }
        }
        b
    } else {
        Vec::new()
    };
    let mut done = Report::default();
    for step in 0..options.steps {
        if step > 0 {
            // The fragment just written replaces its inputs (hidden by their `.vac` file).
            array = Array::open_between(storage.clone(), start, end)?;
        }
        if array.fragments().len() <= 1 {
            break;
        }
        let Some(run) = next_to_consolidate(&array, &anterior, options)? else { break };
        let keep: std::collections::HashSet<String> =
            run.iter().map(|f| f.name().as_str().to_owned()).collect();
        let mut chosen = array.clone();
        chosen.retain_fragments(&keep);
        let report = if chosen.schema().is_dense() {
            dense(&chosen, options)?
        } else {
            sparse(&chosen, options)?
        };
        done.inputs.extend(report.inputs.iter().cloned());
        match &report.output {
            Some(out) => {
                done.steps.push((report.inputs, out.clone()));
                done.output = Some(out.clone());
            }
            // Every cell purged: nothing left to merge with.
            None => break,
        }
    }
    if done.steps.len() == 1 {
        done.steps.clear();
    }
    Ok(done)
}

/// The next run of consecutive fragments to merge, as libtiledb's
/// `FragmentConsolidator::compute_next_to_consolidate`: among runs of `step_max_frags` down
/// to `step_min_frags` fragments (longest first), those whose adjacent sizes keep
/// `step_size_ratio` and (dense) that [`consolidatable`] allows; of the longest such runs, the
/// earliest one unless a later one is more than 25 % smaller. `None` when no run of two or more
/// qualifies.
fn next_to_consolidate(
    array: &Array,
    anterior: &[[i128; 2]],
    options: &Options,
) -> Result<Option<Vec<Arc<Fragment>>>> {
    let frags = array.fragments();
    let schema = array.schema();
    let n = frags.len();
    let min = (options.step_min_frags as usize).min(n);
    let max = (options.step_max_frags as usize).min(n);
    if max == 0 {
        return Ok(None);
    }
    let sizes: Vec<u64> = frags.iter().map(|f| fragment_size(f)).collect();
    let dense = schema.is_dense();
    let boxes: Vec<Vec<[i128; 2]>> = if dense {
        frags
            .iter()
            .map(|f| {
                let ned = f.footer().non_empty_domain.as_ref().ok_or_else(|| Error::Corrupt {
                    file: f.dir(),
                    reason: "a dense fragment without a non-empty domain".into(),
                })?;
                int_box(schema, ned)
            })
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    // Row i: runs of i + 1 fragments starting at column j; `None` marks an invalid run.
    let mut prev: Vec<Option<(u64, Vec<[i128; 2]>)>> = (0..n)
        .map(|j| Some((sizes[j], if dense { boxes[j].clone() } else { Vec::new() })))
        .collect();
    let mut rows = vec![prev.iter().map(|e| e.as_ref().map(|(s, _)| *s)).collect::<Vec<_>>()];
    for i in 1..max {
        let mut row = vec![None; n];
        for j in 0..n {
            if i + j >= n {
                continue;
            }
            let (a, b) = (sizes[i + j - 1] as f32, sizes[i + j] as f32);
            let mut ratio = a / b;
            if ratio > 1.0 {
                ratio = 1.0 / ratio;
            }
            let Some((size, bbox)) = &prev[j] else { continue };
            if ratio.is_nan() || ratio < options.step_size_ratio {
                continue;
            }
            let mut bbox = bbox.clone();
            if dense {
                union(&mut bbox, &boxes[i + j]);
                if !consolidatable(schema, anterior, &boxes, j, j + i, &bbox, options) {
                    continue;
                }
            }
            row[j] = Some((size + sizes[i + j], bbox));
        }
        rows.push(row.iter().map(|e| e.as_ref().map(|(s, _)| *s)).collect());
        prev = row;
    }
    for i in (min.max(1) - 1..max).rev() {
        let mut best: Option<(u64, usize)> = None;
        for (j, size) in rows[i].iter().enumerate() {
            let Some(size) = *size else { continue };
            // A later run wins only when more than 25 % smaller: equal batches merge from
            // the oldest, so the next step finds similar sizes.
            if best.is_none_or(|(b, _)| (size as f64) < b as f64 / 1.25) {
                best = Some((size, j));
            }
        }
        if let Some((_, j)) = best {
            if i == 0 {
                return Ok(None);
            }
            return Ok(Some(frags[j..=j + i].to_vec()));
        }
    }
    Ok(None)
}

/// Whether dense fragments `start..=end` may merge into their bounding box `bbox`: it
/// overlaps neither what older fragments cover (`anterior`, and the fragments before
/// `start`) nor holds more than `amplification` times the cells of their tile-expanded
/// domains (libtiledb's `are_consolidatable`).
fn consolidatable(
    schema: &ArraySchema,
    anterior: &[[i128; 2]],
    boxes: &[Vec<[i128; 2]>],
    start: usize,
    end: usize,
    bbox: &[[i128; 2]],
    options: &Options,
) -> bool {
    if !anterior.is_empty() && overlap(bbox, anterior) {
        return false;
    }
    if boxes[..start].iter().any(|b| overlap(bbox, b)) {
        return false;
    }
    let expanded: f64 =
        boxes[start..=end].iter().map(|b| cells_of(&expand_to_tiles(schema, b))).sum();
    cells_of(bbox) / expanded <= f64::from(options.amplification)
}

/// A fragment's size as libtiledb's `FragmentMetadata::fragment_size` counts it: its data
/// files and its metadata file.
fn fragment_size(f: &Fragment) -> u64 {
    let footer = f.footer();
    footer.file_sizes.iter().sum::<u64>()
        + footer.file_var_sizes.iter().sum::<u64>()
        + footer.file_validity_sizes.iter().sum::<u64>()
        + f.metadata_file_size()
}

/// Refuses fragments older than format version 12 in arrays whose schema is of format 7 to
/// 21: libtiledb 2.30 writes the consolidated fragment of such an array in the array's own
/// format ("back-compat writes"), which Tessera does not write. Arrays of formats 1 to 6 are
/// consolidated as libtiledb does it: a format 22 fragment in `__fragments/`, and a `.vac` in
/// `__commits/` listing the old fragments by their root paths.
fn refuse_old(array: &Array) -> Result<()> {
    // libtiledb's `write_version`: the schema's version from 7 on, else the current one
    // (an upgraded array, whose schema is of format 22, consolidates old fragments too).
    let version = array.schema().version;
    if !(BACK_COMPAT_WRITES_MIN_VERSION..tessera_types::FORMAT_VERSION).contains(&version) {
        return Ok(());
    }
    if let Some(old) = array
        .fragments()
        .iter()
        .find(|f| f.name().format_version() < tessera_fragment::previous::FRAGMENTS_DIR_MIN_VERSION)
    {
        return Err(Error::Unsupported(format!(
            "consolidating fragment {} (format version {}) of an array of format {version}: \
             libtiledb 2.30 writes the consolidated fragment of an array of format \
             {BACK_COMPAT_WRITES_MIN_VERSION} to 21 in that old format, which Tessera does not \
             write (see docs/format/older-versions.md)",
            old.name(),
            old.name().format_version(),
        )));
    }
    Ok(())
}

/// Consolidates exactly the fragments `names` (as libtiledb's
/// `FragmentConsolidator::consolidate_fragments`): every name must be a fragment the array
/// shows now; the listed fragments become one, named over the oldest `t1` and the newest `t2`
/// among them, and a `.vac` file lists them. A dense list is refused when a fragment not in it,
/// starting no later than the newest listed one ends, overlaps the listed fragments' union
/// expanded to whole tiles (its cells could be overwritten by fill values). One fragment or
/// none: nothing to do.
pub(crate) fn consolidate_list(
    storage: Arc<dyn Storage>,
    names: &[&str],
    options: &Options,
) -> Result<Report> {
    let mut array = Array::open_between(storage, 0, now_ms())?;
    if names.len() <= 1 {
        return Ok(Report::default());
    }
    let wanted: std::collections::HashSet<String> = names
        .iter()
        .map(|n| n.trim_end_matches('/').rsplit('/').next().unwrap_or(n).to_owned())
        .collect();
    let found = array.fragments().iter().filter(|f| wanted.contains(f.name().as_str())).count();
    if found != names.len() {
        let missing: Vec<&String> = wanted
            .iter()
            .filter(|w| !array.fragments().iter().any(|f| f.name().as_str() == w.as_str()))
            .collect();
        return Err(Error::InvalidQuery(format!(
            "cannot consolidate: found {found} of the {} fragments listed (not fragments the \
             array shows: {missing:?})",
            names.len()
        )));
    }
    refuse_old(&array)?;
    if array.schema().is_dense() {
        let schema = array.schema();
        let selected: Vec<&Arc<Fragment>> =
            array.fragments().iter().filter(|f| wanted.contains(f.name().as_str())).collect();
        let mut bbox: Vec<[i128; 2]> = Vec::new();
        for f in &selected {
            if let Some(ned) = &f.footer().non_empty_domain {
                union(&mut bbox, &int_box(schema, ned)?);
            }
        }
        let expanded = expand_to_tiles(schema, &bbox);
        let max_t = selected.iter().map(|f| f.name().t2()).max().unwrap_or(0);
        for f in array.fragments().iter().filter(|f| !wanted.contains(f.name().as_str())) {
            if f.name().t1() <= max_t
                && let Some(ned) = &f.footer().non_empty_domain
                && overlap(&expanded, &int_box(schema, ned)?)
            {
                return Err(Error::InvalidQuery(format!(
                    "cannot consolidate: the non-empty domain of fragment {} overlaps the union \
                     of the non-empty domains of the fragments listed, and it was written before \
                     them (their consolidation would cover its cells with fill values)",
                    f.name()
                )));
            }
        }
        array.retain_fragments(&wanted);
        dense(&array, options)
    } else {
        array.retain_fragments(&wanted);
        sparse(&array, options)
    }
}

/// The name of the fragment consolidating `frags` (oldest first).
fn consolidated_name(frags: &[Arc<Fragment>]) -> Result<FragmentName> {
    let first = frags.first().map_or(0, |f| f.name().t1());
    let last = frags.last().map_or(0, |f| f.name().t2());
    FragmentName::generate(first, last.max(first)).map_err(|e| Error::InvalidWrite(e.to_string()))
}

/// Publishes the `.vac` file of `name` listing `inputs`.
fn write_vacuum_file(
    storage: &dyn Storage,
    name: &FragmentName,
    inputs: &[Arc<Fragment>],
) -> Result<()> {
    let vac = VacuumFile::for_fragments(inputs.iter().map(|f| f.name()));
    let entry = CommitEntry::new(name.clone(), CommitKind::Vacuum);
    storage.publish(&entry.relative_path(), Bytes::from(vac.to_bytes()))?;
    Ok(())
}

fn report(inputs: &[Arc<Fragment>], output: &FragmentName) -> Report {
    Report {
        inputs: inputs.iter().map(|f| f.name().as_str().to_owned()).collect(),
        output: Some(output.as_str().to_owned()),
        steps: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Dense

/// Integer `[lo, hi]` per dimension of a dense fragment's non-empty domain.
fn int_box(schema: &ArraySchema, ned: &Mbr) -> Result<Vec<[i128; 2]>> {
    schema
        .dimensions
        .iter()
        .zip(&ned.0)
        .map(|(d, r)| match (int_value(d.datatype, &r.low), int_value(d.datatype, &r.high)) {
            (Some(lo), Some(hi)) => Ok([lo, hi]),
            _ => Err(Error::Unsupported(format!(
                "dense dimension {:?} of type {}",
                d.name, d.datatype
            ))),
        })
        .collect()
}

/// The box expanded to whole space tiles, cut to the domain.
fn expand_to_tiles(schema: &ArraySchema, b: &[[i128; 2]]) -> Vec<[i128; 2]> {
    schema
        .dimensions
        .iter()
        .zip(b)
        .map(|(d, r)| {
            let int = |v: &Option<Vec<u8>>| v.as_ref().and_then(|x| int_value(d.datatype, x));
            let (lo, hi) = match &d.domain {
                Some([lo, hi]) => (int(&Some(lo.clone())), int(&Some(hi.clone()))),
                None => (None, None),
            };
            let ext = int(&d.tile_extent);
            match (lo, hi, ext) {
                (Some(lo), Some(hi), Some(e)) if e > 0 => {
                    let a = lo + (r[0] - lo).div_euclid(e) * e;
                    let z = lo + ((r[1] - lo).div_euclid(e) + 1) * e - 1;
                    [a.max(lo), z.min(hi)]
                }
                _ => *r,
            }
        })
        .collect()
}

fn cells_of(b: &[[i128; 2]]) -> f64 {
    b.iter().map(|r| (r[1] - r[0] + 1) as f64).product()
}

fn overlap(a: &[[i128; 2]], b: &[[i128; 2]]) -> bool {
    a.iter().zip(b).all(|(x, y)| x[0] <= y[1] && y[0] <= x[1])
}

fn union(a: &mut Vec<[i128; 2]>, b: &[[i128; 2]]) {
    if a.is_empty() {
        *a = b.to_vec();
        return;
    }
    for (x, y) in a.iter_mut().zip(b) {
        x[0] = x[0].min(y[0]);
        x[1] = x[1].max(y[1]);
    }
}

/// Under a memory budget, a dense consolidation's reads take at most the budget over this.
const DENSE_READ_SHARE: u64 = 2;

/// Under a memory budget, the merged tiles of a sparse consolidation waiting to be filtered
/// and written take at most the budget over this (the input tiles, one per fragment, and the
/// tiles being filtered take the rest).
const SPARSE_BATCH_SHARE: u64 = 4;

fn dense(array: &Array, options: &Options) -> Result<Report> {
    let schema = array.schema();
    let frags = array.fragments();
    let mut bbox: Vec<[i128; 2]> = Vec::new();
    for f in frags {
        let ned = f.footer().non_empty_domain.as_ref().ok_or_else(|| Error::Corrupt {
            file: f.dir(),
            reason: "a dense fragment without a non-empty domain".into(),
        })?;
        union(&mut bbox, &int_box(schema, ned)?);
    }
    let name = consolidated_name(frags)?;
    // libtiledb reads the box expanded to whole tiles and writes every cell of those tiles
    // (fill values where no fragment wrote), with the box as the non-empty domain.
    let tiled = expand_to_tiles(schema, &bbox);
    let mut write = FragmentWrite::dense_consolidation(
        array,
        name.clone(),
        bbox.clone(),
        tiled.clone(),
        Vec::new(),
    )?;
    // Tile rows: ranges of the slowest dimension of the tile order, one row of tiles each.
    let slow = if schema.tile_order == Layout::ColMajor { schema.dimensions.len() - 1 } else { 0 };
    let dim = &schema.dimensions[slow];
    let ext = dim.tile_extent.as_ref().and_then(|e| int_value(dim.datatype, e)).unwrap_or(1).max(1);
    let rows: Vec<[i128; 2]> = {
        let mut out = Vec::new();
        let mut lo = tiled[slow][0];
        while lo <= tiled[slow][1] {
            let hi = lo + ext - 1;
            out.push([lo, hi.min(tiled[slow][1])]);
            lo = hi + 1;
        }
        out
    };
    let attrs: Vec<String> = schema.attributes.iter().map(|a| a.name.clone()).collect();
    let total = rows.len() as u64;
    for (k, row) in rows.iter().enumerate() {
        let mut read = array
            .read()
            .layout(tessera_types::ReadLayout::GlobalOrder)
            .attributes(attrs.iter())
            .with_coordinates(false);
        for (d, dim) in schema.dimensions.iter().enumerate() {
            let r = if d == slow { *row } else { tiled[d] };
            let (mut lo, mut hi) = (Vec::new(), Vec::new());
            crate::read::order::push_int(dim.datatype, r[0], &mut lo);
            crate::read::order::push_int(dim.datatype, r[1], &mut hi);
            read = read.range_bytes(&dim.name, lo, hi);
        }
        match options.memory_budget {
            // A tile row at once.
            None => write.submit(read.execute()?.columns)?,
            // Batches of the read's share of the budget, each written as it comes (the writer
            // holds the tiles not yet complete and those being filtered: the rest).
            Some(b) => {
                for batch in read.memory_budget(b / DENSE_READ_SHARE).batches()? {
                    write.submit(batch?.columns)?;
                }
            }
        }
        if let Some(p) = &options.progress {
            p(k as u64 + 1, total);
        }
    }
    let committed = write
        .finalize()?
        .ok_or_else(|| Error::InvalidWrite("consolidation wrote no cells".into()))?;
    write_vacuum_file(array.storage().as_ref(), &committed, frags)?;
    Ok(report(frags, &committed))
}

// ---------------------------------------------------------------------------------------------
// Sparse

/// The stored fields of the consolidated fragment, in sink order: attributes, dimensions,
/// timestamps, then (with delete metadata) delete timestamps and condition indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Attr(usize),
    Dim(usize),
    Timestamp,
    DeleteTimestamp,
    DeleteIndex,
}

/// One input fragment being merged: its readers and the tile being consumed.
struct Input {
    fragment: Arc<Fragment>,
    /// Its rank among the inputs (larger is newer).
    rank: usize,
    cells: TileCells,
    /// Readers per attribute, per dimension; then timestamps, delete timestamps, indexes.
    attrs: Vec<Option<FieldReader>>,
    dims: Vec<FieldReader>,
    ts: Option<FieldReader>,
    dt: Option<FieldReader>,
    dci: Option<FieldReader>,
    next_tile: u64,
    tile: Option<InputTile>,
}

/// A decoded tile of an input, with what the merge needs per cell.
struct InputTile {
    attrs: Vec<Option<Arc<DecodedTile>>>,
    dims: Vec<Arc<DecodedTile>>,
    /// Per-cell timestamps.
    ts: Vec<u64>,
    /// Per-cell delete timestamp and condition index (`u64::MAX`: not deleted).
    dt: Vec<u64>,
    dci: Vec<u64>,
    /// Global-order keys of every cell (`width` per cell) when no dimension is a string.
    keys: Vec<u64>,
    /// The cells to merge, in order (all of them, or those surviving a purge).
    order: Vec<u32>,
    pos: usize,
}

impl InputTile {
    fn current(&self) -> Option<usize> {
        self.order.get(self.pos).map(|&c| c as usize)
    }
}

fn u64s(t: &DecodedTile) -> Vec<u64> {
    t.data.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())).collect()
}

struct Merger<'a> {
    array: &'a Array,
    schema: &'a ArraySchema,
    order: GlobalOrder,
    /// Keys per cell, when every dimension is fixed-size.
    width: Option<usize>,
    inputs: Vec<Input>,
    deletes: Vec<DeleteCondition>,
    purge: bool,
    fills: Vec<(Vec<u8>, bool)>,
    /// Per attribute: whether the field is var-sized / nullable.
    attr_var: Vec<bool>,
    attr_nullable: Vec<bool>,
    tiles_total: u64,
    tiles_done: u64,
}

impl Merger<'_> {
    fn key_width(&self) -> Option<usize> {
        if self.order.dims.iter().any(|d| d.var) {
            return None;
        }
        Some(if self.order.is_hilbert() {
            1 + self.order.dims.len()
        } else {
            self.order.tile_dims().len() + self.order.dims.len()
        })
    }

    /// Loads the next tile of input `i` (or leaves it without one at its end).
    fn load(&mut self, i: usize) -> Result<()> {
        loop {
            let input = &mut self.inputs[i];
            input.tile = None;
            if input.next_tile >= input.cells.tile_num {
                return Ok(());
            }
            let t = input.next_tile;
            input.next_tile += 1;
            let n = input.cells.get(t);
            let mut jobs: Vec<TileJob<'_>> = Vec::new();
            for r in input
                .attrs
                .iter()
                .flatten()
                .chain(&input.dims)
                .chain(input.ts.iter())
                .chain(input.dt.iter())
                .chain(input.dci.iter())
            {
                jobs.push(TileJob { reader: r, tile: t, cells: n, wanted: None });
            }
            let storage = self.array.storage().as_ref();
            let mut decoded = load_tiles(storage, &jobs)?.into_iter();
            let attrs: Vec<Option<Arc<DecodedTile>>> =
                input.attrs.iter().map(|r| r.as_ref().and_then(|_| decoded.next())).collect();
            let dims: Vec<Arc<DecodedTile>> =
                input.dims.iter().filter_map(|_| decoded.next()).collect();
            let n = n as usize;
            let ts = match &input.ts {
                Some(_) => u64s(&decoded.next().expect("timestamps tile")),
                None => vec![input.fragment.name().t1(); n],
            };
            let old_dt = input.dt.as_ref().and_then(|_| decoded.next());
            let old_dci = input.dci.as_ref().and_then(|_| decoded.next());
            // Which delete removed each cell.
            let (dt, dci) = {
                let schema = self.schema;
                let processed = if input.fragment.footer().has_delete_meta {
                    Some(crate::read::sparse::processed_conditions(storage, &input.fragment)?)
                } else {
                    None
                };
                let info = FragmentDeleteInfo {
                    timestamp_range: input.fragment.name().timestamp_range(),
                    has_timestamps: input.fragment.footer().has_timestamps,
                    processed_conditions: processed.as_deref(),
                };
                let ts_bytes: Vec<u8> = ts.iter().flat_map(|v| v.to_le_bytes()).collect();
                let view = |name: &str| -> Option<ColumnView<'_>> {
                    use tessera_fragment::fields::{
                        DELETE_CONDITION_INDEX, DELETE_TIMESTAMPS, TIMESTAMPS,
                    };
                    fn u64_view(data: &[u8]) -> ColumnView<'_> {
                        ColumnView {
                            datatype: tessera_types::Datatype::UInt64,
                            cell_val_num: 1,
                            data,
                            offsets: None,
                            validity: None,
                        }
                    }
                    match name {
                        TIMESTAMPS => Some(u64_view(&ts_bytes)),
                        DELETE_TIMESTAMPS => old_dt.as_ref().map(|t| u64_view(&t.data)),
                        DELETE_CONDITION_INDEX => old_dci.as_ref().map(|t| u64_view(&t.data)),
                        _ => {
                            if let Some(a) = schema.attributes.iter().position(|a| a.name == name) {
                                let t = attrs[a].as_ref()?;
                                let at = &schema.attributes[a];
                                Some(ColumnView {
                                    datatype: at.datatype,
                                    cell_val_num: at.cell_val_num,
                                    data: &t.data,
                                    offsets: t.offsets.as_deref(),
                                    validity: t.validity.as_deref(),
                                })
                            } else {
                                let d = schema.dimensions.iter().position(|d| d.name == name)?;
                                let t = &dims[d];
                                let dm = &schema.dimensions[d];
                                Some(ColumnView {
                                    datatype: dm.datatype,
                                    cell_val_num: dm.cell_val_num,
                                    data: &t.data,
                                    offsets: t.offsets.as_deref(),
                                    validity: None,
                                })
                            }
                        }
                    }
                };
                let marks = delete_marks_views(&self.deletes, &info, &view, n)?;
                (marks.timestamps, marks.condition_indexes)
            };
            let order: Vec<u32> =
                (0..n as u32).filter(|&c| !self.purge || dt[c as usize] == u64::MAX).collect();
            let mut tile = InputTile { attrs, dims, ts, dt, dci, keys: Vec::new(), order, pos: 0 };
            if let Some(w) = self.width {
                let mut keys = Vec::with_capacity(n * w);
                for c in 0..n {
                    Self::cell_key(&self.order, &tile.dims, c, &mut keys);
                }
                tile.keys = keys;
            }
            self.tiles_done += 1;
            let input = &mut self.inputs[i];
            if !tile.order.is_empty() {
                input.tile = Some(tile);
                return Ok(());
            }
        }
    }

    fn cell_key(order: &GlobalOrder, dims: &[Arc<DecodedTile>], c: usize, out: &mut Vec<u64>) {
        if order.is_hilbert() {
            let coords: Vec<&[u8]> = dims.iter().map(|t| t.cell(c)).collect();
            out.push(order.hilbert_value(&coords));
        } else {
            for d in order.tile_dims() {
                let o = &order.dims[d];
                let (lo, ext) = o.tiling.as_ref().expect("tiled dimension");
                out.push(tile_index(o.datatype, dims[d].cell(c), lo, ext));
            }
        }
        for d in order.cell_dims() {
            out.push(ord_key(order.dims[d].datatype, dims[d].cell(c)));
        }
    }

    /// Compares the current cells of inputs `a` and `b`: global order, then the newest
    /// timestamp first, then the newest fragment first.
    fn cmp(&self, a: usize, b: usize) -> Ordering {
        let (ia, ib) = (&self.inputs[a], &self.inputs[b]);
        let (ta, tb) = (ia.tile.as_ref().expect("a tile"), ib.tile.as_ref().expect("a tile"));
        let (ca, cb) = (ta.current().expect("a cell"), tb.current().expect("a cell"));
        let coords = match self.width {
            Some(w) => ta.keys[ca * w..ca * w + w].cmp(&tb.keys[cb * w..cb * w + w]),
            None => self.cmp_slow(ta, ca, tb, cb),
        };
        coords.then_with(|| tb.ts[cb].cmp(&ta.ts[ca])).then_with(|| ib.rank.cmp(&ia.rank))
    }

    fn cmp_slow(&self, ta: &InputTile, ca: usize, tb: &InputTile, cb: usize) -> Ordering {
        let order = &self.order;
        if order.is_hilbert() {
            let h = |t: &InputTile, c: usize| {
                let coords: Vec<&[u8]> = t.dims.iter().map(|x| x.cell(c)).collect();
                order.hilbert_value(&coords)
            };
            let o = h(ta, ca).cmp(&h(tb, cb));
            if o != Ordering::Equal {
                return o;
            }
        } else {
            for d in order.tile_dims() {
                let o = &order.dims[d];
                let (lo, ext) = o.tiling.as_ref().expect("tiled dimension");
                let x = tile_index(o.datatype, ta.dims[d].cell(ca), lo, ext);
                let y = tile_index(o.datatype, tb.dims[d].cell(cb), lo, ext);
                if x != y {
                    return x.cmp(&y);
                }
            }
        }
        for d in order.cell_dims() {
            let o = &order.dims[d];
            let (x, y) = (ta.dims[d].cell(ca), tb.dims[d].cell(cb));
            let c = if o.var {
                x.iter().map(|&v| v as i8).cmp(y.iter().map(|&v| v as i8))
            } else {
                ord_key(o.datatype, x).cmp(&ord_key(o.datatype, y))
            };
            if c != Ordering::Equal {
                return c;
            }
        }
        Ordering::Equal
    }
}

/// A sparse consolidation. Its tile reads keep their buffers in the read pool as a read's do
/// (`read::pool`): held to a share of the memory budget while it runs, given back at its end
/// (the dense one reads through [`ReadQuery::batches`](crate::read::ReadQuery::batches),
/// which does both).
fn sparse(array: &Array, options: &Options) -> Result<Report> {
    if let Some(b) = options.memory_budget {
        crate::read::pool::limit(b / crate::read::BUDGET_POOL_SHARE);
    }
    let report = sparse_merge(array, options);
    crate::read::pool::release();
    report
}

/// [`sparse`]'s merge of every fragment's cells.
fn sparse_merge(array: &Array, options: &Options) -> Result<Report> {
    let schema = array.schema();
    let frags: Vec<Arc<Fragment>> = array.fragments().to_vec();
    let storage = array.storage().as_ref();
    let deletes: Vec<DeleteCondition> = array
        .directory()
        .deletes
        .iter()
        .map(|d| DeleteCondition::load(storage, d, schema, array.enumerations()))
        .collect::<Result<_>>()?;
    let first_t1 = frags[0].name().t1();
    let mut with_delete_meta = false;
    if !options.purge_deleted {
        with_delete_meta = deletes.iter().any(|d| d.timestamp() >= first_t1)
            || frags.iter().any(|f| f.footer().has_delete_meta);
    }
    let processed: Vec<String> = deletes.iter().map(|d| d.marker().to_owned()).collect();
    let mut inputs = Vec::with_capacity(frags.len());
    let mut tiles_total = 0;
    for (rank, f) in frags.iter().enumerate() {
        let cells = TileCells::of(f)?;
        tiles_total += cells.tile_num;
        let reader = |q| FieldReader::new(storage, f, schema, q);
        let dims = (0..schema.dimensions.len())
            .map(|d| {
                reader(QField::Dim(d))?.ok_or_else(|| Error::Corrupt {
                    file: f.dir(),
                    reason: format!("no coordinates of dimension {d}"),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        inputs.push(Input {
            fragment: f.clone(),
            rank,
            cells,
            attrs: (0..schema.attributes.len())
                .map(|a| reader(QField::Attr(a)))
                .collect::<Result<_>>()?,
            dims,
            ts: reader(QField::Timestamps)?,
            dt: reader(QField::DeleteTimestamps)?,
            dci: reader(QField::DeleteConditionIndex)?,
            next_tile: 0,
            tile: None,
        });
    }
    let order = GlobalOrder::new(schema);
    let fills = (0..schema.attributes.len())
        .map(|a| {
            let f = OutField::attr(schema, a);
            (f.fill_cell(), f.fill_valid)
        })
        .collect();
    let mut m = Merger {
        array,
        schema,
        order,
        width: None,
        inputs,
        deletes,
        purge: options.purge_deleted,
        fills,
        attr_var: schema.attributes.iter().map(|a| a.cell_val_num == CELL_VAL_NUM_VAR).collect(),
        attr_nullable: schema.attributes.iter().map(|a| a.nullable).collect(),
        tiles_total,
        tiles_done: 0,
    };
    m.width = m.key_width();
    let name = consolidated_name(&frags)?;
    let mut sink = FragmentSink::create(
        storage,
        schema,
        array.schema_file_name(),
        name.clone(),
        true,
        with_delete_meta,
    )?;
    // Start every input, then merge with a binary heap of input indexes.
    let mut heap: Vec<usize> = Vec::new();
    for i in 0..m.inputs.len() {
        m.load(i)?;
        if m.inputs[i].tile.is_some() {
            heap_push(&m, &mut heap, i);
        }
    }
    let capacity = schema.capacity.max(1) as usize;
    let outs = out_fields(schema, with_delete_meta);
    let threads = rayon::current_num_threads().max(1);
    let mut batch: Vec<Tile> = Vec::new();
    let mut current = new_tile(&m, &outs, capacity);
    let mut n = 0usize;
    // Bytes of the merged tiles waiting in `batch`.
    let mut batch_bytes = 0u64;
    let batch_budget = options.memory_budget.map_or(u64::MAX, |b| b / SPARSE_BATCH_SHARE);
    while let Some(i) = heap_pop(&m, &mut heap) {
        push_cell(&m, i, &outs, &mut current);
        n += 1;
        if n == capacity {
            current.cell_num = n as u64;
            batch_bytes += tile_bytes(&current);
            batch.push(std::mem::replace(&mut current, new_tile(&m, &outs, capacity)));
            n = 0;
            if batch.len() >= 2 * threads || batch_bytes >= batch_budget {
                batch_bytes = 0;
                sink.write_tiles(std::mem::take(&mut batch))?;
            }
        }
        // Advance input `i`.
        let more = {
            let t = m.inputs[i].tile.as_mut().expect("a tile");
            t.pos += 1;
            t.current().is_some()
        };
        if !more {
            m.load(i)?;
            if let Some(p) = &options.progress {
                p(m.tiles_done, m.tiles_total);
            }
        }
        if m.inputs[i].tile.is_some() {
            heap_push(&m, &mut heap, i);
        }
    }
    if n > 0 {
        current.cell_num = n as u64;
        batch.push(current);
    }
    if batch.is_empty() && sink.tile_num() == 0 {
        // Every cell was purged: no fragment, but the inputs are still obsolete.
        drop(sink);
        return Ok(Report {
            inputs: frags.iter().map(|f| f.name().as_str().to_owned()).collect(),
            ..Report::default()
        });
    }
    sink.write_tiles(batch)?;
    let committed = sink.commit(None, VarMinMaxCopy::PerTile, processed)?;
    write_vacuum_file(storage, &committed, &frags)?;
    Ok(report(&frags, &committed))
}

/// The bytes a merged tile holds (its buffers' capacities).
fn tile_bytes(tile: &Tile) -> u64 {
    tile.fields
        .iter()
        .map(|f| {
            f.data.capacity()
                + f.offsets.as_ref().map_or(0, |o| o.capacity() * 8)
                + f.validity.as_ref().map_or(0, Vec::capacity)
        })
        .sum::<usize>() as u64
}

fn out_fields(schema: &ArraySchema, with_delete_meta: bool) -> Vec<Out> {
    let mut outs: Vec<Out> = (0..schema.attributes.len()).map(Out::Attr).collect();
    outs.extend((0..schema.dimensions.len()).map(Out::Dim));
    outs.push(Out::Timestamp);
    if with_delete_meta {
        outs.push(Out::DeleteTimestamp);
        outs.push(Out::DeleteIndex);
    }
    outs
}

fn new_tile(m: &Merger<'_>, outs: &[Out], capacity: usize) -> Tile {
    let fields = outs
        .iter()
        .map(|o| {
            let (var, nullable, size) = match *o {
                Out::Attr(a) => (m.attr_var[a], m.attr_nullable[a], 8),
                Out::Dim(d) => (m.schema.dimensions[d].cell_val_num == CELL_VAL_NUM_VAR, false, 8),
                _ => (false, false, 8),
            };
            FieldTile {
                data: Vec::with_capacity(capacity * size),
                offsets: var.then(|| Vec::with_capacity(capacity)),
                validity: nullable.then(|| Vec::with_capacity(capacity)),
            }
        })
        .collect();
    Tile { cell_num: 0, fields, slabs: None }
}

fn push_cell(m: &Merger<'_>, i: usize, outs: &[Out], tile: &mut Tile) {
    let t = m.inputs[i].tile.as_ref().expect("a tile");
    let c = t.current().expect("a cell");
    for (o, ft) in outs.iter().zip(&mut tile.fields) {
        let (bytes, valid): (&[u8], Option<bool>) = match *o {
            Out::Attr(a) => match &t.attrs[a] {
                Some(d) => (d.cell(c), d.validity.as_ref().map(|v| v[c] != 0)),
                None => (&m.fills[a].0, Some(m.fills[a].1)),
            },
            Out::Dim(d) => (t.dims[d].cell(c), None),
            Out::Timestamp => {
                ft.data.extend_from_slice(&t.ts[c].to_le_bytes());
                continue;
            }
            Out::DeleteTimestamp => {
                ft.data.extend_from_slice(&t.dt[c].to_le_bytes());
                continue;
            }
            Out::DeleteIndex => {
                ft.data.extend_from_slice(&t.dci[c].to_le_bytes());
                continue;
            }
        };
        if let Some(off) = ft.offsets.as_mut() {
            off.push(ft.data.len() as u64);
        }
        ft.data.extend_from_slice(bytes);
        if let Some(v) = ft.validity.as_mut() {
            v.push(u8::from(valid.unwrap_or(true)));
        }
    }
}

fn heap_less(m: &Merger<'_>, a: usize, b: usize) -> bool {
    m.cmp(a, b) == Ordering::Less
}

fn heap_push(m: &Merger<'_>, heap: &mut Vec<usize>, i: usize) {
    heap.push(i);
    let mut k = heap.len() - 1;
    while k > 0 {
        let p = (k - 1) / 2;
        if heap_less(m, heap[k], heap[p]) {
            heap.swap(k, p);
            k = p;
        } else {
            break;
        }
    }
}

fn heap_pop(m: &Merger<'_>, heap: &mut Vec<usize>) -> Option<usize> {
    if heap.is_empty() {
        return None;
    }
    let top = heap.swap_remove(0);
    let n = heap.len();
    let mut k = 0;
    loop {
        let (l, r) = (2 * k + 1, 2 * k + 2);
        let mut s = k;
        if l < n && heap_less(m, heap[l], heap[s]) {
            s = l;
        }
        if r < n && heap_less(m, heap[r], heap[s]) {
            s = r;
        }
        if s == k {
            break;
        }
        heap.swap(k, s);
        k = s;
    }
    Some(top)
}
