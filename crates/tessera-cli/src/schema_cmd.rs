//! `tessera schema`: the schema as JSON or as a summary for people.

use std::fmt::Write as _;

use anyhow::Result;
use tessera::Array;
use tessera::layers::schema::json::{FilterJson, to_json};
use tessera::layers::types::CELL_VAL_NUM_VAR;

/// The schema JSON of `docs/cli.md`, pretty-printed.
pub(crate) fn json(array: &Array) -> Result<String> {
    Ok(serde_json::to_string_pretty(&to_json(array.schema(), array.enumerations()))?)
}

fn filters(list: &[FilterJson]) -> String {
    if list.is_empty() {
        return "-".into();
    }
    let one = |f: &FilterJson| {
        let v = serde_json::to_value(f).unwrap_or_default();
        let opts: Vec<String> = v
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != "type")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if opts.is_empty() {
            f.filter_type.clone()
        } else {
            format!("{}({})", f.filter_type, opts.join(", "))
        }
    };
    list.iter().map(one).collect::<Vec<_>>().join(" → ")
}

/// A readable summary of the schema.
pub(crate) fn summary(array: &Array) -> String {
    let s = array.schema();
    let j = to_json(s, array.enumerations());
    let mut out = String::new();
    let schema_file = if array.is_legacy() {
        "__array_schema.tdb".to_owned()
    } else {
        array.schema_name().to_string()
    };
    let _ =
        writeln!(out, "{} array, format version {}, schema {schema_file}", s.array_type, s.version);
    let _ = writeln!(
        out,
        "tile order {}, cell order {}, capacity {}",
        s.tile_order, s.cell_order, s.capacity
    );
    if !s.is_dense() {
        let _ = writeln!(
            out,
            "duplicates {}",
            if s.allows_duplicates { "allowed" } else { "not allowed" }
        );
    }
    let _ = writeln!(out, "dimensions:");
    for d in &j.dimensions {
        let domain =
            d.domain.as_ref().map_or("(strings)".to_owned(), |[lo, hi]| format!("[{lo}, {hi}]"));
        let tile = d.tile.as_ref().map_or("-".to_owned(), ToString::to_string);
        let _ = writeln!(
            out,
            "  {:<16} {:<14} domain {domain:<24} tile {tile:<8} filters {}",
            d.name,
            d.datatype,
            filters(&d.filters)
        );
    }
    let _ = writeln!(out, "attributes:");
    for (a, raw) in j.attributes.iter().zip(&s.attributes) {
        let cells = if raw.cell_val_num == CELL_VAL_NUM_VAR {
            "var".to_owned()
        } else {
            format!("x{}", raw.cell_val_num)
        };
        let fill = a.fill.as_ref().map_or("-".to_owned(), ToString::to_string);
        let mut extra = String::new();
        if a.nullable {
            extra.push_str(" nullable");
        }
        if let Some(e) = &a.enumeration {
            let _ = write!(extra, " enumeration {e}");
        }
        let _ = writeln!(
            out,
            "  {:<16} {:<14} {cells:<4} fill {fill:<12} filters {}{extra}",
            a.name,
            a.datatype,
            filters(&a.filters)
        );
    }
    for (name, e) in &j.enumerations {
        let values: Vec<String> = e.values.iter().take(8).map(ToString::to_string).collect();
        let more = if e.values.len() > 8 { ", …" } else { "" };
        let _ = writeln!(
            out,
            "enumeration {name}: {} {}[{}{more}] ({} values)",
            e.datatype,
            if e.ordered { "ordered " } else { "" },
            values.join(", "),
            e.values.len()
        );
    }
    if let Some(cd) = &j.current_domain {
        let ranges: Vec<String> = cd.iter().map(|[lo, hi]| format!("[{lo}, {hi}]")).collect();
        let _ = writeln!(out, "current domain: {}", ranges.join(" × "));
    }
    let _ = writeln!(out, "coords filters: {}", filters(&j.coords_filters));
    let _ = writeln!(out, "offsets filters: {}", filters(&j.offsets_filters));
    let _ = write!(out, "validity filters: {}", filters(&j.validity_filters));
    out
}
