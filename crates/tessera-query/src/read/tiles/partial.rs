//! Partial reads of fixed-size tiles: only the chunks holding the bytes a query wants are
//! decoded ([`load_tile_part`]) or scattered straight into the result ([`scatter_tile`]); for
//! tiles stored without filters in libtiledb's plain chunk layout ([`PlainChunks`]), only
//! those chunks are read.

use std::ops::Range;

use bytes::Bytes;
use tessera_storage::Storage;
use tessera_tile::framing::CHUNK_HEADER_LEN;
use tessera_tile::{PlainChunks, TileCodec};

use super::fetch::{TileJob, read_pooled, tile_error};
use super::locate::Codec;
use crate::{Error, Result};

/// Part of a fixed-size tile (see [`load_tile_part`]): pieces of its unfiltered bytes.
#[derive(Debug)]
pub(crate) struct TilePart {
    /// (first byte in the unfiltered tile, bytes) of each piece, sorted, not overlapping.
    pieces: Vec<(u64, Bytes)>,
}

impl TilePart {
    /// Copies bytes `at..at + dst.len()` of the unfiltered tile into `dst`; `false` when some
    /// of them were not loaded.
    pub(crate) fn copy_to(&self, at: u64, dst: &mut [u8]) -> bool {
        let (mut at, mut dst) = (at, dst);
        let mut i = self.pieces.partition_point(|(start, _)| *start <= at);
        if i == 0 {
            return dst.is_empty();
        }
        i -= 1;
        while !dst.is_empty() {
            let Some((start, bytes)) = self.pieces.get(i) else { return false };
            let Some(off) = at.checked_sub(*start).map(|o| o as usize) else { return false };
            if off >= bytes.len() {
                return false;
            }
            let n = (bytes.len() - off).min(dst.len());
            let (head, tail) = dst.split_at_mut(n);
            head.copy_from_slice(&bytes[off..off + n]);
            dst = tail;
            at += n as u64;
            i += 1;
        }
        true
    }
}

/// Wanted ranges of an unfiltered tile closer than this are read as one.
const PART_READ_GAP: u64 = 64 << 10;

/// Loads the bytes of tile `job` that hold `wanted` (byte ranges of the unfiltered tile,
/// sorted by start and not overlapping): for a filtered tile, only the chunks holding them
/// are decoded (on the rayon pool with `parallel`); for a tile stored without filters, only
/// they are read. A read that needs a few rows of large tiles thus touches a fraction of
/// them. Fixed-size fields without validity only; `None` for others, to be loaded whole.
///
/// # Errors
/// As [`load_tiles`].
pub(crate) fn load_tile_part(
    storage: &dyn Storage,
    job: &TileJob<'_>,
    wanted: &[Range<u64>],
    parallel: bool,
) -> Result<Option<TilePart>> {
    let r = job.reader;
    let Codec::Fixed { codec, cell_size } = &r.codec else { return Ok(None) };
    if r.zipped.is_some() || r.validity.is_some() {
        return Ok(None);
    }
    let t = job.tile;
    let range = r.range_in(&r.data_file, &r.offsets, r.file_size, t)?;
    let expected = tile_bytes(job, *cell_size)?;
    let file = r.data_file.as_str();
    if codec.pipeline_codec().is_empty() {
        return load_plain_part(storage, file, range, expected, wanted);
    }
    let bytes = read_pooled(storage, file, range.clone())?;
    let wanted_bytes: u64 = wanted.iter().map(|w| w.end - w.start).sum();
    let mut buf = crate::read::pool::take(usize::try_from(wanted_bytes.min(expected)).unwrap_or(0));
    let spans = codec
        .decode_chunks_into(&bytes, expected, wanted, parallel, &mut buf)
        .map_err(tile_error(file, t, range.start, bytes.len()))?;
    let data = crate::read::pool::share(buf);
    let mut pieces = Vec::with_capacity(spans.len());
    let mut at = 0usize;
    for span in spans {
        let len = (span.end - span.start) as usize;
        if at + len > data.len() {
            return Err(Error::Corrupt {
                file: file.to_owned(),
                reason: format!("tile {t}: its chunks decoded to fewer bytes than they announce"),
            });
        }
        pieces.push((span.start, data.slice(at..at + len)));
        at += len;
    }
    Ok(Some(TilePart { pieces }))
}

