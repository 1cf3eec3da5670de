//! Values across the boundary: result columns handed to numpy without copies, Python
//! scalars to query ranges, fixed-size values to Python scalars.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use tessera::{Column, Datatype};

use crate::errors::tiledb_error;

/// One bound of a range, as the dimension's type needs it.
#[derive(Debug, Clone)]
pub(crate) enum Range {
    /// Signed integers, datetimes and times.
    I64(i64, i64),
    /// Unsigned integers.
    U64(u64, u64),
    /// Floats.
    F64(f64, f64),
    /// Strings (bytewise).
    Bytes(Vec<u8>, Vec<u8>),
}

/// The range `[low, high]` on a dimension of type `dt`, from Python values (ints, floats,
/// `str` or `bytes`).
pub(crate) fn range(
    dim: &str,
    dt: Datatype,
    low: &Bound<'_, PyAny>,
    high: &Bound<'_, PyAny>,
) -> PyResult<Range> {
    let wrong = |e: PyErr| tiledb_error(format!("range on dimension {dim:?} ({}): {e}", dt.name()));
    Ok(if dt.is_string() {
        Range::Bytes(string_bytes(low).map_err(wrong)?, string_bytes(high).map_err(wrong)?)
    } else if dt.is_float() {
        Range::F64(low.extract().map_err(wrong)?, high.extract().map_err(wrong)?)
    } else if dt.is_signed() || dt.is_datetime() || dt.is_time() {
        Range::I64(low.extract().map_err(wrong)?, high.extract().map_err(wrong)?)
    } else {
        Range::U64(low.extract().map_err(wrong)?, high.extract().map_err(wrong)?)
    })
}

/// The bytes of a `str` (UTF-8) or `bytes` value.
pub(crate) fn string_bytes(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "expected str or bytes, got {}",
        v.get_type().name()?
    )))
}

/// A fixed-size value of type `dt` as a Python scalar: `int` for integers, datetimes and
/// times, `float`, `bool`, `bytes` for characters and strings.
pub(crate) fn scalar<'py>(
    py: Python<'py>,
    dt: Datatype,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    fn arr<const N: usize>(b: &[u8]) -> PyResult<[u8; N]> {
        b.get(..N)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| tiledb_error(format!("value of {} bytes, expected {N}", b.len())))
    }
    use Datatype as D;
    let v = match dt {
        D::Int8 => i8::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::UInt8 => u8::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::Int16 => i16::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::UInt16 => u16::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::Int32 => i32::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::UInt32 => u32::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::UInt64 => u64::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::Float32 => f32::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::Float64 => f64::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        D::Bool => {
            (bytes.first().copied().unwrap_or(0) != 0).into_pyobject(py)?.to_owned().into_any()
        }
        _ if dt.is_string() || dt.size() == 1 && !dt.is_integer() => {
            PyBytes::new(py, bytes).into_any()
        }
        // Int64, datetimes and times.
        _ if dt.size() == 8 => i64::from_le_bytes(arr(bytes)?).into_pyobject(py)?.into_any(),
        _ => PyBytes::new(py, bytes).into_any(),
    };
    Ok(v)
}

/// A result column as `(name, data, offsets, validity, objects)`: `data` the values' bytes
/// as a uint8 numpy array that owns the engine's buffer (no copy; Python views it with the
/// right dtype), `offsets` (uint64, var-sized cells) and `validity` (uint8, nullable) the
/// same way, and `objects`, for var-sized strings and blobs, a numpy object array of `str`
/// (strings) or `bytes` (everything else) built here, or `None`.
pub(crate) fn column<'py>(py: Python<'py>, col: Column) -> PyResult<Bound<'py, PyTuple>> {
    let Column { name, datatype, data, offsets, validity, .. } = col;
    let objects: Option<Bound<'py, PyAny>> = match &offsets {
        Some(offsets) => Some(var_objects(py, datatype, &data, offsets)?.into_any()),
        None => None,
    };
    let data = PyArray1::from_vec(py, data).into_any();
    let offsets = offsets.map(|o| PyArray1::from_vec(py, o).into_any());
    let validity = validity.map(|v| PyArray1::from_vec(py, v).into_any());
    PyTuple::new(
        py,
        [
            name.into_pyobject(py)?.into_any(),
            data,
            offsets.unwrap_or_else(|| py.None().into_bound(py)),
            validity.unwrap_or_else(|| py.None().into_bound(py)),
            objects.unwrap_or_else(|| py.None().into_bound(py)),
        ],
    )
}

