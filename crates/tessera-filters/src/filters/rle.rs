//! RLE, both of libtiledb's forms.
//!
//! * Fixed-width (the generic compression path): runs of `value[cell_size]` (little-endian,
//!   as stored) followed by a **big-endian** `u16` run length of 1..=65535.
//! * Var-sized STRING_ASCII / STRING_UTF8 tiles (the offset-free path, [`encode_strings`]):
//!   runs of `run_len (BE), str_len (BE), string bytes`, with the two widths chosen as the
//!   smallest of 1, 2, 4, 8 bytes that hold the longest run and the longest string, recorded
//!   in the metadata next to the tile's sizes.

use tessera_types::{ByteReader, FilterType};

use crate::{Error, Parts, Result};

/// The longest run one fixed-width RLE entry can record.
const MAX_RUN: usize = u16::MAX as usize;

/// A [`Error::Corrupt`] for RLE.
fn corrupt(reason: impl Into<String>) -> Error {
    Error::corrupt(FilterType::Rle, reason)
}

/// Appends the RLE runs of `src`, whose values are `width` bytes wide, to `dst`.
///
/// # Errors
/// [`Error::Encode`] when `width` is 0 or `src` is not a whole number of values (libtiledb
/// refuses the latter too; it would silently drop a part shorter than one value).
pub(crate) fn compress(width: usize, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    if width == 0 || !src.len().is_multiple_of(width) {
        return Err(Error::encode(
            FilterType::Rle,
            format!("{} bytes are not a whole number of {width}-byte values", src.len()),
        ));
    }
    let mut values = src.chunks_exact(width);
    let Some(mut current) = values.next() else { return Ok(()) };
    let mut run = 1usize;
    let push = |dst: &mut Vec<u8>, value: &[u8], run: usize| {
        dst.extend_from_slice(value);
        dst.extend_from_slice(&(run as u16).to_be_bytes());
    };
    for value in values {
        if value == current && run < MAX_RUN {
            run += 1;
        } else {
            push(dst, current, run);
            current = value;
            run = 1;
        }
    }
    push(dst, current, run);
    Ok(())
}

/// Appends `count` copies of `value` to `dst`.
fn repeat_into(dst: &mut Vec<u8>, value: &[u8], count: usize) {
    if let [byte] = value {
        dst.resize(dst.len() + count, *byte);
        return;
    }
    if count == 0 {
        return;
    }
    let start = dst.len();
    let total = value.len() * count;
    dst.extend_from_slice(value);
    // Double the copied prefix until the run is complete.
    while dst.len() - start < total {
        let have = dst.len() - start;
        let take = have.min(total - have);
        dst.extend_from_within(start..start + take);
    }
}

/// Appends the `orig` bytes the RLE runs `src` (values `width` bytes wide) stand for to `dst`.
///
/// # Errors
/// [`Error::Corrupt`] when `src` is not a whole number of runs or the runs do not add up to
/// exactly `orig` bytes.
pub(crate) fn decompress(width: usize, src: &[u8], orig: usize, dst: &mut Vec<u8>) -> Result<()> {
    if width == 0 {
        return Err(corrupt("cell size 0"));
    }
    let run_size = width + 2;
    if !src.len().is_multiple_of(run_size) {
        return Err(corrupt(format!(
            "{} bytes are not a whole number of {run_size}-byte runs",
            src.len()
        )));
    }
    let runs = src.chunks_exact(run_size);
    let count = |run: &[u8]| usize::from(u16::from_be_bytes([run[width], run[width + 1]]));
    // At most 65535 × width bytes per run, so this sum cannot overflow a usize from a slice.
    let total: usize = runs.clone().map(|run| count(run) * width).sum();
    if total != orig {
        return Err(corrupt(format!(
            "runs decode to {total} bytes instead of the declared {orig}"
        )));
    }
    dst.reserve(total);
    for run in runs {
        repeat_into(dst, &run[..width], count(run));
    }
    Ok(())
}

/// The smallest of 1, 2, 4, 8 bytes that holds `v` (libtiledb's `compute_bytesize`).
pub(crate) fn bytesize(v: u64) -> u8 {
    if v <= u64::from(u8::MAX) {
        1
    } else if v <= u64::from(u16::MAX) {
        2
    } else if v <= u64::from(u32::MAX) {
        4
    } else {
        8
    }
}

/// The width libtiledb reads for a stored bytesize: 1, 2, 4 or 8 (`<= 1`, `<= 2`, `<= 4`,
/// else 8); 0 is corrupt.
pub(crate) fn read_width(stored: u8) -> Option<usize> {
    match stored {
        0 => None,
        1 => Some(1),
        2 => Some(2),
        3 | 4 => Some(4),
        _ => Some(8),
    }
}

