//! TileDB groups: named collections of arrays and other groups, with metadata, as libtiledb
//! 2.30 lays them out and reads them (`tiledb/sm/group/group.cc`, `group_directory.cc`).
//!
//! ```text
//! my_group/
//!   __tiledb_group.tdb        empty marker file
//!   __group/__t1_t2_label_2   group details: the member list of one write session
//!   __meta/__t1_t2_label      group metadata, the same files as array metadata
//! ```
//!
//! * **Reading** ([`Group::open_between`]): the details files whose timestamp range lies
//!   inside the open range (minus those an applying `.vac` file lists) are applied in
//!   timestamp order: each entry adds (or replaces) the member with its key, or with the
//!   `deleted` flag removes it. libtiledb never merges details files into one; it applies
//!   them all on every open. Groups of details version 1 (no version suffix, or `_1`) are read
//!   from their newest file alone, as libtiledb does.
//! * **Writing** ([`GroupWriter`]): libtiledb opens the group for writing at a timestamp `T`,
//!   loads the members visible at `[0, T]`, and on close writes one details file
//!   `__T_T_label_2` holding every member it knows with this session's additions and
//!   removals applied — a removal stays in the file as an entry with `deleted` set — then
//!   the session's metadata file. Tessera writes the same entries; libtiledb's file lists
//!   them in the order of its hash map, Tessera's in the group's order (the order is not
//!   meaningful to readers).
//! * **Member order**: Tessera lists members in stored order: a member (re)written by a later
//!   file moves to the end, so for groups where every file holds the whole member list (as
//!   libtiledb writes them) the order is that of the newest file. libtiledb itself lists
//!   them in its hash map's order.
//! * **Metadata** is array metadata in `__meta/` ([`ArrayMetadata`], [`MetadataWriter`]).
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::group::{Group, GroupMember, GroupWriter};
//! use tessera_query::metadata::MetadataValue;
//! use tessera_query::ObjectType;
//! use tessera_storage::MemoryStorage;
//!
//! let storage = Arc::new(MemoryStorage::new());
//! Group::create(storage.as_ref())?;
//! let mut w = GroupWriter::open(storage.clone(), 10)?;
//! w.add_member(GroupMember::new("obs", ObjectType::Array, true, Some("obs".into())))?;
//! w.metadata().put("soma_object_type", MetadataValue::utf8("SOMAExperiment")?)?;
//! w.commit()?;
//! let mut w = GroupWriter::open(storage.clone(), 20)?;
//! w.remove_member("obs")?;
//! w.commit()?;
//!
//! assert_eq!(Group::open_at(storage.clone(), 15)?.members()[0].resolved_uri("pbmc"), "pbmc/obs");
//! let now = Group::open(storage)?;
//! assert!(now.members().is_empty());
//! assert!(now.metadata()?.contains_key("soma_object_type"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use tessera_fragment::VacuumFile;
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;
use tessera_types::names::{TimestampedName, now_ms};

pub use tessera_fragment::group_details::{
    DETAILS_DIR, DETAILS_VERSION, GROUP_FILE, GroupDetails, GroupMember,
};

use crate::metadata::{ArrayMetadata, MetadataWriter};
use crate::object::{ObjectType, object_type};
use crate::{Error, Result};
use tessera_fragment::dirs;

/// The folder of the group metadata files (as for arrays).
pub const META_DIR: &str = dirs::META;

/// An open group: the members and metadata visible in a timestamp range.
#[derive(Debug, Clone)]
pub struct Group {
    storage: Arc<dyn Storage>,
    timestamp_range: (u64, u64),
    members: Vec<GroupMember>,
    details_files: Vec<TimestampedName>,
}

impl Group {
    /// Creates an empty group at the location `storage` is rooted at, as libtiledb does: the
    /// folder, the empty `__tiledb_group.tdb`, then `__meta/` and `__group/`.
    ///
    /// # Errors
    /// [`Error::InvalidGroupChange`] when the location already holds a group or an array
    /// (libtiledb refuses the first; Tessera refuses both, as a group inside an array folder
    /// would make neither usable); storage errors.
    pub fn create(storage: &dyn Storage) -> Result<()> {
        match object_type(storage)? {
            ObjectType::Invalid => {}
            found => {
                return Err(Error::InvalidGroupChange(format!("a {found} already exists there")));
            }
        }
        storage.create_dir("")?;
        storage.write(GROUP_FILE, Bytes::new())?;
        storage.create_dir(META_DIR)?;
        storage.create_dir(DETAILS_DIR)?;
        Ok(())
    }

