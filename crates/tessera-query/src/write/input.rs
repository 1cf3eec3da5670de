//! The cells of a write as the user gave them, checked against the schema, and the copies
//! that move them into tiles.

use tessera_fragment::Field;
use tessera_schema::ArraySchema;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use crate::result::Column;
use crate::write::sink::FieldTile;
use crate::{Error, Result};

/// One field's cells of a submission.
#[derive(Debug, Clone)]
pub(crate) struct FieldCells {
    /// The field's name.
    pub(crate) name: String,
    /// Bytes per cell; `None` for var-sized fields.
    pub(crate) cell_size: Option<usize>,
    /// Bytes of one element of the field's type (the padding of an unwritten var cell).
    pub(crate) elem_size: usize,
    /// The values.
    pub(crate) data: Vec<u8>,
    /// Var-sized fields: the start of each cell in `data`.
    pub(crate) offsets: Option<Vec<u64>>,
    /// Nullable fields: one byte per cell (all 1 when the user gave none).
    pub(crate) validity: Option<Vec<u8>>,
    /// What unwritten cells of a tile hold: zero bytes and validity 0 (`None`, as libtiledb
    /// pads user writes), or a fill value and its validity (consolidation).
    pub(crate) pad: Option<(Vec<u8>, bool)>,
}

impl FieldCells {
    /// Number of cells.
    pub(crate) fn len(&self) -> usize {
        match (&self.offsets, self.cell_size) {
            (Some(o), _) => o.len(),
            (None, Some(cs)) if cs > 0 => self.data.len() / cs,
            _ => 0,
        }
    }

    /// The bytes of cell `i`.
    pub(crate) fn cell(&self, i: usize) -> &[u8] {
        match (&self.offsets, self.cell_size) {
            (Some(o), _) => {
                let start = o[i] as usize;
                let end = o.get(i + 1).map_or(self.data.len(), |&e| e as usize);
                &self.data[start..end]
            }
            (None, Some(cs)) => &self.data[i * cs..(i + 1) * cs],
            (None, None) => &[],
        }
    }

    /// These cells as a tile of their own (their offsets start at 0, as the checks ensure).
    pub(crate) fn into_tile(self) -> FieldTile {
        FieldTile { data: self.data, offsets: self.offsets, validity: self.validity }
    }

    /// An empty tile buffer for this field, with room for `cells` cells.
    pub(crate) fn new_tile(&self, cells: usize) -> FieldTile {
        FieldTile {
            data: Vec::with_capacity(self.cell_size.map_or(cells * 8, |cs| cells * cs)),
            offsets: self.offsets.as_ref().map(|_| Vec::with_capacity(cells)),
            validity: self.validity.as_ref().map(|_| Vec::with_capacity(cells)),
        }
    }

    /// Appends cells `start..end` to `tile`.
    pub(crate) fn push_run(&self, tile: &mut FieldTile, start: usize, end: usize) {
        match (&self.offsets, self.cell_size) {
            (Some(o), _) => {
                let to = tile.offsets.as_mut().expect("a var tile has offsets");
                let from = o[start] as usize;
                let until = o.get(end).map_or(self.data.len(), |&e| e as usize);
                let base = tile.data.len() as u64;
                to.extend(o[start..end].iter().map(|&x| x - from as u64 + base));
                tile.data.extend_from_slice(&self.data[from..until]);
            }
            (None, Some(cs)) => tile.data.extend_from_slice(&self.data[start * cs..end * cs]),
            (None, None) => {}
        }
        if let (Some(v), Some(to)) = (&self.validity, tile.validity.as_mut()) {
            to.extend_from_slice(&v[start..end]);
        }
    }

