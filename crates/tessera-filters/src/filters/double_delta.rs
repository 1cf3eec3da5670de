//! DOUBLE_DELTA, as libtiledb's `DoubleDelta::compress` lays it out (one part at a time).
//!
//! ```text
//! u8  bitsize      bits of max(|in[1] - in[0]|, max |dd_i|), at least 1; 0 when n <= 2
//! u64 n            number of values
//! if bitsize >= 8 * sizeof(T) - 1: the n values, raw
//! else: in[0] (if n >= 1), in[1] (if n >= 2), then for i = 2..n a sign bit (1 = negative)
//!       and `bitsize` bits of |dd_i|, MSB first, packed from bit 63 down into u64 words
//!       written little-endian; the last word is zero-padded
//! ```
//!
//! `dd_i = (in[i] - in[i-1]) - (in[i-1] - in[i-2])`, computed in `int64_t`; a delta or double
//! delta that does not fit refuses the write, as in libtiledb.
//!
//! A part that is not a whole number of values is refused. libtiledb 2.30's release build
//! (assertions off) instead drops the trailing bytes, writing tiles it cannot read back
//! correctly: e.g. `[POSITIVE_DELTA, DOUBLE_DELTA]` on int64, whose 772-byte window
//! table goes through this filter as int64 values. For an empty part it writes
//! two stray values read past the input (and cannot read that back); Tessera writes just
//! the header and reads it back as nothing.

use tessera_types::{ByteReader, FilterType};

use super::compression::{Int, IntKind, with_int};
use crate::{Error, Result};

/// A [`Error::Corrupt`] for DOUBLE_DELTA.
fn corrupt(reason: impl Into<String>) -> Error {
    Error::corrupt(FilterType::DoubleDelta, reason)
}

/// Appends the double-delta encoding of `src`, read as values of `kind`, to `dst`.
///
/// # Errors
/// [`Error::Encode`] when `src` is not a whole number of values or a delta overflows `i64`.
pub(crate) fn compress(kind: IntKind, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    with_int!(kind, T => compress_typed::<T>(src, dst))
}

/// Appends the `orig` bytes the double-delta encoding `src` (values of `kind`) stands for.
///
/// # Errors
/// [`Error::Corrupt`] or [`Error::Format`] when `src` is truncated, too long, or declares a
/// count that does not match `orig`.
pub(crate) fn decompress(kind: IntKind, src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    with_int!(kind, T => decompress_typed::<T>(src, orig, dst))
}

/// Bits of the largest magnitude among the first delta and every double delta.
fn bitsize<T: Int>(src: &[u8]) -> Result<u32> {
    let w = T::SIZE;
    if src.len() <= 2 * w {
        return Ok(0);
    }
    let mut values = src.chunks_exact(w).map(|b| T::read_le(b).to_i128());
    let mut prev = values.next().unwrap_or(0);
    let mut prev_delta: Option<i64> = None;
    let mut max = 0u64;
    for cur in values {
        let delta = i64::try_from(cur - prev).map_err(|_| {
            Error::encode(FilterType::DoubleDelta, "a delta exceeds the range of int64")
        })?;
        let magnitude = match prev_delta {
            None => delta.unsigned_abs(),
            Some(p) => delta
                .checked_sub(p)
                .ok_or_else(|| {
                    Error::encode(
                        FilterType::DoubleDelta,
                        "a double delta exceeds the range of int64",
                    )
                })?
                .unsigned_abs(),
        };
        max = max.max(magnitude);
        prev_delta = Some(delta);
        prev = cur;
    }
    Ok((u64::BITS - max.leading_zeros()).max(1))
}

