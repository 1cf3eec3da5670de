//! The lazily loaded parts of fragment metadata, each parsed from the unfiltered payload of its
//! generic tile (`tiledb/sm/fragment/ondemand_fragment_metadata.cc` for reading,
//! `FragmentMetadata::write_*` in `fragment_metadata.cc` for writing):
//!
//! * tile offsets, var offsets, var sizes, validity offsets and null counts: `u64` count `N`,
//!   then `N` × `u64` ([`parse_u64s`], [`u64s_payload`]);
//! * tile mins / maxs: `u64` byte size of the fixed buffer, `u64` byte size of the var
//!   buffer, the fixed buffer, the var buffer ([`TileMinMax`]);
//! * tile sums: `u64` count, then count × 8 bytes typed per field ([`TileSums`]);
//! * fragment min/max/sum/null count: per field `u64` min size, min, `u64` max size, max,
//!   8-byte sum, `u64` null count ([`FragmentStats`]);
//! * processed conditions: `u64` count, then per marker `u64` size and bytes
//!   ([`ProcessedConditions`]).

use crate::fields::{FieldInfo, FieldLayout, SumValue};
use crate::footer::LazyPart;
use crate::parse::{PResult, bytes, counted_u64s, fail, parse_all, put_u64, put_u64s, u64f, utf8};
use crate::{Error, Result};

/// Parses a `u64` count followed by that many `u64`s filling `payload` exactly: the tile
/// offsets, var offsets, var sizes, validity offsets and null counts parts.
///
/// # Errors
/// [`Error::Malformed`] (naming `part`) when the count does not match the payload size.
pub fn parse_u64s(part: LazyPart, payload: &[u8]) -> Result<Vec<u64>> {
    parse_all(part.structure(), payload, counted_u64s("count"))
}

/// The payload of a `u64` list part: count, then the values.
pub fn u64s_payload(values: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 8 * values.len());
    put_u64(&mut out, values.len() as u64);
    put_u64s(&mut out, values);
    out
}

/// Tile mins or tile maxs of one field.
///
/// For fixed-size fields `fixed` holds one value per tile (`cell_size` bytes each) and `var`
/// is empty. For var-sized string fields `fixed` holds one `u64` offset per tile into `var`,
/// which holds the values back to back (a value runs to the next offset, the last one to the
/// end of `var`). Fields without min/max have both empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TileMinMax {
    /// The fixed buffer (values, or `u64` offsets for var-sized fields).
    pub fixed: Vec<u8>,
    /// The var buffer (values of var-sized fields).
    pub var: Vec<u8>,
}

impl TileMinMax {
    /// Parses the payload of a tile mins or tile maxs part.
    ///
    /// # Errors
    /// [`Error::Malformed`] when a buffer size runs past the payload or bytes are left over.
    pub fn parse(part: LazyPart, payload: &[u8]) -> Result<Self> {
        parse_all(part.structure(), payload, |i| {
            let (r, fixed_size) = u64f("fixed buffer size")(i)?;
            let (r, var_size) = u64f("var buffer size")(r)?;
            let (r, fixed) = bytes(r, fixed_size, "fixed buffer")?;
            let (r, var) = bytes(r, var_size, "var buffer")?;
            Ok((r, TileMinMax { fixed: fixed.to_vec(), var: var.to_vec() }))
        })
    }

