//! Running a filter pipeline over a whole tile: split, filter every chunk (in parallel when
//! there are several), frame; and the reverse, decoding every chunk straight into its slot of
//! one output buffer.

use std::ops::Range;

use rayon::prelude::*;
use tessera_filters::{EncodedChunk, PipelineCodec, Scratch};

use crate::chunking::{Split, validate_offsets};
use crate::framing::{Chunk, ChunkInfo, ChunkParts, FramedTile, TileLayout, write_tile};
use crate::{Error, Result};

/// Filters `data` into one tile: cuts it per `split`, runs the pipeline forward over every
/// chunk (on the rayon pool when there are several) and frames the results.
///
/// ```
/// use tessera_filters::FilterPipeline;
/// use tessera_tile::{Split, decode_tile, encode_tile};
/// use tessera_types::Datatype;
///
/// let codec = FilterPipeline::default().codec(Datatype::Int32, 4, 22).unwrap();
/// let data: Vec<u8> = (0..40_000i32).flat_map(i32::to_le_bytes).collect();
/// let tile = encode_tile(&codec, &data, Split::Fixed { cell_size: 4 }).unwrap();
/// assert_eq!(&tile[..8], &3u64.to_le_bytes()); // 65536 + 65536 + 28928 bytes
/// assert_eq!(decode_tile(&codec, &tile).unwrap(), data);
/// ```
///
/// # Errors
/// [`Error::EncodeChunk`] with the chunk index when a filter refuses the data; the errors of
/// [`Split::chunk_ranges`] and of [`write_tile`].
pub fn encode_tile(codec: &PipelineCodec, data: &[u8], split: Split<'_>) -> Result<Vec<u8>> {
    let ranges = split.chunk_ranges(data.len())?;
    if codec.is_empty() {
        // No filter: each chunk is its own bytes, framed straight from `data` (one copy).
        let parts: Vec<ChunkParts<'_>> = ranges
            .iter()
            .map(|r| ChunkParts {
                orig_len: r.len() as u64,
                metadata: &[],
                data: data.get(r.clone()).unwrap_or_default(),
            })
            .collect();
        let mut out = Vec::new();
        write_tile(&parts, &mut out)?;
        return Ok(out);
    }
    let encode = |(i, range): (usize, &std::ops::Range<usize>)| {
        let chunk = data.get(range.clone()).unwrap_or_default();
        codec.encode_chunk(chunk).map_err(|source| Error::EncodeChunk {
            chunk: i,
            offset: range.start as u64,
            source,
        })
    };
    let encoded: Vec<EncodedChunk> = if ranges.len() > 1 {
        ranges.par_iter().enumerate().map(encode).collect::<Result<_>>()?
    } else {
        ranges.iter().enumerate().map(encode).collect::<Result<_>>()?
    };
    let parts: Vec<ChunkParts<'_>> = ranges
        .iter()
        .zip(&encoded)
        .map(|(r, e)| ChunkParts { orig_len: r.len() as u64, metadata: &e.metadata, data: &e.data })
        .collect();
    let mut out = Vec::new();
    write_tile(&parts, &mut out)?;
    Ok(out)
}

/// Filters a var-sized string tile on the offset-free RLE/DICTIONARY path
/// ([`PipelineCodec::is_string_path`]): one chunk holding the whole tile, encoded together
/// with the cell `offsets`. The field's offsets tile is then
/// [`crate::STRING_PATH_OFFSETS_TILE`].
///
/// # Errors
/// [`Error::EncodeChunk`] (chunk 0) when the pipeline is not on the string path or refuses the
/// data; [`Error::Offsets`] for offsets that decrease or point past the data.
pub fn encode_string_tile(codec: &PipelineCodec, data: &[u8], offsets: &[u64]) -> Result<Vec<u8>> {
    validate_offsets(offsets, data.len() as u64, "var tile input")?;
    let encoded = codec.encode_strings(data, offsets).map_err(|source| Error::EncodeChunk {
        chunk: 0,
        offset: 0,
        source,
    })?;
    let mut out = Vec::new();
    write_tile(
        &[ChunkParts {
            orig_len: data.len() as u64,
            metadata: &encoded.metadata,
            data: &encoded.data,
        }],
        &mut out,
    )?;
    Ok(out)
}

