//! Type-mapping round trips: arrays written by Tessera, read as Arrow, written back from
//! Arrow into a second array, read back equal; for every TileDB datatype, fixed, multi-value
//! and var-sized cells, nullable attributes, enumerations, dense and sparse arrays, and
//! budgeted streaming.

use std::path::Path;

use arrow_array::{Array as _, ArrayRef, Int32Array, LargeStringArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use std::sync::Arc;
use tessera::layers::types::CELL_VAL_NUM_VAR;
use tessera::{
    ArraySchema, ArrayType, Attribute, Column, Datatype, Dimension, Enumeration, EnumerationRef,
    ReadResult,
};
use tessera_arrow::{
    Error, Projection, WriteOptions, arrow_type, read_all, read_batches, write_batch,
};

const CELLS: usize = 7;

/// Deterministic values for `cells` cells of `dt` with `cvn` values each (var: 0..=3 values).
fn values(dt: Datatype, cvn: u32, cells: usize, seed: u64) -> (Vec<u8>, Option<Vec<u64>>) {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut one = |out: &mut Vec<u8>| {
        let r = next();
        match dt {
            Datatype::Bool => out.push((r & 1) as u8),
            Datatype::Float32 => out.extend((r as f32 / 7.0).to_le_bytes()),
            Datatype::Float64 => out.extend((r as f64 / 7.0).to_le_bytes()),
            Datatype::DatetimeDay => out.extend(((r % 40000) as i64 - 20000).to_le_bytes()),
            d if d.is_datetime() || d.is_time() => out.extend((r as i64 - (1 << 30)).to_le_bytes()),
            Datatype::StringAscii | Datatype::StringUtf8 | Datatype::Char | Datatype::GeomWkt => {
                out.push(b'a' + (r % 26) as u8)
            }
            d => out.extend(&r.to_le_bytes()[..d.size()]),
        }
    };
    let mut data = Vec::new();
    if cvn == CELL_VAL_NUM_VAR {
        let mut offsets = Vec::new();
        for i in 0..cells {
            offsets.push(data.len() as u64);
            let n = (i * 7 + seed as usize) % 4;
            for _ in 0..n {
                one(&mut data);
            }
        }
        (data, Some(offsets))
    } else {
        for _ in 0..cells * cvn as usize {
            one(&mut data);
        }
        (data, None)
    }
}

fn sparse_schema(attrs: Vec<Attribute>) -> tessera::Result<ArraySchema> {
    let mut b = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
        .capacity(3);
    for a in attrs {
        b = b.attribute(a);
    }
    b.build().map_err(|e| tessera::Error::InvalidQuery(e.to_string()))
}

fn direct(path: &Path) -> ReadResult {
    tessera::open(path).unwrap().read().execute().unwrap()
}

/// Writes `attrs` with generated values into a sparse array, reads it as Arrow, checks the
/// Arrow types, writes the batch into a second array and compares both direct reads.
fn round_trip(dir: &Path, label: &str, attrs: Vec<Attribute>) -> RecordBatch {
    let schema = sparse_schema(attrs.clone()).unwrap();
    let a = dir.join(format!("{label}_a"));
    let b = dir.join(format!("{label}_b"));
    tessera::create(&a, &schema).unwrap();
    tessera::create(&b, &schema).unwrap();
    let array = tessera::open(&a).unwrap();
    let xs: Vec<i64> = (0..CELLS as i64).map(|i| i * 3).collect();
    let mut q = array.write().values("x", &xs).timestamp(5);
    for (k, attr) in attrs.iter().enumerate() {
        let (data, offsets) = values(attr.datatype, attr.cell_val_num, CELLS, k as u64 + 1);
        let validity = attr.nullable.then(|| (0..CELLS).map(|i| u8::from(i % 3 != 1)).collect());
        q = q.column(Column {
            name: attr.name.clone(),
            datatype: attr.datatype,
            cell_val_num: attr.cell_val_num,
            data,
            offsets,
            validity,
        });
    }
    q.submit().unwrap_or_else(|e| panic!("{label}: {e}"));

    let array = tessera::open(&a).unwrap();
    let batch =
        read_all(&array, &Projection::all(), |q| q).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(batch.num_rows(), CELLS, "{label}");
    for attr in &attrs {
        if attr.enumeration.is_none() {
            let got = batch.schema().field_with_name(&attr.name).unwrap().data_type().clone();
            assert_eq!(got, arrow_type(attr.datatype, attr.cell_val_num).unwrap(), "{label}");
        }
    }
    let target = tessera::open(&b).unwrap();
    write_batch(&target, &batch, &WriteOptions { timestamp: Some(5), ..Default::default() })
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(direct(&a), direct(&b), "{label}");
    batch
}

#[test]
fn every_datatype_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let mut covered = 0;
    let mut refused = Vec::new();
    for &dt in Datatype::ALL {
        for (shape, cvn) in [("one", 1), ("three", 3), ("var", CELL_VAL_NUM_VAR)] {
            for nullable in [false, true] {
                let attr = Attribute::new("v", dt).cell_val_num(cvn).nullable(nullable);
                if let Err(e) = sparse_schema(vec![attr.clone()]) {
                    refused.push(format!("{}_{shape}_{nullable}: {e}", dt.name()));
                    continue; // a combination TileDB refuses (the schema says so)
                }
                let label = format!("{}_{shape}_{nullable}", dt.name());
                round_trip(dir.path(), &label, vec![attr]);
                covered += 1;
            }
        }
    }
    // Every datatype with at least its one-value form.
    assert!(covered >= 5 * Datatype::ALL.len(), "{covered}: refused {refused:#?}");
}

