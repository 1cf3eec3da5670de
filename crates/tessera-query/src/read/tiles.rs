//! Data tiles of fragments: where each tile of a field lies in its files, fetching many tiles
//! at once with coalesced ranged reads ([`Storage::read_ranges`], one call per file, files in
//! parallel), and decoding them on the rayon pool. Tiles stored without filters are handed
//! out as slices of the bytes read, without copying.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use tessera_fragment::{Field, LazyPart};
use tessera_schema::ArraySchema;
use tessera_storage::Storage;
use tessera_tile::{FramedTile, TileCodec, VarTileCodec};
use tessera_types::Datatype;

use crate::fragment::Fragment;
use crate::{Error, Result};

/// A field a query reads, named in the array's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum QField {
    /// Dimension `d` (sparse fragments only).
    Dim(usize),
    /// Attribute `a` of the array's schema (found by name in each fragment's schema).
    Attr(usize),
    /// Per-cell timestamps (`t.tdb`).
    Timestamps,
    /// Per-cell delete timestamps (`dt.tdb`).
    DeleteTimestamps,
    /// Per-cell delete condition indexes (`dci.tdb`).
    DeleteConditionIndex,
}

/// How the values of a field are decoded.
#[derive(Debug)]
enum Codec {
    Fixed { codec: TileCodec, cell_size: u64 },
    Var(VarTileCodec),
}

/// Everything needed to locate and decode the tiles of one field of one fragment.
#[derive(Debug)]
pub(crate) struct FieldReader {
    data_file: String,
    var_file: String,
    validity_file: String,
    codec: Codec,
    validity: Option<TileCodec>,
    offsets: Vec<u64>,
    var_offsets: Vec<u64>,
    var_sizes: Vec<u64>,
    validity_offsets: Vec<u64>,
    file_size: u64,
    var_file_size: u64,
    validity_file_size: u64,
    /// A dimension of a format 1–4 fragment, stored with the others in `__coords.tdb`:
    /// (dimension, dimension count, stored split); its values are taken out after decoding.
    zipped: Option<(usize, usize, bool)>,
}

/// Cells per tile of a fragment (`FragmentMetadata::cell_num(tile)`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileCells {
    dense_per_tile: Option<u64>,
    capacity: u64,
    last: u64,
    /// Number of tiles.
    pub(crate) tile_num: u64,
}

impl TileCells {
    /// The cell counts of `fragment`'s tiles.
    ///
    /// # Errors
    /// When the footer is inconsistent with the fragment's schema.
    pub(crate) fn of(fragment: &Fragment) -> Result<Self> {
        let schema = fragment.schema();
        let footer = fragment.footer();
        let err = |source| Error::Fragment {
            file: format!("{}/{}", fragment.dir(), crate::FRAGMENT_METADATA_FILE),
            source: Box::new(source),
        };
        let tile_num = footer.tile_num(schema).map_err(err)?;
        let dense_per_tile = if footer.dense {
            Some(tessera_fragment::Footer::dense_cell_num_per_tile(schema).map_err(err)?)
        } else {
            None
        };
        Ok(TileCells {
            dense_per_tile,
            capacity: schema.capacity,
            last: footer.last_tile_cell_num,
            tile_num,
        })
    }

    /// Cells in tile `t`.
    pub(crate) fn get(&self, t: u64) -> u64 {
        match self.dense_per_tile {
            Some(n) => n,
            None if t + 1 == self.tile_num => self.last,
            None => self.capacity,
        }
    }
}

