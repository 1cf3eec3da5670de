//! Query results: one column per dimension or attribute, laid out as TileDB's result buffers
//! (values, plus offsets for var-sized cells and validity bytes for nullable ones).
//!
//! The typed accessors read a column as Rust values, checked against its datatype:
//! [`Column::values`] (every value, borrowed from the column when its bytes are aligned),
//! [`Column::iter`], [`Column::iter_opt`] (`None` for null cells), [`Column::strings`],
//! [`Column::strings_opt`] and [`Column::bytes`]; [`ReadResult::values`] finds the column by
//! name.
//!
//! ```
//! use tessera_query::Column;
//! use tessera_types::{CELL_VAL_NUM_VAR, Datatype};
//!
//! let mut a = Column::new("a", Datatype::Float64, 1, true);
//! a.data = [1.5f64, 0.0, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! a.validity = Some(vec![1, 0, 1]);
//! assert_eq!(&a.values::<f64>()?[..], &[1.5, 0.0, -2.0]);
//! assert_eq!(a.iter_opt::<f64>()?.collect::<Vec<_>>(), [Some(1.5), None, Some(-2.0)]);
//! // The Rust type must match the datatype: float64 values are f64.
//! assert!(a.values::<i64>().is_err());
//!
//! let mut s = Column::new("s", Datatype::StringUtf8, CELL_VAL_NUM_VAR, false);
//! s.data = b"onetwo".to_vec();
//! s.offsets = Some(vec![0, 3]);
//! assert_eq!(s.strings()?.collect::<Vec<_>>(), ["one", "two"]);
//! # Ok::<(), tessera_query::Error>(())
//! ```

use std::borrow::Cow;

use tessera_types::{CELL_VAL_NUM_VAR, Datatype, Primitive};

use crate::{Error, Result};

mod sealed {
    pub trait Sealed {}
}

/// A Rust number type the values of a column read as ([`Column::values`], [`Column::iter`],
/// [`Column::iter_opt`]): `i8`, `u8`, `i16`, `u16`, `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`. Implemented for those types only.
///
/// Which type reads which datatype: each number datatype reads as its own type; datetimes
/// and times as `i64`; `char` as `i8` or `u8`; `bool`, `blob`, `any`, the geometries and
/// fixed-size `string_ascii` / `string_utf8` cells as `u8`; UTF-16 and UCS-2 as `u16`; UTF-32
/// and UCS-4 as `u32`.
pub trait CellValue: Primitive + sealed::Sealed {
    /// `bytes` as a slice of values without copying, when they are aligned for `Self` and
    /// the machine is little-endian (else `None`).
    #[doc(hidden)]
    fn cast(bytes: &[u8]) -> Option<&[Self]>;
}

macro_rules! cell_value {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl CellValue for $t {
            #[inline]
            fn cast(bytes: &[u8]) -> Option<&[Self]> {
                if cfg!(target_endian = "little") {
                    bytemuck::try_cast_slice(bytes).ok()
                } else {
                    None
                }
            }
        }
    )*};
}
cell_value!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// Whether values of `dt` read as the Rust type whose canonical datatype is `asked`.
pub(crate) fn reads_as(dt: Datatype, asked: Datatype) -> bool {
    use Datatype as D;
    if dt == asked {
        return true;
    }
    match dt {
        d if d.is_datetime() || d.is_time() => asked == D::Int64,
        D::Char => matches!(asked, D::Int8 | D::UInt8),
        D::Bool | D::StringAscii | D::StringUtf8 | D::Blob | D::Any | D::GeomWkb | D::GeomWkt => {
            asked == D::UInt8
        }
        D::StringUtf16 | D::StringUcs2 => asked == D::UInt16,
        D::StringUtf32 | D::StringUcs4 => asked == D::UInt32,
        _ => false,
    }
}

/// The Rust type values of `dt` read as (for messages).
fn rust_type(dt: Datatype) -> &'static str {
    use Datatype as D;
    match dt {
        D::Int8 | D::Char => "i8",
        D::Int16 => "i16",
        D::Int32 => "i32",
        D::UInt16 | D::StringUtf16 | D::StringUcs2 => "u16",
        D::UInt32 | D::StringUtf32 | D::StringUcs4 => "u32",
        D::UInt64 => "u64",
        D::Float32 => "f32",
        D::Float64 => "f64",
        d if d == D::Int64 || d.is_datetime() || d.is_time() => "i64",
        _ => "u8",
    }
}

