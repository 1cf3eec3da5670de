//! `tessera evolve`: one schema evolution (libtiledb's `ArraySchemaEvolution`) from
//! command-line options, written as one new schema file.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::Value as Json;
use tessera::SchemaEvolution;
use tessera::layers::schema::json::{
    AttributeJson, NamedEnumerationJson, attribute_from_json, enumeration_values_from_json,
    value_from_json,
};

use crate::location::Location;

/// The changes of `tessera evolve`, applied in libtiledb's order (enumerations added, then
/// extended, attributes added, attributes dropped, enumerations dropped, current domain).
#[derive(Debug, Args)]
pub(crate) struct EvolveArgs {
    /// Add an attribute: its JSON as in the `attributes` of the schema JSON, e.g.
    /// `{"name":"b","type":"float64","nullable":true}` (repeatable).
    #[arg(long = "add-attr", value_name = "JSON")]
    add_attr: Vec<String>,
    /// Drop an attribute (repeatable).
    #[arg(long = "drop-attr", value_name = "NAME")]
    drop_attr: Vec<String>,
    /// Add an enumeration: `{"name":"colors","type":"string_utf8","ordered":false,
    /// "values":["red","green"]}` (repeatable).
    #[arg(long = "add-enum", value_name = "JSON")]
    add_enum: Vec<String>,
    /// Extend an enumeration with the values of the `--values` that follows (repeatable).
    #[arg(long = "extend-enum", value_name = "NAME", requires = "values")]
    extend_enum: Vec<String>,
    /// The values to append to the enumeration of the matching `--extend-enum`, a JSON list.
    #[arg(long = "values", value_name = "JSON", requires = "extend_enum")]
    values: Vec<String>,
    /// Drop an enumeration no attribute uses (repeatable).
    #[arg(long = "drop-enum", value_name = "NAME")]
    drop_enum: Vec<String>,
    /// Expand the current domain of dimension D to [LO, HI] (repeatable; dimensions not
    /// named keep their current range). The new range must contain the current one.
    #[arg(long = "expand-domain", value_name = "D=LO:HI")]
    expand_domain: Vec<String>,
    /// Timestamp of the new schema (ms since the epoch; default now).
    #[arg(long, value_name = "MS")]
    timestamp: Option<u64>,
    /// Print the new schema file's name.
    #[arg(long)]
    print_name: bool,
}

/// Runs `tessera evolve`.
pub(crate) fn run(array: &Path, args: &EvolveArgs) -> Result<()> {
    let location = Location::of(array)?;
    let storage = location.storage();
    let (schema, _, enumerations) =
        tessera::layers::query::latest_schema(storage.as_ref()).with_context(|| location.name())?;
    let mut ev = SchemaEvolution::new();
    for text in &args.add_enum {
        let j: NamedEnumerationJson =
            serde_json::from_str(text).with_context(|| format!("--add-enum {text}"))?;
        ev = ev.add_enumeration(j.to_enumeration().with_context(|| format!("--add-enum {text}"))?);
    }
    if args.extend_enum.len() != args.values.len() {
        bail!("each --extend-enum NAME needs one --values JSON");
    }
    for (name, text) in args.extend_enum.iter().zip(&args.values) {
        let values: Vec<Json> =
            serde_json::from_str(text).with_context(|| format!("--values {text}: a JSON list"))?;
        // The datatype is the enumeration's own: in the schema, or added by this evolution.
        let dt = match enumerations.iter().find(|e| e.name == *name) {
            Some(e) => e.datatype,
            None => {
                let added = args.add_enum.iter().find_map(|t| {
                    serde_json::from_str::<NamedEnumerationJson>(t).ok().filter(|j| j.name == *name)
                });
                match added {
                    Some(j) => tessera::Datatype::from_name(&j.datatype)
                        .map_err(|e| anyhow::anyhow!("{e}"))?,
                    None => bail!(
                        "{}: cannot extend enumeration {name:?}: the schema has no enumeration \
                         of that name",
                        location.name()
                    ),
                }
            }
        };
        let bytes = enumeration_values_from_json(name, dt, &values)?;
        ev = ev.extend_enumeration(name.clone(), bytes);
    }
    for text in &args.add_attr {
        let j: AttributeJson =
            serde_json::from_str(text).with_context(|| format!("--add-attr {text}"))?;
        ev = ev
            .add_attribute(attribute_from_json(&j).with_context(|| format!("--add-attr {text}"))?);
    }
    for name in &args.drop_attr {
        ev = ev.drop_attribute(name.clone());
    }
    for name in &args.drop_enum {
        ev = ev.drop_enumeration(name.clone());
    }
    if !args.expand_domain.is_empty() {
        let mut ranges: Vec<Option<[Vec<u8>; 2]>> = match &schema.current_domain {
            Some(cd) => cd.ranges.iter().cloned().map(Some).collect(),
            None => vec![None; schema.dimensions.len()],
        };
        for spec in &args.expand_domain {
            let (dim, range) = spec
                .split_once('=')
                .with_context(|| format!("--expand-domain {spec}: expected D=LO:HI"))?;
            let (lo, hi) = range
                .split_once(':')
                .with_context(|| format!("--expand-domain {spec}: expected D=LO:HI"))?;
            let Some(i) = schema.dimensions.iter().position(|d| d.name == dim) else {
                bail!("--expand-domain {spec}: the array has no dimension {dim:?}");
            };
            let dt = schema.dimensions[i].datatype;
            let value = |text: &str| -> Result<Vec<u8>> {
                let j = if dt.is_string() {
                    Json::String(text.to_owned())
                } else {
                    serde_json::from_str(text).unwrap_or_else(|_| Json::String(text.to_owned()))
                };
                value_from_json(dt, &j).with_context(|| format!("--expand-domain {spec}"))
            };
            ranges[i] = Some([value(lo)?, value(hi)?]);
        }
        let ranges = ranges
            .into_iter()
            .zip(&schema.dimensions)
            .map(|(r, d)| {
                r.with_context(|| {
                    format!(
                        "--expand-domain: the array has no current domain yet, so every \
                         dimension needs a range ({:?} has none)",
                        d.name
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        ev = ev.expand_current_domain(ranges);
    }
    if let Some(t) = args.timestamp {
        ev = ev.timestamp(t);
    }
    if ev.is_empty() {
        bail!(
            "nothing to change: give at least one of --add-attr, --drop-attr, --add-enum, --extend-enum, --drop-enum, --expand-domain"
        );
    }
    let name = tessera::layers::query::evolve(&storage, &ev).with_context(|| location.name())?;
    if args.print_name {
        outln!("{name}")?;
    }
    Ok(())
}
