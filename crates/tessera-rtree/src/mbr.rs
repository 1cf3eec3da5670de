//! Minimum bounding rectangles: one [`Range`] per dimension.

use crate::cursor::Cursor;
use crate::{DimType, Error, Range, RangeRef, Result};

/// A minimum bounding rectangle (libtiledb's `NDRange`): one range per dimension, in schema
/// order.
///
/// The same type, with the same encoding, is the non-empty domain of a fragment's footer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Mbr(pub Vec<Range>);

/// The coordinates of one dimension for a run of cells, as a writer holds them; input to
/// [`Mbr::of_cells`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimCoords<'a> {
    /// Fixed-sized coordinates, little-endian, back to back (one coordinate per cell).
    Fixed(&'a [u8]),
    /// Var-sized (string) coordinates: `offsets[i]` is where cell `i` starts in `data`; the
    /// cell ends where the next one starts, the last at the end of `data` (TileDB's offsets
    /// tiles, without an extra final offset).
    Var {
        /// Start of each cell in `data`.
        offsets: &'a [u64],
        /// The values, back to back.
        data: &'a [u8],
    },
}

impl Mbr {
    /// Reads one MBR at the start of `bytes`, one range per entry of `dims` (see
    /// [`RangeRef::write`] for the encoding). Returns the MBR and the number of bytes it took.
    ///
    /// This is both the encoding of an R-tree MBR and of a fragment footer's non-empty domain.
    /// Error offsets are relative to `bytes`; see [`Error::at_offset`].
    ///
    /// # Errors
    /// [`Error::Truncated`] when `bytes` ends inside a range; [`Error::Invalid`] when a var
    /// range's `start_size` exceeds its `range_size`.
    pub fn parse(bytes: &[u8], dims: &[DimType]) -> Result<(Mbr, usize)> {
        let mut cur = Cursor::new(bytes);
        let mut ranges = Vec::with_capacity(dims.len());
        for &dim in dims {
            ranges.push(RangeRef::read(&mut cur, dim)?.to_range());
        }
        Ok((Mbr(ranges), cur.position()))
    }

    /// Appends the on-disk encoding of this MBR: each range in turn, as [`RangeRef::write`]
    /// describes. Ranges are paired with `dims` in order; extra ranges or dimensions are
    /// ignored.
    pub fn write(&self, dims: &[DimType], out: &mut Vec<u8>) {
        for (range, &dim) in self.0.iter().zip(dims) {
            range.write(dim, out);
        }
    }

