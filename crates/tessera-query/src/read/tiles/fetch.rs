//! Fetching and decoding whole tiles: the byte ranges of many tiles read with coalesced
//! ranged reads ([`Storage::read_ranges`], one call per file or group, files in parallel),
//! then decoded on the rayon pool. Tiles stored without filters are handed out as slices of
//! the bytes read, without copying.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use tessera_storage::Storage;
use tessera_tile::{TileCodec, unfiltered_slice};

use super::locate::{Codec, FieldReader};
use crate::{Error, Result};

/// One decoded tile of one field.
#[derive(Debug, Clone)]
pub(crate) struct DecodedTile {
    /// Fixed-size values, or the bytes of var-sized values.
    pub(crate) data: Bytes,
    /// Start offset of each var-sized cell in `data`.
    pub(crate) offsets: Option<Vec<u64>>,
    /// Validity byte of each cell (nullable attributes).
    pub(crate) validity: Option<Bytes>,
    /// Bytes per cell of a fixed-size field.
    pub(crate) cell_size: usize,
}

impl DecodedTile {
    /// The byte range of cells `first..first + n` in `data`.
    #[inline]
    pub(crate) fn cells_range(&self, first: usize, n: usize) -> Range<usize> {
        match &self.offsets {
            Some(o) => {
                let start = o[first] as usize;
                let end = o.get(first + n).map_or(self.data.len(), |&e| e as usize);
                start..end
            }
            None => first * self.cell_size..(first + n) * self.cell_size,
        }
    }

    /// The bytes of cell `i`.
    #[inline]
    pub(crate) fn cell(&self, i: usize) -> &[u8] {
        &self.data[self.cells_range(i, 1)]
    }
}

/// One tile to load: tile `tile` (holding `cells` cells) of a field.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileJob<'a> {
    /// The field's reader in the tile's fragment.
    pub(crate) reader: &'a FieldReader,
    /// The tile index in the fragment.
    pub(crate) tile: u64,
    /// Cells in the tile.
    pub(crate) cells: u64,
    /// The byte ranges of the unfiltered tile the reader will look at (sorted, disjoint),
    /// when not all: a filtered fixed-size tile then decodes only the chunks holding them,
    /// the rest of it left zero. `None`: all of it.
    pub(crate) wanted: Option<&'a [Range<u64>]>,
}

/// Which file of a field a byte range belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Data,
    Var,
    Validity,
}

/// The byte ranges to read in one file: (job, part, range).
type FileRanges = Vec<(usize, Part, Range<u64>)>;

/// Loads of fewer bytes than this (read, or decoded) run on the calling thread.
const SMALL_LOAD_BYTES: u64 = 512 << 10;

/// Bytes of ranges of one file read by one [`Storage::read_ranges`] call, at least (files with
/// fewer than twice as many are read with one call).
const READ_GROUP_BYTES: u64 = 4 << 20;

