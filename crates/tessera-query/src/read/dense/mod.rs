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
//! Aggregates go tile by tile in global order (one range per dimension): each whole space
//! tile that the newest fragment holding it covers entirely is answered from that fragment's
//! tile metadata when it is exact, or else read, decoded, tested and aggregated in one pass
//! by one worker ([`fused`]); the other blocks (partial tiles, overlapping fragments, fill
//! values, dimensions) walk the same runs as reads without building columns, as do
//! multi-range subarrays in row-major order. Aggregates of dimensions scan the coordinates of
//! the runs' positions (dense fragments store none).
//!
//! Under a memory budget, batches never hold the whole tiles they meet: fixed-size attributes
//! without a condition stream from the chunks of the batch's cells ([`stream`]); the other
//! reads load each fragment tile's cells of the batch compact, and evaluate the condition
//! over those only ([`bounded`]).
//!
//! One module per part: [`geometry`] (pieces, carving, runs), [`batch`] (batch sizes,
//! fetching, masks, coordinates), [`stream`] (the copy of fixed-size attributes straight
//! from tiles or chunks), [`bounded`] (budgeted batches of the other reads), [`masked`]
//! (copies through a condition's mask), [`aggregate`] and [`fused`] (its one-pass tiles).

mod aggregate;
mod batch;
mod bounded;
mod fused;
mod geometry;
mod masked;
mod stream;

use batch::truncate_runs;
use geometry::strides;
use masked::{copy_runs_masked, split_run};
use stream::batch_slice;

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;
use tessera_types::Layout;

use crate::aggregate::{Cells, Partial, Plan};
use crate::array::Array;
use crate::condition::{ColumnView, QueryCondition};
use crate::read::column::{FILL, OutField, Run, Source, copy_runs, empty_result, for_each_piece};
use crate::read::order::{int_value, push_int};
use crate::read::stats::{ConditionMeta, Decided, FieldMeta};
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
    /// The condition's tile metadata by fragment, loaded when first needed.
    cond_metas: HashMap<usize, Arc<ConditionMeta>>,
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
            cond_metas: HashMap::new(),
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
                total += self.avg_var_bytes(i, f);
            }
        }
        total.max(1)
    }

    /// The var-sized bytes of a cell of field `i` (`f`, of the fields then the condition's
    /// attributes), on average over the fragments' tiles (the fill value's without any).
    fn avg_var_bytes(&self, i: usize, f: &OutField) -> u64 {
        let (mut bytes, mut cells) = (0u64, 0u64);
        for fr in &self.frags {
            if let Some(Some(r)) = fr.readers.get(i) {
                bytes += r.total_var_size().unwrap_or(0);
                cells += fr.tile_num * fr.cells.get(0);
            }
        }
        if cells > 0 { bytes.div_ceil(cells) } else { f.fill.len() as u64 }
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
            let (pieces, runs, slots) = self.carved(p0, p1)?;
            let keep = self.next_tiles(p1, want);
            self.stream(out, &pieces, &runs, &slots, &keep, p0, p1, None)?;
            self.pos = p1;
            self.advance_cursor();
            return Ok(true);
        }
        if let Some(budget) = self.budget {
            self.bounded_batch(out, budget)?;
            return Ok(true);
        }
        let (pieces, runs, slots) = self.prepare(p0, p1)?;
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
        let cache = &self.cache;
        let tiles = |i: usize| -> Vec<Option<Arc<DecodedTile>>> {
            slot_list.iter().map(|&(f, t)| cache.get(&(f, t, i)).cloned()).collect()
        };
        self.copy_batch(out, &pieces, &runs, &split, &masks, &tiles, p0, p1);
        self.pos = p1;
        self.advance_cursor();
        Ok(true)
    }

    /// Appends positions `p0..end` to `out`: dimensions from `pieces`, attribute `i` from
    /// `tiles(i)` (its tile of each slot) along `runs`, through the condition's `masks` when
    /// there are any (fixed-size fields copied through the mask, var-sized ones along
    /// `split`, the runs split where the mask changes).
    #[allow(clippy::too_many_arguments)]
    fn copy_batch(
        &self,
        out: &mut ReadResult,
        pieces: &[Piece],
        runs: &[Run],
        split: &[Run],
        masks: &[Arc<Vec<bool>>],
        tiles: &(dyn Fn(usize) -> Vec<Option<Arc<DecodedTile>>> + Sync),
        p0: u64,
        end: u64,
    ) {
        out.columns.par_iter_mut().zip(self.fields.par_iter()).enumerate().for_each(
            |(i, (col, field))| match field.source {
                Source::Dim(d) => self.coord_column(None, col, field, d, pieces, p0, end),
                Source::Attr(_) => {
                    let tiles = tiles(i);
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
                let (pieces, runs, slots) = self.carved(p0, p1)?;
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
}

#[cfg(test)]
mod tests {
    use super::geometry::{emit_runs, grid_boxes};
    use super::masked::select_cells;
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
