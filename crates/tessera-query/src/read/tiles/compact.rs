//! Compact tiles: only the cells of a fragment tile that a batch wants, one after the other,
//! as a [`DecodedTile`] whose cell `j` is the `j`-th wanted cell ([`CellRanges`] maps tile
//! cells to it). Each part of the tile (values, validity, offsets, var-sized bytes) is
//! decoded from only the chunks holding the wanted cells ([`gather_part`]), so that a budgeted
//! read of a few rows of large tiles holds those rows, not the tiles.
//!
//! A var-sized field is loaded in two steps: its offsets first ([`VarIndex`], eight bytes a
//! cell), which tell how many bytes each cell holds, so that a batch can be cut at its budget
//! before any value is loaded; then the bytes of the cells kept.

use std::ops::Range;

use tessera_storage::Storage;

use super::fetch::{DecodedTile, TileJob, load_tiles_with};
use super::locate::Codec;
use super::partial::{TileFile, gather_part};
use crate::{Error, Result};

/// The cells of one tile a batch wants: sorted cell ranges, neither overlapping nor touching,
/// and where each starts among the wanted cells.
#[derive(Debug, Clone, Default)]
pub(crate) struct CellRanges {
    ranges: Vec<Range<u64>>,
    /// The compact index of each range's first cell.
    bases: Vec<u64>,
    /// Cells in all.
    len: u64,
}

impl CellRanges {
    /// The union of `cells` (ranges of tile cells, in any order, overlapping or not).
    pub(crate) fn new(mut cells: Vec<Range<u64>>) -> Self {
        cells.retain(|c| c.start < c.end);
        let ranges = merge_ranges(cells);
        let mut bases = Vec::with_capacity(ranges.len());
        let mut len = 0;
        for r in &ranges {
            bases.push(len);
            len += r.end - r.start;
        }
        CellRanges { ranges, bases, len }
    }

    /// The whole tile of `n` cells.
    pub(crate) fn whole(n: u64) -> Self {
        CellRanges::new(std::iter::once(0..n).collect())
    }

    /// The ranges, sorted.
    pub(crate) fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Cells in all.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The range holding tile cell `cell`, by index.
    fn range_of(&self, cell: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.start <= cell).checked_sub(1)?;
        (cell < self.ranges[i].end).then_some(i)
    }

    /// The compact index of tile cells `cell..cell + n`, which must lie in one range.
    pub(crate) fn index_of(&self, cell: u64, n: u64) -> Option<u64> {
        let i = self.range_of(cell)?;
        (cell + n <= self.ranges[i].end).then(|| self.bases[i] + cell - self.ranges[i].start)
    }

    /// The byte ranges of the wanted cells in a part of `size`-byte cells.
    fn bytes(&self, size: u64) -> Vec<Range<u64>> {
        self.ranges.iter().map(|r| r.start * size..r.end * size).collect()
    }
}

