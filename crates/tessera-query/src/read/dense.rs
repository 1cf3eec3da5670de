//! Dense reads (libtiledb's `DenseReader`): every cell of the subarray, in the layout asked,
//! from the newest fragment whose non-empty domain holds it, or the fill value.
//!
//! The result is a sequence of positions. Row- and col-major results are the row- or
//! col-major traversal of a grid whose axis `d` is the concatenation of dimension `d`'s ranges
//! in the order given (so cells repeat where ranges overlap); a global-order result is the
//! space tiles meeting the subarray, in tile order, each holding its cells in cell order.
//!
//! A batch is a range of positions. It is cut into boxes of cells, each inside one space
//! tile and mapped to the result by per-dimension strides ("pieces"); each piece is carved by
//! the fragments' non-empty domains, newest first, into boxes copied from one fragment's
//! tile and boxes left to the fill value; each box becomes runs of cells contiguous both in
//! the tile and in the result, copied with one `memcpy` each. Only the tiles of the
//! fragments that hold some cell of the batch are fetched, all at once, and decoded in
//! parallel; decoded tiles are kept for the next batch when it needs them again.
//!
//! A query condition is evaluated over whole decoded tiles (coordinates generated for a
//! condition on dimensions), one bitmap per fragment tile; runs are split where the bitmap
//! changes and the failing cells take the fill value (and fill validity) of every attribute,
//! as libtiledb's dense reader does (cells no fragment wrote are fill values either way).
//!
//! Aggregates walk the same runs without building columns: tile by tile in global order
//! (one range per dimension), each whole space tile that the newest fragment holding it
//! covers entirely being answered from that fragment's tile metadata when it is exact; in
//! row- or col-major order for multi-range subarrays. Aggregates of dimensions scan the
//! coordinates of the runs' positions (dense fragments store none).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;
use tessera_types::Layout;

use crate::aggregate::{Cells, Partial, Plan};
use crate::array::Array;
use crate::condition::{ColumnView, QueryCondition};
use crate::read::column::{FILL, OutField, Run, Source, copy_runs, empty_result};
use crate::read::order::{int_value, push_int};
use crate::read::stats::FieldMeta;
use crate::read::subarray::Subarray;
use crate::read::tiles::{
    DecodedTile, FieldReader, QField, TileCells, TileJob, TilePart, load_tile_part, load_tiles,
    load_tiles_with, scatter_tile,
};
use crate::result::{Column, ReadResult};
use crate::{Error, Result};

/// Cells processed at once when no budget bounds a batch: bounds the run lists and the
/// tiles held, without limiting parallelism much.
const UNBOUNDED_CHUNK_CELLS: u64 = 1 << 22;

/// Runs (copies of cells in a row of one tile) of a batch of a presized stream, about
/// (see [`DenseReader::presized_batch_cells`]).
const PRESIZED_BATCH_RUNS: u64 = 1 << 20;

/// Under a memory budget, a batch's result and bookkeeping take at most the budget over this
/// (the chunks decoded for it as much again, the tiles kept for the next batch
/// [`BUDGET_TILE_SHARE`], the tile pool [`crate::read::BUDGET_POOL_SHARE`]: the rest is the
/// caller's, which converts or writes out the batch).
const BUDGET_BATCH_SHARE: u64 = 4;

/// Under a memory budget, the whole tiles kept from one batch for the next take at most the
/// budget over this.
const BUDGET_TILE_SHARE: u64 = 4;

/// Bytes of bookkeeping per run of a streamed batch: the run and the copy it becomes.
const RUN_BYTES: u64 = 80;

/// Cells per partial aggregate of a row- or col-major aggregate (partials are computed in
/// parallel, then folded in order).
const AGGREGATE_GROUP_CELLS: u64 = 1 << 16;

/// One dimension of a dense read.
#[derive(Debug, Clone)]
struct DDim {
    dom_lo: i128,
    extent: i128,
    /// The ranges, in the order given.
    ranges: Vec<(i128, i128)>,
    /// Grid offset of each range.
    range_off: Vec<u64>,
    /// Grid length (cells over all ranges).
    len: u64,
}

impl DDim {
    fn tile_of(&self, c: i128) -> i128 {
        (c - self.dom_lo).div_euclid(self.extent)
    }
    fn tile_lo(&self, t: i128) -> i128 {
        self.dom_lo + t * self.extent
    }
}

/// A fragment as the dense reader sees it.
#[derive(Debug)]
struct DFrag {
    /// The fragment.
    fragment: Arc<crate::Fragment>,
    /// The fragment's folder.
    dir: String,
    /// Non-empty domain per dimension.
    ned: Vec<(i128, i128)>,
    /// Space-tile index of the first tile per dimension.
    first_tile: Vec<i128>,
    /// Strides of the fragment's tiles, in tile order.
    tile_strides: Vec<u64>,
    /// Number of tiles.
    tile_num: u64,
    /// Cells per tile.
    cells: TileCells,
    /// Readers of the attributes read, by field index (the output fields, then the
    /// attributes only the condition reads; `None`: not stored).
    readers: Vec<Option<FieldReader>>,
}

/// The fragment tiles a batch uses, by slot.
#[derive(Debug, Default)]
struct Slots {
    map: HashMap<(usize, u64), u32>,
    /// (fragment, tile) of each slot.
    list: Vec<(usize, u64)>,
    /// The space tile of each slot (tile index per dimension).
    tiles: Vec<Vec<i128>>,
}

/// (fragment, tile, field index) of a cached decoded tile.
type CacheKey = (usize, u64, usize);

/// Fragment tile to its decoded tiles, by field index.
type TileCache = HashMap<CacheKey, Arc<DecodedTile>>;

/// A box of cells in one space tile, with where its cells go in the result.
#[derive(Debug, Clone)]
struct Piece {
    lo: Vec<i128>,
    hi: Vec<i128>,
    tile: Vec<i128>,
    /// Result position of `lo`.
    dst_base: u64,
    dst_strides: Vec<u64>,
}

/// The cursor over global-order blocks (space tiles meeting the subarray, in tile order).
#[derive(Debug, Clone)]
struct BlockCursor {
    /// Current tile per dimension.
    tile: Vec<i128>,
    /// First result position of the current block.
    base: u64,
    done: bool,
}

/// A dense read in progress.
#[derive(Debug)]
pub(crate) struct DenseReader<'a> {
    array: &'a Array,
    dims: Vec<DDim>,
    layout: Layout,
    cell_order: Layout,
    tile_order: Layout,
    total: u64,
    grid_strides: Vec<u64>,
    /// Cell strides inside a space tile, in cell order.
    cell_strides: Vec<u64>,
    /// Fragments, newest first.
    frags: Vec<DFrag>,
    fields: Vec<OutField>,
    /// Attributes only the condition reads (field indexes after `fields`).
    extra: Vec<OutField>,
    /// The query condition.
    condition: Option<QueryCondition>,
    budget: Option<u64>,
    pos: u64,
    cursor: Option<BlockCursor>,
    /// Tiles decoded by the last batch: (fragment, tile, field) to tile.
    cache: TileCache,
    /// Condition bitmaps of the last batch's fragment tiles.
    masks: HashMap<(usize, u64), Arc<Vec<bool>>>,
    /// Tile metadata loaded for aggregates: (fragment, aggregate field).
    metas: HashMap<(usize, usize), Option<Arc<FieldMeta>>>,
    /// Set by [`Self::presize`]: the position the output columns start at. They already hold
    /// every remaining cell (zeroed), and batches write into them in place.
    presized: Option<u64>,
}

impl<'a> DenseReader<'a> {
    /// Prepares a dense read of `fields` over `subarray` in `layout` (row-major, col-major or
    /// global order).
    ///
    /// # Errors
    /// [`Error::InvalidQuery`] for a multi-range global-order read; [`Error::Unsupported`]
    /// for sparse fragments in the dense array; storage and metadata errors loading the
    /// fragments' tile offsets.
    pub(crate) fn new(
        array: &'a Array,
        subarray: &Subarray,
        fields: Vec<OutField>,
        layout: Layout,
        budget: Option<u64>,
        condition: Option<QueryCondition>,
    ) -> Result<Self> {
        let schema = array.schema();
        // Attributes the condition reads that are not returned.
        let mut extra: Vec<OutField> = Vec::new();
        if let Some(c) = &condition {
            for name in c.fields() {
                let Some(a) = schema.attributes.iter().position(|x| x.name == name) else {
                    continue;
                };
                let present = fields.iter().chain(&extra).any(|f| f.source == Source::Attr(a));
                if !present {
                    extra.push(OutField::attr(schema, a));
                }
            }
        }
        if layout == Layout::GlobalOrder && subarray.is_multi_range() {
            return Err(Error::InvalidQuery(
                "multi-range reads are not supported in global order (as in libtiledb)".into(),
            ));
        }
        let ranges = subarray.int_ranges(schema)?;
        let mut dims = Vec::with_capacity(ranges.len());
        for (d, rs) in schema.dimensions.iter().zip(ranges) {
            let (Some([lo, _]), Some(ext)) = (&d.domain, &d.tile_extent) else {
                return Err(Error::Unsupported(format!(
                    "dense dimension {:?} without a domain or tile extent",
                    d.name
                )));
            };
            let dom_lo = int_value(d.datatype, lo).unwrap_or(0);
            let extent = int_value(d.datatype, ext).unwrap_or(0);
            if extent <= 0 {
                return Err(Error::Unsupported(format!(
                    "dense dimension {:?} with tile extent {extent}",
                    d.name
                )));
            }
            let mut range_off = Vec::with_capacity(rs.len());
            let mut len = 0u64;
            for &(lo, hi) in &rs {
                range_off.push(len);
                len += (hi - lo + 1) as u64;
            }
            dims.push(DDim { dom_lo, extent, ranges: rs, range_off, len });
        }
        let dim_num = dims.len();
        let total = dims
            .iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(d.len))
            .ok_or_else(|| Error::InvalidQuery("the subarray holds more than 2^64 cells".into()))?;
        let lens: Vec<u64> = dims.iter().map(|d| d.len).collect();
        let grid_strides = strides(&lens, layout == Layout::ColMajor);
        let extents: Vec<u64> = dims.iter().map(|d| d.extent as u64).collect();
        let cell_strides = strides(&extents, schema.cell_order == Layout::ColMajor);

