//! The files of one fragment being written: tiles are filtered on worker threads and appended
//! to their data files as they come; the fragment metadata is built alongside and written at
//! the end, then the `.wrt` commit (`docs/format/fragment-metadata.md`).

use std::ops::Range;

use bytes::Bytes;
use rayon::prelude::*;
use tessera_fragment::stats::{
    TileData, TileStats, VarMinMaxCopy, field_tile_metadata_with, tile_stats, tile_stats_full,
};
use tessera_fragment::{
    CommitEntry, CommitKind, Field, FieldInfo, Footer, FragmentMetadata, FragmentName,
    ProcessedConditions, dim_types,
};
use tessera_rtree::{DimCoords, DimType, Mbr, RTree};
use tessera_schema::ArraySchema;
use tessera_storage::{ObjectWriter, Storage};
use tessera_tile::{PlainFrame, TileCodec, VarTileCodec};
use tessera_types::{CELL_VAL_NUM_VAR, FORMAT_VERSION};

use crate::{Error, Result};
use tessera_fragment::FRAGMENT_METADATA_FILE;
use tessera_fragment::dirs;

/// The unfiltered cells of one field in one tile.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldTile {
    /// The values (of var-sized fields: back to back).
    pub(crate) data: Vec<u8>,
    /// Var-sized fields: the start of each cell in `data` (relative to the tile, as they go
    /// to disk).
    pub(crate) offsets: Option<Vec<u64>>,
    /// Nullable fields: one byte per cell, 0 = null.
    pub(crate) validity: Option<Vec<u8>>,
}

/// One tile of every field the fragment stores.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tile {
    /// Cells in the tile (for dense tiles: every cell of the space tile).
    pub(crate) cell_num: u64,
    /// One entry per field of the sink, in its order.
    pub(crate) fields: Vec<FieldTile>,
    /// The cell ranges that were written (dense tiles with padding), in the order libtiledb
    /// hands them to its metadata generator; `None` for the whole tile.
    pub(crate) slabs: Option<Vec<Range<u64>>>,
}

/// How one field's tiles are filtered.
#[derive(Debug)]
enum Codec {
    Fixed(TileCodec),
    Var(VarTileCodec),
}

/// What filtering a batch needs, borrowed apart from the files being appended to.
struct Coder<'s> {
    fields: &'s [SinkField],
    dense: bool,
    dims: &'s [DimType],
    dim_fields: &'s [usize],
}

impl Coder<'_> {
    /// Filters every field of `tiles` on the worker threads, and computes their MBRs. The
    /// tiles are consumed: a tile stored without filters is handed on as it is.
    fn encode(&self, tiles: Vec<Tile>) -> EncodedBatch {
        let mbrs: Vec<Result<Mbr>> = if self.dense {
            Vec::new()
        } else {
            tiles.par_iter().map(|t| self.tile_mbr(t)).collect()
        };
        let cells = tiles.iter().map(|t| t.cell_num).collect();
        let fields = self.fields;
        let encoded: Vec<Result<EncodedField>> = tiles
            .into_par_iter()
            .flat_map(|mut tile| {
                let field_tiles = std::mem::take(&mut tile.fields);
                field_tiles
                    .into_par_iter()
                    .enumerate()
                    .map(move |(f, ft)| encode_field(&fields[f], ft, &tile))
            })
            .collect();
        EncodedBatch { fields: encoded, cells, mbrs }
    }

    fn tile_mbr(&self, tile: &Tile) -> Result<Mbr> {
        let coords: Vec<DimCoords<'_>> = self
            .dim_fields
            .iter()
            .map(|&f| {
                let ft = &tile.fields[f];
                match &ft.offsets {
                    Some(offsets) => DimCoords::Var { offsets, data: &ft.data },
                    None => DimCoords::Fixed(&ft.data),
                }
            })
            .collect();
        Mbr::of_cells(self.dims, &coords)
            .map_err(|e| Error::InvalidWrite(format!("tile coordinates: {e}")))
    }
}

