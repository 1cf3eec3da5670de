//! The checks libtiledb makes before it accepts a schema, and the implicit values it fills in.

use std::collections::HashSet;

use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, Layout};

use crate::{ArraySchema, Dimension, Error, Result, Value};

/// Datatypes TileDB allows for dimensions.
pub(crate) fn is_dimension_type(dt: Datatype) -> bool {
    dt.is_integer()
        || dt.is_float()
        || dt.is_datetime()
        || dt.is_time()
        || dt == Datatype::StringAscii
}

/// The tile extent libtiledb stores for a dimension given none: the domain's range (+1 for
/// integers), computed in the dimension's own type, so it wraps (int8 `[-128, 126]` gives
/// `-1`) or overflows to infinity (float32 near its limits), as libtiledb's is.
pub(crate) fn default_extent(d: &Dimension) -> Result<Option<Vec<u8>>> {
    let Some([lo, hi]) = d.domain_values()? else { return Ok(None) };
    let bytes = match d.datatype {
        Datatype::Float32 => {
            let (lo, hi) = (lo.as_f64().unwrap_or(0.0) as f32, hi.as_f64().unwrap_or(0.0) as f32);
            (hi - lo).to_le_bytes().to_vec()
        }
        Datatype::Float64 => {
            (hi.as_f64().unwrap_or(0.0) - lo.as_f64().unwrap_or(0.0)).to_le_bytes().to_vec()
        }
        dt => {
            let (lo, hi) = (lo.as_i128().unwrap_or(0), hi.as_i128().unwrap_or(0));
            // two's-complement wrap to the type's width
            (hi - lo + 1).to_le_bytes()[..dt.size()].to_vec()
        }
    };
    Ok(Some(bytes))
}

/// Gives every fixed-size dimension without a tile extent the one libtiledb fills in
/// ([`default_extent`]), unless the cell order is Hilbert.
pub(crate) fn fill_default_extents(schema: &mut ArraySchema) -> Result<()> {
    if schema.cell_order == Layout::Hilbert {
        return Ok(());
    }
    for d in &mut schema.dimensions {
        if d.tile_extent.is_none() && !d.is_var() {
            d.tile_extent = default_extent(d)?;
        }
    }
    Ok(())
}

/// libtiledb sets the WebP extents (`[y, x]` = the first two dimensions' tile extents) on the
/// WebP filter of the schema's last attribute only; the others keep `[0, 0]`.
pub(crate) fn fill_webp_extents(schema: &mut ArraySchema) {
    let extent = |i: usize| {
        schema
            .dimensions
            .get(i)
            .and_then(|d| d.tile_extent_value().ok().flatten())
            .and_then(|v| v.as_i128())
    };
    let (Some(y), Some(x)) = (extent(0), extent(1)) else { return };
    let Some(last) = schema.attributes.last_mut() else { return };
    for f in &mut last.filters.filters {
        if let tessera_filters::Filter::Webp { y_extent, x_extent, .. } = f {
            *y_extent = y as u16;
            *x_extent = x as u16;
        }
    }
}

