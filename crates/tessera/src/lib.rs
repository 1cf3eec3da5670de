//! Tessera: a pure-Rust engine for the TileDB array storage format.
//!
//! This facade re-exports the layers a user needs and adds the path-based entry points.
//!
//! ```
//! use tessera::{Array, ArraySchema, ArrayType, Attribute, Datatype, Dimension, Filter, FilterPipeline};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("my_array");
//! let schema = ArraySchema::builder(ArrayType::Dense)
//!     .dimension(Dimension::new("rows", Datatype::Int32).domain_i64(1, 1000).tile_i64(100))
//!     .dimension(Dimension::new("cols", Datatype::Int32).domain_i64(1, 1000).tile_i64(100))
//!     .attribute(Attribute::new("a", Datatype::Float64).filters(FilterPipeline::new(vec![Filter::zstd(3)])))
//!     .build()?;
//! tessera::create(&path, &schema)?;
//! let array = tessera::open(&path)?;
//! assert_eq!(array.schema().attributes[0].name, "a");
//! // Nothing is written yet: a dense read of a subarray gives fill values (NaN for float64).
//! let result = array.read().range("rows", 1..=2).range("cols", 1..=3).attributes(["a"]).execute()?;
//! assert_eq!(result.cell_num(), 6);
//! assert!(result.values::<f64>("a")?.iter().all(|v| v.is_nan()));
//! // Cells by their coordinates, in the order asked (a point twice comes twice).
//! let points = tessera::Points::new().coords("rows", [2i32, 1, 2]).coords("cols", [7i32, 1, 7]);
//! let cells = array.read().points(points).attributes(["a"]).execute()?;
//! assert_eq!(&cells.values::<i32>("rows")?[..], &[2, 1, 2]);
//! assert_eq!(cells.column("cols").unwrap().iter::<i32>()?.collect::<Vec<_>>(), [7, 1, 7]);
//! let box_10 = array.read().range("rows", 1..=10).range("cols", 1..=10);
//! let stats = box_10.aggregate(&[tessera::Aggregate::count(), "max(a)".parse()?])?;
//! assert_eq!((stats[0].as_f64(), stats[1].to_string()), (Some(100.0), "\"NaN\"".into()));
//! # Ok::<(), tessera::Error>(())
//! ```
//!
//! # Errors
//!
//! Every fallible call returns the one [`Error`], whichever layer failed; [`Error::kind`] says
//! what happened in terms a caller acts on, and [`Error::corruption`] where a file is corrupt:
//!
//! ```
//! use tessera::{Error, ErrorKind};
//!
//! let dir = tempfile::tempdir()?;
//! let err = tessera::open(dir.path().join("missing")).unwrap_err();
//! assert!(matches!(err, Error::NotFound { .. }));
//! assert_eq!(err.kind(), ErrorKind::NotFound);
//! # Ok::<(), Error>(())
//! ```

use std::path::Path;
use std::sync::Arc;

mod group;
#[cfg(feature = "ndarray")]
pub mod nd;

pub use group::{
    add_member, consolidate_group_metadata, create_group, delete_group, file_uri, group_writer,
    member_for, member_key, member_path, object_type, open_group, open_group_at,
    open_group_between, remove_member, uri_path, vacuum_group_metadata,
};
pub use tessera_filters::{Filter, FilterPipeline};
pub use tessera_fragment::{Footer, FragmentName};
pub use tessera_query::aggregate::{Aggregate, AggregateOp, AggregateValue};
pub use tessera_query::condition::QueryCondition;
/// Consolidation and vacuuming of fragments, commits and metadata.
pub use tessera_query::consolidate;
pub use tessera_query::group::{GroupCommit, GroupDetails};
pub use tessera_query::metadata::{
    ArrayMetadata, MetadataEntry, MetadataFile, MetadataValue, MetadataWriter,
};
/// Checks of an array's files against each other.
pub use tessera_query::verify;
pub use tessera_query::{
    Array, ArrayDirectory, Batches, CellValue, Column, Corruption, DeleteCommit, DeleteQuery,
    DimRange, Error, ErrorKind, Fragment, FragmentWrite, Group, GroupMember, GroupWriter,
    ObjectType, Points, ReadQuery, ReadResult, Result, WriteQuery,
};
pub use tessera_rtree::RTree;
pub use tessera_schema::{
    ArraySchema, Attribute, CurrentDomain, Dimension, Enumeration, EnumerationRef, SchemaEvolution,
};
pub use tessera_storage::{LocalStorage, MemoryStorage, Storage};
pub use tessera_types::names::TimestampedName;
pub use tessera_types::{ArrayType, CellValNum, Datatype, Layout, ReadLayout};

