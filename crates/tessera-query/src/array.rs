//! Creating and opening arrays: the directory layout, schema files and enumerations.

use std::sync::Arc;

use bytes::Bytes;
use tessera_schema::{ArraySchema, Enumeration, EnumerationRef};
use tessera_storage::Storage;
use tessera_types::names::{TimestampedName, now_ms, random_label};
use tessera_types::{ENUMERATIONS_VERSION, FORMAT_VERSION};

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::directory::ArrayDirectory;
use crate::fragment::{Fragment, load_fragments};
use crate::{Error, Result};

/// Names of the folders inside an array, as libtiledb 2.30 names them (defined in
/// [`tessera_fragment::dirs`], re-exported here for callers of the engine).
pub use tessera_fragment::dirs;

/// Reads the schema file `name`: a file of `__schema/`, or the single `__array_schema.tdb` at
/// the root of arrays older than format version 10 (which old fragments name).
pub(crate) fn read_schema(storage: &dyn Storage, name: &str) -> Result<ArraySchema> {
    let file_name = if name == dirs::LEGACY_SCHEMA_FILE {
        name.to_owned()
    } else {
        format!("{}/{name}", dirs::SCHEMA)
    };
    let bytes = storage.read(&file_name)?;
    ArraySchema::parse_file_with_key(&bytes, storage.encryption_key()).map_err(
        |source| match source {
            tessera_schema::Error::UnsupportedVersion { version, .. } => {
                Error::Unsupported(format!(
                    "{file_name}: format version {version} (Tessera reads 1 to {FORMAT_VERSION})"
                ))
            }
            source => Error::Schema { file: file_name, source },
        },
    )
}

pub(crate) fn read_enumerations(
    storage: &dyn Storage,
    schema: &ArraySchema,
) -> Result<Vec<Enumeration>> {
    let mut enumerations = Vec::with_capacity(schema.enumerations.len());
    for EnumerationRef { path, .. } in &schema.enumerations {
        let file = format!("{}/{path}", dirs::ENUMERATIONS);
        let bytes = storage.read(&file)?;
        let payload = tessera_tile::read_generic_tile_with_key(&bytes, storage.encryption_key())
            .map_err(|e| Error::Schema { file: file.clone(), source: e.into() })?;
        enumerations
            .push(Enumeration::parse(&payload).map_err(|source| Error::Schema { file, source })?);
    }
    Ok(enumerations)
}

/// How many times [`Array::open_between`] lists the array again when a file it listed
/// vanished meanwhile.
const OPEN_ATTEMPTS: u32 = 20;

/// Whether a storage error is a file that a concurrent vacuum may have removed after it was
/// listed: one not found under `__commits/`, `__fragments/` or `__fragment_meta/`.
fn vanished(e: &tessera_storage::Error) -> bool {
    let path = e.path().trim_start_matches('/');
    e.is_not_found()
        && [dirs::COMMITS, dirs::FRAGMENTS, dirs::FRAGMENT_META]
            .iter()
            .any(|d| path.strip_prefix(d).is_some_and(|rest| rest.starts_with('/')))
}