/// Decodes a filtered tile back to its unfiltered bytes.
///
/// The output length is the sum of the chunks' `orig_len`; use [`decode_tile_exact`] when the
/// expected length is known (fragment metadata, a generic-tile header) so that an absurd
/// announced size is refused before anything is allocated.
///
/// # Errors
/// [`Error::Framing`] for a malformed tile; [`Error::DecodeChunk`] / [`Error::ChunkLength`]
/// naming the failing chunk and its offset; [`Error::Allocation`] when the announced size
/// cannot be allocated.
pub fn decode_tile(codec: &PipelineCodec, tile: &[u8]) -> Result<Vec<u8>> {
    let framed = FramedTile::parse(tile)?;
    decode_framed(codec, &framed)
}

/// [`decode_tile`], first checking that the tile's chunks add up to `expected_len` bytes.
///
/// # Errors
/// [`Error::SizeMismatch`] when they do not; otherwise as [`decode_tile`].
pub fn decode_tile_exact(codec: &PipelineCodec, tile: &[u8], expected_len: u64) -> Result<Vec<u8>> {
    let framed = FramedTile::parse(tile)?;
    check_len("tile", expected_len, framed.orig_len())?;
    decode_framed(codec, &framed)
}

/// [`decode_tile_exact`] decoding the chunks one after the other into one buffer (nothing
/// zeroed, nothing copied), for callers that already decode many tiles in parallel.
///
/// # Errors
/// As [`decode_tile_exact`].
pub fn decode_tile_exact_sequential(
    codec: &PipelineCodec,
    tile: &[u8],
    expected_len: u64,
) -> Result<Vec<u8>> {
    let framed = FramedTile::parse(tile)?;
    check_len("tile", expected_len, framed.orig_len())?;
    decode_framed_sequential(codec, &framed)
}

/// Decodes an already parsed tile chunk after chunk, each appended to one buffer.
///
/// # Errors
/// As [`decode_tile`].
pub fn decode_framed_sequential<B: AsRef<[u8]>>(
    codec: &PipelineCodec,
    framed: &FramedTile<B>,
) -> Result<Vec<u8>> {
    let mut out = try_alloc(reservation(framed), "unfiltered tile")?;
    decode_framed_sequential_into(codec, framed, &mut out)?;
    Ok(out)
}

/// [`decode_tile_exact_sequential`] appending to `out`, so that a caller can decode into a
/// buffer it reuses (memory already mapped costs no page faults). On error, `out` holds
/// what it held before.
///
/// # Errors
/// As [`decode_tile_exact`].
pub fn decode_tile_exact_sequential_into(
    codec: &PipelineCodec,
    tile: &[u8],
    expected_len: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    let framed = FramedTile::parse(tile)?;
    check_len("tile", expected_len, framed.orig_len())?;
    let start = out.len();
    let want = usize::try_from(reservation(&framed))
        .map_err(|_| Error::Allocation { what: "unfiltered tile", bytes: expected_len })?;
    out.try_reserve(want)
        .map_err(|_| Error::Allocation { what: "unfiltered tile", bytes: expected_len })?;
    decode_framed_sequential_into(codec, &framed, out).inspect_err(|_| out.truncate(start))
}

/// Decodes only the chunks of a tile whose unfiltered bytes overlap `wanted` (byte ranges of
/// the unfiltered tile, sorted by start), appending them one after the other to `out`, and
/// returns the unfiltered byte range each decoded chunk covers, in order. Chunks decode
/// independently, so a read that needs a few rows of a large filtered tile skips the rest.
/// With `parallel`, the chunks decode on the rayon pool (for reads of few tiles). On error,
/// `out` holds what it held before.
///
/// # Errors
/// As [`decode_tile_exact`].
pub fn decode_tile_chunks_into(
    codec: &PipelineCodec,
    tile: &[u8],
    expected_len: u64,
    wanted: &[Range<u64>],
    parallel: bool,
    out: &mut Vec<u8>,
) -> Result<Vec<Range<u64>>> {
    let framed = FramedTile::parse(tile)?;
    check_len("tile", expected_len, framed.orig_len())?;
    let start = out.len();
    let mut spans: Vec<Range<u64>> = Vec::new();
    let mut scratch = Scratch::default();
    let picked = wanted_chunks(&framed, wanted);
    for c in &picked {
        let range = c.info.orig_range();
        match spans.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => spans.push(range),
        }
    }
    let bytes: u64 = spans.iter().map(|r| r.end - r.start).sum();
    let want = usize::try_from(bytes.min(reservation(&framed)))
        .map_err(|_| Error::Allocation { what: "unfiltered tile", bytes })?;
    out.try_reserve(want).map_err(|_| Error::Allocation { what: "unfiltered tile", bytes })?;
    if parallel && picked.len() > 1 {
        // Each chunk into its own buffer on the rayon pool, then appended in order (the
        // first bad chunk's error, whichever worker finished first).
        let parts = picked
            .par_iter()
            .map(|c| {
                let mut part = Vec::new();
                decode_one(codec, c.info, c.metadata, c.data, &mut part, &mut Scratch::default())?;
                Ok(part)
            })
            .collect::<Vec<Result<Vec<u8>>>>()
            .into_iter()
            .collect::<Result<Vec<Vec<u8>>>>()?;
        for part in &parts {
            out.extend_from_slice(part);
        }
        return Ok(spans);
    }
    for c in picked {
        decode_one(codec, c.info, c.metadata, c.data, out, &mut scratch)
            .inspect_err(|_| out.truncate(start))?;
    }
    Ok(spans)
}

