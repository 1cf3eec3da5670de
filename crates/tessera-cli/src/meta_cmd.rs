//! `tessera meta`: read and change the metadata of an array or a group (the same files, in
//! `__meta/`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::Value as Json;
use tessera::layers::query::metadata::{ArrayMetadata, MetadataValue, MetadataWriter};
use tessera::layers::types::{Datatype, names::now_ms};
use tessera::{ObjectType, Storage};

use crate::location::Location;

/// What `tessera meta` does.
#[derive(Debug, Subcommand)]
pub(crate) enum MetaAction {
    /// Print one key's value.
    Get {
        /// The key.
        key: String,
    },
    /// Print every key.
    List,
    /// Set a key (a new metadata file at the given or current time).
    Put {
        /// The key.
        key: String,
        /// The value. Numeric types (integers, floats, `bool`, datetimes): the values
        /// comma-separated (`1,2,3`; `true`/`false` for `bool`; `NaN`, `Infinity`,
        /// `-Infinity` for floats), or a JSON list as `meta list --json` prints it
        /// (`[1, 2, 3]`); an empty VALUE stores no values. String types (`char`, `string_*`,
        /// `geom_wkt`): the text as is. `blob`, `any`, `geom_wkb`: the bytes in hex
        /// (`00ff`), or `{"hex": "00ff"}` as `meta list --json` prints it.
        value: String,
        /// The value's type (`int64`, `float64`, `string_utf8`, `blob`, ...).
        #[arg(long = "type")]
        datatype: String,
        /// Timestamp of the write (ms since the epoch; default now).
        #[arg(long)]
        timestamp: Option<u64>,
    },
    /// Delete a key.
    Delete {
        /// The key.
        key: String,
        /// Timestamp of the write (ms since the epoch; default now).
        #[arg(long)]
        timestamp: Option<u64>,
    },
}

/// A value as `meta list` prints it: its type, then its text or its JSON.
pub(crate) fn human(v: &MetadataValue) -> String {
    let j = v.value_json();
    format!("{} {}", v.datatype(), if let Json::String(s) = &j { s.clone() } else { j.to_string() })
}

/// The value of `tessera meta put KEY VALUE --type T` (see the help of `VALUE`).
fn parse_value(dt: Datatype, value: &str) -> Result<MetadataValue> {
    let json = if dt.is_string() || matches!(dt, Datatype::Char | Datatype::GeomWkt) {
        Json::String(value.to_owned())
    } else if matches!(dt, Datatype::Blob | Datatype::Any | Datatype::GeomWkb) {
        if value.trim_start().starts_with('{') {
            serde_json::from_str(value).context("expected {\"hex\": \"…\"}")?
        } else {
            let hex: String = value.chars().filter(|c| !c.is_whitespace()).collect();
            let hex = hex.strip_prefix("0x").unwrap_or(&hex);
            serde_json::json!({ "hex": hex })
        }
    } else if value.trim_start().starts_with('[') {
        serde_json::from_str(value).context("expected a JSON list of values")?
    } else {
        let mut items = Vec::new();
        for (i, item) in value.split(',').map(str::trim).enumerate() {
            if item.is_empty() && !value.trim().is_empty() {
                bail!("element {i} is empty");
            }
            if item.is_empty() {
                continue;
            }
            items.push(match item {
                "NaN" | "Infinity" | "-Infinity" => Json::String(item.to_owned()),
                _ => serde_json::from_str::<Json>(item)
                    .ok()
                    .filter(|j| j.is_number() || j.is_boolean())
                    .with_context(|| format!("element {i} ({item:?}) is not a {dt} value"))?,
            });
        }
        Json::Array(items)
    };
    Ok(MetadataValue::from_json(dt, &json)?)
}

/// Where `tessera meta` reads and writes: the storage of an array or a group, and the open
/// timestamp range its metadata is read for.
pub(crate) struct MetaTarget {
    storage: Arc<dyn Storage>,
    range: (u64, u64),
}

