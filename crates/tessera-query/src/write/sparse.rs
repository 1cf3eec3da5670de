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
/// [`Error::InvalidWrite`] naming the first coordinate out of bounds, as libtiledb words it.
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
                return Err(Error::InvalidWrite(format!(
                    "Coordinate {} is out of {what} bounds [{}, {}] on dimension '{}'",
                    s(cells.cell(i)),
                    s(lo),
                    s(hi),
                    dim.name
                )));
            }
        }
    }
    Ok(())
}

/// Orders cells by the global order of an array.
pub(crate) struct CellOrder<'c> {
    order: GlobalOrder,
    dims: Vec<&'c FieldCells>,
    /// For arrays without string dimensions: `width` keys per cell whose lexicographic order
    /// is the global order.
    keys: Option<(usize, Vec<u64>)>,
}

impl<'c> CellOrder<'c> {
    /// The order of `dims`' cells in `schema`.
    pub(crate) fn new(schema: &ArraySchema, dims: Vec<&'c FieldCells>) -> Self {
        let order = GlobalOrder::new(schema);
        let mut me = CellOrder { order, dims, keys: None };
        if !me.order.dims.iter().any(|d| d.var) {
            let width = me.key_width();
            let n = me.dims.first().map_or(0, |c| c.len());
            let mut keys = vec![0u64; n * width];
            keys.par_chunks_mut(width.max(1)).enumerate().for_each(|(i, k)| me.fill_key(i, k));
            me.keys = Some((width, keys));
        }
        me
    }

    fn key_width(&self) -> usize {
        if self.order.is_hilbert() {
            1 + self.order.dims.len()
        } else {
            self.order.tile_dims().len() + self.order.dims.len()
        }
    }

    fn fill_key(&self, i: usize, out: &mut [u64]) {
        let mut k = 0;
        if self.order.is_hilbert() {
            let coords: Vec<&[u8]> = self.dims.iter().map(|c| c.cell(i)).collect();
            out[0] = self.order.hilbert_value(&coords);
            k = 1;
        } else {
            for d in self.order.tile_dims() {
                let o = &self.order.dims[d];
                let (lo, ext) = o.tiling.as_ref().expect("tiled dimension");
                out[k] = tile_index(o.datatype, self.dims[d].cell(i), lo, ext);
                k += 1;
            }
        }
        for d in self.order.cell_dims() {
            out[k] = ord_key(self.order.dims[d].datatype, self.dims[d].cell(i));
            k += 1;
        }
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
            for d in self.order.tile_dims() {
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
        for d in self.order.cell_dims() {
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

/// The message libtiledb gives for a duplicate.
pub(crate) fn duplicate_error(schema: &ArraySchema, dims: &[&FieldCells], i: usize) -> Error {
    Error::InvalidWrite(format!(
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