        // Fragments, newest first, with the readers of the attributes read.
        let storage = array.storage().as_ref();
        let mut frags = Vec::new();
        for f in array.fragments().iter().rev() {
            if !f.footer().dense {
                return Err(Error::Unsupported(format!(
                    "sparse fragment {} in a dense array (libtiledb 2.30 still reads them; Tessera does not)",
                    f.name().as_str()
                )));
            }
            let Some(ned) = &f.footer().non_empty_domain else { continue };
            let ned: Vec<(i128, i128)> = ned
                .0
                .iter()
                .zip(&schema.dimensions)
                .map(|(r, d)| {
                    (
                        int_value(d.datatype, &r.low).unwrap_or(0),
                        int_value(d.datatype, &r.high).unwrap_or(0),
                    )
                })
                .collect();
            // A fragment whose non-empty domain misses the subarray has nothing to give: its
            // tile offsets are not even loaded (opening many fragments to read a few cells).
            let touches = ned
                .iter()
                .zip(&dims)
                .all(|(&(lo, hi), d)| d.ranges.iter().any(|&(a, b)| a <= hi && lo <= b));
            if !touches {
                continue;
            }
            let first_tile: Vec<i128> =
                ned.iter().zip(&dims).map(|(&(lo, _), d)| d.tile_of(lo)).collect();
            let counts: Vec<u64> = ned
                .iter()
                .zip(&dims)
                .map(|(&(lo, hi), d)| (d.tile_of(hi) - d.tile_of(lo) + 1) as u64)
                .collect();
            let tile_strides = strides(&counts, schema.tile_order == Layout::ColMajor);
            let cells = TileCells::of(f)?;
            frags.push((f.clone(), ned, first_tile, tile_strides, cells));
        }
        // Tile offsets of every attribute read, fragments in parallel.
        let attr_fields: Vec<Option<usize>> = fields
            .iter()
            .chain(&extra)
            .map(|f| match f.source {
                Source::Attr(a) => Some(a),
                Source::Dim(_) => None,
            })
            .collect();
        let frags: Vec<DFrag> = frags
            .into_par_iter()
            .map(|(f, ned, first_tile, tile_strides, cells)| {
                let readers = attr_fields
                    .iter()
                    .map(|a| match a {
                        Some(a) => FieldReader::new(storage, &f, schema, QField::Attr(*a)),
                        None => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(DFrag {
                    fragment: f.clone(),
                    dir: f.dir(),
                    ned,
                    first_tile,
                    tile_strides,
                    tile_num: cells.tile_num,
                    cells,
                    readers,
                })
            })
            .collect::<Result<_>>()?;
        debug_assert_eq!(dim_num, schema.dimensions.len());
        let cursor = (layout == Layout::GlobalOrder).then(|| BlockCursor {
            tile: dims.iter().map(|d| d.tile_of(d.ranges[0].0)).collect(),
            base: 0,
            done: total == 0,
        });
        Ok(DenseReader {
            array,
            dims,
            layout,
            cell_order: schema.cell_order,
            tile_order: schema.tile_order,
            total,
            grid_strides,
            cell_strides,
            frags,
            fields,
            extra,
            condition,
            budget,
            pos: 0,
            cursor,
            cache: HashMap::new(),
            masks: HashMap::new(),
            metas: HashMap::new(),
            presized: None,
        })
    }

    /// The memory budget of a batch, if any.
    pub(crate) fn budget(&self) -> Option<u64> {
        self.budget
    }

    /// Estimated result bytes of one cell (var-sized values from the fragments' average).
    fn bytes_per_cell(&self) -> u64 {
        let mut total = 0u64;
        for (i, f) in self.fields.iter().enumerate() {
            total += f.fixed_bytes_per_cell();
            if f.is_var() {
                let (mut bytes, mut cells) = (0u64, 0u64);
                for fr in &self.frags {
                    if let Some(Some(r)) = fr.readers.get(i) {
                        bytes += r.total_var_size().unwrap_or(0);
                        cells += fr.tile_num * fr.cells.get(0);
                    }
                }
                total += if cells > 0 { bytes.div_ceil(cells) } else { f.fill.len() as u64 };
            }
        }
        total.max(1)
    }

    /// Appends the next batch to `out` (whose columns are those of the read); `false` when
    /// every cell was returned.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode.
    pub(crate) fn next_batch(&mut self, out: &mut ReadResult) -> Result<bool> {
        if self.pos >= self.total {
            return Ok(false);
        }
        let want = match self.budget {
            Some(b) => self.budget_batch_cells(b),
            None if self.presized.is_some() => self.presized_batch_cells(),
            None => UNBOUNDED_CHUNK_CELLS,
        };
        let p0 = self.pos;
        let p1 = p0.saturating_add(want).min(self.total);
        if self.can_stream() {
            let pieces = self.pieces(p0, p1);
            let mut slots = Slots::default();
            let mut runs: Vec<Run> = Vec::new();
            for piece in &pieces {
                self.carve(piece, p0, &mut slots, &mut runs)?;
            }
            runs.sort_unstable_by_key(|r| r.dst);
            let keep = self.next_tiles(p1, want);
            self.stream(out, &pieces, &runs, &slots, &keep, p0, p1, None)?;
            self.pos = p1;
            self.advance_cursor();
            return Ok(true);
        }
        let (pieces, mut runs, slots) = self.prepare(p0, p1)?;
        // Under a condition, cells failing it take the fill value: fixed-size fields copy
        // whole runs through the tiles' masks; var-sized ones need the runs split where the
        // mask changes (their values have different lengths).
        let masks = self.slot_masks(&slots)?;
        let has_var = self.fields.iter().any(OutField::is_var);
        let mut split: Vec<Run> = Vec::new();
        if self.condition.is_some() && has_var {
            split.reserve(runs.len());
            for r in &runs {
                split_run(*r, &masks, |r, pass| {
                    split.push(if pass { r } else { Run { slot: FILL, ..r } });
                });
            }
        }
        let slot_list = &slots.list;
        // Cut the batch at the budget, now that var sizes are known.
        let mut end = p1;
        if let Some(budget) = self.budget {
            let sized = if split.is_empty() { &runs } else { &split };
            end = self.cut(p0, p1, sized, slot_list, budget);
            if end < p1 {
                truncate_runs(&mut runs, end - p0);
                truncate_runs(&mut split, end - p0);
            }
        }
        let cache = &self.cache;
        let (runs, split, masks) = (&runs, &split, &masks);
        out.columns.par_iter_mut().zip(self.fields.par_iter()).enumerate().for_each(
            |(i, (col, field))| match field.source {
                Source::Dim(d) => self.coord_column(None, col, field, d, &pieces, p0, end),
                Source::Attr(_) => {
                    let tiles: Vec<Option<Arc<DecodedTile>>> =
                        slot_list.iter().map(|&(f, t)| cache.get(&(f, t, i)).cloned()).collect();
                    if masks.is_empty() {
                        copy_runs(field, col, runs, &tiles);
                    } else if field.is_var() {
                        copy_runs(field, col, split, &tiles);
                    } else {
                        copy_runs_masked(field, col, runs, &tiles, masks);
                    }
                }
            },
        );
        self.pos = end;
        self.advance_cursor();
        Ok(true)
    }

    /// Reads every remaining cell of the read's only field (a fixed-size attribute) into
    /// `buf`, which holds exactly their bytes, in the read's layout: the caller owns the
    /// memory (a numpy array, say), so the result needs no allocation of its own. Without a
    /// condition or budget, tiles are decoded straight into `buf`; otherwise each batch is
    /// read as usual and copied in.
    ///
    /// # Errors
    /// [`Error::InvalidQuery`] when the read is not one fixed-size attribute or `buf` has
    /// the wrong length; as [`Self::next_batch`].
    pub(crate) fn read_into(&mut self, buf: &mut [u8]) -> Result<()> {
        let [field] = self.fields.as_slice() else {
            return Err(Error::InvalidQuery("a read into a buffer reads exactly one field".into()));
        };
        let size = field.cell_size();
        if !matches!(field.source, Source::Attr(_)) || size == 0 {
            return Err(Error::InvalidQuery(format!(
                "{:?}: a read into a buffer reads one fixed-size attribute",
                field.name
            )));
        }
        let left = self.total - self.pos;
        let want = left.checked_mul(size as u64).filter(|&b| b == buf.len() as u64);
        if want.is_none() {
            return Err(Error::InvalidQuery(format!(
                "{:?}: the buffer holds {} bytes, the read {left} cells of {size} bytes",
                field.name,
                buf.len()
            )));
        }
        let mut rest = buf;
        if self.can_stream() {
            let mut out = empty_result(&self.fields);
            while self.pos < self.total {
                let want = match self.budget {
                    Some(b) => self.budget_batch_cells(b),
                    None => self.presized_batch_cells(),
                };
                let (p0, p1) = (self.pos, self.pos.saturating_add(want).min(self.total));
                let pieces = self.pieces(p0, p1);
                let mut slots = Slots::default();
                let mut runs: Vec<Run> = Vec::new();
                for piece in &pieces {
                    self.carve(piece, p0, &mut slots, &mut runs)?;
                }
                runs.sort_unstable_by_key(|r| r.dst);
                let keep = self.next_tiles(p1, want);
                let (dst, tail) = std::mem::take(&mut rest).split_at_mut((p1 - p0) as usize * size);
                rest = tail;
                self.stream(&mut out, &pieces, &runs, &slots, &keep, p0, p1, Some(dst))?;
                self.pos = p1;
                self.advance_cursor();
            }
            return Ok(());
        }
        let mut out = empty_result(&self.fields);
        while self.next_batch(&mut out)? {
            let data = &mut out.columns[0].data;
            if data.len() > rest.len() {
                return Err(Error::InvalidQuery(format!(
                    "{:?}: the read returned more cells than it holds",
                    self.fields[0].name
                )));
            }
            let (dst, tail) = std::mem::take(&mut rest).split_at_mut(data.len());
            dst.copy_from_slice(data);
            rest = tail;
            data.clear();
        }
        Ok(())
    }

    /// Whether batches can be streamed ([`Self::stream`]): no condition, and every attribute
    /// read fixed-size and not nullable. Under a memory budget, streaming is what keeps the
    /// tiles a batch meets from being held whole: only the chunks of its cells are decoded.
    fn can_stream(&self) -> bool {
        self.condition.is_none()
            && self.fields.iter().all(|f| match f.source {
                Source::Dim(_) => true,
                Source::Attr(_) => !f.is_var() && !f.nullable && f.cell_size() > 0,
            })
    }

    /// The space tiles of the batch after the one ending at `end` (of up to `want` cells),
    /// whose fragment tiles are worth keeping in the cache.
    fn next_tiles(&mut self, end: u64, want: u64) -> HashSet<Vec<i128>> {
        if end >= self.total {
            return HashSet::new();
        }
        let (pos, cursor) = (self.pos, self.cursor.clone());
        self.pos = end;
        self.advance_cursor();
        let next = self.pieces(end, end.saturating_add(want).min(self.total));
        self.pos = pos;
        self.cursor = cursor;
        let next: HashSet<Vec<i128>> = next.into_iter().map(|p| p.tile).collect();
        // Under a budget, whole tiles are kept only while they fit its share for them;
        // otherwise every batch decodes just the chunks of its own cells.
        if let Some(budget) = self.budget
            && self.kept_tile_bytes(&next) > budget / BUDGET_TILE_SHARE
        {
            return HashSet::new();
        }
        next
    }

    /// The decoded bytes of the fragment tiles (of every field read) of space tiles `tiles`.
    fn kept_tile_bytes(&self, tiles: &HashSet<Vec<i128>>) -> u64 {
        let cell_bytes: u64 = self.fields.iter().map(OutField::fixed_bytes_per_cell).sum();
        let tile_cells: u64 = self.dims.iter().map(|d| d.extent as u64).product();
        let frags =
            self.frags.iter().filter(|f| f.readers.iter().any(Option::is_some)).count().max(1)
                as u64;
        // Every fragment holding some cell of a space tile may be decoded for it: a bound.
        (tiles.len() as u64)
            .saturating_mul(tile_cells)
            .saturating_mul(cell_bytes)
            .saturating_mul(frags)
    }

    /// Cells of a batch under `budget`: its share for the result and the batch's bookkeeping
    /// (the runs, a few tens of bytes each, about one per row of a tile the batch meets).
    fn budget_batch_cells(&self, budget: u64) -> u64 {
        let run = self.cells_per_run().max(1);
        let per_cell = self.bytes_per_cell() + RUN_BYTES.div_ceil(run);
        (budget / BUDGET_BATCH_SHARE / per_cell).clamp(1, UNBOUNDED_CHUNK_CELLS)
    }

    /// About how many cells a run holds (cells contiguous both in a tile and in the result):
    /// the innermost dimension's extent, within the subarray, when the result and the cells
    /// are in the same order (or the read is in global order), else one.
    fn cells_per_run(&self) -> u64 {
        let inner = match (self.layout, self.cell_order) {
            (Layout::RowMajor | Layout::GlobalOrder, Layout::RowMajor) => self.dims.last(),
            (Layout::ColMajor | Layout::GlobalOrder, Layout::ColMajor) => self.dims.first(),
            _ => None,
        };
        inner.map_or(1, |d| {
            let ext = u64::try_from(d.extent).unwrap_or(u64::MAX);
            if d.ranges.len() == 1 { ext.min(d.len) } else { 1 }
        })
    }

    /// Appends positions `p0..end` to `out` (see [`Self::can_stream`]): the attribute columns
    /// are grown at once and cut into the slots of `runs`; then every fragment tile (on the
    /// rayon pool) is fetched and decoded unless cached, copied into its slots, and dropped,
    /// unless its space tile is in `keep` (the next batch's), in which case it is cached.
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &mut self,
        out: &mut ReadResult,
        pieces: &[Piece],
        runs: &[Run],
        slots: &Slots,
        keep: &HashSet<Vec<i128>>,
        p0: u64,
        end: u64,
        mut into: Option<&mut [u8]>,
    ) -> Result<()> {
        /// Bytes of one copy at most (long runs are cut, so that work spreads).
        const PIECE_BYTES: usize = 256 << 10;
        let n = (end - p0) as usize;
        out.columns.par_iter_mut().zip(self.fields.par_iter()).for_each(|(col, field)| {
            if let Source::Dim(d) = field.source {
                self.coord_column(self.presized, col, field, d, pieces, p0, end);
            }
        });
        // (field, first cell in the tile, destination) of every slot; fills apart.
        type Work<'c> = Vec<(usize, u64, &'c mut [u8])>;
        let mut work: Vec<Work<'_>> = (0..slots.list.len()).map(|_| Vec::new()).collect();
        let mut fills: Vec<(usize, &mut [u8])> = Vec::new();
        for (i, (col, field)) in out.columns.iter_mut().zip(&self.fields).enumerate() {
            if !matches!(field.source, Source::Attr(_)) {
                continue;
            }
            let size = field.cell_size();
            let piece_cells = (PIECE_BYTES / size).max(1) as u64;
            let mut rest = match into.take() {
                Some(buf) => buf,
                None => batch_slice(col, size, p0, n, self.presized),
            };
            for r in runs {
                let mut src = r.src;
                let mut left = r.len;
                while left > 0 {
                    let len = left.min(piece_cells);
                    let (dst, tail) = rest.split_at_mut(len as usize * size);
                    rest = tail;
                    if r.slot == FILL {
                        fills.push((i, dst));
                    } else {
                        work[r.slot as usize].push((i, src, dst));
                    }
                    src += len;
                    left -= len;
                }
            }
        }
        let fields = &self.fields;
        let fill_cells: Vec<Vec<u8>> = fields.iter().map(OutField::fill_cell).collect();
        let fill = |i: usize, dst: &mut [u8]| {
            for c in dst.chunks_exact_mut(fields[i].cell_size()) {
                c.copy_from_slice(&fill_cells[i]);
            }
        };
        fills.into_par_iter().for_each(|(i, dst)| fill(i, dst));
        let storage = self.array.storage().as_ref();
        let (cache, frags) = (&self.cache, &self.frags);
        // Slots are decoded in parallel; with enough of them, each decodes its chunks in order.
        let sequential = work.len() >= rayon::current_num_threads();
        let kept: Vec<Vec<(CacheKey, Arc<DecodedTile>)>> = work
            .into_par_iter()
            .enumerate()
            .map(|(k, mut work)| {
                let (f, t) = slots.list[k];
                let frag = &frags[f];
                let keep_it = keep.contains(&slots.tiles[k]);
                let mut kept = Vec::new();
                work.sort_by_key(|w| w.0);
                let mut rest = work.as_mut_slice();
                while let Some(&(i, _, _)) = rest.first() {
                    let len = rest.iter().take_while(|w| w.0 == i).count();
                    let (group, tail) = rest.split_at_mut(len);
                    rest = tail;
                    let size = fields[i].cell_size();
                    let loaded = match (cache.get(&(f, t, i)), frag.readers.get(i)) {
                        (Some(tile), _) => Loaded::Whole(tile.clone()),
                        (None, Some(Some(r))) => {
                            let job = TileJob {
                                reader: r,
                                tile: t,
                                cells: frag.cells.get(t),
                                wanted: None,
                            };
                            // A tile no later batch needs, while the other workers have
                            // tiles of their own: its chunks decode one at a time straight
                            // into the result.
                            if !keep_it && sequential {
                                group.sort_unstable_by_key(|w| w.1);
                                let mut dsts: Vec<(u64, &mut [u8])> = group
                                    .iter_mut()
                                    .map(|(_, src, dst)| (*src * size as u64, &mut **dst))
                                    .collect();
                                if scatter_tile(storage, &job, &mut dsts)? {
                                    continue;
                                }
                            }
                            // A tile no later batch needs: only the chunks of its cells here.
                            let part = if keep_it {
                                None
                            } else {
                                let wanted = wanted_bytes(group, size);
                                load_tile_part(storage, &job, &wanted, !sequential)?
                            };
                            match part {
                                Some(part) => Loaded::Part(part),
                                None => load_tiles_with(storage, &[job], sequential)?
                                    .pop()
                                    .map_or(Loaded::Missing, Loaded::Whole),
                            }
                        }
                        (None, _) => Loaded::Missing,
                    };
                    for (_, src, dst) in group.iter_mut() {
                        match &loaded {
                            Loaded::Whole(tile) => {
                                let range = tile.cells_range(*src as usize, dst.len() / size);
                                dst.copy_from_slice(&tile.data[range]);
                            }
                            Loaded::Part(part) => {
                                if !part.copy_to(*src * size as u64, dst) {
                                    return Err(Error::Corrupt {
                                        file: frag.dir.clone(),
                                        reason: format!("tile {t}: cells {src}.. were not decoded"),
                                    });
                                }
                            }
                            Loaded::Missing => fill(i, dst),
                        }
                    }
                    if keep_it && let Loaded::Whole(tile) = loaded {
                        kept.push(((f, t, i), tile));
                    }
                }
                Ok(kept)
            })
            .collect::<Result<_>>()?;
        self.cache = kept.into_iter().flatten().collect();
        Ok(())
    }

    /// The pieces of positions `p0..p1`, carved into runs (sorted by position) over the
    /// fragment tiles of `Slots`, whose tiles are then fetched and decoded (those not cached).
    fn prepare(&mut self, p0: u64, p1: u64) -> Result<(Vec<Piece>, Vec<Run>, Slots)> {
        let pieces = self.pieces(p0, p1);
        let mut slots = Slots::default();
        let mut runs: Vec<Run> = Vec::new();
        for piece in &pieces {
            self.carve(piece, p0, &mut slots, &mut runs)?;
        }
        runs.sort_unstable_by_key(|r| r.dst);
        self.fetch(&slots.list)?;
        Ok((pieces, runs, slots))
    }

    /// Fetches and decodes the tiles of every field read of `slot_list` not in the cache;
    /// the cache then holds exactly these.
    fn fetch(&mut self, slot_list: &[(usize, u64)]) -> Result<()> {
        let nfields = self.fields.len() + self.extra.len();
        let mut jobs: Vec<TileJob<'_>> = Vec::new();
        let mut job_keys = Vec::new();
        for &(f, t) in slot_list {
            let frag = &self.frags[f];
            for (i, r) in frag.readers.iter().enumerate() {
                if let Some(r) = r
                    && !self.cache.contains_key(&(f, t, i))
                {
                    jobs.push(TileJob {
                        reader: r,
                        tile: t,
                        cells: frag.cells.get(t),
                        wanted: None,
                    });
                    job_keys.push((f, t, i));
                }
            }
        }
        let loaded = load_tiles(self.array.storage().as_ref(), &jobs)?;
        let mut cache: TileCache = HashMap::new();
        for (k, tile) in job_keys.into_iter().zip(loaded) {
            cache.insert(k, tile);
        }
        for &(f, t) in slot_list {
            for i in 0..nfields {
                if let Some(tile) = self.cache.remove(&(f, t, i)) {
                    cache.insert((f, t, i), tile);
                }
            }
        }
        self.cache = cache;
        Ok(())
    }

    /// The condition's bitmap of each slot's fragment tile (over all the tile's cells, in
    /// cell order), computed in parallel for the tiles not done by the last batch.
    fn slot_masks(&mut self, slots: &Slots) -> Result<Vec<Arc<Vec<bool>>>> {
        let Some(cond) = &self.condition else { return Ok(Vec::new()) };
        let todo: Vec<usize> =
            (0..slots.list.len()).filter(|&k| !self.masks.contains_key(&slots.list[k])).collect();
        let computed: Vec<(usize, Vec<bool>)> =
            todo.par_iter()
                .map(|&k| {
                    let (f, t) = slots.list[k];
                    let n = self.frags[f].cells.get(t) as usize;
                    let coords = self.tile_coords(|d| cond.uses(d), &slots.tiles[k], n);
                    let col = |name: &str| -> Option<ColumnView<'_>> {
                        if let Some((_, col)) = coords.iter().find(|(d, _)| d == name) {
                            return Some(ColumnView::from(col));
                        }
                        let i =
                            self.fields.iter().chain(&self.extra).position(|x| {
                                matches!(x.source, Source::Attr(_)) && x.name == name
                            })?;
                        let field = self.fields.iter().chain(&self.extra).nth(i)?;
                        let tile = self.cache.get(&(f, t, i))?;
                        Some(ColumnView {
                            datatype: field.datatype,
                            cell_val_num: field.cell_val_num,
                            data: &tile.data,
                            offsets: tile.offsets.as_deref(),
                            validity: tile.validity.as_deref(),
                        })
                    };
                    let mut keep = vec![true; n];
                    cond.evaluate_views(&col, &mut keep)?;
                    Ok((k, keep))
                })
                .collect::<Result<_>>()?;
        let mut masks: HashMap<(usize, u64), Arc<Vec<bool>>> = HashMap::new();
        for (k, keep) in computed {
            masks.insert(slots.list[k], Arc::new(keep));
        }
        for key in &slots.list {
            if let Some(m) = self.masks.remove(key) {
                masks.insert(*key, m);
            }
        }
        let out = slots.list.iter().map(|key| masks[key].clone()).collect();
        self.masks = masks;
        Ok(out)
    }

    /// The coordinates of the `n` cells of space tile `tile` (in cell order), as columns of
    /// the dimensions `wanted` names.
    fn tile_coords(
        &self,
        wanted: impl Fn(&str) -> bool,
        tile: &[i128],
        n: usize,
    ) -> Vec<(String, Column)> {
        let schema = self.array.schema();
        let mut out = Vec::new();
        for (d, dim) in schema.dimensions.iter().enumerate() {
            if !wanted(&dim.name) {
                continue;
            }
            let dd = &self.dims[d];
            let lo = dd.tile_lo(tile[d]);
            let stride = self.cell_strides[d].max(1);
            let ext = dd.extent as u64;
            let mut col = Column::new(dim.name.clone(), dim.datatype, 1, false);
            col.data.reserve(n * dim.datatype.size());
            for i in 0..n as u64 {
                push_int(dim.datatype, lo + ((i / stride) % ext) as i128, &mut col.data);
            }
            out.push((dim.name.clone(), col));
        }
        out
    }

    /// Aggregates the cells of the read (see [`crate::aggregate`]): the attributes read are
    /// `plan`'s fields, in order. Whole space tiles are answered from tile metadata when
    /// `use_metadata` and the metadata is exact for them.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode; condition errors.
    pub(crate) fn aggregate(&mut self, plan: &Plan, use_metadata: bool) -> Result<Partial> {
        let mut total = Partial::new(plan);
        if self.total == 0 {
            return Ok(total);
        }
        if plan.count_only() && self.condition.is_none() {
            total.add_cells(self.total);
            return Ok(total);
        }
        if self.layout != Layout::GlobalOrder {
            let mut p0 = 0;
            while p0 < self.total {
                let p1 = p0.saturating_add(UNBOUNDED_CHUNK_CELLS).min(self.total);
                let groups: Vec<(u64, u64)> = (p0..p1)
                    .step_by(AGGREGATE_GROUP_CELLS as usize)
                    .map(|g| (g, AGGREGATE_GROUP_CELLS.min(p1 - g)))
                    .collect();
                for p in self.aggregate_positions(plan, p0, p1, &groups)? {
                    total.merge(plan, &p);
                }
                p0 = p1;
            }
            return Ok(total);
        }
        // Global order: space tile by space tile.
        let Some(mut c) = self.cursor.clone() else { return Ok(total) };
        let mut batch: Option<(BlockCursor, Vec<(u64, u64)>)> = None;
        while !c.done {
            let size = self.block_size(&c.tile);
            let meta = if use_metadata && self.condition.is_none() {
                self.block_metadata(plan, &c.tile, size)?
            } else {
                None
            };
            match meta {
                Some(p) => {
                    if let Some((start, blocks)) = batch.take() {
                        self.aggregate_blocks(plan, start, &blocks, &mut total)?;
                    }
                    total.merge(plan, &p);
                }
                None => {
                    let (start, blocks) = batch.get_or_insert_with(|| (c.clone(), Vec::new()));
                    blocks.push((c.base, size));
                    if c.base + size - start.base >= UNBOUNDED_CHUNK_CELLS
                        && let Some((start, blocks)) = batch.take()
                    {
                        self.aggregate_blocks(plan, start, &blocks, &mut total)?;
                    }
                }
            }
            self.next_block(&mut c);
        }
        if let Some((start, blocks)) = batch.take() {
            self.aggregate_blocks(plan, start, &blocks, &mut total)?;
        }
        Ok(total)
    }

    /// Aggregates consecutive global-order blocks (`(first position, cells)`), the cursor
    /// `start` being at the first, into `total`, block after block.
    fn aggregate_blocks(
        &mut self,
        plan: &Plan,
        start: BlockCursor,
        blocks: &[(u64, u64)],
        total: &mut Partial,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (blocks.first(), blocks.last()) else { return Ok(()) };
        self.cursor = Some(start);
        for p in self.aggregate_positions(plan, first.0, last.0 + last.1, blocks)? {
            total.merge(plan, &p);
        }
        Ok(())
    }

    /// The partial aggregate of each group (`(first position, cells)`, consecutive, covering
    /// `p0..p1`) of the cells at positions `p0..p1`.
    fn aggregate_positions(
        &mut self,
        plan: &Plan,
        p0: u64,
        p1: u64,
        groups: &[(u64, u64)],
    ) -> Result<Vec<Partial>> {
        let (pieces, runs, slots) = self.prepare(p0, p1)?;
        let masks = self.slot_masks(&slots)?;
        // Coordinates of the positions: of the dimensions aggregated, and of those a
        // condition reads when it is evaluated over fill values.
        let cond_dims = self.condition.as_ref().filter(|_| runs.iter().any(|r| r.slot == FILL));
        let wanted = |d: usize, name: &str| {
            plan.fields.iter().any(|f| f.source == Source::Dim(d))
                || cond_dims.is_some_and(|c| c.uses(name))
        };
        let schema = self.array.schema();
        let coords: Vec<(String, Column)> = schema
            .dimensions
            .par_iter()
            .enumerate()
            .filter(|(d, dim)| wanted(*d, &dim.name))
            .map(|(d, dim)| {
                let field = OutField::dim(schema, d);
                let mut col = field.empty_column();
                self.coord_column(None, &mut col, &field, d, &pieces, p0, p1);
                (dim.name.clone(), col)
            })
            .collect();
        // The runs of each group.
        let mut bounds = Vec::with_capacity(groups.len());
        let mut ri = 0;
        for &(base, size) in groups {
            let first = ri;
            let end = base + size - p0;
            while ri < runs.len() && runs[ri].dst < end {
                ri += 1;
            }
            bounds.push((first, ri));
        }
        let this = &*self;
        bounds
            .par_iter()
            .map(|&(a, b)| {
                let mut part = Partial::new(plan);
                for r in &runs[a..b] {
                    this.aggregate_run(plan, r, &slots, &masks, &coords, &mut part)?;
                }
                Ok(part)
            })
            .collect()
    }

    /// Adds the cells of run `r` to `part` (`coords`: the batch's coordinates of the
    /// dimensions aggregated or read by the condition, by position).
    fn aggregate_run(
        &self,
        plan: &Plan,
        r: &Run,
        slots: &Slots,
        masks: &[Arc<Vec<bool>>],
        coords: &[(String, Column)],
        part: &mut Partial,
    ) -> Result<()> {
        let (s, e) = (r.src as usize, (r.src + r.len) as usize);
        let (d0, d1) = (r.dst as usize, (r.dst + r.len) as usize);
        // Which fill-value cells satisfy the condition.
        let fill_mask = match &self.condition {
            Some(c) if r.slot == FILL => Some(self.fill_passing(c, r, coords)?),
            _ => None,
        };
        // The cells of the run by position in the batch (for coordinates), and by cell in
        // its tile (`None` for fill values).
        let (by_pos, by_cell, n) = if r.slot == FILL {
            match &fill_mask {
                Some(m) => (Cells::Masked(d0, m), None, m.iter().filter(|&&k| k).count() as u64),
                None => (Cells::Range(d0, d1), None, r.len),
            }
        } else {
            match masks.get(r.slot as usize) {
                Some(m) => {
                    let m = &m[s..e];
                    let n = m.iter().filter(|&&k| k).count() as u64;
                    (Cells::Masked(d0, m), Some(Cells::Masked(s, m)), n)
                }
                None => (Cells::Range(d0, d1), Some(Cells::Range(s, e)), r.len),
            }
        };
        part.add_cells(n);
        for (f, field) in self.fields.iter().enumerate().take(plan.fields.len()) {
            if let Source::Dim(_) = field.source {
                let col = coords.iter().find(|(name, _)| *name == field.name).map(|(_, c)| c);
                part.scan(plan, f, col.map(ColumnView::from).as_ref(), by_pos);
                continue;
            }
            let Some(cells) = by_cell else {
                part.scan_fill(plan, f, n);
                continue;
            };
            let (fi, t) = slots.list[r.slot as usize];
            let view = self.cache.get(&(fi, t, f)).map(|tile| ColumnView {
                datatype: field.datatype,
                cell_val_num: field.cell_val_num,
                data: &tile.data,
                offsets: tile.offsets.as_deref(),
                validity: tile.validity.as_deref(),
            });
            part.scan(plan, f, view.as_ref(), cells);
        }
        Ok(())
    }

    /// Which of the fill-value cells of run `r` satisfy `cond` (`coords`: the batch's
    /// coordinates of the dimensions it reads).
    fn fill_passing(
        &self,
        cond: &QueryCondition,
        r: &Run,
        coords: &[(String, Column)],
    ) -> Result<Vec<bool>> {
        let n = r.len as usize;
        let fills: Vec<(&str, Column)> = self
            .fields
            .iter()
            .chain(&self.extra)
            .filter(|f| matches!(f.source, Source::Attr(_)) && cond.uses(&f.name))
            .map(|f| {
                let mut col = f.empty_column();
                copy_runs(f, &mut col, &[Run { slot: FILL, src: 0, dst: 0, len: r.len }], &[]);
                (f.name.as_str(), col)
            })
            .collect();
        let (s, e) = (r.dst as usize, r.dst as usize + n);
        let col = |name: &str| -> Option<ColumnView<'_>> {
            if let Some((_, c)) = coords.iter().find(|(d, _)| d == name) {
                let size = c.datatype.size();
                return Some(ColumnView {
                    datatype: c.datatype,
                    cell_val_num: 1,
                    data: &c.data[s * size..e * size],
                    offsets: None,
                    validity: None,
                });
            }
            fills.iter().find(|(f, _)| *f == name).map(|(_, c)| ColumnView::from(c))
        };
        let mut keep = vec![true; n];
        cond.evaluate_views(&col, &mut keep)?;
        Ok(keep)
    }

    /// The aggregate of the global-order block of space tile `tile` (`size` cells) from
    /// tile metadata, when the block is the whole tile, the newest fragment meeting it holds
    /// all of it, and that fragment's metadata is exact for what `plan` needs; `None`
    /// otherwise.
    fn block_metadata(&mut self, plan: &Plan, tile: &[i128], size: u64) -> Result<Option<Partial>> {
        let dim_num = self.dims.len();
        let (lo, hi) = self.block_box(tile);
        let whole = (0..dim_num).all(|k| {
            let d = &self.dims[k];
            lo[k] == d.tile_lo(tile[k]) && hi[k] == d.tile_lo(tile[k]) + d.extent - 1
        });
        if !whole {
            return Ok(None);
        }
        let Some(fi) = self
            .frags
            .iter()
            .position(|f| (0..dim_num).all(|k| f.ned[k].0 <= hi[k] && lo[k] <= f.ned[k].1))
        else {
            // No fragment: every cell holds the fill value.
            let mut p = Partial::new(plan);
            p.add_cells(size);
            for (f, field) in plan.fields.iter().enumerate() {
                if !field.is_dim() {
                    p.scan_fill(plan, f, size);
                }
            }
            self.scan_tile_coords(plan, tile, size, &mut p);
            return Ok(Some(p));
        };
        let frag = &self.frags[fi];
        if !(0..dim_num).all(|k| frag.ned[k].0 <= lo[k] && hi[k] <= frag.ned[k].1) {
            return Ok(None);
        }
        let tile_idx: u64 = tile
            .iter()
            .zip(&frag.first_tile)
            .zip(&frag.tile_strides)
            .map(|((&t, &first), &stride)| (t - first) as u64 * stride)
            .sum();
        if tile_idx >= frag.tile_num || frag.cells.get(tile_idx) != size {
            return Ok(None);
        }
        // Attribute metadata (`None`: not stored, the cells hold fill values; dimensions
        // come from the coordinates).
        let mut metas: Vec<Option<Arc<FieldMeta>>> = Vec::with_capacity(plan.fields.len());
        for (f, field) in plan.fields.iter().enumerate() {
            if field.is_dim() || self.frags[fi].readers.get(f).is_none_or(Option::is_none) {
                metas.push(None);
                continue;
            }
            let meta = match self.metas.get(&(fi, f)) {
                Some(m) => m.clone(),
                None => {
                    let m = FieldMeta::load(
                        self.array.storage().as_ref(),
                        &self.frags[fi].fragment,
                        &field.name,
                        field.want,
                    )?
                    .map(Arc::new);
                    self.metas.insert((fi, f), m.clone());
                    m
                }
            };
            let Some(meta) = meta else { return Ok(None) };
            metas.push(Some(meta));
        }
        let mut stats = Vec::with_capacity(metas.len());
        for (m, field) in metas.iter().zip(&plan.fields) {
            match m {
                Some(m) => match m.exact(tile_idx, size, field.want) {
                    Some(s) => stats.push(Some(s)),
                    None => return Ok(None),
                },
                None => stats.push(None),
            }
        }
        let mut p = Partial::new(plan);
        p.add_tile_stats(plan, size, &stats);
        for (f, (m, field)) in metas.iter().zip(&plan.fields).enumerate() {
            if m.is_none() && !field.is_dim() {
                p.scan_fill(plan, f, size);
            }
        }
        self.scan_tile_coords(plan, tile, size, &mut p);
        Ok(Some(p))
    }

    /// Adds the coordinates of the `size` cells of space tile `tile` (all of it, in cell
    /// order) to the aggregates of `plan`'s dimensions.
    fn scan_tile_coords(&self, plan: &Plan, tile: &[i128], size: u64, part: &mut Partial) {
        if !plan.fields.iter().any(|f| f.is_dim()) {
            return;
        }
        let wanted = |name: &str| plan.fields.iter().any(|f| f.is_dim() && f.name == name);
        let coords = self.tile_coords(wanted, tile, size as usize);
        for (f, field) in plan.fields.iter().enumerate() {
            if field.is_dim() {
                let col = coords.iter().find(|(name, _)| *name == field.name).map(|(_, c)| c);
                let view = col.map(ColumnView::from);
                part.scan(plan, f, view.as_ref(), Cells::Range(0, size as usize));
            }
        }
    }

    /// Cells of a batch of a presized stream: about [`PRESIZED_BATCH_RUNS`] runs (batches
    /// hold no decoded tiles but those they share with the next, so larger batches mean fewer
    /// tiles decoded twice or kept), from [`UNBOUNDED_CHUNK_CELLS`] up to 64 times as many.
    fn presized_batch_cells(&self) -> u64 {
        // Result positions in a row of one tile (global order was never presized).
        let run = self.cells_per_run();
        run.saturating_mul(PRESIZED_BATCH_RUNS)
            .clamp(UNBOUNDED_CHUNK_CELLS, UNBOUNDED_CHUNK_CELLS * 64)
    }

    /// Makes room in `out` for every remaining cell (reads without a budget, whose batches
    /// all go to one result). When batches stream, the columns are allocated whole and zeroed
    /// at once (fresh pages, first touched by the parallel copies, instead of a single-thread
    /// `memset` per batch) and batches write into them in place; otherwise room is reserved.
    pub(crate) fn presize(&mut self, out: &mut ReadResult) {
        let Ok(cells) = usize::try_from(self.total - self.pos) else { return };
        // Bytes of each column, when they can be held at all (else batches grow them and the
        // allocation fails there, as any oversized read does).
        let bytes =
            |f: &OutField| cells.checked_mul(f.cell_size()).filter(|&b| isize::try_from(b).is_ok());
        let sizes: Option<Vec<usize>> = self.fields.iter().map(bytes).collect();
        let Some(sizes) = sizes else { return };
        if self.can_stream()
            && self.presized.is_none()
            && out.columns.iter().all(|c| c.data.is_empty())
        {
            for (col, &size) in out.columns.iter_mut().zip(&sizes) {
                col.data = vec![0; size];
            }
            self.presized = Some(self.pos);
            return;
        }
        for ((col, f), &size) in out.columns.iter_mut().zip(&self.fields).zip(&sizes) {
            if !f.is_var() {
                let _ = col.data.try_reserve(size);
            }
            if let Some(v) = &mut col.validity {
                let _ = v.try_reserve(cells);
            }
        }
    }

    /// The position where a batch `[p0, p1)` holding `runs` (sorted by position) reaches
    /// `budget` bytes (at least one cell).
    fn cut(&self, p0: u64, p1: u64, runs: &[Run], slot_list: &[(usize, u64)], budget: u64) -> u64 {
        let fixed: u64 = self.fields.iter().map(OutField::fixed_bytes_per_cell).sum();
        let var_fields: Vec<(usize, &OutField)> =
            self.fields.iter().enumerate().filter(|(_, f)| f.is_var()).collect();
        let mut used = 0u64;
        let mut tiles: Vec<Option<&DecodedTile>> = Vec::with_capacity(var_fields.len());
        for r in runs {
            tiles.clear();
            for &(i, _) in &var_fields {
                tiles.push(
                    (r.slot != FILL)
                        .then(|| slot_list[r.slot as usize])
                        .and_then(|(fi, t)| self.cache.get(&(fi, t, i)))
                        .map(|t| &**t),
                );
            }
            // Var bytes of cells `src..src + n` of the run.
            let var_bytes = |src: u64, n: u64| -> u64 {
                var_fields
                    .iter()
                    .zip(&tiles)
                    .map(|(&(_, f), t)| match t {
                        Some(t) => t.cells_range(src as usize, n as usize).len() as u64,
                        None => n * f.fill.len() as u64,
                    })
                    .sum()
            };
            let run_bytes = fixed * r.len + var_bytes(r.src, r.len);
            if used + run_bytes <= budget {
                used += run_bytes;
                continue;
            }
            // The budget ends inside this run.
            for k in 0..r.len {
                let b = fixed + var_bytes(r.src + k, 1);
                if used + b > budget {
                    return (p0 + r.dst + k).max(p0 + 1);
                }
                used += b;
            }
        }
        p1
    }

    /// The coordinates of dimension `d` at positions `p0..end`, into `col` in place from
    /// position `base` on, or appended.
    #[allow(clippy::too_many_arguments)]
    fn coord_column(
        &self,
        base: Option<u64>,
        col: &mut Column,
        field: &OutField,
        d: usize,
        pieces: &[Piece],
        p0: u64,
        end: u64,
    ) {
        let size = field.datatype.size();
        let n = (end - p0) as usize;
        let data = batch_slice(col, size, p0, n, base);
        let mut value = Vec::with_capacity(16);
        let dim_num = self.dims.len();
        let others: Vec<usize> = (0..dim_num).filter(|&k| k != d).collect();
        for piece in pieces {
            let ext: Vec<u64> =
                (0..dim_num).map(|k| (piece.hi[k] - piece.lo[k] + 1) as u64).collect();
            let strides = &piece.dst_strides;
            let mut write = |pos: u64, value: &[u8]| {
                if pos < n as u64 {
                    let at = pos as usize * size;
                    data[at..at + size].copy_from_slice(value);
                }
            };
            // The cells holding each value of dimension `d` form a box of the other
            // dimensions.
            for vi in 0..ext[d] {
                value.clear();
                push_int(field.datatype, piece.lo[d] + i128::from(vi), &mut value);
                let base = piece.dst_base - p0 + vi * strides[d];
                let Some((&inner, outer)) = others.split_last() else {
                    write(base, &value);
                    continue;
                };
                let mut idx = vec![0u64; outer.len()];
                loop {
                    let b =
                        base + outer.iter().zip(&idx).map(|(&k, &i)| i * strides[k]).sum::<u64>();
                    for i in 0..ext[inner] {
                        write(b + i * strides[inner], &value);
                    }
                    let mut j = outer.len();
                    loop {
                        if j == 0 {
                            break;
                        }
                        j -= 1;
                        idx[j] += 1;
                        if idx[j] < ext[outer[j]] {
                            break;
                        }
                        idx[j] = 0;
                    }
                    if idx.iter().all(|&x| x == 0) {
                        break;
                    }
                }
            }
        }
    }

    /// Moves the global-order cursor to the block holding `self.pos`.
    fn advance_cursor(&mut self) {
        let Some(mut c) = self.cursor.take() else { return };
        while !c.done {
            let size = self.block_size(&c.tile);
            if c.base + size > self.pos {
                break;
            }
            self.next_block(&mut c);
        }
        self.cursor = Some(c);
    }

    /// The box of the block (tile ∩ subarray) of space tile `tile` (global order: one range
    /// per dimension).
    fn block_box(&self, tile: &[i128]) -> (Vec<i128>, Vec<i128>) {
        let mut lo = Vec::with_capacity(tile.len());
        let mut hi = Vec::with_capacity(tile.len());
        for (d, &t) in self.dims.iter().zip(tile) {
            let (rlo, rhi) = d.ranges[0];
            lo.push(rlo.max(d.tile_lo(t)));
            hi.push(rhi.min(d.tile_lo(t) + d.extent - 1));
        }
        (lo, hi)
    }

    fn block_size(&self, tile: &[i128]) -> u64 {
        let (lo, hi) = self.block_box(tile);
        lo.iter().zip(&hi).map(|(l, h)| (h - l + 1) as u64).product()
    }

    fn next_block(&self, c: &mut BlockCursor) {
        c.base += self.block_size(&c.tile);
        let order: Vec<usize> = if self.tile_order == Layout::ColMajor {
            (0..self.dims.len()).collect()
        } else {
            (0..self.dims.len()).rev().collect()
        };
        for &d in &order {
            let dim = &self.dims[d];
            let last = dim.tile_of(dim.ranges[0].1);
            if c.tile[d] < last {
                c.tile[d] += 1;
                return;
            }
            c.tile[d] = dim.tile_of(dim.ranges[0].0);
        }
        c.done = true;
    }

    /// The pieces covering positions `p0..p1`.
    fn pieces(&self, p0: u64, p1: u64) -> Vec<Piece> {
        let mut out = Vec::new();
        let dim_num = self.dims.len();
        if self.layout == Layout::GlobalOrder {
            let Some(mut c) = self.cursor.clone() else { return out };
            let cell_col = self.cell_order == Layout::ColMajor;
            while !c.done && c.base < p1 {
                let (lo, hi) = self.block_box(&c.tile);
                let ext: Vec<u64> = lo.iter().zip(&hi).map(|(l, h)| (h - l + 1) as u64).collect();
                let size: u64 = ext.iter().product();
                let q0 = p0.max(c.base) - c.base;
                let q1 = p1.min(c.base + size) - c.base;
                if q0 < q1 {
                    let lstrides = strides(&ext, cell_col);
                    for b in grid_boxes(&ext, cell_col, q0, q1) {
                        let plo: Vec<i128> = (0..dim_num).map(|k| lo[k] + b[k].0 as i128).collect();
                        let phi: Vec<i128> = (0..dim_num).map(|k| lo[k] + b[k].1 as i128).collect();
                        let dst_base =
                            c.base + (0..dim_num).map(|k| b[k].0 * lstrides[k]).sum::<u64>();
                        out.push(Piece {
                            lo: plo,
                            hi: phi,
                            tile: c.tile.clone(),
                            dst_base,
                            dst_strides: lstrides.clone(),
                        });
                    }
                }
                self.next_block(&mut c);
            }
            return out;
        }
        let lens: Vec<u64> = self.dims.iter().map(|d| d.len).collect();
        for b in grid_boxes(&lens, self.layout == Layout::ColMajor, p0, p1) {
            // Per dimension, the grid interval split at range and tile boundaries.
            let segs: Vec<Vec<(i128, i128, u64, i128)>> =
                self.dims.iter().zip(&b).map(|(d, &(g0, g1))| segments(d, g0, g1)).collect();
            let mut idx = vec![0usize; dim_num];
            'outer: loop {
                let mut lo = Vec::with_capacity(dim_num);
                let mut hi = Vec::with_capacity(dim_num);
                let mut tile = Vec::with_capacity(dim_num);
                let mut dst_base = 0u64;
                for k in 0..dim_num {
                    let (l, h, g, t) = segs[k][idx[k]];
                    lo.push(l);
                    hi.push(h);
                    tile.push(t);
                    dst_base += g * self.grid_strides[k];
                }
                out.push(Piece { lo, hi, tile, dst_base, dst_strides: self.grid_strides.clone() });
                let mut k = dim_num;
                loop {
                    if k == 0 {
                        break 'outer;
                    }
                    k -= 1;
                    idx[k] += 1;
                    if idx[k] < segs[k].len() {
                        break;
                    }
                    idx[k] = 0;
                }
            }
        }
        out
    }

    /// Splits `piece` by the fragments' non-empty domains, newest first, into runs.
    fn carve(&self, piece: &Piece, p0: u64, slots: &mut Slots, runs: &mut Vec<Run>) -> Result<()> {
        let dim_num = self.dims.len();
        let cell_fast_first: Vec<usize> = if self.cell_order == Layout::ColMajor {
            (0..dim_num).collect()
        } else {
            (0..dim_num).rev().collect()
        };
        let dst_of = |lo: &[i128]| -> u64 {
            piece.dst_base - p0
                + (0..dim_num)
                    .map(|k| (lo[k] - piece.lo[k]) as u64 * piece.dst_strides[k])
                    .sum::<u64>()
        };
        let mut uncovered: Vec<(Vec<i128>, Vec<i128>)> = vec![(piece.lo.clone(), piece.hi.clone())];
        for (fi, frag) in self.frags.iter().enumerate() {
            if uncovered.is_empty() {
                break;
            }
            if !(0..dim_num).all(|k| frag.ned[k].0 <= piece.hi[k] && piece.lo[k] <= frag.ned[k].1) {
                continue;
            }
            // The fragment's tile holding the piece.
            let mut tile_idx = 0u64;
            for k in 0..dim_num {
                tile_idx += (piece.tile[k] - frag.first_tile[k]) as u64 * frag.tile_strides[k];
            }
            if tile_idx >= frag.tile_num {
                return Err(Error::Corrupt {
                    file: format!("{}/{}", frag.dir, crate::FRAGMENT_METADATA_FILE),
                    reason: format!("tile {tile_idx} past the fragment's {} tiles", frag.tile_num),
                });
            }
            let tile_lo: Vec<i128> =
                (0..dim_num).map(|k| self.dims[k].tile_lo(piece.tile[k])).collect();
            let mut rest = Vec::new();
            for (blo, bhi) in uncovered.drain(..) {
                let ilo: Vec<i128> = (0..dim_num).map(|k| blo[k].max(frag.ned[k].0)).collect();
                let ihi: Vec<i128> = (0..dim_num).map(|k| bhi[k].min(frag.ned[k].1)).collect();
                if (0..dim_num).any(|k| ilo[k] > ihi[k]) {
                    rest.push((blo, bhi));
                    continue;
                }
                let slot = match slots.map.get(&(fi, tile_idx)) {
                    Some(&s) => s,
                    None => {
                        slots.list.push((fi, tile_idx));
                        slots.tiles.push(piece.tile.clone());
                        let s = (slots.list.len() - 1) as u32;
                        slots.map.insert((fi, tile_idx), s);
                        s
                    }
                };
                let src_base: u64 =
                    (0..dim_num).map(|k| (ilo[k] - tile_lo[k]) as u64 * self.cell_strides[k]).sum();
                emit_runs(
                    &ilo,
                    &ihi,
                    &cell_fast_first,
                    Some((&self.cell_strides, src_base)),
                    &piece.dst_strides,
                    dst_of(&ilo),
                    |src, dst, len| runs.push(Run { slot, src, dst, len }),
                );
                subtract(&blo, &bhi, &ilo, &ihi, &mut rest);
            }
            uncovered = rest;
        }
        // What no fragment holds takes the fill value.
        let mut by_stride: Vec<usize> = (0..dim_num).collect();
        by_stride.sort_by_key(|&k| piece.dst_strides[k]);
        for (blo, bhi) in uncovered {
            emit_runs(
                &blo,
                &bhi,
                &by_stride,
                None,
                &piece.dst_strides,
                dst_of(&blo),
                |src, dst, len| {
                    runs.push(Run { slot: FILL, src, dst, len });
                },
            );
        }
        Ok(())
    }
}

