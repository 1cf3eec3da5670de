//! Reading: result columns to Arrow arrays (without copying values where the layout allows),
//! reads as streams of record batches.

use std::sync::Arc;

use arrow_array::types::{
    ArrowDictionaryKeyType, ArrowPrimitiveType, Date32Type, DurationMicrosecondType,
    DurationMillisecondType, DurationNanosecondType, DurationSecondType, Float32Type, Float64Type,
    Int8Type, Int16Type, Int32Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array as _, ArrayRef, BooleanArray, DictionaryArray, FixedSizeBinaryArray, FixedSizeListArray,
    LargeBinaryArray, LargeListArray, LargeStringArray, PrimitiveArray, RecordBatch,
    RecordBatchOptions,
};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{DataType, Field, SchemaRef};
use tessera::layers::query::{Batches, ReadQuery};
use tessera::{Array, Column, Datatype, Enumeration, ReadResult};

use crate::mapping::{arrow_schema, enumeration_of, is_utf8_text};
use crate::{Error, Projection, Result};

/// Bytes as an Arrow buffer of `T` values: the vector itself when it is aligned for `T` (no
/// copy), else an aligned copy.
fn aligned<T: ArrowNativeType>(data: Vec<u8>) -> Buffer {
    let buf = Buffer::from_vec(data);
    if buf.as_ptr().align_offset(std::mem::align_of::<T>()) == 0 {
        buf
    } else {
        Buffer::from_slice_ref(buf.as_slice())
    }
}

fn primitive<T: ArrowPrimitiveType>(
    data: Vec<u8>,
    nulls: Option<NullBuffer>,
) -> Result<PrimitiveArray<T>> {
    let size = std::mem::size_of::<T::Native>();
    if !data.len().is_multiple_of(size) {
        return Err(Error::Corrupt(format!("{} value bytes for {size}-byte values", data.len())));
    }
    let len = data.len() / size;
    let values = ScalarBuffer::<T::Native>::new(aligned::<T::Native>(data), 0, len);
    PrimitiveArray::<T>::try_new(values, nulls).map_err(Error::Arrow)
}

fn nulls_of(validity: Option<Vec<u8>>) -> Option<NullBuffer> {
    let v = validity?;
    let nb = NullBuffer::new(BooleanBuffer::collect_bool(v.len(), |i| v[i] != 0));
    (nb.null_count() > 0).then_some(nb)
}

/// The Arrow array of values of one numeric / time / bool type, `data` holding them back to
/// back (no validity).
fn values_array(dt: Datatype, data: Vec<u8>, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    use Datatype as D;
    Ok(match dt {
        D::Int8 => Arc::new(primitive::<Int8Type>(data, nulls)?),
        D::UInt8 => Arc::new(primitive::<UInt8Type>(data, nulls)?),
        D::Int16 => Arc::new(primitive::<Int16Type>(data, nulls)?),
        D::UInt16 => Arc::new(primitive::<UInt16Type>(data, nulls)?),
        D::Int32 => Arc::new(primitive::<Int32Type>(data, nulls)?),
        D::UInt32 => Arc::new(primitive::<UInt32Type>(data, nulls)?),
        D::Int64 => Arc::new(primitive::<Int64Type>(data, nulls)?),
        D::UInt64 => Arc::new(primitive::<UInt64Type>(data, nulls)?),
        D::Float32 => Arc::new(primitive::<Float32Type>(data, nulls)?),
        D::Float64 => Arc::new(primitive::<Float64Type>(data, nulls)?),
        D::Bool => {
            let values = BooleanBuffer::collect_bool(data.len(), |i| data[i] != 0);
            Arc::new(BooleanArray::new(values, nulls))
        }
        D::DatetimeSec => Arc::new(primitive::<TimestampSecondType>(data, nulls)?),
        D::DatetimeMs => Arc::new(primitive::<TimestampMillisecondType>(data, nulls)?),
        D::DatetimeUs => Arc::new(primitive::<TimestampMicrosecondType>(data, nulls)?),
        D::DatetimeNs => Arc::new(primitive::<TimestampNanosecondType>(data, nulls)?),
        D::DatetimeDay => {
            // Days are i64 in TileDB, i32 in Arrow: narrowed, refusing what does not fit.
            let mut days = Vec::with_capacity(data.len() / 8);
            for c in data.chunks_exact(8) {
                let v = i64::from_le_bytes(c.try_into().unwrap_or_default());
                let v = i32::try_from(v).map_err(|_| {
                    Error::Unsupported(format!("datetime_day value {v} does not fit Date32"))
                })?;
                days.push(v);
            }
            Arc::new(PrimitiveArray::<Date32Type>::try_new(days.into(), nulls)?)
        }
        D::TimeSec => Arc::new(primitive::<DurationSecondType>(data, nulls)?),
        D::TimeMs => Arc::new(primitive::<DurationMillisecondType>(data, nulls)?),
        D::TimeUs => Arc::new(primitive::<DurationMicrosecondType>(data, nulls)?),
        D::TimeNs => Arc::new(primitive::<DurationNanosecondType>(data, nulls)?),
        d if d.is_datetime() || d.is_time() => Arc::new(primitive::<Int64Type>(data, nulls)?),
        d => return Err(Error::Unsupported(format!("datatype {d}"))),
    })
}