/// Decodes the chunks of a tile whose unfiltered bytes overlap `wanted` (byte ranges of the
/// unfiltered tile, sorted by start) into their places in `out`, which must be exactly the
/// tile's unfiltered length; the bytes of the other chunks are left as they are. For readers
/// that will look only at some cells of a tile.
///
/// # Errors
/// [`Error::SizeMismatch`] when `out` has the wrong length; otherwise as
/// [`decode_tile_exact`].
pub fn decode_tile_chunks_in_place(
    codec: &PipelineCodec,
    tile: &[u8],
    wanted: &[Range<u64>],
    out: &mut [u8],
) -> Result<()> {
    let framed = FramedTile::parse(tile)?;
    check_len("tile output buffer", out.len() as u64, framed.orig_len())?;
    // Each chunk's range lies within the tile's unfiltered length, which is `out`'s.
    each_wanted_chunk(codec, &framed, wanted, &mut Vec::new(), |at, bytes| {
        out[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    })
}

/// Decodes the chunks of a tile whose unfiltered bytes overlap `wanted` (byte ranges of the
/// unfiltered tile, sorted by start) one at a time into `buf`, and hands each to `f` with
/// the byte of the unfiltered tile where it starts. A reader that scatters a tile's cells
/// into a larger result thus copies them out of one chunk-sized buffer that stays in the
/// CPU's cache, where decoding the whole tile first would write it to memory and read it
/// back. Chunks stored without filters are handed over from `tile` itself.
///
/// # Errors
/// As [`decode_tile_exact`]; `f` may have seen the chunks before the bad one.
pub fn decode_tile_chunks_with(
    codec: &PipelineCodec,
    tile: &[u8],
    expected_len: u64,
    wanted: &[Range<u64>],
    buf: &mut Vec<u8>,
    f: impl FnMut(u64, &[u8]),
) -> Result<()> {
    let framed = FramedTile::parse(tile)?;
    check_len("tile", expected_len, framed.orig_len())?;
    each_wanted_chunk(codec, &framed, wanted, buf, f)
}

/// The loop of [`decode_tile_chunks_with`] over an already parsed tile.
fn each_wanted_chunk(
    codec: &PipelineCodec,
    framed: &FramedTile<&[u8]>,
    wanted: &[Range<u64>],
    buf: &mut Vec<u8>,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<()> {
    let mut scratch = Scratch::default();
    for c in wanted_chunks(framed, wanted) {
        let start = c.info.orig_offset;
        if codec.is_empty() && c.metadata.is_empty() && c.data.len() == c.info.orig_len as usize {
            f(start, c.data);
            continue;
        }
        buf.clear();
        decode_one(codec, c.info, c.metadata, c.data, buf, &mut scratch)?;
        f(start, buf);
    }
    Ok(())
}

/// The chunks of `framed` whose unfiltered bytes overlap `wanted` (sorted by start), in
/// order.
fn wanted_chunks<'t, B: AsRef<[u8]>>(
    framed: &'t FramedTile<B>,
    wanted: &[Range<u64>],
) -> Vec<Chunk<'t>> {
    let mut picked = Vec::new();
    let mut w = 0;
    for c in framed.iter() {
        let range = c.info.orig_range();
        while w < wanted.len() && wanted[w].end <= range.start {
            w += 1;
        }
        if w == wanted.len() {
            break;
        }
        if wanted[w].start < range.end && range.start < range.end {
            picked.push(c);
        }
    }
    picked
}

