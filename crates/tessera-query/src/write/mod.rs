//! Writes: [`Array::write`](crate::Array::write) starts a [`WriteQuery`]; its columns, the
//! subarray (dense arrays), the layout and the timestamp are set on it; [`WriteQuery::submit`]
//! writes one fragment, and [`WriteQuery::begin`] starts a global-order write that takes its
//! cells over several submissions ([`FragmentWrite`]).
//!
//! Writes follow libtiledb 2.30 (`docs/format/fragment-metadata.md`, "Data files"):
//! * a dense write covers one subarray (one range per dimension), its cells given in row- or
//!   col-major order of it, or in global order tile by tile (then the subarray must coincide
//!   with space-tile bounds); tiles are whole space tiles, the cells not written padded with
//!   zero bytes;
//! * a sparse write gives every dimension and attribute of every cell: unordered (Tessera
//!   sorts into the global order, Hilbert included) or already in global order (checked);
//!   coordinates outside the domain (or current domain) and, when the schema forbids them,
//!   duplicate coordinates are errors; tiles hold `capacity` cells;
//! * data files first, then `__fragment_metadata.tdb`, then the `.wrt` commit: until the
//!   commit, readers do not see the fragment; a failed write removes what it wrote.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::Array;
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_storage::MemoryStorage;
//! use tessera_types::{ArrayType, Datatype};
//!
//! let storage = Arc::new(MemoryStorage::new());
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
//!     .attribute(Attribute::new("v", Datatype::Float64))
//!     .build()?;
//! Array::create(storage.clone(), &schema, &[])?;
//! let array = Array::open(storage.clone())?;
//! array.write().values("x", &[7i64, 3, 5]).values("v", &[0.7, 0.3, 0.5]).timestamp(10).submit()?;
//! let result = Array::open(storage)?.read().execute()?;
//! assert_eq!(result.column("x").unwrap().data, [3i64, 5, 7].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod dense;
mod input;
pub(crate) mod sink;
mod sparse;

use rayon::prelude::*;
use tessera_fragment::stats::VarMinMaxCopy;
use tessera_fragment::{Field, FragmentName};
use tessera_rtree::Mbr;
use tessera_types::{Layout, Primitive};

use crate::array::Array;
use crate::read::RangeSpec;
use crate::read::order::push_int;
use crate::read::subarray::Subarray;
use crate::result::Column;
use crate::{Error, Result};
use dense::{DenseTiling, build_tile, fill_tile};
use input::{FieldCells, check_columns};
use sink::{FragmentSink, Tile, stored_fields};
use sparse::{CellOrder, check_bounds, cmp_across, duplicate_error, unsorted_error};

impl Array {
    /// Starts a write of one fragment to this array (with the schema it was opened with).
    pub fn write(&self) -> WriteQuery<'_> {
        WriteQuery {
            array: self,
            ranges: Vec::new(),
            layout: None,
            timestamp: None,
            columns: Vec::new(),
            validity: Vec::new(),
        }
    }
}

/// A write being set up: columns, subarray, layout and timestamp.
///
/// Errors (unknown fields, wrong buffer sizes, bad ranges) are reported by
/// [`Self::submit`] and [`Self::begin`], and leave the array unchanged.
#[derive(Debug, Clone)]
#[must_use = "a write does nothing until submitted"]
pub struct WriteQuery<'a> {
    array: &'a Array,
    ranges: Vec<(String, RangeSpec)>,
    layout: Option<Layout>,
    timestamp: Option<u64>,
    columns: Vec<Column>,
    /// Validity given before its column's values, attached when they come.
    validity: Vec<(String, Vec<u8>)>,
}

impl<'a> WriteQuery<'a> {
    fn push(mut self, dim: &str, spec: RangeSpec) -> Self {
        self.ranges.push((dim.to_owned(), spec));
        self
    }

    /// Sets the range `[low, high]` (inclusive) of dimension `dim` of a dense write's
    /// subarray, in a Rust number type matching the dimension's datatype. A dimension
    /// without a range is written over its whole domain.
    pub fn range<T: Primitive>(self, dim: &str, low: T, high: T) -> Self {
        let (mut lo, mut hi) = (Vec::with_capacity(T::SIZE), Vec::with_capacity(T::SIZE));
        low.write_le(&mut lo);
        high.write_le(&mut hi);
        self.push(dim, RangeSpec::Typed(T::DATATYPE, lo, hi))
    }

