//! Where a URI points: a local folder (a path or `file://` URI) or an object-store prefix
//! (`s3://`, ...), as the CLI reads its ARRAY arguments. Credentials come from this
//! process's environment (the standard AWS variables), never from pickled state.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::PyResult;
use tessera::{LocalStorage, Storage};
use tessera_object_store::{ObjectStoreStorage, is_object_store_uri};

use crate::errors::{chain, tiledb_error};

/// The storage rooted at `uri`.
pub(crate) fn storage(uri: &str) -> PyResult<Arc<dyn Storage>> {
    if is_object_store_uri(uri) {
        let store = ObjectStoreStorage::from_uri(uri)
            .map_err(|e| tiledb_error(format!("{uri}: {}", chain(&e))))?;
        return Ok(Arc::new(store));
    }
    Ok(Arc::new(LocalStorage::new(local_path(uri)?)))
}

/// The storage for `uri` that encrypts and decrypts with `key` (tiledb-py's `key=`: its 32
/// bytes), or the plain storage without one.
pub(crate) fn keyed_storage(uri: &str, key: Option<&[u8]>) -> PyResult<Arc<dyn Storage>> {
    let storage = storage(uri)?;
    Ok(match key {
        Some(k) => {
            let key = tessera::EncryptionKey::from_bytes(k)
                .map_err(|e| tiledb_error(format!("{uri}: {}", chain(&e))))?;
            Arc::new(tessera::EncryptedStorage::new(storage, key))
        }
        None => storage,
    })
}

/// The local path of a plain path or `file://` URI.
pub(crate) fn local_path(uri: &str) -> PyResult<PathBuf> {
    if uri.starts_with("file://") {
        return tessera::uri_path(uri).map_err(|e| tiledb_error(format!("{uri}: {}", chain(&e))));
    }
    Ok(PathBuf::from(uri))
}