/// Appends each chunk of an already parsed tile to `out`, one after the other.
fn decode_framed_sequential_into<B: AsRef<[u8]>>(
    codec: &PipelineCodec,
    framed: &FramedTile<B>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut scratch = Scratch::default();
    for c in framed.iter() {
        decode_one(codec, c.info, c.metadata, c.data, out, &mut scratch)?;
    }
    Ok(())
}

/// Decodes an already parsed tile into a new vector (see [`decode_tile`]).
///
/// # Errors
/// As [`decode_tile`].
pub fn decode_framed<B: AsRef<[u8]>>(
    codec: &PipelineCodec,
    framed: &FramedTile<B>,
) -> Result<Vec<u8>> {
    let total = framed.orig_len();
    if framed.num_chunks() == 1 {
        // One chunk: the pipeline appends straight into the output, nothing to copy.
        let mut out = try_alloc(reservation(framed), "unfiltered tile")?;
        if let Some(c) = framed.chunk(0) {
            decode_one(codec, c.info, c.metadata, c.data, &mut out, &mut Scratch::default())?;
        }
        return Ok(out);
    }
    if codec.is_empty() {
        // Unfiltered chunks: appended one after the other, without zeroing a buffer first.
        let mut out = try_alloc(reservation(framed), "unfiltered tile")?;
        let mut scratch = Scratch::default();
        for c in framed.iter() {
            decode_one(codec, c.info, c.metadata, c.data, &mut out, &mut scratch)?;
        }
        return Ok(out);
    }
    if reservation(framed) < total {
        // More than the chunks' bytes plausibly hold: each chunk decodes into a buffer that
        // grows with what it yields, and the output is made once every chunk has its size.
        let chunks: Vec<_> = framed.iter().collect();
        // Every chunk's outcome, so that an error names the first bad chunk whichever worker
        // finished first.
        let parts = chunks
            .par_iter()
            .map(|c| {
                let mut part = Vec::new();
                decode_one(codec, c.info, c.metadata, c.data, &mut part, &mut Scratch::default())?;
                Ok(part)
            })
            .collect::<Vec<Result<Vec<u8>>>>()
            .into_iter()
            .collect::<Result<Vec<Vec<u8>>>>()?;
        let mut out = try_alloc(total, "unfiltered tile")?;
        for part in &parts {
            out.extend_from_slice(part);
        }
        return Ok(out);
    }
    let mut out = try_zeroed(total, "unfiltered tile")?;
    decode_framed_into(codec, framed, &mut out)?;
    Ok(out)
}

/// Output bytes a tile may reserve before anything is decoded, whatever its chunks announce.
const TRUSTED_RESERVATION: u64 = 64 << 20;

/// Expansion (unfiltered over filtered bytes) up to which an announced size is reserved in
/// full: above deflate's limit (1032), below what RLE or zstd reach on constant data.
const TRUSTED_EXPANSION: u64 = 1024;

/// What a tile's output reserves up front: the unfiltered size its chunks announce, unless
/// that is more than [`TRUSTED_RESERVATION`] and [`TRUSTED_EXPANSION`] times the tile's
/// bytes; then the output grows as the chunks decode, so a forged `orig_len` (4 GiB in a
/// 32-byte tile) costs no memory the data does not yield.
fn reservation<B: AsRef<[u8]>>(framed: &FramedTile<B>) -> u64 {
    let plausible = (framed.layout().framed_len() as u64)
        .saturating_mul(TRUSTED_EXPANSION)
        .max(TRUSTED_RESERVATION);
    framed.orig_len().min(plausible)
}

