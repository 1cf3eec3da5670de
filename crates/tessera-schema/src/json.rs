//! The schema JSON of the `tessera` CLI (`tessera schema --json`, `tessera create --schema`).
//!
//! Every key and option name follows `docs/cli.md`: TileDB's lowercase type names, filters as
//! `{"type": "zstd", "level": 3}`, values as JSON numbers or strings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value as Json};
use tessera_filters::{Filter, FilterPipeline};
use tessera_types::{
    ArrayType, CELL_VAL_NUM_VAR, CurrentDomainType, DataOrder, Datatype, FilterType, Layout,
    WebpInputFormat,
};

use crate::{
    ArraySchema, Attribute, CurrentDomain, Dimension, DimensionLabel, Enumeration, EnumerationRef,
    Error, Result, Value,
};

/// The whole schema as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaJson {
    /// `"dense"` or `"sparse"`.
    pub array_type: String,
    /// `"row-major"` or `"col-major"`.
    #[serde(default = "row_major")]
    pub tile_order: String,
    /// `"row-major"`, `"col-major"` or `"hilbert"`.
    #[serde(default = "row_major")]
    pub cell_order: String,
    /// Sparse tile capacity.
    #[serde(default = "default_capacity")]
    pub capacity: u64,
    /// Whether duplicate coordinates are allowed.
    #[serde(default)]
    pub allows_duplicates: bool,
    /// Dimensions in order.
    pub dimensions: Vec<DimensionJson>,
    /// Attributes in order.
    #[serde(default)]
    pub attributes: Vec<AttributeJson>,
    /// Enumerations by name.
    #[serde(default)]
    pub enumerations: BTreeMap<String, EnumerationJson>,
    /// One `[low, high]` per dimension, or null.
    #[serde(default)]
    pub current_domain: Option<Vec<[Json; 2]>>,
    /// Default dimension filters.
    #[serde(default = "default_zstd")]
    pub coords_filters: Vec<FilterJson>,
    /// Offsets filters.
    #[serde(default = "default_zstd")]
    pub offsets_filters: Vec<FilterJson>,
    /// Validity filters.
    #[serde(default = "default_rle")]
    pub validity_filters: Vec<FilterJson>,
    /// Dimension labels (printed only when there are some).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension_labels: Option<Vec<LabelJson>>,
}

/// A dimension as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DimensionJson {
    /// Name.
    pub name: String,
    /// Datatype name.
    #[serde(rename = "type")]
    pub datatype: String,
    /// `[low, high]`, null for string dimensions.
    #[serde(default)]
    pub domain: Option<[Json; 2]>,
    /// Tile extent, null for none.
    #[serde(default)]
    pub tile: Option<Json>,
    /// The dimension's own filters.
    #[serde(default)]
    pub filters: Vec<FilterJson>,
}

/// An attribute as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttributeJson {
    /// Name.
    pub name: String,
    /// Datatype name.
    #[serde(rename = "type")]
    pub datatype: String,
    /// An integer, or `"var"` (omitted: 1, or var for `any`).
    #[serde(default)]
    pub cell_val_num: Option<Json>,
    /// Whether cells may be null.
    #[serde(default)]
    pub nullable: bool,
    /// Fill value (omitted: TileDB's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<Json>,
    /// Validity of the fill value (nullable attributes only; default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill_validity: Option<bool>,
    /// Filters.
    #[serde(default)]
    pub filters: Vec<FilterJson>,
    /// Enumeration name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enumeration: Option<String>,
    /// Declared order, `"increasing"` or `"decreasing"` (omitted: unordered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
}

/// A dimension label as JSON (printed only when the schema has labels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelJson {
    /// Label name.
    pub name: String,
    /// Name of the labelled dimension.
    pub dimension: String,
    /// Label attribute name in the label array.
    pub attribute: String,
    /// `"increasing"` or `"decreasing"`.
    pub order: String,
    /// Label datatype.
    #[serde(rename = "type")]
    pub datatype: String,
    /// An integer or `"var"`.
    pub cell_val_num: Json,
    /// Location of the label array as stored.
    pub uri: String,
    /// Whether `uri` is relative to the array.
    pub relative: bool,
    /// Whether the label array is external.
    pub external: bool,
}