/// `ranges` sorted, with those that overlap or touch merged into one.
pub(crate) fn merge_ranges(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// The offsets of a var-sized field at some cells of a tile ([`CellRanges`]): for each
/// range, where each of its cells starts in the tile's var-sized bytes and where its last
/// cell ends.
#[derive(Debug)]
pub(crate) struct VarIndex {
    cells: CellRanges,
    /// Per range, the start of each cell and the end of the last (bytes of the tile).
    offsets: Vec<Vec<u64>>,
    /// A tile on the offset-free string path (RLE or dictionary), decoded whole to know
    /// its offsets: its cells of `cells`, compact.
    decoded: Option<DecodedTile>,
}

impl VarIndex {
    /// The offsets of the var-sized tile `job` at `cells`: only the chunks of the offsets
    /// part holding them are decoded (a tile on the string path is decoded whole, and its
    /// cells of `cells` kept).
    ///
    /// # Errors
    /// As [`gather_part`]; [`Error::Corrupt`] for offsets that decrease or point past the
    /// tile's bytes.
    pub(crate) fn load(
        storage: &dyn Storage,
        job: &TileJob<'_>,
        cells: &CellRanges,
    ) -> Result<Self> {
        let r = job.reader;
        let Codec::Var(codec) = &r.codec else {
            return Err(Error::InvalidQuery(format!(
                "{}: offsets asked of a fixed-size field",
                r.data_file
            )));
        };
        if codec.is_string_path() {
            let whole = load_whole(storage, job)?;
            let decoded = extract(&whole, &CellRanges::whole(job.cells), cells, &r.data_file)?;
            let o = whole.offsets.as_deref().unwrap_or_default();
            let offsets = cells
                .ranges
                .iter()
                .map(|c| {
                    let mut v = o[c.start as usize..c.end as usize].to_vec();
                    v.push(o.get(c.end as usize).map_or(whole.data.len() as u64, |&e| e));
                    v
                })
                .collect();
            return Ok(VarIndex { cells: cells.clone(), offsets, decoded: Some(decoded) });
        }
        let t = job.tile;
        let n = job.cells;
        let var_size = var_size(job)?;
        let range = r.range_in(&r.data_file, &r.offsets, r.file_size, t)?;
        // Each range's offsets and the next cell's (its last cell's end), unless the tile ends.
        let wanted: Vec<Range<u64>> =
            cells.ranges.iter().map(|c| c.start * 8..c.end.saturating_add(1).min(n) * 8).collect();
        let part = TileFile {
            file: &r.data_file,
            tile: t,
            range: &range,
            codec: codec.offsets_codec(),
            expected: n * 8,
            var_chunks: false,
        };
        let mut bytes = Vec::new();
        gather_part(storage, part, &wanted, &mut bytes)?;
        let mut words = bytes.chunks_exact(8).map(|c| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_le_bytes(w)
        });
        let mut offsets = Vec::with_capacity(cells.ranges.len());
        for c in &cells.ranges {
            let mut v: Vec<u64> = words.by_ref().take((c.end - c.start) as usize).collect();
            v.push(if c.end < n { words.next().unwrap_or(u64::MAX) } else { var_size });
            // Non-decreasing and within the tile's bytes (each range apart).
            let bad = v
                .windows(2)
                .position(|w| w[0] > w[1])
                .or((v[v.len() - 1] > var_size).then_some(v.len() - 1));
            if let Some(i) = bad {
                return Err(Error::Corrupt {
                    file: r.data_file.clone(),
                    reason: format!(
                        "tile {t}: offsets of cells {}..{} decrease or pass its {var_size} bytes (at cell {})",
                        c.start,
                        c.end,
                        c.start + i as u64
                    ),
                });
            }
            offsets.push(v);
        }
        Ok(VarIndex { cells: cells.clone(), offsets, decoded: None })
    }

    /// The bytes of cells `cell..cell + n` (in one range of the index), `None` when they are
    /// not in it.
    pub(crate) fn bytes(&self, cell: u64, n: u64) -> Option<u64> {
        let span = self.span(cell, n)?;
        Some(span.end - span.start)
    }

    /// Where cells `cell..cell + n` (in one range of the index) lie in the tile's bytes.
    fn span(&self, cell: u64, n: u64) -> Option<Range<u64>> {
        let i = self.cells.range_of(cell)?;
        let c = &self.cells.ranges[i];
        if cell + n > c.end {
            return None;
        }
        let o = &self.offsets[i];
        let k = (cell - c.start) as usize;
        Some(o[k]..o[k + n as usize])
    }
}

/// The var-sized bytes of tile `job` (from the fragment's metadata).
fn var_size(job: &TileJob<'_>) -> Result<u64> {
    let r = job.reader;
    r.var_sizes.get(job.tile as usize).copied().ok_or_else(|| Error::Corrupt {
        file: r.var_file.clone(),
        reason: format!("tile {} has no var size", job.tile),
    })
}

