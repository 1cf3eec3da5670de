//! Arrays: open at a timestamp range, read (whole, in batches, aggregates), write, delete;
//! create, consolidate, vacuum.

use crossbeam_channel::{Receiver, RecvTimeoutError, bounded as sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use tessera::layers::query::ReadQuery;
use tessera::layers::query::consolidate::{self as cons, Mode, Options};
use tessera::layers::query::object_type as stored_object_type;
use tessera::layers::schema::json::{from_json_str, to_json, value_json};
use tessera::{
    Aggregate, AggregateValue, Array, Column, Datatype, Layout, ObjectType, ReadLayout, ReadResult,
};

use crate::convert::{self, Range};
use crate::errors::{IntoPy, tiledb_error};
use crate::location;
use crate::runtime::run;

/// An open array (read-only state: the schema and fragments it was opened with).
#[pyclass(frozen, module = "tessera._tessera")]
pub(crate) struct NativeArray {
    array: Arc<Array>,
    uri: String,
}

/// What a read asks for, owned so that it can move to a worker thread.
#[derive(Debug, Clone, Default)]
struct ReadSpec {
    ranges: Vec<(String, Range)>,
    attrs: Option<Vec<String>>,
    dims: Option<Vec<String>>,
    layout: Option<ReadLayout>,
    cond: Option<String>,
    budget: Option<u64>,
}

impl ReadSpec {
    /// The engine's query for this spec.
    fn query<'a>(&self, array: &'a Array) -> ReadQuery<'a> {
        let mut q = array.read();
        if let Some(a) = &self.attrs {
            q = q.attributes(a.iter().cloned());
        }
        q = match &self.dims {
            Some(d) => q.dimensions(d.iter().cloned()),
            None => q.with_coordinates(false),
        };
        self.configure(q)
    }

    /// The fields of this spec as an Arrow projection (no dimensions when none are asked).
    fn projection(&self) -> tessera_arrow::Projection {
        tessera_arrow::Projection {
            dimensions: Some(self.dims.clone().unwrap_or_default()),
            attributes: self.attrs.clone(),
        }
    }

    /// Sets this spec's ranges, layout, condition and memory budget on `q`.
    fn configure<'a>(&self, mut q: ReadQuery<'a>) -> ReadQuery<'a> {
        for (dim, r) in &self.ranges {
            q = match r {
                Range::I64(lo, hi) => q.range_i64(dim, *lo, *hi),
                Range::U64(lo, hi) => q.range_u64(dim, *lo, *hi),
                Range::F64(lo, hi) => q.range_f64(dim, *lo, *hi),
                Range::Bytes(lo, hi) => q.range_str(dim, lo, hi),
            };
        }
        if let Some(l) = self.layout {
            q = q.layout(l);
        }
        if let Some(c) = &self.cond {
            q = q.where_text(c);
        }
        if let Some(b) = self.budget {
            q = q.memory_budget(b);
        }
        q
    }
}

/// The layout named by tiledb-py's `order` letters or TileDB's names.
fn layout(name: Option<&str>) -> PyResult<Option<ReadLayout>> {
    Ok(match name {
        None => None,
        Some("C" | "row-major" | "row_major") => Some(ReadLayout::RowMajor),
        Some("F" | "col-major" | "col_major") => Some(ReadLayout::ColMajor),
        Some("G" | "global" | "global-order" | "global_order") => Some(ReadLayout::GlobalOrder),
        Some("U" | "unordered") => Some(ReadLayout::Unordered),
        Some(other) => {
            return Err(tiledb_error(format!(
                "unknown order {other:?} (expected 'C', 'F', 'G' or 'U')"
            )));
        }
    })
}

