//! The physical scan: one partition per piece of the subarray, each read on the blocking
//! pool and streamed as record batches.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use tessera::Array;
use tessera_arrow::{Projection, arrow_schema, read_batches};

use crate::spec::{PartitionSpec, TesseraScanSpec, display_ranges};
use crate::{Error, Result, open_uri};

/// Opens the array at a URI, at a timestamp range when given (how a scan finds its array).
pub(crate) type OpenAt<'a> = dyn Fn(&str, Option<(u64, u64)>) -> Result<Array> + 'a;
/// The scan of a Tessera array: [`TesseraScanSpec`] made executable. Each partition reads
/// its part of the subarray on tokio's blocking pool (the engine is synchronous and
/// CPU-heavy) and sends batches through a small channel, so a slow consumer holds the read
/// back instead of buffering it.
///
/// For distributed engines that cut a stage into tasks by restricting the partitions of the
/// stage's leaves (Ballista), [`Self::with_partition_source`] gives the scan a child: a
/// memory source whose partition `i` holds the number `i`. Such an engine keeps only the
/// task's partitions of that child, and the scan reads exactly the partitions named by what
/// its child yields, so no partition is read twice or left out.
#[derive(Debug, Clone)]
pub struct TesseraExec {
    spec: TesseraScanSpec,
    array: Arc<Array>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    /// The partition numbers to read, one partition of numbers per output partition.
    source: Option<Arc<dyn ExecutionPlan>>,
}

/// The column of a partition source.
const SOURCE_COLUMN: &str = "tessera_partition";

impl TesseraExec {
    /// The scan of `spec` over `array` (opened as the spec says).
    ///
    /// # Errors
    /// [`Error::Arrow`] for a projection the array does not have.
    pub fn new(spec: TesseraScanSpec, array: Arc<Array>) -> Result<Self> {
        let schema = output_schema(&array, &spec.projection)?;
        let properties = properties(&schema, spec.partitions.len().max(1));
        Ok(TesseraExec { spec, array, schema, properties, source: None })
    }

    /// This scan reading the partitions its new child, a partition source, names (see the
    /// type's docs); a scan that has one already is returned as it is.
    ///
    /// # Errors
    /// DataFusion's, building the memory source.
    pub fn with_partition_source(self) -> Result<Self> {
        if self.source.is_some() {
            return Ok(self);
        }
        let schema =
            Arc::new(Schema::new(vec![Field::new(SOURCE_COLUMN, DataType::UInt32, false)]));
        let n = self.spec.partitions.len().max(1);
        let mut parts = Vec::with_capacity(n);
        for i in 0..n {
            let column: ArrayRef = Arc::new(UInt32Array::from(vec![i as u32]));
            parts.push(vec![RecordBatch::try_new(schema.clone(), vec![column])?]);
        }
        let source = MemorySourceConfig::try_new_exec(&parts, schema, None)?;
        self.with_source(source)
    }

    /// This scan over `source` (a partition source, as [`Self::with_partition_source`]
    /// makes and a distributed engine restricts); for decoding shipped plans.
    ///
    /// # Errors
    /// [`Error::Spec`] when `source` does not yield partition numbers.
    pub fn with_source(mut self, source: Arc<dyn ExecutionPlan>) -> Result<Self> {
        let fields = source.schema().fields().clone();
        if fields.len() != 1 || fields[0].data_type() != &DataType::UInt32 {
            return Err(Error::Spec(format!(
                "a Tessera scan's partition source yields {fields:?}, not partition numbers"
            )));
        }
        let n = source.properties().output_partitioning().partition_count();
        self.properties = properties(&self.schema, n);
        self.source = Some(source);
        Ok(self)
    }

    /// The partition source, when the scan has one.
    pub fn partition_source(&self) -> Option<&Arc<dyn ExecutionPlan>> {
        self.source.as_ref()
    }

