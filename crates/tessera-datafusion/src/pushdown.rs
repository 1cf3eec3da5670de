//! Filter pushdown: dimension predicates become subarray ranges, attribute predicates of
//! sparse arrays become query-condition text.

use datafusion::common::{Column as ColumnRef, ScalarValue};
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use tessera::layers::query::condition::QueryCondition;
use tessera::layers::schema::Value;
use tessera::layers::types::CELL_VAL_NUM_VAR;
use tessera::{Array, ArraySchema, Datatype};

/// A bound of a dimension range, ordered as TileDB orders the dimension's values.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub(crate) enum Key {
    /// Integers, datetimes and times.
    Int(i128),
    /// Floats.
    Float(f64),
    /// Strings (bytewise).
    Str(Vec<u8>),
}

impl Key {
    /// The little-endian bytes of this bound in `dt`.
    pub(crate) fn to_bytes(&self, dt: Datatype) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        match self {
            Key::Int(v) if dt.is_signed() => {
                Value::Int(i64::try_from(*v).ok()?).encode(dt, &mut out).ok()?
            }
            Key::Int(v) => Value::UInt(u64::try_from(*v).ok()?).encode(dt, &mut out).ok()?,
            Key::Float(v) => Value::Float(*v).encode(dt, &mut out).ok()?,
            Key::Str(s) => out.extend_from_slice(s),
        }
        Some(out)
    }

    /// The bound stored as `bytes` of `dt`.
    pub(crate) fn from_bytes(dt: Datatype, var: bool, bytes: &[u8]) -> Option<Key> {
        if var {
            return Some(Key::Str(bytes.to_vec()));
        }
        Some(match Value::decode(dt, bytes).ok()? {
            Value::Int(v) => Key::Int(i128::from(v)),
            Value::UInt(v) => Key::Int(i128::from(v)),
            Value::Float(v) => Key::Float(v),
            Value::Bytes(b) => Key::Str(b),
        })
    }

    fn succ(&self) -> Option<Key> {
        match self {
            Key::Int(v) => Some(Key::Int(v + 1)),
            Key::Float(v) => Some(Key::Float(v.next_up())),
            Key::Str(_) => None,
        }
    }

    fn pred(&self) -> Option<Key> {
        match self {
            Key::Int(v) => Some(Key::Int(v - 1)),
            Key::Float(v) => Some(Key::Float(v.next_down())),
            Key::Str(_) => None,
        }
    }
}

/// Sorted, disjoint inclusive ranges of one dimension.
pub(crate) type RangeSet = Vec<(Key, Key)>;

fn intersect(a: &RangeSet, b: &RangeSet) -> RangeSet {
    let mut out = Vec::new();
    for (alo, ahi) in a {
        for (blo, bhi) in b {
            let lo = if alo > blo { alo } else { blo };
            let hi = if ahi < bhi { ahi } else { bhi };
            if lo <= hi {
                out.push((lo.clone(), hi.clone()));
            }
        }
    }
    normalize(out)
}

/// Sorts and merges overlapping (and, for integers, adjacent) ranges.
pub(crate) fn normalize(mut ranges: RangeSet) -> RangeSet {
    ranges.retain(|(lo, hi)| lo <= hi);
    ranges.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut out: RangeSet = Vec::new();
    for (lo, hi) in ranges {
        if let Some(last) = out.last_mut() {
            let touches = match (&last.1, &lo) {
                (Key::Int(h), Key::Int(l)) => *l <= h + 1,
                (h, l) => l <= h,
            };
            if touches {
                if hi > last.1 {
                    last.1 = hi;
                }
                continue;
            }
        }
        out.push((lo, hi));
    }
    out
}

/// What the scan knows about one dimension: its type and the non-empty domain's bounds.
#[derive(Debug, Clone)]
pub(crate) struct DimInfo {
    pub(crate) name: String,
    pub(crate) datatype: Datatype,
    pub(crate) var: bool,
    /// The non-empty domain (None when no fragment is visible).
    pub(crate) ned: Option<(Key, Key)>,
}

