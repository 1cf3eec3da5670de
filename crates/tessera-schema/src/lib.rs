//! TileDB array schemas: the model, the exact binary form libtiledb 2.30 reads and writes,
//! validation of what TileDB rejects, and the JSON form of the `tessera` CLI.
//!
//! ```
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_types::{ArrayType, Datatype};
//!
//! let schema = ArraySchema::builder(ArrayType::Dense)
//!     .dimension(Dimension::new("rows", Datatype::Int32).domain_i64(1, 100).tile_i64(10))
//!     .attribute(Attribute::new("a", Datatype::Float64))
//!     .build()
//!     .unwrap();
//! let bytes = schema.to_bytes();
//! assert_eq!(tessera_schema::ArraySchema::parse(&bytes).unwrap(), schema);
//! ```

mod attribute;
mod current_domain;
mod dimension;
mod enumeration;
mod error;
mod evolution;
pub mod json;
mod label;
mod parse;
pub mod previous;
mod schema;
pub mod space_tiles;
mod validate;
mod value;

pub use attribute::Attribute;
pub use current_domain::CurrentDomain;
pub use dimension::Dimension;
pub use enumeration::{Enumeration, EnumerationRef};
pub use error::{Error, Result};
pub use evolution::{Evolved, SchemaEvolution, rewritten};
pub use label::DimensionLabel;
pub use schema::{ArraySchema, MIN_READ_VERSION, SchemaBuilder};
pub use value::Value;