/// A fragment tile as the streaming copy has it.
enum Loaded {
    /// Decoded whole (or cached from the previous batch).
    Whole(Arc<DecodedTile>),
    /// Only the chunks holding the cells of this batch.
    Part(TilePart),
    /// The fragment does not have the field: cells take the fill value.
    Missing,
}

/// The byte ranges of a tile that the copies `group` (field, first cell, destination) read,
/// sorted and merged.
fn wanted_bytes(group: &[(usize, u64, &mut [u8])], size: usize) -> Vec<Range<u64>> {
    let mut wanted: Vec<Range<u64>> = group
        .iter()
        .map(|(_, src, dst)| {
            let start = src * size as u64;
            start..start + dst.len() as u64
        })
        .collect();
    wanted.sort_unstable_by_key(|w| w.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(wanted.len());
    for w in wanted {
        match merged.last_mut() {
            Some(last) if w.start <= last.end => last.end = last.end.max(w.end),
            _ => merged.push(w),
        }
    }
    merged
}

/// The bytes of `col` (of `size`-byte cells) where positions `p0..p0 + n` go: in place when
/// the column holds every cell from position `base` on (see [`DenseReader::presize`]), else
/// appended (zeroed first).
fn batch_slice(col: &mut Column, size: usize, p0: u64, n: usize, base: Option<u64>) -> &mut [u8] {
    let bytes = n * size;
    let start = match base {
        Some(base) => (p0 - base) as usize * size,
        None => {
            let start = col.data.len();
            if start == 0 {
                col.data = vec![0; bytes];
            } else {
                col.data.resize(start + bytes, 0);
            }
            start
        }
    };
    &mut col.data[start..start + bytes]
}

/// Drops the parts of `runs` (sorted by position) at or after position `end` of the batch.
fn truncate_runs(runs: &mut Vec<Run>, end: u64) {
    runs.retain_mut(|r| {
        if r.dst >= end {
            return false;
        }
        r.len = r.len.min(end - r.dst);
        true
    });
}

/// Bytes of one piece of a masked copy (long runs are cut, so that work spreads).
const MASKED_PIECE_BYTES: usize = 256 << 10;

/// Appends to `col` (a column of the fixed-size `field`) the cells of `runs` (sorted by
/// `dst`, covering the batch once), each cell taken from its tile where the tile's condition
/// mask (`masks[slot]`) passes and the fill value (and fill validity) where it fails: whole
/// runs are copied through the mask by a branch-free select per cell, instead of being split
/// wherever the mask changes (random data would make runs of one or two cells).
fn copy_runs_masked(
    field: &OutField,
    col: &mut Column,
    runs: &[Run],
    tiles: &[Option<Arc<DecodedTile>>],
    masks: &[Arc<Vec<bool>>],
) {
    let tile = |slot: u32| -> Option<&DecodedTile> {
        if slot == FILL { None } else { tiles.get(slot as usize).and_then(|t| t.as_deref()) }
    };
    let n: u64 = runs.iter().map(|r| r.len).sum();
    let fill_valid = u8::from(field.fill_valid);
    if let Some(validity) = &mut col.validity {
        validity.reserve(n as usize);
        for r in runs {
            let (s, e) = (r.src as usize, (r.src + r.len) as usize);
            match tile(r.slot) {
                Some(t) => {
                    let mask = &masks[r.slot as usize][s..e];
                    match &t.validity {
                        Some(v) => validity.extend(
                            v[s..e].iter().zip(mask).map(|(&v, &m)| if m { v } else { fill_valid }),
                        ),
                        None => {
                            validity.extend(mask.iter().map(|&m| if m { 1 } else { fill_valid }))
                        }
                    }
                }
                None => validity.resize(validity.len() + r.len as usize, fill_valid),
            }
        }
    }
    let size = field.cell_size();
    if size == 0 {
        return;
    }
    let fill = field.fill_cell();
    let start = col.data.len();
    let bytes = n as usize * size;
    if start == 0 {
        col.data = vec![0; bytes];
    } else {
        col.data.resize(start + bytes, 0);
    }
    let piece_cells = (MASKED_PIECE_BYTES / size).max(1) as u64;
    let mut pieces: Vec<(u32, u64, &mut [u8])> = Vec::with_capacity(runs.len());
    let mut rest = &mut col.data[start..];
    for r in runs {
        let mut src = r.src;
        let mut left = r.len;
        while left > 0 {
            let len = left.min(piece_cells);
            let (dst, tail) = rest.split_at_mut(len as usize * size);
            pieces.push((r.slot, src, dst));
            rest = tail;
            src += len;
            left -= len;
        }
    }
    let work = |(slot, src, dst): (u32, u64, &mut [u8])| match tile(slot) {
        Some(t) => {
            let cells = dst.len() / size;
            let mask = &masks[slot as usize][src as usize..src as usize + cells];
            select_cells(dst, &t.data[t.cells_range(src as usize, cells)], mask, &fill);
        }
        None => {
            for c in dst.chunks_exact_mut(size) {
                c.copy_from_slice(&fill);
            }
        }
    };
    if bytes >= MASKED_PIECE_BYTES {
        pieces.into_par_iter().for_each(work);
    } else {
        pieces.into_iter().for_each(work);
    }
}

/// `dst` cell `i` = `src` cell `i` where `mask[i]`, else `fill` (cells of `fill.len()` bytes).
/// One-, two-, four- and eight-byte cells are selected as unsigned integers with bit masks
/// (vector code, no branch per cell) when both slices are aligned for the type.
fn select_cells(dst: &mut [u8], src: &[u8], mask: &[bool], fill: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    debug_assert_eq!(dst.len(), mask.len() * fill.len());
    let done = match fill.len() {
        1 => select_as::<u8>(dst, src, mask, fill),
        2 => select_as::<u16>(dst, src, mask, fill),
        4 => select_as::<u32>(dst, src, mask, fill),
        8 => select_as::<u64>(dst, src, mask, fill),
        _ => false,
    };
    if !done {
        let size = fill.len();
        for ((d, s), &m) in dst.chunks_exact_mut(size).zip(src.chunks_exact(size)).zip(mask) {
            d.copy_from_slice(if m { s } else { fill });
        }
    }
}

/// An unsigned integer a cell of its width is selected as.
trait Lane: bytemuck::Pod + std::ops::BitAnd<Output = Self> + std::ops::BitOr<Output = Self> {
    /// All ones when `m`, else zero.
    fn spread(m: bool) -> Self;
    /// The bitwise complement.
    fn not(self) -> Self;
}

macro_rules! lane_impl {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            #[inline(always)]
            fn spread(m: bool) -> Self {
                <$t>::from(m).wrapping_neg()
            }
            #[inline(always)]
            fn not(self) -> Self {
                !self
            }
        }
    )*};
}
lane_impl!(u8, u16, u32, u64);

