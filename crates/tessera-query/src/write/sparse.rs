//! Sparse writes: coordinates checked against the domain, cells sorted into the global order
//! (tile order then cell order, or Hilbert order) and checked for duplicates, then cut into
//! tiles of `capacity` cells (`UnorderedWriter`, `GlobalOrderWriter` in libtiledb).

use std::cmp::Ordering;

use rayon::prelude::*;
use tessera_schema::ArraySchema;
use tessera_types::Datatype;

use crate::read::order::{GlobalOrder, f64_value, int_value, ord_key, tile_index};
use crate::write::input::FieldCells;
use crate::{Error, Result};

/// Shows one coordinate as libtiledb's messages do.
pub(crate) fn show(dt: Datatype, var: bool, b: &[u8]) -> String {
    if var {
        return String::from_utf8_lossy(b).into_owned();
    }
    match int_value(dt, b) {
        Some(v) => v.to_string(),
        None => f64_value(dt, b).to_string(),
    }
}

/// The coordinates of cell `i`, for messages: `(1, 2)`.
fn show_cell(schema: &ArraySchema, dims: &[&FieldCells], i: usize) -> String {
    let parts: Vec<String> = schema
        .dimensions
        .iter()
        .zip(dims)
        .map(|(d, c)| show(d.datatype, d.is_var(), c.cell(i)))
        .collect();
    format!("({})", parts.join(", "))
}

