//! Format-wide constants of TileDB 2.30 (`tiledb/sm/misc/constants.cc`).

/// The format version TileDB 2.30 writes (schemas, generic tiles, fragment names).
pub const FORMAT_VERSION: u32 = 22;

/// `cell_val_num` stored for var-sized attributes and dimensions.
pub const CELL_VAL_NUM_VAR: u32 = u32::MAX;

/// Upper bound of a chunk of a filtered tile; the real chunk size is derived from it and the
/// cell size, the `max_chunk_size` stored in a pipeline only switches chunking off when 0.
pub const MAX_TILE_CHUNK_SIZE: u64 = 65_536;

/// Default sparse tile capacity (cells per data tile).
pub const DEFAULT_CAPACITY: u64 = 10_000;

/// Default window (bytes) of the bit-width-reduction filter.
pub const DEFAULT_BIT_WIDTH_MAX_WINDOW: u32 = 256;

/// Default window (bytes) of the positive-delta filter.
pub const DEFAULT_POSITIVE_DELTA_MAX_WINDOW: u32 = 1024;

/// Compression level TileDB records when the user gave none (`-1`).
pub const DEFAULT_COMPRESSION_LEVEL: i32 = -1;

/// Version of enumeration files (`__schema/__enumerations/__<uuid>_0`).
pub const ENUMERATIONS_VERSION: u32 = 0;

/// Version of the current-domain block inside a schema.
pub const CURRENT_DOMAIN_VERSION: u32 = 0;

/// Oldest format version at which tiles carry min/max/sum/null-count metadata.
pub const TILE_METADATA_MIN_VERSION: u32 = 11;

/// Oldest format version with delete and update commits.
pub const DELETES_MIN_VERSION: u32 = 16;

/// Oldest format version whose schemas list enumerations.
pub const ENUMERATIONS_MIN_VERSION: u32 = 20;

/// Oldest format version whose schemas carry a current domain.
pub const CURRENT_DOMAIN_MIN_VERSION: u32 = 22;

/// Oldest format version whose DELTA filter options carry a reinterpret datatype.
pub const DELTA_REINTERPRET_MIN_VERSION: u32 = 19;

/// Oldest format version whose DOUBLE_DELTA options carry a reinterpret datatype (and whose
/// bit-width reduction and positive-delta filters treat datetimes as 64-bit integers).
pub const DOUBLE_DELTA_REINTERPRET_MIN_VERSION: u32 = 20;

/// Generic tiles (schema, metadata, commits) are compressed with GZIP at this level.
pub const GENERIC_TILE_COMPRESSION_LEVEL: i32 = 1;
