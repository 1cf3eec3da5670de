//! Array metadata: the key → typed value map stored in `__meta/` (`docs/format/metadata.md`),
//! as libtiledb 2.30 reads and writes it
//! (`tiledb/sm/metadata/metadata.cc`, `ArrayDirectory::load_array_meta_uris`).
//!
//! * The codec of one file's payload: [`parse_payload`] and [`to_payload`] over
//!   [`MetadataEntry`] lists (a put or a deletion of one key), re-exported from
//!   [`tessera_fragment::array_metadata`], which documents the bytes.
//! * The metadata visible in an open timestamp range: [`ArrayMetadata::load`] and
//!   [`Array::metadata`](crate::Array::metadata) apply, in timestamp order, every
//!   `__meta/__t1_t2_label` file whose range lies inside the open range and that no applying
//!   `.vac` file lists. A later put replaces the key, a later deletion erases it.
//! * The write side: a [`MetadataWriter`] collects the puts and deletions of one session and
//!   makes the file libtiledb would write for them. A session's file holds only that session's
//!   changes (not the whole state); libtiledb 2.30 writes nothing for an empty session.
//!
//! ```
//! use tessera_query::metadata::{
//!     ArrayMetadata, MetadataValue, MetadataWriter, parse_payload,
//! };
//!
//! let mut w = MetadataWriter::new(10);
//! w.put("count", MetadataValue::int64s(&[42])?)?;
//! w.put("name", MetadataValue::utf8("x")?)?;
//! w.delete("old")?;
//! let mut state = ArrayMetadata::default();
//! state.apply(parse_payload(&w.payload()?)?);
//! assert_eq!(state.get("count").and_then(|v| v.as_i64s()), Some(vec![42]));
//! assert_eq!(
//!     state.to_json().to_string(),
//!     r#"{"count":{"type":"int64","value":[42]},"name":{"type":"string_utf8","value":"x"}}"#
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;
use rayon::prelude::*;
use serde_json::{Map, Value as Json};
use tessera_fragment::VacuumFile;
use tessera_fragment::array_metadata::{
    CodecResult, check_key, check_put_value, to_payload_sorted,
};
use tessera_fragment::dirs;
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;
use tessera_types::names::TimestampedName;

use crate::{Error, Result};

pub use tessera_fragment::array_metadata::{
    MetadataEntry, MetadataValue, parse_payload, to_payload,
};

/// The array metadata visible in an open timestamp range: a map from key bytes to value,
/// sorted by key bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArrayMetadata {
    entries: BTreeMap<Vec<u8>, MetadataValue>,
    files: Vec<TimestampedName>,
}