    /// The payload: both sizes, then both buffers.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.fixed.len() + self.var.len());
        put_u64(&mut out, self.fixed.len() as u64);
        put_u64(&mut out, self.var.len() as u64);
        out.extend_from_slice(&self.fixed);
        out.extend_from_slice(&self.var);
        out
    }

    /// Whether the field has no values (both buffers empty).
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.var.is_empty()
    }

    /// The value of tile `t` of a fixed-size field whose values take `cell_size` bytes.
    pub fn fixed_value(&self, t: u64, cell_size: u64) -> Option<&[u8]> {
        let start = t.checked_mul(cell_size)?;
        let end = start.checked_add(cell_size)?;
        self.fixed.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
    }

    /// Number of tiles of a var-sized field (one `u64` offset each).
    pub fn var_tile_count(&self) -> u64 {
        (self.fixed.len() / 8) as u64
    }

    /// The value of tile `t` of a var-sized field.
    ///
    /// # Errors
    /// [`Error::Malformed`] when `t` is past the last tile or the offsets decrease or point
    /// past the var buffer.
    pub fn var_value(&self, t: u64) -> Result<&[u8]> {
        let n = self.var_tile_count();
        let bad = |why: String| Error::malformed("tile min/max", "offsets", t * 8, why);
        if t >= n {
            return Err(bad(format!("tile {t} is past the {n} offsets")));
        }
        let off = |k: u64| crate::parse::read_u64(&self.fixed[k as usize * 8..]);
        let start = off(t);
        let end = if t + 1 == n { self.var.len() as u64 } else { off(t + 1) };
        if start > end || end > self.var.len() as u64 {
            return Err(bad(format!(
                "tile {t} runs from {start} to {end} in a var buffer of {} bytes",
                self.var.len()
            )));
        }
        Ok(&self.var[start as usize..end as usize])
    }

    /// Every value of a var-sized field in tile order.
    ///
    /// # Errors
    /// As [`Self::var_value`].
    pub fn var_values(&self) -> Result<Vec<&[u8]>> {
        (0..self.var_tile_count()).map(|t| self.var_value(t)).collect()
    }

    /// The buffers of a var-sized field from one value per tile.
    pub fn from_var_values<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut out = TileMinMax::default();
        for v in values {
            put_u64(&mut out.fixed, out.var.len() as u64);
            out.var.extend_from_slice(v);
        }
        out
    }
}

/// Tile sums of one field: one 8-byte value per tile (empty for fields without sums), typed
/// as [`crate::SumType`] says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TileSums(pub Vec<u64>);

impl TileSums {
    /// Parses the payload of a tile sums part.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the count does not match the payload size.
    pub fn parse(payload: &[u8]) -> Result<Self> {
        parse_all("tile sums", payload, counted_u64s("count")).map(TileSums)
    }

    /// The payload: count, then the values.
    pub fn to_payload(&self) -> Vec<u8> {
        u64s_payload(&self.0)
    }

    /// The sum of tile `t`, typed for `field`.
    pub fn value(&self, t: u64, field: &FieldInfo) -> Option<SumValue> {
        let raw = *self.0.get(usize::try_from(t).ok()?)?;
        Some(field.sum_type().decode(raw))
    }
}

/// Fragment-level min, max, sum and null count of one field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldStats {
    /// The minimum's bytes (empty for fields without min/max).
    pub min: Vec<u8>,
    /// The maximum's bytes (empty for fields without min/max).
    pub max: Vec<u8>,
    /// The sum's 8 bytes as a little-endian `u64` (0 for fields without sums); see
    /// [`FieldStats::sum_value`].
    pub sum: u64,
    /// Number of null cells (0 for fields that are not nullable).
    pub null_count: u64,
}

impl FieldStats {
    /// The sum, typed for `field`.
    pub fn sum_value(&self, field: &FieldInfo) -> SumValue {
        field.sum_type().decode(self.sum)
    }
}

/// The fragment min/max/sum/null-count part: one [`FieldStats`] per field, in idx order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FragmentStats {
    /// One entry per field of the idx space.
    pub fields: Vec<FieldStats>,
}

impl FragmentStats {
    const STRUCTURE: &'static str = "fragment min/max/sum/null count";

    /// Parses the payload for a fragment whose idx space is `layout`.
    ///
    /// # Errors
    /// [`Error::Malformed`] when sizes run past the payload or bytes are left over.
    pub fn parse(payload: &[u8], layout: &FieldLayout) -> Result<Self> {
        let num = layout.num();
        if num.saturating_mul(32) > payload.len() {
            return Err(Error::malformed(
                Self::STRUCTURE,
                "fields",
                0,
                format!(
                    "{num} fields need at least {} bytes, the payload has {}",
                    num * 32,
                    payload.len()
                ),
            ));
        }
        parse_all(Self::STRUCTURE, payload, |mut i| {
            let mut fields = Vec::with_capacity(num);
            for _ in 0..num {
                let (r, min_size) = u64f("min size")(i)?;
                let (r, min) = bytes(r, min_size, "min")?;
                let (r, max_size) = u64f("max size")(r)?;
                let (r, max) = bytes(r, max_size, "max")?;
                let (r, sum) = u64f("sum")(r)?;
                let (r, null_count) = u64f("null count")(r)?;
                fields.push(FieldStats { min: min.to_vec(), max: max.to_vec(), sum, null_count });
                i = r;
            }
            Ok((i, FragmentStats { fields }))
        })
    }

