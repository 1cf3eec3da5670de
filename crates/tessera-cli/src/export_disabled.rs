//! `tessera read --format arrow|parquet` in a build without the `export` feature.

use std::path::Path;

use anyhow::{Result, bail};
use tessera::Array;

use crate::read_cmd::{FormatArg, ReadArgs};

/// Refuses: this build has no Arrow or Parquet writer.
pub(crate) fn run(_: &Array, _: &ReadArgs, _: FormatArg, _: &Path) -> Result<()> {
    bail!("this tessera was built without the `export` feature (--format arrow|parquet)")
}
