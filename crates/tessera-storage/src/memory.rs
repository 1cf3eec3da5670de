//! [`MemoryStorage`]: objects and directories in a map, for tests.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::ops::{Bound, Range};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;

use crate::path::{normalize_non_root, normalize_path, parent};
use crate::{Entry, Error, Op, Result, Storage, check_range};

/// A [`Storage`] held in memory: a sorted map from canonical path to object or directory,
/// behind a read-write lock.
///
/// Directories are explicit, as on a file system: every object's parent directories are
/// entries of their own, so an empty directory made by [`create_dir`](Storage::create_dir)
/// lists and tests as a directory, and removing an object leaves its directory in place.
/// Reads are zero-copy: [`read`](Storage::read) returns the stored [`Bytes`] and
/// [`read_range`](Storage::read_range) a slice of it. Every write happens under the lock, so
/// each one (not only [`publish`](Storage::publish)) is atomic.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    nodes: RwLock<BTreeMap<String, Node>>,
}

#[derive(Debug, Clone)]
enum Node {
    File(Bytes),
    Dir,
}

type Map = BTreeMap<String, Node>;

impl MemoryStorage {
    /// An empty storage (only the root directory).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> RwLockReadGuard<'_, Map> {
        // The map is consistent even if a thread panicked while holding the lock: every
        // change is a sequence of complete insertions and removals.
        self.nodes.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn map_mut(&self) -> RwLockWriteGuard<'_, Map> {
        self.nodes.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn file(map: &Map, op: Op, path: &str, key: &str) -> Result<Bytes> {
        match lookup(map, key) {
            Some(Node::File(data)) => Ok(data.clone()),
            Some(Node::Dir) => Err(is_a_directory(op, path)),
            None => Err(Error::not_found(op, path)),
        }
    }

    /// Inserts `data` at `key` after the checks `write` and `publish` share.
    fn put(&self, op: Op, path: &str, data: Bytes) -> Result<()> {
        let key = normalize_non_root(op, path)?;
        let mut map = self.map_mut();
        if matches!(map.get(key.as_ref()), Some(Node::Dir)) {
            return Err(is_a_directory(op, path));
        }
        ensure_dirs(&mut map, op, path, parent(&key))?;
        map.insert(key.into_owned(), Node::File(data));
        Ok(())
    }
}

fn lookup<'m>(map: &'m Map, key: &str) -> Option<&'m Node> {
    const ROOT: &Node = &Node::Dir;
    if key.is_empty() { Some(ROOT) } else { map.get(key) }
}

fn is_a_directory(op: Op, path: &str) -> Error {
    Error::io_kind(op, path, ErrorKind::IsADirectory, "is a directory")
}

fn not_a_directory(op: Op, path: &str) -> Error {
    Error::io_kind(op, path, ErrorKind::NotADirectory, "not a directory")
}

/// Makes `dir` and its ancestors directories; fails if any of them is an object.
fn ensure_dirs(map: &mut Map, op: Op, path: &str, dir: &str) -> Result<()> {
    if dir.is_empty() {
        return Ok(());
    }
    let ancestors = || dir.match_indices('/').map(|(i, _)| &dir[..i]).chain([dir]);
    if ancestors().any(|d| matches!(map.get(d), Some(Node::File(_)))) {
        return Err(not_a_directory(op, path));
    }
    for d in ancestors() {
        if !map.contains_key(d) {
            map.insert(d.to_owned(), Node::Dir);
        }
    }
    Ok(())
}

/// The keys strictly below directory `key` (all of them start with `key/`).
fn descendants(map: &Map, key: &str) -> Vec<String> {
    // Keys starting with "key/" are exactly those in ["key/", "key0"), as '0' follows '/'.
    let range = (Bound::Included(format!("{key}/")), Bound::Excluded(format!("{key}0")));
    map.range::<String, _>(range).map(|(k, _)| k.clone()).collect()
}