/// Tile `job` decoded whole (for the parts that cannot be decoded in pieces).
fn load_whole(storage: &dyn Storage, job: &TileJob<'_>) -> Result<DecodedTile> {
    let tile = load_tiles_with(storage, &[*job], true)?.pop().ok_or_else(|| Error::Corrupt {
        file: job.reader.data_file.clone(),
        reason: format!("tile {} was not decoded", job.tile),
    })?;
    Ok(std::sync::Arc::unwrap_or_clone(tile))
}

/// The cells `cells` of tile `job`, compact: every part decoded from only the chunks holding
/// them. A var-sized field needs its [`VarIndex`] over cells that include `cells`.
///
/// # Errors
/// As [`gather_part`]; [`Error::Corrupt`] when `index` does not hold `cells`.
pub(crate) fn load_compact(
    storage: &dyn Storage,
    job: &TileJob<'_>,
    cells: &CellRanges,
    index: Option<&VarIndex>,
) -> Result<DecodedTile> {
    let r = job.reader;
    let t = job.tile;
    let missing = |what: &str| Error::Corrupt {
        file: r.data_file.clone(),
        reason: format!("tile {t}: {what} of the batch's cells were not loaded"),
    };
    let mut tile = match &r.codec {
        Codec::Fixed { .. } if r.zipped.is_some() => {
            // Coordinates of an old sparse fragment: never a dense read's, decoded whole.
            let whole = load_whole(storage, job)?;
            return extract(&whole, &CellRanges::whole(job.cells), cells, &r.data_file);
        }
        Codec::Fixed { codec, cell_size } => {
            let range = r.range_in(&r.data_file, &r.offsets, r.file_size, t)?;
            let part = TileFile {
                file: &r.data_file,
                tile: t,
                range: &range,
                codec,
                expected: job.cells.saturating_mul(*cell_size),
                var_chunks: false,
            };
            let wanted = cells.bytes(*cell_size);
            let len = cells.len.saturating_mul(*cell_size);
            let mut data = crate::read::pool::take(usize::try_from(len).unwrap_or(0));
            gather_part(storage, part, &wanted, &mut data)?;
            DecodedTile {
                data: crate::read::pool::share(data),
                offsets: None,
                validity: None,
                cell_size: *cell_size as usize,
            }
        }
        Codec::Var(codec) => {
            let index = index.ok_or_else(|| missing("the offsets"))?;
            if let Some(decoded) = &index.decoded {
                // The string path: values and validity came with the offsets.
                return extract(decoded, &index.cells, cells, &r.data_file);
            }
            let mut spans = Vec::with_capacity(cells.ranges.len());
            for c in &cells.ranges {
                spans.push(
                    index.span(c.start, c.end - c.start).ok_or_else(|| missing("the offsets"))?,
                );
            }
            // Offsets of the compact cells, from where their range's bytes land.
            let mut offsets = Vec::with_capacity(cells.len as usize);
            let mut at = 0u64;
            for (c, span) in cells.ranges.iter().zip(&spans) {
                let i = index.cells.range_of(c.start).ok_or_else(|| missing("the offsets"))?;
                let k = (c.start - index.cells.ranges[i].start) as usize;
                let o = &index.offsets[i][k..k + (c.end - c.start) as usize];
                offsets.extend(o.iter().map(|&x| x - span.start + at));
                at += span.end - span.start;
            }
            let range = r.range_in(&r.var_file, &r.var_offsets, r.var_file_size, t)?;
            let part = TileFile {
                file: &r.var_file,
                tile: t,
                range: &range,
                codec: codec.data_codec(),
                expected: var_size(job)?,
                var_chunks: true,
            };
            // Neighbouring cells' spans touch: one range each.
            let mut wanted: Vec<Range<u64>> = Vec::with_capacity(spans.len());
            for s in spans.into_iter().filter(|s| s.start < s.end) {
                match wanted.last_mut() {
                    Some(last) if last.end == s.start => last.end = s.end,
                    _ => wanted.push(s),
                }
            }
            let mut data = Vec::new();
            gather_part(storage, part, &wanted, &mut data)?;
            DecodedTile { data: data.into(), offsets: Some(offsets), validity: None, cell_size: 0 }
        }
    };
    if let Some(vcodec) = &r.validity {
        let range = r.range_in(&r.validity_file, &r.validity_offsets, r.validity_file_size, t)?;
        let part = TileFile {
            file: &r.validity_file,
            tile: t,
            range: &range,
            codec: vcodec,
            expected: job.cells,
            var_chunks: false,
        };
        let mut validity = Vec::new();
        gather_part(storage, part, &cells.bytes(1), &mut validity)?;
        tile.validity = Some(validity.into());
    }
    Ok(tile)
}

