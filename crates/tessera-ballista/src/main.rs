//! `tessera-ballista`: Ballista's scheduler and executor with Tessera's codecs, and the
//! cluster client behind `tessera sql --cluster`.
//!
//! ```text
//! tessera-ballista scheduler --bind-host 0.0.0.0 --bind-port 50050 [Ballista's flags]
//! tessera-ballista executor --scheduler-host H --scheduler-port 50050 \
//!     --bind-host 0.0.0.0 --bind-port 50051 --bind-grpc-port 50052 [--vcores N] [--work-dir DIR]
//! tessera-ballista sql --cluster df://H:50050 --table t=ARRAY "SELECT …"   # Arrow IPC on stdout
//! ```

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use ballista_core::config::LogRotationPolicy;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// Distributed SQL over Tessera arrays on Apache DataFusion Ballista.
#[derive(Debug, Parser)]
#[command(name = "tessera-ballista", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ballista's scheduler (plans queries; opens the arrays to plan their partitions).
    Scheduler(Box<ballista_scheduler::config::Config>),
    /// Ballista's executor (reads its partitions of the arrays and runs the tasks).
    Executor(Box<ballista_executor::config::Config>),
    /// Runs one query on a cluster and writes its result to standard output as an Arrow IPC
    /// stream (what `tessera sql --cluster` prints).
    Sql(SqlArgs),
}

#[derive(Debug, clap::Args)]
struct SqlArgs {
    /// The scheduler, `df://HOST:PORT`.
    #[arg(long)]
    cluster: String,
    /// `NAME=ARRAY`: the array ARRAY as table NAME (repeatable).
    #[arg(long = "table", value_name = "NAME=ARRAY", required = true)]
    tables: Vec<String>,
    /// The query.
    query: String,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Scheduler(opt) => runtime(true).and_then(|rt| rt.block_on(scheduler(*opt))),
        Command::Executor(opt) => runtime(false).and_then(|rt| rt.block_on(executor(*opt))),
        Command::Sql(args) => runtime(false).and_then(|rt| rt.block_on(sql(args))),
    };
    if let Err(e) = result {
        eprintln!("tessera-ballista: {}", one_line(&format!("{e:#}")));
        std::process::exit(1);
    }
}

/// The process's runtime; the scheduler's with big stacks as Ballista's own binary has
/// (deep plans are planned recursively).
fn runtime(big_stacks: bool) -> Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.enable_all();
    if big_stacks {
        b.thread_stack_size(32 << 20);
    }
    b.build().context("starting the runtime")
}

/// Logs as Ballista's binaries do: `RUST_LOG` or the level flag, to standard output or to
/// a file in `log_dir`.
fn init_logging(
    level: &str,
    threads: bool,
    log_dir: Option<&str>,
    prefix: &str,
    rotation: LogRotationPolicy,
) {
    let filter = EnvFilter::new(std::env::var(EnvFilter::DEFAULT_ENV).unwrap_or(level.to_owned()));
    let builder = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_thread_names(threads)
        .with_thread_ids(threads)
        .with_env_filter(filter);
    match log_dir {
        Some(dir) => {
            let file = match rotation {
                LogRotationPolicy::Minutely => tracing_appender::rolling::minutely(dir, prefix),
                LogRotationPolicy::Hourly => tracing_appender::rolling::hourly(dir, prefix),
                LogRotationPolicy::Daily => tracing_appender::rolling::daily(dir, prefix),
                LogRotationPolicy::Never => tracing_appender::rolling::never(dir, prefix),
            };
            builder.with_writer(file).init();
        }
        None => builder.with_writer(std::io::stdout).init(),
    }
}

async fn scheduler(opt: ballista_scheduler::config::Config) -> Result<()> {
    let prefix = format!("scheduler_{}_{}_{}", opt.namespace, opt.external_host, opt.bind_port);
    init_logging(
        &opt.log_level_setting,
        opt.print_thread_info,
        opt.log_dir.as_deref(),
        &prefix,
        opt.log_rotation_policy,
    );
    let addr: SocketAddr = format!("{}:{}", opt.bind_host, opt.bind_port)
        .parse()
        .with_context(|| format!("--bind-host {} --bind-port {}", opt.bind_host, opt.bind_port))?;
    let config = tessera_ballista::scheduler_config(opt)?;
    let cluster = ballista_scheduler::cluster::BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| anyhow!("scheduler cluster state: {e}"))?;
    ballista_scheduler::scheduler_process::start_server(cluster, addr, Arc::new(config))
        .await
        .map_err(|e| anyhow!("scheduler on {addr}: {e}"))
}

async fn executor(opt: ballista_executor::config::Config) -> Result<()> {
    let health_addr: SocketAddr = format!("{}:{}", opt.bind_host, opt.bind_health_port)
        .parse()
        .with_context(|| format!("--bind-host {} --bind-health-port", opt.bind_host))?;
    let config = tessera_ballista::executor_config(opt)?;
    init_logging(
        &config.special_mod_log_level,
        config.print_thread_info,
        config.log_dir.as_deref(),
        &config.log_file_name_prefix(),
        config.log_rotation_policy,
    );
    // Ballista's probes (/healthz, /readyz), as its own executor binary serves them.
    let (stop_health, stopped) = tokio::sync::oneshot::channel();
    let health =
        ballista_executor::health::spawn_health_server(health_addr, config.health.clone(), stopped);
    let result = ballista_executor::executor_process::start_executor_process(Arc::new(config))
        .await
        .map_err(|e| anyhow!("executor: {e}"));
    let _ = stop_health.send(());
    if let Ok(Err(e)) = health.await {
        tracing::warn!("executor health server: {e}");
    }
    result
}

async fn sql(args: SqlArgs) -> Result<()> {
    let ctx = tessera_ballista::remote_context(&args.cluster).await?;
    for t in &args.tables {
        let (name, uri) =
            t.split_once('=').with_context(|| format!("--table {t:?}: expected NAME=ARRAY"))?;
        if name.is_empty() || uri.is_empty() {
            bail!("--table {t:?}: expected NAME=ARRAY");
        }
        tessera_ballista::register_array(&ctx, name, uri)?;
    }
    let df = ctx.sql(&args.query).await.with_context(|| format!("cluster {}", args.cluster))?;
    let schema = df.schema().as_arrow().clone();
    let batches = df.collect().await.with_context(|| format!("cluster {}", args.cluster))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut out, &schema)?;
    for b in &batches {
        writer.write(b)?;
    }
    writer.finish()?;
    drop(writer);
    out.flush()?;
    Ok(())
}

/// Multi-line messages (DataFusion's, tonic's) on one line.
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}
