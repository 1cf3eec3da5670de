//! One-dimensional ranges, owned ([`Range`]) and borrowed ([`RangeRef`]), with their on-disk
//! encoding and the comparisons libtiledb makes on them.

use tessera_types::Primitive;

use crate::cursor::Cursor;
use crate::{DimType, Error, Result};

/// A closed range `[low, high]` of one dimension.
///
/// `low` and `high` hold the values' little-endian bytes (one coordinate each) for a fixed
/// dimension and whole strings for a var-sized one. Ordering follows the dimension's type
/// ([`DimType::compare`]), so the bytes themselves are never compared as numbers here.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Range {
    /// The lower bound.
    pub low: Vec<u8>,
    /// The upper bound.
    pub high: Vec<u8>,
}

/// A borrowed [`Range`]: the bounds of one dimension of an MBR stored in a [`crate::Level`],
/// or of a range owned elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RangeRef<'a> {
    /// The lower bound.
    pub low: &'a [u8],
    /// The upper bound.
    pub high: &'a [u8],
}

impl Range {
    /// The range `[low, high]` from raw bounds.
    pub fn new(low: impl Into<Vec<u8>>, high: impl Into<Vec<u8>>) -> Self {
        Self { low: low.into(), high: high.into() }
    }

    /// The range `[low, high]` of a fixed-sized number type.
    ///
    /// ```
    /// # use tessera_rtree::Range;
    /// assert_eq!(Range::from_values(-1i32, 5), Range::new(*b"\xff\xff\xff\xff", *b"\x05\0\0\0"));
    /// ```
    pub fn from_values<T: Primitive>(low: T, high: T) -> Self {
        let (mut lo, mut hi) = (Vec::with_capacity(T::SIZE), Vec::with_capacity(T::SIZE));
        low.write_le(&mut lo);
        high.write_le(&mut hi);
        Self { low: lo, high: hi }
    }

    /// The range `[value, value]`.
    pub fn point(value: impl Into<Vec<u8>>) -> Self {
        let value = value.into();
        Self { low: value.clone(), high: value }
    }

    /// This range, borrowed.
    pub fn view(&self) -> RangeRef<'_> {
        RangeRef { low: &self.low, high: &self.high }
    }

    /// Whether this range and `other` share at least one value of dimension `dim`.
    pub fn overlaps(&self, other: &Range, dim: DimType) -> bool {
        self.view().overlaps(other.view(), dim)
    }

    /// Whether `other` lies entirely inside this range.
    pub fn contains(&self, other: &Range, dim: DimType) -> bool {
        self.view().contains(other.view(), dim)
    }

    /// Grows this range to also cover `other`, exactly as libtiledb's
    /// `Dimension::expand_range` (`expand_range_var` for strings) does: on a tie (equal
    /// values with different bytes, such as `-0.0` and `0.0`, or a NaN) the bound of `other`
    /// wins.
    pub fn expand(&mut self, other: &Range, dim: DimType) {
        let (take_low, take_high) = expand_choice(self.view(), other.view(), dim);
        if take_low {
            self.low.clone_from(&other.low);
        }
        if take_high {
            self.high.clone_from(&other.high);
        }
    }

    /// Bytes this range takes on disk as a range of `dim` (see [`RangeRef::write`]).
    pub fn encoded_len(&self, dim: DimType) -> usize {
        self.view().encoded_len(dim)
    }

    /// Appends the on-disk encoding of this range (see [`RangeRef::write`]).
    pub fn write(&self, dim: DimType, out: &mut Vec<u8>) {
        self.view().write(dim, out);
    }
}

impl<'a> RangeRef<'a> {
    /// The range `[low, high]`.
    pub const fn new(low: &'a [u8], high: &'a [u8]) -> Self {
        Self { low, high }
    }

    /// An owned copy.
    pub fn to_range(self) -> Range {
        Range { low: self.low.to_vec(), high: self.high.to_vec() }
    }

    /// Whether this range and `other` share at least one value of dimension `dim`
    /// (libtiledb's `Dimension::overlap`: neither starts after the other ends).
    pub fn overlaps(self, other: RangeRef<'_>, dim: DimType) -> bool {
        !(dim.lt(other.high, self.low) || dim.lt(self.high, other.low))
    }

    /// Whether `other` lies entirely inside this range (libtiledb's `Dimension::covered`,
    /// with the arguments swapped).
    pub fn contains(self, other: RangeRef<'_>, dim: DimType) -> bool {
        !dim.lt(other.low, self.low) && !dim.lt(self.high, other.high)
    }

    /// Grows this range to also cover `other`, borrowing the winning bounds; ties go to
    /// `other`, as in [`Range::expand`].
    pub fn expand(&mut self, other: RangeRef<'a>, dim: DimType) {
        let (take_low, take_high) = expand_choice(*self, other, dim);
        if take_low {
            self.low = other.low;
        }
        if take_high {
            self.high = other.high;
        }
    }

    /// Bytes this range takes on disk as a range of `dim`: `low.len() + high.len()`, plus 16
    /// for the two sizes of a var-sized dimension.
    pub fn encoded_len(self, dim: DimType) -> usize {
        let sizes = if dim.var { 16 } else { 0 };
        sizes + self.low.len() + self.high.len()
    }

