//! Writing: Arrow arrays to result-layout columns, record batches to fragments.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array as ArrowArray, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use tessera::layers::fragment::FragmentName;
use tessera::layers::types::CELL_VAL_NUM_VAR;
use tessera::{Array, Column, Datatype, Enumeration, Layout};

use crate::mapping::{arrow_type, enumeration_of, is_bytes, is_utf8_text};
use crate::read::decode_int;
use crate::{Error, Result};

/// Whether an Arrow type can hold values of `expected` (equal up to list item field names and
/// nullability, and timestamp time zones).
fn compatible(got: &DataType, expected: &DataType) -> bool {
    match (got, expected) {
        (DataType::Timestamp(a, _), DataType::Timestamp(b, _)) => a == b,
        (DataType::LargeList(a) | DataType::List(a), DataType::LargeList(b)) => {
            compatible(a.data_type(), b.data_type())
        }
        (DataType::FixedSizeList(a, n), DataType::FixedSizeList(b, m)) => {
            n == m && compatible(a.data_type(), b.data_type())
        }
        (DataType::Utf8 | DataType::LargeUtf8, DataType::LargeUtf8) => true,
        (
            DataType::Binary | DataType::LargeBinary | DataType::Utf8 | DataType::LargeUtf8,
            DataType::LargeBinary,
        ) => true,
        (a, b) => a == b,
    }
}

/// The bytes of the values of a fixed-width Arrow array (primitive, boolean as one byte per
/// value, fixed-size binary), as TileDB lays them out.
fn fixed_bytes(array: &dyn ArrowArray) -> Result<Vec<u8>> {
    match array.data_type() {
        DataType::Boolean => Ok(array.as_boolean().values().iter().map(u8::from).collect()),
        DataType::FixedSizeBinary(_) => Ok(array.as_fixed_size_binary().values().to_vec()),
        DataType::Date32 => {
            let a = array.as_primitive::<arrow_array::types::Date32Type>();
            Ok(a.values().iter().flat_map(|v| i64::from(*v).to_le_bytes()).collect())
        }
        DataType::FixedSizeList(_, _) => fixed_bytes(array.as_fixed_size_list().values()),
        dt if dt.is_primitive() => {
            let data = array.to_data();
            let width = dt.primitive_width().unwrap_or(1);
            let start = data.offset() * width;
            Ok(data.buffers()[0].as_slice()[start..start + data.len() * width].to_vec())
        }
        other => Err(Error::Unsupported(format!("Arrow type {other} as fixed-size values"))),
    }
}

/// Var-sized values: TileDB start offsets (in bytes) and the value bytes.
fn var_bytes(array: &dyn ArrowArray, size: usize) -> Result<(Vec<u64>, Vec<u8>)> {
    fn rebase<O: Copy + Into<i64>>(offs: &[O], size: usize) -> Vec<u64> {
        let first: i64 = offs.first().map_or(0, |&o| o.into());
        offs[..offs.len().saturating_sub(1)]
            .iter()
            .map(|&o| ((o.into() - first) as u64) * size as u64)
            .collect()
    }
    fn slice<O: Copy + Into<i64>>(offs: &[O], data: &[u8]) -> Vec<u8> {
        let s = offs.first().map_or(0, |&o| o.into()) as usize;
        let e = offs.last().map_or(0, |&o| o.into()) as usize;
        data[s..e].to_vec()
    }
    Ok(match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            (rebase(a.value_offsets(), 1), slice(a.value_offsets(), a.value_data()))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            (rebase(a.value_offsets(), 1), slice(a.value_offsets(), a.value_data()))
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            (rebase(a.value_offsets(), 1), slice(a.value_offsets(), a.value_data()))
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            (rebase(a.value_offsets(), 1), slice(a.value_offsets(), a.value_data()))
        }
        DataType::List(_) => {
            let a = array.as_list::<i32>();
            let o = a.value_offsets();
            let (s, e) = (o[0] as usize, o[o.len() - 1] as usize);
            (rebase(o, size), fixed_bytes(a.values().slice(s, e - s).as_ref())?)
        }
        DataType::LargeList(_) => {
            let a = array.as_list::<i64>();
            let o = a.value_offsets();
            let (s, e) = (o[0] as usize, o[o.len() - 1] as usize);
            (rebase(o, size), fixed_bytes(a.values().slice(s, e - s).as_ref())?)
        }
        other => return Err(Error::Unsupported(format!("Arrow type {other} as var-sized values"))),
    })
}

