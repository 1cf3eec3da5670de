//! Reads: [`Array::read`](crate::Array::read) starts a [`ReadQuery`]; ranges, fields, layout and
//! a memory budget are set on it; [`ReadQuery::execute`] returns every cell at once and
//! [`ReadQuery::batches`] returns them in bounded batches.
//!
//! Reads follow libtiledb 2.30:
//! * the default subarray is the non-empty domain of the visible fragments (their bounding
//!   box); with no visible fragment a read without ranges returns no cells, and a dense read
//!   with ranges returns fill values;
//! * dense reads return every cell of the subarray, from the newest fragment holding it or
//!   the fill value; multi-range results are the cross product of each dimension's ranges in
//!   the order given (cells repeat where ranges overlap), in row- or col-major order only;
//! * sparse reads return each cell once, in any layout (ranges are sorted and merged per
//!   dimension, global order included); the newest version of a cell wins unless the array
//!   allows duplicates; visible delete (and update) commits remove the cells their
//!   conditions match, by libtiledb's rules (per-cell timestamps, conditions a
//!   consolidation already applied);
//! * a query condition ([`ReadQuery::condition`], [`ReadQuery::where_text`]) keeps the
//!   sparse cells it holds for, judged after deduplication (a newest version failing it
//!   hides older ones, as in libtiledb); on dense arrays the cells failing it come back with
//!   the fill value (and fill validity) of every attribute, coordinates unchanged;
//! * [`ReadQuery::points`] reads the cells at a list of coordinates instead of a subarray,
//!   in the order asked (see [`Points`]);
//! * [`ReadQuery::aggregate`] computes aggregates over the cells a read selects (see
//!   [`crate::aggregate`]), from tile metadata where whole tiles qualify;
//! * layouts: row-major, col-major, global order (the array's tile then cell order, Hilbert
//!   included); unordered lets Tessera pick the fastest order. The default is row-major for
//!   dense arrays and global order for sparse ones.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::Array;
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_storage::MemoryStorage;
//! use tessera_types::{ArrayType, Datatype};
//!
//! let storage = Arc::new(MemoryStorage::new());
//! let schema = ArraySchema::builder(ArrayType::Dense)
//!     .dimension(Dimension::new("x", Datatype::Int32).domain_i64(1, 10).tile_i64(5))
//!     .attribute(Attribute::new("a", Datatype::Int32))
//!     .build()?;
//! Array::create(storage.clone(), &schema, &[])?;
//! let array = Array::open(storage)?;
//! // Nothing written: a read with a range returns the fill value.
//! let result = array.read().range_i64("x", 2, 4).execute()?;
//! assert_eq!(result.cell_num(), 3);
//! assert_eq!(&result.values::<i32>("a")?[..], &[i32::MIN; 3]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod column;
mod dense;
mod meter;
pub(crate) mod order;
mod points;
pub(crate) mod pool;
pub(crate) mod sparse;
pub(crate) mod stats;
pub(crate) mod subarray;
pub(crate) mod tiles;

use std::sync::Arc;

use tessera_types::{Layout, Primitive};

use crate::aggregate::{Aggregate, AggregateValue, Plan};
use crate::array::Array;
use crate::condition::{DeleteCondition, QueryCondition};
use crate::result::{CellValue, ReadResult};
use crate::{Error, Result};
pub(crate) use column::Source;
use column::{OutField, empty_result};
use dense::DenseReader;
use meter::TileMeter;
pub use points::Points;
use sparse::{SparseFilter, SparseReader};
pub use subarray::DimRange;
pub(crate) use subarray::RangeSpec;
use subarray::Subarray;

impl Array {
    /// Starts a read of this array (as opened: its schema, fragments and time range).
    pub fn read(&self) -> ReadQuery<'_> {
        ReadQuery {
            array: self,
            ranges: Vec::new(),
            attributes: None,
            dimensions: DimSelection::All,
            layout: None,
            budget: None,
            condition: None,
            points: None,
        }
    }
}

/// The query condition of a read, as given.
#[derive(Debug, Clone)]
enum Cond {
    /// Text to parse against the array's schema.
    Text(String),
    /// A parsed condition.
    Parsed(QueryCondition),
}

/// Which dimensions a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DimSelection {
    All,
    None,
    Some(Vec<String>),
}

