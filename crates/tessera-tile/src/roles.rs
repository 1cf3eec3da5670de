//! The tiles of one field and what each needs: fixed data tiles, var data tiles with their
//! offsets tiles, and validity tiles. Each role knows its datatype, cell size, pipeline and
//! chunking regime, so callers never re-derive them.

use tessera_filters::{FilterPipeline, PipelineCodec};
use tessera_types::{CELL_VAL_NUM_VAR, Datatype, EncryptionKey};

use crate::chunking::{Split, use_tile_chunking, validate_offsets};
use crate::framing::{PlainFrame, STRING_PATH_OFFSETS_TILE};
use crate::tile::{
    VarTile, check_len, decode_string_tile, decode_tile, decode_tile_chunks_in_place,
    decode_tile_chunks_into, decode_tile_chunks_with, decode_tile_exact,
    decode_tile_exact_sequential, decode_tile_exact_sequential_into, encode_string_tile,
    encode_tile, layout_of, offsets_from_bytes, offsets_to_bytes,
};
use crate::{Error, Result};

/// Cell size of an offsets tile (one `u64` per cell).
pub const OFFSETS_CELL_SIZE: u64 = 8;

/// Cell size of a validity tile (one `u8` per cell, 1 = valid).
pub const VALIDITY_CELL_SIZE: u64 = 1;

/// What a tile holds for its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TileRole {
    /// The values of a fixed-size field (`a<i>.tdb`, `d<i>.tdb`).
    FixedData,
    /// The bytes of a var-sized field's cells (`a<i>_var.tdb`).
    VarData,
    /// The `u64` start offsets of a var-sized field's cells (`a<i>.tdb` of a var field);
    /// datatype UINT64, cell size 8, the schema's offsets pipeline.
    Offsets,
    /// One `u8` per cell of a nullable field (`a<i>_validity.tdb`); datatype UINT8, cell
    /// size 1, the schema's validity pipeline.
    Validity,
}

/// A pipeline ready to encode and decode the tiles of one role of one field.
#[derive(Debug)]
pub struct TileCodec {
    role: TileRole,
    datatype: Datatype,
    cell_size: u64,
    chunking: bool,
    codec: PipelineCodec,
}

impl TileCodec {
    /// The data tiles of a fixed-size field of `datatype` with `cell_val_num` values per cell
    /// (cell size `datatype.size() × cell_val_num`), filtered by the field's `pipeline`.
    /// `version` is the array schema's format version.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `cell_val_num` is 0 or the var marker;
    /// [`Error::Filter`] when the pipeline cannot run on this field.
    pub fn fixed_data(
        pipeline: &FilterPipeline,
        datatype: Datatype,
        cell_val_num: u32,
        version: u32,
    ) -> Result<Self> {
        if cell_val_num == 0 || cell_val_num == CELL_VAL_NUM_VAR {
            return Err(Error::InvalidInput(format!(
                "a fixed-size field needs a cell_val_num other than 0 and {CELL_VAL_NUM_VAR}"
            )));
        }
        let cell_size = datatype.size() as u64 * u64::from(cell_val_num);
        Self::build(TileRole::FixedData, pipeline, datatype, cell_size, false, version)
    }

    /// The data tiles of a var-sized field of `datatype` (cell size `datatype.size()`).
    /// Prefer [`VarTileCodec`], which pairs them with their offsets tiles.
    ///
    /// # Errors
    /// [`Error::Filter`] when the pipeline cannot run on this field.
    pub fn var_data(pipeline: &FilterPipeline, datatype: Datatype, version: u32) -> Result<Self> {
        let cell_size = datatype.size() as u64;
        Self::build(TileRole::VarData, pipeline, datatype, cell_size, true, version)
    }

    /// The offsets tiles of var-sized fields, filtered by the schema's offsets pipeline.
    ///
    /// # Errors
    /// [`Error::Filter`] when the pipeline cannot run on UINT64 values.
    pub fn offsets(offsets_pipeline: &FilterPipeline, version: u32) -> Result<Self> {
        Self::build(
            TileRole::Offsets,
            offsets_pipeline,
            Datatype::UInt64,
            OFFSETS_CELL_SIZE,
            true,
            version,
        )
    }

