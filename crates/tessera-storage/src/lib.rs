//! The storage layer of Tessera: a small virtual file system that the engine reads and writes
//! arrays through.
//!
//! [`Storage`] is one object-safe trait (use it as `Arc<dyn Storage>`) with whole and ranged
//! reads, writes, directory listing, removal and an atomic [`publish`](Storage::publish).
//! Two backends implement it: [`LocalStorage`] (a directory on the local file system, the
//! default) and [`MemoryStorage`] (a map in memory, for tests). Both pass the same
//! conformance suite, `testsuite` (behind the `testing` feature, for tests only), which any
//! further backend runs too.
//!
//! Paths are `&str` keys with `/` separators, relative to the backend's root (see
//! [`normalize_path`] for the exact rules). Reads return [`Bytes`], so the memory backend hands
//! out slices of what it stores without copying, and the local backend reads only the bytes
//! asked for.
//!
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use tessera_storage::{Entry, MemoryStorage, Storage};
//!
//! let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
//! storage.create_dir("my_array/__schema")?;
//! storage.write("my_array/__fragments/f1/a0.tdb", Bytes::from_static(b"tile bytes"))?;
//! storage.publish("my_array/__commits/f1.wrt", Bytes::new())?;
//!
//! assert_eq!(storage.read_range("my_array/__fragments/f1/a0.tdb", 5..10)?, "bytes");
//! assert_eq!(
//!     storage.list("my_array")?,
//!     [Entry::dir("__commits"), Entry::dir("__fragments"), Entry::dir("__schema")]
//! );
//! let err = storage.read("my_array/missing").unwrap_err();
//! assert!(err.is_not_found());
//! # Ok::<(), tessera_storage::Error>(())
//! ```

use std::fmt;
use std::ops::Range;

pub use bytes::Bytes;

mod encrypted;
mod error;
mod local;
mod memory;
mod path;
#[cfg(feature = "testing")]
pub mod testsuite;
mod writeback;

pub use encrypted::EncryptedStorage;
pub use error::{Error, Op, Result};
pub use local::LocalStorage;
pub use memory::MemoryStorage;
pub use path::{normalize_non_root, normalize_path};
pub use tessera_types::EncryptionKey;

/// One direct child of a directory, as returned by [`Storage::list`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Entry {
    /// The child's name (one path component, no `/`).
    pub name: String,
    /// Whether the child is a directory.
    pub is_dir: bool,
    /// The object's size in bytes; 0 for a directory.
    pub size: u64,
}

impl Entry {
    /// An entry for an object of `size` bytes.
    pub fn file(name: impl Into<String>, size: u64) -> Self {
        Entry { name: name.into(), is_dir: false, size }
    }

    /// An entry for a directory.
    pub fn dir(name: impl Into<String>) -> Self {
        Entry { name: name.into(), is_dir: true, size: 0 }
    }
}

/// A place that holds objects (files) in directories: the local disk, memory, later an object
/// store.
///
/// # Paths
///
/// Every path is a `&str` of `/`-separated components relative to the backend's root, such
/// as `"my_array/__schema"`. The empty string is the root. Empty and `.` components are
/// ignored, so `"a//b/"` is `"a/b"`; an absolute path (leading `/`), a `..` component or a NUL
/// byte is refused with [`Error::InvalidPath`] — nothing can reach outside the root. Errors
/// carry the path as the caller spelled it. See [`normalize_path`].
///
/// # Semantics every backend shares
///
/// Directories are real: [`create_dir`](Storage::create_dir) makes an empty one that lists and
/// tests as a directory; writing an object creates its missing parent directories; removing
/// an object leaves its parent directory in place. Failures are [`Error::Io`] whose
/// [`io_error_kind`](Error::io_error_kind) is:
///
/// * `NotFound` — the path does not exist, or goes through an object (`"obj/x"`);
///   [`Error::is_not_found`] tests for it;
/// * `IsADirectory` — `read`, `read_range(s)`, `size` or `remove` of a directory, or
///   `write`/`publish` onto one;
/// * `NotADirectory` — `list` or `remove_dir_all` of an object, or a write, publish,
///   create_dir or rename whose parent path runs through an object;
/// * `AlreadyExists` — `create_dir` where an object exists, or a `rename` onto a directory
///   (or of a directory onto an object);
/// * `InvalidInput` — a `rename` of a directory into itself.
///
/// A reversed byte range or one reaching past the end is [`Error::RangeOutOfBounds`], naming the
/// path, the range and the object's size.
///
/// Implementations are `Send + Sync`; one value is shared by every thread of a query.
pub trait Storage: Send + Sync + fmt::Debug {
    /// The whole object at `path`.
    ///
    /// # Errors
    ///
    /// `NotFound` if there is no object, `IsADirectory` for a directory, or the backend's I/O
    /// error.
    fn read(&self, path: &str) -> Result<Bytes>;

    /// Bytes `range` of the object at `path`, and only those: the backend never reads the
    /// whole object for a range. An empty range within the object gives empty bytes.
    ///
    /// # Errors
    ///
    /// As [`read`](Storage::read), and [`Error::RangeOutOfBounds`] if `range.start >
    /// range.end` or `range.end` is past the object's size.
    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes>;

