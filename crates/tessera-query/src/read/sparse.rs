//! Sparse reads (libtiledb's `SparseGlobalOrderReader`, `SparseUnorderedWithDupsReader` and,
//! for row- and col-major layouts, the legacy `Reader`).
//!
//! Per fragment, the R-tree gives the tiles that meet the subarray (ranges sorted and merged
//! per dimension, so each cell comes once). Tiles only partly inside the subarray, or of a
//! fragment with per-cell timestamps partly outside the open time range, first have their
//! coordinates (and timestamps) read to select their cells; then the tiles with selected
//! cells have the other fields read. Tiles are loaded in windows (all at once without a
//! memory budget), every window's tiles fetched together and decoded in parallel.
//!
//! Fragments are merged in global order with a k-way heap; among cells with equal
//! coordinates the one with the largest (timestamp, fragment position) wins, the timestamp
//! being the cell's own (`t.tdb`) or its fragment's start time, exactly as libtiledb's
//! `GlobalCmp` with timestamps; with duplicates allowed every copy is returned, newest
//! fragment first. Cells deleted by a consolidation that kept them (`dt.tdb`) are dropped
//! after deduplication, so a deleted newest version hides older ones.
//!
//! Row- and col-major layouts sort the cells by coordinates: without a memory budget after
//! loading every qualifying tile, with one in partitions of the layout's order (see
//! [`partition`]), so that what a read holds stays near the budget; the unordered layout
//! concatenates fragments when no deduplication is needed (duplicates allowed, or fragments
//! that cannot share coordinates), and merges in global order otherwise, as libtiledb does.
//!
//! Query conditions and delete commits (and the delete timestamps of fragments consolidated
//! with deletes kept) are evaluated over whole loaded tiles, one bitmap per tile; as
//! libtiledb does (`post_dedup_bitmap`), the bitmap applies after deduplication, so a newest
//! version that fails the condition or was deleted hides the older ones. Without
//! deduplication the bitmap simply narrows the tile's selection. The fields conditions and
//! deletes read are loaded with the others and not returned. With a condition, tiles whose
//! metadata (min, max, null count) proves that no cell matches are skipped unread, where
//! skipping cannot change deduplication (duplicates allowed, or a fragment without per-cell
//! timestamps overlapping no other).

mod partition;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use rayon::prelude::*;
use tessera_fragment::dim_types;
use tessera_fragment::fields::{DELETE_TIMESTAMPS, TIMESTAMPS};
use tessera_rtree::{DimType, Mbr, RTree, Range, TileOverlap};
use tessera_types::{Datatype, Layout};

use crate::aggregate::{AggField, Cells, Partial, Plan};
use crate::array::Array;
use crate::condition::{
    ColumnView, DeleteApplies, DeleteCondition, FragmentDeleteInfo, QueryCondition,
    apply_deletes_views, delete_fields,
};
use crate::fragment::Fragment;
use crate::read::column::{OutField, Run, Source, copy_runs, gather};
use crate::read::meter::{Held, TileMeter};
use crate::read::order::{GlobalOrder, cmp_bytes, ord_key, retain_in_ranges, tile_index};
use crate::read::points::PointSet;
use crate::read::stats::{ExactStats, FieldMeta, Want};
use crate::read::subarray::Subarray;
use crate::read::tiles::{DecodedTile, FieldReader, QField, TileCells, TileJob, load_tiles};
use crate::result::ReadResult;
use crate::{Error, Result};

/// What removes cells of a sparse read besides the subarray: the query condition and the
/// visible delete (and update) commits.
#[derive(Debug, Default)]
pub(crate) struct SparseFilter {
    /// The query condition.
    pub(crate) condition: Option<QueryCondition>,
    /// The visible delete and update commits, by timestamp.
    pub(crate) deletes: Vec<DeleteCondition>,
    /// The points of a point read: only the tiles whose MBRs hold one are read, and only
    /// the cells at one are kept.
    pub(crate) points: Option<Arc<PointSet>>,
}

/// How results are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Fragment after fragment, tile after tile.
    Concat,
    /// k-way merge in global order.
    Merge,
    /// Sorted by coordinates (row- or col-major): everything loaded at once, or partition
    /// after partition under a memory budget.
    Sort,
}

/// A fragment taking part in a sparse read.
#[derive(Debug)]
struct SFrag {
    /// The fragment.
    fragment: Arc<Fragment>,
    /// Position in the array's fragment order (larger is newer).
    order: usize,
    /// The tiles meeting the subarray, in tile order.
    tiles: Vec<TileOverlap>,
    /// The next tile of `tiles` to load.
    next: usize,
    cells: TileCells,
    /// Readers by field slot.
    readers: Vec<Option<FieldReader>>,
    /// Cells must be filtered by their timestamps (the fragment's range is only partly open).
    partial_ts: bool,
    /// Whether the fragment stores per-cell timestamps.
    has_ts: bool,
    /// The fragment's time range.
    t1: u64,
    t2: u64,
    /// The markers of the deletes a consolidation applied (fragments with delete metadata).
    processed: Option<Vec<String>>,
    /// Whether cells go through the condition, deletes or delete timestamps.
    filtered: bool,
    /// The slots those read.
    filter_slots: Vec<usize>,
    /// Whether no other fragment can hold the coordinates of this one's cells (or
    /// duplicates are allowed), so its cells are never deduplicated against others'.
    alone: bool,
    /// Its position among the fragments of the read (`SparseReader::neds`).
    index: usize,
}

impl SFrag {
    fn delete_info(&self) -> FragmentDeleteInfo<'_> {
        FragmentDeleteInfo {
            timestamp_range: (self.t1, self.t2),
            has_timestamps: self.has_ts,
            processed_conditions: self.processed.as_deref(),
        }
    }
}

/// Comparison keys of the selected cells of a tile, indexed by selection position.
#[derive(Debug, Default)]
struct Keys {
    hilbert: Vec<u64>,
    /// `tiles[k * tile_dims + j]`: tile index of the j-th tiled dimension, in tile order.
    tiles: Vec<u64>,
    /// `coords[k * fixed_dims + j]`: order key of the j-th fixed-size dimension.
    coords: Vec<u64>,
}

/// A tile loaded for a read.
#[derive(Debug)]
struct LoadedTile {
    /// Index in `SparseReader::frags`.
    frag: usize,
    /// The tile's index in its fragment.
    tile: u64,
    /// Which cells (by position in the tile) pass the condition and deletes, when that is
    /// decided after deduplication.
    keep: Option<Vec<bool>>,
    /// Decoded fields by slot.
    fields: Vec<Option<Arc<DecodedTile>>>,
    /// The selected cells (inside the subarray and the open time range), ascending.
    sel: Vec<u32>,
    keys: Keys,
    /// The cell in the fragment's tile of each selected cell, for a tile compacted to some
    /// of its cells (whose selection then indexes the compacted fields); `None`: `sel`.
    origin: Option<Vec<u32>>,
    /// The tile's bytes, counted by the read's meter while it is held.
    held: Option<Held>,
}

impl LoadedTile {
    /// The cell in the fragment's tile of selected cell `k`.
    fn origin(&self, k: usize) -> u32 {
        self.origin.as_ref().map_or(self.sel[k], |o| o[k])
    }

    /// Bytes held: decoded fields, selection, bitmap and keys.
    fn bytes(&self) -> u64 {
        let fields: usize = self
            .fields
            .iter()
            .flatten()
            .map(|d| {
                d.data.len()
                    + d.offsets.as_ref().map_or(0, |o| 8 * o.len())
                    + d.validity.as_ref().map_or(0, |v| v.len())
            })
            .sum();
        let keys = 8 * (self.keys.hilbert.len() + self.keys.tiles.len() + self.keys.coords.len());
        let origin = self.origin.as_ref().map_or(0, |o| 4 * o.len());
        (fields + 4 * self.sel.len() + origin + self.keep.as_ref().map_or(0, Vec::len) + keys)
            as u64
    }
}

/// One result cell: a loaded tile and a position in its selection.
type CellRef = (Arc<LoadedTile>, usize);

/// The loaded tiles of one fragment still to be consumed, and the position in the first.
#[derive(Debug, Default)]
struct Cursor {
    tiles: VecDeque<Arc<LoadedTile>>,
    k: usize,
}

impl Cursor {
    fn current(&self) -> Option<CellRef> {
        self.tiles.front().map(|t| (t.clone(), self.k))
    }

    fn advance(&mut self) {
        if let Some(t) = self.tiles.front() {
            self.k += 1;
            if self.k >= t.sel.len() {
                self.tiles.pop_front();
                self.k = 0;
            }
        }
    }
}

/// What a read compares cells with.
#[derive(Debug)]
struct Cmp {
    order: GlobalOrder,
    /// Slot of each dimension's field.
    dim_slots: Vec<usize>,
    /// Position of each fixed-size dimension among the fixed ones.
    fixed_pos: Vec<Option<usize>>,
    fixed_dims: usize,
    /// Tiled dimensions, in tile order.
    tile_dims: Vec<usize>,
    /// Slot of the timestamps field.
    ts_slot: usize,
}