/// A read being set up: the subarray, the fields, the layout and the memory budget.
///
/// Range and field errors are reported by [`Self::execute`] and [`Self::batches`].
#[derive(Debug, Clone)]
#[must_use = "a read does nothing until executed"]
pub struct ReadQuery<'a> {
    array: &'a Array,
    ranges: Vec<(String, RangeSpec)>,
    attributes: Option<Vec<String>>,
    dimensions: DimSelection,
    layout: Option<Layout>,
    budget: Option<u64>,
    condition: Option<Cond>,
    points: Option<Points>,
}

impl<'a> ReadQuery<'a> {
    fn push(mut self, dim: &str, spec: RangeSpec) -> Self {
        self.ranges.push((dim.to_owned(), spec));
        self
    }

    /// Adds a range on dimension `dim`, inclusive at both ends: `1..=5` on integer, datetime,
    /// time or float dimensions (bounds checked to fit the dimension's type), `1.5..=2.0` on
    /// float ones, `"a"..="m"` on string ones (see [`DimRange`]). Several ranges on one
    /// dimension make a multi-range subarray.
    ///
    /// ```
    /// # use tessera_query::{Array, ReadQuery};
    /// # fn f(array: &Array) -> tessera_query::Result<()> {
    /// let cells = array.read().range("rows", 1..=2).range("key", "a"..="m").execute()?;
    /// # Ok(()) }
    /// ```
    pub fn range(self, dim: &str, range: impl Into<DimRange>) -> Self {
        self.push(dim, range.into().0)
    }

    /// Adds the range `[low, high]` (inclusive) on dimension `dim` in exactly the Rust number
    /// type of the dimension's datatype (`i64` for datetime and time dimensions): a bound of
    /// another type is an error when the query runs.
    pub fn range_typed<T: Primitive>(self, dim: &str, low: T, high: T) -> Self {
        let (mut lo, mut hi) = (Vec::with_capacity(T::SIZE), Vec::with_capacity(T::SIZE));
        low.write_le(&mut lo);
        high.write_le(&mut hi);
        self.push(dim, RangeSpec::Typed(T::DATATYPE, lo, hi))
    }

    /// Adds the range `[low, high]` on an integer, datetime or time dimension (or a float
    /// one); the bounds must fit the dimension's type.
    pub fn range_i64(self, dim: &str, low: i64, high: i64) -> Self {
        self.push(dim, RangeSpec::I64(low, high))
    }

    /// Adds the range `[low, high]` on an unsigned (or any integer) dimension; the bounds
    /// must fit the dimension's type.
    pub fn range_u64(self, dim: &str, low: u64, high: u64) -> Self {
        self.push(dim, RangeSpec::U64(low, high))
    }

    /// Adds the range `[low, high]` on a float dimension.
    pub fn range_f64(self, dim: &str, low: f64, high: f64) -> Self {
        self.push(dim, RangeSpec::F64(low, high))
    }

    /// Adds the range `[low, high]` on a string dimension (bytewise order).
    pub fn range_str(self, dim: &str, low: impl AsRef<[u8]>, high: impl AsRef<[u8]>) -> Self {
        self.push(dim, RangeSpec::Str(low.as_ref().to_vec(), high.as_ref().to_vec()))
    }

    /// Adds the range `[low, high]` given as the little-endian bytes of the dimension's type
    /// (the whole strings for a string dimension).
    pub fn range_bytes(self, dim: &str, low: impl Into<Vec<u8>>, high: impl Into<Vec<u8>>) -> Self {
        self.push(dim, RangeSpec::Bytes(low.into(), high.into()))
    }