/// The unfiltered bytes of fixed-size tile `job` (`cell_size` bytes a cell): an error, not an
/// overflow, for a cell count no tile can hold.
fn tile_bytes(job: &TileJob<'_>, cell_size: u64) -> Result<u64> {
    job.cells.checked_mul(cell_size).ok_or_else(|| Error::Corrupt {
        file: job.reader.data_file.clone(),
        reason: format!("tile {}: {} cells of {cell_size} bytes overflow", job.tile, job.cells),
    })
}

/// Where a fixed-size tile's values lie, for the readers that take its chunks as they are.
struct FixedTile<'j> {
    codec: &'j TileCodec,
    /// Its unfiltered bytes.
    expected: u64,
    file: &'j str,
    /// Its bytes in `file`.
    range: Range<u64>,
}

/// [`FixedTile`] of tile `job`; `None` for var-sized or nullable fields and zipped
/// coordinates (their chunks are not the values alone).
fn fixed_tile<'j>(job: &TileJob<'j>) -> Result<Option<FixedTile<'j>>> {
    let r = job.reader;
    let Codec::Fixed { codec, cell_size } = &r.codec else { return Ok(None) };
    if r.zipped.is_some() || r.validity.is_some() {
        return Ok(None);
    }
    let expected = tile_bytes(job, *cell_size)?;
    let file = r.data_file.as_str();
    let range = r.range_in(file, &r.offsets, r.file_size, job.tile)?;
    Ok(Some(FixedTile { codec, expected, file, range }))
}

/// Copies bytes of the filtered fixed-size tile `job` into `dsts` ((first byte in the
/// unfiltered tile, destination) pairs, sorted by first byte and not overlapping), decoding
/// only the chunks that hold them, one at a time into a buffer that stays in cache (see
/// [`tessera_tile::decode_tile_chunks_with`]): the decoded tile is never written out whole.
/// A tile stored without filters is read straight into the destinations instead (see
/// [`scatter_plain`]). `false` (nothing copied) for var-sized or nullable fields and zipped
/// coordinates, which other paths handle better.
///
/// # Errors
/// As [`load_tiles`]; [`Error::Corrupt`] when the chunks do not cover every destination.
pub(crate) fn scatter_tile(
    storage: &dyn Storage,
    job: &TileJob<'_>,
    dsts: &mut [(u64, &mut [u8])],
) -> Result<bool> {
    let Some(FixedTile { codec, expected, file, range }) = fixed_tile(job)? else {
        return Ok(false);
    };
    let t = job.tile;
    if codec.pipeline_codec().is_empty() {
        return scatter_plain(storage, file, range, expected, dsts);
    }
    let bytes = read_pooled(storage, file, range.clone())?;
    let wanted: Vec<Range<u64>> =
        dsts.iter().map(|(at, dst)| *at..*at + dst.len() as u64).collect();
    let total: u64 = wanted.iter().map(|w| w.end - w.start).sum();
    let (mut copied, mut first) = (0u64, 0usize);
    let mut buf = Vec::new();
    let copy = |start: u64, chunk: &[u8]| {
        let end = start + chunk.len() as u64;
        while first < dsts.len() && wanted[first].end <= start {
            first += 1;
        }
        for ((at, dst), w) in dsts[first..].iter_mut().zip(&wanted[first..]) {
            if w.start >= end {
                break;
            }
            let (lo, hi) = (start.max(w.start), end.min(w.end));
            if lo < hi {
                let into = (lo - *at) as usize..(hi - *at) as usize;
                dst[into].copy_from_slice(&chunk[(lo - start) as usize..(hi - start) as usize]);
                copied += hi - lo;
            }
        }
    };
    codec.decode_chunks_with(&bytes, expected, &wanted, &mut buf, copy).map_err(tile_error(
        file,
        t,
        range.start,
        bytes.len(),
    ))?;
    if copied != total {
        return Err(Error::Corrupt {
            file: file.to_owned(),
            reason: format!("tile {t}: its chunks hold {copied} of the {total} bytes asked of it"),
        });
    }
    Ok(true)
}

