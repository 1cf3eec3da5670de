//! Generic tiles (`docs/format/filters.md`, "Generic tiles"): a 34-byte header, the serialized
//! header pipeline, then a filtered tile. Schema files, enumeration files, `__meta` files,
//! group details and every part of fragment metadata are generic tiles; fragment metadata
//! files hold several back to back, followed by a footer.

use rayon::prelude::*;
use tessera_filters::FilterPipeline;
use tessera_types::{ByteReader, Datatype, EncryptionKey, EncryptionType};

use crate::chunking::Split;
use crate::framing::FramedTile;
use crate::tile::{check_len, decode_framed, encode_tile};
use crate::{Error, Result};

/// Byte length of the fixed part of a generic-tile header, before the pipeline.
pub const GENERIC_TILE_BASE_SIZE: usize = 34;

/// Datatype recorded in the header of every generic tile libtiledb writes (CHAR).
pub const GENERIC_TILE_DATATYPE: Datatype = Datatype::Char;

/// Cell size recorded in the header of every generic tile libtiledb writes.
pub const GENERIC_TILE_CELL_SIZE: u64 = 1;

const STRUCTURE: &str = "generic tile header";

/// The header of a generic tile.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericTileHeader {
    /// Format version of the tile (22 for libtiledb 2.30); also the version the header
    /// pipeline is parsed and run with.
    pub version: u32,
    /// Bytes of the filtered tile following the header.
    pub persisted_size: u64,
    /// Bytes of the unfiltered payload.
    pub tile_size: u64,
    /// Datatype of the payload (CHAR when written by libtiledb).
    pub datatype: Datatype,
    /// Cell size of the payload (1 when written by libtiledb).
    pub cell_size: u64,
    /// Whether the tile is encrypted; an AES-256-GCM tile's pipeline ends with the
    /// encryption filter.
    pub encryption_type: EncryptionType,
    /// Byte length of the serialized pipeline. [`Self::write`] writes the pipeline's actual
    /// length; [`Self::parse`] checks that the pipeline uses exactly this many bytes.
    pub filter_pipeline_size: u32,
    /// The header pipeline (GZIP level 1, plus AES-256-GCM when encrypted).
    pub pipeline: FilterPipeline,
}

impl GenericTileHeader {
    /// Parses the header at the start of `bytes` and returns it with the offset where the
    /// tile ends (`34 + filter_pipeline_size + persisted_size`, relative to `bytes`). Only
    /// the header itself must be present.
    ///
    /// # Errors
    /// [`Error::Format`] naming the field and its offset when a field is truncated or
    /// invalid (an unknown datatype or encryption type, a pipeline that does not use exactly
    /// `filter_pipeline_size` bytes, a tile end past `u64::MAX`); pipeline option errors
    /// come back as [`Error::Filter`].
    pub fn parse(bytes: &[u8]) -> Result<(Self, u64)> {
        let mut r = ByteReader::new(bytes, STRUCTURE);
        let version = r.u32("version")?;
        if version == 0 || version > tessera_types::FORMAT_VERSION {
            return Err(tessera_types::Error::invalid(
                STRUCTURE,
                "version",
                0,
                format!(
                    "format version {version} is not one TileDB 2.30 writes or reads (1 to {})",
                    tessera_types::FORMAT_VERSION
                ),
            )
            .into());
        }
        let persisted_size = r.u64("persisted_size")?;
        let tile_size = r.u64("tile_size")?;
        let datatype_id = r.u8("datatype")?;
        let datatype = Datatype::from_id(datatype_id)
            .map_err(|e| tessera_types::Error::invalid(STRUCTURE, "datatype", 20, e.to_string()))?;
        let cell_size = r.u64("cell_size")?;
        let encryption_id = r.u8("encryption_type")?;
        let encryption_type = EncryptionType::from_id(encryption_id).map_err(|e| {
            tessera_types::Error::invalid(STRUCTURE, "encryption_type", 29, e.to_string())
        })?;
        let filter_pipeline_size = r.u32("filter_pipeline_size")?;
        let pipeline_bytes = r.bytes(filter_pipeline_size as usize, "filter pipeline")?;
        let base = GENERIC_TILE_BASE_SIZE as u64;
        let (pipeline, used) =
            FilterPipeline::parse(pipeline_bytes, version).map_err(|e| match e {
                tessera_filters::Error::Format(f) => Error::Format(f.at_offset(base)),
                other => Error::Filter(other),
            })?;
        if used != pipeline_bytes.len() {
            return Err(tessera_types::Error::invalid(
                STRUCTURE,
                "filter_pipeline_size",
                30,
                format!("is {filter_pipeline_size} but the pipeline uses {used} bytes"),
            )
            .into());
        }
        let header = GenericTileHeader {
            version,
            persisted_size,
            tile_size,
            datatype,
            cell_size,
            encryption_type,
            filter_pipeline_size,
            pipeline,
        };
        let end = header.header_len().checked_add(persisted_size).ok_or_else(|| {
            tessera_types::Error::invalid(
                STRUCTURE,
                "persisted_size",
                4,
                format!("{persisted_size} puts the end of the tile past u64::MAX"),
            )
        })?;
        Ok((header, end))
    }