    /// [`Self::range`] with `i64` bounds that must fit the dimension's type.
    pub fn range_i64(self, dim: &str, low: i64, high: i64) -> Self {
        self.push(dim, RangeSpec::I64(low, high))
    }

    /// [`Self::range`] with `u64` bounds that must fit the dimension's type.
    pub fn range_u64(self, dim: &str, low: u64, high: u64) -> Self {
        self.push(dim, RangeSpec::U64(low, high))
    }

    /// [`Self::range`] given as the little-endian bytes of the dimension's type.
    pub fn range_bytes(self, dim: &str, low: impl Into<Vec<u8>>, high: impl Into<Vec<u8>>) -> Self {
        self.push(dim, RangeSpec::Bytes(low.into(), high.into()))
    }

    /// The order of the cells given: row-major or col-major (dense: of the subarray; the
    /// default for dense arrays), global order (dense or sparse, over one or several
    /// submissions), or unordered (sparse only; the default for sparse arrays).
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// The fragment's timestamp (ms since the epoch); default: the end of the range the
    /// array was opened at when that is not "now", else the current time.
    pub fn timestamp(mut self, ms: u64) -> Self {
        self.timestamp = Some(ms);
        self
    }

    /// Adds the cells of one dimension or attribute (replacing an earlier column of the same
    /// name). The column's datatype and cell size must match the field's; var-sized fields
    /// give offsets and nullable attributes validity.
    pub fn column(mut self, mut column: Column) -> Self {
        self.columns.retain(|c| c.name != column.name);
        if column.validity.is_none()
            && let Some(i) = self.validity.iter().position(|(n, _)| *n == column.name)
        {
            column.validity = Some(self.validity.swap_remove(i).1);
        }
        self.columns.push(column);
        self
    }

    /// Adds a fixed-size column of `values` of a Rust number type (for `cell_val_num > 1`,
    /// the values of every cell back to back). The type's size must match the field's.
    pub fn values<T: Primitive>(self, name: &str, values: &[T]) -> Self {
        let mut data = Vec::with_capacity(values.len() * T::SIZE);
        for v in values {
            v.write_le(&mut data);
        }
        let column = Column {
            name: name.to_owned(),
            datatype: T::DATATYPE,
            cell_val_num: 1,
            data,
            offsets: None,
            validity: None,
        };
        self.column(column)
    }

    /// Adds a var-sized column: one value (bytes, such as a string) per cell.
    pub fn var_values<I, V>(self, name: &str, values: I) -> Self
    where
        I: IntoIterator<Item = V>,
        V: AsRef<[u8]>,
    {
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for v in values {
            offsets.push(data.len() as u64);
            data.extend_from_slice(v.as_ref());
        }
        let column = Column {
            name: name.to_owned(),
            datatype: tessera_types::Datatype::Any,
            cell_val_num: tessera_types::CELL_VAL_NUM_VAR,
            data,
            offsets: Some(offsets),
            validity: None,
        };
        self.column(column)
    }

    /// Sets the validity of a nullable attribute's column: one byte per cell, 0 = null.
    /// Before or after the column's values, in either order; validity for a field whose
    /// values never come is an [`Error::InvalidWrite`] at [`Self::submit`].
    pub fn validity(mut self, name: &str, validity: Vec<u8>) -> Self {
        if let Some(c) = self.columns.iter_mut().find(|c| c.name == name) {
            c.validity = Some(validity);
        } else {
            self.validity.retain(|(n, _)| n != name);
            self.validity.push((name.to_owned(), validity));
        }
        self
    }

    /// Writes the cells as one fragment and commits it; returns its name, or `None` when
    /// there were no cells (libtiledb writes no fragment then).
    ///
    /// # Errors
    /// [`Error::InvalidWrite`] for columns that do not match the schema or each other,
    /// unsorted cells in a global-order write, a bad subarray; [`Error::OutOfDomain`] for
    /// coordinates outside the domain; [`Error::DuplicateCoordinates`] for duplicates the
    /// schema forbids; storage errors. The array is unchanged on error.
    pub fn submit(self) -> Result<Option<FragmentName>> {
        let mut write = self.begin_inner()?;
        let columns = std::mem::take(&mut write.pending);
        write.submit(columns)?;
        write.finalize()
    }

