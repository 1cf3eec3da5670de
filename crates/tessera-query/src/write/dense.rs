//! Dense writes: the space tiles a subarray intersects, each filled from the user's cells
//! (row-major, col-major or global order) and padded where the subarray does not reach
//! (`DenseTiler`, `OrderedWriter`, `GlobalOrderWriter` in libtiledb).

use std::ops::Range;

use tessera_fragment::stats::dense_tile_slabs;
use tessera_schema::ArraySchema;
use tessera_schema::space_tiles::SpaceTiles;
use tessera_types::Layout;

use crate::write::input::FieldCells;
use crate::write::sink::{FieldTile, Tile};
use crate::{Error, Result};

/// A run of cells copied at once: `len` cells from input cell `src` to tile cell `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) dst: usize,
    pub(crate) src: usize,
    pub(crate) len: usize,
}

/// The tiling of a dense write: the space tiles of its subarray ([`SpaceTiles`], whose fields
/// and tile arithmetic it derefs to) and how input cells are copied into them.
#[derive(Debug, Clone)]
pub(crate) struct DenseTiling {
    space: SpaceTiles,
}

impl std::ops::Deref for DenseTiling {
    type Target = SpaceTiles;

    fn deref(&self) -> &SpaceTiles {
        &self.space
    }
}

impl DenseTiling {
    /// The tiling of `sub` in `schema`'s domain.
    ///
    /// # Errors
    /// [`Error::InvalidWrite`] for a dimension without an integer domain and extent.
    pub(crate) fn new(schema: &ArraySchema, sub: Vec<[i128; 2]>) -> Result<Self> {
        match SpaceTiles::new(schema, sub) {
            Ok(space) => Ok(DenseTiling { space }),
            Err(tessera_types::Error::Invalid { reason, .. }) => Err(Error::InvalidWrite(reason)),
            Err(e) => Err(Error::InvalidWrite(e.to_string())),
        }
    }

    /// Whether the subarray starts and ends on space-tile bounds (what a global-order write
    /// needs).
    pub(crate) fn tile_aligned(&self, schema: &ArraySchema) -> bool {
        self.sub.iter().enumerate().all(|(d, r)| {
            let (lo, e) = (self.dom_lo[d], self.extent[d]);
            let dom_hi = schema.dimensions[d].domain.as_ref().and_then(|[_, hi]| {
                crate::read::order::int_value(schema.dimensions[d].datatype, hi)
            });
            (r[0] - lo) % e == 0 && ((r[1] - lo + 1) % e == 0 || Some(r[1]) == dom_hi)
        })
    }

    /// Strides of the tile's cells in cell order.
    fn tile_strides(&self) -> Vec<i128> {
        strides(&self.extent, self.cell_order)
    }