impl DimInfo {
    /// The dimensions of `array` with their non-empty domains.
    pub(crate) fn of(array: &Array) -> Vec<DimInfo> {
        let schema = array.schema();
        schema
            .dimensions
            .iter()
            .enumerate()
            .map(|(d, dim)| {
                let var = dim.cell_val_num == CELL_VAL_NUM_VAR;
                let mut ned: Option<(Key, Key)> = None;
                for f in array.fragments() {
                    let Some(mbr) = f.footer().non_empty_domain.as_ref() else { continue };
                    let Some(r) = mbr.0.get(d) else { continue };
                    let (Some(lo), Some(hi)) = (
                        Key::from_bytes(dim.datatype, var, &r.low),
                        Key::from_bytes(dim.datatype, var, &r.high),
                    ) else {
                        continue;
                    };
                    ned = Some(match ned {
                        None => (lo, hi),
                        Some((a, b)) => (if lo < a { lo } else { a }, if hi > b { hi } else { b }),
                    });
                }
                DimInfo { name: dim.name.clone(), datatype: dim.datatype, var, ned }
            })
            .collect()
    }

    fn is_int(&self) -> bool {
        !self.var
            && (self.datatype.is_integer()
                || self.datatype.is_datetime()
                || self.datatype.is_time())
    }
}

/// A literal as a dimension bound.
fn literal_key(v: &ScalarValue, dim: &DimInfo) -> Option<Key> {
    use ScalarValue as S;
    let int = |x: i128| dim.is_int().then_some(Key::Int(x));
    match v {
        S::Int8(Some(x)) => int(i128::from(*x)),
        S::Int16(Some(x)) => int(i128::from(*x)),
        S::Int32(Some(x)) => int(i128::from(*x)),
        S::Int64(Some(x)) => int(i128::from(*x)),
        S::UInt8(Some(x)) => int(i128::from(*x)),
        S::UInt16(Some(x)) => int(i128::from(*x)),
        S::UInt32(Some(x)) => int(i128::from(*x)),
        S::UInt64(Some(x)) => int(i128::from(*x)),
        S::TimestampSecond(Some(x), _)
        | S::TimestampMillisecond(Some(x), _)
        | S::TimestampMicrosecond(Some(x), _)
        | S::TimestampNanosecond(Some(x), _)
        | S::DurationSecond(Some(x))
        | S::DurationMillisecond(Some(x))
        | S::DurationMicrosecond(Some(x))
        | S::DurationNanosecond(Some(x)) => int(i128::from(*x)),
        S::Date32(Some(x)) => int(i128::from(*x)),
        S::Float32(Some(x)) if dim.datatype.is_float() => Some(Key::Float(f64::from(*x))),
        S::Float64(Some(x)) if dim.datatype.is_float() => Some(Key::Float(*x)),
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) if dim.var => {
            Some(Key::Str(s.as_bytes().to_vec()))
        }
        S::Dictionary(_, inner) => literal_key(inner, dim),
        _ => None,
    }
}

/// The column an expression names, looking through casts.
fn column_of(e: &Expr) -> Option<&ColumnRef> {
    match e {
        Expr::Column(c) => Some(c),
        Expr::Cast(c) => column_of(&c.expr),
        Expr::TryCast(c) => column_of(&c.expr),
        _ => None,
    }
}

