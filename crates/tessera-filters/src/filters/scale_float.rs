//! SCALE_FLOAT: lossy floats stored as scaled signed integers.
//!
//! ```text
//! metadata: u32 n_parts, u32 output_part_len × n_parts (in input order);  then the input
//!           metadata
//! data:     per value W = (W) round((x - (T)offset) / (T)scale), the arithmetic in the input
//!           float type T (f32 or f64 by type size), W the signed integer of byte_width bytes
//! ```
//! Reading computes `(T)(scale · (double)(T)W + offset)` in `f64`, as libtiledb does.
//!
//! libtiledb prepends every output part, so with several input parts the data parts come out in
//! reverse order while the sizes stay in input order; its reader then slices the data by the
//! sizes in order and again prepends each result. Both directions are reproduced exactly (a
//! pipeline only ever hands this filter one part). Float-to-integer conversions follow x86-64,
//! where libtiledb runs: out-of-range values and NaN give the "integer indefinite" value
//! (`i32::MIN` converted for 1–4 byte widths, truncated; `i64::MIN` for 8).

use tessera_types::{ByteReader, FilterType};

use super::util::{prepend_header, read_part_count, rollback_on_error, widen, write_part_sizes};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The filter type, for errors.
const FILTER: FilterType = FilterType::ScaleFloat;

/// The SCALE_FLOAT codec.
#[derive(Debug)]
struct ScaleFloat {
    /// Divisor applied after subtracting `offset`.
    scale: f64,
    /// Subtracted before scaling.
    offset: f64,
    /// Width of the stored integers: 1, 2, 4 or 8.
    width: usize,
}

/// Builds the codec of a [`Filter::ScaleFloat`], refusing byte widths other than 1, 2, 4, 8.
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    match *filter {
        Filter::ScaleFloat { factor, offset, byte_width } => match byte_width {
            1 | 2 | 4 | 8 => {
                Ok(Box::new(ScaleFloat { scale: factor, offset, width: byte_width as usize }))
            }
            w => Err(tessera_types::Error::invalid(
                "scale float filter options",
                "byte width",
                16,
                format!("byte width {w} is not 1, 2, 4 or 8"),
            )
            .into()),
        },
        _ => Err(Error::Unsupported(format!(
            "scale float codec built for filter {}",
            filter.filter_type()
        ))),
    }
}

/// The input float type, by the stage's type size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FloatKind {
    /// `f32` (4-byte types).
    F32,
    /// `f64` (8-byte types).
    F64,
}

/// The float type of the stage (by type size, as libtiledb), or an error for other sizes.
fn float_kind(ctx: &FilterContext) -> Result<FloatKind> {
    match ctx.datatype.size() {
        4 => Ok(FloatKind::F32),
        8 => Ok(FloatKind::F64),
        _ => Err(Error::DatatypeNotSupported { filter: FILTER, datatype: ctx.datatype }),
    }
}

/// `r` (already rounded) converted to a `width`-byte signed integer the way x86-64's truncating
/// conversions do, returned as its little-endian bytes.
#[inline(always)]
fn to_int_bytes(r: f64, width: usize) -> [u8; 8] {
    // 2^31 and 2^63: the conversions are defined on [-2^k, 2^k).
    const P31: f64 = 2_147_483_648.0;
    const P63: f64 = 9_223_372_036_854_775_808.0;
    let v: i64 = if width == 8 {
        if (-P63..P63).contains(&r) { r as i64 } else { i64::MIN }
    } else if (-P31..P31).contains(&r) {
        i64::from(r as i32)
    } else {
        i64::from(i32::MIN)
    };
    v.to_le_bytes()
}