    /// Opens the group as it is now (the open range `[0, now]`).
    ///
    /// # Errors
    /// As [`Self::open_between`].
    pub fn open(storage: Arc<dyn Storage>) -> Result<Group> {
        Self::open_between(storage, 0, now_ms())
    }

    /// Opens the group as it was at `timestamp` (ms): the open range `[0, timestamp]`.
    ///
    /// # Errors
    /// As [`Self::open_between`].
    pub fn open_at(storage: Arc<dyn Storage>, timestamp: u64) -> Result<Group> {
        Self::open_between(storage, 0, timestamp)
    }

    /// Opens the group for the open range `[start, end]` (ms): the members written by the
    /// details files inside it (see the module documentation). Metadata is read by
    /// [`Self::metadata`].
    ///
    /// # Errors
    /// [`Error::NotAGroup`] when the location has neither `__group/` nor
    /// `__tiledb_group.tdb`; [`Error::Group`] naming the details file that is corrupt (with
    /// the field and offset in its payload); [`Error::Fragment`] for an unreadable `.vac`
    /// file; storage errors.
    pub fn open_between(storage: Arc<dyn Storage>, start: u64, end: u64) -> Result<Group> {
        if !is_group(storage.as_ref())? {
            return Err(Error::NotAGroup(format!("no {DETAILS_DIR} folder or {GROUP_FILE} file")));
        }
        let (members, details_files) = load_members(storage.as_ref(), start, end)?;
        Ok(Group { storage, timestamp_range: (start, end), members, details_files })
    }

    /// The members, in stored order (see the module documentation).
    pub fn members(&self) -> &[GroupMember] {
        &self.members
    }

    /// The member whose key (name, or URI when unnamed) is `key`.
    pub fn member(&self, key: &str) -> Option<&GroupMember> {
        self.members.iter().find(|m| m.key() == key)
    }

    /// The group metadata visible in the open range (read from storage on each call), by
    /// the rules of array metadata ([`ArrayMetadata::load`]).
    ///
    /// # Errors
    /// As [`ArrayMetadata::load`].
    pub fn metadata(&self) -> Result<ArrayMetadata> {
        let (start, end) = self.timestamp_range;
        ArrayMetadata::load(self.storage.as_ref(), start, end)
    }

    /// The open range `[start, end]` (ms).
    pub fn timestamp_range(&self) -> (u64, u64) {
        self.timestamp_range
    }

    /// The storage the group is on (rooted at the group's folder).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The details files applied, in the order applied.
    pub fn details_files(&self) -> &[TimestampedName] {
        &self.details_files
    }
}

/// Whether the location is a group by libtiledb's test (`GroupDirectory::load`): it has the
/// `__group/` folder or the `__tiledb_group.tdb` file. Unlike [`object_type`], an array
/// folder that also has them counts.
fn is_group(storage: &dyn Storage) -> Result<bool> {
    Ok(storage.is_dir(DETAILS_DIR)?
        || (storage.exists(GROUP_FILE)? && !storage.is_dir(GROUP_FILE)?))
}

