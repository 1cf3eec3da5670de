//! BIT_WIDTH_REDUCTION: each window of integers stored as offsets from the window minimum, in
//! the narrowest of 8/16/32/64 bits that holds them.
//!
//! ```text
//! metadata: u32 total_input_len, u32 total_windows,
//!           per window: T window_min, u8 bits, u32 window_input_bytes;  then the input metadata
//! data:     per window: raw bytes when bits >= 8·sizeof(T) or the window is not a whole number
//!           of values, else each (value - window_min) as a bits-wide int (signed if T is)
//! ```
//! Windows are `floor(min(part_len, max_window) / sizeof T) · sizeof T` bytes, cut per input
//! part. Only 16/32/64-bit integers (and datetime/time as `i64` from format version 20) are
//! reduced; every other type passes through with no metadata.

use tessera_types::{ByteReader, Datatype, FilterType};

use super::util::{
    Int, IntKind, dispatch_int, pass_through, prepend_header, rollback_on_error, u32_len, widen,
};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The filter type, for errors.
const FILTER: FilterType = FilterType::BitWidthReduction;

/// The BIT_WIDTH_REDUCTION codec.
#[derive(Debug)]
struct BitWidthReduction {
    /// Window size in bytes (rounded down to whole values per part).
    max_window: u32,
}

/// Builds the codec of a [`Filter::BitWidthReduction`].
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    match *filter {
        Filter::BitWidthReduction { max_window } => Ok(Box::new(BitWidthReduction { max_window })),
        _ => Err(Error::Unsupported(format!(
            "bit width reduction codec built for filter {}",
            filter.filter_type()
        ))),
    }
}

/// The integer type the filter reduces values of `datatype` as, or `None` for pass-through.
fn int_kind(ctx: &FilterContext) -> Option<IntKind> {
    Some(match ctx.datatype {
        Datatype::Int16 => IntKind::I16,
        Datatype::UInt16 => IntKind::U16,
        Datatype::Int32 => IntKind::I32,
        Datatype::UInt32 => IntKind::U32,
        Datatype::Int64 => IntKind::I64,
        Datatype::UInt64 => IntKind::U64,
        d if (d.is_datetime() || d.is_time()) && ctx.version >= 20 => IntKind::I64,
        _ => return None,
    })
}

/// The window length libtiledb uses for a part of `part_len` bytes, in bytes (a multiple of
/// `size`, possibly 0 when the part or the window holds less than one value).
pub(super) fn window_len(part_len: usize, max_window: u32, size: usize) -> usize {
    part_len.min(max_window as usize) / size * size
}

/// Splits a part into libtiledb's windows. libtiledb divides by zero when the window holds
/// less than one value; we then use one-value windows (`max_window` below the type size), or
/// make a part shorter than one value a single raw window.
pub(super) fn windows(part: &[u8], max_window: u32, size: usize) -> std::slice::Chunks<'_, u8> {
    let w = window_len(part.len(), max_window, size);
    let w = match w {
        0 if part.len() >= size => size,
        0 => part.len().max(1),
        w => w,
    };
    part.chunks(w)
}

impl FilterCodec for BitWidthReduction {
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts> {
        match int_kind(ctx) {
            None => Ok(input),
            Some(kind) => dispatch_int!(kind, encode_typed(self.max_window, input)),
        }
    }

    fn decode(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        match int_kind(ctx) {
            None => {
                pass_through(metadata, data, out);
                Ok(())
            }
            Some(kind) => {
                rollback_on_error(out, |out| dispatch_int!(kind, decode_typed(metadata, data, out)))
            }
        }
    }

