//! Data tiles of fragments, in three steps: where each tile of a field lies in its files
//! ([`locate`]), fetching many tiles at once and decoding them ([`fetch`]), and reading or
//! decoding only part of a tile ([`partial`]), or only the cells a batch wants of it
//! ([`compact`]). The chunk framing itself is
//! [`tessera_tile::framing`]'s.

mod compact;
mod fetch;
mod locate;
mod partial;

pub(crate) use compact::{CellRanges, VarIndex, load_compact, merge_ranges};
pub(crate) use fetch::{DecodedTile, TileJob, load_tiles, load_tiles_with};
pub(crate) use locate::{FieldReader, QField, TileCells};
pub(crate) use partial::{TilePart, each_chunk, load_tile_part, scatter_tile};
