//! Tessera arrays as DataFusion tables: SQL over TileDB arrays, with the work pushed into
//! the engine where it is cheapest.
//!
//! ```
//! use std::sync::Arc;
//! use datafusion::prelude::SessionContext;
//! use tessera::{ArraySchema, ArrayType, Attribute, Datatype, Dimension};
//! use tessera_datafusion::TesseraTable;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("points");
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
//!     .attribute(Attribute::new("v", Datatype::Int32))
//!     .build()?;
//! tessera::create(&path, &schema)?;
//! tessera::open(&path)?.write().values("x", &[1i64, 5, 9]).values("v", &[10i32, 50, 90]).submit()?;
//!
//! let ctx = SessionContext::new();
//! ctx.register_table("points", Arc::new(TesseraTable::open(&path)?))?;
//! // `x > 2` becomes the subarray x: 3..=9, `v < 80` the query condition `v < 80`.
//! let batches = ctx.sql("SELECT x, v FROM points WHERE x > 2 AND v < 80").await?.collect().await?;
//! assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! * Columns are the dimensions, then the attributes, typed as in `tessera-arrow`; the table
//!   holds what a plain read returns (the array as opened, deletes applied, enumerations as
//!   dictionaries of their labels).
//! * Predicates on one dimension (comparisons with literals, `BETWEEN`, `IN`, `AND`/`OR` of
//!   them) become subarray ranges: Exact on integer, datetime and time dimensions, Inexact
//!   on float and string ones (ranges that hold more; DataFusion filters again).
//! * Predicates on attributes of a sparse array become the query condition (Exact):
//!   comparisons, `IN`, `BETWEEN`, `IS [NOT] NULL`, `NOT`, `AND`, `OR` on integer, datetime,
//!   bool and var-sized string attributes, and `=`, `<>`, `IN`, nulls on enumerations.
//!   Float attributes are not pushed (SQL orders `NaN` above every number and `-0.0` below
//!   `0.0`; TileDB does neither); dense arrays get no condition (libtiledb returns the fill
//!   value for cells failing it instead of leaving them out).
//! * The subarray is cut into up to `target_partitions` pieces along the first dimension,
//!   read in parallel on tokio's blocking pool; `LIMIT` is pushed into each piece.
//! * Statistics: the row count (exact for dense arrays, an upper bound for sparse ones) and
//!   the dimensions' bounds from the fragments' non-empty domains.
//! * The scan is a [`TesseraScanSpec`] (array URI, timestamps, fragment list, projection,
//!   ranges per partition, condition, limit) that serialises to bytes and rebuilds with
//!   [`TesseraExec::from_spec`], for engines that ship plans (Ballista).
//! * Feature `proto`: `TesseraPhysicalCodec` and `TesseraLogicalCodec` (datafusion-proto
//!   extension codecs) encode scans and tables as tagged bytes, for Ballista
//!   (`crates/tessera-ballista`).
//! * `EXPLAIN` shows the pushdown: `TesseraExec: array=…, partitions=N, projection=[…],
//!   ranges=[x: 3..=9], condition=v < 80`.

// The README's Rust examples compile (`cargo test --doc`): this crate sees every crate they use.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme_examples {}

#[cfg(feature = "proto")]
mod codec;
mod exec;
mod pushdown;
mod spec;
mod table;

#[cfg(feature = "proto")]
pub use codec::{
    ArrayOpener, TesseraLogicalCodec, TesseraPhysicalCodec, local_opener, uri_to_url, url_to_uri,
};
/// The datafusion-proto these codecs implement (to encode and decode plans with them).
#[cfg(feature = "proto")]
pub use datafusion_proto;
pub use exec::TesseraExec;
pub use spec::{DimRanges, PartitionSpec, TesseraScanSpec};
pub use table::TesseraTable;

use tessera::Array;

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong planning or running a scan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine failed (opening, reading).
    #[error(transparent)]
    Tessera(#[from] tessera::Error),
    /// Converting results to Arrow failed.
    #[error(transparent)]
    Arrow(#[from] tessera_arrow::Error),
    /// DataFusion refused something.
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A scan spec that cannot be decoded or no longer fits the array.
    #[error("scan spec: {0}")]
    Spec(String),
}

impl From<datafusion::arrow::error::ArrowError> for Error {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        Error::Arrow(e.into())
    }
}

/// Opens the array at `uri` (a local path), at `timestamps` when given, else the newest.
pub(crate) fn open_uri(uri: &str, timestamps: Option<(u64, u64)>) -> Result<Array> {
    Ok(match timestamps {
        Some((start, end)) => tessera::open_between(uri, start, end)?,
        None => tessera::open(uri)?,
    })
}
