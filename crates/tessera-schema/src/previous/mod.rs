//! Schema layouts of older format versions, kept apart from the current one (the way lance
//! keeps `previous/`). Each module parses one range of versions into today's model.
//!
//! | versions | module | what differs |
//! |---|---|---|
//! | 1–4 | `v1_v4` | one datatype for the whole domain (stored before the dimension count); a dimension has no datatype, cell_val_num, filters or domain size of its own |
//! | 5–22 | the crate's own parsers | (versions 5, 6, 7, 17, 18, 20, 22 add fields, handled inline) |
//!
//! Arrays of versions 1 to 9 keep their single schema in `__array_schema.tdb` at the array
//! root ([`LEGACY_SCHEMA_FILE`]) instead of `__schema/`.

pub(crate) mod v1_v4;

/// The single schema file of arrays older than format version 10, at the array root.
pub const LEGACY_SCHEMA_FILE: &str = "__array_schema.tdb";

/// The first schema version whose dimensions carry filters of their own (and fall back to
/// the coords filters when they have none); see [`crate::ArraySchema::dimension_filters`].
pub const DIMENSION_FILTERS_MIN_VERSION: u32 = 5;
