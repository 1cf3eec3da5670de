//! AES-256-GCM (filter 11): appended by libtiledb, at run time, to the pipeline of every tile
//! of an encrypted array (data tiles and generic tiles). It never appears in a schema.
//!
//! Every incoming metadata part and data part is encrypted on its own, with a fresh random
//! 12-byte IV and no associated data; the 16-byte tag is kept in the header:
//!
//! ```text
//! metadata: u32 n_metadata_parts, u32 n_data_parts,
//!           per metadata part, then per data part:
//!             u32 plain_len, u32 encrypted_len, u8[12] iv, u8[16] tag
//! data:     the encrypted metadata parts, then the encrypted data parts
//! ```
//! The input metadata is not passed through: it is encrypted as metadata parts, and decoding
//! restores it as the metadata the previous filter reads.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use tessera_types::{ByteReader, EncryptionKey, FilterType};

use super::util::{rollback_on_error, u32_len};
use crate::{Decoded, Error, FilterCodec, FilterContext, Parts, Result};

/// Length of an IV.
pub(crate) const IV_LEN: usize = 12;
/// Length of a tag.
pub(crate) const TAG_LEN: usize = 16;
/// Header bytes per part: two lengths, the IV and the tag.
const PART_HEADER_LEN: usize = 8 + IV_LEN + TAG_LEN;

const FILTER: FilterType = FilterType::EncryptionAes256Gcm;

/// The AES-256-GCM codec, holding its expanded key.
struct Aes256GcmCodec {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for Aes256GcmCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Aes256GcmCodec(<key>)")
    }
}

/// The codec of the AES-256-GCM filter with `key`.
pub(crate) fn build(key: &EncryptionKey) -> Box<dyn FilterCodec> {
    let cipher = Aes256Gcm::new(key.as_bytes().into());
    Box::new(Aes256GcmCodec { cipher })
}

impl Aes256GcmCodec {
    /// Encrypts `part`, appending the ciphertext to `out` and its header entry to `header`.
    fn encrypt_part(&self, part: &[u8], out: &mut Vec<u8>, header: &mut Vec<u8>) -> Result<()> {
        let len = u32_len(FILTER, part.len(), "part length")?;
        let mut iv = [0u8; IV_LEN];
        getrandom::fill(&mut iv)
            .map_err(|e| Error::encode(FILTER, format!("no random IV from the system: {e}")))?;
        let start = out.len();
        out.extend_from_slice(part);
        let tag = self
            .cipher
            .encrypt_in_place_detached(Nonce::from_slice(&iv), &[], &mut out[start..])
            .map_err(|_| Error::encode(FILTER, "encryption failed"))?;
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(&iv);
        header.extend_from_slice(&tag);
        Ok(())
    }

    /// Decrypts the next part described by `md` from `data`, appending the plaintext to `out`.
    fn decrypt_part(
        &self,
        md: &mut ByteReader<'_>,
        data: &mut ByteReader<'_>,
        index: usize,
        what: &'static str,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let plain_len = md.u32("plaintext length")?;
        let encrypted_len = md.u32("encrypted length")?;
        let iv = md.bytes(IV_LEN, "iv")?;
        let tag = md.bytes(TAG_LEN, "tag")?;
        if plain_len != encrypted_len {
            return Err(Error::corrupt(
                FILTER,
                format!(
                    "{what} part {index}: {encrypted_len} encrypted bytes cannot hold \
                     {plain_len} plaintext bytes (GCM keeps the length)"
                ),
            ));
        }
        let remaining = data.remaining();
        let cipher = data.bytes(encrypted_len as usize, "encrypted part").map_err(|_| {
            Error::corrupt(
                FILTER,
                format!(
                    "{what} part {index} of {encrypted_len} bytes overruns the {remaining} \
                     bytes left (truncated ciphertext)"
                ),
            )
        })?;
        let start = out.len();
        out.extend_from_slice(cipher);
        self.cipher
            .decrypt_in_place_detached(
                Nonce::from_slice(iv),
                &[],
                &mut out[start..],
                Tag::from_slice(tag),
            )
            .map_err(|_| Error::Authentication { what, part: index })
    }
}

impl FilterCodec for Aes256GcmCodec {
    fn encode(&self, _ctx: &FilterContext, input: Parts) -> Result<Parts> {
        let n_md = input.metadata.len();
        let n_data = input.data.len();
        let mut header = Vec::with_capacity(8 + (n_md + n_data) * PART_HEADER_LEN);
        header.extend_from_slice(&u32_len(FILTER, n_md, "metadata part count")?.to_le_bytes());
        header.extend_from_slice(&u32_len(FILTER, n_data, "data part count")?.to_le_bytes());
        let mut data = Vec::with_capacity(input.metadata_len() + input.data_len());
        for part in input.metadata.iter().chain(&input.data) {
            self.encrypt_part(part, &mut data, &mut header)?;
        }
        Ok(Parts { metadata: vec![header], data: vec![data] })
    }

