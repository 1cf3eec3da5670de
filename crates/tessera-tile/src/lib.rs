//! TileDB 2.30 tiles, byte for byte: how a tile is cut into chunks, the chunk framing of a
//! filtered tile, running a filter pipeline over all chunks of a tile in parallel, the three
//! tile roles of a field (data, offsets, validity) and generic tiles with their header.
//!
//! * [`chunking`]: chunk sizes and cut points (fixed cells, var cells, no chunking).
//! * [`framing`]: `u64 num_chunks` then `orig_len, filtered_len, metadata_len, metadata, data`
//!   per chunk, parsed without copying from a `&[u8]` or a [`bytes::Bytes`].
//! * [`encode_tile`] / [`decode_tile`]: a whole tile through a
//!   [`tessera_filters::PipelineCodec`], chunks filtered on the rayon pool.
//! * [`TileCodec`] / [`VarTileCodec`]: a field's fixed-data, var-data, offsets and validity
//!   tiles with their datatypes, cell sizes and pipelines, including the offset-free
//!   RLE/DICTIONARY string path.
//! * [`GenericTileHeader`], [`read_generic_tile`], [`write_generic_tile`]: schema, metadata and
//!   fragment-metadata files.
//!
//! Every parser checks each count and length before using it and reports the field and its
//! byte offset; nothing here panics on malformed input.
//!
//! ```
//! use tessera_filters::FilterPipeline;
//! use tessera_tile::{TileCodec, VarTileCodec};
//! use tessera_types::Datatype;
//!
//! // A nullable var-sized field with no filters.
//! let none = FilterPipeline::default();
//! let var = VarTileCodec::new(&none, &none, Datatype::StringUtf8, 22).unwrap();
//! let validity = TileCodec::validity(&none, 22).unwrap();
//!
//! let tiles = var.encode(&[0, 5, 5], b"helloworld").unwrap();
//! let decoded = var.decode(&tiles.offsets, &tiles.data).unwrap();
//! assert_eq!(decoded.cell(2), Some(&b"world"[..]));
//!
//! let v = validity.encode(&[1, 0, 1]).unwrap();
//! assert_eq!(validity.decode(&v).unwrap(), [1, 0, 1]);
//! ```

pub mod chunking;
mod error;
pub mod framing;
mod generic;
mod roles;
mod tile;

pub use chunking::{Split, compute_chunk_size, use_tile_chunking};
pub use error::{Error, Result};
pub use framing::{
    ChunkInfo, FramedTile, PlainChunks, PlainFrame, STRING_PATH_OFFSETS_TILE, TileLayout,
    unfiltered_slice,
};
pub use generic::{
    GENERIC_TILE_BASE_SIZE, GENERIC_TILE_CELL_SIZE, GENERIC_TILE_DATATYPE, GenericTile,
    GenericTileHeader, GenericTiles, read_generic_tile, read_generic_tile_at,
    read_generic_tile_at_with_key, read_generic_tile_with_key, read_generic_tiles,
    read_generic_tiles_with_key, write_generic_tile, write_generic_tile_with,
    write_generic_tile_with_key,
};
pub use roles::{
    EncodedVarTile, OFFSETS_CELL_SIZE, TileCodec, TileRole, VALIDITY_CELL_SIZE, VarTileCodec,
};
pub use tile::{
    VarTile, decode_framed, decode_framed_into, decode_framed_sequential, decode_string_tile,
    decode_tile, decode_tile_chunks_in_place, decode_tile_chunks_into, decode_tile_chunks_with,
    decode_tile_exact, decode_tile_exact_sequential, decode_tile_exact_sequential_into,
    encode_string_tile, encode_tile,
};
