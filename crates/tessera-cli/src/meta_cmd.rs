//! `tessera meta`: read and change array metadata.

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::Value as Json;
use tessera::layers::query::metadata::{MetadataValue, MetadataWriter};
use tessera::layers::types::{Datatype, names::now_ms};

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
        /// The value: JSON (`3`, `[1, 2]`, `"text"`, `{"hex": "00ff"}`), or plain text for
        /// string types.
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

fn human(v: &MetadataValue) -> String {
    let j = v.value_json();
    format!("{} {}", v.datatype(), if let Json::String(s) = &j { s.clone() } else { j.to_string() })
}

/// Runs `tessera meta`.
pub(crate) fn run(array: &tessera::Array, action: MetaAction, json: bool) -> Result<()> {
    match action {
        MetaAction::Get { key } => {
            let md = array.metadata()?;
            let Some(v) = md.get(key.as_bytes()) else { bail!("no metadata key {key:?}") };
            if json {
                println!("{}", serde_json::to_string(&v.to_json())?);
            } else {
                println!("{}", human(v));
            }
        }
        MetaAction::List => {
            let md = array.metadata()?;
            if json {
                println!("{}", serde_json::to_string(&md.to_json())?);
            } else {
                for (k, v) in md.iter() {
                    println!("{}: {}", String::from_utf8_lossy(k), human(v));
                }
            }
        }
        MetaAction::Put { key, value, datatype, timestamp } => {
            let dt = Datatype::from_name(&datatype)?;
            let parsed = match serde_json::from_str::<Json>(&value) {
                Ok(j) if !dt.is_string() || j.is_string() => j,
                _ => Json::String(value.clone()),
            };
            let v = MetadataValue::from_json(dt, &parsed)
                .with_context(|| format!("value {value:?} as {datatype}"))?;
            let mut w = MetadataWriter::new(timestamp.unwrap_or_else(now_ms));
            w.put(key.into_bytes(), v)?;
            w.commit(array.storage().as_ref())?;
        }
        MetaAction::Delete { key, timestamp } => {
            let mut w = MetadataWriter::new(timestamp.unwrap_or_else(now_ms));
            w.delete(key.into_bytes())?;
            w.commit(array.storage().as_ref())?;
        }
    }
    Ok(())
}
