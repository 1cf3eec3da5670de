//! Query results as an Arrow C stream (the `__arrow_c_stream__` protocol): pyarrow, polars,
//! DuckDB and others take the record batches straight from the engine, and Tessera needs no
//! pyarrow for it.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use tessera::Array;
use tessera::layers::query::ReadQuery;
use tessera_arrow::Projection;

use crate::errors::tiledb_error;

/// The record batches a reader thread sends, read in turn by the stream's consumer.
struct ChannelReader {
    schema: SchemaRef,
    rx: Receiver<Result<RecordBatch, ArrowError>>,
}

impl Iterator for ChannelReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

impl RecordBatchReader for ChannelReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The stream in a capsule. The consumer moves the struct out and marks the one left in the
/// capsule released; a stream nobody took is released when the capsule goes.
#[repr(transparent)]
struct CapsuleStream(FFI_ArrowArrayStream);

// SAFETY: the stream's private data (the boxed reader) is `Send`; the struct is only touched
// by whoever holds the capsule, under the GIL.
unsafe impl Send for CapsuleStream {}

/// Starts reading `array` in record batches of `projection` on a thread of its own (each
/// engine batch about the read's memory budget; one batch waits while the next is read) and
/// returns the `arrow_array_stream` capsule over them. `configure` sets ranges, layout,
/// condition and budget on the read.
pub(crate) fn stream_capsule<'py>(
    py: Python<'py>,
    uri: &str,
    array: Arc<Array>,
    projection: Projection,
    configure: impl for<'a> FnOnce(ReadQuery<'a>) -> ReadQuery<'a> + Send + 'static,
) -> PyResult<Bound<'py, PyCapsule>> {
    let schema = tessera_arrow::arrow_schema(&array, &projection)
        .map_err(|e| tiledb_error(format!("{uri}: {e}")))?;
    let (tx, rx) = sync_channel::<Result<RecordBatch, ArrowError>>(1);
    let pool = crate::runtime::current_pool()?;
    let producer = move || {
        let started = pool.install(|| tessera_arrow::read_batches(&array, &projection, configure));
        let mut batches = match started {
            Ok(b) => b,
            Err(e) => {
                let _ = tx.send(Err(ArrowError::ExternalError(Box::new(e))));
                return;
            }
        };
        while let Some(batch) = pool.install(|| batches.next()) {
            let batch = batch.map_err(|e| ArrowError::ExternalError(Box::new(e)));
            let failed = batch.is_err();
            if tx.send(batch).is_err() || failed {
                return;
            }
        }
    };
    std::thread::Builder::new()
        .name("tessera-arrow-stream".into())
        .spawn(producer)
        .map_err(|e| tiledb_error(format!("cannot start a reader thread: {e}")))?;
    let reader = ChannelReader { schema, rx };
    let stream = CapsuleStream(FFI_ArrowArrayStream::new(Box::new(reader)));
    PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
}
