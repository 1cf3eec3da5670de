//! `tessera sql`: SQL (DataFusion's dialect) over arrays registered as tables, printed as
//! `tessera read` prints cells.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use datafusion::arrow::array::{Array as _, ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::prelude::SessionContext;
use serde_json::Value as Json;
use tessera::Array;
use tessera::layers::schema::json::cell_json;
use tessera::layers::types::{CELL_VAL_NUM_VAR, Datatype};
use tessera_arrow::{arrow_to_column, field_datatype, tiledb_type};
use tessera_datafusion::TesseraTable;

use crate::cells::{Row, write_line};
use crate::read_cmd::FormatArg;

/// The options of `tessera sql`.
#[derive(Debug, Args)]
pub(crate) struct SqlArgs {
    /// The query, e.g. `SELECT x, a FROM t WHERE x < 10`.
    pub(crate) query: String,
    /// `NAME=ARRAY`: the array ARRAY as table NAME (repeatable; split at the first `=`).
    #[arg(long = "table", value_name = "NAME=ARRAY", required = true)]
    pub(crate) tables: Vec<String>,
    /// Output format (default: table on a terminal, jsonl otherwise).
    #[arg(long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// Run the query on the Ballista cluster whose scheduler is at `df://HOST:PORT` (through
    /// the `tessera-ballista` binary; the arrays must be reachable from every machine).
    #[arg(long, value_name = "df://HOST:PORT")]
    pub(crate) cluster: Option<String>,
}

/// Runs `tessera sql`, opening each table's array with `open` (newest state).
pub(crate) fn run(args: &SqlArgs, open: impl Fn(&Path) -> Result<Array>) -> Result<()> {
    let (fields, batches) = match &args.cluster {
        Some(url) => crate::sql_cluster::run(url, &args.tables, &args.query)?,
        None => run_here(args, open)?,
    };
    let format = args.format.unwrap_or(if std::io::stdout().is_terminal() {
        FormatArg::Table
    } else {
        FormatArg::Jsonl
    });
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    print(&mut out, &fields, &batches, format)?;
    out.flush()?;
    Ok(())
}

/// Runs the query in this process: the result's fields and batches.
fn run_here(
    args: &SqlArgs,
    open: impl Fn(&Path) -> Result<Array>,
) -> Result<(Vec<Field>, Vec<RecordBatch>)> {
    let ctx = SessionContext::new();
    for t in &args.tables {
        let (name, path) =
            t.split_once('=').with_context(|| format!("--table {t:?}: expected NAME=ARRAY"))?;
        if name.is_empty() || path.is_empty() {
            bail!("--table {t:?}: expected NAME=ARRAY");
        }
        let array = open(Path::new(path)).with_context(|| path.to_owned())?;
        let table = TesseraTable::new(path, array).with_context(|| path.to_owned())?;
        ctx.register_table(name, Arc::new(table)).with_context(|| format!("--table {t:?}"))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the query runtime")?;
    let (fields, batches) = runtime
        .block_on(async {
            let df = ctx.sql(&args.query).await?;
            let fields: Vec<Field> =
                df.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
            let batches = df.collect().await?;
            Ok::<_, datafusion::error::DataFusionError>((fields, batches))
        })
        .map_err(|e| anyhow!(one_line(&e.to_string())))?;
    Ok((fields, batches))
}

/// One output column as TileDB cells, to print with `read`'s cell printer.
struct Printable {
    datatype: Datatype,
    cell_val_num: u32,
    column: tessera::Column,
}

/// A result column as TileDB cells: Tessera columns by the type their metadata records,
/// enumerations by their labels, computed columns by the TileDB type nearest their Arrow
/// type (text when there is none).
fn printable(field: &Field, array: &ArrayRef) -> Result<Printable> {
    let name = field.name();
    let mut array = array.clone();
    let mut meta = field_datatype(field);
    if let DataType::Dictionary(_, values) = array.data_type() {
        let values = values.as_ref().clone();
        array = cast(&array, &values)?;
        meta = None;
    }
    match array.data_type() {
        DataType::Utf8View => array = cast(&array, &DataType::LargeUtf8)?,
        DataType::BinaryView => array = cast(&array, &DataType::LargeBinary)?,
        _ => {}
    }
    let typed = meta.or_else(|| tiledb_type(array.data_type()).ok());
    if let Some((dt, cvn)) = typed
        && let Ok(column) = arrow_to_column(name, array.as_ref(), dt, cvn, true)
    {
        return Ok(Printable { datatype: dt, cell_val_num: cvn, column });
    }
    let text = cast(&array, &DataType::LargeUtf8)
        .with_context(|| format!("column {name:?} of type {}", array.data_type()))?;
    let column =
        arrow_to_column(name, text.as_ref(), Datatype::StringUtf8, CELL_VAL_NUM_VAR, true)?;
    Ok(Printable { datatype: Datatype::StringUtf8, cell_val_num: CELL_VAL_NUM_VAR, column })
}

fn print<W: Write>(
    out: &mut W,
    fields: &[Field],
    batches: &[RecordBatch],
    format: FormatArg,
) -> Result<()> {
    if matches!(format, FormatArg::Arrow | FormatArg::Parquet) {
        anyhow::bail!("tessera sql prints jsonl, csv or a table, not {format:?}");
    }
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    let mut table: Vec<Vec<String>> = Vec::new();
    match format {
        FormatArg::Csv => {
            writeln!(out, "{}", names.iter().map(|n| csv_field(n)).collect::<Vec<_>>().join(","))?;
        }
        FormatArg::Table => table.push(names.iter().map(|n| (*n).to_owned()).collect()),
        FormatArg::Jsonl | FormatArg::Arrow | FormatArg::Parquet => {}
    }
    for batch in batches {
        let columns: Vec<Printable> = fields
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| printable(f, a))
            .collect::<Result<_>>()?;
        for i in 0..batch.num_rows() {
            let values: Vec<(&str, Json)> = columns
                .iter()
                .zip(&names)
                .map(|(p, n)| {
                    let v = match p.column.is_valid(i).then(|| p.column.cell(i)).flatten() {
                        Some(bytes) => cell_json(p.datatype, p.cell_val_num, bytes),
                        None => Json::Null,
                    };
                    (*n, v)
                })
                .collect();
            match format {
                FormatArg::Jsonl => write_line(out, &Row(&values))?,
                FormatArg::Csv => {
                    let row: Vec<String> =
                        values.iter().map(|(_, v)| csv_field(&plain(v))).collect();
                    writeln!(out, "{}", row.join(","))?;
                }
                FormatArg::Table => table.push(values.iter().map(|(_, v)| plain(v)).collect()),
                FormatArg::Arrow | FormatArg::Parquet => {}
            }
        }
    }
    if format == FormatArg::Table {
        let widths: Vec<usize> = (0..names.len())
            .map(|c| table.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &table {
            let line: Vec<String> =
                row.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect();
            writeln!(out, "{}", line.join("  ").trim_end())?;
        }
    }
    Ok(())
}

/// DataFusion's multi-line messages on one line (errors are one line on standard error).
pub(crate) fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

/// A value as plain text (strings without quotes), as `read` prints CSV and tables.
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
