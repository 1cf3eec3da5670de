//! The chunk framing of a filtered tile (`docs/format/filters.md`, "Chunk framing"):
//!
//! ```text
//! u64 num_chunks
//! num_chunks × { u32 orig_len, u32 filtered_len, u32 metadata_len,
//!                u8[metadata_len] metadata, u8[filtered_len] data }
//! ```
//!
//! Every data-file tile and every generic-tile payload has this form. Parsing only records
//! where each chunk's metadata and data are; the bytes are never copied.

use std::ops::Range;

use bytes::Bytes;

use crate::{Error, Result};

/// Bytes of the leading `u64 num_chunks`.
pub const NUM_CHUNKS_LEN: usize = 8;

/// Bytes of a chunk's three `u32` length fields.
pub const CHUNK_HEADER_LEN: usize = 12;

/// The offsets tile written for a var-sized string field on the offset-free RLE/DICTIONARY
/// path: `num_chunks = 0` and nothing else.
pub const STRING_PATH_OFFSETS_TILE: [u8; 8] = [0; 8];

/// Where one chunk of a filtered tile is, and how long it is unfiltered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Position of the chunk in the tile, from 0.
    pub index: usize,
    /// Byte offset of the chunk's `orig_len` field within the tile.
    pub header_offset: usize,
    /// Byte offset of the chunk's unfiltered bytes within the unfiltered tile (the sum of the
    /// previous chunks' `orig_len`).
    pub orig_offset: u64,
    /// Unfiltered length of the chunk.
    pub orig_len: u32,
    /// Byte range of the chunk metadata within the tile.
    pub metadata: Range<usize>,
    /// Byte range of the filtered chunk data within the tile.
    pub data: Range<usize>,
}

impl ChunkInfo {
    /// The `filtered_len` field: bytes of filtered data.
    pub fn filtered_len(&self) -> usize {
        self.data.len()
    }

    /// The `metadata_len` field: bytes of chunk metadata.
    pub fn metadata_len(&self) -> usize {
        self.metadata.len()
    }

    /// Byte range of the chunk in the unfiltered tile.
    pub fn orig_range(&self) -> Range<u64> {
        self.orig_offset..self.orig_offset + u64::from(self.orig_len)
    }
}

/// The chunk layout of a filtered tile: every chunk's position and unfiltered length, with
/// all lengths checked against the tile's bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TileLayout {
    chunks: Vec<ChunkInfo>,
    orig_len: u64,
    framed_len: usize,
}

impl TileLayout {
    /// Parses the framing of `tile`, which must be exactly one filtered tile.
    ///
    /// Nothing is allocated before `num_chunks` is known to fit in the bytes (each chunk
    /// takes at least 12).
    ///
    /// # Errors
    /// [`Error::Framing`] naming the chunk, the field and its offset within `tile` when a
    /// field is truncated, a length runs past the end, `num_chunks` cannot fit, or bytes
    /// are left after the last chunk.
    pub fn parse(tile: &[u8]) -> Result<Self> {
        let len = tile.len();
        let num_chunks = read_u64(tile, 0).ok_or_else(|| {
            Error::framing(None, "num_chunks", 0, format!("needs 8 bytes, the tile has {len}"))
        })?;
        let mut pos = NUM_CHUNKS_LEN;
        let room = ((len - pos) / CHUNK_HEADER_LEN) as u64;
        if num_chunks > room {
            return Err(Error::framing(
                None,
                "num_chunks",
                0,
                format!(
                    "{num_chunks} chunks cannot fit in the {} bytes that follow (at most {room})",
                    len - pos
                ),
            ));
        }
        let mut chunks = Vec::with_capacity(num_chunks as usize);
        let mut orig_offset = 0u64;
        for index in 0..num_chunks as usize {
            let chunk = Some(index as u64);
            let header_offset = pos;
            let field = |name: &'static str, at: usize| {
                read_u32(tile, at).ok_or_else(|| {
                    Error::framing(chunk, name, at, format!("needs 4 bytes, {} left", len - at))
                })
            };
            let orig_len = field("orig_len", pos)?;
            let filtered_len = field("filtered_len", pos + 4)? as usize;
            let metadata_len = field("metadata_len", pos + 8)? as usize;
            pos += CHUNK_HEADER_LEN;
            let metadata = take(tile, pos, metadata_len, chunk, "metadata")?;
            pos = metadata.end;
            let data = take(tile, pos, filtered_len, chunk, "data")?;
            pos = data.end;
            chunks.push(ChunkInfo { index, header_offset, orig_offset, orig_len, metadata, data });
            orig_offset += u64::from(orig_len);
        }
        if pos != len {
            return Err(Error::framing(
                None,
                "end of tile",
                pos,
                format!("{} bytes left after the last chunk", len - pos),
            ));
        }
        Ok(TileLayout { chunks, orig_len: orig_offset, framed_len: len })
    }

    /// The chunks, in order.
    pub fn chunks(&self) -> &[ChunkInfo] {
        &self.chunks
    }

    /// Number of chunks.
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The unfiltered tile length: the sum of every chunk's `orig_len`.
    pub fn orig_len(&self) -> u64 {
        self.orig_len
    }

    /// Length of the filtered tile that was parsed.
    pub fn framed_len(&self) -> usize {
        self.framed_len
    }
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

