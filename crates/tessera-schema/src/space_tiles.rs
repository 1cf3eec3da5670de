//! The space tiles of a dense box: which tiles of the domain's regular grid a box (a dense
//! write's subarray, or a dense fragment's non-empty domain) meets, in tile order, and the
//! cells of each. The dense writer tiles its input with it; `tessera-verify` finds the tiles a
//! dense fragment was written as.

use tessera_types::{Error, Layout, Result, int_value};

use crate::ArraySchema;

/// The structure named by the errors of [`SpaceTiles::new`].
const STRUCTURE: &str = "dense tiling";

/// The space tiles a box of an integer domain meets, and the orders of tiles and cells.
#[derive(Debug, Clone)]
pub struct SpaceTiles {
    /// The box, per dimension `[lo, hi]`.
    pub sub: Vec<[i128; 2]>,
    /// The domain's lower bound per dimension.
    pub dom_lo: Vec<i128>,
    /// The tile extent per dimension.
    pub extent: Vec<i128>,
    /// First and last space-tile index per dimension.
    pub tile_idx: Vec<[i128; 2]>,
    /// The schema's tile order.
    pub tile_order: Layout,
    /// The schema's cell order.
    pub cell_order: Layout,
    /// Cells per space tile.
    pub cells_per_tile: usize,
}

impl SpaceTiles {
    /// The space tiles of `sub` in `schema`'s domain.
    ///
    /// # Errors
    /// [`Error::Invalid`] (field `dimension`, its reason naming the dimension) for a
    /// dimension without an integer domain and a positive extent, or space tiles of more
    /// cells than a tile can hold.
    pub fn new(schema: &ArraySchema, sub: Vec<[i128; 2]>) -> Result<Self> {
        let invalid = |reason: String| Error::invalid(STRUCTURE, "dimension", 0, reason);
        let mut dom_lo = Vec::new();
        let mut extent = Vec::new();
        let mut tile_idx = Vec::new();
        let mut cells: i128 = 1;
        for (d, dim) in schema.dimensions.iter().enumerate() {
            let int = |b: &[u8]| int_value(dim.datatype, b);
            let (Some([lo, _]), Some(e)) = (&dim.domain, &dim.tile_extent) else {
                return Err(invalid(format!(
                    "dimension {:?} has no domain or tile extent",
                    dim.name
                )));
            };
            let (Some(lo), Some(e)) = (int(lo), int(e)) else {
                return Err(invalid(format!(
                    "dimension {:?}: dense writes need integer dimensions",
                    dim.name
                )));
            };
            if e <= 0 {
                return Err(invalid(format!("dimension {:?}: extent {e}", dim.name)));
            }
            let Some(r) = sub.get(d) else {
                return Err(invalid(format!("dimension {:?}: no range in the box", dim.name)));
            };
            dom_lo.push(lo);
            extent.push(e);
            tile_idx.push([(r[0] - lo) / e, (r[1] - lo) / e]);
            cells = cells
                .checked_mul(e)
                .ok_or_else(|| invalid("the space tiles hold too many cells".into()))?;
        }
        let cells_per_tile = usize::try_from(cells)
            .ok()
            .filter(|&c| c <= u32::MAX as usize * 16)
            .ok_or_else(|| invalid(format!("{cells} cells per space tile")))?;
        Ok(SpaceTiles {
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
    pub fn sub_cells(&self) -> u128 {
        self.sub.iter().fold(1u128, |n, r| n.saturating_mul((r[1] - r[0] + 1) as u128))
    }

    /// Number of space tiles the subarray intersects (checked not to overflow by
    /// [`Self::new`]).
    pub fn tile_num(&self) -> u64 {
        self.tile_idx.iter().fold(1u64, |n, t| n.saturating_mul((t[1] - t[0] + 1) as u64))
    }

    /// The range of tile `k` (in tile order) per dimension.
    pub fn tile(&self, k: u64) -> Vec<[i128; 2]> {
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
}
