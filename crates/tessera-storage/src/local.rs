//! [`LocalStorage`]: a directory on the local file system.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::path::{normalize_non_root, normalize_path, parent};
use crate::writeback::{WRITEBACK_BYTES, Writeback};
use crate::{Entry, Error, ObjectWriter, Op, Result, Storage, check_range, out_of_memory};

/// The suffix of [`LocalStorage::publish`]'s temporary files (whose names also start with
/// `.`); [`LocalStorage::list`] hides such names.
const TEMP_SUFFIX: &str = ".tessera-tmp";

/// Makes temporary names unique within the process (the process id separates processes).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A [`Storage`] over a directory of the local file system, with [`std::fs`].
///
/// Paths are resolved below the root given to [`LocalStorage::new`]; a path with a `..`
/// component or a leading `/` is refused, so nothing outside the root is reached (symbolic
/// links inside the root are followed, like any file-system tool does). The root need not
/// exist yet: the first write or [`create_dir`](Storage::create_dir) creates it.
///
/// * Ranged reads read exactly the bytes asked for (`pread`, via
///   [`FileExt::read_exact_at`](std::os::unix::fs::FileExt::read_exact_at) on Unix), never the
///   whole file. [`read_ranges`](Storage::read_ranges) merges ranges whose gap is at most
///   [`coalesce_gap`](LocalStorage::with_coalesce_gap) bytes into one read, and hands out
///   zero-copy slices of it.
/// * [`publish`](Storage::publish) writes a temporary file in the target's directory, named
///   `.<name>.<pid>-<n>.tessera-tmp`, syncs it, renames it over the target (atomic on POSIX
///   file systems) and syncs the directory. [`list`](Storage::list) hides names that start
///   with `.` and end with `.tessera-tmp`, so the leftovers of a crash stay invisible too.
///   An empty object (a commit marker) that does not exist yet is created in place instead:
///   it is whole the moment it appears.
/// * [`write`](Storage::write) syncs the file to disk before returning (unless turned off
///   with [`with_sync`](LocalStorage::with_sync)), so that data files are durable before the
///   commit file that makes them visible is published. So does a [`writer`](Storage::writer)
///   when it finishes; one that grows past 32 MB is also synced as it goes, by a helper
///   thread, so that the disk works while the rest is written.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: PathBuf,
    coalesce_gap: u64,
    sync: bool,
}

impl LocalStorage {
    /// The default [`with_coalesce_gap`](LocalStorage::with_coalesce_gap): 64 KiB.
    pub const DEFAULT_COALESCE_GAP: u64 = 64 * 1024;

    /// A storage whose paths are relative to the directory `root`. Does no I/O.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalStorage { root: root.into(), coalesce_gap: Self::DEFAULT_COALESCE_GAP, sync: true }
    }

    /// Sets how many unrequested bytes [`read_ranges`](Storage::read_ranges) may read between
    /// two ranges to serve both with one read (0 merges only touching or overlapping ranges).
    #[must_use]
    pub fn with_coalesce_gap(mut self, gap: u64) -> Self {
        self.coalesce_gap = gap;
        self
    }

    /// Sets whether writes and publishes are synced to disk (`fsync`) before returning; on by
    /// default. Turning it off is for tests and scratch data: a publish stays atomic for
    /// readers, but may not survive a crash.
    #[must_use]
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// The root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file-system path of a canonical key.
    fn resolve(&self, key: &str) -> PathBuf {
        if key.is_empty() { self.root.clone() } else { self.root.join(key) }
    }

    /// Opens the object at `key` for reading and returns it with its size.
    fn open(&self, op: Op, path: &str, key: &str) -> Result<(File, u64)> {
        let file = File::open(self.resolve(key)).map_err(|e| lookup_error(op, path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(op, path, e))?;
        if meta.is_dir() {
            return Err(is_a_directory(op, path));
        }
        Ok((file, meta.len()))
    }

    /// Creates the directory `key` (the parent of what `op` writes) and its ancestors.
    fn create_parent(&self, op: Op, path: &str, key: &str) -> Result<()> {
        fs::create_dir_all(self.resolve(key)).map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                // `create_dir_all` says this when the directory's own path is a file.
                not_a_directory(op, path)
            } else {
                Error::io(op, path, e)
            }
        })
    }

    fn stat(&self, op: Op, path: &str, key: &str) -> Result<Option<Metadata>> {
        stat(&self.resolve(key)).map_err(|e| Error::io(op, path, e))
    }

    /// Makes the entries just made in `dir` durable (when syncing is on).
    fn sync_dir(&self, op: Op, path: &str, dir: &Path) -> Result<()> {
        if self.sync {
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(op, path, e))?;
        }
        Ok(())
    }

    /// Writes `data` to a fresh temporary file in `dir` and returns the file's path.
    fn write_temp(
        &self,
        op: Op,
        path: &str,
        dir: &Path,
        name: &str,
        data: &[u8],
    ) -> Result<PathBuf> {
        // Keep the name short enough for NAME_MAX whatever the target's name is.
        let mut cut = name.len().min(128);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let (tmp, mut file) = loop {
            let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp =
                dir.join(format!(".{}.{}-{n}{TEMP_SUFFIX}", &name[..cut], std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => break (tmp, file),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(op, path, e)),
            }
        };
        let written =
            file.write_all(data).and_then(|()| if self.sync { file.sync_all() } else { Ok(()) });
        if let Err(e) = written {
            drop(file);
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(op, path, e));
        }
        Ok(tmp)
    }
}