    /// Appends the on-disk encoding of this range as a range of `dim`, as libtiledb writes
    /// R-tree MBRs and the footer's non-empty domain:
    ///
    /// * fixed dimension: `low ‖ high`;
    /// * var-sized dimension: `u64 range_size` (`low.len() + high.len()`), `u64 start_size`
    ///   (`low.len()`), then `low ‖ high`.
    ///
    /// Nothing is checked: a fixed range whose bounds are not one coordinate each is written
    /// as given (use [`crate::Mbr::check`] first when the input is not trusted).
    pub fn write(self, dim: DimType, out: &mut Vec<u8>) {
        if dim.var {
            let size = (self.low.len() + self.high.len()) as u64;
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&(self.low.len() as u64).to_le_bytes());
        }
        out.extend_from_slice(self.low);
        out.extend_from_slice(self.high);
    }

    /// Reads one range of `dim` at the cursor (the inverse of [`Self::write`]).
    pub(crate) fn read(cur: &mut Cursor<'a>, dim: DimType) -> Result<Self> {
        if dim.var {
            let range_size = cur.u64("range_size")?;
            let start_offset = cur.position();
            let start_size = cur.u64("start_size")?;
            if start_size > range_size {
                return Err(Error::Invalid {
                    field: "start_size",
                    offset: start_offset as u64,
                    reason: format!("{start_size} is larger than range_size {range_size}"),
                });
            }
            let bytes = cur.take(range_size, "range")?;
            // start_size <= range_size == bytes.len(), so it fits in usize.
            let (low, high) = bytes.split_at(start_size as usize);
            Ok(Self { low, high })
        } else {
            let size = dim.datatype.size();
            let bytes = cur.take(2 * size as u64, "range")?;
            let (low, high) = bytes.split_at(size);
            Ok(Self { low, high })
        }
    }
}

impl<'a> From<&'a Range> for RangeRef<'a> {
    fn from(r: &'a Range) -> Self {
        r.view()
    }
}

/// Which bounds of `other` replace those of `acc` when `acc` is expanded by `other`.
///
/// libtiledb computes `std::min(other.low, acc.low)` and `std::max(other.high, acc.high)`:
/// `std::min(a, b)` returns `b` only if `b < a`, `std::max(a, b)` returns `b` only if `a < b`,
/// so `acc` keeps a bound only when it is strictly better.
fn expand_choice(acc: RangeRef<'_>, other: RangeRef<'_>, dim: DimType) -> (bool, bool) {
    (!dim.lt(acc.low, other.low), !dim.lt(other.high, acc.high))
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;

    #[test]
    fn encoding_round_trips() {
        let dim = DimType::string();
        let r = Range::new("ab", "xyz");
        let mut out = Vec::new();
        r.write(dim, &mut out);
        assert_eq!(hex(&out), "05000000000000000200000000000000616278797a");
        assert_eq!(r.encoded_len(dim), out.len());
        let mut cur = Cursor::new(&out);
        assert_eq!(RangeRef::read(&mut cur, dim).unwrap(), r.view());
        assert_eq!(cur.remaining(), 0);

        let dim = DimType::fixed(Datatype::Int16);
        let r = Range::from_values(-2i16, 300);
        out.clear();
        r.write(dim, &mut out);
        assert_eq!(hex(&out), "feff2c01");
    }

    #[test]
    fn comparisons_follow_the_datatype() {
        let i8d = DimType::fixed(Datatype::Int8);
        let u8d = DimType::fixed(Datatype::UInt8);
        let a = Range::new([0xff], [0x01]); // int8: [-1, 1]
        let b = Range::new([0x00], [0x00]);
        assert!(a.contains(&b, i8d));
        assert!(!Range::new([0x01], [0xff]).contains(&b, u8d));
        assert!(Range::new([0x01], [0xff]).overlaps(&Range::point([0x80]), u8d));
        let s = DimType::string();
        assert!(Range::new("a", "b").contains(&Range::new("a", "az"), s));
        assert!(!Range::new("a", "b").contains(&Range::new("a", "ba"), s));
        assert!(Range::new("", "a").overlaps(&Range::point(""), s));
        // Bytewise: 0xff sorts after ASCII.
        assert!(!Range::new("a", "z").overlaps(&Range::point(vec![0xff]), s));
    }

    #[test]
    fn expand_ties_take_the_other_bound() {
        let dim = DimType::fixed(Datatype::Float32);
        let mut r = Range::from_values(0.0f32, 0.0);
        r.expand(&Range::from_values(-0.0f32, -0.0), dim);
        assert_eq!(r, Range::from_values(-0.0f32, -0.0));
        r.expand(&Range::from_values(-1.0f32, -0.5), dim);
        assert_eq!(r, Range::from_values(-1.0f32, -0.0));
        let s = DimType::string();
        let mut r = Range::new("b", "c");
        r.expand(&Range::new("a", "bz"), s);
        assert_eq!(r, Range::new("a", "c"));
    }

    #[test]
    fn var_start_size_past_range_size_is_rejected() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&3u64.to_le_bytes());
        bytes.extend_from_slice(b"ab");
        let err = RangeRef::read(&mut Cursor::new(&bytes), DimType::string()).unwrap_err();
        assert!(matches!(err, Error::Invalid { field: "start_size", offset: 8, .. }), "{err}");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