/// The ranges of a query from Python: a list of `(dimension name, [(low, high), ...])`.
fn ranges(array: &Array, given: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Range)>> {
    let mut out = Vec::new();
    if given.is_none() {
        return Ok(out);
    }
    for item in given.try_iter()? {
        let item = item?;
        let (dim, list): (String, Bound<'_, PyAny>) = item.extract()?;
        let dt = array
            .schema()
            .dimension(&dim)
            .map(|d| d.datatype)
            .ok_or_else(|| tiledb_error(format!("no dimension named {dim:?}")))?;
        for pair in list.try_iter()? {
            let pair = pair?;
            let (lo, hi): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
            out.push((dim.clone(), convert::range(&dim, dt, &lo, &hi)?));
        }
    }
    Ok(out)
}

/// A result as a list of column tuples (see [`convert::column`]).
fn result_list<'py>(py: Python<'py>, result: ReadResult) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for col in result.columns {
        list.append(convert::column(py, col)?)?;
    }
    Ok(list)
}

#[pymethods]
impl NativeArray {
    /// Opens the array at `uri` for the timestamp range `[start, end]` (ms; `None`: from 0,
    /// up to now).
    #[staticmethod]
    #[pyo3(signature = (uri, start=None, end=None, key=None))]
    fn open(
        py: Python<'_>,
        uri: String,
        start: Option<u64>,
        end: Option<u64>,
        key: Option<Vec<u8>>,
    ) -> PyResult<Self> {
        let storage = location::keyed_storage(&uri, key.as_deref())?;
        let name = uri.clone();
        let array = run(py, move || {
            let opened = match (start, end) {
                (None, None) => Array::open(storage),
                (None, Some(e)) => Array::open_at(storage, e),
                (Some(s), e) => Array::open_between(storage, s, e.unwrap_or(u64::MAX)),
            };
            opened.map_err(|e| tiledb_error(format!("{name}: {}", crate::errors::chain(&e))))
        })?;
        Ok(NativeArray { array: Arc::new(array), uri })
    }

    /// The URI it was opened with.
    #[getter]
    fn uri(&self) -> &str {
        &self.uri
    }

    /// The schema and enumerations as the CLI's schema JSON.
    fn schema_json(&self) -> PyResult<String> {
        let j = to_json(self.array.schema(), self.array.enumerations());
        serde_json::to_string(&j).map_err(|e| tiledb_error(e.to_string()))
    }

    /// `(start, end)` of the timestamp range the array shows (ms).
    fn timestamp_range(&self) -> (u64, u64) {
        self.array.timestamp_range()
    }

    /// The timestamp a write through this array gets by default.
    fn write_timestamp(&self) -> u64 {
        self.array.write_timestamp()
    }

