//! Integer coordinates as one type: what dense tiling and subarray arithmetic compute with.

use crate::Datatype;

/// The value of an integer (or datetime/time) coordinate as `i128`, `None` for floats and
/// strings. `b` holds at least one value of `dt` (checked by the caller).
pub fn int_value(dt: Datatype, b: &[u8]) -> Option<i128> {
    Some(match dt {
        Datatype::Int8 | Datatype::Char => i128::from(b[0] as i8),
        Datatype::UInt8 | Datatype::Bool => i128::from(b[0]),
        Datatype::Int16 => i128::from(i16::from_le_bytes([b[0], b[1]])),
        Datatype::UInt16 => i128::from(u16::from_le_bytes([b[0], b[1]])),
        Datatype::Int32 => i128::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Datatype::UInt32 => i128::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Datatype::UInt64 => i128::from(u64::from_le_bytes(eight(b))),
        Datatype::Int64 => i128::from(i64::from_le_bytes(eight(b))),
        d if d.is_datetime() || d.is_time() => i128::from(i64::from_le_bytes(eight(b))),
        _ => return None,
    })
}

/// The first 8 bytes of `b` (which holds at least 8).
fn eight(b: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_datetimes_only() {
        assert_eq!(int_value(Datatype::Int8, &[0xff]), Some(-1));
        assert_eq!(
            int_value(Datatype::UInt64, &u64::MAX.to_le_bytes()),
            Some(i128::from(u64::MAX))
        );
        assert_eq!(int_value(Datatype::DatetimeMs, &(-5i64).to_le_bytes()), Some(-5));
        assert_eq!(int_value(Datatype::Float64, &[0; 8]), None);
    }
}
