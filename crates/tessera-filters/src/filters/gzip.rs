//! GZIP: one zlib stream (RFC 1950) per part, as libtiledb's `GZip::compress` writes it with
//! `deflateInit(level)`; levels below 0 mean `Z_DEFAULT_COMPRESSION`, above 9 are refused.
//! Real zlib (through `libz-sys`) keeps the bytes identical to libtiledb's and Python's.

use crate::Result;

/// The highest level zlib accepts.
#[cfg_attr(not(feature = "gzip"), allow(dead_code))]
const MAX_LEVEL: i32 = 9;

/// Appends the zlib stream of `src` at libtiledb level `level` to `dst`.
#[cfg(feature = "gzip")]
pub(crate) fn compress(level: i32, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    use flate2::{Compress, Compression, FlushCompress, Status};
    use tessera_types::FilterType;

    use crate::Error;

    if level > MAX_LEVEL {
        return Err(Error::encode(
            FilterType::Gzip,
            format!("level {level} is above zlib's maximum {MAX_LEVEL}"),
        ));
    }
    // zlib's Z_DEFAULT_COMPRESSION (-1) is level 6.
    let level = if level < 0 { 6 } else { level as u32 };
    let mut z = Compress::new(Compression::new(level), true);
    // deflateBound for the default window and memory level, plus the zlib framing.
    dst.reserve(src.len() + (src.len() >> 12) + (src.len() >> 14) + (src.len() >> 25) + 19);
    loop {
        let consumed = usize::try_from(z.total_in()).unwrap_or(usize::MAX).min(src.len());
        let status = z
            .compress_vec(&src[consumed..], dst, FlushCompress::Finish)
            .map_err(|e| Error::encode(FilterType::Gzip, e.to_string()))?;
        match status {
            Status::StreamEnd => return Ok(()),
            Status::Ok | Status::BufError => dst.reserve(dst.capacity().max(64)),
        }
    }
}

/// Appends the `orig` bytes the zlib stream `src` holds to `dst`.
#[cfg(feature = "gzip")]
pub(crate) fn decompress(src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    use flate2::{Decompress, FlushDecompress, Status};
    use tessera_types::FilterType;

    use super::compression::{Step, stream_into};
    use crate::Error;

    let mut z = Decompress::new(true);
    stream_into(FilterType::Gzip, src.len(), orig, dst, |out| {
        let (in0, out0) = (z.total_in(), z.total_out());
        let pos = usize::try_from(in0).unwrap_or(usize::MAX).min(src.len());
        let status = z
            .decompress(&src[pos..], out, FlushDecompress::None)
            .map_err(|e| Error::corrupt(FilterType::Gzip, e.to_string()))?;
        let consumed = z.total_in() != in0;
        let done = status == Status::StreamEnd;
        if done && z.total_in() != src.len() as u64 {
            return Err(Error::corrupt(
                FilterType::Gzip,
                format!(
                    "{} bytes after the end of the zlib stream",
                    src.len() as u64 - z.total_in()
                ),
            ));
        }
        Ok(Step { written: (z.total_out() - out0) as usize, consumed, done })
    })
}

/// Stand-in when the `gzip` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "gzip"))]
pub(crate) fn compress(_level: i32, _src: &[u8], _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("GZIP (feature `gzip` is off)".into()))
}

/// Stand-in when the `gzip` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "gzip"))]
pub(crate) fn decompress(_src: &[u8], _orig: usize, _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("GZIP (feature `gzip` is off)".into()))
}

#[cfg(all(test, feature = "gzip"))]
mod tests {
    use super::*;
    use crate::filters::util::test_support::unhex as hex;

    /// 200 int32 values `(i * 7) % 23`, the input of the libtiledb tiles below.
    fn input() -> Vec<u8> {
        (0..200i32).flat_map(|i| ((i * 7) % 23).to_le_bytes()).collect()
    }

    /// Data part of a libtiledb 2.30 tile with `GzipFilter()` (level -1) and level 9.
    const LEVEL_DEFAULT: &str = "789cedccd70980401400c167ce9eb9ff521db00ae116e67723223a566e1a664e2a\
        46760a7a120f2d0b1735130725035b7ce5777efff9fd02725f0896";
    const LEVEL_9: &str = "78daedccd70980401400c167ce9eb9ff521db00ae116e67723223a566e1a664e2a\
        46760a7a120f2d0b1735130725035b7ce5777efff9fd02725f0896";

    #[test]
    fn matches_libtiledb_bytes() {
        for (level, golden) in [(-1, LEVEL_DEFAULT), (9, LEVEL_9)] {
            let golden = hex(golden);
            let mut out = b"x".to_vec();
            compress(level, &input(), &mut out).unwrap();
            assert_eq!(out[1..], golden[..], "level {level}");
            let mut back = b"y".to_vec();
            decompress(&golden, 800, &mut back).unwrap();
            assert_eq!(back[1..], input()[..]);
        }
    }

    #[test]
    fn empty_and_levels() {
        let mut out = Vec::new();
        compress(-1, &[], &mut out).unwrap();
        assert_eq!(out, hex("789c030000000001"));
        let mut out = Vec::new();
        compress(1, b"abc", &mut out).unwrap();
        assert_eq!(&out[..2], &[0x78, 0x01]);
        assert!(compress(10, b"abc", &mut Vec::new()).is_err());
        let mut back = Vec::new();
        decompress(&hex("789c030000000001"), 0, &mut back).unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn rejects_wrong_lengths_and_garbage() {
        let mut comp = Vec::new();
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        compress(-1, &data, &mut comp).unwrap();
        let mut out = b"keep".to_vec();
        assert!(decompress(&comp, 4999, &mut out).is_err());
        assert!(decompress(&comp, 5001, &mut out).is_err());
        assert!(decompress(&comp[..comp.len() - 1], 5000, &mut out).is_err());
        assert!(decompress(&comp, usize::MAX, &mut out).is_err());
        let mut longer = comp.clone();
        longer.push(0);
        assert!(decompress(&longer, 5000, &mut out).is_err());
        assert_eq!(out, b"keep");
        decompress(&comp, 5000, &mut out).unwrap();
        assert_eq!(out[4..], data[..]);
    }
}