    /// Rebuilds a scan from its spec (for instance one shipped from another process): opens
    /// the array at the spec's timestamps and checks it shows the same fragments.
    ///
    /// # Errors
    /// [`Error::Tessera`] when the array cannot be opened; [`Error::Spec`] when it shows
    /// other fragments than when the spec was made.
    pub fn from_spec(spec: TesseraScanSpec) -> Result<Self> {
        TesseraExec::from_spec_with(spec, &|uri, ts| open_uri(uri, ts))
    }

    /// As [`Self::from_spec`], opening the array with `open` (for URIs other than local
    /// paths, such as object stores configured from the process's environment).
    ///
    /// # Errors
    /// As [`Self::from_spec`], and what `open` returns.
    pub fn from_spec_with(spec: TesseraScanSpec, open: &OpenAt<'_>) -> Result<Self> {
        let array = open(&spec.uri, Some(spec.timestamps))?;
        let names: Vec<String> = array.fragments().iter().map(|f| f.name().to_string()).collect();
        if names != spec.fragments {
            return Err(Error::Spec(format!(
                "{} shows fragments {names:?}, the scan was planned over {:?}",
                spec.uri, spec.fragments
            )));
        }
        TesseraExec::new(spec, Arc::new(array))
    }

    /// What this scan does.
    pub fn spec(&self) -> &TesseraScanSpec {
        &self.spec
    }
}

fn properties(schema: &SchemaRef, partitions: usize) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(schema.clone()),
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

/// The projection's fields split into dimensions and attributes.
fn split_projection(array: &Array, names: &[String]) -> Projection {
    let schema = array.schema();
    let (dims, attrs): (Vec<String>, Vec<String>) =
        names.iter().cloned().partition(|n| schema.dimension(n).is_some());
    Projection { dimensions: Some(dims), attributes: Some(attrs) }
}

fn output_schema(array: &Array, names: &[String]) -> Result<SchemaRef> {
    if names.is_empty() {
        return Ok(Arc::new(Schema::empty()));
    }
    Ok(arrow_schema(array, &split_projection(array, names))?)
}

impl DisplayAs for TesseraExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.spec;
        match t {
            DisplayFormatType::TreeRender => {
                writeln!(f, "array={}", s.uri)?;
                writeln!(f, "partitions={}", s.partitions.len())?;
                writeln!(f, "ranges={}", display_ranges(&self.array, &s.ranges))?;
                if let Some(c) = &s.condition {
                    writeln!(f, "condition={c}")?;
                }
                Ok(())
            }
            _ => {
                write!(
                    f,
                    "TesseraExec: array={}, partitions={}, projection=[{}], ranges={}",
                    s.uri,
                    s.partitions.len(),
                    s.projection.join(", "),
                    display_ranges(&self.array, &s.ranges)
                )?;
                if let Some(c) = &s.condition {
                    write!(f, ", condition={c}")?;
                }
                if let Some(l) = s.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
        }
    }
}

#[allow(deprecated)]
impl ExecutionPlan for TesseraExec {
    fn name(&self) -> &str {
        "TesseraExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.source.iter().collect()
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        // The partition source must never be repartitioned: each of its partitions is one
        // of ours.
        vec![false; self.source.iter().count()]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match (children.len(), &self.source) {
            (0, None) => Ok(self),
            (1, Some(_)) => {
                let mut children = children;
                let child = children.remove(0);
                let exec = TesseraExec {
                    spec: self.spec.clone(),
                    array: self.array.clone(),
                    schema: self.schema.clone(),
                    properties: self.properties.clone(),
                    source: None,
                };
                Ok(Arc::new(
                    exec.with_source(child).map_err(|e| DataFusionError::External(Box::new(e)))?,
                ))
            }
            (n, _) => Err(DataFusionError::Internal(format!(
                "TesseraExec has {} children, not {n}",
                self.source.iter().count()
            ))),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if let Some(source) = &self.source {
            return self.execute_sourced(source.execute(partition, context)?);
        }
        let schema = self.schema.clone();
        let Some(part) = self.spec.partitions.get(partition).cloned() else {
            // A scan with no partitions has one, empty.
            let empty = futures::stream::empty();
            return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, empty)));
        };
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| DataFusionError::Execution(format!("TesseraExec needs tokio: {e}")))?;
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        let array = self.array.clone();
        let spec = self.spec.clone();
        let out_schema = schema.clone();
        handle.spawn_blocking(move || {
            let result = read_partition(&array, &spec, &part, &out_schema, &mut |b| {
                tx.blocking_send(Ok(b)).is_ok()
            });
            if let Err(e) = result {
                let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
            }
        });
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