fn take(
    tile: &[u8],
    pos: usize,
    n: usize,
    chunk: Option<u64>,
    field: &'static str,
) -> Result<Range<usize>> {
    let left = tile.len() - pos;
    if n > left {
        return Err(Error::framing(chunk, field, pos, format!("needs {n} bytes, {left} left")));
    }
    Ok(pos..pos + n)
}

/// One chunk of a parsed tile, borrowed from the tile's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// Where the chunk is.
    pub info: &'a ChunkInfo,
    /// The chunk metadata.
    pub metadata: &'a [u8],
    /// The filtered chunk data.
    pub data: &'a [u8],
}

/// A filtered tile together with its parsed [`TileLayout`]; `B` is the tile's storage, a
/// `&[u8]`, a `Vec<u8>` or a [`Bytes`] (whose chunks can then be handed out as `Bytes`
/// without copying).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramedTile<B> {
    bytes: B,
    layout: TileLayout,
}

impl<B: AsRef<[u8]>> FramedTile<B> {
    /// Parses the framing of `bytes` (see [`TileLayout::parse`]).
    ///
    /// # Errors
    /// As [`TileLayout::parse`].
    pub fn parse(bytes: B) -> Result<Self> {
        let layout = TileLayout::parse(bytes.as_ref())?;
        Ok(FramedTile { bytes, layout })
    }

    /// The chunk layout.
    pub fn layout(&self) -> &TileLayout {
        &self.layout
    }

    /// Number of chunks.
    pub fn num_chunks(&self) -> usize {
        self.layout.num_chunks()
    }

    /// The unfiltered tile length.
    pub fn orig_len(&self) -> u64 {
        self.layout.orig_len()
    }

    /// Chunk `index` with its metadata and data, or `None` past the last chunk.
    pub fn chunk(&self, index: usize) -> Option<Chunk<'_>> {
        let info = self.layout.chunks.get(index)?;
        let bytes = self.bytes.as_ref();
        Some(Chunk {
            info,
            metadata: bytes.get(info.metadata.clone()).unwrap_or_default(),
            data: bytes.get(info.data.clone()).unwrap_or_default(),
        })
    }

    /// Every chunk, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Chunk<'_>> + '_ {
        let bytes = self.bytes.as_ref();
        self.layout.chunks.iter().map(move |info| Chunk {
            info,
            metadata: bytes.get(info.metadata.clone()).unwrap_or_default(),
            data: bytes.get(info.data.clone()).unwrap_or_default(),
        })
    }

    /// The filtered tile's bytes.
    pub fn bytes(&self) -> &B {
        &self.bytes
    }

    /// The storage and the layout, taken apart.
    pub fn into_parts(self) -> (B, TileLayout) {
        (self.bytes, self.layout)
    }
}

impl FramedTile<Bytes> {
    /// Chunk `index`'s metadata as a [`Bytes`] sharing the tile's storage.
    pub fn metadata_bytes(&self, index: usize) -> Option<Bytes> {
        let info = self.layout.chunks.get(index)?;
        Some(self.bytes.slice(info.metadata.clone()))
    }

    /// Chunk `index`'s filtered data as a [`Bytes`] sharing the tile's storage.
    pub fn data_bytes(&self, index: usize) -> Option<Bytes> {
        let info = self.layout.chunks.get(index)?;
        Some(self.bytes.slice(info.data.clone()))
    }
}

