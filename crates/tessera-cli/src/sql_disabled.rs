//! `tessera sql` in a binary built without the `sql` feature (DataFusion): the same arguments,
//! and a clear error instead of a query.

use std::path::Path;

use anyhow::{Result, bail};
use clap::Args;
use tessera::Array;

use crate::read_cmd::FormatArg;

/// The arguments of `tessera sql` (see the `sql` feature's `sql_cmd.rs`).
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
    /// Run the query on the Ballista cluster at `df://HOST:PORT`.
    #[arg(long, value_name = "df://HOST:PORT")]
    pub(crate) cluster: Option<String>,
}

/// Refuses: SQL needs the `sql` feature.
pub(crate) fn run(_args: &SqlArgs, _open: impl Fn(&Path) -> Result<Array>) -> Result<()> {
    bail!("this tessera was built without the `sql` feature (DataFusion); rebuild with it")
}