impl TesseraExec {
    /// The stream of the partitions whose numbers `numbers` yields, read one after the other.
    fn execute_sourced(
        &self,
        mut numbers: SendableRecordBatchStream,
    ) -> DfResult<SendableRecordBatchStream> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| DataFusionError::Execution(format!("TesseraExec needs tokio: {e}")))?;
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        let array = self.array.clone();
        let spec = self.spec.clone();
        let out_schema = self.schema.clone();
        let blocking = handle.clone();
        handle.spawn(async move {
            let mut wanted = Vec::new();
            while let Some(batch) = numbers.next().await {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                };
                let Some(column) = batch.column(0).as_any().downcast_ref::<UInt32Array>() else {
                    let _ =
                        tx.send(Err(DataFusionError::Internal("partition source".into()))).await;
                    return;
                };
                wanted.extend(column.values().iter().map(|&i| i as usize));
            }
            let _ = blocking
                .spawn_blocking(move || {
                    for i in wanted {
                        // A scan with no partitions has one, empty.
                        let Some(part) = spec.partitions.get(i) else { continue };
                        let mut open = true;
                        let result = read_partition(&array, &spec, part, &out_schema, &mut |b| {
                            open = tx.blocking_send(Ok(b)).is_ok();
                            open
                        });
                        if let Err(e) = result {
                            let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
                            return;
                        }
                        if !open {
                            return;
                        }
                    }
                })
                .await;
        });
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream)))
    }
}

/// Reads one partition, handing each batch to `send` until it returns false.
fn read_partition(
    array: &Array,
    spec: &TesseraScanSpec,
    part: &PartitionSpec,
    schema: &SchemaRef,
    send: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<()> {
    if part.ranges.iter().any(|r| r.ranges.is_empty()) {
        return Ok(());
    }
    let mut decoded = Vec::new();
    for r in &part.ranges {
        for [lo, hi] in &r.ranges {
            let lo = hex::decode(lo).map_err(|e| Error::Spec(e.to_string()))?;
            let hi = hex::decode(hi).map_err(|e| Error::Spec(e.to_string()))?;
            decoded.push((r.dimension.clone(), lo, hi));
        }
    }
    let counts_only = spec.projection.is_empty();
    let projection = if counts_only {
        let first = array.schema().dimensions.first().map(|d| d.name.clone());
        Projection { dimensions: Some(first.into_iter().collect()), attributes: Some(Vec::new()) }
    } else {
        split_projection(array, &spec.projection)
    };
    let batches = read_batches(array, &projection, |mut q| {
        for (d, lo, hi) in decoded {
            q = q.range_bytes(&d, lo, hi);
        }
        if let Some(c) = &spec.condition {
            q = q.where_text(c);
        }
        if let Some(b) = spec.memory_budget {
            q = q.memory_budget(b);
        }
        q
    })?;
    let mut left = spec.limit.unwrap_or(usize::MAX);
    for batch in batches {
        if left == 0 {
            break;
        }
        let mut batch = batch?;
        if batch.num_rows() > left {
            batch = batch.slice(0, left);
        }
        left -= batch.num_rows();
        let batch = if counts_only {
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            RecordBatch::try_new_with_options(schema.clone(), Vec::new(), &options)?
        } else {
            batch
        };
        if !send(batch) {
            break;
        }
    }
    Ok(())
}
