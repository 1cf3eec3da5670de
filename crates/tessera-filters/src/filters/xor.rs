//! XOR: every value XORed with the previous one, as integers of the type's width.
//!
//! ```text
//! metadata: u32 n_parts, u32 part_len × n_parts;  then the input metadata
//! data:     per part, viewed as N-byte words (N = type size: 1, 2, 4 or 8):
//!           out[0] = in[0], out[i] = in[i] ^ in[i-1]
//! ```
//! The output is one part of the same length, typed as the signed integer of width N.
//!
//! libtiledb assumes every part is a whole number of words (it always is in its pipelines);
//! with a partial word its release build drops the trailing bytes when writing and leaves them
//! uninitialised when reading. Tessera copies trailing bytes unchanged both ways instead.

use tessera_types::{ByteReader, FilterType};

use super::util::{Int, prepend_header, read_part_count, rollback_on_error, write_part_sizes};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The filter type, for errors.
const FILTER: FilterType = FilterType::Xor;

/// The XOR codec.
#[derive(Debug)]
struct Xor;

/// Builds the codec of a [`Filter::Xor`].
pub(crate) fn build(_filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    Ok(Box::new(Xor))
}

/// The word width XOR runs with at this stage.
fn width(ctx: &FilterContext) -> Result<usize> {
    match ctx.datatype.size() {
        w @ (1 | 2 | 4 | 8) => Ok(w),
        _ => Err(Error::DatatypeNotSupported { filter: FILTER, datatype: ctx.datatype }),
    }
}

impl FilterCodec for Xor {
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts> {
        let w = width(ctx)?;
        let mut header = Vec::with_capacity(4 + 4 * input.data.len());
        write_part_sizes(FILTER, input.data.iter().map(Vec::len), &mut header)?;
        let mut out = vec![0u8; input.data_len()];
        let mut at = 0;
        for part in &input.data {
            let dst = &mut out[at..at + part.len()];
            match w {
                1 => xor_forward::<u8>(part, dst),
                2 => xor_forward::<u16>(part, dst),
                4 => xor_forward::<u32>(part, dst),
                _ => xor_forward::<u64>(part, dst),
            }
            at += part.len();
        }
        Ok(Parts { metadata: prepend_header(header, input.metadata), data: vec![out] })
    }

    fn decode(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        let w = width(ctx)?;
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "xor metadata");
            let n = read_part_count(&mut md, FILTER)?;
            let mut input = ByteReader::new(data, "xor data");
            for _ in 0..n {
                let len = md.u32("part length")? as usize;
                let part = input.bytes(len, "xor part")?;
                let at = out.data.len();
                out.data.resize(at + len, 0);
                let dst = &mut out.data[at..];
                match w {
                    1 => xor_reverse::<u8>(part, dst),
                    2 => xor_reverse::<u16>(part, dst),
                    4 => xor_reverse::<u32>(part, dst),
                    _ => xor_reverse::<u64>(part, dst),
                }
            }
            if !input.is_empty() {
                return Err(Error::corrupt(
                    FILTER,
                    format!("{} data bytes left after the last part", input.remaining()),
                ));
            }
            out.metadata.extend_from_slice(md.rest());
            Ok(())
        })
    }
}

/// `dst[i] = src[i] ^ src[i-1]` over the whole words, trailing bytes copied.
fn xor_forward<T: Int>(src: &[u8], dst: &mut [u8]) {
    let mut prev = T::default();
    let words = src.len() / T::SIZE * T::SIZE;
    for (d, s) in dst.chunks_exact_mut(T::SIZE).zip(src.chunks_exact(T::SIZE)) {
        let v = T::load(s);
        v.xor(prev).store(d);
        prev = v;
    }
    dst[words..].copy_from_slice(&src[words..]);
}

