//! The error vocabulary shared by the codec crates.

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while decoding or encoding bytes, with where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An ID read from disk (or given by a user) that TileDB 2.30 does not define.
    #[error("unknown {kind} id {id}")]
    UnknownId {
        /// What kind of ID (`"datatype"`, `"filter type"`, ...).
        kind: &'static str,
        /// The value found.
        id: u64,
    },
    /// A name that does not match any known value.
    #[error("unknown {kind} name {name:?}")]
    UnknownName {
        /// What kind of name.
        kind: &'static str,
        /// The name given.
        name: String,
    },
    /// The input ended before a field was complete.
    #[error(
        "{structure}: truncated at {field} (offset {offset}: need {needed} bytes, {available} left)"
    )]
    Truncated {
        /// The structure being decoded.
        structure: &'static str,
        /// The field being read.
        field: &'static str,
        /// Byte offset of the field within the structure's input.
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// A field holds a value that cannot be right.
    #[error("{structure}: invalid {field} at offset {offset}: {reason}")]
    Invalid {
        /// The structure being decoded.
        structure: &'static str,
        /// The offending field.
        field: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// Why it is wrong.
        reason: String,
    },
    /// Valid input that Tessera does not (yet) handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl Error {
    /// An [`Error::Invalid`] for `structure.field` at `offset`.
    pub fn invalid(
        structure: &'static str,
        field: &'static str,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Error::Invalid { structure, field, offset, reason: reason.into() }
    }

    /// The same error with its offset moved by `base`, for errors raised inside a sub-slice.
    #[must_use]
    pub fn at_offset(self, base: u64) -> Self {
        match self {
            Error::Truncated { structure, field, offset, needed, available } => {
                Error::Truncated { structure, field, offset: offset + base, needed, available }
            }
            Error::Invalid { structure, field, offset, reason } => {
                Error::Invalid { structure, field, offset: offset + base, reason }
            }
            e => e,
        }
    }
}