    /// The union of the visible fragments' non-empty domains: one `(low, high)` per
    /// dimension (Python scalars; `bytes` for strings), or `None` with no fragment.
    fn nonempty_domain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let schema = self.array.schema();
        let dim_types = tessera::layers::fragment::dim_types(schema);
        let mut domain: Option<tessera::layers::rtree::Mbr> = None;
        for f in self.array.fragments() {
            if let Some(ned) = &f.footer().non_empty_domain {
                match &mut domain {
                    Some(d) => d.expand(&dim_types, ned),
                    None => domain = Some(ned.clone()),
                }
            }
        }
        let Some(domain) = domain else { return Ok(None) };
        let out = PyList::empty(py);
        for (d, r) in schema.dimensions.iter().zip(&domain.0) {
            let pair = PyTuple::new(
                py,
                [
                    convert::scalar(py, d.datatype, &r.low)?,
                    convert::scalar(py, d.datatype, &r.high)?,
                ],
            )?;
            out.append(pair)?;
        }
        Ok(Some(out))
    }

    /// The visible fragments, oldest first, as a JSON list of objects (name, folder,
    /// timestamp_range, sparse, cell_num, format_version, nonempty_domain, schema_name).
    fn fragments_json(&self) -> PyResult<String> {
        let mut out = Vec::new();
        for f in self.array.fragments() {
            let (t1, t2) = f.name().timestamp_range();
            let schema = f.schema();
            let ned = f.footer().non_empty_domain.as_ref().map(|mbr| {
                schema
                    .dimensions
                    .iter()
                    .zip(&mbr.0)
                    .map(|(d, r)| {
                        serde_json::json!([
                            value_json(d.datatype, &r.low),
                            value_json(d.datatype, &r.high)
                        ])
                    })
                    .collect::<Vec<_>>()
            });
            out.push(serde_json::json!({
                "name": f.name().as_str(),
                "dir": f.dir(),
                "timestamp_range": [t1, t2],
                "sparse": !f.footer().dense,
                "cell_num": f.cell_num().py_err()?,
                "format_version": f.footer().version,
                "nonempty_domain": ned,
                "schema_name": f.footer().schema_name,
            }));
        }
        serde_json::to_string(&out).map_err(|e| tiledb_error(e.to_string()))
    }

    /// Reads every selected cell: a list of column tuples (`(name, data, offsets, validity,
    /// objects)`), dimensions first. `ranges` is a list of `(dimension, [(low, high), ...])`;
    /// `dims=None` returns no dimension; `order` is 'C', 'F', 'G' or 'U'; `cond` a condition
    /// in the CLI's `--where` syntax.
    #[pyo3(signature = (ranges=None, attrs=None, dims=None, order=None, cond=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        ranges: Option<Bound<'py, PyAny>>,
        attrs: Option<Vec<String>>,
        dims: Option<Vec<String>>,
        order: Option<&str>,
        cond: Option<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let spec = self.spec(ranges, attrs, dims, order, cond, None)?;
        let array = self.array.clone();
        let result = run(py, move || spec.query(&array).execute().py_err())?;
        result_list(py, result)
    }

    /// Reads the fixed-size, non-nullable attribute `attr` of a dense array into `buf`, a
    /// contiguous writeable 1-D uint8 view of the caller's numpy array, which must hold
    /// exactly the bytes of every cell of the read in `order` ('C' or 'F'); returns the
    /// number of cells. The engine writes into numpy's memory with the GIL released, so the
    /// result gets numpy's allocation (and no copy or second buffer).
    #[pyo3(signature = (buf, attr, ranges=None, order=None, cond=None))]
    fn read_into<'py>(
        &self,
        py: Python<'py>,
        buf: Bound<'py, numpy::PyArray1<u8>>,
        attr: String,
        ranges: Option<Bound<'py, PyAny>>,
        order: Option<&str>,
        cond: Option<String>,
    ) -> PyResult<u64> {
        use numpy::{PyArrayMethods, PyUntypedArrayMethods};
        if !buf.is_contiguous() {
            return Err(tiledb_error("read_into: the buffer is not contiguous"));
        }
        // A writeable buffer (the borrow fails on read-only arrays); the pointer is taken
        // while the borrow is held.
        let (ptr, len) = {
            let mut rw = buf.try_readwrite().map_err(|e| {
                tiledb_error(format!("read_into: the buffer is not writeable ({e})"))
            })?;
            let slice = rw.as_slice_mut().map_err(|e| tiledb_error(format!("read_into: {e}")))?;
            (slice.as_mut_ptr() as usize, slice.len())
        };
        let spec = self.spec(ranges, None, None, order, cond, None)?;
        let array = self.array.clone();
        // Holds the numpy array (and so its memory) until the engine is done with it, even
        // when the call is interrupted and returns before the worker thread ends.
        let keep = buf.unbind();
        run(py, move || {
            let _keep = keep;
            // SAFETY: `ptr..ptr + len` is the data of the contiguous, writeable numpy array
            // `_keep` holds alive until this closure returns; nothing else in this process
            // writes it meanwhile unless Python code races with its own read.
            let out = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
            spec.configure(array.read()).read_into(&attr, out).py_err()
        })
    }

    /// Reads the cells at the given points, in the order asked: `points` is a list of
    /// `(dimension, [coordinate, ...])`, one list per dimension, all of the same length. Sparse
    /// points holding no cell are left out; dense points give their value or the fill value.
    #[pyo3(signature = (points, attrs=None, dims=None, cond=None))]
    fn read_points<'py>(
        &self,
        py: Python<'py>,
        points: Vec<(String, Bound<'py, PyAny>)>,
        attrs: Option<Vec<String>>,
        dims: Option<Vec<String>>,
        cond: Option<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        use tessera::layers::query::read::Points;
        let schema = self.array.schema();
        let mut pts = Points::new();
        for (dim, values) in points {
            let dt = schema
                .dimension(&dim)
                .map(|d| d.datatype)
                .ok_or_else(|| tiledb_error(format!("no dimension named {dim:?}")))?;
            pts = if dt.is_string() {
                let v: Vec<Vec<u8>> = values
                    .try_iter()?
                    .map(|x| convert::string_bytes(&x?))
                    .collect::<PyResult<_>>()?;
                pts.coords_str(&dim, v)
            } else if dt == Datatype::Float64 {
                pts.coords::<f64>(&dim, values.extract::<Vec<f64>>()?)
            } else if dt == Datatype::Float32 {
                pts.coords::<f32>(&dim, values.extract::<Vec<f32>>()?)
            } else if dt == Datatype::UInt64 {
                pts.coords::<u64>(&dim, values.extract::<Vec<u64>>()?)
            } else {
                pts.coords_i64(&dim, values.extract::<Vec<i64>>()?)
            };
        }
        let spec = self.spec(None, attrs, dims, None, cond, None)?;
        let array = self.array.clone();
        let result = run(py, move || spec.query(&array).points(pts).execute().py_err())?;
        result_list(py, result)
    }

    /// The same read in batches of about `budget` bytes each: an iterator of column lists.
    #[pyo3(signature = (budget, ranges=None, attrs=None, dims=None, order=None, cond=None))]
    #[allow(clippy::too_many_arguments)] // the Python call's keyword arguments
    fn read_batches<'py>(
        &self,
        py: Python<'py>,
        budget: u64,
        ranges: Option<Bound<'py, PyAny>>,
        attrs: Option<Vec<String>>,
        dims: Option<Vec<String>>,
        order: Option<&str>,
        cond: Option<String>,
    ) -> PyResult<NativeBatches> {
        let spec = self.spec(ranges, attrs, dims, order, cond, Some(budget))?;
        let array = self.array.clone();
        // One batch waits in the channel while the next is read: at most two in memory.
        let (tx, rx) = sync_channel::<PyResult<ReadResult>>(1);
        let (ready_tx, ready_rx) = sync_channel::<PyResult<()>>(1);
        let pool = crate::runtime::current_pool()?;
        // The producer waits on the channel between batches on a thread of its own; only the
        // reading of each batch runs inside the pool, so that iterators a caller keeps
        // without consuming them never hold the pool's workers.
        let producer = move || {
            let query = spec.query(&array);
            let mut batches = match pool.install(|| query.batches()) {
                Ok(b) => {
                    let _ = ready_tx.send(Ok(()));
                    b
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(crate::errors::to_py(e)));
                    return;
                }
            };
            while let Some(batch) = pool.install(|| batches.next()) {
                let failed = batch.is_err();
                if tx.send(batch.py_err()).is_err() || failed {
                    return;
                }
            }
        };
        std::thread::Builder::new()
            .name("tessera-batches".into())
            .spawn(producer)
            .map_err(|e| tiledb_error(format!("cannot start a reader thread: {e}")))?;
        // Errors found before reading (bad ranges, fields, conditions) raise here.
        match wait(py, &ready_rx)? {
            Some(ready) => ready?,
            None => return Err(tiledb_error("the reader thread stopped before reading")),
        }
        Ok(NativeBatches { rx: Mutex::new(Some(rx)) })
    }

    /// The same read as an Arrow C stream capsule (`arrow_array_stream`) of record batches
    /// of about `budget` bytes each: see [`crate::arrow_stream`].
    #[pyo3(signature = (budget, ranges=None, attrs=None, dims=None, order=None, cond=None))]
    #[allow(clippy::too_many_arguments)] // the Python call's keyword arguments
    fn arrow_stream<'py>(
        &self,
        py: Python<'py>,
        budget: u64,
        ranges: Option<Bound<'py, PyAny>>,
        attrs: Option<Vec<String>>,
        dims: Option<Vec<String>>,
        order: Option<&str>,
        cond: Option<String>,
    ) -> PyResult<Bound<'py, pyo3::types::PyCapsule>> {
        let spec = self.spec(ranges, attrs, dims, order, cond, Some(budget))?;
        let projection = spec.projection();
        crate::arrow_stream::stream_capsule(
            py,
            &self.uri,
            self.array.clone(),
            projection,
            move |q| spec.configure(q),
        )
    }

    /// Aggregates over the selected cells: `aggs` as `(op, field)` pairs (`("count", "")`,
    /// `("sum", "a")`, ...); values
    /// in that order: `None`, `int`, `float`, or `(datatype name, bytes)` for a minimum or
    /// maximum in the field's type.
    #[pyo3(signature = (aggs, ranges=None, cond=None))]
    fn aggregate<'py>(
        &self,
        py: Python<'py>,
        aggs: Vec<(String, String)>,
        ranges: Option<Bound<'py, PyAny>>,
        cond: Option<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        // `(op, field)` pairs, so that any field name works (anonymous attributes too).
        let aggs: Vec<Aggregate> = aggs
            .into_iter()
            .map(|(op, field)| {
                Ok(match op.as_str() {
                    "count" => Aggregate::count(),
                    "sum" => Aggregate::sum(field),
                    "min" => Aggregate::min(field),
                    "max" => Aggregate::max(field),
                    "mean" => Aggregate::mean(field),
                    "null_count" => Aggregate::null_count(field),
                    other => return Err(tiledb_error(format!("unknown aggregate {other:?}"))),
                })
            })
            .collect::<PyResult<_>>()?;
        let spec = self.spec(ranges, None, None, None, cond, None)?;
        let array = self.array.clone();
        let values = run(py, move || spec.query(&array).aggregate(&aggs).py_err())?;
        let out = PyList::empty(py);
        for v in values {
            let obj: Bound<'py, PyAny> = match v {
                AggregateValue::Null => py.None().into_bound(py),
                AggregateValue::UInt(u) => u.into_pyobject(py)?.into_any(),
                AggregateValue::Int(i) => i.into_pyobject(py)?.into_any(),
                AggregateValue::Float(f) => f.into_pyobject(py)?.into_any(),
                AggregateValue::Value { datatype, bytes, .. } => PyTuple::new(
                    py,
                    [
                        datatype.name().into_pyobject(py)?.into_any(),
                        pyo3::types::PyBytes::new(py, &bytes).into_any(),
                    ],
                )?
                .into_any(),
            };
            out.append(obj)?;
        }
        Ok(out)
    }

    /// Writes one fragment. `columns` is a list of `(name, data, offsets, validity)`: data a
    /// uint8 array of the values' bytes, offsets a uint64 array (var-sized fields) or None,
    /// validity a uint8 array (nullable attributes) or None. `ranges` is the dense subarray.
    /// Returns the fragment's name, or None when there were no cells.
    #[pyo3(signature = (columns, ranges=None, order=None, timestamp=None))]
    fn write<'py>(
        &self,
        py: Python<'py>,
        columns: Vec<Bound<'py, PyTuple>>,
        ranges: Option<Bound<'py, PyAny>>,
        order: Option<&str>,
        timestamp: Option<u64>,
    ) -> PyResult<Option<String>> {
        let schema = self.array.schema();
        let mut cols = Vec::with_capacity(columns.len());
        for t in columns {
            let (name, data, offsets, validity): (
                String,
                Bound<'py, PyAny>,
                Bound<'py, PyAny>,
                Bound<'py, PyAny>,
            ) = t.extract()?;
            let (datatype, cell_val_num) = if let Some(d) = schema.dimension(&name) {
                (d.datatype, d.cell_val_num)
            } else if let Some(a) = schema.attributes.iter().find(|a| a.name == name) {
                (a.datatype, a.cell_val_num)
            } else {
                return Err(tiledb_error(format!("no dimension or attribute named {name:?}")));
            };
            let data = convert::bytes_of(&data, &name)?;
            let offsets =
                if offsets.is_none() { None } else { Some(convert::u64s_of(&offsets, &name)?) };
            let validity =
                if validity.is_none() { None } else { Some(convert::bytes_of(&validity, &name)?) };
            cols.push(Column { name, datatype, cell_val_num, data, offsets, validity });
        }
        let ranges = match ranges {
            Some(r) => self::ranges(&self.array, &r)?,
            None => Vec::new(),
        };
        let layout = layout(order)?;
        let array = self.array.clone();
        run(py, move || {
            let mut q = array.write();
            for (dim, r) in &ranges {
                q = match r {
                    Range::I64(lo, hi) => q.range_i64(dim, *lo, *hi),
                    Range::U64(lo, hi) => q.range_u64(dim, *lo, *hi),
                    Range::F64(lo, hi) => q.range::<f64>(dim, *lo, *hi),
                    Range::Bytes(lo, hi) => q.range_bytes(dim, lo.clone(), hi.clone()),
                };
            }
            if let Some(l) = layout {
                q = q.layout(Layout::from(l));
            }
            if let Some(t) = timestamp {
                q = q.timestamp(t);
            }
            for c in cols {
                q = q.column(c);
            }
            Ok(q.submit().py_err()?.map(|n| n.as_str().to_owned()))
        })
    }

    /// Deletes the cells matching `cond` (a sparse array's `.del` commit); returns its name.
    #[pyo3(signature = (cond, timestamp=None))]
    fn delete(&self, py: Python<'_>, cond: String, timestamp: Option<u64>) -> PyResult<String> {
        let array = self.array.clone();
        run(py, move || {
            let mut q = array.delete().where_text(&cond);
            if let Some(t) = timestamp {
                q = q.timestamp(t);
            }
            Ok(q.submit().py_err()?.as_str().to_owned())
        })
    }

    fn __repr__(&self) -> String {
        format!("NativeArray({:?})", self.uri)
    }
}

