//! Where a command's ARRAY, GROUP or PATH argument lives: a local folder, or an object-store
//! URI (`s3://bucket/path`, and `gs://`, `az://`, `http(s)://` when the object-store crate
//! has their features), configured from the standard AWS variables (`docs/cli.md`).
//!
//! Every command goes through [`Location`] (or [`open_storage`]) so that local folders and
//! URIs behave alike.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use tessera::layers::query::object_type;
use tessera::{
    Array, ArraySchema, EncryptedStorage, EncryptionKey, Enumeration, Group, GroupMember,
    GroupWriter, LocalStorage, ObjectType, Storage,
};
use tessera_object_store::{ObjectStoreStorage, is_object_store_uri};

/// The AES-256-GCM key every location of this run uses (`--key-file` or
/// `TESSERA_ENCRYPTION_KEY`), set once at start-up.
static ENCRYPTION_KEY: OnceLock<EncryptionKey> = OnceLock::new();

/// Makes every storage of this run carry `key`: what the commands write is encrypted with
/// it, what they read is decrypted with it.
pub(crate) fn set_encryption_key(key: EncryptionKey) {
    let _ = ENCRYPTION_KEY.set(key);
}

/// The key of the command line: the content of `key_file` when given, else the variable
/// `TESSERA_ENCRYPTION_KEY` when set and not empty; 32 characters, or 64 hexadecimal digits.
///
/// # Errors
/// An unreadable key file, or a key of another length.
pub(crate) fn encryption_key(key_file: Option<&Path>) -> Result<Option<EncryptionKey>> {
    let (text, source) = match key_file {
        Some(path) => (
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the key file {}", path.display()))?,
            format!("the key file {}", path.display()),
        ),
        None => match std::env::var("TESSERA_ENCRYPTION_KEY") {
            Ok(text) if !text.is_empty() => (text, "TESSERA_ENCRYPTION_KEY".to_owned()),
            _ => return Ok(None),
        },
    };
    let key = EncryptionKey::parse(&text).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
    Ok(Some(key))
}

/// A place holding an array, a group, or folders of them.
#[derive(Debug, Clone)]
pub(crate) enum Location {
    /// A folder on the local disk (a plain path or a `file://` URI).
    Local(PathBuf),
    /// A prefix in an object store.
    Remote(ObjectStoreStorage),
}

/// The storage rooted at `arg`: a local folder, or an object store for a URI. For commands
/// (such as `tessera sql`) that only need the storage.
///
/// # Errors
/// An object-store URI that is invalid, whose scheme is not built in, or whose store refuses
/// its configuration.
// Used by `tessera sql` (its tables may be URIs) once that command lands.
#[allow(dead_code)]
pub(crate) fn open_storage(arg: &str) -> Result<Arc<dyn Storage>> {
    Ok(Location::parse(OsStr::new(arg))?.storage())
}

impl Location {
    /// The location a command-line argument names.
    ///
    /// # Errors
    /// As [`open_storage`].
    pub(crate) fn parse(arg: &OsStr) -> Result<Location> {
        match arg.to_str() {
            Some(text) if is_object_store_uri(text) => {
                let storage =
                    ObjectStoreStorage::from_uri(text).with_context(|| text.to_owned())?;
                Ok(Location::Remote(storage))
            }
            Some(text) if text.starts_with("file://") => {
                Ok(Location::Local(tessera::uri_path(text).with_context(|| text.to_owned())?))
            }
            _ => Ok(Location::Local(PathBuf::from(arg))),
        }
    }

    /// The location of a path argument (see [`Location::parse`]).
    ///
    /// # Errors
    /// As [`open_storage`].
    pub(crate) fn of(path: &Path) -> Result<Location> {
        Location::parse(path.as_os_str())
    }

    /// How messages name it: the path as given, or the URI.
    pub(crate) fn name(&self) -> String {
        match self {
            Location::Local(p) => p.display().to_string(),
            Location::Remote(s) => s.uri().to_owned(),
        }
    }

    /// The storage rooted here, carrying the encryption key of the command line (see
    /// [`set_encryption_key`]) when there is one.
    pub(crate) fn storage(&self) -> Arc<dyn Storage> {
        let storage: Arc<dyn Storage> = match self {
            Location::Local(p) => Arc::new(LocalStorage::new(p)),
            Location::Remote(s) => Arc::new(s.clone()),
        };
        match ENCRYPTION_KEY.get() {
            Some(key) => Arc::new(EncryptedStorage::new(storage, key.clone())),
            None => storage,
        }
    }