#[test]
fn mapping_table_examples() {
    assert_eq!(arrow_type(Datatype::Int32, 1).unwrap(), DataType::Int32);
    assert_eq!(
        arrow_type(Datatype::DatetimeMs, 1).unwrap(),
        DataType::Timestamp(TimeUnit::Millisecond, None)
    );
    assert_eq!(arrow_type(Datatype::DatetimeDay, 1).unwrap(), DataType::Date32);
    assert_eq!(arrow_type(Datatype::TimeNs, 1).unwrap(), DataType::Duration(TimeUnit::Nanosecond));
    assert_eq!(arrow_type(Datatype::DatetimeYear, 1).unwrap(), DataType::Int64);
    assert_eq!(arrow_type(Datatype::StringUtf8, CELL_VAL_NUM_VAR).unwrap(), DataType::LargeUtf8);
    assert_eq!(arrow_type(Datatype::Blob, CELL_VAL_NUM_VAR).unwrap(), DataType::LargeBinary);
    assert_eq!(arrow_type(Datatype::Char, 4).unwrap(), DataType::FixedSizeBinary(4));
    assert!(matches!(arrow_type(Datatype::Float32, 3).unwrap(), DataType::FixedSizeList(_, 3)));
    assert!(matches!(
        arrow_type(Datatype::Int16, CELL_VAL_NUM_VAR).unwrap(),
        DataType::LargeList(_)
    ));
    assert!(matches!(arrow_type(Datatype::Int16, 0), Err(Error::Unsupported(_))));
}

#[test]
fn several_attributes_nullable_var_and_lists() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = Attribute::new("f", Datatype::Float32).cell_val_num(3);
    let attrs = vec![
        Attribute::new("i", Datatype::Int32).nullable(true),
        Attribute::new("s", Datatype::StringUtf8).var().nullable(true),
        fixed,
        Attribute::new("l", Datatype::Int16).var(),
        Attribute::new("t", Datatype::DatetimeNs),
    ];
    let batch = round_trip(dir.path(), "mixed", attrs);
    let s = batch.column_by_name("s").unwrap();
    assert_eq!(s.null_count(), 2);
    assert!(matches!(
        batch.column_by_name("f").unwrap().data_type(),
        DataType::FixedSizeList(_, 3)
    ));
}

fn enum_schema(dense: bool) -> (ArraySchema, Vec<Enumeration>) {
    let colors = Enumeration {
        name: "colors".into(),
        path: String::new(),
        datatype: Datatype::StringUtf8,
        cell_val_num: CELL_VAL_NUM_VAR,
        ordered: false,
        data: b"redgreenblue".to_vec(),
        offsets: Some(vec![0, 3, 8]),
    };
    let mut color = Attribute::new("color", Datatype::UInt8).nullable(true);
    color.enumeration = Some("colors".into());
    let mut b = ArraySchema::builder(if dense { ArrayType::Dense } else { ArrayType::Sparse })
        .dimension(Dimension::new("x", Datatype::Int32).domain_i64(1, 100).tile_i64(10));
    b = b.attribute(Attribute::new("a", Datatype::Float64)).attribute(color);
    let schema = b
        .enumeration(EnumerationRef { name: "colors".into(), path: String::new() })
        .build()
        .unwrap();
    (schema, vec![colors])
}

