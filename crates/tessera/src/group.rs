//! Path-based entry points for TileDB groups on the local disk: create and open groups, find
//! what a folder holds, locate members, and add or remove members the way libtiledb's
//! `tiledb_group_add_member` / `tiledb_group_remove_member` store them.
//!
//! ```
//! use tessera::ObjectType;
//!
//! let dir = tempfile::tempdir()?;
//! let g = dir.path().join("experiment");
//! tessera::create_group(&g)?;
//! tessera::create_group(g.join("ms"))?;
//! tessera::add_member(&g, "ms", true, Some("ms"))?; // relative to the group's folder
//! let mut session = tessera::group_writer(&g, None)?;
//! session.metadata().put("title", tessera::MetadataValue::utf8("demo")?)?;
//! session.commit()?;
//!
//! let group = tessera::open_group(&g)?;
//! let ms = group.member("ms").unwrap();
//! assert_eq!(ms.object_type, ObjectType::Group);
//! assert_eq!(tessera::member_path(&g, ms)?, g.join("ms"));
//! assert_eq!(tessera::object_type(g.join("ms"))?, ObjectType::Group);
//! assert!(group.metadata()?.contains_key("title"));
//! # Ok::<(), tessera::Error>(())
//! ```

use std::path::{Component, Path, PathBuf};

use tessera_query::group::{Group, GroupMember, GroupWriter};
use tessera_query::{Error, ObjectType, Result};

use crate::{existing, local};

/// Creates an empty group in the folder `path` (created if missing).
///
/// # Errors
/// When a group or an array is already there, or the folder cannot be written.
pub fn create_group(path: impl AsRef<Path>) -> Result<()> {
    Group::create(local(path).as_ref())
}

/// Opens the group in the folder `path` as it is now.
///
/// # Errors
/// When there is no group there or a details file is corrupt (naming it).
pub fn open_group(path: impl AsRef<Path>) -> Result<Group> {
    Group::open(existing(path, "group")?)
}

/// Opens the group in the folder `path` as it was at `timestamp` (ms since the epoch).
///
/// # Errors
/// As [`open_group`].
pub fn open_group_at(path: impl AsRef<Path>, timestamp: u64) -> Result<Group> {
    Group::open_at(existing(path, "group")?, timestamp)
}

/// Opens the group in the folder `path` for the timestamp range `[start, end]` (ms).
///
/// # Errors
/// As [`open_group`].
pub fn open_group_between(path: impl AsRef<Path>, start: u64, end: u64) -> Result<Group> {
    Group::open_between(existing(path, "group")?, start, end)
}

/// What the folder `path` holds: an array, a group, or nothing TileDB knows
/// ([`ObjectType::Invalid`], also when `path` does not exist), by libtiledb's rules.
///
/// # Errors
/// I/O errors other than "not found".
pub fn object_type(path: impl AsRef<Path>) -> Result<ObjectType> {
    tessera_query::object_type(local(path).as_ref())
}

/// The local folder of `member` of the group in the folder `group`: `group/uri` for a
/// relative member, the path of a `file://` URI (or a plain path) otherwise.
///
/// # Errors
/// [`Error::Unsupported`] for URIs of other schemes (`s3://`, `tiledb://`, …).
pub fn member_path(group: impl AsRef<Path>, member: &GroupMember) -> Result<PathBuf> {
    if member.relative {
        return Ok(group.as_ref().join(member.uri.trim_start_matches('/')));
    }
    uri_path(&member.uri)
}

/// The local path of a `file://` URI or a plain path.
///
/// # Errors
/// [`Error::Unsupported`] for URIs of other schemes.
pub fn uri_path(uri: &str) -> Result<PathBuf> {
    if let Some(path) = uri.strip_prefix("file://") {
        return Ok(PathBuf::from(path));
    }
    if uri.contains("://") {
        return Err(Error::Unsupported(format!(
            "{uri}: only local (file://) locations can be opened"
        )));
    }
    Ok(PathBuf::from(uri))
}

