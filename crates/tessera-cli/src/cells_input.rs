//! The cells JSONL input of `tessera write` (see `write_cmd`), parsed into one [`Column`] per
//! field. It needs only a schema and its enumerations, no array, clap or file, so the
//! `cells_jsonl` fuzz target (`fuzz/`) includes this file and `cells.rs` as they are.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value as Json};
use tessera::ArraySchema;
use tessera::layers::query::Column;
use tessera::layers::schema::{Enumeration, Value};
use tessera::layers::types::Datatype;

use crate::cells::cell_bytes;

/// One dimension's range of a dense write.
#[derive(Debug, Clone)]
pub(crate) struct DimRange {
    pub(crate) dim: String,
    pub(crate) datatype: Datatype,
    pub(crate) lo: i128,
    pub(crate) hi: i128,
    pub(crate) lo_bytes: Vec<u8>,
    pub(crate) hi_bytes: Vec<u8>,
}

/// The region of a dense write: one range per dimension, in schema order.
#[derive(Debug, Clone)]
pub(crate) struct Subarray {
    pub(crate) ranges: Vec<DimRange>,
}

impl Subarray {
    /// The number of cells (saturating).
    pub(crate) fn cell_num(&self) -> u128 {
        self.ranges
            .iter()
            .map(|r| u128::try_from(r.hi - r.lo + 1).unwrap_or(0))
            .fold(1u128, u128::saturating_mul)
    }
}

/// An integer coordinate or bound as `i128`.
pub(crate) fn as_int(datatype: Datatype, bytes: &[u8]) -> Option<i128> {
    Value::decode(datatype, bytes).ok()?.as_i128().filter(|_| !datatype.is_float())
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
pub(crate) fn parse_cells(
    schema: &ArraySchema,
    enumerations: &[Enumeration],
    text: &str,
    subarray: Option<&Subarray>,
    enum_codes: bool,
) -> Result<Vec<Column>> {
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
                let e = enumerations
                    .iter()
                    .find(|e| &e.name == name)
                    .with_context(|| format!("enumeration {name:?} of {:?} not found", a.name))?;
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

/// A serde_json error as `"<what> at column C"` (the line is the caller's).
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let what = text.rsplit_once(" at line ").map_or(text.as_str(), |(w, _)| w);
    format!("{what} at column {}", e.column())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_as_integers() {
        assert_eq!(as_int(Datatype::Int32, &(-3i32).to_le_bytes()), Some(-3));
        assert_eq!(as_int(Datatype::UInt64, &u64::MAX.to_le_bytes()), Some(u64::MAX.into()));
        assert_eq!(as_int(Datatype::Float64, &1f64.to_le_bytes()), None);
    }
}