impl ScaleFloat {
    /// Scales one part of `T` values into `W`-byte integers.
    fn scale_part(&self, kind: FloatKind, src: &[u8], dst: &mut [u8]) {
        let w = self.width;
        match kind {
            FloatKind::F32 => {
                let (offset, scale) = (self.offset as f32, self.scale as f32);
                for (d, s) in dst.chunks_exact_mut(w).zip(src.chunks_exact(4)) {
                    let x = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                    let r = f64::from((x - offset) / scale).round();
                    d.copy_from_slice(&to_int_bytes(r, w)[..w]);
                }
            }
            FloatKind::F64 => {
                for (d, s) in dst.chunks_exact_mut(w).zip(src.chunks_exact(8)) {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(s);
                    let r = ((f64::from_le_bytes(b) - self.offset) / self.scale).round();
                    d.copy_from_slice(&to_int_bytes(r, w)[..w]);
                }
            }
        }
    }

    /// Unscales one part of `W`-byte integers into `T` values.
    fn unscale_part(&self, kind: FloatKind, src: &[u8], dst: &mut [u8]) {
        match (kind, self.width) {
            (FloatKind::F32, 1) => self.unscale_f32::<1>(src, dst),
            (FloatKind::F32, 2) => self.unscale_f32::<2>(src, dst),
            (FloatKind::F32, 4) => self.unscale_f32::<4>(src, dst),
            (FloatKind::F32, _) => self.unscale_f32::<8>(src, dst),
            (FloatKind::F64, 1) => self.unscale_f64::<1>(src, dst),
            (FloatKind::F64, 2) => self.unscale_f64::<2>(src, dst),
            (FloatKind::F64, 4) => self.unscale_f64::<4>(src, dst),
            (FloatKind::F64, _) => self.unscale_f64::<8>(src, dst),
        }
    }

    #[inline]
    fn unscale_f32<const W: usize>(&self, src: &[u8], dst: &mut [u8]) {
        for (d, s) in dst.chunks_exact_mut(4).zip(src.chunks_exact(W)) {
            let e = widen::<i64, W>(s) as f32;
            let x = (self.scale * f64::from(e) + self.offset) as f32;
            d.copy_from_slice(&x.to_le_bytes());
        }
    }

    #[inline]
    fn unscale_f64<const W: usize>(&self, src: &[u8], dst: &mut [u8]) {
        for (d, s) in dst.chunks_exact_mut(8).zip(src.chunks_exact(W)) {
            let e = widen::<i64, W>(s) as f64;
            let x = self.scale * e + self.offset;
            d.copy_from_slice(&x.to_le_bytes());
        }
    }
}

impl FilterCodec for ScaleFloat {
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts> {
        let kind = float_kind(ctx)?;
        let ts = ctx.datatype.size();
        if let Some(p) = input.data.iter().find(|p| !p.len().is_multiple_of(ts)) {
            return Err(Error::encode(
                FILTER,
                format!("a part of {} bytes is not a whole number of {ts}-byte floats", p.len()),
            ));
        }
        let sizes = input.data.iter().map(|p| p.len() / ts * self.width);
        let mut header = Vec::with_capacity(4 + 4 * input.data.len());
        write_part_sizes(FILTER, sizes.clone(), &mut header)?;
        // Each output part is prepended: the last input part comes out first.
        let mut data = Vec::with_capacity(input.data.len());
        for (part, len) in input.data.iter().zip(sizes).rev() {
            let mut out = vec![0u8; len];
            self.scale_part(kind, part, &mut out);
            data.push(out);
        }
        Ok(Parts { metadata: prepend_header(header, input.metadata), data })
    }

