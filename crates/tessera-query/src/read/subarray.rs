//! The subarray of a read: ranges per dimension as the user gave them, checked against the
//! dimension's type, domain and current domain; the default (the non-empty domain of the
//! visible fragments); the sorted and merged form sparse reads use.

use std::cmp::Ordering;

use tessera_fragment::dim_types;
use tessera_rtree::{DimType, Mbr, Range};
use tessera_schema::{ArraySchema, Dimension};
use tessera_types::Datatype;

use crate::fragment::Fragment;
use crate::read::order::int_value;
use crate::{Error, Result};

/// A range on one dimension, inclusive at both ends, in Rust values: `1..=5` (any integer
/// type, checked to fit the dimension's type, which may be any integer, datetime, time or
/// float type), `1.5..=2.0` (float dimensions), `"a"..="m"` (string dimensions, bytewise
/// order). [`ReadQuery::range`](crate::ReadQuery::range) takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct DimRange(pub(crate) RangeSpec);

macro_rules! dim_range_from {
    ($variant:ident, $wide:ty: $($t:ty),*) => {$(
        impl From<std::ops::RangeInclusive<$t>> for DimRange {
            fn from(r: std::ops::RangeInclusive<$t>) -> Self {
                let (lo, hi) = r.into_inner();
                DimRange(RangeSpec::$variant(<$wide>::from(lo), <$wide>::from(hi)))
            }
        }
    )*};
}
dim_range_from!(I64, i64: i8, i16, i32, i64, u8, u16, u32);
dim_range_from!(U64, u64: u64);
dim_range_from!(F64, f64: f32, f64);

impl From<std::ops::RangeInclusive<&str>> for DimRange {
    fn from(r: std::ops::RangeInclusive<&str>) -> Self {
        DimRange(RangeSpec::Str(r.start().as_bytes().to_vec(), r.end().as_bytes().to_vec()))
    }
}

impl From<std::ops::RangeInclusive<String>> for DimRange {
    fn from(r: std::ops::RangeInclusive<String>) -> Self {
        let (lo, hi) = r.into_inner();
        DimRange(RangeSpec::Str(lo.into_bytes(), hi.into_bytes()))
    }
}

impl From<std::ops::RangeInclusive<&[u8]>> for DimRange {
    fn from(r: std::ops::RangeInclusive<&[u8]>) -> Self {
        DimRange(RangeSpec::Str(r.start().to_vec(), r.end().to_vec()))
    }
}

/// One range as the user asked for it, before it is checked against its dimension.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RangeSpec {
    /// Signed integers, for integer, datetime, time (and float) dimensions.
    I64(i64, i64),
    /// Unsigned integers, for integer (and float) dimensions.
    U64(u64, u64),
    /// Floats, for float dimensions.
    F64(f64, f64),
    /// Strings, for string dimensions.
    Str(Vec<u8>, Vec<u8>),
    /// Little-endian bytes of the dimension's type (whole strings for string dimensions).
    Bytes(Vec<u8>, Vec<u8>),
    /// Values of a Rust number type whose datatype is given.
    Typed(Datatype, Vec<u8>, Vec<u8>),
}

/// Per dimension, the ranges of a read, each checked, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subarray {
    /// `ranges[d]` for dimension `d`; never empty.
    pub(crate) ranges: Vec<Vec<Range>>,
}

