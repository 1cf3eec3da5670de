//! Verifying one committed fragment: its metadata file, its data files and every tile.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use tessera_fragment::stats::{TileData, TileStats, dense_tile_slabs, tile_stats};
use tessera_fragment::{
    Field, FieldInfo, Footer, FragmentMetadata, FragmentName, LazyPart, dim_types,
    footer_length_range, footer_range, parse_footer_length,
};
use tessera_rtree::{DimCoords, DimType, Mbr};
use tessera_schema::ArraySchema;
use tessera_schema::space_tiles::SpaceTiles;
use tessera_storage::{Entry, Storage};
use tessera_tile::{TileCodec, VarTileCodec};
use tessera_types::{CELL_VAL_NUM_VAR, Datatype, FilterType, Layout};

use super::{Problem, Schemas, chain};
use tessera_fragment::FRAGMENT_METADATA_FILE;
use tessera_fragment::dirs;

/// What verifying one fragment found.
pub(super) struct Outcome {
    /// The problems.
    pub(super) problems: Vec<Problem>,
    /// Tiles decoded (one per tile and field).
    pub(super) tiles: u64,
    /// Bytes read.
    pub(super) bytes: u64,
    /// The footer's bytes as stored (without the trailing length), when it could be located.
    pub(super) footer: Option<Vec<u8>>,
}

/// One data file of a field, with where each tile lies in it.
struct DataFile {
    path: String,
    /// The tile ranges; `None` for a tile whose offsets are inconsistent (already reported)
    /// or that runs past the end of the file as it is.
    ranges: Vec<Option<Range<u64>>>,
}

/// How a field's tiles decode.
enum Codec {
    Fixed(TileCodec),
    Var { codec: VarTileCodec, var: DataFile, var_sizes: Vec<u64> },
}

/// Everything needed to check the tiles of one field.
struct FieldCheck {
    idx: usize,
    info: FieldInfo,
    /// Fixed data, or the offsets of a var field.
    data: DataFile,
    codec: Codec,
    validity: Option<(TileCodec, DataFile)>,
    /// Dimension index of a sparse fragment's dimension.
    dim: Option<usize>,
    /// Whether the field is `t.tdb`.
    timestamps: bool,
    /// Whether a lossy filter (SCALE_FLOAT, WEBP) encodes the field: its statistics were
    /// computed from the values before filtering and cannot be recomputed.
    lossy: bool,
}

/// What a tile's check returns: problems, tiles decoded, bytes read.
type TileOutcome = (Vec<Problem>, u64, u64);

/// A fixed-size value read little-endian.
fn u64_at(bytes: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
    u64::from_le_bytes(b)
}