/// The metadata of `path` (following symbolic links), or `None` if nothing is there,
/// including when the path runs through a file.
fn stat(path: &Path) -> io::Result<Option<Metadata>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An error from looking a path up: "through a file" is "not found".
fn lookup_error(op: Op, path: &str, e: io::Error) -> Error {
    if e.kind() == ErrorKind::NotADirectory {
        Error::io(op, path, io::Error::new(ErrorKind::NotFound, e))
    } else {
        Error::io(op, path, e)
    }
}

fn is_a_directory(op: Op, path: &str) -> Error {
    Error::io_kind(op, path, ErrorKind::IsADirectory, "is a directory")
}

fn not_a_directory(op: Op, path: &str) -> Error {
    Error::io_kind(op, path, ErrorKind::NotADirectory, "not a directory (or a parent is not)")
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TEMP_SUFFIX)
}

/// Reads bytes `range` of `file` (moving its cursor) into a buffer that is not zeroed first.
fn read_exact_range(mut file: &File, range: Range<usize>) -> io::Result<Bytes> {
    use std::io::{Seek, SeekFrom};
    let len = range.len();
    let mut buf = Vec::with_capacity(len);
    file.seek(SeekFrom::Start(range.start as u64))?;
    file.take(len as u64).read_to_end(&mut buf)?;
    if buf.len() != len {
        return Err(io::Error::new(ErrorKind::UnexpectedEof, "failed to fill whole buffer"));
    }
    Ok(Bytes::from(buf))
}

/// Fills `bufs` in order from the bytes of `file` starting at `offset`: vectored reads
/// (`preadv`, at most `IOV_MAX` buffers each), so the kernel copies from the page cache
/// straight into the buffers. A file that ends first is an `UnexpectedEof`.
#[cfg(target_os = "linux")]
fn read_exact_vectored_at(file: &File, mut offset: u64, bufs: &mut [&mut [u8]]) -> io::Result<()> {
    use std::io::IoSliceMut;
    /// Linux's limit on the buffers of one vectored read.
    const IOV_MAX: usize = 1024;
    let mut slices: Vec<IoSliceMut<'_>> =
        bufs.iter_mut().filter(|b| !b.is_empty()).map(|b| IoSliceMut::new(b)).collect();
    let mut rest = slices.as_mut_slice();
    while !rest.is_empty() {
        let n = rest.len().min(IOV_MAX);
        let read = match rustix::io::preadv(file, &mut rest[..n], offset) {
            Ok(0) => {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                ));
            }
            Ok(read) => read,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        offset += read as u64;
        IoSliceMut::advance_slices(&mut rest, read);
    }
    Ok(())
}

/// [`read_exact_vectored_at`] where there is no `preadv` binding: one read per buffer.
#[cfg(not(target_os = "linux"))]
fn read_exact_vectored_at(mut file: &File, offset: u64, bufs: &mut [&mut [u8]]) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    bufs.iter_mut().try_for_each(|buf| file.read_exact(buf))
}

impl Storage for LocalStorage {
    fn read(&self, path: &str) -> Result<Bytes> {
        let key = normalize_path(Op::Read, path)?;
        let (mut file, size) = self.open(Op::Read, path, &key)?;
        let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.read_to_end(&mut buf).map_err(|e| Error::io(Op::Read, path, e))?;
        Ok(Bytes::from(buf))
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let key = normalize_path(Op::ReadRange, path)?;
        let (file, size) = self.open(Op::ReadRange, path, &key)?;
        let r = check_range(Op::ReadRange, path, &range, size)?;
        read_exact_range(&file, r).map_err(|e| Error::io(Op::ReadRange, path, e))
    }