/// An enumeration as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnumerationJson {
    /// Datatype name.
    #[serde(rename = "type")]
    pub datatype: String,
    /// Whether the values are ordered.
    #[serde(default)]
    pub ordered: bool,
    /// The values.
    pub values: Vec<Json>,
}

/// A filter as JSON: `type` plus the options it stores.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterJson {
    /// Filter name (`zstd`, `bit_width_reduction`, ...).
    #[serde(rename = "type")]
    pub filter_type: String,
    /// Compression level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<i32>,
    /// Window of bit width reduction and positive delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_window: Option<u32>,
    /// Scale-float factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// Scale-float offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<f64>,
    /// Scale-float byte width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_width: Option<u64>,
    /// Reinterpret datatype of delta and double delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinterpret_type: Option<String>,
    /// WebP quality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f32>,
    /// WebP input format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// WebP lossless mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossless: Option<bool>,
    /// WebP tile extents `[y, x]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extents: Option<[u16; 2]>,
}

fn row_major() -> String {
    "row-major".into()
}
fn default_capacity() -> u64 {
    tessera_types::DEFAULT_CAPACITY
}
fn default_zstd() -> Vec<FilterJson> {
    vec![FilterJson { filter_type: "zstd".into(), level: Some(-1), ..FilterJson::default() }]
}
fn default_rle() -> Vec<FilterJson> {
    vec![FilterJson { filter_type: "rle".into(), level: Some(-1), ..FilterJson::default() }]
}

// ---------------------------------------------------------------------------------------
// to JSON

/// The JSON view of `schema`; `enumerations` supplies the values of the enumerations it lists.
pub fn to_json(schema: &ArraySchema, enumerations: &[Enumeration]) -> SchemaJson {
    SchemaJson {
        array_type: schema.array_type.name().into(),
        tile_order: schema.tile_order.name().into(),
        cell_order: schema.cell_order.name().into(),
        capacity: schema.capacity,
        allows_duplicates: schema.allows_duplicates,
        dimensions: schema
            .dimensions
            .iter()
            .map(|d| DimensionJson {
                name: d.name.clone(),
                datatype: d.datatype.name().into(),
                domain: d
                    .domain
                    .as_ref()
                    .map(|[lo, hi]| [value_json(d.datatype, lo), value_json(d.datatype, hi)]),
                tile: d.tile_extent.as_ref().map(|e| value_json(d.datatype, e)),
                filters: pipeline_json(&d.filters),
            })
            .collect(),
        attributes: schema.attributes.iter().map(attribute_json).collect(),
        enumerations: schema
            .enumerations
            .iter()
            .filter_map(|r| enumerations.iter().find(|e| e.name == r.name))
            .map(|e| {
                let values = (0..e.len())
                    .filter_map(|i| e.value(i))
                    .map(|v| cell_json(e.datatype, e.cell_val_num, v))
                    .collect();
                (
                    e.name.clone(),
                    EnumerationJson {
                        datatype: e.datatype.name().into(),
                        ordered: e.ordered,
                        values,
                    },
                )
            })
            .collect(),
        current_domain: schema.current_domain.as_ref().map(|cd| {
            schema
                .dimensions
                .iter()
                .zip(&cd.ranges)
                .map(|(d, [lo, hi])| [value_json(d.datatype, lo), value_json(d.datatype, hi)])
                .collect()
        }),
        coords_filters: pipeline_json(&schema.coords_filters),
        offsets_filters: pipeline_json(&schema.offsets_filters),
        validity_filters: pipeline_json(&schema.validity_filters),
        dimension_labels: (!schema.dimension_labels.is_empty()).then(|| {
            schema
                .dimension_labels
                .iter()
                .map(|l| LabelJson {
                    name: l.name.clone(),
                    dimension: schema
                        .dimensions
                        .get(l.dim_index as usize)
                        .map_or_else(|| l.dim_index.to_string(), |d| d.name.clone()),
                    attribute: l.attribute_name.clone(),
                    order: l.order.name().into(),
                    datatype: l.datatype.name().into(),
                    cell_val_num: cell_val_num_json(l.cell_val_num),
                    uri: l.uri.clone(),
                    relative: l.relative_uri,
                    external: l.is_external,
                })
                .collect()
        }),
    }
}