    /// Several ranges of one object, in the order given (they may overlap or be unsorted).
    /// Backends may coalesce ranges that are near each other into one read. The default reads
    /// them one at a time.
    ///
    /// # Errors
    ///
    /// As [`read_range`](Storage::read_range); if any range is bad, nothing is returned.
    fn read_ranges(&self, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        ranges.iter().map(|range| self.read_range(path, range.clone())).collect()
    }

    /// The size in bytes of the object at `path`.
    ///
    /// # Errors
    ///
    /// `NotFound` if there is nothing at `path`, `IsADirectory` for a directory.
    fn size(&self, path: &str) -> Result<u64>;

    /// Whether an object or a directory exists at `path` (`Ok(false)` also when the path goes
    /// through an object).
    ///
    /// # Errors
    ///
    /// An invalid path, or an I/O error other than "not found".
    fn exists(&self, path: &str) -> Result<bool>;

    /// Whether `path` is a directory (`Ok(false)` if it is an object or does not exist). The
    /// root is a directory.
    ///
    /// # Errors
    ///
    /// An invalid path, or an I/O error other than "not found".
    fn is_dir(&self, path: &str) -> Result<bool>;

    /// The direct children of directory `dir`, sorted by name (byte order). Temporary files
    /// of an unfinished [`publish`](Storage::publish) are never listed.
    ///
    /// # Errors
    ///
    /// `NotFound` if `dir` does not exist, `NotADirectory` if it is an object.
    fn list(&self, dir: &str) -> Result<Vec<Entry>>;

    /// The children of `dir` as [`list`](Storage::list) gives them, except that objects'
    /// sizes may be 0: for callers that need only names and kinds (an array's commit list),
    /// which a local disk then lists without a `stat` per entry. The default is `list`.
    ///
    /// # Errors
    ///
    /// As [`list`](Storage::list).
    fn list_names(&self, dir: &str) -> Result<Vec<Entry>> {
        self.list(dir)
    }

    /// The last `max_len` bytes of the object at `path` (all of it when it is smaller), with
    /// the object's size: a footer at the end of a file in one request where the backend
    /// can. The default asks for the size, then reads the range.
    ///
    /// # Errors
    ///
    /// As [`read_range`](Storage::read_range) and [`size`](Storage::size).
    fn read_tail(&self, path: &str, max_len: u64) -> Result<(Bytes, u64)> {
        let size = self.size(path)?;
        let bytes = self.read_range(path, size.saturating_sub(max_len)..size)?;
        Ok((bytes, size))
    }

    /// Bytes `range` of the object at `path` into `buf`, which is cleared first and whose
    /// capacity is reused: a reader that loads many large tiles recycles its buffers instead
    /// of paying the kernel's page faults on fresh memory for each. The default copies
    /// [`read_range`](Storage::read_range)'s bytes. On error, `buf` is left empty.
    ///
    /// # Errors
    ///
    /// As [`read_range`](Storage::read_range).
    fn read_range_into(&self, path: &str, range: Range<u64>, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        let bytes = self.read_range(path, range)?;
        buf.extend_from_slice(&bytes);
        Ok(())
    }