/// Hands the unfiltered bytes of fixed-size tile `job` to `f` chunk by chunk, in order, each
/// with the byte of the unfiltered tile where it starts: filtered chunks decoded one at a
/// time into `buf`, which stays in the CPU's cache, chunks stored without filters handed
/// over from the bytes read. For scans that consume a tile once, front to back (aggregates):
/// the decoded tile is never written out whole and read back. `false` (nothing read) for
/// var-sized or nullable fields and zipped coordinates.
///
/// # Errors
/// As [`load_tiles`]; [`Error::Corrupt`] when the chunks do not cover the tile.
pub(crate) fn each_chunk(
    storage: &dyn Storage,
    job: &TileJob<'_>,
    buf: &mut Vec<u8>,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<bool> {
    let Some(FixedTile { codec, expected, file, range }) = fixed_tile(job)? else {
        return Ok(false);
    };
    let t = job.tile;
    let bytes = read_pooled(storage, file, range.clone())?;
    let mut next = 0u64;
    let mut gap = false;
    let each = |start: u64, chunk: &[u8]| {
        gap |= start != next;
        next = start + chunk.len() as u64;
        if !gap {
            f(start, chunk);
        }
    };
    codec
        .decode_chunks_with(&bytes, expected, std::slice::from_ref(&(0..expected)), buf, each)
        .map_err(tile_error(file, t, range.start, bytes.len()))?;
    if gap || next != expected {
        return Err(Error::Corrupt {
            file: file.to_owned(),
            reason: format!("tile {t}: its chunks do not cover its {expected} bytes in order"),
        });
    }
    Ok(true)
}

/// [`scatter_tile`] for a tile stored without filters (bytes `range` of `file`, `expected`
/// bytes unfiltered) whose destinations cover it whole: when its chunks are laid out as
/// libtiledb writes them (see [`PlainChunks`]), one vectored read places the chunk headers
/// in a small buffer and every byte of data straight into its destination, so the tile is
/// never copied twice, and every header is then checked. `false` (nothing read) for other
/// layouts and for destinations that leave part of the tile out.
///
/// # Errors
/// As [`load_tiles`]; [`Error::Corrupt`] when a chunk header is not that of a plain chunk.
fn scatter_plain(
    storage: &dyn Storage,
    file: &str,
    range: Range<u64>,
    expected: u64,
    dsts: &mut [(u64, &mut [u8])],
) -> Result<bool> {
    let mut next = 0u64;
    for (at, dst) in dsts.iter() {
        if *at != next {
            return Ok(false);
        }
        next += dst.len() as u64;
    }
    if next != expected {
        return Ok(false);
    }
    let Some(plain) = plain_layout(storage, file, &range, expected)? else {
        return Ok(false);
    };
    let count = plain.count();
    let header = CHUNK_HEADER_LEN;
    let mut headers = vec![0u8; usize::try_from(count).unwrap_or(0) * header];
    let mut bufs: Vec<&mut [u8]> = Vec::with_capacity(headers.len() / header + dsts.len() * 2);
    let mut heads = headers.chunks_exact_mut(header);
    let mut pieces = dsts.iter_mut().map(|(_, dst)| &mut **dst);
    let mut piece: &mut [u8] = &mut [];
    for k in 0..count {
        bufs.push(heads.next().unwrap_or_default());
        // The chunk's bytes, taken from the destinations in order.
        let mut left = plain.chunk_len(k) as usize;
        while left > 0 {
            if piece.is_empty() {
                // The destinations hold `expected` bytes, as many as the chunks.
                let Some(more) = pieces.next() else { return Ok(false) };
                piece = more;
            }
            let n = left.min(piece.len());
            let (head, tail) = std::mem::take(&mut piece).split_at_mut(n);
            bufs.push(head);
            piece = tail;
            left -= n;
        }
    }
    storage
        .read_range_scatter(file, range.start + plain.chunk_offset(0), &mut bufs)
        .map_err(|e| crate::fragment::removed_or(e, file))?;
    drop(bufs);
    for (k, head) in (0..count).zip(headers.chunks_exact(header)) {
        if !plain.is_chunk_header(k, head) {
            return Err(plain_chunk_error(file, range.start, k));
        }
    }
    Ok(true)
}

/// The plain chunk layout (see [`PlainChunks`]) of the tile stored without filters at bytes
/// `range` of `file` (`expected` bytes of data), read from its first chunk header; `None` for
/// any other layout.
fn plain_layout(
    storage: &dyn Storage,
    file: &str,
    range: &Range<u64>,
    expected: u64,
) -> Result<Option<PlainChunks>> {
    let framed_len = range.end - range.start;
    if framed_len < PlainChunks::PROBE_LEN || expected == 0 {
        return Ok(None);
    }
    let head = storage
        .read_range(file, range.start..range.start + PlainChunks::PROBE_LEN)
        .map_err(|e| crate::fragment::removed_or(e, file))?;
    Ok(PlainChunks::probe(&head, framed_len, expected))
}

/// Chunk `k` of the unfiltered tile at byte `start` of `file` has a header that is not that
/// of a plain chunk.
fn plain_chunk_error(file: &str, start: u64, k: u64) -> Error {
    Error::Corrupt {
        file: file.to_owned(),
        reason: format!(
            "unfiltered tile at byte {start}: chunk {k} does not have the header of a plain chunk"
        ),
    }
}

/// [`load_tile_part`] for a tile stored without filters (bytes `range` of `file`, `expected`
/// bytes unfiltered). When its chunks are laid out as libtiledb writes them (a chunk count,
/// then chunks of one size but the last, each a header and its bytes, no metadata), only the
/// chunks holding wanted bytes are read (neighbours within [`PART_READ_GAP`] in one read),
/// and every header read is checked; `None` for other layouts.
fn load_plain_part(
    storage: &dyn Storage,
    file: &str,
    range: Range<u64>,
    expected: u64,
    wanted: &[Range<u64>],
) -> Result<Option<TilePart>> {
    let Some(plain) = plain_layout(storage, file, &range, expected)? else {
        return Ok(None);
    };
    let mut pieces = Vec::new();
    each_plain_chunk(storage, file, &range, plain, expected, wanted, u64::MAX, |at, bytes| {
        pieces.push((at, bytes));
    })?;
    Ok(Some(TilePart { pieces }))
}

/// Hands `f` the chunks (first unfiltered byte, bytes) of the tile stored without filters in
/// the plain chunk layout `plain` at bytes `range` of `file` (`expected` bytes unfiltered)
/// that hold bytes of `wanted` (sorted, not overlapping): chunks of neighbouring wanted
/// ranges (within [`PART_READ_GAP`]) are read together, up to `max_read` bytes at a time,
/// and every header read is checked.
#[allow(clippy::too_many_arguments)]
fn each_plain_chunk(
    storage: &dyn Storage,
    file: &str,
    range: &Range<u64>,
    plain: PlainChunks,
    expected: u64,
    wanted: &[Range<u64>],
    max_read: u64,
    mut f: impl FnMut(u64, Bytes),
) -> Result<()> {
    let (count, size) = (plain.count(), plain.chunk_size());
    // Where chunk `k` starts in the file, and its unfiltered length.
    let chunk_at = |k: u64| range.start + plain.chunk_offset(k);
    let chunk_len = |k: u64| plain.chunk_len(k);
    const HEADER: u64 = CHUNK_HEADER_LEN as u64;
    let corrupt = |k: u64| plain_chunk_error(file, range.start, k);
    // Chunks read at once, at most.
    let per_read = (max_read / (size + HEADER)).max(1);
    let mut i = 0;
    while i < wanted.len() {
        let first = wanted[i].start / size;
        let mut end = wanted[i].end;
        i += 1;
        while i < wanted.len() && wanted[i].start <= end + PART_READ_GAP {
            end = end.max(wanted[i].end);
            i += 1;
        }
        if end > expected || first >= count {
            return Err(Error::Corrupt {
                file: file.to_owned(),
                reason: format!("bytes ..{end} asked of a {expected}-byte tile"),
            });
        }
        let last = (end - 1) / size;
        let mut from_k = first;
        while from_k <= last {
            let to_k = last.min(from_k.saturating_add(per_read - 1));
            let from = chunk_at(from_k);
            let bytes =
                read_pooled(storage, file, from..chunk_at(to_k) + HEADER + chunk_len(to_k))?;
            for k in from_k..=to_k {
                let at = (chunk_at(k) - from) as usize;
                let len = chunk_len(k);
                let header = bytes.get(at..at + CHUNK_HEADER_LEN).ok_or_else(|| corrupt(k))?;
                if !plain.is_chunk_header(k, header) {
                    return Err(corrupt(k));
                }
                let data = at + CHUNK_HEADER_LEN;
                if data + len as usize > bytes.len() {
                    return Err(corrupt(k));
                }
                f(k * size, bytes.slice(data..data + len as usize));
            }
            from_k = to_k + 1;
        }
    }
    Ok(())
}

/// Reads of a tile stored without filters made by [`gather_part`] take at most this many
/// bytes (the chunks of a batch's cells spread over a whole tile are read a few at a time).
const GATHER_READ_BYTES: u64 = 1 << 20;

/// One part of a tile (its values, offsets, var-sized bytes or validity): bytes `range` of
/// `file`, decoded by `codec` to `expected` bytes; `tile` is its index, for errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileFile<'a> {
    pub(crate) file: &'a str,
    pub(crate) tile: u64,
    pub(crate) range: &'a Range<u64>,
    pub(crate) codec: &'a TileCodec,
    pub(crate) expected: u64,
    /// Whether the part's chunks are cut at cell boundaries (var-sized bytes): their sizes
    /// differ, so they are never read as the plain chunk layout.
    pub(crate) var_chunks: bool,
}