impl FieldReader {
    /// The reader of `field` in `fragment`, loading its tile offsets; `None` when the fragment
    /// does not have the field (an attribute added by schema evolution after it was written,
    /// timestamps it does not store).
    ///
    /// # Errors
    /// Storage errors and corrupt metadata; [`Error::Unsupported`] when the fragment stores
    /// an attribute of the same name with another type.
    pub(crate) fn new(
        storage: &dyn Storage,
        fragment: &Fragment,
        array_schema: &ArraySchema,
        field: QField,
    ) -> Result<Option<Self>> {
        let schema = fragment.schema();
        let footer = fragment.footer();
        let version = footer.version;
        // A pipeline that cannot run on the field (a filter Tessera does not implement).
        let tile_err = |file: &str| {
            let file = file.to_owned();
            move |e: tessera_tile::Error| Error::Unsupported(format!("{file}: {e}"))
        };
        let (ffield, datatype, cell_val_num, pipeline, nullable) = match field {
            QField::Dim(d) => {
                let dim = &schema.dimensions[d];
                (
                    Field::Dimension(d),
                    dim.datatype,
                    dim.cell_val_num,
                    // the zipped coordinates of versions 1-4 take the coords filters
                    if tessera_fragment::previous::zipped_coords(version) {
                        &schema.coords_filters
                    } else {
                        schema.dimension_filters(dim)
                    },
                    false,
                )
            }
            QField::Attr(a) => {
                let want = &array_schema.attributes[a];
                let Some(i) = schema.attributes.iter().position(|x| x.name == want.name) else {
                    return Ok(None);
                };
                let attr = &schema.attributes[i];
                if attr.datatype != want.datatype || attr.cell_val_num != want.cell_val_num {
                    return Err(Error::Unsupported(format!(
                        "fragment {} stores attribute {:?} as {} x {}, the schema says {} x {}",
                        fragment.name().as_str(),
                        want.name,
                        attr.datatype,
                        attr.cell_val_num,
                        want.datatype,
                        want.cell_val_num
                    )));
                }
                (
                    Field::Attribute(i),
                    attr.datatype,
                    attr.cell_val_num,
                    &attr.filters,
                    attr.nullable,
                )
            }
            QField::Timestamps if footer.has_timestamps => {
                (Field::Timestamps, Datatype::UInt64, 1, &schema.coords_filters, false)
            }
            QField::DeleteTimestamps if footer.has_delete_meta => {
                (Field::DeleteTimestamps, Datatype::UInt64, 1, &schema.coords_filters, false)
            }
            QField::DeleteConditionIndex if footer.has_delete_meta => {
                (Field::DeleteConditionIndex, Datatype::UInt64, 1, &schema.coords_filters, false)
            }
            QField::Timestamps | QField::DeleteTimestamps | QField::DeleteConditionIndex => {
                return Ok(None);
            }
        };
        let layout = footer.layout(schema);
        let idx = layout.idx(ffield).ok_or_else(|| {
            Error::Unsupported(format!("fragment {} has no {ffield:?}", fragment.name().as_str()))
        })?;
        let dir = fragment.dir();
        let stem = |name: Option<String>| format!("{dir}/{}", name.unwrap_or_default());
        // File names and zipped coordinates of older versions: tessera_fragment::previous.
        use tessera_fragment::previous::{coords_stored_split, files, zipped_coords};
        let data_file = stem(files::data_file(ffield, version, schema));
        let var_file = stem(files::var_file(ffield, version, schema));
        let validity_file = stem(files::validity_file(ffield, version, schema));
        let zipped = match ffield {
            Field::Dimension(d) if zipped_coords(version) => {
                Some((d, schema.dimensions.len(), coords_stored_split(version, schema)))
            }
            _ => None,
        };
        let cell_val_num = zipped.map_or(cell_val_num, |(_, n, _)| n as u32);
        let var = cell_val_num == tessera_types::CELL_VAL_NUM_VAR;
        let codec = if var {
            Codec::Var(
                VarTileCodec::new(pipeline, &schema.offsets_filters, datatype, version)
                    .map_err(tile_err(&var_file))?
                    .encrypted(storage.encryption_key()),
            )
        } else {
            Codec::Fixed {
                codec: TileCodec::fixed_data(pipeline, datatype, cell_val_num, version)
                    .map_err(tile_err(&data_file))?
                    .encrypted(storage.encryption_key()),
                cell_size: datatype.size() as u64 * u64::from(cell_val_num),
            }
        };
        let validity = if nullable {
            Some(
                TileCodec::validity(&schema.validity_filters, version)
                    .map_err(tile_err(&validity_file))?
                    .encrypted(storage.encryption_key()),
            )
        } else {
            None
        };
        let list = |part| fragment.u64s(storage, part);
        let offsets = list(LazyPart::TileOffsets(idx))?;
        let (var_offsets, var_sizes) = if var {
            (list(LazyPart::TileVarOffsets(idx))?, list(LazyPart::TileVarSizes(idx))?)
        } else {
            (Vec::new(), Vec::new())
        };
        let validity_offsets =
            if nullable { list(LazyPart::TileValidityOffsets(idx))? } else { Vec::new() };
        let size = |v: &Vec<u64>| v.get(idx).copied().unwrap_or(0);
        Ok(Some(FieldReader {
            data_file,
            var_file,
            validity_file,
            codec,
            validity,
            offsets,
            var_offsets,
            var_sizes,
            validity_offsets,
            file_size: size(&footer.file_sizes),
            var_file_size: size(&footer.file_var_sizes),
            validity_file_size: size(&footer.file_validity_sizes),
            zipped,
        }))
    }

