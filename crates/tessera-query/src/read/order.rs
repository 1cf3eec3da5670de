//! Cell and tile orders as libtiledb 2.30 computes them: order-preserving keys of coordinates,
//! space-tile indexes (`Dimension::tile_idx`), and Hilbert values
//! (`Dimension::map_to_uint64_2`, `tiledb/sm/misc/hilbert.h`).

use std::cmp::Ordering;

use tessera_schema::{ArraySchema, Dimension};
use tessera_types::{Datatype, Layout};

/// A key of one fixed-size coordinate whose unsigned order is the value order of the
/// dimension's type, as libtiledb's `<` comparisons see it: `-0.0` and `0.0` get the same key
/// (they compare equal); NaNs, which no domain admits, get some key.
pub(crate) fn ord_key(dt: Datatype, b: &[u8]) -> u64 {
    const SIGN: u64 = 1 << 63;
    let signed = |v: i64| (v as u64) ^ SIGN;
    match dt {
        Datatype::Int8 | Datatype::Char => signed(i64::from(b[0] as i8)),
        Datatype::UInt8 | Datatype::Bool => u64::from(b[0]),
        Datatype::Int16 => signed(i64::from(i16::from_le_bytes([b[0], b[1]]))),
        Datatype::UInt16 => u64::from(u16::from_le_bytes([b[0], b[1]])),
        Datatype::Int32 => signed(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        Datatype::UInt32 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Datatype::UInt64 => u64::from_le_bytes(eight(b)),
        Datatype::Float32 => {
            let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let bits = if v == 0.0 { 0 } else { v.to_bits() };
            let k = if bits & 0x8000_0000 != 0 { !bits } else { bits | 0x8000_0000 };
            u64::from(k)
        }
        Datatype::Float64 => {
            let v = f64::from_le_bytes(eight(b));
            let bits = if v == 0.0 { 0 } else { v.to_bits() };
            if bits & SIGN != 0 { !bits } else { bits | SIGN }
        }
        // Int64, datetimes, times.
        _ => signed(i64::from_le_bytes(eight(b))),
    }
}

/// Clears `keep[c]` for every fixed-size value `c` of `data` (values of `dt`, back to back)
/// whose [`ord_key`] lies outside `ranges` (sorted, disjoint): one loop per datatype, which
/// the compiler vectorises for a single range (the common small box).
pub(crate) fn retain_in_ranges(
    dt: Datatype,
    data: &[u8],
    ranges: &[(u64, u64)],
    keep: &mut [bool],
) {
    const SIGN: u64 = 1 << 63;
    let signed = |v: i64| (v as u64) ^ SIGN;
    match dt {
        Datatype::Int8 | Datatype::Char => {
            retain::<1>(data, ranges, keep, |b| signed(i64::from(b[0] as i8)))
        }
        Datatype::UInt8 | Datatype::Bool => retain::<1>(data, ranges, keep, |b| u64::from(b[0])),
        Datatype::Int16 => {
            retain::<2>(data, ranges, keep, |b| signed(i64::from(i16::from_le_bytes(b))))
        }
        Datatype::UInt16 => retain::<2>(data, ranges, keep, |b| u64::from(u16::from_le_bytes(b))),
        Datatype::Int32 => {
            retain::<4>(data, ranges, keep, |b| signed(i64::from(i32::from_le_bytes(b))))
        }
        Datatype::UInt32 => retain::<4>(data, ranges, keep, |b| u64::from(u32::from_le_bytes(b))),
        Datatype::UInt64 => retain::<8>(data, ranges, keep, u64::from_le_bytes),
        Datatype::Float32 | Datatype::Float64 => {
            let size = dt.size();
            for (k, c) in keep.iter_mut().zip(data.chunks_exact(size)) {
                if *k {
                    *k = in_sorted_ranges(ranges, ord_key(dt, c));
                }
            }
        }
        // Int64, datetimes, times.
        _ => retain::<8>(data, ranges, keep, |b| signed(i64::from_le_bytes(b))),
    }
}

/// [`retain_in_ranges`] for values of `N` bytes whose key `key` gives.
#[inline]
fn retain<const N: usize>(
    data: &[u8],
    ranges: &[(u64, u64)],
    keep: &mut [bool],
    key: impl Fn([u8; N]) -> u64,
) {
    let cells = data.chunks_exact(N).map(|c| key(<[u8; N]>::try_from(c).unwrap_or([0; N])));
    if let [(lo, hi)] = ranges {
        for (k, v) in keep.iter_mut().zip(cells) {
            *k &= (*lo <= v) & (v <= *hi);
        }
    } else {
        for (k, v) in keep.iter_mut().zip(cells) {
            if *k {
                *k = in_sorted_ranges(ranges, v);
            }
        }
    }
}

/// Whether `v` lies in one of `ranges` (sorted, disjoint).
pub(crate) fn in_sorted_ranges(ranges: &[(u64, u64)], v: u64) -> bool {
    if ranges.len() <= 4 {
        return ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi);
    }
    let i = ranges.partition_point(|&(lo, _)| lo <= v);
    i > 0 && v <= ranges[i - 1].1
}

