//! The array metadata file codec: the payload of one `__meta/__t1_t2_label` file
//! (`docs/format/metadata.md`), as libtiledb 2.30 writes and reads it
//! (`tiledb/sm/metadata/metadata.cc`). Groups keep their metadata in the same files.
//!
//! A file is one generic tile whose payload holds the entries back to back, sorted by key
//! bytes: `u32 key_len, key, u8 del` and, for a put, `u8 datatype, u32 value_num,
//! value_num × size bytes`. [`parse_payload`] and [`to_payload`] convert between a payload and
//! [`MetadataEntry`] lists (a put or a deletion of one key). Which files apply at a timestamp,
//! and writing them, is the engine's part (`tessera_query::metadata`).
//!
//! ```
//! use tessera_fragment::array_metadata::{MetadataEntry, MetadataValue, parse_payload, to_payload};
//!
//! let entries = vec![
//!     MetadataEntry::put("count", MetadataValue::int64s(&[42])?),
//!     MetadataEntry::delete("old"),
//! ];
//! let payload = to_payload(&entries)?;
//! assert_eq!(parse_payload(&payload)?, entries);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};
use tessera_schema::json::value_json;
use tessera_types::{ByteReader, Datatype};

/// The structure name payload errors carry.
const STRUCTURE: &str = "array metadata";
/// The structure name of value errors (building a value, not reading a file).
const VALUE: &str = "array metadata value";

/// The codec errors of this module: structure, field and byte offset.
pub type CodecResult<T> = tessera_types::Result<T>;

/// One typed metadata value: `num` values of `datatype`, little-endian (a string is `num`
/// bytes, or `num` code units for UTF-16/32).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetadataValue {
    datatype: Datatype,
    num: u32,
    bytes: Vec<u8>,
}

/// One entry of a metadata file: a put of `key` (`value` is `Some`) or its deletion (`None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetadataEntry {
    /// The key's bytes. libtiledb keys are any bytes (C strings, so without NUL when written
    /// through its API); tiledb-py writes UTF-8.
    pub key: Vec<u8>,
    /// The value put, or `None` for a deletion.
    pub value: Option<MetadataValue>,
}

impl MetadataEntry {
    /// A put of `key`.
    pub fn put(key: impl Into<Vec<u8>>, value: MetadataValue) -> Self {
        MetadataEntry { key: key.into(), value: Some(value) }
    }

    /// A deletion of `key`.
    pub fn delete(key: impl Into<Vec<u8>>) -> Self {
        MetadataEntry { key: key.into(), value: None }
    }

    /// Whether the entry deletes its key.
    pub fn is_deletion(&self) -> bool {
        self.value.is_none()
    }
}

/// An invalid-input error about a value or key given by the caller (offset 0).
fn invalid(
    structure: &'static str,
    field: &'static str,
    reason: impl Into<String>,
) -> tessera_types::Error {
    tessera_types::Error::invalid(structure, field, 0, reason)
}

impl MetadataValue {
    /// A value of `num` values of `datatype` in `bytes`.
    ///
    /// # Errors
    /// [`tessera_types::Error::Invalid`] when `bytes` does not hold exactly `num` values.
    pub fn new(datatype: Datatype, num: u32, bytes: Vec<u8>) -> CodecResult<Self> {
        let want = u64::from(num) * datatype.size() as u64;
        if bytes.len() as u64 != want {
            return Err(invalid(
                VALUE,
                "value",
                format!("{num} {datatype} values need {want} bytes, got {}", bytes.len()),
            ));
        }
        Ok(MetadataValue { datatype, num, bytes })
    }

    /// A value of `datatype` holding `bytes` (a whole number of values).
    ///
    /// # Errors
    /// [`tessera_types::Error::Invalid`] when `bytes` is not a whole number of values, or more
    /// than `u32::MAX` of them (the file's `value_num` is a `u32`).
    pub fn from_bytes(datatype: Datatype, bytes: Vec<u8>) -> CodecResult<Self> {
        let size = datatype.size();
        if !bytes.len().is_multiple_of(size) {
            return Err(invalid(
                VALUE,
                "value",
                format!("{} bytes is not a whole number of {datatype} values", bytes.len()),
            ));
        }
        let num = u32::try_from(bytes.len() / size).map_err(|_| {
            invalid(VALUE, "value_num", format!("{} values do not fit a u32", bytes.len() / size))
        })?;
        Ok(MetadataValue { datatype, num, bytes })
    }