/// TileDB's start offsets (one per cell) as Arrow's (one more, the end), in bytes or divided
/// by `size` for lists; checked to be increasing and within `data_len`.
fn arrow_offsets(mut offsets: Vec<u64>, data_len: usize, size: usize) -> Result<OffsetBuffer<i64>> {
    offsets.push(data_len as u64);
    let mut prev = 0u64;
    for &o in &offsets {
        if o < prev || o > data_len as u64 || (size > 1 && !o.is_multiple_of(size as u64)) {
            return Err(Error::Corrupt(format!("offset {o} after {prev} in {data_len} bytes")));
        }
        prev = o;
    }
    if offsets.first().is_some_and(|&o| o != 0) {
        return Err(Error::Corrupt("offsets do not start at 0".into()));
    }
    let n = offsets.len();
    let buffer = if size > 1 {
        Buffer::from_vec(offsets.into_iter().map(|o| (o / size as u64) as i64).collect::<Vec<_>>())
    } else {
        // u64 offsets below 2^63 are the same bits as i64: the vector becomes the buffer.
        Buffer::from_vec(offsets)
    };
    Ok(OffsetBuffer::new(ScalarBuffer::<i64>::new(buffer, 0, n)))
}

/// The Arrow array of a result column holding TileDB field values of `column.datatype`
/// (no enumeration): values move into the array without a copy where the layout allows
/// (fixed-size numbers, var-sized strings and bytes).
///
/// # Errors
/// [`Error::InvalidUtf8`] for text that is not UTF-8; [`Error::Unsupported`] for a type
/// with no Arrow counterpart; [`Error::Corrupt`] for inconsistent buffers.
pub fn column_to_arrow(column: Column) -> Result<ArrayRef> {
    let Column { name, datatype: dt, cell_val_num, data, offsets, validity } = column;
    let nulls = nulls_of(validity);
    let text = is_utf8_text(dt);
    let bytes = crate::mapping::is_bytes(dt);
    if let Some(offsets) = offsets {
        if text || bytes {
            let offsets = arrow_offsets(offsets, data.len(), 1)?;
            let values = Buffer::from_vec(data);
            return Ok(if text {
                Arc::new(
                    LargeStringArray::try_new(offsets, values, nulls)
                        .map_err(|e| Error::InvalidUtf8 { field: name, message: e.to_string() })?,
                )
            } else {
                Arc::new(LargeBinaryArray::try_new(offsets, values, nulls)?)
            });
        }
        let offsets = arrow_offsets(offsets, data.len(), dt.size())?;
        let item = values_array(dt, data, None)?;
        let field = Arc::new(Field::new("item", item.data_type().clone(), false));
        return Ok(Arc::new(LargeListArray::try_new(field, offsets, item, nulls)?));
    }
    if text || bytes {
        let width = (dt.size() * cell_val_num as usize) as i32;
        let len = if width == 0 { 0 } else { data.len() / width as usize };
        return Ok(Arc::new(FixedSizeBinaryArray::try_new_with_len(
            width,
            Buffer::from_vec(data),
            nulls,
            len,
        )?));
    }
    if cell_val_num == 1 {
        return values_array(dt, data, nulls);
    }
    let item = values_array(dt, data, None)?;
    let field = Arc::new(Field::new("item", item.data_type().clone(), false));
    Ok(Arc::new(FixedSizeListArray::try_new(field, cell_val_num as i32, item, nulls)?))
}

