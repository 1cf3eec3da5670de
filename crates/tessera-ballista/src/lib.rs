//! Distributed SQL over Tessera arrays on Apache DataFusion Ballista.
//!
//! Ballista's stock scheduler and executor cannot decode plans that name Tessera tables and
//! scans (their extension codecs know only Ballista's own nodes). This crate wires
//! Tessera's codecs ([`tessera_datafusion::TesseraLogicalCodec`],
//! [`tessera_datafusion::TesseraPhysicalCodec`]) around Ballista's into:
//!
//! * the binary `tessera-ballista` (`scheduler` and `executor` subcommands, Ballista's own
//!   flags), see [`scheduler_config`] and [`executor_config`];
//! * the client, [`remote_context`] and [`register_array`], which `tessera sql --cluster`
//!   uses.
//!
//! What runs where: the client opens each array to learn its schema and pins the timestamps
//! it saw; it sends the logical plan (array URLs, timestamps, no credentials) to the
//! scheduler. The scheduler reopens the arrays to plan the scan partitions (it reads the
//! fragment metadata), cuts the plan into stages and hands each partition to an executor as
//! a task. Executors reopen the array at the same timestamps, check they see the same
//! fragments, and read their partitions. Local paths must therefore name the same array on
//! every machine (a shared file system); object-store URIs are opened with each process's
//! own environment (`AWS_*` variables and so on).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use tessera::Array;
use tessera_datafusion::datafusion_proto::logical_plan::LogicalExtensionCodec;
use tessera_datafusion::datafusion_proto::physical_plan::PhysicalExtensionCodec;
use tessera_datafusion::{ArrayOpener, TesseraLogicalCodec, TesseraPhysicalCodec, TesseraTable};
use tessera_object_store::{ObjectStoreStorage, is_object_store_uri};

/// Opens local paths and object-store URIs (`s3://…`, configured from this process's
/// environment), at a timestamp range or at the newest state.
pub fn opener() -> ArrayOpener {
    Arc::new(|uri: &str, ts: Option<(u64, u64)>| -> tessera_datafusion::Result<Array> {
        if is_object_store_uri(uri) {
            let storage = ObjectStoreStorage::from_uri(uri)
                .map_err(|e| tessera_datafusion::Error::Spec(format!("{uri}: {e}")))?;
            let storage: Arc<dyn tessera::Storage> = Arc::new(storage);
            let array = match ts {
                Some((s, e)) => Array::open_between(storage, s, e),
                None => Array::open(storage),
            };
            return Ok(array?);
        }
        let path = match uri.strip_prefix("file://") {
            Some(_) => tessera::uri_path(uri)?,
            None => uri.into(),
        };
        Ok(match ts {
            Some((s, e)) => tessera::open_between(&path, s, e)?,
            None => tessera::open(&path)?,
        })
    })
}

/// Tessera's logical codec around Ballista's: what the client encodes and the scheduler
/// decodes. Decoded tables plan their scans with a partition source: Ballista hands every
/// task its slice of a stage by restricting the stage's leaves to the task's partitions,
/// which it knows how to do for a memory source but not for a Tessera scan; without it,
/// every task would read every partition.
pub fn logical_codec() -> Arc<dyn LogicalExtensionCodec> {
    Arc::new(
        TesseraLogicalCodec::new(Arc::new(BallistaLogicalExtensionCodec::default()), opener())
            .with_partition_sources(),
    )
}

/// Tessera's physical codec around Ballista's: what the scheduler encodes and the executors
/// decode.
pub fn physical_codec() -> Arc<dyn PhysicalExtensionCodec> {
    Arc::new(TesseraPhysicalCodec::new(
        Arc::new(BallistaPhysicalExtensionCodec::default()),
        opener(),
    ))
}

/// The scheduler's configuration from its command line, with Tessera's codecs.
///
/// # Errors
/// Ballista's, for flags it refuses.
pub fn scheduler_config(
    opt: ballista_scheduler::config::Config,
) -> Result<ballista_scheduler::config::SchedulerConfig> {
    let mut config: ballista_scheduler::config::SchedulerConfig =
        opt.try_into().map_err(|e| anyhow::anyhow!("scheduler configuration: {e}"))?;
    config.override_logical_codec = Some(logical_codec());
    config.override_physical_codec = Some(physical_codec());
    Ok(config)
}

/// The executor's configuration from its command line, with Tessera's codecs.
///
/// # Errors
/// Ballista's, for flags it refuses.
pub fn executor_config(
    opt: ballista_executor::config::Config,
) -> Result<ballista_executor::executor_process::ExecutorProcessConfig> {
    let mut config: ballista_executor::executor_process::ExecutorProcessConfig =
        opt.try_into().map_err(|e| anyhow::anyhow!("executor configuration: {e}"))?;
    config.override_logical_codec = Some(logical_codec());
    config.override_physical_codec = Some(physical_codec());
    Ok(config)
}

/// The scheduler address of a cluster URL `df://HOST:PORT`.
///
/// # Errors
/// For another scheme, or a URL without host or port.
pub fn scheduler_address(url: &str) -> Result<(String, u16)> {
    let rest = url
        .strip_prefix("df://")
        .with_context(|| format!("cluster {url:?}: expected df://HOST:PORT"))?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest
        .rsplit_once(':')
        .with_context(|| format!("cluster {url:?}: expected df://HOST:PORT"))?;
    if host.is_empty() || host.contains('/') {
        bail!("cluster {url:?}: expected df://HOST:PORT");
    }
    let port: u16 = port
        .parse()
        .with_context(|| format!("cluster {url:?}: the port {port:?} is not a number"))?;
    Ok((host.to_owned(), port))
}

/// A session whose queries run on the Ballista cluster at `url` (`df://HOST:PORT`), with
/// Tessera's codecs; register arrays with [`register_array`]. Connects lazily: an
/// unreachable scheduler shows up at the first query.
///
/// # Errors
/// For a malformed URL.
pub async fn remote_context(url: &str) -> Result<SessionContext> {
    let (host, port) = scheduler_address(url)?;
    let config = SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(logical_codec())
        .with_ballista_physical_extension_codec(physical_codec());
    let state = SessionStateBuilder::new().with_config(config).with_default_features().build();
    let ctx = SessionContext::remote_with_state(&format!("df://{host}:{port}"), state)
        .await
        .with_context(|| format!("cluster {url}"))?;
    Ok(ctx)
}

/// Opens the array at `uri` (a local path, shared by every machine of the cluster, or an
/// object-store URI) and registers it in `ctx` as table `name`.
///
/// # Errors
/// When the array cannot be opened or the name is taken.
pub fn register_array(ctx: &SessionContext, name: &str, uri: &str) -> Result<()> {
    let array = opener()(uri, None).with_context(|| uri.to_owned())?;
    let table = TesseraTable::new(uri, array).with_context(|| uri.to_owned())?;
    ctx.register_table(name, Arc::new(table)).with_context(|| format!("table {name}"))?;
    Ok(())
}