/// [`select_cells`] on cells read as `T`; `false` when a slice is not aligned for `T`.
fn select_as<T: Lane>(dst: &mut [u8], src: &[u8], mask: &[bool], fill: &[u8]) -> bool {
    let (Ok(d), Ok(s)) =
        (bytemuck::try_cast_slice_mut::<u8, T>(dst), bytemuck::try_cast_slice::<u8, T>(src))
    else {
        return false;
    };
    let f: T = bytemuck::pod_read_unaligned(fill);
    for ((d, &s), &m) in d.iter_mut().zip(s).zip(mask) {
        let keep = T::spread(m);
        *d = (s & keep) | (f & keep.not());
    }
    true
}

/// Calls `f(run, passes)` for the parts of `r` where the condition bitmap of its tile
/// (`masks[r.slot]`) is constant; runs of the fill value pass whole.
fn split_run(r: Run, masks: &[Arc<Vec<bool>>], mut f: impl FnMut(Run, bool)) {
    if r.slot == FILL {
        f(r, true);
        return;
    }
    let mask = &masks[r.slot as usize];
    let (s, n) = (r.src as usize, r.len as usize);
    let mut i = 0;
    while i < n {
        let v = mask[s + i];
        let mut j = i + 1;
        while j < n && mask[s + j] == v {
            j += 1;
        }
        f(
            Run { slot: r.slot, src: r.src + i as u64, dst: r.dst + i as u64, len: (j - i) as u64 },
            v,
        );
        i = j;
    }
}