/// The chunks of a tile stored without filters as libtiledb lays them out: `count` chunks of
/// `chunk_size` unfiltered bytes (the last one shorter), each a header whose unfiltered and
/// filtered lengths are equal and whose metadata is empty, then its bytes. Knowing this from
/// the first chunk header alone lets a reader fetch or scatter single chunks of a large
/// unfiltered tile without reading the rest; every header it then reads is checked with
/// [`Self::is_chunk_header`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainChunks {
    count: u64,
    chunk_size: u64,
    len: u64,
}

impl PlainChunks {
    /// Bytes at the start of a tile that [`Self::probe`] looks at: the chunk count and the
    /// first chunk header.
    pub const PROBE_LEN: u64 = (NUM_CHUNKS_LEN + CHUNK_HEADER_LEN) as u64;

    /// The plain layout of a framed tile of `framed_len` bytes that should hold `len` bytes
    /// unfiltered, from its first [`Self::PROBE_LEN`] bytes `head`: the chunk size is the
    /// first chunk's, the count must be the one that size gives for `len`, and the framed
    /// length must be exactly that of such chunks. `None` for any other layout (or an empty
    /// tile), which the caller then decodes the general way.
    pub fn probe(head: &[u8], framed_len: u64, len: u64) -> Option<PlainChunks> {
        if framed_len < Self::PROBE_LEN || len == 0 {
            return None;
        }
        let count = u64::from_le_bytes(head.get(..NUM_CHUNKS_LEN)?.try_into().ok()?);
        let size = head.get(NUM_CHUNKS_LEN..NUM_CHUNKS_LEN + 4)?;
        let chunk_size = u64::from(u32::from_le_bytes(size.try_into().ok()?));
        if chunk_size == 0 || count != len.div_ceil(chunk_size) {
            return None;
        }
        // (A corrupt cell count can make `len`, and so `count`, overflow the sum.)
        let framed = count
            .checked_mul(CHUNK_HEADER_LEN as u64)
            .and_then(|h| h.checked_add(len))
            .and_then(|n| n.checked_add(NUM_CHUNKS_LEN as u64));
        (framed == Some(framed_len)).then_some(PlainChunks { count, chunk_size, len })
    }

    /// The number of chunks.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The unfiltered bytes of every chunk but the last.
    pub fn chunk_size(&self) -> u64 {
        self.chunk_size
    }

    /// Where chunk `k`'s header starts, from the start of the tile (its bytes follow the
    /// header).
    pub fn chunk_offset(&self, k: u64) -> u64 {
        NUM_CHUNKS_LEN as u64 + k * (CHUNK_HEADER_LEN as u64 + self.chunk_size)
    }

    /// The unfiltered (and stored) length of chunk `k < count`.
    pub fn chunk_len(&self, k: u64) -> u64 {
        self.chunk_size.min(self.len - k * self.chunk_size)
    }

    /// Whether `head` is the header chunk `k` must have: both lengths [`Self::chunk_len`],
    /// no metadata.
    pub fn is_chunk_header(&self, k: u64, head: &[u8]) -> bool {
        let field = |j: usize| {
            head.get(j..j + 4)
                .and_then(|b| b.try_into().ok())
                .map(|b| u64::from(u32::from_le_bytes(b)))
        };
        let len = self.chunk_len(k);
        field(0) == Some(len) && field(4) == Some(len) && field(8) == Some(0)
    }
}

/// The content of a tile stored without filters, when its framing lets it be handed out
/// without copying: one chunk without metadata holding exactly `expected` bytes (a slice of
/// `tile`), or no chunk at all when `expected` is 0. `None` for any other framing, to be
/// decoded the general way. Meaningful only for tiles whose pipeline is empty.
///
/// # Errors
/// As [`TileLayout::parse`].
pub fn unfiltered_slice(tile: &Bytes, expected: u64) -> Result<Option<Bytes>> {
    let framed = FramedTile::parse(tile.clone())?;
    if framed.num_chunks() == 1
        && framed.orig_len() == expected
        && let Some(c) = framed.chunk(0)
        && c.metadata.is_empty()
        && c.data.len() as u64 == expected
    {
        return Ok(framed.data_bytes(0));
    }
    if framed.num_chunks() == 0 && expected == 0 {
        return Ok(Some(Bytes::new()));
    }
    Ok(None)
}

/// One chunk to frame: its unfiltered length and the final pipeline stage's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkParts<'a> {
    /// Unfiltered length of the chunk.
    pub orig_len: u64,
    /// Chunk metadata.
    pub metadata: &'a [u8],
    /// Filtered chunk data.
    pub data: &'a [u8],
}

