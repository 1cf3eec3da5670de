//! Fixed-width numbers as they sit on disk (little-endian), for code generic over a cell type.

use crate::Datatype;

/// A fixed-width number TileDB stores little-endian.
///
/// Lets filters and readers be written once over `i8..u64, f32, f64` and convert whole byte
/// slices without per-type code.
pub trait Primitive:
    Copy + Default + PartialOrd + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// Width in bytes.
    const SIZE: usize;
    /// The canonical TileDB datatype of this Rust type.
    const DATATYPE: Datatype;
    /// Reads one value from the first `SIZE` bytes of `b` (which must hold at least `SIZE`).
    fn read_le(b: &[u8]) -> Self;
    /// Appends the little-endian bytes of `self`.
    fn write_le(self, out: &mut Vec<u8>);
    /// The value as `i128`, for overflow-free integer arithmetic (floats truncate).
    fn to_i128(self) -> i128;
    /// The value from `i128`, wrapping to the width as a C cast does (floats convert).
    fn from_i128_wrapping(v: i128) -> Self;
    /// Decodes every whole value of `bytes`, ignoring a trailing partial value.
    fn vec_from_le(bytes: &[u8]) -> Vec<Self> {
        bytes.chunks_exact(Self::SIZE).map(Self::read_le).collect()
    }
}

macro_rules! primitive {
    ($($t:ty => $dt:ident),*) => {$(
        impl Primitive for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const DATATYPE: Datatype = Datatype::$dt;
            #[inline]
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_le_bytes(a)
            }
            #[inline]
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline]
            fn from_i128_wrapping(v: i128) -> Self {
                v as $t
            }
        }
    )*};
}
primitive!(i8 => Int8, u8 => UInt8, i16 => Int16, u16 => UInt16, i32 => Int32, u32 => UInt32, i64 => Int64, u64 => UInt64);

primitive!(f32 => Float32, f64 => Float64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn le_round_trip() {
        let mut out = vec![];
        (-2i16).write_le(&mut out);
        1.5f32.write_le(&mut out);
        assert_eq!(i16::read_le(&out), -2);
        assert_eq!(f32::read_le(&out[2..]), 1.5);
        assert_eq!(u8::from_i128_wrapping(257), 1);
        assert_eq!(i32::vec_from_le(&[1, 0, 0, 0, 2, 0, 0, 0, 9]), vec![1, 2]);
    }
}