    /// An `int64` value (what tiledb-py stores for Python `int`s and `bool`s).
    ///
    /// # Errors
    /// When there are more than `u32::MAX` values.
    pub fn int64s(values: &[i64]) -> CodecResult<Self> {
        Self::from_bytes(Datatype::Int64, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A `float64` value (what tiledb-py stores for Python `float`s).
    ///
    /// # Errors
    /// When there are more than `u32::MAX` values.
    pub fn float64s(values: &[f64]) -> CodecResult<Self> {
        Self::from_bytes(Datatype::Float64, values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A `string_utf8` value (what tiledb-py stores for a Python `str`).
    ///
    /// # Errors
    /// When the text is longer than `u32::MAX` bytes.
    pub fn utf8(text: &str) -> CodecResult<Self> {
        Self::from_bytes(Datatype::StringUtf8, text.as_bytes().to_vec())
    }

    /// A `blob` value (what tiledb-py stores for Python `bytes`).
    ///
    /// # Errors
    /// When `bytes` is longer than `u32::MAX`.
    pub fn blob(bytes: &[u8]) -> CodecResult<Self> {
        Self::from_bytes(Datatype::Blob, bytes.to_vec())
    }

    /// The datatype.
    pub fn datatype(&self) -> Datatype {
        self.datatype
    }

    /// The number of values (0 for an empty value; libtiledb's API reports that as 1 value
    /// with a null pointer).
    pub fn num(&self) -> u32 {
        self.num
    }

    /// The values' little-endian bytes (`num × datatype size`).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The values as `i64`: for the integer types whose values all fit an `i64`, `bool`
    /// (0 / 1), and the `datetime_*` / `time_*` types (their counts). `None` for other types.
    pub fn as_i64s(&self) -> Option<Vec<i64>> {
        use Datatype as D;
        let b = &self.bytes;
        let size = self.datatype.size();
        let chunks = b.chunks_exact(size);
        let values = match self.datatype {
            D::Int8 => chunks.map(|c| i64::from(c[0] as i8)).collect(),
            D::UInt8 | D::Bool => chunks.map(|c| i64::from(c[0])).collect(),
            D::Int16 => chunks.map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
            D::UInt16 => chunks.map(|c| i64::from(u16::from_le_bytes([c[0], c[1]]))).collect(),
            D::Int32 => chunks.map(|c| i64::from(i32::from_le_bytes(le4(c)))).collect(),
            D::UInt32 => chunks.map(|c| i64::from(u32::from_le_bytes(le4(c)))).collect(),
            D::UInt64 => chunks
                .map(|c| i64::try_from(u64::from_le_bytes(le8(c))).ok())
                .collect::<Option<_>>()?,
            d if d == D::Int64 || d.is_datetime() || d.is_time() => {
                chunks.map(|c| i64::from_le_bytes(le8(c))).collect()
            }
            _ => return None,
        };
        Some(values)
    }

    /// The values of a `float32` or `float64` value as `f64`; `None` for other types.
    pub fn as_f64s(&self) -> Option<Vec<f64>> {
        let chunks = self.bytes.chunks_exact(self.datatype.size());
        match self.datatype {
            Datatype::Float32 => {
                Some(chunks.map(|c| f64::from(f32::from_le_bytes(le4(c)))).collect())
            }
            Datatype::Float64 => Some(chunks.map(|c| f64::from_le_bytes(le8(c))).collect()),
            _ => None,
        }
    }

    /// The text of a `string_utf8`, `string_ascii`, `char` or `geom_wkt` value when its bytes
    /// are UTF-8; `None` otherwise.
    pub fn as_str(&self) -> Option<&str> {
        match self.datatype {
            Datatype::StringUtf8 | Datatype::StringAscii | Datatype::Char | Datatype::GeomWkt => {
                std::str::from_utf8(&self.bytes).ok()
            }
            _ => None,
        }
    }

    /// The value as `tessera meta list --json` prints it (`docs/cli.md`): the text of the
    /// string types (`char`, `string_*`, `geom_wkt`; UTF-16 / UTF-32 decoded little-endian) as
    /// one string, or `{"hex": …}` when the bytes do not decode; `blob`, `any` and `geom_wkb`
    /// as `{"hex": …}` (lowercase); every other type as a list of its values, even for one
    /// value: integers and datetimes as JSON integers, `bool` as `true` / `false`, floats as
    /// the shortest text that reads back to the same value of their own width (`"NaN"`,
    /// `"Infinity"`, `"-Infinity"` as strings).
    pub fn value_json(&self) -> Json {
        let dt = self.datatype;
        if dt.is_string() || matches!(dt, Datatype::Char | Datatype::GeomWkt) {
            return text_json(dt, &self.bytes);
        }
        if matches!(dt, Datatype::Blob | Datatype::Any | Datatype::GeomWkb) {
            return hex_json(&self.bytes);
        }
        Json::Array(self.bytes.chunks_exact(dt.size()).map(|c| value_json(dt, c)).collect())
    }

    /// `{"type": <datatype name>, "value": <`[`Self::value_json`]`>}`, one entry of
    /// `tessera meta list --json`.
    pub fn to_json(&self) -> Json {
        let mut m = Map::new();
        m.insert("type".into(), Json::from(self.datatype.name()));
        m.insert("value".into(), self.value_json());
        Json::Object(m)
    }

    /// The value of `datatype` that [`Self::value_json`] prints as `json` (its inverse), for
    /// values given as JSON (e.g. `tessera meta put`):
    /// * `{"hex": "…"}`: the raw bytes, for any type;
    /// * a string: for the string types, its text in the type's encoding (UTF-8, or UTF-16 /
    ///   UTF-32 little-endian); for `blob`, `any` and `geom_wkb`, its UTF-8 bytes;
    /// * for the other types, a list of values or one value: integers in the type's range
    ///   (datetimes and times as their counts), `true` / `false` (or 0 / 1) for `bool`, numbers
    ///   and `"NaN"`, `"Infinity"`, `"-Infinity"` for floats.
    ///
    /// # Errors
    /// [`tessera_types::Error::Invalid`] (field `value`) naming the element that does not fit.
    pub fn from_json(datatype: Datatype, json: &Json) -> CodecResult<Self> {
        let dt = datatype;
        if let Some(object) = json.as_object() {
            let hex = match object.get("hex") {
                Some(Json::String(hex)) if object.len() == 1 => hex,
                _ => {
                    return Err(invalid(
                        VALUE,
                        "value",
                        format!("an object value must be {{\"hex\": \"…\"}}, not {json}"),
                    ));
                }
            };
            return Self::from_bytes(dt, parse_hex(hex)?);
        }
        let text_type = dt.is_string() || matches!(dt, Datatype::Char | Datatype::GeomWkt);
        let byte_type = matches!(dt, Datatype::Blob | Datatype::Any | Datatype::GeomWkb);
        if text_type || byte_type {
            let Some(text) = json.as_str() else {
                return Err(invalid(
                    VALUE,
                    "value",
                    format!("a {dt} value is a string, not {json}"),
                ));
            };
            let bytes = match dt {
                Datatype::StringUtf16 | Datatype::StringUcs2 => {
                    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
                }
                Datatype::StringUtf32 | Datatype::StringUcs4 => {
                    text.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect()
                }
                _ => text.as_bytes().to_vec(),
            };
            return Self::from_bytes(dt, bytes);
        }
        let items = match json {
            Json::Array(items) => items.as_slice(),
            one => std::slice::from_ref(one),
        };
        let mut bytes = Vec::with_capacity(items.len() * dt.size());
        for (i, item) in items.iter().enumerate() {
            encode_json_number(dt, item, &mut bytes).map_err(|why| {
                invalid(VALUE, "value", format!("element {i} ({item}) does not fit {dt}: {why}"))
            })?;
        }
        Self::from_bytes(dt, bytes)
    }
}

fn le4(c: &[u8]) -> [u8; 4] {
    [c[0], c[1], c[2], c[3]]
}

fn le8(c: &[u8]) -> [u8; 8] {
    [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]
}

/// The text of a string type's bytes (UTF-8; UTF-16 / UTF-32 little-endian for
/// `string_utf16` / `ucs2` and `string_utf32` / `ucs4`), or `{"hex": …}` when they do not
/// decode.
fn text_json(dt: Datatype, b: &[u8]) -> Json {
    let text = match dt {
        Datatype::StringUtf16 | Datatype::StringUcs2 => {
            let units: Vec<u16> =
                b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            String::from_utf16(&units).ok()
        }
        Datatype::StringUtf32 | Datatype::StringUcs4 => b
            .chunks_exact(4)
            .map(|c| char::from_u32(u32::from_le_bytes(le4(c))))
            .collect::<Option<String>>(),
        _ => std::str::from_utf8(b).ok().map(str::to_owned),
    };
    text.map_or_else(|| hex_json(b), Json::from)
}

fn hex_json(bytes: &[u8]) -> Json {
    use std::fmt::Write;
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(hex, "{b:02x}");
    }
    let mut m = Map::new();
    m.insert("hex".into(), Json::from(hex));
    Json::Object(m)
}

fn parse_hex(hex: &str) -> CodecResult<Vec<u8>> {
    let bad = || invalid(VALUE, "value", format!("{hex:?} is not an even number of hex digits"));
    if !hex.len().is_multiple_of(2) {
        return Err(bad());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|d| u8::from_str_radix(d, 16).ok()).ok_or_else(bad))
        .collect()
}

/// Appends one JSON element as a value of the numeric (or bool, datetime, time) type `dt`.
fn encode_json_number(
    dt: Datatype,
    item: &Json,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    use Datatype as D;
    match dt {
        D::Float32 | D::Float64 => {
            let v = match item {
                Json::Number(n) => n.as_f64().ok_or("not a number")?,
                Json::String(s) if s == "NaN" => f64::NAN,
                Json::String(s) if s == "Infinity" => f64::INFINITY,
                Json::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
                _ => return Err("not a number".into()),
            };
            if dt == D::Float32 {
                out.extend_from_slice(&(v as f32).to_le_bytes());
            } else {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            let v: i128 = match item {
                Json::Bool(b) if dt == D::Bool => i128::from(*b),
                Json::Number(n) => match (n.as_i64(), n.as_u64()) {
                    (Some(v), _) => i128::from(v),
                    (None, Some(v)) => i128::from(v),
                    _ => return Err("not an integer".into()),
                },
                _ => return Err("not an integer".into()),
            };
            let (lo, hi): (i128, i128) = match dt {
                D::Int8 => (i8::MIN.into(), i8::MAX.into()),
                D::UInt8 => (0, u8::MAX.into()),
                D::Bool => (0, 1),
                D::Int16 => (i16::MIN.into(), i16::MAX.into()),
                D::UInt16 => (0, u16::MAX.into()),
                D::Int32 => (i32::MIN.into(), i32::MAX.into()),
                D::UInt32 => (0, u32::MAX.into()),
                D::UInt64 => (0, u64::MAX.into()),
                _ => (i64::MIN.into(), i64::MAX.into()),
            };
            if v < lo || v > hi {
                return Err("out of range".into());
            }
            out.extend_from_slice(&v.to_le_bytes()[..dt.size()]);
        }
    }
    Ok(())
}

/// Decodes the payload of one metadata file (the generic tile's content): its entries in file
/// order, as libtiledb's `Metadata::deserialize` reads them. Any non-zero `del` byte is a
/// deletion, as in libtiledb.
///
/// # Errors
/// [`tessera_types::Error::Truncated`] when a field (`key_len`, `key`, `del`, `datatype`,
/// `value_num`, `value`) runs past the end, and [`tessera_types::Error::Invalid`] for an
/// unknown datatype id; both name the field and its byte offset in the payload. Lengths are
/// checked against the bytes left before anything is allocated.
pub fn parse_payload(bytes: &[u8]) -> CodecResult<Vec<MetadataEntry>> {
    let mut r = ByteReader::new(bytes, STRUCTURE);
    let mut entries = Vec::new();
    while !r.is_empty() {
        let key_len = r.u32("key_len")?;
        let key = r.bytes_u64(u64::from(key_len), "key")?.to_vec();
        if r.u8("del")? != 0 {
            entries.push(MetadataEntry::delete(key));
            continue;
        }
        let at = r.position() as u64;
        let id = r.u8("datatype")?;
        let datatype = Datatype::from_id(id).map_err(|_| {
            tessera_types::Error::invalid(
                STRUCTURE,
                "datatype",
                at,
                format!("unknown datatype id {id}"),
            )
        })?;
        let num = r.u32("value_num")?;
        let len = u64::from(num) * datatype.size() as u64;
        let value = r.bytes_u64(len, "value")?.to_vec();
        entries.push(MetadataEntry::put(key, MetadataValue { datatype, num, bytes: value }));
    }
    Ok(entries)
}

/// Encodes entries as one metadata file's payload, as libtiledb's `Metadata::serialize` does:
/// sorted by key bytes (a `std::map`), one entry per key (of several entries for the same key,
/// the last one given counts, as in a write session). `to_payload(&parse_payload(x)?) == x`
/// for every file libtiledb writes. An empty list gives an empty payload (libtiledb then
/// writes no file).
///
/// # Errors
/// [`tessera_types::Error::Invalid`] for a key longer than `u32::MAX` bytes.
pub fn to_payload(entries: &[MetadataEntry]) -> CodecResult<Vec<u8>> {
    let map: BTreeMap<&[u8], Option<&MetadataValue>> =
        entries.iter().map(|e| (e.key.as_slice(), e.value.as_ref())).collect();
    to_payload_sorted(map)
}

/// Encodes `(key, value)` pairs that are already sorted by key bytes and unique (`None` is a
/// deletion), as [`to_payload`] does after sorting: the payload of a session or of a
/// consolidated state kept in a sorted map.
///
/// # Errors
/// As [`to_payload`].
pub fn to_payload_sorted<'a>(
    map: impl IntoIterator<Item = (&'a [u8], Option<&'a MetadataValue>)>,
) -> CodecResult<Vec<u8>> {
    let mut out = Vec::new();
    for (key, value) in map {
        let key_len = u32::try_from(key.len()).map_err(|_| {
            invalid(
                STRUCTURE,
                "key_len",
                format!("a key of {} bytes does not fit a u32", key.len()),
            )
        })?;
        out.extend_from_slice(&key_len.to_le_bytes());
        out.extend_from_slice(key);
        match value {
            None => out.push(1),
            Some(v) => {
                out.push(0);
                out.push(v.datatype.id());
                out.extend_from_slice(&v.num.to_le_bytes());
                out.extend_from_slice(&v.bytes);
            }
        }
    }
    Ok(out)
}

/// Checks a key a writer is given as libtiledb's API does: no NUL byte (keys are C strings)
/// and at most `u32::MAX` bytes.
///
/// # Errors
/// [`tessera_types::Error::Invalid`] naming the field (`key` or `key_len`).
pub fn check_key(key: &[u8]) -> CodecResult<()> {
    if key.contains(&0) {
        return Err(invalid(STRUCTURE, "key", "libtiledb keys are C strings: no NUL bytes"));
    }
    if u32::try_from(key.len()).is_err() {
        return Err(invalid(STRUCTURE, "key_len", "a key longer than u32::MAX bytes"));
    }
    Ok(())
}

/// Checks a value a writer is given to put: libtiledb refuses values of type `any`.
///
/// # Errors
/// [`tessera_types::Error::Invalid`] (field `datatype`).
pub fn check_put_value(value: &MetadataValue) -> CodecResult<()> {
    if value.datatype == Datatype::Any {
        return Err(invalid(VALUE, "datatype", "libtiledb does not put values of type any"));
    }
    Ok(())
}
