//! Array metadata: the key → typed value map stored in `__meta/` (`docs/format/metadata.md`),
//! as libtiledb 2.30 reads and writes it
//! (`tiledb/sm/metadata/metadata.cc`, `ArrayDirectory::load_array_meta_uris`).
//!
//! * The codec of one file's payload: [`parse_payload`] and [`to_payload`] over
//!   [`MetadataEntry`] lists (a put or a deletion of one key). A file is one generic tile whose
//!   payload holds the entries back to back, sorted by key bytes: `u32 key_len, key, u8 del`
//!   and, for a put, `u8 datatype, u32 value_num, value_num × size bytes`.
//! * The metadata visible in an open timestamp range: [`ArrayMetadata::load`] and
//!   [`Array::metadata`](crate::Array::metadata) apply, in timestamp order, every
//!   `__meta/__t1_t2_label` file whose range lies inside the open range and that no applying
//!   `.vac` file lists. A later put replaces the key, a later deletion erases it.
//! * The write side: a [`MetadataWriter`] collects the puts and deletions of one session and
//!   makes the file libtiledb would write for them. A session's file holds only that session's
//!   changes (not the whole state); libtiledb 2.30 writes nothing for an empty session.
//!
//! ```
//! use tessera_query::metadata::{
//!     ArrayMetadata, MetadataValue, MetadataWriter, parse_payload,
//! };
//!
//! let mut w = MetadataWriter::new(10);
//! w.put("count", MetadataValue::int64s(&[42])?)?;
//! w.put("name", MetadataValue::utf8("x")?)?;
//! w.delete("old")?;
//! let mut state = ArrayMetadata::default();
//! state.apply(parse_payload(&w.payload()?)?);
//! assert_eq!(state.get("count").and_then(|v| v.as_i64s()), Some(vec![42]));
//! assert_eq!(
//!     state.to_json().to_string(),
//!     r#"{"count":{"type":"int64","value":[42]},"name":{"type":"string_utf8","value":"x"}}"#
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;
use rayon::prelude::*;
use serde_json::{Map, Value as Json};
use tessera_fragment::VacuumFile;
use tessera_schema::json::value_json;
use tessera_storage::Storage;
use tessera_types::names::TimestampedName;
use tessera_types::{ByteReader, Datatype, FORMAT_VERSION};

use crate::array::dirs;
use crate::{Error, Result};

/// The structure name payload errors carry.
const STRUCTURE: &str = "array metadata";
/// The structure name of value errors (building a value, not reading a file).
const VALUE: &str = "array metadata value";

/// The codec errors of this module: structure, field and byte offset.
type CodecResult<T> = tessera_types::Result<T>;

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
    encode_sorted(map)
}

/// Writes sorted, unique `(key, value)` pairs.
fn encode_sorted<'a>(
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

/// The array metadata visible in an open timestamp range: a map from key bytes to value,
/// sorted by key bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArrayMetadata {
    entries: BTreeMap<Vec<u8>, MetadataValue>,
    files: Vec<TimestampedName>,
}

