//! Aggregates over the cells a read selects: `count`, `sum(f)`, `min(f)`, `max(f)`,
//! `mean(f)` and `null_count(f)`, of attributes and dimensions, with libtiledb 2.30's
//! semantics (`tiledb/sm/query/readers/aggregators/*`):
//!
//! * the cells are those a read of the same subarray, time range and condition returns,
//!   deletes applied: on a sparse array the cells that match; on a dense array every cell of
//!   the subarray (cells no fragment wrote hold the fill value; multi-range subarrays repeat
//!   cells where ranges overlap, as dense reads do), except that a cell failing the condition
//!   is left out (libtiledb's dense reads return it as the fill value; an aggregate of the
//!   matching cells leaves it out, which is also what libtiledb's dense sum, min, max and
//!   mean do);
//! * `sum` adds in `i64` for signed integers, `char`, datetimes and times, in `u64` for
//!   unsigned integers and `bool`, in `f64` for floats; on overflow the sum stops and is
//!   reported as the type's maximum, or its lowest value when the overflowing addition was
//!   negative (null for a nullable attribute), as libtiledb does;
//! * `mean` is the sum divided by the number of non-null cells, as `f64` (`f64::MAX` after an
//!   overflow, null for a nullable attribute);
//! * `min`/`max` keep the attribute's type (numbers with one value per cell; `char` and
//!   `string_ascii` values compare bytewise);
//! * null cells are skipped; `null_count` needs a nullable attribute; an aggregate without a
//!   value (no cells, or only nulls) is null — except a sum over a field that is not
//!   nullable, which is 0, as in libtiledb;
//! * a dimension aggregates like an attribute of its type that is never null (so
//!   `null_count` refuses it, as libtiledb does): the coordinates of the selected cells, which
//!   on a dense array are every cell of the subarray (computed, dense fragments store no
//!   coordinates); its sums add in the sum type of its datatype (`i64`, `u64` or `f64`), its
//!   min and max keep its type (`string_ascii` dimensions compare bytewise). libtiledb 2.30
//!   agrees wherever its dense aggregates agree with its own reads: over dense cells that no
//!   fragment's non-empty domain holds, its sums, mins, maxs and means of dimensions (and
//!   attributes) skip those cells while its count includes them; Tessera, as for attributes,
//!   aggregates every cell the read returns.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_query::Array;
//! use tessera_query::aggregate::{Aggregate, AggregateValue};
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
//! // Nothing written: three fill values (i32::MIN).
//! let aggs = [Aggregate::count(), "min(a)".parse()?];
//! let values = array.read().range_i64("x", 2, 4).aggregate(&aggs)?;
//! assert_eq!(values[0], AggregateValue::UInt(3));
//! assert_eq!(values[1].as_f64(), Some(f64::from(i32::MIN)));
//! assert_eq!(values[1].to_string(), i32::MIN.to_string());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value as Json;
use tessera_schema::ArraySchema;
use tessera_schema::json::cell_json;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype, Primitive};

use crate::condition::ColumnView;
use crate::read::Source;
use crate::read::stats::{ExactStats, Want};
use crate::{Error, Result};

mod scan;
mod sum;

pub(crate) use scan::count_true;
use scan::*;
use sum::*;

/// An aggregate operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggregateOp {
    /// The number of cells.
    Count,
    /// The number of null cells of a nullable attribute.
    NullCount,
    /// The sum of the non-null values.
    Sum,
    /// The smallest non-null value.
    Min,
    /// The largest non-null value.
    Max,
    /// The mean of the non-null values.
    Mean,
}

impl AggregateOp {
    /// The operation's name as written in an aggregate (`count`, `null_count`, `sum`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AggregateOp::Count => "count",
            AggregateOp::NullCount => "null_count",
            AggregateOp::Sum => "sum",
            AggregateOp::Min => "min",
            AggregateOp::Max => "max",
            AggregateOp::Mean => "mean",
        }
    }
}

/// One aggregate: an operation and the field (attribute or dimension) it applies to (none
/// for `count`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Aggregate {
    /// The operation.
    pub op: AggregateOp,
    /// The attribute or dimension (`None` for [`AggregateOp::Count`]).
    pub field: Option<String>,
}

impl Aggregate {
    /// `count`.
    pub fn count() -> Self {
        Aggregate { op: AggregateOp::Count, field: None }
    }