/// Strides of a grid of `lens`: row-major (last dimension fastest) or col-major.
fn strides(lens: &[u64], col_major: bool) -> Vec<u64> {
    let n = lens.len();
    let mut s = vec![1u64; n];
    if col_major {
        for k in 1..n {
            s[k] = s[k - 1].saturating_mul(lens[k - 1]);
        }
    } else {
        for k in (0..n.saturating_sub(1)).rev() {
            s[k] = s[k + 1].saturating_mul(lens[k + 1]);
        }
    }
    s
}

/// The grid interval `[g0, g1]` of dimension `d` as segments `(lo, hi, grid start, tile)`,
/// each inside one range and one space tile.
fn segments(d: &DDim, g0: u64, g1: u64) -> Vec<(i128, i128, u64, i128)> {
    let mut out = Vec::new();
    for (&(rlo, rhi), &off) in d.ranges.iter().zip(&d.range_off) {
        let rlen = (rhi - rlo + 1) as u64;
        let (s, e) = (g0.max(off), g1.min(off + rlen - 1));
        if s > e {
            continue;
        }
        let mut c = rlo + (s - off) as i128;
        let last = rlo + (e - off) as i128;
        while c <= last {
            let t = d.tile_of(c);
            let tile_end = d.tile_lo(t) + d.extent - 1;
            let h = last.min(tile_end);
            out.push((c, h, off + (c - rlo) as u64, t));
            c = h + 1;
        }
    }
    out
}

