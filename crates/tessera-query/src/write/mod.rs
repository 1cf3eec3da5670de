//! Writes: [`Array::write`](crate::Array::write) starts a [`WriteQuery`]; its columns, the
//! subarray (dense arrays), the layout and the timestamp are set on it; [`WriteQuery::submit`]
//! writes one fragment, and [`WriteQuery::begin`] starts a global-order write that takes its
//! cells over several submissions ([`FragmentWrite`]).
//!
//! Writes follow libtiledb 2.30 (format-fragments.md §2 and §5):
//! * a dense write covers one subarray (one range per dimension), its cells given in row- or
//!   col-major order of it, or in global order tile by tile (then the subarray must coincide
//!   with space-tile bounds); tiles are whole space tiles, the cells not written padded with
//!   zero bytes;
//! * a sparse write gives every dimension and attribute of every cell: unordered (Tessera
//!   sorts into the global order, Hilbert included) or already in global order (checked);
//!   coordinates outside the domain (or current domain) and, when the schema forbids them,
//!   duplicate coordinates are errors; tiles hold `capacity` cells;
//! * data files first, then `__fragment_metadata.tdb`, then the `.wrt` commit: until the
//!   commit, readers do not see the fragment; a failed write removes what it wrote.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::Array;
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_storage::MemoryStorage;
//! use tessera_types::{ArrayType, Datatype};
//!
//! let storage = Arc::new(MemoryStorage::new());
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
//!     .attribute(Attribute::new("v", Datatype::Float64))
//!     .build()?;
//! Array::create(storage.clone(), &schema, &[])?;
//! let array = Array::open(storage.clone())?;
//! array.write().values("x", &[7i64, 3, 5]).values("v", &[0.7, 0.3, 0.5]).timestamp(10).submit()?;
//! let result = Array::open(storage)?.read().execute()?;
//! assert_eq!(result.column("x").unwrap().data, [3i64, 5, 7].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use tessera_fragment::FragmentName;
use tessera_types::{Layout, Primitive};

use crate::array::Array;
use crate::read::RangeSpec;
use crate::result::Column;
use crate::{Error, Result};

impl Array {
    /// Starts a write of one fragment to this array (with the schema it was opened with).
    pub fn write(&self) -> WriteQuery<'_> {
        WriteQuery {
            array: self,
            ranges: Vec::new(),
            layout: None,
            timestamp: None,
            columns: Vec::new(),
        }
    }
}

/// A write being set up: columns, subarray, layout and timestamp.
///
/// Errors (unknown fields, wrong buffer sizes, bad ranges) are reported by
/// [`Self::submit`] and [`Self::begin`], and leave the array unchanged.
#[derive(Debug, Clone)]
#[must_use = "a write does nothing until submitted"]
pub struct WriteQuery<'a> {
    array: &'a Array,
    ranges: Vec<(String, RangeSpec)>,
    layout: Option<Layout>,
    timestamp: Option<u64>,
    columns: Vec<Column>,
}

impl<'a> WriteQuery<'a> {
    fn push(mut self, dim: &str, spec: RangeSpec) -> Self {
        self.ranges.push((dim.to_owned(), spec));
        self
    }

    /// Sets the range `[low, high]` (inclusive) of dimension `dim` of a dense write's
    /// subarray, in a Rust number type matching the dimension's datatype. A dimension
    /// without a range is written over its whole domain.
    pub fn range<T: Primitive>(self, dim: &str, low: T, high: T) -> Self {
        let (mut lo, mut hi) = (Vec::with_capacity(T::SIZE), Vec::with_capacity(T::SIZE));
        low.write_le(&mut lo);
        high.write_le(&mut hi);
        self.push(dim, RangeSpec::Typed(T::DATATYPE, lo, hi))
    }

    /// [`Self::range`] with `i64` bounds that must fit the dimension's type.
    pub fn range_i64(self, dim: &str, low: i64, high: i64) -> Self {
        self.push(dim, RangeSpec::I64(low, high))
    }

    /// [`Self::range`] with `u64` bounds that must fit the dimension's type.
    pub fn range_u64(self, dim: &str, low: u64, high: u64) -> Self {
        self.push(dim, RangeSpec::U64(low, high))
    }

    /// [`Self::range`] given as the little-endian bytes of the dimension's type.
    pub fn range_bytes(self, dim: &str, low: impl Into<Vec<u8>>, high: impl Into<Vec<u8>>) -> Self {
        self.push(dim, RangeSpec::Bytes(low.into(), high.into()))
    }