fn cell_val_num_json(n: u32) -> Json {
    if n == CELL_VAL_NUM_VAR { Json::from("var") } else { Json::from(n) }
}

fn attribute_json(a: &Attribute) -> AttributeJson {
    AttributeJson {
        name: a.name.clone(),
        datatype: a.datatype.name().into(),
        cell_val_num: Some(cell_val_num_json(a.cell_val_num)),
        nullable: a.nullable,
        fill: Some(cell_json(a.datatype, a.cell_val_num, &a.fill_value)),
        fill_validity: a.nullable.then_some(a.fill_value_validity),
        filters: pipeline_json(&a.filters),
        enumeration: a.enumeration.clone(),
        order: (a.order != DataOrder::Unordered).then(|| a.order.name().into()),
    }
}

/// One value of `dt` as JSON: integers, shortest-round-trip floats (`"NaN"`, `"Infinity"` as
/// strings), strings for string types.
pub fn value_json(dt: Datatype, bytes: &[u8]) -> Json {
    match Value::decode(dt, bytes) {
        Ok(Value::Int(v)) => Json::from(v),
        Ok(Value::UInt(v)) if dt == Datatype::Bool => Json::from(v != 0),
        Ok(Value::UInt(v)) => Json::from(v),
        Ok(Value::Float(v)) => float_json(v, dt == Datatype::Float32),
        Ok(Value::Bytes(b)) => text_json(dt, &b),
        Err(_) => Json::Null,
    }
}

/// Text of a string-like type: UTF-8 for byte strings, UTF-16LE for UTF-16/UCS-2, UTF-32LE
/// for UTF-32/UCS-4; `{"hex": …}` when the bytes do not decode.
fn text_json(dt: Datatype, b: &[u8]) -> Json {
    let decoded = match dt {
        Datatype::StringUtf16 | Datatype::StringUcs2 if b.len().is_multiple_of(2) => {
            let units: Vec<u16> =
                b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            String::from_utf16(&units).ok()
        }
        Datatype::StringUtf32 | Datatype::StringUcs4 if b.len().is_multiple_of(4) => b
            .chunks_exact(4)
            .map(|c| char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect::<Option<String>>(),
        Datatype::StringUtf16
        | Datatype::StringUcs2
        | Datatype::StringUtf32
        | Datatype::StringUcs4 => None,
        _ => std::str::from_utf8(b).ok().map(str::to_owned),
    };
    decoded.map_or_else(|| bytes_json(b), Json::from)
}

/// The bytes of `text` in the encoding of string type `dt`.
fn text_bytes(dt: Datatype, text: &str) -> Vec<u8> {
    match dt {
        Datatype::StringUtf16 | Datatype::StringUcs2 => {
            text.encode_utf16().flat_map(u16::to_le_bytes).collect()
        }
        Datatype::StringUtf32 | Datatype::StringUcs4 => {
            text.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect()
        }
        _ => text.as_bytes().to_vec(),
    }
}

/// A float as the cells JSONL prints it: the shortest text that reads back to the same value
/// of its own width.
pub fn float_json(v: f64, is_f32: bool) -> Json {
    if v.is_nan() {
        return Json::from("NaN");
    }
    if v.is_infinite() {
        return Json::from(if v > 0.0 { "Infinity" } else { "-Infinity" });
    }
    // serde_json prints an f64 as its shortest round-trip text. For an f32, take the f64
    // nearest to the f32's own shortest text, so that it prints as that text.
    let v = if is_f32 { format!("{:?}", v as f32).parse::<f64>().unwrap_or(v) } else { v };
    Number::from_f64(v).map_or(Json::Null, Json::Number)
}

fn bytes_json(b: &[u8]) -> Json {
    match std::str::from_utf8(b) {
        Ok(s) => Json::from(s),
        Err(_) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            serde_json::json!({ "hex": hex })
        }
    }
}

