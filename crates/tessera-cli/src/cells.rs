//! Cells JSONL as `docs/cli.md` specifies it: one object per cell, dimensions then attributes,
//! `", "` and `": "` separators, values as the attribute's type prints them; and the way
//! back, one JSON value to the bytes of a cell ([`cell_bytes`]).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value as Json;
use serde_json::ser::Formatter;
use tessera::layers::schema::json::value_from_json;
use tessera::layers::types::{CELL_VAL_NUM_VAR, Datatype};

/// serde_json's compact output with `", "` between items and `": "` after keys, the layout
/// of the cells JSONL (and of Python's `json.dumps`).
#[derive(Debug, Default)]
pub(crate) struct SpacedFormatter;

impl Formatter for SpacedFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Writes `value` on one line in the cells-JSONL layout.
pub(crate) fn write_line<W: Write>(out: &mut W, value: &impl Serialize) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, SpacedFormatter);
    // (An I/O error comes back as itself, a closed pipe included.)
    value.serialize(&mut ser).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// One cell as an ordered list of `(key, value)` pairs, serialised as a JSON object in that
/// order (serde_json's map would sort the keys).
pub(crate) struct Row<'a>(pub(crate) &'a [(&'a str, Json)]);

impl Serialize for Row<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Whether values of `dt` print as text (`char`, `string_*`, `geom_wkt`).
fn is_text(dt: Datatype) -> bool {
    dt.is_string() || matches!(dt, Datatype::Char | Datatype::GeomWkt)
}

/// Whether values of `dt` print as a list of byte values (`blob`, `any`, `geom_wkb`).
fn is_bytes(dt: Datatype) -> bool {
    matches!(dt, Datatype::Blob | Datatype::Any | Datatype::GeomWkb)
}

/// Appends the bytes of one cell given as `json`, the exact inverse of how `read` prints a
/// cell of `dt` with `cell_val_num` values (`tessera::layers::schema::json::cell_json`):
/// * text types: a string (in the type's encoding), or `{"hex": "…"}` for raw bytes;
/// * `blob`, `any`, `geom_wkb`: a list of byte values (or a string, or `{"hex": "…"}`);
/// * other types: one value when `cell_val_num` is 1, else a list of values (`cell_val_num`
///   of them, or any number for var-sized cells); integers, `true`/`false`, numbers and
///   `"NaN"`, `"Infinity"`, `"-Infinity"` for floats.
///
/// A fixed-size cell must come to exactly its size. Null is the caller's business.
///
/// # Errors
/// A message saying what does not fit (the caller adds the line and field).
pub(crate) fn cell_bytes(
    dt: Datatype,
    cell_val_num: u32,
    json: &Json,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let start = out.len();
    let var = cell_val_num == CELL_VAL_NUM_VAR;
    let one = |j: &Json, out: &mut Vec<u8>| -> Result<(), String> {
        out.extend(value_from_json(dt, j).map_err(|_| format!("{j} is not a valid {dt} value"))?);
        Ok(())
    };
    match json {
        Json::Array(items) if is_bytes(dt) || (!is_text(dt) && (var || cell_val_num > 1)) => {
            for item in items {
                one(item, out)?;
            }
        }
        Json::String(_) | Json::Object(_) if is_text(dt) || is_bytes(dt) => one(json, out)?,
        Json::Array(_) => {
            return Err(if is_text(dt) {
                format!("a {dt} cell is a string, not {json}")
            } else {
                format!("a {dt} cell holds one value, not a list")
            });
        }
        _ if is_text(dt) => return Err(format!("a {dt} cell is a string, not {json}")),
        _ if is_bytes(dt) => return Err(format!("a {dt} cell is a list of bytes, not {json}")),
        _ if var || cell_val_num > 1 => {
            return Err(format!("a {dt} cell of this field is a list of values, not {json}"));
        }
        _ => one(json, out)?,
    }
    if !var {
        let want = dt.size() * cell_val_num as usize;
        let got = out.len() - start;
        if got != want {
            out.truncate(start);
            let what = if is_text(dt) || is_bytes(dt) { "bytes" } else { "values" };
            let (w, g) =
                if what == "bytes" { (want, got) } else { (want / dt.size(), got / dt.size()) };
            return Err(format!("a cell of this field holds {w} {what}, got {g}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(dt: Datatype, cvn: u32, text: &str) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        cell_bytes(dt, cvn, &serde_json::from_str(text).unwrap(), &mut out).map(|()| out)
    }

    #[test]
    fn cells_read_back_as_printed() {
        use tessera::layers::schema::json::cell_json;
        let cases: &[(Datatype, u32, &[u8])] = &[
            (Datatype::Int32, 1, &(-7i32).to_le_bytes()),
            (Datatype::Float64, 1, &0.1f64.to_le_bytes()),
            (Datatype::Float32, 1, &0.1f32.to_le_bytes()),
            (Datatype::Float32, 1, &f32::NAN.to_le_bytes()),
            (Datatype::Float64, 1, &f64::NEG_INFINITY.to_le_bytes()),
            (Datatype::Bool, 1, &[1]),
            (Datatype::UInt64, 1, &u64::MAX.to_le_bytes()),
            (Datatype::DatetimeMs, 1, &(-5i64).to_le_bytes()),
            (Datatype::Char, 3, b"ab\0"),
            (Datatype::Char, 1, &[0x80]),
            (Datatype::StringUtf8, CELL_VAL_NUM_VAR, "h\u{e9}llo".as_bytes()),
            (Datatype::StringAscii, CELL_VAL_NUM_VAR, &[0xff, 0x00]),
            (Datatype::StringUtf16, CELL_VAL_NUM_VAR, &[0x61, 0x00, 0x62, 0x00]),
            (Datatype::Blob, CELL_VAL_NUM_VAR, &[0, 255, 7]),
            (Datatype::Blob, 2, &[1, 2]),
            (Datatype::Int16, CELL_VAL_NUM_VAR, &[1, 0, 2, 0, 3, 0]),
            (Datatype::Int16, CELL_VAL_NUM_VAR, &[]),
            (Datatype::Float64, 2, &[0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40]),
        ];
        for &(dt, cvn, cell) in cases {
            let json = cell_json(dt, cvn, cell);
            let mut out = Vec::new();
            cell_bytes(dt, cvn, &json, &mut out).unwrap_or_else(|e| panic!("{dt} {json}: {e}"));
            assert_eq!(out, cell, "{dt} x{cvn}: {json}");
        }
    }

    #[test]
    fn cells_that_do_not_fit() {
        let e = |dt, cvn, text| bytes(dt, cvn, text).unwrap_err();
        assert_eq!(e(Datatype::UInt8, 1, "300"), "300 is not a valid uint8 value");
        assert_eq!(e(Datatype::Int32, 1, "[1]"), "a int32 cell holds one value, not a list");
        assert_eq!(e(Datatype::Int32, 2, "[1]"), "a cell of this field holds 2 values, got 1");
        assert_eq!(e(Datatype::Char, 3, "\"ab\""), "a cell of this field holds 3 bytes, got 2");
        assert_eq!(
            e(Datatype::StringUtf8, CELL_VAL_NUM_VAR, "5"),
            "a string_utf8 cell is a string, not 5"
        );
        assert_eq!(e(Datatype::Float64, 1, "\"nan\""), "\"nan\" is not a valid float64 value");
        assert_eq!(e(Datatype::Int64, 1, "1.5"), "1.5 is not a valid int64 value");
        assert_eq!(bytes(Datatype::Float64, 1, "\"NaN\"").unwrap(), f64::NAN.to_le_bytes());
        assert_eq!(
            bytes(Datatype::Blob, CELL_VAL_NUM_VAR, r#"{"hex": "00ff"}"#).unwrap(),
            [0, 255]
        );
    }

    #[test]
    fn layout_matches_the_fixtures() {
        let mut out = Vec::new();
        let row = [
            ("d", Json::from(0)),
            ("xyz", serde_json::json!([-0.0, 0.004])),
            ("s", Json::from("tab\there")),
        ];
        write_line(&mut out, &Row(&row)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"d\": 0, \"xyz\": [-0.0, 0.004], \"s\": \"tab\\there\"}\n"
        );
    }
}
