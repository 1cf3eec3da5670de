//! Cells JSONL as cli.md specifies it: one object per cell, dimensions then attributes,
//! `", "` and `": "` separators, values as the attribute's type prints them.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value as Json;
use serde_json::ser::Formatter;

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
    value.serialize(&mut ser).map_err(io::Error::other)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
