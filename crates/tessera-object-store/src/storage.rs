//! [`ObjectStoreStorage`]: the [`Storage`] trait over an [`ObjectStore`].

use std::collections::HashSet;
use std::fmt;
use std::io::{self, ErrorKind};
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload};
use tessera_storage::{
    Entry, Error, ObjectWriter, Op, Result, Storage, normalize_non_root, normalize_path,
};

use crate::runtime;
use crate::writer::MultipartWriter;

/// The suffix of directory markers: an empty directory `a/b` is the empty object
/// `a/.b.tessera-dir`.
pub(crate) const MARKER_SUFFIX: &str = ".tessera-dir";

/// The name of a directory marker inside its directory (`a/b/.tessera-dir`), used where
/// libtiledb would trip over a marker beside the directory.
pub(crate) const INNER_MARKER: &str = ".tessera-dir";

/// Folders whose listing libtiledb parses strictly (every name must be one of its files):
/// the marker of a directory inside one of them goes inside that directory instead of
/// beside it (`__schema/__enumerations/.tessera-dir`).
const STRICT_FOLDERS: [&str; 4] = ["__schema", "__meta", "__fragment_meta", "__group"];

/// A [`Storage`] over an object store (S3, GCS, Azure, HTTP, or any [`ObjectStore`]), rooted
/// at a key prefix.
///
/// Object stores have keys, not directories. This backend gives them the directory
/// semantics of [`LocalStorage`](tessera_storage::LocalStorage) (the shared conformance
/// suite checks it):
///
/// * a directory exists while some key lies below its prefix (`a/b/...`), or while its
///   **marker** exists: the empty object `a/.b.tessera-dir`, written by
///   [`create_dir`](Storage::create_dir) for an empty directory and by
///   [`remove`](Storage::remove) when it empties one. Markers sit beside the directory, not
///   inside it, so that libtiledb listing an array's `__meta` or a group's `__group` never
///   sees them; inside the folders whose every name libtiledb parses (`__schema`, `__meta`,
///   `__fragment_meta`, `__group`) a directory's marker goes inside it instead
///   (`__schema/__enumerations/.tessera-dir`). [`list`](Storage::list) shows a marker as the
///   directory it stands for. A marker this value wrote is deleted again as soon as it writes
///   an object into that directory, so libtiledb rarely sees one at all.
/// * writes check what a file system checks (no object on the way, no directory at the
///   path), caching the directories it has seen so that a fragment's files cost one request
///   each plus one listing.
/// * [`publish`](Storage::publish) is one `PUT`: object stores replace objects atomically,
///   so readers see the old or the new object whole, and no temporary name exists.
/// * [`read_ranges`](Storage::read_ranges) merges ranges less than
///   [`coalesce_gap`](ObjectStoreStorage::with_coalesce_gap) apart and fetches the merged
///   ranges in parallel; [`writer`](Storage::writer) uploads large objects as a multipart
///   upload, parts in parallel.
///
/// Every request runs on a tokio runtime the crate owns (on its own threads), so the
/// synchronous calls work from any thread, including another runtime's worker and blocking
/// threads. Retries with exponential backoff are object_store's (see
/// [`crate::retry_config`]).
#[derive(Clone)]
pub struct ObjectStoreStorage {
    inner: Arc<Inner>,
    coalesce_gap: u64,
    concurrency: usize,
    part_size: usize,
}

/// The state the futures share (they must own what they use).
pub(crate) struct Inner {
    pub(crate) store: Arc<dyn ObjectStore>,
    /// The root's key prefix, without leading or trailing `/` (empty for the bucket root).
    prefix: String,
    /// The root as a URI, for messages.
    uri: String,
    /// Directories (relative paths) known to exist, so not to be objects.
    known_dirs: Mutex<HashSet<String>>,
    /// Directories whose marker this value wrote (deleted when an object goes in).
    markers: Mutex<HashSet<String>>,
}

impl fmt::Debug for ObjectStoreStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStoreStorage")
            .field("uri", &self.inner.uri)
            .field("store", &self.inner.store.to_string())
            .field("coalesce_gap", &self.coalesce_gap)
            .finish_non_exhaustive()
    }
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object(u64),
    Dir,
    Missing,
}

type StoreResult<T> = std::result::Result<T, object_store::Error>;

impl ObjectStoreStorage {
    /// The default [`with_coalesce_gap`](ObjectStoreStorage::with_coalesce_gap): 1 MiB
    /// (object_store's own default; a request costs far more than a megabyte of transfer).
    pub const DEFAULT_COALESCE_GAP: u64 = 1024 * 1024;
    /// The default [`with_concurrency`](ObjectStoreStorage::with_concurrency): 16 requests.
    pub const DEFAULT_CONCURRENCY: usize = 16;
    /// The default [`with_part_size`](ObjectStoreStorage::with_part_size): 8 MiB.
    pub const DEFAULT_PART_SIZE: usize = 8 * 1024 * 1024;

