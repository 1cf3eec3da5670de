//! Building result columns: the fields a read returns, copying runs of cells from decoded
//! tiles (whole slabs at once), fill values, and sizes for memory budgets.

use std::sync::Arc;

use rayon::prelude::*;

use tessera_schema::ArraySchema;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use crate::read::tiles::DecodedTile;
use crate::result::{Column, ReadResult};

/// Where an output column's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Dimension `d`.
    Dim(usize),
    /// Attribute `a` of the array's schema.
    Attr(usize),
}

/// One column a read returns.
#[derive(Debug, Clone)]
pub(crate) struct OutField {
    /// The field's name.
    pub(crate) name: String,
    /// Datatype of the values.
    pub(crate) datatype: Datatype,
    /// Values per cell or [`CELL_VAL_NUM_VAR`].
    pub(crate) cell_val_num: u32,
    /// Whether cells carry validity.
    pub(crate) nullable: bool,
    /// Where values come from.
    pub(crate) source: Source,
    /// Bytes of a cell no fragment wrote (attributes).
    pub(crate) fill: Vec<u8>,
    /// Validity of such a cell.
    pub(crate) fill_valid: bool,
}

impl OutField {
    /// Dimension `d` of `schema`.
    pub(crate) fn dim(schema: &ArraySchema, d: usize) -> Self {
        let dim = &schema.dimensions[d];
        OutField {
            name: dim.name.clone(),
            datatype: dim.datatype,
            cell_val_num: dim.cell_val_num,
            nullable: false,
            source: Source::Dim(d),
            fill: Vec::new(),
            fill_valid: true,
        }
    }

    /// Attribute `a` of `schema`.
    pub(crate) fn attr(schema: &ArraySchema, a: usize) -> Self {
        let attr = &schema.attributes[a];
        OutField {
            name: attr.name.clone(),
            datatype: attr.datatype,
            cell_val_num: attr.cell_val_num,
            nullable: attr.nullable,
            source: Source::Attr(a),
            fill: attr.fill_value.clone(),
            fill_valid: attr.fill_value_validity,
        }
    }

    /// Whether values are var-sized.
    pub(crate) fn is_var(&self) -> bool {
        self.cell_val_num == CELL_VAL_NUM_VAR
    }

    /// Bytes per cell of a fixed-size field.
    pub(crate) fn cell_size(&self) -> usize {
        if self.is_var() { 0 } else { self.datatype.size() * self.cell_val_num as usize }
    }

    /// Result bytes of one cell besides its var-sized values: fixed values, the offset of a
    /// var cell, the validity byte.
    pub(crate) fn fixed_bytes_per_cell(&self) -> u64 {
        let base = if self.is_var() { 8 } else { self.cell_size() as u64 };
        base + u64::from(self.nullable)
    }

    /// An empty column of this field.
    pub(crate) fn empty_column(&self) -> Column {
        Column::new(self.name.clone(), self.datatype, self.cell_val_num, self.nullable)
    }

    /// The fill value of one cell, never empty for a fixed-size field (a fill of the wrong
    /// length is repeated or cut to the cell size).
    pub(crate) fn fill_cell(&self) -> Vec<u8> {
        if self.is_var() || self.fill.len() == self.cell_size() {
            return self.fill.clone();
        }
        let size = self.cell_size();
        if self.fill.is_empty() {
            return vec![0; size];
        }
        self.fill.iter().copied().cycle().take(size).collect()
    }
}

/// The empty result of `fields`.
pub(crate) fn empty_result(fields: &[OutField]) -> ReadResult {
    ReadResult { columns: fields.iter().map(OutField::empty_column).collect() }
}

/// A run of `len` cells copied from cell `src` of a tile to position `dst` of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    /// The tile's slot, or [`FILL`].
    pub(crate) slot: u32,
    /// First cell in the tile.
    pub(crate) src: u64,
    /// First position in the result.
    pub(crate) dst: u64,
    /// Number of cells.
    pub(crate) len: u64,
}

/// The slot of runs that take the fill value.
pub(crate) const FILL: u32 = u32::MAX;