/// [`compress`] for values of type `T`.
fn compress_typed<T: Int>(src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    let w = T::SIZE;
    if !src.len().is_multiple_of(w) {
        return Err(Error::encode(
            FilterType::DoubleDelta,
            format!("{} bytes are not a whole number of {w}-byte values", src.len()),
        ));
    }
    let n = src.len() / w;
    let bits = bitsize::<T>(src)?;
    dst.push(bits as u8);
    dst.extend_from_slice(&(n as u64).to_le_bytes());
    if bits as usize >= 8 * w - 1 {
        dst.extend_from_slice(src);
        return Ok(());
    }
    dst.extend_from_slice(&src[..n.min(2) * w]);
    if n <= 2 {
        return Ok(());
    }
    let k = bits + 1;
    dst.reserve(((n - 2) * k as usize).div_ceil(64) * 8);
    let mut values = src.chunks_exact(w).map(|b| T::read_le(b).as_i64());
    let (Some(mut p2), Some(mut p1)) = (values.next(), values.next()) else { return Ok(()) };
    let mut word = 0u64;
    let mut used = 0u32;
    for cur in values {
        let dd = cur.wrapping_sub(p1).wrapping_sub(p1.wrapping_sub(p2));
        let v = (u64::from(dd < 0) << bits) | dd.unsigned_abs();
        if used + k <= 64 {
            word |= v << (64 - used - k);
            used += k;
        } else {
            let spill = used + k - 64;
            word |= v >> spill;
            dst.extend_from_slice(&word.to_le_bytes());
            word = v << (64 - spill);
            used = spill;
        }
        if used == 64 {
            dst.extend_from_slice(&word.to_le_bytes());
            word = 0;
            used = 0;
        }
        p2 = p1;
        p1 = cur;
    }
    if used > 0 {
        dst.extend_from_slice(&word.to_le_bytes());
    }
    Ok(())
}

/// The `i`-th little-endian word of `stream`, or 0 past its end.
#[inline]
fn word_at(stream: &[u8], i: usize) -> u64 {
    match stream.get(i * 8..i * 8 + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => 0,
    }
}

