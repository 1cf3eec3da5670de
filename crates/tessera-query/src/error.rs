//! Errors of the engine: one [`Error`] for every operation, with [`From`] for the error of
//! each lower layer, and [`Error::kind`] to match on what happened without caring which
//! layer found it.
//!
//! ```
//! use tessera_query::{Array, Error, ErrorKind};
//! use tessera_storage::MemoryStorage;
//!
//! let err = Array::open(std::sync::Arc::new(MemoryStorage::new())).unwrap_err();
//! assert!(matches!(err, Error::NotAnArray(_)));
//! assert_eq!(err.kind(), ErrorKind::NotFound);
//! ```

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
    /// Nothing exists at the location given: no folder, no object (an existing folder that
    /// holds no array is [`Error::NotAnArray`]).
    #[error("not a TileDB {object}: {path} does not exist")]
    NotFound {
        /// What was looked for: `"array"`, `"group"`, `"array or group"`.
        object: &'static str,
        /// The location as given.
        path: String,
    },
    /// A write with a coordinate outside its dimension's domain (or current domain); the array
    /// is unchanged.
    #[error("invalid write: {message}")]
    OutOfDomain {
        /// The dimension.
        dimension: String,
        /// libtiledb's words for it, naming the coordinate and the bounds.
        message: String,
    },
    /// A write of two cells with the same coordinates to an array whose schema forbids
    /// duplicates (libtiledb's words, naming the coordinates); the array is unchanged.
    #[error("invalid write: {0}")]
    DuplicateCoordinates(String),
    /// An argument that is wrong whatever the array holds (a negative size, an empty list
    /// where one item is needed, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A field of a structure decoded outside an array's files (by calling the codec
    /// layers directly) is truncated or invalid.
    #[error(transparent)]
    Format(#[from] tessera_types::Error),
    /// A filter pipeline failed outside an array's files.
    #[error(transparent)]
    Filter(#[from] tessera_filters::Error),
    /// A tile could not be framed, encoded or decoded outside an array's files.
    #[error(transparent)]
    Codec(Box<tessera_tile::Error>),
    /// An R-tree or an MBR could not be decoded or built outside an array's files.
    #[error(transparent)]
    RTree(#[from] tessera_rtree::Error),
    /// An I/O error outside the storage layer (reading a file a caller names).
    #[error(transparent)]
    Io(#[from] std::io::Error),
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
    /// or each other, cells out of global order; coordinates outside the domain and
    /// duplicates are [`Error::OutOfDomain`] and [`Error::DuplicateCoordinates`]); the array
    /// is unchanged.
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

impl From<tessera_schema::Error> for Error {
    /// A schema error outside an array's files (building or validating a new schema): an
    /// [`Error::Schema`] whose `file` is `schema`.
    fn from(source: tessera_schema::Error) -> Self {
        Error::Schema { file: "schema".into(), source }
    }
}

impl From<tessera_fragment::Error> for Error {
    /// A fragment error outside an array's files: an [`Error::Fragment`] whose `file` is
    /// `fragment`.
    fn from(source: tessera_fragment::Error) -> Self {
        Error::Fragment { file: "fragment".into(), source: Box::new(source) }
    }
}

impl From<tessera_tile::Error> for Error {
    /// A tile error outside an array's files: an [`Error::Codec`].
    fn from(source: tessera_tile::Error) -> Self {
        Error::Codec(Box::new(source))
    }
}

/// What kind of failure an [`Error`] is, whichever layer found it: what a caller matches on
/// to decide what to do (create what is missing, report a bad argument, give up on a corrupt
/// file, ...). See [`Error::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No array, group or file where one was expected ([`Error::NotFound`],
    /// [`Error::NotAnArray`], [`Error::NotAGroup`], a missing file, a fragment removed by a
    /// vacuum after the array was opened).
    NotFound,
    /// Creating an array or a group where one exists ([`Error::AlreadyExists`]).
    AlreadyExists,
    /// A written coordinate outside the domain ([`Error::OutOfDomain`]).
    OutOfDomain,
    /// Two written cells with the same coordinates ([`Error::DuplicateCoordinates`]).
    DuplicateCoordinates,
    /// Something valid that Tessera does not handle (yet): an older format version, an
    /// encrypted tile, a filter it does not implement.
    Unsupported,
    /// A file whose bytes cannot be right; [`Error::corruption`] says which file, and where
    /// decoding stopped when that is known.
    Corrupt,
    /// A request that cannot run as given: an unknown field, an invalid range, condition,
    /// query, write, schema or group change.
    InvalidArgument,
    /// A column read as a type it does not hold ([`Error::TypeMismatch`]).
    TypeMismatch,
    /// Any other I/O failure (permissions, a full disk, the network).
    Io,
}

/// Where a file is corrupt: the file, and the field and byte offset where decoding stopped
/// when the layer that found it says so. See [`Error::corruption`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Corruption<'a> {
    /// The file, relative to the array or group (empty for bytes decoded outside one).
    pub path: &'a str,
    /// The structure being decoded (`"array schema"`, `"fragment metadata footer"`, ...).
    pub structure: Option<&'static str>,
    /// The field being read.
    pub field: Option<&'static str>,
    /// The byte offset of the field, counted as the inner error says (in the file, the
    /// tile, or the unfiltered payload of a generic tile).
    pub offset: Option<u64>,
}

impl Error {
    /// What kind of failure this is, whichever layer found it.
    ///
    /// ```
    /// use tessera_query::{Error, ErrorKind};
    ///
    /// let e = Error::DuplicateCoordinates("Duplicate coordinates (1, 2) are not allowed".into());
    /// assert_eq!(e.kind(), ErrorKind::DuplicateCoordinates);
    /// ```
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Storage(e) | Error::FragmentRemoved { source: e, .. } => storage_kind(e),
            Error::Schema { file, source } => schema_kind(file, source),
            Error::Fragment { source, .. } => fragment_kind(source),
            Error::Metadata { source, .. } | Error::Group { source, .. } => tile_kind(source),
            Error::Tile { source, .. } | Error::Codec(source) => tile_kind(source),
            Error::NotAnArray(_) | Error::NotAGroup(_) | Error::NotFound { .. } => {
                ErrorKind::NotFound
            }
            Error::AlreadyExists => ErrorKind::AlreadyExists,
            Error::OutOfDomain { .. } => ErrorKind::OutOfDomain,
            Error::DuplicateCoordinates(_) => ErrorKind::DuplicateCoordinates,
            Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::InvalidGroupChange(_)
            | Error::UnknownField(_)
            | Error::InvalidRange { .. }
            | Error::InvalidQuery(_)
            | Error::InvalidWrite(_)
            | Error::InvalidArgument(_)
            | Error::Condition { .. } => ErrorKind::InvalidArgument,
            Error::TypeMismatch { .. } => ErrorKind::TypeMismatch,
            Error::Format(e) => types_kind(e),
            Error::Filter(e) => filter_kind(e),
            Error::RTree(_) => ErrorKind::Corrupt,
            Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            Error::Io(_) => ErrorKind::Io,
        }
    }

    /// For a corrupt file ([`ErrorKind::Corrupt`]): the file, and the structure, field and
    /// byte offset where decoding stopped when the layer that found it says so.
    ///
    /// ```
    /// use tessera_query::Error;
    ///
    /// let e = Error::Corrupt { file: "__fragments/f/a0.tdb".into(), reason: "short".into() };
    /// assert_eq!(e.corruption().unwrap().path, "__fragments/f/a0.tdb");
    /// ```
    #[must_use]
    pub fn corruption(&self) -> Option<Corruption<'_>> {
        if self.kind() != ErrorKind::Corrupt {
            return None;
        }
        let (path, at) = match self {
            Error::Schema { file, source } => (file.as_str(), schema_at(source)),
            Error::Fragment { file, source } => (file.as_str(), fragment_at(source)),
            Error::Metadata { file, source } | Error::Group { file, source } => {
                (file.as_str(), tile_at(source))
            }
            Error::Tile { file, offset, source, .. } => {
                let at = tile_at(source);
                let at = (at.0, at.1, at.2.map(|o| o + offset).or(Some(*offset)));
                (file.as_str(), at)
            }
            Error::Corrupt { file, .. } => (file.as_str(), (None, None, None)),
            Error::Storage(e) => (storage_path(e), (None, None, None)),
            Error::Codec(source) => ("", tile_at(source)),
            Error::Format(e) => ("", types_at(e)),
            Error::RTree(e) => ("", (Some("R-tree"), rtree_at(e).0, rtree_at(e).1)),
            _ => ("", (None, None, None)),
        };
        Some(Corruption { path, structure: at.0, field: at.1, offset: at.2 })
    }
}