    fn decode(
        &self,
        _ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "aes-256-gcm metadata");
            let n_md = md.u32("metadata part count")? as usize;
            let n_data = md.u32("data part count")? as usize;
            let entries = n_md.checked_add(n_data).and_then(|n| n.checked_mul(PART_HEADER_LEN));
            if entries.is_none_or(|b| b > md.remaining()) {
                return Err(Error::corrupt(
                    FILTER,
                    format!(
                        "{n_md} + {n_data} part headers cannot fit in {} metadata bytes",
                        md.remaining()
                    ),
                ));
            }
            let mut d = ByteReader::new(data, "aes-256-gcm data");
            for i in 0..n_md {
                self.decrypt_part(&mut md, &mut d, i, "metadata", &mut out.metadata)?;
            }
            for i in 0..n_data {
                self.decrypt_part(&mut md, &mut d, i, "data", &mut out.data)?;
            }
            if d.remaining() != 0 {
                return Err(Error::corrupt(
                    FILTER,
                    format!("{} bytes of data after the last encrypted part", d.remaining()),
                ));
            }
            if md.remaining() != 0 {
                return Err(Error::corrupt(
                    FILTER,
                    format!("{} metadata bytes after the last part header", md.remaining()),
                ));
            }
            Ok(())
        })
    }

    fn decoded_len_hint(&self, _metadata: &[u8], data: &[u8]) -> Option<usize> {
        Some(data.len())
    }
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    fn key(b: u8) -> EncryptionKey {
        EncryptionKey::from_bytes(&[b; 32]).unwrap()
    }

    #[test]
    fn round_trips_parts_with_fresh_ivs() {
        let codec = build(&key(7));
        let c = ctx(Datatype::Int32);
        for n in [0usize, 1, 7, 1003] {
            let parts = Parts {
                metadata: vec![vec![1, 2, 3], vec![]],
                data: vec![sample(Datatype::Int32, n, 3), vec![9; 5]],
            };
            let enc = codec.encode(&c, parts.clone()).unwrap();
            assert_eq!(enc.metadata.len(), 1);
            assert_eq!(enc.metadata[0].len(), 8 + 4 * PART_HEADER_LEN);
            assert_eq!(enc.data[0].len(), parts.metadata_len() + parts.data_len());
            let (md, data) = round_trip_parts(codec.as_ref(), &c, parts.clone());
            assert_eq!(md, parts.metadata.concat());
            assert_eq!(data, parts.data.concat());
            // A second encoding uses other IVs, so other bytes.
            let again = codec.encode(&c, parts).unwrap();
            if n > 0 {
                assert_ne!(again.data, enc.data);
            }
        }
    }

    #[test]
    fn wrong_key_and_flipped_tag_fail_authentication() {
        let c = ctx(Datatype::UInt8);
        let enc = build(&key(1)).encode(&c, Parts::from_data(vec![5; 40])).unwrap();
        let (md, data) = (enc.metadata.concat(), enc.data.concat());
        let mut out = Decoded::default();
        let e = build(&key(2)).decode(&c, &md, &data, &mut out).unwrap_err();
        assert!(matches!(e, Error::Authentication { what: "data", part: 0 }), "{e}");
        assert!(out.data.is_empty());
        let mut bad = md.clone();
        *bad.last_mut().unwrap() ^= 0x80;
        let e = build(&key(1)).decode(&c, &bad, &data, &mut out).unwrap_err();
        assert!(matches!(e, Error::Authentication { .. }), "{e}");
        let e = build(&key(1)).decode(&c, &md, &data[..30], &mut out).unwrap_err();
        assert!(e.to_string().contains("truncated ciphertext"), "{e}");
    }

    #[test]
    fn decodes_libtiledb_bytes() {
        // The a0.tdb chunk of a dense int32 array libtiledb 2.30 wrote with the key
        // "0123456789abcdeF0123456789abcdeF": values 0, 1, 2, 3.
        let key = EncryptionKey::parse("0123456789abcdeF0123456789abcdeF").unwrap();
        let md = unhex(concat!(
            "0000000001000000",
            "1000000010000000",
            "122d50f6c9dafe2286a9bc31",
            "bc5eba8639ac5b00d29d5173c5aa690d"
        ));
        let data = unhex("9d8aaa97f2f0aa1f07282ffdf74b9738");
        let mut out = Decoded::default();
        build(&key).decode(&ctx(Datatype::Int32), &md, &data, &mut out).unwrap();
        assert!(out.metadata.is_empty());
        let values: Vec<u8> = (0..4i32).flat_map(i32::to_le_bytes).collect();
        assert_eq!(out.data, values);
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        let codec = build(&key(3));
        let c = ctx(Datatype::Int32);
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
