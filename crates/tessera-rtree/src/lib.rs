//! TileDB R-trees, byte-compatible with libtiledb 2.30: the index over the tile MBRs
//! (minimum bounding rectangles) of a sparse fragment, stored as the first generic tile of
//! `__fragment_metadata.tdb`.
//!
//! * [`DimType`]: how a caller describes a dimension (datatype, var-sized or not).
//! * [`Range`] / [`RangeRef`] and [`Mbr`]: typed ranges and their on-disk encoding, which is
//!   also the encoding of a fragment footer's non-empty domain ([`Mbr::parse`],
//!   [`Mbr::write`]); [`Mbr::of_cells`] computes a tile's MBR as libtiledb's writer does.
//! * [`RTree`]: [`RTree::build`] (bottom-up with a fan-out, exactly as libtiledb),
//!   [`RTree::parse`] / [`RTree::to_bytes`], and [`RTree::query`] for multi-range
//!   subarrays, returning tile ids with a full-overlap flag.
//! * [`Level`] / [`MbrRef`]: each level's bounds live in one buffer; MBRs are read as
//!   borrowed views.
//!
//! Parsers check every count and size against the bytes left before allocating, never panic
//! on malformed input, and report the field and byte offset of what was wrong ([`Error`]).
//!
//! ```
//! use tessera_rtree::{DimType, Mbr, RTree, Range, TileOverlap, DEFAULT_FANOUT};
//! use tessera_types::Datatype;
//!
//! let dims = [DimType::fixed(Datatype::Int64), DimType::string()];
//! // Three tiles: rows 1..=4 / 5..=9 / 10..=12, with string keys.
//! let leaves = vec![
//!     Mbr(vec![Range::from_values(1i64, 4), Range::new("a", "cat")]),
//!     Mbr(vec![Range::from_values(5i64, 9), Range::new("cow", "dog")]),
//!     Mbr(vec![Range::from_values(10i64, 12), Range::new("b", "zebra")]),
//! ];
//! let tree = RTree::build(&dims, &leaves, DEFAULT_FANOUT).unwrap();
//! assert_eq!(tree.height(), 2);
//!
//! // The bytes libtiledb stores, and back.
//! let bytes = tree.to_bytes(&dims);
//! assert_eq!(&bytes[..8], &[10, 0, 0, 0, 2, 0, 0, 0]);
//! assert_eq!(RTree::parse(&bytes, &dims).unwrap(), tree);
//!
//! // Rows in [1, 4] or [11, 20], keys from "a" to "cz": tile 0 lies inside, tile 1 misses
//! // the rows, tile 2 overlaps.
//! let query = [
//!     vec![Range::from_values(1i64, 4), Range::from_values(11i64, 20)],
//!     vec![Range::new("a", "cz")],
//! ];
//! assert_eq!(
//!     tree.query(&dims, &query),
//!     [TileOverlap { tile: 0, full: true }, TileOverlap { tile: 2, full: false }]
//! );
//! ```

mod cursor;
mod dim;
mod error;
mod level;
mod mbr;
mod range;
mod tree;

pub use dim::DimType;
pub use error::{Error, Result};
pub use level::{Level, MbrRef};
pub use mbr::{DimCoords, Mbr};
pub use range::{Range, RangeRef};
pub use tree::{DEFAULT_FANOUT, RTree, TileOverlap};