    /// The on-disk encoding of this MBR (see [`Self::write`]).
    pub fn to_bytes(&self, dims: &[DimType]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len(dims));
        self.write(dims, &mut out);
        out
    }

    /// Bytes [`Self::write`] appends.
    pub fn encoded_len(&self, dims: &[DimType]) -> usize {
        self.0.iter().zip(dims).map(|(r, &d)| r.encoded_len(d)).sum()
    }

    /// Checks that this MBR fits `dims`: one range per dimension, and both bounds of a fixed
    /// dimension exactly one coordinate long.
    ///
    /// # Errors
    /// [`Error::MbrShape`] (with index 0) saying what does not match.
    pub fn check(&self, dims: &[DimType]) -> Result<()> {
        check_shape(self.0.iter().map(Range::view), self.0.len(), dims)
            .map_err(|reason| Error::MbrShape { index: 0, reason })
    }

    /// Grows this MBR to also cover `other`, dimension by dimension, as libtiledb's
    /// `Domain::expand_ndrange` does (see [`Range::expand`] for ties).
    pub fn expand(&mut self, dims: &[DimType], other: &Mbr) {
        for ((mine, theirs), &dim) in self.0.iter_mut().zip(&other.0).zip(dims) {
            mine.expand(theirs, dim);
        }
    }

    /// Whether this MBR and `other` intersect in every dimension.
    pub fn overlaps(&self, dims: &[DimType], other: &Mbr) -> bool {
        self.0.iter().zip(&other.0).zip(dims).all(|((a, b), &dim)| a.overlaps(b, dim))
    }

    /// Whether `other` lies entirely inside this MBR.
    pub fn contains(&self, dims: &[DimType], other: &Mbr) -> bool {
        self.0.iter().zip(&other.0).zip(dims).all(|((a, b), &dim)| a.contains(b, dim))
    }

    /// The bounding box of `mbrs`, expanding the first by each of the others in order (see
    /// [`Self::expand`]); `None` when `mbrs` is empty.
    ///
    /// This is a fragment's non-empty domain. libtiledb grows it tile by tile
    /// (`FragmentMetadata::expand_non_empty_domain`) from a `parallel_for`, so when bounds tie
    /// with different bytes (`-0.0` against `0.0`) the bytes it stores depend on thread
    /// scheduling; for all other values the result is the same in any order.
    pub fn bounding<'a>(dims: &[DimType], mbrs: impl IntoIterator<Item = &'a Mbr>) -> Option<Mbr> {
        let mut mbrs = mbrs.into_iter();
        let mut out = mbrs.next()?.clone();
        for m in mbrs {
            out.expand(dims, m);
        }
        Some(out)
    }

    /// The MBR of a tile's cells, computed as libtiledb's writer does
    /// (`Dimension::compute_mbr` / `compute_mbr_var`): start from the first cell and expand
    /// by each following one; on a tie (`-0.0` against `0.0`, a NaN) the earlier value stays.
    /// Strings compare bytewise.
    ///
    /// # Errors
    /// [`Error::InvalidCoords`] when `coords` does not hold one entry per dimension, a fixed
    /// buffer is not a whole number of coordinates, offsets decrease or run past the data, the
    /// dimensions disagree on the cell count, or there are no cells.
    pub fn of_cells(dims: &[DimType], coords: &[DimCoords<'_>]) -> Result<Mbr> {
        if coords.len() != dims.len() {
            return Err(Error::InvalidCoords {
                dim: coords.len().min(dims.len()),
                reason: format!(
                    "{} coordinate buffers for {} dimensions",
                    coords.len(),
                    dims.len()
                ),
            });
        }
        let mut cell_num = None;
        let mut ranges = Vec::with_capacity(dims.len());
        for (d, (&dim, &c)) in dims.iter().zip(coords).enumerate() {
            let bad = |reason: String| Error::InvalidCoords { dim: d, reason };
            let (range, n) = match c {
                DimCoords::Fixed(data) => {
                    if dim.var {
                        return Err(bad("fixed coordinates for a var-sized dimension".into()));
                    }
                    let size = dim.datatype.size();
                    if data.len() % size != 0 {
                        return Err(bad(format!(
                            "{} bytes is not a whole number of {size}-byte coordinates",
                            data.len()
                        )));
                    }
                    let mut cells = data.chunks_exact(size);
                    let n = data.len() / size;
                    let Some(first) = cells.next() else {
                        return Err(bad("no cells".into()));
                    };
                    (fold_values(dim, first, cells), n)
                }
                DimCoords::Var { offsets, data } => {
                    if !dim.var {
                        return Err(bad("var-sized coordinates for a fixed dimension".into()));
                    }
                    let cells = var_cells(offsets, data).map_err(bad)?;
                    let mut cells = cells.iter().map(|&(s, e)| &data[s..e]);
                    let Some(first) = cells.next() else {
                        return Err(bad("no cells".into()));
                    };
                    (fold_values(dim, first, cells), offsets.len())
                }
            };
            match cell_num {
                Some(m) if m != n => {
                    return Err(bad(format!("{n} cells, but dimension 0 has {m}")));
                }
                _ => cell_num = Some(n),
            }
            ranges.push(range);
        }
        Ok(Mbr(ranges))
    }
}

/// Min and max of `first` and `rest` in `dim`'s order; the earlier value wins ties, as in
/// libtiledb's `expand_range_v` / `expand_range_var_v`.
fn fold_values<'a>(dim: DimType, first: &'a [u8], rest: impl Iterator<Item = &'a [u8]>) -> Range {
    let (mut low, mut high) = (first, first);
    for v in rest {
        if dim.lt(v, low) {
            low = v;
        }
        if dim.lt(high, v) {
            high = v;
        }
    }
    RangeRef::new(low, high).to_range()
}

/// The `(start, end)` byte span of each var-sized cell, checked against `data`.
fn var_cells(offsets: &[u64], data: &[u8]) -> std::result::Result<Vec<(usize, usize)>, String> {
    let mut spans = Vec::with_capacity(offsets.len());
    for (i, &start) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).copied().unwrap_or(data.len() as u64);
        if start > end || end > data.len() as u64 {
            return Err(format!(
                "cell {i} spans bytes {start}..{end} of a {}-byte buffer",
                data.len()
            ));
        }
        // Both are at most data.len(), so they fit in usize.
        spans.push((start as usize, end as usize));
    }
    Ok(spans)
}

