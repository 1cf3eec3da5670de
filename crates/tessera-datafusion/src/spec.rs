//! The serialisable description of a scan: what a remote executor needs to run it.

use serde::{Deserialize, Serialize};
use tessera::Array;
use tessera::layers::types::CELL_VAL_NUM_VAR;

use crate::pushdown::{Key, RangeSet};
use crate::{Error, Result};

/// The ranges of one dimension, bounds as the little-endian bytes of its type (the whole
/// string for string dimensions) in hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimRanges {
    /// The dimension.
    pub dimension: String,
    /// Inclusive `[low, high]` bounds, hex-encoded; empty means no cell qualifies.
    pub ranges: Vec<[String; 2]>,
}

/// One partition of a scan: its ranges on each dimension that has some (the others span the
/// non-empty domain).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSpec {
    /// Ranges per dimension.
    pub ranges: Vec<DimRanges>,
}

/// Everything a scan of an array does, serialisable (JSON) so that a distributed engine can
/// ship it to another process and rebuild the same scan there ([`crate::TesseraExec::from_spec`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TesseraScanSpec {
    /// Where the array is (a local path).
    pub uri: String,
    /// The timestamp range the array was opened at (ms, inclusive).
    pub timestamps: (u64, u64),
    /// The names of the fragments the scan saw; rebuilding the scan checks it sees the same.
    pub fragments: Vec<String>,
    /// The output columns, dimensions first (empty: row counts only).
    pub projection: Vec<String>,
    /// The ranges pushed into the subarray (before partitioning), for display.
    pub ranges: Vec<DimRanges>,
    /// The partitions, read independently (in parallel).
    pub partitions: Vec<PartitionSpec>,
    /// The query condition pushed down (condition text of `tessera read --where`).
    pub condition: Option<String>,
    /// At most this many rows per partition (`LIMIT` pushed down).
    pub limit: Option<usize>,
    /// The memory budget of each partition's read, in bytes.
    pub memory_budget: Option<u64>,
}

impl TesseraScanSpec {
    /// The spec as bytes (JSON).
    ///
    /// # Errors
    /// Never in practice; serde's error otherwise.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Spec(e.to_string()))
    }

    /// The spec [`Self::to_bytes`] wrote.
    ///
    /// # Errors
    /// [`Error::Spec`] for bytes that are not a spec.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes).map_err(|e| Error::Spec(e.to_string()))
    }
}

/// Ranges as hex bounds of `dim`'s type.
pub(crate) fn encode_ranges(array: &Array, d: usize, set: &RangeSet) -> Result<DimRanges> {
    let dim = &array.schema().dimensions[d];
    let mut ranges = Vec::with_capacity(set.len());
    for (lo, hi) in set {
        let enc = |k: &Key| {
            k.to_bytes(dim.datatype)
                .map(hex::encode)
                .ok_or_else(|| Error::Spec(format!("bound {k:?} does not fit {}", dim.datatype)))
        };
        ranges.push([enc(lo)?, enc(hi)?]);
    }
    Ok(DimRanges { dimension: dim.name.clone(), ranges })
}

/// The ranges as readable text (`x: 1..=5, 8..=8`).
pub(crate) fn display_ranges(array: &Array, ranges: &[DimRanges]) -> String {
    let schema = array.schema();
    let parts: Vec<String> = ranges
        .iter()
        .map(|r| {
            let dim = schema.dimension(&r.dimension);
            let show = |h: &str| -> String {
                let bytes = hex::decode(h).unwrap_or_default();
                match dim.and_then(|d| {
                    Key::from_bytes(d.datatype, d.cell_val_num == CELL_VAL_NUM_VAR, &bytes)
                }) {
                    Some(Key::Int(v)) => v.to_string(),
                    Some(Key::Float(v)) => format!("{v:?}"),
                    Some(Key::Str(s)) => format!("{:?}", String::from_utf8_lossy(&s)),
                    None => h.to_owned(),
                }
            };
            let list: Vec<String> =
                r.ranges.iter().map(|[lo, hi]| format!("{}..={}", show(lo), show(hi))).collect();
            let list = if list.is_empty() { "none".to_owned() } else { list.join(", ") };
            format!("{}: {list}", r.dimension)
        })
        .collect();
    format!("[{}]", parts.join("; "))
}