    /// `op(field)`.
    pub fn of(op: AggregateOp, field: impl Into<String>) -> Self {
        Aggregate { op, field: Some(field.into()) }
    }

    /// `sum(field)`.
    pub fn sum(field: impl Into<String>) -> Self {
        Self::of(AggregateOp::Sum, field)
    }

    /// `min(field)`.
    pub fn min(field: impl Into<String>) -> Self {
        Self::of(AggregateOp::Min, field)
    }

    /// `max(field)`.
    pub fn max(field: impl Into<String>) -> Self {
        Self::of(AggregateOp::Max, field)
    }

    /// `mean(field)`.
    pub fn mean(field: impl Into<String>) -> Self {
        Self::of(AggregateOp::Mean, field)
    }

    /// `null_count(field)` (of a nullable attribute).
    pub fn null_count(field: impl Into<String>) -> Self {
        Self::of(AggregateOp::NullCount, field)
    }

    /// Parses an aggregate as [`FromStr`](std::str::FromStr) does (`text.parse()`).
    ///
    /// # Errors
    /// As `from_str`.
    pub fn parse(text: &str) -> Result<Self> {
        text.parse()
    }
}

impl std::str::FromStr for Aggregate {
    type Err = Error;

    /// Parses `count` (or `count()`), `sum(f)`, `min(f)`, `max(f)`, `mean(f)` or
    /// `null_count(f)`, the forms of `tessera aggregate --agg` (spaces around the parts
    /// allowed; the field name, of an attribute or a dimension, is taken as written between
    /// the parentheses); the inverse of [`Display`](fmt::Display).
    ///
    /// # Errors
    /// [`Error::InvalidQuery`] for an unknown operation, a missing or unexpected field, or
    /// unbalanced parentheses.
    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: &str| Error::InvalidQuery(format!("aggregate {text:?}: {why}"));
        let t = text.trim();
        let (name, arg) = match t.find('(') {
            Some(i) => {
                let rest = t[i + 1..].trim_end();
                let inner = rest.strip_suffix(')').ok_or_else(|| bad("expected a closing ')'"))?;
                (t[..i].trim(), Some(inner.trim()))
            }
            None => (t, None),
        };
        let op = match name.to_ascii_lowercase().as_str() {
            "count" => AggregateOp::Count,
            "null_count" => AggregateOp::NullCount,
            "sum" => AggregateOp::Sum,
            "min" => AggregateOp::Min,
            "max" => AggregateOp::Max,
            "mean" => AggregateOp::Mean,
            _ => {
                return Err(bad("expected count, sum(ATTR), min(ATTR), max(ATTR), mean(ATTR) or \
                     null_count(ATTR)"));
            }
        };
        match (op, arg) {
            (AggregateOp::Count, None | Some("")) => Ok(Aggregate::count()),
            (AggregateOp::Count, Some(_)) => Err(bad("count takes no attribute")),
            (_, None | Some("")) => Err(bad("an attribute is needed between parentheses")),
            (op, Some(a)) => Ok(Aggregate::of(op, a)),
        }
    }
}

impl fmt::Display for Aggregate {
    /// `count`, or `op(field)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            None => f.write_str(self.op.name()),
            Some(a) => write!(f, "{}({a})", self.op.name()),
        }
    }
}

/// The value of an aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateValue {
    /// No value: no cells (or only nulls), or a nullable attribute's sum that overflowed.
    Null,
    /// A count, or the sum of an unsigned attribute.
    UInt(u64),
    /// The sum of a signed attribute.
    Int(i64),
    /// A mean, or the sum of a float attribute.
    Float(f64),
    /// A minimum or maximum, in the attribute's type.
    Value {
        /// The attribute's datatype.
        datatype: Datatype,
        /// Its values per cell ([`CELL_VAL_NUM_VAR`] for var-sized strings).
        cell_val_num: u32,
        /// The value's bytes.
        bytes: Vec<u8>,
    },
}