    fn read_range_into(&self, path: &str, range: Range<u64>, buf: &mut Vec<u8>) -> Result<()> {
        use std::io::{Seek, SeekFrom};
        buf.clear();
        let key = normalize_path(Op::ReadRange, path)?;
        let (mut file, size) = self.open(Op::ReadRange, path, &key)?;
        let r = check_range(Op::ReadRange, path, &range, size)?;
        let len = r.len();
        // Into the buffer's spare capacity: nothing zeroed first.
        buf.try_reserve(len).map_err(|_| out_of_memory(Op::ReadRange, path))?;
        let read = file
            .seek(SeekFrom::Start(r.start as u64))
            .and_then(|_| (&file).take(len as u64).read_to_end(buf));
        match read {
            Ok(n) if n == len => Ok(()),
            Ok(_) => {
                buf.clear();
                let e = io::Error::new(ErrorKind::UnexpectedEof, "failed to fill whole buffer");
                Err(Error::io(Op::ReadRange, path, e))
            }
            Err(e) => {
                buf.clear();
                Err(Error::io(Op::ReadRange, path, e))
            }
        }
    }

    fn read_range_scatter(&self, path: &str, offset: u64, bufs: &mut [&mut [u8]]) -> Result<()> {
        let op = Op::ReadRange;
        let key = normalize_path(op, path)?;
        let (file, size) = self.open(op, path, &key)?;
        let total = bufs.iter().map(|b| b.len() as u64).sum::<u64>();
        let end = offset.checked_add(total).ok_or_else(|| out_of_memory(op, path))?;
        check_range(op, path, &(offset..end), size)?;
        read_exact_vectored_at(&file, offset, bufs).map_err(|e| Error::io(op, path, e))
    }

    fn read_ranges(&self, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let op = Op::ReadRanges;
        let key = normalize_path(op, path)?;
        let (file, size) = self.open(op, path, &key)?;
        let checked = ranges
            .iter()
            .map(|range| check_range(op, path, range, size))
            .collect::<Result<Vec<_>>>()?;
        let gap = usize::try_from(self.coalesce_gap).unwrap_or(usize::MAX);
        let mut order: Vec<usize> =
            (0..checked.len()).filter(|&i| !checked[i].is_empty()).collect();
        order.sort_by_key(|&i| checked[i].start);
        let mut out = vec![Bytes::new(); checked.len()];
        let mut group = order.as_slice();
        while let Some(&first) = group.first() {
            // Extend the run while the next range starts within `gap` of its end.
            let start = checked[first].start;
            let mut end = checked[first].end;
            let mut len = 1;
            while let Some(&next) = group.get(len) {
                if checked[next].start > end.saturating_add(gap) {
                    break;
                }
                end = end.max(checked[next].end);
                len += 1;
            }
            let chunk = read_exact_range(&file, start..end).map_err(|e| Error::io(op, path, e))?;
            for &i in &group[..len] {
                out[i] = chunk.slice(checked[i].start - start..checked[i].end - start);
            }
            group = &group[len..];
        }
        Ok(out)
    }

    fn size(&self, path: &str) -> Result<u64> {
        let key = normalize_path(Op::Size, path)?;
        match self.stat(Op::Size, path, &key)? {
            None => Err(Error::not_found(Op::Size, path)),
            Some(meta) if meta.is_dir() => Err(is_a_directory(Op::Size, path)),
            Some(meta) => Ok(meta.len()),
        }
    }

    fn exists(&self, path: &str) -> Result<bool> {
        let key = normalize_path(Op::Exists, path)?;
        Ok(self.stat(Op::Exists, path, &key)?.is_some())
    }

