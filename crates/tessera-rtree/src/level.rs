//! One level of an R-tree, stored compactly.

use crate::mbr::check_shape;
use crate::{DimType, Error, Mbr, RangeRef, Result};

/// The MBRs of one R-tree level, in order, stored compactly: every bound of every MBR back to
/// back in one byte buffer, with the end offset of each bound beside it. A level of a million
/// 2-D `int64` MBRs takes 64 MB instead of the five allocations per MBR a `Vec<Mbr>` needs.
///
/// Levels are built by [`crate::RTree::build`] and [`crate::RTree::parse`], or by
/// [`Level::push`] for a leaf level handed to [`crate::RTree::from_leaves`]. Read them through
/// [`MbrRef`]s.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Level {
    dim_num: usize,
    len: usize,
    /// `low0 high0 low1 high1 …` of MBR 0, then of MBR 1, …
    bounds: Vec<u8>,
    /// End offset in `bounds` of each bound: `2 × dim_num` entries per MBR.
    ends: Vec<usize>,
}

/// One MBR of a [`Level`], borrowed.
#[derive(Clone, Copy)]
pub struct MbrRef<'a> {
    /// The level's whole bound buffer.
    bounds: &'a [u8],
    /// Where this MBR's first bound starts in `bounds`.
    start: usize,
    /// The end offsets of this MBR's bounds (`2 × dim_num` entries).
    ends: &'a [usize],
}

impl Level {
    /// An empty level of MBRs with `dim_num` dimensions.
    pub const fn new(dim_num: usize) -> Self {
        Self { dim_num, len: 0, bounds: Vec::new(), ends: Vec::new() }
    }

    /// Number of dimensions of every MBR.
    pub fn dim_num(&self) -> usize {
        self.dim_num
    }

    /// Number of MBRs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the level holds no MBR.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// MBR `index`, or `None` past the end.
    pub fn get(&self, index: usize) -> Option<MbrRef<'_>> {
        if index >= self.len {
            return None;
        }
        let per = 2 * self.dim_num;
        let first = index.checked_mul(per)?;
        let ends = self.ends.get(first..first.checked_add(per)?)?;
        let start = match first.checked_sub(1) {
            Some(prev) => *self.ends.get(prev)?,
            None => 0,
        };
        Some(MbrRef { bounds: &self.bounds, start, ends })
    }

    /// The MBRs in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = MbrRef<'_>> + '_ {
        // Every index below len is present (the level's invariant); the empty fallback is
        // never produced.
        (0..self.len).map(|i| self.get(i).unwrap_or(MbrRef { bounds: &[], start: 0, ends: &[] }))
    }

    /// Appends `mbr` after checking it against `dims` (one range per dimension, fixed bounds
    /// one coordinate long, `dims.len()` equal to [`Self::dim_num`]).
    ///
    /// # Errors
    /// [`Error::MbrShape`] naming the index the MBR would have had.
    pub fn push(&mut self, dims: &[DimType], mbr: &Mbr) -> Result<()> {
        let shape = if dims.len() == self.dim_num {
            check_shape(mbr.0.iter().map(|r| r.view()), mbr.0.len(), dims)
        } else {
            Err(format!("{} dimensions given for a level of {}", dims.len(), self.dim_num))
        };
        shape.map_err(|reason| Error::MbrShape { index: self.len as u64, reason })?;
        self.push_ranges(mbr.0.iter().map(|r| r.view()));
        Ok(())
    }

    /// Copies every MBR out.
    pub fn to_mbrs(&self) -> Vec<Mbr> {
        self.iter().map(MbrRef::to_mbr).collect()
    }

    /// Approximate heap bytes held, for memory budgets.
    pub fn heap_size(&self) -> usize {
        self.bounds.capacity() + self.ends.capacity() * size_of::<usize>()
    }

    /// Appends an MBR given as exactly `dim_num` ranges (the caller guarantees the count).
    pub(crate) fn push_ranges<'a>(&mut self, ranges: impl Iterator<Item = RangeRef<'a>>) {
        for r in ranges {
            self.push_range(r);
        }
        self.end_mbr();
    }

    /// Appends one range of the MBR being added; [`Self::end_mbr`] completes it after
    /// `dim_num` ranges.
    pub(crate) fn push_range(&mut self, r: RangeRef<'_>) {
        self.bounds.extend_from_slice(r.low);
        self.ends.push(self.bounds.len());
        self.bounds.extend_from_slice(r.high);
        self.ends.push(self.bounds.len());
    }

    /// Completes the MBR whose ranges were pushed.
    pub(crate) fn end_mbr(&mut self) {
        self.len += 1;
    }

    /// Reserves room for `mbrs` more MBRs of about `bytes_per_mbr` bound bytes each.
    pub(crate) fn reserve(&mut self, mbrs: usize, bytes_per_mbr: usize) {
        self.bounds.reserve(mbrs.saturating_mul(bytes_per_mbr));
        self.ends.reserve(mbrs.saturating_mul(2 * self.dim_num));
    }

    /// Appends every MBR's on-disk encoding (no count).
    pub(crate) fn write(&self, dims: &[DimType], out: &mut Vec<u8>) {
        for m in self.iter() {
            m.write(dims, out);
        }
    }
}