/// The TileDB column of an Arrow array holding values of a field of `dt` with
/// `cell_val_num` values per cell; `nullable` fields get validity (an Arrow null becomes a
/// 0 validity byte and the value bytes Arrow holds, or none for var cells).
///
/// # Errors
/// [`Error::TypeMismatch`] when the Arrow type cannot hold the field's values (see the crate
/// docs); [`Error::Null`] for a null in a field that is not nullable.
pub fn arrow_to_column(
    name: &str,
    array: &dyn ArrowArray,
    dt: Datatype,
    cell_val_num: u32,
    nullable: bool,
) -> Result<Column> {
    let expected = arrow_type(dt, cell_val_num)?;
    let got = array.data_type();
    let int64_time = (dt.is_datetime() || dt.is_time()) && *got == DataType::Int64;
    if !compatible(got, &expected) && !int64_time {
        return Err(Error::TypeMismatch {
            field: name.to_owned(),
            expected: expected.to_string(),
            got: got.to_string(),
        });
    }
    let validity = validity_of(name, array, nullable)?;
    let (data, offsets) = if cell_val_num == CELL_VAL_NUM_VAR {
        let size = if is_utf8_text(dt) || is_bytes(dt) { 1 } else { dt.size() };
        let (o, d) = var_bytes(array, size)?;
        (d, Some(o))
    } else {
        (fixed_bytes(array)?, None)
    };
    Ok(Column { name: name.to_owned(), datatype: dt, cell_val_num, data, offsets, validity })
}

fn validity_of(name: &str, array: &dyn ArrowArray, nullable: bool) -> Result<Option<Vec<u8>>> {
    if nullable {
        return Ok(Some((0..array.len()).map(|i| u8::from(array.is_valid(i))).collect()));
    }
    if array.null_count() > 0 {
        return Err(Error::Null(name.to_owned()));
    }
    Ok(None)
}

/// The codes of an enumerated attribute's column from an Arrow array: a dictionary (its
/// values are looked up in the enumeration), the labels themselves, or the integer codes.
///
/// # Errors
/// [`Error::UnknownLabel`] for a value the enumeration lacks; as [`arrow_to_column`].
pub fn arrow_to_enumerated(
    name: &str,
    array: &dyn ArrowArray,
    dt: Datatype,
    nullable: bool,
    e: &Enumeration,
) -> Result<Column> {
    let codes_type = crate::mapping::key_type(dt)
        .ok_or_else(|| Error::Unsupported(format!("enumeration codes of type {dt}")))?;
    if *array.data_type() == codes_type {
        return arrow_to_column(name, array, dt, 1, nullable);
    }
    // Labels, plain or as a dictionary: each cell's label bytes, then its code.
    let (labels, keys): (Column, Option<Vec<Option<usize>>>) = match array.data_type() {
        DataType::Dictionary(k, _) => {
            let (values, keys) = dictionary_parts(array, k)?;
            let col = arrow_to_column(name, values.as_ref(), e.datatype, e.cell_val_num, false)?;
            (col, Some(keys))
        }
        _ => (arrow_to_column(name, array, e.datatype, e.cell_val_num, true)?, None),
    };
    let index: HashMap<&[u8], usize> =
        (0..e.len()).filter_map(|i| Some((e.value(i)?, i))).collect();
    let validity = validity_of(name, array, nullable)?;
    let mut data = Vec::with_capacity(array.len() * dt.size());
    for i in 0..array.len() {
        let label = match &keys {
            Some(k) => k[i].filter(|&k| k < labels.len()).and_then(|k| labels.cell(k)),
            None => labels.is_valid(i).then(|| labels.cell(i)).flatten(),
        };
        let code = match label {
            Some(l) => match index.get(l) {
                Some(&c) => c,
                // Under a null any code will do.
                None if !array.is_valid(i) => 0,
                None => {
                    return Err(Error::UnknownLabel {
                        field: name.to_owned(),
                        label: String::from_utf8_lossy(l).into_owned(),
                    });
                }
            },
            None => 0,
        };
        data.extend_from_slice(&(code as u64).to_le_bytes()[..dt.size()]);
    }
    Ok(Column {
        name: name.to_owned(),
        datatype: dt,
        cell_val_num: 1,
        data,
        offsets: None,
        validity,
    })
}

fn dictionary_parts(
    array: &dyn ArrowArray,
    key: &DataType,
) -> Result<(ArrayRef, Vec<Option<usize>>)> {
    fn parts<K: ArrowDictionaryKeyType>(a: &dyn ArrowArray) -> (ArrayRef, Vec<Option<usize>>) {
        let d = a.as_dictionary::<K>();
        // Null cells keep the key under them (it is a code for writing back).
        let keys = d.keys().values().iter().map(|k| Some(k.as_usize())).collect();
        (d.values().clone(), keys)
    }
    use arrow_buffer::ArrowNativeType as _;
    Ok(match key {
        DataType::Int8 => parts::<Int8Type>(array),
        DataType::Int16 => parts::<Int16Type>(array),
        DataType::Int32 => parts::<Int32Type>(array),
        DataType::Int64 => parts::<Int64Type>(array),
        DataType::UInt8 => parts::<UInt8Type>(array),
        DataType::UInt16 => parts::<UInt16Type>(array),
        DataType::UInt32 => parts::<UInt32Type>(array),
        DataType::UInt64 => parts::<UInt64Type>(array),
        other => return Err(Error::Unsupported(format!("dictionary keys of type {other}"))),
    })
}

