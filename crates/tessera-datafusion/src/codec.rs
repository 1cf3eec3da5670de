//! The codecs that let a distributed engine (Ballista) ship Tessera tables and scans between
//! processes (feature `proto`): the client sends a logical plan naming [`TesseraTable`]s, the
//! scheduler plans it into [`TesseraExec`] partitions, the executors rebuild and run them.
//!
//! Both codecs write tagged bytes: a magic prefix that starts with a zero byte (never the
//! start of a protobuf message, whose first byte is a field tag, never 0) and a version byte,
//! then JSON. Bytes without the prefix are handed to the wrapped codec, so a codec that
//! already knows other nodes (Ballista's shuffles, DataFusion's file formats) keeps working.
//!
//! Nothing secret is encoded: an array is named by its URL, and each process opens it with
//! its own [`ArrayOpener`] (credentials come from that process's environment).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result as DfResult, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::{DefaultLogicalExtensionCodec, LogicalExtensionCodec};
use datafusion_proto::physical_plan::{
    DefaultPhysicalExtensionCodec, PhysicalExtensionCodec, PhysicalProtoConverterExtension,
};
use serde::{Deserialize, Serialize};
use tessera::Array;

use crate::{Error, Result, TesseraExec, TesseraScanSpec, TesseraTable, open_uri};

/// Opens the array at a URI (a local path, or whatever else the process can open, such as
/// `s3://bucket/array`) at the given timestamp range, or at its newest state for `None`.
pub type ArrayOpener = Arc<dyn Fn(&str, Option<(u64, u64)>) -> Result<Array> + Send + Sync>;

/// The opener of local paths only ([`tessera::open`], [`tessera::open_between`]).
pub fn local_opener() -> ArrayOpener {
    Arc::new(|uri: &str, ts: Option<(u64, u64)>| open_uri(uri, ts))
}

/// Prefix of an encoded [`TesseraExec`].
const SCAN_MAGIC: &[u8] = b"\0tessera-scan";
/// Prefix of an encoded [`TesseraTable`].
const TABLE_MAGIC: &[u8] = b"\0tessera-table";
/// The version of both encodings; a decoder refuses any other.
const VERSION: u8 = 1;

/// The tagged bytes of `body`.
fn tag(magic: &[u8], body: &[u8], buf: &mut Vec<u8>) {
    buf.extend_from_slice(magic);
    buf.push(VERSION);
    buf.extend_from_slice(body);
}

/// The body of tagged bytes: `None` when they are not ours, an error for our prefix with
/// another version.
fn untag<'a>(magic: &[u8], what: &str, buf: &'a [u8]) -> DfResult<Option<&'a [u8]>> {
    let Some(rest) = buf.strip_prefix(magic) else { return Ok(None) };
    match rest.split_first() {
        Some((&VERSION, body)) => Ok(Some(body)),
        Some((v, _)) => Err(DataFusionError::Plan(format!(
            "encoded {what} of version {v}, this build reads version {VERSION} \
             (client, scheduler and executors must run the same Tessera release)"
        ))),
        None => Err(DataFusionError::Plan(format!("encoded {what} is truncated"))),
    }
}

fn external(e: Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The physical codec: [`TesseraExec`] as its [`TesseraScanSpec`]; every other node goes to
/// the wrapped codec.
#[derive(Clone)]
pub struct TesseraPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
    opener: ArrayOpener,
}

impl fmt::Debug for TesseraPhysicalCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TesseraPhysicalCodec").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl Default for TesseraPhysicalCodec {
    /// Over DataFusion's default codec, opening local paths.
    fn default() -> Self {
        TesseraPhysicalCodec::new(Arc::new(DefaultPhysicalExtensionCodec {}), local_opener())
    }
}

impl TesseraPhysicalCodec {
    /// Wraps `inner` (for the nodes that are not Tessera scans); decoded scans open their
    /// array with `opener`.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>, opener: ArrayOpener) -> Self {
        TesseraPhysicalCodec { inner, opener }
    }
}

