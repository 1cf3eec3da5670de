//! Creating and opening arrays: the directory layout, schema files and enumerations.

use std::sync::Arc;

use bytes::Bytes;
use tessera_schema::{ArraySchema, Enumeration, EnumerationRef};
use tessera_storage::Storage;
use tessera_types::names::{TimestampedName, now_ms, random_label};
use tessera_types::{ENUMERATIONS_VERSION, FORMAT_VERSION};

use crate::{Error, Result};

/// Names of the folders inside an array, as libtiledb 2.30 names them.
pub mod dirs {
    /// Schema files, one per schema version.
    pub const SCHEMA: &str = "__schema";
    /// Enumeration files, inside [`SCHEMA`].
    pub const ENUMERATIONS: &str = "__schema/__enumerations";
    /// Commit markers and delete/update/consolidation files.
    pub const COMMITS: &str = "__commits";
    /// One folder per fragment.
    pub const FRAGMENTS: &str = "__fragments";
    /// Array metadata.
    pub const META: &str = "__meta";
    /// Consolidated fragment metadata.
    pub const FRAGMENT_META: &str = "__fragment_meta";
    /// Dimension label arrays.
    pub const LABELS: &str = "__labels";
    /// The single schema file of arrays older than format version 10.
    pub const LEGACY_SCHEMA_FILE: &str = "__array_schema.tdb";
    /// Every folder `create` makes, in libtiledb's order.
    pub const ALL: [&str; 7] =
        [SCHEMA, ENUMERATIONS, COMMITS, FRAGMENTS, META, FRAGMENT_META, LABELS];
}

fn read_schema(storage: &dyn Storage, name: &str) -> Result<ArraySchema> {
    let file_name = format!("{}/{name}", dirs::SCHEMA);
    let bytes = storage.read(&file_name)?;
    ArraySchema::parse_file(&bytes).map_err(|source| match source {
        tessera_schema::Error::UnsupportedVersion { version, .. } => Error::Unsupported(format!(
            "{file_name}: format version {version} (Tessera reads 5 to {FORMAT_VERSION})"
        )),
        source => Error::Schema { file: file_name, source },
    })
}

fn read_enumerations(storage: &dyn Storage, schema: &ArraySchema) -> Result<Vec<Enumeration>> {
    let mut enumerations = Vec::with_capacity(schema.enumerations.len());
    for EnumerationRef { path, .. } in &schema.enumerations {
        let file = format!("{}/{path}", dirs::ENUMERATIONS);
        let bytes = storage.read(&file)?;
        let payload = tessera_tile::read_generic_tile(&bytes)
            .map_err(|e| Error::Schema { file: file.clone(), source: e.into() })?;
        enumerations
            .push(Enumeration::parse(&payload).map_err(|source| Error::Schema { file, source })?);
    }
    Ok(enumerations)
}

/// An open array: its storage, the schema in force and that schema's enumerations.
#[derive(Debug, Clone)]
pub struct Array {
    storage: Arc<dyn Storage>,
    schema: Arc<ArraySchema>,
    schema_name: TimestampedName,
    schema_names: Vec<TimestampedName>,
    enumerations: Vec<Enumeration>,
}

impl Array {
    /// Creates an array on `storage` (rooted at the array's folder) with `schema`, timestamped
    /// now. `enumerations` holds the values of the enumerations the schema lists (their file
    /// names are assigned here).
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when the location already holds an array; schema validation
    /// and storage errors.
    pub fn create(
        storage: Arc<dyn Storage>,
        schema: &ArraySchema,
        enumerations: &[Enumeration],
    ) -> Result<()> {
        Self::create_at(storage, schema, enumerations, now_ms())
    }