/// Whether values of `dt` are text of one-byte code units ([`Column::strings`]).
fn is_text(dt: Datatype) -> bool {
    matches!(dt, Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char | Datatype::GeomWkt)
}

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

    /// The error of a typed accessor asking for `asked`.
    fn mismatch(&self, asked: &str, reason: String) -> Error {
        Error::TypeMismatch {
            column: self.name.clone(),
            datatype: self.datatype,
            asked: asked.to_owned(),
            reason,
        }
    }

    /// Checks that the values of this column read as `T`.
    fn check_values<T: CellValue>(&self) -> Result<()> {
        let asked = std::any::type_name::<T>();
        if self.is_var() {
            let how = if is_text(self.datatype) { "strings() or bytes()" } else { "bytes()" };
            return Err(self.mismatch(asked, format!("its cells are var-sized (use {how})")));
        }
        if !reads_as(self.datatype, T::DATATYPE) {
            return Err(
                self.mismatch(asked, format!("its values read as {}", rust_type(self.datatype)))
            );
        }
        Ok(())
    }

    /// Every value of this fixed-size column, cell after cell (`cell_val_num` values per
    /// cell; null cells hold whatever their bytes are), as `T`: borrowed from
    /// [`Self::data`] when its bytes are aligned for `T`, copied otherwise.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the column's cells are var-sized or its datatype does
    /// not read as `T` (see [`CellValue`]: datetimes and times read as `i64`).
    pub fn values<T: CellValue>(&self) -> Result<Cow<'_, [T]>> {
        self.check_values::<T>()?;
        let whole = self.data.len() - self.data.len() % T::SIZE;
        Ok(match T::cast(&self.data[..whole]) {
            Some(values) => Cow::Borrowed(values),
            None => Cow::Owned(T::vec_from_le(&self.data)),
        })
    }

    /// The values of [`Self::values`] one by one, without copying the column.
    ///
    /// # Errors
    /// As [`Self::values`].
    pub fn iter<T: CellValue>(&self) -> Result<impl ExactSizeIterator<Item = T> + '_> {
        self.check_values::<T>()?;
        Ok(self.data.chunks_exact(T::SIZE).map(T::read_le))
    }

    /// The value of each cell of a column with one value per cell, `None` for null cells.
    ///
    /// # Errors
    /// As [`Self::values`], and [`Error::TypeMismatch`] when cells hold several values.
    pub fn iter_opt<T: CellValue>(&self) -> Result<impl ExactSizeIterator<Item = Option<T>> + '_> {
        self.check_values::<T>()?;
        if self.cell_val_num != 1 {
            return Err(self.mismatch(
                std::any::type_name::<T>(),
                format!(
                    "its cells hold {} values each (use values() or iter())",
                    self.cell_val_num
                ),
            ));
        }
        let validity = self.validity.as_deref();
        Ok(self.data.chunks_exact(T::SIZE).enumerate().map(move |(i, c)| {
            validity.is_none_or(|v| v.get(i).is_some_and(|&b| b != 0)).then(|| T::read_le(c))
        }))
    }

    /// The text of each cell of a `string_ascii`, `string_utf8`, `char` or `geom_wkt` column
    /// (var-sized or fixed-size cells; a null cell gives its stored bytes, usually empty).
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] for a column of another datatype, or when a cell is not
    /// UTF-8 (the message names the cell).
    pub fn strings(&self) -> Result<impl ExactSizeIterator<Item = &str> + '_> {
        if !is_text(self.datatype) {
            let how = if self.is_var() { "bytes()" } else { "values() or bytes()" };
            return Err(self.mismatch("strings", format!("it holds no one-byte text (use {how})")));
        }
        let text = std::str::from_utf8(&self.data).map_err(|e| {
            let cell = (0..self.len())
                .find(|&i| self.cell_end(i) > e.valid_up_to())
                .unwrap_or_else(|| self.len().saturating_sub(1));
            self.mismatch("strings", format!("cell {cell} is not UTF-8"))
        })?;
        // Each cell must start and end on a character boundary to be text of its own.
        for i in 0..self.len() {
            let (start, end) = (self.cell_start(i), self.cell_end(i));
            if start > end
                || end > text.len()
                || !text.is_char_boundary(start)
                || !text.is_char_boundary(end)
            {
                return Err(self.mismatch("strings", format!("cell {i} is not UTF-8")));
            }
        }
        Ok((0..self.len()).map(move |i| &text[self.cell_start(i)..self.cell_end(i)]))
    }

    /// [`Self::strings`], `None` for null cells.
    ///
    /// # Errors
    /// As [`Self::strings`].
    pub fn strings_opt(&self) -> Result<impl ExactSizeIterator<Item = Option<&str>> + '_> {
        Ok(self.strings()?.enumerate().map(|(i, s)| self.is_valid(i).then_some(s)))
    }

    /// The bytes of each cell (var-sized cells, or fixed-size ones of any datatype).
    pub fn bytes(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.cell(i).unwrap_or_default())
    }

    /// Where cell `i` starts in `data` (clamped to its length).
    fn cell_start(&self, i: usize) -> usize {
        let start = match (&self.offsets, self.cell_size()) {
            (Some(o), _) => {
                o.get(i).map_or(usize::MAX, |&x| usize::try_from(x).unwrap_or(usize::MAX))
            }
            (None, Some(size)) => i.saturating_mul(size),
            (None, None) => 0,
        };
        start.min(self.data.len())
    }

    /// Where cell `i` ends in `data` (clamped to its length).
    fn cell_end(&self, i: usize) -> usize {
        let end = match (&self.offsets, self.cell_size()) {
            (Some(o), _) => {
                o.get(i + 1).map_or(self.data.len(), |&x| usize::try_from(x).unwrap_or(usize::MAX))
            }
            (None, Some(size)) => (i + 1).saturating_mul(size),
            (None, None) => 0,
        };
        end.min(self.data.len())
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

    /// The values of the column named `name` as `T` (see [`Column::values`]).
    ///
    /// # Errors
    /// [`Error::UnknownField`] when the result has no such column; as [`Column::values`].
    pub fn values<T: CellValue>(&self, name: &str) -> Result<Cow<'_, [T]>> {
        self.column(name).ok_or_else(|| Error::UnknownField(name.to_owned()))?.values()
    }
}
