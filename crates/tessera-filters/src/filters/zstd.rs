//! ZSTD: one zstd frame per part, as libtiledb's `ZStd::compress` writes it with
//! `ZSTD_compressCCtx` (the frame records its content size). Levels below -7 mean 3; other
//! negative levels are zstd's fast levels and are used as they are (the default -1 too).

use crate::Result;

/// libtiledb replaces levels below this by [`DEFAULT_LEVEL`].
#[cfg_attr(not(feature = "zstd"), allow(dead_code))]
const LEVEL_LIMIT: i32 = -7;
/// libtiledb's `ZStd::default_level()`.
#[cfg_attr(not(feature = "zstd"), allow(dead_code))]
const DEFAULT_LEVEL: i32 = 3;

#[cfg(feature = "zstd")]
mod contexts {
    use std::cell::RefCell;

    use tessera_types::FilterType;
    use zstd::zstd_safe::{CCtx, DCtx, ResetDirective};

    use crate::{Error, Result};

    thread_local! {
        static CCTX: RefCell<Option<CCtx<'static>>> = const { RefCell::new(None) };
        static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
    }

    /// zstd could not allocate a context.
    fn no_memory() -> Error {
        Error::Unsupported("zstd could not allocate a context".into())
    }

    /// Runs `f` with this thread's compression context, freshly reset.
    pub(super) fn with_cctx<R>(f: impl FnOnce(&mut CCtx<'static>) -> Result<R>) -> Result<R> {
        CCTX.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(CCtx::try_create().ok_or_else(no_memory)?);
            }
            let cctx = slot.as_mut().ok_or_else(no_memory)?;
            cctx.reset(ResetDirective::SessionOnly)
                .map_err(|e| Error::encode(FilterType::Zstd, error_name(e)))?;
            f(cctx)
        })
    }

    /// Runs `f` with this thread's decompression context, freshly reset.
    pub(super) fn with_dctx<R>(f: impl FnOnce(&mut DCtx<'static>) -> Result<R>) -> Result<R> {
        DCTX.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(DCtx::try_create().ok_or_else(no_memory)?);
            }
            let dctx = slot.as_mut().ok_or_else(no_memory)?;
            dctx.reset(ResetDirective::SessionOnly)
                .map_err(|e| Error::corrupt(FilterType::Zstd, error_name(e)))?;
            f(dctx)
        })
    }

    /// zstd's name for error code `e`.
    pub(super) fn error_name(e: usize) -> String {
        zstd::zstd_safe::get_error_name(e).to_string()
    }
}

/// Appends the zstd frame of `src` at libtiledb level `level` to `dst`.
#[cfg(feature = "zstd")]
pub(crate) fn compress(level: i32, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    use tessera_types::FilterType;

    use crate::Error;

    let level = if level < LEVEL_LIMIT { DEFAULT_LEVEL } else { level };
    let start = dst.len();
    dst.resize(start + zstd::zstd_safe::compress_bound(src.len()), 0);
    let res = contexts::with_cctx(|cctx| {
        cctx.compress(&mut dst[start..], src, level)
            .map_err(|e| Error::encode(FilterType::Zstd, contexts::error_name(e)))
    });
    match res {
        Ok(n) => {
            dst.truncate(start + n);
            Ok(())
        }
        Err(e) => {
            dst.truncate(start);
            Err(e)
        }
    }
}

/// Appends the `orig` bytes the zstd frame(s) `src` hold to `dst`.
#[cfg(feature = "zstd")]
pub(crate) fn decompress(src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    use tessera_types::FilterType;

    use crate::Error;

    // A frame that states another content size is corrupt before anything is allocated.
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(src)
        && size != orig as u64
    {
        return Err(Error::corrupt(
            FilterType::Zstd,
            format!("frame content size {size} differs from the declared {orig} bytes"),
        ));
    }
    let start = dst.len();
    let res = contexts::with_dctx(|dctx| decompress_into_capacity(dctx, src, orig, dst));
    if res.is_err() {
        dst.truncate(start);
    }
    res
}

