//! `tessera write`: the cells JSONL of `shared/cli.md` (what `read --format jsonl` prints)
//! into one fragment.
//!
//! The input is parsed whole into one [`Column`] per dimension and attribute before anything
//! is written, so bad input writes nothing. Each line is one cell, a JSON object keyed by
//! field name (blank lines are skipped):
//! * every attribute is required; null (`null`) only on nullable attributes;
//! * sparse arrays: every dimension too, cells in any order;
//! * dense arrays: the cells of the `--subarray` region (default: the whole domain) in its
//!   row-major order; dimension keys may be present and are then checked against the cell's
//!   position;
//! * values as [`cell_bytes`] reads them; an enumeration attribute takes its labels (mapped
//!   to their codes), or its codes with `--enum-codes`.
//!
//! Errors name the line (1-based) and the field.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Map, Value as Json};
use tessera::layers::query::Column;
use tessera::layers::schema::Value;
use tessera::layers::types::{Datatype, Layout};
use tessera::{Array, ArraySchema};

use crate::cells::cell_bytes;
use crate::read_cmd::{bound_bytes, split_bounds};

/// The options of `tessera write`.
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// The cells: JSONL as `tessera read --format jsonl` prints it, one object per cell
    /// (`-` for standard input). Every attribute is required (`null` where nullable);
    /// sparse cells carry every dimension, in any order; enumerations are given as labels.
    #[arg(long, value_name = "FILE.jsonl|-")]
    pub(crate) input: PathBuf,
    /// Dense arrays: the region written, `D=LO:HI` per dimension (comma-separated, or the
    /// option repeated; a dimension left out covers its whole domain). The cells come in
    /// row-major order of it.
    #[arg(long, value_name = "D=LO:HI,...")]
    pub(crate) subarray: Vec<String>,
    /// Timestamp of the fragment (ms since the epoch; default now).
    #[arg(long, value_name = "MS")]
    pub(crate) timestamp: Option<u64>,
    /// Enumeration attributes are given as their integer codes, not their labels.
    #[arg(long)]
    pub(crate) enum_codes: bool,
}

/// Runs `tessera write`.
pub(crate) fn run(array: &Array, args: &WriteArgs) -> Result<()> {
    let text = if args.input.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("reading the cells from standard input")?;
        s
    } else {
        std::fs::read_to_string(&args.input).with_context(|| args.input.display().to_string())?
    };
    let schema = array.schema();
    let subarray = if schema.is_dense() {
        Some(parse_subarray(schema, &args.subarray)?)
    } else if !args.subarray.is_empty() {
        bail!("--subarray is for dense arrays; cells of a sparse array carry their coordinates")
    } else {
        None
    };
    let columns =
        parse_cells(array, &text, subarray.as_ref(), args.enum_codes).with_context(|| {
            if args.input.as_os_str() == "-" {
                "standard input".to_owned()
            } else {
                args.input.display().to_string()
            }
        })?;
    let mut q = array.write();
    if let Some(sub) = &subarray {
        for r in &sub.ranges {
            q = q.range_bytes(&r.dim, r.lo_bytes.clone(), r.hi_bytes.clone());
        }
        q = q.layout(Layout::RowMajor);
    } else {
        q = q.layout(Layout::Unordered);
    }
    if let Some(t) = args.timestamp {
        q = q.timestamp(t);
    }
    for c in columns {
        q = q.column(c);
    }
    q.submit()?;
    Ok(())
}

/// One dimension's range of a dense write.
#[derive(Debug, Clone)]
struct DimRange {
    dim: String,
    datatype: Datatype,
    lo: i128,
    hi: i128,
    lo_bytes: Vec<u8>,
    hi_bytes: Vec<u8>,
}

/// The region of a dense write: one range per dimension, in schema order.
#[derive(Debug, Clone)]
struct Subarray {
    ranges: Vec<DimRange>,
}

impl Subarray {
    /// The number of cells (saturating).
    fn cell_num(&self) -> u128 {
        self.ranges
            .iter()
            .map(|r| u128::try_from(r.hi - r.lo + 1).unwrap_or(0))
            .fold(1u128, u128::saturating_mul)
    }
}

/// An integer coordinate or bound as `i128`.
fn as_int(datatype: Datatype, bytes: &[u8]) -> Option<i128> {
    Value::decode(datatype, bytes).ok()?.as_i128().filter(|_| !datatype.is_float())
}

