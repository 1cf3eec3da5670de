//! The crate's error type.

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with a fragment name, a commit file or fragment metadata.
///
/// Decoding errors name the structure, the field and the byte offset where decoding stopped.
/// Offsets are counted from the start of the bytes given to the parser (the file for
/// [`crate::FragmentMetadata::parse_all`], the footer's first byte for
/// [`crate::Footer::parse`], the unfiltered payload for a lazily loaded part).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not hold what the structure needs at `offset`.
    #[error("{structure}: {field} at offset {offset}: {reason}")]
    Malformed {
        /// The structure being decoded (`"fragment metadata footer"`, `"tile mins"`, ...).
        structure: &'static str,
        /// The field being read.
        field: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// A format version Tessera cannot read.
    #[error("{structure}: format version {version} is not supported (Tessera reads {supported})")]
    UnsupportedVersion {
        /// What carried the version.
        structure: &'static str,
        /// The version found.
        version: u32,
        /// The versions that are supported.
        supported: &'static str,
    },
    /// A generic tile (one part of fragment metadata, a `.del` or `.meta` file) could not be
    /// decoded.
    #[error("{structure}: generic tile at offset {offset} cannot be decoded")]
    Tile {
        /// What the tile holds (`"tile offsets"`, `"delete commit"`, ...).
        structure: &'static str,
        /// Byte offset of the tile.
        offset: u64,
        /// The tile layer's error (its offsets are relative to the same bytes as `offset`).
        #[source]
        source: tessera_tile::Error,
    },
    /// An R-tree or a non-empty domain could not be decoded or encoded.
    #[error("{structure}: R-tree or MBR data at offset {offset}")]
    RTree {
        /// The structure (`"R-tree"`, `"fragment metadata footer"`).
        structure: &'static str,
        /// Byte offset where the MBR data starts.
        offset: u64,
        /// The R-tree layer's error (its offsets are relative to `offset`).
        #[source]
        source: tessera_rtree::Error,
    },
    /// A lazily loaded part of fragment metadata decoded to a payload that its parser
    /// rejects; the inner error's offsets are relative to the unfiltered payload.
    #[error("{part} (generic tile at offset {offset})")]
    Part {
        /// Which part.
        part: crate::LazyPart,
        /// File offset of the part's generic tile.
        offset: u64,
        /// What is wrong with the payload.
        #[source]
        source: Box<Error>,
    },
    /// A file or fragment name that does not have a TileDB shape.
    #[error("invalid name {name:?}: {reason}")]
    Name {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Values given to a writer or a computation that do not fit together (a schema that does
    /// not match the footer, a tile buffer of the wrong size, a negation TileDB refuses).
    #[error("invalid input: {0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn malformed(
        structure: &'static str,
        field: &'static str,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Error::Malformed { structure, field, offset, reason: reason.into() }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }

    pub(crate) fn name(name: &str, reason: impl Into<String>) -> Self {
        Error::Name { name: name.to_owned(), reason: reason.into() }
    }

    /// The byte offset the error points at, when it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Malformed { offset, .. }
            | Error::Tile { offset, .. }
            | Error::Part { offset, .. }
            | Error::RTree { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The same error with its byte offset moved by `base`, for errors raised while decoding
    /// bytes that start `base` bytes into a larger buffer.
    #[must_use]
    pub fn at_offset(self, base: u64) -> Self {
        match self {
            Error::Malformed { structure, field, offset, reason } => {
                Error::Malformed { structure, field, offset: offset + base, reason }
            }
            Error::Tile { structure, offset, source } => {
                Error::Tile { structure, offset: offset + base, source: source.at_offset(base) }
            }
            Error::RTree { structure, offset, source } => {
                Error::RTree { structure, offset: offset + base, source }
            }
            Error::Part { part, offset, source } => {
                Error::Part { part, offset: offset + base, source }
            }
            e => e,
        }
    }
}