    /// A storage whose paths are keys below `prefix` in `store` (`prefix` may be empty: the
    /// whole bucket). `uri` names the root in messages (`s3://bucket/prefix`). Does no I/O.
    ///
    /// # Errors
    ///
    /// [`crate::Error::InvalidUri`] when `prefix` has a `..` component or a NUL byte.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        uri: impl Into<String>,
    ) -> crate::Result<Self> {
        let uri = uri.into();
        let trimmed = prefix.trim_matches('/');
        let prefix = normalize_path(Op::List, trimmed)
            .map_err(|e| crate::Error::InvalidUri { uri: uri.clone(), reason: e.to_string() })?
            .into_owned();
        Path::parse(&prefix)
            .map_err(|e| crate::Error::InvalidUri { uri: uri.clone(), reason: e.to_string() })?;
        Ok(ObjectStoreStorage {
            inner: Arc::new(Inner {
                store,
                prefix,
                uri,
                known_dirs: Mutex::default(),
                markers: Mutex::default(),
            }),
            coalesce_gap: Self::DEFAULT_COALESCE_GAP,
            concurrency: Self::DEFAULT_CONCURRENCY,
            part_size: Self::DEFAULT_PART_SIZE,
        })
    }

    /// Sets how many unrequested bytes [`read_ranges`](Storage::read_ranges) may fetch between
    /// two ranges to serve both with one request (0 merges only touching or overlapping ones).
    #[must_use]
    pub fn with_coalesce_gap(mut self, gap: u64) -> Self {
        self.coalesce_gap = gap;
        self
    }

    /// Sets how many requests one call may have in flight at once (at least 1).
    #[must_use]
    pub fn with_concurrency(mut self, requests: usize) -> Self {
        self.concurrency = requests.max(1);
        self
    }

    /// Sets the part size of multipart uploads by [`writer`](Storage::writer) (at least
    /// 5 MiB, S3's minimum); smaller objects are one `PUT`.
    #[must_use]
    pub fn with_part_size(mut self, bytes: usize) -> Self {
        self.part_size = bytes.max(5 * 1024 * 1024);
        self
    }

    /// The root as a URI (`s3://bucket/prefix`).
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.inner.uri
    }

    /// The object store underneath.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner.store
    }

    /// A storage rooted at `path` below this one's root (same store, runtime and settings):
    /// the members of a group, for instance.
    ///
    /// # Errors
    ///
    /// [`crate::Error::InvalidUri`] when `path` has a `..` component or a NUL byte.
    pub fn child(&self, path: &str) -> crate::Result<Self> {
        let rel = normalize_path(Op::List, path.trim_matches('/')).map_err(|e| {
            crate::Error::InvalidUri {
                uri: format!("{}/{path}", self.inner.uri),
                reason: e.to_string(),
            }
        })?;
        let prefix = self.inner.key(&rel);
        let uri = if rel.is_empty() {
            self.inner.uri.clone()
        } else {
            format!("{}/{rel}", self.inner.uri.trim_end_matches('/'))
        };
        let mut child = ObjectStoreStorage::new(Arc::clone(&self.inner.store), &prefix, uri)?;
        child.coalesce_gap = self.coalesce_gap;
        child.concurrency = self.concurrency;
        child.part_size = self.part_size;
        Ok(child)
    }

    /// Runs `f(inner)` on the runtime and maps a failure to start it to an error of `op`.
    fn run<T, F, Fut>(&self, op: Op, path: &str, f: F) -> Result<T>
    where
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let future = f(Arc::clone(&self.inner));
        runtime::run(future).map_err(|e| Error::io(op, path, e))?
    }

    /// Checks before writing an object at canonical `key`: no object on the way, no
    /// directory at `key`.
    fn check_writable(&self, op: Op, path: &str, key: &str) -> Result<()> {
        if self.inner.is_known_dir(key) {
            return Err(is_a_directory(op, path));
        }
        let (path_owned, key_owned) = (path.to_owned(), key.to_owned());
        self.run(op, path, move |inner| async move {
            let (ancestors, dir) = futures::future::join(
                inner.check_ancestors(op, &path_owned, parent(&key_owned)),
                inner.dir_exists(&key_owned),
            )
            .await;
            ancestors?;
            if dir.map_err(|e| inner.error(op, &path_owned, &key_owned, e))? {
                return Err(is_a_directory(op, &path_owned));
            }
            Ok(())
        })
    }

    /// After an object was written at canonical `key`: remember its parents as directories
    /// and delete the markers this value wrote for them.
    pub(crate) fn written(inner: &Arc<Inner>, key: &str) {
        let parents: Vec<String> = ancestors(parent(key)).map(str::to_owned).collect();
        let stale: Vec<String> = {
            let mut markers = inner.markers.lock().unwrap_or_else(PoisonError::into_inner);
            parents.iter().filter(|d| markers.remove(d.as_str())).cloned().collect()
        };
        {
            let mut dirs = inner.known_dirs.lock().unwrap_or_else(PoisonError::into_inner);
            dirs.extend(parents);
        }
        if !stale.is_empty() {
            let inner = Arc::clone(inner);
            // The directories now hold an object, so the markers are redundant: a failure
            // to delete one only leaves a harmless marker.
            let _ = runtime::run(async move {
                for dir in stale {
                    let _ = inner.store.delete(&inner.marker_path(&dir)).await;
                }
            });
        }
    }

    fn put(&self, op: Op, path: &str, data: Bytes) -> Result<()> {
        let key = normalize_non_root(op, path)?.into_owned();
        self.check_writable(op, path, &key)?;
        let (path_owned, key_owned) = (path.to_owned(), key.clone());
        self.run(op, path, move |inner| async move {
            let location = inner.path(&key_owned);
            inner
                .store
                .put(&location, PutPayload::from_bytes(data))
                .await
                .map_err(|e| inner.error(op, &path_owned, &key_owned, e))?;
            Ok(())
        })?;
        Self::written(&self.inner, &key);
        Ok(())
    }
}