/// Byte length of the framed tile holding `chunks`.
pub fn framed_len(chunks: &[ChunkParts<'_>]) -> usize {
    NUM_CHUNKS_LEN
        + chunks.iter().map(|c| CHUNK_HEADER_LEN + c.metadata.len() + c.data.len()).sum::<usize>()
}

/// Appends the framed tile holding `chunks` to `out`.
///
/// # Errors
/// [`Error::InvalidInput`] when a chunk's unfiltered length, metadata or data exceeds
/// `u32::MAX` bytes (nothing is appended then).
pub fn write_tile(chunks: &[ChunkParts<'_>], out: &mut Vec<u8>) -> Result<()> {
    for (i, c) in chunks.iter().enumerate() {
        for (what, len) in [
            ("unfiltered length", c.orig_len),
            ("metadata", c.metadata.len() as u64),
            ("filtered data", c.data.len() as u64),
        ] {
            if len > u64::from(u32::MAX) {
                return Err(Error::InvalidInput(format!(
                    "chunk {i}: {what} of {len} bytes exceeds u32"
                )));
            }
        }
    }
    out.reserve(framed_len(chunks));
    out.extend_from_slice(&(chunks.len() as u64).to_le_bytes());
    for c in chunks {
        out.extend_from_slice(&(c.orig_len as u32).to_le_bytes());
        out.extend_from_slice(&(c.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(c.metadata.len() as u32).to_le_bytes());
        out.extend_from_slice(c.metadata);
        out.extend_from_slice(c.data);
    }
    Ok(())
}

/// The frame of a tile stored without filters, apart from the tile's bytes: what a writer
/// needs to put the framed tile on disk straight from the unfiltered bytes (headers and chunk
/// data in turn, [`PlainFrame::pieces`]) instead of copying them into a framed buffer first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainFrame {
    /// `u64 num_chunks` and every chunk's header, back to back.
    headers: Vec<u8>,
    /// Each chunk's range in the unfiltered tile.
    chunks: Vec<Range<usize>>,
}

impl PlainFrame {
    /// The frame of a tile cut into `chunks` (ranges covering the tile in order).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for chunks that do not follow one another from byte 0, and for
    /// a chunk longer than `u32::MAX` bytes.
    pub fn new(chunks: Vec<Range<usize>>) -> Result<Self> {
        let mut headers = Vec::with_capacity(NUM_CHUNKS_LEN + CHUNK_HEADER_LEN * chunks.len());
        headers.extend_from_slice(&(chunks.len() as u64).to_le_bytes());
        let mut next = 0;
        for (i, r) in chunks.iter().enumerate() {
            if r.start != next || r.end < r.start {
                return Err(Error::InvalidInput(format!(
                    "chunk {i} covers bytes {}..{} where the tile goes on at byte {next}",
                    r.start, r.end
                )));
            }
            next = r.end;
            let len = u32::try_from(r.len()).map_err(|_| {
                Error::InvalidInput(format!("chunk {i}: {} bytes exceeds u32", r.len()))
            })?;
            headers.extend_from_slice(&len.to_le_bytes());
            headers.extend_from_slice(&len.to_le_bytes());
            headers.extend_from_slice(&0u32.to_le_bytes());
        }
        Ok(PlainFrame { headers, chunks })
    }

    /// Bytes of the framed tile.
    pub fn framed_len(&self) -> usize {
        self.headers.len() + self.chunks.iter().map(Range::len).sum::<usize>()
    }

    /// The framed tile of `tile` as slices in file order: the chunk count and first header,
    /// the first chunk's bytes, the next header, and so on.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `tile` is not as long as the chunks cover.
    pub fn pieces<'a>(&'a self, tile: &'a [u8]) -> Result<Vec<&'a [u8]>> {
        let covered = self.chunks.last().map_or(0, |r| r.end);
        if tile.len() != covered {
            return Err(Error::InvalidInput(format!(
                "a tile of {} bytes for a frame of {covered}",
                tile.len()
            )));
        }
        let mut out = Vec::with_capacity(2 * self.chunks.len() + 1);
        let mut at = 0;
        for (i, r) in self.chunks.iter().enumerate() {
            let end =
                if i == 0 { NUM_CHUNKS_LEN + CHUNK_HEADER_LEN } else { at + CHUNK_HEADER_LEN };
            out.push(&self.headers[at..end]);
            out.push(&tile[r.clone()]);
            at = end;
        }
        if self.chunks.is_empty() {
            out.push(&self.headers[..]);
        }
        Ok(out)
    }
}

/// The framed tile holding `chunks`, as a new vector.
///
/// # Errors
/// As [`write_tile`].
pub fn frame_tile(chunks: &[ChunkParts<'_>]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_tile(chunks, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        frame_tile(&[
            ChunkParts { orig_len: 5, metadata: b"md", data: b"abc" },
            ChunkParts { orig_len: 7, metadata: b"", data: b"defgh" },
        ])
        .unwrap()
    }

    #[test]
    fn plain_frame_pieces_are_the_framed_tile() {
        let tile: Vec<u8> = (0..=250u8).collect();
        for cuts in
            [std::iter::once(0..251).collect(), vec![0..100, 100..200, 200..251], Vec::new()]
        {
            let data = if cuts.is_empty() { &tile[..0] } else { &tile[..] };
            let frame = PlainFrame::new(cuts.clone()).unwrap();
            let joined: Vec<u8> = frame.pieces(data).unwrap().concat();
            let parts: Vec<ChunkParts<'_>> = cuts
                .iter()
                .map(|r| ChunkParts {
                    orig_len: r.len() as u64,
                    metadata: &[],
                    data: &data[r.clone()],
                })
                .collect();
            assert_eq!(joined, frame_tile(&parts).unwrap());
            assert_eq!(frame.framed_len(), joined.len());
        }
        assert!(
            PlainFrame::new(std::iter::once(0..10).collect()).unwrap().pieces(&tile[..9]).is_err()
        );
        // A gap, a start past 0, a chunk that ends before it starts.
        let bad: [Vec<Range<usize>>; 3] = [
            vec![0..10, 11..20],
            vec![Range { start: 5, end: 10 }],
            vec![0..10, Range { start: 10, end: 5 }],
        ];
        for chunks in bad {
            assert!(PlainFrame::new(chunks.clone()).is_err(), "{chunks:?}");
        }
    }

    #[test]
    fn round_trip() {
        let tile = sample();
        assert_eq!(tile.len(), 8 + 12 + 5 + 12 + 5);
        assert_eq!(&tile[..8], &2u64.to_le_bytes());
        let framed = FramedTile::parse(tile.as_slice()).unwrap();
        assert_eq!(framed.num_chunks(), 2);
        assert_eq!(framed.orig_len(), 12);
        let c0 = framed.chunk(0).unwrap();
        assert_eq!((c0.metadata, c0.data), (&b"md"[..], &b"abc"[..]));
        assert_eq!(c0.info.header_offset, 8);
        let c1 = framed.chunk(1).unwrap();
        assert_eq!(c1.info.header_offset, 25);
        assert_eq!(c1.info.orig_range(), 5..12);
        assert_eq!(c1.data, b"defgh");
        assert!(framed.chunk(2).is_none());
        let chunks: Vec<_> = framed
            .iter()
            .map(|c| ChunkParts {
                orig_len: u64::from(c.info.orig_len),
                metadata: c.metadata,
                data: c.data,
            })
            .collect();
        assert_eq!(frame_tile(&chunks).unwrap(), tile);
    }

    #[test]
    fn bytes_slices_share_storage() {
        let tile = Bytes::from(sample());
        let framed = FramedTile::parse(tile.clone()).unwrap();
        let d = framed.data_bytes(1).unwrap();
        assert_eq!(&d[..], b"defgh");
        assert_eq!(d.as_ptr(), tile[framed.layout().chunks()[1].data.start..].as_ptr());
        assert_eq!(&framed.metadata_bytes(0).unwrap()[..], b"md");
    }

    #[test]
    fn empty_and_zero_chunk_tiles() {
        let t = TileLayout::parse(&STRING_PATH_OFFSETS_TILE).unwrap();
        assert_eq!((t.num_chunks(), t.orig_len()), (0, 0));
        let t = frame_tile(&[ChunkParts { orig_len: 0, metadata: &[], data: &[] }]).unwrap();
        assert_eq!(t, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(TileLayout::parse(&t).unwrap().num_chunks(), 1);
    }

    #[test]
    fn exact_errors() {
        let tile = sample();
        // Truncated inside the second chunk's data (starts at 25 + 12 = 37).
        let e = TileLayout::parse(&tile[..40]).unwrap_err();
        assert!(
            matches!(e, Error::Framing { chunk: Some(1), field: "data", offset: 37, .. }),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "tile framing: chunk 1: data at offset 37: needs 5 bytes, 3 left"
        );
        assert_eq!(e.at_offset(1000).offset(), Some(1037));
        // Truncated inside the second chunk's header.
        let e = TileLayout::parse(&tile[..32]).unwrap_err();
        assert!(
            matches!(e, Error::Framing { chunk: Some(1), field: "filtered_len", offset: 29, .. }),
            "{e}"
        );
        // Too short for the announced chunks' headers: caught before reading them.
        let e = TileLayout::parse(&tile[..14]).unwrap_err();
        assert!(matches!(e, Error::Framing { chunk: None, field: "num_chunks", .. }), "{e}");
        // num_chunks too large for the bytes: an error, no allocation.
        let mut bad = tile.clone();
        bad[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = TileLayout::parse(&bad).unwrap_err();
        assert!(matches!(e, Error::Framing { chunk: None, field: "num_chunks", offset: 0, .. }));
        // Metadata length inflated.
        let mut bad = tile.clone();
        bad[16..20].copy_from_slice(&1000u32.to_le_bytes());
        let e = TileLayout::parse(&bad).unwrap_err();
        assert!(matches!(e, Error::Framing { chunk: Some(0), field: "metadata", offset: 20, .. }));
        // Trailing bytes.
        let mut bad = tile.clone();
        bad.push(0);
        let e = TileLayout::parse(&bad).unwrap_err();
        assert!(matches!(e, Error::Framing { field: "end of tile", offset: 42, .. }));
        // Shorter than num_chunks.
        assert!(matches!(
            TileLayout::parse(&[1, 2, 3]),
            Err(Error::Framing { field: "num_chunks", offset: 0, .. })
        ));
    }

    #[test]
    fn never_panics_on_mutations() {
        let tile = sample();
        for cut in 0..tile.len() {
            assert!(TileLayout::parse(&tile[..cut]).is_err());
        }
        for i in 0..tile.len() {
            for bit in 0..8 {
                let mut t = tile.clone();
                t[i] ^= 1 << bit;
                let _ = TileLayout::parse(&t);
            }
        }
    }

    #[test]
    fn plain_chunks_probe_and_headers() {
        // 10 bytes in chunks of 4: 4, 4, 2.
        let data: Vec<u8> = (0..10).collect();
        let parts: Vec<ChunkParts<'_>> = data
            .chunks(4)
            .map(|c| ChunkParts { orig_len: c.len() as u64, metadata: &[], data: c })
            .collect();
        let tile = frame_tile(&parts).unwrap();
        let p = PlainChunks::probe(&tile[..20], tile.len() as u64, 10).unwrap();
        assert_eq!((p.count(), p.chunk_size()), (3, 4));
        assert_eq!(p.chunk_len(2), 2);
        for k in 0..3 {
            let at = p.chunk_offset(k) as usize;
            assert!(p.is_chunk_header(k, &tile[at..at + CHUNK_HEADER_LEN]));
            let n = p.chunk_len(k) as usize;
            let d = at + CHUNK_HEADER_LEN;
            assert_eq!(&tile[d..d + n], &data[k as usize * 4..k as usize * 4 + n]);
        }
        assert!(!p.is_chunk_header(2, &tile[8..20]), "chunk 0's header is not chunk 2's");
        assert_eq!(PlainChunks::probe(&tile[..20], tile.len() as u64 + 1, 10), None);
        assert_eq!(PlainChunks::probe(&tile[..20], tile.len() as u64, 11), None);
        assert_eq!(PlainChunks::probe(&tile[..20], tile.len() as u64, 0), None);
    }

    #[test]
    fn unfiltered_slice_shares_one_plain_chunk() {
        let parts = [ChunkParts { orig_len: 3, metadata: &[], data: b"abc" }];
        let tile = Bytes::from(frame_tile(&parts).unwrap());
        assert_eq!(unfiltered_slice(&tile, 3).unwrap().as_deref(), Some(&b"abc"[..]));
        assert_eq!(unfiltered_slice(&tile, 4).unwrap(), None);
        let empty = Bytes::from_static(&[0; 8]);
        assert_eq!(unfiltered_slice(&empty, 0).unwrap(), Some(Bytes::new()));
        assert!(unfiltered_slice(&Bytes::from_static(&[1]), 0).is_err());
    }
}