    /// The validity tiles of nullable fields, filtered by the schema's validity pipeline.
    ///
    /// # Errors
    /// [`Error::Filter`] when the pipeline cannot run on UINT8 values.
    pub fn validity(validity_pipeline: &FilterPipeline, version: u32) -> Result<Self> {
        Self::build(
            TileRole::Validity,
            validity_pipeline,
            Datatype::UInt8,
            VALIDITY_CELL_SIZE,
            false,
            version,
        )
    }

    fn build(
        role: TileRole,
        pipeline: &FilterPipeline,
        datatype: Datatype,
        cell_size: u64,
        is_var: bool,
        version: u32,
    ) -> Result<Self> {
        let codec = pipeline.codec(datatype, cell_size as usize, version)?;
        let chunking = use_tile_chunking(pipeline, is_var, datatype, version);
        Ok(TileCodec { role, datatype, cell_size, chunking, codec })
    }

    /// These tiles with the AES-256-GCM filter appended to their pipeline, as libtiledb
    /// filters every data, offsets and validity tile of an array encrypted with `key`; with
    /// `None`, unchanged.
    #[must_use]
    pub fn encrypted(mut self, key: Option<&EncryptionKey>) -> Self {
        self.codec = self.codec.encrypted(key);
        self
    }

    /// The role these tiles play.
    pub fn role(&self) -> TileRole {
        self.role
    }

    /// The datatype the first filter sees (UINT64 for offsets, UINT8 for validity).
    pub fn datatype(&self) -> Datatype {
        self.datatype
    }

    /// The tile's cell size in bytes, as used for chunking and by RLE.
    pub fn cell_size(&self) -> u64 {
        self.cell_size
    }

    /// Whether tiles are cut into chunks (see [`use_tile_chunking`]).
    pub fn uses_chunking(&self) -> bool {
        self.chunking
    }

    /// Whether var data tiles take the offset-free RLE/DICTIONARY string path.
    pub fn is_string_path(&self) -> bool {
        self.role == TileRole::VarData && self.codec.is_string_path()
    }

    /// The pipeline runner, for chunk-level work.
    pub fn pipeline_codec(&self) -> &PipelineCodec {
        &self.codec
    }

    /// Encodes one fixed-data, offsets or validity tile from its unfiltered bytes.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a var data tile (use [`VarTileCodec::encode`], which has
    /// the offsets); otherwise as [`encode_tile`].
    pub fn encode(&self, data: &[u8]) -> Result<Vec<u8>> {
        if self.role == TileRole::VarData {
            return Err(Error::InvalidInput(
                "a var data tile is chunked by its cells: encode it with VarTileCodec".into(),
            ));
        }
        let split =
            if self.chunking { Split::Fixed { cell_size: self.cell_size } } else { Split::Whole };
        encode_tile(&self.codec, data, split)
    }

    /// The frame of a tile of `len` bytes when this codec stores tiles as they are (no filter,
    /// no encryption), so a writer can write the unfiltered bytes themselves between the chunk
    /// headers ([`PlainFrame::pieces`]); `None` when a filter runs or for var data tiles.
    ///
    /// # Errors
    /// As [`Split::chunk_ranges`].
    pub fn plain_frame(&self, len: usize) -> Result<Option<PlainFrame>> {
        if self.role == TileRole::VarData || !self.codec.is_empty() {
            return Ok(None);
        }
        let split =
            if self.chunking { Split::Fixed { cell_size: self.cell_size } } else { Split::Whole };
        Ok(Some(PlainFrame::new(split.chunk_ranges(len)?)?))
    }

    /// Decodes one tile to its unfiltered bytes.
    ///
    /// # Errors
    /// As [`decode_tile`].
    pub fn decode(&self, tile: &[u8]) -> Result<Vec<u8>> {
        decode_tile(&self.codec, tile)
    }

    /// Decodes one tile whose unfiltered length is known to be `expected_len`, refusing
    /// others before allocating.
    ///
    /// # Errors
    /// As [`decode_tile_exact`].
    pub fn decode_exact(&self, tile: &[u8], expected_len: u64) -> Result<Vec<u8>> {
        decode_tile_exact(&self.codec, tile, expected_len)
    }

