//! BYTESHUFFLE: blosc2's byte shuffle, each part transposed into byte planes.
//!
//! ```text
//! metadata: u32 n_parts, u32 part_len × n_parts;  then the input metadata
//! data:     each part with byte j of every value gathered into plane j (j = 0..typesize-1);
//!           the trailing bytes that do not fill a value are copied unchanged
//! ```
//! The type size is that of the stage's datatype. The output is one part of the same length.

use tessera_types::{ByteReader, FilterType};

use super::util::{prepend_header, read_part_count, rollback_on_error, write_part_sizes};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The filter type, for errors.
const FILTER: FilterType = FilterType::Byteshuffle;

/// The BYTESHUFFLE codec.
#[derive(Debug)]
struct Byteshuffle;

/// Builds the codec of a [`Filter::Byteshuffle`].
pub(crate) fn build(_filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    Ok(Box::new(Byteshuffle))
}

impl FilterCodec for Byteshuffle {
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts> {
        let ts = ctx.datatype.size();
        let mut header = Vec::with_capacity(4 + 4 * input.data.len());
        write_part_sizes(FILTER, input.data.iter().map(Vec::len), &mut header)?;
        let mut out = vec![0u8; input.data_len()];
        let mut at = 0;
        for part in &input.data {
            shuffle(ts, part, &mut out[at..at + part.len()]);
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
        let ts = ctx.datatype.size();
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "byteshuffle metadata");
            let n = read_part_count(&mut md, FILTER)?;
            let mut input = ByteReader::new(data, "byteshuffle data");
            let start = out.data.len();
            for _ in 0..n {
                let len = md.u32("part length")? as usize;
                let part = input.bytes(len, "shuffled part")?;
                let at = out.data.len();
                out.data.resize(at + len, 0);
                unshuffle(ts, part, &mut out.data[at..]);
            }
            if !input.is_empty() {
                return Err(Error::corrupt(
                    FILTER,
                    format!(
                        "parts hold {} bytes, the data has {}",
                        out.data.len() - start,
                        data.len()
                    ),
                ));
            }
            out.metadata.extend_from_slice(md.rest());
            Ok(())
        })
    }
}

/// Byte-shuffles `src` into `dst` (same length) for values of `ts` bytes.
pub(crate) fn shuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    match ts {
        0 | 1 => dst.copy_from_slice(src),
        2 => shuffle_const::<2>(src, dst),
        4 => shuffle_const::<4>(src, dst),
        8 => shuffle_const::<8>(src, dst),
        _ => shuffle_any(ts, src, dst),
    }
}

/// Reverses [`shuffle`].
pub(crate) fn unshuffle(ts: usize, src: &[u8], dst: &mut [u8]) {
    match ts {
        0 | 1 => dst.copy_from_slice(src),
        2 => unshuffle_const::<2>(src, dst),
        4 => unshuffle_const::<4>(src, dst),
        8 => unshuffle_const::<8>(src, dst),
        _ => unshuffle_any(ts, src, dst),
    }
}

/// Eight bytes of `b` from `at` as a little-endian word.
#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// [`shuffle`] for `TS`-byte values (`TS` ≤ 8), eight values at a time: each value is read as
/// one word and its bytes are gathered into one word per plane.
fn shuffle_const<const TS: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / TS;
    let n8 = n & !7;
    for (g, vals) in src[..n8 * TS].chunks_exact(8 * TS).enumerate() {
        let mut planes = [0u64; TS];
        for (k, val) in vals.chunks_exact(TS).enumerate() {
            let mut e = [0u8; 8];
            e[..TS].copy_from_slice(val);
            let e = u64::from_le_bytes(e);
            for (j, p) in planes.iter_mut().enumerate() {
                *p |= ((e >> (8 * j)) & 0xff) << (8 * k);
            }
        }
        for (j, p) in planes.iter().enumerate() {
            dst[j * n + 8 * g..][..8].copy_from_slice(&p.to_le_bytes());
        }
    }
    shuffle_tail(TS, n8, src, dst);
}

/// [`unshuffle`] for `TS`-byte values (`TS` ≤ 8), eight values at a time: one word is read per
/// plane and every value is assembled as one word.
fn unshuffle_const<const TS: usize>(src: &[u8], dst: &mut [u8]) {
    let n = src.len() / TS;
    let n8 = n & !7;
    for (g, vals) in dst[..n8 * TS].chunks_exact_mut(8 * TS).enumerate() {
        let mut planes = [0u64; TS];
        for (j, p) in planes.iter_mut().enumerate() {
            *p = word(src, j * n + 8 * g);
        }
        for (k, val) in vals.chunks_exact_mut(TS).enumerate() {
            let mut e = 0u64;
            for (j, p) in planes.iter().enumerate() {
                e |= ((p >> (8 * k)) & 0xff) << (8 * j);
            }
            val.copy_from_slice(&e.to_le_bytes()[..TS]);
        }
    }
    unshuffle_tail(TS, n8, src, dst);
}