/// The cells `cells` of `src`, a tile compact over `src_cells` (which include them).
fn extract(
    src: &DecodedTile,
    src_cells: &CellRanges,
    cells: &CellRanges,
    file: &str,
) -> Result<DecodedTile> {
    let mut data = Vec::new();
    let mut offsets = src.offsets.as_ref().map(|_| Vec::with_capacity(cells.len as usize));
    let mut validity = src.validity.as_ref().map(|_| Vec::with_capacity(cells.len as usize));
    for c in &cells.ranges {
        let n = c.end - c.start;
        let s = src_cells.index_of(c.start, n).ok_or_else(|| Error::Corrupt {
            file: file.to_owned(),
            reason: format!("cells {}..{} of a tile were not loaded", c.start, c.end),
        })? as usize;
        let n = n as usize;
        let range = src.cells_range(s, n);
        if let (Some(out), Some(o)) = (&mut offsets, &src.offsets) {
            let shift = data.len() as u64;
            out.extend(o[s..s + n].iter().map(|&x| x - range.start as u64 + shift));
        }
        data.extend_from_slice(&src.data[range]);
        if let (Some(out), Some(v)) = (&mut validity, &src.validity) {
            out.extend_from_slice(&v[s..s + n]);
        }
    }
    Ok(DecodedTile {
        data: data.into(),
        offsets,
        validity: validity.map(Into::into),
        cell_size: src.cell_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_ranges_merge_and_index() {
        let c = CellRanges::new(vec![10..12, 0..3, 2..5, 5..6, 20..20, 11..15]);
        assert_eq!(c.ranges(), &[0..6, 10..15]);
        assert_eq!(c.len(), 11);
        assert_eq!(c.index_of(0, 6), Some(0));
        assert_eq!(c.index_of(4, 2), Some(4));
        assert_eq!(c.index_of(4, 3), None, "past its range");
        assert_eq!(c.index_of(7, 1), None, "between ranges");
        assert_eq!(c.index_of(12, 3), Some(8));
        assert_eq!(c.index_of(15, 1), None);
    }

    #[test]
    fn extract_takes_the_cells_of_a_compact_tile() {
        // A var tile of 6 cells "a", "bb", "", "ccc", "d", "ee" with validity.
        let whole = DecodedTile {
            data: bytes::Bytes::from_static(b"abbcccdee"),
            offsets: Some(vec![0, 1, 3, 3, 6, 7]),
            validity: Some(bytes::Bytes::from_static(&[1, 0, 1, 1, 0, 1])),
            cell_size: 0,
        };
        let some = CellRanges::new(vec![1..4, 5..6]);
        let part = extract(&whole, &CellRanges::whole(6), &some, "f").unwrap();
        assert_eq!(&part.data[..], b"bbcccee");
        assert_eq!(part.offsets.as_deref(), Some(&[0, 2, 2, 5][..]));
        assert_eq!(part.validity.as_deref(), Some(&[0, 1, 1, 1][..]));
        let fewer = CellRanges::new(std::iter::once(2..4).collect());
        let again = extract(&part, &some, &fewer, "f").unwrap();
        assert_eq!(&again.data[..], b"ccc");
        assert_eq!(again.offsets.as_deref(), Some(&[0, 0][..]));
        assert!(
            extract(&part, &some, &CellRanges::new(std::iter::once(0..2).collect()), "f").is_err()
        );
    }
}