    /// Byte length of the header: 34 plus the pipeline.
    pub fn header_len(&self) -> u64 {
        GENERIC_TILE_BASE_SIZE as u64 + u64::from(self.filter_pipeline_size)
    }

    /// Byte length of the whole generic tile (header and filtered tile), saturating.
    pub fn total_len(&self) -> u64 {
        self.header_len().saturating_add(self.persisted_size)
    }

    /// Appends the serialized header (fields, then the pipeline, whose actual length is
    /// written as `filter_pipeline_size`).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.persisted_size.to_le_bytes());
        out.extend_from_slice(&self.tile_size.to_le_bytes());
        out.push(self.datatype.id());
        out.extend_from_slice(&self.cell_size.to_le_bytes());
        out.push(self.encryption_type.id());
        out.extend_from_slice(&(self.pipeline.serialized_len() as u32).to_le_bytes());
        self.pipeline.write(out);
    }

    /// The serialized header as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(GENERIC_TILE_BASE_SIZE + self.pipeline.serialized_len());
        self.write(&mut out);
        out
    }
}

/// A decoded generic tile.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericTile {
    /// Its header.
    pub header: GenericTileHeader,
    /// The unfiltered payload (`header.tile_size` bytes).
    pub payload: Vec<u8>,
}

/// Decodes the generic tile at the start of `bytes` and returns its payload. Bytes after the
/// tile are ignored, as libtiledb ignores them when it loads a schema or metadata file.
///
/// # Errors
/// As [`read_generic_tile_at`].
pub fn read_generic_tile(bytes: &[u8]) -> Result<Vec<u8>> {
    read_generic_tile_with_key(bytes, None)
}

/// [`read_generic_tile`] of a tile that may be encrypted: with `key`, the tile must be
/// AES-256-GCM encrypted and is decrypted with it; without, it must not be (as libtiledb,
/// which refuses a tile whose encryption differs from the key it was given).
///
/// # Errors
/// As [`read_generic_tile_at`]; [`Error::Encryption`] when the tile's encryption and the key
/// disagree; [`Error::DecodeChunk`] wrapping [`tessera_filters::Error::Authentication`] for
/// a wrong key or altered bytes.
pub fn read_generic_tile_with_key(bytes: &[u8], key: Option<&EncryptionKey>) -> Result<Vec<u8>> {
    Ok(read_generic_tile_at_with_key(bytes, 0, key)?.0.payload)
}

/// Decodes the generic tile starting `offset` bytes into `bytes`; returns it with the offset
/// where it ends. Error offsets are relative to `bytes`.
///
/// # Errors
/// [`Error::Format`] for a malformed header or a tile running past the end of `bytes`;
/// [`Error::Encryption`] for an encrypted tile (use [`read_generic_tile_at_with_key`]); [`Error::SizeMismatch`] when the chunks do
/// not add up to `tile_size`; [`Error::Framing`], [`Error::DecodeChunk`] and
/// [`Error::ChunkLength`] for corrupt tile data.
pub fn read_generic_tile_at(bytes: &[u8], offset: u64) -> Result<(GenericTile, u64)> {
    read_generic_tile_at_with_key(bytes, offset, None)
}

/// [`read_generic_tile_at`] of a tile that may be encrypted (see
/// [`read_generic_tile_with_key`]).
///
/// # Errors
/// As [`read_generic_tile_with_key`].
pub fn read_generic_tile_at_with_key(
    bytes: &[u8],
    offset: u64,
    key: Option<&EncryptionKey>,
) -> Result<(GenericTile, u64)> {
    let slice = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)).ok_or(
        tessera_types::Error::Truncated {
            structure: STRUCTURE,
            field: "version",
            offset,
            needed: GENERIC_TILE_BASE_SIZE as u64,
            available: 0,
        },
    )?;
    let (header, tile) = split_tile(slice).map_err(|e| e.at_offset(offset))?;
    let payload = decode_payload(&header, tile, key).map_err(|e| e.at_offset(offset))?;
    let end = offset + header.total_len();
    Ok((GenericTile { header, payload }, end))
}