impl NativeArray {
    /// The read spec of Python arguments.
    fn spec(
        &self,
        ranges: Option<Bound<'_, PyAny>>,
        attrs: Option<Vec<String>>,
        dims: Option<Vec<String>>,
        order: Option<&str>,
        cond: Option<String>,
        budget: Option<u64>,
    ) -> PyResult<ReadSpec> {
        Ok(ReadSpec {
            ranges: match ranges {
                Some(r) => self::ranges(&self.array, &r)?,
                None => Vec::new(),
            },
            attrs,
            dims,
            layout: layout(order)?,
            cond,
            budget,
        })
    }
}

/// Waits for the next message of `rx` without the GIL, checking for signals.
fn wait<T: Send>(py: Python<'_>, rx: &Receiver<T>) -> PyResult<Option<T>> {
    loop {
        match py.detach(|| rx.recv_timeout(Duration::from_millis(50))) {
            Ok(v) => return Ok(Some(v)),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
    }
}

/// The batches of a read under a memory budget (see [`NativeArray::read_batches`]).
#[pyclass(module = "tessera._tessera")]
pub(crate) struct NativeBatches {
    rx: Mutex<Option<Receiver<PyResult<ReadResult>>>>,
}

#[pymethods]
impl NativeBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut slot = self.rx.lock().map_err(|_| tiledb_error("batch iterator poisoned"))?;
        let Some(rx) = slot.as_ref() else { return Ok(None) };
        match wait(py, rx)? {
            Some(Ok(batch)) => Ok(Some(result_list(py, batch)?)),
            Some(Err(e)) => {
                *slot = None;
                Err(e)
            }
            None => {
                *slot = None;
                Ok(None)
            }
        }
    }
}