/// Appends to `out` the bytes `wanted` (byte ranges of the unfiltered part, sorted, not
/// overlapping) of one part of a tile, one range after the other: only the chunks holding
/// them are decoded, one at a time into a chunk-sized buffer, so that what this holds is the
/// bytes wanted, the chunk being decoded and the compressed part (for a part stored without
/// filters in the plain chunk layout, only the chunks holding them are read, about
/// [`GATHER_READ_BYTES`] at a time). Any part of any field, unlike [`load_tile_part`]: a
/// budgeted read of nullable or var-sized fields loads each part this way.
///
/// # Errors
/// As [`load_tiles`]; [`Error::Corrupt`] for wanted bytes past the part's end or that its
/// chunks do not hold (`out` then holds what it held before).
pub(crate) fn gather_part(
    storage: &dyn Storage,
    part: TileFile<'_>,
    wanted: &[Range<u64>],
    out: &mut Vec<u8>,
) -> Result<()> {
    let TileFile { file, tile, range, codec, expected, var_chunks } = part;
    let total: u64 = wanted.iter().map(|w| w.end.saturating_sub(w.start)).sum();
    if total == 0 {
        return Ok(());
    }
    let corrupt = |reason: String| Error::Corrupt { file: file.to_owned(), reason };
    if let Some(w) = wanted.last()
        && w.end > expected
    {
        return Err(corrupt(format!(
            "tile {tile}: bytes ..{} asked of a {expected}-byte tile",
            w.end
        )));
    }
    let start = out.len();
    let len = usize::try_from(total).ok().filter(|&n| out.try_reserve(n).is_ok());
    let Some(len) = len else {
        return Err(corrupt(format!("tile {tile}: {total} bytes cannot be held")));
    };
    out.resize(start + len, 0);
    // Where each wanted range goes in `out`.
    let mut bases = Vec::with_capacity(wanted.len());
    let mut at = start;
    for w in wanted {
        bases.push(at);
        at += (w.end - w.start) as usize;
    }
    let (mut copied, mut first) = (0u64, 0usize);
    let dst = out.as_mut_slice();
    let mut copy = |chunk_start: u64, chunk: &[u8]| {
        let chunk_end = chunk_start + chunk.len() as u64;
        while first < wanted.len() && wanted[first].end <= chunk_start {
            first += 1;
        }
        for (w, &base) in wanted[first..].iter().zip(&bases[first..]) {
            if w.start >= chunk_end {
                break;
            }
            let (lo, hi) = (chunk_start.max(w.start), chunk_end.min(w.end));
            if lo < hi {
                let to = base + (lo - w.start) as usize;
                dst[to..to + (hi - lo) as usize].copy_from_slice(
                    &chunk[(lo - chunk_start) as usize..(hi - chunk_start) as usize],
                );
                copied += hi - lo;
            }
        }
    };
    let result =
        (|| {
            if codec.pipeline_codec().is_empty()
                && !var_chunks
                && let Some(plain) = plain_layout(storage, file, range, expected)?
            {
                let each = |at: u64, bytes: Bytes| copy(at, &bytes);
                return each_plain_chunk(
                    storage,
                    file,
                    range,
                    plain,
                    expected,
                    wanted,
                    GATHER_READ_BYTES,
                    each,
                );
            }
            let bytes = read_pooled(storage, file, range.clone())?;
            let mut buf = Vec::new();
            codec
                .decode_chunks_with(&bytes, expected, wanted, &mut buf, &mut copy)
                .map_err(tile_error(file, tile, range.start, bytes.len()))
        })();
    if let Err(e) = result {
        out.truncate(start);
        return Err(e);
    }
    if copied != total {
        out.truncate(start);
        return Err(corrupt(format!(
            "tile {tile}: its chunks hold {copied} of the {total} bytes asked of it"
        )));
    }
    Ok(())
}