impl Cmp {
    fn dim(&self, d: usize, a: &LoadedTile, ka: usize, b: &LoadedTile, kb: usize) -> Ordering {
        match self.fixed_pos[d] {
            Some(j) => {
                let n = self.fixed_dims;
                a.keys.coords[ka * n + j].cmp(&b.keys.coords[kb * n + j])
            }
            None => {
                let slot = self.dim_slots[d];
                let (Some(ta), Some(tb)) = (&a.fields[slot], &b.fields[slot]) else {
                    return Ordering::Equal;
                };
                cmp_bytes(ta.cell(a.sel[ka] as usize), tb.cell(b.sel[kb] as usize))
            }
        }
    }

    /// Global order (tile order then cell order, or Hilbert then row-major).
    fn global(&self, a: &LoadedTile, ka: usize, b: &LoadedTile, kb: usize) -> Ordering {
        if self.order.is_hilbert() {
            let o = a.keys.hilbert[ka].cmp(&b.keys.hilbert[kb]);
            if o != Ordering::Equal {
                return o;
            }
            for d in 0..self.order.dims.len() {
                let o = self.dim(d, a, ka, b, kb);
                if o != Ordering::Equal {
                    return o;
                }
            }
            return Ordering::Equal;
        }
        let nt = self.tile_dims.len();
        for j in 0..nt {
            let o = a.keys.tiles[ka * nt + j].cmp(&b.keys.tiles[kb * nt + j]);
            if o != Ordering::Equal {
                return o;
            }
        }
        for d in self.order.cell_dims() {
            let o = self.dim(d, a, ka, b, kb);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Row-major or col-major order of coordinates.
    fn layout(&self, col: bool, a: &LoadedTile, ka: usize, b: &LoadedTile, kb: usize) -> Ordering {
        let n = self.order.dims.len();
        for i in 0..n {
            let d = if col { n - 1 - i } else { i };
            let o = self.dim(d, a, ka, b, kb);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// The (timestamp, fragment position) a cell wins duplicates with.
    fn priority(&self, frags: &[SFrag], t: &LoadedTile, k: usize) -> (u64, usize) {
        let f = &frags[t.frag];
        let ts = if f.has_ts {
            t.fields[self.ts_slot]
                .as_ref()
                .map_or(f.t1, |tile| u64_at(&tile.data, t.sel[k] as usize))
        } else {
            f.t1
        };
        (ts, f.order)
    }
}

fn u64_at(data: &[u8], i: usize) -> u64 {
    let b = &data[i * 8..i * 8 + 8];
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// Decoded bytes per fragment an unbounded concatenation loads at a time (see
/// [`SparseReader::concat_batch`]). Small enough that the allocator hands the memory of one
/// window's tiles to the next (64 MB windows were given back to the kernel and faulted in
/// again: a third more page faults on 10 M points), large enough for a few dozen tiles to
/// decode in parallel.
const CONCAT_WINDOW: u64 = 8 << 20;

/// A sparse read in progress.
#[derive(Debug)]
pub(crate) struct SparseReader<'a> {
    array: &'a Array,
    mode: Mode,
    layout: Layout,
    dims: Vec<DimType>,
    /// Sorted, merged ranges per dimension.
    ranges: Vec<Vec<Range>>,
    /// Order keys of the ranges of fixed-size dimensions.
    range_keys: Vec<Vec<(u64, u64)>>,
    frags: Vec<SFrag>,
    /// The non-empty domain of each fragment of the read (by `SFrag::index`).
    neds: Vec<Mbr>,
    out: Vec<OutField>,
    /// Field slot of each output field.
    out_slots: Vec<usize>,
    /// The fields read, by slot.
    qfields: Vec<QField>,
    cmp: Cmp,
    allows_dups: bool,
    /// Whether cells with equal coordinates are deduplicated.
    dedup: bool,
    /// The query condition and deletes.
    filter: SparseFilter,
    /// Field names conditions and deletes read, with their slots.
    names: Vec<(String, usize)>,
    /// Datatype and values per cell of each slot.
    slot_types: Vec<(Datatype, u32)>,
    open: (u64, u64),
    budget: Option<u64>,
    started: bool,
    cursors: Vec<Cursor>,
    heap: Vec<usize>,
    /// Results decided but not yet returned.
    queue: VecDeque<CellRef>,
    /// Concatenation: the fragment being read.
    concat_frag: usize,
    /// Sorting: every result (of the current partition under a budget), and the next to
    /// return.
    sorted: Option<(Vec<CellRef>, usize)>,
    /// Sorting under a budget: the partitions still to read.
    parts: Option<partition::Partitions>,
    /// A cell taken for a batch that was full.
    pending: Option<CellRef>,
    /// Concatenation under a budget: the tile a full batch stopped in, and the first of its
    /// selected cells the next batch starts from.
    concat_part: Option<(Arc<LoadedTile>, usize)>,
    /// The decoded tile bytes held.
    meter: Arc<TileMeter>,
}

impl<'a> SparseReader<'a> {
    /// Prepares a sparse read of `out` over `subarray` in `layout`, keeping the cells that
    /// pass `filter`. Multi-range subarrays return each cell once, in any layout (libtiledb
    /// refuses them in global order; `docs/cli.md` asks for them).
    ///
    /// # Errors
    /// Storage and metadata errors loading R-trees, tile offsets, processed conditions and
    /// tile metadata.
    pub(crate) fn new(
        array: &'a Array,
        subarray: &Subarray,
        out: Vec<OutField>,
        layout: Layout,
        budget: Option<u64>,
        filter: SparseFilter,
    ) -> Result<Self> {
        let schema = array.schema();
        let dims = dim_types(schema);
        let ranges = subarray.sorted_merged(&dims);
        let range_keys: Vec<Vec<(u64, u64)>> = ranges
            .iter()
            .zip(&dims)
            .map(|(rs, dt)| {
                if dt.var {
                    Vec::new()
                } else {
                    rs.iter()
                        .map(|r| (ord_key(dt.datatype, &r.low), ord_key(dt.datatype, &r.high)))
                        .collect()
                }
            })
            .collect();
        // The bounding box of the subarray (ranges are sorted and disjoint).
        let bbox = Mbr(ranges
            .iter()
            .map(|rs| Range::new(rs[0].low.clone(), rs[rs.len() - 1].high.clone()))
            .collect());
        let order = GlobalOrder::new(schema);
        let allows_dups = schema.allows_duplicates;
        let open = array.timestamp_range();
        let storage = array.storage().as_ref();

        // Fragments meeting the subarray, with their tiles.
        let candidates: Vec<(usize, &Arc<Fragment>)> = array
            .fragments()
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.footer().non_empty_domain.as_ref().is_some_and(|ned| ned.overlaps(&dims, &bbox))
            })
            .collect();
        for (_, f) in &candidates {
            if f.footer().dense {
                return Err(Error::Corrupt {
                    file: f.dir(),
                    reason: "a dense fragment in a sparse array".into(),
                });
            }
        }
        let tiles: Vec<Vec<TileOverlap>> = candidates
            .par_iter()
            .with_min_len(FRAGMENTS_PER_TASK)
            .map(|(_, f)| {
                let rtree = f.rtree(storage)?;
                Ok(match &filter.points {
                    Some(points) => points.tiles(&rtree),
                    None => rtree.query(&dims, &ranges),
                })
            })
            .collect::<Result<_>>()?;
        let mut used: Vec<(usize, Arc<Fragment>, Vec<TileOverlap>)> = candidates
            .into_iter()
            .zip(tiles)
            .filter(|(_, t)| !t.is_empty())
            .map(|((o, f), t)| (o, f.clone(), t))
            .collect();

        // The mode.
        let any_ts = used.iter().any(|(_, f, _)| f.footer().has_timestamps);
        let mode = match layout {
            Layout::RowMajor | Layout::ColMajor => Mode::Sort,
            Layout::GlobalOrder => {
                if used.len() <= 1 && !any_ts {
                    Mode::Concat
                } else {
                    Mode::Merge
                }
            }
            _ => {
                if allows_dups || (!any_ts && disjoint(&dims, &used)) {
                    Mode::Concat
                } else {
                    Mode::Merge
                }
            }
        };
        let dedup = !allows_dups && mode != Mode::Concat;
        // Fragments whose tiles may be skipped on their metadata: no other fragment can hold
        // their coordinates (so skipping cannot let an older version through).
        let skippable: Vec<bool> = (0..used.len())
            .map(|i| {
                allows_dups
                    || (!used[i].1.footer().has_timestamps && overlaps_none(&dims, &used, i))
            })
            .collect();

        // The fields to read, by slot: dimensions, timestamps, delete timestamps, attributes.
        let dim_num = schema.dimensions.len();
        let mut qfields: Vec<QField> = (0..dim_num).map(QField::Dim).collect();
        let ts_slot = qfields.len();
        qfields.push(QField::Timestamps);
        let dt_slot = qfields.len();
        qfields.push(QField::DeleteTimestamps);
        let attr_slot = |qfields: &mut Vec<QField>, a: usize| {
            let q = QField::Attr(a);
            qfields.iter().position(|x| *x == q).unwrap_or_else(|| {
                qfields.push(q);
                qfields.len() - 1
            })
        };
        let mut out_slots = Vec::with_capacity(out.len());
        for f in &out {
            match f.source {
                Source::Dim(d) => out_slots.push(d),
                Source::Attr(a) => out_slots.push(attr_slot(&mut qfields, a)),
            }
        }
        // The fields conditions and deletes read, by name.
        let mut names: Vec<(String, usize)> = Vec::new();
        for (d, dim) in schema.dimensions.iter().enumerate() {
            names.push((dim.name.clone(), d));
        }
        names.push((TIMESTAMPS.to_owned(), ts_slot));
        names.push((DELETE_TIMESTAMPS.to_owned(), dt_slot));
        let mut filter_fields: Vec<&str> = Vec::new();
        if let Some(c) = &filter.condition {
            filter_fields.extend(c.fields());
        }
        for d in &filter.deletes {
            filter_fields.extend(d.stored().fields());
        }
        for name in filter_fields {
            if names.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Some(a) = schema.attributes.iter().position(|x| x.name == name) {
                let slot = attr_slot(&mut qfields, a);
                names.push((name.to_owned(), slot));
            }
        }
        let slot_types: Vec<(Datatype, u32)> = qfields
            .iter()
            .map(|q| match *q {
                QField::Dim(d) => {
                    (schema.dimensions[d].datatype, schema.dimensions[d].cell_val_num)
                }
                QField::Attr(a) => {
                    (schema.attributes[a].datatype, schema.attributes[a].cell_val_num)
                }
                QField::Timestamps | QField::DeleteTimestamps | QField::DeleteConditionIndex => {
                    (Datatype::UInt64, 1)
                }
            })
            .collect();

        let (start, end) = open;
        let filter_ref = &filter;
        let names_ref = &names;
        let neds: Vec<Mbr> = used
            .iter()
            .map(|(_, f, _)| f.footer().non_empty_domain.clone().unwrap_or_else(|| Mbr(Vec::new())))
            .collect();
        let neds_ref = &neds;
        let dims_ref = &dims;
        let built: Vec<SFrag> = used
            .par_drain(..)
            .zip(skippable.into_par_iter())
            .with_min_len(FRAGMENTS_PER_TASK)
            .enumerate()
            .map(|(index, ((o, f, mut tiles), skippable))| {
                let footer = f.footer();
                let (t1, t2) = f.name().timestamp_range();
                let has_ts = footer.has_timestamps;
                let has_dt = footer.has_delete_meta;
                let partial_ts = has_ts && !(start <= t1 && t2 <= end);
                let processed = if has_dt && !filter_ref.deletes.is_empty() {
                    Some(processed_conditions(storage, &f)?)
                } else if has_dt {
                    Some(Vec::new())
                } else {
                    None
                };
                let info = FragmentDeleteInfo {
                    timestamp_range: (t1, t2),
                    has_timestamps: has_ts,
                    processed_conditions: processed.as_deref(),
                };
                let deleted = filter_ref.deletes.iter().any(|d| {
                    matches!(
                        d.applies_to(&info),
                        DeleteApplies::AllCells | DeleteApplies::CellsUpToTimestamp
                    )
                });
                let filtered = filter_ref.condition.is_some() || deleted || has_dt;
                let mut filter_slots: Vec<usize> = Vec::new();
                if filtered {
                    let mut wanted: Vec<&str> = Vec::new();
                    if let Some(c) = &filter_ref.condition {
                        wanted.extend(c.fields());
                    }
                    wanted.extend(delete_fields(&filter_ref.deletes, &info));
                    for w in wanted {
                        if let Some(&(_, s)) = names_ref.iter().find(|(n, _)| n == w)
                            && !filter_slots.contains(&s)
                        {
                            filter_slots.push(s);
                        }
                    }
                }
                // Tiles no cell of which can satisfy the condition (where skipping them cannot
                // change deduplication).
                let cells = TileCells::of(&f)?;
                if let Some(c) = &filter_ref.condition {
                    let alone = if skippable {
                        vec![true; tiles.len()]
                    } else if has_ts {
                        vec![false; tiles.len()]
                    } else {
                        lone_tiles(storage, dims_ref, &f, &tiles, neds_ref, index)?
                    };
                    if alone.iter().any(|&a| a) {
                        prune(storage, &f, c, &cells, &mut tiles, &alone)?;
                    }
                }
                // Coordinates are read to compare cells, to check cells of tiles partly in the
                // subarray, or to return them.
                let coords_needed = mode != Mode::Concat || tiles.iter().any(|t| !t.full);
                let readers = qfields
                    .iter()
                    .enumerate()
                    .map(|(slot, &q)| {
                        let wanted = out_slots.contains(&slot) || filter_slots.contains(&slot);
                        let needed = match q {
                            QField::Dim(_) => coords_needed || wanted,
                            QField::Attr(_) => wanted,
                            QField::Timestamps => has_ts && (partial_ts || dedup || wanted),
                            QField::DeleteTimestamps => has_dt,
                            QField::DeleteConditionIndex => false,
                        };
                        if needed { FieldReader::new(storage, &f, schema, q) } else { Ok(None) }
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(SFrag {
                    fragment: f.clone(),
                    order: o,
                    tiles,
                    next: 0,
                    cells,
                    readers,
                    partial_ts,
                    has_ts,
                    t1,
                    t2,
                    processed,
                    filtered,
                    filter_slots,
                    alone: skippable,
                    index,
                })
            })
            .collect::<Result<_>>()?;

        let mut fixed_pos = Vec::with_capacity(dim_num);
        let mut fixed_dims = 0;
        for d in &dims {
            if d.var {
                fixed_pos.push(None);
            } else {
                fixed_pos.push(Some(fixed_dims));
                fixed_dims += 1;
            }
        }
        let cmp = Cmp {
            tile_dims: order.tile_dims(),
            order,
            dim_slots: (0..dim_num).collect(),
            fixed_pos,
            fixed_dims,
            ts_slot,
        };
        let cursors = built.iter().map(|_| Cursor::default()).collect();
        Ok(SparseReader {
            array,
            mode,
            layout,
            dims,
            ranges,
            range_keys,
            frags: built,
            neds,
            out,
            out_slots,
            qfields,
            cmp,
            allows_dups,
            dedup,
            filter,
            names,
            slot_types,
            open,
            budget,
            started: false,
            cursors,
            heap: Vec::new(),
            queue: VecDeque::new(),
            concat_frag: 0,
            sorted: None,
            parts: None,
            pending: None,
            concat_part: None,
            meter: TileMeter::new(),
        })
    }

    /// The meter of the decoded tile bytes this read holds.
    pub(crate) fn meter(&self) -> Arc<TileMeter> {
        self.meter.clone()
    }

    /// Whether the mode compares cells (keys and all dimensions needed).
    fn needs_keys(&self) -> bool {
        self.mode != Mode::Concat
    }

    /// Loads the next window of tiles of each fragment in `which` into its cursor.
    fn load_windows(&mut self, which: &[usize]) -> Result<()> {
        // An unbounded concatenation still loads a window at a time: each is copied into the
        // result and dropped before the next, so the decoded tiles never all live at once.
        // Under a budget, the batch being built takes three eighths of it (`batch_share`) and
        // the tiles being loaded a quarter: a window's decoded tiles an eighth,
        // the bytes they are decoded from at most as much. A concatenation loads one fragment
        // at a time; a merge holds a window of every fragment, and a batch's cells keep the
        // window before alive.
        let per_frag = match self.budget {
            Some(b) if self.mode == Mode::Concat => (b / 8).max(1),
            Some(b) => (b / 8 / self.frags.len().max(1) as u64).max(1),
            None if self.mode == Mode::Concat => CONCAT_WINDOW,
            None => u64::MAX,
        };
        // (fragment, tile overlap)
        let mut window: Vec<(usize, TileOverlap)> = Vec::new();
        for &f in which {
            let frag = &mut self.frags[f];
            let mut used = 0u64;
            while frag.next < frag.tiles.len() {
                let ov = frag.tiles[frag.next];
                let cells = frag.cells.get(ov.tile);
                let size: u64 =
                    frag.readers.iter().flatten().map(|r| r.decoded_size(ov.tile, cells)).sum();
                if used > 0 && used + size > per_frag {
                    break;
                }
                used += size;
                window.push((f, ov));
                frag.next += 1;
            }
        }
        let loaded = self.load(&window)?;
        for t in loaded {
            self.cursors[t.frag].tiles.push_back(Arc::new(t));
        }
        Ok(())
    }

    /// Loads the tiles of `window`: selection, then the fields of tiles with selected cells,
    /// then comparison keys. Tiles without selected cells are dropped.
    fn load(&self, window: &[(usize, TileOverlap)]) -> Result<Vec<LoadedTile>> {
        let storage = self.array.storage().as_ref();
        let nslots = self.qfields.len();
        let dim_num = self.dims.len();
        let mut tiles: Vec<LoadedTile> = window
            .iter()
            .map(|&(f, ov)| LoadedTile {
                frag: f,
                tile: ov.tile,
                keep: None,
                fields: vec![None; nslots],
                sel: Vec::new(),
                keys: Keys::default(),
                origin: None,
                held: None,
            })
            .collect();
        // Phase A: coordinates and timestamps of tiles whose cells must be checked. With
        // several fixed-size dimensions, the first is loaded alone, then the others decode only
        // the chunks holding cells it keeps (unless a condition or deletes read whole tiles).
        let ts_slot = self.cmp.ts_slot;
        let mut jobs: Vec<TileJob<'_>> = Vec::new();
        let mut dest: Vec<(usize, usize)> = Vec::new();
        let needs_check: Vec<bool> =
            window.iter().map(|&(f, ov)| !ov.full || self.frags[f].partial_ts).collect();
        let split_dims = dim_num > 1 && self.dims.iter().all(|d| !d.var);
        let deferred: Vec<bool> = window
            .iter()
            .map(|&(f, ov)| split_dims && !ov.full && !self.frags[f].filtered)
            .collect();
        for (i, &(f, ov)) in window.iter().enumerate() {
            if !needs_check[i] {
                continue;
            }
            let frag = &self.frags[f];
            let cells = frag.cells.get(ov.tile);
            let mut slots: Vec<usize> = Vec::new();
            if !ov.full {
                slots.extend(0..if deferred[i] { 1 } else { dim_num });
            }
            if frag.partial_ts {
                slots.push(ts_slot);
            }
            for s in slots {
                if let Some(r) = &frag.readers[s] {
                    jobs.push(TileJob { reader: r, tile: ov.tile, cells, wanted: None });
                    dest.push((i, s));
                }
            }
        }
        for ((i, s), t) in dest.into_iter().zip(load_tiles(storage, &jobs)?) {
            tiles[i].fields[s] = Some(t);
        }
        // The other dimensions of deferred tiles: (tile, cell runs the first dimension keeps).
        let mut kept_runs: Vec<(usize, Vec<std::ops::Range<u64>>)> = Vec::new();
        for (i, &(f, ov)) in window.iter().enumerate() {
            if !deferred[i] {
                continue;
            }
            let cells = self.frags[f].cells.get(ov.tile) as usize;
            let mut keep = vec![true; cells];
            if let Some(first) = &tiles[i].fields[0] {
                retain_in_ranges(
                    self.dims[0].datatype,
                    &first.data,
                    &self.range_keys[0],
                    &mut keep,
                );
                if let Some(points) = &self.filter.points {
                    points.retain_dim(0, &first.data, &mut keep);
                }
            }
            kept_runs.push((i, runs_of(&keep)));
        }
        self.load_wanted(&mut tiles, window, &kept_runs, |_, s| s > 0 && s < dim_num)?;
        let mut window_held = Vec::with_capacity(2);
        window_held.push(self.meter.hold(tiles.iter().map(LoadedTile::bytes).sum()));
        let min_len = tiles_per_task(window.len());
        tiles
            .par_iter_mut()
            .zip(window.par_iter())
            .zip(needs_check.par_iter())
            .with_min_len(min_len)
            .for_each(|((t, &(f, ov)), &check)| {
                let cells = self.frags[f].cells.get(ov.tile) as u32;
                t.sel = if check { self.select(t, &ov, cells) } else { (0..cells).collect() };
            });
        // Phase B: every other field of the tiles with selected cells; of a tile with some
        // cells selected, only the chunks holding them (unless a condition or deletes read
        // whole tiles).
        let keys = self.needs_keys();
        let mut sel_runs: Vec<(usize, Vec<std::ops::Range<u64>>)> = Vec::new();
        for (i, &(f, ov)) in window.iter().enumerate() {
            let t = &tiles[i];
            if t.sel.is_empty() {
                continue;
            }
            let frag = &self.frags[f];
            let whole = t.sel.len() as u64 == frag.cells.get(ov.tile);
            let runs = if whole || frag.filtered {
                std::iter::once(0..frag.cells.get(ov.tile)).collect()
            } else {
                let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
                for &c in &t.sel {
                    let c = u64::from(c);
                    match runs.last_mut() {
                        Some(r) if r.end == c => r.end = c + 1,
                        _ => runs.push(c..c + 1),
                    }
                }
                runs
            };
            sel_runs.push((i, runs));
        }
        let before: u64 = tiles.iter().map(LoadedTile::bytes).sum();
        self.load_wanted(&mut tiles, window, &sel_runs, |f, s| match self.qfields[s] {
            QField::Dim(_) => {
                keys || self.out_slots.contains(&s) || self.frags[f].filter_slots.contains(&s)
            }
            _ => true,
        })?;
        let after: u64 = tiles.iter().map(LoadedTile::bytes).sum();
        window_held.push(self.meter.hold(after.saturating_sub(before)));
        tiles
            .par_iter_mut()
            .with_min_len(min_len)
            .map(|t| self.filter_tile(t))
            .collect::<Result<()>>()?;
        tiles.retain(|t| !t.sel.is_empty());
        if keys {
            tiles.par_iter_mut().with_min_len(min_len).for_each(|t| self.compute_keys(t));
        }
        // From the window to each tile kept.
        drop(window_held);
        for t in &mut tiles {
            t.held = Some(self.meter.hold(t.bytes()));
        }
        Ok(tiles)
    }

    /// Loads, for each `(tile, cell runs)` of `runs`, the fields `want(fragment, slot)` names
    /// that the tile does not have yet; fixed-size ones decode only the chunks holding the
    /// runs' cells (the rest of the tile left zero: only those cells are read afterwards).
    /// Tiles whose runs are empty load nothing.
    fn load_wanted(
        &self,
        tiles: &mut [LoadedTile],
        window: &[(usize, TileOverlap)],
        runs: &[(usize, Vec<std::ops::Range<u64>>)],
        want: impl Fn(usize, usize) -> bool,
    ) -> Result<()> {
        let storage = self.array.storage().as_ref();
        // (tile, slot, byte ranges or None for the whole tile)
        let mut plan: Vec<(usize, usize, Option<CellBytes>)> = Vec::new();
        for (i, cell_runs) in runs {
            let (f, ov) = window[*i];
            let frag = &self.frags[f];
            let cells = frag.cells.get(ov.tile);
            if cell_runs.is_empty() {
                continue;
            }
            let whole = cell_runs.len() == 1 && cell_runs[0] == (0..cells);
            for (s, r) in frag.readers.iter().enumerate() {
                let Some(r) = r else { continue };
                if tiles[*i].fields[s].is_some() || !want(f, s) {
                    continue;
                }
                let bytes = match r.fixed_cell_size() {
                    Some(size) if !whole => {
                        Some(cell_runs.iter().map(|c| c.start * size..c.end * size).collect())
                    }
                    _ => None,
                };
                plan.push((*i, s, bytes));
            }
        }
        let jobs: Vec<TileJob<'_>> = plan
            .iter()
            .filter_map(|(i, s, bytes)| {
                let (f, ov) = window[*i];
                let frag = &self.frags[f];
                frag.readers[*s].as_ref().map(|r| TileJob {
                    reader: r,
                    tile: ov.tile,
                    cells: frag.cells.get(ov.tile),
                    wanted: bytes.as_deref(),
                })
            })
            .collect();
        for ((i, s, _), t) in plan.iter().zip(load_tiles(storage, &jobs)?) {
            tiles[*i].fields[*s] = Some(t);
        }
        Ok(())
    }

    /// The cells of a tile inside the subarray (when `ov` is partial) and the open time range
    /// (when the fragment's range is only partly open).
    fn select(&self, t: &LoadedTile, ov: &TileOverlap, cells: u32) -> Vec<u32> {
        let frag = &self.frags[t.frag];
        let mut keep = vec![true; cells as usize];
        if !ov.full {
            for (d, dt) in self.dims.iter().enumerate() {
                let Some(tile) = &t.fields[d] else { continue };
                let ranges = &self.ranges[d];
                if dt.var {
                    for (c, k) in keep.iter_mut().enumerate() {
                        if *k {
                            let v = tile.cell(c);
                            *k = ranges.iter().any(|r| {
                                cmp_bytes(v, &r.low) != Ordering::Less
                                    && cmp_bytes(v, &r.high) != Ordering::Greater
                            });
                        }
                    }
                } else {
                    retain_in_ranges(dt.datatype, &tile.data, &self.range_keys[d], &mut keep);
                }
            }
        }
        if let Some(points) = &self.filter.points {
            // The cells at a point asked (every tile of a point read is partial).
            let mut key = Vec::new();
            for (c, k) in keep.iter_mut().enumerate() {
                if *k {
                    let coord = |d: usize| t.fields[d].as_ref().map_or(&[][..], |x| x.cell(c));
                    *k = points.find(coord, &mut key).is_some();
                }
            }
        }
        if frag.partial_ts
            && let Some(ts) = &t.fields[self.cmp.ts_slot]
        {
            let (start, end) = self.open;
            for (c, k) in keep.iter_mut().enumerate() {
                if *k {
                    let v = u64_at(&ts.data, c);
                    *k = start <= v && v <= end;
                }
            }
        }
        keep.iter().enumerate().filter(|(_, k)| **k).map(|(c, _)| c as u32).collect()
    }

    /// Computes the comparison keys of the selected cells of `t`.
    fn compute_keys(&self, t: &mut LoadedTile) {
        let order = &self.cmp.order;
        let n = t.sel.len();
        let dim_tiles: Vec<Option<&Arc<DecodedTile>>> =
            (0..self.dims.len()).map(|d| t.fields[d].as_ref()).collect();
        let mut keys = Keys::default();
        if self.cmp.fixed_dims > 0 {
            keys.coords.reserve(n * self.cmp.fixed_dims);
        }
        let hilbert = order.is_hilbert() && self.mode == Mode::Merge;
        let tiled = !order.is_hilbert() && self.mode == Mode::Merge;
        let mut coords: Vec<&[u8]> = Vec::with_capacity(self.dims.len());
        for &c in &t.sel {
            let c = c as usize;
            for (d, dt) in self.dims.iter().enumerate() {
                if !dt.var {
                    let v = dim_tiles[d].map_or(&[][..], |x| x.cell(c));
                    keys.coords.push(if v.is_empty() { 0 } else { ord_key(dt.datatype, v) });
                }
            }
            if hilbert {
                coords.clear();
                coords.extend(dim_tiles.iter().map(|x| x.map_or(&[][..], |x| x.cell(c))));
                keys.hilbert.push(order.hilbert_value(&coords));
            }
            if tiled {
                for &d in &self.cmp.tile_dims {
                    let dim = &order.dims[d];
                    if let (Some((lo, ext)), Some(x)) = (&dim.tiling, dim_tiles[d]) {
                        keys.tiles.push(tile_index(dim.datatype, x.cell(c), lo, ext));
                    } else {
                        keys.tiles.push(0);
                    }
                }
            }
        }
        t.keys = keys;
    }

    /// Whether a cell that won deduplication is returned: it passes the query condition and
    /// the deletes (libtiledb's post-deduplication bitmap). Without deduplication the tile's
    /// selection holds only such cells already.
    fn keep_after_dedup(&self, t: &LoadedTile, k: usize) -> bool {
        t.keep.as_ref().is_none_or(|keep| keep[t.sel[k] as usize])
    }

    /// The view of field `name` in a loaded tile's fields, for conditions and deletes.
    fn view_of<'t>(
        &self,
        fields: &'t [Option<Arc<DecodedTile>>],
        name: &str,
    ) -> Option<ColumnView<'t>> {
        let &(_, s) = self.names.iter().find(|(n, _)| n == name)?;
        let d = fields[s].as_ref()?;
        let (datatype, cell_val_num) = self.slot_types[s];
        Some(ColumnView {
            datatype,
            cell_val_num,
            data: &d.data,
            offsets: d.offsets.as_deref(),
            validity: d.validity.as_deref(),
        })
    }

    /// Evaluates the condition and deletes over the whole of tile `t` (tile `tile` of its
    /// fragment): with deduplication the result is kept for after it, otherwise the
    /// selection is narrowed now.
    fn filter_tile(&self, t: &mut LoadedTile) -> Result<()> {
        let frag = &self.frags[t.frag];
        if !frag.filtered || t.sel.is_empty() {
            return Ok(());
        }
        let n = frag.cells.get(t.tile) as usize;
        let mut keep = vec![true; n];
        {
            let fields = &t.fields;
            let col = |name: &str| self.view_of(fields, name);
            if let Some(c) = &self.filter.condition {
                c.evaluate_views(&col, &mut keep)?;
            }
            let info = frag.delete_info();
            apply_deletes_views(&self.filter.deletes, &info, self.open.1, &col, &mut keep)?;
        }
        if self.dedup {
            t.keep = Some(keep);
        } else {
            t.sel.retain(|&c| keep[c as usize]);
        }
        Ok(())
    }

    /// Starts the read: loads the first windows.
    fn start(&mut self) -> Result<()> {
        self.started = true;
        match self.mode {
            // Fragment after fragment, window after window (`concat_batch`, `ensure`).
            Mode::Concat => Ok(()),
            Mode::Merge => {
                let all: Vec<usize> = (0..self.frags.len()).collect();
                self.load_windows(&all)?;
                for f in 0..self.frags.len() {
                    self.ensure(f)?;
                    if !self.cursors[f].tiles.is_empty() {
                        self.heap_push(f);
                    }
                }
                Ok(())
            }
            Mode::Sort if self.budget.is_some() => {
                self.parts = Some(partition::Partitions::new(self)?);
                self.next_partition()?;
                Ok(())
            }
            Mode::Sort => {
                let all: Vec<usize> = (0..self.frags.len()).collect();
                self.load_windows(&all)?;
                let mut cells: Vec<CellRef> = Vec::new();
                for c in &mut self.cursors {
                    for t in c.tiles.drain(..) {
                        cells.extend((0..t.sel.len()).map(|k| (t.clone(), k)));
                    }
                }
                self.sort_cells(&mut cells);
                self.sorted = Some((cells, 0));
                Ok(())
            }
        }
    }

    /// Sorts `cells` in the layout (row- or col-major), keeps the winner of each group of
    /// equal coordinates (every copy, newest fragment first, with duplicates allowed), then
    /// the cells passing the condition and deletes.
    fn sort_cells(&self, cells: &mut Vec<CellRef>) {
        let col = self.layout == Layout::ColMajor;
        let cmp = &self.cmp;
        let frags = &self.frags;
        let dedup = !self.allows_dups;
        cells.par_sort_by(|(a, ka), (b, kb)| {
            cmp.layout(col, a, *ka, b, *kb)
                .then_with(|| {
                    // Winners first among equal coordinates; with duplicates, newest fragment
                    // first.
                    let pa = cmp.priority(frags, a, *ka);
                    let pb = cmp.priority(frags, b, *kb);
                    if dedup { pb.cmp(&pa) } else { pb.1.cmp(&pa.1) }
                })
                // Then in stored order (copies in one fragment).
                .then_with(|| (a.tile, a.origin(*ka)).cmp(&(b.tile, b.origin(*kb))))
        });
        if dedup {
            cells.dedup_by(|(b, kb), (a, ka)| cmp.layout(col, a, *ka, b, *kb).is_eq());
        }
        cells.retain(|(t, k)| self.keep_after_dedup(t, *k));
    }

    /// Makes sure fragment `f`'s cursor has a tile, loading its next window if needed.
    fn ensure(&mut self, f: usize) -> Result<()> {
        while self.cursors[f].tiles.is_empty() && self.frags[f].next < self.frags[f].tiles.len() {
            self.load_windows(&[f])?;
        }
        Ok(())
    }

    fn heap_less(&self, a: usize, b: usize) -> bool {
        let (Some(ta), Some(tb)) = (self.cursors[a].tiles.front(), self.cursors[b].tiles.front())
        else {
            return false;
        };
        match self.cmp.global(ta, self.cursors[a].k, tb, self.cursors[b].k) {
            Ordering::Less => true,
            Ordering::Greater => false,
            // Newer fragments first among equal coordinates.
            Ordering::Equal => self.frags[a].order > self.frags[b].order,
        }
    }

    fn heap_push(&mut self, c: usize) {
        self.heap.push(c);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let p = (i - 1) / 2;
            if self.heap_less(self.heap[i], self.heap[p]) {
                self.heap.swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    fn heap_pop(&mut self) -> Option<usize> {
        if self.heap.is_empty() {
            return None;
        }
        let last = self.heap.len() - 1;
        self.heap.swap(0, last);
        let top = self.heap.pop();
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap_less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.heap_less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                break;
            }
            self.heap.swap(i, m);
            i = m;
        }
        top
    }

    /// Advances cursor `c` past its current cell, loading more tiles when needed.
    fn step(&mut self, c: usize) -> Result<()> {
        self.cursors[c].advance();
        self.ensure(c)
    }

    /// Merges the next group of cells with equal coordinates into the queue.
    fn merge_next(&mut self) -> Result<bool> {
        let Some(c) = self.heap_pop() else { return Ok(false) };
        let Some(first) = self.cursors[c].current() else { return Ok(false) };
        let mut group: Vec<CellRef> = vec![first.clone()];
        let same = |s: &Self, x: &CellRef| s.cmp.global(&first.0, first.1, &x.0, x.1).is_eq();
        self.step(c)?;
        // Equal coordinates later in the same fragment (consolidated with timestamps, or
        // duplicates).
        while let Some(x) = self.cursors[c].current() {
            if !same(self, &x) {
                break;
            }
            group.push(x);
            self.step(c)?;
        }
        if self.cursors[c].current().is_some() {
            self.heap_push(c);
        }
        // Equal coordinates in other fragments.
        while let Some(&top) = self.heap.first() {
            let Some(x) = self.cursors[top].current() else { break };
            if !same(self, &x) {
                break;
            }
            let top = self.heap_pop().unwrap_or(top);
            while let Some(x) = self.cursors[top].current() {
                if !same(self, &x) {
                    break;
                }
                group.push(x);
                self.step(top)?;
            }
            if self.cursors[top].current().is_some() {
                self.heap_push(top);
            }
        }
        if self.allows_dups {
            // Newest fragment first, stored order within a fragment.
            let frags = &self.frags;
            group.sort_by(|(a, _), (b, _)| frags[b.frag].order.cmp(&frags[a.frag].order));
            for x in group {
                if self.keep_after_dedup(&x.0, x.1) {
                    self.queue.push_back(x);
                }
            }
        } else {
            let mut best = 0;
            let mut best_p = self.cmp.priority(&self.frags, &group[0].0, group[0].1);
            for (i, (t, k)) in group.iter().enumerate().skip(1) {
                let p = self.cmp.priority(&self.frags, t, *k);
                if p > best_p {
                    best = i;
                    best_p = p;
                }
            }
            let (t, k) = group.swap_remove(best);
            if self.keep_after_dedup(&t, k) {
                self.queue.push_back((t, k));
            }
        }
        Ok(true)
    }

    /// Concatenation: queues the cells of the next tile.
    fn concat_next(&mut self) -> Result<bool> {
        loop {
            let f = self.concat_frag;
            if f >= self.frags.len() {
                return Ok(false);
            }
            self.ensure(f)?;
            let Some(t) = self.cursors[f].tiles.pop_front() else {
                self.concat_frag += 1;
                continue;
            };
            for k in 0..t.sel.len() {
                if self.keep_after_dedup(&t, k) {
                    self.queue.push_back((t.clone(), k));
                }
            }
            return Ok(true);
        }
    }

    /// The next result cell.
    fn next_cell(&mut self) -> Result<Option<CellRef>> {
        if !self.started {
            self.start()?;
        }
        if let Some(c) = self.pending.take() {
            return Ok(Some(c));
        }
        while let Some((cells, i)) = &mut self.sorted {
            if let Some(c) = cells.get(*i).cloned() {
                *i += 1;
                return Ok(Some(c));
            }
            if !self.next_partition()? {
                return Ok(None);
            }
        }
        loop {
            if let Some(c) = self.queue.pop_front() {
                return Ok(Some(c));
            }
            let more = match self.mode {
                Mode::Concat => self.concat_next()?,
                _ => self.merge_next()?,
            };
            if !more {
                return Ok(None);
            }
        }
    }

    /// Aggregates the cells of the read (see [`crate::aggregate`]): the attributes read are
    /// `plan`'s fields, in order. Whole tiles inside the subarray of fragments that no
    /// condition, delete or other fragment affects are answered from tile metadata when
    /// `use_metadata` and the metadata is exact for them. One partial per tile, folded in
    /// (fragment, tile) order.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode; condition errors.
    pub(crate) fn aggregate(&mut self, plan: &Plan, use_metadata: bool) -> Result<Partial> {
        let mut parts: BTreeMap<(usize, u64), Partial> = BTreeMap::new();
        if use_metadata {
            let storage = self.array.storage().as_ref();
            let (dims, neds) = (&self.dims, &self.neds);
            let found: Vec<Vec<((usize, u64), Partial)>> = self
                .frags
                .par_iter_mut()
                .map(|frag| tiles_from_metadata(storage, plan, frag, dims, neds))
                .collect::<Result<_>>()?;
            parts.extend(found.into_iter().flatten());
        }
        match self.mode {
            Mode::Concat => {
                self.started = true;
                for f in 0..self.frags.len() {
                    loop {
                        self.ensure(f)?;
                        if self.cursors[f].tiles.is_empty() {
                            break;
                        }
                        let tiles: Vec<Arc<LoadedTile>> = self.cursors[f].tiles.drain(..).collect();
                        let done: Vec<((usize, u64), Partial)> = tiles
                            .par_iter()
                            .map(|t| {
                                let mut p = Partial::new(plan);
                                self.scan_tile(plan, t, Cells::List(&t.sel), &mut p);
                                ((self.frags[t.frag].order, t.tile), p)
                            })
                            .collect();
                        for (k, p) in done {
                            merge_into(&mut parts, plan, k, &p);
                        }
                    }
                }
            }
            Mode::Merge | Mode::Sort => {
                let mut group: Vec<u32> = Vec::new();
                let mut current: Option<Arc<LoadedTile>> = None;
                loop {
                    let next = self.next_cell()?;
                    let same = match (&next, &current) {
                        (Some((t, _)), Some(c)) => Arc::ptr_eq(t, c),
                        _ => false,
                    };
                    if !same {
                        if let Some(c) = current.take() {
                            // Into the tile's partial: its cells are aggregated in order.
                            let key = (self.frags[c.frag].order, c.tile);
                            let p = parts.entry(key).or_insert_with(|| Partial::new(plan));
                            self.scan_tile(plan, &c, Cells::List(&group), p);
                        }
                        group.clear();
                    }
                    let Some((t, k)) = next else { break };
                    group.push(t.sel[k]);
                    if current.is_none() {
                        current = Some(t);
                    }
                }
            }
        }
        let mut total = Partial::new(plan);
        for p in parts.values() {
            total.merge(plan, p);
        }
        Ok(total)
    }

    /// Adds `cells` of loaded tile `t` to `part`.
    fn scan_tile(&self, plan: &Plan, t: &LoadedTile, cells: Cells<'_>, part: &mut Partial) {
        let n = match cells {
            Cells::Range(s, e) => (e - s) as u64,
            Cells::List(l) => l.len() as u64,
            Cells::Masked(_, m) => m.iter().filter(|&&k| k).count() as u64,
        };
        part.add_cells(n);
        for f in 0..plan.fields.len() {
            let s = self.out_slots[f];
            let (datatype, cell_val_num) = self.slot_types[s];
            let view = t.fields[s].as_ref().map(|d| ColumnView {
                datatype,
                cell_val_num,
                data: &d.data,
                offsets: d.offsets.as_deref(),
                validity: d.validity.as_deref(),
            });
            part.scan(plan, f, view.as_ref(), cells);
        }
    }

    /// Result bytes of one cell.
    fn cell_bytes(&self, t: &LoadedTile, k: usize) -> u64 {
        let c = t.sel[k] as usize;
        self.out
            .iter()
            .zip(&self.out_slots)
            .map(|(f, &s)| {
                let mut b = f.fixed_bytes_per_cell();
                if f.is_var() {
                    b += match &t.fields[s] {
                        Some(x) => x.cells_range(c, 1).len() as u64,
                        None => f.fill.len() as u64,
                    };
                }
                b
            })
            .sum()
    }

    /// Appends the next batch to `out` (whose columns are those of the read); `false` when
    /// every cell was returned.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode.
    pub(crate) fn next_batch(&mut self, out: &mut ReadResult) -> Result<bool> {
        if self.mode == Mode::Concat && self.pending.is_none() {
            if !self.started {
                self.start()?;
            }
            if self.queue.is_empty() {
                return match self.budget {
                    None => self.concat_batch(out),
                    Some(b) => self.concat_budget_batch(out, batch_share(b)),
                };
            }
        }
        let mut cells: Vec<CellRef> = Vec::new();
        let mut used = 0u64;
        loop {
            // A batch ends with its partition, so that reading the next one holds no tile
            // of this one.
            if !cells.is_empty() && self.partition_done() {
                break;
            }
            let Some(c) = self.next_cell()? else { break };
            if let Some(budget) = self.budget {
                // The batch's half of the budget, with the reference each cell takes until
                // the batch is built.
                let b = self.cell_bytes(&c.0, c.1) + size_of::<CellRef>() as u64;
                if !cells.is_empty() && used + b > batch_share(budget) {
                    self.pending = Some(c);
                    break;
                }
                used += b;
            }
            cells.push(c);
        }
        if cells.is_empty() {
            return Ok(false);
        }
        self.build(&cells, out);
        Ok(true)
    }

    /// Concatenation without a budget: appends every remaining cell to `out`, tile after
    /// tile, each tile's kept cells as runs of consecutive cells (no per-cell bookkeeping).
    /// Tiles are loaded a window at a time ([`CONCAT_WINDOW`] decoded bytes per fragment),
    /// each window copied and dropped before the next is loaded, into columns reserved
    /// once for every cell the remaining tiles hold.
    fn concat_batch(&mut self, out: &mut ReadResult) -> Result<bool> {
        self.reserve_concat(out);
        let mut any = false;
        loop {
            let mut tiles: Vec<Arc<LoadedTile>> = Vec::new();
            let mut runs: Vec<Run> = Vec::new();
            let mut n = 0u64;
            let mut bytes = 0u64;
            loop {
                let f = self.concat_frag;
                if f >= self.frags.len() {
                    break;
                }
                // Copy what the loaded windows gave before loading another one.
                if self.cursors[f].tiles.is_empty() && bytes >= CONCAT_WINDOW / 4 {
                    break;
                }
                self.ensure(f)?;
                let Some(t) = self.cursors[f].tiles.pop_front() else {
                    self.concat_frag += 1;
                    continue;
                };
                bytes += t.bytes();
                let slot = tiles.len() as u32;
                let sel = &t.sel;
                let mut i = 0;
                while i < sel.len() {
                    if !self.keep_after_dedup(&t, i) {
                        i += 1;
                        continue;
                    }
                    let first = sel[i];
                    let mut len = 1;
                    while i + len < sel.len()
                        && u64::from(sel[i + len]) == u64::from(first) + len as u64
                        && self.keep_after_dedup(&t, i + len)
                    {
                        len += 1;
                    }
                    runs.push(Run { slot, src: u64::from(first), dst: n, len: len as u64 });
                    n += len as u64;
                    i += len;
                }
                tiles.push(t);
            }
            if tiles.is_empty() {
                return Ok(any);
            }
            if n > 0 {
                any = true;
                self.append_runs(out, &tiles, &runs, n);
            }
        }
    }

    /// Appends the `n` cells of `runs` (over `tiles`) to every column of `out`, the columns
    /// in parallel.
    fn append_runs(&self, out: &mut ReadResult, tiles: &[Arc<LoadedTile>], runs: &[Run], n: u64) {
        out.columns
            .par_iter_mut()
            .zip(self.out.par_iter().zip(self.out_slots.par_iter()))
            .with_min_len(columns_per_task(n, self.out.len()))
            .for_each(|(col, (f, &s))| {
                let field_tiles: Vec<Option<Arc<DecodedTile>>> =
                    tiles.iter().map(|t| t.fields[s].clone()).collect();
                copy_runs(f, col, runs, &field_tiles);
            });
    }

    /// Concatenation under a budget: appends to `out` the next cells, in runs of consecutive
    /// cells of each tile, until their result bytes would pass `budget` (at least one cell);
    /// a tile the batch ends in is kept for the next batch. `false` when every cell was
    /// returned.
    fn concat_budget_batch(&mut self, out: &mut ReadResult, budget: u64) -> Result<bool> {
        let fixed: u64 = self.out.iter().map(OutField::fixed_bytes_per_cell).sum();
        let any_var = self.out.iter().any(OutField::is_var);
        let mut used = 0u64;
        let mut total = 0u64;
        // Room for the batch's fixed-size values, so that no column grows by copying (pages
        // reserved but never written are not memory the process holds).
        if let Some(cells) = budget.checked_div(fixed) {
            let cells = usize::try_from(cells + 1).unwrap_or(usize::MAX);
            for (col, f) in out.columns.iter_mut().zip(&self.out) {
                if !f.is_var() {
                    let _ = col.data.try_reserve(cells.saturating_mul(f.cell_size()));
                }
                if let Some(v) = &mut col.validity {
                    let _ = v.try_reserve(cells);
                }
            }
        }
        // Segments: the cells of the tiles loaded so far are copied before another window is
        // loaded, so that the batch never holds two windows.
        let mut full = false;
        while !full {
            let mut tiles: Vec<Arc<LoadedTile>> = Vec::new();
            let mut runs: Vec<Run> = Vec::new();
            let mut n = 0u64;
            loop {
                let (t, mut i) = match self.concat_part.take() {
                    Some(part) => part,
                    None => {
                        let f = self.concat_frag;
                        if f >= self.frags.len() {
                            full = true;
                            break;
                        }
                        if self.cursors[f].tiles.is_empty() && !tiles.is_empty() {
                            // Copy this window's cells before loading the next.
                            break;
                        }
                        self.ensure(f)?;
                        let Some(t) = self.cursors[f].tiles.pop_front() else {
                            self.concat_frag += 1;
                            continue;
                        };
                        (t, 0)
                    }
                };
                let slot = tiles.len() as u32;
                let sel = &t.sel;
                while i < sel.len() {
                    if !self.keep_after_dedup(&t, i) {
                        i += 1;
                        continue;
                    }
                    let first = sel[i];
                    let mut len = 0usize;
                    while i + len < sel.len()
                        && u64::from(sel[i + len]) == u64::from(first) + len as u64
                        && self.keep_after_dedup(&t, i + len)
                    {
                        let b = if any_var { self.cell_bytes(&t, i + len) } else { fixed };
                        if total + n + (len as u64) > 0 && used + b > budget {
                            break;
                        }
                        used += b;
                        len += 1;
                    }
                    if len > 0 {
                        runs.push(Run { slot, src: u64::from(first), dst: n, len: len as u64 });
                        n += len as u64;
                        i += len;
                    }
                    // A run cut short by the budget (or a first cell that does not fit).
                    if i < sel.len() && (len == 0 || used >= budget) {
                        self.concat_part = Some((t.clone(), i));
                        full = true;
                        break;
                    }
                }
                tiles.push(t);
                if full || used >= budget {
                    full = true;
                    break;
                }
            }
            if n > 0 {
                self.append_runs(out, &tiles, &runs, n);
                total += n;
            }
        }
        Ok(total > 0)
    }

    /// Reserves room in `out` for every cell of the tiles a concatenation has still to read
    /// (an upper bound: tiles partly outside the subarray count whole), so that the columns
    /// grow without reallocating. Var-sized values are left to grow.
    fn reserve_concat(&self, out: &mut ReadResult) {
        let cells: u64 = self
            .frags
            .iter()
            .skip(self.concat_frag)
            .map(|f| f.tiles[f.next..].iter().map(|ov| f.cells.get(ov.tile)).sum::<u64>())
            .sum::<u64>()
            + self.cursors.iter().flat_map(|c| &c.tiles).map(|t| t.sel.len() as u64).sum::<u64>();
        let Ok(cells) = usize::try_from(cells) else { return };
        // Cell counts come from fragment metadata: a room that cannot be had (a corrupt
        // count) is simply not reserved, and the columns grow as cells arrive.
        for (col, f) in out.columns.iter_mut().zip(&self.out) {
            if f.is_var() {
                let _ = col.offsets.get_or_insert_with(Vec::new).try_reserve(cells);
            } else {
                let size = f.datatype.size().saturating_mul(f.cell_val_num as usize);
                let _ = col.data.try_reserve(cells.saturating_mul(size));
            }
            if let Some(v) = &mut col.validity {
                let _ = v.try_reserve(cells);
            }
        }
    }

    /// Appends `cells` to the columns of `out`.
    fn build(&self, cells: &[CellRef], out: &mut ReadResult) {
        // Distinct tiles, in order of appearance.
        let mut slot_of: HashMap<*const LoadedTile, u32> = HashMap::new();
        let mut tiles: Vec<&Arc<LoadedTile>> = Vec::new();
        let mut refs: Vec<(u32, u32)> = Vec::with_capacity(cells.len());
        let mut last: Option<(*const LoadedTile, u32)> = None;
        for (t, k) in cells {
            let p = Arc::as_ptr(t);
            let slot = match last {
                Some((lp, s)) if lp == p => s,
                _ => {
                    let s = *slot_of.entry(p).or_insert_with(|| {
                        tiles.push(t);
                        (tiles.len() - 1) as u32
                    });
                    last = Some((p, s));
                    s
                }
            };
            refs.push((slot, t.sel[*k]));
        }
        out.columns
            .par_iter_mut()
            .zip(self.out.par_iter().zip(self.out_slots.par_iter()))
            .with_min_len(columns_per_task(refs.len() as u64, self.out.len()))
            .for_each(|(col, (f, &s))| {
                let field_tiles: Vec<Option<Arc<DecodedTile>>> =
                    tiles.iter().map(|t| t.fields[s].clone()).collect();
                gather(f, col, &refs, &field_tiles);
            });
    }
}

/// Folds `p` into the partial of tile `key` (cells of one tile may come in several groups).
fn merge_into(
    parts: &mut BTreeMap<(usize, u64), Partial>,
    plan: &Plan,
    key: (usize, u64),
    p: &Partial,
) {
    match parts.get_mut(&key) {
        Some(q) => q.merge(plan, p),
        None => {
            parts.insert(key, p.clone());
        }
    }
}

/// The partial aggregates of the tiles of `frag` that tile metadata answers exactly (whole
/// tiles inside the subarray, of a fragment no condition, delete, time filter or other
/// fragment affects), keyed by (fragment order, tile); those tiles are removed from the
/// fragment's list.
fn tiles_from_metadata(
    storage: &dyn tessera_storage::Storage,
    plan: &Plan,
    frag: &mut SFrag,
    dims: &[DimType],
    neds: &[Mbr],
) -> Result<Vec<((usize, u64), Partial)>> {
    if frag.filtered || frag.partial_ts || !frag.tiles.iter().any(|t| t.full) {
        return Ok(Vec::new());
    }
    let alone = if frag.alone {
        vec![true; frag.tiles.len()]
    } else if frag.has_ts {
        return Ok(Vec::new());
    } else {
        lone_tiles(storage, dims, &frag.fragment, &frag.tiles, neds, frag.index)?
    };
    if !alone.iter().any(|&a| a) {
        return Ok(Vec::new());
    }
    let mut metas: Vec<Option<FieldMeta>> = Vec::with_capacity(plan.fields.len());
    let mut stored: Vec<bool> = Vec::with_capacity(plan.fields.len());
    // Dimensions have no tile min/max metadata: their tiles' MBRs bound them exactly.
    let rtree = if plan.fields.iter().any(|f| f.is_dim() && f.want.min_max) {
        Some(frag.fragment.rtree(storage)?)
    } else {
        None
    };
    for field in &plan.fields {
        let has = match field.source {
            Source::Dim(_) => true,
            Source::Attr(_) => {
                frag.fragment.schema().attributes.iter().any(|a| a.name == field.name)
            }
        };
        stored.push(has);
        if !has {
            metas.push(None);
            continue;
        }
        match FieldMeta::load(storage, &frag.fragment, &field.name, field.want)? {
            Some(m) => metas.push(Some(m)),
            None => return Ok(Vec::new()),
        }
    }
    let mut out = Vec::new();
    let cells = frag.cells;
    let mut k = 0;
    frag.tiles.retain(|ov| {
        k += 1;
        if !ov.full || !alone[k - 1] {
            return true;
        }
        let n = cells.get(ov.tile);
        let mut stats = Vec::with_capacity(metas.len());
        for (m, field) in metas.iter().zip(&plan.fields) {
            let Some(m) = m else {
                stats.push(None);
                continue;
            };
            let exact = match field.source {
                Source::Dim(d) => dim_stats(m, rtree.as_deref(), field, d, ov.tile, n),
                Source::Attr(_) => m.exact(ov.tile, n, field.want),
            };
            match exact {
                Some(s) => stats.push(Some(s)),
                None => return true,
            }
        }
        let mut p = Partial::new(plan);
        p.add_tile_stats(plan, n, &stats);
        for (f, has) in stored.iter().enumerate() {
            if !has {
                p.scan_fill(plan, f, n);
            }
        }
        out.push(((frag.order, ov.tile), p));
        false
    });
    Ok(out)
}

/// The exact statistics of dimension `d` (`field` of the plan) in tile `tile` (of `n` cells):
/// the sum from the tile metadata, the minimum and maximum from the tile's MBR (the exact
/// bounds of its coordinates). `None` where they might differ from an aggregate of the
/// cells: a float bound that is zero (`-0.0` and `0.0` compare equal, so which one an
/// aggregate keeps depends on the order of the cells) or NaN.
fn dim_stats<'a>(
    meta: &'a FieldMeta,
    rtree: Option<&'a RTree>,
    field: &AggField,
    d: usize,
    tile: u64,
    n: u64,
) -> Option<ExactStats<'a>> {
    let mut stats = meta.exact(tile, n, Want { min_max: false, ..field.want })?;
    if field.want.min_max && n > 0 {
        let range = rtree?.leaf(tile)?.range(d)?;
        let doubtful = |b: &[u8]| {
            let v = match field.datatype {
                Datatype::Float32 => b.try_into().map(|x| f64::from(f32::from_le_bytes(x))),
                Datatype::Float64 => b.try_into().map(f64::from_le_bytes),
                _ => return false,
            };
            !matches!(v, Ok(v) if v != 0.0 && !v.is_nan())
        };
        let size = field.datatype.size();
        let fixed = field.cell_val_num != tessera_types::CELL_VAL_NUM_VAR;
        if doubtful(range.low)
            || doubtful(range.high)
            || (fixed && (range.low.len() != size || range.high.len() != size))
        {
            return None;
        }
        stats.min = Some(range.low);
        stats.max = Some(range.high);
    }
    Some(stats)
}

