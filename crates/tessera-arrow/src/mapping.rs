//! The type mapping: TileDB datatypes and cell sizes to Arrow types, and the Arrow schema of a
//! read (dimensions, then attributes).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tessera::layers::types::CELL_VAL_NUM_VAR;
use tessera::{Array, ArraySchema, Datatype, Enumeration};

use crate::{Error, Result};

/// Field metadata key holding the TileDB datatype name (`"int32"`, `"datetime_ms"`): the
/// exact TileDB type survives the trip through Arrow, where several map to one Arrow type.
pub const DATATYPE_KEY: &str = "tessera.datatype";
/// Field metadata key holding the cell's value count (`"1"`, `"3"`, `"var"`).
pub const CELL_VAL_NUM_KEY: &str = "tessera.cell_val_num";
/// Field metadata key holding the enumeration name of an enumerated attribute.
pub const ENUMERATION_KEY: &str = "tessera.enumeration";

/// Whether `dt` values are text Arrow reads as (Large)Utf8 when var-sized.
pub(crate) fn is_utf8_text(dt: Datatype) -> bool {
    matches!(dt, Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char | Datatype::GeomWkt)
}

/// Whether `dt` values are opaque bytes (or text in a wide encoding): Arrow binary types.
pub(crate) fn is_bytes(dt: Datatype) -> bool {
    matches!(
        dt,
        Datatype::Blob
            | Datatype::Any
            | Datatype::GeomWkb
            | Datatype::StringUtf16
            | Datatype::StringUtf32
            | Datatype::StringUcs2
            | Datatype::StringUcs4
    )
}

/// The Arrow type of one value of `dt` (numbers, booleans and times; byte types have none).
pub fn value_type(dt: Datatype) -> Option<DataType> {
    use Datatype as D;
    Some(match dt {
        D::Int8 => DataType::Int8,
        D::UInt8 => DataType::UInt8,
        D::Int16 => DataType::Int16,
        D::UInt16 => DataType::UInt16,
        D::Int32 => DataType::Int32,
        D::UInt32 => DataType::UInt32,
        D::Int64 => DataType::Int64,
        D::UInt64 => DataType::UInt64,
        D::Float32 => DataType::Float32,
        D::Float64 => DataType::Float64,
        D::Bool => DataType::Boolean,
        D::DatetimeSec => DataType::Timestamp(TimeUnit::Second, None),
        D::DatetimeMs => DataType::Timestamp(TimeUnit::Millisecond, None),
        D::DatetimeUs => DataType::Timestamp(TimeUnit::Microsecond, None),
        D::DatetimeNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
        D::DatetimeDay => DataType::Date32,
        D::TimeSec => DataType::Duration(TimeUnit::Second),
        D::TimeMs => DataType::Duration(TimeUnit::Millisecond),
        D::TimeUs => DataType::Duration(TimeUnit::Microsecond),
        D::TimeNs => DataType::Duration(TimeUnit::Nanosecond),
        // Units Arrow has no type for: the raw i64 count (the field metadata keeps the unit).
        d if d.is_datetime() || d.is_time() => DataType::Int64,
        _ => return None,
    })
}

/// The Arrow type of a field of `dt` with `cell_val_num` values per cell (see the crate docs
/// for the table).
///
/// # Errors
/// [`Error::Unsupported`] for a cell size Arrow cannot hold (zero values per cell).
pub fn arrow_type(dt: Datatype, cell_val_num: u32) -> Result<DataType> {
    let var = cell_val_num == CELL_VAL_NUM_VAR;
    if cell_val_num == 0 {
        return Err(Error::Unsupported(format!("{dt} with 0 values per cell")));
    }
    if is_utf8_text(dt) || is_bytes(dt) {
        return Ok(match (var, is_utf8_text(dt)) {
            (true, true) => DataType::LargeUtf8,
            (true, false) => DataType::LargeBinary,
            (false, _) => DataType::FixedSizeBinary(width(dt, cell_val_num)?),
        });
    }
    let item = value_type(dt).ok_or_else(|| Error::Unsupported(format!("datatype {dt}")))?;
    let item_field = Arc::new(Field::new("item", item.clone(), false));
    Ok(if var {
        DataType::LargeList(item_field)
    } else if cell_val_num == 1 {
        item
    } else {
        DataType::FixedSizeList(item_field, width(Datatype::UInt8, cell_val_num)?)
    })
}

