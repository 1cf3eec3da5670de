//! DICTIONARY on var-sized STRING_ASCII / STRING_UTF8 tiles (the offset-free path), as
//! libtiledb's `compress_var_string_coords` writes it.
//!
//! ```text
//! metadata: u32 0, u32 1, u32 string bytes, u32 id bytes, u32 8 × cells,
//!           u8 id_bytesize, u8 str_len_bytesize, u32 dict_bytes,
//!           dictionary: (str_len BE, bytes) per distinct string, first seen first
//! data:     one big-endian id of id_bytesize per cell
//! ```
//!
//! The id width comes from the number of **cells** (not of distinct strings). Outside this
//! path libtiledb refuses to dictionary-encode (see [`super::compression`]).

use std::collections::HashMap;

use tessera_types::{ByteReader, FilterType};

use super::rle::{bytesize, cells, get_be, put_be, read_string_header, read_width, string_header};
use crate::{Error, Parts, Result};

/// A [`Error::Corrupt`] for DICTIONARY.
fn corrupt(reason: impl Into<String>) -> Error {
    Error::corrupt(FilterType::Dictionary, reason)
}

/// Encodes a var-sized string tile (`data` and the start `offsets` of its cells) with a
/// dictionary: one metadata part (holding the dictionary) and one data part (the ids).
///
/// # Errors
/// [`Error::Encode`] when the offsets are not non-decreasing starting at 0 within `data`, or
/// the sizes exceed the `u32` fields.
pub(crate) fn encode_strings(data: &[u8], offsets: &[u64]) -> Result<Parts> {
    let strings = cells(FilterType::Dictionary, data, offsets)?;
    let n = offsets.len();
    let id_w = bytesize(n as u64);
    let max_len = strings.clone().map(<[u8]>::len).max().unwrap_or(0);
    let len_w = bytesize(max_len as u64);
    let (iw, lw) = (usize::from(id_w), usize::from(len_w));

    let mut ids: HashMap<&[u8], u64> = HashMap::new();
    let mut dict = Vec::new();
    let mut out = Vec::with_capacity(n * iw);
    for s in strings {
        let next = ids.len() as u64;
        let id = *ids.entry(s).or_insert_with(|| {
            put_be(&mut dict, s.len() as u64, lw);
            dict.extend_from_slice(s);
            next
        });
        put_be(&mut out, id, iw);
    }
    let Ok(dict_len) = u32::try_from(dict.len()) else {
        return Err(Error::encode(
            FilterType::Dictionary,
            format!("a {}-byte dictionary does not fit the u32 size field", dict.len()),
        ));
    };
    if u32::try_from(out.len()).is_err() {
        return Err(Error::encode(
            FilterType::Dictionary,
            format!("{} id bytes do not fit the u32 size field", out.len()),
        ));
    }
    let mut md = Vec::with_capacity(26 + dict.len());
    string_header(&mut md, data.len(), out.len(), n);
    md.push(id_w);
    md.push(len_w);
    md.extend_from_slice(&dict_len.to_le_bytes());
    md.extend_from_slice(&dict);
    Ok(Parts { metadata: vec![md], data: vec![out] })
}