impl Inner {
    /// The full key of canonical relative path `rel`.
    fn key(&self, rel: &str) -> String {
        match (self.prefix.is_empty(), rel.is_empty()) {
            (true, _) => rel.to_owned(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{rel}", self.prefix),
        }
    }

    /// The object_store path of canonical relative path `rel`. Canonical paths have no empty,
    /// `.` or `..` components; a control character is the only thing `Path::parse` refuses
    /// beyond those, and such a key is percent-encoded instead.
    fn path(&self, rel: &str) -> Path {
        let key = self.key(rel);
        Path::parse(&key).unwrap_or_else(|_| Path::from(key.as_str()))
    }

    /// The key of the marker of directory `rel` (not the root).
    fn marker_path(&self, rel: &str) -> Path {
        self.path(&marker_rel(rel))
    }

    /// The key of the marker beside directory `rel` (wherever [`marker_rel`] puts it, this is
    /// the one a reader must look for besides the keys below the directory).
    fn side_marker_path(&self, rel: &str) -> Path {
        self.path(&side_marker_rel(rel))
    }

    /// The URI of canonical relative path `rel`, for messages.
    fn uri_of(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.uri.clone()
        } else {
            format!("{}/{rel}", self.uri.trim_end_matches('/'))
        }
    }

    /// An [`Error::Io`] for `op` on `path` from an object_store error, naming the URI.
    fn error(&self, op: Op, path: &str, rel: &str, e: object_store::Error) -> Error {
        let kind = match &e {
            object_store::Error::NotFound { .. } => ErrorKind::NotFound,
            object_store::Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            object_store::Error::NotSupported { .. }
            | object_store::Error::NotImplemented { .. } => ErrorKind::Unsupported,
            _ => ErrorKind::Other,
        };
        let message = format!("{}: {e}", self.uri_of(rel));
        Error::io(op, path, io::Error::new(kind, message))
    }

    fn is_known_dir(&self, rel: &str) -> bool {
        self.known_dirs.lock().unwrap_or_else(PoisonError::into_inner).contains(rel)
    }

    fn forget_dirs(&self, rel: &str) {
        let below = format!("{rel}/");
        let mut dirs = self.known_dirs.lock().unwrap_or_else(PoisonError::into_inner);
        dirs.retain(|d| d != rel && !d.starts_with(&below));
        let mut markers = self.markers.lock().unwrap_or_else(PoisonError::into_inner);
        markers.retain(|d| d != rel && !d.starts_with(&below));
    }