/// Decodes an already parsed tile into `out`, which must be exactly
/// [`FramedTile::orig_len`] bytes long. Each chunk is decoded (on the rayon pool when there
/// are several) into its own slot of `out`, found from the prefix sums of `orig_len`.
///
/// # Errors
/// [`Error::SizeMismatch`] when `out` has the wrong length; otherwise as [`decode_tile`]
/// (with several failing chunks, the error of the lowest chunk index is returned).
pub fn decode_framed_into<B: AsRef<[u8]>>(
    codec: &PipelineCodec,
    framed: &FramedTile<B>,
    out: &mut [u8],
) -> Result<()> {
    check_len("tile output buffer", out.len() as u64, framed.orig_len())?;
    let mut slots: Vec<&mut [u8]> = Vec::with_capacity(framed.num_chunks());
    let mut rest = out;
    for info in framed.layout().chunks() {
        let (slot, tail) = rest
            .split_at_mut_checked(info.orig_len as usize)
            .ok_or_else(|| Error::InvalidInput("output buffer shorter than the tile".into()))?;
        slots.push(slot);
        rest = tail;
    }
    let chunks: Vec<_> = framed.iter().collect();
    if chunks.len() <= 1 {
        let mut scratch = (Scratch::default(), Vec::new());
        for (c, slot) in chunks.iter().zip(slots) {
            decode_into_slot(codec, c.info, c.metadata, c.data, slot, &mut scratch)?;
        }
        return Ok(());
    }
    let results: Vec<Result<()>> = chunks
        .par_iter()
        .zip(slots.into_par_iter())
        .map_init(
            || (Scratch::default(), Vec::new()),
            |scratch, (c, slot)| decode_into_slot(codec, c.info, c.metadata, c.data, slot, scratch),
        )
        .collect();
    results.into_iter().collect()
}

/// Decodes one chunk into `slot` (exactly `orig_len` bytes), through a per-worker buffer
/// unless the pipeline is empty.
fn decode_into_slot(
    codec: &PipelineCodec,
    info: &ChunkInfo,
    metadata: &[u8],
    data: &[u8],
    slot: &mut [u8],
    (scratch, buf): &mut (Scratch, Vec<u8>),
) -> Result<()> {
    if codec.is_empty() && metadata.is_empty() && data.len() == slot.len() {
        slot.copy_from_slice(data);
        return Ok(());
    }
    buf.clear();
    decode_one(codec, info, metadata, data, buf, scratch)?;
    slot.copy_from_slice(buf);
    Ok(())
}

/// Appends the decoded chunk to `out`, checking it is exactly `orig_len` bytes.
fn decode_one(
    codec: &PipelineCodec,
    info: &ChunkInfo,
    metadata: &[u8],
    data: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
) -> Result<()> {
    let start = out.len();
    codec.decode_chunk_with(metadata, data, out, scratch).map_err(|source| Error::DecodeChunk {
        chunk: info.index,
        offset: info.header_offset as u64,
        source,
    })?;
    let produced = (out.len() - start) as u64;
    if produced != u64::from(info.orig_len) {
        return Err(Error::ChunkLength {
            chunk: info.index,
            offset: info.header_offset as u64,
            expected: u64::from(info.orig_len),
            actual: produced,
        });
    }
    Ok(())
}

/// A decoded var-sized tile: the start offset of every cell (relative to the tile) and the
/// cells' bytes back to back. Cell `i` is `data[offsets[i]..offsets[i + 1]]`, the last one
/// running to the end of `data`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VarTile {
    /// Start offset of each cell, non-decreasing, each at most `data.len()`.
    pub offsets: Vec<u64>,
    /// The cells' bytes.
    pub data: Vec<u8>,
}

impl VarTile {
    /// Number of cells.
    pub fn cell_count(&self) -> usize {
        self.offsets.len()
    }

    /// The bytes of cell `i`, or `None` past the last cell.
    pub fn cell(&self, i: usize) -> Option<&[u8]> {
        let start = usize::try_from(*self.offsets.get(i)?).ok()?;
        let end = match self.offsets.get(i + 1) {
            Some(&e) => usize::try_from(e).ok()?,
            None => self.data.len(),
        };
        self.data.get(start..end)
    }
}

