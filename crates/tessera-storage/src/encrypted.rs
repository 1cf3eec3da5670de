//! A storage that carries the AES-256-GCM key of the arrays and groups it holds.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use tessera_types::EncryptionKey;

use crate::{Entry, ObjectWriter, Result, Storage};

/// Another storage, unchanged, plus the key of the encrypted arrays and groups on it: the
/// engine encrypts what it writes there and decrypts what it reads, as libtiledb does with
/// the `sm.encryption_key` of its context. Bytes pass through untouched; the encryption
/// itself happens in the tiles.
///
/// ```
/// use std::sync::Arc;
/// use tessera_storage::{EncryptedStorage, MemoryStorage, Storage};
/// use tessera_types::EncryptionKey;
///
/// let key = EncryptionKey::parse("0123456789abcdeF0123456789abcdeF").unwrap();
/// let storage: Arc<dyn Storage> = Arc::new(EncryptedStorage::new(Arc::new(MemoryStorage::new()), key.clone()));
/// assert_eq!(storage.encryption_key(), Some(&key));
/// ```
#[derive(Debug, Clone)]
pub struct EncryptedStorage {
    inner: Arc<dyn Storage>,
    key: EncryptionKey,
}

impl EncryptedStorage {
    /// `inner` with `key`.
    pub fn new(inner: Arc<dyn Storage>, key: EncryptionKey) -> Self {
        EncryptedStorage { inner, key }
    }

    /// The storage underneath.
    pub fn inner(&self) -> &Arc<dyn Storage> {
        &self.inner
    }
}

impl Storage for EncryptedStorage {
    fn read(&self, path: &str) -> Result<Bytes> {
        self.inner.read(path)
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.read_range(path, range)
    }

    fn read_ranges(&self, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.read_ranges(path, ranges)
    }

    fn size(&self, path: &str) -> Result<u64> {
        self.inner.size(path)
    }

    fn exists(&self, path: &str) -> Result<bool> {
        self.inner.exists(path)
    }

    fn is_dir(&self, path: &str) -> Result<bool> {
        self.inner.is_dir(path)
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        self.inner.list(dir)
    }

    fn list_names(&self, dir: &str) -> Result<Vec<Entry>> {
        self.inner.list_names(dir)
    }

    fn read_tail(&self, path: &str, max_len: u64) -> Result<(Bytes, u64)> {
        self.inner.read_tail(path, max_len)
    }

    fn read_range_into(&self, path: &str, range: Range<u64>, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.read_range_into(path, range, buf)
    }

    fn read_range_scatter(&self, path: &str, offset: u64, bufs: &mut [&mut [u8]]) -> Result<()> {
        self.inner.read_range_scatter(path, offset, bufs)
    }

    fn write(&self, path: &str, data: Bytes) -> Result<()> {
        self.inner.write(path, data)
    }

    fn create_dir(&self, path: &str) -> Result<()> {
        self.inner.create_dir(path)
    }

    fn remove(&self, path: &str) -> Result<()> {
        self.inner.remove(path)
    }

    fn remove_dir_all(&self, dir: &str) -> Result<()> {
        self.inner.remove_dir_all(dir)
    }

    fn publish(&self, path: &str, data: Bytes) -> Result<()> {
        self.inner.publish(path, data)
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to)
    }

    fn writer<'a>(&'a self, path: &str) -> Result<Box<dyn ObjectWriter + 'a>> {
        self.inner.writer(path)
    }

    fn encryption_key(&self) -> Option<&EncryptionKey> {
        Some(&self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStorage;

    crate::storage_test_suite!(|| {
        let key = EncryptionKey::from_bytes(&[1; 32]).unwrap();
        Arc::new(EncryptedStorage::new(Arc::new(MemoryStorage::new()), key)) as Arc<dyn Storage>
    });
}