/// A whole cell (`cell_val_num` values, or a var cell's bytes) as the cells JSONL prints it:
/// one value, an array, a string for char/string types, an array of bytes for blobs.
pub fn cell_json(dt: Datatype, cell_val_num: u32, bytes: &[u8]) -> Json {
    if dt.is_string() || matches!(dt, Datatype::Char | Datatype::GeomWkt) {
        return text_json(dt, bytes);
    }
    if matches!(dt, Datatype::Blob | Datatype::Any | Datatype::GeomWkb) {
        return Json::Array(bytes.iter().map(|b| Json::from(*b)).collect());
    }
    let size = dt.size();
    if cell_val_num == 1 {
        return value_json(dt, bytes);
    }
    Json::Array(bytes.chunks_exact(size).map(|c| value_json(dt, c)).collect())
}

/// A pipeline as the JSON list of its filters.
pub fn pipeline_json(p: &FilterPipeline) -> Vec<FilterJson> {
    p.filters.iter().map(filter_json).collect()
}

fn filter_json(f: &Filter) -> FilterJson {
    let mut j = FilterJson { filter_type: f.filter_type().name().into(), ..FilterJson::default() };
    match *f {
        Filter::Gzip { level }
        | Filter::Zstd { level }
        | Filter::Lz4 { level }
        | Filter::Rle { level }
        | Filter::Bzip2 { level }
        | Filter::Dictionary { level } => j.level = Some(level),
        Filter::DoubleDelta { level, reinterpret } | Filter::Delta { level, reinterpret } => {
            j.level = Some(level);
            j.reinterpret_type = Some(reinterpret.name().into());
        }
        Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
            j.max_window = Some(max_window);
        }
        Filter::ScaleFloat { factor, offset, byte_width } => {
            j.factor = Some(factor);
            j.offset = Some(offset);
            j.byte_width = Some(byte_width);
        }
        Filter::Webp { quality, format, lossless, y_extent, x_extent } => {
            j.quality = Some(quality);
            j.format = Some(format.name().into());
            j.lossless = Some(lossless);
            j.extents = Some([y_extent, x_extent]);
        }
        _ => {}
    }
    j
}

// ---------------------------------------------------------------------------------------
// from JSON

/// Builds a filter from its JSON form; omitted options take TileDB's defaults.
///
/// # Errors
/// Unknown filter names, datatype names or formats.
pub fn filter_from_json(j: &FilterJson) -> Result<Filter> {
    let t = FilterType::from_name(&j.filter_type).map_err(|e| Error::json(e.to_string()))?;
    if t == FilterType::EncryptionAes256Gcm {
        return Err(Error::json("encryption is not a schema filter"));
    }
    let mut f = Filter::with_defaults(t);
    match &mut f {
        Filter::Gzip { level }
        | Filter::Zstd { level }
        | Filter::Lz4 { level }
        | Filter::Rle { level }
        | Filter::Bzip2 { level }
        | Filter::Dictionary { level } => *level = j.level.unwrap_or(*level),
        Filter::DoubleDelta { level, reinterpret } | Filter::Delta { level, reinterpret } => {
            *level = j.level.unwrap_or(*level);
            if let Some(r) = &j.reinterpret_type {
                *reinterpret = Datatype::from_name(r).map_err(|e| Error::json(e.to_string()))?;
            }
        }
        Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
            *max_window = j.max_window.unwrap_or(*max_window);
        }
        Filter::ScaleFloat { factor, offset, byte_width } => {
            *factor = j.factor.unwrap_or(*factor);
            *offset = j.offset.unwrap_or(*offset);
            *byte_width = j.byte_width.unwrap_or(*byte_width);
            if !matches!(*byte_width, 1 | 2 | 4 | 8) {
                return Err(Error::json(format!(
                    "scale_float byte_width {byte_width} is not 1, 2, 4 or 8"
                )));
            }
        }
        Filter::Webp { quality, format, lossless, y_extent, x_extent } => {
            *quality = j.quality.unwrap_or(*quality);
            if let Some(name) = &j.format {
                *format =
                    WebpInputFormat::from_name(name).map_err(|e| Error::json(e.to_string()))?;
            }
            *lossless = j.lossless.unwrap_or(*lossless);
            if let Some([y, x]) = j.extents {
                (*y_extent, *x_extent) = (y, x);
            }
        }
        _ => {}
    }
    Ok(f)
}