pub(crate) fn validate(s: &ArraySchema) -> Result<()> {
    let dense = s.array_type == ArrayType::Dense;
    if s.dimensions.is_empty() {
        return Err(Error::invalid("the domain has no dimensions"));
    }
    if !matches!(s.tile_order, Layout::RowMajor | Layout::ColMajor) {
        return Err(Error::invalid(format!(
            "tile order {} is not row-major or col-major",
            s.tile_order
        )));
    }
    match s.cell_order {
        Layout::RowMajor | Layout::ColMajor => {}
        Layout::Hilbert if !dense => {}
        Layout::Hilbert => {
            return Err(Error::invalid("Hilbert cell order is only allowed in sparse arrays"));
        }
        l => {
            return Err(Error::invalid(format!(
                "cell order {l} is not row-major, col-major or hilbert"
            )));
        }
    }
    if s.capacity == 0 {
        return Err(Error::invalid("capacity cannot be 0"));
    }
    if dense && s.allows_duplicates {
        return Err(Error::invalid("dense arrays cannot allow duplicates"));
    }
    if dense && s.attributes.is_empty() {
        return Err(Error::invalid("a dense array needs at least one attribute"));
    }

    // libtiledb 2.30: attribute names starting with "__" are reserved (dimensions may use
    // them: tiledb-py names its default dimensions `__dim_0`, `__tiledb_rows`); an attribute
    // may be anonymous (the empty name tiledb-py gives `from_numpy` arrays); a dimension
    // needs a name.
    let mut names = HashSet::new();
    for d in &s.dimensions {
        if d.name.is_empty() {
            return Err(Error::invalid("dimension names cannot be empty"));
        }
        if !names.insert(d.name.as_str()) {
            return Err(Error::invalid(format!(
                "duplicate dimension or attribute name {:?}",
                d.name
            )));
        }
    }
    for a in &s.attributes {
        if a.name.starts_with("__") {
            return Err(Error::invalid(format!(
                "attribute name {:?} is reserved (attribute names cannot start with \"__\")",
                a.name
            )));
        }
        if !names.insert(a.name.as_str()) {
            return Err(Error::invalid(format!(
                "duplicate dimension or attribute name {:?}",
                a.name
            )));
        }
    }

    for d in &s.dimensions {
        validate_dimension(d, dense, s.cell_order)?;
    }
    if dense {
        let first = s.dimensions[0].datatype;
        if let Some(d) = s.dimensions.iter().find(|d| d.datatype != first) {
            return Err(Error::invalid(format!(
                "dense arrays need all dimensions of one datatype ({} is {}, {} is {first})",
                d.name, d.datatype, s.dimensions[0].name
            )));
        }
    }

    let enum_names: HashSet<&str> = s.enumerations.iter().map(|e| e.name.as_str()).collect();
    for a in &s.attributes {
        if a.cell_val_num == 0 {
            return Err(Error::invalid(format!(
                "attribute {:?}: cell_val_num cannot be 0",
                a.name
            )));
        }
        if a.datatype == Datatype::Any && a.cell_val_num != CELL_VAL_NUM_VAR {
            return Err(Error::invalid(format!(
                "attribute {:?}: datatype any must be var-sized",
                a.name
            )));
        }
        let type_size = a.datatype.size();
        let fill_ok = match a.cell_size() {
            Some(size) => a.fill_value.len() == size,
            None => !a.fill_value.is_empty() && a.fill_value.len() % type_size == 0,
        };
        if !fill_ok {
            return Err(Error::invalid(format!(
                "attribute {:?}: fill value of {} bytes does not match a cell of {} x {}",
                a.name,
                a.fill_value.len(),
                if a.is_var() { "var".to_owned() } else { a.cell_val_num.to_string() },
                a.datatype
            )));
        }
        if let Some(e) = &a.enumeration {
            if !enum_names.contains(e.as_str()) {
                return Err(Error::invalid(format!(
                    "attribute {:?}: enumeration {e:?} is not in the schema",
                    a.name
                )));
            }
            if !(a.datatype.is_integer()) || a.cell_val_num != 1 {
                return Err(Error::invalid(format!(
                    "attribute {:?}: an enumeration attribute must hold one integer per cell",
                    a.name
                )));
            }
        }
    }

    if let Some(cd) = &s.current_domain {
        if cd.ranges.len() != s.dimensions.len() {
            return Err(Error::invalid(format!(
                "current domain has {} ranges for {} dimensions",
                cd.ranges.len(),
                s.dimensions.len()
            )));
        }
        for (d, [lo, hi]) in s.dimensions.iter().zip(&cd.ranges) {
            if d.is_var() {
                if lo > hi {
                    return Err(Error::invalid(format!(
                        "current domain of {:?}: low is above high",
                        d.name
                    )));
                }
                continue;
            }
            let (l, h) = (Value::decode(d.datatype, lo)?, Value::decode(d.datatype, hi)?);
            let Some([dl, dh]) = d.domain_values()? else { continue };
            if cmp(&l, &h).is_gt() || cmp(&l, &dl).is_lt() || cmp(&h, &dh).is_gt() {
                return Err(Error::invalid(format!(
                    "current domain of {:?} must be a non-empty range inside the domain",
                    d.name
                )));
            }
        }
    }
    Ok(())
}

pub(crate) fn cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a.as_i128(), b.as_i128(), a, b) {
        (Some(x), Some(y), Value::Int(_) | Value::UInt(_), Value::Int(_) | Value::UInt(_)) => {
            x.cmp(&y)
        }
        _ => a
            .as_f64()
            .unwrap_or(f64::NAN)
            .partial_cmp(&b.as_f64().unwrap_or(f64::NAN))
            .unwrap_or(std::cmp::Ordering::Equal),
    }
}