    fn is_dir(&self, path: &str) -> Result<bool> {
        let key = normalize_path(Op::IsDir, path)?;
        Ok(self.stat(Op::IsDir, path, &key)?.is_some_and(|meta| meta.is_dir()))
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        let op = Op::List;
        let key = normalize_path(op, dir)?;
        match self.stat(op, dir, &key)? {
            None => return Err(Error::not_found(op, dir)),
            Some(meta) if !meta.is_dir() => return Err(not_a_directory(op, dir)),
            Some(_) => {}
        }
        let read_dir = fs::read_dir(self.resolve(&key)).map_err(|e| lookup_error(op, dir, e))?;
        let mut entries = Vec::new();
        for dir_entry in read_dir {
            let dir_entry = dir_entry.map_err(|e| Error::io(op, dir, e))?;
            let file_name = dir_entry.file_name();
            let Some(name) = file_name.to_str() else {
                return Err(Error::io_kind(
                    op,
                    dir,
                    ErrorKind::InvalidData,
                    &format!("the directory holds a name that is not UTF-8: {file_name:?}"),
                ));
            };
            if is_temp_name(name) {
                continue;
            }
            // Follow symbolic links; skip what vanished since `read_dir` (or dangles).
            let Some(meta) = stat(&dir_entry.path()).map_err(|e| Error::io(op, dir, e))? else {
                continue;
            };
            entries.push(if meta.is_dir() {
                Entry::dir(name)
            } else {
                Entry::file(name, meta.len())
            });
        }
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn list_names(&self, dir: &str) -> Result<Vec<Entry>> {
        let op = Op::List;
        let key = normalize_path(op, dir)?;
        let read_dir = fs::read_dir(self.resolve(&key)).map_err(|e| match e.kind() {
            // `read_dir` on an object: the error `list` gives.
            ErrorKind::NotADirectory => not_a_directory(op, dir),
            _ => lookup_error(op, dir, e),
        })?;
        let mut entries = Vec::new();
        for dir_entry in read_dir {
            let dir_entry = dir_entry.map_err(|e| Error::io(op, dir, e))?;
            let file_name = dir_entry.file_name();
            let Some(name) = file_name.to_str() else {
                return Err(Error::io_kind(
                    op,
                    dir,
                    ErrorKind::InvalidData,
                    &format!("the directory holds a name that is not UTF-8: {file_name:?}"),
                ));
            };
            if is_temp_name(name) {
                continue;
            }
            // The kind from the directory entry itself; links (and file systems that do not
            // tell) are followed with a `stat`, as `list` does.
            let kind = dir_entry.file_type().map_err(|e| Error::io(op, dir, e))?;
            entries.push(if kind.is_dir() {
                Entry::dir(name)
            } else if kind.is_file() {
                Entry::file(name, 0)
            } else {
                match stat(&dir_entry.path()).map_err(|e| Error::io(op, dir, e))? {
                    None => continue,
                    Some(meta) if meta.is_dir() => Entry::dir(name),
                    Some(meta) => Entry::file(name, meta.len()),
                }
            });
        }
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn read_tail(&self, path: &str, max_len: u64) -> Result<(Bytes, u64)> {
        let key = normalize_path(Op::ReadRange, path)?;
        let (file, size) = self.open(Op::ReadRange, path, &key)?;
        let start = size.saturating_sub(max_len);
        let r = check_range(Op::ReadRange, path, &(start..size), size)?;
        let bytes = read_exact_range(&file, r).map_err(|e| Error::io(Op::ReadRange, path, e))?;
        Ok((bytes, size))
    }

    fn write(&self, path: &str, data: Bytes) -> Result<()> {
        let op = Op::Write;
        let key = normalize_non_root(op, path)?;
        self.create_parent(op, path, parent(&key))?;
        let target = self.resolve(&key);
        let mut file = File::create(&target).map_err(|e| {
            if target.is_dir() { is_a_directory(op, path) } else { Error::io(op, path, e) }
        })?;
        file.write_all(&data)
            .and_then(|()| if self.sync { file.sync_all() } else { Ok(()) })
            .map_err(|e| Error::io(op, path, e))
    }

    fn writer<'a>(&'a self, path: &str) -> Result<Box<dyn ObjectWriter + 'a>> {
        let op = Op::Write;
        let key = normalize_non_root(op, path)?;
        self.create_parent(op, path, parent(&key))?;
        let target = self.resolve(&key);
        let file = File::create(&target).map_err(|e| {
            if target.is_dir() { is_a_directory(op, path) } else { Error::io(op, path, e) }
        })?;
        Ok(Box::new(LocalWriter {
            file,
            path: path.to_owned(),
            size: 0,
            sync: self.sync,
            unsynced: 0,
            writeback: None,
        }))
    }

    fn create_dir(&self, path: &str) -> Result<()> {
        let key = normalize_path(Op::CreateDir, path)?;
        fs::create_dir_all(self.resolve(&key)).map_err(|e| Error::io(Op::CreateDir, path, e))
    }