fn pipeline_from_json(list: &[FilterJson]) -> Result<FilterPipeline> {
    Ok(FilterPipeline::new(list.iter().map(filter_from_json).collect::<Result<_>>()?))
}

fn datatype(name: &str) -> Result<Datatype> {
    Datatype::from_name(name).map_err(|e| Error::json(e.to_string()))
}

fn layout(name: &str, what: &str) -> Result<Layout> {
    Layout::from_name(name)
        .map_err(|_| Error::json(format!("{what} {name:?} is not row-major, col-major or hilbert")))
}

/// Encodes one JSON value as `dt`.
///
/// # Errors
/// When the value does not fit the type.
pub fn value_from_json(dt: Datatype, j: &Json) -> Result<Vec<u8>> {
    let v = match j {
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::UInt(u)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) if dt.is_float() => match s.as_str() {
            "NaN" => Value::Float(f64::NAN),
            "Infinity" => Value::Float(f64::INFINITY),
            "-Infinity" => Value::Float(f64::NEG_INFINITY),
            _ => return Err(Error::json(format!("{s:?} is not a {dt} value"))),
        },
        Json::String(s) => Value::Bytes(text_bytes(dt, s)),
        Json::Bool(b) => Value::UInt(u64::from(*b)),
        Json::Object(o) if o.contains_key("hex") => {
            let hex = o.get("hex").and_then(Json::as_str).unwrap_or("");
            Value::Bytes(decode_hex(hex)?)
        }
        other => return Err(Error::json(format!("{other} is not a {dt} value"))),
    };
    let mut out = Vec::new();
    v.encode(dt, &mut out).map_err(|e| Error::json(e.to_string()))?;
    Ok(out)
}

fn decode_hex(s: &str) -> Result<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return Err(Error::json(format!("{s:?} is not hex")));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| Error::json(format!("{s:?} is not hex")))
        })
        .collect()
}

/// One cell of `cell_val_num` values of `dt` from JSON (a number, a string, or a list).
///
/// # Errors
/// Values that do not fit.
pub fn cell_from_json(dt: Datatype, cell_val_num: u32, j: &Json) -> Result<Vec<u8>> {
    match j {
        Json::Array(items)
            if !(dt.is_string() || matches!(dt, Datatype::Char | Datatype::GeomWkt))
                || cell_val_num == 1 =>
        {
            let mut out = Vec::new();
            for item in items {
                out.extend(value_from_json(dt, item)?);
            }
            Ok(out)
        }
        _ => value_from_json(dt, j),
    }
}

/// Parses schema JSON text into a validated schema and its enumerations (whose file names
/// are left empty for the creator to assign).
///
/// # Errors
/// Malformed JSON, unknown names, values that do not fit, or a schema TileDB would reject.
pub fn from_json_str(text: &str) -> Result<(ArraySchema, Vec<Enumeration>)> {
    let j: SchemaJson = serde_json::from_str(text).map_err(|e| Error::json(e.to_string()))?;
    from_json(&j)
}