    /// Appends the cells `indexes` (in that order) to `tile`.
    pub(crate) fn push_gather(&self, tile: &mut FieldTile, indexes: &[usize]) {
        match (&self.offsets, self.cell_size) {
            (Some(_), _) => {
                let to = tile.offsets.as_mut().expect("a var tile has offsets");
                for &i in indexes {
                    to.push(tile.data.len() as u64);
                    tile.data.extend_from_slice(self.cell(i));
                }
            }
            (None, Some(cs)) => {
                let d = &self.data;
                let out = &mut tile.data;
                match cs {
                    4 => out.extend(indexes.iter().flat_map(|&i| {
                        <[u8; 4]>::try_from(&d[i * 4..i * 4 + 4]).expect("4 bytes")
                    })),
                    8 => out.extend(indexes.iter().flat_map(|&i| {
                        <[u8; 8]>::try_from(&d[i * 8..i * 8 + 8]).expect("8 bytes")
                    })),
                    _ => {
                        for &i in indexes {
                            out.extend_from_slice(&d[i * cs..(i + 1) * cs]);
                        }
                    }
                }
            }
            (None, None) => {}
        }
        if let (Some(v), Some(to)) = (&self.validity, tile.validity.as_mut()) {
            to.extend(indexes.iter().map(|&i| v[i]));
        }
    }

    /// Appends `n` unwritten cells (zero bytes; one zero element each for var-sized fields;
    /// validity 0), as libtiledb pads partly written dense tiles.
    pub(crate) fn push_padding(&self, tile: &mut FieldTile, n: usize) {
        if let Some((fill, valid)) = &self.pad {
            for _ in 0..n {
                if let Some(to) = tile.offsets.as_mut() {
                    to.push(tile.data.len() as u64);
                }
                tile.data.extend_from_slice(fill);
            }
            if let Some(to) = tile.validity.as_mut() {
                to.resize(to.len() + n, u8::from(*valid));
            }
            return;
        }
        match (&self.offsets, self.cell_size) {
            (Some(_), _) => {
                let to = tile.offsets.as_mut().expect("a var tile has offsets");
                for _ in 0..n {
                    to.push(tile.data.len() as u64);
                    tile.data.extend(std::iter::repeat_n(0u8, self.elem_size));
                }
            }
            (None, Some(cs)) => tile.data.resize(tile.data.len() + n * cs, 0),
            (None, None) => {}
        }
        if let Some(to) = tile.validity.as_mut() {
            to.resize(to.len() + n, 0);
        }
    }

    /// A copy of cell `i` alone.
    pub(crate) fn single(&self, i: usize) -> FieldCells {
        let mut tile = self.new_tile(1);
        self.push_run(&mut tile, i, i + 1);
        FieldCells {
            name: self.name.clone(),
            cell_size: self.cell_size,
            elem_size: self.elem_size,
            data: tile.data,
            offsets: tile.offsets,
            validity: tile.validity,
            pad: self.pad.clone(),
        }
    }

    /// Removes the first `n` cells (already written to tiles).
    pub(crate) fn drain_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        match (&mut self.offsets, self.cell_size) {
            (Some(o), _) => {
                let cut = o.get(n).map_or(self.data.len(), |&e| e as usize);
                self.data.drain(..cut);
                o.drain(..n);
                for x in o.iter_mut() {
                    *x -= cut as u64;
                }
            }
            (None, Some(cs)) => {
                self.data.drain(..n * cs);
            }
            (None, None) => {}
        }
        if let Some(v) = &mut self.validity {
            v.drain(..n);
        }
    }

    /// Appends every cell of `other` (the same field).
    pub(crate) fn append(&mut self, other: FieldCells) {
        if let (Some(o), Some(other_o)) = (&mut self.offsets, &other.offsets) {
            let base = self.data.len() as u64;
            o.extend(other_o.iter().map(|&x| x + base));
        }
        if self.data.is_empty() && self.offsets.as_ref().is_none_or(Vec::is_empty) {
            self.data = other.data;
        } else {
            self.data.extend_from_slice(&other.data);
        }
        if let (Some(v), Some(other_v)) = (&mut self.validity, other.validity) {
            v.extend_from_slice(&other_v);
        }
    }
}

/// The name, datatype, values per cell and nullability of a stored field.
fn field_shape(schema: &ArraySchema, field: Field) -> (String, Datatype, u32, bool) {
    match field {
        Field::Attribute(i) => {
            let a = &schema.attributes[i];
            (a.name.clone(), a.datatype, a.cell_val_num, a.nullable)
        }
        Field::Dimension(j) => {
            let d = &schema.dimensions[j];
            (d.name.clone(), d.datatype, d.cell_val_num, false)
        }
        _ => (String::new(), Datatype::UInt64, 1, false),
    }
}

