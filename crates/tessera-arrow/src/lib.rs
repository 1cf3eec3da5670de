//! Tessera arrays as Apache Arrow: reads as [`RecordBatch`](arrow_array::RecordBatch)es
//! (streamed one engine batch at a time under the read's memory budget) and writes from them.
//!
//! ```
//! use tessera::{ArraySchema, ArrayType, Attribute, Datatype, Dimension};
//! use tessera_arrow::{Projection, WriteOptions, read_all, read_batches, write_batch};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("points");
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
//!     .attribute(Attribute::new("v", Datatype::Float64))
//!     .attribute(Attribute::new("s", Datatype::StringUtf8).var().nullable(true))
//!     .build()?;
//! tessera::create(&path, &schema)?;
//! let array = tessera::open(&path)?;
//! array.write().values("x", &[3i64, 1]).values("v", &[0.3, 0.1])
//!     .var_values("s", ["c", "a"]).validity("s", vec![1, 0]).submit()?;
//!
//! let array = tessera::open(&path)?;
//! // One batch with everything: x (Int64), v (Float64), s (LargeUtf8, nullable).
//! let batch = read_all(&array, &Projection::all(), |q| q)?;
//! assert_eq!(batch.num_rows(), 2);
//! assert_eq!(batch.column(2).null_count(), 1);
//! // Streaming: batches of about 64 bytes each, x > 1 only.
//! let rows: usize = read_batches(&array, &Projection::all(), |q| q.range_i64("x", 2, 99).memory_budget(64))?
//!     .map(|b| b.map(|b| b.num_rows()))
//!     .sum::<Result<_, _>>()?;
//! assert_eq!(rows, 1);
//! // And back: the batch written into the same array as a new fragment.
//! write_batch(&array, &batch, &WriteOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The type mapping
//!
//! Every field carries its TileDB datatype and cell size in its metadata
//! ([`DATATYPE_KEY`], [`CELL_VAL_NUM_KEY`]), so the exact TileDB type survives a trip
//! through Arrow. Dimensions are never nullable; nullable attributes get a null buffer.
//!
//! | TileDB datatype | 1 value per cell | `n` values per cell | var-sized cells |
//! |---|---|---|---|
//! | `int8` … `uint64`, `float32`, `float64` | the same Arrow type | `FixedSizeList<T, n>` | `LargeList<T>` |
//! | `bool` | `Boolean` | `FixedSizeList<Boolean, n>` | `LargeList<Boolean>` |
//! | `datetime_sec/ms/us/ns` | `Timestamp(unit, None)` | `FixedSizeList` of it | `LargeList` of it |
//! | `datetime_day` | `Date32` (a value outside `i32` is an error) | as above | as above |
//! | `time_sec/ms/us/ns` | `Duration(unit)` | as above | as above |
//! | other datetime and time units (year, month, week, hr, min, ps, fs, as) | `Int64` (the unit is in the metadata) | as above | as above |
//! | `string_ascii`, `string_utf8`, `char`, `geom_wkt` | `FixedSizeBinary(1)` | `FixedSizeBinary(n)` | `LargeUtf8` (text that is not UTF-8 is an error) |
//! | `blob`, `any`, `geom_wkb`, `string_utf16/32`, `string_ucs2/4` | `FixedSizeBinary(size)` | `FixedSizeBinary(n × size)` | `LargeBinary` (the bytes as stored) |
//! | enumerated attribute (codes `int8` … `uint64`) | `Dictionary<codes, values>` over the enumeration's values mapped as above; a code outside the enumeration reads as null | | |
//!
//! Var-sized strings are always `LargeUtf8`/`LargeBinary`: TileDB's offsets are `u64`, so the
//! engine's offset vector becomes Arrow's offset buffer without a copy (the rule does not
//! depend on the data). Fixed-size numbers move into Arrow without a copy too (when the
//! engine's buffer is aligned for the type, which the allocator gives in practice). Booleans,
//! validity (a byte per cell in TileDB, a bit in Arrow), `Date32` and list offsets are
//! converted.
//!
//! Writing takes the same types back, and also `Utf8`/`Binary` for var-sized strings and
//! bytes, `List` for var-sized numbers, any time zone on timestamps, `Int64` for every
//! datetime and time unit, and, for an enumerated attribute, a dictionary or plain array of
//! labels (looked up in the enumeration) or the integer codes. Anything else is
//! [`Error::TypeMismatch`]; a type with no mapping is [`Error::Unsupported`].

mod mapping;
mod read;
mod write;

pub use mapping::{
    CELL_VAL_NUM_KEY, DATATYPE_KEY, ENUMERATION_KEY, Projection, arrow_field, arrow_schema,
    arrow_type, field_datatype, tiledb_type, value_type,
};
pub use read::{
    ArrowBatches, column_to_arrow, enumerated_to_arrow, enumeration_values, read_all, read_batches,
    result_to_batch,
};
pub use write::{
    WriteOptions, arrow_to_column, arrow_to_enumerated, batch_to_columns, write_batch,
};

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong converting between Tessera and Arrow.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine failed (opening, reading, writing).
    #[error(transparent)]
    Tessera(#[from] tessera::Error),
    /// Arrow refused the arrays (lengths or types that do not fit a schema).
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A TileDB type or cell size with no Arrow counterpart, or the other way round.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A field name the array does not have.
    #[error("no dimension or attribute {0:?}")]
    UnknownField(String),
    /// An Arrow column whose type cannot hold the field's values.
    #[error("field {field:?}: expected Arrow type {expected}, got {got}")]
    TypeMismatch {
        /// The field.
        field: String,
        /// The Arrow type the mapping gives for the field.
        expected: String,
        /// The column's type.
        got: String,
    },
    /// A null in a dimension or an attribute that is not nullable.
    #[error("field {0:?} is not nullable but the Arrow column holds nulls")]
    Null(String),
    /// A label an enumeration does not have.
    #[error("field {field:?}: {label:?} is not a value of its enumeration")]
    UnknownLabel {
        /// The attribute.
        field: String,
        /// The label.
        label: String,
    },
    /// Text that is not UTF-8 in a field read as `LargeUtf8`.
    #[error("field {field:?}: {message}")]
    InvalidUtf8 {
        /// The field.
        field: String,
        /// Arrow's message.
        message: String,
    },
    /// A write the batch cannot make (no subarray for a dense write, a wrong cell count).
    #[error("write: {0}")]
    Write(String),
    /// Engine buffers that do not hold together (offsets, sizes).
    #[error("inconsistent result buffers: {0}")]
    Corrupt(String),
}