    /// Whether values are var-sized.
    pub(crate) fn is_var(&self) -> bool {
        matches!(self.codec, Codec::Var(_))
    }

    /// Bytes per cell of a fixed-size field, `None` for a var-sized one.
    pub(crate) fn fixed_cell_size(&self) -> Option<u64> {
        match &self.codec {
            Codec::Fixed { cell_size, .. } => Some(*cell_size),
            Codec::Var(_) => None,
        }
    }

    /// The unfiltered bytes of tile `t` holding `cells` cells: values, offsets and validity.
    pub(crate) fn decoded_size(&self, t: u64, cells: u64) -> u64 {
        let values = match &self.codec {
            Codec::Fixed { cell_size, .. } => cells * cell_size,
            Codec::Var(_) => cells * 8 + self.var_sizes.get(t as usize).copied().unwrap_or(0),
        };
        values + if self.validity.is_some() { cells } else { 0 }
    }

    /// Total var bytes over all tiles (for size estimates), `None` for fixed-size fields.
    pub(crate) fn total_var_size(&self) -> Option<u64> {
        self.is_var().then(|| self.var_sizes.iter().sum())
    }

    fn range_in(&self, file: &str, offsets: &[u64], file_size: u64, t: u64) -> Result<Range<u64>> {
        let corrupt = |reason: String| Error::Corrupt { file: file.to_owned(), reason };
        let i = t as usize;
        let start = *offsets.get(i).ok_or_else(|| {
            corrupt(format!("tile {t} has no offset ({} tiles listed)", offsets.len()))
        })?;
        let end = offsets.get(i + 1).copied().unwrap_or(file_size);
        if start > end || end > file_size {
            return Err(corrupt(format!(
                "tile {t} spans bytes {start}..{end} of a {file_size}-byte file"
            )));
        }
        Ok(start..end)
    }
}

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
                Some(wanted) if r.zipped.is_none() && !codec.pipeline_codec().is_empty() => {
                    decode_wanted(codec, &dbytes, expected, wanted).map_err(err)?
                }
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

/// Part of a fixed-size tile (see [`load_tile_part`]): pieces of its unfiltered bytes.
#[derive(Debug)]
pub(crate) struct TilePart {
    /// (first byte in the unfiltered tile, bytes) of each piece, sorted, not overlapping.
    pieces: Vec<(u64, Bytes)>,
}

impl TilePart {
    /// Copies bytes `at..at + dst.len()` of the unfiltered tile into `dst`; `false` when some
    /// of them were not loaded.
    pub(crate) fn copy_to(&self, at: u64, dst: &mut [u8]) -> bool {
        let (mut at, mut dst) = (at, dst);
        let mut i = self.pieces.partition_point(|(start, _)| *start <= at);
        if i == 0 {
            return dst.is_empty();
        }
        i -= 1;
        while !dst.is_empty() {
            let Some((start, bytes)) = self.pieces.get(i) else { return false };
            let Some(off) = at.checked_sub(*start).map(|o| o as usize) else { return false };
            if off >= bytes.len() {
                return false;
            }
            let n = (bytes.len() - off).min(dst.len());
            let (head, tail) = dst.split_at_mut(n);
            head.copy_from_slice(&bytes[off..off + n]);
            dst = tail;
            at += n as u64;
            i += 1;
        }
        true
    }
}