    /// Reads the cells at `points` instead of a subarray (no ranges may be set): the result
    /// holds them in the order of the points, a point asked twice twice. On a sparse array a
    /// point without a cell gives nothing and one with several (duplicates allowed) gives
    /// them all, in the array's order; on a dense array every point gives its cell, or the
    /// fill value. The fields, condition, time range and deletes apply as in other reads;
    /// the layout is ignored, and the memory budget bounds the reads of the tiles only (the
    /// result comes whole, as one batch of [`Self::batches`]).
    ///
    /// Points outside the domain (or current domain) are an [`Error::InvalidRange`] naming
    /// the dimension, the point and its value; dimensions without coordinates, unknown
    /// names and lists of different lengths an [`Error::InvalidQuery`] /
    /// [`Error::UnknownField`], reported by [`Self::execute`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tessera_query::Array;
    /// use tessera_query::read::Points;
    /// use tessera_schema::{ArraySchema, Attribute, Dimension};
    /// use tessera_storage::MemoryStorage;
    /// use tessera_types::{ArrayType, Datatype};
    ///
    /// let storage = Arc::new(MemoryStorage::new());
    /// let schema = ArraySchema::builder(ArrayType::Sparse)
    ///     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
    ///     .attribute(Attribute::new("v", Datatype::Float64))
    ///     .build()?;
    /// Array::create(storage.clone(), &schema, &[])?;
    /// let array = Array::open(storage.clone())?;
    /// array.write().values("x", &[3i64, 7, 50]).values("v", &[0.3, 0.7, 5.0]).submit()?;
    /// let array = Array::open(storage)?;
    /// // 50, then 3 twice; nothing is stored at 4.
    /// let points = Points::new().coords("x", [50i64, 3, 4, 3]);
    /// let result = array.read().points(points).execute()?;
    /// assert_eq!(&result.values::<i64>("x")?[..], &[50, 3, 3]);
    /// assert_eq!(&result.values::<f64>("v")?[..], &[5.0, 0.3, 0.3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn points(mut self, points: Points) -> Self {
        self.points = Some(points);
        self
    }

    /// The attributes to return, in this order (default: every attribute, in schema order).
    pub fn attributes<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.attributes = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Whether to return every dimension (in schema order, before the attributes); the
    /// default is yes.
    pub fn with_coordinates(mut self, yes: bool) -> Self {
        self.dimensions = if yes { DimSelection::All } else { DimSelection::None };
        self
    }

    /// The dimensions to return, in this order (before the attributes).
    pub fn dimensions<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.dimensions = DimSelection::Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The order of the cells: row-major, col-major, global order or unordered (the default
    /// is row-major for dense arrays and global order for sparse ones). A
    /// [`ReadLayout`](tessera_types::ReadLayout) has no Hilbert order, so a read cannot ask
    /// for one; `ReadLayout::try_from(layout)` converts a [`Layout`].
    pub fn layout(mut self, layout: tessera_types::ReadLayout) -> Self {
        self.layout = Some(layout.into());
        self
    }

    /// Reads in batches holding about `bytes` bytes of results each (values, 8 bytes per
    /// var-sized offset, 1 per validity byte); at least one cell per batch. Sparse reads also
    /// keep the decoded tiles they hold near `bytes` (row- and col-major ones read the cells
    /// in partitions of the order, each tile once per partition it meets), though never
    /// below a few tiles.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.budget = Some(bytes);
        self
    }

    /// Keeps only the cells satisfying `condition` (resolved against this array's schema):
    /// sparse cells failing it are left out; dense cells failing it come back with the fill
    /// value of every attribute read (and the fill validity: null for nullable attributes,
    /// unless the schema says otherwise), as libtiledb does. The fields it reads need not
    /// be among those returned.
    pub fn condition(mut self, condition: QueryCondition) -> Self {
        self.condition = Some(Cond::Parsed(condition));
        self
    }

    /// [`Self::condition`] from the `--where` text of `docs/cli.md` (e.g.
    /// `a > 5 and (b == 'x' or c is null)`), parsed against the array's schema and
    /// enumerations when the read runs; a parse error is reported by [`Self::execute`] /
    /// [`Self::batches`] as [`Error::Condition`].
    pub fn where_text(mut self, text: &str) -> Self {
        self.condition = Some(Cond::Text(text.to_owned()));
        self
    }

    /// The condition, parsed.
    fn parsed_condition(&self) -> Result<Option<QueryCondition>> {
        Ok(match &self.condition {
            None => None,
            Some(Cond::Parsed(c)) => Some(c.clone()),
            Some(Cond::Text(t)) => {
                Some(QueryCondition::parse(t, self.array.schema(), self.array.enumerations())?)
            }
        })
    }

    /// The visible delete and update commits, loaded (sparse arrays; libtiledb refuses
    /// deletes on dense ones).
    fn deletes(&self) -> Result<Vec<DeleteCondition>> {
        let array = self.array;
        if array.schema().is_dense() {
            return Ok(Vec::new());
        }
        array
            .directory()
            .deletes
            .iter()
            .map(|d| {
                DeleteCondition::load(
                    array.storage().as_ref(),
                    d,
                    array.schema(),
                    array.enumerations(),
                )
            })
            .collect()
    }

    /// The columns this read returns.
    fn fields(&self) -> Result<Vec<OutField>> {
        let schema = self.array.schema();
        let mut out = Vec::new();
        match &self.dimensions {
            DimSelection::All => {
                out.extend((0..schema.dimensions.len()).map(|d| OutField::dim(schema, d)));
            }
            DimSelection::None => {}
            DimSelection::Some(names) => {
                for n in names {
                    let d = schema
                        .dimensions
                        .iter()
                        .position(|d| &d.name == n)
                        .ok_or_else(|| Error::UnknownField(n.clone()))?;
                    out.push(OutField::dim(schema, d));
                }
            }
        }
        match &self.attributes {
            None => out.extend((0..schema.attributes.len()).map(|a| OutField::attr(schema, a))),
            Some(names) => {
                for n in names {
                    match schema.attributes.iter().position(|a| &a.name == n) {
                        Some(a) => out.push(OutField::attr(schema, a)),
                        None if schema.dimension(n).is_some() => {
                            return Err(Error::InvalidQuery(format!(
                                "{n:?} is a dimension: select dimensions with dimensions() or with_coordinates()"
                            )));
                        }
                        None => return Err(Error::UnknownField(n.clone())),
                    }
                }
            }
        }
        Ok(out)
    }

    /// Runs the read and returns every cell.
    ///
    /// # Errors
    /// [`Error::UnknownField`] for a name that is neither a dimension nor an attribute;
    /// [`Error::InvalidRange`] for a range of the wrong type, reversed, or outside the
    /// domain; [`Error::InvalidQuery`] for a layout that cannot be used (a dense multi-range
    /// read in global order); [`Error::Condition`] for a condition that does not parse or
    /// fit the schema, or a delete commit libtiledb could not load; storage errors;
    /// [`Error::Tile`] / [`Error::Corrupt`] for corrupt data.
    pub fn execute(self) -> Result<ReadResult> {
        if let Some(points) = &self.points {
            let result = points::read(&self, points);
            pool::release();
            return result;
        }
        let mut batches = self.batches()?;
        let mut result = empty_result(&batches.fields);
        match &mut batches.inner {
            Inner::Empty | Inner::Ready(_) => {}
            Inner::Dense(r) => {
                if r.budget().is_none() {
                    r.presize(&mut result);
                }
                while r.next_batch(&mut result)? {}
            }
            Inner::Sparse(r) => while r.next_batch(&mut result)? {},
        }
        Ok(result)
    }

    /// Reads the attribute `attr` of a dense array into `out`, the caller's memory, which
    /// must hold exactly the bytes of every cell of the subarray (cells times the attribute's
    /// cell size), in row-major (the default) or col-major order. Equals the attribute's
    /// column of [`Self::execute`] (fill values, conditions and multi-range subarrays as
    /// there) without allocating a result: a numpy or Arrow buffer can be filled directly.
    /// The attributes, dimensions and memory budget set on the read are ignored. Returns the
    /// number of cells.
    ///
    /// # Errors
    /// [`Error::InvalidQuery`] on a sparse array, a point read, a global-order or unordered
    /// layout, a var-sized or nullable attribute (its offsets or validity would have nowhere
    /// to go), or an `out` of the wrong length; [`Error::UnknownField`] for an unknown
    /// attribute; as [`Self::execute`] otherwise.
    pub fn read_into(self, attr: &str, out: &mut [u8]) -> Result<u64> {
        let schema = self.array.schema();
        let what =
            |why: String| Error::InvalidQuery(format!("read of {attr:?} into a buffer: {why}"));
        if !schema.is_dense() {
            return Err(what("the array is sparse (its cells have no fixed place)".into()));
        }
        if self.points.is_some() {
            return Err(what("point reads are not supported".into()));
        }
        let layout = match self.layout {
            None | Some(Layout::RowMajor) => Layout::RowMajor,
            Some(Layout::ColMajor) => Layout::ColMajor,
            Some(l) => return Err(what(format!("layout {l:?}: only row- or col-major"))),
        };
        let Some(a) = schema.attributes.iter().position(|x| x.name == attr) else {
            return Err(Error::UnknownField(attr.to_owned()));
        };
        let field = OutField::attr(schema, a);
        let field_size = field.cell_size().max(1);
        if field.is_var() {
            return Err(what("its cells are var-sized".into()));
        }
        if field.nullable {
            return Err(what("it is nullable (its validity would be lost)".into()));
        }
        let condition = self.parsed_condition()?;
        let Some(subarray) = Subarray::build(schema, self.array.fragments(), &self.ranges)? else {
            if out.is_empty() {
                return Ok(0);
            }
            return Err(what(format!("the read has no cells, the buffer {} bytes", out.len())));
        };
        let mut reader =
            DenseReader::new(self.array, &subarray, vec![field], layout, None, condition)?;
        let cells = out.len() / field_size;
        let result = reader.read_into(out);
        pool::release();
        result.map(|()| cells as u64)
    }

    /// [`Self::read_into`] into a slice of values of the attribute's type (`cell_val_num`
    /// values per cell): `T` must be the attribute's type ([`CellValue`]'s rules:
    /// datetimes and times as `i64`).
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the attribute's values do not read as `T`; as
    /// [`Self::read_into`].
    pub fn read_into_values<T: CellValue + bytemuck::Pod>(
        self,
        attr: &str,
        out: &mut [T],
    ) -> Result<u64> {
        let schema = self.array.schema();
        let Some(a) = schema.attributes.iter().find(|x| x.name == attr) else {
            return Err(Error::UnknownField(attr.to_owned()));
        };
        if !crate::result::reads_as(a.datatype, T::DATATYPE) {
            return Err(Error::TypeMismatch {
                column: attr.to_owned(),
                datatype: a.datatype,
                asked: std::any::type_name::<T>().to_owned(),
                reason: format!("its values are {:?}", a.datatype),
            });
        }
        self.read_into(attr, bytemuck::cast_slice_mut(out))
    }

    /// Runs the read in batches: each holds at most about the memory budget (at least one
    /// cell), in the requested order; concatenated, they equal [`Self::execute`]'s result.
    /// Without a budget the batches are large.
    ///
    /// # Errors
    /// As [`Self::execute`], for what can be checked before reading; errors while reading
    /// come as items of the iterator (after an error, it ends).
    pub fn batches(self) -> Result<Batches<'a>> {
        let fields = self.fields()?;
        if let Some(points) = &self.points {
            let result = points::read(&self, points)?;
            return Ok(Batches { fields, inner: Inner::Ready(Some(result)), meter: None });
        }
        let condition = self.parsed_condition()?;
        let array = self.array;
        let schema = array.schema();
        let dense = schema.is_dense();
        let layout = match self.layout {
            None if dense => Layout::RowMajor,
            None => Layout::GlobalOrder,
            Some(Layout::Hilbert) => {
                return Err(Error::InvalidQuery(
                    "hilbert is a cell order, not a read layout (use global order)".into(),
                ));
            }
            Some(l) => l,
        };
        let Some(subarray) = Subarray::build(schema, array.fragments(), &self.ranges)? else {
            return Ok(Batches { fields, inner: Inner::Empty, meter: None });
        };
        if let Some(b) = self.budget {
            pool::limit(b / BUDGET_POOL_SHARE);
        }
        let out = fields.clone();
        let inner = if dense {
            let layout = match layout {
                // Any order is fine: tile by tile is fastest, when possible.
                Layout::Unordered if subarray.is_multi_range() => Layout::RowMajor,
                Layout::Unordered => Layout::GlobalOrder,
                l => l,
            };
            Inner::Dense(Box::new(DenseReader::new(
                array,
                &subarray,
                fields,
                layout,
                self.budget,
                condition,
            )?))
        } else {
            let filter = SparseFilter { condition, deletes: self.deletes()?, points: None };
            Inner::Sparse(Box::new(SparseReader::new(
                array,
                &subarray,
                fields,
                layout,
                self.budget,
                filter,
            )?))
        };
        let meter = match &inner {
            Inner::Sparse(r) => Some(r.meter()),
            _ => None,
        };
        Ok(Batches { fields: out, inner, meter })
    }

    /// Computes `aggs` (of attributes or dimensions) over the cells this read selects (its
    /// subarray, time range, condition and, on sparse arrays, deletes); the attributes and
    /// layout set on the read do not matter. Values come in the order of `aggs`; see
    /// [`crate::aggregate`] for the semantics. Whole tiles inside the subarray that no
    /// delete or other fragment affects are answered from their metadata (sums, mins, maxs,
    /// null counts) where it is exact, without decoding them: under a condition, those
    /// whose metadata shows that every cell satisfies it (and those it shows no cell can
    /// satisfy add nothing).
    ///
    /// # Errors
    /// As [`Self::execute`]; [`Error::InvalidQuery`] for an aggregate libtiledb refuses
    /// (see [`Aggregate`]), [`Error::UnknownField`] for an unknown field.
    pub fn aggregate(self, aggs: &[Aggregate]) -> Result<Vec<AggregateValue>> {
        self.aggregate_with(aggs, true)
    }

    /// [`Self::aggregate`], using tile metadata only when `use_metadata` (for tests
    /// comparing both ways).
    #[doc(hidden)]
    pub fn aggregate_with(
        self,
        aggs: &[Aggregate],
        use_metadata: bool,
    ) -> Result<Vec<AggregateValue>> {
        if self.points.is_some() {
            return Err(Error::InvalidQuery(
                "aggregates of a read of points are not supported (read the points and \
                 aggregate their values)"
                    .into(),
            ));
        }
        let array = self.array;
        let schema = array.schema();
        let plan = Plan::new(schema, aggs)?;
        let condition = self.parsed_condition()?;
        let Some(subarray) = Subarray::build(schema, array.fragments(), &self.ranges)? else {
            return Ok(plan.finish(&crate::aggregate::Partial::new(&plan)));
        };
        let out: Vec<OutField> = plan
            .fields
            .iter()
            .map(|f| match f.source {
                Source::Dim(d) => OutField::dim(schema, d),
                Source::Attr(a) => OutField::attr(schema, a),
            })
            .collect();
        let budget = Some(self.budget.unwrap_or(AGGREGATE_BUDGET));
        let total = if schema.is_dense() {
            let layout =
                if subarray.is_multi_range() { Layout::RowMajor } else { Layout::GlobalOrder };
            let mut r = DenseReader::new(array, &subarray, out, layout, budget, condition)?;
            let total = r.aggregate(&plan, use_metadata);
            pool::release();
            total?
        } else {
            let filter = SparseFilter { condition, deletes: self.deletes()?, points: None };
            let mut r =
                SparseReader::new(array, &subarray, out, Layout::Unordered, budget, filter)?;
            let total = r.aggregate(&plan, use_metadata);
            pool::release();
            total?
        };
        Ok(plan.finish(&total))
    }
}

