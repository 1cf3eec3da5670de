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

use tessera_fragment::dirs;
pub use tessera_fragment::group_details::ObjectType;
use tessera_fragment::group_details::{DETAILS_DIR, GROUP_FILE};

use crate::Result;

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
}