    /// Starts a write whose cells come in several submissions ([`FragmentWrite::submit`]),
    /// in global order, and end with [`FragmentWrite::finalize`]; columns set on this query
    /// are the first submission. Needs [`Layout::GlobalOrder`].
    ///
    /// # Errors
    /// As [`Self::submit`].
    pub fn begin(self) -> Result<FragmentWrite<'a>> {
        let mut write = self.begin_inner()?;
        let columns = std::mem::take(&mut write.pending);
        if !columns.is_empty() {
            write.submit(columns)?;
        }
        Ok(write)
    }

    fn begin_inner(self) -> Result<FragmentWrite<'a>> {
        if let Some((name, _)) = self.validity.first() {
            return Err(Error::InvalidWrite(format!("validity for {name:?} without its values")));
        }
        let array = self.array;
        let schema = array.schema();
        let dense = schema.is_dense();
        let layout =
            self.layout.unwrap_or(if dense { Layout::RowMajor } else { Layout::Unordered });
        let timestamp = self.timestamp.unwrap_or_else(|| array.write_timestamp());
        let mode = if dense {
            if !matches!(layout, Layout::RowMajor | Layout::ColMajor | Layout::GlobalOrder) {
                return Err(Error::InvalidWrite(format!(
                    "a dense write takes its cells in row-major, col-major or global order, not {layout:?}"
                )));
            }
            let tiling = DenseTiling::new(schema, self.dense_subarray()?)?;
            if layout == Layout::GlobalOrder && !tiling.tile_aligned(schema) {
                return Err(Error::InvalidWrite(
                    "a global-order dense write needs a subarray that coincides with space-tile bounds"
                        .into(),
                ));
            }
            Mode::Dense { tiling, layout, next_tile: 0, submitted: 0 }
        } else {
            if !self.ranges.is_empty() {
                return Err(Error::InvalidWrite(
                    "a sparse write takes coordinates, not a subarray".into(),
                ));
            }
            match layout {
                Layout::Unordered => Mode::Unordered { done: false },
                Layout::GlobalOrder => Mode::SparseGlobal { last: None },
                other => {
                    return Err(Error::InvalidWrite(format!(
                        "a sparse write takes its cells unordered or in global order, not {other:?}"
                    )));
                }
            }
        };
        Ok(FragmentWrite {
            array,
            fields: stored_fields(schema, false, false),
            mode,
            timestamp,
            name: None,
            ned: None,
            processed_conditions: Vec::new(),
            sink: None,
            buffer: None,
            pending: self.columns,
        })
    }

    /// The subarray of a dense write: one range per dimension (the whole domain where none
    /// is given), inside the domain and current domain.
    fn dense_subarray(&self) -> Result<Vec<[i128; 2]>> {
        let schema = self.array.schema();
        let mut seen = std::collections::HashSet::new();
        for (name, _) in &self.ranges {
            if !seen.insert(name) {
                return Err(Error::InvalidWrite(format!(
                    "dimension {name:?}: a dense write takes one range per dimension"
                )));
            }
        }
        // Dimensions without a range span the current domain, or the domain.
        let mut ranges = self.ranges.clone();
        for (d, dim) in schema.dimensions.iter().enumerate() {
            if ranges.iter().any(|(n, _)| n == &dim.name) {
                continue;
            }
            let [lo, hi] = match (&schema.current_domain, &dim.domain) {
                (Some(cd), _) => cd.ranges[d].clone(),
                (None, Some(dom)) => dom.clone(),
                (None, None) => {
                    return Err(Error::InvalidWrite(format!(
                        "dimension {:?} has no domain",
                        dim.name
                    )));
                }
            };
            ranges.push((dim.name.clone(), RangeSpec::Bytes(lo, hi)));
        }
        let sub = Subarray::build(schema, &[], &ranges)?
            .ok_or_else(|| Error::InvalidWrite("an empty subarray".into()))?;
        let ints = sub.int_ranges(schema)?;
        Ok(ints.into_iter().map(|r| [r[0].0, r[0].1]).collect())
    }
}

