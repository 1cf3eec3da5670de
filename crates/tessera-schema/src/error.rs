//! Errors of schema parsing, writing, validation and JSON conversion.

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with a schema, its bytes or its JSON.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The binary schema (or enumeration) is malformed at `offset` of its payload.
    #[error("{structure}: {field} at offset {offset}: {reason}")]
    Malformed {
        /// `"array schema"` or `"enumeration"`.
        structure: &'static str,
        /// The field being read.
        field: &'static str,
        /// Byte offset in the decompressed payload.
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
        /// What is supported.
        supported: &'static str,
    },
    /// The schema is well-formed but TileDB would reject it.
    #[error("invalid schema: {0}")]
    Invalid(String),
    /// Schema JSON that cannot be understood.
    #[error("schema JSON: {0}")]
    Json(String),
    /// Errors from the generic-tile layer (schema files are generic tiles).
    #[error(transparent)]
    Tile(#[from] tessera_tile::Error),
    /// Errors from the filter layer.
    #[error(transparent)]
    Filter(#[from] tessera_filters::Error),
}

impl Error {
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }

    pub(crate) fn json(msg: impl Into<String>) -> Self {
        Error::Json(msg.into())
    }
}
