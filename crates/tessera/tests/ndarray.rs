//! The `ndarray` feature: for every datatype with fixed-size cells that reads as a Rust number
//! type, a 3-D dense array written from an `ArrayView` (standard and transposed strides) reads
//! back equal in row-major and col-major memory order.

use std::ops::RangeInclusive;

use ndarray::{Array3, ArrayD, ShapeBuilder};
use tessera::nd::{NdArray, NdWrite};
use tessera::{
    ArraySchema, ArrayType, Attribute, CellValue, Datatype, Dimension, ErrorKind, ReadLayout,
};

const BOX: [RangeInclusive<i64>; 3] = [2..=4, 0..=3, 5..=6];

/// The rust type every datatype reads as (see `tessera::CellValue`).
fn round_trip<T: CellValue>(dt: Datatype, make: impl Fn(usize) -> T) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a");
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("z", Datatype::Int64).domain_i64(0, 9).tile_i64(3))
        .dimension(Dimension::new("y", Datatype::Int64).domain_i64(0, 9).tile_i64(4))
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 9).tile_i64(5))
        .attribute(Attribute::new("v", dt).cell_val_num(1))
        .attribute(Attribute::new("w", dt).cell_val_num(1))
        .build()
        .unwrap();
    tessera::create(&path, &schema).unwrap();
    let shape = (3, 4, 2);
    let n = shape.0 * shape.1 * shape.2;
    let v = Array3::from_shape_vec(shape, (0..n).map(&make).collect()).unwrap();
    // The same values in Fortran order: a view whose strides are not standard.
    let w = Array3::from_shape_vec(shape.f(), (0..n).rev().map(&make).collect()).unwrap();
    assert!(!w.is_standard_layout());
    let array = tessera::open(&path).unwrap();
    let mut write = array.write();
    for (dim, r) in ["z", "y", "x"].into_iter().zip(BOX) {
        write = write.range_i64(dim, *r.start(), *r.end());
    }
    write.ndarray("v", v.view()).ndarray("w", w.view()).submit().unwrap();

    let array = tessera::open(&path).unwrap();
    for layout in [ReadLayout::RowMajor, ReadLayout::ColMajor] {
        let got: ArrayD<T> = array.read_ndarray("v", &BOX, layout).unwrap();
        assert_eq!(got, v.clone().into_dyn(), "{dt} {layout}");
        let got_w: ArrayD<T> = array.read_ndarray("w", &BOX, layout).unwrap();
        assert_eq!(got_w, w.clone().into_dyn(), "{dt} {layout}");
        match layout {
            ReadLayout::RowMajor => assert!(got.is_standard_layout(), "{dt}"),
            _ => assert!(got.t().is_standard_layout(), "{dt}"),
        }
    }
    // A cell outside what was written holds the fill value.
    let fill: ArrayD<T> =
        array.read_ndarray("v", &[0..=0, 0..=0, 0..=0], ReadLayout::RowMajor).unwrap();
    let mut got = Vec::new();
    fill.iter().for_each(|v| v.write_le(&mut got));
    assert_eq!(got, Attribute::new("v", dt).default_fill_value(), "{dt}");
}

#[test]
fn every_datatype_round_trips() {
    let mut tested = Vec::new();
    for &dt in Datatype::ALL {
        use Datatype as D;
        match dt {
            D::Int8 | D::Char => round_trip::<i8>(dt, |i| i as i8 - 12),
            D::UInt8 | D::Bool | D::Blob | D::StringAscii | D::StringUtf8 | D::Any => {
                if matches!(dt, D::Any) {
                    continue; // `any` cells are always var-sized
                }
                round_trip::<u8>(dt, |i| if dt == D::Bool { (i % 2) as u8 } else { i as u8 + 7 });
            }
            D::Int16 => round_trip::<i16>(dt, |i| i as i16 * -300),
            D::UInt16 | D::StringUtf16 | D::StringUcs2 => round_trip::<u16>(dt, |i| i as u16 * 999),
            D::Int32 => round_trip::<i32>(dt, |i| i as i32 * -70_000),
            D::UInt32 | D::StringUtf32 | D::StringUcs4 => {
                round_trip::<u32>(dt, |i| i as u32 * 3_000_000);
            }
            D::Int64 => round_trip::<i64>(dt, |i| i as i64 * -(1 << 40)),
            D::UInt64 => round_trip::<u64>(dt, |i| i as u64 * (1 << 50)),
            D::Float32 => round_trip::<f32>(dt, |i| i as f32 * 0.25 - 1.0),
            D::Float64 => round_trip::<f64>(dt, |i| i as f64 * -1e-3),
            d if d.name().starts_with("datetime") || d.name().starts_with("time") => {
                round_trip::<i64>(dt, |i| i as i64 * 1_000_003 - 5);
            }
            _ => continue, // geometries: blobs of var-sized cells only
        }
        tested.push(dt);
    }
    assert!(tested.len() >= 38, "{tested:?}");
}

#[test]
fn refusals() {
    let dir = tempfile::tempdir().unwrap();
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 9).tile_i64(5))
        .attribute(Attribute::new("a", Datatype::Float64))
        .build()
        .unwrap();
    tessera::create(dir.path().join("a"), &schema).unwrap();
    let array = tessera::open(dir.path().join("a")).unwrap();
    let e = array.read_ndarray::<f64>("a", &[0..=1, 0..=1], ReadLayout::RowMajor).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = array.read_ndarray::<f64>("a", &[0..=1], ReadLayout::Unordered).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = array.read_ndarray::<i32>("a", &[0..=1], ReadLayout::RowMajor).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{e}");
}