impl ArrayMetadata {
    /// Loads the metadata of the array (or group) on `storage` for the open range
    /// `[start, end]`, as libtiledb 2.30 does (`ArrayDirectory::load_array_meta_uris`,
    /// `Array::do_load_metadata`):
    /// * every file of `__meta/` named `__t1_t2_label` with `start ≤ t1` and `t2 ≤ end`
    ///   (libtiledb ignores any extension but `.vac` here, and so does this; names of another
    ///   shape are skipped, where libtiledb would fail);
    /// * minus the files listed by a `__meta/*.vac` file whose own range is inside
    ///   `[start, end]` (written by a consolidation with `sm.consolidation.mode = array_meta`);
    /// * applied in timestamp order (by `t1`; ties by `t2`, then label).
    ///
    /// A missing `__meta/` folder means no metadata.
    ///
    /// # Errors
    /// Storage errors; [`Error::Metadata`] naming the file for a corrupt metadata file;
    /// [`Error::Fragment`] for an unreadable `.vac` file.
    pub fn load(storage: &dyn Storage, start: u64, end: u64) -> Result<ArrayMetadata> {
        let listing = match storage.list(dirs::META) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(ArrayMetadata::default()),
            Err(e) => return Err(e.into()),
        };
        let inside = |n: &TimestampedName| start <= n.t1 && n.t2 <= end;
        let mut files = Vec::new();
        let mut vacuumed: HashSet<String> = HashSet::new();
        for entry in listing.iter().filter(|e| !e.is_dir) {
            let Ok(name) = TimestampedName::parse(&entry.name) else { continue };
            if !inside(&name) {
                continue;
            }
            if entry.name.ends_with(".vac") {
                let path = format!("{}/{}", dirs::META, entry.name);
                let frag_err =
                    |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
                let vac = VacuumFile::parse(&storage.read(&path)?).map_err(frag_err)?;
                for p in vac.relative_paths().map_err(frag_err)? {
                    if let Some(file) = p.strip_prefix(&format!("{}/", dirs::META)) {
                        vacuumed.insert(file.to_owned());
                    }
                }
            } else {
                files.push((name, entry.name.clone()));
            }
        }
        files.retain(|(_, file)| !vacuumed.contains(file));
        files.sort_by(|(a, _), (b, _)| (a.t1, a.t2, &a.label).cmp(&(b.t1, b.t2, &b.label)));
        let decoded = files
            .par_iter()
            .map(|(_, file)| {
                let path = format!("{}/{file}", dirs::META);
                let bytes = storage.read(&path)?;
                let err = |source: tessera_tile::Error| Error::Metadata {
                    file: path.clone(),
                    source: Box::new(source),
                };
                let payload =
                    tessera_tile::read_generic_tile_with_key(&bytes, storage.encryption_key())
                        .map_err(err)?;
                parse_payload(&payload).map_err(|e| err(e.into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut metadata = ArrayMetadata::default();
        for entries in decoded {
            metadata.apply(entries);
        }
        metadata.files = files.into_iter().map(|(name, _)| name).collect();
        Ok(metadata)
    }

    /// Applies one file's entries (or a session's changes) in order: a put replaces the key's
    /// value, a deletion erases the key.
    pub fn apply(&mut self, entries: impl IntoIterator<Item = MetadataEntry>) {
        for MetadataEntry { key, value } in entries {
            match value {
                Some(v) => {
                    self.entries.insert(key, v);
                }
                None => {
                    self.entries.remove(&key);
                }
            }
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<&MetadataValue> {
        self.entries.get(key.as_ref())
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> bool {
        self.entries.contains_key(key.as_ref())
    }

    /// The keys and values, sorted by key bytes (libtiledb's index order).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &MetadataValue)> + '_ {
        self.entries.iter().map(|(k, v)| (k.as_slice(), v))
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The metadata files applied by [`Self::load`], in the order applied (empty for metadata
    /// built with [`Self::apply`]). A consolidation names its file after the first one's `t1`
    /// and the last one's `t2`.
    pub fn files(&self) -> &[TimestampedName] {
        &self.files
    }

    /// The live keys as one payload (all puts, sorted): what an `array_meta` consolidation
    /// writes.
    ///
    /// # Errors
    /// As [`to_payload`].
    pub fn to_payload(&self) -> CodecResult<Vec<u8>> {
        to_payload_sorted(self.entries.iter().map(|(k, v)| (k.as_slice(), Some(v))))
    }

    /// The JSON of `tessera meta list --json` (`docs/cli.md`): an object from key to
    /// [`MetadataValue::to_json`], keys in sorted order. Keys that are not UTF-8 are shown
    /// with U+FFFD for the invalid bytes (two such keys that then look alike show only the
    /// later one).
    pub fn to_json(&self) -> Json {
        let mut m = Map::new();
        for (k, v) in &self.entries {
            m.insert(String::from_utf8_lossy(k).into_owned(), v.to_json());
        }
        Json::Object(m)
    }
}

impl crate::Array {
    /// The array metadata visible in the array's open timestamp range (see
    /// [`ArrayMetadata::load`]); read from storage on each call.
    ///
    /// # Errors
    /// As [`ArrayMetadata::load`].
    pub fn metadata(&self) -> Result<ArrayMetadata> {
        let (start, end) = self.timestamp_range();
        ArrayMetadata::load(self.storage().as_ref(), start, end)
    }
}

/// A new metadata file: its name under `__meta/` and its bytes (one generic tile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataFile {
    /// `__t_t_<label>` with the session's timestamp and a fresh label.
    pub name: TimestampedName,
    /// The generic tile (GZIP level 1, format version 22), byte-identical to libtiledb's for
    /// the same entries.
    pub bytes: Vec<u8>,
}

/// The puts and deletions of one metadata write session at a timestamp, as libtiledb's
/// `Array::put_metadata` / `delete_metadata` collect them until the array is closed: the last
/// change of a key wins, and the file holds only the keys changed in the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataWriter {
    timestamp: u64,
    changes: BTreeMap<Vec<u8>, Option<MetadataValue>>,
}

impl MetadataWriter {
    /// A session at `timestamp` (ms; libtiledb uses the end of the range the array was
    /// opened for writing at, "now" by default).
    pub fn new(timestamp: u64) -> Self {
        MetadataWriter { timestamp, changes: BTreeMap::new() }
    }

    /// The session's timestamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// Puts `value` under `key`, replacing any earlier change of `key` in this session.
    ///
    /// # Errors
    /// [`tessera_types::Error::Invalid`] for a value of type `any` (libtiledb refuses it), a
    /// key with a NUL byte (libtiledb takes keys as C strings) or longer than `u32::MAX`.
    pub fn put(&mut self, key: impl Into<Vec<u8>>, value: MetadataValue) -> CodecResult<&mut Self> {
        let key = key.into();
        check_key(&key)?;
        check_put_value(&value)?;
        self.changes.insert(key, Some(value));
        Ok(self)
    }

    /// Deletes `key` (recorded even when the key does not exist, as libtiledb does),
    /// replacing any earlier change of `key` in this session.
    ///
    /// # Errors
    /// As [`Self::put`], for the key.
    pub fn delete(&mut self, key: impl Into<Vec<u8>>) -> CodecResult<&mut Self> {
        let key = key.into();
        check_key(&key)?;
        self.changes.insert(key, None);
        Ok(self)
    }

    /// Whether the session changed nothing (then no file is written).
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The session's entries, sorted by key.
    pub fn entries(&self) -> Vec<MetadataEntry> {
        self.changes
            .iter()
            .map(|(k, v)| MetadataEntry { key: k.clone(), value: v.clone() })
            .collect()
    }

    /// The file payload (empty when the session changed nothing).
    ///
    /// # Errors
    /// Never for keys accepted by [`Self::put`] / [`Self::delete`]; see [`to_payload`].
    pub fn payload(&self) -> CodecResult<Vec<u8>> {
        to_payload_sorted(self.changes.iter().map(|(k, v)| (k.as_slice(), v.as_ref())))
    }

    /// The file libtiledb would write for this session, with a fresh name; `None` when the
    /// session changed nothing.
    ///
    /// # Errors
    /// [`Error::Metadata`] when the generic tile cannot be encoded.
    pub fn file(&self) -> Result<Option<MetadataFile>> {
        self.file_with_key(None)
    }

    /// [`Self::file`] for an array or group encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::file`].
    pub fn file_with_key(
        &self,
        key: Option<&tessera_types::EncryptionKey>,
    ) -> Result<Option<MetadataFile>> {
        if self.is_empty() {
            return Ok(None);
        }
        let name = TimestampedName::generate(self.timestamp, self.timestamp, None);
        let err = |source: tessera_tile::Error| Error::Metadata {
            file: format!("{}/{name}", dirs::META),
            source: Box::new(source),
        };
        let payload = self.payload().map_err(|e| err(e.into()))?;
        let bytes = tessera_tile::write_generic_tile_with_key(&payload, FORMAT_VERSION, key)
            .map_err(err)?;
        Ok(Some(MetadataFile { name, bytes }))
    }

    /// Writes the session's file to `__meta/` of the array (or group) on `storage` and returns
    /// its name; `None` (and nothing written) when the session changed nothing.
    ///
    /// # Errors
    /// As [`Self::file`], and storage errors.
    pub fn commit(&self, storage: &dyn Storage) -> Result<Option<TimestampedName>> {
        let Some(file) = self.file_with_key(storage.encryption_key())? else { return Ok(None) };
        storage.publish(&format!("{}/{}", dirs::META, file.name), Bytes::from(file.bytes))?;
        Ok(Some(file.name))
    }
}
