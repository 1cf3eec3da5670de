//! Schema evolution and the array lifecycle (tiledb-py's `ArraySchemaEvolution`,
//! `Array.delete_array`, `Array.delete_fragments`, `consolidate(fragment_uris=)`,
//! `Array.upgrade_version`, `Group.delete`) over any storage.

use pyo3::prelude::*;
use serde::Deserialize;
use tessera::SchemaEvolution;
use tessera::layers::query::consolidate::{self as cons, Options};
use tessera::layers::schema::json::{
    AttributeJson, NamedEnumerationJson, attribute_from_json, value_from_json,
};
use tessera_object_store::is_object_store_uri;

use crate::errors::{chain, tiledb_error};
use crate::location;
use crate::runtime::run;

/// What a Python `ArraySchemaEvolution` lists, as JSON.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvolutionSpec {
    #[serde(default)]
    add_attributes: Vec<AttributeJson>,
    #[serde(default)]
    drop_attributes: Vec<String>,
    #[serde(default)]
    add_enumerations: Vec<NamedEnumerationJson>,
    /// Each the whole extended enumeration (the old values first).
    #[serde(default)]
    extend_enumerations: Vec<NamedEnumerationJson>,
    #[serde(default)]
    drop_enumerations: Vec<String>,
    /// The new current domain: `[low, high]` per dimension, as the schema JSON writes them.
    #[serde(default)]
    expand_current_domain: Option<Vec<[serde_json::Value; 2]>>,
    #[serde(default)]
    timestamp: Option<u64>,
}

fn fail(uri: &str) -> impl Fn(tessera::Error) -> PyErr + '_ {
    move |e| tiledb_error(format!("{uri}: {}", chain(&e)))
}

/// Evolves the schema of the array at `uri` as `spec_json` lists (see [`EvolutionSpec`]);
/// returns the new schema file's name.
#[pyfunction]
#[pyo3(signature = (uri, spec_json, key=None))]
pub(crate) fn evolve(
    py: Python<'_>,
    uri: String,
    spec_json: String,
    key: Option<Vec<u8>>,
) -> PyResult<String> {
    let spec: EvolutionSpec = serde_json::from_str(&spec_json)
        .map_err(|e| tiledb_error(format!("schema evolution: {e}")))?;
    let mut ev = SchemaEvolution::new();
    for e in &spec.add_enumerations {
        let e = e.to_enumeration().map_err(|e| tiledb_error(format!("enumeration: {e}")))?;
        ev = ev.add_enumeration(e);
    }
    for e in &spec.extend_enumerations {
        let e = e.to_enumeration().map_err(|e| tiledb_error(format!("enumeration: {e}")))?;
        ev = ev.extend_enumeration_to(e);
    }
    for a in &spec.add_attributes {
        let a = attribute_from_json(a).map_err(|e| tiledb_error(format!("attribute: {e}")))?;
        ev = ev.add_attribute(a);
    }
    for name in spec.drop_attributes {
        ev = ev.drop_attribute(name);
    }
    for name in spec.drop_enumerations {
        ev = ev.drop_enumeration(name);
    }
    if let Some(t) = spec.timestamp {
        ev = ev.timestamp(t);
    }
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    run(py, move || {
        if let Some(ranges) = &spec.expand_current_domain {
            // The values are typed by the array's dimensions.
            let (schema, _, _) = tessera::layers::query::latest_schema(storage.as_ref())
                .map_err(fail(&uri))?;
            if ranges.len() != schema.dimensions.len() {
                return Err(tiledb_error(format!(
                    "{uri}: the new current domain has {} ranges for {} dimensions",
                    ranges.len(),
                    schema.dimensions.len()
                )));
            }
            let bytes = schema
                .dimensions
                .iter()
                .zip(ranges)
                .map(|(d, [lo, hi])| {
                    let v = |j| {
                        value_from_json(d.datatype, j).map_err(|e| {
                            tiledb_error(format!("{uri}: current domain of {:?}: {e}", d.name))
                        })
                    };
                    Ok([v(lo)?, v(hi)?])
                })
                .collect::<PyResult<Vec<_>>>()?;
            ev = ev.expand_current_domain(bytes);
        }
        tessera::layers::query::evolve(&storage, &ev)
            .map(|name| name.to_string())
            .map_err(fail(&uri))
    })
}