/// Var-sized cells as a numpy object array: `str` for string types (invalid UTF-8 replaced,
/// as Python's "replace" handler does), `bytes` otherwise.
fn var_objects<'py>(
    py: Python<'py>,
    dt: Datatype,
    data: &[u8],
    offsets: &[u64],
) -> PyResult<Bound<'py, PyArray1<Py<PyAny>>>> {
    // tiledb-py gives `str` for UTF-8 strings and `bytes` for every other var-sized type
    // (ASCII strings, chars, blobs).
    let strings = dt == Datatype::StringUtf8;
    let mut out: Vec<Py<PyAny>> = Vec::with_capacity(offsets.len());
    for (i, &start) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).copied().unwrap_or(data.len() as u64);
        let cell = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| data.get(s..e))
            .ok_or_else(|| {
                tiledb_error(format!("cell {i}: offsets {start}..{end} outside the data"))
            })?;
        // tiledb-py decodes UTF-8 cells through numpy's str type, which drops trailing NUL
        // characters: the default fill of a var string ("\0") reads as "". Other cells stay
        // whole, except a lone NUL byte (the default fill of var-sized bytes), which
        // tiledb-py also gives as empty.
        let cell = if strings {
            match cell.iter().rposition(|&b| b != 0) {
                Some(last) => &cell[..=last],
                None => &cell[..0],
            }
        } else if cell == [0] {
            &cell[..0]
        } else {
            cell
        };
        let obj = if strings {
            match std::str::from_utf8(cell) {
                Ok(s) => PyString::new(py, s).into_any().unbind(),
                Err(_) => PyString::new(py, &String::from_utf8_lossy(cell)).into_any().unbind(),
            }
        } else {
            PyBytes::new(py, cell).into_any().unbind()
        };
        out.push(obj);
    }
    Ok(PyArray1::from_vec(py, out))
}

/// Var-sized cells from a Python sequence of `str` (encoded as UTF-8) or `bytes` values:
/// `(data, offsets)`.
pub(crate) fn pack(values: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, Vec<u64>)> {
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    let push = |v: &Bound<'_, PyAny>, data: &mut Vec<u8>, offsets: &mut Vec<u64>| -> PyResult<()> {
        offsets.push(data.len() as u64);
        if let Ok(s) = v.cast::<PyString>() {
            data.extend_from_slice(s.to_str()?.as_bytes());
        } else if let Ok(b) = v.cast::<PyBytes>() {
            data.extend_from_slice(b.as_bytes());
        } else if v.is_none() {
            // A null cell: no bytes (its validity says null).
        } else {
            return Err(tiledb_error(format!(
                "var-sized cell {}: expected str or bytes, got {}",
                offsets.len() - 1,
                v.get_type().name()?
            )));
        }
        Ok(())
    };
    if let Ok(list) = values.cast::<PyList>() {
        offsets.reserve(list.len());
        for v in list.iter() {
            push(&v, &mut data, &mut offsets)?;
        }
    } else {
        for v in values.try_iter()? {
            push(&v?, &mut data, &mut offsets)?;
        }
    }
    Ok((data, offsets))
}

/// The bytes of a contiguous uint8 numpy array (copied: the engine's columns own theirs).
pub(crate) fn bytes_of(a: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    let arr = a
        .cast::<PyArray1<u8>>()
        .map_err(|_| tiledb_error(format!("{what}: expected a 1-D uint8 numpy array")))?;
    let ro = arr.readonly();
    Ok(ro.as_slice().map_err(|_| tiledb_error(format!("{what}: not contiguous")))?.to_vec())
}

/// The values of a contiguous uint64 numpy array.
pub(crate) fn u64s_of(a: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u64>> {
    let arr = a
        .cast::<PyArray1<u64>>()
        .map_err(|_| tiledb_error(format!("{what}: expected a 1-D uint64 numpy array")))?;
    let ro = arr.readonly();
    Ok(ro.as_slice().map_err(|_| tiledb_error(format!("{what}: not contiguous")))?.to_vec())
}