/// The positions `q0..q1` of a grid of `lens` (row-major, or col-major) as boxes of grid
/// indexes, one `(first, last)` per dimension; at most about `2 × dimensions` boxes.
fn grid_boxes(lens: &[u64], col_major: bool, q0: u64, q1: u64) -> Vec<Vec<(u64, u64)>> {
    let n = lens.len();
    let mut out = Vec::new();
    if q0 >= q1 || n == 0 {
        return out;
    }
    // Levels: slowest dimension first.
    let order: Vec<usize> = if col_major { (0..n).rev().collect() } else { (0..n).collect() };
    let lvl_lens: Vec<u64> = order.iter().map(|&d| lens[d]).collect();
    let unravel = |p: u64| -> Vec<u64> {
        let mut idx = vec![0u64; n];
        let mut rest = p;
        for k in (0..n).rev() {
            idx[k] = rest % lvl_lens[k];
            rest /= lvl_lens[k];
        }
        idx
    };
    let a = unravel(q0);
    let b = unravel(q1 - 1);
    let mut prefix = Vec::with_capacity(n);
    let mut lvl_boxes = Vec::new();
    decompose(&a, &b, &lvl_lens, 0, &mut prefix, &mut lvl_boxes);
    for lb in lvl_boxes {
        let mut bx = vec![(0u64, 0u64); n];
        for (k, &d) in order.iter().enumerate() {
            bx[d] = lb[k];
        }
        out.push(bx);
    }
    out
}