impl AggregateValue {
    /// The value as a number: counts, sums and means, and minimums and maximums of number,
    /// datetime and time fields (one value per cell); `None` for null and for text or
    /// multi-value minimums and maximums.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AggregateValue::Null => None,
            AggregateValue::UInt(v) => Some(*v as f64),
            AggregateValue::Int(v) => Some(*v as f64),
            AggregateValue::Float(v) => Some(*v),
            AggregateValue::Value { datatype, cell_val_num, bytes } => {
                if *cell_val_num != 1 || bytes.len() != datatype.size() {
                    return None;
                }
                Some(match Num::of(*datatype)? {
                    Num::I8 => f64::from(i8::read_le(bytes)),
                    Num::U8 => f64::from(u8::read_le(bytes)),
                    Num::I16 => f64::from(i16::read_le(bytes)),
                    Num::U16 => f64::from(u16::read_le(bytes)),
                    Num::I32 => f64::from(i32::read_le(bytes)),
                    Num::U32 => f64::from(u32::read_le(bytes)),
                    Num::I64 => i64::read_le(bytes) as f64,
                    Num::U64 => u64::read_le(bytes) as f64,
                    Num::F32 => f64::from(f32::read_le(bytes)),
                    Num::F64 => f64::read_le(bytes),
                })
            }
        }
    }

    /// The value as the JSON of `tessera aggregate --json`: integers, floats (as in cells
    /// JSONL: `"NaN"`, `"Infinity"` as strings), minimums and maximums as cells JSONL prints
    /// the attribute's values, null.
    pub fn to_json(&self) -> Json {
        match self {
            AggregateValue::Null => Json::Null,
            AggregateValue::UInt(v) => Json::from(*v),
            AggregateValue::Int(v) => Json::from(*v),
            AggregateValue::Float(v) => cell_json(Datatype::Float64, 1, &v.to_le_bytes()),
            AggregateValue::Value { datatype, cell_val_num, bytes } => {
                cell_json(*datatype, *cell_val_num, bytes)
            }
        }
    }
}

impl fmt::Display for AggregateValue {
    /// The value as `tessera aggregate` prints it: the JSON text of [`Self::to_json`]
    /// (`null`, `4`, `2.5`, `"NaN"`, `"abc"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// One field (attribute or dimension) aggregates read, resolved against the schema.
#[derive(Debug, Clone)]
pub(crate) struct AggField {
    /// The field's name.
    pub(crate) name: String,
    /// The attribute or dimension, by index in the array schema.
    pub(crate) source: Source,
    /// Its datatype.
    pub(crate) datatype: Datatype,
    /// Its values per cell.
    pub(crate) cell_val_num: u32,
    /// Whether it is nullable.
    pub(crate) nullable: bool,
    /// The statistics the aggregates need.
    pub(crate) want: Want,
    /// Numeric interpretation (sums; numeric min/max unless `string`).
    num: Option<Num>,
    /// Min/max compare bytewise strings.
    string: bool,
    /// Fill value and validity of cells no fragment wrote (attributes).
    pub(crate) fill: Vec<u8>,
    pub(crate) fill_valid: bool,
}

impl AggField {
    /// Whether the field is a dimension.
    pub(crate) fn is_dim(&self) -> bool {
        matches!(self.source, Source::Dim(_))
    }

    /// The bytes per cell of a fixed-size field (0 for var-sized).
    fn cell_size(&self) -> usize {
        if self.cell_val_num == CELL_VAL_NUM_VAR {
            0
        } else {
            self.datatype.size() * self.cell_val_num as usize
        }
    }
}

/// The aggregates of a read, resolved: the fields to read and what each aggregate takes.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The fields read.
    pub(crate) fields: Vec<AggField>,
    /// Each aggregate, with the index of its field in `fields`.
    aggs: Vec<(AggregateOp, Option<usize>)>,
}