/// Verifies fragment `name`, whose folder holds `entries`; `progress` gets the bytes of this
/// fragment verified so far.
pub(super) fn verify_fragment(
    storage: &dyn Storage,
    name: &FragmentName,
    entries: &[Entry],
    schemas: &Schemas,
    progress: &(dyn Fn(u64) + Sync),
) -> Outcome {
    let dir = format!("{}/{}", dirs::FRAGMENTS, name.as_str());
    let md_path = format!("{dir}/{FRAGMENT_METADATA_FILE}");
    let mut out = Outcome { problems: Vec::new(), tiles: 0, bytes: 0, footer: None };
    let Some(md) = metadata(storage, &md_path, schemas, &mut out) else { return out };
    let (md, schema) = md;
    let footer = &md.footer;
    let tile_num = match footer.tile_num(schema) {
        Ok(n) => n,
        Err(e) => {
            out.problems.push(Problem::error(&md_path, None, chain(&e)));
            return out;
        }
    };
    let cell_num = match footer.cell_num_fn(schema) {
        Ok(f) => f,
        Err(e) => {
            out.problems.push(Problem::error(&md_path, None, chain(&e)));
            return out;
        }
    };
    if !footer.dense && md.rtree.leaf_count() != tile_num {
        out.problems.push(Problem::error(
            &md_path,
            Some(footer.offsets.rtree),
            format!("the R-tree has {} leaves for {tile_num} tiles", md.rtree.leaf_count()),
        ));
    }
    let sizes: std::collections::HashMap<&str, u64> =
        entries.iter().filter(|e| !e.is_dir).map(|e| (e.name.as_str(), e.size)).collect();
    let mut expected: BTreeSet<String> = BTreeSet::from([FRAGMENT_METADATA_FILE.to_owned()]);
    let mut fields = Vec::new();
    let layout = footer.layout(schema);
    for (idx, field) in layout.fields().enumerate() {
        let check = field_check(
            &FieldCtx {
                md: &md,
                schema,
                md_path: &md_path,
                dir: &dir,
                tile_num,
                sizes: &sizes,
                key: storage.encryption_key(),
            },
            idx,
            field,
            &mut expected,
            &mut out.problems,
        );
        fields.extend(check);
    }
    for e in entries {
        if !expected.contains(&e.name) {
            let what = if e.is_dir { "unexpected folder" } else { "unexpected file" };
            out.problems.push(Problem::warning(format!("{dir}/{}", e.name), None, what));
        }
    }
    let ctx = TileCtx {
        storage,
        md: &md,
        schema,
        dims: dim_types(schema),
        time_range: name.timestamp_range(),
        dense_box: if footer.dense { dense_box(schema, footer) } else { None },
        check_var_min_max: !footer.dense || schema.attributes.len() as u64 <= tile_num,
    };
    let done = AtomicU64::new(0);
    let results: Vec<TileOutcome> = (0..tile_num)
        .into_par_iter()
        .map(|t| {
            let r = ctx.tile(&fields, t, cell_num(t));
            progress(done.fetch_add(r.2, Ordering::Relaxed) + r.2);
            r
        })
        .collect();
    for (problems, tiles, bytes) in results {
        out.problems.extend(problems);
        out.tiles += tiles;
        out.bytes += bytes;
    }
    out.bytes += sizes.get(FRAGMENT_METADATA_FILE).copied().unwrap_or(0);
    out
}

/// Reads and parses the whole metadata file; records the footer bytes in `out`.
fn metadata<'s>(
    storage: &dyn Storage,
    md_path: &str,
    schemas: &'s Schemas,
    out: &mut Outcome,
) -> Option<(FragmentMetadata, &'s ArraySchema)> {
    let err = |offset, message: String| Problem::error(md_path, offset, message);
    let file = match storage.read(md_path) {
        Ok(f) => f,
        Err(e) => {
            out.problems.push(err(None, format!("cannot be read: {}", chain(&e))));
            return None;
        }
    };
    let size = file.len() as u64;
    let located = footer_length_range(size).and_then(|r| {
        let len = parse_footer_length(&file[r.start as usize..])?;
        footer_range(size, len)
    });
    let range = match located {
        Ok(r) => r,
        Err(e) => {
            out.problems.push(err(Some(size.saturating_sub(8)), chain(&e)));
            return None;
        }
    };
    let raw = &file[range.start as usize..range.end as usize];
    out.footer = Some(raw.to_vec());
    let schema_name = match Footer::peek_schema_name(raw) {
        Ok((_, n)) => n,
        Err(e) => {
            out.problems.push(err(Some(range.start + e.offset().unwrap_or(0)), chain(&e)));
            return None;
        }
    };
    let Some(schema) = schemas.get(&schema_name) else {
        out.problems.push(err(
            Some(range.start),
            format!("the footer names schema {schema_name}, which is missing or corrupt"),
        ));
        return None;
    };
    match FragmentMetadata::parse_all_with_key(&file, schema, storage.encryption_key()) {
        Ok(md) => Some((md, schema)),
        Err(e) => {
            out.problems.push(err(e.offset(), chain(&e)));
            None
        }
    }
}

