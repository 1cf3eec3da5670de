//! Query results: one column per dimension or attribute, laid out as TileDB's result buffers
//! (values, plus offsets for var-sized cells and validity bytes for nullable ones).

use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

/// One field's values for the cells of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The dimension or attribute name.
    pub name: String,
    /// Datatype of each value.
    pub datatype: Datatype,
    /// Values per cell, or [`CELL_VAL_NUM_VAR`].
    pub cell_val_num: u32,
    /// The values, little-endian, cell after cell.
    pub data: Vec<u8>,
    /// Start offset in `data` of each cell (var-sized columns only; one per cell, the end of
    /// the last cell is `data.len()`).
    pub offsets: Option<Vec<u64>>,
    /// One byte per cell, 1 = valid, 0 = null (nullable attributes only).
    pub validity: Option<Vec<u8>>,
}

impl Column {
    /// An empty column for a field.
    pub fn new(
        name: impl Into<String>,
        datatype: Datatype,
        cell_val_num: u32,
        nullable: bool,
    ) -> Self {
        Column {
            name: name.into(),
            datatype,
            cell_val_num,
            data: Vec::new(),
            offsets: (cell_val_num == CELL_VAL_NUM_VAR).then(Vec::new),
            validity: nullable.then(Vec::new),
        }
    }

    /// Whether cells are var-sized.
    pub fn is_var(&self) -> bool {
        self.cell_val_num == CELL_VAL_NUM_VAR
    }

    /// Bytes per cell of a fixed-size column.
    pub fn cell_size(&self) -> Option<usize> {
        (!self.is_var()).then(|| self.datatype.size() * self.cell_val_num as usize)
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        match (&self.offsets, self.cell_size()) {
            (Some(o), _) => o.len(),
            (None, Some(size)) if size > 0 => self.data.len() / size,
            _ => 0,
        }
    }

    /// Whether the column holds no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of cell `i`.
    pub fn cell(&self, i: usize) -> Option<&[u8]> {
        match &self.offsets {
            Some(o) => {
                let start = usize::try_from(*o.get(i)?).ok()?;
                let end = match o.get(i + 1) {
                    Some(&e) => usize::try_from(e).ok()?,
                    None => self.data.len(),
                };
                self.data.get(start..end)
            }
            None => {
                let size = self.cell_size()?;
                self.data.get(i * size..(i + 1) * size)
            }
        }
    }

    /// Whether cell `i` is valid (always true for non-nullable columns).
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity.as_ref().is_none_or(|v| v.get(i).is_some_and(|&b| b != 0))
    }

    /// Appends cell `src_i` of `src` (a column of the same field).
    pub fn push_from(&mut self, src: &Column, src_i: usize) {
        if let Some(offsets) = &mut self.offsets {
            offsets.push(self.data.len() as u64);
        }
        if let Some(cell) = src.cell(src_i) {
            self.data.extend_from_slice(cell);
        }
        if let Some(v) = &mut self.validity {
            v.push(u8::from(src.is_valid(src_i)));
        }
    }
}

/// The cells a read returns: the requested dimensions, then the requested attributes, in the
/// order asked for, all of the same length.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadResult {
    /// One column per field.
    pub columns: Vec<Column>,
}

impl ReadResult {
    /// Number of cells.
    pub fn cell_num(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}