/// An open array: its storage, the schema in force and that schema's enumerations.
#[derive(Debug, Clone)]
pub struct Array {
    storage: Arc<dyn Storage>,
    schema: Arc<ArraySchema>,
    schema_name: TimestampedName,
    schema_names: Vec<TimestampedName>,
    enumerations: Vec<Enumeration>,
    timestamp_range: (u64, u64),
    /// Whether the end of the range was given (then writes are stamped with it).
    explicit_end: bool,
    directory: ArrayDirectory,
    fragments: Vec<Arc<Fragment>>,
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
            let bytes = tessera_tile::write_generic_tile_with_key(
                &e.to_bytes(),
                FORMAT_VERSION,
                storage.encryption_key(),
            )
            .map_err(|e| schema_err(e.into()))?;
            storage.publish(&format!("{}/{}", dirs::ENUMERATIONS, e.path), Bytes::from(bytes))?;
        }
        let name = TimestampedName::generate(timestamp, timestamp, None);
        let file = schema.to_file_with_key(storage.encryption_key()).map_err(schema_err)?;
        storage.publish(&format!("{}/{name}", dirs::SCHEMA), Bytes::from(file))?;
        Ok(())
    }

    /// Opens the array with the newest schema.
    ///
    /// # Errors
    /// [`Error::NotAnArray`], [`Error::Unsupported`] for format versions Tessera cannot read,
    /// and errors naming the schema or enumeration file that is corrupt.
    pub fn open(storage: Arc<dyn Storage>) -> Result<Array> {
        let mut array = Self::open_between(storage, 0, now_ms())?;
        array.explicit_end = false;
        Ok(array)
    }

    /// Opens the array as it was at `timestamp` (ms): the open range `[0, timestamp]`.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_at(storage: Arc<dyn Storage>, timestamp: u64) -> Result<Array> {
        Self::open_between(storage, 0, timestamp)
    }

    /// Opens the array for the timestamp range `[start, end]` (ms), as libtiledb does: the
    /// newest schema at `end`; the fragments and delete commits the range shows (see
    /// [`ArrayDirectory::load`]); every visible fragment's footer, read in parallel. The rest
    /// of the fragment metadata is read when a query needs it.
    ///
    /// # Errors
    /// [`Error::NotAnArray`], [`Error::Unsupported`] for format versions Tessera cannot read,
    /// and errors naming the schema, commit or fragment file that is
    /// corrupt.
    pub fn open_between(storage: Arc<dyn Storage>, start: u64, end: u64) -> Result<Array> {
        // A vacuum running at the same time may remove a commit, fragment or consolidated
        // metadata file between the listing of `__commits/` and the read of that file (it
        // removes commits before folders); the array is then listed again.
        let mut attempts = 0;
        loop {
            match Self::open_once(storage.clone(), start, end) {
                Err(Error::Storage(e)) if attempts < OPEN_ATTEMPTS && vanished(&e) => {
                    attempts += 1;
                    // Give the vacuum time to finish before listing again.
                    std::thread::sleep(std::time::Duration::from_millis(u64::from(attempts)));
                }
                r => return r,
            }
        }
    }

    /// One attempt of [`Self::open_between`].
    fn open_once(storage: Arc<dyn Storage>, start: u64, end: u64) -> Result<Array> {
        let timestamp = end;
        let legacy = !storage.is_dir(dirs::SCHEMA)?;
        if legacy && !storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
            return Err(Error::NotAnArray("no __schema directory".into()));
        }
        let mut schema_names: Vec<TimestampedName> = if legacy {
            Vec::new()
        } else {
            storage
                .list(dirs::SCHEMA)?
                .into_iter()
                .filter(|e| !e.is_dir)
                .filter_map(|e| TimestampedName::parse(&e.name).ok())
                .collect()
        };
        // In file-name order, as libtiledb lists them (so `__9_9_…` sorts after `__10_10_…`,
        // exactly as libtiledb picks between them).
        schema_names.sort_by_cached_key(ToString::to_string);
        // The newest schema at `end`; when time travelling to before the first schema, the
        // oldest one (libtiledb's `select_latest_array_schema_uri`: fragments may predate the
        // schema file's timestamp). Arrays older than format version 10 have one schema file,
        // `__array_schema.tdb`, which stands for every time (its name is all zeros here).
        let (chosen, chosen_file) = if legacy {
            let name = TimestampedName { t1: 0, t2: 0, label: "0".repeat(32), version: None };
            (name, dirs::LEGACY_SCHEMA_FILE.to_owned())
        } else {
            let chosen = match schema_names.iter().rev().find(|n| n.t2 <= timestamp) {
                Some(n) => n.clone(),
                None => schema_names
                    .first()
                    .cloned()
                    .ok_or_else(|| Error::NotAnArray("__schema holds no schema file".into()))?,
            };
            let file = chosen.to_string();
            (chosen, file)
        };
        let schema = Arc::new(read_schema(storage.as_ref(), &chosen_file)?);
        let enumerations = read_enumerations(storage.as_ref(), &schema)?;
        let directory = ArrayDirectory::load(storage.as_ref(), start, end, schema.is_dense())?;
        // Fragments name the schema they were written with; most name the current one.
        let schemas = Mutex::new(HashMap::from([(chosen_file, schema.clone())]));
        let schema_for = |name: &str| -> Result<Arc<ArraySchema>> {
            if let Some(s) = schemas.lock().unwrap_or_else(PoisonError::into_inner).get(name) {
                return Ok(s.clone());
            }
            let loaded = Arc::new(read_schema(storage.as_ref(), name)?);
            schemas
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name.to_owned(), loaded.clone());
            Ok(loaded)
        };
        let fragments = load_fragments(storage.as_ref(), &directory.fragments, &schema_for)?
            .into_iter()
            .map(Arc::new)
            .collect();
        Ok(Array {
            storage,
            schema,
            schema_name: chosen,
            schema_names,
            enumerations,
            timestamp_range: (start, end),
            explicit_end: true,
            directory,
            fragments,
        })
    }

    /// The open timestamp range `[start, end]` (ms).
    pub fn timestamp_range(&self) -> (u64, u64) {
        self.timestamp_range
    }

    /// The timestamp writes through this handle get by default, as in libtiledb: the end of
    /// the range it was opened at when one was given ([`Self::open_at`],
    /// [`Self::open_between`]), else the current time.
    pub fn write_timestamp(&self) -> u64 {
        if self.explicit_end { self.timestamp_range.1 } else { now_ms() }
    }

    /// The visible fragments, oldest first.
    pub fn fragments(&self) -> &[Arc<Fragment>] {
        &self.fragments
    }

    /// Keeps only the fragments `keep` names (a consolidation of a chosen list reads those
    /// alone).
    pub(crate) fn retain_fragments(&mut self, keep: &std::collections::HashSet<String>) {
        self.fragments.retain(|f| keep.contains(f.name().as_str()));
        self.directory.fragments.retain(|n| keep.contains(n.as_str()));
    }

    /// The visible fragments, delete commits and obsolete fragments of the open range.
    pub fn directory(&self) -> &ArrayDirectory {
        &self.directory
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

    /// The name of the schema file in force (all zeros for an array older than format version
    /// 10, whose schema is `__array_schema.tdb`; see [`Self::is_legacy`]).
    pub fn schema_name(&self) -> &TimestampedName {
        &self.schema_name
    }

    /// The schema name a new fragment's footer records: the schema file in force, or
    /// `__array_schema.tdb` for an array older than format version 10 (as libtiledb writes
    /// into such arrays).
    pub fn schema_file_name(&self) -> String {
        if self.is_legacy() {
            dirs::LEGACY_SCHEMA_FILE.to_owned()
        } else {
            self.schema_name.to_string()
        }
    }

    /// Every schema file of the array, in file-name order (schema evolution adds one each
    /// time; with timestamps of equal digit count this is oldest first).
    pub fn schema_names(&self) -> &[TimestampedName] {
        &self.schema_names
    }

    /// Whether the array predates format version 10: one schema file,
    /// `__array_schema.tdb`, and no `__schema/` folder.
    pub fn is_legacy(&self) -> bool {
        self.schema_names.is_empty()
    }

    /// The storage the array lives on.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }
}