/// The members visible in `[start, end]` and the details files applied (see the module
/// documentation).
fn load_members(
    storage: &dyn Storage,
    start: u64,
    end: u64,
) -> Result<(Vec<GroupMember>, Vec<TimestampedName>)> {
    let files = details_files(storage, start, end)?;
    let Some((newest, _)) = files.last() else { return Ok((Vec::new(), Vec::new())) };
    // libtiledb (`Group::load_group_details`): a newest file named without a version, or
    // with `_1`, is a version 1 group, read from that file alone.
    let files =
        if matches!(newest.version, None | Some(1)) { &files[files.len() - 1..] } else { &files };
    let legacy = files.len() == 1 && matches!(files[0].0.version, None | Some(1));
    let decoded = files
        .par_iter()
        .map(|(_, file)| {
            let path = format!("{DETAILS_DIR}/{file}");
            let err = |source: tessera_tile::Error| Error::Group {
                file: path.clone(),
                source: Box::new(source),
            };
            let bytes = storage.read(&path)?;
            let payload =
                tessera_tile::read_generic_tile_with_key(&bytes, storage.encryption_key())
                    .map_err(err)?;
            let details = GroupDetails::parse(&payload).map_err(|e| err(e.into()))?;
            if !legacy && details.version != DETAILS_VERSION {
                return Err(err(tessera_types::Error::invalid(
                    "group details",
                    "version",
                    0,
                    format!("version {} among version 2 details files", details.version),
                )
                .into()));
            }
            Ok(details)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut members: Vec<GroupMember> = Vec::new();
    for details in decoded {
        for entry in details.members {
            members.retain(|m| m.key() != entry.key());
            if !entry.deleted {
                members.push(entry);
            }
        }
    }
    Ok((members, files.iter().map(|(name, _)| name.clone()).collect()))
}

/// The details files of `__group/` to apply for `[start, end]`, in timestamp order (by `t1`,
/// then `t2` and label): those whose range lies inside the open range, minus those listed by
/// a `.vac` file inside it. Names of another shape are skipped.
fn details_files(
    storage: &dyn Storage,
    start: u64,
    end: u64,
) -> Result<Vec<(TimestampedName, String)>> {
    let listing = match storage.list(DETAILS_DIR) {
        Ok(l) => l,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut files = Vec::new();
    let mut vacuumed: HashSet<String> = HashSet::new();
    for entry in listing.iter().filter(|e| !e.is_dir) {
        let Ok(name) = TimestampedName::parse(&entry.name) else { continue };
        if !(start <= name.t1 && name.t2 <= end) {
            continue;
        }
        if entry.name.ends_with(".vac") {
            let path = format!("{DETAILS_DIR}/{}", entry.name);
            let frag_err =
                |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
            let vac = VacuumFile::parse(&storage.read(&path)?).map_err(frag_err)?;
            for p in vac.relative_paths().map_err(frag_err)? {
                let file = p.rsplit('/').next().unwrap_or(&p);
                vacuumed.insert(file.to_owned());
            }
        } else if !entry.name.contains('.') {
            files.push((name, entry.name.clone()));
        }
    }
    files.retain(|(_, file)| !vacuumed.contains(file));
    files.sort_by(|(a, _), (b, _)| (a.t1, a.t2, &a.label).cmp(&(b.t1, b.t2, &b.label)));
    Ok(files)
}

/// What [`GroupWriter::commit`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCommit {
    /// The metadata file under `__meta/`, when the session changed metadata.
    pub metadata: Option<TimestampedName>,
    /// The details file under `__group/`, when the session added or removed members.
    pub details: Option<TimestampedName>,
}

/// One write session on a group at a timestamp, as libtiledb's group opened for writing:
/// member additions and removals, and metadata puts and deletions, written on
/// [`commit`](Self::commit).
#[derive(Debug)]
pub struct GroupWriter {
    storage: Arc<dyn Storage>,
    timestamp: u64,
    members: Vec<GroupMember>,
    changes: Vec<GroupMember>,
    added: HashSet<String>,
    removed: HashSet<String>,
    metadata: MetadataWriter,
}

impl GroupWriter {
    /// Starts a session at `timestamp` (ms): the group's members at `[0, timestamp]` are
    /// loaded, since the details file written holds them all.
    ///
    /// # Errors
    /// As [`Group::open_at`].
    pub fn open(storage: Arc<dyn Storage>, timestamp: u64) -> Result<GroupWriter> {
        let group = Group::open_at(storage.clone(), timestamp)?;
        Ok(GroupWriter {
            storage,
            timestamp,
            members: group.members,
            changes: Vec::new(),
            added: HashSet::new(),
            removed: HashSet::new(),
            metadata: MetadataWriter::new(timestamp),
        })
    }

    /// Starts a session now: at the current time, or just after it when the group's newest
    /// details file already carries this millisecond. Two sessions in one millisecond would
    /// otherwise be ordered by their random labels, and the later one could lose.
    ///
    /// # Errors
    /// As [`Group::open_at`].
    pub fn open_now(storage: Arc<dyn Storage>) -> Result<GroupWriter> {
        let timestamp = Self::now_timestamp(storage.as_ref())?;
        Self::open(storage, timestamp)
    }

    /// The timestamp for a session started now: the current time once it is past the newest
    /// details file (waiting at most a few milliseconds for that; a details file written at
    /// an explicit later timestamp is not waited for).
    ///
    /// # Errors
    /// Storage errors listing `__group/`.
    pub fn now_timestamp(storage: &dyn Storage) -> Result<u64> {
        const MAX_WAIT_MS: u64 = 10;
        let newest = details_files(storage, 0, u64::MAX)?.iter().map(|(n, _)| n.t2).max();
        let mut now = now_ms();
        if let Some(newest) = newest.filter(|&n| n >= now && n - now < MAX_WAIT_MS) {
            while now <= newest {
                std::thread::sleep(std::time::Duration::from_millis(1));
                now = now_ms();
            }
        }
        Ok(now)
    }

    /// The session's timestamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// The members the session started with.
    pub fn members(&self) -> &[GroupMember] {
        &self.members
    }

    /// The member `remove_member(name_or_uri)` would remove, found as libtiledb finds it: by
    /// key (name, or URI of an unnamed member), else by stored URI (relative URIs as stored).
    ///
    /// # Errors
    /// [`Error::InvalidGroupChange`] when no key matches and several members have that URI.
    pub fn find_member(&self, name_or_uri: &str) -> Result<Option<&GroupMember>> {
        if let Some(m) = self.members.iter().find(|m| m.key() == name_or_uri) {
            return Ok(Some(m));
        }
        let mut by_uri = self.members.iter().filter(|m| m.uri == name_or_uri);
        let first = by_uri.next();
        if by_uri.next().is_some() {
            return Err(Error::InvalidGroupChange(format!(
                "cannot remove {name_or_uri:?}: several members have this URI, remove by name"
            )));
        }
        Ok(first)
    }

    /// Adds `member` (replacing, when the session is written, a member with the same key).
    ///
    /// # Errors
    /// [`Error::InvalidGroupChange`] when the session already adds a member with this key
    /// (libtiledb refuses it), or `member.deleted` is set.
    pub fn add_member(&mut self, member: GroupMember) -> Result<&mut Self> {
        if member.deleted {
            return Err(Error::InvalidGroupChange(
                "a member to add cannot be marked deleted (use remove_member)".into(),
            ));
        }
        if !self.added.insert(member.key().to_owned()) {
            return Err(Error::InvalidGroupChange(format!(
                "cannot add member {:?}: a member with the same name or URI is already added",
                member.key()
            )));
        }
        self.changes.push(member);
        Ok(self)
    }

    /// Removes the member [`find_member`](Self::find_member) finds: the details file gets
    /// its entry with `deleted` set.
    ///
    /// # Errors
    /// [`Error::InvalidGroupChange`] when there is no such member, the session adds or has
    /// already removed a member with its key, or several members have that URI.
    pub fn remove_member(&mut self, name_or_uri: &str) -> Result<&mut Self> {
        let Some(found) = self.find_member(name_or_uri)? else {
            return Err(Error::InvalidGroupChange(format!(
                "cannot remove {name_or_uri:?}: no such member in the group"
            )));
        };
        let member = GroupMember { deleted: true, ..found.clone() };
        let key = member.key().to_owned();
        if self.added.contains(&key) {
            return Err(Error::InvalidGroupChange(format!(
                "cannot remove {key:?}: a member with the same name or URI is added in this session"
            )));
        }
        if !self.removed.insert(key.clone()) {
            return Err(Error::InvalidGroupChange(format!(
                "cannot remove {key:?}: it is already removed in this session"
            )));
        }
        self.changes.push(member);
        Ok(self)
    }

    /// The session's metadata changes (written with the session).
    pub fn metadata(&mut self) -> &mut MetadataWriter {
        &mut self.metadata
    }

    /// Whether the session adds or removes members (then a details file is written).
    pub fn is_modified(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The entries of the details file the session writes: the members it started with, then
    /// each change in order replacing the entry with its key or appended (removals as entries
    /// with `deleted` set).
    pub fn details_entries(&self) -> Vec<GroupMember> {
        let mut entries = self.members.clone();
        for change in &self.changes {
            match entries.iter().position(|m| m.key() == change.key()) {
                Some(i) => entries[i] = change.clone(),
                None => entries.push(change.clone()),
            }
        }
        entries
    }

    /// Writes the session as libtiledb does on close: the metadata file (when metadata
    /// changed), then the details file `__group/__T_T_label_2` (when members changed).
    ///
    /// # Errors
    /// [`Error::Group`] when the details file cannot be encoded; as
    /// [`MetadataWriter::commit`]; storage errors.
    pub fn commit(self) -> Result<GroupCommit> {
        let metadata = self.metadata.commit(self.storage.as_ref())?;
        let details = if self.is_modified() {
            let name =
                TimestampedName::generate(self.timestamp, self.timestamp, Some(DETAILS_VERSION));
            let path = format!("{DETAILS_DIR}/{name}");
            let payload = GroupDetails::to_payload(&self.details_entries());
            let bytes = tessera_tile::write_generic_tile_with_key(
                &payload,
                FORMAT_VERSION,
                self.storage.encryption_key(),
            )
            .map_err(|e| Error::Group { file: path.clone(), source: Box::new(e) })?;
            self.storage.create_dir(DETAILS_DIR)?;
            self.storage.publish(&path, Bytes::from(bytes))?;
            Some(name)
        } else {
            None
        };
        Ok(GroupCommit { metadata, details })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::MetadataValue;
    use tessera_storage::MemoryStorage;

    fn member(uri: &str, name: Option<&str>) -> GroupMember {
        GroupMember::new(uri, ObjectType::Array, true, name.map(str::to_owned))
    }

    fn keys(g: &Group) -> Vec<&str> {
        g.members().iter().map(GroupMember::key).collect()
    }

    fn new_group() -> Arc<MemoryStorage> {
        let s = Arc::new(MemoryStorage::new());
        Group::create(s.as_ref()).unwrap();
        s
    }

    #[test]
    fn create_lays_out_like_libtiledb_and_refuses_twice() {
        let s = new_group();
        assert_eq!(s.read(GROUP_FILE).unwrap().len(), 0);
        assert!(s.is_dir(META_DIR).unwrap() && s.is_dir(DETAILS_DIR).unwrap());
        assert_eq!(object_type(s.as_ref()).unwrap(), ObjectType::Group);
        let err = Group::create(s.as_ref()).unwrap_err().to_string();
        assert_eq!(err, "invalid group change: a group already exists there");
        let g = Group::open(s).unwrap();
        assert!(g.members().is_empty() && g.details_files().is_empty());
        let err = Group::open(Arc::new(MemoryStorage::new())).unwrap_err();
        assert!(matches!(err, Error::NotAGroup(_)), "{err}");
    }

    #[test]
    fn sessions_add_remove_and_time_travel() {
        let s = new_group();
        let mut w = GroupWriter::open(s.clone(), 10).unwrap();
        w.add_member(member("a", Some("a"))).unwrap();
        w.add_member(member("b", None)).unwrap();
        w.metadata().put("k", MetadataValue::int64s(&[1]).unwrap()).unwrap();
        let c = w.commit().unwrap();
        assert_eq!(c.details.as_ref().unwrap().to_string().split('_').nth(2), Some("10"));
        assert_eq!(c.details.unwrap().version, Some(2));
        assert!(c.metadata.is_some());

        let mut w = GroupWriter::open(s.clone(), 20).unwrap();
        w.remove_member("b").unwrap();
        w.add_member(member("c", Some("c"))).unwrap();
        assert_eq!(
            w.details_entries().iter().map(|m| (m.key(), m.deleted)).collect::<Vec<_>>(),
            [("a", false), ("b", true), ("c", false)]
        );
        w.commit().unwrap();

        assert_eq!(keys(&Group::open_at(s.clone(), 9).unwrap()), Vec::<&str>::new());
        assert_eq!(keys(&Group::open_at(s.clone(), 15).unwrap()), ["a", "b"]);
        let now = Group::open(s.clone()).unwrap();
        assert_eq!(keys(&now), ["a", "c"]);
        assert_eq!(now.details_files().len(), 2);
        assert_eq!(keys(&Group::open_between(s.clone(), 15, 25).unwrap()), ["a", "c"]);
        assert!(Group::open_at(s.clone(), 9).unwrap().metadata().unwrap().is_empty());
        assert_eq!(now.metadata().unwrap().get("k").unwrap().as_i64s(), Some(vec![1]));
        // A session that changes nothing writes nothing.
        let c = GroupWriter::open(s.clone(), 30).unwrap().commit().unwrap();
        assert_eq!(c, GroupCommit { metadata: None, details: None });
    }

    #[test]
    fn removal_rules_follow_libtiledb() {
        let s = new_group();
        let mut w = GroupWriter::open(s.clone(), 10).unwrap();
        w.add_member(member("x", Some("n1"))).unwrap();
        w.add_member(member("x", Some("n2"))).unwrap();
        w.add_member(member("y", None)).unwrap();
        let err = w.add_member(member("z", Some("n1"))).unwrap_err().to_string();
        assert!(err.contains("already added"), "{err}");
        let err = w.remove_member("n1").unwrap_err().to_string();
        assert!(err.contains("no such member"), "members added in a session are not there yet");
        w.commit().unwrap();

        let mut w = GroupWriter::open(s.clone(), 20).unwrap();
        let err = w.remove_member("x").unwrap_err().to_string();
        assert!(err.contains("several members have this URI"), "{err}");
        assert_eq!(w.find_member("y").unwrap().unwrap().key(), "y");
        w.remove_member("n1").unwrap();
        let err = w.remove_member("n1").unwrap_err().to_string();
        assert!(err.contains("already removed"), "{err}");
        w.add_member(member("y", None)).unwrap();
        let err = w.remove_member("y").unwrap_err().to_string();
        assert!(err.contains("added in this session"), "{err}");
        w.commit().unwrap();
        assert_eq!(keys(&Group::open(s).unwrap()), ["n2", "y"]);
    }

    #[test]
    fn vacuumed_and_misnamed_details_files_are_skipped() {
        let s = new_group();
        let mut w = GroupWriter::open(s.clone(), 10).unwrap();
        w.add_member(member("a", None)).unwrap();
        let first = w.commit().unwrap().details.unwrap();
        let mut w = GroupWriter::open(s.clone(), 20).unwrap();
        w.add_member(member("b", None)).unwrap();
        w.commit().unwrap();
        s.write(&format!("{DETAILS_DIR}/notes.txt"), Bytes::from_static(b"x")).unwrap();
        // The session at 20 holds `a` too, so vacuuming the first file changes nothing now...
        let vac = format!("{DETAILS_DIR}/__20_20_{}.vac", first.label);
        let line = format!("file:///g/{DETAILS_DIR}/{first}\n");
        s.write(&vac, Bytes::from(line)).unwrap();
        assert_eq!(keys(&Group::open(s.clone()).unwrap()), ["a", "b"]);
        assert_eq!(Group::open(s.clone()).unwrap().details_files().len(), 1);
        // ...and the .vac does not apply to a range that does not contain it.
        assert_eq!(keys(&Group::open_at(s, 15).unwrap()), ["a"]);
    }

    #[test]
    fn version_1_groups_read_their_newest_file_only() {
        let s = new_group();
        let payload = |uri: &str| {
            let mut p = vec![1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1];
            p.extend_from_slice(&(uri.len() as u64).to_le_bytes());
            p.extend_from_slice(uri.as_bytes());
            p.push(0);
            tessera_tile::write_generic_tile(&p, 11).unwrap()
        };
        let old = "__1_1_0123456789abcdef0123456789abcdef";
        let new = "__2_2_0123456789abcdef0123456789abcdef";
        s.write(&format!("{DETAILS_DIR}/{old}"), Bytes::from(payload("a"))).unwrap();
        s.write(&format!("{DETAILS_DIR}/{new}"), Bytes::from(payload("b"))).unwrap();
        assert_eq!(keys(&Group::open(s.clone()).unwrap()), ["b"]);
        assert_eq!(keys(&Group::open_at(s, 1).unwrap()), ["a"]);
    }

    #[test]
    fn corrupt_details_name_the_file() {
        let s = new_group();
        let name = "__5_5_0123456789abcdef0123456789abcdef_2";
        let bytes = tessera_tile::write_generic_tile(&[2, 0, 0, 0, 1], FORMAT_VERSION).unwrap();
        s.write(&format!("{DETAILS_DIR}/{name}"), Bytes::from(bytes)).unwrap();
        let err = Group::open(s).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{DETAILS_DIR}/{name}: group details: truncated at member_count \
                 (offset 4: need 8 bytes, 1 left)"
            )
        );
    }
}
