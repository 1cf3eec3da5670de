//! The typed accessors of results (`Column::values`, `iter`, `iter_opt`, `strings`,
//! `strings_opt`, `bytes`, `ReadResult::values`) on every datatype family, read back from an
//! array, and their type-mismatch errors.

use std::borrow::Cow;
use std::sync::Arc;

use tessera_query::{Array, CellValue, Column, Error, ReadResult};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::MemoryStorage;
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, Primitive};

const N: usize = 5;

/// A fixed-size column of `values` with the given datatype.
fn fixed<T: Primitive>(name: &str, dt: Datatype, cvn: u32, values: &[T]) -> Column {
    let mut c = Column::new(name, dt, cvn, false);
    for v in values {
        v.write_le(&mut c.data);
    }
    c
}

/// A var-sized column of `cells`.
fn var(name: &str, dt: Datatype, cells: &[&[u8]]) -> Column {
    let mut c = Column::new(name, dt, CELL_VAL_NUM_VAR, false);
    let offsets = c.offsets.as_mut().unwrap();
    for cell in cells {
        offsets.push(c.data.len() as u64);
        c.data.extend_from_slice(cell);
    }
    c
}

fn nullable(mut c: Column, validity: &[u8]) -> Column {
    c.validity = Some(validity.to_vec());
    c
}

const I8: [i8; N] = [i8::MIN, -1, 0, 1, i8::MAX];
const U8: [u8; N] = [0, 1, 2, 200, u8::MAX];
const I16: [i16; N] = [i16::MIN, -300, 0, 300, i16::MAX];
const U16: [u16; N] = [0, 1, 2, 60_000, u16::MAX];
const I32: [i32; N] = [i32::MIN, -70_000, 0, 70_000, i32::MAX];
const U32: [u32; N] = [0, 1, 2, 4_000_000_000, u32::MAX];
const I64: [i64; N] = [i64::MIN, -1 << 40, 0, 1 << 40, i64::MAX];
const U64: [u64; N] = [0, 1, 2, 1 << 63, u64::MAX];
const F32: [f32; N] = [f32::MIN, -1.5, 0.0, 1.5, f32::INFINITY];
const F64: [f64; N] = [f64::MIN, -0.25, 0.0, 1e300, f64::NEG_INFINITY];
const DATES: [i64; N] = [-86_400_000, 0, 1, 1_700_000_000_000, i64::MAX];
const TIMES: [i64; N] = [0, 1, 2, 3_600_000_000_000, 86_399_999_999_999];
const STRINGS: [&str; N] = ["", "a", "smörgåsbord", "Ωmega", "tab\there"];
const BLOBS: [&[u8]; N] = [b"", &[0, 255], &[1], &[0xc3], &[7, 7, 7]];
const VALIDITY: [u8; N] = [1, 0, 1, 0, 1];

/// A sparse array with one attribute per datatype family, five cells written.
fn array() -> Array {
    let attrs: Vec<Attribute> = vec![
        Attribute::new("i8", Datatype::Int8),
        Attribute::new("u8", Datatype::UInt8),
        Attribute::new("i16", Datatype::Int16),
        Attribute::new("u16", Datatype::UInt16),
        Attribute::new("i32", Datatype::Int32),
        Attribute::new("u32", Datatype::UInt32),
        Attribute::new("i64", Datatype::Int64),
        Attribute::new("u64", Datatype::UInt64),
        Attribute::new("f32", Datatype::Float32),
        Attribute::new("f64", Datatype::Float64),
        Attribute::new("date", Datatype::DatetimeMs),
        Attribute::new("time", Datatype::TimeNs),
        Attribute::new("flag", Datatype::Bool),
        Attribute::new("pair", Datatype::Int16).cell_val_num(2),
        Attribute::new("code", Datatype::Char).cell_val_num(3),
        Attribute::new("utf8", Datatype::StringUtf8).var(),
        Attribute::new("ascii", Datatype::StringAscii).var(),
        Attribute::new("blob", Datatype::Blob).var(),
        Attribute::new("ni32", Datatype::Int32).nullable(true),
        Attribute::new("nf64", Datatype::Float64).nullable(true),
        Attribute::new("nutf8", Datatype::StringUtf8).var().nullable(true),
    ];
    let mut builder = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10));
    for a in attrs {
        builder = builder.attribute(a);
    }
    let schema = builder.build().unwrap();
    let storage = Arc::new(MemoryStorage::new());
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    let bytes: Vec<&[u8]> = STRINGS.iter().map(|s| s.as_bytes()).collect();
    let ascii: Vec<&[u8]> = vec![b"a", b"bb", b"", b"ccc", b"d"];
    let pairs: Vec<i16> = (0..2 * N as i16).map(|v| v * 11 - 50).collect();
    let columns = vec![
        fixed("x", Datatype::Int64, 1, &[0i64, 1, 2, 3, 4]),
        fixed("i8", Datatype::Int8, 1, &I8),
        fixed("u8", Datatype::UInt8, 1, &U8),
        fixed("i16", Datatype::Int16, 1, &I16),
        fixed("u16", Datatype::UInt16, 1, &U16),
        fixed("i32", Datatype::Int32, 1, &I32),
        fixed("u32", Datatype::UInt32, 1, &U32),
        fixed("i64", Datatype::Int64, 1, &I64),
        fixed("u64", Datatype::UInt64, 1, &U64),
        fixed("f32", Datatype::Float32, 1, &F32),
        fixed("f64", Datatype::Float64, 1, &F64),
        fixed("date", Datatype::DatetimeMs, 1, &DATES),
        fixed("time", Datatype::TimeNs, 1, &TIMES),
        fixed("flag", Datatype::Bool, 1, &[1u8, 0, 1, 1, 0]),
        fixed("pair", Datatype::Int16, 2, &pairs),
        Column {
            data: b"abcdefghijklmno".to_vec(),
            ..Column::new("code", Datatype::Char, 3, false)
        },
        var("utf8", Datatype::StringUtf8, &bytes),
        var("ascii", Datatype::StringAscii, &ascii),
        var("blob", Datatype::Blob, &BLOBS),
        nullable(fixed("ni32", Datatype::Int32, 1, &I32), &VALIDITY),
        nullable(fixed("nf64", Datatype::Float64, 1, &F64), &VALIDITY),
        nullable(var("nutf8", Datatype::StringUtf8, &bytes), &VALIDITY),
    ];
    let mut q = array.write();
    for c in columns {
        q = q.column(c);
    }
    q.submit().unwrap();
    Array::open(storage).unwrap()
}

