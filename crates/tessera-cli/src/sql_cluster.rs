//! `tessera sql --cluster df://HOST:PORT`: the query runs on a Ballista cluster through the
//! `tessera-ballista` binary (`crates/tessera-ballista`, built apart so that this binary and
//! the workspace never compile Ballista's gRPC stack). It answers with an Arrow IPC stream,
//! which `tessera sql` prints as it prints a local result.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use arrow_ipc::reader::StreamReader;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Field;

use crate::sql_cmd::one_line;

/// The name of the cluster binary.
const BINARY: &str = "tessera-ballista";

/// Where `tessera-ballista` is: `TESSERA_BALLISTA` when set, else beside this executable,
/// else on `PATH`.
fn locate() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("TESSERA_BALLISTA").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("TESSERA_BALLISTA={}: no such file", p.display());
        }
        return Ok(p);
    }
    let exe = format!("{BINARY}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join(&exe)));
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(&exe)).collect::<Vec<_>>())
        .unwrap_or_default();
    beside.into_iter().chain(on_path).find(|p| p.is_file()).with_context(|| {
        format!(
            "tessera sql --cluster needs the {BINARY} binary, found neither beside tessera nor \
             on PATH: build it with `cargo build --release --manifest-path \
             crates/tessera-ballista/Cargo.toml` (or set TESSERA_BALLISTA to its path)"
        )
    })
}

/// Runs `query` over `tables` on the cluster at `url`: the result's fields and batches.
pub(crate) fn run(
    url: &str,
    tables: &[String],
    query: &str,
) -> Result<(Vec<Field>, Vec<RecordBatch>)> {
    let binary = locate()?;
    let mut cmd = Command::new(&binary);
    cmd.arg("sql").arg("--cluster").arg(url);
    for t in tables {
        cmd.arg("--table").arg(t);
    }
    cmd.arg("--").arg(query).stdin(Stdio::null());
    let output = cmd.output().with_context(|| format!("running {}", binary.display()))?;
    if !output.status.success() {
        let text = String::from_utf8_lossy(&output.stderr);
        let msg = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        let msg = msg.strip_prefix("tessera-ballista: ").unwrap_or(msg);
        bail!("{}", one_line(msg));
    }
    let reader = StreamReader::try_new(output.stdout.as_slice(), None)
        .with_context(|| format!("reading the answer of {}", binary.display()))?;
    let fields: Vec<Field> = reader.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading the answer of {}", binary.display()))?;
    Ok((fields, batches))
}
