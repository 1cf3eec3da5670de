//! How libtiledb 2.30 cuts a tile into chunks before filtering (`docs/format/filters.md`,
//! "Chunking").
//!
//! Three regimes exist:
//! * fixed-size cells: chunks of `compute_chunk_size(tile, cell)` bytes plus a remainder;
//! * var-sized data tiles: chunks end on cell boundaries found from the offsets, allowing a
//!   chunk to grow to 1.5× the chunk size and giving a cell bigger than a chunk its own chunk;
//! * no chunking: the whole tile is one chunk (pipeline `max_chunk_size` 0, a WebP filter, or
//!   the RLE/DICTIONARY string path).
//!
//! The cut points are computed once per tile; the filters then run per chunk.

use std::ops::Range;

use tessera_filters::FilterPipeline;
use tessera_types::{Datatype, FilterType, MAX_TILE_CHUNK_SIZE};

use crate::{Error, Result};

/// How a tile is cut into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split<'a> {
    /// One chunk holding the whole tile (no chunking).
    Whole,
    /// Fixed-size cells of `cell_size` bytes (type size × cell_val_num; 8 for offsets tiles,
    /// 1 for validity and generic tiles).
    Fixed {
        /// Bytes per cell.
        cell_size: u64,
    },
    /// A var-sized data tile whose cells start at `offsets` (relative to the tile).
    Var {
        /// Start offset of every cell, non-decreasing, each at most the tile length.
        offsets: &'a [u64],
        /// The datatype's size (the tile's cell size as libtiledb records it).
        cell_size: u64,
    },
}

impl Split<'_> {
    /// The byte ranges of the chunks of a tile of `tile_len` bytes, in order. Together they
    /// cover the tile exactly; see the module documentation for the rules.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a zero cell size or a chunk longer than `u32::MAX`;
    /// [`Error::Offsets`] for offsets that decrease or point past the tile.
    pub fn chunk_ranges(&self, tile_len: usize) -> Result<Vec<Range<usize>>> {
        match *self {
            Split::Whole => {
                check_u32_chunk(tile_len as u64)?;
                Ok(std::iter::once(0..tile_len).collect())
            }
            Split::Fixed { cell_size } => fixed_chunk_ranges(tile_len, cell_size),
            Split::Var { offsets, cell_size } => var_chunk_ranges(tile_len, offsets, cell_size),
        }
    }
}

/// The chunk size libtiledb uses for a tile of `tile_size` bytes with `cell_size`-byte cells:
/// `max(cell_size, floor(min(65536, tile_size) / cell_size) * cell_size)`.
///
/// ```
/// assert_eq!(tessera_tile::compute_chunk_size(160_000, 4).unwrap(), 65536);
/// assert_eq!(tessera_tile::compute_chunk_size(240_000, 12).unwrap(), 65532);
/// assert_eq!(tessera_tile::compute_chunk_size(100, 12).unwrap(), 96);
/// ```
///
/// # Errors
/// [`Error::InvalidInput`] when `cell_size` is 0 or the result exceeds `u32::MAX` (a cell
/// larger than 4 GiB).
pub fn compute_chunk_size(tile_size: u64, cell_size: u64) -> Result<u32> {
    if cell_size == 0 {
        return Err(Error::InvalidInput("cell size 0".into()));
    }
    let chunk = (MAX_TILE_CHUNK_SIZE.min(tile_size) / cell_size * cell_size).max(cell_size);
    u32::try_from(chunk).map_err(|_| {
        Error::InvalidInput(format!("chunk size {chunk} (cell size {cell_size}) exceeds u32"))
    })
}