/// The markers of the delete and update commits a consolidation applied to fragment `f`
/// (its processed conditions).
pub(crate) fn processed_conditions(
    storage: &dyn tessera_storage::Storage,
    f: &Fragment,
) -> Result<Vec<String>> {
    let part = f.part(storage, tessera_fragment::LazyPart::ProcessedConditions)?;
    let done =
        tessera_fragment::ProcessedConditions::parse(&part).map_err(|source| Error::Fragment {
            file: format!("{}/{}", f.dir(), crate::FRAGMENT_METADATA_FILE),
            source: Box::new(source),
        })?;
    Ok(done.0)
}

/// Drops from `tiles` (of fragment `f`) the tiles whose metadata proves that no cell
/// satisfies `cond`.
fn prune(
    storage: &dyn tessera_storage::Storage,
    f: &Fragment,
    cond: &QueryCondition,
    cells: &TileCells,
    tiles: &mut Vec<TileOverlap>,
    skippable: &[bool],
) -> Result<()> {
    let want = Want { min_max: true, sums: false, null_counts: true };
    // (Float min/max come with the tile sums, which tell whether a tile holds a NaN.)
    let metas: Vec<(&str, Option<FieldMeta>)> = cond
        .fields()
        .into_iter()
        .map(|name| Ok((name, FieldMeta::load(storage, f, name, want)?)))
        .collect::<Result<_>>()?;
    if metas.iter().all(|(_, m)| m.is_none()) {
        return Ok(());
    }
    let mut k = 0;
    tiles.retain(|ov| {
        k += 1;
        if !skippable[k - 1] {
            return true;
        }
        let n = cells.get(ov.tile);
        cond.may_match(&|name: &str| {
            metas
                .iter()
                .find(|(m, _)| *m == name)
                .and_then(|(_, m)| m.as_ref())
                .map(|m| m.prune_stats(ov.tile, n))
        })
    });
    Ok(())
}