impl Plan {
    /// Resolves `aggs` against `schema`, checking each as libtiledb does.
    ///
    /// # Errors
    /// [`Error::UnknownField`] for a name that is neither a dimension nor an attribute;
    /// [`Error::InvalidQuery`] for an aggregate libtiledb refuses: a sum or mean of a
    /// non-numeric or multi-value field, a min or max of a field that is neither numeric
    /// with one value per cell nor an ASCII/`char` string, a null count of a field that is
    /// not nullable (every dimension).
    pub(crate) fn new(schema: &ArraySchema, aggs: &[Aggregate]) -> Result<Plan> {
        let mut fields: Vec<AggField> = Vec::new();
        let mut out = Vec::with_capacity(aggs.len());
        for agg in aggs {
            let Some(name) = &agg.field else {
                if agg.op != AggregateOp::Count {
                    return Err(Error::InvalidQuery(format!(
                        "{} needs an attribute",
                        agg.op.name()
                    )));
                }
                out.push((AggregateOp::Count, None));
                continue;
            };
            if agg.op == AggregateOp::Count {
                return Err(Error::InvalidQuery("count takes no attribute".into()));
            }
            let bad = |why: String| Error::InvalidQuery(format!("{agg}: {why}"));
            let field = resolve(schema, name)?;
            let kind = if field.is_dim() { "dimension" } else { "attribute" };
            let mut want = Want::default();
            match agg.op {
                AggregateOp::Count => {}
                AggregateOp::NullCount => {
                    if !field.nullable {
                        return Err(bad(format!(
                            "{kind} {name:?} is not nullable (null counts need a nullable \
                             attribute)"
                        )));
                    }
                    want.null_counts = true;
                }
                AggregateOp::Sum | AggregateOp::Mean => {
                    if field.num.is_none() {
                        return Err(bad(format!(
                            "{kind} {name:?} holds {}; sums and means need a numeric field \
                             with one value per cell",
                            describe(field.datatype, field.cell_val_num)
                        )));
                    }
                    want.sums = true;
                    want.null_counts = true;
                }
                AggregateOp::Min | AggregateOp::Max => {
                    if field.num.is_none() && !field.string {
                        return Err(bad(format!(
                            "{kind} {name:?} holds {}; min and max need a numeric field with \
                             one value per cell or an ASCII string",
                            describe(field.datatype, field.cell_val_num)
                        )));
                    }
                    want.min_max = true;
                    want.null_counts = true;
                }
            }
            let i = match fields.iter().position(|f| f.source == field.source) {
                Some(i) => i,
                None => {
                    fields.push(field);
                    fields.len() - 1
                }
            };
            let w = &mut fields[i].want;
            w.min_max |= want.min_max;
            w.sums |= want.sums;
            w.null_counts |= want.null_counts;
            out.push((agg.op, Some(i)));
        }
        Ok(Plan { fields, aggs: out })
    }

    /// Whether only `count` is asked for.
    pub(crate) fn count_only(&self) -> bool {
        self.fields.is_empty()
    }

    /// The values of the aggregates from the combined partial.
    pub(crate) fn finish(&self, total: &Partial) -> Vec<AggregateValue> {
        self.aggs
            .iter()
            .map(|&(op, f)| {
                let Some(f) = f else { return AggregateValue::UInt(total.cells) };
                let field = &self.fields[f];
                let acc = &total.fields[f];
                match op {
                    AggregateOp::Count => AggregateValue::UInt(total.cells),
                    AggregateOp::NullCount => AggregateValue::UInt(acc.nulls),
                    AggregateOp::Sum => {
                        if acc.overflow {
                            if field.nullable {
                                return AggregateValue::Null;
                            }
                            // The sum saturated where it overflowed.
                            return match acc.sum {
                                Sum::I64(v) => AggregateValue::Int(v),
                                Sum::U64(v) => AggregateValue::UInt(v),
                                Sum::F64(v) => AggregateValue::Float(v),
                            };
                        }
                        if field.nullable && acc.values == 0 {
                            return AggregateValue::Null;
                        }
                        match acc.sum {
                            Sum::I64(v) => AggregateValue::Int(v),
                            Sum::U64(v) => AggregateValue::UInt(v),
                            Sum::F64(v) => AggregateValue::Float(v),
                        }
                    }
                    AggregateOp::Mean => {
                        if acc.overflow {
                            return if field.nullable {
                                AggregateValue::Null
                            } else {
                                AggregateValue::Float(f64::MAX)
                            };
                        }
                        if acc.values == 0 {
                            return AggregateValue::Null;
                        }
                        let s = match acc.sum {
                            Sum::I64(v) => v as f64,
                            Sum::U64(v) => v as f64,
                            Sum::F64(v) => v,
                        };
                        AggregateValue::Float(s / acc.values as f64)
                    }
                    AggregateOp::Min | AggregateOp::Max => {
                        let v = if op == AggregateOp::Min { &acc.min } else { &acc.max };
                        match v {
                            Some(bytes) => AggregateValue::Value {
                                datatype: field.datatype,
                                cell_val_num: field.cell_val_num,
                                bytes: bytes.clone(),
                            },
                            None => AggregateValue::Null,
                        }
                    }
                }
            })
            .collect()
    }
}