fn eight(b: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}

pub(crate) use tessera_types::int_value;

/// Appends the little-endian bytes of integer `v` as a value of `dt` (wrapping to its width).
pub(crate) fn push_int(dt: Datatype, v: i128, out: &mut Vec<u8>) {
    let bytes = (v as u128).to_le_bytes();
    out.extend_from_slice(&bytes[..dt.size()]);
}

/// The value of a numeric coordinate as `f64` (as a C++ `(double)` conversion gives it).
pub(crate) fn f64_value(dt: Datatype, b: &[u8]) -> f64 {
    match dt {
        Datatype::Float32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Datatype::Float64 => f64::from_le_bytes(eight(b)),
        _ => int_value(dt, b).map_or(0.0, |v| v as f64),
    }
}

/// The space-tile index of coordinate `v` on a dimension with domain low `lo` and extent
/// `extent` (libtiledb's `Dimension::tile_idx`): integers subtract and divide in the
/// type's unsigned counterpart (wrapping as C++ does); floats divide in their own width and
/// truncate.
pub(crate) fn tile_index(dt: Datatype, v: &[u8], lo: &[u8], extent: &[u8]) -> u64 {
    match dt {
        Datatype::Float32 => {
            let f = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            ((f(v) - f(lo)) / f(extent)) as u64
        }
        Datatype::Float64 => {
            let f = |b: &[u8]| f64::from_le_bytes(eight(b));
            ((f(v) - f(lo)) / f(extent)) as u64
        }
        _ => {
            let bits = 8 * dt.size() as u32;
            let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let raw = |b: &[u8]| {
                let mut a = [0u8; 8];
                a[..dt.size()].copy_from_slice(&b[..dt.size()]);
                u64::from_le_bytes(a)
            };
            let diff = raw(v).wrapping_sub(raw(lo)) & mask;
            let e = raw(extent) & mask;
            diff.checked_div(e).unwrap_or(0)
        }
    }
}

/// How one dimension takes part in global-order comparisons.
#[derive(Debug, Clone)]
pub(crate) struct DimOrder {
    /// The dimension's datatype.
    pub(crate) datatype: Datatype,
    /// Whether coordinates are var-sized strings.
    pub(crate) var: bool,
    /// Domain low and tile extent, when the dimension has space tiles (fixed-size with an
    /// extent).
    pub(crate) tiling: Option<(Vec<u8>, Vec<u8>)>,
    /// Domain `[low, high]`, for Hilbert values.
    pub(crate) domain: Option<[Vec<u8>; 2]>,
}

impl DimOrder {
    fn new(d: &Dimension) -> Self {
        let tiling = match (&d.domain, &d.tile_extent) {
            (Some([lo, _]), Some(e)) if !d.is_var() => Some((lo.clone(), e.clone())),
            _ => None,
        };
        DimOrder { datatype: d.datatype, var: d.is_var(), tiling, domain: d.domain.clone() }
    }
}

/// The global order of an array: tile order, then cell order, or Hilbert order.
#[derive(Debug, Clone)]
pub(crate) struct GlobalOrder {
    /// Per dimension, in schema order.
    pub(crate) dims: Vec<DimOrder>,
    /// Row- or col-major order of space tiles (ignored with Hilbert cells).
    pub(crate) tile_order: Layout,
    /// Row-major, col-major or Hilbert.
    pub(crate) cell_order: Layout,
    /// Bits per dimension of Hilbert values (`63 / dim_num`).
    pub(crate) hilbert_bits: u32,
}

impl GlobalOrder {
    /// The global order of `schema`.
    pub(crate) fn new(schema: &ArraySchema) -> Self {
        let dim_num = schema.dimensions.len().max(1) as u32;
        GlobalOrder {
            dims: schema.dimensions.iter().map(DimOrder::new).collect(),
            tile_order: schema.tile_order,
            cell_order: schema.cell_order,
            hilbert_bits: 63 / dim_num,
        }
    }

    /// Whether cells are in Hilbert order.
    pub(crate) fn is_hilbert(&self) -> bool {
        self.cell_order == Layout::Hilbert
    }

    /// Dimension indexes in the order tile indexes are compared (only tiled dimensions).
    pub(crate) fn tile_dims(&self) -> Vec<usize> {
        let mut dims: Vec<usize> =
            (0..self.dims.len()).filter(|&d| self.dims[d].tiling.is_some()).collect();
        if self.tile_order == Layout::ColMajor {
            dims.reverse();
        }
        dims
    }

    /// Dimension indexes in the order coordinates are compared after tiles (row-major for
    /// Hilbert ties).
    pub(crate) fn cell_dims(&self) -> Vec<usize> {
        let mut dims: Vec<usize> = (0..self.dims.len()).collect();
        if self.cell_order == Layout::ColMajor {
            dims.reverse();
        }
        dims
    }

    /// The Hilbert value of one cell whose coordinates are `coords` (one slice per
    /// dimension), as libtiledb's readers and writers compute it.
    pub(crate) fn hilbert_value(&self, coords: &[&[u8]]) -> u64 {
        let bits = self.hilbert_bits;
        let max_bucket = (1u64 << bits) - 1;
        let mut mapped: Vec<u64> = self
            .dims
            .iter()
            .zip(coords)
            .map(|(d, c)| map_to_uint64(d, c, bits, max_bucket))
            .collect();
        coords_to_hilbert(&mut mapped, bits)
    }
}