    /// The object's metadata, or `None` when there is none at `rel`.
    async fn head(&self, rel: &str) -> StoreResult<Option<ObjectMeta>> {
        if rel.is_empty() {
            return Ok(None);
        }
        match self.store.head(&self.path(rel)).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether some key lies below `rel/`.
    async fn has_children(&self, rel: &str) -> StoreResult<bool> {
        let prefix = self.path(rel);
        let prefix = if prefix.as_ref().is_empty() { None } else { Some(&prefix) };
        let mut listing = self.store.list(prefix);
        match listing.next().await {
            Some(Ok(_)) => Ok(true),
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    /// Whether `rel` is a directory: the root, a prefix with keys below it, or a marker.
    async fn dir_exists(&self, rel: &str) -> StoreResult<bool> {
        if rel.is_empty() {
            return Ok(true);
        }
        let (children, marker) = futures::future::join(self.has_children(rel), async {
            match self.store.head(&self.side_marker_path(rel)).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await;
        Ok(children? || marker?)
    }

    /// What `rel` is.
    async fn kind(&self, rel: &str) -> StoreResult<Kind> {
        let (object, dir) = futures::future::join(self.head(rel), self.dir_exists(rel)).await;
        if let Some(meta) = object? {
            return Ok(Kind::Object(meta.size));
        }
        Ok(if dir? { Kind::Dir } else { Kind::Missing })
    }

    /// The error for reading an object at `rel` that the store says is not there: a
    /// directory, or really nothing.
    async fn missing_object(&self, op: Op, path: &str, rel: &str, e: object_store::Error) -> Error {
        match self.dir_exists(rel).await {
            Ok(true) => is_a_directory(op, path),
            Ok(false) => self.error(op, path, rel, e),
            Err(e) => self.error(op, path, rel, e),
        }
    }

    /// The size of the object at `rel`, or the error an object read gets there.
    async fn object_size(&self, op: Op, path: &str, rel: &str) -> Result<u64> {
        if rel.is_empty() {
            return Err(is_a_directory(op, path));
        }
        match self.store.head(&self.path(rel)).await {
            Ok(meta) => Ok(meta.size),
            Err(e @ object_store::Error::NotFound { .. }) => {
                Err(self.missing_object(op, path, rel, e).await)
            }
            Err(e) => Err(self.error(op, path, rel, e)),
        }
    }

    /// Fails with `NotADirectory` when an ancestor of `dir` (itself included) is an object,
    /// asking the store only about those not known to be directories.
    async fn check_ancestors(&self, op: Op, path: &str, dir: &str) -> Result<()> {
        let unknown: Vec<&str> = ancestors(dir).filter(|d| !self.is_known_dir(d)).collect();
        let heads = futures::future::join_all(unknown.iter().map(|d| self.head(d))).await;
        for (d, found) in unknown.iter().zip(heads) {
            if found.map_err(|e| self.error(op, path, d, e))?.is_some() {
                return Err(not_a_directory(op, path));
            }
        }
        Ok(())
    }

    /// One ranged GET: the bytes and the object's size.
    async fn get_range(&self, rel: &str, range: Range<u64>) -> StoreResult<(Bytes, u64)> {
        let options = GetOptions { range: Some(GetRange::Bounded(range)), ..GetOptions::default() };
        let result = self.store.get_opts(&self.path(rel), options).await?;
        let size = result.meta.size;
        Ok((result.bytes().await?, size))
    }

    /// Writes the marker of directory `rel` and remembers it.
    async fn write_marker(&self, op: Op, path: &str, rel: &str) -> Result<()> {
        self.store
            .put(&self.marker_path(rel), PutPayload::new())
            .await
            .map_err(|e| self.error(op, path, rel, e))?;
        self.markers.lock().unwrap_or_else(PoisonError::into_inner).insert(rel.to_owned());
        Ok(())
    }

    /// Keeps directory `rel` (not the root) in existence after something below it went away.
    async fn keep_dir(&self, op: Op, path: &str, rel: &str) -> Result<()> {
        if rel.is_empty() {
            return Ok(());
        }
        if self.dir_exists(rel).await.map_err(|e| self.error(op, path, rel, e))? {
            return Ok(());
        }
        self.write_marker(op, path, rel).await
    }

    /// Every key below `rel/` (the whole bucket below the root for `""`).
    async fn keys_below(&self, op: Op, path: &str, rel: &str) -> Result<Vec<Path>> {
        let prefix = self.path(rel);
        let prefix = if prefix.as_ref().is_empty() { None } else { Some(&prefix) };
        self.store
            .list(prefix)
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|e| self.error(op, path, rel, e))
    }

    /// Deletes `paths`, several at a time (a missing key is not an error).
    async fn delete_all(&self, op: Op, path: &str, rel: &str, paths: Vec<Path>) -> Result<()> {
        let locations = stream::iter(paths.into_iter().map(Ok)).boxed();
        let results: Vec<StoreResult<Path>> = self.store.delete_stream(locations).collect().await;
        for result in results {
            match result {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error(op, path, rel, e)),
            }
        }
        Ok(())
    }
}

fn is_a_directory(op: Op, path: &str) -> Error {
    Error::io_kind(op, path, ErrorKind::IsADirectory, "is a directory")
}

fn not_a_directory(op: Op, path: &str) -> Error {
    Error::io_kind(op, path, ErrorKind::NotADirectory, "not a directory (or a parent is not)")
}

fn range_error(op: Op, path: &str, range: &Range<u64>, size: u64) -> Error {
    Error::RangeOutOfBounds { op, path: path.to_owned(), range: range.clone(), size }
}

fn in_bounds(range: &Range<u64>, size: u64) -> bool {
    range.start <= range.end && range.end <= size
}

/// The parent of a canonical path (`"a/b"` → `"a"`, `"a"` → `""`).
pub(crate) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// `dir` and its ancestors below the root, outermost first (nothing for the root).
fn ancestors(dir: &str) -> impl Iterator<Item = &str> {
    let inner = if dir.is_empty() { None } else { Some(dir) };
    dir.match_indices('/').map(move |(i, _)| &dir[..i]).chain(inner)
}

/// The name a listing shows for the key `name` directly inside a directory: a marker stands
/// for its directory.
fn marker_name(name: &str) -> Option<&str> {
    name.strip_prefix('.')?.strip_suffix(MARKER_SUFFIX).filter(|n| !n.is_empty())
}

/// Merges the non-empty ranges `ranges[i]` (already checked) into groups less than `gap`
/// apart: each group is `(start..end, indexes)`.
fn coalesce(ranges: &[Range<u64>], gap: u64) -> Vec<(Range<u64>, Vec<usize>)> {
    let mut order: Vec<usize> = (0..ranges.len()).filter(|&i| !ranges[i].is_empty()).collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut groups: Vec<(Range<u64>, Vec<usize>)> = Vec::new();
    for i in order {
        let r = &ranges[i];
        match groups.last_mut() {
            Some((g, members)) if r.start <= g.end.saturating_add(gap) => {
                g.end = g.end.max(r.end);
                members.push(i);
            }
            _ => groups.push((r.clone(), vec![i])),
        }
    }
    groups
}

impl Storage for ObjectStoreStorage {
    fn read(&self, path: &str) -> Result<Bytes> {
        let op = Op::Read;
        let key = normalize_path(op, path)?.into_owned();
        if key.is_empty() {
            return Err(is_a_directory(op, path));
        }
        let path_owned = path.to_owned();
        self.run(op, path, move |inner| async move {
            let fetched = match inner.store.get(&inner.path(&key)).await {
                Ok(result) => result.bytes().await,
                Err(e) => Err(e),
            };
            match fetched {
                Ok(bytes) => Ok(bytes),
                Err(e @ object_store::Error::NotFound { .. }) => {
                    Err(inner.missing_object(op, &path_owned, &key, e).await)
                }
                Err(e) => Err(inner.error(op, &path_owned, &key, e)),
            }
        })
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let op = Op::ReadRange;
        let mut out = self.read_ranges_as(op, path, std::slice::from_ref(&range))?;
        Ok(out.pop().unwrap_or_default())
    }

    fn read_ranges(&self, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.read_ranges_as(Op::ReadRanges, path, ranges)
    }

    fn read_tail(&self, path: &str, max_len: u64) -> Result<(Bytes, u64)> {
        let op = Op::ReadRange;
        let key = normalize_path(op, path)?.into_owned();
        let path_owned = path.to_owned();
        self.run(op, path, move |inner| async move {
            let path = path_owned.as_str();
            if key.is_empty() {
                return Err(is_a_directory(op, path));
            }
            if max_len > 0 {
                // One request: a suffix range, which also tells the object's size.
                let options =
                    GetOptions { range: Some(GetRange::Suffix(max_len)), ..GetOptions::default() };
                let fetched = match inner.store.get_opts(&inner.path(&key), options).await {
                    Ok(result) => {
                        let size = result.meta.size;
                        result.bytes().await.map(|b| (b, size))
                    }
                    Err(e) => Err(e),
                };
                match fetched {
                    Ok((bytes, size)) if bytes.len() as u64 == max_len.min(size) => {
                        return Ok((bytes, size));
                    }
                    Err(e @ object_store::Error::NotFound { .. }) => {
                        return Err(inner.missing_object(op, path, &key, e).await);
                    }
                    // An empty object (no suffix to serve) or a store without suffix ranges:
                    // the size, then the range.
                    _ => {}
                }
            }
            let size = inner.object_size(op, path, &key).await?;
            let start = size.saturating_sub(max_len);
            if start == size {
                return Ok((Bytes::new(), size));
            }
            let (bytes, _) = inner
                .get_range(&key, start..size)
                .await
                .map_err(|e| inner.error(op, path, &key, e))?;
            Ok((bytes, size))
        })
    }

    fn size(&self, path: &str) -> Result<u64> {
        let op = Op::Size;
        let key = normalize_path(op, path)?.into_owned();
        let path_owned = path.to_owned();
        self.run(
            op,
            path,
            move |inner| async move { inner.object_size(op, &path_owned, &key).await },
        )
    }

    fn exists(&self, path: &str) -> Result<bool> {
        let op = Op::Exists;
        let key = normalize_path(op, path)?.into_owned();
        let path_owned = path.to_owned();
        self.run(op, path, move |inner| async move {
            let kind = inner.kind(&key).await.map_err(|e| inner.error(op, &path_owned, &key, e))?;
            Ok(kind != Kind::Missing)
        })
    }

    fn is_dir(&self, path: &str) -> Result<bool> {
        let op = Op::IsDir;
        let key = normalize_path(op, path)?.into_owned();
        let path_owned = path.to_owned();
        self.run(op, path, move |inner| async move {
            inner.dir_exists(&key).await.map_err(|e| inner.error(op, &path_owned, &key, e))
        })
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        let op = Op::List;
        let key = normalize_path(op, dir)?.into_owned();
        let path_owned = dir.to_owned();
        self.run(op, dir, move |inner| async move {
            let prefix = inner.path(&key);
            let prefix_opt = if prefix.as_ref().is_empty() { None } else { Some(&prefix) };
            let listing = inner
                .store
                .list_with_delimiter(prefix_opt)
                .await
                .map_err(|e| inner.error(op, &path_owned, &key, e))?;
            let mut entries: Vec<Entry> = Vec::new();
            let mut dirs: HashSet<String> = HashSet::new();
            for p in &listing.common_prefixes {
                if let Some(name) = p.filename() {
                    dirs.insert(name.to_owned());
                }
            }
            for meta in &listing.objects {
                let Some(name) = meta.location.filename() else { continue };
                if name == INNER_MARKER {
                    continue;
                }
                if let Some(d) = marker_name(name) {
                    dirs.insert(d.to_owned());
                } else {
                    entries.push(Entry::file(name, meta.size));
                }
            }
            // A name that is both an object and a directory lists once, as the object.
            let files: HashSet<String> = entries.iter().map(|e| e.name.clone()).collect();
            entries.extend(dirs.into_iter().filter(|d| !files.contains(d)).map(Entry::dir));
            entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            if entries.is_empty() && !key.is_empty() {
                // Nothing below: an empty directory (its marker), an object, or nothing.
                match inner.kind(&key).await.map_err(|e| inner.error(op, &path_owned, &key, e))? {
                    Kind::Dir => {}
                    Kind::Object(_) => return Err(not_a_directory(op, &path_owned)),
                    Kind::Missing => return Err(Error::not_found(op, &path_owned)),
                }
            }
            Ok(entries)
        })
    }

    fn write(&self, path: &str, data: Bytes) -> Result<()> {
        self.put(Op::Write, path, data)
    }

    fn create_dir(&self, path: &str) -> Result<()> {
        let op = Op::CreateDir;
        let key = normalize_path(op, path)?.into_owned();
        if key.is_empty() || self.inner.is_known_dir(&key) {
            return Ok(());
        }
        let path_owned = path.to_owned();
        let key_owned = key.clone();
        self.run(op, path, move |inner| async move {
            let key = key_owned;
            let (kind, ancestors) = futures::future::join(
                inner.kind(&key),
                inner.check_ancestors(op, &path_owned, parent(&key)),
            )
            .await;
            match kind.map_err(|e| inner.error(op, &path_owned, &key, e))? {
                Kind::Object(_) => {
                    return Err(Error::io_kind(
                        op,
                        &path_owned,
                        ErrorKind::AlreadyExists,
                        "an object exists at this path",
                    ));
                }
                Kind::Dir => {}
                Kind::Missing => {
                    ancestors?;
                    inner.write_marker(op, &path_owned, &key).await?;
                }
            }
            Ok(())
        })?;
        let mut dirs = self.inner.known_dirs.lock().unwrap_or_else(PoisonError::into_inner);
        dirs.extend(ancestors(&key).map(str::to_owned));
        Ok(())
    }

    fn remove(&self, path: &str) -> Result<()> {
        let op = Op::Remove;
        let key = normalize_non_root(op, path)?.into_owned();
        let path_owned = path.to_owned();
        self.run(op, path, move |inner| async move {
            match inner.head(&key).await.map_err(|e| inner.error(op, &path_owned, &key, e))? {
                Some(_) => {}
                None => {
                    let dir = inner
                        .dir_exists(&key)
                        .await
                        .map_err(|e| inner.error(op, &path_owned, &key, e))?;
                    return Err(if dir {
                        is_a_directory(op, &path_owned)
                    } else {
                        Error::not_found(op, &path_owned)
                    });
                }
            }
            inner
                .store
                .delete(&inner.path(&key))
                .await
                .map_err(|e| inner.error(op, &path_owned, &key, e))?;
            inner.keep_dir(op, &path_owned, parent(&key)).await
        })
    }

    fn remove_dir_all(&self, dir: &str) -> Result<()> {
        let op = Op::RemoveDirAll;
        let key = normalize_non_root(op, dir)?.into_owned();
        let path_owned = dir.to_owned();
        let key_owned = key.clone();
        self.run(op, dir, move |inner| async move {
            let key = key_owned;
            match inner.kind(&key).await.map_err(|e| inner.error(op, &path_owned, &key, e))? {
                Kind::Dir => {}
                Kind::Object(_) => return Err(not_a_directory(op, &path_owned)),
                Kind::Missing => return Err(Error::not_found(op, &path_owned)),
            }
            let mut keys = inner.keys_below(op, &path_owned, &key).await?;
            keys.push(inner.side_marker_path(&key));
            inner.delete_all(op, &path_owned, &key, keys).await?;
            inner.forget_dirs(&key);
            inner.keep_dir(op, &path_owned, parent(&key)).await
        })
    }

    fn publish(&self, path: &str, data: Bytes) -> Result<()> {
        self.put(Op::Publish, path, data)
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let op = Op::Rename;
        let src = normalize_non_root(op, from)?.into_owned();
        let dst = normalize_non_root(op, to)?.into_owned();
        let (from_owned, to_owned) = (from.to_owned(), to.to_owned());
        let (src_owned, dst_owned) = (src.clone(), dst.clone());
        self.run(op, from, move |inner| async move {
            let (src, dst) = (src_owned, dst_owned);
            let (from, to) = (from_owned, to_owned);
            let (src_kind, dst_kind) =
                futures::future::join(inner.kind(&src), inner.kind(&dst)).await;
            let src_kind = src_kind.map_err(|e| inner.error(op, &from, &src, e))?;
            if src_kind == Kind::Missing {
                return Err(Error::not_found(op, &from));
            }
            if src == dst {
                return Ok(());
            }
            let exists = |message| Error::io_kind(op, &to, ErrorKind::AlreadyExists, message);
            match (src_kind, dst_kind.map_err(|e| inner.error(op, &to, &dst, e))?) {
                (_, Kind::Dir) => return Err(exists("the destination is a directory")),
                (Kind::Dir, Kind::Object(_)) => return Err(exists("the destination is an object")),
                _ => {}
            }
            if src_kind == Kind::Dir && dst.starts_with(&format!("{src}/")) {
                return Err(Error::io_kind(
                    op,
                    &to,
                    ErrorKind::InvalidInput,
                    "cannot move a directory into itself",
                ));
            }
            inner.check_ancestors(op, &to, parent(&dst)).await?;
            let moves: Vec<(Path, Path)> = if src_kind == Kind::Dir {
                let mut keys = inner.keys_below(op, &from, &src).await?;
                if inner.head(&side_marker_rel(&src)).await.ok().flatten().is_some() {
                    keys.push(inner.side_marker_path(&src));
                }
                let src_prefix = inner.key(&src);
                let dst_prefix = inner.key(&dst);
                let mut pairs = Vec::with_capacity(keys.len() + 1);
                for k in keys {
                    let full = k.as_ref();
                    let target = if let Some(rest) = full.strip_prefix(&format!("{src_prefix}/")) {
                        format!("{dst_prefix}/{rest}")
                    } else {
                        // The marker beside the directory.
                        inner.side_marker_path(&dst).as_ref().to_owned()
                    };
                    pairs.push((
                        k,
                        Path::parse(&target).unwrap_or_else(|_| Path::from(target.as_str())),
                    ));
                }
                pairs
            } else {
                vec![(inner.path(&src), inner.path(&dst))]
            };
            let store = Arc::clone(&inner.store);
            let copies = stream::iter(moves.clone())
                .map(move |(a, b)| {
                    let store = Arc::clone(&store);
                    async move { store.copy(&a, &b).await }
                })
                .buffer_unordered(16)
                .try_collect::<Vec<()>>()
                .await;
            copies.map_err(|e| inner.error(op, &from, &src, e))?;
            let sources: Vec<Path> = moves.into_iter().map(|(a, _)| a).collect();
            inner.delete_all(op, &from, &src, sources).await?;
            inner.forget_dirs(&src);
            inner.keep_dir(op, &from, parent(&src)).await
        })?;
        Self::written(&self.inner, &dst);
        Ok(())
    }

    fn writer<'a>(&'a self, path: &str) -> Result<Box<dyn ObjectWriter + 'a>> {
        let op = Op::Write;
        let key = normalize_non_root(op, path)?.into_owned();
        self.check_writable(op, path, &key)?;
        let location = self.inner.path(&key);
        Ok(Box::new(MultipartWriter::new(
            Arc::clone(&self.inner),
            location,
            path.to_owned(),
            key,
            self.part_size,
            self.concurrency.min(4),
        )))
    }
}

/// The relative path of the marker of directory `rel`: inside it when its parent is one of
/// [`STRICT_FOLDERS`], beside it otherwise.
fn marker_rel(rel: &str) -> String {
    let parent_name = parent(rel).rsplit('/').next().unwrap_or_default();
    if STRICT_FOLDERS.contains(&parent_name) {
        format!("{rel}/{INNER_MARKER}")
    } else {
        side_marker_rel(rel)
    }
}

/// The relative path of the marker beside directory `rel`.
fn side_marker_rel(rel: &str) -> String {
    let (dir, name) = match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    };
    if dir.is_empty() {
        format!(".{name}{MARKER_SUFFIX}")
    } else {
        format!("{dir}/.{name}{MARKER_SUFFIX}")
    }
}

