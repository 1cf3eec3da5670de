//! BITSHUFFLE: blosc2's bit shuffle, in independent 8192-byte blocks.
//!
//! ```text
//! metadata: u32 n_parts, u32 part_len × n_parts;  then the input metadata
//! data:     each part (input parts are first split into floor8(len) plus the remainder):
//!           copied raw when its length is not a multiple of 8 and of the type size, else
//!           bit-transposed block by block
//! ```
//! Inside a block of `n` values the first `n8 = n - n % 8` are transposed and the rest copied
//! raw. The transposed block is `8·typesize` bit rows of `n8 / 8` bytes; row `8j + b` holds bit
//! `b` of byte `j` of every value, value `8m + k` at bit `k` of the row's byte `m`. The output
//! is one part of the same length as the input.

use tessera_types::{ByteReader, FilterType};

use super::util::{prepend_header, read_part_count, rollback_on_error, write_part_sizes};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The filter type, for errors.
const FILTER: FilterType = FilterType::Bitshuffle;

/// Bytes libtiledb hands to blosc2 at a time.
const BLOCK: usize = 8192;

/// The BITSHUFFLE codec.
#[derive(Debug)]
struct Bitshuffle;

/// Builds the codec of a [`Filter::Bitshuffle`].
pub(crate) fn build(_filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    Ok(Box::new(Bitshuffle))
}

/// Whether libtiledb bit-shuffles a part of `len` bytes (else it is copied raw).
fn shuffled(len: usize, ts: usize) -> bool {
    ts != 0 && len.is_multiple_of(ts) && len.is_multiple_of(8)
}