/// One stored field: its codecs and files.
struct SinkField {
    info: FieldInfo,
    idx: usize,
    codec: Codec,
    validity_codec: Option<TileCodec>,
    data_file: String,
    var_file: Option<String>,
    validity_file: Option<String>,
}

/// What one stored field has written: its open files and what the metadata records of it.
#[derive(Default)]
struct FieldOut<'a> {
    data: Option<Box<dyn ObjectWriter + 'a>>,
    var: Option<Box<dyn ObjectWriter + 'a>>,
    validity: Option<Box<dyn ObjectWriter + 'a>>,
    sizes: [u64; 3],
    tile_offsets: Vec<u64>,
    tile_var_offsets: Vec<u64>,
    tile_var_sizes: Vec<u64>,
    tile_validity_offsets: Vec<u64>,
    stats: Vec<TileStats>,
}

/// Tiles filtered and waiting to be appended, with their cell counts and MBRs.
struct EncodedBatch {
    /// One entry per field of each tile, tile after tile.
    fields: Vec<Result<EncodedField>>,
    cells: Vec<u64>,
    mbrs: Vec<Result<Mbr>>,
}

/// Everything the appends change: the files and the bookkeeping of the tiles written.
#[derive(Default)]
struct Progress<'a> {
    outs: Vec<FieldOut<'a>>,
    mbrs: Vec<Mbr>,
    tile_num: u64,
    last_tile_cells: u64,
}

impl Progress<'_> {
    /// Appends a filtered batch to the files, in tile order.
    fn append(&mut self, batch: EncodedBatch) -> Result<()> {
        let mut encoded = batch.fields.into_iter();
        for &cells in &batch.cells {
            for out in &mut self.outs {
                let e = encoded.next().ok_or_else(|| {
                    Error::InvalidWrite("a filtered batch is missing a field".into())
                })??;
                out.append(e)?;
            }
            self.tile_num += 1;
            self.last_tile_cells = cells;
        }
        for m in batch.mbrs {
            self.mbrs.push(m?);
        }
        Ok(())
    }
}

/// The bytes of a data tile as they go to its file.
enum TileBytes {
    /// Filtered and framed.
    Framed(Vec<u8>),
    /// Stored without filters: the unfiltered bytes, written between the headers of `frame`.
    Plain { tile: Vec<u8>, frame: PlainFrame },
}

impl TileBytes {
    /// Bytes in the file.
    fn len(&self) -> usize {
        match self {
            TileBytes::Framed(b) => b.len(),
            TileBytes::Plain { frame, .. } => frame.framed_len(),
        }
    }

    /// Appends the tile to `w`.
    fn write_to(&self, w: &mut dyn ObjectWriter) -> Result<()> {
        match self {
            TileBytes::Framed(b) => w.write_all(b)?,
            TileBytes::Plain { tile, frame } => {
                let pieces = frame
                    .pieces(tile)
                    .map_err(|e| Error::InvalidWrite(format!("a plain tile: {e}")))?;
                w.write_all_vectored(&pieces)?;
            }
        }
        Ok(())
    }
}

/// A tile of one field after filtering.
struct EncodedField {
    data: TileBytes,
    var: Option<Vec<u8>>,
    var_size: u64,
    validity: Option<Vec<u8>>,
    stats: TileStats,
}

/// The fragment folder being filled. Dropping it before [`FragmentSink::commit`] removes the
/// folder, so a failed write leaves nothing behind.
pub(crate) struct FragmentSink<'a> {
    storage: &'a dyn Storage,
    schema: &'a ArraySchema,
    schema_name: String,
    name: FragmentName,
    dir: String,
    fields: Vec<SinkField>,
    dims: Vec<DimType>,
    /// Positions in `fields` of the dimensions, in schema order (sparse fragments).
    dim_fields: Vec<usize>,
    /// The files and what was written to them.
    progress: Progress<'a>,
    /// The last batch filtered, appended while the next one is filtered.
    pending: Option<EncodedBatch>,
    has_timestamps: bool,
    has_delete_meta: bool,
    committed: bool,
}

