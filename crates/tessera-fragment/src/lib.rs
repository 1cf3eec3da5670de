//! TileDB fragments, byte-compatible with libtiledb 2.30 (format version 22): names, commit
//! files, delete conditions, and fragment metadata. Everything here is pure: bytes in, values
//! out, and back; the engine does the I/O with ranged reads.
//!
//! * [`names`]: [`FragmentName`] parses the three fragment-name shapes as libtiledb's
//!   `FragmentID` does and generates new names.
//! * [`commits`]: classifies `__commits/` files ([`CommitEntry`]) and reads and writes `.con`,
//!   `.vac` and `.ign` files.
//! * [`condition`]: `.del` / `.upd` files, a generic tile holding a query-condition tree
//!   ([`ConditionNode`]); the stored delete condition is the negation of the user's.
//! * [`consolidated`]: `__fragment_meta/*.meta` (footers of several fragments).
//! * [`footer`]: the [`Footer`] of `__fragment_metadata.tdb`, how to locate it
//!   ([`footer_length_range`], [`footer_range`]) and the byte range of every lazily loaded
//!   part ([`Footer::part_range`], [`LazyPart`]).
//! * [`parts`]: the lazily loaded parts, each parsed from its generic tile's payload.
//! * [`fields`]: the field index space ([`FieldLayout`], [`FieldInfo`]).
//! * [`metadata`]: [`FragmentMetadata`], the whole file, parsed and written back byte for
//!   byte.
//! * [`previous`]: the layouts of older format versions (version 1–2 metadata, old file
//!   names, zipped coordinates).
//! * [`array_metadata`]: the payload of `__meta/` files (array and group metadata).
//! * [`group_details`]: the payload of `__group/` files (a group's members) and
//!   [`ObjectType`](group_details::ObjectType).
//! * [`dirs`]: the names of an array's folders and of [`FRAGMENT_METADATA_FILE`].
//! * [`stats`]: tile and fragment min/max/sum/null counts computed from cell data, as
//!   libtiledb computes them.
//!
//! Writing the metadata of a dense fragment, then reading it back lazily with ranged reads:
//!
//! ```
//! use tessera_fragment::{
//!     Footer, FragmentMetadata, LazyPart, footer_length_range, footer_range, parse_footer_length,
//!     parse_u64s,
//! };
//! use tessera_rtree::{Mbr, Range};
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_types::{ArrayType, Datatype};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let schema = ArraySchema::builder(ArrayType::Dense)
//!     .dimension(Dimension::new("d", Datatype::Int32).domain_i64(1, 4).tile_i64(2))
//!     .attribute(Attribute::new("a", Datatype::Int32))
//!     .build()?;
//! let ned = Mbr(vec![Range::from_values(1i32, 4)]);
//! let footer = Footer::new(&schema, "__1_1_0123456789abcdef0123456789abcdef", ned);
//! let file = FragmentMetadata::new(footer, &schema)?.to_bytes(&schema)?;
//! assert_eq!(FragmentMetadata::parse_all(&file, &schema)?.to_bytes(&schema)?, file);
//!
//! // `file` stands for ranged reads of a `__fragment_metadata.tdb` of `file.len()` bytes.
//! let size = file.len() as u64;
//! let r = footer_length_range(size)?;
//! let len = parse_footer_length(&file[r.start as usize..r.end as usize])?;
//! let r = footer_range(size, len)?;
//! let footer = Footer::parse(&file[r.start as usize..r.end as usize], &schema)?;
//! assert_eq!(footer.tile_num(&schema)?, 2);
//!
//! // Then only the part a query needs: the tile offsets of attribute 0.
//! let part = LazyPart::TileOffsets(0);
//! let range = footer.part_range(part, r.start)?;
//! let payload = part.decode_tile(&file[range.start as usize..range.end as usize], range.start)?;
//! assert_eq!(parse_u64s(part, &payload)?.len(), 2);
//! # Ok(())
//! # }
//! ```

pub mod array_metadata;
pub mod commits;
pub mod condition;
pub mod consolidated;
pub mod dirs;
mod error;
pub mod fields;
pub mod footer;
pub mod group_details;
pub mod metadata;
pub mod names;
mod parse;
pub mod parts;
pub mod previous;
pub mod stats;

pub use commits::{
    CommitEntry, CommitKind, ConsolidatedCommit, ConsolidatedCommits, IgnoreFile, VacuumFile,
    classify_commits,
};
pub use condition::{
    CombinationOp, ConditionNode, ConditionOp, DeleteCommit, UpdateCommit, UpdateValue,
};
pub use consolidated::{ConsolidatedFooter, ConsolidatedFragmentMeta};
pub use dirs::FRAGMENT_METADATA_FILE;
pub use error::{Error, Result};
pub use fields::{Field, FieldInfo, FieldLayout, SumType, SumValue};
pub use footer::{
    Footer, GenericTileOffsets, LazyPart, dim_types, footer_length_range, footer_range,
    parse_footer_length,
};
pub use metadata::FragmentMetadata;
pub use names::{FragmentName, NameVersion};
pub use parts::{
    FieldStats, FragmentStats, ProcessedConditions, TileMinMax, TileSums, parse_u64s, u64s_payload,
};
pub use stats::{
    FieldTileMetadata, TileData, TileStats, VarMinMaxCopy, field_tile_metadata, fragment_stats,
    tile_stats,
};