/// Ranges of a file at least this large are read into pooled buffers (see [`read_pooled`])
/// rather than coalesced with their neighbours.
const POOLED_READ_BYTES: u64 = 1 << 20;

/// Wanted ranges of an unfiltered tile closer than this are read as one.
const PART_READ_GAP: u64 = 64 << 10;

/// Bytes `range` of `file`, in a buffer of the tile pool when they are many (see `pool`).
fn read_pooled(storage: &dyn Storage, file: &str, range: Range<u64>) -> Result<Bytes> {
    let len = usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(usize::MAX);
    let mut buf = super::pool::take(len);
    if buf.capacity() == 0 {
        return storage.read_range(file, range).map_err(|e| crate::fragment::removed_or(e, file));
    }
    storage
        .read_range_into(file, range, &mut buf)
        .map_err(|e| crate::fragment::removed_or(e, file))?;
    Ok(super::pool::share(buf))
}

/// Loads the bytes of tile `job` that hold `wanted` (byte ranges of the unfiltered tile,
/// sorted by start and not overlapping): for a filtered tile, only the chunks holding them
/// are decoded (on the rayon pool with `parallel`); for a tile stored without filters, only
/// they are read. A read that needs a few rows of large tiles thus touches a fraction of
/// them. Fixed-size fields without validity only; `None` for others, to be loaded whole.
///
/// # Errors
/// As [`load_tiles`].
pub(crate) fn load_tile_part(
    storage: &dyn Storage,
    job: &TileJob<'_>,
    wanted: &[Range<u64>],
    parallel: bool,
) -> Result<Option<TilePart>> {
    let r = job.reader;
    let Codec::Fixed { codec, cell_size } = &r.codec else { return Ok(None) };
    if r.zipped.is_some() || r.validity.is_some() {
        return Ok(None);
    }
    let t = job.tile;
    let range = r.range_in(&r.data_file, &r.offsets, r.file_size, t)?;
    let expected = tile_bytes(job, *cell_size)?;
    let file = r.data_file.as_str();
    if codec.pipeline_codec().is_empty() {
        return load_plain_part(storage, file, range, expected, wanted);
    }
    let bytes = read_pooled(storage, file, range.clone())?;
    let wanted_bytes: u64 = wanted.iter().map(|w| w.end - w.start).sum();
    let mut buf = super::pool::take(usize::try_from(wanted_bytes.min(expected)).unwrap_or(0));
    let spans = codec
        .decode_chunks_into(&bytes, expected, wanted, parallel, &mut buf)
        .map_err(tile_error(file, t, range.start, bytes.len()))?;
    let data = super::pool::share(buf);
    let mut pieces = Vec::with_capacity(spans.len());
    let mut at = 0usize;
    for span in spans {
        let len = (span.end - span.start) as usize;
        if at + len > data.len() {
            return Err(Error::Corrupt {
                file: file.to_owned(),
                reason: format!("tile {t}: its chunks decoded to fewer bytes than they announce"),
            });
        }
        pieces.push((span.start, data.slice(at..at + len)));
        at += len;
    }
    Ok(Some(TilePart { pieces }))
}

