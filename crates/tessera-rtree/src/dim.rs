//! How a caller describes one dimension to this crate.

use std::cmp::Ordering;

use tessera_types::Datatype;

/// The type of one dimension, as far as MBRs need it: its datatype and whether its values are
/// var-sized (a string dimension).
///
/// This crate does not depend on the schema crate; callers build one `DimType` per dimension
/// of the domain, in schema order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DimType {
    /// The dimension's datatype.
    pub datatype: Datatype,
    /// Whether values are var-sized (TileDB's `STRING_ASCII` dimensions).
    pub var: bool,
}

impl DimType {
    /// A fixed-sized dimension of `datatype`.
    pub const fn fixed(datatype: Datatype) -> Self {
        Self { datatype, var: false }
    }

    /// A var-sized dimension of `datatype`.
    pub const fn var_sized(datatype: Datatype) -> Self {
        Self { datatype, var: true }
    }

    /// A string dimension, the only var-sized dimension TileDB has (`STRING_ASCII`).
    pub const fn string() -> Self {
        Self::var_sized(Datatype::StringAscii)
    }

    /// Size in bytes of one coordinate, `None` for a var-sized dimension.
    pub const fn coord_size(self) -> Option<usize> {
        if self.var { None } else { Some(self.datatype.size()) }
    }

    /// The fewest bytes one range of this dimension takes on disk: `2 × coord size` for a
    /// fixed dimension, the two `u64` sizes for a var one.
    pub const fn min_encoded_len(self) -> usize {
        if self.var { 16 } else { 2 * self.datatype.size() }
    }

    /// Orders two values of this dimension: by value for numbers (through
    /// [`tessera_types::compare`]), bytewise for var-sized (string) values, as libtiledb's
    /// `std::string_view` comparisons do.
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        if self.var { a.cmp(b) } else { tessera_types::compare(self.datatype, a, b) }
    }

    /// Whether `a < b` in this dimension's order.
    pub(crate) fn lt(self, a: &[u8], b: &[u8]) -> bool {
        self.compare(a, b) == Ordering::Less
    }
}
