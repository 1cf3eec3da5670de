//! Errors of the engine.

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong opening, creating, reading or writing an array.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage layer failed (missing files, I/O errors).
    #[error(transparent)]
    Storage(#[from] tessera_storage::Error),
    /// A schema or enumeration file is invalid, or a schema TileDB would reject.
    #[error("{file}: {source}")]
    Schema {
        /// The file (relative to the array) that was being read, or `schema` for a new one.
        file: String,
        /// The problem.
        #[source]
        source: tessera_schema::Error,
    },
    /// A fragment's metadata, a commit file or a consolidated file is invalid.
    #[error("{file}: {source}")]
    Fragment {
        /// The file (relative to the array).
        file: String,
        /// The problem (boxed: fragment errors are large and rare).
        #[source]
        source: Box<tessera_fragment::Error>,
    },
    /// An array metadata file (`__meta/…`) is invalid, or a metadata file cannot be encoded.
    #[error("{file}: {source}")]
    Metadata {
        /// The file (relative to the array).
        file: String,
        /// The problem: the generic tile, or the payload's structure, field and offset
        /// ([`tessera_tile::Error::Format`]) (boxed: tile errors are large and rare).
        #[source]
        source: Box<tessera_tile::Error>,
    },
    /// The location holds no TileDB array.
    #[error("not a TileDB array: {0}")]
    NotAnArray(String),
    /// The location holds no TileDB group.
    #[error("not a TileDB group: {0}")]
    NotAGroup(String),
    /// A group details file (`__group/…`) is invalid.
    #[error("{file}: {source}")]
    Group {
        /// The file (relative to the group).
        file: String,
        /// The problem: the generic tile, or the payload's structure, field and offset
        /// ([`tessera_tile::Error::Format`]) (boxed: tile errors are large and rare).
        #[source]
        source: Box<tessera_tile::Error>,
    },
    /// A change to a group that libtiledb refuses too: creating a group where an array or
    /// group exists, adding two members with one key in a session, removing a member that is
    /// not there.
    #[error("invalid group change: {0}")]
    InvalidGroupChange(String),
    /// A file of a fragment the open array shows is gone: the fragment was removed (by a
    /// vacuum) after the array was opened. Reopen the array to read what it holds now.
    #[error(
        "{file}: the fragment was removed after the array was opened (by a vacuum?); reopen the \
         array"
    )]
    FragmentRemoved {
        /// The missing file (relative to the array).
        file: String,
        /// The storage error.
        #[source]
        source: tessera_storage::Error,
    },
    /// Creating over an existing array.
    #[error("an array already exists there")]
    AlreadyExists,
    /// A valid array Tessera cannot (yet) handle, such as an older format version.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A data tile of a fragment could not be read or decoded. The offsets inside `source`
    /// are offsets in `file`.
    #[error("{file}: tile {tile} (bytes {offset}..{end}): {source}")]
    Tile {
        /// The data file (relative to the array).
        file: String,
        /// The tile's index in the fragment.
        tile: u64,
        /// Where the tile starts in the file.
        offset: u64,
        /// Where the tile ends in the file.
        end: u64,
        /// The problem (boxed: tile errors are large and rare).
        #[source]
        source: Box<tessera_tile::Error>,
    },
    /// Fragment data inconsistent with its metadata (a tile past the end of its file, a
    /// decoded tile of the wrong size).
    #[error("{file}: {reason}")]
    Corrupt {
        /// The file (relative to the array).
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A query names a dimension or attribute the schema does not have.
    #[error("no dimension or attribute named {0:?}")]
    UnknownField(String),
    /// A range of a query is invalid for its dimension (wrong type, low > high, outside the
    /// domain).
    #[error("range on dimension {dimension:?}: {reason}")]
    InvalidRange {
        /// The dimension.
        dimension: String,
        /// What is wrong.
        reason: String,
    },
    /// A query that cannot run as asked (a layout the array does not support with these
    /// ranges, ...).
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// A write whose cells cannot be written as given (columns that do not match the schema
    /// or each other, coordinates outside the domain, duplicates the schema forbids, cells
    /// out of global order); the array is unchanged.
    #[error("invalid write: {0}")]
    InvalidWrite(String),
    /// A column read through a typed accessor ([`Column::values`](crate::Column::values),
    /// [`Column::strings`](crate::Column::strings), ...) as a Rust type or a kind of cell it
    /// does not hold: a number type of another size or kind than the column's datatype, the
    /// values of var-sized cells, strings of a column that holds no text, text that is not
    /// UTF-8.
    #[error("column {column:?} of type {datatype} cannot be read as {asked}: {reason}")]
    TypeMismatch {
        /// The column's name.
        column: String,
        /// The column's datatype.
        datatype: tessera_types::Datatype,
        /// What was asked for: a Rust type (`i32`, `f64`, ...) or `strings`.
        asked: String,
        /// What the column holds instead, and how to read it.
        reason: String,
    },
    /// A query condition that does not parse, does not fit the schema, or that libtiledb
    /// would refuse (to evaluate, or to store as a delete).
    #[error(
        "invalid condition{}: {message}",
        column.map(|c| format!(" at column {c}")).unwrap_or_default()
    )]
    Condition {
        /// The 1-based character column of the offending text, when the condition came
        /// from text.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
}