/// Boxes covering the cells from multi-index `a` to `b` (inclusive, in level order, equal on
/// levels `..k`, fixed in `prefix`).
fn decompose(
    a: &[u64],
    b: &[u64],
    lens: &[u64],
    k: usize,
    prefix: &mut Vec<(u64, u64)>,
    out: &mut Vec<Vec<(u64, u64)>>,
) {
    let n = lens.len();
    if k == n {
        out.push(prefix.clone());
        return;
    }
    if a[k] == b[k] {
        prefix.push((a[k], a[k]));
        decompose(a, b, lens, k + 1, prefix, out);
        prefix.pop();
        return;
    }
    let full_tail =
        |prefix: &mut Vec<(u64, u64)>, lo: u64, hi: u64, out: &mut Vec<Vec<(u64, u64)>>| {
            let mut bx = prefix.clone();
            bx.push((lo, hi));
            bx.extend((k + 1..n).map(|j| (0, lens[j] - 1)));
            out.push(bx);
        };
    let a_rest_zero = a[k + 1..].iter().all(|&x| x == 0);
    let b_rest_max = b[k + 1..].iter().zip(&lens[k + 1..]).all(|(&x, &m)| x == m - 1);
    let mut mid_lo = a[k] + 1;
    if a_rest_zero {
        mid_lo = a[k];
    } else {
        // From `a` to the end of its row at level k.
        let mut end = a.to_vec();
        for j in k + 1..n {
            end[j] = lens[j] - 1;
        }
        prefix.push((a[k], a[k]));
        decompose(a, &end, lens, k + 1, prefix, out);
        prefix.pop();
    }
    let mid_hi = if b_rest_max { Some(b[k]) } else { b[k].checked_sub(1) };
    if let Some(mid_hi) = mid_hi
        && mid_lo <= mid_hi
    {
        full_tail(prefix, mid_lo, mid_hi, out);
    }
    if !b_rest_max {
        let mut start = b.to_vec();
        for s in start.iter_mut().skip(k + 1) {
            *s = 0;
        }
        prefix.push((b[k], b[k]));
        decompose(&start, b, lens, k + 1, prefix, out);
        prefix.pop();
    }
}

