//! CHECKSUM_MD5 and CHECKSUM_SHA256: a digest of every metadata and data part; the data passes
//! through unchanged (and keeps its parts).
//!
//! ```text
//! metadata: u32 n_md_parts, u32 n_data_parts,
//!           per metadata part, then per data part: u64 part_len, digest (16 or 32 bytes);
//!           then the input metadata
//! ```
//! Decoding checks every digest: the metadata parts are the input metadata that follows this
//! filter's header, the data parts are consecutive slices of the data.

use md5::Md5;
use sha2::{Digest, Sha256};
use tessera_types::{ByteReader, FilterType};

use super::util::{prepend_header, rollback_on_error, u32_len};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The checksum codec; `filter` says which digest.
#[derive(Debug)]
struct Checksum {
    /// CHECKSUM_MD5 or CHECKSUM_SHA256.
    filter: FilterType,
}

/// Builds the codec of a [`Filter::ChecksumMd5`] or [`Filter::ChecksumSha256`].
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    match filter.filter_type() {
        t @ (FilterType::ChecksumMd5 | FilterType::ChecksumSha256) => {
            Ok(Box::new(Checksum { filter: t }))
        }
        t => Err(Error::Unsupported(format!("checksum codec built for filter {t}"))),
    }
}

impl Checksum {
    /// Digest length in bytes.
    fn digest_len(&self) -> usize {
        if self.filter == FilterType::ChecksumMd5 { 16 } else { 32 }
    }

    /// Appends the digest of `bytes` to `out`.
    fn digest(&self, bytes: &[u8], out: &mut Vec<u8>) {
        if self.filter == FilterType::ChecksumMd5 {
            out.extend_from_slice(&Md5::digest(bytes));
        } else {
            out.extend_from_slice(&Sha256::digest(bytes));
        }
    }

    /// Checks the digests of `count` consecutive parts of `bytes` listed in `md`.
    fn verify(
        &self,
        md: &mut ByteReader<'_>,
        count: usize,
        bytes: &[u8],
        what: &'static str,
    ) -> Result<()> {
        let mut parts = ByteReader::new(bytes, "checksummed parts");
        let mut digest = Vec::with_capacity(32);
        for part in 0..count {
            let len = md.u64("checksummed length")?;
            let expected = md.bytes(self.digest_len(), "digest")?;
            let covered = parts.bytes_u64(len, "checksummed part").map_err(|_| {
                Error::corrupt(
                    self.filter,
                    format!(
                        "{what} part {part} of {len} bytes overruns the {} bytes left",
                        parts.remaining()
                    ),
                )
            })?;
            digest.clear();
            self.digest(covered, &mut digest);
            if digest != expected {
                return Err(Error::ChecksumMismatch { filter: self.filter, what, part });
            }
        }
        Ok(())
    }
}

impl FilterCodec for Checksum {
    fn encode(&self, _ctx: &FilterContext, input: Parts) -> Result<Parts> {
        let n_md = input.metadata.len();
        let n_data = input.data.len();
        let mut header = Vec::with_capacity(8 + (n_md + n_data) * (8 + self.digest_len()));
        header.extend_from_slice(&u32_len(self.filter, n_md, "metadata part count")?.to_le_bytes());
        header.extend_from_slice(&u32_len(self.filter, n_data, "data part count")?.to_le_bytes());
        for part in input.metadata.iter().chain(&input.data) {
            header.extend_from_slice(&(part.len() as u64).to_le_bytes());
            self.digest(part, &mut header);
        }
        Ok(Parts { metadata: prepend_header(header, input.metadata), data: input.data })
    }

    fn decode(
        &self,
        _ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "checksum metadata");
            let n_md = md.u32("metadata part count")? as usize;
            let n_data = md.u32("data part count")? as usize;
            let entry = 8 + self.digest_len();
            let entries = n_md.checked_add(n_data).and_then(|n| n.checked_mul(entry));
            if entries.is_none_or(|b| b > md.remaining()) {
                return Err(Error::corrupt(
                    self.filter,
                    format!(
                        "{n_md} + {n_data} digests cannot fit in {} metadata bytes",
                        md.remaining()
                    ),
                ));
            }
            let rest = md.rest().get(entries.unwrap_or(0)..).unwrap_or_default();
            self.verify(&mut md, n_md, rest, "metadata")?;
            self.verify(&mut md, n_data, data, "data")?;
            out.metadata.extend_from_slice(md.rest());
            out.data.extend_from_slice(data);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    #[test]
    fn round_trips_every_size() {
        for f in [Filter::ChecksumMd5, Filter::ChecksumSha256] {
            for &dt in INT_TYPES {
                for n in [0usize, 1, 7, 1003] {
                    assert_round_trip(&f, &ctx(dt), &sample(dt, n, 9));
                }
            }
        }
    }

