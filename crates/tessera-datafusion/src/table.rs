//! The table provider: schema, pushdown classification, statistics and scan planning.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Result as DfResult, ScalarValue, Statistics};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use tessera::Array;
use tessera_arrow::{Projection, arrow_schema, column_to_arrow};

use crate::exec::TesseraExec;
use crate::pushdown::{DimInfo, Key, RangeSet, condition_parses, condition_text, dimension_ranges};
use crate::spec::{PartitionSpec, TesseraScanSpec, encode_ranges};
use crate::{Result, open_uri};

/// Default memory budget of each partition's read: batches of about this many bytes.
const DEFAULT_BUDGET: u64 = 32 << 20;

/// A Tessera array as a DataFusion table (see the crate docs for what is pushed down).
#[derive(Debug, Clone)]
pub struct TesseraTable {
    uri: String,
    array: Arc<Array>,
    schema: SchemaRef,
    dims: Vec<DimInfo>,
    memory_budget: Option<u64>,
    partitions: Option<usize>,
    partition_source: bool,
}

impl TesseraTable {
    /// The array at `path`, at its newest state.
    ///
    /// # Errors
    /// When the array cannot be opened or has a type Arrow cannot hold.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let uri = path.as_ref().to_string_lossy().into_owned();
        let array = open_uri(&uri, None)?;
        TesseraTable::new(uri, array)
    }

    /// The array at `path` opened for the timestamp range `[start, end]` (ms).
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_between(path: impl AsRef<Path>, start: u64, end: u64) -> Result<Self> {
        let uri = path.as_ref().to_string_lossy().into_owned();
        let array = open_uri(&uri, Some((start, end)))?;
        TesseraTable::new(uri, array)
    }

    /// A table over an array already open; `uri` is where a rebuilt scan reopens it.
    ///
    /// # Errors
    /// When the array has a type Arrow cannot hold.
    pub fn new(uri: impl Into<String>, array: Array) -> Result<Self> {
        let schema = arrow_schema(&array, &Projection::all())?;
        let dims = DimInfo::of(&array);
        Ok(TesseraTable {
            uri: uri.into(),
            array: Arc::new(array),
            schema,
            dims,
            memory_budget: Some(DEFAULT_BUDGET),
            partitions: None,
            partition_source: false,
        })
    }

    /// Reads in batches of about `bytes` bytes per partition (default 32 MiB).
    pub fn with_memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = Some(bytes);
        self
    }

    /// Cuts each scan into at most `n` partitions, whatever the session's target partitions
    /// (a distributed engine runs one task per partition).
    pub fn with_partitions(mut self, n: usize) -> Self {
        self.partitions = Some(n.max(1));
        self
    }

    /// Makes each scan read the partitions its partition source names
    /// ([`TesseraExec::with_partition_source`]), for distributed engines that hand tasks
    /// their slices of a stage by restricting the stage's leaves (Ballista).
    pub fn with_partition_source(mut self, on: bool) -> Self {
        self.partition_source = on;
        self
    }

    /// Where scans reopen the array (a local path or an object-store URI).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The memory budget of each partition's read, in bytes.
    pub fn memory_budget(&self) -> Option<u64> {
        self.memory_budget
    }

    /// The partition count set by [`Self::with_partitions`].
    pub fn partitions(&self) -> Option<usize> {
        self.partitions
    }

    /// The array.
    pub fn array(&self) -> &Arc<Array> {
        &self.array
    }

    /// How `filter` is pushed: `(dimension ranges, condition text, exact)`.
    fn classify(&self, filter: &Expr) -> Option<Pushed> {
        if let Some((d, set, exact)) = dimension_ranges(filter, &self.dims) {
            return Some(Pushed::Ranges(d, set, exact));
        }
        if self.array.schema().is_dense() {
            return None;
        }
        let text = condition_text(filter, self.array.schema())?;
        condition_parses(&text, &self.array).then_some(Pushed::Condition(text))
    }

    /// The scan spec of a query.
    fn plan(
        &self,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
        target_partitions: usize,
    ) -> Result<TesseraScanSpec> {
        let names: Vec<String> = match projection {
            Some(p) => p.iter().map(|&i| self.schema.field(i).name().clone()).collect(),
            None => self.schema.fields().iter().map(|f| f.name().clone()).collect(),
        };
        let mut sets: Vec<Option<RangeSet>> = vec![None; self.dims.len()];
        let mut conditions = Vec::new();
        for f in filters {
            match self.classify(f) {
                Some(Pushed::Ranges(d, set, _)) => {
                    sets[d] = Some(match sets[d].take() {
                        None => set,
                        Some(prev) => crate::pushdown::normalize(intersect_sets(&prev, &set)),
                    });
                }
                Some(Pushed::Condition(text)) => conditions.push(text),
                None => {}
            }
        }
        let condition = match conditions.len() {
            0 => None,
            1 => conditions.pop(),
            _ => {
                Some(conditions.iter().map(|c| format!("({c})")).collect::<Vec<_>>().join(" and "))
            }
        };
        let array = &self.array;
        let mut ranges = Vec::new();
        for (d, set) in sets.iter().enumerate() {
            if let Some(set) = set {
                ranges.push(encode_ranges(array, d, set)?);
            }
        }
        // No fragment: the table is empty (a dense read with ranges would return fills).
        let no_cells = self.dims.iter().any(|d| d.ned.is_none());
        let partitions = if no_cells {
            vec![PartitionSpec { ranges: vec![encode_ranges(array, 0, &Vec::new())?] }]
        } else {
            let first = sets[0].clone().or_else(|| self.dims[0].ned.clone().map(|r| vec![r]));
            split_first(first.unwrap_or_default(), target_partitions.max(1))
                .into_iter()
                .map(|piece| -> Result<PartitionSpec> {
                    let mut r = Vec::new();
                    for (d, set) in sets.iter().enumerate() {
                        if d == 0 {
                            r.push(encode_ranges(array, 0, &piece)?);
                        } else if let Some(set) = set {
                            r.push(encode_ranges(array, d, set)?);
                        }
                    }
                    Ok(PartitionSpec { ranges: r })
                })
                .collect::<Result<Vec<_>>>()?
        };
        Ok(TesseraScanSpec {
            uri: self.uri.clone(),
            timestamps: array.timestamp_range(),
            fragments: array.fragments().iter().map(|f| f.name().to_string()).collect(),
            projection: names,
            ranges,
            partitions,
            condition,
            limit,
            memory_budget: self.memory_budget,
        })
    }
}