/// The attribute or dimension `name` of `schema`, with no statistics wanted yet.
fn resolve(schema: &ArraySchema, name: &str) -> Result<AggField> {
    let (source, datatype, cell_val_num, nullable, fill, fill_valid) =
        if let Some(a) = schema.attributes.iter().position(|x| x.name == name) {
            let attr = &schema.attributes[a];
            (
                Source::Attr(a),
                attr.datatype,
                attr.cell_val_num,
                attr.nullable,
                attr.fill_value.clone(),
                attr.fill_value_validity || !attr.nullable,
            )
        } else if let Some(d) = schema.dimensions.iter().position(|x| x.name == name) {
            let dim = &schema.dimensions[d];
            (Source::Dim(d), dim.datatype, dim.cell_val_num, false, Vec::new(), true)
        } else {
            return Err(Error::UnknownField(name.to_owned()));
        };
    let var = cell_val_num == CELL_VAL_NUM_VAR;
    Ok(AggField {
        name: name.to_owned(),
        source,
        datatype,
        cell_val_num,
        nullable,
        want: Want::default(),
        num: if var || cell_val_num != 1 { None } else { Num::of(datatype) },
        string: matches!(datatype, Datatype::Char | Datatype::StringAscii),
        fill,
        fill_valid,
    })
}

fn describe(dt: Datatype, cvn: u32) -> String {
    match cvn {
        CELL_VAL_NUM_VAR => format!("var-sized {dt} values"),
        1 => format!("{dt} values"),
        n => format!("{dt} values, {n} per cell"),
    }
}

/// Which cells of a tile (or column) to aggregate.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cells<'a> {
    /// A run of consecutive cells.
    Range(usize, usize),
    /// The listed cells, ascending.
    List(&'a [u32]),
    /// The cells of a run whose `mask` entry (indexed from the run's first cell) is true.
    Masked(usize, &'a [bool]),
}

/// The aggregate state of one attribute over some cells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldAcc {
    /// Non-null cells.
    values: u64,
    /// Null cells.
    nulls: u64,
    sum: Sum,
    overflow: bool,
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
}

/// The aggregate state over some cells (one tile, a run of tiles, or everything): the cell
/// count and each attribute's state.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Partial {
    /// Cells.
    pub(crate) cells: u64,
    fields: Vec<FieldAcc>,
}

/// `a < b` for min/max values of `field` (`std::less`, as libtiledb compares).
fn less(field: &AggField, a: &[u8], b: &[u8]) -> bool {
    if field.string || field.num.is_none() {
        return a < b;
    }
    macro_rules! lt {
        ($t:ty) => {
            <$t>::read_le(a) < <$t>::read_le(b)
        };
    }
    match field.num {
        Some(Num::I8) => lt!(i8),
        Some(Num::U8) => lt!(u8),
        Some(Num::I16) => lt!(i16),
        Some(Num::U16) => lt!(u16),
        Some(Num::I32) => lt!(i32),
        Some(Num::U32) => lt!(u32),
        Some(Num::I64) => lt!(i64),
        Some(Num::U64) => lt!(u64),
        Some(Num::F32) => lt!(f32),
        Some(Num::F64) => lt!(f64),
        None => a < b,
    }
}

impl FieldAcc {
    fn new(field: &AggField) -> Self {
        FieldAcc {
            values: 0,
            nulls: 0,
            sum: field.num.map_or(Sum::I64(0), Num::zero),
            overflow: false,
            min: None,
            max: None,
        }
    }

    fn add_sum(&mut self, s: Sum) {
        if self.overflow {
            return;
        }
        let ok = match (&mut self.sum, s) {
            (Sum::I64(a), Sum::I64(b)) => a.safe_add(b),
            (Sum::U64(a), Sum::U64(b)) => a.safe_add(b),
            (Sum::F64(a), Sum::F64(b)) => a.safe_add(b),
            _ => true,
        };
        if !ok {
            self.overflow = true;
        }
    }

    fn offer_min(&mut self, field: &AggField, v: &[u8]) {
        if self.min.as_deref().is_none_or(|m| less(field, v, m)) {
            self.min = Some(v.to_vec());
        }
    }