/// Builds a validated schema and its enumerations from the JSON form.
///
/// # Errors
/// As [`from_json_str`].
pub fn from_json(j: &SchemaJson) -> Result<(ArraySchema, Vec<Enumeration>)> {
    let array_type = ArrayType::from_name(&j.array_type).map_err(|_| {
        Error::json(format!("array_type {:?} is not dense or sparse", j.array_type))
    })?;
    let cell_order = layout(&j.cell_order, "cell_order")?;
    // With Hilbert cells the tile order means nothing; it is stored as row-major.
    let tile_order = if cell_order == Layout::Hilbert {
        Layout::RowMajor
    } else {
        layout(&j.tile_order, "tile_order")?
    };
    let mut b = ArraySchema::builder(array_type)
        .tile_order(tile_order)
        .cell_order(cell_order)
        .capacity(j.capacity)
        .allows_duplicates(j.allows_duplicates)
        .coords_filters(pipeline_from_json(&j.coords_filters)?)
        .offsets_filters(pipeline_from_json(&j.offsets_filters)?)
        .validity_filters(pipeline_from_json(&j.validity_filters)?);
    let mut dims = Vec::new();
    for d in &j.dimensions {
        let dt = datatype(&d.datatype)?;
        let mut dim = Dimension::new(&d.name, dt).filters(pipeline_from_json(&d.filters)?);
        if let Some([lo, hi]) = &d.domain {
            dim.domain = Some([value_from_json(dt, lo)?, value_from_json(dt, hi)?]);
        }
        if let Some(t) = &d.tile {
            dim.tile_extent = Some(value_from_json(dt, t)?);
        }
        dims.push(dim.clone());
        b = b.dimension(dim);
    }
    for a in &j.attributes {
        b = b.attribute(attribute_from_json(a)?);
    }
    let mut enumerations = Vec::new();
    for (name, e) in &j.enumerations {
        enumerations.push(enumeration_from_json(name, e)?);
        b = b.enumeration(EnumerationRef { name: name.clone(), path: String::new() });
    }
    if let Some(ranges) = &j.current_domain {
        if ranges.len() != dims.len() {
            return Err(Error::json(format!(
                "current_domain has {} ranges for {} dimensions",
                ranges.len(),
                dims.len()
            )));
        }
        let ranges = dims
            .iter()
            .zip(ranges)
            .map(|(d, [lo, hi])| {
                Ok([value_from_json(d.datatype, lo)?, value_from_json(d.datatype, hi)?])
            })
            .collect::<Result<Vec<_>>>()?;
        b = b.current_domain(Some(CurrentDomain { kind: CurrentDomainType::NdRectangle, ranges }));
    }
    for l in j.dimension_labels.iter().flatten() {
        let dim_index = dims.iter().position(|d| d.name == l.dimension).ok_or_else(|| {
            Error::json(format!("label {:?}: no dimension {:?}", l.name, l.dimension))
        })?;
        let cell_val_num = match &l.cell_val_num {
            Json::String(s) if s == "var" => CELL_VAL_NUM_VAR,
            n => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Error::json(format!("label {:?}: bad cell_val_num {n}", l.name)))?,
        };
        b = b.dimension_label(DimensionLabel {
            dim_index: dim_index as u32,
            name: l.name.clone(),
            relative_uri: l.relative,
            uri: l.uri.clone(),
            attribute_name: l.attribute.clone(),
            order: DataOrder::from_name(&l.order).map_err(|e| Error::json(e.to_string()))?,
            datatype: datatype(&l.datatype)?,
            cell_val_num,
            is_external: l.external,
        });
    }
    let schema = b.build()?;
    Ok((schema, enumerations))
}