/// Streams the frame(s) `src` into the spare capacity of `dst` (no zeroing, no copy), in
/// windows that grow from a size bounded by the compressed length, so a corrupt chunk that
/// announces a huge length does not allocate it before decoding shows it is real.
#[cfg(feature = "zstd")]
fn decompress_into_capacity(
    dctx: &mut zstd::zstd_safe::DCtx<'static>,
    src: &[u8],
    orig: usize,
    dst: &mut Vec<u8>,
) -> Result<()> {
    use tessera_types::FilterType;
    use zstd::zstd_safe::{InBuffer, OutBuffer};

    use crate::Error;

    const MIN_WINDOW: usize = 1 << 18;
    let corrupt = |m: String| Error::corrupt(FilterType::Zstd, m);
    let start = dst.len();
    // Room for `orig` bytes at most, unless the stream goes on past them: then one more
    // byte lets a stream that is too long show itself. (Asking for that byte up front would
    // make a caller's exactly sized buffer grow, and copy, for every last chunk of a tile.)
    let mut window = orig.min(src.len().saturating_mul(8).max(MIN_WINDOW));
    let mut input = InBuffer { src, pos: 0 };
    loop {
        let filled = dst.len() - start;
        if filled >= window {
            window = if window >= orig {
                orig.saturating_add(1)
            } else {
                orig.min(window.saturating_mul(2))
            };
        }
        let want = start + window;
        if dst.capacity() < want {
            let extra = want - dst.len();
            dst.try_reserve_exact(extra)
                .map_err(|_| corrupt(format!("cannot allocate {extra} bytes for the output")))?;
        }
        let consumed_before = input.pos;
        let pos = dst.len();
        let hint = {
            let mut output = OutBuffer::around_pos(dst, pos);
            dctx.decompress_stream(&mut output, &mut input)
                .map_err(|e| corrupt(contexts::error_name(e).to_string()))?
        };
        let written = dst.len() - pos;
        let filled = dst.len() - start;
        if filled > orig {
            return Err(corrupt(format!("stream decodes to more than the declared {orig} bytes")));
        }
        if hint == 0 && input.pos == src.len() {
            return if filled == orig {
                Ok(())
            } else {
                Err(corrupt(format!(
                    "stream decodes to {filled} bytes instead of the declared {orig}"
                )))
            };
        }
        if written == 0 && input.pos == consumed_before && dst.len() < dst.capacity() {
            return Err(corrupt(format!("stream is truncated after {filled} of {orig} bytes")));
        }
    }
}

/// Stand-in when the `zstd` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "zstd"))]
pub(crate) fn compress(_level: i32, _src: &[u8], _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("ZSTD (feature `zstd` is off)".into()))
}

/// Stand-in when the `zstd` feature is off ([`super::compression::build`] refuses first).
#[cfg(not(feature = "zstd"))]
pub(crate) fn decompress(_src: &[u8], _orig: usize, _dst: &mut Vec<u8>) -> Result<()> {
    Err(crate::Error::Unsupported("ZSTD (feature `zstd` is off)".into()))
}

#[cfg(all(test, feature = "zstd"))]
mod tests {
    use super::*;
    use crate::filters::util::test_support::unhex as hex;

    /// 200 int32 values `(i * 7) % 23`, the input of the libtiledb tiles below.
    fn input() -> Vec<u8> {
        (0..200i32).flat_map(|i| ((i * 7) % 23).to_le_bytes()).collect()
    }

    /// Data part of a libtiledb 2.30 tile with `ZstdFilter()` (level -1).
    const LEVEL_DEFAULT: &str = "28b52ffd6020022d0300a40500000000070000000e00000015000000050000000c\
        00000013000000030000000a0000001100000001000000080000000f00000016000000060000000d0000001400\
        0000040000000b00000012000000020000000900000010000200bdbe50411b8019";
    /// The same with level 5, and with level -20 (which libtiledb turns into 3).
    const LEVEL_5: &str = "28b52ffd602002750100a285080910882f0700f895480a8bbb9f1f079e9e5cf8fa72\
        e2ede6c6dfd1910757573e9c7d0200bdbe50411b8019";

    #[test]
    fn matches_libtiledb_bytes() {
        for (level, golden) in [(-1, LEVEL_DEFAULT), (5, LEVEL_5), (-20, LEVEL_5), (3, LEVEL_5)] {
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
    fn empty_and_large() {
        let mut out = Vec::new();
        compress(-1, &[], &mut out).unwrap();
        let mut back = Vec::new();
        decompress(&out, 0, &mut back).unwrap();
        assert!(back.is_empty());
        // Bigger than the first output window, so the stream is decoded in steps.
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i / 1000 % 7) as u8).collect();
        let mut comp = Vec::new();
        compress(19, &big, &mut comp).unwrap();
        let mut back = b"p".to_vec();
        decompress(&comp, big.len(), &mut back).unwrap();
        assert!(back[1..] == big[..]);
    }

    #[test]
    fn rejects_wrong_lengths_and_garbage() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let mut comp = Vec::new();
        compress(-1, &data, &mut comp).unwrap();
        let mut out = b"keep".to_vec();
        assert!(decompress(&comp, 4999, &mut out).is_err());
        assert!(decompress(&comp, 5001, &mut out).is_err());
        assert!(decompress(&comp[..comp.len() - 1], 5000, &mut out).is_err());
        assert!(decompress(&comp[..5], 5000, &mut out).is_err());
        assert!(decompress(&[], 5000, &mut out).is_err());
        let mut flipped = comp.clone();
        flipped[comp.len() / 2] ^= 0x55;
        let _ = decompress(&flipped, 5000, &mut out);
        assert_eq!(&out[..4], b"keep");
        out.truncate(4);
        decompress(&comp, 5000, &mut out).unwrap();
        assert_eq!(out[4..], data[..]);
    }
}