impl std::fmt::Debug for FragmentSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FragmentSink")
            .field("name", &self.name.as_str())
            .field("tile_num", &self.progress.tile_num)
            .finish_non_exhaustive()
    }
}

/// The fields a fragment of `schema` stores, in the order the sink takes them: attributes in
/// schema order, then (sparse arrays) dimensions, then the timestamp and delete fields.
pub(crate) fn stored_fields(
    schema: &ArraySchema,
    has_timestamps: bool,
    has_delete_meta: bool,
) -> Vec<Field> {
    let mut out: Vec<Field> = (0..schema.attributes.len()).map(Field::Attribute).collect();
    if !schema.is_dense() {
        out.extend((0..schema.dimensions.len()).map(Field::Dimension));
    }
    if has_timestamps {
        out.push(Field::Timestamps);
    }
    if has_delete_meta {
        out.push(Field::DeleteTimestamps);
        out.push(Field::DeleteConditionIndex);
    }
    out
}

fn tile_err(file: &str) -> impl Fn(tessera_tile::Error) -> Error + '_ {
    move |e| Error::Unsupported(format!("{file}: {}", with_causes(&e)))
}

/// `e`'s message followed by those of its causes (a filter's reason for refusing a tile).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl<'a> FragmentSink<'a> {
    /// Starts fragment `name` of `schema` (whose file in `__schema/` is `schema_name`),
    /// storing [`stored_fields`]; creates its folder and data files.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a filter Tessera cannot run; storage errors.
    pub(crate) fn create(
        storage: &'a dyn Storage,
        schema: &'a ArraySchema,
        schema_name: String,
        name: FragmentName,
        has_timestamps: bool,
        has_delete_meta: bool,
    ) -> Result<Self> {
        let dir = format!("{}/{}", dirs::FRAGMENTS, name.as_str());
        let layout = tessera_fragment::FieldLayout::new(schema, has_timestamps, has_delete_meta);
        let mut fields = Vec::new();
        let mut dim_fields = Vec::new();
        for field in stored_fields(schema, has_timestamps, has_delete_meta) {
            let info = FieldInfo::new(schema, field)
                .map_err(|e| Error::Fragment { file: dir.clone(), source: Box::new(e) })?;
            let idx = layout.idx(field).ok_or_else(|| {
                Error::InvalidWrite(format!("the fragment layout has no {field:?}"))
            })?;
            let (pipeline, nullable) = match field {
                Field::Attribute(i) => {
                    let a = &schema.attributes[i];
                    (&a.filters, a.nullable)
                }
                Field::Dimension(j) => {
                    dim_fields.push(fields.len());
                    (schema.dimension_filters(&schema.dimensions[j]), false)
                }
                _ => (&schema.coords_filters, false),
            };
            let path = |f: Option<String>| f.map(|f| format!("{dir}/{f}"));
            let data_file = path(field.data_file()).unwrap_or_default();
            let var_file = path(field.var_file()).filter(|_| info.var);
            let validity_file = path(field.validity_file()).filter(|_| nullable);
            let codec = if info.cell_val_num == CELL_VAL_NUM_VAR {
                Codec::Var(
                    VarTileCodec::new(
                        pipeline,
                        &schema.offsets_filters,
                        info.datatype,
                        FORMAT_VERSION,
                    )
                    .map_err(tile_err(var_file.as_deref().unwrap_or(&data_file)))?
                    .encrypted(storage.encryption_key()),
                )
            } else {
                Codec::Fixed(
                    TileCodec::fixed_data(
                        pipeline,
                        info.datatype,
                        info.cell_val_num,
                        FORMAT_VERSION,
                    )
                    .map_err(tile_err(&data_file))?
                    .encrypted(storage.encryption_key()),
                )
            };
            let validity_codec = match &validity_file {
                Some(f) => Some(
                    TileCodec::validity(&schema.validity_filters, FORMAT_VERSION)
                        .map_err(tile_err(f))?
                        .encrypted(storage.encryption_key()),
                ),
                None => None,
            };
            fields.push(SinkField {
                info,
                idx,
                codec,
                validity_codec,
                data_file,
                var_file,
                validity_file,
            });
        }
        storage.create_dir(&dir)?;
        let mut sink = FragmentSink {
            dims: dim_types(schema),
            storage,
            schema,
            schema_name,
            name,
            dir,
            fields,
            dim_fields,
            progress: Progress::default(),
            pending: None,
            has_timestamps,
            has_delete_meta,
            committed: false,
        };
        sink.open_files()?;
        Ok(sink)
    }

    fn open_files(&mut self) -> Result<()> {
        let storage = self.storage;
        for f in &self.fields {
            let mut out =
                FieldOut { data: Some(storage.writer(&f.data_file)?), ..FieldOut::default() };
            if let Some(p) = &f.var_file {
                out.var = Some(storage.writer(p)?);
            }
            if let Some(p) = &f.validity_file {
                out.validity = Some(storage.writer(p)?);
            }
            self.progress.outs.push(out);
        }
        Ok(())
    }

    /// Number of tiles written so far.
    pub(crate) fn tile_num(&self) -> u64 {
        self.progress.tile_num + self.pending.as_ref().map_or(0, |b| b.cells.len() as u64)
    }

    /// Filters `tiles` (every field of every tile on the worker threads), computes their
    /// metadata and MBRs, and appends them to the data files in order.
    ///
    /// # Errors
    /// [`Error::InvalidWrite`] for tiles whose buffers do not fit their fields; filter and
    /// storage errors.
    pub(crate) fn write_tiles(&mut self, tiles: Vec<Tile>) -> Result<()> {
        if tiles.is_empty() {
            return Ok(());
        }
        for t in &tiles {
            if t.fields.len() != self.fields.len() {
                return Err(Error::InvalidWrite(format!(
                    "a tile with {} fields for {}",
                    t.fields.len(),
                    self.fields.len()
                )));
            }
        }
        // Filter this batch while the previous one is appended to the files.
        let pending = self.pending.take();
        let FragmentSink { progress, fields, schema, dims, dim_fields, .. } = self;
        let coder = Coder { fields, dense: schema.is_dense(), dims, dim_fields };
        let (appended, encoded) =
            rayon::join(|| pending.map_or(Ok(()), |b| progress.append(b)), || coder.encode(tiles));
        appended?;
        self.pending = Some(encoded);
        Ok(())
    }

    /// Appends the batch still being held.
    fn flush(&mut self) -> Result<()> {
        match self.pending.take() {
            Some(b) => self.progress.append(b),
            None => Ok(()),
        }
    }

    /// Closes the data files, writes `__fragment_metadata.tdb` and publishes the `.wrt`
    /// commit, which makes the fragment visible. `non_empty_domain` is the fragment's;
    /// `dense_tile_num` the number of space tiles of a dense fragment (checked against the
    /// tiles written); `var_copy` how var-sized min/max values go into the metadata.
    ///
    /// # Errors
    /// [`Error::InvalidWrite`] when no tile was written or the dense tile count differs;
    /// metadata encoding and storage errors (the folder is then removed).
    pub(crate) fn commit(
        mut self,
        non_empty_domain: Option<Mbr>,
        var_copy: VarMinMaxCopy,
        processed_conditions: Vec<String>,
    ) -> Result<FragmentName> {
        self.flush()?;
        let ned = match non_empty_domain {
            Some(n) => n,
            None => Mbr::bounding(&self.dims, &self.progress.mbrs)
                .ok_or_else(|| Error::InvalidWrite("a fragment without cells".into()))?,
        };
        let bytes = self.metadata(ned, var_copy, processed_conditions)?;
        self.close_files()?;
        let md_path = format!("{}/{FRAGMENT_METADATA_FILE}", self.dir);
        self.storage.write(&md_path, Bytes::from(bytes))?;
        let commit = CommitEntry::new(self.name.clone(), CommitKind::Write);
        self.storage.publish(&commit.relative_path(), Bytes::new())?;
        self.committed = true;
        Ok(self.name.clone())
    }

    fn close_files(&mut self) -> Result<()> {
        for f in &mut self.progress.outs {
            for w in [f.data.take(), f.var.take(), f.validity.take()].into_iter().flatten() {
                w.finish()?;
            }
        }
        Ok(())
    }

    fn metadata(
        &self,
        ned: Mbr,
        var_copy: VarMinMaxCopy,
        processed_conditions: Vec<String>,
    ) -> Result<Vec<u8>> {
        let schema = self.schema;
        let (tile_num, last_tile_cells) = (self.progress.tile_num, self.progress.last_tile_cells);
        let md_err = |e| Error::Fragment {
            file: format!("{}/{FRAGMENT_METADATA_FILE}", self.dir),
            source: Box::new(e),
        };
        let mut footer = Footer::new(schema, self.schema_name.clone(), ned);
        footer.has_timestamps = self.has_timestamps;
        footer.has_delete_meta = self.has_delete_meta;
        let num = footer.layout(schema).num();
        footer.file_sizes = vec![0; num];
        footer.file_var_sizes = vec![0; num];
        footer.file_validity_sizes = vec![0; num];
        if schema.is_dense() {
            let expected = footer.tile_num(schema).map_err(md_err)?;
            if expected != tile_num {
                return Err(Error::InvalidWrite(format!(
                    "{tile_num} tiles written for a dense fragment of {expected} space tiles"
                )));
            }
        } else {
            if tile_num == 0 {
                return Err(Error::InvalidWrite("a fragment without cells".into()));
            }
            footer.sparse_tile_num = tile_num;
            footer.last_tile_cell_num = last_tile_cells;
        }
        for (f, o) in self.fields.iter().zip(&self.progress.outs) {
            footer.file_sizes[f.idx] = o.sizes[0];
            footer.file_var_sizes[f.idx] = o.sizes[1];
            footer.file_validity_sizes[f.idx] = o.sizes[2];
        }
        let mut md = FragmentMetadata::new(footer, schema).map_err(md_err)?;
        let cell_num = md.footer.cell_num_fn(schema).map_err(md_err)?;
        for (f, o) in self.fields.iter().zip(&self.progress.outs) {
            md.tile_offsets[f.idx].clone_from(&o.tile_offsets);
            if f.info.var {
                md.tile_var_offsets[f.idx].clone_from(&o.tile_var_offsets);
                md.tile_var_sizes[f.idx].clone_from(&o.tile_var_sizes);
            }
            if f.validity_file.is_some() {
                md.tile_validity_offsets[f.idx].clone_from(&o.tile_validity_offsets);
            }
            let m = field_tile_metadata_with(&f.info, tile_num, &o.stats, &cell_num, var_copy)
                .map_err(md_err)?;
            md.tile_mins[f.idx] = m.mins;
            md.tile_maxs[f.idx] = m.maxs;
            md.tile_sums[f.idx] = m.sums;
            md.tile_null_counts[f.idx] = m.null_counts;
        }
        if !schema.is_dense() {
            md.rtree = RTree::build(&self.dims, &self.progress.mbrs, tessera_rtree::DEFAULT_FANOUT)
                .map_err(|e| Error::InvalidWrite(format!("R-tree: {e}")))?;
        }
        md.processed_conditions = Some(ProcessedConditions(processed_conditions));
        md.update_fragment_stats(schema).map_err(md_err)?;
        md.to_bytes_with_key(schema, self.storage.encryption_key()).map_err(md_err)
    }
}

