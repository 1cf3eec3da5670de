//! The byte layouts of the fuzz targets' inputs, shared by the targets (`fuzz/src/lib.rs`)
//! and the seed extractor (`xtask/src/fuzz.rs`, which includes this file by path), so that
//! the seeds taken from `testdata/` decode to what they were made from.
//!
//! Inputs are read with [`Input`], which never fails: a missing byte reads as 0 and a short
//! slice is as long as what is left, so every byte string is a valid input.

use tessera::layers::types::Datatype;

/// Arrays under `testdata/` whose schemas (and enumerations) the schema-dependent targets
/// use; a selector byte picks one (modulo the length). Appending keeps old seeds valid.
pub const ARRAYS: &[&str] = &[
    "fragments/sparse_int64",
    "fragments/sparse_string_float_dims",
    "fragments/dense_attrs",
    "fragments/sparse_attrs",
    "fragments/sparse_hilbert",
    "fragments/sparse_deletes",
    "fragments/dense_overwrites",
    "fragments/array_metadata",
    "fragments/sparse_int64_dups",
    "fragments/dense_consolidated",
    "fragments/sparse_consolidated_deletes",
    "fragments/commits_consolidated",
    "fragments/fragment_meta_consolidated",
    "schemas/enumerations",
    "schemas/attrs_nullable",
    "schemas/attrs_text",
    "schemas/sparse_datetime_dims",
    "schemas/current_domain",
    "schemas/dense_datetime",
    "schemas/attrs_cell_val_num",
    "filters/var_types",
    "filters/nullable",
];

/// Datatypes the filter and tile targets pick from with one byte (modulo the length).
pub const DATATYPES: &[Datatype] = &[
    Datatype::Int8,
    Datatype::UInt8,
    Datatype::Int16,
    Datatype::UInt16,
    Datatype::Int32,
    Datatype::UInt32,
    Datatype::Int64,
    Datatype::UInt64,
    Datatype::Float32,
    Datatype::Float64,
    Datatype::Char,
    Datatype::StringAscii,
    Datatype::StringUtf8,
    Datatype::Blob,
    Datatype::Bool,
    Datatype::DatetimeMs,
    Datatype::StringUtf16,
    Datatype::Any,
];

/// Cell value counts the tile target picks from; `u32::MAX` is var-sized.
pub const CELL_VAL_NUMS: &[u32] = &[1, 2, 3, 4, 8, u32::MAX];

/// The format version a byte selects: 1 to 22.
pub fn version(b: u8) -> u32 {
    u32::from(b % 22) + 1
}

/// The byte that selects format `version` (1 to 22).
pub fn version_byte(version: u32) -> u8 {
    (version.clamp(1, 22) - 1) as u8
}

/// The datatype a byte selects.
pub fn datatype(b: u8) -> Datatype {
    DATATYPES[b as usize % DATATYPES.len()]
}

/// The byte that selects `dt`, if it is in [`DATATYPES`].
pub fn datatype_byte(dt: Datatype) -> Option<u8> {
    DATATYPES.iter().position(|&d| d == dt).map(|i| i as u8)
}

/// The index into [`ARRAYS`] a byte selects.
pub fn array_index(b: u8) -> usize {
    b as usize % ARRAYS.len()
}

/// A cursor over a fuzz input that never fails.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes }
    }

    /// The next byte, 0 past the end.
    pub fn u8(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&b, rest)) => {
                self.bytes = rest;
                b
            }
            None => 0,
        }
    }

    /// The next little-endian `u16` (missing bytes read as 0).
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next little-endian `u32` (missing bytes read as 0).
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next `n` bytes, or all that is left.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.bytes.split_at(n.min(self.bytes.len()));
        self.bytes = rest;
        head
    }

    /// Everything that is left.
    pub fn rest(self) -> &'a [u8] {
        self.bytes
    }
}

/// Builds inputs in the layouts [`Input`] reads.
#[derive(Debug, Clone, Default)]
pub struct Seed(pub Vec<u8>);

impl Seed {
    /// Appends a byte.
    pub fn u8(mut self, b: u8) -> Self {
        self.0.push(b);
        self
    }

    /// Appends a little-endian `u16`.
    pub fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a little-endian `u32`.
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends bytes.
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
}