/// Structure, field and offset of a decoding error, as far as known.
type At = (Option<&'static str>, Option<&'static str>, Option<u64>);

fn storage_kind(e: &tessera_storage::Error) -> ErrorKind {
    match e {
        e if e.is_not_found() => ErrorKind::NotFound,
        tessera_storage::Error::Io { source, .. }
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            ErrorKind::AlreadyExists
        }
        tessera_storage::Error::RangeOutOfBounds { .. } => ErrorKind::Corrupt,
        tessera_storage::Error::InvalidPath { .. } => ErrorKind::InvalidArgument,
        _ => ErrorKind::Io,
    }
}

fn storage_path(e: &tessera_storage::Error) -> &str {
    match e {
        tessera_storage::Error::Io { path, .. }
        | tessera_storage::Error::RangeOutOfBounds { path, .. }
        | tessera_storage::Error::InvalidPath { path, .. } => path,
        _ => "",
    }
}

fn schema_kind(file: &str, e: &tessera_schema::Error) -> ErrorKind {
    use tessera_schema::Error as E;
    match e {
        E::UnsupportedVersion { .. } => ErrorKind::Unsupported,
        // A new schema TileDB would reject is a bad argument; one read from a file is corrupt.
        E::Invalid(_) | E::Json(_) if file == "schema" => ErrorKind::InvalidArgument,
        E::Tile(t) => tile_kind(t),
        E::Filter(f) => filter_kind(f),
        _ => ErrorKind::Corrupt,
    }
}

