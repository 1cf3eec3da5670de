//! POSITIVE_DELTA: each window of non-decreasing integers stored as differences from the
//! previous value.
//!
//! ```text
//! metadata: u32 total_windows, per window: T first_value, u32 window_bytes;  then the input
//!           metadata
//! data:     per window: when window_bytes is a whole number of values, T delta_j = v_j - v_{j-1}
//!           with v_{-1} = first_value (so the first delta is 0); otherwise the raw bytes
//! ```
//! Windows are cut per part as in bit-width reduction (default 1024 bytes). Writing fails on a
//! decreasing value inside a window. 8/16/32/64-bit integers (BLOB, BOOL and GEOM as `u8`) and
//! datetime/time (as `i64` from format version 20) are encoded; other types pass through with
//! no metadata.

use tessera_types::{ByteReader, Datatype, FilterType};

use super::bit_width_reduction::windows;
use super::util::{
    Int, IntKind, dispatch_int, pass_through, prepend_header, rollback_on_error, u32_len,
};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The filter type, for errors.
const FILTER: FilterType = FilterType::PositiveDelta;

/// The POSITIVE_DELTA codec.
#[derive(Debug)]
struct PositiveDelta {
    /// Window size in bytes (rounded down to whole values per part).
    max_window: u32,
}

/// Builds the codec of a [`Filter::PositiveDelta`].
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    match *filter {
        Filter::PositiveDelta { max_window } => Ok(Box::new(PositiveDelta { max_window })),
        _ => Err(Error::Unsupported(format!(
            "positive delta codec built for filter {}",
            filter.filter_type()
        ))),
    }
}