/// libtiledb's `Dimension::map_to_uint64_2`: a numeric coordinate normalised to the domain in
/// `f64` and scaled to `max_bucket`; a string's first 8 bytes, each OR-ed in as a
/// sign-extended `char`, shifted down to `bits` bits.
fn map_to_uint64(d: &DimOrder, coord: &[u8], bits: u32, max_bucket: u64) -> u64 {
    if d.var {
        let mut ret: u64 = 0;
        for i in 0..8 {
            ret <<= 8;
            if let Some(&b) = coord.get(i) {
                ret |= i64::from(b as i8) as u64;
            }
        }
        return ret >> (64 - bits);
    }
    let Some([lo, hi]) = &d.domain else { return 0 };
    let start = f64_value(d.datatype, lo);
    let end = f64_value(d.datatype, hi);
    let range = end - start;
    let norm = f64_value(d.datatype, coord) - start;
    ((norm / range) * max_bucket as f64) as u64
}

/// Skilling's transform followed by libtiledb's bit interleaving
/// (`Hilbert::coords_to_hilbert`).
fn coords_to_hilbert(x: &mut [u64], bits: u32) -> u64 {
    let n = x.len();
    if n == 0 || bits == 0 {
        return 0;
    }
    axes_to_transpose(x, bits);
    let mut ret = 0u64;
    let mut h = 1u64;
    for j in 0..bits {
        let c = 1u64 << j;
        for i in (0..n).rev() {
            if x[i] & c != 0 {
                ret |= h;
            }
            h = h.wrapping_shl(1);
        }
    }
    ret
}

fn axes_to_transpose(x: &mut [u64], b: u32) {
    let n = x.len();
    let mut q = 1u64 << (b - 1);
    while q > 1 {
        let p = q - 1;
        if x[0] & q != 0 {
            x[0] ^= p;
        }
        for i in 1..n {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = x[n - 1];
    let mut i = 1u32;
    while i < b {
        x[n - 1] ^= x[n - 1] >> i;
        i <<= 1;
    }
    t ^= x[n - 1];
    for xi in x.iter_mut().take(n - 1) {
        *xi ^= t;
    }
}

/// Compares two strings as libtiledb's readers do (`std::string_view`: bytewise, a prefix
/// first).
pub(crate) fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_preserve_order() {
        let i = |v: i32| ord_key(Datatype::Int32, &v.to_le_bytes());
        assert!(i(-5) < i(-1) && i(-1) < i(0) && i(0) < i(7));
        let f = |v: f64| ord_key(Datatype::Float64, &v.to_le_bytes());
        assert!(f(-2.5) < f(-0.5) && f(-0.5) < f(0.0) && f(0.0) < f(1e-300) && f(1.0) < f(2.0));
        assert_eq!(f(-0.0), f(0.0));
        let g = |v: f32| ord_key(Datatype::Float32, &v.to_le_bytes());
        assert!(g(-1.0) < g(0.0) && g(0.0) < g(0.5));
        let u = |v: u64| ord_key(Datatype::UInt64, &v.to_le_bytes());
        assert!(u(1) < u(u64::MAX));
    }

    #[test]
    fn tile_indexes_wrap_like_cpp() {
        let t =
            tile_index(Datatype::Int32, &7i32.to_le_bytes(), &1i32.to_le_bytes(), &[3, 0, 0, 0]);
        assert_eq!(t, 2);
        // int8 [-128, 126] with the wrapped default extent -1 (255 unsigned).
        let t = tile_index(Datatype::Int8, &[100], &[0x80], &[0xff]);
        assert_eq!(t, 0);
        let t = tile_index(
            Datatype::Float64,
            &2.6f64.to_le_bytes(),
            &(-10.0f64).to_le_bytes(),
            &2.5f64.to_le_bytes(),
        );
        assert_eq!(t, 5);
    }

    #[test]
    fn hilbert_of_2d_grid_matches_libtiledb_s_picture() {
        // The 16x16 curve drawn in libtiledb's hilbert.h: (dim 0, dim 1) -> position.
        let h = |x: u64, y: u64| {
            let mut c = [x, y];
            coords_to_hilbert(&mut c, 4)
        };
        let drawn = [
            ((0, 0), 0),
            ((1, 0), 1),
            ((1, 1), 2),
            ((0, 1), 3),
            ((0, 2), 4),
            ((0, 3), 5),
            ((1, 3), 6),
            ((1, 2), 7),
            ((2, 2), 8),
            ((2, 3), 9),
            ((15, 0), 255),
        ];
        for ((x, y), v) in drawn {
            assert_eq!(h(x, y), v, "({x}, {y})");
        }
        // Every cell once.
        let mut all: Vec<u64> =
            (0..16).flat_map(|x| (0..16).map(move |y| (x, y))).map(|(x, y)| h(x, y)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..256).collect::<Vec<_>>());
    }
}