    /// The order of the cells given: row-major or col-major (dense: of the subarray; the
    /// default for dense arrays), global order (dense or sparse, over one or several
    /// submissions), or unordered (sparse only; the default for sparse arrays).
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// The fragment's timestamp (ms since the epoch); default: the end of the range the
    /// array was opened at when that is not "now", else the current time.
    pub fn timestamp(mut self, ms: u64) -> Self {
        self.timestamp = Some(ms);
        self
    }

    /// Adds the cells of one dimension or attribute (replacing an earlier column of the same
    /// name). The column's datatype and cell size must match the field's; var-sized fields
    /// give offsets and nullable attributes validity.
    pub fn column(mut self, column: Column) -> Self {
        self.columns.retain(|c| c.name != column.name);
        self.columns.push(column);
        self
    }

    /// Adds a fixed-size column of `values` of a Rust number type (for `cell_val_num > 1`,
    /// the values of every cell back to back). The type's size must match the field's.
    pub fn values<T: Primitive>(self, name: &str, values: &[T]) -> Self {
        let mut data = Vec::with_capacity(values.len() * T::SIZE);
        for v in values {
            v.write_le(&mut data);
        }
        let column = Column {
            name: name.to_owned(),
            datatype: T::DATATYPE,
            cell_val_num: 1,
            data,
            offsets: None,
            validity: None,
        };
        self.column(column)
    }

    /// Adds a var-sized column: one value (bytes, such as a string) per cell.
    pub fn var_values<I, V>(self, name: &str, values: I) -> Self
    where
        I: IntoIterator<Item = V>,
        V: AsRef<[u8]>,
    {
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for v in values {
            offsets.push(data.len() as u64);
            data.extend_from_slice(v.as_ref());
        }
        let column = Column {
            name: name.to_owned(),
            datatype: tessera_types::Datatype::Any,
            cell_val_num: tessera_types::CELL_VAL_NUM_VAR,
            data,
            offsets: Some(offsets),
            validity: None,
        };
        self.column(column)
    }

    /// Sets the validity of a nullable attribute's column added earlier: one byte per cell,
    /// 0 = null.
    pub fn validity(mut self, name: &str, validity: Vec<u8>) -> Self {
        if let Some(c) = self.columns.iter_mut().find(|c| c.name == name) {
            c.validity = Some(validity);
        }
        self
    }

    /// Writes the cells as one fragment and commits it; returns its name, or `None` when
    /// there were no cells (libtiledb writes no fragment then).
    ///
    /// # Errors
    /// [`Error::InvalidWrite`] for columns that do not match the schema or each other,
    /// coordinates outside the domain, duplicates the schema forbids, unsorted cells in a
    /// global-order write, a bad subarray; storage errors. The array is unchanged on error.
    pub fn submit(self) -> Result<Option<FragmentName>> {
        let mut write = self.begin_inner()?;
        let columns = std::mem::take(&mut write.pending);
        write.submit(columns)?;
        write.finalize()
    }

    /// Starts a write whose cells come in several submissions ([`FragmentWrite::submit`]),
    /// in global order, and end with [`FragmentWrite::finalize`]; columns set on this query
    /// are the first submission. Needs [`Layout::GlobalOrder`].
    ///
    /// # Errors
    /// As [`Self::submit`].
    pub fn begin(self) -> Result<FragmentWrite<'a>> {
        let mut write = self.begin_inner()?;
        let columns = std::mem::take(&mut write.pending);
        if !columns.is_empty() {
            write.submit(columns)?;
        }
        Ok(write)
    }

    fn begin_inner(self) -> Result<FragmentWrite<'a>> {
        let _ = (self.array, &self.ranges, self.layout, self.timestamp);
        Err(Error::Unsupported("writes are not implemented yet".into()))
    }
}

/// A write in progress: one fragment being filled, committed by [`Self::finalize`]. Dropping
/// it without finalizing removes what it wrote.
#[derive(Debug)]
pub struct FragmentWrite<'a> {
    array: &'a Array,
    pending: Vec<Column>,
}

impl FragmentWrite<'_> {
    /// Adds the next cells (every field, in the write's layout).
    ///
    /// # Errors
    /// As [`WriteQuery::submit`].
    pub fn submit(&mut self, columns: Vec<Column>) -> Result<()> {
        let _ = (self.array, columns);
        Err(Error::Unsupported("writes are not implemented yet".into()))
    }

    /// Flushes the last tiles, writes the fragment metadata and commits the fragment.
    ///
    /// # Errors
    /// As [`WriteQuery::submit`].
    pub fn finalize(self) -> Result<Option<FragmentName>> {
        Err(Error::Unsupported("writes are not implemented yet".into()))
    }
}
