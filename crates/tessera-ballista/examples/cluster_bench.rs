//! Times queries over Tessera arrays on one node (a `SessionContext` in this process, what
//! `tessera sql` runs) and on a running Ballista cluster of `tessera-ballista` processes, with
//! the same tables cut into the same number of partitions. Runs alternate (one node, cluster,
//! one node, ...) so that a change in the machine's load hits both alike. With the executors'
//! log files (`--executor-log`, in executor order), it also counts the tasks each executor ran
//! in each stage of the first cluster run: with `--vcores 1` a task is one partition, so the
//! first stage's counts are the scan partitions each executor read. The numbers in
//! docs/ballista.md come from it (`xtask/bench/ballista_bench.sh` starts the cluster and runs
//! it).
//!
//! ```text
//! cluster_bench --cluster df://127.0.0.1:50050 --partitions 4 --runs 3 \
//!     --table p=SPARSE_ARRAY --table d=DENSE_ARRAY \
//!     [--executor-log executor0.log --executor-log executor1.log] \
//!     --query "SELECT …" [--query …]
//! ```

use std::collections::BTreeMap;
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
    executor_logs: Vec<String>,
}

fn parse() -> Result<Args> {
    let mut a = Args {
        cluster: String::new(),
        partitions: 4,
        runs: 3,
        tables: Vec::new(),
        queries: Vec::new(),
        executor_logs: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--cluster" => a.cluster = value,
            "--partitions" => a.partitions = value.parse().context("--partitions")?,
            "--runs" => a.runs = value.parse().context("--runs")?,
            "--table" => {
                let (n, u) = value.split_once('=').context("--table NAME=ARRAY")?;
                a.tables.push((n.to_owned(), u.to_owned()));
            }
            "--query" => a.queries.push(value),
            "--executor-log" => a.executor_logs.push(value),
            other => bail!("unknown flag {other}"),
        }
    }
    if a.cluster.is_empty() || a.queries.is_empty() {
        bail!("--cluster and at least one --query are needed");
    }
    if a.runs == 0 || a.partitions == 0 {
        bail!("--runs and --partitions must be at least 1");
    }
    Ok(a)
}

fn register(ctx: &SessionContext, a: &Args) -> Result<()> {
    for (name, uri) in &a.tables {
        let array = tessera_ballista::opener()(uri, None).with_context(|| uri.clone())?;
        let table = TesseraTable::new(uri.clone(), array)?.with_partitions(a.partitions);
        ctx.register_table(name.as_str(), Arc::new(table))?;
    }
    Ok(())
}

/// Runs `sql` once: the seconds it took and the result as text.
async fn once(ctx: &SessionContext, sql: &str) -> Result<(f64, String)> {
    let t = Instant::now();
    let batches = ctx.sql(sql).await?.collect().await?;
    let secs = t.elapsed().as_secs_f64();
    Ok((secs, pretty_format_batches(&batches)?.to_string()))
}

fn median(mut secs: Vec<f64>) -> f64 {
    secs.sort_by(f64::total_cmp);
    secs[secs.len() / 2]
}

/// The lines of each executor log (so far).
fn log_lines(paths: &[String]) -> Result<Vec<usize>> {
    paths
        .iter()
        .map(|p| Ok(std::fs::read_to_string(p).with_context(|| p.clone())?.lines().count()))
        .collect()
}

/// Tasks per stage and executor in the log lines after `from`: Ballista's executor logs
/// `Execute task  : [TID job/stage.attempt/task.attempt]` for each task it starts.
fn tasks_per_stage(paths: &[String], from: &[usize]) -> Result<BTreeMap<u64, Vec<usize>>> {
    let mut stages: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (e, (p, skip)) in paths.iter().zip(from).enumerate() {
        let text = std::fs::read_to_string(p).with_context(|| p.clone())?;
        for line in text.lines().skip(*skip) {
            let Some((_, tid)) = line.split_once("Execute task  : [TID ") else { continue };
            // job/stage.attempt/task.attempt]
            let stage = tid
                .split('/')
                .nth(1)
                .and_then(|s| s.split('.').next())
                .and_then(|s| s.parse::<u64>().ok())
                .with_context(|| format!("{p}: a task line without a stage: {line}"))?;
            stages.entry(stage).or_insert_with(|| vec![0; paths.len()])[e] += 1;
        }
    }
    Ok(stages)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<()> {
    let a = parse()?;
    let local =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(a.partitions));
    register(&local, &a)?;
    let remote = tessera_ballista::remote_context(&a.cluster).await?;
    register(&remote, &a)?;
    println!(
        "| query | partitions | one node, median of {r} (s) | cluster, median of {r} (s) | \
         cluster / one node | same result | tasks per executor by stage (first cluster run) |",
        r = a.runs
    );
    println!("|---|---|---|---|---|---|---|");
    for q in &a.queries {
        let (mut here, mut there) = (Vec::new(), Vec::new());
        let mut same = true;
        let mut tasks = BTreeMap::new();
        for run in 0..a.runs {
            let (s, want) = once(&local, q).await.with_context(|| format!("one node: {q}"))?;
            here.push(s);
            let before = log_lines(&a.executor_logs)?;
            let (s, got) = once(&remote, q).await.with_context(|| format!("cluster: {q}"))?;
            there.push(s);
            if run == 0 {
                tasks = tasks_per_stage(&a.executor_logs, &before)?;
            }
            same &= want == got;
        }
        let (h, t) = (median(here), median(there));
        let tasks: Vec<String> = tasks
            .iter()
            .map(|(stage, n)| {
                let n: Vec<String> = n.iter().map(usize::to_string).collect();
                format!("stage {stage}: {}", n.join(" / "))
            })
            .collect();
        println!(
            "| `{q}` | {} | {h:.2} | {t:.2} | {:.2}× | {same} | {} |",
            a.partitions,
            t / h,
            tasks.join("; ")
        );
        if !same {
            bail!("the cluster's answer differs from one node's: {q}");
        }
    }
    Ok(())
}