/// The values of an enumeration as an Arrow array (its dictionary).
///
/// # Errors
/// As [`column_to_arrow`].
pub fn enumeration_values(e: &Enumeration) -> Result<ArrayRef> {
    let column = Column {
        name: e.name.clone(),
        datatype: e.datatype,
        cell_val_num: e.cell_val_num,
        data: e.data.clone(),
        offsets: e.offsets.clone(),
        validity: None,
    };
    column_to_arrow(column)
}

fn dictionary<K: ArrowDictionaryKeyType>(column: Column, values: ArrayRef) -> Result<ArrayRef>
where
    K::Native: TryFrom<i128>,
{
    let n = values.len() as i128;
    let size = std::mem::size_of::<K::Native>();
    let signed = column.datatype.is_signed();
    let mut keys = Vec::with_capacity(column.len());
    let mut valid = Vec::with_capacity(column.len());
    for (i, c) in column.data.chunks_exact(size).enumerate() {
        let code: i128 = decode_int(c, signed);
        // A null cell keeps its code when it is one (so writing the batch back restores it).
        let in_range = (0..n).contains(&code);
        keys.push(if in_range {
            K::Native::try_from(code).unwrap_or_default()
        } else {
            K::Native::default()
        });
        valid.push(in_range && column.is_valid(i));
    }
    let nulls = NullBuffer::from(valid);
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    let keys = PrimitiveArray::<K>::try_new(keys.into(), nulls)?;
    Ok(Arc::new(DictionaryArray::<K>::try_new(keys, values)?))
}

/// A little-endian integer of 1, 2, 4 or 8 bytes.
pub(crate) fn decode_int(c: &[u8], signed: bool) -> i128 {
    let mut b = [0u8; 8];
    b[..c.len()].copy_from_slice(c);
    if signed && c.last().is_some_and(|x| x & 0x80 != 0) {
        for x in &mut b[c.len()..] {
            *x = 0xff;
        }
        i128::from(i64::from_le_bytes(b))
    } else {
        i128::from(u64::from_le_bytes(b))
    }
}

/// The Arrow array of an enumerated attribute's column: a dictionary of its codes over the
/// enumeration's values. A code outside the enumeration (a dense cell never written holds
/// the fill value) becomes null.
///
/// # Errors
/// As [`column_to_arrow`]; [`Error::Unsupported`] for codes that are not integers.
pub fn enumerated_to_arrow(column: Column, e: &Enumeration) -> Result<ArrayRef> {
    let values = enumeration_values(e)?;
    use Datatype as D;
    match column.datatype {
        D::Int8 => dictionary::<Int8Type>(column, values),
        D::UInt8 => dictionary::<UInt8Type>(column, values),
        D::Int16 => dictionary::<Int16Type>(column, values),
        D::UInt16 => dictionary::<UInt16Type>(column, values),
        D::Int32 => dictionary::<Int32Type>(column, values),
        D::UInt32 => dictionary::<UInt32Type>(column, values),
        D::Int64 => dictionary::<Int64Type>(column, values),
        D::UInt64 => dictionary::<UInt64Type>(column, values),
        d => Err(Error::Unsupported(format!("enumeration codes of type {d}"))),
    }
}