    fn decode(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        let kind = float_kind(ctx)?;
        let ts = ctx.datatype.size();
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "scale float metadata");
            let n = read_part_count(&mut md, FILTER)?;
            // First pass: check the sizes against the data and size the output.
            let mut sizes = md.clone();
            let (mut consumed, mut total) = (0usize, 0usize);
            for _ in 0..n {
                let len = sizes.u32("part length")? as usize;
                consumed = consumed.saturating_add(len);
                total = total.saturating_add(len / self.width * ts);
            }
            if consumed != data.len() {
                return Err(Error::corrupt(
                    FILTER,
                    format!("parts hold {consumed} bytes, the data has {}", data.len()),
                ));
            }
            // Second pass: each unscaled part is prepended, so part i ends where the parts
            // after it begin.
            let base = out.data.len();
            out.data.resize(base + total, 0);
            let (mut from, mut end) = (0usize, base + total);
            for _ in 0..n {
                let len = md.u32("part length")? as usize;
                let src = &data[from..from + len];
                let out_len = len / self.width * ts;
                self.unscale_part(kind, src, &mut out.data[end - out_len..end]);
                from += len;
                end -= out_len;
            }
            out.metadata.extend_from_slice(md.rest());
            Ok(())
        })
    }

    fn decoded_len_hint(&self, _metadata: &[u8], data: &[u8]) -> Option<usize> {
        Some(data.len() / self.width * 8)
    }
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    fn sf(factor: f64, offset: f64, byte_width: u64) -> Filter {
        Filter::ScaleFloat { factor, offset, byte_width }
    }

    #[test]
    fn refuses_bad_widths_and_types() {
        for w in [0, 3, 5, 16] {
            assert!(sf(1.0, 0.0, w).codec().is_err());
        }
        let codec = sf(1.0, 0.0, 4).codec().unwrap();
        let err = codec.encode(&ctx(Datatype::Int16), Parts::from_data(vec![0; 4])).unwrap_err();
        assert!(matches!(err, Error::DatatypeNotSupported { .. }));
        assert!(codec.encode(&ctx(Datatype::Float32), Parts::from_data(vec![0; 5])).is_err());
    }

    #[test]
    fn round_trips_exact_values() {
        // Integers that fit every width come back exactly.
        for dt in [Datatype::Float32, Datatype::Float64] {
            for w in [1u64, 2, 4, 8] {
                for n in [0usize, 1, 7, 1003, 9000] {
                    let v = make_float(n, 5, dt.size(), |i, _| ((i % 200) as f64 - 100.0) * 0.5);
                    assert_round_trip(&sf(0.5, 0.0, w), &ctx(dt), &v);
                }
            }
        }
    }

    #[test]
    fn quantises_like_c() {
        let codec = sf(0.5, 1.0, 1).codec().unwrap();
        let c = ctx(Datatype::Float64);
        let v: Vec<u8> = [1.25f64, 1.0 + 0.75, -1e300, f64::NAN, 200.0, 0.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let enc = codec.encode(&c, Parts::from_data(v)).unwrap();
        // round(0.5) = 1 and round(1.5) = 2 (half away from zero); out-of-range and NaN give
        // the low byte of i32::MIN; 398 wraps to its low byte.
        assert_eq!(enc.data, vec![vec![1, 2, 0, 0, 398u16 as u8, 0xfe]]);
    }

    #[test]
    fn several_parts_come_out_reversed_like_libtiledb() {
        let codec = sf(1.0, 0.0, 2).codec().unwrap();
        let c = ctx(Datatype::Float32);
        let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![floats(&[1.0, 2.0]), floats(&[3.0, 4.0, 5.0])],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        assert_eq!(hex(&enc.metadata[0]), "020000000400000006000000");
        assert_eq!(enc.data, vec![vec![3, 0, 4, 0, 5, 0], vec![1, 0, 2, 0]]);
        // libtiledb's reader slices 4 then 6 bytes out of that ([3, 4], [5, 1, 2]) and
        // prepends each result.
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, floats(&[5.0, 1.0, 2.0, 3.0, 4.0]));
        // Parts of equal size survive the double reversal.
        let parts = Parts { metadata: vec![], data: vec![floats(&[1.0]), floats(&[2.0])] };
        let (_, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        for dt in [Datatype::Float32, Datatype::Float64] {
            for w in [1u64, 2, 4, 8] {
                let c = ctx(dt);
                let f = sf(0.25, 3.0, w);
                let v = make_float(50, 5, dt.size(), |_, r| (r % 1000) as f64 / 7.0);
                let (md, data) = encode(&f, &c, &v);
                assert_no_panic_on_corruption(f.codec().unwrap().as_ref(), &c, &md, &data);
            }
        }
    }

    #[test]
    fn golden_libtiledb_tiles() {
        let float = |r: i128| (r % 200_001 - 100_000) as f64 / 1000.0;
        let pow10 = |k: i128| 10f64.powf(k as f64);
        type Case = (Filter, Datatype, Vec<u8>, &'static str, &'static str, &'static str);
        let cases: [Case; 4] = [
            (
                sf(0.01, 1.5, 2),
                Datatype::Float32,
                make_float(1003, 61, 4, |_, r| float(r)),
                "01000000d6070000",
                "0f0d3c5a6d44481d680b1b1ec21e9136d9968554482fda40b1edf2986d408f14",
                "960950336f272b908dc6d5f302f0bff3a94f6f07bb856871667ed9d30ac77c55",
            ),
            (
                // Most values overflow int8 and wrap.
                sf(0.5, -3.0, 1),
                Datatype::Float64,
                make_float(1003, 62, 8, |_, r| float(r)),
                "01000000eb030000",
                "d265500dd2e0820eda839249e0f10992708a2460060c5b59e77c2440b6342d7f",
                "ae10ea7c98104715ca5359f9070ba2e0b2294eee5e42767213a2b1d6b962de5f",
            ),
            (
                // Up to 1e41: many values overflow int64.
                sf(1e-3, 0.25, 8),
                Datatype::Float64,
                make_float(1003, 63, 8, |_, r| float(r) * pow10(r % 40)),
                "01000000581f0000",
                "c2e818263a310f3c1e5d3fa9be13b802fef772db0c22caa551cea0b0b67e3328",
                "cfea46b573c383e9de1d328806fb60dd104a574dc7935217e683f5974d627d32",
            ),
            (
                sf(0.001, 0.0, 4),
                Datatype::Float32,
                make_float(1003, 64, 4, |_, r| float(r) * pow10(r % 12)),
                "01000000ac0f0000",
                "e02f1e74d584c3909ecb0357b46f158e3dc7cf9d95c0ceac5ce43a5f98bf1d58",
                "1d12d10e3a117ad23b8e621ea366adc29fb9b1c719df8000c179aca55e65c1d6",
            ),
        ];
        for (f, dt, v, md, sha, back) in cases {
            check_golden(&f, dt, &v, md, sha, back);
        }
    }

    #[test]
    fn golden_bitshuffle_then_scale_float() {
        // [BITSHUFFLE, SCALE_FLOAT(0.01, 0, 4)] on float32 as libtiledb 2.30 wrote and read it.
        let v = make_float(1003, 65, 4, |_, r| (r % 200_001 - 100_000) as f64 / 1000.0);
        let pipeline = crate::FilterPipeline::new(vec![Filter::Bitshuffle, sf(0.01, 0.0, 4)]);
        let codec = pipeline.codec(Datatype::Float32, 4, 22).unwrap();
        let enc = codec.encode_chunk(&v).unwrap();
        assert_eq!(hex(&enc.metadata), "01000000ac0f000002000000a80f000004000000");
        assert_eq!(
            sha256_hex(&enc.data),
            "6417930f7cea8cdb58ee8c8823abdaa6ab13837b9b717126ab208ee3a20ecb1a"
        );
        let mut back = Vec::new();
        codec.decode_chunk(&enc.metadata, &enc.data, &mut back).unwrap();
        assert_eq!(
            sha256_hex(&back),
            "c5ba9f9adffadb647edfcee4843fa284410cc95cd14b17af048fce38eaef9a07"
        );
    }
}
