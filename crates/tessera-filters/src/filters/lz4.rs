//! LZ4: one raw LZ4 block per part (no frame, no size prefix); the level is ignored. The
//! encoder is `lz4_flex`, whose blocks differ from C lz4 1.10.0's (libtiledb's) but decode
//! the same; the decoder needs the part's original length from the framing.

use crate::Result;

/// Appends the LZ4 block of `src` to `dst`.
#[cfg(feature = "lz4")]
pub(crate) fn compress(src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    use tessera_types::FilterType;

    use crate::Error;

    let start = dst.len();
    dst.resize(start + lz4_flex::block::get_maximum_output_size(src.len()), 0);
    match lz4_flex::block::compress_into(src, &mut dst[start..]) {
        Ok(n) => {
            dst.truncate(start + n);
            Ok(())
        }
        Err(e) => {
            dst.truncate(start);
            Err(Error::encode(FilterType::Lz4, e.to_string()))
        }
    }
}

/// Appends the `orig` bytes the LZ4 block `src` holds to `dst`.
#[cfg(feature = "lz4")]
pub(crate) fn decompress(src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    use tessera_types::FilterType;

    use crate::Error;

    // One LZ4 byte never stands for more than 255 output bytes, so a larger `orig` is a lie
    // told before anything is allocated for it.
    if orig > src.len().saturating_mul(255).saturating_add(64) {
        return Err(Error::corrupt(
            FilterType::Lz4,
            format!("{} compressed bytes cannot hold {orig} bytes", src.len()),
        ));
    }
    let start = dst.len();
    dst.resize(start + orig, 0);
    let res = lz4_flex::block::decompress_into(src, &mut dst[start..]);
    match res {
        Ok(n) if n == orig => Ok(()),
        Ok(n) => {
            dst.truncate(start);
            Err(Error::corrupt(
                FilterType::Lz4,
                format!("block decodes to {n} bytes instead of the declared {orig}"),
            ))
        }
        Err(e) => {
            dst.truncate(start);
            Err(Error::corrupt(FilterType::Lz4, e.to_string()))
        }
    }
}

/// Stand-in when the `lz4` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "lz4"))]
pub(crate) fn compress(_src: &[u8], _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("LZ4 (feature `lz4` is off)".into()))
}

/// Stand-in when the `lz4` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "lz4"))]
pub(crate) fn decompress(_src: &[u8], _orig: usize, _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("LZ4 (feature `lz4` is off)".into()))
}

#[cfg(all(test, feature = "lz4"))]
mod tests {
    use super::*;
    use crate::filters::util::test_support::unhex as hex;

    /// 200 int32 values `(i * 7) % 23`, the input of the libtiledb tile below.
    fn input() -> Vec<u8> {
        (0..200i32).flat_map(|i| ((i * 7) % 23).to_le_bytes()).collect()
    }

    /// Data part of a libtiledb 2.30 tile with `LZ4Filter()` (C lz4 1.10.0).
    const LIBTILEDB: &str = "f04b00000000070000000e00000015000000050000000c00000013000000030000\
        000a0000001100000001000000080000000f00000016000000060000000d00000014000000040000000b000000\
        12000000020000000900000010005a000f5c00ffffac50000d000000";

    #[test]
    fn decodes_libtiledb_bytes_and_round_trips() {
        let mut back = b"y".to_vec();
        decompress(&hex(LIBTILEDB), 800, &mut back).unwrap();
        assert_eq!(back[1..], input()[..]);
        let mut comp = b"x".to_vec();
        compress(&input(), &mut comp).unwrap();
        let mut back = Vec::new();
        decompress(&comp[1..], 800, &mut back).unwrap();
        assert_eq!(back, input());
    }

    #[test]
    fn empty_and_errors() {
        let mut comp = Vec::new();
        compress(&[], &mut comp).unwrap();
        let mut back = b"k".to_vec();
        decompress(&comp, 0, &mut back).unwrap();
        assert_eq!(back, b"k");
        let golden = hex(LIBTILEDB);
        assert!(decompress(&golden, 799, &mut back).is_err());
        assert!(decompress(&golden, 801, &mut back).is_err());
        assert!(decompress(&golden[..golden.len() - 3], 800, &mut back).is_err());
        assert!(decompress(&golden, u32::MAX as usize, &mut back).is_err());
        assert_eq!(back, b"k");
    }
}