/// Fetches and decodes `jobs`: the byte ranges of a file are read with one
/// [`Storage::read_ranges`] call (which coalesces nearby ranges), or for a large file one call
/// per group of about [`READ_GROUP_BYTES`], files and groups in parallel; tiles are then
/// decoded in parallel. The result is in the order of `jobs`.
///
/// # Errors
/// Storage errors; [`Error::Tile`] naming the file, tile and byte range of a tile that does
/// not decode; [`Error::Corrupt`] for offsets outside their file.
pub(crate) fn load_tiles(
    storage: &dyn Storage,
    jobs: &[TileJob<'_>],
) -> Result<Vec<Arc<DecodedTile>>> {
    // With enough tiles to keep every worker busy, each tile decodes its chunks one after
    // the other into one buffer; with few, their chunks are decoded in parallel.
    load_tiles_with(storage, jobs, jobs.len() >= 2 * rayon::current_num_threads())
}

/// [`load_tiles`], decoding each tile's chunks one after the other (`sequential`: nothing
/// zeroed or copied; for callers that already run many tiles in parallel) or in parallel.
///
/// # Errors
/// As [`load_tiles`].
pub(crate) fn load_tiles_with(
    storage: &dyn Storage,
    jobs: &[TileJob<'_>],
    sequential: bool,
) -> Result<Vec<Arc<DecodedTile>>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    // Byte ranges by file.
    let mut by_file: HashMap<&str, FileRanges> = HashMap::new();
    for (j, job) in jobs.iter().enumerate() {
        let r = job.reader;
        let t = job.tile;
        match &r.codec {
            Codec::Fixed { .. } => {
                let range = r.range_in(&r.data_file, &r.offsets, r.file_size, t)?;
                by_file.entry(&r.data_file).or_default().push((j, Part::Data, range));
            }
            Codec::Var(_) => {
                let range = r.range_in(&r.data_file, &r.offsets, r.file_size, t)?;
                by_file.entry(&r.data_file).or_default().push((j, Part::Data, range));
                let range = r.range_in(&r.var_file, &r.var_offsets, r.var_file_size, t)?;
                by_file.entry(&r.var_file).or_default().push((j, Part::Var, range));
            }
        }
        if r.validity.is_some() {
            let range =
                r.range_in(&r.validity_file, &r.validity_offsets, r.validity_file_size, t)?;
            by_file.entry(&r.validity_file).or_default().push((j, Part::Validity, range));
        }
    }
    // Large files are read in several groups of ranges, so that one field's tiles are not
    // one long read on one thread.
    // Large ranges are read one by one into pooled buffers (`pooled`).
    let mut files: Vec<(&str, FileRanges, bool)> = Vec::with_capacity(by_file.len());
    for (path, parts) in by_file {
        let (big, mut parts): (FileRanges, FileRanges) =
            parts.into_iter().partition(|(_, _, r)| r.end - r.start >= POOLED_READ_BYTES);
        files.extend(big.into_iter().map(|part| (path, vec![part], true)));
        let total: u64 = parts.iter().map(|(_, _, r)| r.end - r.start).sum();
        if parts.is_empty() {
            continue;
        }
        if total < 2 * READ_GROUP_BYTES {
            files.push((path, parts, false));
            continue;
        }
        parts.sort_by_key(|(_, _, r)| r.start);
        let mut group: FileRanges = Vec::new();
        let mut bytes = 0;
        for part in parts {
            bytes += part.2.end - part.2.start;
            group.push(part);
            if bytes >= READ_GROUP_BYTES {
                files.push((path, std::mem::take(&mut group), false));
                bytes = 0;
            }
        }
        if !group.is_empty() {
            files.push((path, group, false));
        }
    }
    // Small loads run on the calling thread: handing a few small tiles to the pool costs
    // more than reading and decoding them (thread wake-ups for every small query).
    let fetch_bytes: u64 =
        files.iter().flat_map(|(_, parts, _)| parts).map(|(_, _, r)| r.end - r.start).sum();
    let small = fetch_bytes < SMALL_LOAD_BYTES;
    let fetched: Vec<Vec<(usize, Part, u64, Bytes)>> = files
        .par_iter()
        .with_min_len(if small { files.len().max(1) } else { 1 })
        .map(|(path, parts, pooled)| {
            if *pooled {
                return parts
                    .iter()
                    .map(|(j, p, r)| Ok((*j, *p, r.start, read_pooled(storage, path, r.clone())?)))
                    .collect();
            }
            let ranges: Vec<Range<u64>> = parts.iter().map(|(_, _, r)| r.clone()).collect();
            let bytes = storage
                .read_ranges(path, &ranges)
                .map_err(|e| crate::fragment::removed_or(e, path))?;
            Ok(parts.iter().zip(bytes).map(|((j, p, r), b)| (*j, *p, r.start, b)).collect())
        })
        .collect::<Result<_>>()?;
    #[derive(Default, Clone)]
    struct Raw {
        data: Option<(u64, Bytes)>,
        var: Option<(u64, Bytes)>,
        validity: Option<(u64, Bytes)>,
    }
    let mut raw = vec![Raw::default(); jobs.len()];
    for (j, part, start, b) in fetched.into_iter().flatten() {
        let slot = match part {
            Part::Data => &mut raw[j].data,
            Part::Var => &mut raw[j].var,
            Part::Validity => &mut raw[j].validity,
        };
        *slot = Some((start, b));
    }
    let decoded_bytes: u64 = jobs.iter().map(|j| j.reader.decoded_size(j.tile, j.cells)).sum();
    let small = decoded_bytes < SMALL_LOAD_BYTES;
    jobs.par_iter()
        .zip(raw.into_par_iter())
        .with_min_len(if small { jobs.len() } else { 1 })
        .map(|(job, raw)| {
            decode_job(job, raw.data, raw.var, raw.validity, sequential || small).map(Arc::new)
        })
        .collect()
}

fn decode_job(
    job: &TileJob<'_>,
    data: Option<(u64, Bytes)>,
    var: Option<(u64, Bytes)>,
    validity: Option<(u64, Bytes)>,
    sequential: bool,
) -> Result<DecodedTile> {
    let r = job.reader;
    let t = job.tile;
    let cells = job.cells;
    let tile_err = |file: &str, start: u64, len: usize| tile_error(file, t, start, len);
    let missing = |file: &str| Error::Corrupt {
        file: file.to_owned(),
        reason: format!("tile {t} was not read"),
    };
    let (dstart, dbytes) = data.ok_or_else(|| missing(&r.data_file))?;
    let mut out = match &r.codec {
        Codec::Fixed { codec, cell_size } => {
            let expected = cells * cell_size;
            let err = tile_err(&r.data_file, dstart, dbytes.len());
            let data = match job.wanted {
                Some(wanted) if r.zipped.is_none() && !codec.pipeline_codec().is_empty() => codec
                    .decode_chunks_zeroed(&dbytes, expected, wanted)
                    .map(Bytes::from)
                    .map_err(err)?,
                _ => decode_fixed(codec, dbytes, expected, sequential).map_err(err)?,
            };
            let (data, cell_size) = match r.zipped {
                Some((d, n, split)) => {
                    let size = *cell_size as usize / n;
                    let values = tessera_fragment::previous::unzip_coords(&data, d, n, size, split);
                    (Bytes::from(values), size)
                }
                None => (data, *cell_size as usize),
            };
            DecodedTile { data, offsets: None, validity: None, cell_size }
        }
        Codec::Var(codec) => {
            let (vstart, vbytes) = var.ok_or_else(|| missing(&r.var_file))?;
            let var_size = r.var_sizes.get(t as usize).copied().ok_or_else(|| Error::Corrupt {
                file: r.var_file.clone(),
                reason: format!("tile {t} has no var size"),
            })?;
            let data_empty = codec.data_codec().pipeline_codec().is_empty();
            if data_empty && !codec.is_string_path() {
                // Borrow the values; decode only the offsets.
                let oerr = tile_err(&r.data_file, dstart, dbytes.len());
                let offsets = if sequential {
                    codec.offsets_codec().decode_exact_sequential(&dbytes, cells * 8)
                } else {
                    codec.offsets_codec().decode_exact(&dbytes, cells * 8)
                }
                .map_err(oerr)?;
                let offsets: Vec<u64> = offsets
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                    .collect();
                let verr = tile_err(&r.var_file, vstart, vbytes.len());
                let data =
                    decode_fixed(codec.data_codec(), vbytes, var_size, sequential).map_err(verr)?;
                check_offsets(&offsets, data.len() as u64).map_err(|reason| Error::Corrupt {
                    file: r.data_file.clone(),
                    reason: format!("tile {t}: {reason}"),
                })?;
                DecodedTile { data, offsets: Some(offsets), validity: None, cell_size: 0 }
            } else {
                let verr = tile_err(&r.var_file, vstart, vbytes.len());
                let tile = codec
                    .decode_exact_with(&dbytes, &vbytes, cells, var_size, sequential)
                    .map_err(verr)?;
                DecodedTile {
                    data: Bytes::from(tile.data),
                    offsets: Some(tile.offsets),
                    validity: None,
                    cell_size: 0,
                }
            }
        }
    };
    if let Some(vcodec) = &r.validity {
        let (vstart, vbytes) = validity.ok_or_else(|| missing(&r.validity_file))?;
        let err = tile_err(&r.validity_file, vstart, vbytes.len());
        out.validity = Some(decode_fixed(vcodec, vbytes, cells, sequential).map_err(err)?);
    }
    Ok(out)
}

/// What a decoding error of tile `tile`, read from bytes `start..start + len` of `file`,
/// becomes: an error naming the file, the tile and where in the file the bad bytes are.
pub(super) fn tile_error(
    file: &str,
    tile: u64,
    start: u64,
    len: usize,
) -> impl FnOnce(tessera_tile::Error) -> Error + use<> {
    let file = file.to_owned();
    move |e| Error::Tile {
        file,
        tile,
        offset: start,
        end: start + len as u64,
        source: Box::new(e.at_offset(start)),
    }
}

/// Decodes a tile to exactly `expected` bytes; a tile stored without filters in one chunk is
/// returned as a slice of `bytes`.
fn decode_fixed(
    codec: &TileCodec,
    bytes: Bytes,
    expected: u64,
    sequential: bool,
) -> tessera_tile::Result<Bytes> {
    if codec.pipeline_codec().is_empty()
        && let Some(data) = unfiltered_slice(&bytes, expected)?
    {
        return Ok(data);
    }
    if sequential {
        // Into a reused buffer: see `pool`.
        let mut buf = crate::read::pool::take(usize::try_from(expected).unwrap_or(usize::MAX));
        codec.decode_exact_sequential_into(&bytes, expected, &mut buf)?;
        Ok(crate::read::pool::share(buf))
    } else {
        codec.decode_exact(&bytes, expected).map(Bytes::from)
    }
}

fn check_offsets(offsets: &[u64], len: u64) -> std::result::Result<(), String> {
    let mut prev = 0;
    for (i, &o) in offsets.iter().enumerate() {
        if o < prev || o > len {
            return Err(format!(
                "offset of cell {i} is {o} (previous {prev}, {len} bytes of values)"
            ));
        }
        prev = o;
    }
    Ok(())
}

/// Ranges of a file at least this large are read into pooled buffers (see [`read_pooled`])
/// rather than coalesced with their neighbours.
const POOLED_READ_BYTES: u64 = 1 << 20;

/// Bytes `range` of `file`, in a buffer of the tile pool when they are many (see `pool`): a
/// pooled one, or a new one that joins the pool when its last holder drops it, so that the
/// tiles read after it reuse its pages instead of faulting in fresh ones.
pub(super) fn read_pooled(storage: &dyn Storage, file: &str, range: Range<u64>) -> Result<Bytes> {
    let len = usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(usize::MAX);
    let mut buf = crate::read::pool::take(len);
    storage
        .read_range_into(file, range, &mut buf)
        .map_err(|e| crate::fragment::removed_or(e, file))?;
    Ok(crate::read::pool::share(buf))
}