/// The layers, for users who need more than the facade.
pub mod layers {
    pub use tessera_filters as filters;
    pub use tessera_fragment as fragment;
    pub use tessera_query as query;
    pub use tessera_rtree as rtree;
    pub use tessera_schema as schema;
    pub use tessera_storage as storage;
    pub use tessera_tile as tile;
    pub use tessera_types as types;
}

/// Creates an array with `schema` (and no enumerations) in the folder `path`.
///
/// # Errors
/// When an array already exists there, the schema is invalid, or the folder cannot be written.
pub fn create(path: impl AsRef<Path>, schema: &ArraySchema) -> Result<()> {
    Array::create(local(path), schema, &[])
}

/// Creates an array whose schema lists enumerations, with their values.
///
/// # Errors
/// As [`create`], and when an enumeration the schema lists has no values here.
pub fn create_with_enumerations(
    path: impl AsRef<Path>,
    schema: &ArraySchema,
    enumerations: &[Enumeration],
) -> Result<()> {
    Array::create(local(path), schema, enumerations)
}

/// Opens the array in the folder `path` as it was at `timestamp` (ms since the epoch).
///
/// # Errors
/// As [`open`].
pub fn open_at(path: impl AsRef<Path>, timestamp: u64) -> Result<Array> {
    Array::open_at(existing(path, "array")?, timestamp)
}

/// Opens the array in the folder `path` for the timestamp range `[start, end]` (ms).
///
/// # Errors
/// As [`open_at`].
pub fn open_between(path: impl AsRef<Path>, start: u64, end: u64) -> Result<Array> {
    Array::open_between(existing(path, "array")?, start, end)
}

/// Opens the array in the folder `path` with its newest schema.
///
/// # Errors
/// [`Error::NotFound`] when `path` does not exist, [`Error::NotAnArray`] when it holds no
/// array; when its format version is not supported, or a file is corrupt.
pub fn open(path: impl AsRef<Path>) -> Result<Array> {
    Array::open(existing(path, "array")?)
}

/// The storage of the folder `path`, or [`Error::NotFound`] when there is no such folder.
fn existing(path: impl AsRef<Path>, object: &'static str) -> Result<Arc<dyn Storage>> {
    let path = path.as_ref();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::NotFound { object, path: path.display().to_string() })
        }
        _ => Ok(local(path)),
    }
}

/// Applies a schema evolution to the array in the folder `path` (one new schema file under
/// `__schema/`, as libtiledb's `ArraySchemaEvolution::array_evolve`); returns the new schema
/// file's name.
///
/// # Errors
/// When the evolution is invalid (nothing is written then), or on storage errors.
pub fn evolve(path: impl AsRef<Path>, evolution: &SchemaEvolution) -> Result<String> {
    Ok(tessera_query::evolve(&local(path), evolution)?.to_string())
}

/// Deletes the array in the folder `path` as libtiledb's `tiledb_array_delete` does
/// (fragments, metadata, schemas, then TileDB's folders), then the folder when it is left
/// empty.
///
/// # Errors
/// When there is no array there, or a file cannot be removed.
pub fn delete_array(path: impl AsRef<Path>) -> Result<()> {
    tessera_query::delete_array(local(path.as_ref()).as_ref())?;
    let _ = std::fs::remove_dir(path.as_ref());
    Ok(())
}

/// Deletes the fragments of the array in `path` whose timestamp range lies inside
/// `[start, end]` (ms), as libtiledb's `Array.delete_fragments`; returns their names.
///
/// # Errors
/// When there is no array there, or on storage errors.
pub fn delete_fragments(path: impl AsRef<Path>, start: u64, end: u64) -> Result<Vec<String>> {
    tessera_query::delete_fragments_between(local(path).as_ref(), start, end)
}