fn read() -> ReadResult {
    let result = array().read().execute().unwrap();
    assert_eq!(result.cell_num(), N);
    result
}

/// `values`, `iter` and `ReadResult::values` agree with `expected`.
fn check<T: CellValue>(result: &ReadResult, name: &str, expected: &[T]) {
    let col = result.column(name).unwrap();
    assert_eq!(&col.values::<T>().unwrap()[..], expected, "{name}");
    assert_eq!(col.iter::<T>().unwrap().collect::<Vec<_>>(), expected, "{name}");
    assert_eq!(col.iter::<T>().unwrap().len(), expected.len(), "{name}");
    assert_eq!(&result.values::<T>(name).unwrap()[..], expected, "{name}");
    if col.cell_val_num == 1 {
        let opt: Vec<Option<T>> = col.iter_opt::<T>().unwrap().collect();
        assert_eq!(opt, expected.iter().map(|&v| Some(v)).collect::<Vec<_>>(), "{name}");
    }
}

#[test]
fn integers_of_every_width() {
    let r = read();
    check(&r, "x", &[0i64, 1, 2, 3, 4]);
    check(&r, "i8", &I8);
    check(&r, "u8", &U8);
    check(&r, "i16", &I16);
    check(&r, "u16", &U16);
    check(&r, "i32", &I32);
    check(&r, "u32", &U32);
    check(&r, "i64", &I64);
    check(&r, "u64", &U64);
    check(&r, "flag", &[1u8, 0, 1, 1, 0]);
    // Several values per cell: every value, cell after cell.
    let pairs: Vec<i16> = (0..2 * N as i16).map(|v| v * 11 - 50).collect();
    check(&r, "pair", &pairs);
}

#[test]
fn floats() {
    let r = read();
    check(&r, "f32", &F32);
    check(&r, "f64", &F64);
    let nan = Column {
        data: f64::NAN.to_le_bytes().to_vec(),
        ..Column::new("n", Datatype::Float64, 1, false)
    };
    assert!(nan.values::<f64>().unwrap()[0].is_nan());
}

#[test]
fn datetimes_and_times_read_as_i64() {
    let r = read();
    check(&r, "date", &DATES);
    check(&r, "time", &TIMES);
}

#[test]
fn aligned_values_are_borrowed() {
    let r = read();
    // The result's buffers come from the allocator, aligned for every number type.
    assert!(matches!(r.values::<i64>("i64").unwrap(), Cow::Borrowed(_)));
    assert!(matches!(r.values::<f64>("f64").unwrap(), Cow::Borrowed(_)));
}