/// Whether libtiledb 2.30 cuts the tiles of a field into chunks (`use_tile_chunking`): not
/// when the pipeline's `max_chunk_size` is 0; not for the var-sized data of a STRING_ASCII or
/// STRING_UTF8 field whose pipeline has RLE (`version >= 12`) or DICTIONARY (`version >= 13`);
/// not when the pipeline has WEBP; otherwise yes.
///
/// `is_var` says whether the *field* is var-sized (libtiledb passes it for the offsets and
/// validity tiles too, where it does not matter because their datatypes are not strings).
/// `version` is the array schema's format version.
pub fn use_tile_chunking(
    pipeline: &FilterPipeline,
    is_var: bool,
    datatype: Datatype,
    version: u32,
) -> bool {
    if pipeline.max_chunk_size == 0 {
        return false;
    }
    if is_var && matches!(datatype, Datatype::StringAscii | Datatype::StringUtf8) {
        // Note: for UTF8 libtiledb tests the same versions as for ASCII here, while the
        // offset-free string path itself starts at version 17 for UTF8.
        let rle = version >= 12 && pipeline.contains(FilterType::Rle);
        let dict = version >= 13 && pipeline.contains(FilterType::Dictionary);
        return !(rle || dict);
    }
    !pipeline.contains(FilterType::Webp)
}

/// The chunks of a tile of fixed-size cells: `n` chunks of [`compute_chunk_size`] bytes and a
/// shorter last one when the tile is not a multiple of it. A tile exactly one chunk long is
/// one chunk; an empty tile has no chunks at all (libtiledb then writes only `num_chunks = 0`).
///
/// # Errors
/// As [`compute_chunk_size`].
pub fn fixed_chunk_ranges(tile_len: usize, cell_size: u64) -> Result<Vec<Range<usize>>> {
    let chunk = compute_chunk_size(tile_len as u64, cell_size)? as usize;
    if tile_len == chunk {
        return Ok(std::iter::once(0..tile_len).collect());
    }
    let full = tile_len / chunk;
    let mut ranges = Vec::with_capacity(full + 1);
    ranges.extend((0..full).map(|i| i * chunk..(i + 1) * chunk));
    if !tile_len.is_multiple_of(chunk) {
        ranges.push(full * chunk..tile_len);
    }
    Ok(ranges)
}

/// The chunks of a var-sized data tile of `tile_len` bytes whose cells start at `offsets`,
/// `cell_size` being the datatype's size.
///
/// With `C` the chunk size, cells are added to the current chunk while it stays within `C`.
/// A cell that would overflow it is still added, closing the chunk after it, when the chunk
/// holds at most `C/2` bytes or would end within `C + C/2`; otherwise a new chunk starts at the
/// cell, and a cell larger than `C` is then a chunk of its own. A tile of exactly `C` bytes
/// (in particular any tile of 64 KiB or less) is one chunk.
///
/// Reproduced quirk: when the *last* cell closes a chunk, libtiledb still opens one more,
/// empty, chunk after it (66 cells of 1000 bytes give chunks of 66000 and 0 bytes).
///
/// # Errors
/// [`Error::Offsets`] when `offsets` decrease or point past `tile_len`;
/// [`Error::InvalidInput`] for a zero `cell_size` or a chunk longer than `u32::MAX`.
pub fn var_chunk_ranges(
    tile_len: usize,
    offsets: &[u64],
    cell_size: u64,
) -> Result<Vec<Range<usize>>> {
    validate_offsets(offsets, tile_len as u64, "var tile input")?;
    let chunk = u64::from(compute_chunk_size(tile_len as u64, cell_size)?);
    let len = tile_len as u64;
    if len == chunk {
        return Ok(std::iter::once(0..tile_len).collect());
    }
    let starts = var_chunk_starts(len, offsets, chunk)?;
    let mut ranges = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(len);
        check_u32_chunk(end - start)?;
        ranges.push(start as usize..end as usize);
    }
    Ok(ranges)
}