/// For each of `tiles` (of fragment `f`, the `i`-th of the read), whether its MBR overlaps
/// the non-empty domain of no other fragment of the read (`neds`), so no other fragment can
/// hold its coordinates.
fn lone_tiles(
    storage: &dyn tessera_storage::Storage,
    dims: &[DimType],
    f: &Fragment,
    tiles: &[TileOverlap],
    neds: &[Mbr],
    i: usize,
) -> Result<Vec<bool>> {
    let rtree = f.rtree(storage)?;
    Ok(tiles
        .iter()
        .map(|ov| {
            rtree.leaf(ov.tile).is_some_and(|mbr| {
                neds.iter()
                    .enumerate()
                    .all(|(j, n)| j == i || n.0.is_empty() || !mbr.overlaps(dims, n))
            })
        })
        .collect())
}

/// Whether the non-empty domain of fragment `i` of `frags` overlaps no other's.
fn overlaps_none(
    dims: &[DimType],
    frags: &[(usize, Arc<Fragment>, Vec<TileOverlap>)],
    i: usize,
) -> bool {
    let Some(ned) = frags[i].1.footer().non_empty_domain.as_ref() else { return true };
    frags.iter().enumerate().all(|(j, (_, f, _))| {
        j == i || f.footer().non_empty_domain.as_ref().is_none_or(|o| !o.overlaps(dims, ned))
    })
}