    /// [`Self::decode_exact`] with the chunks decoded one after the other (nothing zeroed or
    /// copied): for callers that already decode many tiles in parallel.
    ///
    /// # Errors
    /// As [`Self::decode_exact`].
    pub fn decode_exact_sequential(&self, tile: &[u8], expected_len: u64) -> Result<Vec<u8>> {
        decode_tile_exact_sequential(&self.codec, tile, expected_len)
    }

    /// [`Self::decode_exact_sequential`] appending to `out` (a buffer the caller reuses).
    ///
    /// # Errors
    /// As [`Self::decode_exact`]; `out` is then as it was.
    pub fn decode_exact_sequential_into(
        &self,
        tile: &[u8],
        expected_len: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        decode_tile_exact_sequential_into(&self.codec, tile, expected_len, out)
    }

    /// Decodes only the chunks overlapping `wanted` (sorted byte ranges of the unfiltered
    /// tile), appended to `out` (on the rayon pool with `parallel`); returns the unfiltered
    /// range of each chunk decoded. See
    /// [`decode_tile_chunks_into`].
    ///
    /// # Errors
    /// As [`Self::decode_exact`]; `out` is then as it was.
    pub fn decode_chunks_into(
        &self,
        tile: &[u8],
        expected_len: u64,
        wanted: &[std::ops::Range<u64>],
        parallel: bool,
        out: &mut Vec<u8>,
    ) -> Result<Vec<std::ops::Range<u64>>> {
        decode_tile_chunks_into(&self.codec, tile, expected_len, wanted, parallel, out)
    }

    /// Decodes the chunks overlapping `wanted` (sorted byte ranges of the unfiltered tile)
    /// into their places in `out` (exactly the tile's unfiltered length), leaving the rest.
    /// See [`decode_tile_chunks_in_place`].
    ///
    /// # Errors
    /// As [`Self::decode_exact`].
    pub fn decode_chunks_in_place(
        &self,
        tile: &[u8],
        wanted: &[std::ops::Range<u64>],
        out: &mut [u8],
    ) -> Result<()> {
        decode_tile_chunks_in_place(&self.codec, tile, wanted, out)
    }

    /// Decodes only the chunks overlapping `wanted` (sorted byte ranges of the unfiltered
    /// tile) into a zeroed buffer of the tile's `expected_len` bytes: the other bytes stay
    /// zero. A tile announcing a length other than `expected_len` is decoded whole, to fail
    /// as [`Self::decode_exact`] does, before anything of that length is allocated.
    ///
    /// # Errors
    /// As [`Self::decode_exact`]; [`Error::Allocation`] when the buffer cannot be had.
    pub fn decode_chunks_zeroed(
        &self,
        tile: &[u8],
        expected_len: u64,
        wanted: &[std::ops::Range<u64>],
    ) -> Result<Vec<u8>> {
        let framed = crate::framing::FramedTile::parse(tile)?;
        if framed.orig_len() != expected_len {
            return self.decode_exact(tile, expected_len);
        }
        let mut out = crate::tile::try_alloc(expected_len, "unfiltered tile")?;
        out.resize(expected_len as usize, 0);
        self.decode_chunks_in_place(tile, wanted, &mut out)?;
        Ok(out)
    }

    /// Decodes the chunks overlapping `wanted` (sorted byte ranges of the unfiltered tile) one
    /// at a time into `buf`, handing each to `f` with its first unfiltered byte. See
    /// [`decode_tile_chunks_with`].
    ///
    /// # Errors
    /// As [`Self::decode_exact`].
    pub fn decode_chunks_with(
        &self,
        tile: &[u8],
        expected_len: u64,
        wanted: &[std::ops::Range<u64>],
        buf: &mut Vec<u8>,
        f: impl FnMut(u64, &[u8]),
    ) -> Result<()> {
        decode_tile_chunks_with(&self.codec, tile, expected_len, wanted, buf, f)
    }

    /// Encodes an offsets tile from the cells' start offsets.
    ///
    /// # Errors
    /// As [`Self::encode`].
    pub fn encode_offsets(&self, offsets: &[u64]) -> Result<Vec<u8>> {
        self.encode(&offsets_to_bytes(offsets))
    }

