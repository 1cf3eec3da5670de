//! Times queries over Tessera arrays on one node (a `SessionContext` in this process, what
//! `tessera sql` runs) and on a running Ballista cluster of `tessera-ballista` processes, with
//! the same tables cut into the same number of partitions. The numbers in docs/ballista.md
//! come from it (`scripts/ballista_bench.sh` starts the cluster and runs it).
//!
//! ```text
//! cluster_bench --cluster df://127.0.0.1:50050 --partitions 4 --runs 3 \
//!     --table p=SPARSE_ARRAY --table d=DENSE_ARRAY \
//!     --query "SELECT …" [--query …]
//! ```

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use tessera_datafusion::TesseraTable;

struct Args {
    cluster: String,
    partitions: usize,
    runs: usize,
    tables: Vec<(String, String)>,
    queries: Vec<String>,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        cluster: String::new(),
        partitions: 4,
        runs: 3,
        tables: Vec::new(),
        queries: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--cluster" => a.cluster = value,
            "--partitions" => a.partitions = value.parse()?,
            "--runs" => a.runs = value.parse()?,
            "--table" => {
                let (n, u) = value.split_once('=').context("--table NAME=ARRAY")?;
                a.tables.push((n.to_owned(), u.to_owned()));
            }
            "--query" => a.queries.push(value),
            other => bail!("unknown flag {other}"),
        }
    }
    if a.cluster.is_empty() || a.queries.is_empty() {
        bail!("--cluster and at least one --query are needed");
    }
    Ok(a)
}

fn register(ctx: &SessionContext, a: &Args) -> Result<()> {
    for (name, uri) in &a.tables {
        let array = tessera_ballista::opener()(uri, None)?;
        let table = TesseraTable::new(uri.clone(), array)?.with_partitions(a.partitions);
        ctx.register_table(name.as_str(), Arc::new(table))?;
    }
    Ok(())
}

/// Runs `sql` `runs` times; the best and median seconds, and the result as text.
async fn time(ctx: &SessionContext, sql: &str, runs: usize) -> Result<(f64, f64, String)> {
    let mut secs = Vec::new();
    let mut text = String::new();
    for _ in 0..runs {
        let t = Instant::now();
        let batches = ctx.sql(sql).await?.collect().await?;
        secs.push(t.elapsed().as_secs_f64());
        text = pretty_format_batches(&batches)?.to_string();
    }
    secs.sort_by(f64::total_cmp);
    Ok((secs[0], secs[secs.len() / 2], text))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<()> {
    let a = parse()?;
    let local =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(a.partitions));
    register(&local, &a)?;
    let remote = tessera_ballista::remote_context(&a.cluster).await?;
    register(&remote, &a)?;
    println!("| query | one node best / median (s) | cluster best / median (s) | same result |");
    println!("|---|---|---|---|");
    for q in &a.queries {
        let (lb, lm, lt) = time(&local, q, a.runs).await?;
        let (cb, cm, ct) = time(&remote, q, a.runs).await?;
        println!("| `{q}` | {lb:.2} / {lm:.2} | {cb:.2} / {cm:.2} | {} |", lt == ct);
    }
    Ok(())
}