#[test]
fn enumerations_are_dictionaries_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, enums) = enum_schema(false);
    let (a, b) = (dir.path().join("ea"), dir.path().join("eb"));
    tessera::create_with_enumerations(&a, &schema, &enums).unwrap();
    tessera::create_with_enumerations(&b, &schema, &enums).unwrap();
    let array = tessera::open(&a).unwrap();
    array
        .write()
        .values("x", &[1i32, 2, 3, 4])
        .values("a", &[0.5f64, 1.5, 2.5, 3.5])
        .values("color", &[2u8, 0, 1, 2])
        .validity("color", vec![1, 1, 0, 1])
        .timestamp(3)
        .submit()
        .unwrap();
    let array = tessera::open(&a).unwrap();
    let batch = read_all(&array, &Projection::all(), |q| q).unwrap();
    let color = batch.column_by_name("color").unwrap();
    assert_eq!(
        color.data_type(),
        &DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::LargeUtf8))
    );
    assert_eq!(color.null_count(), 1);
    write_batch(
        &tessera::open(&b).unwrap(),
        &batch,
        &WriteOptions { timestamp: Some(3), ..Default::default() },
    )
    .unwrap();
    assert_eq!(direct(&a), direct(&b));

    // Labels as plain strings also write; an unknown label is an error.
    let c = dir.path().join("ec");
    tessera::create_with_enumerations(&c, &schema, &enums).unwrap();
    let target = tessera::open(&c).unwrap();
    let labels = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int32, false),
        Field::new("a", DataType::Float64, false),
        Field::new("color", DataType::Utf8, true),
    ]));
    let good = RecordBatch::try_new(
        labels.clone(),
        vec![
            Arc::new(Int32Array::from(vec![7, 8])) as ArrayRef,
            Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.0])),
            Arc::new(StringArray::from(vec![Some("blue"), None])),
        ],
    )
    .unwrap();
    write_batch(&target, &good, &WriteOptions::default()).unwrap();
    let back = read_all(&tessera::open(&c).unwrap(), &Projection::all(), |q| q).unwrap();
    let codes = tessera::open(&c).unwrap().read().execute().unwrap();
    assert_eq!(codes.column("color").unwrap().data, [2, 0]);
    assert_eq!(back.column_by_name("color").unwrap().null_count(), 1);
    let bad = RecordBatch::try_new(
        labels,
        vec![
            Arc::new(Int32Array::from(vec![9])) as ArrayRef,
            Arc::new(arrow_array::Float64Array::from(vec![1.0])),
            Arc::new(StringArray::from(vec![Some("mauve")])),
        ],
    )
    .unwrap();
    assert!(matches!(
        write_batch(&target, &bad, &WriteOptions::default()),
        Err(Error::UnknownLabel { .. })
    ));
}

#[test]
fn dense_round_trip_with_inferred_subarray() {
    let dir = tempfile::tempdir().unwrap();
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 20).tile_i64(4))
        .dimension(Dimension::new("c", Datatype::Int32).domain_i64(1, 20).tile_i64(5))
        .attribute(Attribute::new("v", Datatype::Int64))
        .attribute(Attribute::new("s", Datatype::StringAscii).var().nullable(true))
        .build()
        .unwrap();
    let (a, b) = (dir.path().join("da"), dir.path().join("db"));
    tessera::create(&a, &schema).unwrap();
    tessera::create(&b, &schema).unwrap();
    let n = 3 * 6;
    let v: Vec<i64> = (0..n).map(|i| i * 11 - 40).collect();
    let s: Vec<String> = (0..n).map(|i| "x".repeat(i as usize % 4)).collect();
    tessera::open(&a)
        .unwrap()
        .write()
        .range_i64("r", 2, 4)
        .range_i64("c", 3, 8)
        .values("v", &v)
        .var_values("s", &s)
        .validity("s", (0..n).map(|i| u8::from(i % 5 != 0)).collect())
        .timestamp(4)
        .submit()
        .unwrap();
    let batch = read_all(&tessera::open(&a).unwrap(), &Projection::all(), |q| q).unwrap();
    assert_eq!(batch.num_rows(), n as usize);
    write_batch(
        &tessera::open(&b).unwrap(),
        &batch,
        &WriteOptions { timestamp: Some(4), ..Default::default() },
    )
    .unwrap();
    assert_eq!(direct(&a), direct(&b));
    // Only attributes, with an explicit subarray.
    let c = dir.path().join("dc");
    tessera::create(&c, &schema).unwrap();
    let attrs = batch.project(&[2, 3]).unwrap();
    let options = WriteOptions {
        timestamp: Some(4),
        subarray: Some(vec![("r".into(), 2, 4), ("c".into(), 3, 8)]),
    };
    write_batch(&tessera::open(&c).unwrap(), &attrs, &options).unwrap();
    assert_eq!(direct(&a), direct(&c));
}