/// Under a memory budget, the buffers the tile pool keeps for reuse (see [`pool`]) take at
/// most the budget over this, until the read ends.
pub(crate) const BUDGET_POOL_SHARE: u64 = 8;

/// The memory budget of an aggregate's tile windows when the read sets none.
const AGGREGATE_BUDGET: u64 = 256 << 20;

/// The batches of a read (see [`ReadQuery::batches`]).
#[derive(Debug)]
pub struct Batches<'a> {
    fields: Vec<OutField>,
    inner: Inner<'a>,
    /// The decoded tile bytes a sparse read holds.
    meter: Option<Arc<TileMeter>>,
}

impl Drop for Batches<'_> {
    /// The read is over: the buffers it pooled for reuse go back to the allocator.
    fn drop(&mut self) {
        pool::release();
    }
}

impl Batches<'_> {
    /// The most bytes of decoded tiles (values, offsets, validity, and the read's per-cell
    /// bookkeeping) a sparse read has held at once so far, `None` for dense reads: what a
    /// memory budget bounds besides each batch (for tests and benchmarks).
    #[doc(hidden)]
    pub fn peak_tile_bytes(&self) -> Option<u64> {
        self.meter.as_ref().map(|m| m.peak())
    }
}

#[derive(Debug)]
enum Inner<'a> {
    Empty,
    /// A result computed at once (a point read).
    Ready(Option<ReadResult>),
    Dense(Box<DenseReader<'a>>),
    Sparse(Box<SparseReader<'a>>),
}

impl Iterator for Batches<'_> {
    type Item = Result<ReadResult>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut batch = empty_result(&self.fields);
        let next = match &mut self.inner {
            Inner::Empty => return None,
            Inner::Ready(result) => {
                let result = result.take();
                self.inner = Inner::Empty;
                return result.map(Ok);
            }
            Inner::Dense(r) => r.next_batch(&mut batch),
            Inner::Sparse(r) => r.next_batch(&mut batch),
        };
        match next {
            Ok(true) => Some(Ok(batch)),
            Ok(false) => {
                self.inner = Inner::Empty;
                None
            }
            Err(e) => {
                self.inner = Inner::Empty;
                Some(Err(e))
            }
        }
    }
}
