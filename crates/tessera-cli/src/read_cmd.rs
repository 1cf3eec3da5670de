//! `tessera read`: cells as JSONL, CSV or a table.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde_json::Value as Json;
use tessera::layers::query::read::Points;
use tessera::layers::query::{Column, ReadResult};
use tessera::layers::schema::json::{cell_json, value_from_json};
use tessera::layers::types::Datatype;
use tessera::{Array, ArraySchema, Enumeration};

use crate::cells::{Row, cell_bytes, write_line};

/// Result layouts of `--layout`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum LayoutArg {
    /// Last dimension fastest.
    RowMajor,
    /// First dimension fastest.
    ColMajor,
    /// The array's tile and cell order.
    Global,
    /// Whatever order is fastest.
    Unordered,
}

/// Output formats of `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// One JSON object per cell.
    Jsonl,
    /// Comma-separated values with a header.
    Csv,
    /// Aligned columns for people.
    Table,
    /// An Arrow IPC file (needs `--output`).
    Arrow,
    /// A Parquet file (needs `--output`).
    Parquet,
}

/// The options of `tessera read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// `DIM=LO:HI` (inclusive; repeat for several ranges; quote a bound holding `:` or `,` as
    /// a JSON string).
    #[arg(long = "range", value_name = "DIM=LO:HI")]
    pub(crate) ranges: Vec<String>,
    /// Read the cells at the points of FILE instead of a subarray (`-` for standard input):
    /// JSONL, one object per point giving each dimension's coordinate as the cells JSONL
    /// does (`{"x": 3, "gene": "BRCA1"}`; other keys of the cells JSONL are ignored, so the
    /// output of a read can be fed back). Cells are printed in the order of the points.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ranges", "layout"])]
    pub(crate) points: Option<PathBuf>,
    /// The attributes to read, in this order (default: all).
    #[arg(long, value_delimiter = ',')]
    pub(crate) attrs: Option<Vec<String>>,
    /// A query condition, e.g. `a > 5 and (b == 'x' or c is null)`: sparse cells failing it
    /// are left out; dense ones come back with the fill value.
    #[arg(long = "where", value_name = "EXPR")]
    pub(crate) condition: Option<String>,
    /// The cell order.
    #[arg(long, value_enum)]
    pub(crate) layout: Option<LayoutArg>,
    /// Output format (default: table on a terminal, jsonl otherwise).
    #[arg(long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// The file `--format arrow|parquet` writes (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Read in steps holding about this many bytes.
    #[arg(long)]
    pub(crate) memory_budget: Option<u64>,
    /// Print enumeration codes instead of labels.
    #[arg(long)]
    pub(crate) enum_codes: bool,
}

/// Splits `LO:HI`, where either bound may be a JSON string holding `:`.
pub(crate) fn split_bounds(text: &str) -> Result<(String, String)> {
    let (lo, rest) = if text.starts_with('"') {
        let mut de = serde_json::Deserializer::from_str(text).into_iter::<String>();
        let lo = de.next().context("unterminated quoted bound")??;
        let used = de.byte_offset();
        (format!("\"{}\"", escape(&lo)), &text[used..])
    } else {
        match text.find(':') {
            Some(i) => (text[..i].to_owned(), &text[i..]),
            None => bail!("expected LO:HI, got {text:?}"),
        }
    };
    let hi = rest
        .strip_prefix(':')
        .with_context(|| format!("expected ':' after the low bound in {text:?}"))?;
    Ok((lo, hi.to_owned()))
}

fn escape(s: &str) -> String {
    serde_json::to_string(s).map(|q| q[1..q.len() - 1].to_owned()).unwrap_or_default()
}

/// One bound as the little-endian bytes of the dimension's type.
pub(crate) fn bound_bytes(datatype: Datatype, var: bool, text: &str) -> Result<Vec<u8>> {
    let json = if text.starts_with('"') {
        serde_json::from_str::<Json>(text).with_context(|| format!("bad quoted bound {text}"))?
    } else if var {
        return Ok(text.as_bytes().to_vec());
    } else {
        serde_json::from_str::<Json>(text)
            .with_context(|| format!("{text:?} is not a {datatype} value"))?
    };
    if var {
        return match json {
            Json::String(s) => Ok(s.into_bytes()),
            other => bail!("{other} is not a string bound"),
        };
    }
    Ok(value_from_json(datatype, &json)?)
}

/// Applies `--range` options to a read.
pub(crate) fn with_ranges<'a>(
    schema: &ArraySchema,
    mut q: tessera::layers::query::read::ReadQuery<'a>,
    ranges: &[String],
) -> Result<tessera::layers::query::read::ReadQuery<'a>> {
    for r in ranges {
        let (dim, bounds) =
            r.split_once('=').with_context(|| format!("--range {r:?}: expected DIM=LO:HI"))?;
        let d = schema
            .dimension(dim)
            .with_context(|| format!("--range {r:?}: no dimension {dim:?}"))?;
        let (lo, hi) = split_bounds(bounds).with_context(|| format!("--range {r:?}"))?;
        let lo =
            bound_bytes(d.datatype, d.is_var(), &lo).with_context(|| format!("--range {r:?}"))?;
        let hi =
            bound_bytes(d.datatype, d.is_var(), &hi).with_context(|| format!("--range {r:?}"))?;
        q = q.range_bytes(dim, lo, hi);
    }
    Ok(q)
}