fn literal_of(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

fn flip(op: Operator) -> Operator {
    match op {
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        o => o,
    }
}

/// A predicate on one dimension as ranges: `(dimension index, ranges, exact)`. `exact` is
/// false where the ranges hold more than the predicate (float and string bounds that are
/// not points): DataFusion filters again then.
pub(crate) fn dimension_ranges(e: &Expr, dims: &[DimInfo]) -> Option<(usize, RangeSet, bool)> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::And | Operator::Or), right }) => {
            let (d1, r1, x1) = dimension_ranges(left, dims)?;
            let (d2, r2, x2) = dimension_ranges(right, dims)?;
            if d1 != d2 {
                return None;
            }
            let r = if *op == Operator::And {
                intersect(&r1, &r2)
            } else {
                normalize(r1.into_iter().chain(r2).collect())
            };
            Some((d1, r, x1 && x2))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (col, lit, op) = match (column_of(left), literal_of(right)) {
                (Some(c), Some(l)) => (c, l, *op),
                _ => (column_of(right)?, literal_of(left)?, flip(*op)),
            };
            let d = dims.iter().position(|d| d.name == col.name)?;
            let dim = &dims[d];
            let (min, max) = dim.ned.clone()?;
            let v = literal_key(lit, dim)?;
            let exact_bounds = dim.is_int();
            let (set, exact) = match op {
                Operator::Eq => (vec![(v.clone(), v)], true),
                Operator::Lt => match v.pred() {
                    Some(p) => (vec![(min, p)], exact_bounds),
                    None => (vec![(min, v)], false),
                },
                Operator::LtEq => (vec![(min, v)], exact_bounds),
                Operator::Gt => match v.succ() {
                    Some(s) => (vec![(s, max)], exact_bounds),
                    None => (vec![(v, max)], false),
                },
                Operator::GtEq => (vec![(v, max)], exact_bounds),
                Operator::NotEq if dim.is_int() => (vec![(min, v.pred()?), (v.succ()?, max)], true),
                _ => return None,
            };
            Some((d, clamp(set, &dim.ned), exact))
        }
        Expr::Between(Between { expr, negated: false, low, high }) => {
            let col = column_of(expr)?;
            let d = dims.iter().position(|d| d.name == col.name)?;
            let dim = &dims[d];
            let lo = literal_key(literal_of(low)?, dim)?;
            let hi = literal_key(literal_of(high)?, dim)?;
            Some((d, clamp(vec![(lo, hi)], &dim.ned), true))
        }
        Expr::InList(InList { expr, list, negated: false }) => {
            let col = column_of(expr)?;
            let d = dims.iter().position(|d| d.name == col.name)?;
            let dim = &dims[d];
            let mut set = Vec::new();
            for item in list {
                let v = literal_key(literal_of(item)?, dim)?;
                set.push((v.clone(), v));
            }
            Some((d, clamp(normalize(set), &dim.ned), true))
        }
        _ => None,
    }
}

/// Cuts ranges to the non-empty domain (the table holds only cells inside it).
fn clamp(set: RangeSet, ned: &Option<(Key, Key)>) -> RangeSet {
    match ned {
        Some((lo, hi)) => intersect(&set, &vec![(lo.clone(), hi.clone())]),
        None => Vec::new(),
    }
}

/// Whether `name` can be written bare in condition text.
fn plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(
            name.to_ascii_lowercase().as_str(),
            "and" | "or" | "not" | "in" | "is" | "null" | "true" | "false"
        )
}

/// A literal in condition text, for an attribute of `dt` (`enumerated`: labels).
fn literal_text(v: &ScalarValue, dt: Datatype, enumerated: bool) -> Option<String> {
    use ScalarValue as S;
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let int_attr = !enumerated
        && (dt.is_integer() || dt.is_datetime() || dt.is_time() || dt == Datatype::Bool);
    let text_attr =
        enumerated || matches!(dt, Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char);
    match v {
        S::Int8(Some(x)) if int_attr => Some(x.to_string()),
        S::Int16(Some(x)) if int_attr => Some(x.to_string()),
        S::Int32(Some(x)) if int_attr => Some(x.to_string()),
        S::Int64(Some(x)) if int_attr => Some(x.to_string()),
        S::UInt8(Some(x)) if int_attr => Some(x.to_string()),
        S::UInt16(Some(x)) if int_attr => Some(x.to_string()),
        S::UInt32(Some(x)) if int_attr => Some(x.to_string()),
        S::UInt64(Some(x)) if int_attr => Some(x.to_string()),
        S::TimestampSecond(Some(x), _)
        | S::TimestampMillisecond(Some(x), _)
        | S::TimestampMicrosecond(Some(x), _)
        | S::TimestampNanosecond(Some(x), _)
        | S::DurationSecond(Some(x))
        | S::DurationMillisecond(Some(x))
        | S::DurationMicrosecond(Some(x))
        | S::DurationNanosecond(Some(x))
            if int_attr =>
        {
            Some(x.to_string())
        }
        S::Date32(Some(x)) if int_attr => Some(x.to_string()),
        S::Boolean(Some(b)) if dt == Datatype::Bool && !enumerated => Some(b.to_string()),
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) if text_attr => {
            Some(quote(s))
        }
        S::Dictionary(_, inner) => literal_text(inner, dt, enumerated),
        _ => None,
    }
}