impl MetaTarget {
    fn metadata(&self) -> Result<ArrayMetadata> {
        Ok(ArrayMetadata::load(self.storage.as_ref(), self.range.0, self.range.1)?)
    }
}

/// Opens the array or group at `path` (a folder or an object-store URI; now, or as it was
/// at `at`).
pub(crate) fn open_target(path: &Path, at: Option<u64>) -> Result<MetaTarget> {
    let location = Location::of(path)?;
    if location.object_type()? == ObjectType::Group {
        let group = location.open_group(at)?;
        return Ok(MetaTarget { storage: group.storage().clone(), range: group.timestamp_range() });
    }
    let array = location.open_array(at, None)?;
    Ok(MetaTarget { storage: array.storage().clone(), range: array.timestamp_range() })
}

/// Runs `tessera meta`.
pub(crate) fn run(target: &MetaTarget, action: MetaAction, json: bool) -> Result<()> {
    match action {
        MetaAction::Get { key } => {
            let md = target.metadata()?;
            let Some(v) = md.get(key.as_bytes()) else { bail!("no metadata key {key:?}") };
            if json {
                outln!("{}", serde_json::to_string(&v.to_json())?)?;
            } else {
                outln!("{}", human(v))?;
            }
        }
        MetaAction::List => {
            let md = target.metadata()?;
            if json {
                outln!("{}", serde_json::to_string(&md.to_json())?)?;
            } else {
                for (k, v) in md.iter() {
                    outln!("{}: {}", String::from_utf8_lossy(k), human(v))?;
                }
            }
        }
        MetaAction::Put { key, value, datatype, timestamp } => {
            let dt = Datatype::from_name(&datatype)?;
            let v = parse_value(dt, &value)
                .with_context(|| format!("value {value:?} as {datatype}"))?;
            let mut w = MetadataWriter::new(timestamp.unwrap_or_else(now_ms));
            w.put(key.into_bytes(), v)?;
            w.commit(target.storage.as_ref())?;
        }
        MetaAction::Delete { key, timestamp } => {
            let mut w = MetadataWriter::new(timestamp.unwrap_or_else(now_ms));
            w.delete(key.into_bytes())?;
            w.commit(target.storage.as_ref())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_values() {
        let v = |dt: Datatype, text: &str| parse_value(dt, text).map(|v| v.value_json());
        assert_eq!(v(Datatype::Int32, "1,2, 3").unwrap(), serde_json::json!([1, 2, 3]));
        assert_eq!(v(Datatype::Int32, "[1, 2, 3]").unwrap(), serde_json::json!([1, 2, 3]));
        assert_eq!(v(Datatype::Int64, "7").unwrap(), serde_json::json!([7]));
        assert_eq!(v(Datatype::Int64, "").unwrap(), serde_json::json!([]));
        assert_eq!(
            v(Datatype::Float64, "0.5,NaN,-Infinity").unwrap(),
            serde_json::json!([0.5, "NaN", "-Infinity"])
        );
        assert_eq!(v(Datatype::Bool, "true,false").unwrap(), serde_json::json!([true, false]));
        assert_eq!(v(Datatype::StringUtf8, "a,b [c]").unwrap(), serde_json::json!("a,b [c]"));
        assert_eq!(v(Datatype::Blob, "00ff").unwrap(), serde_json::json!({"hex": "00ff"}));
        assert_eq!(
            v(Datatype::Blob, r#"{"hex": "0a"}"#).unwrap(),
            serde_json::json!({"hex": "0a"})
        );
        assert!(v(Datatype::UInt8, "300").is_err());
        assert!(v(Datatype::Int32, "1,,2").is_err());
        assert!(v(Datatype::Int32, "x").is_err());
        assert!(v(Datatype::Blob, "0g").is_err());
    }
}