fn width(dt: Datatype, cell_val_num: u32) -> Result<i32> {
    i32::try_from(dt.size() as u64 * u64::from(cell_val_num))
        .map_err(|_| Error::Unsupported(format!("{dt} cells of {cell_val_num} values")))
}

/// The Arrow key type of an enumerated attribute stored as `dt`.
pub(crate) fn key_type(dt: Datatype) -> Option<DataType> {
    use Datatype as D;
    Some(match dt {
        D::Int8 => DataType::Int8,
        D::UInt8 => DataType::UInt8,
        D::Int16 => DataType::Int16,
        D::UInt16 => DataType::UInt16,
        D::Int32 => DataType::Int32,
        D::UInt32 => DataType::UInt32,
        D::Int64 => DataType::Int64,
        D::UInt64 => DataType::UInt64,
        _ => return None,
    })
}

/// The Arrow field of one TileDB field: its type, nullability and metadata
/// ([`DATATYPE_KEY`], [`CELL_VAL_NUM_KEY`], [`ENUMERATION_KEY`]). An enumerated attribute
/// is a `Dictionary` of its codes' integer type over the enumeration's values.
///
/// # Errors
/// [`Error::Unsupported`] for a type Arrow cannot hold.
pub fn arrow_field(
    name: &str,
    dt: Datatype,
    cell_val_num: u32,
    nullable: bool,
    enumeration: Option<&Enumeration>,
) -> Result<Field> {
    let mut meta = HashMap::from([
        (DATATYPE_KEY.to_owned(), dt.name().to_owned()),
        (
            CELL_VAL_NUM_KEY.to_owned(),
            if cell_val_num == CELL_VAL_NUM_VAR { "var".into() } else { cell_val_num.to_string() },
        ),
    ]);
    let data_type = match enumeration {
        Some(e) => {
            meta.insert(ENUMERATION_KEY.to_owned(), e.name.clone());
            let key = key_type(dt).filter(|_| cell_val_num == 1).ok_or_else(|| {
                Error::Unsupported(format!("enumeration {:?} on a {dt} attribute", e.name))
            })?;
            DataType::Dictionary(Box::new(key), Box::new(arrow_type(e.datatype, e.cell_val_num)?))
        }
        None => arrow_type(dt, cell_val_num)?,
    };
    Ok(Field::new(name, data_type, nullable).with_metadata(meta))
}

/// The enumeration of attribute `name`, if it has one.
pub(crate) fn enumeration_of<'e>(
    schema: &ArraySchema,
    enumerations: &'e [Enumeration],
    name: &str,
) -> Option<&'e Enumeration> {
    let e = schema.attribute(name)?.enumeration.as_ref()?;
    enumerations.iter().find(|x| &x.name == e)
}

/// Which fields a read returns: `None` means all (dimensions in schema order, then
/// attributes in schema order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projection {
    /// The dimensions, in this order (`None`: every dimension).
    pub dimensions: Option<Vec<String>>,
    /// The attributes, in this order (`None`: every attribute).
    pub attributes: Option<Vec<String>>,
}

impl Projection {
    /// Every dimension and attribute.
    pub fn all() -> Self {
        Projection::default()
    }

    /// The names of the fields, dimensions first.
    pub fn names(&self, schema: &ArraySchema) -> Vec<String> {
        let dims = match &self.dimensions {
            Some(d) => d.clone(),
            None => schema.dimensions.iter().map(|d| d.name.clone()).collect(),
        };
        let attrs = match &self.attributes {
            Some(a) => a.clone(),
            None => schema.attributes.iter().map(|a| a.name.clone()).collect(),
        };
        dims.into_iter().chain(attrs).collect()
    }
}