impl Subarray {
    /// Builds the subarray of a read of `schema` from `requests` (dimension name, range),
    /// with defaults from the non-empty domains of `fragments`. `None` when the read has no
    /// cells: no request and no visible fragment (libtiledb reads nothing then).
    ///
    /// # Errors
    /// [`Error::UnknownField`] for a name that is not a dimension; [`Error::InvalidRange`] for
    /// a range of the wrong type, reversed, or outside the domain or current domain.
    pub(crate) fn build(
        schema: &ArraySchema,
        fragments: &[std::sync::Arc<Fragment>],
        requests: &[(String, RangeSpec)],
    ) -> Result<Option<Subarray>> {
        let dims = dim_types(schema);
        let mut ranges: Vec<Vec<Range>> = vec![Vec::new(); schema.dimensions.len()];
        for (name, spec) in requests {
            let d = schema
                .dimensions
                .iter()
                .position(|d| &d.name == name)
                .ok_or_else(|| Error::UnknownField(name.clone()))?;
            let dim = &schema.dimensions[d];
            let range = convert(dim, spec)?;
            check(schema, d, dims[d], &range)?;
            ranges[d].push(range);
        }
        if requests.is_empty() && fragments.is_empty() {
            return Ok(None);
        }
        let neds: Vec<&Mbr> =
            fragments.iter().filter_map(|f| f.footer().non_empty_domain.as_ref()).collect();
        let union = Mbr::bounding(&dims, neds.iter().copied());
        // Whether some fragment wrote outside the current domain: libtiledb then clips the
        // dimensions the user left open to the current domain.
        let current = schema.current_domain.as_ref();
        let clip = current.is_some_and(|cd| {
            neds.iter().any(|ned| {
                ned.0.iter().zip(&cd.ranges).zip(&dims).any(|((r, [lo, hi]), &dt)| {
                    dt.compare(&r.low, lo) == Ordering::Less
                        || dt.compare(&r.high, hi) == Ordering::Greater
                })
            })
        });
        for (d, rs) in ranges.iter_mut().enumerate() {
            if !rs.is_empty() {
                continue;
            }
            let dim = &schema.dimensions[d];
            let mut r = match &union {
                Some(u) => u.0[d].clone(),
                None => match (&dim.domain, current) {
                    (_, Some(cd)) => Range::new(cd.ranges[d][0].clone(), cd.ranges[d][1].clone()),
                    (Some([lo, hi]), None) => Range::new(lo.clone(), hi.clone()),
                    // A string dimension of an array without fragments: nothing to read.
                    (None, None) => return Ok(None),
                },
            };
            if let (true, Some(cd)) = (clip, current) {
                let [lo, hi] = &cd.ranges[d];
                let dt = dims[d];
                if dt.compare(&r.low, lo) == Ordering::Less {
                    r.low.clone_from(lo);
                }
                if dt.compare(&r.high, hi) == Ordering::Greater {
                    r.high.clone_from(hi);
                }
                if dt.compare(&r.low, &r.high) == Ordering::Greater {
                    return Ok(None);
                }
            }
            rs.push(r);
        }
        Ok(Some(Subarray { ranges }))
    }

    /// Whether some dimension has more than one range.
    pub(crate) fn is_multi_range(&self) -> bool {
        self.ranges.iter().any(|r| r.len() > 1)
    }

    /// The ranges of each dimension sorted and with overlapping ones merged, as libtiledb's
    /// sparse readers use them (`Subarray::non_overlapping_ranges`): a cell matching several
    /// ranges is returned once.
    pub(crate) fn sorted_merged(&self, dims: &[DimType]) -> Vec<Vec<Range>> {
        self.ranges
            .iter()
            .zip(dims)
            .map(|(rs, &dt)| {
                let mut rs = rs.clone();
                rs.sort_by(|a, b| dt.compare(&a.low, &b.low));
                let mut out: Vec<Range> = Vec::with_capacity(rs.len());
                for r in rs {
                    match out.last_mut() {
                        Some(last) if dt.compare(&r.low, &last.high) != Ordering::Greater => {
                            if dt.compare(&r.high, &last.high) == Ordering::Greater {
                                last.high = r.high;
                            }
                        }
                        _ => out.push(r),
                    }
                }
                out
            })
            .collect()
    }

    /// The ranges of each dimension as integers (dense arrays, whose dimensions are integers,
    /// datetimes or times).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a dimension that is not integral.
    pub(crate) fn int_ranges(&self, schema: &ArraySchema) -> Result<Vec<Vec<(i128, i128)>>> {
        self.ranges
            .iter()
            .zip(&schema.dimensions)
            .map(|(rs, dim)| {
                rs.iter()
                    .map(|r| {
                        match (int_value(dim.datatype, &r.low), int_value(dim.datatype, &r.high)) {
                            (Some(lo), Some(hi)) => Ok((lo, hi)),
                            _ => Err(Error::Unsupported(format!(
                                "dense reads of {} dimension {:?}",
                                dim.datatype, dim.name
                            ))),
                        }
                    })
                    .collect()
            })
            .collect()
    }
}

/// The bytes of `spec` as a range of `dim`.
fn convert(dim: &Dimension, spec: &RangeSpec) -> Result<Range> {
    let dt = dim.datatype;
    let err = |reason: String| Error::InvalidRange { dimension: dim.name.clone(), reason };
    let wrong = |given: &str| err(format!("{given} bounds given for a dimension of type {dt}"));
    match spec {
        RangeSpec::Str(lo, hi) => {
            if !dim.is_var() {
                return Err(wrong("string"));
            }
            Ok(Range::new(lo.clone(), hi.clone()))
        }
        RangeSpec::Bytes(lo, hi) => {
            if !dim.is_var() && (lo.len() != dt.size() || hi.len() != dt.size()) {
                return Err(err(format!(
                    "bounds of {} and {} bytes given for {dt} values of {} bytes",
                    lo.len(),
                    hi.len(),
                    dt.size()
                )));
            }
            Ok(Range::new(lo.clone(), hi.clone()))
        }
        _ if dim.is_var() => Err(wrong("numeric")),
        RangeSpec::I64(lo, hi) => Ok(Range::new(
            int_bytes(dt, i128::from(*lo), &err)?,
            int_bytes(dt, i128::from(*hi), &err)?,
        )),
        RangeSpec::U64(lo, hi) => Ok(Range::new(
            int_bytes(dt, i128::from(*lo), &err)?,
            int_bytes(dt, i128::from(*hi), &err)?,
        )),
        RangeSpec::F64(lo, hi) => {
            if !dt.is_float() {
                return Err(wrong("float"));
            }
            Ok(Range::new(float_bytes(dt, *lo, &err)?, float_bytes(dt, *hi, &err)?))
        }
        RangeSpec::Typed(given, lo, hi) => {
            let compatible = given.size() == dt.size()
                && if dt.is_float() {
                    given.is_float()
                } else if dt.is_datetime() || dt.is_time() {
                    *given == Datatype::Int64
                } else {
                    *given == dt
                };
            if !compatible {
                return Err(err(format!("{given} bounds given for a dimension of type {dt}")));
            }
            Ok(Range::new(lo.clone(), hi.clone()))
        }
    }
}