/// The absolute `file://` URI libtiledb stores for a local path (`VFS::abs_path`): the path
/// made absolute against the current folder, with `.` and `..` removed lexically (symbolic
/// links are not resolved). URIs with a scheme are returned as they are.
///
/// # Errors
/// When the current folder cannot be found.
pub fn file_uri(path: &str) -> Result<String> {
    if path.contains("://") {
        return Ok(path.to_owned());
    }
    let absolute = std::path::absolute(path).map_err(|e| {
        Error::Storage(tessera_storage::Error::io(tessera_storage::Op::Read, path, e))
    })?;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in absolute.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::ParentDir => {
                parts.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    let mut uri = String::from("file://");
    for p in &parts {
        uri.push('/');
        uri.push_str(&p.to_string_lossy());
    }
    if parts.is_empty() {
        uri.push('/');
    }
    Ok(uri)
}

/// The member entry libtiledb's `tiledb_group_add_member` stores for `uri` in the group in the
/// folder `group`: relative members as given, absolute ones as their `file://` URI
/// ([`file_uri`]); the type is `object_type`, or when `None` what the member's folder holds.
///
/// # Errors
/// [`Error::InvalidGroupChange`] when the type is to be found and the location holds no
/// array or group (libtiledb would store an invalid type that tiledb-py cannot list);
/// I/O errors.
pub fn member_for(
    group: impl AsRef<Path>,
    uri: &str,
    relative: bool,
    name: Option<&str>,
    object_type: Option<ObjectType>,
) -> Result<GroupMember> {
    let stored = if relative { uri.to_owned() } else { file_uri(uri)? };
    let member = GroupMember::new(stored, ObjectType::Invalid, relative, name.map(str::to_owned));
    let object_type = match object_type {
        Some(t) => t,
        None => {
            let path = member_path(group, &member)?;
            match crate::object_type(&path)? {
                ObjectType::Invalid => {
                    return Err(Error::InvalidGroupChange(format!(
                        "{}: no TileDB array or group there (give the member's type to add it \
                         anyway)",
                        path.display()
                    )));
                }
                found => found,
            }
        }
    };
    Ok(GroupMember { object_type, ..member })
}

/// A write session on the group in the folder `group` at `timestamp` (ms; now when `None`).
///
/// # Errors
/// As [`open_group`].
pub fn group_writer(group: impl AsRef<Path>, timestamp: Option<u64>) -> Result<GroupWriter> {
    match timestamp {
        Some(t) => GroupWriter::open(local(group), t),
        None => GroupWriter::open_now(local(group)),
    }
}

/// The key `remove_member` should get for `name_or_uri`, as libtiledb looks members up: the
/// text as given when a member matches it, else (for a local path) its `file://` URI.
///
/// # Errors
/// As [`GroupWriter::find_member`] and [`file_uri`].
pub fn member_key(writer: &GroupWriter, name_or_uri: &str) -> Result<String> {
    if writer.find_member(name_or_uri)?.is_some() || name_or_uri.contains("://") {
        return Ok(name_or_uri.to_owned());
    }
    let uri = file_uri(name_or_uri)?;
    if writer.find_member(&uri)?.is_some() { Ok(uri) } else { Ok(name_or_uri.to_owned()) }
}

/// Adds the array or group at `uri` to the group in the folder `group`, now, in a session of
/// its own ([`member_for`] makes the entry).
///
/// # Errors
/// As [`member_for`] and [`GroupWriter::commit`].
pub fn add_member(
    group: impl AsRef<Path>,
    uri: &str,
    relative: bool,
    name: Option<&str>,
) -> Result<()> {
    let member = member_for(group.as_ref(), uri, relative, name, None)?;
    let mut writer = group_writer(group, None)?;
    writer.add_member(member)?;
    writer.commit().map(|_| ())
}

/// Removes the member named `name_or_uri` (its name, or its URI as stored, or the local path
/// of an absolute member) from the group in the folder `group`, now, in a session of its own.
///
/// # Errors
/// [`Error::InvalidGroupChange`] when there is no such member; as [`GroupWriter::commit`].
pub fn remove_member(group: impl AsRef<Path>, name_or_uri: &str) -> Result<()> {
    let mut writer = group_writer(group, None)?;
    let key = member_key(&writer, name_or_uri)?;
    writer.remove_member(&key)?;
    writer.commit().map(|_| ())
}

/// Deletes the group in the folder `path` as libtiledb's `Group.delete_group` does; with
/// `recursive`, its members first (arrays deleted as [`crate::delete_array`] does, groups
/// recursively); a member that is not there is an error, before anything is deleted. The group's folder goes when
/// it is left empty.
///
/// # Errors
/// When there is no group there, or a file cannot be removed.
pub fn delete_group(path: impl AsRef<Path>, recursive: bool) -> Result<()> {
    let path = path.as_ref();
    if recursive {
        let group = open_group(path)?;
        // libtiledb fails on a member that is not there, after deleting the members it met
        // before it (in no set order): Tessera checks them all first and deletes nothing.
        let mut members = Vec::with_capacity(group.members().len());
        for m in group.members() {
            let member = member_path(path, m)?;
            if object_type(&member)? != m.object_type {
                return Err(Error::InvalidGroupChange(format!(
                    "cannot delete the group recursively: its member {} ({}) is not there \
                     (nothing was deleted)",
                    m.uri,
                    member.display()
                )));
            }
            members.push((member, m.object_type));
        }
        for (member, t) in members {
            match t {
                ObjectType::Array => crate::delete_array(&member)?,
                ObjectType::Group => delete_group(&member, true)?,
                _ => {}
            }
        }
    }
    tessera_query::delete_group(local(path).as_ref())?;
    let _ = std::fs::remove_dir(path);
    Ok(())
}

/// Consolidates the metadata of the group in `path` into one file, as libtiledb's
/// `Group.consolidate_metadata` (the `.vac` file names the merged files by their `file://`
/// URIs); returns the merged files.
///
/// # Errors
/// When there is no group there, or on storage errors.
pub fn consolidate_group_metadata(path: impl AsRef<Path>) -> Result<Vec<String>> {
    let uri = file_uri(&path.as_ref().to_string_lossy())?;
    Ok(tessera_query::consolidate_group_metadata(local(path).as_ref(), &uri, None)?.inputs)
}

/// Removes the group metadata files a consolidation made obsolete, as libtiledb's
/// `Group.vacuum_metadata`; returns what was removed.
///
/// # Errors
/// When there is no group there, or on storage errors.
pub fn vacuum_group_metadata(path: impl AsRef<Path>) -> Result<Vec<String>> {
    let uri = file_uri(&path.as_ref().to_string_lossy())?;
    tessera_query::vacuum_group_metadata(local(path).as_ref(), &uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_like_libtiledb() {
        assert_eq!(file_uri("/a/./b/../c").unwrap(), "file:///a/c");
        assert_eq!(file_uri("/").unwrap(), "file:///");
        assert_eq!(file_uri("s3://bucket/x").unwrap(), "s3://bucket/x");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(file_uri("x").unwrap(), format!("file://{}/x", cwd.display()));
        assert_eq!(uri_path("file:///a/b").unwrap(), PathBuf::from("/a/b"));
        assert!(uri_path("s3://bucket/x").is_err());
    }
}