    /// Decodes an offsets tile to the cells' start offsets.
    ///
    /// # Errors
    /// As [`decode_tile`], and [`Error::SizeMismatch`] when the decoded length is not a
    /// multiple of 8.
    pub fn decode_offsets(&self, tile: &[u8]) -> Result<Vec<u64>> {
        offsets_from_bytes(&self.decode(tile)?)
    }
}

/// The two filtered tiles of a var-sized field's tile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedVarTile {
    /// The offsets tile (`a<i>.tdb`), [`STRING_PATH_OFFSETS_TILE`] on the string path.
    pub offsets: Vec<u8>,
    /// The data tile (`a<i>_var.tdb`).
    pub data: Vec<u8>,
}

/// Encodes and decodes the offsets and data tiles of a var-sized field together, including
/// the offset-free RLE/DICTIONARY string path.
#[derive(Debug)]
pub struct VarTileCodec {
    data: TileCodec,
    offsets: TileCodec,
}

impl VarTileCodec {
    /// A var-sized field of `datatype` filtered by `pipeline`, whose offsets tiles use the
    /// schema's `offsets_pipeline`; `version` is the array schema's format version.
    ///
    /// # Errors
    /// [`Error::Filter`] when either pipeline cannot run.
    pub fn new(
        pipeline: &FilterPipeline,
        offsets_pipeline: &FilterPipeline,
        datatype: Datatype,
        version: u32,
    ) -> Result<Self> {
        Ok(VarTileCodec {
            data: TileCodec::var_data(pipeline, datatype, version)?,
            offsets: TileCodec::offsets(offsets_pipeline, version)?,
        })
    }

    /// Both codecs with the AES-256-GCM filter appended (see [`TileCodec::encrypted`]).
    #[must_use]
    pub fn encrypted(self, key: Option<&EncryptionKey>) -> Self {
        VarTileCodec { data: self.data.encrypted(key), offsets: self.offsets.encrypted(key) }
    }

    /// The codec of the data tiles.
    pub fn data_codec(&self) -> &TileCodec {
        &self.data
    }

    /// The codec of the offsets tiles.
    pub fn offsets_codec(&self) -> &TileCodec {
        &self.offsets
    }

    /// Whether the field takes the offset-free string path.
    pub fn is_string_path(&self) -> bool {
        self.data.is_string_path()
    }

    /// Encodes one var tile: the cells' bytes `data` and the start offset of each cell
    /// (relative to `data`, non-decreasing). The two tiles are filtered in parallel.
    ///
    /// # Errors
    /// [`Error::Offsets`] for inconsistent offsets; otherwise as [`encode_tile`].
    pub fn encode(&self, offsets: &[u64], data: &[u8]) -> Result<EncodedVarTile> {
        if self.is_string_path() {
            let data = encode_string_tile(&self.data.codec, data, offsets)?;
            return Ok(EncodedVarTile { offsets: STRING_PATH_OFFSETS_TILE.to_vec(), data });
        }
        validate_offsets(offsets, data.len() as u64, "var tile input")?;
        let split = if self.data.chunking {
            Split::Var { offsets, cell_size: self.data.cell_size }
        } else {
            Split::Whole
        };
        let (data_tile, offsets_tile) = rayon::join(
            || encode_tile(&self.data.codec, data, split),
            || self.offsets.encode_offsets(offsets),
        );
        Ok(EncodedVarTile { offsets: offsets_tile?, data: data_tile? })
    }

    /// Decodes one var tile from its offsets tile and data tile (in parallel).
    ///
    /// # Errors
    /// As [`decode_tile`] for either tile; [`Error::Offsets`] when the offsets decrease or
    /// point past the data; on the string path, [`Error::Framing`] when the offsets tile is
    /// not [`STRING_PATH_OFFSETS_TILE`].
    pub fn decode(&self, offsets_tile: &[u8], data_tile: &[u8]) -> Result<VarTile> {
        if self.is_string_path() {
            check_string_path_offsets(offsets_tile)?;
            return decode_string_tile(&self.data.codec, data_tile);
        }
        let (offsets, data) = rayon::join(
            || self.offsets.decode_offsets(offsets_tile),
            || self.data.decode(data_tile),
        );
        let tile = VarTile { offsets: offsets?, data: data? };
        validate_offsets(&tile.offsets, tile.data.len() as u64, "offsets tile")?;
        Ok(tile)
    }