/// Decodes a data tile written on the offset-free string path ([`encode_string_tile`]): the
/// cells' bytes and their offsets both come back from the data tile. libtiledb writes such a
/// tile as exactly one chunk.
///
/// # Errors
/// [`Error::Framing`] for a malformed tile or a chunk count other than one;
/// [`Error::DecodeChunk`] / [`Error::ChunkLength`] for chunk 0; [`Error::Offsets`] when the
/// decoded offsets are inconsistent.
pub fn decode_string_tile(codec: &PipelineCodec, tile: &[u8]) -> Result<VarTile> {
    let framed = FramedTile::parse(tile)?;
    let chunk = match (framed.num_chunks(), framed.chunk(0)) {
        (1, Some(c)) => c,
        (n, _) => {
            return Err(Error::framing(
                None,
                "num_chunks",
                0,
                format!("a string-path data tile has exactly 1 chunk, found {n}"),
            ));
        }
    };
    let mut out = VarTile {
        offsets: Vec::new(),
        data: try_alloc(reservation(&framed), "unfiltered string tile")?,
    };
    let err_at = |source| Error::DecodeChunk { chunk: 0, offset: NUM_CHUNKS_OFFSET, source };
    codec
        .decode_strings(chunk.metadata, chunk.data, &mut out.data, &mut out.offsets)
        .map_err(err_at)?;
    if out.data.len() as u64 != u64::from(chunk.info.orig_len) {
        return Err(Error::ChunkLength {
            chunk: 0,
            offset: NUM_CHUNKS_OFFSET,
            expected: u64::from(chunk.info.orig_len),
            actual: out.data.len() as u64,
        });
    }
    validate_offsets(&out.offsets, out.data.len() as u64, "decoded string tile")?;
    Ok(out)
}

/// Offset of the first chunk header in a tile.
const NUM_CHUNKS_OFFSET: u64 = crate::framing::NUM_CHUNKS_LEN as u64;

/// Reads the offsets of a decoded offsets tile (`u64` little-endian values).
pub(crate) fn offsets_from_bytes(bytes: &[u8]) -> Result<Vec<u64>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(Error::SizeMismatch {
            structure: "offsets tile",
            expected: (bytes.len() as u64).next_multiple_of(8),
            actual: bytes.len() as u64,
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .collect())
}

/// The bytes of `offsets` as an offsets tile holds them.
pub(crate) fn offsets_to_bytes(offsets: &[u64]) -> Vec<u8> {
    offsets.iter().flat_map(|o| o.to_le_bytes()).collect()
}

/// Checks that a parsed layout announces `expected` unfiltered bytes.
pub(crate) fn check_len(structure: &'static str, expected: u64, actual: u64) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::SizeMismatch { structure, expected, actual })
    }
}

/// An empty vector able to hold `len` bytes, or an error instead of an abort.
pub(crate) fn try_alloc(len: u64, what: &'static str) -> Result<Vec<u8>> {
    let n = usize::try_from(len).map_err(|_| Error::Allocation { what, bytes: len })?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::Allocation { what, bytes: len })?;
    Ok(v)
}

/// A zeroed vector of `len` bytes, or an error instead of an abort when it cannot be had.
///
/// The zeroed allocation comes from the allocator's zeroed path (fresh pages for large
/// sizes), so memory a corrupt tile merely announces is not touched: chunk slots are only
/// written once a chunk has decoded to its announced length.
fn try_zeroed(len: u64, what: &'static str) -> Result<Vec<u8>> {
    // Probe first: `vec![0; n]` aborts the process when the allocation fails.
    drop(try_alloc(len, what)?);
    Ok(vec![0u8; len as usize])
}

/// The layout of `tile`, re-exported for the role types.
pub(crate) fn layout_of(tile: &[u8]) -> Result<TileLayout> {
    TileLayout::parse(tile)
}

#[cfg(test)]
mod tests {
    use tessera_filters::{Filter, FilterPipeline};
    use tessera_types::Datatype;

    use super::*;

    /// A tile of one chunk that announces `orig_len` bytes and holds `data`.
    fn forged(orig_len: u32, metadata: &[u8], data: &[u8]) -> Vec<u8> {
        let mut t = 1u64.to_le_bytes().to_vec();
        t.extend_from_slice(&orig_len.to_le_bytes());
        t.extend_from_slice(&(data.len() as u32).to_le_bytes());
        t.extend_from_slice(&(metadata.len() as u32).to_le_bytes());
        t.extend_from_slice(metadata);
        t.extend_from_slice(data);
        t
    }

    #[test]
    fn a_forged_size_reserves_only_what_the_bytes_can_hold() {
        // Found by the `tile` fuzz target: 32 bytes announcing 4 GiB were reserved up front.
        let tile = forged(u32::MAX, &[], &[]);
        let framed = FramedTile::parse(tile.as_slice()).unwrap();
        assert_eq!(framed.orig_len(), u64::from(u32::MAX));
        assert_eq!(reservation(&framed), TRUSTED_RESERVATION);
        let none = FilterPipeline::default().codec(Datatype::UInt8, 1, 22).unwrap();
        let e = decode_tile(&none, &tile).unwrap_err();
        assert!(matches!(e, Error::ChunkLength { chunk: 0, expected: 4294967295, actual: 0, .. }));
        let e = decode_framed_sequential(&none, &framed).unwrap_err();
        assert!(matches!(e, Error::ChunkLength { chunk: 0, .. }), "{e:?}");
    }

