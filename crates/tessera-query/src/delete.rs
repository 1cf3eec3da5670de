//! Deletes: [`Array::delete`] starts a [`DeleteQuery`]; its condition (the cells to delete)
//! and timestamp are set on it, and [`DeleteQuery::submit`] writes the delete commit.
//!
//! A delete writes no cells. It commits one file, `__commits/__<t>_<t>_<label>_22.del`,
//! holding one generic tile (GZIP level 1) with the serialized **negation** of the condition
//! (the cells to keep), byte for byte as libtiledb 2.30 writes it
//! (`DeletesAndUpdates::dowork`, `docs/format/commits-and-names.md`). Readers then hide the
//! matching cells written at or before `t` (see [`crate::condition`]). libtiledb's rules:
//!
//! * deletes are refused on dense arrays;
//! * the timestamp `t` is the one given, else the end of the range the array was opened at
//!   (the time it was opened, for an array opened "now");
//! * a delete inside the timestamp range of a fragment of format version below 15
//!   (consolidated without per-cell timestamps) is refused;
//! * a condition libtiledb cannot negate or would store unreadably is refused (see
//!   [`QueryCondition::to_delete_commit`]);
//! * the file is published atomically: readers see the whole delete or none of it.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::Array;
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_storage::{MemoryStorage, Storage};
//! use tessera_types::{ArrayType, Datatype};
//!
//! let storage = Arc::new(MemoryStorage::new());
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
//!     .attribute(Attribute::new("a", Datatype::Int32))
//!     .build()?;
//! Array::create(storage.clone(), &schema, &[])?;
//! let array = Array::open(storage.clone())?;
//! let name = array.delete().where_text("a == 15").timestamp(30).submit()?;
//! assert_eq!(name.timestamp_range(), (30, 30));
//! assert!(storage.exists(&format!("__commits/{}", name.with_extension("del")))?);
//! assert_eq!(Array::open(storage)?.directory().deletes.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use bytes::Bytes;
use tessera_fragment::{DeleteCommit as DeleteFile, FragmentName};
use tessera_storage::Storage;
use tessera_types::names::now_ms;

use crate::array::Array;
use crate::condition::QueryCondition;
use crate::{Error, Result};
use tessera_fragment::dirs;

/// The first format version whose consolidated fragments keep per-cell timestamps
/// (libtiledb's `constants::consolidation_with_timestamps_min_version`).
const CONSOLIDATION_WITH_TIMESTAMPS_MIN_VERSION: u32 = 15;

impl Array {
    /// Starts a delete of the cells matching a condition (sparse arrays only).
    pub fn delete(&self) -> DeleteQuery<'_> {
        DeleteQuery { array: self, condition: None, timestamp: None }
    }
}

/// Where a delete's condition comes from.
#[derive(Debug, Clone)]
enum Cond {
    /// Text to parse against the array's schema.
    Text(String),
    /// A parsed condition.
    Parsed(QueryCondition),
}

/// A delete being set up: the condition of the cells to delete and the timestamp.
///
/// Errors are reported by [`Self::submit`] and leave the array unchanged.
#[derive(Debug, Clone)]
#[must_use = "a delete does nothing until submitted"]
pub struct DeleteQuery<'a> {
    array: &'a Array,
    condition: Option<Cond>,
    timestamp: Option<u64>,
}

impl DeleteQuery<'_> {
    /// Deletes the cells for which `condition` holds (a condition parsed against this
    /// array's schema).
    pub fn condition(mut self, condition: QueryCondition) -> Self {
        self.condition = Some(Cond::Parsed(condition));
        self
    }

    /// [`Self::condition`] from the `--where` text of `docs/cli.md` (e.g.
    /// `a == 15 and b is not null`), parsed against the array's schema and enumerations when
    /// the delete is submitted.
    pub fn where_text(mut self, text: &str) -> Self {
        self.condition = Some(Cond::Text(text.to_owned()));
        self
    }

    /// The delete's timestamp (ms since the epoch): it removes the matching cells written
    /// at or before it. Default: the end of the range the array was opened at (the time it
    /// was opened, for an array opened now), as libtiledb does.
    pub fn timestamp(mut self, ms: u64) -> Self {
        self.timestamp = Some(ms);
        self
    }

    /// The timestamp the delete is committed at.
    fn effective_timestamp(&self) -> u64 {
        self.timestamp.unwrap_or_else(|| match self.array.timestamp_range().1 {
            u64::MAX => now_ms(),
            end => end,
        })
    }

    /// Writes the delete commit and returns its name: the file is
    /// `__commits/<name>.del`, and `name.t1() == name.t2()` is the delete's timestamp.
    ///
    /// # Errors
    /// [`Error::InvalidQuery`] without a condition, or when the timestamp falls inside the
    /// range of a fragment of format version below 15; [`Error::Condition`] for a condition
    /// that does not parse or fit the schema, a dense array, and conditions libtiledb
    /// refuses to store as a delete ([`QueryCondition::to_delete_commit`]);
    /// [`Error::Fragment`] when the file cannot be encoded; storage errors.
    pub fn submit(self) -> Result<FragmentName> {
        let array = self.array;
        let condition = match &self.condition {
            None => {
                return Err(Error::InvalidQuery(
                    "a delete needs a condition (the cells to delete)".into(),
                ));
            }
            Some(Cond::Parsed(c)) => c.clone(),
            Some(Cond::Text(t)) => QueryCondition::parse(t, array.schema(), array.enumerations())?,
        };
        // Refuses dense arrays and conditions libtiledb cannot store.
        let commit = condition.to_delete_commit()?;
        let timestamp = self.effective_timestamp();
        check_unconsolidated_range(array.storage().as_ref(), timestamp)?;
        let name = FragmentName::generate(timestamp, timestamp).map_err(|source| {
            Error::Fragment { file: dirs::COMMITS.into(), source: Box::new(source) }
        })?;
        let path = format!("{}/{}", dirs::COMMITS, name.with_extension("del"));
        let file = encode(&commit, &path, array.storage().encryption_key())?;
        array.storage().publish(&path, Bytes::from(file))?;
        Ok(name)
    }
}

fn encode(
    commit: &DeleteFile,
    path: &str,
    key: Option<&tessera_types::EncryptionKey>,
) -> Result<Vec<u8>> {
    commit
        .to_file_with_key(key)
        .map_err(|source| Error::Fragment { file: path.to_owned(), source: Box::new(source) })
}

/// libtiledb refuses a delete whose timestamp lies inside the timestamp range of any
/// fragment on disk (visible or not) of a format version below 15, whose consolidated cells
/// carry no timestamps to order the delete against.
fn check_unconsolidated_range(storage: &dyn Storage, timestamp: u64) -> Result<()> {
    // Fragments live in `__fragments/` from format version 12, at the array root before.
    for dir in [dirs::FRAGMENTS, ""] {
        let entries = match storage.list(dir) {
            Ok(e) => e,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for e in entries.iter().filter(|e| e.is_dir) {
            let Ok(name) = FragmentName::parse(&e.name) else { continue };
            let (t1, t2) = name.timestamp_range();
            if name.format_version() < CONSOLIDATION_WITH_TIMESTAMPS_MIN_VERSION
                && (t1..=t2).contains(&timestamp)
            {
                return Err(Error::InvalidQuery(format!(
                    "cannot write a delete at {timestamp} in the middle of fragment {name} \
                     (format version {}, consolidated without timestamps)",
                    name.format_version()
                )));
            }
        }
    }
    Ok(())
}