/// An attribute from its JSON form (the `attributes` entries of the schema JSON; also
/// `tessera evolve --add-attr`).
///
/// # Errors
/// Unknown datatype or filter names, a bad `cell_val_num`, a fill that does not fit.
pub fn attribute_from_json(a: &AttributeJson) -> Result<Attribute> {
    let dt = datatype(&a.datatype)?;
    let cell_val_num = match &a.cell_val_num {
        None if dt == Datatype::Any => CELL_VAL_NUM_VAR,
        None => 1,
        Some(Json::String(s)) if s == "var" => CELL_VAL_NUM_VAR,
        Some(Json::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n != CELL_VAL_NUM_VAR)
            .ok_or_else(|| Error::json(format!("attribute {:?}: bad cell_val_num {n}", a.name)))?,
        Some(other) => {
            return Err(Error::json(format!("attribute {:?}: bad cell_val_num {other}", a.name)));
        }
    };
    let mut attr = Attribute::new(&a.name, dt).cell_val_num(cell_val_num).nullable(a.nullable);
    attr.filters = pipeline_from_json(&a.filters)?;
    if let Some(fill) = &a.fill {
        attr.fill_value = cell_from_json(dt, cell_val_num, fill)?;
    }
    if a.fill_validity == Some(true) && !a.nullable {
        // libtiledb refuses a fill validity on an attribute that is not nullable, and
        // the JSON of such an attribute has no `fill_validity`.
        return Err(Error::json(format!(
            "attribute {:?}: fill_validity is for nullable attributes",
            a.name
        )));
    }
    attr.fill_value_validity = a.fill_validity.unwrap_or(false);
    if let Some(order) = &a.order {
        attr.order = DataOrder::from_name(order).map_err(|_| {
            Error::json(format!(
                "attribute {:?}: order {order:?} is not increasing or decreasing",
                a.name
            ))
        })?;
    }
    attr.enumeration = a.enumeration.clone();
    Ok(attr)
}

/// An enumeration named `name` from its JSON form (file name left empty).
///
/// # Errors
/// Unknown datatype names, values that do not fit the datatype, duplicate values.
pub fn enumeration_from_json(name: &str, e: &EnumerationJson) -> Result<Enumeration> {
    let dt = datatype(&e.datatype)?;
    let values = enumeration_values_from_json(name, dt, &e.values)?;
    Enumeration::from_values(name, dt, e.ordered, &values)
}

/// The bytes of each value of a JSON list, for an enumeration of datatype `dt` (one cell
/// each; strings, `blob` and `any` are var-sized).
///
/// # Errors
/// Values that do not fit the datatype.
pub fn enumeration_values_from_json(
    name: &str,
    dt: Datatype,
    values: &[Json],
) -> Result<Vec<Vec<u8>>> {
    let var = dt.is_string() || matches!(dt, Datatype::Blob | Datatype::Any);
    values
        .iter()
        .map(|v| {
            cell_from_json(dt, if var { CELL_VAL_NUM_VAR } else { 1 }, v)
                .map_err(|e| Error::json(format!("enumeration {name:?}: value {v}: {e}")))
        })
        .collect()
}

/// An enumeration with its name, as `tessera evolve --add-enum` takes it:
/// `{"name": "colors", "type": "string_utf8", "ordered": false, "values": ["red"]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedEnumerationJson {
    /// Name attributes refer to.
    pub name: String,
    /// Datatype name.
    #[serde(rename = "type")]
    pub datatype: String,
    /// Whether the values are ordered.
    #[serde(default)]
    pub ordered: bool,
    /// The values.
    pub values: Vec<Json>,
}

impl NamedEnumerationJson {
    /// The enumeration (file name left empty).
    ///
    /// # Errors
    /// As [`enumeration_from_json`].
    pub fn to_enumeration(&self) -> Result<Enumeration> {
        let e = EnumerationJson {
            datatype: self.datatype.clone(),
            ordered: self.ordered,
            values: self.values.clone(),
        };
        enumeration_from_json(&self.name, &e)
    }
}
