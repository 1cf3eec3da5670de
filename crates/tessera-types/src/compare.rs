//! Ordering of single values stored little-endian, by datatype: what domain checks, R-tree
//! MBRs and sorting coordinates need.

use std::cmp::Ordering;

use crate::{Datatype, Primitive};

/// Compares two values of `dt` given as their little-endian bytes.
///
/// Numbers compare by value (signed or unsigned by type; floats with IEEE `<`, so `-0.0` equals
/// `0.0` and a NaN compares equal to everything, as a `<`-based comparison in libtiledb treats
/// it); string and byte types compare bytewise, a prefix before the longer string. Inputs
/// shorter than the type's size compare as their bytes.
pub fn compare(dt: Datatype, a: &[u8], b: &[u8]) -> Ordering {
    fn num<T: Primitive>(a: &[u8], b: &[u8]) -> Ordering {
        if a.len() < T::SIZE || b.len() < T::SIZE {
            return a.cmp(b);
        }
        T::read_le(a).partial_cmp(&T::read_le(b)).unwrap_or(Ordering::Equal)
    }
    use Datatype as D;
    match dt {
        D::Int8 | D::Char => num::<i8>(a, b),
        D::UInt8 | D::Bool => num::<u8>(a, b),
        D::Int16 => num::<i16>(a, b),
        D::UInt16 => num::<u16>(a, b),
        D::Int32 => num::<i32>(a, b),
        D::UInt32 => num::<u32>(a, b),
        D::UInt64 => num::<u64>(a, b),
        D::Float32 => num::<f32>(a, b),
        D::Float64 => num::<f64>(a, b),
        D::Int64 => num::<i64>(a, b),
        d if d.is_datetime() || d.is_time() => num::<i64>(a, b),
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_type() {
        assert_eq!(
            compare(Datatype::Int32, &(-1i32).to_le_bytes(), &1i32.to_le_bytes()),
            Ordering::Less
        );
        assert_eq!(
            compare(Datatype::UInt32, &u32::MAX.to_le_bytes(), &1u32.to_le_bytes()),
            Ordering::Greater
        );
        assert_eq!(
            compare(Datatype::Float64, &(-0.0f64).to_le_bytes(), &0.0f64.to_le_bytes()),
            Ordering::Equal
        );
        assert_eq!(compare(Datatype::StringAscii, b"ab", b"abc"), Ordering::Less);
        assert_eq!(compare(Datatype::StringAscii, b"b", b"abc"), Ordering::Greater);
        assert_eq!(
            compare(Datatype::DatetimeMs, &(-5i64).to_le_bytes(), &3i64.to_le_bytes()),
            Ordering::Less
        );
    }
}