/// [`shuffle`] of any type size, value by value.
fn shuffle_any(ts: usize, src: &[u8], dst: &mut [u8]) {
    shuffle_tail(ts, 0, src, dst);
}

/// [`unshuffle`] of any type size, value by value.
fn unshuffle_any(ts: usize, src: &[u8], dst: &mut [u8]) {
    unshuffle_tail(ts, 0, src, dst);
}

/// Shuffles values `from..` one by one and copies the trailing partial value.
fn shuffle_tail(ts: usize, from: usize, src: &[u8], dst: &mut [u8]) {
    let n = src.len() / ts;
    for i in from..n {
        for j in 0..ts {
            dst[j * n + i] = src[i * ts + j];
        }
    }
    dst[n * ts..].copy_from_slice(&src[n * ts..]);
}

/// Unshuffles values `from..` one by one and copies the trailing partial value.
fn unshuffle_tail(ts: usize, from: usize, src: &[u8], dst: &mut [u8]) {
    let n = src.len() / ts;
    for i in from..n {
        for j in 0..ts {
            dst[i * ts + j] = src[j * n + i];
        }
    }
    dst[n * ts..].copy_from_slice(&src[n * ts..]);
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    fn naive(ts: usize, src: &[u8]) -> Vec<u8> {
        let n = src.len() / ts;
        let mut out = src.to_vec();
        for i in 0..n {
            for j in 0..ts {
                out[j * n + i] = src[i * ts + j];
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_and_round_trips() {
        for ts in [1usize, 2, 3, 4, 8, 16] {
            for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 1000, 4011] {
                let src: Vec<u8> = lcg(len as u64, len).iter().map(|&x| x as u8).collect();
                let mut dst = vec![0; len];
                shuffle(ts, &src, &mut dst);
                assert_eq!(dst, naive(ts, &src), "ts {ts} len {len}");
                let mut back = vec![0; len];
                unshuffle(ts, &dst, &mut back);
                assert_eq!(back, src);
            }
        }
    }

    #[test]
    fn round_trips_every_type_and_size() {
        for &dt in INT_TYPES {
            for n in [0usize, 1, 7, 8, 9, 1003, 20_000] {
                assert_round_trip(&Filter::Byteshuffle, &ctx(dt), &sample(dt, n, 5));
            }
        }
    }

    #[test]
    fn keeps_parts_and_metadata() {
        let codec = build(&Filter::Byteshuffle).unwrap();
        let c = ctx(Datatype::Int32);
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![(0..12).collect(), (20..33).collect()],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        assert_eq!(hex(&enc.metadata[0]), "020000000c0000000d000000");
        assert_eq!(&enc.metadata[1..], &parts.metadata[..]);
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        for dt in [Datatype::Int8, Datatype::Int16, Datatype::Float32, Datatype::UInt64] {
            let c = ctx(dt);
            let codec = build(&Filter::Byteshuffle).unwrap();
            let (md, data) = encode(&Filter::Byteshuffle, &c, &sample(dt, 100, 3));
            assert_no_panic_on_corruption(codec.as_ref(), &c, &md, &data);
        }
    }

    #[test]
    fn golden_libtiledb_tiles() {
        let f = Filter::Byteshuffle;
        let v = make(1003, 21, 4, |_, r| r - (1 << 30));
        check_golden(
            &f,
            Datatype::Int32,
            &v,
            "01000000ac0f0000",
            "2dcbeedbdf595a50f4f25973c063c9a350ae685a9102c8be1f984433b3f6f693",
            &sha256_hex(&v),
        );
        let v = make(517, 22, 8, |_, r| r * r - (1 << 61));
        check_golden(
            &f,
            Datatype::Int64,
            &v,
            "0100000028100000",
            "c4db65c6879ac944be5994ce55fdc498ac959447456fdc349b97cd40f1484d1f",
            &sha256_hex(&v),
        );
        let v = make(1003, 23, 2, |_, r| r % 65536 - 32768);
        check_golden(
            &f,
            Datatype::Int16,
            &v,
            "01000000d6070000",
            "a99d0be0b8f4f337a62b7220723de28a67ccf5131035d00b5d389f586d21859b",
            &sha256_hex(&v),
        );
    }
}