/// `v` as a value of integer (or float) type `dt`, refusing values out of the type's range.
pub(crate) fn int_bytes(dt: Datatype, v: i128, err: &dyn Fn(String) -> Error) -> Result<Vec<u8>> {
    if dt.is_float() {
        return float_bytes(dt, v as f64, err);
    }
    let (min, max): (i128, i128) = match dt {
        Datatype::Int8 => (i8::MIN.into(), i8::MAX.into()),
        Datatype::UInt8 => (0, u8::MAX.into()),
        Datatype::Int16 => (i16::MIN.into(), i16::MAX.into()),
        Datatype::UInt16 => (0, u16::MAX.into()),
        Datatype::Int32 => (i32::MIN.into(), i32::MAX.into()),
        Datatype::UInt32 => (0, u32::MAX.into()),
        Datatype::UInt64 => (0, u64::MAX.into()),
        d if d == Datatype::Int64 || d.is_datetime() || d.is_time() => {
            (i64::MIN.into(), i64::MAX.into())
        }
        d => return Err(err(format!("integer bounds given for a dimension of type {d}"))),
    };
    if v < min || v > max {
        return Err(err(format!("{v} does not fit the dimension's type {dt}")));
    }
    let mut out = Vec::with_capacity(dt.size());
    crate::read::order::push_int(dt, v, &mut out);
    Ok(out)
}

pub(crate) fn float_bytes(dt: Datatype, v: f64, err: &dyn Fn(String) -> Error) -> Result<Vec<u8>> {
    if v.is_nan() {
        return Err(err("a bound is NaN".into()));
    }
    Ok(match dt {
        Datatype::Float32 => (v as f32).to_le_bytes().to_vec(),
        _ => v.to_le_bytes().to_vec(),
    })
}

/// Checks `range` of dimension `d`: not reversed, not NaN, inside the domain and the current
/// domain.
fn check(schema: &ArraySchema, d: usize, dt: DimType, range: &Range) -> Result<()> {
    let dim = &schema.dimensions[d];
    let err = |reason: String| Error::InvalidRange { dimension: dim.name.clone(), reason };
    let show = |b: &[u8]| show_value(dim, b);
    if dim.datatype.is_float() && !dim.is_var() {
        let nan = |b: &[u8]| crate::read::order::f64_value(dim.datatype, b).is_nan();
        if nan(&range.low) || nan(&range.high) {
            return Err(err("a bound is NaN".into()));
        }
    }
    if dt.compare(&range.low, &range.high) == Ordering::Greater {
        return Err(err(format!(
            "low bound {} is greater than high bound {}",
            show(&range.low),
            show(&range.high)
        )));
    }
    if let Some([lo, hi]) = &dim.domain
        && (dt.compare(&range.low, lo) == Ordering::Less
            || dt.compare(&range.high, hi) == Ordering::Greater)
    {
        return Err(err(format!(
            "[{}, {}] is outside the domain [{}, {}]",
            show(&range.low),
            show(&range.high),
            show(lo),
            show(hi)
        )));
    }
    if let Some(cd) = &schema.current_domain {
        let [lo, hi] = &cd.ranges[d];
        if dt.compare(&range.low, lo) == Ordering::Less
            || dt.compare(&range.high, hi) == Ordering::Greater
        {
            return Err(err(format!(
                "[{}, {}] is outside the current domain [{}, {}]",
                show(&range.low),
                show(&range.high),
                show(lo),
                show(hi)
            )));
        }
    }
    Ok(())
}

/// A bound as text for error messages.
pub(crate) fn show_value(dim: &Dimension, b: &[u8]) -> String {
    if dim.is_var() {
        return format!("{:?}", String::from_utf8_lossy(b));
    }
    tessera_schema::json::value_json(dim.datatype, b).to_string()
}