/// The Arrow schema of `array` for `projection`: dimensions (never nullable), then
/// attributes.
///
/// # Errors
/// [`Error::UnknownField`] for a name the array does not have; [`Error::Unsupported`] for a
/// type Arrow cannot hold.
pub fn arrow_schema(array: &Array, projection: &Projection) -> Result<SchemaRef> {
    let schema = array.schema();
    let mut fields = Vec::new();
    for name in projection.names(schema) {
        fields.push(schema_field(schema, array.enumerations(), &name)?);
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// The Arrow field of the dimension or attribute `name` of `schema`.
pub(crate) fn schema_field(
    schema: &ArraySchema,
    enumerations: &[Enumeration],
    name: &str,
) -> Result<Field> {
    if let Some(d) = schema.dimension(name) {
        return arrow_field(&d.name, d.datatype, d.cell_val_num, false, None);
    }
    let a = schema.attribute(name).ok_or_else(|| Error::UnknownField(name.to_owned()))?;
    let e = match &a.enumeration {
        Some(n) => Some(enumerations.iter().find(|e| &e.name == n).ok_or_else(|| {
            Error::Unsupported(format!("attribute {name:?}: enumeration {n:?} is not loaded"))
        })?),
        None => None,
    };
    arrow_field(&a.name, a.datatype, a.cell_val_num, a.nullable, e)
}

/// The TileDB datatype and cell size recorded in a field's metadata, if any.
pub fn field_datatype(field: &Field) -> Option<(Datatype, u32)> {
    let dt = Datatype::from_name(field.metadata().get(DATATYPE_KEY)?).ok()?;
    let cvn = match field.metadata().get(CELL_VAL_NUM_KEY).map(String::as_str) {
        Some("var") => CELL_VAL_NUM_VAR,
        Some(n) => n.parse().ok()?,
        None => 1,
    };
    Some((dt, cvn))
}

/// The TileDB datatype and cell size that hold values of Arrow type `data_type` best, for
/// fields without Tessera metadata (computed SQL columns, data from elsewhere): the inverse
/// of [`arrow_type`] where it is one to one.
///
/// # Errors
/// [`Error::Unsupported`] for an Arrow type with no TileDB counterpart.
pub fn tiledb_type(data_type: &DataType) -> Result<(Datatype, u32)> {
    use Datatype as D;
    let one = |d| Ok((d, 1));
    match data_type {
        DataType::Int8 => one(D::Int8),
        DataType::UInt8 => one(D::UInt8),
        DataType::Int16 => one(D::Int16),
        DataType::UInt16 => one(D::UInt16),
        DataType::Int32 => one(D::Int32),
        DataType::UInt32 => one(D::UInt32),
        DataType::Int64 => one(D::Int64),
        DataType::UInt64 => one(D::UInt64),
        DataType::Float32 => one(D::Float32),
        DataType::Float64 => one(D::Float64),
        DataType::Boolean => one(D::Bool),
        DataType::Timestamp(TimeUnit::Second, _) => one(D::DatetimeSec),
        DataType::Timestamp(TimeUnit::Millisecond, _) => one(D::DatetimeMs),
        DataType::Timestamp(TimeUnit::Microsecond, _) => one(D::DatetimeUs),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => one(D::DatetimeNs),
        DataType::Date32 => one(D::DatetimeDay),
        DataType::Duration(TimeUnit::Second) => one(D::TimeSec),
        DataType::Duration(TimeUnit::Millisecond) => one(D::TimeMs),
        DataType::Duration(TimeUnit::Microsecond) => one(D::TimeUs),
        DataType::Duration(TimeUnit::Nanosecond) => one(D::TimeNs),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Ok((D::StringUtf8, CELL_VAL_NUM_VAR))
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            Ok((D::Blob, CELL_VAL_NUM_VAR))
        }
        DataType::FixedSizeBinary(n) => Ok((D::Blob, *n as u32)),
        DataType::FixedSizeList(f, n) => match tiledb_type(f.data_type())? {
            (d, 1) => Ok((d, *n as u32)),
            _ => Err(Error::Unsupported(format!("Arrow type {data_type}"))),
        },
        DataType::List(f) | DataType::LargeList(f) => match tiledb_type(f.data_type())? {
            (d, 1) => Ok((d, CELL_VAL_NUM_VAR)),
            _ => Err(Error::Unsupported(format!("Arrow type {data_type}"))),
        },
        DataType::Dictionary(_, v) => tiledb_type(v),
        other => Err(Error::Unsupported(format!("Arrow type {other}"))),
    }
}
