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
//!
//! The reader goes by stage, one module each: [`plan`] (fragments, tiles and ordering),
//! [`mod@prune`] (tiles the condition's metadata rules out), [`load`] (windows of tiles decoded,
//! cells selected), [`merge`] (global-order merge, concatenation, sorting), [`batch`] (result
//! columns within the budget) and [`aggregate`].

mod aggregate;
mod batch;
mod load;
mod merge;
mod partition;
mod plan;
mod prune;

pub(crate) use load::processed_conditions;
use prune::{lone_tiles, prune};

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
use crate::read::stats::{ConditionMeta, Decided, ExactStats, FieldMeta, Want};
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
    /// Whether the condition is all that filters them (no deletes, no delete timestamps),
    /// so tiles whose metadata shows every cell satisfies it are as if unfiltered.
    cond_only: bool,
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
    /// The meter of the decoded tile bytes this read holds.
    pub(crate) fn meter(&self) -> Arc<TileMeter> {
        self.meter.clone()
    }
}
