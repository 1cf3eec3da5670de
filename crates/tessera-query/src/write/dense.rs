//! Dense writes: the space tiles a subarray intersects, each filled from the user's cells
//! (row-major, col-major or global order) and padded where the subarray does not reach
//! (`DenseTiler`, `OrderedWriter`, `GlobalOrderWriter` in libtiledb).

use std::ops::Range;

use tessera_fragment::stats::dense_tile_slabs;
use tessera_schema::ArraySchema;
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

/// The tiling of a dense write: the subarray, the space tiles it intersects and the orders.
#[derive(Debug, Clone)]
pub(crate) struct DenseTiling {
    /// The written subarray, per dimension `[lo, hi]`.
    pub(crate) sub: Vec<[i128; 2]>,
    dom_lo: Vec<i128>,
    extent: Vec<i128>,
    /// First and last space-tile index per dimension.
    tile_idx: Vec<[i128; 2]>,
    tile_order: Layout,
    cell_order: Layout,
    /// Cells per space tile.
    pub(crate) cells_per_tile: usize,
}

impl DenseTiling {
    /// The tiling of `sub` in `schema`'s domain.
    ///
    /// # Errors
    /// [`Error::InvalidWrite`] for a dimension without an integer domain and extent.
    pub(crate) fn new(schema: &ArraySchema, sub: Vec<[i128; 2]>) -> Result<Self> {
        let mut dom_lo = Vec::new();
        let mut extent = Vec::new();
        let mut tile_idx = Vec::new();
        let mut cells: i128 = 1;
        for (d, dim) in schema.dimensions.iter().enumerate() {
            let int = |b: &[u8]| crate::read::order::int_value(dim.datatype, b);
            let (Some([lo, _]), Some(e)) = (&dim.domain, &dim.tile_extent) else {
                return Err(Error::InvalidWrite(format!(
                    "dimension {:?} has no domain or tile extent",
                    dim.name
                )));
            };
            let (Some(lo), Some(e)) = (int(lo), int(e)) else {
                return Err(Error::InvalidWrite(format!(
                    "dimension {:?}: dense writes need integer dimensions",
                    dim.name
                )));
            };
            if e <= 0 {
                return Err(Error::InvalidWrite(format!("dimension {:?}: extent {e}", dim.name)));
            }
            dom_lo.push(lo);
            extent.push(e);
            tile_idx.push([(sub[d][0] - lo) / e, (sub[d][1] - lo) / e]);
            cells = cells
                .checked_mul(e)
                .ok_or_else(|| Error::InvalidWrite("the space tiles hold too many cells".into()))?;
        }
        let cells_per_tile =
            usize::try_from(cells)
                .ok()
                .filter(|&c| c <= u32::MAX as usize * 16)
                .ok_or_else(|| Error::InvalidWrite(format!("{cells} cells per space tile")))?;
        Ok(DenseTiling {
            sub,
            dom_lo,
            extent,
            tile_idx,
            tile_order: schema.tile_order,
            cell_order: schema.cell_order,
            cells_per_tile,
        })
    }

    /// Number of cells of the subarray.
    pub(crate) fn sub_cells(&self) -> u128 {
        self.sub.iter().fold(1u128, |n, r| n.saturating_mul((r[1] - r[0] + 1) as u128))
    }

    /// Number of space tiles the subarray intersects (checked not to overflow by
    /// [`Self::new`]).
    pub(crate) fn tile_num(&self) -> u64 {
        self.tile_idx.iter().fold(1u64, |n, t| n.saturating_mul((t[1] - t[0] + 1) as u64))
    }

    /// The range of tile `k` (in tile order) per dimension.
    pub(crate) fn tile(&self, k: u64) -> Vec<[i128; 2]> {
        let n = self.sub.len();
        let counts: Vec<i128> = self.tile_idx.iter().map(|t| t[1] - t[0] + 1).collect();
        let mut rest = i128::from(k);
        let mut idx = vec![0i128; n];
        let dims: Vec<usize> = if self.tile_order == Layout::ColMajor {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for d in dims {
            idx[d] = rest % counts[d];
            rest /= counts[d];
        }
        (0..n)
            .map(|d| {
                let lo = self.dom_lo[d] + (self.tile_idx[d][0] + idx[d]) * self.extent[d];
                [lo, lo + self.extent[d] - 1]
            })
            .collect()
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