impl Storage for MemoryStorage {
    fn read(&self, path: &str) -> Result<Bytes> {
        let key = normalize_path(Op::Read, path)?;
        Self::file(&self.map(), Op::Read, path, &key)
    }

    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        let key = normalize_path(Op::ReadRange, path)?;
        let data = Self::file(&self.map(), Op::ReadRange, path, &key)?;
        let r = check_range(Op::ReadRange, path, &range, data.len() as u64)?;
        Ok(data.slice(r))
    }

    fn read_ranges(&self, path: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let key = normalize_path(Op::ReadRanges, path)?;
        let data = Self::file(&self.map(), Op::ReadRanges, path, &key)?;
        ranges
            .iter()
            .map(|range| {
                let r = check_range(Op::ReadRanges, path, range, data.len() as u64)?;
                Ok(data.slice(r))
            })
            .collect()
    }

    fn size(&self, path: &str) -> Result<u64> {
        let key = normalize_path(Op::Size, path)?;
        Ok(Self::file(&self.map(), Op::Size, path, &key)?.len() as u64)
    }

    fn exists(&self, path: &str) -> Result<bool> {
        let key = normalize_path(Op::Exists, path)?;
        Ok(lookup(&self.map(), &key).is_some())
    }

    fn is_dir(&self, path: &str) -> Result<bool> {
        let key = normalize_path(Op::IsDir, path)?;
        Ok(matches!(lookup(&self.map(), &key), Some(Node::Dir)))
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        let key = normalize_path(Op::List, dir)?;
        let map = self.map();
        match lookup(&map, &key) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(not_a_directory(Op::List, dir)),
            None => return Err(Error::not_found(Op::List, dir)),
        }
        let prefix = if key.is_empty() { String::new() } else { format!("{key}/") };
        // Walk the children in key order, jumping over each child directory's subtree.
        let mut entries = Vec::new();
        let mut from = Bound::Included(prefix.clone());
        while let Some((k, node)) = map.range::<String, _>((from, Bound::Unbounded)).next() {
            let Some(rest) = k.strip_prefix(&prefix) else {
                break;
            };
            match rest.find('/') {
                None => {
                    entries.push(match node {
                        Node::File(data) => Entry::file(rest, data.len() as u64),
                        Node::Dir => Entry::dir(rest),
                    });
                    from = Bound::Excluded(k.clone());
                }
                // Below a child directory, which was listed before its subtree.
                Some(i) => from = Bound::Included(format!("{prefix}{}0", &rest[..i])),
            }
        }
        Ok(entries)
    }

    fn write(&self, path: &str, data: Bytes) -> Result<()> {
        self.put(Op::Write, path, data)
    }

    fn create_dir(&self, path: &str) -> Result<()> {
        let key = normalize_path(Op::CreateDir, path)?;
        let mut map = self.map_mut();
        if matches!(map.get(key.as_ref()), Some(Node::File(_))) {
            return Err(Error::io_kind(
                Op::CreateDir,
                path,
                ErrorKind::AlreadyExists,
                "an object exists at this path",
            ));
        }
        ensure_dirs(&mut map, Op::CreateDir, path, &key)
    }

    fn remove(&self, path: &str) -> Result<()> {
        let key = normalize_non_root(Op::Remove, path)?;
        let mut map = self.map_mut();
        match map.get(key.as_ref()) {
            Some(Node::File(_)) => {
                map.remove(key.as_ref());
                Ok(())
            }
            Some(Node::Dir) => Err(is_a_directory(Op::Remove, path)),
            None => Err(Error::not_found(Op::Remove, path)),
        }
    }

    fn remove_dir_all(&self, dir: &str) -> Result<()> {
        let key = normalize_non_root(Op::RemoveDirAll, dir)?;
        let mut map = self.map_mut();
        match map.get(key.as_ref()) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(not_a_directory(Op::RemoveDirAll, dir)),
            None => return Err(Error::not_found(Op::RemoveDirAll, dir)),
        }
        for k in descendants(&map, &key) {
            map.remove(&k);
        }
        map.remove(key.as_ref());
        Ok(())
    }

    fn publish(&self, path: &str, data: Bytes) -> Result<()> {
        self.put(Op::Publish, path, data)
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let op = Op::Rename;
        let src = normalize_non_root(op, from)?;
        let dst = normalize_non_root(op, to)?;
        let mut map = self.map_mut();
        let Some(node) = map.get(src.as_ref()).cloned() else {
            return Err(Error::not_found(op, from));
        };
        if src == dst {
            return Ok(());
        }
        let exists_error = |message| Error::io_kind(op, to, ErrorKind::AlreadyExists, message);
        match (&node, map.get(dst.as_ref())) {
            (_, Some(Node::Dir)) => return Err(exists_error("the destination is a directory")),
            (Node::Dir, Some(Node::File(_))) => {
                return Err(exists_error("the destination is an object"));
            }
            _ => {}
        }
        if matches!(node, Node::Dir) && dst.starts_with(&format!("{src}/")) {
            return Err(Error::io_kind(
                op,
                to,
                ErrorKind::InvalidInput,
                "cannot move a directory into itself",
            ));
        }
        ensure_dirs(&mut map, op, to, parent(&dst))?;
        let moved = descendants(&map, &src);
        map.remove(src.as_ref());
        map.insert(dst.to_string(), node);
        for k in moved {
            // Every descendant starts with `src/`, so the slice is in bounds.
            let new_key = format!("{dst}{}", &k[src.len()..]);
            if let Some(n) = map.remove(&k) {
                map.insert(new_key, n);
            }
        }
        Ok(())
    }
}