/// Why `ranges` (of which there are `count`) do not fit `dims`, if they do not.
pub(crate) fn check_shape<'a>(
    ranges: impl Iterator<Item = RangeRef<'a>>,
    count: usize,
    dims: &[DimType],
) -> std::result::Result<(), String> {
    if count != dims.len() {
        return Err(format!("{count} ranges for {} dimensions", dims.len()));
    }
    for (d, (r, dim)) in ranges.zip(dims).enumerate() {
        if let Some(size) = dim.coord_size()
            && (r.low.len() != size || r.high.len() != size)
        {
            return Err(format!(
                "dimension {d} ({}) has bounds of {} and {} bytes, not {size}",
                dim.datatype.name(),
                r.low.len(),
                r.high.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;

    #[test]
    fn of_cells_keeps_the_first_value_on_ties() {
        let dims = [DimType::fixed(Datatype::Float64)];
        let mut data = Vec::new();
        for v in [0.0f64, -0.0, 0.0] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        let mbr = Mbr::of_cells(&dims, &[DimCoords::Fixed(&data)]).unwrap();
        assert_eq!(mbr, Mbr(vec![Range::from_values(0.0f64, 0.0)]));
    }

    #[test]
    fn of_cells_strings_and_errors() {
        let dims = [DimType::string(), DimType::fixed(Datatype::UInt16)];
        let data = b"bbaccc";
        let offsets = [0u64, 2, 3];
        let nums: Vec<u8> = [5u16, 1, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        let coords = [DimCoords::Var { offsets: &offsets, data }, DimCoords::Fixed(&nums)];
        let mbr = Mbr::of_cells(&dims, &coords).unwrap();
        assert_eq!(mbr, Mbr(vec![Range::new("a", "ccc"), Range::from_values(1u16, 9)]));

        let bad = |coords: &[DimCoords<'_>]| Mbr::of_cells(&dims, coords).unwrap_err();
        assert!(matches!(bad(&coords[..1]), Error::InvalidCoords { .. }));
        let two = &nums[..4];
        let e = bad(&[coords[0], DimCoords::Fixed(two)]);
        assert!(matches!(e, Error::InvalidCoords { dim: 1, .. }), "{e}");
        let e = bad(&[coords[0], DimCoords::Fixed(&nums[..5])]);
        assert!(matches!(e, Error::InvalidCoords { dim: 1, .. }), "{e}");
        let e = bad(&[DimCoords::Var { offsets: &[0, 7], data }, coords[1]]);
        assert!(matches!(e, Error::InvalidCoords { dim: 0, .. }), "{e}");
        let e = bad(&[DimCoords::Var { offsets: &[], data: b"" }, DimCoords::Fixed(&[])]);
        assert!(matches!(e, Error::InvalidCoords { dim: 0, .. }), "{e}");
        let e = bad(&[coords[1], coords[0]]);
        assert!(matches!(e, Error::InvalidCoords { dim: 0, .. }), "{e}");
    }

    #[test]
    fn parse_reports_offsets_and_lengths() {
        let dims = [DimType::fixed(Datatype::Int32), DimType::string()];
        let mbr = Mbr(vec![Range::from_values(1i32, 2), Range::new("k", "kz")]);
        let mut bytes = mbr.to_bytes(&dims);
        assert_eq!(bytes.len(), mbr.encoded_len(&dims));
        bytes.extend_from_slice(b"tail");
        let (back, used) = Mbr::parse(&bytes, &dims).unwrap();
        assert_eq!((back, used), (mbr.clone(), bytes.len() - 4));
        let e = Mbr::parse(&bytes[..20], &dims).unwrap_err();
        assert_eq!(
            e,
            Error::Truncated { field: "start_size", offset: 16, needed: 8, available: 4 }
        );
        assert_eq!(e.clone().at_offset(100).offset(), Some(116));
        assert_eq!(e.field(), Some("start_size"));
        assert!(mbr.check(&dims).is_ok());
        assert!(Mbr(vec![Range::from_values(1i64, 2), Range::new("", "")]).check(&dims).is_err());
    }
}
