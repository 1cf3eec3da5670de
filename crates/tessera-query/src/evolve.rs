//! Schema evolution on storage: one new schema file under `__schema/` (and the enumeration
//! files it names), as libtiledb's `Array::evolve_array_schema` writes them.

use std::sync::Arc;

use bytes::Bytes;
use tessera_schema::{ArraySchema, Enumeration, SchemaEvolution};
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;
use tessera_types::names::{TimestampedName, now_ms};

use crate::array::{read_enumerations, read_schema};
use crate::{Error, Result};
use tessera_fragment::dirs;

/// The newest schema of the array (by file name, as libtiledb's latest schema), its file
/// name (`__array_schema.tdb` for arrays older than format version 10) and its enumerations.
///
/// # Errors
/// [`Error::NotAnArray`] when there is no schema; corrupt schema or enumeration files.
pub fn latest_schema(storage: &dyn Storage) -> Result<(ArraySchema, String, Vec<Enumeration>)> {
    let name = if storage.is_dir(dirs::SCHEMA)? {
        let mut names: Vec<String> = storage
            .list(dirs::SCHEMA)?
            .into_iter()
            .filter(|e| !e.is_dir && TimestampedName::parse(&e.name).is_ok())
            .map(|e| e.name)
            .collect();
        names.sort();
        match names.pop() {
            Some(n) => n,
            None if storage.exists(dirs::LEGACY_SCHEMA_FILE)? => dirs::LEGACY_SCHEMA_FILE.into(),
            None => return Err(Error::NotAnArray("__schema holds no schema file".into())),
        }
    } else if storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
        dirs::LEGACY_SCHEMA_FILE.into()
    } else {
        return Err(Error::NotAnArray("no __schema directory".into()));
    };
    let schema = read_schema(storage, &name)?;
    let enumerations = read_enumerations(storage, &schema)?;
    Ok((schema, name, enumerations))
}

/// Applies `evolution` to the array on `storage`: the newest schema is evolved and written as
/// a new schema file `__schema/__<t>_<t>_<label>` at the evolution's timestamp (default now),
/// after the files of the enumerations it adds or extends. Returns the new schema file's
/// name.
///
/// Nothing is written when the evolution is invalid; the schema file is published last and
/// atomically, so a reader sees either the old schema or the whole new one (an enumeration
/// file written before a failed publish is removed again).
///
/// # Errors
/// [`Error::Schema`] (file `schema evolution`) naming what libtiledb would reject; storage
/// errors.
pub fn evolve(storage: &Arc<dyn Storage>, evolution: &SchemaEvolution) -> Result<TimestampedName> {
    let storage = storage.as_ref();
    let (schema, _, enumerations) = latest_schema(storage)?;
    if !schema.dimension_labels.is_empty() {
        return Err(Error::Unsupported(
            "evolving the schema of an array with dimension labels".into(),
        ));
    }
    let evolved = evolution
        .evolve(&schema, &enumerations)
        .map_err(|source| Error::Schema { file: "schema evolution".into(), source })?;
    let t = evolution.timestamp_ms().unwrap_or_else(now_ms);
    let name = TimestampedName::generate(t, t, None);
    let schema_file = evolved
        .schema
        .to_file_with_key(storage.encryption_key())
        .map_err(|source| Error::Schema { file: format!("{}/{name}", dirs::SCHEMA), source })?;
    // Arrays older than format version 10 (and 19) lack these folders; libtiledb makes them.
    for dir in [dirs::SCHEMA, dirs::ENUMERATIONS] {
        if !storage.is_dir(dir)? {
            storage.create_dir(dir)?;
        }
    }
    let mut written = Vec::new();
    let result = (|| -> Result<()> {
        for e in &evolved.new_enumerations {
            let file = format!("{}/{}", dirs::ENUMERATIONS, e.path);
            let bytes = tessera_tile::write_generic_tile_with_key(
                &e.to_bytes(),
                FORMAT_VERSION,
                storage.encryption_key(),
            )
            .map_err(|t| Error::Schema { file: file.clone(), source: t.into() })?;
            storage.publish(&file, Bytes::from(bytes))?;
            written.push(file);
        }
        storage.publish(&format!("{}/{name}", dirs::SCHEMA), Bytes::from(schema_file))?;
        Ok(())
    })();
    if let Err(e) = result {
        for file in written {
            let _ = storage.remove(&file);
        }
        return Err(e);
    }
    Ok(name)
}