/// A read result as a record batch of `schema` (whose fields name the result's columns, in
/// order; enumerated attributes are dictionaries when their field says so).
///
/// # Errors
/// As [`column_to_arrow`]; [`Error::Arrow`] when the columns do not fit `schema`.
pub fn result_to_batch(
    result: ReadResult,
    schema: &SchemaRef,
    enumerations: &[Option<Enumeration>],
) -> Result<RecordBatch> {
    let rows = result.cell_num();
    let mut arrays = Vec::with_capacity(result.columns.len());
    for (i, column) in result.columns.into_iter().enumerate() {
        let dict =
            matches!(schema.fields().get(i).map(|f| f.data_type()), Some(DataType::Dictionary(..)));
        let array = match enumerations.get(i).and_then(Option::as_ref) {
            Some(e) if dict => enumerated_to_arrow(column, e)?,
            _ => column_to_arrow(column)?,
        };
        arrays.push(array);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(schema.clone(), arrays, &options)?)
}

/// The record batches of a read, one per batch of the engine (each about the memory budget
/// set on the read); built by [`read_batches`].
#[derive(Debug)]
pub struct ArrowBatches<'a> {
    schema: SchemaRef,
    enumerations: Vec<Option<Enumeration>>,
    inner: Batches<'a>,
}

impl ArrowBatches<'_> {
    /// The schema every batch has.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Iterator for ArrowBatches<'_> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let result = match self.inner.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e.into())),
            };
            if result.cell_num() == 0 {
                continue;
            }
            return Some(result_to_batch(result, &self.schema, &self.enumerations));
        }
    }
}

/// The enumeration of each field of `projection` (None for dimensions and plain attributes).
pub(crate) fn enumerations_for(array: &Array, projection: &Projection) -> Vec<Option<Enumeration>> {
    projection
        .names(array.schema())
        .iter()
        .map(|n| enumeration_of(array.schema(), array.enumerations(), n).cloned())
        .collect()
}

/// Starts a read of `array` returning the fields of `projection` as Arrow record batches:
/// `configure` sets the rest of the read (ranges, condition, layout, memory budget); the
/// batches stream one engine batch at a time, each about the memory budget.
///
/// # Errors
/// As [`arrow_schema()`] and [`ReadQuery::batches`]; errors while reading come as items.
pub fn read_batches<'a>(
    array: &'a Array,
    projection: &Projection,
    configure: impl FnOnce(ReadQuery<'a>) -> ReadQuery<'a>,
) -> Result<ArrowBatches<'a>> {
    let schema = arrow_schema(array, projection)?;
    let mut q = array.read();
    q = match &projection.dimensions {
        Some(d) if d.is_empty() => q.with_coordinates(false),
        Some(d) => q.dimensions(d.iter().map(String::as_str)),
        None => q,
    };
    if let Some(a) = &projection.attributes {
        q = q.attributes(a.iter().map(String::as_str));
    }
    let q = configure(q);
    Ok(ArrowBatches {
        schema,
        enumerations: enumerations_for(array, projection),
        inner: q.batches()?,
    })
}

/// Reads the fields of `projection` as one record batch (`configure` as in
/// [`read_batches`], without a memory budget).
///
/// # Errors
/// As [`read_batches`].
pub fn read_all<'a>(
    array: &'a Array,
    projection: &Projection,
    configure: impl FnOnce(ReadQuery<'a>) -> ReadQuery<'a>,
) -> Result<RecordBatch> {
    let schema = arrow_schema(array, projection)?;
    let mut q = array.read();
    q = match &projection.dimensions {
        Some(d) if d.is_empty() => q.with_coordinates(false),
        Some(d) => q.dimensions(d.iter().map(String::as_str)),
        None => q,
    };
    if let Some(a) = &projection.attributes {
        q = q.attributes(a.iter().map(String::as_str));
    }
    let result = configure(q).execute()?;
    result_to_batch(result, &schema, &enumerations_for(array, projection))
}
