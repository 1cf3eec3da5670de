//! Verifying an array on disk (`tessera verify`): the [`tessera_verify`] crate, which needs
//! only the format layers and storage, with its errors turned into the engine's [`Error`] so
//! that callers of the engine handle one error type. See [`tessera_verify`] for what is
//! checked.

use tessera_storage::Storage;

pub use tessera_verify::{Options, Problem, Progress, Report, Severity, Summary};

use crate::{Error, Result};

/// Verifies the array on `storage` (rooted at the array's folder): [`tessera_verify::verify`].
/// Problems in the array's files are returned in the [`Report`], never as an `Err`.
///
/// # Errors
/// [`Error::NotAnArray`] when there is no `__schema` folder; [`Error::Unsupported`] for the
/// single-schema-file layout of format versions before 10; a storage error listing the
/// array's folders.
pub fn verify(storage: &dyn Storage, options: &Options) -> Result<Report> {
    tessera_verify::verify(storage, options).map_err(Error::from)
}

impl From<tessera_verify::Error> for Error {
    fn from(e: tessera_verify::Error) -> Self {
        match e {
            tessera_verify::Error::Storage(e) => Error::Storage(e),
            tessera_verify::Error::NotAnArray(m) => Error::NotAnArray(m),
            tessera_verify::Error::Unsupported(m) => Error::Unsupported(m),
            // (The enum is non-exhaustive: a future variant keeps its text.)
            other => Error::Unsupported(other.to_string()),
        }
    }
}