/// The points of `--points`: JSONL text, one object per point with a coordinate per
/// dimension of `schema` (keys naming attributes are ignored).
pub(crate) fn parse_points(schema: &ArraySchema, text: &str) -> Result<Points> {
    let dims = &schema.dimensions;
    // Per dimension, the coordinates' bytes and where each ends.
    let mut coords: Vec<(Vec<u8>, Vec<usize>)> = vec![(Vec::new(), Vec::new()); dims.len()];
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let object = match serde_json::from_str::<Json>(line) {
            Ok(Json::Object(o)) => o,
            Ok(_) => bail!("line {n}: expected a JSON object"),
            Err(e) => bail!("line {n}: invalid JSON at column {}", e.column()),
        };
        for key in object.keys() {
            if schema.dimension(key).is_none() && schema.attribute(key).is_none() {
                bail!("line {n}: no dimension or attribute named {key:?}");
            }
        }
        for (d, (data, ends)) in dims.iter().zip(&mut coords) {
            let Some(value) = object.get(&d.name) else {
                bail!("line {n}: missing dimension {:?}", d.name);
            };
            if value.is_null() {
                bail!("line {n}, field {:?}: a coordinate cannot be null", d.name);
            }
            cell_bytes(d.datatype, d.cell_val_num, value, data)
                .map_err(|m| anyhow::anyhow!("line {n}, field {:?}: {m}", d.name))?;
            ends.push(data.len());
        }
    }
    let mut points = Points::new();
    for (d, (data, ends)) in dims.iter().zip(&coords) {
        let starts = std::iter::once(0).chain(ends.iter().copied());
        points = points.coords_bytes(&d.name, starts.zip(ends).map(|(s, &e)| &data[s..e]));
    }
    Ok(points)
}

/// How each output column prints: through its enumeration's labels, or as stored.
struct Printer<'a> {
    enums: Vec<Option<&'a Enumeration>>,
}

impl<'a> Printer<'a> {
    fn new(array: &'a Array, result_columns: &[Column], enum_codes: bool) -> Self {
        let schema = array.schema();
        let enums = result_columns
            .iter()
            .map(|c| {
                if enum_codes {
                    return None;
                }
                let name = schema.attribute(&c.name)?.enumeration.as_ref()?;
                array.enumerations().iter().find(|e| &e.name == name)
            })
            .collect();
        Printer { enums }
    }

    fn value(&self, col: usize, c: &Column, i: usize) -> Json {
        if !c.is_valid(i) {
            return Json::Null;
        }
        let Some(bytes) = c.cell(i) else { return Json::Null };
        if let Some(e) = self.enums.get(col).copied().flatten() {
            let code = match tessera::layers::schema::Value::decode(c.datatype, bytes) {
                Ok(tessera::layers::schema::Value::Int(v)) => usize::try_from(v).ok(),
                Ok(tessera::layers::schema::Value::UInt(v)) => usize::try_from(v).ok(),
                _ => None,
            };
            if let Some(label) = code.and_then(|code| e.value(code)) {
                return cell_json(e.datatype, e.cell_val_num, label);
            }
        }
        cell_json(c.datatype, c.cell_val_num, bytes)
    }
}

fn layout(l: Option<LayoutArg>) -> Option<tessera::ReadLayout> {
    l.map(|l| match l {
        LayoutArg::RowMajor => tessera::ReadLayout::RowMajor,
        LayoutArg::ColMajor => tessera::ReadLayout::ColMajor,
        LayoutArg::Global => tessera::ReadLayout::GlobalOrder,
        LayoutArg::Unordered => tessera::ReadLayout::Unordered,
    })
}

/// The read `args` ask for, on `q` (ranges or points, condition, layout, memory budget; not
/// the attributes).
pub(crate) fn configure<'a>(
    array: &'a Array,
    q: tessera::ReadQuery<'a>,
    args: &ReadArgs,
) -> Result<tessera::ReadQuery<'a>> {
    let schema = array.schema();
    let mut q = with_ranges(schema, q, &args.ranges)?;
    if let Some(file) = &args.points {
        let text = if file.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin())
                .context("reading the points from standard input")?
        } else {
            std::fs::read_to_string(file).with_context(|| file.display().to_string())?
        };
        let points =
            parse_points(schema, &text).with_context(|| format!("--points {}", file.display()))?;
        q = q.points(points);
    }
    if let Some(c) = &args.condition {
        q = q.where_text(c);
    }
    if let Some(l) = layout(args.layout) {
        q = q.layout(l);
    }
    if let Some(b) = args.memory_budget {
        q = q.memory_budget(b);
    }
    Ok(q)
}