/// The integer type values of the stage's datatype are differenced as, or `None` for
/// pass-through.
fn int_kind(ctx: &FilterContext) -> Option<IntKind> {
    Some(match ctx.datatype {
        Datatype::Int8 => IntKind::I8,
        Datatype::UInt8
        | Datatype::Blob
        | Datatype::Bool
        | Datatype::GeomWkb
        | Datatype::GeomWkt => IntKind::U8,
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

impl FilterCodec for PositiveDelta {
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
}

/// Forward pass over every part with values of type `T`.
fn encode_typed<T: Int>(max_window: u32, input: Parts) -> Result<Parts> {
    let size = T::SIZE;
    let n_windows: usize = input.data.iter().map(|p| windows(p, max_window, size).len()).sum();
    let mut header = Vec::with_capacity(4 + n_windows * (size + 4));
    header.extend_from_slice(&u32_len(FILTER, n_windows, "window count")?.to_le_bytes());
    let mut out = Vec::with_capacity(input.data_len());
    for part in &input.data {
        for win in windows(part, max_window, size) {
            // libtiledb reads the first value even of a short raw window (past its end); we
            // zero-pad instead.
            let mut first = [0u8; 8];
            let avail = win.len().min(size);
            first[..avail].copy_from_slice(&win[..avail]);
            header.extend_from_slice(&first[..size]);
            header.extend_from_slice(&(win.len() as u32).to_le_bytes());
            if !win.len().is_multiple_of(size) {
                out.extend_from_slice(win);
                continue;
            }
            let start = out.len();
            out.resize(start + win.len(), 0);
            let mut prev = T::load(&first);
            for (dst, c) in out[start..].chunks_exact_mut(size).zip(win.chunks_exact(size)) {
                let v = T::load(c);
                if v < prev {
                    return Err(Error::encode(
                        FILTER,
                        format!("value {v:?} follows {prev:?}: deltas must not be negative"),
                    ));
                }
                v.wrapping_sub(prev).store(dst);
                prev = v;
            }
        }
    }
    Ok(Parts { metadata: prepend_header(header, input.metadata), data: vec![out] })
}

/// Reverse pass with values of type `T`, appending to `out`.
fn decode_typed<T: Int>(metadata: &[u8], data: &[u8], out: &mut Decoded) -> Result<()> {
    let size = T::SIZE;
    let mut md = ByteReader::new(metadata, "positive delta metadata");
    let n_windows = md.u32("window count")? as usize;
    if n_windows.checked_mul(size + 4).is_none_or(|b| b > md.remaining()) {
        return Err(Error::corrupt(
            FILTER,
            format!("{n_windows} window headers cannot fit in {} metadata bytes", md.remaining()),
        ));
    }
    let mut input = ByteReader::new(data, "positive delta data");
    for _ in 0..n_windows {
        let first = T::load(md.bytes(size, "window first value")?);
        let nbytes = md.u32("window length")? as usize;
        let src = input.bytes(nbytes, "window")?;
        if !nbytes.is_multiple_of(size) {
            out.data.extend_from_slice(src);
            continue;
        }
        let at = out.data.len();
        out.data.resize(at + nbytes, 0);
        let mut acc = first;
        for (d, s) in out.data[at..].chunks_exact_mut(size).zip(src.chunks_exact(size)) {
            acc = acc.wrapping_add(T::load(s));
            acc.store(d);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::util::test_support::*;

    fn pd(max_window: u32) -> Filter {
        Filter::PositiveDelta { max_window }
    }

    /// Non-decreasing within each `w`-value window, restarting lower at each window.
    fn wcum(n: usize, seed: u64, size: usize, w: usize, step: i128, start: i128) -> Vec<u8> {
        let r = lcg(seed, n);
        let mut acc = 0i128;
        (0..n)
            .flat_map(|i| {
                if i.is_multiple_of(w) {
                    acc = start - step * (i / w) as i128;
                }
                acc += i128::from(r[i] % 50);
                acc.to_le_bytes()[..size].to_vec()
            })
            .collect()
    }

    /// `n` values, non-decreasing within every run of `per` values, starting each run at
    /// `start` (or 0 for unsigned types) and rising by small steps that never overflow.
    fn mono(dt: Datatype, n: usize, per: usize, seed: u64) -> Vec<u8> {
        let size = dt.size();
        let (start, step) = match (size, dt.is_signed() || dt.is_float()) {
            (1, true) => (-128, 0),
            (1, false) => (0, 0),
            (2, true) => (-30_000, 7),
            (2, false) => (0, 7),
            (_, true) => (-1 << 40, 50),
            (_, false) => (0, 50),
        };
        if size == 1 {
            return (0..n).map(|i| (start + (i % per).min(255) as i128) as u8).collect();
        }
        let r = lcg(seed, n);
        let mut acc = 0i128;
        (0..n)
            .flat_map(|i| {
                if i.is_multiple_of(per) {
                    acc = start;
                }
                acc += i128::from(r[i] % step);
                acc.to_le_bytes()[..size].to_vec()
            })
            .collect()
    }

    #[test]
    fn round_trips_every_type_and_size() {
        for &dt in INT_TYPES {
            for n in [0usize, 1, 2, 7, 255, 256, 257, 1003, 5000] {
                for w in [1024, 100, 3, 0, 1 << 20] {
                    // Windows never exceed `w` bytes, so restarting every `w` bytes' worth of
                    // values keeps every window non-decreasing.
                    let per = (w as usize / dt.size()).max(1);
                    assert_round_trip(&pd(w), &ctx(dt), &mono(dt, n, per, n as u64));
                }
            }
        }
    }

    #[test]
    fn refuses_negative_deltas_and_passes_other_types() {
        let codec = pd(1024).codec().unwrap();
        let down: Vec<u8> = [5i32, 4].iter().flat_map(|v| v.to_le_bytes()).collect();
        let err = codec.encode(&ctx(Datatype::Int32), Parts::from_data(down.clone())).unwrap_err();
        assert!(matches!(err, Error::Encode { .. }), "{err}");
        // -1 < 0 as i8 but not as u8.
        assert!(codec.encode(&ctx(Datatype::Int8), Parts::from_data(vec![0, 0xff])).is_err());
        assert!(codec.encode(&ctx(Datatype::UInt8), Parts::from_data(vec![0, 0xff])).is_ok());
        for dt in [Datatype::Float32, Datatype::Char, Datatype::StringAscii] {
            let (md, data) = encode(&pd(1024), &ctx(dt), &down);
            assert!(md.is_empty());
            assert_eq!(data, down);
        }
        let old = FilterContext { version: 19, ..ctx(Datatype::DatetimeMs) };
        assert!(codec.encode(&old, Parts::from_data(down.repeat(2))).is_ok());
    }

    #[test]
    fn keeps_parts_and_metadata() {
        let codec = pd(8).codec().unwrap();
        let c = ctx(Datatype::Int16);
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![vec![5, 0, 6, 0, 7, 0], vec![9, 0, 9, 0, 1]],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        assert_eq!(enc.metadata.len(), 3);
        assert_eq!(enc.data.len(), 1);
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        for &dt in INT_TYPES {
            let c = ctx(dt);
            let codec = pd(64).codec().unwrap();
            let (md, data) = encode(&pd(64), &c, &mono(dt, 100, 64 / dt.size(), 3));
            assert_no_panic_on_corruption(codec.as_ref(), &c, &md, &data);
        }
    }

    /// Checks one golden tile written by libtiledb 2.30 with `filter` alone (a dense 1-D
    /// array, one tile, of the values `wcum` reproduces).
    fn golden(filter: Filter, dt: Datatype, input: &[u8], md: &str, data_sha: &str) {
        check_golden(&filter, dt, input, md, data_sha, &sha256_hex(input));
    }

    #[test]
    fn golden_libtiledb_tiles() {
        golden(
            pd(1024),
            Datatype::Int32,
            &wcum(1003, 31, 4, 256, 1000, 0),
            "040000002b000000000400003dfcffff000400003ff8ffff0004000059f4ffffac030000",
            "a735a8d782e17715f83ea46ea13635774a04beb15f56e81ce77f96b714b2badf",
        );
        golden(
            pd(1024),
            Datatype::Int16,
            &wcum(1003, 32, 2, 512, 3000, -20000),
            "02000000ecb1000400003da6d6030000",
            "5048a1e0faa389599b86a735c6be302c01a88827ef99fe3e7e21820b7a2d73f3",
        );
        golden(
            pd(100),
            Datatype::Int64,
            &wcum(1003, 33, 8, 12, 1_000_000_000_000, 5_000_000_000_000_000),
            "540000001c80e03779c311006000000028703b6390c21100600000000760968ea7c11100600000001850f1b9bec01100600000000a404ce5d5bf1100600000000730a710edbe1100600000002020023c04be11006000000027105d671bbd1100600000001000b89232bc11006000000014f012be49bb11006000000013e06de960ba11006000000023d0c81478b91100600000002bc023408fb81100600000001bb07e6ba6b71100600000002ea0d996bdb6110060000000029034c2d4b51100600000000e808fedebb41100600000002a70ea1803b4110060000000286045441ab31100600000002850a06f31b21100600000000840fb9a48b1110060000000243056c65fb01100600000002020b1f176af1100600000000e100c1d8eae11006000000012006748a5ad1100600000000df0c173bcac1100600000001ee01c9fd3ab1100600000001ad077caeaaa1100600000000cc0d2f501aa11006000000018b02d2119a911006000000018a0884c30a81100600000000d90e37747a711006000000008803ea35ea6110060000000227099ce75a51100600000000f60f4f98ca411006000000006504f25a4a31100600000000b40aa50bba21100600000001230057cd2a11100600000000d2060a7e9a01100600000002f10bbd200a01100600000000f0016fe179f11006000000022f070292f9e1100600000002be0cb54469d11006000000028d026805d9c1100600000000bc081ab749b11006000000028b0dcd68b9a11006000000031a03702a3991100600000002990922dba981100600000001280ed58d19711006000000020704884e8961100600000000660a3afff951100600000002650feda1695110060000000244059062e941100600000001130b431459311006000000016200f5d5c921100600000002f106a8873911100600000001c00c5b38a9011006000000015f01fdfa18f11006000000013e07a0ab98e11006000000029d0d535d08d11006000000006c03061e78c1100600000002eb08b8cfe8b1100600000002ca0e6b7158b1100600000001e9041e32c8a11006000000020809c0e44891100600000002f70f7395b881100600000002960526572871100600000001550ad908986110060000000154008bca085110060000000313063e7b7841100600000000d20be12cf831100600000000e10193ee68211006000000006007469fd8111006000000006f0ce9414811100600000000fe029c02b8011006000000005d084eb427f1100600000000cc0df165a7e11006000000000b03a42717d11006000000003a0956d887c1100600000000d90f0989f7b11006000000018804bc4b67a1100600000002770a6efcd791100600000000e60011be57811006000000014505c46fc77110038000000",
            "dfc29a9bdf9033ef7c33d7c2aac988581185f69593499a9ae4e5d1d85f8e5a35",
        );
        let v: Vec<u8> = (0..1003).map(|i| (i / 4).min(255) as u8).collect();
        golden(
            pd(1024),
            Datatype::UInt8,
            &v,
            "0100000000eb030000",
            "01714d23bd0a32a380f283cf30e34e3522d0660abb532cead26d1a7f23972981",
        );
    }
}