/// How the cells of a write arrive.
#[derive(Debug)]
enum Mode {
    /// A dense subarray, in one submission (row- or col-major) or tile by tile (global
    /// order).
    Dense { tiling: DenseTiling, layout: Layout, next_tile: u64, submitted: u128 },
    /// Sparse cells in any order, in one submission.
    Unordered { done: bool },
    /// Sparse cells in global order over several submissions; `last` is the last cell
    /// written (one cell of every field).
    SparseGlobal { last: Option<Vec<FieldCells>> },
}

/// Bytes of tiles filtered at once: enough for every worker, few enough to keep memory
/// bounded.
const BATCH_BYTES: usize = 64 << 20;

fn batch_tiles(bytes_per_tile: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    (BATCH_BYTES / bytes_per_tile.max(1)).clamp(threads, 4096)
}

/// A write in progress: one fragment being filled, committed by [`Self::finalize`]. Dropping
/// it without finalizing removes what it wrote.
#[derive(Debug)]
pub struct FragmentWrite<'a> {
    array: &'a Array,
    fields: Vec<Field>,
    mode: Mode,
    timestamp: u64,
    /// The fragment's name when it is not a new one at `timestamp` (consolidation).
    name: Option<FragmentName>,
    /// The non-empty domain when it is not the written subarray (consolidation).
    ned: Option<Vec<[i128; 2]>>,
    /// Delete markers recorded as processed (consolidation).
    processed_conditions: Vec<String>,
    sink: Option<FragmentSink<'a>>,
    /// Cells submitted but not yet in a tile (global-order writes).
    buffer: Option<Vec<FieldCells>>,
    pending: Vec<Column>,
}

impl<'a> FragmentWrite<'a> {
    /// The fragment's timestamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// A global-order dense write of `region` as fragment `name` whose non-empty domain is
    /// `ned`, as consolidation writes: the cells of `region` (the non-empty domain expanded
    /// to whole tiles, cut to the domain) come tile by tile, and the fragment records
    /// `processed_conditions`.
    pub(crate) fn dense_consolidation(
        array: &'a Array,
        name: FragmentName,
        ned: Vec<[i128; 2]>,
        region: Vec<[i128; 2]>,
        processed_conditions: Vec<String>,
    ) -> Result<Self> {
        let schema = array.schema();
        let tiling = DenseTiling::new(schema, region)?;
        Ok(FragmentWrite {
            array,
            fields: stored_fields(schema, false, false),
            mode: Mode::Dense { tiling, layout: Layout::GlobalOrder, next_tile: 0, submitted: 0 },
            timestamp: name.t2(),
            name: Some(name),
            ned: Some(ned),
            processed_conditions,
            sink: None,
            buffer: None,
            pending: Vec::new(),
        })
    }