    /// [`Self::decode`] for a tile known to hold `cell_count` cells and `data_len` bytes of
    /// data (from fragment metadata), refusing other sizes before allocating.
    ///
    /// # Errors
    /// [`Error::SizeMismatch`] when the sizes differ; otherwise as [`Self::decode`].
    pub fn decode_exact(
        &self,
        offsets_tile: &[u8],
        data_tile: &[u8],
        cell_count: u64,
        data_len: u64,
    ) -> Result<VarTile> {
        self.decode_exact_with(offsets_tile, data_tile, cell_count, data_len, false)
    }

    /// [`Self::decode_exact`]; with `sequential`, the two tiles and their chunks are decoded
    /// one after the other on this thread (for callers that decode many tiles in parallel).
    ///
    /// # Errors
    /// As [`Self::decode_exact`].
    pub fn decode_exact_with(
        &self,
        offsets_tile: &[u8],
        data_tile: &[u8],
        cell_count: u64,
        data_len: u64,
        sequential: bool,
    ) -> Result<VarTile> {
        check_len("var data tile", data_len, layout_of(data_tile)?.orig_len())?;
        if !self.is_string_path() {
            let offsets_len = cell_count.checked_mul(OFFSETS_CELL_SIZE).ok_or_else(|| {
                Error::InvalidInput(format!("{cell_count} cells overflow an offsets tile"))
            })?;
            check_len("offsets tile", offsets_len, layout_of(offsets_tile)?.orig_len())?;
        }
        let tile = if sequential && !self.is_string_path() {
            let offsets = offsets_from_bytes(&decode_tile_exact_sequential(
                &self.offsets.codec,
                offsets_tile,
                cell_count * OFFSETS_CELL_SIZE,
            )?)?;
            let data = decode_tile_exact_sequential(&self.data.codec, data_tile, data_len)?;
            let tile = VarTile { offsets, data };
            validate_offsets(&tile.offsets, tile.data.len() as u64, "offsets tile")?;
            tile
        } else {
            self.decode(offsets_tile, data_tile)?
        };
        check_len("var tile cell count", cell_count, tile.offsets.len() as u64)?;
        Ok(tile)
    }
}

fn check_string_path_offsets(offsets_tile: &[u8]) -> Result<()> {
    if offsets_tile == STRING_PATH_OFFSETS_TILE {
        return Ok(());
    }
    Err(Error::framing(
        None,
        "num_chunks",
        0,
        "the offsets tile of a string-path field must be 8 zero bytes \
         (is the schema version or the pipeline right?)",
    ))
}

#[cfg(test)]
mod tests {
    use tessera_filters::Filter;

    use super::*;

    #[test]
    fn plain_frame_is_the_encoded_tile() {
        let data: Vec<u8> = (0..70_000i32).flat_map(i32::to_le_bytes).collect();
        for version in [22, 1] {
            let codec =
                TileCodec::fixed_data(&FilterPipeline::default(), Datatype::Int32, 1, version)
                    .unwrap();
            let frame = codec.plain_frame(data.len()).unwrap().expect("no filter");
            assert_eq!(frame.pieces(&data).unwrap().concat(), codec.encode(&data).unwrap());
        }
        let zstd = FilterPipeline::new(vec![Filter::zstd(1)]);
        let codec = TileCodec::fixed_data(&zstd, Datatype::Int32, 1, 22).unwrap();
        assert!(codec.plain_frame(data.len()).unwrap().is_none());
        let key = EncryptionKey::from_bytes(&[7; 32]).unwrap();
        let codec = TileCodec::fixed_data(&FilterPipeline::default(), Datatype::Int32, 1, 22)
            .unwrap()
            .encrypted(Some(&key));
        assert!(codec.plain_frame(data.len()).unwrap().is_none());
    }
}