fn validate_dimension(d: &Dimension, dense: bool, cell_order: Layout) -> Result<()> {
    let name = &d.name;
    if !is_dimension_type(d.datatype) {
        return Err(Error::invalid(format!(
            "dimension {name:?}: datatype {} is not allowed for dimensions",
            d.datatype
        )));
    }
    if dense && !(d.datatype.is_integer() || d.datatype.is_datetime() || d.datatype.is_time()) {
        return Err(Error::invalid(format!(
            "dimension {name:?}: dense arrays need integer or datetime dimensions, not {}",
            d.datatype
        )));
    }
    if d.datatype == Datatype::StringAscii {
        if !d.is_var() {
            return Err(Error::invalid(format!(
                "dimension {name:?}: string dimensions must be var-sized"
            )));
        }
        if d.domain.is_some() {
            return Err(Error::invalid(format!(
                "dimension {name:?}: string dimensions cannot have a domain"
            )));
        }
        if d.tile_extent.is_some() {
            return Err(Error::invalid(format!(
                "dimension {name:?}: string dimensions cannot have a tile extent"
            )));
        }
        return Ok(());
    }
    if d.cell_val_num != 1 {
        return Err(Error::invalid(format!("dimension {name:?}: cell_val_num must be 1")));
    }
    let size = d.datatype.size();
    let Some([lo_b, hi_b]) = &d.domain else {
        return Err(Error::invalid(format!("dimension {name:?}: the domain is empty")));
    };
    if lo_b.len() != size || hi_b.len() != size {
        return Err(Error::invalid(format!(
            "dimension {name:?}: domain bounds do not fit {}",
            d.datatype
        )));
    }
    let lo = Value::decode(d.datatype, lo_b)?;
    let hi = Value::decode(d.datatype, hi_b)?;
    // libtiledb accepts the extent it fills in itself, even where it wrapped or overflowed,
    // unless it wrapped to zero (a full-range integer domain).
    let is_default = d.tile_extent.is_some() && d.tile_extent == default_extent(d)?;
    let zero = d.tile_extent.as_ref().is_some_and(|e| e.iter().all(|&b| b == 0));
    if is_default && !zero {
        return Ok(());
    }
    if d.datatype.is_float() {
        let (l, h) = (lo.as_f64().unwrap_or(f64::NAN), hi.as_f64().unwrap_or(f64::NAN));
        if !l.is_finite() || !h.is_finite() {
            return Err(Error::invalid(format!("dimension {name:?}: the domain must be finite")));
        }
        if l > h {
            return Err(Error::invalid(format!(
                "dimension {name:?}: domain low {l} is above high {h}"
            )));
        }
        if let Some(e) = d.tile_extent_value()? {
            let e = e.as_f64().unwrap_or(f64::NAN);
            if e.is_nan() || e <= 0.0 {
                return Err(Error::invalid(format!(
                    "dimension {name:?}: tile extent must be positive"
                )));
            }
            if e > h - l {
                return Err(Error::invalid(format!(
                    "dimension {name:?}: tile extent {e} exceeds the domain range"
                )));
            }
        }
    } else {
        let (l, h) = (lo.as_i128().unwrap_or(0), hi.as_i128().unwrap_or(0));
        if l > h {
            return Err(Error::invalid(format!(
                "dimension {name:?}: domain low {l} is above high {h}"
            )));
        }
        if h - l + 1 > i128::from(u64::MAX) {
            return Err(Error::invalid(format!(
                "dimension {name:?}: the domain range exceeds 2^64 - 1"
            )));
        }
        if let Some(e) = d.tile_extent_value()? {
            let e = e.as_i128().unwrap_or(0);
            if e <= 0 {
                return Err(Error::invalid(format!(
                    "dimension {name:?}: tile extent must be positive"
                )));
            }
            if e > h - l + 1 {
                return Err(Error::invalid(format!(
                    "dimension {name:?}: tile extent {e} exceeds the domain range [{l}, {h}]"
                )));
            }
        } else if dense && cell_order != Layout::Hilbert {
            return Err(Error::invalid(format!(
                "dimension {name:?}: dense dimensions need a tile extent"
            )));
        }
    }
    Ok(())
}