fn schema_at(e: &tessera_schema::Error) -> At {
    use tessera_schema::Error as E;
    match e {
        E::Malformed { structure, field, offset, .. } => {
            (Some(*structure), Some(*field), Some(*offset))
        }
        E::Tile(t) => tile_at(t),
        E::Filter(tessera_filters::Error::Format(f)) => types_at(f),
        _ => (None, None, None),
    }
}

fn fragment_kind(e: &tessera_fragment::Error) -> ErrorKind {
    use tessera_fragment::Error as E;
    match e {
        E::UnsupportedVersion { .. } => ErrorKind::Unsupported,
        E::Tile { source, .. } => tile_kind(source),
        E::Part { source, .. } => fragment_kind(source),
        E::Invalid(_) => ErrorKind::InvalidArgument,
        _ => ErrorKind::Corrupt,
    }
}

fn fragment_at(e: &tessera_fragment::Error) -> At {
    use tessera_fragment::Error as E;
    match e {
        E::Malformed { structure, field, offset, .. } => {
            (Some(*structure), Some(*field), Some(*offset))
        }
        E::Tile { structure, offset, source } => {
            let (s, f, o) = tile_at(source);
            (s.or(Some(*structure)), f, o.or(Some(*offset)))
        }
        E::RTree { structure, offset, source } => {
            let (f, o) = rtree_at(source);
            (Some(*structure), f, o.or(Some(*offset)))
        }
        E::Part { source, .. } => fragment_at(source),
        _ => (None, None, None),
    }
}

fn tile_kind(e: &tessera_tile::Error) -> ErrorKind {
    use tessera_tile::Error as E;
    match e {
        E::Unsupported(_) => ErrorKind::Unsupported,
        E::InvalidInput(_) | E::EncodeChunk { .. } => ErrorKind::InvalidArgument,
        E::Filter(f) => filter_kind(f),
        E::Format(f) => types_kind(f),
        _ => ErrorKind::Corrupt,
    }
}

fn tile_at(e: &tessera_tile::Error) -> At {
    use tessera_tile::Error as E;
    match e {
        E::Format(f) | E::DecodeChunk { source: tessera_filters::Error::Format(f), .. } => {
            types_at(f)
        }
        E::Framing { field, offset, .. } => (Some("tile framing"), Some(*field), Some(*offset)),
        E::DecodeChunk { offset, .. } | E::ChunkLength { offset, .. } => {
            (Some("tile chunk"), Some("orig_len"), Some(*offset))
        }
        E::SizeMismatch { structure, .. } | E::Offsets { structure, .. } => {
            (Some(*structure), None, None)
        }
        _ => (None, None, None),
    }
}

fn filter_kind(e: &tessera_filters::Error) -> ErrorKind {
    use tessera_filters::Error as E;
    match e {
        E::Unsupported(_) => ErrorKind::Unsupported,
        E::Encode { .. } | E::DatatypeNotSupported { .. } => ErrorKind::InvalidArgument,
        E::Format(f) => types_kind(f),
        _ => ErrorKind::Corrupt,
    }
}

fn types_kind(e: &tessera_types::Error) -> ErrorKind {
    match e {
        tessera_types::Error::Unsupported(_) => ErrorKind::Unsupported,
        tessera_types::Error::UnknownName { .. } => ErrorKind::InvalidArgument,
        _ => ErrorKind::Corrupt,
    }
}

fn types_at(e: &tessera_types::Error) -> At {
    match e {
        tessera_types::Error::Truncated { structure, field, offset, .. }
        | tessera_types::Error::Invalid { structure, field, offset, .. } => {
            (Some(*structure), Some(*field), Some(*offset))
        }
        _ => (None, None, None),
    }
}

fn rtree_at(e: &tessera_rtree::Error) -> (Option<&'static str>, Option<u64>) {
    use tessera_rtree::Error as E;
    match e {
        E::Truncated { field, offset, .. }
        | E::CountTooLarge { field, offset, .. }
        | E::Invalid { field, offset, .. } => (Some(*field), Some(*offset)),
        E::TrailingBytes { offset, .. } => (Some("end of R-tree"), Some(*offset)),
        _ => (None, None),
    }
}