    /// The payload.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in &self.fields {
            put_u64(&mut out, f.min.len() as u64);
            out.extend_from_slice(&f.min);
            put_u64(&mut out, f.max.len() as u64);
            out.extend_from_slice(&f.max);
            put_u64(&mut out, f.sum);
            put_u64(&mut out, f.null_count);
        }
        out
    }
}

/// The processed-conditions part: markers (array-relative paths such as
/// `__commits/<name>.del`) of the delete and update commits a consolidation applied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessedConditions(pub Vec<String>);

impl ProcessedConditions {
    const STRUCTURE: &'static str = "processed conditions";

    /// Parses the payload.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the count or a size runs past the payload, a marker is not
    /// UTF-8, or bytes are left over.
    pub fn parse(payload: &[u8]) -> Result<Self> {
        parse_all(Self::STRUCTURE, payload, markers)
    }

    /// The payload.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_u64(&mut out, self.0.len() as u64);
        for c in &self.0 {
            put_u64(&mut out, c.len() as u64);
            out.extend_from_slice(c.as_bytes());
        }
        out
    }
}

fn markers(i: &[u8]) -> PResult<'_, ProcessedConditions> {
    let (mut r, n) = u64f("count")(i)?;
    if n > (r.len() / 8) as u64 {
        return fail(i, "count", format!("{n} markers cannot fit in {} bytes", r.len()));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (r2, size) = u64f("marker size")(r)?;
        let (r3, b) = bytes(r2, size, "marker")?;
        out.push(utf8(r2, b, "marker")?);
        r = r3;
    }
    Ok((r, ProcessedConditions(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_lists() {
        let p = u64s_payload(&[0, 7, 9]);
        assert_eq!(parse_u64s(LazyPart::TileOffsets(0), &p).unwrap(), [0, 7, 9]);
        let mut bad = p.clone();
        bad[0] = 4;
        let e = parse_u64s(LazyPart::TileOffsets(2), &bad).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Malformed { structure: "tile offsets", field: "count", offset: 0, .. }
            ),
            "{e}"
        );
        bad[0] = 2;
        assert!(parse_u64s(LazyPart::TileOffsets(2), &bad).is_err());
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 16]);
        assert!(parse_u64s(LazyPart::TileNullCounts(0), &huge).is_err());
    }

    #[test]
    fn min_max_var() {
        // docs/format/fragment-metadata.md: offsets [0,0,4], var "ddddccc" -> "", "dddd", "ccc"
        let m = TileMinMax::from_var_values([&b""[..], b"dddd", b"ccc"]);
        assert_eq!(m.fixed, [0u64, 0, 4].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!(m.var_values().unwrap(), [&b""[..], b"dddd", b"ccc"]);
        assert_eq!(TileMinMax::parse(LazyPart::TileMins(0), &m.to_payload()).unwrap(), m);
        assert!(m.var_value(3).is_err());
        let broken = TileMinMax { fixed: 9u64.to_le_bytes().to_vec(), var: vec![1] };
        assert!(broken.var_value(0).is_err());
        let fixed = TileMinMax { fixed: vec![1, 2, 3, 4], var: vec![] };
        assert_eq!(fixed.fixed_value(1, 2), Some(&[3u8, 4][..]));
        assert_eq!(fixed.fixed_value(2, 2), None);
        assert_eq!(fixed.fixed_value(u64::MAX, 2), None);
    }

    #[test]
    fn stats_and_conditions() {
        let layout = FieldLayout {
            attribute_num: 1,
            dim_num: 1,
            has_timestamps: false,
            has_delete_meta: false,
        };
        let s = FragmentStats {
            fields: vec![
                FieldStats { min: vec![1], max: vec![2], sum: 3, null_count: 4 },
                FieldStats::default(),
                FieldStats::default(),
            ],
        };
        let p = s.to_payload();
        assert_eq!(FragmentStats::parse(&p, &layout).unwrap(), s);
        for cut in 0..p.len() {
            assert!(FragmentStats::parse(&p[..cut], &layout).is_err());
        }
        let c = ProcessedConditions(vec!["__commits/x.del".into(), String::new()]);
        let p = c.to_payload();
        assert_eq!(ProcessedConditions::parse(&p).unwrap(), c);
        for cut in 0..p.len() {
            assert!(ProcessedConditions::parse(&p[..cut]).is_err());
        }
        assert_eq!(hex::encode(ProcessedConditions::default().to_payload()), "0000000000000000");
    }
}