/// Appends `v` as a big-endian integer of `width` (1, 2, 4 or 8) bytes.
pub(crate) fn put_be(dst: &mut Vec<u8>, v: u64, width: usize) {
    dst.extend_from_slice(&v.to_be_bytes()[8 - width..]);
}

/// Reads a big-endian integer of `b.len()` (at most 8) bytes.
pub(crate) fn get_be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// The cells of a var-sized tile as slices of `data`, checking the offsets.
pub(crate) fn cells<'a>(
    filter: FilterType,
    data: &'a [u8],
    offsets: &'a [u64],
) -> Result<impl Iterator<Item = &'a [u8]> + Clone + 'a> {
    let bad = |reason: String| Error::encode(filter, reason);
    if u32::try_from(data.len()).is_err() {
        return Err(bad(format!("{} string bytes do not fit the u32 size field", data.len())));
    }
    if offsets.len() > u32::MAX as usize / 8 {
        return Err(bad(format!("{} cells do not fit the u32 offsets size field", offsets.len())));
    }
    match offsets.first() {
        None if !data.is_empty() => {
            return Err(bad(format!("{} string bytes but no cells", data.len())));
        }
        Some(&first) if first != 0 => {
            return Err(bad(format!("the first offset is {first}, not 0")));
        }
        _ => {}
    }
    let len = data.len() as u64;
    let mut prev = 0u64;
    for (i, &o) in offsets.iter().enumerate() {
        if o < prev || o > len {
            return Err(bad(format!(
                "offset {i} ({o}) is out of order or past the {len} string bytes"
            )));
        }
        prev = o;
    }
    let ends = offsets.iter().skip(1).copied().chain(std::iter::once(len));
    // Checked above: offsets are non-decreasing and within `data`.
    Ok(offsets.iter().zip(ends).map(move |(&s, e)| &data[s as usize..e as usize]))
}

/// The five `u32` fields every offset-free string encoding starts its metadata with.
pub(crate) fn string_header(md: &mut Vec<u8>, input_size: usize, output_size: usize, cells: usize) {
    for v in [0, 1, input_size, output_size, cells * 8] {
        md.extend_from_slice(&(v as u32).to_le_bytes());
    }
}

/// The sizes at the front of an offset-free string encoding's metadata.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StringHeader {
    /// Bytes of all strings.
    pub(crate) input_size: usize,
    /// Cells (from the stored offsets size in bytes).
    pub(crate) cells: usize,
}

/// Reads and checks the five `u32` fields of an offset-free string encoding.
pub(crate) fn read_string_header(
    filter: FilterType,
    r: &mut ByteReader<'_>,
    data: &[u8],
) -> Result<StringHeader> {
    let n_md = r.u32("metadata part count")?;
    let n_data = r.u32("data part count")?;
    if (n_md, n_data) != (0, 1) {
        return Err(Error::corrupt(
            filter,
            format!(
                "string encoding declares {n_md} metadata and {n_data} data parts, not 0 and 1"
            ),
        ));
    }
    let input_size = r.u32("string bytes")? as usize;
    let output_size = r.u32("encoded bytes")? as usize;
    let offsets_size = r.u32("offsets size")? as usize;
    if output_size != data.len() {
        return Err(Error::corrupt(
            filter,
            format!("{} encoded bytes, but the metadata declares {output_size}", data.len()),
        ));
    }
    if !offsets_size.is_multiple_of(8) {
        return Err(Error::corrupt(
            filter,
            format!("offsets size {offsets_size} is not a multiple of 8"),
        ));
    }
    Ok(StringHeader { input_size, cells: offsets_size / 8 })
}