    /// What it holds: an array, a group, or nothing TileDB knows.
    ///
    /// # Errors
    /// I/O errors other than "not found".
    pub(crate) fn object_type(&self) -> Result<ObjectType> {
        object_type(self.storage().as_ref()).with_context(|| self.name())
    }

    /// Whether it exists (a folder, a file, or a prefix with objects below it).
    ///
    /// # Errors
    /// I/O errors of the store.
    pub(crate) fn exists(&self) -> Result<bool> {
        match self {
            Location::Local(p) => Ok(p.exists()),
            // A prefix exists while something lies below it.
            Location::Remote(s) => Ok(!s.list("").with_context(|| self.name())?.is_empty()),
        }
    }

    /// Whether it is a folder (or a prefix with objects below it).
    ///
    /// # Errors
    /// I/O errors of the store.
    pub(crate) fn is_dir(&self) -> Result<bool> {
        match self {
            Location::Local(p) => Ok(p.is_dir()),
            // A prefix exists while something lies below it.
            Location::Remote(s) => Ok(!s.list("").with_context(|| self.name())?.is_empty()),
        }
    }

    /// The location `rel` (a relative, `/`-separated path) below this one.
    ///
    /// # Errors
    /// A relative path an object store refuses (`..`).
    pub(crate) fn join(&self, rel: &str) -> Result<Location> {
        match self {
            Location::Local(p) => Ok(Location::Local(p.join(rel.trim_start_matches('/')))),
            Location::Remote(s) => {
                Ok(Location::Remote(s.child(rel).with_context(|| format!("{}/{rel}", s.uri()))?))
            }
        }
    }

    /// The folders directly below this one, in name order (for searching plain folders).
    ///
    /// # Errors
    /// I/O errors.
    pub(crate) fn subfolders(&self) -> Result<Vec<Location>> {
        match self {
            Location::Local(p) => {
                let mut entries: Vec<_> = std::fs::read_dir(p)?.collect::<std::io::Result<_>>()?;
                entries.sort_by_key(std::fs::DirEntry::file_name);
                let mut out = Vec::new();
                for entry in entries {
                    let path = entry.path();
                    if path.is_dir() {
                        out.push(Location::Local(path));
                    }
                }
                Ok(out)
            }
            Location::Remote(s) => {
                let entries = s.list("").with_context(|| self.name())?;
                entries.iter().filter(|e| e.is_dir).map(|e| self.join(&e.name)).collect()
            }
        }
    }

