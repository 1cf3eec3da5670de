//! The exceptions of the package: tiledb-py's `TileDBError`, and `NotSupportedError` (a
//! subclass) for valid arrays or requests Tessera cannot handle yet.

use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    tessera,
    TileDBError,
    PyException,
    "What went wrong in a TileDB operation (tiledb-py's exception)."
);
create_exception!(
    tessera,
    NotSupportedError,
    TileDBError,
    "A valid array or request that Tessera does not support (yet)."
);

/// Any engine error as the exception Python sees, its message the error's whole chain.
pub(crate) fn to_py(err: tessera::Error) -> PyErr {
    let text = chain(&err);
    match err {
        tessera::Error::Unsupported(_) => NotSupportedError::new_err(text),
        _ => TileDBError::new_err(text),
    }
}

/// An error and its sources, joined as "outer: inner" where the outer text does not already
/// hold the inner one.
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let inner = s.to_string();
        if !text.contains(&inner) {
            text.push_str(": ");
            text.push_str(&inner);
        }
        source = s.source();
    }
    text
}

/// A `TileDBError` with `message`.
pub(crate) fn tiledb_error(message: impl Into<String>) -> PyErr {
    TileDBError::new_err(message.into())
}

/// Shorthand for conversions of engine results.
pub(crate) trait IntoPy<T> {
    /// The result with its error turned into the Python exception.
    fn py_err(self) -> Result<T, PyErr>;
}

impl<T> IntoPy<T> for Result<T, tessera::Error> {
    fn py_err(self) -> Result<T, PyErr> {
        self.map_err(to_py)
    }
}