/// The query-condition text of an attribute predicate of a sparse array, when TileDB's
/// condition keeps exactly the rows SQL keeps: comparisons, `IN`, `IS [NOT] NULL`, `NOT`,
/// `AND`, `OR` on integer, datetime, bool and string attributes (not floats, whose `NaN`
/// and `-0.0` SQL orders differently; on enumerations only `=`, `<>`, `IN`, nulls).
pub(crate) fn condition_text(e: &Expr, schema: &ArraySchema) -> Option<String> {
    let attr = |c: &ColumnRef| {
        let a = schema.attribute(&c.name)?;
        let enumerated = a.enumeration.is_some();
        let ok_type = a.datatype.is_integer()
            || a.datatype.is_datetime()
            || a.datatype.is_time()
            || a.datatype == Datatype::Bool
            || matches!(a.datatype, Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char);
        let ok_cells = if enumerated
            || !matches!(a.datatype, Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char)
        {
            a.cell_val_num == 1
        } else {
            a.cell_val_num == CELL_VAL_NUM_VAR
        };
        (ok_type && ok_cells && plain_name(&a.name)).then_some((
            a.name.clone(),
            a.datatype,
            enumerated,
        ))
    };
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::And | Operator::Or), right }) => {
            let l = condition_text(left, schema)?;
            let r = condition_text(right, schema)?;
            let word = if *op == Operator::And { "and" } else { "or" };
            Some(format!("({l}) {word} ({r})"))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (col, lit, op) = match (column_of(left), literal_of(right)) {
                (Some(c), Some(l)) => (c, l, *op),
                _ => (column_of(right)?, literal_of(left)?, flip(*op)),
            };
            let (name, dt, enumerated) = attr(col)?;
            let sym = match op {
                Operator::Eq => "==",
                Operator::NotEq => "!=",
                Operator::Lt if !enumerated => "<",
                Operator::LtEq if !enumerated => "<=",
                Operator::Gt if !enumerated => ">",
                Operator::GtEq if !enumerated => ">=",
                _ => return None,
            };
            // Fixed-size char compares its first byte only in TileDB.
            if dt == Datatype::Char && schema.attribute(&name)?.cell_val_num != CELL_VAL_NUM_VAR {
                return None;
            }
            Some(format!("{name} {sym} {}", literal_text(lit, dt, enumerated)?))
        }
        Expr::IsNull(inner) => Some(format!("{} is null", attr(column_of(inner)?)?.0)),
        Expr::IsNotNull(inner) => Some(format!("{} is not null", attr(column_of(inner)?)?.0)),
        Expr::InList(InList { expr, list, negated }) => {
            let (name, dt, enumerated) = attr(column_of(expr)?)?;
            let items: Option<Vec<String>> =
                list.iter().map(|i| literal_text(literal_of(i)?, dt, enumerated)).collect();
            let items = items?;
            if items.is_empty() {
                return None;
            }
            let word = if *negated { "not in" } else { "in" };
            Some(format!("{name} {word} [{}]", items.join(", ")))
        }
        Expr::Between(Between { expr, negated: false, low, high }) => {
            let (name, dt, enumerated) = attr(column_of(expr)?)?;
            if enumerated {
                return None;
            }
            let lo = literal_text(literal_of(low)?, dt, false)?;
            let hi = literal_text(literal_of(high)?, dt, false)?;
            Some(format!("{name} >= {lo} and {name} <= {hi}"))
        }
        Expr::Not(inner) => Some(format!("not ({})", condition_text(inner, schema)?)),
        _ => None,
    }
}

/// Whether condition `text` parses against `array` (so pushing it cannot fail later).
pub(crate) fn condition_parses(text: &str, array: &Array) -> bool {
    QueryCondition::parse(text, array.schema(), array.enumerations()).is_ok()
}