/// What [`field_check`] needs about the fragment.
struct FieldCtx<'a> {
    md: &'a FragmentMetadata,
    schema: &'a ArraySchema,
    md_path: &'a str,
    dir: &'a str,
    tile_num: u64,
    sizes: &'a std::collections::HashMap<&'a str, u64>,
    key: Option<&'a tessera_types::EncryptionKey>,
}

impl FieldCtx<'_> {
    /// Checks one data file of a field against the footer and its tile offsets; returns its
    /// tile ranges, or `None` when it cannot be used at all (missing).
    fn data_file(
        &self,
        file: &str,
        footer_size: u64,
        offsets: &[u64],
        part: LazyPart,
        problems: &mut Vec<Problem>,
    ) -> Option<DataFile> {
        let path = format!("{}/{file}", self.dir);
        let Some(&actual) = self.sizes.get(file) else {
            problems.push(Problem::error(
                &path,
                None,
                format!("missing (the fragment metadata lists {footer_size} bytes)"),
            ));
            return None;
        };
        if actual != footer_size {
            let what = if actual < footer_size { "truncated?" } else { "bytes appended?" };
            problems.push(Problem::error(
                &path,
                Some(actual.min(footer_size)),
                format!(
                    "the file has {actual} bytes, the fragment metadata says {footer_size} ({what})"
                ),
            ));
        }
        let n = self.tile_num as usize;
        if offsets.len() != n {
            problems.push(Problem::error(
                self.md_path,
                self.md.footer.part_offset(part),
                format!("{part} lists {} tiles, the fragment has {n}", offsets.len()),
            ));
        }
        if let Some(&first) = offsets.first()
            && first != 0
        {
            problems.push(Problem::error(
                &path,
                Some(0),
                format!("the first tile starts at byte {first}, not 0"),
            ));
        }
        let mut ranges = Vec::with_capacity(n);
        for t in 0..n {
            let Some(&start) = offsets.get(t) else {
                ranges.push(None);
                continue;
            };
            let end = offsets.get(t + 1).copied().unwrap_or(footer_size);
            if start > end || end > footer_size {
                problems.push(Problem::error(
                    &path,
                    Some(start),
                    format!(
                        "tile {t} spans bytes {start}..{end}, outside the {footer_size} bytes \
                         the fragment metadata gives the file"
                    ),
                ));
                ranges.push(None);
            } else if end > actual {
                problems.push(Problem::error(
                    &path,
                    Some(start),
                    format!("tile {t} (bytes {start}..{end}) runs past the end of the file ({actual} bytes)"),
                ));
                ranges.push(None);
            } else {
                ranges.push(Some(start..end));
            }
        }
        Some(DataFile { path, ranges })
    }
}