    /// The `bufs.iter().map(len).sum()` bytes of the object at `path` from byte `offset` on,
    /// into `bufs` in order: the first bytes fill `bufs[0]`, the next `bufs[1]`, and so on.
    /// A reader that places a tile's rows straight into the rows of a result thus needs no
    /// buffer in between; local files do it with one vectored read (`preadv`), the default
    /// copies [`read_range`](Storage::read_range)'s bytes. On error the buffers hold
    /// unspecified bytes.
    ///
    /// # Errors
    ///
    /// As [`read_range`](Storage::read_range) for the range `offset..offset + total`.
    fn read_range_scatter(&self, path: &str, offset: u64, bufs: &mut [&mut [u8]]) -> Result<()> {
        let total = bufs.iter().map(|b| b.len() as u64).sum::<u64>();
        let end = offset.checked_add(total).ok_or_else(|| out_of_memory(Op::ReadRange, path))?;
        let bytes = self.read_range(path, offset..end)?;
        let mut at = 0;
        for buf in bufs.iter_mut() {
            let Some(src) = bytes.get(at..at + buf.len()) else {
                let e = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                );
                return Err(Error::io(Op::ReadRange, path, e));
            };
            buf.copy_from_slice(src);
            at += buf.len();
        }
        Ok(())
    }

    /// Writes `data` as the object at `path`, replacing any object there and creating missing
    /// parent directories. Not atomic: a concurrent reader may see a partial object; use
    /// [`publish`](Storage::publish) for what readers look for.
    ///
    /// # Errors
    ///
    /// `IsADirectory` if `path` is a directory, `NotADirectory` if a parent is an object,
    /// [`Error::InvalidPath`] for the root.
    fn write(&self, path: &str, data: Bytes) -> Result<()>;

    /// Creates directory `path` and any missing parents; succeeds if it already exists.
    ///
    /// # Errors
    ///
    /// `AlreadyExists` if `path` is an object, `NotADirectory` if a parent is an object.
    fn create_dir(&self, path: &str) -> Result<()>;

    /// Removes the object at `path`.
    ///
    /// # Errors
    ///
    /// `NotFound` if there is none, `IsADirectory` for a directory.
    fn remove(&self, path: &str) -> Result<()>;

    /// Removes directory `dir` and everything below it.
    ///
    /// # Errors
    ///
    /// `NotFound` if it does not exist, `NotADirectory` for an object,
    /// [`Error::InvalidPath`] for the root.
    fn remove_dir_all(&self, dir: &str) -> Result<()>;

    /// Atomically publishes `data` as the object at `path`: readers see either the previous
    /// state (no object, or the old one) or the whole new object, never part of it, and
    /// [`list`](Storage::list) never shows a temporary name. Creates missing parent
    /// directories and replaces an existing object. This is how commit files are written.
    ///
    /// # Errors
    ///
    /// As [`write`](Storage::write).
    fn publish(&self, path: &str, data: Bytes) -> Result<()>;

    /// Moves the object or directory at `from` to `to`, replacing an object at `to`, and
    /// creating missing parent directories of `to`. Renaming a path to itself does nothing.
    ///
    /// # Errors
    ///
    /// `NotFound` if `from` does not exist; `AlreadyExists` if `to` is a directory or `from`
    /// is a directory and `to` an object; `InvalidInput` when moving a directory into itself;
    /// `NotADirectory` if a parent of `to` is an object.
    fn rename(&self, from: &str, to: &str) -> Result<()>;

    /// Starts writing the object at `path` in pieces, for files too large to hold in memory
    /// (a fragment's data files). The object exists, whole, once
    /// [`ObjectWriter::finish`] returns; like [`write`](Storage::write) it is not atomic,
    /// so only files that a later [`publish`](Storage::publish) makes visible are written
    /// this way. The default collects the pieces and calls [`write`](Storage::write).
    ///
    /// # Errors
    ///
    /// As [`write`](Storage::write) (a backend may report them only at `finish`).
    fn writer<'a>(&'a self, path: &str) -> Result<Box<dyn ObjectWriter + 'a>> {
        normalize_non_root(Op::Write, path)?;
        Ok(Box::new(BufferedWriter { storage: self, path: path.to_owned(), data: Vec::new() }))
    }

    /// The AES-256-GCM key of the encrypted arrays and groups on this storage, which the
    /// engine then uses for everything it reads and writes here (see [`EncryptedStorage`]).
    /// `None` (the default) for unencrypted ones.
    fn encryption_key(&self) -> Option<&EncryptionKey> {
        None
    }
}

/// An object being written piece by piece; see [`Storage::writer`].
pub trait ObjectWriter: Send + Sync {
    /// Appends `data` to the object.
    ///
    /// # Errors
    ///
    /// The backend's I/O error.
    fn write_all(&mut self, data: &[u8]) -> Result<()>;

    /// Appends the slices of `pieces` one after the other: a tile written from its own
    /// bytes between the headers of its frame, without gathering them into one buffer first.
    /// The default appends each in turn; a file writes them with one `writev`.
    ///
    /// # Errors
    ///
    /// The backend's I/O error.
    fn write_all_vectored(&mut self, pieces: &[&[u8]]) -> Result<()> {
        pieces.iter().try_for_each(|p| self.write_all(p))
    }

    /// Completes the object (durably, where the backend syncs) and returns its size.
    ///
    /// # Errors
    ///
    /// The backend's I/O error.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// The default [`ObjectWriter`]: the pieces in memory, one [`Storage::write`] at the end.
struct BufferedWriter<'a, S: ?Sized> {
    storage: &'a S,
    path: String,
    data: Vec<u8>,
}

impl<S: Storage + ?Sized> ObjectWriter for BufferedWriter<'_, S> {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.data.extend_from_slice(data);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let size = self.data.len() as u64;
        self.storage.write(&self.path, Bytes::from(self.data))?;
        Ok(size)
    }
}

/// Checks `range` against an object of `size` bytes and returns it as `usize` offsets.
pub(crate) fn check_range(
    op: Op,
    path: &str,
    range: &Range<u64>,
    size: u64,
) -> Result<Range<usize>> {
    if range.start > range.end || range.end > size {
        return Err(Error::RangeOutOfBounds {
            op,
            path: path.to_owned(),
            range: range.clone(),
            size,
        });
    }
    // Both ends are at most `size`, the length of an object held in memory or of a file whose
    // bytes we are about to read into memory.
    let start = usize::try_from(range.start).map_err(|_| out_of_memory(op, path))?;
    let end = usize::try_from(range.end).map_err(|_| out_of_memory(op, path))?;
    Ok(start..end)
}

pub(crate) fn out_of_memory(op: Op, path: &str) -> Error {
    Error::io_kind(
        op,
        path,
        std::io::ErrorKind::OutOfMemory,
        "range does not fit in this platform's address space",
    )
}