impl PhysicalExtensionCodec for TesseraPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let Some(body) = untag(SCAN_MAGIC, "Tessera scan", buf)? else {
            return self.inner.try_decode(buf, inputs, ctx, proto_converter);
        };
        let spec = TesseraScanSpec::from_bytes(body).map_err(external)?;
        let exec = TesseraExec::from_spec_with(spec, &*self.opener).map_err(external)?;
        match inputs {
            [] => Ok(Arc::new(exec)),
            [source] => Ok(Arc::new(exec.with_source(source.clone()).map_err(external)?)),
            _ => Err(DataFusionError::Plan(format!(
                "an encoded Tessera scan has at most one input (its partition source), not {}",
                inputs.len()
            ))),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        match node.downcast_ref::<TesseraExec>() {
            Some(exec) => {
                tag(SCAN_MAGIC, &exec.spec().to_bytes().map_err(external)?, buf);
                Ok(())
            }
            None => self.inner.try_encode(node, buf, proto_converter),
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}

/// What names a [`TesseraTable`] in a logical plan.
#[derive(Debug, Serialize, Deserialize)]
struct TableSpec {
    /// The array as a URL: `file:///abs/path` for local arrays, the object-store URI else.
    url: String,
    /// The timestamp range the client opened the array at: every process sees the same
    /// fragments, whatever was written since.
    timestamps: (u64, u64),
    /// The memory budget of each partition's read.
    memory_budget: Option<u64>,
    /// The number of partitions the scan is cut into (`None`: the session's target).
    partitions: Option<usize>,
}

/// `uri` as a URL: an absolute `file://` URL for a local path, the URI itself when it has a
/// scheme.
///
/// # Errors
/// [`Error::Spec`] for a path that cannot be made absolute or a URI that is not a URL.
pub fn uri_to_url(uri: &str) -> Result<url::Url> {
    if uri.contains("://") {
        return url::Url::parse(uri).map_err(|e| Error::Spec(format!("{uri}: {e}")));
    }
    let abs =
        std::path::absolute(Path::new(uri)).map_err(|e| Error::Spec(format!("{uri}: {e}")))?;
    url::Url::from_file_path(&abs)
        .map_err(|()| Error::Spec(format!("{}: not a URL-able path", abs.display())))
}

/// What a process opens for `url`: the local path of a `file://` URL, else the URL.
///
/// # Errors
/// [`Error::Spec`] for a `file://` URL naming no local path.
pub fn url_to_uri(url: &url::Url) -> Result<String> {
    if url.scheme() == "file" {
        let path =
            url.to_file_path().map_err(|()| Error::Spec(format!("{url}: not a local path")))?;
        return Ok(path.to_string_lossy().into_owned());
    }
    Ok(url.as_str().to_owned())
}

/// The logical codec: [`TesseraTable`] as its array's URL, pinned timestamps, memory budget
/// and partition count; everything else goes to the wrapped codec.
#[derive(Clone)]
pub struct TesseraLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
    opener: ArrayOpener,
    partition_sources: bool,
}

impl fmt::Debug for TesseraLogicalCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TesseraLogicalCodec").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl Default for TesseraLogicalCodec {
    /// Over DataFusion's default codec, opening local paths.
    fn default() -> Self {
        TesseraLogicalCodec::new(Arc::new(DefaultLogicalExtensionCodec {}), local_opener())
    }
}

impl TesseraLogicalCodec {
    /// Wraps `inner` (for everything that is not a Tessera table); decoded tables open their
    /// array with `opener`.
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>, opener: ArrayOpener) -> Self {
        TesseraLogicalCodec { inner, opener, partition_sources: false }
    }

    /// Decoded tables plan scans with a partition source
    /// ([`TesseraTable::with_partition_source`]): what a Ballista scheduler needs, since it
    /// hands each task its partitions by restricting the leaves of the stage's plan.
    pub fn with_partition_sources(mut self) -> Self {
        self.partition_sources = true;
        self
    }
}

impl LogicalExtensionCodec for TesseraLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let Some(body) = untag(TABLE_MAGIC, "Tessera table", buf)? else {
            return self.inner.try_decode_table_provider(buf, table_ref, schema, ctx);
        };
        let spec: TableSpec = serde_json::from_slice(body)
            .map_err(|e| external(Error::Spec(format!("table {table_ref}: {e}"))))?;
        let url = url::Url::parse(&spec.url)
            .map_err(|e| external(Error::Spec(format!("table {table_ref}: {}: {e}", spec.url))))?;
        let uri = url_to_uri(&url).map_err(external)?;
        let array = (self.opener)(&uri, Some(spec.timestamps)).map_err(external)?;
        let mut table = TesseraTable::new(uri.clone(), array).map_err(external)?;
        if let Some(b) = spec.memory_budget {
            table = table.with_memory_budget(b);
        }
        if let Some(n) = spec.partitions {
            table = table.with_partitions(n);
        }
        table = table.with_partition_source(self.partition_sources);
        let ours = table.schema();
        let same = ours.fields().len() == schema.fields().len()
            && ours
                .fields()
                .iter()
                .zip(schema.fields())
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
        if !same {
            return Err(external(Error::Spec(format!(
                "table {table_ref}: {uri} opened here has columns {:?}, the plan was made with {:?}",
                ours.fields().iter().map(|f| f.name()).collect::<Vec<_>>(),
                schema.fields().iter().map(|f| f.name()).collect::<Vec<_>>()
            ))));
        }
        Ok(Arc::new(table))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        let Some(table) = node.downcast_ref::<TesseraTable>() else {
            return self.inner.try_encode_table_provider(table_ref, node, buf);
        };
        let spec = TableSpec {
            url: uri_to_url(table.uri()).map_err(external)?.to_string(),
            timestamps: table.array().timestamp_range(),
            memory_budget: table.memory_budget(),
            partitions: table.partitions(),
        };
        let body = serde_json::to_vec(&spec).map_err(|e| external(Error::Spec(e.to_string())))?;
        tag(TABLE_MAGIC, &body, buf);
        Ok(())
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        self.inner.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        self.inner.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.inner.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode_udwf(node, buf)
    }
}