    fn offer_max(&mut self, field: &AggField, v: &[u8]) {
        if self.max.as_deref().is_none_or(|m| less(field, m, v)) {
            self.max = Some(v.to_vec());
        }
    }

    /// Folds `other` (the state of later cells) in.
    fn merge(&mut self, field: &AggField, other: &FieldAcc) {
        self.values += other.values;
        self.nulls += other.nulls;
        if other.overflow {
            if !self.overflow {
                self.overflow = true;
                self.sum = other.sum;
            }
        } else {
            self.add_sum(other.sum);
        }
        if let Some(m) = &other.min {
            self.offer_min(field, m);
        }
        if let Some(m) = &other.max {
            self.offer_max(field, m);
        }
    }
}

impl Partial {
    /// The state of no cells.
    pub(crate) fn new(plan: &Plan) -> Self {
        Partial { cells: 0, fields: plan.fields.iter().map(FieldAcc::new).collect() }
    }

    /// Folds `other` (the state of later cells) in, as libtiledb folds the state of one
    /// tile or cell slab into the total.
    pub(crate) fn merge(&mut self, plan: &Plan, other: &Partial) {
        self.cells += other.cells;
        for ((acc, o), field) in self.fields.iter_mut().zip(&other.fields).zip(&plan.fields) {
            acc.merge(field, o);
        }
    }