impl ObjectStoreStorage {
    /// `read_range` and `read_ranges`: one HEAD only when no range has bytes (or a range is
    /// bad), otherwise the merged ranges in parallel, then every range checked against the
    /// object's size.
    fn read_ranges_as(&self, op: Op, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let key = normalize_path(op, path)?.into_owned();
        if key.is_empty() {
            return Err(is_a_directory(op, path));
        }
        let ranges = ranges.to_vec();
        let path_owned = path.to_owned();
        let gap = self.coalesce_gap;
        let concurrency = self.concurrency;
        self.run(op, path, move |inner| async move {
            let path = path_owned.as_str();
            let check = |size: u64| -> Result<()> {
                match ranges.iter().find(|r| !in_bounds(r, size)) {
                    Some(bad) => Err(range_error(op, path, bad, size)),
                    None => Ok(()),
                }
            };
            let reversed = ranges.iter().any(|r| r.start > r.end);
            let groups = coalesce(&ranges, gap);
            if reversed || groups.is_empty() {
                let size = inner.object_size(op, path, &key).await?;
                check(size)?;
                return Ok(vec![Bytes::new(); ranges.len()]);
            }
            let spans: Vec<Range<u64>> = groups.iter().map(|(r, _)| r.clone()).collect();
            let (inner_ref, key_ref) = (&*inner, key.as_str());
            let fetched: Vec<StoreResult<(Bytes, u64)>> = stream::iter(spans)
                .map(move |r| inner_ref.get_range(key_ref, r))
                .buffered(concurrency)
                .collect()
                .await;
            let mut chunks = Vec::with_capacity(fetched.len());
            let mut size = None;
            let mut failure = None;
            for result in fetched {
                match result {
                    Ok((bytes, s)) => {
                        size = Some(s);
                        chunks.push(bytes);
                    }
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failure {
                if matches!(e, object_store::Error::NotFound { .. }) {
                    return Err(inner.missing_object(op, path, &key, e).await);
                }
                // A range past the end, or a real failure: the size tells which.
                let size = inner.object_size(op, path, &key).await?;
                check(size)?;
                return Err(inner.error(op, path, &key, e));
            }
            let size = size.unwrap_or(0);
            check(size)?;
            let mut out = vec![Bytes::new(); ranges.len()];
            for ((group, members), chunk) in groups.iter().zip(&chunks) {
                if chunk.len() as u64 != group.end - group.start {
                    return Err(Error::io_kind(
                        op,
                        path,
                        ErrorKind::UnexpectedEof,
                        "the store returned fewer bytes than asked for",
                    ));
                }
                for &i in members {
                    let r = &ranges[i];
                    let start = (r.start - group.start) as usize;
                    let end = (r.end - group.start) as usize;
                    out[i] = chunk.slice(start..end);
                }
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing() {
        let ranges = [10..20, 0..5, 15..30, 30..30, 100..200, 50..60];
        let groups = coalesce(&ranges, 0);
        assert_eq!(
            groups,
            [(0..5, vec![1]), (10..30, vec![0, 2]), (50..60, vec![5]), (100..200, vec![4])]
        );
        let groups = coalesce(&ranges, 20);
        assert_eq!(groups, [(0..60, vec![1, 0, 2, 5]), (100..200, vec![4])]);
    }

    #[test]
    fn markers_and_ancestors() {
        assert_eq!(marker_name(".a.tessera-dir"), Some("a"));
        assert_eq!(marker_name(".tessera-dir"), None);
        assert_eq!(marker_name("a.tessera-dir"), None);
        assert_eq!(marker_rel("a/b"), "a/.b.tessera-dir");
        assert_eq!(marker_rel("a"), ".a.tessera-dir");
        assert_eq!(marker_rel("__schema/__enumerations"), "__schema/__enumerations/.tessera-dir");
        assert_eq!(marker_rel("x/__meta/y"), "x/__meta/y/.tessera-dir");
        assert_eq!(
            side_marker_rel("__schema/__enumerations"),
            "__schema/.__enumerations.tessera-dir"
        );
        assert_eq!(ancestors("a/b/c").collect::<Vec<_>>(), ["a", "a/b", "a/b/c"]);
        assert_eq!(ancestors("").count(), 0);
        assert_eq!(parent("a/b"), "a");
    }
}