impl Drop for FragmentSink<'_> {
    fn drop(&mut self) {
        // Close the files before removing the folder.
        for f in &mut self.progress.outs {
            drop(f.data.take());
            drop(f.var.take());
            drop(f.validity.take());
        }
        if !self.committed {
            let _ = self.storage.remove_dir_all(&self.dir);
        }
    }
}

impl FieldOut<'_> {
    fn append(&mut self, e: EncodedField) -> Result<()> {
        let write = |w: &mut Option<Box<dyn ObjectWriter + '_>>, bytes: &[u8]| -> Result<()> {
            let w =
                w.as_mut().ok_or_else(|| Error::InvalidWrite("the fragment is closed".into()))?;
            w.write_all(bytes)?;
            Ok(())
        };
        self.tile_offsets.push(self.sizes[0]);
        let data = self
            .data
            .as_mut()
            .ok_or_else(|| Error::InvalidWrite("the fragment is closed".into()))?;
        e.data.write_to(data.as_mut())?;
        self.sizes[0] += e.data.len() as u64;
        if let Some(v) = &e.var {
            self.tile_var_offsets.push(self.sizes[1]);
            self.tile_var_sizes.push(e.var_size);
            write(&mut self.var, v)?;
            self.sizes[1] += v.len() as u64;
        }
        if let Some(v) = &e.validity {
            self.tile_validity_offsets.push(self.sizes[2]);
            write(&mut self.validity, v)?;
            self.sizes[2] += v.len() as u64;
        }
        self.stats.push(e.stats);
        Ok(())
    }
}