/// Parses the header at the start of `bytes` and returns it with its filtered tile.
fn split_tile(bytes: &[u8]) -> Result<(GenericTileHeader, &[u8])> {
    let (header, end) = GenericTileHeader::parse(bytes)?;
    let start = header.header_len();
    let tile = usize::try_from(end).ok().and_then(|e| bytes.get(start as usize..e)).ok_or(
        tessera_types::Error::Truncated {
            structure: "generic tile",
            field: "tile data",
            offset: start,
            needed: header.persisted_size,
            available: (bytes.len() as u64).saturating_sub(start),
        },
    )?;
    Ok((header, tile))
}

/// Decodes the filtered tile of a generic tile; error offsets are relative to the start of
/// the generic tile.
fn decode_payload(
    header: &GenericTileHeader,
    tile: &[u8],
    key: Option<&EncryptionKey>,
) -> Result<Vec<u8>> {
    match (header.encryption_type, key) {
        (EncryptionType::NoEncryption, None) | (EncryptionType::Aes256Gcm, Some(_)) => {}
        (EncryptionType::Aes256Gcm, None) => {
            return Err(Error::Encryption(
                "the tile is encrypted with AES-256-GCM: an encryption key is needed".into(),
            ));
        }
        (EncryptionType::NoEncryption, Some(_)) => {
            return Err(Error::Encryption(
                "the tile is not encrypted, but an encryption key was given".into(),
            ));
        }
    }
    if header.encryption_type == EncryptionType::Aes256Gcm
        && header.pipeline.filters.last() != Some(&tessera_filters::Filter::EncryptionAes256Gcm)
    {
        return Err(tessera_types::Error::invalid(
            STRUCTURE,
            "filter pipeline",
            GENERIC_TILE_BASE_SIZE as u64,
            "an AES-256-GCM tile's pipeline must end with the encryption filter",
        )
        .into());
    }
    let base = header.header_len();
    let framed = FramedTile::parse(tile).map_err(|e| e.at_offset(base))?;
    check_len("generic tile", header.tile_size, framed.orig_len())?;
    let cell_size = usize::try_from(header.cell_size).map_err(|_| {
        tessera_types::Error::invalid(STRUCTURE, "cell_size", 21, "does not fit in memory")
    })?;
    let codec = header.pipeline.codec_with_key(header.datatype, cell_size, header.version, key)?;
    decode_framed(&codec, &framed).map_err(|e| e.at_offset(base))
}

/// Decodes `count` generic tiles stored back to back from `offset` in `bytes` (headers are
/// read in order, the tiles decoded in parallel) and returns them with the offset where the
/// last one ends, e.g. where a fragment metadata footer starts.
///
/// # Errors
/// As [`read_generic_tile_at`], for the first tile (in file order) that fails.
pub fn read_generic_tiles(
    bytes: &[u8],
    offset: u64,
    count: usize,
) -> Result<(Vec<GenericTile>, u64)> {
    read_generic_tiles_with_key(bytes, offset, count, None)
}

