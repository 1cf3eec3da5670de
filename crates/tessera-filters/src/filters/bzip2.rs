//! BZIP2: one bzip2 stream per part, as libtiledb's `BZip::compress` writes it with
//! `BZ2_bzBuffToBuffCompress(block size = level, verbosity 0, work factor 0)`. Levels below 1
//! mean 1; levels above 9 are refused (libbz2 would answer `BZ_PARAM_ERROR`).

use crate::Result;

/// Appends the bzip2 stream of `src` at libtiledb level `level` to `dst`.
#[cfg(feature = "bzip2")]
pub(crate) fn compress(level: i32, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    use bzip2::{Action, Compress, Compression, Status};
    use tessera_types::FilterType;

    use crate::Error;

    let level = level.max(1);
    let Some(compression) = u32::try_from(level).ok().and_then(Compression::try_new) else {
        return Err(Error::encode(FilterType::Bzip2, format!("level {level} is above 9")));
    };
    let mut bz = Compress::new(compression, 0);
    // libbz2's documented bound: 1% more than the input plus 600 bytes.
    dst.reserve(src.len() + src.len() / 100 + 601);
    loop {
        let consumed = usize::try_from(bz.total_in()).unwrap_or(usize::MAX).min(src.len());
        let status = bz
            .compress_vec(&src[consumed..], dst, Action::Finish)
            .map_err(|e| Error::encode(FilterType::Bzip2, e.to_string()))?;
        if status == Status::StreamEnd {
            return Ok(());
        }
        dst.reserve(dst.capacity().max(1024));
    }
}

/// Appends the `orig` bytes the bzip2 stream `src` holds to `dst`.
#[cfg(feature = "bzip2")]
pub(crate) fn decompress(src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    use bzip2::{Decompress, Status};
    use tessera_types::FilterType;

    use super::compression::{Step, stream_into};
    use crate::Error;

    let mut bz = Decompress::new(false);
    stream_into(FilterType::Bzip2, src.len(), orig, dst, |out| {
        let (in0, out0) = (bz.total_in(), bz.total_out());
        let pos = usize::try_from(in0).unwrap_or(usize::MAX).min(src.len());
        let status = bz
            .decompress(&src[pos..], out)
            .map_err(|e| Error::corrupt(FilterType::Bzip2, e.to_string()))?;
        let done = status == Status::StreamEnd;
        if done && bz.total_in() != src.len() as u64 {
            return Err(Error::corrupt(
                FilterType::Bzip2,
                format!(
                    "{} bytes after the end of the bzip2 stream",
                    src.len() as u64 - bz.total_in()
                ),
            ));
        }
        Ok(Step { written: (bz.total_out() - out0) as usize, consumed: bz.total_in() != in0, done })
    })
}

/// Stand-in when the `bzip2` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "bzip2"))]
pub(crate) fn compress(_level: i32, _src: &[u8], _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("BZIP2 (feature `bzip2` is off)".into()))
}

/// Stand-in when the `bzip2` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "bzip2"))]
pub(crate) fn decompress(_src: &[u8], _orig: usize, _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("BZIP2 (feature `bzip2` is off)".into()))
}

#[cfg(all(test, feature = "bzip2"))]
mod tests {
    use super::*;
    use crate::filters::util::test_support::unhex as hex;

    /// 200 int32 values `(i * 7) % 23`, the input of the libtiledb tiles below.
    fn input() -> Vec<u8> {
        (0..200i32).flat_map(|i| ((i * 7) % 23).to_le_bytes()).collect()
    }

    /// Data part of a libtiledb 2.30 tile with `Bzip2Filter()` (level -1, so `BZh1`).
    const LEVEL_DEFAULT: &str = "425a683131415926535915c1d521000001e0007fffff00200070500188d34d1a05\
        2a93400d18119616630d2351b462371c47e8c7c4791ea3d8ca3e47d8ce341ac6c378dc711fa3ea54b218503f8b\
        b9229c28480ae0ea9080";

    #[test]
    fn matches_libtiledb_bytes() {
        let golden = hex(LEVEL_DEFAULT);
        for level in [-1, 0, 1] {
            let mut out = b"x".to_vec();
            compress(level, &input(), &mut out).unwrap();
            assert_eq!(out[1..], golden[..], "level {level}");
        }
        // Level 9 differs only in the block-size digit of the header.
        let mut out = Vec::new();
        compress(9, &input(), &mut out).unwrap();
        assert_eq!(&out[..4], b"BZh9");
        assert_eq!(out[4..], golden[4..]);
        let mut back = b"y".to_vec();
        decompress(&golden, 800, &mut back).unwrap();
        assert_eq!(back[1..], input()[..]);
        assert!(compress(10, &input(), &mut Vec::new()).is_err());
    }

    #[test]
    fn empty_large_and_errors() {
        let mut comp = Vec::new();
        compress(-1, &[], &mut comp).unwrap();
        let mut back = Vec::new();
        decompress(&comp, 0, &mut back).unwrap();
        assert!(back.is_empty());
        // Highly compressible: decoded in several growing steps.
        let big = vec![42u8; 2_000_000];
        let mut comp = Vec::new();
        compress(9, &big, &mut comp).unwrap();
        let mut back = Vec::new();
        decompress(&comp, big.len(), &mut back).unwrap();
        assert!(back == big);
        let golden = hex(LEVEL_DEFAULT);
        let mut out = b"keep".to_vec();
        assert!(decompress(&golden, 799, &mut out).is_err());
        assert!(decompress(&golden, 801, &mut out).is_err());
        assert!(decompress(&golden[..golden.len() - 2], 800, &mut out).is_err());
        assert!(decompress(&golden, u32::MAX as usize, &mut out).is_err());
        let mut longer = golden.clone();
        longer.push(0);
        assert!(decompress(&longer, 800, &mut out).is_err());
        assert_eq!(out, b"keep");
    }
}
