//! Array and group metadata (the same `__meta/` files): read at a timestamp range, and one
//! write session of puts and deletions.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tessera::Datatype;
use tessera::layers::query::metadata::{ArrayMetadata, MetadataValue, MetadataWriter};
use tessera::layers::types::names::now_ms;

use crate::errors::{chain, tiledb_error};
use crate::location;
use crate::runtime::run;

/// The metadata of the array or group at `uri` visible in `[start, end]`: a list of
/// `(key bytes, datatype name, value bytes)` in key order.
#[pyfunction]
#[pyo3(signature = (uri, start=0, end=u64::MAX, key=None))]
pub(crate) fn array_metadata<'py>(
    py: Python<'py>,
    uri: String,
    start: u64,
    end: u64,
    key: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyList>> {
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    let meta = run(py, move || {
        ArrayMetadata::load(storage.as_ref(), start, end)
            .map_err(|e| tiledb_error(format!("{uri}: metadata: {}", chain(&e))))
    })?;
    let out = PyList::empty(py);
    for (key, value) in meta.iter() {
        out.append(PyTuple::new(
            py,
            [
                PyBytes::new(py, key).into_any(),
                value.datatype().name().into_pyobject(py)?.into_any(),
                PyBytes::new(py, value.bytes()).into_any(),
            ],
        )?)?;
    }
    Ok(out)
}

/// One metadata write session on the array or group at `uri` at `timestamp` (ms; now when
/// None): `puts` of `(key bytes, datatype name, value bytes)`, then `deletes` of keys.
#[pyfunction]
#[pyo3(signature = (uri, puts, deletes, timestamp=None, key=None))]
pub(crate) fn put_array_metadata(
    py: Python<'_>,
    uri: String,
    puts: Vec<(Vec<u8>, String, Vec<u8>)>,
    deletes: Vec<Vec<u8>>,
    timestamp: Option<u64>,
    key: Option<Vec<u8>>,
) -> PyResult<()> {
    let writer = session(timestamp.unwrap_or_else(now_ms), puts, deletes)?;
    if writer.is_empty() {
        return Ok(());
    }
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    run(py, move || {
        writer
            .commit(storage.as_ref())
            .map(|_| ())
            .map_err(|e| tiledb_error(format!("{uri}: metadata: {}", chain(&e))))
    })
}

/// A write session holding `puts` and `deletes`.
pub(crate) fn session(
    timestamp: u64,
    puts: Vec<(Vec<u8>, String, Vec<u8>)>,
    deletes: Vec<Vec<u8>>,
) -> PyResult<MetadataWriter> {
    let mut writer = MetadataWriter::new(timestamp);
    for (key, dtype, bytes) in puts {
        let datatype = Datatype::from_name(&dtype)
            .map_err(|e| tiledb_error(format!("metadata key {:?}: {e}", lossy(&key))))?;
        let value = MetadataValue::from_bytes(datatype, bytes)
            .map_err(|e| tiledb_error(format!("metadata key {:?}: {e}", lossy(&key))))?;
        writer
            .put(key.clone(), value)
            .map_err(|e| tiledb_error(format!("metadata key {:?}: {e}", lossy(&key))))?;
    }
    for key in deletes {
        writer
            .delete(key.clone())
            .map_err(|e| tiledb_error(format!("metadata key {:?}: {e}", lossy(&key))))?;
    }
    Ok(writer)
}

fn lossy(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}
