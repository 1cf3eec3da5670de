//! DELTA, as libtiledb's `Delta::compress` lays it out (one part at a time):
//! `u64 n, T in[0], T (in[i] - in[i-1]) for i = 1..n`, each delta truncated to `T`.
//!
//! libtiledb computes the deltas in `int64_t` and keeps the low bytes, so encoding and
//! decoding are plain wrapping arithmetic in the width of `T`; nothing overflows.
//!
//! A part that is not a whole number of values is refused. libtiledb 2.30's release build
//! (assertions off) instead drops the trailing bytes, writing tiles it cannot read back
//! correctly: e.g. `[POSITIVE_DELTA, DELTA]` on int64, whose 772-byte window
//! table goes through this filter as int64 values. For an empty part it writes
//! one stray value read past the input (and cannot read that back); Tessera writes just
//! the header and reads it back as nothing.

use tessera_types::{ByteReader, FilterType};

use super::compression::{Int, IntKind, with_int};
use crate::{Error, Result};

/// Appends the delta encoding of `src`, read as values of `kind`, to `dst`.
///
/// # Errors
/// [`Error::Encode`] when `src` is not a whole number of values.
pub(crate) fn compress(kind: IntKind, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    with_int!(kind, T => compress_typed::<T>(src, dst))
}

/// Appends the `orig` bytes the delta encoding `src` (values of `kind`) stands for to `dst`.
///
/// # Errors
/// [`Error::Corrupt`] or [`Error::Format`] when `src` is truncated, too long, or declares a
/// count that does not match `orig`.
pub(crate) fn decompress(kind: IntKind, src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    with_int!(kind, T => decompress_typed::<T>(src, orig, dst))
}

/// [`compress`] for values of type `T`.
fn compress_typed<T: Int>(src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    let w = T::SIZE;
    if !src.len().is_multiple_of(w) {
        return Err(Error::encode(
            FilterType::Delta,
            format!("{} bytes are not a whole number of {w}-byte values", src.len()),
        ));
    }
    let n = src.len() / w;
    dst.extend_from_slice(&(n as u64).to_le_bytes());
    if n == 0 {
        return Ok(());
    }
    let start = dst.len();
    dst.resize(start + src.len(), 0);
    let out = &mut dst[start..];
    out[..w].copy_from_slice(&src[..w]);
    let mut prev = T::read_le(src).as_i64();
    for (cur, cell) in src[w..].chunks_exact(w).zip(out[w..].chunks_exact_mut(w)) {
        let cur = T::read_le(cur).as_i64();
        T::from_i64(cur.wrapping_sub(prev)).put(cell);
        prev = cur;
    }
    Ok(())
}

/// [`decompress`] for values of type `T`.
fn decompress_typed<T: Int>(src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    let w = T::SIZE;
    let mut r = ByteReader::new(src, "delta part");
    let n = r.u64("value count")?;
    let rest = r.rest();
    if n.checked_mul(w as u64) != Some(orig as u64) || rest.len() != orig {
        return Err(Error::corrupt(
            FilterType::Delta,
            format!(
                "{n} values of {w} bytes in {} bytes do not make the declared {orig} bytes",
                rest.len()
            ),
        ));
    }
    let start = dst.len();
    dst.resize(start + orig, 0);
    let mut acc = 0i64;
    for (i, (delta, cell)) in rest.chunks_exact(w).zip(dst[start..].chunks_exact_mut(w)).enumerate()
    {
        let d = T::read_le(delta).as_i64();
        let value = T::from_i64(if i == 0 { d } else { acc.wrapping_add(d) });
        value.put(cell);
        acc = value.as_i64();
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

    fn values<T: Primitive>(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..n {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            T::from_i128_wrapping(i128::from(state as i64)).write_le(&mut out);
        }
        out
    }

    #[test]
    fn round_trips_over_types_and_sizes() {
        for n in [0, 1, 2, 7, 1001, 3 * 8192 + 1] {
            round_trip(IntKind::I8, &values::<i8>(n));
            round_trip(IntKind::U8, &values::<u8>(n));
            round_trip(IntKind::I16, &values::<i16>(n));
            round_trip(IntKind::U16, &values::<u16>(n));
            round_trip(IntKind::I32, &values::<i32>(n));
            round_trip(IntKind::U32, &values::<u32>(n));
            round_trip(IntKind::I64, &values::<i64>(n));
            round_trip(IntKind::U64, &values::<u64>(n));
        }
        assert_eq!(round_trip(IntKind::I64, &[]), hex("0000000000000000"));
        round_trip(IntKind::U64, &le(&[0u64, u64::MAX, 0, u64::MAX / 2]));
        round_trip(IntKind::I64, &le(&[i64::MIN, i64::MAX, i64::MIN]));
    }

    /// Data parts of libtiledb 2.30 tiles with `DeltaFilter()`.
    #[test]
    fn matches_libtiledb_bytes() {
        let cases: Vec<(IntKind, Vec<u8>, &str)> = vec![
            (
                IntKind::I32,
                le(&[10i32, 12, 15, 11, -40, -41, i32::MAX, i32::MIN, 0]),
                "0900000000000000 0a000000 02000000 03000000 fcffffff cdffffff ffffffff
                 28000080 01000000 00000080",
            ),
            // int64 data reinterpreted as int32: n counts the int32 values.
            (
                IntKind::I32,
                le(&[1i64, 2, 3, 1 << 40, -5]),
                "0a00000000000000 01000000 ffffffff 02000000 feffffff 03000000 fdffffff
                 00000000 00010000 fbfeffff 04000000",
            ),
            (IntKind::U8, vec![250, 3, 7, 7, 255, 0], "0600000000000000 fa 09 04 00 f8 01"),
        ];
        for (kind, input, golden) in cases {
            let golden = hex(golden);
            assert_eq!(round_trip(kind, &input), golden, "{kind:?}");
        }
    }

    #[test]
    fn rejects_inconsistent_input() {
        let input = le(&[1i32, 5, 9]);
        let enc = round_trip(IntKind::I32, &input);
        let mut out = b"k".to_vec();
        assert!(decompress(IntKind::I32, &enc, 8, &mut out).is_err());
        assert!(decompress(IntKind::I32, &enc, 16, &mut out).is_err());
        assert!(decompress(IntKind::I32, &enc[..enc.len() - 1], 12, &mut out).is_err());
        assert!(decompress(IntKind::I32, &enc[..4], 12, &mut out).is_err());
        let mut huge = enc.clone();
        huge[..8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        assert!(decompress(IntKind::I32, &huge, 12, &mut out).is_err());
        assert!(compress(IntKind::I32, &[1, 2, 3, 4, 5], &mut Vec::new()).is_err());
        assert_eq!(out, b"k");
    }
}