/// Start offsets of the var chunks (libtiledb's `get_var_chunk_sizes`), the first being 0.
/// `offsets` must already be validated against `len`.
fn var_chunk_starts(len: u64, offsets: &[u64], chunk: u64) -> Result<Vec<u64>> {
    let min_size = chunk / 2;
    let max_size = chunk + chunk / 2;
    let mut starts = vec![0u64];
    let mut current = 0u64;
    for (c, &start) in offsets.iter().enumerate() {
        let end = offsets.get(c + 1).copied().unwrap_or(len);
        let cell = end - start;
        let grown = current + cell;
        if grown <= chunk {
            current = grown;
        } else if current <= min_size || grown <= max_size {
            check_u32_chunk(grown)?;
            starts.push(end);
            current = 0;
        } else {
            starts.push(start);
            if cell > chunk {
                check_u32_chunk(cell)?;
                if c + 1 != offsets.len() {
                    starts.push(end);
                }
                current = 0;
            } else {
                current = cell;
            }
        }
    }
    Ok(starts)
}

fn check_u32_chunk(len: u64) -> Result<()> {
    if len > u64::from(u32::MAX) {
        return Err(Error::InvalidInput(format!("a chunk of {len} bytes exceeds u32")));
    }
    Ok(())
}

/// Checks that cell offsets are non-decreasing and at most `len`.
pub(crate) fn validate_offsets(offsets: &[u64], len: u64, structure: &'static str) -> Result<()> {
    let mut prev = 0u64;
    for (cell, &value) in offsets.iter().enumerate() {
        if value < prev {
            return Err(Error::Offsets {
                structure,
                cell: cell as u64,
                value,
                reason: format!("smaller than the previous offset {prev}"),
            });
        }
        if value > len {
            return Err(Error::Offsets {
                structure,
                cell: cell as u64,
                value,
                reason: format!("past the end of the {len}-byte data"),
            });
        }
        prev = value;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens(ranges: &[Range<usize>]) -> Vec<usize> {
        ranges.iter().map(ExactSizeIterator::len).collect()
    }

    fn offsets_of(cells: &[u64]) -> (Vec<u64>, usize) {
        let mut offsets = Vec::with_capacity(cells.len());
        let mut at = 0;
        for &c in cells {
            offsets.push(at);
            at += c;
        }
        (offsets, at as usize)
    }

    #[test]
    fn chunk_size_formula() {
        assert_eq!(compute_chunk_size(160_000, 4).unwrap(), 65536);
        assert_eq!(compute_chunk_size(240_000, 12).unwrap(), 65532);
        assert_eq!(compute_chunk_size(1000, 4).unwrap(), 1000);
        assert_eq!(compute_chunk_size(0, 4).unwrap(), 4);
        assert_eq!(compute_chunk_size(10, 100_000).unwrap(), 100_000);
        assert!(compute_chunk_size(10, 0).is_err());
        assert!(compute_chunk_size(10, 1 << 33).is_err());
    }

    #[test]
    fn fixed_verified_examples() {
        // int32 × 40000 (`docs/format/filters.md`, "Chunking"; checked on libtiledb's tiles).
        let r = fixed_chunk_ranges(160_000, 4).unwrap();
        assert_eq!(lens(&r), [65536, 65536, 28928]);
        assert_eq!(r[2], 131_072..160_000);
        // 3 × f32 cells × 20000.
        assert_eq!(lens(&fixed_chunk_ranges(240_000, 12).unwrap()), [65532, 65532, 65532, 43404]);
    }

    #[test]
    fn fixed_edge_cases() {
        assert_eq!(lens(&fixed_chunk_ranges(65536, 1).unwrap()), [65536]);
        assert_eq!(lens(&fixed_chunk_ranges(131_072, 8).unwrap()), [65536, 65536]);
        assert_eq!(lens(&fixed_chunk_ranges(100, 8).unwrap()), [96, 4]);
        assert!(fixed_chunk_ranges(0, 4).unwrap().is_empty());
        assert_eq!(lens(&fixed_chunk_ranges(300_000, 100_000).unwrap()), [100_000; 3]);
    }

    #[test]
    fn var_verified_example() {
        // 1000-byte cells with one 70000-byte cell (`docs/format/filters.md`, "Chunking";
        // checked on libtiledb's tiles).
        let mut cells = vec![1000u64; 100];
        cells.push(70_000);
        cells.extend([1000; 99]);
        let (offsets, len) = offsets_of(&cells);
        let r = var_chunk_ranges(len, &offsets, 1).unwrap();
        assert_eq!(lens(&r), [66000, 34000, 70000, 66000, 33000]);
    }

    #[test]
    fn var_trailing_empty_chunk_quirk() {
        // Checked against libtiledb 2.30: 66 × 1000 bytes give 66000 and an empty chunk.
        let (offsets, len) = offsets_of(&[1000; 66]);
        assert_eq!(lens(&var_chunk_ranges(len, &offsets, 1).unwrap()), [66000, 0]);
        // A big last cell does not add a boundary after itself (also checked).
        let mut cells = vec![1000u64; 40];
        cells.push(70_000);
        let (offsets, len) = offsets_of(&cells);
        assert_eq!(lens(&var_chunk_ranges(len, &offsets, 1).unwrap()), [40000, 70000]);
    }

    #[test]
    fn var_small_and_empty_tiles() {
        let (offsets, len) = offsets_of(&[10, 20, 30]);
        assert_eq!(lens(&var_chunk_ranges(len, &offsets, 1).unwrap()), [60]);
        let (offsets, len) = offsets_of(&[0, 0, 0]);
        assert_eq!(lens(&var_chunk_ranges(len, &offsets, 1).unwrap()), [0]);
        assert_eq!(lens(&var_chunk_ranges(0, &[], 4).unwrap()), [0]);
        // A first cell bigger than a chunk closes the first chunk after it.
        let (offsets, len) = offsets_of(&[200_000, 10]);
        assert_eq!(lens(&var_chunk_ranges(len, &offsets, 1).unwrap()), [200_000, 10]);
    }

    #[test]
    fn var_rejects_bad_offsets() {
        assert!(matches!(
            var_chunk_ranges(10, &[0, 5, 3], 1),
            Err(Error::Offsets { cell: 2, value: 3, .. })
        ));
        assert!(matches!(var_chunk_ranges(10, &[0, 11], 1), Err(Error::Offsets { cell: 1, .. })));
    }

    #[test]
    fn whole() {
        assert_eq!(lens(&Split::Whole.chunk_ranges(200_000).unwrap()), [200_000]);
        assert_eq!(lens(&Split::Whole.chunk_ranges(0).unwrap()), [0]);
    }

    #[test]
    fn chunking_decision() {
        use tessera_filters::Filter;
        let rle = FilterPipeline::new(vec![Filter::Rle { level: -1 }]);
        let dict = FilterPipeline::new(vec![Filter::Dictionary { level: -1 }]);
        let zstd = FilterPipeline::new(vec![Filter::zstd(-1)]);
        assert!(!use_tile_chunking(&rle, true, Datatype::StringAscii, 22));
        assert!(!use_tile_chunking(&dict, true, Datatype::StringUtf8, 22));
        assert!(use_tile_chunking(&dict, true, Datatype::StringAscii, 12));
        assert!(use_tile_chunking(&rle, false, Datatype::StringAscii, 22));
        assert!(use_tile_chunking(&rle, true, Datatype::Int32, 22));
        assert!(use_tile_chunking(&zstd, true, Datatype::StringUtf8, 22));
        let mut off = zstd.clone();
        off.max_chunk_size = 0;
        assert!(!use_tile_chunking(&off, false, Datatype::Int32, 22));
        let webp = FilterPipeline::new(vec![Filter::with_defaults(FilterType::Webp)]);
        assert!(!use_tile_chunking(&webp, false, Datatype::UInt8, 22));
    }
}
