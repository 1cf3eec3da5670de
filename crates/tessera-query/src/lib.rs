//! The Tessera engine: arrays on a [`Storage`](tessera_storage::Storage) backend.
//!
//! [`Array::create`] lays an array out exactly as libtiledb 2.30 does; [`Array::open`] finds
//! the schema in force (the newest under `__schema/`, or the newest at a timestamp) and its
//! enumerations.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::Array;
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_storage::MemoryStorage;
//! use tessera_types::{ArrayType, Datatype};
//!
//! let storage = Arc::new(MemoryStorage::new());
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
//!     .attribute(Attribute::new("v", Datatype::Float64))
//!     .build()?;
//! Array::create(storage.clone(), &schema, &[])?;
//! let array = Array::open(storage)?;
//! assert_eq!(array.schema(), &schema);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod aggregate;
mod array;
pub mod condition;
pub mod consolidate;
mod delete;
mod directory;
mod error;
pub mod evolve;
mod fragment;
pub mod group;
pub mod lifecycle;
pub mod metadata;
mod object;
pub mod read;
mod result;
pub mod verify;
pub mod write;

pub use array::{Array, dirs};
pub use delete::DeleteQuery;
pub use directory::{ArrayDirectory, DeleteCommit};
pub use error::{Corruption, Error, ErrorKind, Result};
pub use evolve::{evolve, latest_schema};
pub use fragment::{FRAGMENT_METADATA_FILE, Fragment};
pub use group::{Group, GroupMember, GroupWriter};
pub use lifecycle::{
    consolidate_group_metadata, delete_array, delete_fragments_between, delete_fragments_list,
    delete_group, upgrade_version, vacuum_group_metadata,
};
pub use object::{ObjectType, object_type};
pub use read::{Batches, DimRange, Points, ReadQuery};
pub use result::{CellValue, Column, ReadResult};
pub use tessera_schema::SchemaEvolution;
pub use write::{FragmentWrite, WriteQuery};