/// How [`write_batch`] writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// The fragment's timestamp (ms; default as [`tessera::WriteQuery::timestamp`]).
    pub timestamp: Option<u64>,
    /// A dense write's subarray as `(dimension, low, high)` integer bounds; default: the
    /// bounding box of the batch's dimension columns, which must then hold every cell of
    /// it in row-major order.
    pub subarray: Option<Vec<(String, i64, i64)>>,
}

/// The TileDB columns of `batch` for `array`'s fields (columns the array lacks are an
/// error; dimension columns of a dense array are left out, they only place the cells).
///
/// # Errors
/// [`Error::UnknownField`]; as [`arrow_to_column`].
pub fn batch_to_columns(array: &Array, batch: &RecordBatch) -> Result<Vec<Column>> {
    let schema = array.schema();
    let mut columns = Vec::new();
    for (field, values) in batch.schema().fields().iter().zip(batch.columns()) {
        let name = field.name();
        if let Some(d) = schema.dimension(name) {
            if !schema.is_dense() {
                columns.push(arrow_to_column(
                    name,
                    values.as_ref(),
                    d.datatype,
                    d.cell_val_num,
                    false,
                )?);
            }
            continue;
        }
        let a = schema.attribute(name).ok_or_else(|| Error::UnknownField(name.clone()))?;
        let column = match enumeration_of(schema, array.enumerations(), name) {
            Some(e) => arrow_to_enumerated(name, values.as_ref(), a.datatype, a.nullable, e)?,
            None => arrow_to_column(name, values.as_ref(), a.datatype, a.cell_val_num, a.nullable)?,
        };
        columns.push(column);
    }
    Ok(columns)
}

/// Writes `batch` as one fragment of `array`: a sparse array takes every dimension and
/// attribute column (cells in any order); a dense array takes the attribute columns in
/// row-major order of the subarray (given in `options`, or the bounding box of the batch's
/// integer dimension columns, which must cover it exactly). Returns the fragment's name, or
/// `None` for an empty batch.
///
/// # Errors
/// As [`batch_to_columns`]; [`Error::Write`] for what the engine refuses (a missing field,
/// cells outside the domain, a subarray whose size is not the batch's).
pub fn write_batch(
    array: &Array,
    batch: &RecordBatch,
    options: &WriteOptions,
) -> Result<Option<FragmentName>> {
    if batch.num_rows() == 0 {
        return Ok(None);
    }
    let schema = array.schema();
    let columns = batch_to_columns(array, batch)?;
    let mut q = array.write();
    if let Some(t) = options.timestamp {
        q = q.timestamp(t);
    }
    if schema.is_dense() {
        q = q.layout(Layout::RowMajor);
        let ranges = match &options.subarray {
            Some(s) => s.clone(),
            None => bounding_box(array, batch)?,
        };
        for (d, lo, hi) in &ranges {
            q = q.range_i64(d, *lo, *hi);
        }
    }
    for c in columns {
        q = q.column(c);
    }
    Ok(q.submit()?)
}

/// The bounding box of a dense batch's dimension columns.
fn bounding_box(array: &Array, batch: &RecordBatch) -> Result<Vec<(String, i64, i64)>> {
    let mut out = Vec::new();
    let mut cells: u128 = 1;
    for d in &array.schema().dimensions {
        let col = batch.column_by_name(&d.name).ok_or_else(|| {
            Error::Write(format!(
                "a dense write needs a subarray or the dimension column {:?}",
                d.name
            ))
        })?;
        let bytes = fixed_bytes(col.as_ref())?;
        let size = d.datatype.size();
        let (mut lo, mut hi) = (i128::MAX, i128::MIN);
        for c in bytes.chunks_exact(size) {
            let v = decode_int(c, d.datatype.is_signed());
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if lo > hi {
            return Ok(Vec::new());
        }
        cells *= (hi - lo + 1) as u128;
        let fit = |v: i128| {
            i64::try_from(v)
                .map_err(|_| Error::Write(format!("{:?}: bound {v} does not fit i64", d.name)))
        };
        out.push((d.name.clone(), fit(lo)?, fit(hi)?));
    }
    if cells != batch.num_rows() as u128 {
        return Err(Error::Write(format!(
            "the batch's {} rows do not fill the {cells} cells of their bounding box",
            batch.num_rows()
        )));
    }
    Ok(out)
}