/// Reverses [`xor_forward`]: a running XOR.
fn xor_reverse<T: Int>(src: &[u8], dst: &mut [u8]) {
    let mut acc = T::default();
    let words = src.len() / T::SIZE * T::SIZE;
    for (d, s) in dst.chunks_exact_mut(T::SIZE).zip(src.chunks_exact(T::SIZE)) {
        acc = acc.xor(T::load(s));
        acc.store(d);
    }
    dst[words..].copy_from_slice(&src[words..]);
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    #[test]
    fn round_trips_every_type_and_size() {
        for &dt in INT_TYPES {
            for n in [0usize, 1, 2, 7, 1003, 9000] {
                assert_round_trip(&Filter::Xor, &ctx(dt), &sample(dt, n, 4));
            }
        }
    }

    #[test]
    fn xors_each_part_on_its_own_and_keeps_trailing_bytes() {
        let codec = build(&Filter::Xor).unwrap();
        let c = ctx(Datatype::Int16);
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![vec![1, 0, 3, 0, 3, 0], vec![7, 0, 7, 1, 9]],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        assert_eq!(hex(&enc.metadata[0]), "020000000600000005000000");
        assert_eq!(enc.data, vec![vec![1, 0, 2, 0, 0, 0, 7, 0, 0, 1, 9]]);
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        for dt in [Datatype::Int8, Datatype::Int16, Datatype::Float32, Datatype::UInt64] {
            let c = ctx(dt);
            let codec = build(&Filter::Xor).unwrap();
            let (md, data) = encode(&Filter::Xor, &c, &sample(dt, 101, 3));
            assert_no_panic_on_corruption(codec.as_ref(), &c, &md, &data);
        }
    }

    #[test]
    fn golden_libtiledb_tiles() {
        let f = Filter::Xor;
        let float = |r: i128| (r % 200_001 - 100_000) as f64 / 1000.0;
        let cases: [(Datatype, Vec<u8>, &str, &str); 4] = [
            (
                Datatype::Int32,
                make(1003, 51, 4, |_, r| r - (1 << 30)),
                "01000000ac0f0000",
                "4c74babc384cb4b4e880050c11f2e48dad5d6a8772a66fea721f4ebbba9bbe51",
            ),
            (
                Datatype::Float32,
                make_float(1003, 52, 4, |_, r| float(r)),
                "01000000ac0f0000",
                "11b0cdfcf7fafa3cca99e0665ffad1b0fff3dbd75a712a56d97aade9bd0ec330",
            ),
            (
                Datatype::Int8,
                make(1003, 53, 1, |_, r| r % 256 - 128),
                "01000000eb030000",
                "2fac82867ada18c7459f992b3191d984a7d744c0b7e19901f4596090e1f2140f",
            ),
            (
                Datatype::Float64,
                make_float(517, 54, 8, |_, r| float(r)),
                "0100000028100000",
                "546a52b2393578ce538f7a0529c99242bf0042a89177f7a36fb0443adc7ca060",
            ),
        ];
        for (dt, v, md, sha) in cases {
            check_golden(&f, dt, &v, md, sha, &sha256_hex(&v));
        }
    }

    #[test]
    fn golden_bitshuffle_then_xor() {
        // [BITSHUFFLE, XOR] on int32 as libtiledb 2.30 wrote it.
        let v = make(1003, 55, 4, |_, r| r - (1 << 30));
        let pipeline = crate::FilterPipeline::new(vec![Filter::Bitshuffle, Filter::Xor]);
        let codec = pipeline.codec(Datatype::Int32, 4, 22).unwrap();
        let enc = codec.encode_chunk(&v).unwrap();
        assert_eq!(hex(&enc.metadata), "01000000ac0f000002000000a80f000004000000");
        assert_eq!(
            sha256_hex(&enc.data),
            "495c3c7396294018ed9aa3692c6bf0ed18cdd9ea051e2c2818f744f71879dd81"
        );
        let mut back = Vec::new();
        codec.decode_chunk(&enc.metadata, &enc.data, &mut back).unwrap();
        assert_eq!(back, v);
    }
}