/// The check of field `idx` (`field`), or `None` for fields without files (the legacy
/// coordinates slot, a dense array's dimensions) and fields whose files cannot be checked.
fn field_check(
    ctx: &FieldCtx<'_>,
    idx: usize,
    field: Field,
    expected: &mut BTreeSet<String>,
    problems: &mut Vec<Problem>,
) -> Option<FieldCheck> {
    let (md, schema) = (ctx.md, ctx.schema);
    let footer = &md.footer;
    let info = match FieldInfo::new(schema, field) {
        Ok(i) => i,
        Err(e) => {
            problems.push(Problem::error(ctx.md_path, None, chain(&e)));
            return None;
        }
    };
    // Sizes of files the field does not have must be 0, as libtiledb writes them.
    let has_file = match field {
        Field::Coords => false,
        Field::Dimension(_) => !footer.dense,
        _ => true,
    };
    for (what, sizes, present) in [
        ("data", &footer.file_sizes, has_file),
        ("var data", &footer.file_var_sizes, has_file && info.var),
        ("validity", &footer.file_validity_sizes, has_file && info.nullable),
    ] {
        let size = sizes.get(idx).copied().unwrap_or(0);
        if !present && size != 0 {
            problems.push(Problem::error(
                ctx.md_path,
                None,
                format!(
                    "the footer gives {} a {what} file of {size} bytes, which it cannot have",
                    info.name
                ),
            ));
        }
    }
    let (pipeline, dim) = match field {
        Field::Coords => return None,
        Field::Dimension(_) if footer.dense => return None,
        Field::Attribute(i) => (&schema.attributes[i].filters, None),
        Field::Dimension(j) => (schema.dimension_filters(&schema.dimensions[j]), Some(j)),
        Field::Timestamps | Field::DeleteTimestamps | Field::DeleteConditionIndex => {
            (&schema.coords_filters, None)
        }
    };
    let data_name = field.data_file()?;
    let version = footer.version;
    let unsupported = |file: &str, e: tessera_tile::Error| {
        Problem::error(
            format!("{}/{file}", ctx.dir),
            None,
            format!("cannot be decoded: {}", chain(&e)),
        )
    };
    let size = |v: &Vec<u64>| v.get(idx).copied().unwrap_or(0);
    let list = |v: &Vec<Vec<u64>>| v.get(idx).cloned().unwrap_or_default();
    expected.insert(data_name.clone());
    let data = ctx.data_file(
        &data_name,
        size(&footer.file_sizes),
        &list(&md.tile_offsets),
        LazyPart::TileOffsets(idx),
        problems,
    );
    let codec = if info.cell_val_num == CELL_VAL_NUM_VAR {
        let var_name = field.var_file()?;
        expected.insert(var_name.clone());
        let var = ctx.data_file(
            &var_name,
            size(&footer.file_var_sizes),
            &list(&md.tile_var_offsets),
            LazyPart::TileVarOffsets(idx),
            problems,
        );
        let var_sizes = list(&md.tile_var_sizes);
        if var_sizes.len() as u64 != ctx.tile_num {
            problems.push(Problem::error(
                ctx.md_path,
                footer.part_offset(LazyPart::TileVarSizes(idx)),
                format!(
                    "tile var sizes list {} tiles, the fragment has {}",
                    var_sizes.len(),
                    ctx.tile_num
                ),
            ));
        }
        let codec =
            match VarTileCodec::new(pipeline, &schema.offsets_filters, info.datatype, version) {
                Ok(c) => c.encrypted(ctx.key),
                Err(e) => {
                    problems.push(unsupported(&var_name, e));
                    return None;
                }
            };
        Codec::Var { codec, var: var?, var_sizes }
    } else {
        match TileCodec::fixed_data(pipeline, info.datatype, info.cell_val_num, version) {
            Ok(c) => Codec::Fixed(c.encrypted(ctx.key)),
            Err(e) => {
                problems.push(unsupported(&data_name, e));
                return None;
            }
        }
    };
    let validity = if info.nullable {
        let name = field.validity_file()?;
        expected.insert(name.clone());
        let file = ctx.data_file(
            &name,
            size(&footer.file_validity_sizes),
            &list(&md.tile_validity_offsets),
            LazyPart::TileValidityOffsets(idx),
            problems,
        );
        match TileCodec::validity(&schema.validity_filters, version) {
            Ok(c) => file.map(|f| (c.encrypted(ctx.key), f)),
            Err(e) => {
                problems.push(unsupported(&name, e));
                None
            }
        }
    } else {
        None
    };
    let lossy = pipeline
        .filters
        .iter()
        .any(|f| matches!(f.filter_type(), FilterType::ScaleFloat | FilterType::Webp));
    Some(FieldCheck {
        idx,
        timestamps: field == Field::Timestamps,
        lossy,
        info,
        data: data?,
        codec,
        validity,
        dim,
    })
}

/// A dense fragment's written box (its non-empty domain) as integers, for the cell slabs of
/// its tiles.
fn dense_box(schema: &ArraySchema, footer: &Footer) -> Option<Vec<[i128; 2]>> {
    let ned = footer.non_empty_domain.as_ref()?;
    schema
        .dimensions
        .iter()
        .zip(&ned.0)
        .map(|(d, r)| {
            let lo = tessera_types::int_value(d.datatype, &r.low)?;
            let hi = tessera_types::int_value(d.datatype, &r.high)?;
            Some([lo, hi])
        })
        .collect()
}