/// Splits `text` at the commas outside double-quoted bounds.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, ch) in text.char_indices() {
        match ch {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// The `--subarray` ranges of a dense write, completed with the domain of the dimensions not
/// given.
fn parse_subarray(schema: &ArraySchema, args: &[String]) -> Result<Subarray> {
    let mut given: HashMap<&str, (Vec<u8>, Vec<u8>)> = HashMap::new();
    for arg in args {
        for part in split_top_level(arg).into_iter().filter(|p| !p.trim().is_empty()) {
            let part = part.trim();
            let (dim, bounds) = part
                .split_once('=')
                .with_context(|| format!("--subarray {part:?}: expected D=LO:HI"))?;
            let d = schema
                .dimension(dim)
                .with_context(|| format!("--subarray {part:?}: no dimension {dim:?}"))?;
            let (lo, hi) = split_bounds(bounds).with_context(|| format!("--subarray {part:?}"))?;
            let lo = bound_bytes(d.datatype, d.is_var(), &lo)
                .with_context(|| format!("--subarray {part:?}"))?;
            let hi = bound_bytes(d.datatype, d.is_var(), &hi)
                .with_context(|| format!("--subarray {part:?}"))?;
            if given.insert(&d.name, (lo, hi)).is_some() {
                bail!("--subarray: dimension {dim:?} given twice (a dense write takes one range)");
            }
        }
    }
    let mut ranges = Vec::with_capacity(schema.dimensions.len());
    for d in &schema.dimensions {
        let (lo_bytes, hi_bytes) = match given.remove(d.name.as_str()) {
            Some(r) => r,
            None => {
                let [lo, hi] = d.domain.clone().with_context(|| {
                    format!("--subarray: dimension {:?} has no domain; give its range", d.name)
                })?;
                (lo, hi)
            }
        };
        let bound = |b: &[u8]| {
            as_int(d.datatype, b).with_context(|| {
                format!(
                    "--subarray: dimension {:?} ({}) is not an integer dimension",
                    d.name, d.datatype
                )
            })
        };
        let (lo, hi) = (bound(&lo_bytes)?, bound(&hi_bytes)?);
        if lo > hi {
            bail!("--subarray: dimension {:?}: low bound {lo} is above high bound {hi}", d.name);
        }
        ranges.push(DimRange {
            dim: d.name.clone(),
            datatype: d.datatype,
            lo,
            hi,
            lo_bytes,
            hi_bytes,
        });
    }
    Ok(Subarray { ranges })
}

/// The labels of an enumeration attribute whose cells are given by label.
struct Labels {
    /// The enumeration's name.
    enumeration: String,
    /// The type of its values.
    datatype: Datatype,
    /// Values per label, or var.
    cell_val_num: u32,
    /// The code of each label's bytes.
    codes: HashMap<Vec<u8>, usize>,
}

/// How one field's JSON values become bytes.
struct FieldParser {
    column: Column,
    nullable: bool,
    is_dimension: bool,
    /// Set for an enumeration attribute given by label.
    labels: Option<Labels>,
}

impl FieldParser {
    /// Appends the cell `json` (or null).
    fn push(&mut self, json: &Json) -> Result<(), String> {
        let c = &mut self.column;
        if let Some(offsets) = &mut c.offsets {
            offsets.push(c.data.len() as u64);
        }
        if json.is_null() {
            if !self.nullable {
                return Err(if self.is_dimension {
                    "a coordinate cannot be null".into()
                } else {
                    "null in an attribute that is not nullable".into()
                });
            }
            if let Some(size) = c.cell_size() {
                c.data.resize(c.data.len() + size, 0);
            }
            if let Some(v) = &mut c.validity {
                v.push(0);
            }
            return Ok(());
        }
        match &self.labels {
            Some(l) => {
                let mut label = Vec::new();
                cell_bytes(l.datatype, l.cell_val_num, json, &mut label)?;
                let code = l.codes.get(&label).ok_or_else(|| {
                    format!(
                        "{json} is not a label of enumeration {:?} (use --enum-codes to give \
                         codes)",
                        l.enumeration
                    )
                })?;
                Value::UInt(*code as u64)
                    .encode(c.datatype, &mut c.data)
                    .map_err(|_| format!("code {code} does not fit {}", c.datatype))?;
            }
            None => cell_bytes(c.datatype, c.cell_val_num, json, &mut c.data)?,
        }
        if let Some(v) = &mut c.validity {
            v.push(1);
        }
        Ok(())
    }
}

/// Parses the cells JSONL `text` into one column per field the write takes: every attribute,
/// and the dimensions of a sparse array. For a dense array (`subarray` given), dimension
/// keys are checked against the row-major position of each cell and not returned.
fn parse_cells(
    array: &Array,
    text: &str,
    subarray: Option<&Subarray>,
    enum_codes: bool,
) -> Result<Vec<Column>> {
    let schema = array.schema();
    let mut dims: Vec<FieldParser> = schema
        .dimensions
        .iter()
        .map(|d| FieldParser {
            column: Column::new(d.name.clone(), d.datatype, d.cell_val_num, false),
            nullable: false,
            is_dimension: true,
            labels: None,
        })
        .collect();
    let mut attrs = Vec::with_capacity(schema.attributes.len());
    for a in &schema.attributes {
        let labels = match (&a.enumeration, enum_codes) {
            (Some(name), false) => {
                let e =
                    array.enumerations().iter().find(|e| &e.name == name).with_context(|| {
                        format!("enumeration {name:?} of {:?} not found", a.name)
                    })?;
                let codes = (0..e.len()).filter_map(|i| Some((e.value(i)?.to_vec(), i))).collect();
                Some(Labels {
                    enumeration: name.clone(),
                    datatype: e.datatype,
                    cell_val_num: e.cell_val_num,
                    codes,
                })
            }
            _ => None,
        };
        attrs.push(FieldParser {
            column: Column::new(a.name.clone(), a.datatype, a.cell_val_num, a.nullable),
            nullable: a.nullable,
            is_dimension: false,
            labels,
        });
    }
    let dense = subarray.is_some();
    // The coordinates of the next cell of a dense write, in row-major order.
    let mut coords: Vec<i128> =
        subarray.map_or_else(Vec::new, |s| s.ranges.iter().map(|r| r.lo).collect());
    let mut cells: u128 = 0;
    let mut scratch = Vec::new();
    let capacity = subarray.map_or(u128::MAX, Subarray::cell_num);
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let object: Map<String, Json> = match serde_json::from_str::<Json>(line) {
            Ok(Json::Object(o)) => o,
            Ok(other) => bail!("line {n}: expected a JSON object, got {}", kind(&other)),
            Err(e) => bail!("line {n}: invalid JSON: {}", json_error(&e)),
        };
        for key in object.keys() {
            if schema.dimension(key).is_none() && schema.attribute(key).is_none() {
                bail!("line {n}: no dimension or attribute named {key:?}");
            }
        }
        if dense && cells == capacity {
            bail!("line {n}: more cells than the {capacity} of the subarray");
        }
        for (k, p) in dims.iter_mut().enumerate() {
            let name = p.column.name.clone();
            let field_err = |m: String| anyhow::anyhow!("line {n}, field {name:?}: {m}");
            let Some(value) = object.get(&name) else {
                if dense {
                    continue;
                }
                bail!("line {n}: missing dimension {name:?} (a sparse cell gives every dimension)");
            };
            let Some(s) = subarray else {
                p.push(value).map_err(field_err)?;
                continue;
            };
            // A dense cell's coordinates are implied; a key given must match them.
            if value.is_null() {
                return Err(field_err("a coordinate cannot be null".into()));
            }
            scratch.clear();
            cell_bytes(p.column.datatype, p.column.cell_val_num, value, &mut scratch)
                .map_err(field_err)?;
            if as_int(s.ranges[k].datatype, &scratch) != Some(coords[k]) {
                return Err(field_err(format!(
                    "{value} is not this cell's coordinate {} (dense cells come in row-major \
                     order of the subarray)",
                    coords[k]
                )));
            }
        }
        for p in &mut attrs {
            let name = p.column.name.clone();
            let Some(value) = object.get(&name) else {
                bail!("line {n}: missing attribute {name:?}");
            };
            p.push(value).map_err(|m| anyhow::anyhow!("line {n}, field {name:?}: {m}"))?;
        }
        cells += 1;
        if let Some(s) = subarray {
            // Next cell in row-major order: the last dimension fastest.
            for k in (0..coords.len()).rev() {
                if coords[k] < s.ranges[k].hi {
                    coords[k] += 1;
                    break;
                }
                coords[k] = s.ranges[k].lo;
            }
        }
    }
    if dense && cells != capacity {
        bail!("the subarray holds {capacity} cells, the input {cells}");
    }
    let mut out: Vec<Column> = Vec::with_capacity(dims.len() + attrs.len());
    if !dense {
        out.extend(dims.into_iter().map(|p| p.column));
    }
    out.extend(attrs.into_iter().map(|p| p.column));
    Ok(out)
}

fn kind(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// A serde_json error as "<what> at column C" (the line is the caller's).
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let what = text.rsplit_once(" at line ").map_or(text.as_str(), |(w, _)| w);
    format!("{what} at column {}", e.column())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subarray_parts() {
        assert_eq!(split_top_level("a=1:2,b=3:4"), ["a=1:2", "b=3:4"]);
        assert_eq!(split_top_level(r#"s="x,y":"z""#), [r#"s="x,y":"z""#]);
        assert_eq!(split_top_level(r#"s="x\",":z,t=1:2"#), [r#"s="x\",":z"#, "t=1:2"]);
    }

    #[test]
    fn coordinates_as_integers() {
        assert_eq!(as_int(Datatype::Int32, &(-3i32).to_le_bytes()), Some(-3));
        assert_eq!(as_int(Datatype::UInt64, &u64::MAX.to_le_bytes()), Some(u64::MAX.into()));
        assert_eq!(as_int(Datatype::Float64, &1f64.to_le_bytes()), None);
    }
}