    /// The copy runs of tile `tile` (its ranges) from cells given in `layout` over `input`
    /// (per dimension `[lo, hi]` of the region the input cells cover, in `layout` order),
    /// sorted by tile position, adjacent runs merged.
    pub(crate) fn runs(&self, tile: &[[i128; 2]], input: &[[i128; 2]], layout: Layout) -> Vec<Run> {
        let n = tile.len();
        let widths: Vec<i128> = input.iter().map(|r| r[1] - r[0] + 1).collect();
        let in_strides = strides(&widths, layout);
        let t_strides = self.tile_strides();
        let lo: Vec<i128> =
            (0..n).map(|d| tile[d][0].max(self.sub[d][0]).max(input[d][0])).collect();
        let hi: Vec<i128> =
            (0..n).map(|d| tile[d][1].min(self.sub[d][1]).min(input[d][1])).collect();
        if (0..n).any(|d| lo[d] > hi[d]) {
            return Vec::new();
        }
        // Fastest dimension in cell order, then the others from fastest to slowest.
        let order: Vec<usize> = if self.cell_order == Layout::ColMajor {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        let fast = order[0];
        let w_fast = (hi[fast] - lo[fast] + 1) as usize;
        let contiguous = in_strides[fast] == 1;
        let mut runs: Vec<Run> = Vec::new();
        let mut c = lo.clone();
        loop {
            let dst: i128 = (0..n).map(|d| (c[d] - tile[d][0]) * t_strides[d]).sum();
            let src: i128 = (0..n).map(|d| (c[d] - input[d][0]) * in_strides[d]).sum();
            let (dst, src) = (dst as usize, src as usize);
            if contiguous {
                push_run(&mut runs, Run { dst, src, len: w_fast });
            } else {
                let step = in_strides[fast] as usize;
                for k in 0..w_fast {
                    push_run(&mut runs, Run { dst: dst + k, src: src + k * step, len: 1 });
                }
            }
            // Next row: advance the slower dimensions, fastest of them first.
            let mut k = 1;
            loop {
                if k == n {
                    return runs;
                }
                let d = order[k];
                c[d] += 1;
                if c[d] <= hi[d] {
                    break;
                }
                c[d] = lo[d];
                k += 1;
            }
        }
    }

    /// The cell slabs libtiledb's metadata generator sees for tile `tile` of a write in
    /// `layout`.
    pub(crate) fn slabs(&self, tile: &[[i128; 2]], layout: Layout) -> Result<Vec<Range<u64>>> {
        dense_tile_slabs(&self.sub, tile, self.cell_order, layout)
            .map_err(|e| Error::InvalidWrite(format!("dense tile slabs: {e}")))
    }
}

fn push_run(runs: &mut Vec<Run>, r: Run) {
    if let Some(last) = runs.last_mut()
        && last.dst + last.len == r.dst
        && last.src + last.len == r.src
    {
        last.len += r.len;
        return;
    }
    runs.push(r);
}

/// Strides of a box of `widths` cells in `layout` (row-major: last dimension fastest).
fn strides(widths: &[i128], layout: Layout) -> Vec<i128> {
    let n = widths.len();
    let mut s = vec![1i128; n];
    if layout == Layout::ColMajor {
        for d in 1..n {
            s[d] = s[d - 1] * widths[d - 1];
        }
    } else {
        for d in (0..n.saturating_sub(1)).rev() {
            s[d] = s[d + 1] * widths[d + 1];
        }
    }
    s
}

/// Builds one field's tile of `cells` cells from `runs` over `input`, padding the rest.
pub(crate) fn fill_tile(input: &FieldCells, runs: &[Run], cells: usize) -> FieldTile {
    let mut tile = input.new_tile(cells);
    let mut pos = 0;
    for r in runs {
        if r.dst > pos {
            input.push_padding(&mut tile, r.dst - pos);
        }
        input.push_run(&mut tile, r.src, r.src + r.len);
        pos = r.dst + r.len;
    }
    if cells > pos {
        input.push_padding(&mut tile, cells - pos);
    }
    tile
}

/// The one tile of a write whose cells fill it exactly, in its cell order, without its
/// fields (the caller moves the cells in); `None` for any other write.
///
/// # Errors
/// As [`DenseTiling::slabs`].
pub(crate) fn whole_tile(
    tiling: &DenseTiling,
    inputs: &[FieldCells],
    layout: Layout,
) -> Result<Option<Tile>> {
    let cells = tiling.cells_per_tile;
    if tiling.tile_num() != 1 || inputs.iter().any(|f| f.len() != cells) {
        return Ok(None);
    }
    let tile = tiling.tile(0);
    if tiling.runs(&tile, &tiling.sub, layout) != [Run { dst: 0, src: 0, len: cells }] {
        return Ok(None);
    }
    Ok(Some(Tile {
        cell_num: cells as u64,
        fields: Vec::new(),
        slabs: Some(tiling.slabs(&tile, layout)?),
    }))
}

/// Builds tile `k` of every field.
pub(crate) fn build_tile(
    tiling: &DenseTiling,
    k: u64,
    inputs: &[FieldCells],
    input_region: &[[i128; 2]],
    layout: Layout,
    slab_layout: Layout,
) -> Result<Tile> {
    let tile = tiling.tile(k);
    let runs = tiling.runs(&tile, input_region, layout);
    let cells = tiling.cells_per_tile;
    Ok(Tile {
        cell_num: cells as u64,
        fields: inputs.iter().map(|f| fill_tile(f, &runs, cells)).collect(),
        slabs: Some(tiling.slabs(&tile, slab_layout)?),
    })
}
