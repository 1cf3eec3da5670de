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
    /// The location holds no TileDB array.
    #[error("not a TileDB array: {0}")]
    NotAnArray(String),
    /// Creating over an existing array.
    #[error("an array already exists there")]
    AlreadyExists,
    /// A valid array Tessera cannot (yet) handle, such as an older format version.
    #[error("unsupported: {0}")]
    Unsupported(String),
}