/// Checks every coordinate against its dimension's domain and the current domain.
///
/// # Errors
/// [`Error::OutOfDomain`] naming the first coordinate out of bounds, as libtiledb words it.
pub(crate) fn check_bounds(schema: &ArraySchema, dims: &[&FieldCells]) -> Result<()> {
    for (d, (dim, cells)) in schema.dimensions.iter().zip(dims).enumerate() {
        let dt = tessera_fragment::dim_types(schema)[d];
        let mut bounds: Vec<(&[u8], &[u8], &str)> = Vec::new();
        if let Some([lo, hi]) = &dim.domain {
            bounds.push((lo, hi, "domain"));
        }
        if let Some(cd) = &schema.current_domain {
            let [lo, hi] = &cd.ranges[d];
            bounds.push((lo, hi, "current domain"));
        }
        for (lo, hi, what) in bounds {
            let bad = (0..cells.len()).into_par_iter().find_first(|&i| {
                let v = cells.cell(i);
                dt.compare(v, lo) == Ordering::Less || dt.compare(v, hi) == Ordering::Greater
            });
            if let Some(i) = bad {
                let s = |b: &[u8]| show(dim.datatype, dim.is_var(), b);
                return Err(Error::OutOfDomain {
                    dimension: dim.name.clone(),
                    message: format!(
                        "Coordinate {} is out of {what} bounds [{}, {}] on dimension '{}'",
                        s(cells.cell(i)),
                        s(lo),
                        s(hi),
                        dim.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Orders cells by the global order of an array.
pub(crate) struct CellOrder<'c> {
    order: GlobalOrder,
    /// The tiled dimensions in tile order, and every dimension in cell order.
    tile_dims: Vec<usize>,
    cell_dims: Vec<usize>,
    dims: Vec<&'c FieldCells>,
    /// For arrays without string dimensions: `width` keys per cell whose lexicographic order
    /// is the global order.
    keys: Option<(usize, Vec<u64>)>,
}

impl<'c> CellOrder<'c> {
    /// The order of `dims`' cells in `schema`.
    pub(crate) fn new(schema: &ArraySchema, dims: Vec<&'c FieldCells>) -> Self {
        let order = GlobalOrder::new(schema);
        let (tile_dims, cell_dims) = (order.tile_dims(), order.cell_dims());
        CellOrder { order, tile_dims, cell_dims, dims, keys: None }
    }

    /// Precomputes every cell's keys (arrays without string dimensions), so comparisons
    /// read them instead of decoding coordinates.
    pub(crate) fn with_keys(mut self) -> Self {
        self.build_keys();
        self
    }

    fn build_keys(&mut self) {
        if !self.order.dims.iter().any(|d| d.var) {
            let width = self.key_width();
            let n = self.dims.first().map_or(0, |c| c.len());
            let mut keys = vec![0u64; n * width];
            keys.par_chunks_mut(width.max(1)).enumerate().for_each(|(i, k)| self.fill_key(i, k));
            self.keys = Some((width, keys));
        }
    }

    fn key_width(&self) -> usize {
        if self.order.is_hilbert() {
            1 + self.order.dims.len()
        } else {
            self.tile_dims.len() + self.order.dims.len()
        }
    }

    fn fill_key(&self, i: usize, out: &mut [u64]) {
        let mut k = 0;
        if self.order.is_hilbert() {
            let coords: Vec<&[u8]> = self.dims.iter().map(|c| c.cell(i)).collect();
            out[0] = self.order.hilbert_value(&coords);
            k = 1;
        } else {
            for &d in &self.tile_dims {
                let o = &self.order.dims[d];
                let (lo, ext) = o.tiling.as_ref().expect("tiled dimension");
                out[k] = tile_index(o.datatype, self.dims[d].cell(i), lo, ext);
                k += 1;
            }
        }
        for &d in &self.cell_dims {
            out[k] = ord_key(self.order.dims[d].datatype, self.dims[d].cell(i));
            k += 1;
        }
    }

    /// Sorts every cell into the global order (unstable, as libtiledb's parallel sort) and,
    /// when `check_duplicates`, finds two cells with the same coordinates: returns the
    /// permutation, or `Err(i)` with a cell `i` that has a duplicate. Consumes the keys.
    pub(crate) fn sort(
        &mut self,
        check_duplicates: bool,
    ) -> std::result::Result<Vec<usize>, usize> {
        let n = self.dims.first().map_or(0, |c| c.len());
        if self.keys.is_none()
            && let Some(sorted) = self.sort_packed(n, check_duplicates)
        {
            return sorted;
        }
        if self.keys.is_none() {
            self.build_keys();
        }
        if let Some((w, keys)) = self.keys.take()
            && u32::try_from(n).is_ok()
        {
            // The coordinate keys are the last `dims` entries of each key.
            let coords_from = w - self.order.dims.len();
            macro_rules! by_width {
                ($($k:literal),*) => {
                    match w {
                        $($k => return sort_keys::<$k>(keys, coords_from, check_duplicates),)*
                        _ => self.keys = Some((w, keys)),
                    }
                };
            }
            by_width!(1, 2, 3, 4, 5, 6, 7, 8);
        }
        let perm = self.sorted();
        if check_duplicates && let Some(k) = self.first_duplicate(&perm) {
            return Err(perm[k]);
        }
        Ok(perm)
    }

    /// The sort of [`sort`](Self::sort) with each cell's keys bit-packed into one `u64`, when
    /// the spread of every key over the cells allows it (typical: a few tiles, coordinates
    /// spanning far less than their type): 16 bytes per cell instead of `8 × width + 8`, and
    /// one integer comparison. `None` when the keys do not fit (or no keys are precomputed
    /// for this array).
    fn sort_packed(
        &self,
        n: usize,
        check_duplicates: bool,
    ) -> Option<std::result::Result<Vec<usize>, usize>> {
        const MAX_WIDTH: usize = 8;
        let w = self.key_width();
        if self.order.dims.iter().any(|d| d.var) || w > MAX_WIDTH || u32::try_from(n).is_err() {
            return None;
        }
        // The smallest and largest value of each key component over all cells.
        let fresh = || ([u64::MAX; MAX_WIDTH], [0u64; MAX_WIDTH]);
        let (lo, hi) = (0..n)
            .into_par_iter()
            .fold(fresh, |(mut lo, mut hi), i| {
                let mut k = [0u64; MAX_WIDTH];
                self.fill_key(i, &mut k[..w]);
                for j in 0..w {
                    lo[j] = lo[j].min(k[j]);
                    hi[j] = hi[j].max(k[j]);
                }
                (lo, hi)
            })
            .reduce(fresh, |(mut lo, mut hi), (l, h)| {
                for j in 0..w {
                    lo[j] = lo[j].min(l[j]);
                    hi[j] = hi[j].max(h[j]);
                }
                (lo, hi)
            });
        // Bits per component, first component in the highest bits.
        let bits: Vec<u32> = (0..w).map(|j| 64 - (hi[j] - lo[j]).leading_zeros()).collect();
        if bits.iter().sum::<u32>() > 64 {
            return None;
        }
        let pack = |i: usize| {
            let mut k = [0u64; MAX_WIDTH];
            self.fill_key(i, &mut k[..w]);
            (0..w).fold(0u64, |acc, j| {
                // A zero-bit component is constant: it adds nothing.
                // (A lone 64-bit component shifts an empty accumulator out entirely.)
                if bits[j] == 0 { acc } else { acc.unbounded_shl(bits[j]) | (k[j] - lo[j]) }
            })
        };
        let mut cells: Vec<(u64, u32)> =
            (0..n).into_par_iter().map(|i| (pack(i), i as u32)).collect();
        cells.par_sort_unstable_by_key(|c| c.0);
        // Equal coordinates give equal keys (tile indexes and Hilbert values derive from
        // the coordinates), and equal keys equal coordinates.
        if check_duplicates
            && let Some(k) =
                (1..cells.len()).into_par_iter().find_first(|&k| cells[k - 1].0 == cells[k].0)
        {
            return Some(Err(cells[k].1 as usize));
        }
        Some(Ok(cells.into_par_iter().map(|(_, i)| i as usize).collect()))
    }

    /// Compares cells `a` and `b` in the global order.
    pub(crate) fn cmp(&self, a: usize, b: usize) -> Ordering {
        if let Some((w, keys)) = &self.keys {
            return keys[a * w..a * w + w].cmp(&keys[b * w..b * w + w]);
        }
        if self.order.is_hilbert() {
            let h = |i: usize| {
                let coords: Vec<&[u8]> = self.dims.iter().map(|c| c.cell(i)).collect();
                self.order.hilbert_value(&coords)
            };
            let o = h(a).cmp(&h(b));
            if o != Ordering::Equal {
                return o;
            }
        } else {
            for &d in &self.tile_dims {
                let o = &self.order.dims[d];
                let (lo, ext) = o.tiling.as_ref().expect("tiled dimension");
                let t = |i: usize| tile_index(o.datatype, self.dims[d].cell(i), lo, ext);
                let c = t(a).cmp(&t(b));
                if c != Ordering::Equal {
                    return c;
                }
            }
        }
        self.cmp_coords(a, b)
    }

    /// Compares the coordinates of cells `a` and `b` in cell order (strings as libtiledb's
    /// writer compares them: bytes as signed `char`, a prefix first).
    fn cmp_coords(&self, a: usize, b: usize) -> Ordering {
        for &d in &self.cell_dims {
            let o = &self.order.dims[d];
            let (x, y) = (self.dims[d].cell(a), self.dims[d].cell(b));
            let c = if o.var {
                let sx = x.iter().map(|&v| v as i8);
                let sy = y.iter().map(|&v| v as i8);
                sx.cmp(sy)
            } else {
                ord_key(o.datatype, x).cmp(&ord_key(o.datatype, y))
            };
            if c != Ordering::Equal {
                return c;
            }
        }
        Ordering::Equal
    }

    /// Whether cells `a` and `b` have the same coordinates.
    pub(crate) fn same_coords(&self, a: usize, b: usize) -> bool {
        self.cmp_coords(a, b) == Ordering::Equal
    }

    /// The permutation that sorts every cell into the global order (unstable, as libtiledb's
    /// parallel sort).
    pub(crate) fn sorted(&self) -> Vec<usize> {
        let n = self.dims.first().map_or(0, |c| c.len());
        let mut perm: Vec<usize> = (0..n).collect();
        perm.par_sort_unstable_by(|&a, &b| self.cmp(a, b));
        perm
    }

    /// The first position in `cells` (a sequence of cell indexes in write order) where two
    /// neighbours have the same coordinates.
    pub(crate) fn first_duplicate(&self, cells: &[usize]) -> Option<usize> {
        (1..cells.len()).into_par_iter().find_first(|&k| self.same_coords(cells[k - 1], cells[k]))
    }

    /// The first position in `0..n` where a cell comes before its predecessor.
    pub(crate) fn first_unsorted(&self, n: usize) -> Option<usize> {
        (1..n).into_par_iter().find_first(|&k| self.cmp(k - 1, k) == Ordering::Greater)
    }
}

/// Sorts cells by their `W` keys each (stored back to back in `keys`), keys and cell index
/// side by side so the sort reads memory in order; see [`CellOrder::sort`].
fn sort_keys<const W: usize>(
    keys: Vec<u64>,
    coords_from: usize,
    check_duplicates: bool,
) -> std::result::Result<Vec<usize>, usize> {
    let mut cells: Vec<([u64; W], u32)> = keys
        .par_chunks_exact(W)
        .enumerate()
        .map(|(i, k)| (<[u64; W]>::try_from(k).expect("W keys"), i as u32))
        .collect();
    drop(keys);
    cells.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if check_duplicates
        && let Some(k) = (1..cells.len())
            .into_par_iter()
            .find_first(|&k| cells[k - 1].0[coords_from..] == cells[k].0[coords_from..])
    {
        return Err(cells[k].1 as usize);
    }
    Ok(cells.into_par_iter().map(|(_, i)| i as usize).collect())
}

/// The message libtiledb gives for a duplicate.
pub(crate) fn duplicate_error(schema: &ArraySchema, dims: &[&FieldCells], i: usize) -> Error {
    Error::DuplicateCoordinates(format!(
        "Duplicate coordinates {} are not allowed",
        show_cell(schema, dims, i)
    ))
}

/// The message for cells out of global order.
pub(crate) fn unsorted_error(schema: &ArraySchema, dims: &[&FieldCells], i: usize) -> Error {
    Error::InvalidWrite(format!(
        "Write failed; Coordinates {} succeed {} in the global order",
        show_cell(schema, dims, i - 1),
        show_cell(schema, dims, i)
    ))
}

/// Compares the first cell of `next` with the last cell of `prev` (two submissions of a
/// global-order write of the same fields).
pub(crate) fn cmp_across(
    schema: &ArraySchema,
    prev: &[&FieldCells],
    last: usize,
    next: &[&FieldCells],
) -> Ordering {
    // Build a two-cell input and compare within it.
    let pair: Vec<FieldCells> = prev
        .iter()
        .zip(next)
        .map(|(p, n)| {
            let mut c = FieldCells {
                name: p.name.clone(),
                cell_size: p.cell_size,
                elem_size: p.elem_size,
                data: Vec::new(),
                offsets: p.offsets.as_ref().map(|_| Vec::new()),
                validity: None,
                pad: None,
            };
            let mut tile = c.new_tile(2);
            p.push_run(&mut tile, last, last + 1);
            n.push_run(&mut tile, 0, 1);
            c.data = tile.data;
            c.offsets = tile.offsets;
            c
        })
        .collect();
    let order = CellOrder::new(schema, pair.iter().collect());
    order.cmp(0, 1)
}

/// The first cell of `dims`, for messages.
pub(crate) fn show_first(schema: &ArraySchema, dims: &[&FieldCells]) -> String {
    show_cell(schema, dims, 0)
}

#[cfg(test)]
mod tests {
    use tessera_schema::{Attribute, Dimension};
    use tessera_types::{ArrayType, Layout};

    use super::*;

    fn int64_cells(name: &str, values: &[i64]) -> FieldCells {
        FieldCells {
            name: name.into(),
            cell_size: Some(8),
            elem_size: 8,
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            offsets: None,
            validity: None,
            pad: None,
        }
    }

    fn schema(cell_order: Layout, span: i64, tile: i64) -> ArraySchema {
        let dim =
            |n: &str| Dimension::new(n, Datatype::Int64).domain_i64(-span, span).tile_i64(tile);
        let mut b = ArraySchema::builder(ArrayType::Sparse)
            .dimension(dim("x"))
            .dimension(dim("y"))
            .attribute(Attribute::new("a", Datatype::Int32));
        if cell_order == Layout::Hilbert {
            b = b.cell_order(Layout::Hilbert);
        }
        b.build().expect("schema")
    }

    /// Distinct pseudo-random points in [-spread, spread]^2.
    fn points(n: usize, spread: i64) -> (Vec<i64>, Vec<i64>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % (2 * spread as u64 + 1)) as i64 - spread
        };
        let mut seen = std::collections::HashSet::new();
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        while xs.len() < n {
            let p = (next(), next());
            if seen.insert(p) {
                xs.push(p.0);
                ys.push(p.1);
            }
        }
        (xs, ys)
    }

    /// The packed sort (small key spreads) and the wide-key sort (spreads too large to pack)
    /// both give the order the cell-by-cell comparison gives, in row-major and Hilbert order.
    #[test]
    fn packed_and_wide_sorts_agree_with_comparisons() {
        let big = 1i64 << 61;
        for order in [Layout::RowMajor, Layout::Hilbert] {
            for (span, tile, spread) in [(1000, 100, 1000), (big, 1 << 20, big), (big, 1, 1 << 40)]
            {
                let schema = schema(order, span, tile);
                let (xs, ys) = points(2000, spread);
                let (x, y) = (int64_cells("x", &xs), int64_cells("y", &ys));
                let mut fast = CellOrder::new(&schema, vec![&x, &y]);
                let perm = fast.sort(true).expect("no duplicates");
                let slow = CellOrder::new(&schema, vec![&x, &y]).sorted();
                let coords = |p: &[usize]| p.iter().map(|&i| (xs[i], ys[i])).collect::<Vec<_>>();
                assert_eq!(coords(&perm), coords(&slow), "{order:?} span {span} spread {spread}");
            }
        }
    }

    /// One key component spanning all 64 bits (a uint64 dimension whose single tile holds
    /// coordinates from 0 to near 2^64, so the tile index takes no bit) still packs and sorts.
    #[test]
    fn a_full_width_key_component_packs() {
        let top = u64::MAX - 1;
        let mut dim = Dimension::new("x", Datatype::UInt64);
        dim.domain = Some([0u64.to_le_bytes().to_vec(), top.to_le_bytes().to_vec()]);
        dim.tile_extent = Some(top.to_le_bytes().to_vec());
        let schema = ArraySchema::builder(ArrayType::Sparse)
            .dimension(dim)
            .attribute(Attribute::new("a", Datatype::Int32))
            .build()
            .expect("schema");
        let values = [top - 1, 7, 0, 1 << 63];
        let x = FieldCells {
            name: "x".into(),
            cell_size: Some(8),
            elem_size: 8,
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            offsets: None,
            validity: None,
            pad: None,
        };
        let order = CellOrder::new(&schema, vec![&x]);
        let packed = order.sort_packed(values.len(), true).expect("the keys fit 64 bits");
        let perm = packed.expect("no duplicates");
        let sorted: Vec<u64> = perm.iter().map(|&i| values[i]).collect();
        assert_eq!(sorted, [0, 7, 1 << 63, top - 1]);
    }

    #[test]
    fn packed_sort_finds_duplicates() {
        let schema = schema(Layout::RowMajor, 1000, 100);
        let x = int64_cells("x", &[5, 7, 5, 1]);
        let y = int64_cells("y", &[3, 3, 3, 1]);
        let dup = CellOrder::new(&schema, vec![&x, &y]).sort(true).expect_err("a duplicate");
        assert!(dup == 0 || dup == 2, "{dup}");
        let perm = CellOrder::new(&schema, vec![&x, &y]).sort(false).expect("allowed");
        assert_eq!(perm.len(), 4);
        assert_eq!(perm[0], 3);
    }
}