    fn remove(&self, path: &str) -> Result<()> {
        let op = Op::Remove;
        let key = normalize_non_root(op, path)?;
        let target = self.resolve(&key);
        fs::remove_file(&target).map_err(|e| {
            if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) {
                lookup_error(op, path, e)
            } else if target.is_dir() {
                is_a_directory(op, path)
            } else {
                Error::io(op, path, e)
            }
        })
    }

    fn remove_dir_all(&self, dir: &str) -> Result<()> {
        let op = Op::RemoveDirAll;
        let key = normalize_non_root(op, dir)?;
        match self.stat(op, dir, &key)? {
            None => return Err(Error::not_found(op, dir)),
            Some(meta) if !meta.is_dir() => return Err(not_a_directory(op, dir)),
            Some(_) => {}
        }
        fs::remove_dir_all(self.resolve(&key)).map_err(|e| Error::io(op, dir, e))
    }

    fn publish(&self, path: &str, data: Bytes) -> Result<()> {
        let op = Op::Publish;
        let key = normalize_non_root(op, path)?;
        let parent_key = parent(&key);
        self.create_parent(op, path, parent_key)?;
        let target = self.resolve(&key);
        if target.is_dir() {
            return Err(is_a_directory(op, path));
        }
        let dir = self.resolve(parent_key);
        // An empty object (a commit marker) appears whole the moment it is created: no
        // temporary file, no rename. Over an existing target, the general path replaces it.
        if data.is_empty() {
            match OpenOptions::new().write(true).create_new(true).open(&target) {
                Ok(_) => return self.sync_dir(op, path, &dir),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(op, path, e)),
            }
        }
        let name = &key[key.rfind('/').map_or(0, |i| i + 1)..];
        let tmp = self.write_temp(op, path, &dir, name, &data)?;
        if let Err(e) = fs::rename(&tmp, &target) {
            let _ = fs::remove_file(&tmp);
            return Err(if target.is_dir() {
                is_a_directory(op, path)
            } else {
                Error::io(op, path, e)
            });
        }
        self.sync_dir(op, path, &dir)
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let op = Op::Rename;
        let src = normalize_non_root(op, from)?;
        let dst = normalize_non_root(op, to)?;
        let Some(src_meta) = self.stat(op, from, &src)? else {
            return Err(Error::not_found(op, from));
        };
        if src == dst {
            return Ok(());
        }
        let exists_error = |message| Error::io_kind(op, to, ErrorKind::AlreadyExists, message);
        match self.stat(op, to, &dst)? {
            Some(meta) if meta.is_dir() => {
                return Err(exists_error("the destination is a directory"));
            }
            Some(_) if src_meta.is_dir() => {
                return Err(exists_error("the destination is an object"));
            }
            _ => {}
        }
        if src_meta.is_dir() && dst.starts_with(&format!("{src}/")) {
            return Err(Error::io_kind(
                op,
                to,
                ErrorKind::InvalidInput,
                "cannot move a directory into itself",
            ));
        }
        self.create_parent(op, to, parent(&dst))?;
        fs::rename(self.resolve(&src), self.resolve(&dst)).map_err(|e| lookup_error(op, from, e))
    }
}

/// A local file written piece by piece, synced at the end unless syncing is off. A file that
/// grows past [`WRITEBACK_BYTES`] is also synced as it goes, by a helper thread, so that the
/// disk works while the rest is written and the final sync has little left to wait for.
struct LocalWriter {
    file: File,
    path: String,
    size: u64,
    sync: bool,
    /// Bytes appended since the last writeback request.
    unsynced: u64,
    writeback: Option<Writeback>,
}

impl ObjectWriter for LocalWriter {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.file.write_all(data).map_err(|e| Error::io(Op::Write, &self.path, e))?;
        self.appended(data.len() as u64);
        Ok(())
    }

    fn write_all_vectored(&mut self, pieces: &[&[u8]]) -> Result<()> {
        let mut slices: Vec<IoSlice<'_>> =
            pieces.iter().filter(|p| !p.is_empty()).map(|p| IoSlice::new(p)).collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match self.file.write_vectored(rest) {
                Ok(0) => {
                    let e = io::Error::new(ErrorKind::WriteZero, "the file takes no more bytes");
                    return Err(Error::io(Op::Write, &self.path, e));
                }
                Ok(n) => {
                    IoSlice::advance_slices(&mut rest, n);
                    self.appended(n as u64);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(Op::Write, &self.path, e)),
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        if let Some(w) = self.writeback.take() {
            w.finish().map_err(|e| Error::io(Op::Write, &self.path, e))?;
        }
        if self.sync {
            self.file.sync_all().map_err(|e| Error::io(Op::Write, &self.path, e))?;
        }
        Ok(self.size)
    }
}

impl LocalWriter {
    /// Counts `n` bytes appended, and asks for their writeback once enough have piled up.
    fn appended(&mut self, n: u64) {
        self.size += n;
        if !self.sync {
            return;
        }
        self.unsynced += n;
        if self.unsynced >= WRITEBACK_BYTES {
            self.unsynced = 0;
            if self.writeback.is_none() {
                // Without the helper (no thread to be had) the final sync does it all.
                self.writeback = Writeback::start(&self.file).ok();
            }
            if let Some(w) = &self.writeback {
                w.request();
            }
        }
    }
}
