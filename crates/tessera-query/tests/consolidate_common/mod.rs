//! Helpers of the consolidation tests: fixture copies in temporary folders, what an array
//! shows at several times, and its file tree.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value as Json;
use tessera_query::Array;
use tessera_query::metadata::ArrayMetadata;
use tessera_storage::{LocalStorage, Storage};

use crate::common::{rows, testdata};

/// A copy of `testdata/fragments/<name>` in a fresh temporary folder, and storage on it.
pub fn fixture_copy(name: &str) -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join("fragments").join(name), &dir.path().join("a"));
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path().join("a")));
    (dir, storage)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Every file of the array (relative paths, `/`-separated) with its bytes; folders with
/// `None`.
pub fn tree(storage: &dyn Storage) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(s: &dyn Storage, dir: &str, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for e in s.list(dir).unwrap() {
            let path = if dir.is_empty() { e.name.clone() } else { format!("{dir}/{}", e.name) };
            if e.is_dir {
                out.insert(path.clone(), None);
                walk(s, &path, out);
            } else {
                out.insert(path.clone(), Some(s.read(&path).unwrap().to_vec()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(storage, "", &mut out);
    out
}

/// The file names in folder `dir` of the array.
pub fn names(storage: &dyn Storage, dir: &str) -> Vec<String> {
    match storage.list(dir) {
        Ok(l) => l.into_iter().map(|e| e.name).collect(),
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => panic!("{dir}: {e}"),
    }
}

/// What the array shows at one time: fragment names, cells and metadata.
#[derive(Debug, PartialEq)]
pub struct View {
    pub fragments: Vec<String>,
    pub cells: Vec<Json>,
    pub metadata: Json,
}

/// The array as opened at `at` (now for `None`).
pub fn view(storage: &Arc<dyn Storage>, at: Option<u64>) -> View {
    let array = match at {
        Some(t) => Array::open_at(storage.clone(), t),
        None => Array::open(storage.clone()),
    }
    .unwrap_or_else(|e| panic!("open at {at:?}: {e}"));
    let result = array.read().execute().unwrap_or_else(|e| panic!("read at {at:?}: {e}"));
    let (start, end) = array.timestamp_range();
    View {
        fragments: array.fragments().iter().map(|f| f.name().to_string()).collect(),
        cells: rows(&result),
        metadata: ArrayMetadata::load(storage.as_ref(), start, end).unwrap().to_json(),
    }
}

/// The times the fixtures use (their fragments, deletes and metadata lie between 5 and 60),
/// and now.
pub const TIMES: [Option<u64>; 9] =
    [Some(5), Some(10), Some(15), Some(20), Some(25), Some(30), Some(35), Some(45), None];

/// The views at [`TIMES`].
pub fn views(storage: &Arc<dyn Storage>) -> Vec<View> {
    TIMES.iter().map(|&t| view(storage, t)).collect()
}

/// Checks that the cells and metadata at every time of [`TIMES`] are those of `before`.
pub fn assert_same_reads(storage: &Arc<dyn Storage>, before: &[View], what: &str) {
    for (t, b) in TIMES.iter().zip(before) {
        let now = view(storage, *t);
        assert_eq!(now.cells, b.cells, "{what}: cells at {t:?}");
        assert_eq!(now.metadata, b.metadata, "{what}: metadata at {t:?}");
    }
}
