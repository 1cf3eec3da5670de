//! Names of the folders and fixed files inside an array, as libtiledb 2.30 lays them out
//! (`docs/format/README.md`). The engine joins these to paths; every other crate imports them
//! from here rather than spelling them again.

/// Schema files, one per schema version.
pub const SCHEMA: &str = "__schema";
/// Enumeration files, inside [`SCHEMA`].
pub const ENUMERATIONS: &str = "__schema/__enumerations";
/// Commit markers and delete/update/consolidation files.
pub const COMMITS: &str = "__commits";
/// One folder per fragment.
pub const FRAGMENTS: &str = "__fragments";
/// Array metadata (and group metadata).
pub const META: &str = "__meta";
/// Consolidated fragment metadata.
pub const FRAGMENT_META: &str = "__fragment_meta";
/// Dimension label arrays.
pub const LABELS: &str = "__labels";
/// The single schema file of arrays older than format version 10.
pub const LEGACY_SCHEMA_FILE: &str = tessera_schema::previous::LEGACY_SCHEMA_FILE;
/// Every folder an array's creation makes, in libtiledb's order.
pub const ALL: [&str; 7] = [SCHEMA, ENUMERATIONS, COMMITS, FRAGMENTS, META, FRAGMENT_META, LABELS];

/// File name of a fragment's metadata inside its folder.
pub const FRAGMENT_METADATA_FILE: &str = "__fragment_metadata.tdb";