/// Encodes a var-sized string tile (`data` and the start `offsets` of its cells) as
/// libtiledb's `compress_var_string_coords` does with RLE: one metadata part and one data
/// part, which a later compressor compresses as one part each.
///
/// libtiledb 2.30 leaves the last run's string out when it picks the string-length width, so
/// when that string is the longest and too long for the width it writes corrupt bytes (and
/// crashes reading them back). Tessera takes every string into account; the bytes are the
/// same whenever libtiledb's are readable.
///
/// # Errors
/// [`Error::Encode`] when the offsets are not non-decreasing starting at 0 within `data`, or
/// the sizes exceed the `u32` fields.
pub(crate) fn encode_strings(data: &[u8], offsets: &[u64]) -> Result<Parts> {
    let strings = cells(FilterType::Rle, data, offsets)?;
    // Pass 1: widths and output size.
    let (mut max_run, mut max_len, mut runs, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut it = strings.clone();
    if let Some(mut prev) = it.next() {
        let mut run = 1u64;
        for s in it {
            if s == prev {
                run += 1;
            } else {
                max_run = max_run.max(run);
                max_len = max_len.max(prev.len() as u64);
                runs += 1;
                bytes += prev.len() as u64;
                prev = s;
                run = 1;
            }
        }
        max_run = max_run.max(run);
        max_len = max_len.max(prev.len() as u64);
        runs += 1;
        bytes += prev.len() as u64;
    }
    let run_w = bytesize(max_run);
    let len_w = bytesize(max_len);
    let output_size = runs * u64::from(run_w + len_w) + bytes;
    if output_size > u64::from(u32::MAX) {
        return Err(Error::encode(
            FilterType::Rle,
            format!("{output_size} encoded bytes do not fit the u32 size field"),
        ));
    }
    // Pass 2: the runs.
    let (rw, lw) = (usize::from(run_w), usize::from(len_w));
    let max_run_len = if rw == 8 { u64::MAX } else { (1u64 << (8 * rw)) - 1 };
    let mut out = Vec::with_capacity(output_size as usize);
    let mut it = strings;
    if let Some(mut prev) = it.next() {
        let mut run = 1u64;
        let flush = |out: &mut Vec<u8>, s: &[u8], run: u64| {
            put_be(out, run, rw);
            put_be(out, s.len() as u64, lw);
            out.extend_from_slice(s);
        };
        for s in it {
            if s == prev && run < max_run_len {
                run += 1;
            } else {
                flush(&mut out, prev, run);
                prev = s;
                run = 1;
            }
        }
        flush(&mut out, prev, run);
    }
    let mut md = Vec::with_capacity(22);
    string_header(&mut md, data.len(), out.len(), offsets.len());
    md.push(run_w);
    md.push(len_w);
    Ok(Parts { metadata: vec![md], data: vec![out] })
}

/// Decodes what [`encode_strings`] wrote: appends the strings to `out_data` and their start
/// offsets, relative to the tile, to `out_offsets`. All of `metadata` must be used.
///
/// # Errors
/// [`Error::Corrupt`] or [`Error::Format`] when the metadata is truncated, has bytes left
/// over, or the runs do not add up to the declared cells and bytes. The output buffers are
/// left as they were on error.
pub(crate) fn decode_strings(
    metadata: &[u8],
    data: &[u8],
    out_data: &mut Vec<u8>,
    out_offsets: &mut Vec<u64>,
) -> Result<()> {
    let mut r = ByteReader::new(metadata, "RLE string metadata");
    let header = read_string_header(FilterType::Rle, &mut r, data)?;
    let run_w =
        read_width(r.u8("run length bytesize")?).ok_or_else(|| corrupt("run length bytesize 0"))?;
    let len_w = read_width(r.u8("string length bytesize")?)
        .ok_or_else(|| corrupt("string length bytesize 0"))?;
    if !r.is_empty() {
        return Err(corrupt(format!("{} metadata bytes left over", r.remaining())));
    }
    // Pass 1: walk the runs, checking every length against the data and the totals.
    let (mut cells, mut bytes, mut pos) = (0u64, 0u64, 0usize);
    while pos < data.len() {
        let head = data
            .get(pos..pos + run_w + len_w)
            .ok_or_else(|| corrupt(format!("run header at offset {pos} is cut off")))?;
        let run = get_be(&head[..run_w]);
        let len = get_be(&head[run_w..]);
        pos += run_w + len_w;
        if len > (data.len() - pos) as u64 {
            return Err(corrupt(format!("string of {len} bytes at offset {pos} is cut off")));
        }
        pos += len as usize;
        cells = cells.saturating_add(run);
        bytes = bytes.saturating_add(run.saturating_mul(len));
        if cells > header.cells as u64 || bytes > header.input_size as u64 {
            return Err(corrupt(format!(
                "runs hold more than the declared {} cells and {} bytes",
                header.cells, header.input_size
            )));
        }
    }
    if cells != header.cells as u64 || bytes != header.input_size as u64 {
        return Err(corrupt(format!(
            "runs hold {cells} cells and {bytes} bytes, not the declared {} and {}",
            header.cells, header.input_size
        )));
    }
    // Pass 2: the sizes are now known to be backed by the data.
    out_data.reserve(header.input_size);
    out_offsets.reserve(header.cells);
    let (mut pos, mut offset) = (0usize, 0u64);
    while pos < data.len() {
        let run = get_be(&data[pos..pos + run_w]);
        let len = get_be(&data[pos + run_w..pos + run_w + len_w]) as usize;
        pos += run_w + len_w;
        let s = &data[pos..pos + len];
        pos += len;
        repeat_into(out_data, s, run as usize);
        out_offsets.extend((0..run).map(|k| offset + k * len as u64));
        offset += run * len as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::util::test_support::{strings, unhex as hex};
    use tessera_types::Primitive;

    fn round_trip(width: usize, src: &[u8]) -> Vec<u8> {
        let mut enc = Vec::new();
        compress(width, src, &mut enc).unwrap();
        let mut dec = b"pre".to_vec();
        decompress(width, &enc, src.len(), &mut dec).unwrap();
        assert_eq!(&dec[..3], b"pre");
        assert_eq!(dec[3..], src[..], "width {width}");
        enc
    }

    /// Values with runs, `n` of them, of width `T`.
    fn values<T: Primitive>(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            T::from_i128_wrapping((i / 3 % 5) as i128 - 2).write_le(&mut out);
        }
        out
    }

    #[test]
    fn fixed_round_trips_over_widths_and_sizes() {
        for n in [0, 1, 2, 7, 1001, 3 * 65536] {
            round_trip(1, &values::<i8>(n));
            round_trip(1, &values::<u8>(n));
            round_trip(2, &values::<i16>(n));
            round_trip(2, &values::<u16>(n));
            round_trip(4, &values::<i32>(n));
            round_trip(4, &values::<u32>(n));
            round_trip(8, &values::<i64>(n));
            round_trip(8, &values::<u64>(n));
            round_trip(12, &values::<u32>(n * 3));
        }
        // Runs longer than 65535 are split.
        let enc = round_trip(1, &vec![9u8; 65535 * 2 + 3]);
        assert_eq!(enc, hex("09ffff 09ffff 090003"));
    }

    /// Data parts of libtiledb 2.30 tiles with `RleFilter()`.
    #[test]
    fn fixed_matches_libtiledb_bytes() {
        // int16 [5,5,5,-1,-1,7,7,7,7,300,300,-32768,5]
        let i16s: Vec<u8> = [5i16, 5, 5, -1, -1, 7, 7, 7, 7, 300, 300, -32768, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let golden = hex("05000003 ffff0002 07000004 2c010002 00800001 05000001");
        let mut enc = Vec::new();
        compress(2, &i16s, &mut enc).unwrap();
        assert_eq!(enc, golden);
        // three int8 per cell: the run width is the cell size, 3.
        let cells: Vec<u8> = [[1, 2, 3], [1, 2, 3], [1, 2, 3], [4, 5, 6], [1, 2, 3], [1, 2, 3]]
            .iter()
            .flatten()
            .copied()
            .chain([255, 0, 1])
            .collect();
        let golden = hex("0102030003 0405060001 0102030002 ff000100 01");
        let mut enc = Vec::new();
        compress(3, &cells, &mut enc).unwrap();
        assert_eq!(enc, golden);
        // uint8: 300 × 1, 2, 3, 3
        let u8s: Vec<u8> = std::iter::repeat_n(1u8, 300).chain([2, 3, 3]).collect();
        let mut enc = Vec::new();
        compress(1, &u8s, &mut enc).unwrap();
        assert_eq!(enc, hex("01012c 020001 030002"));
    }

    #[test]
    fn fixed_rejects_bad_input() {
        assert!(compress(4, &[1, 2, 3], &mut Vec::new()).is_err());
        assert!(compress(0, &[1], &mut Vec::new()).is_err());
        let mut out = b"k".to_vec();
        assert!(decompress(2, &[1, 2, 0, 3, 9], 6, &mut out).is_err());
        assert!(decompress(2, &[1, 2, 0, 3], 5, &mut out).is_err());
        assert!(decompress(2, &[1, 2, 0, 3], 7, &mut out).is_err());
        assert!(decompress(0, &[], 0, &mut out).is_err());
        assert_eq!(out, b"k");
        decompress(2, &[1, 2, 0, 3], 6, &mut out).unwrap();
        assert_eq!(out, [b'k', 1, 2, 1, 2, 1, 2]);
    }

    /// `docs/format/filters.md` (the string path):
    /// cells "aa","aa","aa","bcd","bcd","","e"×300,"aa".
    fn example() -> (Vec<u8>, Vec<u64>) {
        let cells: Vec<Vec<u8>> = vec![
            b"aa".to_vec(),
            b"aa".to_vec(),
            b"aa".to_vec(),
            b"bcd".to_vec(),
            b"bcd".to_vec(),
            Vec::new(),
            vec![b'e'; 300],
            b"aa".to_vec(),
        ];
        strings(&cells)
    }

    fn check_strings(data: &[u8], offsets: &[u64]) -> Parts {
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

    #[test]
    fn strings_match_the_worked_example() {
        let (data, offsets) = example();
        let parts = check_strings(&data, &offsets);
        assert_eq!(parts.metadata[0], hex("00000000 01000000 3a010000 42010000 40000000 01 02"));
        let mut want = hex("03 0002 6161 02 0003 626364 01 0000 01 012c");
        want.extend_from_slice(&[b'e'; 300]);
        want.extend_from_slice(&hex("01 0002 6161"));
        assert_eq!(parts.data[0], want);
    }

    /// A libtiledb 2.30 var UTF-8 tile with `RleFilter()`: "x","hello","x","x","é","","hello".
    #[test]
    fn strings_match_libtiledb_bytes() {
        let cells: Vec<Vec<u8>> = ["x", "hello", "x", "x", "é", "", "hello"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let (data, offsets) = strings(&cells);
        let parts = check_strings(&data, &offsets);
        let chunk = hex("0f000000 1a000000 16000000
             00000000 01000000 0f000000 1a000000 38000000 01 01
             0101 78 0105 68656c6c6f 0201 78 0102 c3a9 0100 0105 68656c6c6f");
        assert_eq!(parts.metadata[0], chunk[12..34]);
        assert_eq!(parts.data[0], chunk[34..]);
        // 70000 × "a": a 4-byte run length.
        let (data, offsets) = strings(&vec![b"a".to_vec(); 70000]);
        let parts = check_strings(&data, &offsets);
        assert_eq!(parts.metadata[0], hex("00000000 01000000 70110100 06000000 808b0800 04 01"));
        assert_eq!(parts.data[0], hex("00011170 01 61"));
        // All-empty cells.
        let (data, offsets) = strings(&vec![Vec::new(); 3]);
        let parts = check_strings(&data, &offsets);
        assert_eq!(parts.metadata[0], hex("00000000 01000000 00000000 02000000 18000000 01 01"));
        assert_eq!(parts.data[0], hex("03 00"));
    }

    #[test]
    fn strings_take_the_last_string_into_account() {
        // libtiledb would pick a 1-byte string length here and write corrupt bytes.
        let (data, offsets) = strings(&[b"a".to_vec(), vec![b'b'; 300]]);
        let parts = check_strings(&data, &offsets);
        assert_eq!(parts.metadata[0][21], 2);
    }

    #[test]
    fn strings_edge_cases() {
        check_strings(&[], &[]);
        check_strings(b"abc", &[0]);
        check_strings(b"abcabc", &[0, 3]);
        let many: Vec<Vec<u8>> = (0..3000).map(|i| vec![b'a' + (i / 7 % 3) as u8; i % 4]).collect();
        let (data, offsets) = strings(&many);
        check_strings(&data, &offsets);
        assert!(encode_strings(b"abc", &[]).is_err());
        assert!(encode_strings(b"abc", &[1]).is_err());
        assert!(encode_strings(b"abc", &[0, 2, 1]).is_err());
        assert!(encode_strings(b"abc", &[0, 4]).is_err());
    }

    #[test]
    fn string_decoder_rejects_bad_metadata() {
        let (data, offsets) = example();
        let parts = encode_strings(&data, &offsets).unwrap();
        let (md, d) = (&parts.metadata[0], &parts.data[0]);
        let mut od = b"d".to_vec();
        let mut oo = vec![1u64];
        let mut bad_md = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut m = md.clone();
            f(&mut m);
            assert!(decode_strings(&m, d, &mut od, &mut oo).is_err());
        };
        bad_md(&|m| m.push(0));
        bad_md(&|m| m.truncate(21));
        bad_md(&|m| m[0] = 1);
        bad_md(&|m| m[8] += 1);
        bad_md(&|m| m[12] += 1);
        bad_md(&|m| m[16] += 8);
        bad_md(&|m| m[16] += 1);
        bad_md(&|m| m[20] = 0);
        bad_md(&|m| m[21] = 1);
        let mut d2 = d.clone();
        d2.push(0);
        assert!(decode_strings(md, &d2, &mut od, &mut oo).is_err());
        assert_eq!(od, b"d");
        assert_eq!(oo, [1]);
    }
}