    #[test]
    fn chunks_announcing_more_than_they_hold_fail_without_the_whole_output() {
        let zstd =
            FilterPipeline::new(vec![Filter::zstd(1)]).codec(Datatype::UInt8, 1, 22).unwrap();
        let data = vec![7u8; 1000];
        let good = encode_tile(&zstd, &data, Split::Whole).unwrap();
        let info = &FramedTile::parse(good.as_slice()).unwrap();
        let c = info.chunk(0).unwrap();
        // Many chunks, each announcing 4 GiB: far more than 1024 times the tile's bytes.
        let mut tile = 40u64.to_le_bytes().to_vec();
        for _ in 0..40 {
            tile.extend_from_slice(&u32::MAX.to_le_bytes());
            tile.extend_from_slice(&(c.data.len() as u32).to_le_bytes());
            tile.extend_from_slice(&(c.metadata.len() as u32).to_le_bytes());
            tile.extend_from_slice(c.metadata);
            tile.extend_from_slice(c.data);
        }
        let framed = FramedTile::parse(tile.as_slice()).unwrap();
        assert!(reservation(&framed) < framed.orig_len());
        let e = decode_framed(&zstd, &framed).unwrap_err();
        assert!(
            matches!(e, Error::ChunkLength { chunk: 0, expected: 4294967295, actual: 1000, .. }),
            "{e:?}"
        );
        // An honest tile expanding past both limits still decodes, on the same path.
        let zeros = vec![0u8; (TRUSTED_RESERVATION + (1 << 20)) as usize];
        let tile = encode_tile(&zstd, &zeros, Split::Fixed { cell_size: 1 }).unwrap();
        let framed = FramedTile::parse(tile.as_slice()).unwrap();
        assert!(framed.num_chunks() > 1 && reservation(&framed) < framed.orig_len());
        assert_eq!(decode_framed(&zstd, &framed).unwrap(), zeros);
    }

    #[test]
    fn only_the_chunks_holding_wanted_bytes_are_decoded() {
        let zstd =
            FilterPipeline::new(vec![Filter::zstd(1)]).codec(Datatype::Int32, 1, 22).unwrap();
        let data: Vec<u8> = (0..200_000u32).flat_map(|v| (v % 977).to_le_bytes()).collect();
        let tile = encode_tile(&zstd, &data, Split::Fixed { cell_size: 4 }).unwrap();
        let n = data.len() as u64;
        let chunk = 65_536u64;
        for parallel in [false, true] {
            // Bytes in chunks 0, 2 and 3 (a range across the 2 | 3 boundary), and the last.
            let wanted = [10..20, 2 * chunk + 5..3 * chunk + 7, n - 1..n];
            let mut out = b"kept".to_vec();
            let spans =
                decode_tile_chunks_into(&zstd, &tile, n, &wanted, parallel, &mut out).unwrap();
            let last = (n - 1) / chunk;
            assert_eq!(spans, vec![0..chunk, 2 * chunk..4 * chunk, last * chunk..n]);
            assert_eq!(&out[..4], b"kept");
            let mut at = 4;
            for span in &spans {
                let len = (span.end - span.start) as usize;
                assert!(out[at..at + len] == data[span.start as usize..span.end as usize]);
                at += len;
            }
            assert_eq!(at, out.len());
            // Nothing wanted: nothing decoded.
            let mut none = Vec::new();
            let spans = decode_tile_chunks_into(&zstd, &tile, n, &[], parallel, &mut none);
            assert!(spans.unwrap().is_empty() && none.is_empty());
        }
        // A wrong expected length, and a corrupt chunk among those wanted, fail and leave
        // the output as it was.
        let mut out = b"kept".to_vec();
        let e = decode_tile_chunks_into(
            &zstd,
            &tile,
            n + 4,
            std::slice::from_ref(&(0..1)),
            false,
            &mut out,
        );
        assert!(matches!(e, Err(Error::SizeMismatch { .. })), "{e:?}");
        let mut bad = tile.clone();
        let info = FramedTile::parse(bad.as_slice()).unwrap().layout().chunks()[1].clone();
        bad[info.data.start + 4] ^= 0xFF;
        for parallel in [false, true] {
            let e = decode_tile_chunks_into(
                &zstd,
                &bad,
                n,
                std::slice::from_ref(&(0..n)),
                parallel,
                &mut out,
            );
            assert!(matches!(e, Err(Error::DecodeChunk { chunk: 1, .. })), "{e:?}");
            assert_eq!(out, b"kept");
            // Chunk 1 not wanted: fine.
            let ok = decode_tile_chunks_into(
                &zstd,
                &bad,
                n,
                std::slice::from_ref(&(0..10)),
                parallel,
                &mut out,
            );
            assert_eq!(ok.unwrap(), vec![0..chunk]);
            out.truncate(4);
        }
    }