/// Runs `tessera read`.
pub(crate) fn run(array: &Array, args: &ReadArgs) -> Result<()> {
    if let Some(format @ (FormatArg::Arrow | FormatArg::Parquet)) = args.format {
        let output =
            args.output.as_deref().context("--format arrow|parquet needs --output FILE")?;
        return crate::export::run(array, args, format, output);
    }
    if args.output.is_some() {
        bail!("--output is for --format arrow|parquet");
    }
    let mut q = configure(array, array.read(), args)?;
    if let Some(attrs) = &args.attrs {
        q = q.attributes(attrs.iter().map(String::as_str));
    }
    let format = args.format.unwrap_or(if std::io::stdout().is_terminal() {
        FormatArg::Table
    } else {
        FormatArg::Jsonl
    });
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut header_done = false;
    for batch in q.batches()? {
        let batch: ReadResult = batch?;
        let printer = Printer::new(array, &batch.columns, args.enum_codes);
        if !header_done {
            let names: Vec<String> = batch.columns.iter().map(|c| c.name.clone()).collect();
            match format {
                FormatArg::Csv => writeln!(
                    out,
                    "{}",
                    names.iter().map(|n| csv_field(n)).collect::<Vec<_>>().join(",")
                )?,
                FormatArg::Table => table.push(names),
                FormatArg::Jsonl | FormatArg::Arrow | FormatArg::Parquet => {}
            }
            header_done = true;
        }
        for i in 0..batch.cell_num() {
            let values: Vec<(&str, Json)> = batch
                .columns
                .iter()
                .enumerate()
                .map(|(k, c)| (c.name.as_str(), printer.value(k, c, i)))
                .collect();
            match format {
                FormatArg::Jsonl => write_line(&mut out, &Row(&values))?,
                FormatArg::Csv => {
                    let fields: Vec<String> =
                        values.iter().map(|(_, v)| csv_field(&plain(v))).collect();
                    writeln!(out, "{}", fields.join(","))?;
                }
                FormatArg::Table => table.push(values.iter().map(|(_, v)| plain(v)).collect()),
                FormatArg::Arrow | FormatArg::Parquet => unreachable!("written by export::run"),
            }
        }
    }
    if format == FormatArg::Table {
        let widths: Vec<usize> = (0..table.first().map_or(0, Vec::len))
            .map(|c| table.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &table {
            let line: Vec<String> =
                row.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect();
            writeln!(out, "{}", line.join("  ").trim_end())?;
        }
    }
    out.flush()?;
    Ok(())
}

/// A value as plain text (strings without quotes).
fn plain(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_parse_as_cells() {
        use tessera::{ArrayType, Attribute, Dimension};
        let schema = ArraySchema::builder(ArrayType::Sparse)
            .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 9).tile_i64(5))
            .dimension(Dimension::new("s", Datatype::StringAscii))
            .attribute(Attribute::new("a", Datatype::Float64))
            .build()
            .unwrap();
        let points = parse_points(
            &schema,
            "{\"x\": 3, \"s\": \"a:b\"}\n\n{\"s\": \"\", \"x\": 0, \"a\": 1.5}\n",
        )
        .unwrap();
        let want = tessera::layers::query::read::Points::new()
            .coords_bytes("x", [3i32.to_le_bytes(), 0i32.to_le_bytes()])
            .coords_bytes("s", ["a:b", ""]);
        assert_eq!(points, want);
        let err = |text: &str| format!("{:#}", parse_points(&schema, text).unwrap_err());
        assert_eq!(err("{\"x\": 3}"), "line 1: missing dimension \"s\"");
        assert_eq!(
            err("{\"x\": 3, \"s\": \"a\", \"z\": 1}"),
            "line 1: no dimension or attribute named \"z\""
        );
        assert_eq!(
            err("{\"x\": null, \"s\": \"a\"}"),
            "line 1, field \"x\": a coordinate cannot be null"
        );
        assert_eq!(
            err("{\"x\": 1.5, \"s\": \"a\"}"),
            "line 1, field \"x\": 1.5 is not a valid int32 value"
        );
        assert_eq!(err("[1, 2]"), "line 1: expected a JSON object");
        assert!(err("{\"x\": ").starts_with("line 1: invalid JSON"));
        assert!(parse_points(&schema, "").unwrap().is_empty());
    }

    #[test]
    fn bounds_split_with_quotes() {
        assert_eq!(split_bounds("1:5").unwrap(), ("1".into(), "5".into()));
        assert_eq!(split_bounds("-3:-1").unwrap(), ("-3".into(), "-1".into()));
        assert_eq!(split_bounds(r#""a:b":"c""#).unwrap(), (r#""a:b""#.into(), r#""c""#.into()));
        assert_eq!(split_bounds("a:zz").unwrap(), ("a".into(), "zz".into()));
        assert!(split_bounds("5").is_err());
        assert_eq!(bound_bytes(Datatype::Int32, false, "7").unwrap(), 7i32.to_le_bytes());
        assert_eq!(bound_bytes(Datatype::StringAscii, true, r#""x,y""#).unwrap(), b"x,y");
        assert!(bound_bytes(Datatype::Int8, false, "300").is_err());
    }
}