    /// Whether this is a symbolic link (never searched below).
    pub(crate) fn is_symlink(&self) -> bool {
        match self {
            Location::Local(p) => p.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()),
            Location::Remote(_) => false,
        }
    }

    /// A key telling two locations apart after resolving links (for finding cycles).
    pub(crate) fn identity(&self) -> String {
        match self {
            Location::Local(p) => {
                std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()).display().to_string()
            }
            Location::Remote(s) => s.uri().to_owned(),
        }
    }

    /// The last component of its path (of the absolute path for `.` and the like).
    pub(crate) fn display_name(&self) -> String {
        match self {
            Location::Local(path) => {
                let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
                name(path)
                    .or_else(|| std::fs::canonicalize(path).ok().and_then(|p| name(&p)))
                    .unwrap_or_else(|| path.to_string_lossy().into_owned())
            }
            Location::Remote(s) => {
                let uri = s.uri();
                uri.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(uri).to_owned()
            }
        }
    }

    /// Opens the array here now, as it was at `at`, or for `between` = (start, end).
    ///
    /// # Errors
    /// When there is no array or it cannot be read (the message names the location).
    pub(crate) fn open_array(&self, at: Option<u64>, between: Option<(u64, u64)>) -> Result<Array> {
        let storage = self.storage();
        let opened = match (at, between) {
            (_, Some((s, e))) => Array::open_between(storage, s, e),
            (Some(t), None) => Array::open_at(storage, t),
            (None, None) => Array::open(storage),
        };
        opened.with_context(|| self.name())
    }

    /// Creates an array here.
    ///
    /// # Errors
    /// As [`Array::create`], naming the location.
    pub(crate) fn create_array(
        &self,
        schema: &ArraySchema,
        enumerations: &[Enumeration],
    ) -> Result<()> {
        Array::create(self.storage(), schema, enumerations).with_context(|| self.name())
    }

    /// Deletes the array here (libtiledb's `tiledb_array_delete`), then its folder when that
    /// is left empty.
    ///
    /// # Errors
    /// When there is no array, or a file cannot be removed (the message names the location).
    pub(crate) fn delete_array(&self) -> Result<()> {
        tessera::layers::query::delete_array(self.storage().as_ref())
            .with_context(|| self.name())?;
        if let Location::Local(p) = self {
            // Only when empty: files that are not TileDB's stay, as libtiledb leaves them.
            let _ = std::fs::remove_dir(p);
        }
        Ok(())
    }

    /// Creates an empty group here.
    ///
    /// # Errors
    /// When something is already here, or it cannot be written.
    pub(crate) fn create_group(&self) -> Result<()> {
        Group::create(self.storage().as_ref()).with_context(|| self.name())
    }

    /// Opens the group here now, or as it was at `at`.
    ///
    /// # Errors
    /// When there is no group or a details file is corrupt.
    pub(crate) fn open_group(&self, at: Option<u64>) -> Result<Group> {
        let storage = self.storage();
        match at {
            Some(t) => Group::open_at(storage, t),
            None => Group::open(storage),
        }
        .with_context(|| self.name())
    }

    /// A write session on the group here at `timestamp` (now when `None`).
    ///
    /// # Errors
    /// As [`Location::open_group`].
    pub(crate) fn group_writer(&self, timestamp: Option<u64>) -> Result<GroupWriter> {
        match timestamp {
            Some(t) => GroupWriter::open(self.storage(), t),
            None => GroupWriter::open_now(self.storage()),
        }
        .with_context(|| self.name())
    }

    /// The location of `member` of the group here: relative members below it, absolute ones
    /// at their URI (local `file://` paths or object-store URIs).
    ///
    /// # Errors
    /// URIs of schemes that cannot be opened.
    pub(crate) fn member(&self, member: &GroupMember) -> Result<Location> {
        if member.relative {
            return self.join(member.uri.trim_start_matches('/'));
        }
        if is_object_store_uri(&member.uri) {
            return Location::parse(OsStr::new(&member.uri));
        }
        Ok(Location::Local(tessera::uri_path(&member.uri)?))
    }

    /// The entry libtiledb's `tiledb_group_add_member` stores for `uri` in the group here:
    /// relative members as given, local absolute ones as their `file://` URI, object-store
    /// URIs as given; the type is `object_type`, or what the member's location holds.
    ///
    /// # Errors
    /// When the type is to be found and nothing TileDB knows is there; I/O errors.
    pub(crate) fn member_for(
        &self,
        uri: &str,
        relative: bool,
        name: Option<&str>,
        object_type: Option<ObjectType>,
    ) -> Result<GroupMember> {
        let object_type = match object_type {
            Some(t) => t,
            None => {
                let probe = GroupMember::new(
                    if relative || is_object_store_uri(uri) {
                        uri.to_owned()
                    } else {
                        tessera::file_uri(uri)?
                    },
                    ObjectType::Invalid,
                    relative,
                    None,
                );
                let location = self.member(&probe)?;
                match location.object_type()? {
                    ObjectType::Invalid => bail!(
                        "{}: no TileDB array or group there (give the member's type to add it \
                         anyway)",
                        location.name()
                    ),
                    found => found,
                }
            }
        };
        // With the type given, the group's folder is not looked at.
        Ok(tessera::member_for(Path::new(""), uri, relative, name, Some(object_type))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        assert!(matches!(Location::parse(OsStr::new("data/a")).unwrap(), Location::Local(_)));
        let file = Location::parse(OsStr::new("file:///tmp/x")).unwrap();
        assert_eq!(file.name(), "/tmp/x");
        let s3 = Location::parse(OsStr::new("s3://bucket/a/b")).unwrap();
        assert!(matches!(s3, Location::Remote(_)));
        assert_eq!(s3.name(), "s3://bucket/a/b");
        assert_eq!(s3.display_name(), "b");
        assert_eq!(s3.join("c").unwrap().name(), "s3://bucket/a/b/c");
        assert!(open_storage("s3://bucket/x").is_ok());
        let ftp = Location::parse(OsStr::new("ftp://host/x")).unwrap();
        assert!(matches!(ftp, Location::Local(_)));
    }
}