/// [`decompress`] for values of type `T`.
fn decompress_typed<T: Int>(src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    let w = T::SIZE;
    let mut r = ByteReader::new(src, "double delta part");
    let bits = u32::from(r.u8("bitsize")?);
    let n = r.u64("value count")?;
    if n.checked_mul(w as u64) != Some(orig as u64) {
        return Err(corrupt(format!(
            "{n} values of {w} bytes do not make the declared {orig} bytes"
        )));
    }
    let n = orig / w;
    let rest = r.rest();
    if bits as usize >= 8 * w - 1 {
        if rest.len() != orig {
            return Err(corrupt(format!(
                "{} raw bytes instead of the declared {orig}",
                rest.len()
            )));
        }
        dst.extend_from_slice(rest);
        return Ok(());
    }
    let head = n.min(2) * w;
    let k = bits + 1;
    let words = if n > 2 { ((n - 2) as u128 * u128::from(k)).div_ceil(64) } else { 0 };
    if rest.len() as u128 != head as u128 + words * 8 {
        return Err(corrupt(format!(
            "{} bytes after the header, but {n} values of {bits} bits need {}",
            rest.len(),
            head as u128 + words * 8
        )));
    }
    let start = dst.len();
    dst.resize(start + orig, 0);
    let out = &mut dst[start..];
    out[..head].copy_from_slice(&rest[..head]);
    if n <= 2 {
        return Ok(());
    }
    let stream = &rest[head..];
    let mut p2 = T::read_le(&rest[..w]).as_i64();
    let mut p1 = T::read_le(&rest[w..2 * w]).as_i64();
    let mask = (1u64 << bits) - 1;
    let shift = 128 - k;
    let mut bit = 0usize;
    for cell in out[head..].chunks_exact_mut(w) {
        let (i, off) = (bit / 64, bit % 64);
        let pair = (u128::from(word_at(stream, i)) << 64) | u128::from(word_at(stream, i + 1));
        let v = ((pair << off) >> shift) as u64;
        let magnitude = (v & mask) as i64;
        let dd = if v >> bits != 0 { magnitude.wrapping_neg() } else { magnitude };
        let value = T::from_i64(dd.wrapping_add(p1.wrapping_mul(2)).wrapping_sub(p2));
        value.put(cell);
        p2 = p1;
        p1 = value.as_i64();
        bit += k as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::util::test_support::unhex as hex;
    use tessera_types::Primitive;

    fn le<T: Primitive>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            v.write_le(&mut out);
        }
        out
    }

    fn round_trip(kind: IntKind, src: &[u8]) -> Vec<u8> {
        let mut enc = Vec::new();
        compress(kind, src, &mut enc).unwrap();
        let mut dec = b"pre".to_vec();
        decompress(kind, &enc, src.len(), &mut dec).unwrap();
        assert_eq!(&dec[..3], b"pre");
        assert!(dec[3..] == src[..], "{kind:?}, {} bytes", src.len());
        enc
    }

    /// Small steps with occasional jumps, wrapped to the width of `T`.
    fn values<T: Primitive>(n: usize, jump: i128) -> Vec<u8> {
        let mut out = Vec::new();
        let mut acc: i128 = 10;
        for i in 0..n {
            acc += (i % 5) as i128 - 1;
            if i % 97 == 50 {
                acc += jump;
            }
            T::from_i128_wrapping(acc).write_le(&mut out);
        }
        out
    }

    #[test]
    fn round_trips_over_types_and_sizes() {
        for n in [0, 1, 2, 3, 7, 1001, 3 * 16384 + 5] {
            round_trip(IntKind::I8, &values::<i8>(n, 3));
            round_trip(IntKind::U8, &values::<u8>(n, 3));
            round_trip(IntKind::I16, &values::<i16>(n, 300));
            round_trip(IntKind::U16, &values::<u16>(n, 300));
            round_trip(IntKind::I32, &values::<i32>(n, 1 << 20));
            round_trip(IntKind::U32, &values::<u32>(n, 1 << 20));
            round_trip(IntKind::I64, &values::<i64>(n, 1 << 40));
            round_trip(IntKind::U64, &values::<u64>(n, 1 << 40));
            // Raw fallback: jumps too large for the width.
            round_trip(IntKind::I8, &values::<i8>(n, 120));
            round_trip(IntKind::I16, &values::<i16>(n, 30_000));
            round_trip(IntKind::U32, &values::<u32>(n, 1 << 31));
        }
        // Every bit size from 1 to 62 crosses word boundaries at a different phase.
        for b in 0..62 {
            let v: Vec<i64> = (0..200).map(|i| if i % 2 == 0 { 0 } else { 1i64 << b }).collect();
            round_trip(IntKind::I64, &le(&v));
        }
        let extremes = [i64::MIN, i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX / 2];
        round_trip(IntKind::I64, &le(&extremes[..4]));
        round_trip(IntKind::U64, &le(&[u64::MAX, u64::MAX - 1, u64::MAX - 3, u64::MAX - 3]));
    }

    #[test]
    fn layout_of_short_inputs() {
        assert_eq!(round_trip(IntKind::I32, &[]), hex("00 0000000000000000"));
        assert_eq!(round_trip(IntKind::I32, &le(&[7i32])), hex("00 0100000000000000 07000000"));
        assert_eq!(
            round_trip(IntKind::U64, &le(&[0u64, u64::MAX])),
            hex("00 0200000000000000 0000000000000000 ffffffffffffffff")
        );
    }

    #[test]
    fn overflow_is_an_encode_error() {
        // The last double delta needs 2^63 + 7 (libtiledb: "Some negative double delta is out
        // of bounds").
        let v = le(&[u64::MAX, u64::MAX - 2, 1 << 63, (1 << 63) + 10]);
        let e = compress(IntKind::U64, &v, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, Error::Encode { .. }), "{e}");
        let v = le(&[0u64, u64::MAX, 0]);
        assert!(compress(IntKind::U64, &v, &mut Vec::new()).is_err());
        let v = le(&[i64::MIN, i64::MAX, 0]);
        assert!(compress(IntKind::I64, &v, &mut Vec::new()).is_err());
        assert!(compress(IntKind::I32, &[1, 2, 3], &mut Vec::new()).is_err());
    }

    /// Data parts of libtiledb 2.30 tiles with `DoubleDeltaFilter()`.
    #[test]
    fn matches_libtiledb_bytes() {
        let cases: Vec<(IntKind, Vec<u8>, &str)> = vec![
            // The first delta counts: bitsize 10 although every double delta is 0.
            (
                IntKind::I32,
                le(&[0i32, 1000, 2000, 3000]),
                "0a040000000000000000000000e80300000000000000000000",
            ),
            (
                IntKind::I32,
                le(&[10i32, 12, 15, 11, -40, -41, -39, 100, 99, 98, 1000, -7, 3, 3, 3, 3, 8]),
                "0b11000000000000000a0000000c000000300032f0820718003f757f3800c08889\
                 0050000000000a98",
            ),
            (
                IntKind::I64,
                le(&[-(1i64 << 40), 1 << 40, 5, 7, 7, -3, 1 << 35, (1 << 35) + 1, (1 << 35) + 3]),
                "2a09000000000000000000000000ffffff0000000000010000ffff63ffffffffdf0100000000f6ff\
                 ff0010a0000000004000000000021b00000000080000000080",
            ),
            // Raw fallback for uint8 (bitsize 9 >= 7).
            (IntKind::U8, vec![0, 255, 0, 255, 3], "09050000000000000000ff00ff03"),
            (
                IntKind::U64,
                le(&[
                    u64::MAX,
                    u64::MAX - 2,
                    u64::MAX - 9,
                    u64::MAX - 29,
                    u64::MAX - 29,
                    u64::MAX,
                    (1 << 63) + (1 << 62),
                ]),
                "3f0700000000000000fffffffffffffffffdfffffffffffffff6ffffffffffffffe2ffffffffffff\
                 ffe2ffffffffffffffffffffffffffffff00000000000000c0",
            ),
            // int64 data reinterpreted as uint32.
            (
                IntKind::U32,
                le(&[7i64, 9, 13, 1, 2, 3, 60000, 70000, 70003]),
                "1212000000000000000700000000000000400b004800100200008000001d00a0011800b000000400\
                 1c88a1f7034cdd31750000e6221e1711b8",
            ),
            (
                IntKind::I16,
                (0..200i16).step_by(3).flat_map(i16::to_le_bytes).collect(),
                "024300000000000000000003000000000000000000000000000000000000000000000000000000000\
                 000000000",
            ),
            // datetime64[D] as int64.
            (
                IntKind::I64,
                le(&[18262i64, 18263, 18265, 18266, 0]),
                "0f05000000000000005647000000000000574700000000000000005bc701800100",
            ),
        ];
        for (kind, input, golden) in cases {
            let golden = hex(golden);
            let mut enc = Vec::new();
            compress(kind, &input, &mut enc).unwrap();
            assert_eq!(enc, golden, "{kind:?}");
            let mut dec = Vec::new();
            decompress(kind, &golden, input.len(), &mut dec).unwrap();
            assert_eq!(dec, input, "{kind:?}");
        }
    }

    #[test]
    fn rejects_inconsistent_input() {
        let input = le(&[10i32, 12, 15, 11, -40, -41, -39, 100, 99]);
        let enc = round_trip(IntKind::I32, &input);
        let mut out = b"k".to_vec();
        assert!(decompress(IntKind::I32, &enc, input.len() + 4, &mut out).is_err());
        assert!(decompress(IntKind::I32, &enc, input.len() - 1, &mut out).is_err());
        assert!(decompress(IntKind::I32, &enc[..enc.len() - 1], input.len(), &mut out).is_err());
        let mut longer = enc.clone();
        longer.extend_from_slice(&[0; 8]);
        assert!(decompress(IntKind::I32, &longer, input.len(), &mut out).is_err());
        let mut huge = enc.clone();
        huge[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decompress(IntKind::I32, &huge, input.len(), &mut out).is_err());
        assert!(decompress(IntKind::I32, &enc[..5], input.len(), &mut out).is_err());
        assert_eq!(out, b"k");
    }
}
