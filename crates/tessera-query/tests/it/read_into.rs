//! `ReadQuery::read_into`: dense reads into the caller's buffer equal the attribute's column
//! of `execute`, for every fixed-size datatype, both layouts, fill values, conditions and
//! multi-range subarrays; wrong buffers and reads are errors naming what is wrong.

use std::sync::Arc;

use tessera_query::{Array, Column, Error};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::MemoryStorage;
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, Layout, ReadLayout};

/// A 6 x 5 dense array (tiles 4 x 2) with attribute `a` of `dt` (`cvn` values per cell),
/// rows 2..=5 x cols 2..=4 written with distinct bytes, or `None` when `dt` cannot be a
/// fixed-size attribute.
fn array_of(dt: Datatype, cvn: u32) -> Option<(Arc<MemoryStorage>, Array)> {
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 6).tile_i64(4))
        .dimension(Dimension::new("c", Datatype::Int32).domain_i64(1, 5).tile_i64(2))
        .attribute(Attribute::new("a", dt).cell_val_num(cvn))
        .build()
        .ok()?;
    Array::create(storage.clone(), &schema, &[]).ok()?;
    let array = Array::open(storage.clone()).unwrap();
    let size = dt.size() * cvn as usize;
    let mut col = Column::new("a", dt, cvn, false);
    // Bytes that are valid values of every type (no NaN patterns for floats, ASCII for chars).
    col.data = (0..12 * size).map(|i| (i % 50 + 20) as u8).collect();
    array
        .write()
        .range_i64("r", 2, 5)
        .range_i64("c", 2, 4)
        .column(col)
        .timestamp(1)
        .submit()
        .unwrap()
        .unwrap();
    Some((storage.clone(), Array::open(storage).unwrap()))
}

#[test]
fn every_fixed_datatype_round_trips_into_a_buffer() {
    let mut tested = 0;
    for &dt in Datatype::ALL {
        if dt.size() == 0 {
            continue;
        }
        for cvn in [1u32, 2] {
            let Some((_, array)) = array_of(dt, cvn) else { continue };
            for layout in [ReadLayout::RowMajor, ReadLayout::ColMajor] {
                let read = || array.read().range_i64("r", 1, 6).range_i64("c", 2, 5).layout(layout);
                let want = read().attributes(["a"]).execute().unwrap();
                let want = &want.column("a").unwrap().data;
                let mut buf = vec![0xEEu8; want.len()];
                let cells = read().read_into("a", &mut buf).unwrap();
                assert_eq!(cells, 24, "{dt:?} x{cvn} {layout:?}");
                assert_eq!(&buf, want, "{dt:?} x{cvn} {layout:?}");
            }
            tested += 1;
        }
    }
    assert!(tested >= 40, "{tested} datatypes");
}

#[test]
fn conditions_multi_ranges_and_typed_slices() {
    let (_, array) = array_of(Datatype::Int32, 1).unwrap();
    let read = || {
        array
            .read()
            .range_i64("r", 1, 2)
            .range_i64("r", 4, 6)
            .range_i64("c", 1, 5)
            .where_text("a >= 370000000")
    };
    let want = read().attributes(["a"]).execute().unwrap();
    let want: Vec<i32> = want.values::<i32>("a").unwrap().into_owned();
    let mut got = vec![0i32; want.len()];
    assert_eq!(read().read_into_values("a", &mut got).unwrap(), 25);
    assert_eq!(got, want);
    assert!(got.contains(&i32::MIN), "fill values");
}

#[test]
fn wrong_buffers_and_reads_are_errors() {
    let (_, array) = array_of(Datatype::Int32, 1).unwrap();
    let read = || array.read().range_i64("r", 1, 6).range_i64("c", 1, 5);
    // Wrong length: one cell short, one byte long.
    for len in [29 * 4, 30 * 4 + 1] {
        let err = read().read_into("a", &mut vec![0u8; len]).unwrap_err();
        assert!(matches!(&err, Error::InvalidQuery(m) if m.contains("buffer holds")), "{err}");
    }
    // Wrong type.
    let err = read().read_into_values("a", &mut [0f32; 30]).unwrap_err();
    assert!(matches!(err, Error::TypeMismatch { .. }), "{err}");
    let err = read().read_into_values("a", &mut [0i64; 15]).unwrap_err();
    assert!(matches!(err, Error::TypeMismatch { .. }), "{err}");
    // Unknown attribute, global order.
    assert!(matches!(read().read_into("b", &mut [0u8; 120]), Err(Error::UnknownField(_))));
    let err = read().layout(ReadLayout::GlobalOrder).read_into("a", &mut [0u8; 120]).unwrap_err();
    assert!(matches!(&err, Error::InvalidQuery(m) if m.contains("layout")), "{err}");

    // Var-sized and nullable attributes, sparse arrays.
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 4).tile_i64(2))
        .attribute(Attribute::new("s", Datatype::StringUtf8).cell_val_num(CELL_VAL_NUM_VAR))
        .attribute(Attribute::new("n", Datatype::Int32).nullable(true))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage).unwrap();
    for (name, why) in [("s", "var-sized"), ("n", "nullable")] {
        let err = array.read().range_i64("r", 1, 4).read_into(name, &mut [0u8; 16]).unwrap_err();
        assert!(matches!(&err, Error::InvalidQuery(m) if m.contains(why)), "{err}");
    }
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 4).tile_i64(2))
        .attribute(Attribute::new("a", Datatype::Int32))
        .cell_order(Layout::RowMajor)
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage).unwrap();
    let err = array.read().read_into("a", &mut []).unwrap_err();
    assert!(matches!(&err, Error::InvalidQuery(m) if m.contains("sparse")), "{err}");
}