#[test]
fn strings_and_bytes() {
    let r = read();
    let utf8 = r.column("utf8").unwrap();
    assert_eq!(utf8.strings().unwrap().collect::<Vec<_>>(), STRINGS);
    assert_eq!(utf8.strings().unwrap().len(), N);
    let ascii = r.column("ascii").unwrap();
    assert_eq!(ascii.strings().unwrap().collect::<Vec<_>>(), ["a", "bb", "", "ccc", "d"]);
    // Fixed-size text cells read as strings too.
    let code = r.column("code").unwrap();
    assert_eq!(code.strings().unwrap().collect::<Vec<_>>(), ["abc", "def", "ghi", "jkl", "mno"]);
    assert_eq!(&code.values::<u8>().unwrap()[..3], b"abc");
    let blob = r.column("blob").unwrap();
    assert_eq!(blob.bytes().collect::<Vec<_>>(), BLOBS);
    assert_eq!(utf8.bytes().map(<[u8]>::len).collect::<Vec<_>>(), STRINGS.map(str::len));
    // bytes() of a fixed-size column: each cell's bytes.
    let i16s = r.column("i16").unwrap();
    assert_eq!(i16s.bytes().next().unwrap(), i16::MIN.to_le_bytes());
}

#[test]
fn nullable_columns() {
    let r = read();
    let valid = |i: usize| VALIDITY[i] == 1;
    let ni32: Vec<Option<i32>> = r.column("ni32").unwrap().iter_opt::<i32>().unwrap().collect();
    assert_eq!(ni32, (0..N).map(|i| valid(i).then_some(I32[i])).collect::<Vec<_>>());
    let nf64: Vec<Option<f64>> = r.column("nf64").unwrap().iter_opt::<f64>().unwrap().collect();
    assert_eq!(nf64, (0..N).map(|i| valid(i).then_some(F64[i])).collect::<Vec<_>>());
    let s: Vec<Option<&str>> = r.column("nutf8").unwrap().strings_opt().unwrap().collect();
    assert_eq!(s, (0..N).map(|i| valid(i).then_some(STRINGS[i])).collect::<Vec<_>>());
    // values() and iter() give every cell's stored value, nulls included.
    assert_eq!(r.values::<i32>("ni32").unwrap().len(), N);
}

/// The message of a type mismatch, checked to be one.
fn mismatch<T>(r: tessera_query::Result<T>) -> String {
    match r {
        Err(e @ Error::TypeMismatch { .. }) => e.to_string(),
        Err(e) => panic!("expected a type mismatch, got {e}"),
        Ok(_) => panic!("expected a type mismatch, got values"),
    }
}

#[test]
fn type_mismatches_name_the_column_its_type_and_the_type_asked() {
    let r = read();
    let col = |n: &str| r.column(n).unwrap();
    assert_eq!(
        mismatch(col("f64").values::<i64>()),
        "column \"f64\" of type float64 cannot be read as i64: its values read as f64"
    );
    assert_eq!(
        mismatch(col("i32").values::<u32>()),
        "column \"i32\" of type int32 cannot be read as u32: its values read as i32"
    );
    assert_eq!(
        mismatch(col("i32").iter::<i64>()),
        "column \"i32\" of type int32 cannot be read as i64: its values read as i32"
    );
    assert_eq!(
        mismatch(col("date").values::<u64>()),
        "column \"date\" of type datetime_ms cannot be read as u64: its values read as i64"
    );
    assert_eq!(
        mismatch(col("utf8").values::<u8>()),
        "column \"utf8\" of type string_utf8 cannot be read as u8: its cells are var-sized (use \
         strings() or bytes())"
    );
    assert_eq!(
        mismatch(col("blob").iter::<u8>()),
        "column \"blob\" of type blob cannot be read as u8: its cells are var-sized (use bytes())"
    );
    assert_eq!(
        mismatch(col("pair").iter_opt::<i16>()),
        "column \"pair\" of type int16 cannot be read as i16: its cells hold 2 values each (use \
         values() or iter())"
    );
    assert_eq!(
        mismatch(col("i64").strings()),
        "column \"i64\" of type int64 cannot be read as strings: it holds no one-byte text (use \
         values() or bytes())"
    );
    assert_eq!(
        mismatch(col("blob").strings()),
        "column \"blob\" of type blob cannot be read as strings: it holds no one-byte text (use \
         bytes())"
    );
    assert_eq!(
        mismatch(col("f32").values::<f64>()),
        "column \"f32\" of type float32 cannot be read as f64: its values read as f32"
    );
    // Bytes that are not UTF-8: the cell is named.
    let bad = var("s", Datatype::StringUtf8, &[b"ok", b"fine", &[b'a', 0xff], b"z"]);
    assert_eq!(
        mismatch(bad.strings()),
        "column \"s\" of type string_utf8 cannot be read as strings: cell 2 is not UTF-8"
    );
    // A multi-byte character split between two cells.
    let split = var("s", Datatype::StringUtf8, &[&[0xc3], &[0xa9]]);
    assert_eq!(
        mismatch(split.strings()),
        "column \"s\" of type string_utf8 cannot be read as strings: cell 0 is not UTF-8"
    );
    // An unknown column.
    assert!(matches!(r.values::<i32>("nope"), Err(Error::UnknownField(n)) if n == "nope"));
}