    /// Adds the state of a whole tile of `cell_num` cells from its metadata; `stats[f]` is
    /// field `f`'s, from [`crate::read::stats::FieldMeta::exact`] with the field's wants.
    pub(crate) fn add_tile_stats(
        &mut self,
        plan: &Plan,
        cell_num: u64,
        stats: &[Option<ExactStats<'_>>],
    ) {
        self.cells += cell_num;
        for ((acc, field), s) in self.fields.iter_mut().zip(&plan.fields).zip(stats) {
            let Some(s) = s else { continue };
            acc.nulls += s.null_count;
            acc.values += cell_num - s.null_count;
            if let (Some(raw), Some(num)) = (s.sum, field.num) {
                let sum = match num.zero() {
                    Sum::I64(_) => Sum::I64(raw as i64),
                    Sum::U64(_) => Sum::U64(raw),
                    Sum::F64(_) => Sum::F64(f64::from_bits(raw)),
                };
                acc.add_sum(sum);
            }
            if let Some(m) = s.min {
                acc.offer_min(field, m);
            }
            if let Some(m) = s.max {
                acc.offer_max(field, m);
            }
        }
    }

    /// Aggregates `cells` of `view` (attribute `f` of the plan; `None` when the fragment
    /// does not store it: every cell holds the fill value), sequentially in cell order.
    /// Does not count cells: see [`Partial::add_cells`].
    pub(crate) fn scan(
        &mut self,
        plan: &Plan,
        f: usize,
        view: Option<&ColumnView<'_>>,
        cells: Cells<'_>,
    ) {
        let field = &plan.fields[f];
        let acc = &mut self.fields[f];
        let Some(view) = view else {
            let n = match cells {
                Cells::Range(s, e) => (e - s) as u64,
                Cells::List(l) => l.len() as u64,
                Cells::Masked(_, m) => m.iter().filter(|&&k| k).count() as u64,
            };
            scan_fill(field, acc, n);
            return;
        };
        if let Some(num) = field.num.filter(|_| !field.string) {
            let run = match cells {
                Cells::Range(s, e) => Some((s, e - s, None)),
                Cells::Masked(s, m) => Some((s, m.len(), Some(m))),
                Cells::List(_) => None,
            };
            if let Some((s, n, mask)) = run
                && scan_run(num, field, acc, view, s, n, mask)
            {
                return;
            }
        }
        match cells {
            Cells::Range(s, e) => scan_iter(field, acc, view, s..e),
            Cells::List(l) => scan_iter(field, acc, view, l.iter().map(|&c| c as usize)),
            Cells::Masked(s, m) => scan_iter(
                field,
                acc,
                view,
                m.iter().enumerate().filter(|(_, k)| **k).map(move |(i, _)| s + i),
            ),
        }
    }

    /// Aggregates `n` cells holding attribute `f`'s fill value.
    pub(crate) fn scan_fill(&mut self, plan: &Plan, f: usize, n: u64) {
        scan_fill(&plan.fields[f], &mut self.fields[f], n);
    }

    /// Counts `n` cells.
    pub(crate) fn add_cells(&mut self, n: u64) {
        self.cells += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        for (text, shown) in [
            ("count", "count"),
            ("count()", "count"),
            (" sum( a ) ", "sum(a)"),
            ("MIN(x)", "min(x)"),
            ("null_count(n)", "null_count(n)"),
            ("mean(b)", "mean(b)"),
        ] {
            assert_eq!(Aggregate::parse(text).unwrap().to_string(), shown);
        }
        for bad in ["sum", "sum()", "count(a)", "avg(a)", "sum(a", ""] {
            assert!(Aggregate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn constructors_match_the_text_forms() {
        let built = [
            Aggregate::count(),
            Aggregate::sum("a"),
            Aggregate::min("a"),
            Aggregate::max("a"),
            Aggregate::mean("a"),
            Aggregate::null_count("a"),
        ];
        for agg in built {
            let text = agg.to_string();
            assert_eq!(text.parse::<Aggregate>().unwrap(), agg, "{text}");
        }
        assert_eq!("sum(a)".parse::<Aggregate>().unwrap(), Aggregate::sum("a"));
        let err = "median(a)".parse::<Aggregate>().unwrap_err();
        assert!(matches!(err, Error::InvalidQuery(_)), "{err}");
    }

    #[test]
    fn values_as_numbers_and_text() {
        let value = |datatype, bytes: &[u8]| AggregateValue::Value {
            datatype,
            cell_val_num: 1,
            bytes: bytes.to_vec(),
        };
        let cases = [
            (AggregateValue::Null, None, "null"),
            (AggregateValue::UInt(4), Some(4.0), "4"),
            (AggregateValue::Int(-3), Some(-3.0), "-3"),
            (AggregateValue::Float(2.5), Some(2.5), "2.5"),
            (AggregateValue::Float(2.0), Some(2.0), "2.0"),
            (value(Datatype::Int16, &(-7i16).to_le_bytes()), Some(-7.0), "-7"),
            (
                value(Datatype::UInt64, &u64::MAX.to_le_bytes()),
                Some(u64::MAX as f64),
                "18446744073709551615",
            ),
            (value(Datatype::Float32, &0.5f32.to_le_bytes()), Some(0.5), "0.5"),
            (value(Datatype::DatetimeMs, &5i64.to_le_bytes()), Some(5.0), "5"),
            (
                AggregateValue::Value {
                    datatype: Datatype::StringAscii,
                    cell_val_num: CELL_VAL_NUM_VAR,
                    bytes: b"abc".to_vec(),
                },
                None,
                "\"abc\"",
            ),
        ];
        for (v, number, text) in cases {
            assert_eq!(v.as_f64(), number, "{v:?}");
            assert_eq!(v.to_string(), text, "{v:?}");
        }
        assert!(AggregateValue::Float(f64::NAN).as_f64().unwrap().is_nan());
        assert_eq!(AggregateValue::Float(f64::NAN).to_string(), "\"NaN\"");
    }

    /// A comparable view of an aggregate state (float sums by bits).
    fn state(a: &FieldAcc) -> String {
        let sum = match a.sum {
            Sum::F64(v) => format!("f{:x}", v.to_bits()),
            s => format!("{s:?}"),
        };
        format!("{} {} {sum} {} {:?} {:?}", a.values, a.nulls, a.overflow, a.min, a.max)
    }

    /// `scan_block` (the vectorised path) against `scan_num` (cell by cell) on `cells` of
    /// type `T` with a mask and validity, from a state with `prior` cells already added.
    fn block_equals_cells<T: Fast>(
        dt: Datatype,
        cells: &[(T, bool, bool)],
        prior: &[T],
        nullable: bool,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let schema = ArraySchema::builder(tessera_types::ArrayType::Sparse)
            .dimension(
                tessera_schema::Dimension::new("d", Datatype::Int64).domain_i64(0, 9).tile_i64(10),
            )
            .attribute(tessera_schema::Attribute::new("a", dt).nullable(nullable))
            .build()
            .unwrap();
        let plan =
            Plan::new(&schema, &[Aggregate::sum("a"), Aggregate::min("a"), Aggregate::max("a")])
                .unwrap();
        let field = &plan.fields[0];
        let mut data = Vec::new();
        cells.iter().for_each(|c| c.0.write_le(&mut data));
        let validity: Vec<u8> = cells.iter().map(|c| u8::from(c.1 || !nullable)).collect();
        let mask: Vec<bool> = cells.iter().map(|c| c.2).collect();
        let mut pdata = Vec::new();
        prior.iter().for_each(|v| v.write_le(&mut pdata));
        let pview = ColumnView {
            datatype: dt,
            cell_val_num: 1,
            data: &pdata,
            offsets: None,
            validity: None,
        };
        let view = ColumnView {
            datatype: dt,
            cell_val_num: 1,
            data: &data,
            offsets: None,
            validity: nullable.then_some(&validity[..]),
        };
        let mut a = FieldAcc::new(field);
        scan_num::<T>(field, &mut a, &pview, 0..prior.len());
        let mut b = a.clone();
        let picked = mask.iter().enumerate().filter(|(_, k)| **k).map(|(i, _)| i);
        scan_num::<T>(field, &mut a, &view, picked);
        let vals: Vec<T> = cells.iter().map(|c| c.0).collect();
        scan_block::<T>(field, &mut b, &vals, view.validity, Some(&mask));
        proptest::prop_assert_eq!(state(&a), state(&b));
        let mut c = FieldAcc::new(field);
        let mut d = c.clone();
        scan_num::<T>(field, &mut c, &view, 0..cells.len());
        scan_block::<T>(field, &mut d, &vals, view.validity, None);
        proptest::prop_assert_eq!(state(&c), state(&d));
        Ok(())
    }

    fn f64_cell() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MAX),
            Just(-f64::MAX),
            Just(1e308),
            -10.0f64..10.0,
            any::<f64>(),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        #[test]
        fn vectorised_scans_equal_cell_by_cell(
            i32s in proptest::collection::vec(
                (proptest::prelude::any::<i32>(), proptest::prelude::any::<bool>(),
                 proptest::prelude::any::<bool>()), 0..200),
            i8s in proptest::collection::vec(
                (proptest::prelude::any::<i8>(), proptest::prelude::any::<bool>(),
                 proptest::prelude::any::<bool>()), 0..200),
            f64s in proptest::collection::vec(
                (f64_cell(), proptest::prelude::any::<bool>(),
                 proptest::prelude::any::<bool>()), 0..200),
            prior_f in proptest::collection::vec(f64_cell(), 0..3),
            prior_i in proptest::collection::vec(
                proptest::prop_oneof![proptest::prelude::Just(i64::MAX - 5),
                    proptest::prelude::Just(i64::MIN + 5), -100i64..100], 0..3),
            nullable in proptest::prelude::any::<bool>(),
        ) {
            let pi32: Vec<i32> = prior_i.iter().map(|&v| v.clamp(-1000, 1000) as i32).collect();
            block_equals_cells::<i32>(Datatype::Int32, &i32s, &pi32, nullable)?;
            block_equals_cells::<i8>(Datatype::Int8, &i8s, &[], nullable)?;
            let c64: Vec<(i64, bool, bool)> =
                i32s.iter().map(|&(v, a, b)| (i64::from(v) << 32, a, b)).collect();
            block_equals_cells::<i64>(Datatype::Int64, &c64, &prior_i, nullable)?;
            block_equals_cells::<f64>(Datatype::Float64, &f64s, &prior_f, nullable)?;
            let f32s: Vec<(f32, bool, bool)> =
                f64s.iter().map(|&(v, a, b)| (v as f32, a, b)).collect();
            let pf32: Vec<f32> = prior_f.iter().map(|&v| v as f32).collect();
            block_equals_cells::<f32>(Datatype::Float32, &f32s, &pf32, nullable)?;
        }
    }

    #[test]
    fn safe_sums_saturate_as_libtiledb() {
        let mut a = i64::MAX - 1;
        assert!(a.safe_add(1));
        assert!(!a.safe_add(1));
        assert_eq!(a, i64::MAX);
        // a negative overflow saturates at the lowest value (libtiledb's sum of
        // [i64::MIN, i64::MIN, 5] is i64::MIN)
        let mut n = i64::MIN + 1;
        assert!(!n.safe_add(-2));
        assert_eq!(n, i64::MIN);
        let mut u = u64::MAX;
        assert!(!u.safe_add(1));
        let mut f = f64::MAX;
        assert!(!f.safe_add(f64::MAX));
        assert!(f.safe_add(-1.0));
    }
}