/// Decodes what [`encode_strings`] wrote: appends the strings to `out_data` and their start
/// offsets, relative to the tile, to `out_offsets`. All of `metadata` must be used.
///
/// # Errors
/// [`Error::Corrupt`] or [`Error::Format`] when the metadata is truncated, has bytes left
/// over, an id is past the dictionary, or the cells do not add up to the declared sizes. The
/// output buffers are left as they were on error.
pub(crate) fn decode_strings(
    metadata: &[u8],
    data: &[u8],
    out_data: &mut Vec<u8>,
    out_offsets: &mut Vec<u64>,
) -> Result<()> {
    let mut r = ByteReader::new(metadata, "dictionary string metadata");
    let header = read_string_header(FilterType::Dictionary, &mut r, data)?;
    let id_w = read_width(r.u8("id bytesize")?).ok_or_else(|| corrupt("id bytesize 0"))?;
    let len_w = read_width(r.u8("string length bytesize")?)
        .ok_or_else(|| corrupt("string length bytesize 0"))?;
    let dict_len = r.u32("dictionary size")?;
    let dict = r.bytes(dict_len as usize, "dictionary")?;
    if !r.is_empty() {
        return Err(corrupt(format!("{} metadata bytes left over", r.remaining())));
    }
    // The dictionary as (start, len) in `dict`; each entry takes at least `len_w` bytes.
    let mut entries: Vec<(usize, usize)> = Vec::with_capacity(dict.len() / len_w);
    let mut pos = 0usize;
    while pos < dict.len() {
        let head = dict
            .get(pos..pos + len_w)
            .ok_or_else(|| corrupt(format!("dictionary entry at offset {pos} is cut off")))?;
        let len = get_be(head);
        pos += len_w;
        if len > (dict.len() - pos) as u64 {
            return Err(corrupt(format!(
                "dictionary string of {len} bytes at offset {pos} is cut off"
            )));
        }
        entries.push((pos, len as usize));
        pos += len as usize;
    }
    if !data.len().is_multiple_of(id_w) || data.len() / id_w != header.cells {
        return Err(corrupt(format!(
            "{} id bytes are not {} ids of {id_w} bytes",
            data.len(),
            header.cells
        )));
    }
    let lookup = |id_bytes: &[u8]| -> Result<(usize, usize)> {
        let id = get_be(id_bytes);
        usize::try_from(id).ok().and_then(|i| entries.get(i).copied()).ok_or_else(|| {
            corrupt(format!("id {id} is past the {}-entry dictionary", entries.len()))
        })
    };
    // Pass 1: check every id and the total size before touching the output.
    let mut total = 0u64;
    for id in data.chunks_exact(id_w) {
        total += lookup(id)?.1 as u64;
    }
    if total != header.input_size as u64 {
        return Err(corrupt(format!(
            "cells hold {total} bytes, not the declared {}",
            header.input_size
        )));
    }
    out_data.reserve(header.input_size);
    out_offsets.reserve(header.cells);
    let mut offset = 0u64;
    for id in data.chunks_exact(id_w) {
        let (start, len) = lookup(id)?;
        out_data.extend_from_slice(&dict[start..start + len]);
        out_offsets.push(offset);
        offset += len as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::util::test_support::{strings, unhex as hex};

    fn check(data: &[u8], offsets: &[u64]) -> Parts {
        let parts = encode_strings(data, offsets).unwrap();
        assert_eq!((parts.metadata.len(), parts.data.len()), (1, 1));
        let mut d = b"xy".to_vec();
        let mut o = vec![77];
        decode_strings(&parts.metadata[0], &parts.data[0], &mut d, &mut o).unwrap();
        assert_eq!(&d[..2], b"xy");
        assert_eq!(d[2..], data[..]);
        assert_eq!(o[0], 77);
        assert_eq!(o[1..], offsets[..]);
        parts
    }

    fn example() -> (Vec<u8>, Vec<u64>) {
        strings(&[
            b"aa".to_vec(),
            b"aa".to_vec(),
            b"aa".to_vec(),
            b"bcd".to_vec(),
            b"bcd".to_vec(),
            Vec::new(),
            vec![b'e'; 300],
            b"aa".to_vec(),
        ])
    }

    /// The worked example of `docs/format/filters.md` (the string path), which is also the
    /// libtiledb 2.30 tile.
    #[test]
    fn matches_the_worked_example() {
        let (data, offsets) = example();
        let parts = check(&data, &offsets);
        let mut md = hex("00000000 01000000 3a010000 08000000 40000000 01 02 39010000");
        md.extend_from_slice(&hex("0002 6161 0003 626364 0000 012c"));
        md.extend_from_slice(&[b'e'; 300]);
        assert_eq!(parts.metadata[0], md);
        assert_eq!(parts.data[0], hex("00 00 00 01 01 02 03 00"));
    }

    /// libtiledb 2.30 var UTF-8 tiles with `DictionaryFilter()`.
    #[test]
    fn matches_libtiledb_bytes() {
        let cells: Vec<Vec<u8>> = ["x", "hello", "x", "x", "é", "", "hello"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let (data, offsets) = strings(&cells);
        let parts = check(&data, &offsets);
        let chunk = hex("0f000000 07000000 26000000
             00000000 01000000 0f000000 07000000 38000000 01 01 0c000000
             01 78 05 68656c6c6f 02 c3a9 00
             00 01 00 00 02 03 01");
        assert_eq!(parts.metadata[0], chunk[12..50]);
        assert_eq!(parts.data[0], chunk[50..]);
        // 256 cells: 2-byte ids although there is one distinct string.
        let (data, offsets) = strings(&vec![b"a".to_vec(); 256]);
        let parts = check(&data, &offsets);
        assert_eq!(
            parts.metadata[0],
            hex("00000000 01000000 00010000 00020000 00080000 02 01 02000000 01 61")
        );
        assert_eq!(parts.data[0], vec![0; 512]);
        // All-empty cells.
        let (data, offsets) = strings(&vec![Vec::new(); 3]);
        let parts = check(&data, &offsets);
        assert_eq!(
            parts.metadata[0],
            hex("00000000 01000000 00000000 03000000 18000000 01 01 01000000 00")
        );
        assert_eq!(parts.data[0], hex("000000"));
    }

    #[test]
    fn edge_cases() {
        check(&[], &[]);
        check(b"abc", &[0]);
        let many: Vec<Vec<u8>> =
            (0..70_000).map(|i| format!("s{}", i % 300).into_bytes()).collect();
        let (data, offsets) = strings(&many);
        let parts = check(&data, &offsets);
        assert_eq!(parts.metadata[0][20], 4);
        let long: Vec<Vec<u8>> = vec![b"a".to_vec(), vec![b'z'; 70_000]];
        let (data, offsets) = strings(&long);
        let parts = check(&data, &offsets);
        assert_eq!(parts.metadata[0][21], 4);
        assert!(encode_strings(b"abc", &[]).is_err());
        assert!(encode_strings(b"abc", &[0, 5]).is_err());
    }

    #[test]
    fn rejects_bad_metadata_and_ids() {
        let (data, offsets) = example();
        let parts = encode_strings(&data, &offsets).unwrap();
        let (md, d) = (&parts.metadata[0], &parts.data[0]);
        let mut od = b"d".to_vec();
        let mut oo = vec![1u64];
        for f in [
            |m: &mut Vec<u8>| m.push(0),
            |m: &mut Vec<u8>| m.truncate(m.len() - 1),
            |m: &mut Vec<u8>| m[4] = 2,
            |m: &mut Vec<u8>| m[8] += 1,
            |m: &mut Vec<u8>| m[12] += 1,
            |m: &mut Vec<u8>| m[16] += 8,
            |m: &mut Vec<u8>| m[20] = 0,
            |m: &mut Vec<u8>| m[20] = 2,
            |m: &mut Vec<u8>| m[21] = 0,
            |m: &mut Vec<u8>| m[22] = 0xff,
            |m: &mut Vec<u8>| m[27] = 0xff,
        ] {
            let mut m = md.clone();
            f(&mut m);
            assert!(decode_strings(&m, d, &mut od, &mut oo).is_err());
        }
        let mut d2 = d.clone();
        d2[7] = 4; // past the 4-entry dictionary
        assert!(decode_strings(md, &d2, &mut od, &mut oo).is_err());
        assert_eq!(od, b"d");
        assert_eq!(oo, [1]);
    }
}