/// Byte ranges of a tile's cells (of one field).
type CellBytes = Vec<std::ops::Range<u64>>;

/// The part of a memory budget the batch being built may take: three eighths. The tiles
/// being loaded take at most a quarter (decoded, and the bytes they are decoded from), and
/// the rest is the allocator's slack (memory freed by one thread and not yet reused).
fn batch_share(budget: u64) -> u64 {
    (budget / 8 * 3).max(1)
}

/// Fragments set up by one task of the pool (a few are set up faster on the calling thread).
const FRAGMENTS_PER_TASK: usize = 16;

/// Tiles per task of the per-tile steps of a window (selection, conditions, keys): a window
/// of a few tiles (a small query) is handled on the calling thread.
fn tiles_per_task(tiles: usize) -> usize {
    if tiles <= 4 { tiles.max(1) } else { 1 }
}

/// Columns per task of copying `cells` cells into `columns` result columns: small results are
/// copied on the calling thread.
fn columns_per_task(cells: u64, columns: usize) -> usize {
    if cells < 1 << 16 { columns.max(1) } else { 1 }
}

/// The runs of consecutive `true` cells of `keep`.
fn runs_of(keep: &[bool]) -> Vec<std::ops::Range<u64>> {
    let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
    let mut c = 0;
    while c < keep.len() {
        if !keep[c] {
            c += 1;
            continue;
        }
        let start = c;
        while c < keep.len() && keep[c] {
            c += 1;
        }
        runs.push(start as u64..c as u64);
    }
    runs
}

/// Whether the non-empty domains of the fragments are pairwise disjoint (so no two can hold
/// the same coordinates).
fn disjoint(dims: &[DimType], frags: &[(usize, Arc<Fragment>, Vec<TileOverlap>)]) -> bool {
    let neds: Vec<&Mbr> =
        frags.iter().filter_map(|(_, f, _)| f.footer().non_empty_domain.as_ref()).collect();
    for i in 0..neds.len() {
        for j in i + 1..neds.len() {
            if neds[i].overlaps(dims, neds[j]) {
                return false;
            }
        }
    }
    true
}