/// What checking the tiles needs about the fragment.
struct TileCtx<'a> {
    storage: &'a dyn Storage,
    md: &'a FragmentMetadata,
    schema: &'a ArraySchema,
    dims: Vec<DimType>,
    time_range: (u64, u64),
    /// A dense fragment's written box.
    dense_box: Option<Vec<[i128; 2]>>,
    /// Whether var-sized min/max values are stored per tile (not when libtiledb's dense
    /// writer may have copied them all into slot 0).
    check_var_min_max: bool,
}

/// One decoded tile of one field.
struct Decoded {
    /// Fixed values, or the var offsets as little-endian `u64`s.
    fixed: Vec<u8>,
    var: Option<Vec<u8>>,
    validity: Option<Vec<u8>>,
}

impl TileCtx<'_> {
    /// Reads bytes `range` of `path`.
    fn read(&self, path: &str, range: &Range<u64>) -> Result<Vec<u8>, Problem> {
        self.storage.read_range(path, range.clone()).map(|b| b.to_vec()).map_err(|e| {
            Problem::error(path, Some(range.start), format!("cannot be read: {}", chain(&e)))
        })
    }

    /// The cell slabs the writer may have computed tile `t`'s statistics over: the whole
    /// tile, or (dense fragments) the slabs of a row- or column-major write of its box.
    fn slab_candidates(&self, t: u64, cells: u64) -> Vec<Vec<Range<u64>>> {
        let mut out = vec![vec![0..cells]];
        let Some(sub) = &self.dense_box else { return out };
        let Ok(tiling) = SpaceTiles::new(self.schema, sub.clone()) else {
            return out;
        };
        let tile = tiling.tile(t);
        for layout in [Layout::RowMajor, Layout::ColMajor] {
            if let Ok(s) = dense_tile_slabs(sub, &tile, self.schema.cell_order, layout)
                && !out.contains(&s)
            {
                out.push(s);
            }
        }
        out
    }

    /// Checks tile `t` (of `cells` cells) of every field.
    fn tile(&self, fields: &[FieldCheck], t: u64, cells: u64) -> TileOutcome {
        let mut problems = Vec::new();
        let mut tiles = 0;
        let mut bytes = 0;
        let mut coords: Vec<(usize, &FieldCheck, Decoded)> = Vec::new();
        let mut slabs = None;
        for f in fields {
            match self.decode(f, t, cells) {
                Ok(Some((d, read))) => {
                    tiles += 1;
                    bytes += read;
                    if f.timestamps {
                        self.check_timestamps(f, t, &d, &mut problems);
                    }
                    let slabs = slabs.get_or_insert_with(|| self.slab_candidates(t, cells));
                    if let Some(p) = self.check_stats(f, t, cells, &d, slabs) {
                        problems.push(p);
                    }
                    if let Some(j) = f.dim {
                        coords.push((j, f, d));
                    }
                }
                Ok(None) => {}
                Err(p) => {
                    tiles += 1;
                    problems.push(p);
                }
            }
        }
        self.check_mbr(t, &coords, &mut problems);
        (problems, tiles, bytes)
    }

    /// Reads and decodes tile `t` of field `f`; `Ok(None)` when a range is unusable (already
    /// reported). Returns the bytes read with the tile.
    fn decode(
        &self,
        f: &FieldCheck,
        t: u64,
        cells: u64,
    ) -> Result<Option<(Decoded, u64)>, Problem> {
        let ti = t as usize;
        let Some(Some(range)) = f.data.ranges.get(ti) else { return Ok(None) };
        let tile_err = |file: &DataFile, range: &Range<u64>| {
            let path = file.path.clone();
            let range = range.clone();
            move |e: tessera_tile::Error| {
                let e = e.at_offset(range.start);
                Problem::error(
                    path,
                    Some(range.start),
                    format!("tile {t} (bytes {}..{}): {}", range.start, range.end, chain(&e)),
                )
            }
        };
        let raw = self.read(&f.data.path, range)?;
        let mut read = raw.len() as u64;
        let mut d = match &f.codec {
            Codec::Fixed(codec) => {
                let fixed = codec
                    .decode_exact(&raw, cells.saturating_mul(f.info.cell_size))
                    .map_err(tile_err(&f.data, range))?;
                Decoded { fixed, var: None, validity: None }
            }
            Codec::Var { codec, var, var_sizes } => {
                let Some(Some(vrange)) = var.ranges.get(ti) else { return Ok(None) };
                let Some(&var_size) = var_sizes.get(ti) else { return Ok(None) };
                let vraw = self.read(&var.path, vrange)?;
                read += vraw.len() as u64;
                if codec.is_string_path() {
                    let tile = codec
                        .decode_exact(&raw, &vraw, cells, var_size)
                        .map_err(tile_err(var, vrange))?;
                    let fixed = tile.offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
                    Decoded { fixed, var: Some(tile.data), validity: None }
                } else {
                    let fixed = codec
                        .offsets_codec()
                        .decode_exact(&raw, cells.saturating_mul(8))
                        .map_err(tile_err(&f.data, range))?;
                    let data = codec
                        .data_codec()
                        .decode_exact(&vraw, var_size)
                        .map_err(tile_err(var, vrange))?;
                    let mut prev = 0;
                    for i in 0..cells as usize {
                        let o = u64_at(&fixed, i);
                        if o < prev || o > data.len() as u64 {
                            return Err(Problem::error(
                                &f.data.path,
                                Some(range.start),
                                format!(
                                    "tile {t}: offset of cell {i} is {o} (previous {prev}, {} \
                                     bytes of values)",
                                    data.len()
                                ),
                            ));
                        }
                        prev = o;
                    }
                    Decoded { fixed, var: Some(data), validity: None }
                }
            }
        };
        if let Some((codec, file)) = &f.validity {
            let Some(Some(range)) = file.ranges.get(ti) else { return Ok(None) };
            let raw = self.read(&file.path, range)?;
            read += raw.len() as u64;
            d.validity = Some(codec.decode_exact(&raw, cells).map_err(tile_err(file, range))?);
        }
        Ok(Some((d, read)))
    }

    /// Per-cell timestamps must lie inside the fragment's timestamp range.
    fn check_timestamps(&self, f: &FieldCheck, t: u64, d: &Decoded, problems: &mut Vec<Problem>) {
        let (t1, t2) = self.time_range;
        let n = d.fixed.len() / 8;
        if let Some((i, ts)) =
            (0..n).map(|i| (i, u64_at(&d.fixed, i))).find(|&(_, ts)| ts < t1 || ts > t2)
        {
            problems.push(Problem::error(
                &f.data.path,
                f.data.ranges[t as usize].as_ref().map(|r| r.start),
                format!(
                    "tile {t}: cell {i} has timestamp {ts}, outside the fragment's {t1}..={t2}"
                ),
            ));
        }
    }

    /// A sparse tile's coordinates must lie inside its MBR in the R-tree.
    fn check_mbr(
        &self,
        t: u64,
        coords: &[(usize, &FieldCheck, Decoded)],
        problems: &mut Vec<Problem>,
    ) {
        if coords.is_empty() {
            return;
        }
        let Some(leaf) = self.md.rtree.leaf(t) else { return };
        for (j, f, d) in coords {
            let dim = self.dims[*j];
            let offsets: Vec<u64>;
            let c = match &d.var {
                Some(data) => {
                    offsets = (0..d.fixed.len() / 8).map(|i| u64_at(&d.fixed, i)).collect();
                    DimCoords::Var { offsets: &offsets, data }
                }
                None => DimCoords::Fixed(&d.fixed),
            };
            let Ok(mbr) = Mbr::of_cells(&[dim], &[c]) else { continue };
            let (Some(stored), Some(found)) = (leaf.range(*j), mbr.0.first()) else { continue };
            if !stored.contains(found.view(), dim) {
                problems.push(Problem::error(
                    &f.data.path,
                    f.data.ranges[t as usize].as_ref().map(|r| r.start),
                    format!(
                        "tile {t}: its coordinates on dimension {:?} leave the tile's MBR in the \
                         R-tree",
                        self.schema.dimensions[*j].name
                    ),
                ));
            }
        }
    }

    /// The tile's statistics recomputed from its cells must match the stored ones.
    fn check_stats(
        &self,
        f: &FieldCheck,
        t: u64,
        cells: u64,
        d: &Decoded,
        slabs: &[Vec<Range<u64>>],
    ) -> Option<Problem> {
        let md = self.md;
        let idx = f.idx;
        let info = &f.info;
        if f.lossy
            || md.footer.version < 11
            || md.tile_mins.len() <= idx
            || md.tile_sums.len() <= idx
        {
            return None;
        }
        let td = TileData {
            cell_num: cells,
            fixed: &d.fixed,
            var: d.var.as_deref(),
            validity: d.validity.as_deref(),
        };
        let mut first_diff = None;
        for s in slabs {
            let Ok(stats) = tile_stats(info, &td, s) else { continue };
            match self.stats_diff(info, idx, t, cells, &stats) {
                None => return None,
                Some(diff) => {
                    first_diff.get_or_insert(diff);
                }
            }
        }
        let diff = first_diff?;
        Some(Problem::error(
            &f.data.path,
            f.data.ranges[t as usize].as_ref().map(|r| r.start),
            format!(
                "tile {t}: its cells do not match the tile statistics in {FRAGMENT_METADATA_FILE} \
                 ({diff})"
            ),
        ))
    }

    /// How the stored statistics of tile `t` differ from `stats`, or `None` when they match
    /// (as `field_tile_metadata_with` stores them).
    fn stats_diff(
        &self,
        info: &FieldInfo,
        idx: usize,
        t: u64,
        cells: u64,
        stats: &TileStats,
    ) -> Option<String> {
        let md = self.md;
        let recorded = stats.null_count != cells;
        if info.has_min_max() && (!info.var || self.check_var_min_max) {
            for (what, stored, computed) in
                [("min", &md.tile_mins[idx], &stats.min), ("max", &md.tile_maxs[idx], &stats.max)]
            {
                let zeros;
                let expected: &[u8] = match (recorded, info.var) {
                    (true, _) => computed,
                    (false, true) => &[],
                    (false, false) => {
                        zeros = vec![0u8; info.cell_size as usize];
                        &zeros
                    }
                };
                let found = if info.var {
                    stored.var_value(t).ok()
                } else {
                    stored.fixed_value(t, info.cell_size)
                };
                if found != Some(expected) {
                    return Some(format!(
                        "stored {what} {}, computed {}",
                        show(found.unwrap_or_default(), info.datatype),
                        show(expected, info.datatype)
                    ));
                }
            }
        }
        if info.has_sum() {
            let stored = md.tile_sums[idx].0.get(t as usize).copied();
            if stored != Some(stats.sum) {
                let sum = |raw: u64| format!("{:?}", info.sum_type().decode(raw));
                return Some(format!(
                    "stored sum {}, computed {}",
                    stored.map_or("none".into(), sum),
                    sum(stats.sum)
                ));
            }
        }
        if info.nullable {
            let stored = md.tile_null_counts.get(idx).and_then(|v| v.get(t as usize)).copied();
            if stored != Some(stats.null_count) {
                return Some(format!(
                    "stored null count {}, computed {}",
                    stored.map_or("none".into(), |s| s.to_string()),
                    stats.null_count
                ));
            }
        }
        None
    }
}

/// A short rendering of a min/max value for messages.
fn show(bytes: &[u8], datatype: Datatype) -> String {
    if datatype.is_string() || matches!(datatype, Datatype::Char) {
        return format!("{:?}", String::from_utf8_lossy(bytes));
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{hex}")
}