/// Deletes the named fragments of the array in `path`, as libtiledb's
/// `tiledb_array_delete_fragments_list`; every name must be a fragment of the array.
///
/// # Errors
/// An unknown name (nothing is deleted then), or storage errors.
pub fn delete_fragments_list(path: impl AsRef<Path>, names: &[&str]) -> Result<Vec<String>> {
    tessera_query::delete_fragments_list(local(path).as_ref(), names)
}

/// Consolidates exactly the named fragments of the array in `path` into one, as tiledb-py's
/// `consolidate(uri, fragment_uris=...)`; returns the new fragment's name (`None` when fewer
/// than two were named).
///
/// # Errors
/// A name that is not a fragment of the array; for dense arrays, an older fragment not
/// listed that overlaps the listed ones (libtiledb's rule); storage errors.
pub fn consolidate_fragments(path: impl AsRef<Path>, names: &[&str]) -> Result<Option<String>> {
    let options = tessera_query::consolidate::Options::default();
    Ok(tessera_query::consolidate::consolidate_fragments(local(path), names, &options)?.output)
}

/// Upgrades the array in `path` to format version 22, as libtiledb's `upgrade_version`
/// (schema rewritten at version 22, the folders of format 12 on made); returns the new
/// schema file's name, or `None` when it was already at version 22.
///
/// # Errors
/// When there is no array there, or on storage errors.
pub fn upgrade_version(path: impl AsRef<Path>) -> Result<Option<String>> {
    Ok(tessera_query::upgrade_version(local(path).as_ref())?.map(|n| n.to_string()))
}

fn local(path: impl AsRef<Path>) -> Arc<dyn Storage> {
    Arc::new(LocalStorage::new(path.as_ref()))
}

pub use tessera_storage::EncryptedStorage;
pub use tessera_types::EncryptionKey;

/// The storage of the folder `path`, carrying `key` when the arrays and groups there are
/// encrypted with AES-256-GCM (see [`EncryptedStorage`]): every engine call given it
/// (`Array::create`, `Array::open`, writes, metadata, consolidation, vacuum, groups) encrypts
/// what it writes and decrypts what it reads, as libtiledb does with `sm.encryption_key`.
///
/// ```
/// use tessera::{Array, ArraySchema, ArrayType, Attribute, Datatype, Dimension, EncryptionKey};
///
/// let dir = tempfile::tempdir()?;
/// let key = EncryptionKey::parse("0123456789abcdeF0123456789abcdeF")?;
/// let schema = ArraySchema::builder(ArrayType::Sparse)
///     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
///     .attribute(Attribute::new("v", Datatype::Float64))
///     .build()?;
/// tessera::create_with_key(dir.path(), &schema, key.clone())?;
/// let array = tessera::open_with_key(dir.path(), key)?;
/// array.write().values("x", &[1i64, 5]).values("v", &[0.5f64, 1.5]).submit()?;
/// // Without the key, nothing opens.
/// assert!(tessera::open(dir.path()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn local_storage(path: impl AsRef<Path>, key: Option<EncryptionKey>) -> Arc<dyn Storage> {
    match key {
        Some(key) => Arc::new(EncryptedStorage::new(local(path), key)),
        None => local(path),
    }
}

/// Creates an array encrypted with `key` in the folder `path`.
///
/// # Errors
/// As [`create`].
pub fn create_with_key(
    path: impl AsRef<Path>,
    schema: &ArraySchema,
    key: EncryptionKey,
) -> Result<()> {
    Array::create(local_storage(path, Some(key)), schema, &[])
}

/// Opens the array encrypted with `key` in the folder `path`, with its newest schema.
///
/// # Errors
/// As [`open`]; a missing key, a wrong key, or a key given for an array that is not
/// encrypted are errors naming the file.
pub fn open_with_key(path: impl AsRef<Path>, key: EncryptionKey) -> Result<Array> {
    Array::open(local_storage(path, Some(key)))
}