/// Creates an array at `uri` from the CLI's schema JSON (with enumerations), timestamped
/// `timestamp` (ms) or now.
#[pyfunction]
#[pyo3(signature = (uri, schema_json, timestamp=None, key=None))]
pub(crate) fn create_array(
    py: Python<'_>,
    uri: String,
    schema_json: String,
    timestamp: Option<u64>,
    key: Option<Vec<u8>>,
) -> PyResult<()> {
    let (schema, enumerations) = from_json_str(&schema_json)
        .map_err(|e| tiledb_error(format!("invalid schema: {}", crate::errors::chain(&e))))?;
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    run(py, move || {
        match timestamp {
            Some(t) => Array::create_at(storage, &schema, &enumerations, t),
            None => Array::create(storage, &schema, &enumerations),
        }
        .map_err(|e| tiledb_error(format!("{uri}: {}", crate::errors::chain(&e))))
    })
}

/// Consolidates the array at `uri` in `mode` (`fragments`, `commits`, `fragment_meta`,
/// `array_meta`), optionally only what lies in `[start, end]`, with libtiledb's step settings
/// from `config` (`sm.consolidation.steps`, `step_min_frags`, `step_max_frags`,
/// `step_size_ratio`, `amplification`; other keys are left to the caller); returns the inputs
/// merged.
#[pyfunction]
#[pyo3(signature = (uri, mode="fragments", start=None, end=None, purge_deleted=false, key=None, config=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn consolidate(
    py: Python<'_>,
    uri: String,
    mode: &str,
    start: Option<u64>,
    end: Option<u64>,
    purge_deleted: bool,
    key: Option<Vec<u8>>,
    config: Option<std::collections::HashMap<String, String>>,
) -> PyResult<Vec<String>> {
    let mode = Mode::parse(mode)
        .ok_or_else(|| tiledb_error(format!("unknown consolidation mode {mode:?}")))?;
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    let range = match (start, end) {
        (None, None) => None,
        (s, e) => Some((s.unwrap_or(0), e.unwrap_or(u64::MAX))),
    };
    run(py, move || {
        let options = step_options(Options { range, purge_deleted, ..Options::default() }, config)?;
        let report = cons::consolidate(storage, mode, &options)
            .map_err(|e| tiledb_error(format!("{uri}: {}", crate::errors::chain(&e))))?;
        Ok(report.inputs)
    })
}