/// Checks `columns` against the stored `fields` of `schema` (the user fields of a write, in
/// the order of [`crate::write::sink::stored_fields`]) and returns one buffer per field in
/// that order, with the number of cells.
///
/// # Errors
/// [`Error::UnknownField`] for a column that names no dimension or attribute;
/// [`Error::InvalidWrite`] for a dimension column on a dense array, a missing field, a
/// column of the wrong type or cell size, bad offsets, validity for a field that is not
/// nullable, or columns of different lengths.
pub(crate) fn check_columns(
    schema: &ArraySchema,
    fields: &[Field],
    mut columns: Vec<Column>,
) -> Result<(Vec<FieldCells>, usize)> {
    for c in &columns {
        let is_attr = schema.attributes.iter().any(|a| a.name == c.name);
        let is_dim = schema.dimensions.iter().any(|d| d.name == c.name);
        if !is_attr && !is_dim {
            return Err(Error::UnknownField(c.name.clone()));
        }
        if is_dim && schema.is_dense() {
            return Err(Error::InvalidWrite(format!(
                "dimension {:?}: a dense write takes its cells' positions from the subarray, \
                 not from coordinates",
                c.name
            )));
        }
    }
    let mut out = Vec::with_capacity(fields.len());
    let mut cell_num: Option<(usize, String)> = None;
    for &field in fields {
        let (name, datatype, cell_val_num, nullable) = field_shape(schema, field);
        let pos = columns.iter().position(|c| c.name == name).ok_or_else(|| {
            Error::InvalidWrite(format!("no cells given for {name:?}: a write needs every field"))
        })?;
        let c = columns.swap_remove(pos);
        let bad = |what: String| Error::InvalidWrite(format!("field {name:?}: {what}"));
        let var = cell_val_num == CELL_VAL_NUM_VAR;
        let elem = datatype.size();
        if c.datatype != datatype && c.datatype != Datatype::Any && c.datatype.size() != elem {
            return Err(bad(format!(
                "values of type {} for a field of type {datatype}",
                c.datatype
            )));
        }
        let n = if var {
            let offsets =
                c.offsets.as_ref().ok_or_else(|| bad("a var-sized field needs offsets".into()))?;
            let mut prev = 0u64;
            for (i, &o) in offsets.iter().enumerate() {
                if o < prev || o > c.data.len() as u64 || (i == 0 && o != 0) {
                    return Err(bad(format!(
                        "offset {i} ({o}) is not within 0..={} and non-decreasing from 0",
                        c.data.len()
                    )));
                }
                if !(o - prev).is_multiple_of(elem as u64) && i > 0 {
                    return Err(bad(format!("cell {} is not a whole number of values", i - 1)));
                }
                prev = o;
            }
            if offsets.is_empty() && !c.data.is_empty() {
                return Err(bad("values without offsets".into()));
            }
            offsets.len()
        } else {
            if c.offsets.is_some() {
                return Err(bad("offsets for a fixed-size field".into()));
            }
            let cs = elem * cell_val_num as usize;
            if !c.data.len().is_multiple_of(cs) {
                return Err(bad(format!(
                    "{} bytes is not a whole number of {cs}-byte cells",
                    c.data.len()
                )));
            }
            c.data.len() / cs
        };
        let validity = match (nullable, c.validity) {
            (true, Some(v)) => {
                if v.len() != n {
                    return Err(bad(format!("{} validity bytes for {n} cells", v.len())));
                }
                Some(v)
            }
            (true, None) => Some(vec![1; n]),
            (false, Some(_)) => {
                return Err(bad("validity given for a field that is not nullable".into()));
            }
            (false, None) => None,
        };
        match &cell_num {
            Some((m, other)) if *m != n => {
                return Err(Error::InvalidWrite(format!(
                    "{n} cells for {name:?} but {m} for {other:?}"
                )));
            }
            None => cell_num = Some((n, name.clone())),
            _ => {}
        }
        out.push(FieldCells {
            name,
            cell_size: (!var).then_some(elem * cell_val_num as usize),
            elem_size: elem,
            data: c.data,
            offsets: c.offsets,
            validity,
            pad: None,
        });
    }
    Ok((out, cell_num.map_or(0, |(n, _)| n)))
}