    fn decoded_len_hint(&self, metadata: &[u8], data: &[u8]) -> Option<usize> {
        // The stored total is exact but unchecked: never trust it beyond what the data can
        // expand to (8-bit offsets of 64-bit values), nor below the data itself (pass-through).
        let total = metadata.get(..4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        Some((total as usize).min(data.len().saturating_mul(8)).max(data.len()))
    }
}

/// Width in bits a window of values spanning `min..=max` is stored with, or `None` when the
/// span overflows `T` (libtiledb then stores the window raw and leaves its minimum unset).
fn bits_for<T: Int>(min: T, max: T) -> Option<u8> {
    let span = max.checked_sub(min)?.checked_inc()?.to_i128();
    // libtiledb sizes signed spans by the signed range of the candidate width and unsigned
    // spans by their bit count.
    let fits = |bits: u32| {
        if T::SIGNED { span < (1i128 << (bits - 1)) } else { span < (1i128 << bits) }
    };
    Some(match () {
        () if fits(8) => 8,
        () if fits(16) => 16,
        () if fits(32) => 32,
        () => 64,
    })
}

/// Forward pass over every part with values of type `T`.
fn encode_typed<T: Int>(max_window: u32, input: Parts) -> Result<Parts> {
    let size = T::SIZE;
    let total = input.data_len();
    let n_windows: usize = input.data.iter().map(|p| windows(p, max_window, size).len()).sum();
    let mut header = Vec::with_capacity(8 + n_windows * (size + 5));
    header.extend_from_slice(&u32_len(FILTER, total, "chunk length")?.to_le_bytes());
    header.extend_from_slice(&u32_len(FILTER, n_windows, "window count")?.to_le_bytes());
    let mut out = Vec::with_capacity(total);
    for part in &input.data {
        for win in windows(part, max_window, size) {
            let values = win.chunks_exact(size);
            let mut min_max: Option<(T, T)> = None;
            for c in values.clone() {
                let v = T::load(c);
                min_max = Some(match min_max {
                    None => (v, v),
                    Some((lo, hi)) => (lo.min(v), hi.max(v)),
                });
            }
            let (min, max) = min_max.unwrap_or_default();
            let bits = bits_for(min, max);
            // An overflowing span leaves libtiledb's minimum uninitialised; we write 0.
            bits.map_or(T::default(), |_| min).push(&mut header);
            let bits = bits.unwrap_or(8 * size as u8);
            header.push(bits);
            header.extend_from_slice(&(win.len() as u32).to_le_bytes());
            if usize::from(bits) >= 8 * size || !win.len().is_multiple_of(size) {
                out.extend_from_slice(win);
                continue;
            }
            let nb = usize::from(bits) / 8;
            let start = out.len();
            out.resize(start + win.len() / size * nb, 0);
            for (dst, c) in out[start..].chunks_exact_mut(nb).zip(values) {
                // The offset fits in `bits` bits, so its low bytes are the narrow value.
                let rel = T::load(c).wrapping_sub(min);
                let mut wide = [0u8; 8];
                rel.store(&mut wide);
                dst.copy_from_slice(&wide[..nb]);
            }
        }
    }
    Ok(Parts { metadata: prepend_header(header, input.metadata), data: vec![out] })
}

/// Reverse pass with values of type `T`, appending to `out`.
fn decode_typed<T: Int>(metadata: &[u8], data: &[u8], out: &mut Decoded) -> Result<()> {
    let size = T::SIZE;
    let mut md = ByteReader::new(metadata, "bit width reduction metadata");
    let total = md.u32("total input length")? as usize;
    let n_windows = md.u32("window count")? as usize;
    if n_windows.checked_mul(size + 5).is_none_or(|b| b > md.remaining()) {
        return Err(Error::corrupt(
            FILTER,
            format!("{n_windows} window headers cannot fit in {} metadata bytes", md.remaining()),
        ));
    }
    let mut input = ByteReader::new(data, "bit width reduction data");
    let start = out.data.len();
    for _ in 0..n_windows {
        let min = T::load(md.bytes(size, "window minimum")?);
        let bits = md.u8("window bit width")?;
        let nbytes = md.u32("window length")? as usize;
        if out.data.len() - start + nbytes > total {
            return Err(Error::corrupt(
                FILTER,
                format!("windows decode to more than the stored total of {total} bytes"),
            ));
        }
        if usize::from(bits) >= 8 * size || !nbytes.is_multiple_of(size) {
            out.data.extend_from_slice(input.bytes(nbytes, "raw window")?);
            continue;
        }
        let n = nbytes / size;
        let src = match bits {
            8 => input.bytes(n, "8-bit window")?,
            16 => input.bytes(n * 2, "16-bit window")?,
            32 => input.bytes(n * 4, "32-bit window")?,
            _ => {
                return Err(Error::corrupt(FILTER, format!("invalid window bit width {bits}")));
            }
        };
        let at = out.data.len();
        out.data.resize(at + nbytes, 0);
        let dst = &mut out.data[at..];
        match bits {
            8 => unpack::<T, 1>(src, min, dst),
            16 => unpack::<T, 2>(src, min, dst),
            _ => unpack::<T, 4>(src, min, dst),
        }
    }
    if out.data.len() - start != total {
        return Err(Error::corrupt(
            FILTER,
            format!("windows hold {} bytes, the header says {total}", out.data.len() - start),
        ));
    }
    if !input.is_empty() {
        return Err(Error::corrupt(
            FILTER,
            format!("{} data bytes left after the last window", input.remaining()),
        ));
    }
    out.metadata.extend_from_slice(md.rest());
    Ok(())
}

/// Widens `W`-byte offsets and adds the window minimum, writing `T` values into `dst`.
#[inline]
fn unpack<T: Int, const W: usize>(src: &[u8], min: T, dst: &mut [u8]) {
    for (d, s) in dst.chunks_exact_mut(T::SIZE).zip(src.chunks_exact(W)) {
        widen::<T, W>(s).wrapping_add(min).store(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::util::test_support::*;

    fn bwr(max_window: u32) -> Filter {
        Filter::BitWidthReduction { max_window }
    }

    #[test]
    fn round_trips_every_type_and_size() {
        for &dt in INT_TYPES {
            for n in [0usize, 1, 2, 7, 63, 64, 65, 1003, 5000] {
                for w in [256, 100, 3, 0, 1 << 20] {
                    let data = sample(dt, n, n as u64 + 1);
                    assert_round_trip(&bwr(w), &ctx(dt), &data);
                }
            }
        }
    }

    #[test]
    fn pass_through_types_add_no_metadata() {
        for dt in [Datatype::Int8, Datatype::UInt8, Datatype::Float32, Datatype::Char] {
            let (md, data) = encode(&bwr(256), &ctx(dt), &[1, 2, 3, 4]);
            assert!(md.is_empty());
            assert_eq!(data, [1, 2, 3, 4]);
        }
        let old = FilterContext { version: 19, ..ctx(Datatype::DatetimeMs) };
        let (md, _) = encode(&bwr(256), &old, &[0; 16]);
        assert!(md.is_empty());
        let (md, _) = encode(&bwr(256), &ctx(Datatype::DatetimeMs), &[0; 16]);
        assert_eq!(md.len(), 8 + 13);
    }

    #[test]
    fn bit_widths_follow_libtiledb() {
        assert_eq!(bits_for::<i32>(0, 126), Some(8));
        assert_eq!(bits_for::<i32>(0, 127), Some(16));
        assert_eq!(bits_for::<u32>(0, 254), Some(8));
        assert_eq!(bits_for::<u32>(0, 255), Some(16));
        assert_eq!(bits_for::<u16>(0, 254), Some(8));
        assert_eq!(bits_for::<i16>(-32768, 32767), None);
        assert_eq!(bits_for::<u64>(0, u64::MAX), None);
        assert_eq!(bits_for::<u64>(1, u64::MAX), Some(64));
        assert_eq!(bits_for::<i64>(-5, i64::MAX - 6), Some(64));
        assert_eq!(bits_for::<i64>(-5, i64::MAX - 5), None);
    }

    #[test]
    fn keeps_parts_and_metadata() {
        let codec = bwr(8).codec().unwrap();
        let c = ctx(Datatype::Int32);
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![vec![5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0], vec![9, 0, 0, 0, 1, 0]],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        assert_eq!(enc.metadata.len(), 3);
        assert_eq!(&enc.metadata[1..], &parts.metadata[..]);
        assert_eq!(enc.data.len(), 1);
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        for &dt in INT_TYPES {
            let c = ctx(dt);
            let codec = bwr(64).codec().unwrap();
            let (md, data) = encode(&bwr(64), &c, &sample(dt, 100, 3));
            assert_no_panic_on_corruption(codec.as_ref(), &c, &md, &data);
        }
    }

    /// Checks one golden tile: `make`'s values written by libtiledb 2.30 with `filter` alone
    /// (a dense 1-D array, one tile; the values are the LCG sequences `make` reproduces).
    fn golden(filter: Filter, dt: Datatype, input: &[u8], md: &str, data_sha: &str) {
        check_golden(&filter, dt, input, md, data_sha, &sha256_hex(input));
    }

    #[test]
    fn golden_libtiledb_tiles() {
        let rs = [100, 200, 20000, 1 << 20, 1 << 30];
        let v = make(1003, 1, 4, |i, r| {
            let m = rs[(i / 64) % 5];
            r % m - m / 2 + (i as i128 / 64) * 1000
        });
        golden(
            bwr(256),
            Datatype::Int32,
            &v,
            "ac0f000010000000ceffffff080001000084030000100001000022e1ffff10000100009321f8ff2000010000b2adece020000100005913000008000100000d1700001000010000c7f5ffff1000010000fa47f8ff200001000035893be02000010000de2600000800010000942a00001000010000bf0a000010000100001d45f8ff200001000008132be020000100006b3a000008ac000000",
            "6477255b1f97a0dd355d64f75c9c79b1ab9a0a46efd53fac095e99163617f771",
        );
        let rs = [100, 200, 20000, 65535];
        let v = make(1003, 2, 2, |i, r| r % rs[(i / 128) % 4]);
        golden(
            bwr(256),
            Datatype::UInt16,
            &v,
            "d60700000800000002000800010000000008000100004800100001000006001000010000000008000100000000080001000026001000010000da0110d6000000",
            "a962977ca677d784f2829c28036940b57f81d9521263c7fa8a171c64136cd0db",
        );
        let rs = [100, 126, 127, 128, 20000, 32767];
        let v = make(1003, 3, 2, |i, r| r % rs[(i / 128) % 6] - 16000);
        golden(
            bwr(256),
            Datatype::Int16,
            &v,
            "d60700000800000080c1080001000080c1080001000080c1080001000080c1100001000086c21000010000b9c5100001000080c1080001000082c108d6000000",
            "33c9595e185900414d3c20f210bbb4ad4beef1f72aab66603f4edf8634481453",
        );
        let rs = [254, 255, 256, 65534, 65535, 1 << 31];
        let v = make(1003, 4, 4, |i, r| r % rs[(i / 25) % 6] + 7);
        golden(
            bwr(100),
            Datatype::UInt32,
            &v,
            "ac0f0000290000001000000008640000001700000008640000000f00000008640000008f060000106400000082110000106400000086ec500220640000000700000008640000000a00000008640000000800000008640000005a0b00001064000000bd0a00001064000000c60c360620640000001600000008640000001d0000000864000000190000000864000000921600001064000000041f00001064000000625d050020640000000a00000008640000000c0000000864000000140000000864000000a009000010640000004b1f000010640000000ff957032064000000130000000864000000110000000864000000080000000864000000730e00001064000000870b000010640000005f92b40420640000000b00000008640000000b00000008640000000c00000008640000004c05000010640000005403000010640000003922990420640000000e00000008640000001200000008640000000a0000000864000000c20800001064000000b77c0000100c000000",
            "ef5ad87f40fef348b89d53e73af842142d24c3bf1d18a315b036081859c84fe4",
        );
        let rs = [100, 200, 70000, 1 << 31, 1 << 40];
        let v = make(1003, 5, 8, |i, r| {
            let m = rs[(i / 32) % 5];
            (r * r) % m - m / 2 - 5_000_000_000
        });
        golden(
            bwr(256),
            Datatype::Int64,
            &v,
            "581f000020000000ce0dfad5feffffff08000100009c0dfad5feffffff1000010000318df9d5feffffff20000100006411aa9afeffffff2000010000e4c318fc80ffffff4000010000ce0dfad5feffffff0800010000a00dfad5feffffff1000010000318df9d5feffffff200001000010c8fa9bfeffffff2000010000000f3d9083ffffff4000010000ce0dfad5feffffff0800010000b40dfad5feffffff1000010000d88cf9d5feffffff200001000090a9e09bfeffffff200001000079108c268bffffff4000010000ce0dfad5feffffff08000100009c0dfad5feffffff1000010000fc8bf9d5feffffff2000010000690f8e9efeffffff2000010000a404751c8dffffff4000010000ce0dfad5feffffff08000100009c0dfad5feffffff10000100007987f9d5feffffff200001000040f02b96feffffff200001000090757bbf80ffffff4000010000ce0dfad5feffffff08000100009c0dfad5feffffff10000100005888f9d5feffffff20000100004420539cfeffffff200001000039d8b24c89ffffff4000010000ce0dfad5feffffff0800010000a50dfad5feffffff1058000000",
            "bc5662a354fe235538c0b2e31781e0ac9db1cb04a02d194eda3c93fb2dcbdd86",
        );
        let rs = [100, 1 << 33];
        let v = make(517, 6, 8, |i, r| r * 3 % rs[(i / 32) % 2] + (1 << 63));
        golden(
            bwr(1000),
            Datatype::UInt64,
            &v,
            "2810000005000000010000000000008040e8030000000000000000008040e8030000010000000000008040e8030000000000000000008040e80300001b000000000000804088000000",
            "a0c766a77ce7cc86395d909200c516fc088cb5bdaa497f79d501f2d443cbb539",
        );
        let v = make(1003, 7, 8, |i, r| 1_600_000_000_000 + i as i128 * 1000 + r % 1000);
        golden(
            bwr(256),
            Datatype::DatetimeMs,
            &v,
            "581f00002000000016816e877401000010000100005efe6e87740100001000010000637b6f8774010000100001000003f96f87740100001000010000b97470877401000010000100000ff37087740100001000010000e4717187740100001000010000d4eb71877401000010000100006e68728774010000100001000040e6728774010000100001000088657387740100001000010000a3df7387740100001000010000915f748774010000100001000018da7487740100001000010000a75875877401000010000100003cd675877401000010000100005e53768774010000100001000017d07687740100001000010000234d778774010000100001000013c977877401000010000100006d4478877401000010000100001ec378877401000010000100002f417987740100001000010000c6bc7987740100001000010000a73a7a8774010000100001000028b57a8774010000100001000083347b877401000010000100004faf7b87740100001000010000462f7c87740100001000010000cba97c87740100001000010000fd287d8774010000100001000077a57d87740100001058000000",
            "8dca966df21b486d8aae41827fa5412aba5c35e936ffcb4dd4b02b0fb9d31242",
        );
        let v = make(37, 8, 1, |_, r| r % 256);
        golden(
            bwr(256),
            Datatype::UInt8,
            &v,
            "",
            "085b0be91acd341dcc0ba7e97e04ec429939455a8b39f2a530dfeab39b1b57b5",
        );
    }

    #[test]
    fn overflowing_window_decodes_whatever_its_minimum() {
        // libtiledb 2.30 wrote this int16 window (-32768, 32767, 0, 5 × 8) with an
        // uninitialised minimum (0xa067) and 16 bits, i.e. raw.
        let md = unhex("400000000100000067a01040000000");
        let data: Vec<u8> =
            [-32768i16, 32767, 0, 5].repeat(8).iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = Decoded::default();
        bwr(256).codec().unwrap().decode(&ctx(Datatype::Int16), &md, &data, &mut out).unwrap();
        assert_eq!(out.data, data);
        let (ours, _) = encode(&bwr(256), &ctx(Datatype::Int16), &data);
        assert_eq!(hex(&ours), "400000000100000000001040000000");
    }
}