/// What a decoding error of tile `tile`, read from bytes `start..start + len` of `file`,
/// becomes: an error naming the file, the tile and where in the file the bad bytes are.
fn tile_error(
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

/// The unfiltered bytes of fixed-size tile `job` (`cell_size` bytes a cell): an error, not an
/// overflow, for a cell count no tile can hold.
fn tile_bytes(job: &TileJob<'_>, cell_size: u64) -> Result<u64> {
    job.cells.checked_mul(cell_size).ok_or_else(|| Error::Corrupt {
        file: job.reader.data_file.clone(),
        reason: format!("tile {}: {} cells of {cell_size} bytes overflow", job.tile, job.cells),
    })
}

/// Copies bytes of the filtered fixed-size tile `job` into `dsts` ((first byte in the
/// unfiltered tile, destination) pairs, sorted by first byte and not overlapping), decoding
/// only the chunks that hold them, one at a time into a buffer that stays in cache (see
/// [`tessera_tile::decode_tile_chunks_with`]): the decoded tile is never written out whole.
/// A tile stored without filters is read straight into the destinations instead (see
/// [`scatter_plain`]). `false` (nothing copied) for var-sized or nullable fields and zipped
/// coordinates, which other paths handle better.
///
/// # Errors
/// As [`load_tiles`]; [`Error::Corrupt`] when the chunks do not cover every destination.
pub(crate) fn scatter_tile(
    storage: &dyn Storage,
    job: &TileJob<'_>,
    dsts: &mut [(u64, &mut [u8])],
) -> Result<bool> {
    let r = job.reader;
    let Codec::Fixed { codec, cell_size } = &r.codec else { return Ok(false) };
    if r.zipped.is_some() || r.validity.is_some() {
        return Ok(false);
    }
    let t = job.tile;
    let expected = tile_bytes(job, *cell_size)?;
    let file = r.data_file.as_str();
    let range = r.range_in(file, &r.offsets, r.file_size, t)?;
    if codec.pipeline_codec().is_empty() {
        return scatter_plain(storage, file, range, expected, dsts);
    }
    let bytes = read_pooled(storage, file, range.clone())?;
    let wanted: Vec<Range<u64>> =
        dsts.iter().map(|(at, dst)| *at..*at + dst.len() as u64).collect();
    let total: u64 = wanted.iter().map(|w| w.end - w.start).sum();
    let (mut copied, mut first) = (0u64, 0usize);
    let mut buf = Vec::new();
    let copy = |start: u64, chunk: &[u8]| {
        let end = start + chunk.len() as u64;
        while first < dsts.len() && wanted[first].end <= start {
            first += 1;
        }
        for ((at, dst), w) in dsts[first..].iter_mut().zip(&wanted[first..]) {
            if w.start >= end {
                break;
            }
            let (lo, hi) = (start.max(w.start), end.min(w.end));
            if lo < hi {
                let into = (lo - *at) as usize..(hi - *at) as usize;
                dst[into].copy_from_slice(&chunk[(lo - start) as usize..(hi - start) as usize]);
                copied += hi - lo;
            }
        }
    };
    codec.decode_chunks_with(&bytes, expected, &wanted, &mut buf, copy).map_err(tile_error(
        file,
        t,
        range.start,
        bytes.len(),
    ))?;
    if copied != total {
        return Err(Error::Corrupt {
            file: file.to_owned(),
            reason: format!("tile {t}: its chunks hold {copied} of the {total} bytes asked of it"),
        });
    }
    Ok(true)
}

/// [`scatter_tile`] for a tile stored without filters (bytes `range` of `file`, `expected`
/// bytes unfiltered) whose destinations cover it whole: when its chunks are laid out as
/// libtiledb writes them (see [`plain_layout`]), one vectored read places the chunk headers
/// in a small buffer and every byte of data straight into its destination, so the tile is
/// never copied twice, and every header is then checked. `false` (nothing read) for other
/// layouts and for destinations that leave part of the tile out.
///
/// # Errors
/// As [`load_tiles`]; [`Error::Corrupt`] when a chunk header is not that of a plain chunk.
fn scatter_plain(
    storage: &dyn Storage,
    file: &str,
    range: Range<u64>,
    expected: u64,
    dsts: &mut [(u64, &mut [u8])],
) -> Result<bool> {
    let mut next = 0u64;
    for (at, dst) in dsts.iter() {
        if *at != next {
            return Ok(false);
        }
        next += dst.len() as u64;
    }
    if next != expected {
        return Ok(false);
    }
    let Some((count, size)) = plain_layout(storage, file, &range, expected)? else {
        return Ok(false);
    };
    let header = PLAIN_CHUNK_HEADER as usize;
    let mut headers = vec![0u8; usize::try_from(count).unwrap_or(0) * header];
    let mut bufs: Vec<&mut [u8]> = Vec::with_capacity(headers.len() / header + dsts.len() * 2);
    let mut heads = headers.chunks_exact_mut(header);
    let mut pieces = dsts.iter_mut().map(|(_, dst)| &mut **dst);
    let mut piece: &mut [u8] = &mut [];
    for k in 0..count {
        bufs.push(heads.next().unwrap_or_default());
        // The chunk's bytes, taken from the destinations in order.
        let mut left = size.min(expected - k * size) as usize;
        while left > 0 {
            if piece.is_empty() {
                // The destinations hold `expected` bytes, as many as the chunks.
                let Some(more) = pieces.next() else { return Ok(false) };
                piece = more;
            }
            let n = left.min(piece.len());
            let (head, tail) = std::mem::take(&mut piece).split_at_mut(n);
            bufs.push(head);
            piece = tail;
            left -= n;
        }
    }
    storage
        .read_range_scatter(file, range.start + 8, &mut bufs)
        .map_err(|e| crate::fragment::removed_or(e, file))?;
    drop(bufs);
    for (k, head) in (0..count).zip(headers.chunks_exact(header)) {
        if !is_plain_header(head, size.min(expected - k * size)) {
            return Err(plain_chunk_error(file, range.start, k));
        }
    }
    Ok(true)
}

/// Bytes of a chunk header: three u32 (unfiltered, filtered and metadata lengths).
const PLAIN_CHUNK_HEADER: u64 = 12;

/// The chunk count and chunk size of the tile stored without filters at bytes `range` of
/// `file` (`expected` bytes of data), read from its first chunk header, when its bytes are
/// laid out as libtiledb writes them: a chunk count, then chunks of one size but the last,
/// each a header and its bytes, no metadata. `None` for any other layout.
fn plain_layout(
    storage: &dyn Storage,
    file: &str,
    range: &Range<u64>,
    expected: u64,
) -> Result<Option<(u64, u64)>> {
    if range.end - range.start < 8 + PLAIN_CHUNK_HEADER || expected == 0 {
        return Ok(None);
    }
    let head = storage
        .read_range(file, range.start..range.start + 8 + PLAIN_CHUNK_HEADER)
        .map_err(|e| crate::fragment::removed_or(e, file))?;
    let (Some(count), Some(size)) = (head.get(..8), head.get(8..12)) else { return Ok(None) };
    let count = u64::from_le_bytes(count.try_into().unwrap_or_default());
    let size = u64::from(u32::from_le_bytes(size.try_into().unwrap_or_default()));
    if size == 0 || count != expected.div_ceil(size) {
        return Ok(None);
    }
    // (A corrupt cell count can make `expected`, and so `count`, overflow the sum.)
    let framed = count
        .checked_mul(PLAIN_CHUNK_HEADER)
        .and_then(|h| h.checked_add(expected))
        .and_then(|n| n.checked_add(8));
    if framed != Some(range.end - range.start) {
        return Ok(None);
    }
    Ok(Some((count, size)))
}

/// Whether the chunk header `head` is that of a plain chunk of `len` bytes: unfiltered and
/// filtered lengths both `len`, no metadata.
fn is_plain_header(head: &[u8], len: u64) -> bool {
    let field = |j: usize| {
        head.get(j..j + 4).and_then(|b| b.try_into().ok()).map(|b| u64::from(u32::from_le_bytes(b)))
    };
    field(0) == Some(len) && field(4) == Some(len) && field(8) == Some(0)
}

/// Chunk `k` of the unfiltered tile at byte `start` of `file` has a header that is not that
/// of a plain chunk.
fn plain_chunk_error(file: &str, start: u64, k: u64) -> Error {
    Error::Corrupt {
        file: file.to_owned(),
        reason: format!(
            "unfiltered tile at byte {start}: chunk {k} does not have the header of a plain chunk"
        ),
    }
}

/// [`load_tile_part`] for a tile stored without filters (bytes `range` of `file`, `expected`
/// bytes unfiltered). When its chunks are laid out as libtiledb writes them (a chunk count,
/// then chunks of one size but the last, each a header and its bytes, no metadata), only the
/// chunks holding wanted bytes are read (neighbours within [`PART_READ_GAP`] in one read),
/// and every header read is checked; `None` for other layouts.
fn load_plain_part(
    storage: &dyn Storage,
    file: &str,
    range: Range<u64>,
    expected: u64,
    wanted: &[Range<u64>],
) -> Result<Option<TilePart>> {
    let Some((count, size)) = plain_layout(storage, file, &range, expected)? else {
        return Ok(None);
    };
    // Where chunk `k` starts in the file, and its unfiltered length.
    let chunk_at = |k: u64| range.start + 8 + k * (PLAIN_CHUNK_HEADER + size);
    let chunk_len = |k: u64| size.min(expected - k * size);
    let corrupt = |k: u64| plain_chunk_error(file, range.start, k);
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < wanted.len() {
        let first = wanted[i].start / size;
        let mut end = wanted[i].end;
        i += 1;
        while i < wanted.len() && wanted[i].start <= end + PART_READ_GAP {
            end = end.max(wanted[i].end);
            i += 1;
        }
        if end > expected || first >= count {
            return Err(Error::Corrupt {
                file: file.to_owned(),
                reason: format!("bytes ..{end} asked of a {expected}-byte tile"),
            });
        }
        let last = (end - 1) / size;
        let from = chunk_at(first);
        let bytes = read_pooled(
            storage,
            file,
            from..chunk_at(last) + PLAIN_CHUNK_HEADER + chunk_len(last),
        )?;
        for k in first..=last {
            let at = (chunk_at(k) - from) as usize;
            let len = chunk_len(k);
            let header =
                bytes.get(at..at + PLAIN_CHUNK_HEADER as usize).ok_or_else(|| corrupt(k))?;
            if !is_plain_header(header, len) {
                return Err(corrupt(k));
            }
            let data = at + PLAIN_CHUNK_HEADER as usize;
            if data + len as usize > bytes.len() {
                return Err(corrupt(k));
            }
            pieces.push((k * size, bytes.slice(data..data + len as usize)));
        }
    }
    Ok(Some(TilePart { pieces }))
}

/// Decodes a tile to exactly `expected` bytes; a tile stored without filters in one chunk is
/// returned as a slice of `bytes`.
fn decode_fixed(
    codec: &TileCodec,
    bytes: Bytes,
    expected: u64,
    sequential: bool,
) -> tessera_tile::Result<Bytes> {
    if codec.pipeline_codec().is_empty() {
        let framed = FramedTile::parse(bytes.clone())?;
        if framed.num_chunks() == 1
            && framed.orig_len() == expected
            && let Some(c) = framed.chunk(0)
            && c.metadata.is_empty()
            && c.data.len() as u64 == expected
        {
            return Ok(framed.data_bytes(0).unwrap_or_default());
        }
        if framed.num_chunks() == 0 && expected == 0 {
            return Ok(Bytes::new());
        }
    }
    if sequential {
        // Into a reused buffer: see `pool`.
        let mut buf = super::pool::take(usize::try_from(expected).unwrap_or(usize::MAX));
        codec.decode_exact_sequential_into(&bytes, expected, &mut buf)?;
        Ok(super::pool::share(buf))
    } else {
        codec.decode_exact(&bytes, expected).map(Bytes::from)
    }
}

/// Decodes only the chunks of a filtered tile that hold `wanted` bytes, into a zeroed
/// buffer of `expected` bytes.
fn decode_wanted(
    codec: &TileCodec,
    bytes: &[u8],
    expected: u64,
    wanted: &[Range<u64>],
) -> tessera_tile::Result<Bytes> {
    let len = usize::try_from(expected).map_err(|_| tessera_tile::Error::Allocation {
        what: "unfiltered tile",
        bytes: expected,
    })?;
    // A tile announcing more than it holds is refused before anything is allocated.
    let framed = FramedTile::parse(bytes)?;
    if framed.orig_len() != expected {
        return codec.decode_exact(bytes, expected).map(Bytes::from);
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| tessera_tile::Error::Allocation {
        what: "unfiltered tile",
        bytes: expected,
    })?;
    out.resize(len, 0);
    codec.decode_chunks_in_place(bytes, wanted, &mut out)?;
    Ok(Bytes::from(out))
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