impl ArrayMetadata {
    /// Loads the metadata of the array (or group) on `storage` for the open range
    /// `[start, end]`, as libtiledb 2.30 does (`ArrayDirectory::load_array_meta_uris`,
    /// `Array::do_load_metadata`):
    /// * every file of `__meta/` named `__t1_t2_label` with `start ≤ t1` and `t2 ≤ end`
    ///   (libtiledb ignores any extension but `.vac` here, and so does this; names of another
    ///   shape are skipped, where libtiledb would fail);
    /// * minus the files listed by a `__meta/*.vac` file whose own range is inside
    ///   `[start, end]` (written by a consolidation with `sm.consolidation.mode = array_meta`);
    /// * applied in timestamp order (by `t1`; ties by `t2`, then label).
    ///
    /// A missing `__meta/` folder means no metadata.
    ///
    /// # Errors
    /// Storage errors; [`Error::Metadata`] naming the file for a corrupt metadata file;
    /// [`Error::Fragment`] for an unreadable `.vac` file.
    pub fn load(storage: &dyn Storage, start: u64, end: u64) -> Result<ArrayMetadata> {
        let listing = match storage.list(dirs::META) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(ArrayMetadata::default()),
            Err(e) => return Err(e.into()),
        };
        let inside = |n: &TimestampedName| start <= n.t1 && n.t2 <= end;
        let mut files = Vec::new();
        let mut vacuumed: HashSet<String> = HashSet::new();
        for entry in listing.iter().filter(|e| !e.is_dir) {
            let Ok(name) = TimestampedName::parse(&entry.name) else { continue };
            if !inside(&name) {
                continue;
            }
            if entry.name.ends_with(".vac") {
                let path = format!("{}/{}", dirs::META, entry.name);
                let frag_err =
                    |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
                let vac = VacuumFile::parse(&storage.read(&path)?).map_err(frag_err)?;
                for p in vac.relative_paths().map_err(frag_err)? {
                    if let Some(file) = p.strip_prefix(&format!("{}/", dirs::META)) {
                        vacuumed.insert(file.to_owned());
                    }
                }
            } else {
                files.push((name, entry.name.clone()));
            }
        }
        files.retain(|(_, file)| !vacuumed.contains(file));
        files.sort_by(|(a, _), (b, _)| (a.t1, a.t2, &a.label).cmp(&(b.t1, b.t2, &b.label)));
        let decoded = files
            .par_iter()
            .map(|(_, file)| {
                let path = format!("{}/{file}", dirs::META);
                let bytes = storage.read(&path)?;
                let err = |source: tessera_tile::Error| Error::Metadata {
                    file: path.clone(),
                    source: Box::new(source),
                };
                let payload =
                    tessera_tile::read_generic_tile_with_key(&bytes, storage.encryption_key())
                        .map_err(err)?;
                parse_payload(&payload).map_err(|e| err(e.into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut metadata = ArrayMetadata::default();
        for entries in decoded {
            metadata.apply(entries);
        }
        metadata.files = files.into_iter().map(|(name, _)| name).collect();
        Ok(metadata)
    }

    /// Applies one file's entries (or a session's changes) in order: a put replaces the key's
    /// value, a deletion erases the key.
    pub fn apply(&mut self, entries: impl IntoIterator<Item = MetadataEntry>) {
        for MetadataEntry { key, value } in entries {
            match value {
                Some(v) => {
                    self.entries.insert(key, v);
                }
                None => {
                    self.entries.remove(&key);
                }
            }
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<&MetadataValue> {
        self.entries.get(key.as_ref())
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> bool {
        self.entries.contains_key(key.as_ref())
    }

    /// The keys and values, sorted by key bytes (libtiledb's index order).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &MetadataValue)> + '_ {
        self.entries.iter().map(|(k, v)| (k.as_slice(), v))
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The metadata files applied by [`Self::load`], in the order applied (empty for metadata
    /// built with [`Self::apply`]). A consolidation names its file after the first one's `t1`
    /// and the last one's `t2`.
    pub fn files(&self) -> &[TimestampedName] {
        &self.files
    }

    /// The live keys as one payload (all puts, sorted): what an `array_meta` consolidation
    /// writes.
    ///
    /// # Errors
    /// As [`to_payload`].
    pub fn to_payload(&self) -> CodecResult<Vec<u8>> {
        encode_sorted(self.entries.iter().map(|(k, v)| (k.as_slice(), Some(v))))
    }

    /// The JSON of `tessera meta list --json` (`docs/cli.md`): an object from key to
    /// [`MetadataValue::to_json`], keys in sorted order. Keys that are not UTF-8 are shown
    /// with U+FFFD for the invalid bytes (two such keys that then look alike show only the
    /// later one).
    pub fn to_json(&self) -> Json {
        let mut m = Map::new();
        for (k, v) in &self.entries {
            m.insert(String::from_utf8_lossy(k).into_owned(), v.to_json());
        }
        Json::Object(m)
    }
}

impl crate::Array {
    /// The array metadata visible in the array's open timestamp range (see
    /// [`ArrayMetadata::load`]); read from storage on each call.
    ///
    /// # Errors
    /// As [`ArrayMetadata::load`].
    pub fn metadata(&self) -> Result<ArrayMetadata> {
        let (start, end) = self.timestamp_range();
        ArrayMetadata::load(self.storage().as_ref(), start, end)
    }
}

/// A new metadata file: its name under `__meta/` and its bytes (one generic tile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataFile {
    /// `__t_t_<label>` with the session's timestamp and a fresh label.
    pub name: TimestampedName,
    /// The generic tile (GZIP level 1, format version 22), byte-identical to libtiledb's for
    /// the same entries.
    pub bytes: Vec<u8>,
}

/// The puts and deletions of one metadata write session at a timestamp, as libtiledb's
/// `Array::put_metadata` / `delete_metadata` collect them until the array is closed: the last
/// change of a key wins, and the file holds only the keys changed in the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataWriter {
    timestamp: u64,
    changes: BTreeMap<Vec<u8>, Option<MetadataValue>>,
}

impl MetadataWriter {
    /// A session at `timestamp` (ms; libtiledb uses the end of the range the array was
    /// opened for writing at, "now" by default).
    pub fn new(timestamp: u64) -> Self {
        MetadataWriter { timestamp, changes: BTreeMap::new() }
    }

    /// The session's timestamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    fn check_key(key: &[u8]) -> CodecResult<()> {
        if key.contains(&0) {
            return Err(invalid(STRUCTURE, "key", "libtiledb keys are C strings: no NUL bytes"));
        }
        if u32::try_from(key.len()).is_err() {
            return Err(invalid(STRUCTURE, "key_len", "a key longer than u32::MAX bytes"));
        }
        Ok(())
    }

    /// Puts `value` under `key`, replacing any earlier change of `key` in this session.
    ///
    /// # Errors
    /// [`tessera_types::Error::Invalid`] for a value of type `any` (libtiledb refuses it), a
    /// key with a NUL byte (libtiledb takes keys as C strings) or longer than `u32::MAX`.
    pub fn put(&mut self, key: impl Into<Vec<u8>>, value: MetadataValue) -> CodecResult<&mut Self> {
        let key = key.into();
        Self::check_key(&key)?;
        if value.datatype == Datatype::Any {
            return Err(invalid(VALUE, "datatype", "libtiledb does not put values of type any"));
        }
        self.changes.insert(key, Some(value));
        Ok(self)
    }

    /// Deletes `key` (recorded even when the key does not exist, as libtiledb does),
    /// replacing any earlier change of `key` in this session.
    ///
    /// # Errors
    /// As [`Self::put`], for the key.
    pub fn delete(&mut self, key: impl Into<Vec<u8>>) -> CodecResult<&mut Self> {
        let key = key.into();
        Self::check_key(&key)?;
        self.changes.insert(key, None);
        Ok(self)
    }

    /// Whether the session changed nothing (then no file is written).
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The session's entries, sorted by key.
    pub fn entries(&self) -> Vec<MetadataEntry> {
        self.changes
            .iter()
            .map(|(k, v)| MetadataEntry { key: k.clone(), value: v.clone() })
            .collect()
    }

    /// The file payload (empty when the session changed nothing).
    ///
    /// # Errors
    /// Never for keys accepted by [`Self::put`] / [`Self::delete`]; see [`to_payload`].
    pub fn payload(&self) -> CodecResult<Vec<u8>> {
        encode_sorted(self.changes.iter().map(|(k, v)| (k.as_slice(), v.as_ref())))
    }

    /// The file libtiledb would write for this session, with a fresh name; `None` when the
    /// session changed nothing.
    ///
    /// # Errors
    /// [`Error::Metadata`] when the generic tile cannot be encoded.
    pub fn file(&self) -> Result<Option<MetadataFile>> {
        self.file_with_key(None)
    }

    /// [`Self::file`] for an array or group encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::file`].
    pub fn file_with_key(
        &self,
        key: Option<&tessera_types::EncryptionKey>,
    ) -> Result<Option<MetadataFile>> {
        if self.is_empty() {
            return Ok(None);
        }
        let name = TimestampedName::generate(self.timestamp, self.timestamp, None);
        let err = |source: tessera_tile::Error| Error::Metadata {
            file: format!("{}/{name}", dirs::META),
            source: Box::new(source),
        };
        let payload = self.payload().map_err(|e| err(e.into()))?;
        let bytes = tessera_tile::write_generic_tile_with_key(&payload, FORMAT_VERSION, key)
            .map_err(err)?;
        Ok(Some(MetadataFile { name, bytes }))
    }

    /// Writes the session's file to `__meta/` of the array (or group) on `storage` and returns
    /// its name; `None` (and nothing written) when the session changed nothing.
    ///
    /// # Errors
    /// As [`Self::file`], and storage errors.
    pub fn commit(&self, storage: &dyn Storage) -> Result<Option<TimestampedName>> {
        let Some(file) = self.file_with_key(storage.encryption_key())? else { return Ok(None) };
        storage.publish(&format!("{}/{}", dirs::META, file.name), Bytes::from(file.bytes))?;
        Ok(Some(file.name))
    }
}