/// `options` with the step settings of a tiledb-py config (`sm.consolidation.*`) applied.
fn step_options(
    mut options: Options,
    config: Option<std::collections::HashMap<String, String>>,
) -> PyResult<Options> {
    fn parse<T: std::str::FromStr>(key: &str, value: &str) -> PyResult<T> {
        value.trim().parse().map_err(|_| {
            tiledb_error(format!("config {key}: {value:?} is not a valid value"))
        })
    }
    for (key, value) in config.unwrap_or_default() {
        match key.strip_prefix("sm.consolidation.") {
            Some("steps") => options.steps = parse(&key, &value)?,
            Some("step_min_frags") => options.step_min_frags = parse(&key, &value)?,
            Some("step_max_frags") => options.step_max_frags = parse(&key, &value)?,
            Some("step_size_ratio") => options.step_size_ratio = parse(&key, &value)?,
            Some("amplification") => options.amplification = parse(&key, &value)?,
            _ => {}
        }
    }
    Ok(options)
}

/// Removes what a consolidation in `mode` made obsolete; returns the paths removed.
#[pyfunction]
#[pyo3(signature = (uri, mode="fragments", key=None))]
pub(crate) fn vacuum(
    py: Python<'_>,
    uri: String,
    mode: &str,
    key: Option<Vec<u8>>,
) -> PyResult<Vec<String>> {
    let mode =
        Mode::parse(mode).ok_or_else(|| tiledb_error(format!("unknown vacuum mode {mode:?}")))?;
    let storage = location::keyed_storage(&uri, key.as_deref())?;
    run(py, move || {
        let report = cons::vacuum(storage.as_ref(), mode)
            .map_err(|e| tiledb_error(format!("{uri}: {}", crate::errors::chain(&e))))?;
        Ok(report.inputs)
    })
}

/// `"array"`, `"group"`, or `None` for what `uri` holds.
#[pyfunction]
pub(crate) fn object_type(py: Python<'_>, uri: String) -> PyResult<Option<&'static str>> {
    let storage = location::storage(&uri)?;
    run(py, move || {
        let t = stored_object_type(storage.as_ref()).py_err()?;
        Ok(match t {
            ObjectType::Array => Some("array"),
            ObjectType::Group => Some("group"),
            ObjectType::Invalid => None,
        })
    })
}

/// Var-sized cells from a sequence of `str`/`bytes` (None for nulls): `(data, offsets)` as
/// numpy arrays (uint8, uint64).
#[pyfunction]
pub(crate) fn pack_var<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (data, offsets) = convert::pack(values)?;
    PyTuple::new(
        py,
        [
            numpy::PyArray1::from_vec(py, data).into_any(),
            numpy::PyArray1::from_vec(py, offsets).into_any(),
        ],
    )
}