/// Filters one field's tile and computes its metadata (`tile` gives the cell count and slabs;
/// its fields have been taken out).
fn encode_field(f: &SinkField, ft: FieldTile, tile: &Tile) -> Result<EncodedField> {
    let n = tile.cell_num;
    let name = &f.info.name;
    let bad = |what: String| Error::InvalidWrite(format!("field {name:?}: {what}"));
    let enc_err = |file: &str| {
        let file = file.to_owned();
        move |e: tessera_tile::Error| Error::InvalidWrite(format!("{file}: {}", with_causes(&e)))
    };
    match (&f.validity_codec, &ft.validity) {
        (Some(_), Some(v)) if v.len() as u64 != n => {
            return Err(bad(format!("{} validity bytes for {n} cells", v.len())));
        }
        (Some(_), None) => return Err(bad("no validity for a nullable field".into())),
        (None, Some(_)) => return Err(bad("validity for a field that is not nullable".into())),
        _ => {}
    }
    match &f.codec {
        Codec::Fixed(_) if ft.data.len() as u64 != n * f.info.cell_size => {
            return Err(bad(format!(
                "{} bytes for {n} cells of {} bytes",
                ft.data.len(),
                f.info.cell_size
            )));
        }
        Codec::Var(_) => match ft.offsets.as_deref() {
            None => return Err(bad("no offsets".into())),
            Some(o) if o.len() as u64 != n => {
                return Err(bad(format!("{} offsets for {n} cells", o.len())));
            }
            Some(_) => {}
        },
        Codec::Fixed(_) => {}
    }
    let validity = match (&f.validity_codec, &ft.validity) {
        (Some(codec), Some(v)) => {
            Some(codec.encode(v).map_err(enc_err(f.validity_file.as_deref().unwrap_or_default()))?)
        }
        _ => None,
    };
    let td = TileData {
        cell_num: n,
        fixed: ft.offsets.as_deref().map_or(&ft.data, |o| bytemuck::cast_slice(o)),
        var: ft.offsets.as_ref().map(|_| ft.data.as_slice()),
        validity: ft.validity.as_deref(),
    };
    let stats = match &tile.slabs {
        Some(slabs) => tile_stats(&f.info, &td, slabs),
        None => tile_stats_full(&f.info, &td),
    }
    .map_err(|e| bad(e.to_string()))?;
    let (data, var, var_size) = match &f.codec {
        Codec::Fixed(codec) => {
            // Without filters the tile's own bytes go to the file: no framed copy.
            let data = match codec.plain_frame(ft.data.len()).map_err(enc_err(&f.data_file))? {
                Some(frame) => TileBytes::Plain { tile: ft.data, frame },
                None => TileBytes::Framed(codec.encode(&ft.data).map_err(enc_err(&f.data_file))?),
            };
            (data, None, 0)
        }
        Codec::Var(codec) => {
            let offsets = ft.offsets.as_deref().unwrap_or_default();
            let file = f.var_file.as_deref().unwrap_or(&f.data_file);
            let e = codec.encode(offsets, &ft.data).map_err(enc_err(file))?;
            (TileBytes::Framed(e.offsets), Some(e.data), ft.data.len() as u64)
        }
    };
    Ok(EncodedField { data, var, var_size, validity, stats })
}