    /// [`Self::create`] with an explicit schema timestamp (ms since the epoch).
    ///
    /// # Errors
    /// As [`Self::create`].
    pub fn create_at(
        storage: Arc<dyn Storage>,
        schema: &ArraySchema,
        enumerations: &[Enumeration],
        timestamp: u64,
    ) -> Result<()> {
        if storage.is_dir(dirs::SCHEMA)? || storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
            return Err(Error::AlreadyExists);
        }
        let schema_err = |source| Error::Schema { file: "schema".into(), source };
        schema.validate().map_err(schema_err)?;
        if !schema.dimension_labels.is_empty() {
            return Err(Error::Unsupported(
                "creating arrays with dimension labels (their label arrays are not written yet)"
                    .into(),
            ));
        }
        let mut schema = schema.clone();
        schema.version = FORMAT_VERSION;
        // Give every listed enumeration its file name, `__<label>_0`.
        let mut files = Vec::with_capacity(schema.enumerations.len());
        for r in &mut schema.enumerations {
            let e = enumerations.iter().find(|e| e.name == r.name).ok_or_else(|| {
                schema_err(tessera_schema::Error::Invalid(format!(
                    "no values given for enumeration {:?}",
                    r.name
                )))
            })?;
            let path = format!("__{}_{ENUMERATIONS_VERSION}", random_label());
            let mut e = e.clone();
            e.path.clone_from(&path);
            r.path = path;
            files.push(e);
        }
        for dir in dirs::ALL {
            storage.create_dir(dir)?;
        }
        // Enumerations before the schema that names them: a reader that sees the schema finds
        // them all.
        for e in &files {
            let bytes = tessera_tile::write_generic_tile(&e.to_bytes(), FORMAT_VERSION)
                .map_err(|e| schema_err(e.into()))?;
            storage.publish(&format!("{}/{}", dirs::ENUMERATIONS, e.path), Bytes::from(bytes))?;
        }
        let name = TimestampedName::generate(timestamp, timestamp, None);
        let file = schema.to_file().map_err(schema_err)?;
        storage.publish(&format!("{}/{name}", dirs::SCHEMA), Bytes::from(file))?;
        Ok(())
    }

    /// Opens the array with the newest schema.
    ///
    /// # Errors
    /// [`Error::NotAnArray`], [`Error::Unsupported`] for format versions Tessera cannot read,
    /// and errors naming the schema or enumeration file that is corrupt.
    pub fn open(storage: Arc<dyn Storage>) -> Result<Array> {
        Self::open_at(storage, u64::MAX)
    }

    /// Opens the array with the newest schema whose timestamp is at most `timestamp` (ms), as
    /// libtiledb does when an array is opened at a past time.
    ///
    /// # Errors
    /// As [`Self::open`], and when no schema existed at `timestamp`.
    pub fn open_at(storage: Arc<dyn Storage>, timestamp: u64) -> Result<Array> {
        if !storage.is_dir(dirs::SCHEMA)? {
            if storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
                return Err(Error::Unsupported(format!(
                    "the array was written by TileDB before format version 10 ({}); older formats are not read yet",
                    dirs::LEGACY_SCHEMA_FILE
                )));
            }
            return Err(Error::NotAnArray("no __schema directory".into()));
        }
        let mut schema_names: Vec<TimestampedName> = storage
            .list(dirs::SCHEMA)?
            .into_iter()
            .filter(|e| !e.is_dir)
            .filter_map(|e| TimestampedName::parse(&e.name).ok())
            .collect();
        // Oldest first: by timestamps, then label (the derived order of the name's fields).
        schema_names.sort();
        let chosen = match schema_names.iter().rev().find(|n| n.t2 <= timestamp) {
            Some(n) => n.clone(),
            None if schema_names.is_empty() => {
                return Err(Error::NotAnArray("__schema holds no schema file".into()));
            }
            None => return Err(Error::NoSchemaAt(timestamp)),
        };
        let schema = read_schema(storage.as_ref(), &chosen.to_string())?;
        let enumerations = read_enumerations(storage.as_ref(), &schema)?;
        Ok(Array {
            storage,
            schema: Arc::new(schema),
            schema_name: chosen,
            schema_names,
            enumerations,
        })
    }

    /// Loads the schema file `name` (a file under `__schema/`, as a fragment's footer names the
    /// schema it was written with) and that schema's enumerations.
    ///
    /// # Errors
    /// When the file is missing, corrupt or of an unsupported version.
    pub fn load_schema(&self, name: &str) -> Result<(ArraySchema, Vec<Enumeration>)> {
        let schema = read_schema(self.storage.as_ref(), name)?;
        let enumerations = read_enumerations(self.storage.as_ref(), &schema)?;
        Ok((schema, enumerations))
    }

    /// The schema in force.
    pub fn schema(&self) -> &ArraySchema {
        &self.schema
    }

    /// The values of the enumerations the schema lists, in its order.
    pub fn enumerations(&self) -> &[Enumeration] {
        &self.enumerations
    }

    /// The name of the schema file in force.
    pub fn schema_name(&self) -> &TimestampedName {
        &self.schema_name
    }

    /// Every schema file of the array, oldest first (schema evolution adds one each time).
    pub fn schema_names(&self) -> &[TimestampedName] {
        &self.schema_names
    }

    /// The storage the array lives on.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }
}