/// Appends to `col` (a column of `field`) the cells of `runs`, which are sorted by `dst` and
/// cover positions `0..n` once each; `tiles[slot]` is the field's tile of each slot (`None`
/// when the fragment does not have the field: the cells take the fill value). Every run is
/// one copy of its values (and validity), without zero-filling first.
pub(crate) fn copy_runs(
    field: &OutField,
    col: &mut Column,
    runs: &[Run],
    tiles: &[Option<Arc<DecodedTile>>],
) {
    let tile = |slot: u32| -> Option<&DecodedTile> {
        if slot == FILL { None } else { tiles.get(slot as usize).and_then(|t| t.as_deref()) }
    };
    let n: u64 = runs.iter().map(|r| r.len).sum();
    if let Some(validity) = &mut col.validity {
        validity.reserve(n as usize);
        for r in runs {
            let (s, e) = (r.src as usize, (r.src + r.len) as usize);
            match tile(r.slot) {
                Some(t) => match &t.validity {
                    Some(v) => validity.extend_from_slice(&v[s..e]),
                    None => validity.resize(validity.len() + r.len as usize, 1),
                },
                None => {
                    validity.resize(validity.len() + r.len as usize, u8::from(field.fill_valid));
                }
            }
        }
    }
    if field.is_var() {
        let offsets = col.offsets.get_or_insert_with(Vec::new);
        offsets.reserve(n as usize);
        let fill = &field.fill;
        for r in runs {
            match tile(r.slot) {
                Some(t) => {
                    let o = t.offsets.as_deref().unwrap_or_default();
                    let range = t.cells_range(r.src as usize, r.len as usize);
                    // Offsets relative to the run's first value, moved to the column's end.
                    let shift = col.data.len() as u64;
                    let first = range.start as u64;
                    let s = r.src as usize;
                    offsets.extend(o[s..s + r.len as usize].iter().map(|&x| x - first + shift));
                    col.data.extend_from_slice(&t.data[range]);
                }
                None => {
                    for _ in 0..r.len {
                        offsets.push(col.data.len() as u64);
                        col.data.extend_from_slice(fill);
                    }
                }
            }
        }
    } else {
        let size = field.cell_size();
        let fill = field.fill_cell();
        let bytes = n as usize * size;
        if size > 0 && bytes >= PAR_COPY_MIN_BYTES {
            copy_fixed_par(col, runs, &tile, &fill, size, bytes);
            return;
        }
        col.data.reserve(bytes);
        for r in runs {
            match tile(r.slot) {
                Some(t) => col
                    .data
                    .extend_from_slice(&t.data[t.cells_range(r.src as usize, r.len as usize)]),
                None => {
                    for _ in 0..r.len {
                        col.data.extend_from_slice(&fill);
                    }
                }
            }
        }
    }
}

/// Fixed-size values at least this large are copied on the rayon pool.
const PAR_COPY_MIN_BYTES: usize = 1 << 20;

/// Bytes of one piece of a parallel copy (long runs are split into pieces of this size).
const PAR_COPY_PIECE_BYTES: usize = 256 << 10;

/// Cuts `dst`, the cells of `runs` (`size` bytes each) one after the other, into pieces of
/// at most `piece_cells` cells (so that long runs spread over the cores), handing `f` each
/// piece with its run's slot and its first cell in the source tile.
pub(crate) fn for_each_piece<'b>(
    runs: &[Run],
    mut dst: &'b mut [u8],
    size: usize,
    piece_cells: u64,
    mut f: impl FnMut(u32, u64, &'b mut [u8]),
) {
    for r in runs {
        let (mut src, mut left) = (r.src, r.len);
        while left > 0 {
            let len = left.min(piece_cells);
            let (piece, tail) = std::mem::take(&mut dst).split_at_mut(len as usize * size);
            dst = tail;
            f(r.slot, src, piece);
            src += len;
            left -= len;
        }
    }
}

/// The fixed-size branch of [`copy_runs`] for large results: `bytes` bytes are appended to
/// `col.data` at once (a fresh zeroed allocation when the column is empty, so its pages are
/// first touched by the copies), then every run, cut into pieces of at most
/// [`PAR_COPY_PIECE_BYTES`], is copied into its own slot on the rayon pool.
fn copy_fixed_par<'t>(
    col: &mut Column,
    runs: &[Run],
    tile: &(dyn Fn(u32) -> Option<&'t DecodedTile> + Sync),
    fill: &[u8],
    size: usize,
    bytes: usize,
) {
    let start = col.data.len();
    if start == 0 {
        col.data = vec![0; bytes];
    } else {
        col.data.resize(start + bytes, 0);
    }
    let piece_cells = (PAR_COPY_PIECE_BYTES / size).max(1) as u64;
    let mut pieces: Vec<(u32, u64, &mut [u8])> = Vec::with_capacity(runs.len());
    for_each_piece(runs, &mut col.data[start..], size, piece_cells, |slot, src, dst| {
        pieces.push((slot, src, dst));
    });
    pieces.into_par_iter().for_each(|(slot, src, dst)| match tile(slot) {
        Some(t) => dst.copy_from_slice(&t.data[t.cells_range(src as usize, dst.len() / size)]),
        None => {
            for c in dst.chunks_exact_mut(size) {
                c.copy_from_slice(fill);
            }
        }
    });
}

/// Appends to `col` (a column of `field`) the result cells given in order as `(slot, cell)`;
/// runs of consecutive cells of one tile are copied at once.
pub(crate) fn gather(
    field: &OutField,
    col: &mut Column,
    cells: &[(u32, u32)],
    tiles: &[Option<Arc<DecodedTile>>],
) {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        let (slot, first) = cells[i];
        let mut len = 1;
        while i + len < cells.len() && cells[i + len] == (slot, first + len as u32) {
            len += 1;
        }
        let slot = if tiles.get(slot as usize).is_some_and(Option::is_some) { slot } else { FILL };
        runs.push(Run { slot, src: u64::from(first), dst: i as u64, len: len as u64 });
        i += len;
    }
    copy_runs(field, col, &runs, tiles);
}