    fn sink(&mut self) -> Result<&mut FragmentSink<'a>> {
        if self.sink.is_none() {
            let array = self.array;
            let name = match &self.name {
                Some(n) => n.clone(),
                None => FragmentName::generate(self.timestamp, self.timestamp)
                    .map_err(|e| Error::InvalidWrite(e.to_string()))?,
            };
            self.sink = Some(FragmentSink::create(
                array.storage().as_ref(),
                array.schema(),
                array.schema_file_name(),
                name,
                false,
                false,
            )?);
        }
        Ok(self.sink.as_mut().expect("just created"))
    }

    /// Adds the next cells (every field, in the write's layout).
    ///
    /// # Errors
    /// As [`WriteQuery::submit`]. After an error the write is spoiled: finalizing it fails,
    /// and dropping it removes what it wrote.
    pub fn submit(&mut self, columns: Vec<Column>) -> Result<()> {
        let result = self.submit_inner(columns);
        if result.is_err() {
            // Nothing of a failed write may become visible.
            self.sink = None;
            self.mode = Mode::Unordered { done: true };
            self.buffer = None;
        }
        result
    }

    fn submit_inner(&mut self, columns: Vec<Column>) -> Result<()> {
        let schema = self.array.schema();
        let (mut cells, n) = check_columns(schema, &self.fields, columns)?;
        if self.ned.is_some() {
            // Consolidation pads with fill values (what libtiledb's reads return there).
            for (c, field) in cells.iter_mut().zip(&self.fields) {
                if let tessera_fragment::Field::Attribute(a) = field {
                    let f = crate::read::column::OutField::attr(schema, *a);
                    c.pad = Some((f.fill_cell(), f.fill_valid));
                }
            }
        }
        match &mut self.mode {
            Mode::Unordered { done } => {
                if *done {
                    return Err(Error::InvalidWrite(
                        "an unordered write takes its cells in one submission".into(),
                    ));
                }
                *done = true;
                self.write_unordered(&cells, n)
            }
            Mode::SparseGlobal { .. } => self.write_sparse_global(cells, n),
            Mode::Dense { layout, submitted, tiling, .. } => {
                let sub_cells = tiling.sub_cells();
                if *layout != Layout::GlobalOrder {
                    if *submitted > 0 || n as u128 != sub_cells {
                        return Err(Error::InvalidWrite(format!(
                            "{} cells for a subarray of {sub_cells} cells",
                            n as u128 + *submitted
                        )));
                    }
                    *submitted = n as u128;
                    return self.write_dense_ordered(cells);
                }
                *submitted += n as u128;
                if *submitted > sub_cells {
                    return Err(Error::InvalidWrite(format!(
                        "{submitted} cells for a subarray of {sub_cells} cells"
                    )));
                }
                self.append_buffer(cells);
                self.flush_dense_global()
            }
        }
    }

    fn append_buffer(&mut self, cells: Vec<FieldCells>) {
        match &mut self.buffer {
            None => self.buffer = Some(cells),
            Some(buf) => {
                for (b, c) in buf.iter_mut().zip(cells) {
                    b.append(c);
                }
            }
        }
    }

    fn write_dense_ordered(&mut self, cells: Vec<FieldCells>) -> Result<()> {
        let Mode::Dense { tiling, layout, .. } = &self.mode else { unreachable!() };
        let (tiling, layout) = (tiling.clone(), *layout);
        if let Some(tile) = dense::whole_tile(&tiling, &cells, layout)? {
            // The cells are the one tile, in its cell order: they become it without a copy.
            let tile =
                Tile { fields: cells.into_iter().map(FieldCells::into_tile).collect(), ..tile };
            self.sink()?.write_tiles(vec![tile])?;
            if let Mode::Dense { next_tile, .. } = &mut self.mode {
                *next_tile = 1;
            }
            return Ok(());
        }
        let cells = &cells[..];
        let bytes: usize =
            cells.iter().map(|c| c.cell_size.unwrap_or(16)).sum::<usize>() * tiling.cells_per_tile;
        let per_batch = batch_tiles(bytes) as u64;
        let total = tiling.tile_num();
        let mut k = 0;
        while k < total {
            let end = (k + per_batch).min(total);
            let tiles: Vec<Tile> = (k..end)
                .into_par_iter()
                .map(|t| build_tile(&tiling, t, cells, &tiling.sub, layout, layout))
                .collect::<Result<_>>()?;
            self.sink()?.write_tiles(tiles)?;
            k = end;
        }
        if let Mode::Dense { next_tile, .. } = &mut self.mode {
            *next_tile = total;
        }
        Ok(())
    }

    /// Writes the tiles of a global-order dense write whose cells have all arrived.
    fn flush_dense_global(&mut self) -> Result<()> {
        let Mode::Dense { tiling, next_tile, .. } = &self.mode else { unreachable!() };
        let tiling = tiling.clone();
        let mut k = *next_tile;
        let cell_order = tiling_cell_order(self.array.schema());
        let consolidating = self.ned.is_some();
        let mut tiles = Vec::new();
        let mut flushed = k;
        while let Some(buf) = &mut self.buffer {
            if k >= tiling.tile_num() {
                break;
            }
            let tile = tiling.tile(k);
            let overlap: Vec<[i128; 2]> = tile
                .iter()
                .zip(&tiling.sub)
                .map(|(t, s)| [t[0].max(s[0]), t[1].min(s[1])])
                .collect();
            let need: usize = overlap.iter().map(|r| (r[1] - r[0] + 1) as usize).product();
            if buf.first().map_or(0, FieldCells::len) < need {
                break;
            }
            let runs = tiling.runs(&tile, &overlap, cell_order);
            let cells = tiling.cells_per_tile;
            tiles.push(Tile {
                cell_num: cells as u64,
                fields: buf.iter().map(|f| fill_tile(f, &runs, cells)).collect(),
                // Consolidation writes every cell of its tiles (fill values included).
                slabs: if consolidating { None } else { Some(tiling.slabs(&tile, cell_order)?) },
            });
            for f in buf.iter_mut() {
                f.drain_front(need);
            }
            k += 1;
            if tiles.len() >= rayon::current_num_threads().max(2) * 2 {
                self.sink()?.write_tiles(std::mem::take(&mut tiles))?;
                flushed = k;
            }
        }
        if !tiles.is_empty() {
            self.sink()?.write_tiles(tiles)?;
            flushed = k;
        }
        if let Mode::Dense { next_tile, .. } = &mut self.mode {
            *next_tile = flushed;
        }
        Ok(())
    }

    fn write_unordered(&mut self, cells: &[FieldCells], n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let schema = self.array.schema();
        let dims = dim_cells(schema, cells);
        check_bounds(schema, &dims)?;
        let mut order = CellOrder::new(schema, dims.clone());
        let perm =
            order.sort(!schema.allows_duplicates).map_err(|i| duplicate_error(schema, &dims, i))?;
        drop(order);
        let capacity = schema.capacity.max(1) as usize;
        let bytes: usize =
            cells.iter().map(|c| c.cell_size.unwrap_or(16)).sum::<usize>() * capacity;
        let per_batch = batch_tiles(bytes);
        for batch in perm.chunks(capacity * per_batch) {
            let tiles: Vec<Tile> = batch
                .par_chunks(capacity)
                .map(|idx| Tile {
                    cell_num: idx.len() as u64,
                    fields: cells
                        .iter()
                        .map(|f| {
                            let mut t = f.new_tile(idx.len());
                            f.push_gather(&mut t, idx);
                            t
                        })
                        .collect(),
                    slabs: None,
                })
                .collect();
            self.sink()?.write_tiles(tiles)?;
        }
        Ok(())
    }

    fn write_sparse_global(&mut self, cells: Vec<FieldCells>, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let schema = self.array.schema();
        {
            let dims = dim_cells(schema, &cells);
            check_bounds(schema, &dims)?;
            let order = CellOrder::new(schema, dims.clone()).with_keys();
            if let Some(k) = order.first_unsorted(n) {
                return Err(unsorted_error(schema, &dims, k));
            }
            if !schema.allows_duplicates {
                let seq: Vec<usize> = (0..n).collect();
                if let Some(k) = order.first_duplicate(&seq) {
                    return Err(duplicate_error(schema, &dims, k));
                }
            }
            if let Mode::SparseGlobal { last: Some(last) } = &self.mode {
                let prev = dim_cells(schema, last);
                if cmp_across(schema, &prev, 0, &dims) == std::cmp::Ordering::Greater {
                    return Err(Error::InvalidWrite(format!(
                        "Write failed; Coordinates {} come before last written coordinate",
                        sparse::show_first(schema, &dims)
                    )));
                }
            }
        }
        // Remember the last cell for the next submission's check.
        let last: Vec<FieldCells> = cells.iter().map(|f| f.single(n - 1)).collect();
        self.mode = Mode::SparseGlobal { last: Some(last) };
        self.append_buffer(cells);
        self.flush_sparse_global(false)
    }

    /// Writes the full tiles of the buffer (and the partial last one when `all`).
    fn flush_sparse_global(&mut self, all: bool) -> Result<()> {
        let capacity = self.array.schema().capacity.max(1) as usize;
        let Some(buf) = &mut self.buffer else { return Ok(()) };
        let n = buf.first().map_or(0, FieldCells::len);
        let whole = if all { n.div_ceil(capacity) } else { n / capacity };
        if whole == 0 {
            return Ok(());
        }
        let take = (whole * capacity).min(n);
        let tiles: Vec<Tile> = (0..whole)
            .into_par_iter()
            .map(|t| {
                let (s, e) = (t * capacity, ((t + 1) * capacity).min(take));
                Tile {
                    cell_num: (e - s) as u64,
                    fields: buf
                        .iter()
                        .map(|f| {
                            let mut tile = f.new_tile(e - s);
                            f.push_run(&mut tile, s, e);
                            tile
                        })
                        .collect(),
                    slabs: None,
                }
            })
            .collect();
        for f in buf.iter_mut() {
            f.drain_front(take);
        }
        self.sink()?.write_tiles(tiles)
    }

    /// Flushes the last tiles, writes the fragment metadata and commits the fragment.
    /// Returns the fragment's name, or `None` when no cell was written (no fragment).
    ///
    /// # Errors
    /// As [`WriteQuery::submit`]; a global-order dense write that did not receive every
    /// cell of its subarray.
    pub fn finalize(mut self) -> Result<Option<FragmentName>> {
        let schema = self.array.schema();
        let (ned, var_copy) = match &self.mode {
            Mode::Dense { tiling, submitted, layout, .. } => {
                if *submitted == 0 {
                    return Ok(None);
                }
                if *submitted != tiling.sub_cells() {
                    return Err(Error::InvalidWrite(format!(
                        "{submitted} cells written for a subarray of {} cells",
                        tiling.sub_cells()
                    )));
                }
                let dims = tessera_fragment::dim_types(schema);
                let ned = Mbr(self
                    .ned
                    .as_ref()
                    .unwrap_or(&tiling.sub)
                    .iter()
                    .zip(&schema.dimensions)
                    .map(|(r, d)| {
                        let (mut lo, mut hi) = (Vec::new(), Vec::new());
                        push_int(d.datatype, r[0], &mut lo);
                        push_int(d.datatype, r[1], &mut hi);
                        tessera_rtree::Range::new(lo, hi)
                    })
                    .collect());
                let _ = dims;
                // libtiledb's ordered writer copies var min/max values into slot 0 when a
                // write has more attributes than tiles.
                let copy = if *layout != Layout::GlobalOrder
                    && schema.attributes.len() as u64 > tiling.tile_num()
                {
                    VarMinMaxCopy::SlotZero
                } else {
                    VarMinMaxCopy::PerTile
                };
                (Some(ned), copy)
            }
            Mode::SparseGlobal { .. } => {
                self.flush_sparse_global(true)?;
                (None, VarMinMaxCopy::PerTile)
            }
            Mode::Unordered { .. } => (None, VarMinMaxCopy::PerTile),
        };
        match self.sink.take() {
            Some(sink) => {
                let processed = std::mem::take(&mut self.processed_conditions);
                Ok(Some(sink.commit(ned, var_copy, processed)?))
            }
            None => Ok(None),
        }
    }
}