    #[test]
    fn digests_every_part_and_keeps_them() {
        let codec = build(&Filter::ChecksumMd5).unwrap();
        let c = ctx(Datatype::Int32);
        let parts = Parts {
            metadata: vec![vec![1, 2], vec![3]],
            data: vec![(0..12).collect(), vec![], (20..33).collect()],
        };
        let enc = codec.encode(&c, parts.clone()).unwrap();
        assert_eq!(enc.metadata.len(), 3);
        assert_eq!(enc.metadata[0].len(), 8 + 5 * 24);
        assert_eq!(&enc.metadata[1..], &parts.metadata[..]);
        assert_eq!(enc.data, parts.data);
        let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
        assert_eq!(md, parts.metadata.concat());
        assert_eq!(data, parts.data.concat());
    }

    #[test]
    fn reports_which_part_is_corrupt() {
        let c = ctx(Datatype::Int32);
        for f in [Filter::ChecksumMd5, Filter::ChecksumSha256] {
            let codec = f.codec().unwrap();
            let parts = Parts { metadata: vec![vec![1, 2, 3]], data: vec![vec![4; 10]] };
            let enc = codec.encode(&c, parts).unwrap();
            let (md, data) = (enc.metadata.concat(), enc.data.concat());
            let mut bad = data.clone();
            bad[3] ^= 1;
            let err = codec.decode(&c, &md, &bad, &mut Decoded::default()).unwrap_err();
            assert!(matches!(err, Error::ChecksumMismatch { what: "data", part: 0, .. }), "{err}");
            let mut bad = md.clone();
            *bad.last_mut().unwrap() ^= 1;
            let err = codec.decode(&c, &bad, &data, &mut Decoded::default()).unwrap_err();
            assert!(
                matches!(err, Error::ChecksumMismatch { what: "metadata", part: 0, .. }),
                "{err}"
            );
        }
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        let c = ctx(Datatype::Int32);
        for f in [Filter::ChecksumMd5, Filter::ChecksumSha256] {
            let codec = f.codec().unwrap();
            let parts = Parts { metadata: vec![vec![9; 6]], data: vec![sample(c.datatype, 50, 1)] };
            let enc = codec.encode(&c, parts).unwrap();
            assert_no_panic_on_corruption(
                codec.as_ref(),
                &c,
                &enc.metadata.concat(),
                &enc.data.concat(),
            );
        }
    }

    #[test]
    fn golden_libtiledb_tiles() {
        let v = make(1003, 41, 4, |_, r| r - (1 << 30));
        check_golden(
            &Filter::ChecksumMd5,
            Datatype::Int32,
            &v,
            "0000000001000000ac0f000000000000995424251b4094f39a72fd4261205b59",
            &sha256_hex(&v),
            &sha256_hex(&v),
        );
        let v = make(1003, 42, 4, |_, r| r - (1 << 30));
        check_golden(
            &Filter::ChecksumSha256,
            Datatype::Int32,
            &v,
            "0000000001000000ac0f00000000000023fd8e52213b317b60c4acff0718442369e553df2132942096c89c829876de39",
            &sha256_hex(&v),
            &sha256_hex(&v),
        );
    }

    #[test]
    fn golden_bitshuffle_then_md5() {
        // [BITSHUFFLE, CHECKSUM_MD5] as libtiledb 2.30 wrote it: one metadata part (the
        // bitshuffle header) and one data part are digested.
        let v = make(1003, 43, 4, |_, r| r - (1 << 30));
        let pipeline = crate::FilterPipeline::new(vec![Filter::Bitshuffle, Filter::ChecksumMd5]);
        let codec = pipeline.codec(Datatype::Int32, 4, 22).unwrap();
        let enc = codec.encode_chunk(&v).unwrap();
        assert_eq!(
            hex(&enc.metadata),
            "01000000010000000c0000000000000009aa5012f86475d75e983aae56905ae2ac0f000000000000d1c55941e7c0ffed7c2de45905a3a78302000000a80f000004000000"
        );
        assert_eq!(
            sha256_hex(&enc.data),
            "2e0c021951d1656a61b3de9a2ba9747c38a689f09a73798d32c026eeb51194d4"
        );
        let mut back = Vec::new();
        codec.decode_chunk(&enc.metadata, &enc.data, &mut back).unwrap();
        assert_eq!(back, v);
    }
}