impl FilterCodec for Bitshuffle {
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts> {
        let ts = ctx.datatype.size();
        // Every input part becomes its whole multiple of 8 bytes, plus the rest if any.
        let parts: Vec<&[u8]> = input
            .data
            .iter()
            .flat_map(|p| {
                let (body, rest) = p.split_at(p.len() & !7);
                std::iter::once(body).chain((!rest.is_empty()).then_some(rest))
            })
            .collect();
        let mut header = Vec::with_capacity(4 + 4 * parts.len());
        write_part_sizes(FILTER, parts.iter().map(|p| p.len()), &mut header)?;
        let mut out = vec![0u8; input.data_len()];
        let mut at = 0;
        for part in parts {
            let dst = &mut out[at..at + part.len()];
            if shuffled(part.len(), ts) {
                let mut scratch = [0u8; BLOCK];
                for (s, d) in part.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
                    shuffle_block(ts, s, d, &mut scratch);
                }
            } else {
                dst.copy_from_slice(part);
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
        let ts = ctx.datatype.size();
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "bitshuffle metadata");
            let n = read_part_count(&mut md, FILTER)?;
            let mut input = ByteReader::new(data, "bitshuffle data");
            for _ in 0..n {
                let len = md.u32("part length")? as usize;
                let part = input.bytes(len, "shuffled part")?;
                if shuffled(len, ts) {
                    let at = out.data.len();
                    out.data.resize(at + len, 0);
                    let mut scratch = [0u8; BLOCK];
                    for (s, d) in part.chunks(BLOCK).zip(out.data[at..].chunks_mut(BLOCK)) {
                        unshuffle_block(ts, s, d, &mut scratch);
                    }
                } else {
                    out.data.extend_from_slice(part);
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

/// Transposes the 8×8 bit matrix held in `x` (row = byte, column = bit): bit `b` of byte `k`
/// moves to bit `k` of byte `b`.
#[inline(always)]
fn transpose8x8(x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00aa_00aa_00aa_00aa;
    let x = x ^ t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_cccc_0000_cccc;
    let x = x ^ t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_f0f0_f0f0;
    x ^ t ^ (t << 28)
}

/// Exchanges the `mask` bits of `v[b]` with the bits `shift` higher in `v[a]`, for each
/// `(a, b)` pair: one round of a recursive block transpose.
#[inline(always)]
fn swap_rounds(v: &mut [u64; 8], pairs: [(usize, usize); 4], shift: u32, mask: u64) {
    for (a, b) in pairs {
        let t = ((v[a] >> shift) ^ v[b]) & mask;
        v[b] ^= t;
        v[a] ^= t << shift;
    }
}

/// Transposes the 8×8 byte matrix held in `v` (row = word, column = byte): byte `c` of word `b`
/// moves to byte `b` of word `c`.
#[inline(always)]
fn transpose_bytes8(v: &mut [u64; 8]) {
    swap_rounds(v, [(0, 1), (2, 3), (4, 5), (6, 7)], 8, 0x00ff_00ff_00ff_00ff);
    swap_rounds(v, [(0, 2), (1, 3), (4, 6), (5, 7)], 16, 0x0000_ffff_0000_ffff);
    swap_rounds(v, [(0, 4), (1, 5), (2, 6), (3, 7)], 32, 0x0000_0000_ffff_ffff);
}

/// Transposes, in each of the eight byte lanes independently, the 8×8 bit matrix whose row `b`
/// is that byte of `v[b]`: bit `k` of byte `c` of word `b` moves to bit `b` of byte `c` of
/// word `k`.
#[inline(always)]
fn transpose_lane_bits8(v: &mut [u64; 8]) {
    swap_rounds(v, [(0, 1), (2, 3), (4, 5), (6, 7)], 1, 0x5555_5555_5555_5555);
    swap_rounds(v, [(0, 2), (1, 3), (4, 6), (5, 7)], 2, 0x3333_3333_3333_3333);
    swap_rounds(v, [(0, 4), (1, 5), (2, 6), (3, 7)], 4, 0x0f0f_0f0f_0f0f_0f0f);
}

/// Eight bytes of `b` from `at` as a little-endian word.
#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Bit-shuffles one block (`src` and `dst` of equal length, at most [`BLOCK`] bytes) of
/// `ts`-byte values: the values are first byte-shuffled into planes (in `scratch`), then each
/// plane's bits are transposed into 8 rows.
fn shuffle_block(ts: usize, src: &[u8], dst: &mut [u8], scratch: &mut [u8; BLOCK]) {
    let (body, nrow) = block_layout(ts, src.len());
    dst[body..].copy_from_slice(&src[body..]);
    if nrow == 0 {
        return;
    }
    let planes: &[u8] = if ts == 1 {
        &src[..body]
    } else {
        super::byteshuffle::shuffle(ts, &src[..body], &mut scratch[..body]);
        &scratch[..body]
    };
    for (plane, rows) in planes.chunks_exact(8 * nrow).zip(dst[..body].chunks_exact_mut(8 * nrow)) {
        let full = nrow & !7;
        // Eight row bytes at a time: 64 plane bytes become eight 8-byte row pieces.
        for m in (0..full).step_by(8) {
            let mut v = [0u64; 8];
            for (c, x) in v.iter_mut().enumerate() {
                *x = word(plane, 8 * (m + c));
            }
            transpose_bytes8(&mut v);
            transpose_lane_bits8(&mut v);
            for (b, x) in v.iter().enumerate() {
                rows[b * nrow + m..][..8].copy_from_slice(&x.to_le_bytes());
            }
        }
        for m in full..nrow {
            let y = transpose8x8(word(plane, 8 * m)).to_le_bytes();
            for (b, &x) in y.iter().enumerate() {
                rows[b * nrow + m] = x;
            }
        }
    }
}

/// Reverses [`shuffle_block`]: the rows are transposed back into byte planes (in `scratch`),
/// which are then byte-unshuffled into values.
fn unshuffle_block(ts: usize, src: &[u8], dst: &mut [u8], scratch: &mut [u8; BLOCK]) {
    let (body, nrow) = block_layout(ts, src.len());
    dst[body..].copy_from_slice(&src[body..]);
    if nrow == 0 {
        return;
    }
    {
        let planes: &mut [u8] = if ts == 1 { &mut dst[..body] } else { &mut scratch[..body] };
        for (rows, plane) in
            src[..body].chunks_exact(8 * nrow).zip(planes.chunks_exact_mut(8 * nrow))
        {
            let full = nrow & !7;
            for m in (0..full).step_by(8) {
                let mut v = [0u64; 8];
                for (b, x) in v.iter_mut().enumerate() {
                    *x = word(rows, b * nrow + m);
                }
                transpose_lane_bits8(&mut v);
                transpose_bytes8(&mut v);
                for (c, x) in v.iter().enumerate() {
                    plane[8 * (m + c)..][..8].copy_from_slice(&x.to_le_bytes());
                }
            }
            for m in full..nrow {
                let mut x = [0u8; 8];
                for (b, v) in x.iter_mut().enumerate() {
                    *v = rows[b * nrow + m];
                }
                plane[8 * m..][..8]
                    .copy_from_slice(&transpose8x8(u64::from_le_bytes(x)).to_le_bytes());
            }
        }
    }
    if ts != 1 {
        super::byteshuffle::unshuffle(ts, &scratch[..body], &mut dst[..body]);
    }
}

/// The transposed prefix of a block of `len` bytes: its length and the bytes per bit row.
#[inline(always)]
fn block_layout(ts: usize, len: usize) -> (usize, usize) {
    let n8 = (len / ts.max(1)) & !7;
    (n8 * ts, n8 / 8)
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    /// The layout as documented, bit by bit.
    fn naive(ts: usize, src: &[u8]) -> Vec<u8> {
        let n8 = (src.len() / ts) & !7;
        let nrow = n8 / 8;
        let mut out = src.to_vec();
        out[..n8 * ts].fill(0);
        for e in 0..n8 {
            for j in 0..ts {
                for b in 0..8 {
                    let bit = (src[e * ts + j] >> b) & 1;
                    out[(8 * j + b) * nrow + e / 8] |= bit << (e % 8);
                }
            }
        }
        out
    }

    #[test]
    fn transpose_is_a_transpose() {
        for x in lcg(7, 100).into_iter().map(|v| v.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
            let y = transpose8x8(x);
            for r in 0..8 {
                for c in 0..8 {
                    assert_eq!((x >> (8 * r + c)) & 1, (y >> (8 * c + r)) & 1);
                }
            }
            assert_eq!(transpose8x8(y), x);
        }
    }

    #[test]
    fn blocks_match_the_definition() {
        for ts in [1usize, 2, 4, 8, 3] {
            for n in [0usize, 1, 7, 8, 9, 16, 100, 1024, 1027] {
                let len = n * ts;
                let src: Vec<u8> = lcg(n as u64 + 3, len).iter().map(|&x| x as u8).collect();
                let mut dst = vec![0; len];
                let mut scratch = [0u8; BLOCK];
                shuffle_block(ts, &src, &mut dst, &mut scratch);
                assert_eq!(dst, naive(ts, &src), "ts {ts} n {n}");
                let mut back = vec![0; len];
                unshuffle_block(ts, &dst, &mut back, &mut scratch);
                assert_eq!(back, src);
            }
        }
    }

    #[test]
    fn round_trips_every_type_and_size() {
        for &dt in INT_TYPES {
            for n in [0usize, 1, 3, 7, 8, 9, 1003, 2048, 2051, 20_001] {
                assert_round_trip(&Filter::Bitshuffle, &ctx(dt), &sample(dt, n, 5));
            }
        }
    }

    #[test]
    fn splits_parts_and_keeps_metadata() {
        let codec = build(&Filter::Bitshuffle).unwrap();
        let c = ctx(Datatype::Int16);
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![(0..16).collect(), (20..26).collect(), (40..52).collect()],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        // As in libtiledb, a part shorter than 8 bytes leaves an empty first half.
        assert_eq!(hex(&enc.metadata[0]), "050000001000000000000000060000000800000004000000");
        assert_eq!(&enc.metadata[1..], &parts.metadata[..]);
        assert_eq!(enc.data.len(), 1);
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        for dt in [Datatype::Int8, Datatype::Int16, Datatype::Float32, Datatype::UInt64] {
            let c = ctx(dt);
            let codec = build(&Filter::Bitshuffle).unwrap();
            let (md, data) = encode(&Filter::Bitshuffle, &c, &sample(dt, 101, 3));
            assert_no_panic_on_corruption(codec.as_ref(), &c, &md, &data);
        }
    }

    #[test]
    fn golden_libtiledb_tiles() {
        let f = Filter::Bitshuffle;
        let cases: [(Datatype, Vec<u8>, &str, &str); 4] = [
            (
                Datatype::Int32,
                make(1003, 11, 4, |_, r| r - (1 << 30)),
                "02000000a80f000004000000",
                "c19061764ecadc939041ba6c76065cd7b8efbde86ea1bb8b89620af7a17ee39f",
            ),
            (
                Datatype::Int16,
                make(1003, 12, 2, |_, r| r % 65536 - 32768),
                "02000000d007000006000000",
                "841b26b3edd1dad6817f5a926a91121271f4f28379029c64ebf9d735a98c25ce",
            ),
            (
                // Three 8192-byte blocks and a last one whose 953 values leave one raw.
                Datatype::Int64,
                make(3001, 13, 8, |_, r| r * r - (1 << 61)),
                "01000000c85d0000",
                "e189cc42c9986a255e707ccae0691068726b4c52b542116e2e5efedaa2e4bc7e",
            ),
            (
                Datatype::UInt8,
                make(1003, 14, 1, |_, r| r % 256),
                "02000000e803000003000000",
                "c9238a2a222aa6e1a75bcbbf59d83780816897200fa89df41d1e069986b8b5de",
            ),
        ];
        for (dt, v, md, sha) in cases {
            check_golden(&f, dt, &v, md, sha, &sha256_hex(&v));
        }
    }
}