fn tiling_cell_order(schema: &tessera_schema::ArraySchema) -> Layout {
    if schema.cell_order == Layout::ColMajor { Layout::ColMajor } else { Layout::RowMajor }
}

/// The dimension buffers among the stored fields of a sparse write, in schema order.
/// The order in which an unordered sparse write stores cells: the permutation of
/// `dimensions`' cells (one column per dimension, any order of columns) that sorts them into
/// the array's global order (tile order then cell order, or Hilbert order). Lets a caller
/// prepare a global-order write, or measure the sort, without writing anything.
///
/// # Errors
/// [`Error::InvalidWrite`] for a dense array, a missing dimension, columns of the wrong type
/// or length, coordinates outside the domain, or two cells with the same coordinates when
/// the schema forbids duplicates.
pub fn global_order(
    schema: &tessera_schema::ArraySchema,
    dimensions: Vec<Column>,
) -> Result<Vec<usize>> {
    if schema.is_dense() {
        return Err(Error::InvalidWrite(
            "a dense array's cells are ordered by their subarray, not by coordinates".into(),
        ));
    }
    let fields: Vec<Field> = (0..schema.dimensions.len()).map(Field::Dimension).collect();
    let (cells, _) = check_columns(schema, &fields, dimensions)?;
    let dims: Vec<&FieldCells> = cells.iter().collect();
    check_bounds(schema, &dims)?;
    CellOrder::new(schema, dims.clone())
        .sort(!schema.allows_duplicates)
        .map_err(|i| duplicate_error(schema, &dims, i))
}

fn dim_cells<'c>(
    schema: &tessera_schema::ArraySchema,
    cells: &'c [FieldCells],
) -> Vec<&'c FieldCells> {
    let a = schema.attributes.len();
    cells[a..a + schema.dimensions.len()].iter().collect()
}
