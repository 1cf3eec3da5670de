//! Consolidated fragment metadata: `__fragment_meta/<name>.meta`, one generic tile holding the
//! footers of several fragments (`tiledb/sm/consolidator/fragment_meta_consolidator.cc`,
//! `load_consolidated_fragment_meta` in `tiledb/sm/fragment/fragment_info.cc`).
//!
//! Payload: `u32` fragment count; per fragment `u64` name length, the fragment folder name,
//! `u64` offset of its footer in the payload; then the footers back to back, each exactly the
//! bytes of a metadata file's footer without the trailing length. A footer ends where the next
//! one starts (the last at the end of the payload), so each can be parsed with its own
//! fragment's schema ([`Footer::parse`]).

use tessera_schema::ArraySchema;

use crate::condition::{read_tile, write_tile};
use crate::footer::Footer;
use crate::parse::{PResult, bytes, fail, put_u64, u32f, u64f, utf8};
use crate::{Error, Result};

/// Folder of consolidated fragment metadata files inside an array.
pub const FRAGMENT_META_DIR: &str = crate::dirs::FRAGMENT_META;

const STRUCTURE: &str = "consolidated fragment metadata";

/// One fragment of a `.meta` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsolidatedFooter {
    /// The fragment folder name (`__t1_t2_uuid_v`).
    pub name: String,
    /// The fragment's footer bytes (without the trailing length).
    pub footer: Vec<u8>,
}

impl ConsolidatedFooter {
    /// Parses the footer with the fragment's schema.
    ///
    /// # Errors
    /// As [`Footer::parse`].
    pub fn parse_footer(&self, schema: &ArraySchema) -> Result<Footer> {
        Footer::parse(&self.footer, schema)
    }
}

/// A `__fragment_meta/<name>.meta` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsolidatedFragmentMeta {
    /// The fragments in file order.
    pub entries: Vec<ConsolidatedFooter>,
}

impl ConsolidatedFragmentMeta {
    /// Parses the unfiltered payload.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the count or a name runs past the payload, a name is not
    /// UTF-8, or the footer offsets are not contiguous and increasing from the end of the
    /// name table to the end of the payload.
    pub fn parse_payload(payload: &[u8]) -> Result<Self> {
        let (table, table_len) = {
            let (rest, t) =
                table(payload).map_err(|e| crate::parse::to_error(STRUCTURE, payload, e))?;
            (t, payload.len() - rest.len())
        };
        let mut entries = Vec::with_capacity(table.len());
        for (k, (name, off)) in table.iter().enumerate() {
            let end = table.get(k + 1).map_or(payload.len() as u64, |n| n.1);
            let expected_first = table_len as u64;
            if k == 0 && *off != expected_first {
                return Err(Error::malformed(
                    STRUCTURE,
                    "footer offset",
                    *off,
                    format!(
                        "the first footer starts at {off}, the name table ends at {expected_first}"
                    ),
                ));
            }
            if *off > end || end > payload.len() as u64 {
                return Err(Error::malformed(
                    STRUCTURE,
                    "footer offset",
                    *off,
                    format!("footer {k} would run from {off} to {end} in {} bytes", payload.len()),
                ));
            }
            entries.push(ConsolidatedFooter {
                name: name.clone(),
                footer: payload[*off as usize..end as usize].to_vec(),
            });
        }
        if table.is_empty() && table_len != payload.len() {
            return Err(Error::malformed(
                STRUCTURE,
                "end",
                table_len as u64,
                format!("{} bytes follow an empty table", payload.len() - table_len),
            ));
        }
        Ok(ConsolidatedFragmentMeta { entries })
    }

    /// Parses a `.meta` file (one generic tile).
    ///
    /// # Errors
    /// [`Error::Tile`] when the tile cannot be decoded; otherwise as
    /// [`ConsolidatedFragmentMeta::parse_payload`].
    pub fn parse_file(file: &[u8]) -> Result<Self> {
        Self::parse_file_with_key(file, None)
    }

    /// [`Self::parse_file`] of an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::parse_file`].
    pub fn parse_file_with_key(
        file: &[u8],
        key: Option<&tessera_types::EncryptionKey>,
    ) -> Result<Self> {
        Self::parse_payload(&read_tile(file, STRUCTURE, key)?)
    }

    /// The unfiltered payload, with the footer offsets computed as libtiledb does.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut offset = 4u64;
        for e in &self.entries {
            offset += 16 + e.name.len() as u64;
        }
        let mut out = Vec::new();
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            put_u64(&mut out, e.name.len() as u64);
            out.extend_from_slice(e.name.as_bytes());
            put_u64(&mut out, offset);
            offset += e.footer.len() as u64;
        }
        for e in &self.entries {
            out.extend_from_slice(&e.footer);
        }
        out
    }

    /// The `.meta` file bytes (GZIP level 1 generic tile, byte-identical to libtiledb's).
    ///
    /// # Errors
    /// [`Error::Tile`] when the tile cannot be encoded.
    pub fn to_file(&self) -> Result<Vec<u8>> {
        self.to_file_with_key(None)
    }

    /// [`Self::to_file`] for an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::to_file`].
    pub fn to_file_with_key(&self, key: Option<&tessera_types::EncryptionKey>) -> Result<Vec<u8>> {
        write_tile(&self.to_payload(), STRUCTURE, key)
    }

    /// The entry of fragment `name`.
    pub fn get(&self, name: &str) -> Option<&ConsolidatedFooter> {
        self.entries.iter().find(|e| e.name == name)
    }
}

fn table(i: &[u8]) -> PResult<'_, Vec<(String, u64)>> {
    let (mut r, n) = u32f("fragment count")(i)?;
    if u64::from(n) > (r.len() / 16) as u64 {
        return fail(i, "fragment count", format!("{n} fragments cannot fit in {} bytes", r.len()));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (r2, len) = u64f("name length")(r)?;
        let (r3, name) = bytes(r2, len, "name")?;
        let name = utf8(r2, name, "name")?;
        let (r4, off) = u64f("footer offset")(r3)?;
        if let Some((_, prev)) = out.last().filter(|(_, prev)| off < *prev) {
            return fail(
                r3,
                "footer offset",
                format!("{off} is before the previous footer at {prev}"),
            );
        }
        out.push((name, off));
        r = r4;
    }
    Ok((r, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_offsets() {
        let m = ConsolidatedFragmentMeta {
            entries: vec![
                ConsolidatedFooter { name: "a".repeat(43), footer: vec![1; 678] },
                ConsolidatedFooter { name: "b".repeat(43), footer: vec![2; 678] },
            ],
        };
        let p = m.to_payload();
        // docs/format/commits-and-names.md (`__fragment_meta/`): 122 for two 43-character names.
        assert_eq!(crate::parse::read_u64(&p[4 + 8 + 43..]), 122);
        assert_eq!(ConsolidatedFragmentMeta::parse_payload(&p).unwrap(), m);
        let f = m.to_file().unwrap();
        assert_eq!(ConsolidatedFragmentMeta::parse_file(&f).unwrap(), m);
        for cut in 0..122 {
            assert!(ConsolidatedFragmentMeta::parse_payload(&p[..cut]).is_err(), "{cut}");
        }
        let mut huge = p.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(ConsolidatedFragmentMeta::parse_payload(&huge).is_err());
        assert_eq!(
            ConsolidatedFragmentMeta::parse_payload(&0u32.to_le_bytes()).unwrap(),
            ConsolidatedFragmentMeta::default()
        );
    }
}