    #[test]
    fn wanted_chunks_decode_in_place() {
        let zstd =
            FilterPipeline::new(vec![Filter::zstd(1)]).codec(Datatype::Int64, 1, 22).unwrap();
        let data: Vec<u8> = (0..30_000u64).flat_map(|v| (v * 7).to_le_bytes()).collect();
        let tile = encode_tile(&zstd, &data, Split::Fixed { cell_size: 8 }).unwrap();
        let chunk = 65_536usize;
        let mut out = vec![0xEEu8; data.len()];
        let wanted = [70_000..70_008, 200_000..200_001];
        decode_tile_chunks_in_place(&zstd, &tile, &wanted, &mut out).unwrap();
        assert!(out[..chunk].iter().all(|&b| b == 0xEE), "chunk 0 left alone");
        assert!(out[chunk..2 * chunk] == data[chunk..2 * chunk]);
        assert!(out[2 * chunk..3 * chunk].iter().all(|&b| b == 0xEE), "chunk 2 left alone");
        assert!(out[3 * chunk..] == data[3 * chunk..]);
        let mut short = vec![0u8; 10];
        let e = decode_tile_chunks_in_place(&zstd, &tile, &wanted, &mut short).unwrap_err();
        assert!(matches!(e, Error::SizeMismatch { .. }), "{e:?}");
    }
    #[test]
    fn wanted_chunks_are_handed_over_one_by_one() {
        let data: Vec<u8> = (0..30_000u64).flat_map(|v| (v * 7).to_le_bytes()).collect();
        let chunk = 65_536u64;
        let wanted = [70_000..70_008, 200_000..200_001];
        for filters in [vec![Filter::zstd(1)], vec![]] {
            let codec = FilterPipeline::new(filters).codec(Datatype::Int64, 1, 22).unwrap();
            let tile = encode_tile(&codec, &data, Split::Fixed { cell_size: 8 }).unwrap();
            let mut seen = Vec::new();
            let mut buf = Vec::new();
            decode_tile_chunks_with(
                &codec,
                &tile,
                data.len() as u64,
                &wanted,
                &mut buf,
                |at, b| {
                    assert!(b == &data[at as usize..at as usize + b.len()], "chunk at {at}");
                    seen.push(at);
                },
            )
            .unwrap();
            assert_eq!(seen, vec![chunk, 3 * chunk]);
            // Nothing wanted: nothing decoded. A wrong length: an error before any chunk.
            let mut calls = 0;
            decode_tile_chunks_with(&codec, &tile, data.len() as u64, &[], &mut buf, |_, _| {
                calls += 1;
            })
            .unwrap();
            let e = decode_tile_chunks_with(&codec, &tile, 8, &wanted, &mut buf, |_, _| calls += 1);
            assert!(matches!(e, Err(Error::SizeMismatch { .. })), "{e:?}");
            assert_eq!(calls, 0);
        }
        // A corrupt wanted chunk is an error naming it.
        let zstd =
            FilterPipeline::new(vec![Filter::zstd(1)]).codec(Datatype::Int64, 1, 22).unwrap();
        let mut bad = encode_tile(&zstd, &data, Split::Fixed { cell_size: 8 }).unwrap();
        let info = FramedTile::parse(bad.as_slice()).unwrap().layout().chunks()[1].clone();
        bad[info.data.start + 4] ^= 0xFF;
        let mut buf = Vec::new();
        let e =
            decode_tile_chunks_with(&zstd, &bad, data.len() as u64, &wanted, &mut buf, |_, _| {});
        assert!(matches!(e, Err(Error::DecodeChunk { chunk: 1, .. })), "{e:?}");
    }
}
