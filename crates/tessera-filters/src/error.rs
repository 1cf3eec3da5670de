//! Errors of filter (de)serialisation and of running filters.

use tessera_types::{Datatype, FilterType};

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a filter pipeline could not be parsed, encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Malformed bytes: truncated fields, unknown IDs, impossible values (with offset).
    #[error(transparent)]
    Format(#[from] tessera_types::Error),
    /// A filter's encoded data is corrupt or inconsistent with its metadata.
    #[error("{filter} filter: corrupt input: {reason}")]
    Corrupt {
        /// The filter that failed.
        filter: FilterType,
        /// What was inconsistent.
        reason: String,
    },
    /// A checksum filter found data that does not match its stored digest.
    #[error("{filter} filter: checksum mismatch on {what} part {part}")]
    ChecksumMismatch {
        /// CHECKSUM_MD5 or CHECKSUM_SHA256.
        filter: FilterType,
        /// `"metadata"` or `"data"`.
        what: &'static str,
        /// Index of the part whose digest differs.
        part: usize,
    },
    /// The data cannot be encoded by this filter (e.g. a negative positive-delta, an
    /// overflowing double delta), as libtiledb would also refuse to write it.
    #[error("{filter} filter: cannot encode: {reason}")]
    Encode {
        /// The filter that refused.
        filter: FilterType,
        /// Why.
        reason: String,
    },
    /// The filter is not defined for the datatype it would see at its stage.
    #[error("{filter} filter does not apply to datatype {datatype}")]
    DatatypeNotSupported {
        /// The filter.
        filter: FilterType,
        /// The datatype at its stage.
        datatype: Datatype,
    },
    /// AES-256-GCM refused a part: its tag does not match, so the key is wrong or the bytes
    /// were changed.
    #[error(
        "AES-256-GCM: {what} part {part} fails authentication (wrong encryption key, or the \
         data was altered)"
    )]
    Authentication {
        /// `"metadata"` or `"data"`.
        what: &'static str,
        /// Index of the part.
        part: usize,
    },
    /// The pipeline has the AES-256-GCM filter but no key was given.
    #[error("encrypted with AES-256-GCM: an encryption key is needed")]
    KeyRequired,
    /// Valid data Tessera cannot process (e.g. lossy WebP encoding).
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl Error {
    /// A [`Error::Corrupt`] for `filter`.
    pub fn corrupt(filter: FilterType, reason: impl Into<String>) -> Self {
        Error::Corrupt { filter, reason: reason.into() }
    }

    /// An [`Error::Encode`] for `filter`.
    pub fn encode(filter: FilterType, reason: impl Into<String>) -> Self {
        Error::Encode { filter, reason: reason.into() }
    }
}