impl<'a> MbrRef<'a> {
    /// Number of dimensions.
    pub fn dim_num(&self) -> usize {
        self.ends.len() / 2
    }

    /// The range of dimension `d`, or `None` past the last dimension.
    pub fn range(&self, d: usize) -> Option<RangeRef<'a>> {
        self.ranges().nth(d)
    }

    /// The ranges, in dimension order.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = RangeRef<'a>> + 'a {
        let (bounds, start, ends) = (self.bounds, self.start, self.ends);
        // d < ends.len() / 2, so 2d + 1 < ends.len(): the indexing below is in bounds.
        (0..ends.len() / 2).map(move |d| {
            let low_start = if d == 0 { start } else { ends[2 * d - 1] };
            let (low_end, high_end) = (ends[2 * d], ends[2 * d + 1]);
            RangeRef {
                low: bounds.get(low_start..low_end).unwrap_or_default(),
                high: bounds.get(low_end..high_end).unwrap_or_default(),
            }
        })
    }

    /// An owned copy.
    pub fn to_mbr(self) -> Mbr {
        Mbr(self.ranges().map(RangeRef::to_range).collect())
    }

    /// Whether this MBR and `other` intersect in every dimension.
    pub fn overlaps(&self, dims: &[DimType], other: &Mbr) -> bool {
        self.ranges().zip(&other.0).zip(dims).all(|((a, b), &dim)| a.overlaps(b.view(), dim))
    }

    /// Whether `other` lies entirely inside this MBR.
    pub fn contains(&self, dims: &[DimType], other: &Mbr) -> bool {
        self.ranges().zip(&other.0).zip(dims).all(|((a, b), &dim)| a.contains(b.view(), dim))
    }

    /// Appends the on-disk encoding (see [`Mbr::write`]).
    pub fn write(&self, dims: &[DimType], out: &mut Vec<u8>) {
        for (r, &dim) in self.ranges().zip(dims) {
            r.write(dim, out);
        }
    }
}

impl std::fmt::Debug for MbrRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MbrRef").field(&self.ranges().collect::<Vec<_>>()).finish()
    }
}

impl PartialEq for MbrRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.dim_num() == other.dim_num() && self.ranges().eq(other.ranges())
    }
}

impl Eq for MbrRef<'_> {}

impl PartialEq<Mbr> for MbrRef<'_> {
    fn eq(&self, other: &Mbr) -> bool {
        self.dim_num() == other.0.len() && self.ranges().eq(other.0.iter().map(|r| r.view()))
    }
}