#[test]
fn budgeted_reads_stream_in_several_batches() {
    let dir = tempfile::tempdir().unwrap();
    let schema = sparse_schema(vec![
        Attribute::new("v", Datatype::Float64),
        Attribute::new("s", Datatype::StringUtf8).var(),
    ])
    .unwrap();
    let path = dir.path().join("big");
    tessera::create(&path, &schema).unwrap();
    let xs: Vec<i64> = (0..1000).collect();
    let vs: Vec<f64> = xs.iter().map(|&x| x as f64 * 0.5).collect();
    let ss: Vec<String> = xs.iter().map(|x| format!("cell {x}")).collect();
    tessera::open(&path)
        .unwrap()
        .write()
        .values("x", &xs)
        .values("v", &vs)
        .var_values("s", &ss)
        .submit()
        .unwrap();
    let array = tessera::open(&path).unwrap();
    let batches: Vec<RecordBatch> =
        read_batches(&array, &Projection::all(), |q| q.memory_budget(4096))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    assert!(batches.len() > 5, "{} batches", batches.len());
    assert!(batches.iter().all(|b| b.num_rows() < 1000));
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, 1000);
    // Concatenated, the batches are the whole read.
    let mut strings = Vec::new();
    for b in &batches {
        let s = b.column_by_name("s").unwrap().as_any().downcast_ref::<LargeStringArray>().unwrap();
        strings.extend(s.iter().map(|v| v.unwrap().to_owned()));
    }
    assert_eq!(strings, ss);
    // A projection and a range.
    let projection = Projection { dimensions: Some(vec![]), attributes: Some(vec!["v".into()]) };
    let one = read_all(&array, &projection, |q| q.range_i64("x", 10, 19)).unwrap();
    assert_eq!(one.num_columns(), 1);
    assert_eq!(one.num_rows(), 10);
}

#[test]
fn type_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let schema = sparse_schema(vec![Attribute::new("v", Datatype::Int32)]).unwrap();
    let path = dir.path().join("t");
    tessera::create(&path, &schema).unwrap();
    let array = tessera::open(&path).unwrap();
    let s = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int64, false),
        Field::new("v", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        s,
        vec![
            Arc::new(arrow_array::Int64Array::from(vec![1])) as ArrayRef,
            Arc::new(StringArray::from(vec!["a"])),
        ],
    )
    .unwrap();
    let e = write_batch(&array, &batch, &WriteOptions::default()).unwrap_err();
    assert_eq!(e.to_string(), "field \"v\": expected Arrow type Int32, got Utf8");
    let s = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int64, false),
        Field::new("nope", DataType::Int32, false),
    ]));
    let batch = RecordBatch::try_new(
        s,
        vec![
            Arc::new(arrow_array::Int64Array::from(vec![1])) as ArrayRef,
            Arc::new(Int32Array::from(vec![1])),
        ],
    )
    .unwrap();
    assert!(matches!(
        write_batch(&array, &batch, &WriteOptions::default()),
        Err(Error::UnknownField(_))
    ));
    let s = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int64, false),
        Field::new("v", DataType::Int32, true),
    ]));
    let batch = RecordBatch::try_new(
        s,
        vec![
            Arc::new(arrow_array::Int64Array::from(vec![1])) as ArrayRef,
            Arc::new(Int32Array::from(vec![None])),
        ],
    )
    .unwrap();
    assert!(matches!(write_batch(&array, &batch, &WriteOptions::default()), Err(Error::Null(_))));
}