/// Deletes the array at `uri` as libtiledb's `tiledb_array_delete` does.
#[pyfunction]
pub(crate) fn delete_array(py: Python<'_>, uri: String) -> PyResult<()> {
    let storage = location::storage(&uri)?;
    run(py, move || {
        tessera::layers::query::delete_array(storage.as_ref()).map_err(fail(&uri))?;
        // The emptied folder of a local array goes too, as libtiledb leaves none.
        if !is_object_store_uri(&uri)
            && let Ok(path) = location::local_path(&uri)
        {
            let _ = std::fs::remove_dir(path);
        }
        Ok(())
    })
}

/// Deletes the fragments of the array at `uri` written in `[start, end]`, or those named in
/// `names` (fragment names or URIs); returns the fragments deleted.
#[pyfunction]
#[pyo3(signature = (uri, start=None, end=None, names=None))]
pub(crate) fn delete_fragments(
    py: Python<'_>,
    uri: String,
    start: Option<u64>,
    end: Option<u64>,
    names: Option<Vec<String>>,
) -> PyResult<Vec<String>> {
    let storage = location::storage(&uri)?;
    run(py, move || {
        let deleted = match names {
            Some(names) => {
                let names: Vec<&str> =
                    names.iter().map(|n| n.rsplit('/').next().unwrap_or(n)).collect();
                tessera::layers::query::delete_fragments_list(storage.as_ref(), &names)
            }
            None => tessera::layers::query::delete_fragments_between(
                storage.as_ref(),
                start.unwrap_or(0),
                end.unwrap_or(u64::MAX),
            ),
        };
        deleted.map_err(fail(&uri))
    })
}

/// Consolidates the fragments named in `names` (names or URIs) of the array at `uri`;
/// returns the new fragment's name (None when there was nothing to merge).
#[pyfunction]
#[pyo3(signature = (uri, names, key=None))]
pub(crate) fn consolidate_fragments(
    py: Python<'_>,
    uri: String,
    names: Vec<String>,
    key: Option<Vec<u8>>,
) -> PyResult<Option<String>> {
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    run(py, move || {
        let names: Vec<&str> = names.iter().map(|n| n.rsplit('/').next().unwrap_or(n)).collect();
        cons::consolidate_fragments(storage, &names, &Options::default())
            .map(|report| report.output)
            .map_err(fail(&uri))
    })
}

/// Rewrites the schema of an array written before format 22 at 22, as libtiledb's
/// `upgrade_version`; returns the new schema file's name (None when it was already current).
#[pyfunction]
pub(crate) fn upgrade_version(py: Python<'_>, uri: String) -> PyResult<Option<String>> {
    let storage = location::storage(&uri)?;
    run(py, move || {
        tessera::layers::query::upgrade_version(storage.as_ref())
            .map(|n| n.map(|n| n.to_string()))
            .map_err(fail(&uri))
    })
}

/// Deletes the group at `uri` (its members too with `recursive`), as libtiledb.
#[pyfunction]
#[pyo3(signature = (uri, recursive=false))]
pub(crate) fn delete_group(py: Python<'_>, uri: String, recursive: bool) -> PyResult<()> {
    if is_object_store_uri(&uri) {
        return Err(crate::errors::NotSupportedError::new_err(format!(
            "{uri}: deleting groups is only supported on local paths"
        )));
    }
    let path = location::local_path(&uri)?;
    run(py, move || tessera::delete_group(&path, recursive).map_err(fail(&uri)))
}