/// Adds to `out` the boxes covering `[blo, bhi]` minus `[ilo, ihi]` (which lies inside it).
fn subtract(
    blo: &[i128],
    bhi: &[i128],
    ilo: &[i128],
    ihi: &[i128],
    out: &mut Vec<(Vec<i128>, Vec<i128>)>,
) {
    let mut lo = blo.to_vec();
    let mut hi = bhi.to_vec();
    for k in 0..blo.len() {
        if lo[k] < ilo[k] {
            let mut h = hi.clone();
            h[k] = ilo[k] - 1;
            out.push((lo.clone(), h));
            lo[k] = ilo[k];
        }
        if hi[k] > ihi[k] {
            let mut l = lo.clone();
            l[k] = ihi[k] + 1;
            out.push((l, hi.clone()));
            hi[k] = ihi[k];
        }
    }
}

/// Calls `f(src, dst, len)` for runs covering box `[lo, hi]`: cells contiguous both in the
/// source (strides `src.0`, first cell `src.1`; `None` for the fill value) and in the result
/// (strides `dst_strides`, first position `dst_base`). `order` lists dimensions fastest first
/// in the source's order.
fn emit_runs(
    lo: &[i128],
    hi: &[i128],
    order: &[usize],
    src: Option<(&[u64], u64)>,
    dst_strides: &[u64],
    dst_base: u64,
    mut f: impl FnMut(u64, u64, u64),
) {
    let ext: Vec<u64> = lo.iter().zip(hi).map(|(l, h)| (h - l + 1) as u64).collect();
    let src_strides = src.map(|(s, _)| s);
    let src_base = src.map_or(0, |(_, b)| b);
    let mut len = 1u64;
    let mut k = 0;
    while k < order.len() {
        let d = order[k];
        let ok = ext[d] == 1 || (src_strides.is_none_or(|s| s[d] == len) && dst_strides[d] == len);
        if !ok {
            break;
        }
        len *= ext[d];
        k += 1;
    }
    let outer: Vec<usize> = order[k..].iter().copied().filter(|&d| ext[d] > 1).collect();
    let mut idx = vec![0u64; outer.len()];
    loop {
        let mut s = src_base;
        let mut t = dst_base;
        for (j, &d) in outer.iter().enumerate() {
            if let Some(ss) = src_strides {
                s += idx[j] * ss[d];
            }
            t += idx[j] * dst_strides[d];
        }
        f(s, t, len);
        let mut j = 0;
        loop {
            if j == outer.len() {
                return;
            }
            idx[j] += 1;
            if idx[j] < ext[outer[j]] {
                break;
            }
            idx[j] = 0;
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The masked copy equals a cell-by-cell choice for every cell size, aligned or not.
    #[test]
    fn select_cells_equals_cell_by_cell() {
        for size in [1usize, 2, 3, 4, 8, 16] {
            for offset in [0usize, 1] {
                let n = 1000;
                let src: Vec<u8> = (0..n * size + offset).map(|i| (i * 7 + 3) as u8).collect();
                let src = &src[offset..];
                let mask: Vec<bool> = (0..n).map(|i| (i * 13) % 5 < 2).collect();
                let fill: Vec<u8> = (0..size).map(|i| 0xA0 + i as u8).collect();
                let mut buf = vec![0u8; n * size + offset];
                let dst = &mut buf[offset..];
                select_cells(dst, src, &mask, &fill);
                for (i, &m) in mask.iter().enumerate() {
                    let want = if m { &src[i * size..(i + 1) * size] } else { &fill[..] };
                    assert_eq!(&dst[i * size..(i + 1) * size], want, "size {size} cell {i}");
                }
            }
        }
    }

    fn cells_of(boxes: &[Vec<(u64, u64)>], lens: &[u64], col: bool) -> Vec<u64> {
        let s = strides(lens, col);
        let mut v = Vec::new();
        for b in boxes {
            let mut idx: Vec<u64> = b.iter().map(|r| r.0).collect();
            'l: loop {
                v.push(idx.iter().zip(&s).map(|(i, s)| i * s).sum());
                let mut k = idx.len();
                loop {
                    if k == 0 {
                        break 'l;
                    }
                    k -= 1;
                    idx[k] += 1;
                    if idx[k] <= b[k].1 {
                        break;
                    }
                    idx[k] = b[k].0;
                }
            }
        }
        v.sort_unstable();
        v
    }

    #[test]
    fn grid_boxes_cover_exactly_the_range() {
        for lens in [vec![7u64], vec![3, 4], vec![2, 3, 5], vec![1, 6, 1]] {
            let total: u64 = lens.iter().product();
            for col in [false, true] {
                for q0 in 0..total {
                    for q1 in q0 + 1..=total {
                        let boxes = grid_boxes(&lens, col, q0, q1);
                        assert!(boxes.len() <= 2 * lens.len() + 1, "{lens:?} {q0}..{q1}");
                        assert_eq!(
                            cells_of(&boxes, &lens, col),
                            (q0..q1).collect::<Vec<_>>(),
                            "{lens:?} col={col} {q0}..{q1}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn runs_merge_whole_rows() {
        // A 4x4 tile copied whole into a 4-wide result: one run.
        let mut runs = Vec::new();
        emit_runs(&[0, 0], &[3, 3], &[1, 0], Some((&[4, 1], 0)), &[4, 1], 0, |s, d, l| {
            runs.push((s, d, l))
        });
        assert_eq!(runs, [(0, 0, 16)]);
        // The same tile into an 8-wide result: one run per row.
        runs.clear();
        emit_runs(&[0, 0], &[3, 3], &[1, 0], Some((&[4, 1], 0)), &[8, 1], 0, |s, d, l| {
            runs.push((s, d, l))
        });
        assert_eq!(runs, [(0, 0, 4), (4, 8, 4), (8, 16, 4), (12, 24, 4)]);
        // Col-major result of row-major cells: cell by cell.
        runs.clear();
        emit_runs(&[0, 0], &[1, 1], &[1, 0], Some((&[2, 1], 0)), &[1, 2], 0, |s, d, l| {
            runs.push((s, d, l))
        });
        assert_eq!(runs, [(0, 0, 1), (1, 2, 1), (2, 1, 1), (3, 3, 1)]);
    }
}