fn intersect_sets(a: &RangeSet, b: &RangeSet) -> RangeSet {
    let mut out = Vec::new();
    for (alo, ahi) in a {
        for (blo, bhi) in b {
            let lo = if alo > blo { alo } else { blo };
            let hi = if ahi < bhi { ahi } else { bhi };
            if lo <= hi {
                out.push((lo.clone(), hi.clone()));
            }
        }
    }
    out
}

/// Cuts the ranges of the first dimension into at most `n` pieces of about equal size
/// (integer dimensions only; others stay whole).
fn split_first(set: RangeSet, n: usize) -> Vec<RangeSet> {
    let ints: Option<Vec<(i128, i128)>> = set
        .iter()
        .map(|r| match r {
            (Key::Int(a), Key::Int(b)) => Some((*a, *b)),
            _ => None,
        })
        .collect();
    let (Some(ints), true) = (ints, n > 1) else { return vec![set] };
    let total: i128 = ints.iter().map(|(a, b)| b - a + 1).sum();
    if total <= 0 {
        return vec![set];
    }
    let pieces = (n as i128).min(total);
    let size = (total + pieces - 1) / pieces;
    let mut out: Vec<RangeSet> = vec![Vec::new()];
    let mut room = size;
    for (mut a, b) in ints {
        while a <= b {
            if room == 0 {
                out.push(Vec::new());
                room = size;
            }
            let end = (a + room - 1).min(b);
            if let Some(p) = out.last_mut() {
                p.push((Key::Int(a), Key::Int(end)));
            }
            room -= end - a + 1;
            a = end + 1;
        }
    }
    out
}

/// How one filter is pushed down.
enum Pushed {
    /// Ranges on dimension `.0`; `.2`: they are exactly the filter.
    Ranges(usize, RangeSet, bool),
    /// Query-condition text (exact).
    Condition(String),
}

#[async_trait]
impl TableProvider for TesseraTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match self.classify(f) {
                Some(Pushed::Ranges(_, _, true) | Pushed::Condition(_)) => {
                    TableProviderFilterPushDown::Exact
                }
                Some(Pushed::Ranges(_, _, false)) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        let array = &self.array;
        let dense = array.schema().is_dense();
        let rows = if dense {
            let mut n: u128 = 1;
            for d in &self.dims {
                match &d.ned {
                    Some((Key::Int(a), Key::Int(b))) => n = n.saturating_mul((b - a + 1) as u128),
                    _ => return None,
                }
            }
            Precision::Exact(usize::try_from(n).ok()?)
        } else {
            let mut n = 0u64;
            for f in array.fragments() {
                n += f.cell_num().ok()?;
            }
            Precision::Inexact(usize::try_from(n).ok()?)
        };
        let columns = self
            .schema
            .fields()
            .iter()
            .map(|f| {
                let stats = ColumnStatistics::new_unknown();
                let Some((i, d)) = self.dims.iter().enumerate().find(|(_, d)| d.name == *f.name())
                else {
                    return stats;
                };
                let Some((lo, hi)) = &d.ned else { return stats };
                match (scalar(array, i, lo), scalar(array, i, hi)) {
                    (Some(lo), Some(hi)) => stats
                        .with_min_value(Precision::Inexact(lo))
                        .with_max_value(Precision::Inexact(hi)),
                    _ => stats,
                }
            })
            .collect();
        Some(Statistics {
            num_rows: rows,
            total_byte_size: Precision::Absent,
            column_statistics: columns,
        })
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let target = self.partitions.unwrap_or_else(|| state.config().target_partitions());
        let spec = self
            .plan(projection, filters, limit, target)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        let external = |e| datafusion::error::DataFusionError::External(Box::new(e));
        let mut exec = TesseraExec::new(spec, self.array.clone()).map_err(external)?;
        if self.partition_source {
            exec = exec.with_partition_source().map_err(external)?;
        }
        Ok(Arc::new(exec))
    }
}

/// A dimension bound as a DataFusion scalar of the column's Arrow type.
fn scalar(array: &Array, d: usize, key: &Key) -> Option<ScalarValue> {
    let dim = &array.schema().dimensions[d];
    if dim.cell_val_num != 1 {
        return None;
    }
    let column = tessera::Column {
        name: dim.name.clone(),
        datatype: dim.datatype,
        cell_val_num: 1,
        data: key.to_bytes(dim.datatype)?,
        offsets: None,
        validity: None,
    };
    let values = column_to_arrow(column).ok()?;
    ScalarValue::try_from_array(values.as_ref(), 0).ok()
}
