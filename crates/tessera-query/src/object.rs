//! TileDB object types — array, group or neither — and the probe that tells them apart on
//! storage, as libtiledb 2.30 does (`tiledb/sm/object/object.cc`).
//!
//! A folder is an **array** when it has a `__schema/` folder (or, for arrays older than format
//! version 10, an `__array_schema.tdb` file); otherwise it is a **group** when it has a
//! `__group/` folder or a `__tiledb_group.tdb` file; otherwise it is no TileDB object. The
//! array test comes first, so a folder holding both is an array, as in libtiledb.
//!
//! The same numbers are stored as the type of each group member (see [`crate::group`]).

use tessera_storage::Storage;

use crate::Result;
use crate::array::dirs;
use crate::group::{DETAILS_DIR, GROUP_FILE};

/// What a location holds, with libtiledb's ids (`tiledb_object_t`): the type stored for each
/// group member and what [`object_type`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectType {
    /// No TileDB object (id 0). libtiledb stores this type for a member added without a type
    /// whose location held nothing at the time.
    Invalid,
    /// A group (id 1).
    Group,
    /// An array (id 2).
    Array,
}

impl ObjectType {
    /// The id libtiledb stores (`tiledb_object_t`).
    pub fn id(self) -> u8 {
        match self {
            ObjectType::Invalid => 0,
            ObjectType::Group => 1,
            ObjectType::Array => 2,
        }
    }

    /// The type of a stored id; `None` for ids libtiledb 2.30 does not define (3 was the
    /// removed key-value store).
    pub fn from_id(id: u8) -> Option<ObjectType> {
        match id {
            0 => Some(ObjectType::Invalid),
            1 => Some(ObjectType::Group),
            2 => Some(ObjectType::Array),
            _ => None,
        }
    }

    /// The lowercase name `tessera ls --json` prints: `"invalid"`, `"group"`, `"array"`.
    pub fn name(self) -> &'static str {
        match self {
            ObjectType::Invalid => "invalid",
            ObjectType::Group => "group",
            ObjectType::Array => "array",
        }
    }
}

impl std::fmt::Display for ObjectType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the location `storage` is rooted at holds: [`ObjectType::Array`],
/// [`ObjectType::Group`] or [`ObjectType::Invalid`] (nothing, or a plain folder), by
/// libtiledb's rules (see the module documentation).
///
/// # Errors
/// Storage errors other than "not found".
pub fn object_type(storage: &dyn Storage) -> Result<ObjectType> {
    if storage.is_dir(dirs::SCHEMA)? || is_file(storage, dirs::LEGACY_SCHEMA_FILE)? {
        return Ok(ObjectType::Array);
    }
    if storage.is_dir(DETAILS_DIR)? || is_file(storage, GROUP_FILE)? {
        return Ok(ObjectType::Group);
    }
    Ok(ObjectType::Invalid)
}

/// Whether `path` is an object (not a folder).
fn is_file(storage: &dyn Storage, path: &str) -> Result<bool> {
    Ok(storage.exists(path)? && !storage.is_dir(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use tessera_storage::MemoryStorage;

    #[test]
    fn probe_follows_libtiledb() {
        let s = MemoryStorage::new();
        assert_eq!(object_type(&s).unwrap(), ObjectType::Invalid);
        s.write(GROUP_FILE, Bytes::new()).unwrap();
        assert_eq!(object_type(&s).unwrap(), ObjectType::Group);
        s.create_dir(dirs::SCHEMA).unwrap();
        assert_eq!(object_type(&s).unwrap(), ObjectType::Array, "the array test comes first");

        let s = MemoryStorage::new();
        s.create_dir(DETAILS_DIR).unwrap();
        assert_eq!(object_type(&s).unwrap(), ObjectType::Group, "__group/ alone is a group");
        let s = MemoryStorage::new();
        s.create_dir(GROUP_FILE).unwrap();
        assert_eq!(object_type(&s).unwrap(), ObjectType::Invalid, "a folder is not the file");
        s.write(dirs::LEGACY_SCHEMA_FILE, Bytes::new()).unwrap();
        assert_eq!(object_type(&s).unwrap(), ObjectType::Array);
    }

    #[test]
    fn ids() {
        for t in [ObjectType::Invalid, ObjectType::Group, ObjectType::Array] {
            assert_eq!(ObjectType::from_id(t.id()), Some(t));
        }
        assert_eq!(ObjectType::from_id(3), None);
        assert_eq!(ObjectType::Group.to_string(), "group");
    }
}
