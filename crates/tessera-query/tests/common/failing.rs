//! A storage that fails on purpose, for atomicity tests.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tessera_storage::{Entry, MemoryStorage, ObjectWriter, Result, Storage};

/// A storage that fails the `fail_at`-th piece written (through `write`, `writer` pieces or
/// `publish`), counting from 0.
#[derive(Debug)]
pub(crate) struct Failing {
    pub(crate) inner: Arc<MemoryStorage>,
    pub(crate) writes: AtomicUsize,
    pub(crate) fail_at: usize,
}

impl Failing {
    fn tick(&self, path: &str) -> Result<()> {
        if self.writes.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            return Err(tessera_storage::Error::io(
                tessera_storage::Op::Write,
                path,
                std::io::Error::other("injected failure"),
            ));
        }
        Ok(())
    }
}

struct FailingWriter<'a> {
    storage: &'a Failing,
    path: String,
    data: Vec<u8>,
}

impl ObjectWriter for FailingWriter<'_> {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.storage.tick(&self.path)?;
        self.data.extend_from_slice(data);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let n = self.data.len() as u64;
        self.storage.inner.write(&self.path, Bytes::from(self.data))?;
        Ok(n)
    }
}

impl Storage for Failing {
    fn read(&self, path: &str) -> Result<Bytes> {
        self.inner.read(path)
    }
    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.read_range(path, range)
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
    fn write(&self, path: &str, data: Bytes) -> Result<()> {
        self.tick(path)?;
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
        self.tick(path)?;
        self.inner.publish(path, data)
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn writer<'a>(&'a self, path: &str) -> Result<Box<dyn ObjectWriter + 'a>> {
        Ok(Box::new(FailingWriter { storage: self, path: path.to_owned(), data: Vec::new() }))
    }
}

impl Failing {
    /// A storage over `inner` failing the `fail_at`-th piece written from now on.
    pub(crate) fn new(inner: Arc<MemoryStorage>, fail_at: usize) -> Arc<Self> {
        Arc::new(Failing { inner, writes: AtomicUsize::new(0), fail_at })
    }

    /// Pieces written so far.
    pub(crate) fn pieces(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}