/// [`read_generic_tiles`] of tiles that may be encrypted (see [`read_generic_tile_with_key`]).
///
/// # Errors
/// As [`read_generic_tile_with_key`], for the first tile (in file order) that fails.
pub fn read_generic_tiles_with_key(
    bytes: &[u8],
    offset: u64,
    count: usize,
    key: Option<&EncryptionKey>,
) -> Result<(Vec<GenericTile>, u64)> {
    let mut pos = offset;
    let mut found = Vec::with_capacity(count.min(bytes.len() / GENERIC_TILE_BASE_SIZE + 1));
    for _ in 0..count {
        let slice = usize::try_from(pos).ok().and_then(|p| bytes.get(p..)).unwrap_or_default();
        let (header, tile) = split_tile(slice).map_err(|e| e.at_offset(pos))?;
        let next = pos + header.total_len();
        found.push((pos, header, tile));
        pos = next;
    }
    let tiles = found
        .into_par_iter()
        .map(|(at, header, tile)| {
            let payload = decode_payload(&header, tile, key).map_err(|e| e.at_offset(at))?;
            Ok(GenericTile { header, payload })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((tiles, pos))
}

/// Iterates over generic tiles stored back to back, decoding each as it goes. It stops after
/// the first error, and when the buffer is exhausted; since a fragment metadata footer is not
/// a generic tile, stop it before the footer (e.g. with [`Iterator::take`]) and use
/// [`GenericTiles::position`] to find where the footer starts.
#[derive(Debug, Clone)]
pub struct GenericTiles<'a> {
    bytes: &'a [u8],
    pos: u64,
    done: bool,
    key: Option<&'a EncryptionKey>,
}

impl<'a> GenericTiles<'a> {
    /// Tiles of `bytes` starting at its first byte.
    pub fn new(bytes: &'a [u8]) -> Self {
        GenericTiles { bytes, pos: 0, done: false, key: None }
    }

    /// Tiles of `bytes` that may be encrypted (see [`read_generic_tile_with_key`]).
    pub fn with_key(bytes: &'a [u8], key: Option<&'a EncryptionKey>) -> Self {
        GenericTiles { bytes, pos: 0, done: false, key }
    }

    /// Offset of the next tile (after the last one yielded).
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl Iterator for GenericTiles<'_> {
    /// The tile's start offset and the decoded tile.
    type Item = Result<(u64, GenericTile)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.bytes.len() as u64 {
            return None;
        }
        match read_generic_tile_at_with_key(self.bytes, self.pos, self.key) {
            Ok((tile, end)) => {
                let at = self.pos;
                self.pos = end;
                Some(Ok((at, tile)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Writes `payload` as a generic tile exactly as libtiledb does: datatype CHAR, cell size 1,
/// no encryption, pipeline GZIP level 1, chunks of 65536 bytes.
///
/// # Errors
/// [`Error::Filter`] when the GZIP filter is unavailable; otherwise as [`encode_tile`].
pub fn write_generic_tile(payload: &[u8], version: u32) -> Result<Vec<u8>> {
    write_generic_tile_with(payload, version, &FilterPipeline::generic_tile())
}

/// [`write_generic_tile`], encrypted with `key` when there is one, as libtiledb writes the
/// generic tiles of an encrypted array: encryption type AES-256-GCM in the header, and the
/// AES-256-GCM filter after GZIP level 1 in the header pipeline (fresh random IVs).
///
/// # Errors
/// As [`write_generic_tile`].
pub fn write_generic_tile_with_key(
    payload: &[u8],
    version: u32,
    key: Option<&EncryptionKey>,
) -> Result<Vec<u8>> {
    let Some(key) = key else {
        return write_generic_tile(payload, version);
    };
    let mut pipeline = FilterPipeline::generic_tile();
    pipeline.filters.push(tessera_filters::Filter::EncryptionAes256Gcm);
    write_tile(payload, version, &pipeline, EncryptionType::Aes256Gcm, Some(key))
}

/// Writes `payload` as a generic tile filtered by `pipeline` instead of libtiledb's GZIP
/// level 1 (for tests, or tools that want uncompressed tiles libtiledb can still read). As in
/// libtiledb, the payload is always cut into chunks of 65536 bytes.
///
/// # Errors
/// [`Error::Filter`] when the pipeline cannot run; otherwise as [`encode_tile`].
pub fn write_generic_tile_with(
    payload: &[u8],
    version: u32,
    pipeline: &FilterPipeline,
) -> Result<Vec<u8>> {
    write_tile(payload, version, pipeline, EncryptionType::NoEncryption, None)
}

fn write_tile(
    payload: &[u8],
    version: u32,
    pipeline: &FilterPipeline,
    encryption_type: EncryptionType,
    key: Option<&EncryptionKey>,
) -> Result<Vec<u8>> {
    let codec = pipeline.codec_with_key(
        GENERIC_TILE_DATATYPE,
        GENERIC_TILE_CELL_SIZE as usize,
        version,
        key,
    )?;
    // libtiledb always chunks generic tiles, whatever the pipeline's max_chunk_size says.
    let tile = encode_tile(&codec, payload, Split::Fixed { cell_size: GENERIC_TILE_CELL_SIZE })?;
    let header = GenericTileHeader {
        version,
        persisted_size: tile.len() as u64,
        tile_size: payload.len() as u64,
        datatype: GENERIC_TILE_DATATYPE,
        cell_size: GENERIC_TILE_CELL_SIZE,
        encryption_type,
        filter_pipeline_size: pipeline.serialized_len() as u32,
        pipeline: pipeline.clone(),
    };
    let mut out = Vec::with_capacity(header.header_len() as usize + tile.len());
    header.write(&mut out);
    out.extend_from_slice(&tile);
    Ok(out)
}
