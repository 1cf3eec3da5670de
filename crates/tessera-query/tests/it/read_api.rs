//! The read API: field selection, layouts, empty arrays, and errors (bad names, ranges,
//! layouts, corrupt tiles).

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use tessera_query::{Array, Error};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, MemoryStorage};
use tessera_types::{ArrayType, Datatype, Layout, ReadLayout};

fn dense_overwrites() -> Array {
    open("fragments/dense_overwrites", None)
}

#[test]
fn unknown_names_are_errors() {
    let a = dense_overwrites();
    let e = a.read().attributes(["nope"]).execute().unwrap_err();
    assert!(matches!(&e, Error::UnknownField(n) if n == "nope"), "{e}");
    let e = a.read().range_i64("z", 1, 2).execute().unwrap_err();
    assert!(matches!(&e, Error::UnknownField(n) if n == "z"), "{e}");
    let e = a.read().dimensions(["q"]).execute().unwrap_err();
    assert!(matches!(&e, Error::UnknownField(n) if n == "q"), "{e}");
    let e = a.read().attributes(["r"]).execute().unwrap_err();
    assert!(matches!(e, Error::InvalidQuery(_)), "{e}");
}

#[test]
fn bad_ranges_are_errors() {
    let a = dense_overwrites();
    let bad = |q: tessera_query::ReadQuery<'_>, what: &str| {
        let e = q.execute().unwrap_err();
        assert!(matches!(e, Error::InvalidRange { .. }), "{what}: {e}");
        e.to_string()
    };
    let msg = bad(a.read().range_i64("r", 5, 4), "reversed");
    assert!(msg.contains("greater"), "{msg}");
    let msg = bad(a.read().range_i64("r", 0, 4), "below the domain");
    assert!(msg.contains("outside the domain [1, 30]"), "{msg}");
    bad(a.read().range_i64("c", 30, 40), "above the domain");
    bad(a.read().range_i64("c", 1, 1 << 40), "does not fit int32");
    bad(a.read().range_f64("r", 1.0, 2.0), "float bounds on an int dimension");
    bad(a.read().range_str("r", "a", "b"), "string bounds on an int dimension");
    bad(a.read().range_typed::<i64>("r", 1, 2), "i64 bounds on an int32 dimension");
    bad(a.read().range("r", 1.5..=2.0), "float range on an int dimension");
    bad(a.read().range("r", "a"..="b"), "string range on an int dimension");
    bad(a.read().range("c", 0u64..=(1 << 40)), "range does not fit int32");
    bad(a.read().range_bytes("r", vec![1u8], vec![2u8]), "wrong byte length");
    // The typed API with the right type works.
    let r = a.read().range_typed::<i32>("r", 1, 2).range_typed::<i32>("c", 0, 0).execute().unwrap();
    assert_eq!(r.cell_num(), 2);
    // Ranges: any integer type fits an int32 dimension when the values do.
    let typed = a.read().range("r", 1i64..=2).range("c", 0u8..=0).execute().unwrap();
    assert_eq!(typed.cell_num(), 2);

    let s = open("fragments/sparse_string_float_dims", None);
    bad(s.read().range_i64("k", 1, 2), "numbers on a string dimension");
    bad(s.read().range_str("k", "z", "a"), "reversed strings");
    bad(s.read().range_f64("x", f64::NAN, 1.0), "NaN");
    bad(s.read().range_f64("x", -11.0, 1.0), "below a float domain");
    let r = s.read().range_typed::<f64>("x", -1.0, 1.0).range_str("k", "a", "z").execute().unwrap();
    assert!(r.cell_num() > 0);
    let typed = s.read().range("x", -1.0..=1.0).range("k", "a"..="z").execute().unwrap();
    assert_eq!(typed.cell_num(), r.cell_num());
    bad(s.read().range("k", "z"..="a"), "reversed string range");
    bad(s.read().range("x", f64::NAN..=1.0), "NaN range");
}

#[test]
fn layouts_that_cannot_run_are_errors() {
    let a = dense_overwrites();
    let e = a
        .read()
        .range_i64("r", 1, 2)
        .range_i64("r", 5, 6)
        .layout(ReadLayout::GlobalOrder)
        .execute()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidQuery(_)), "{e}");
    // Hilbert is a cell order, not a read layout: a read cannot even ask for it.
    assert!(tessera_types::ReadLayout::try_from(Layout::Hilbert).is_err());
}

#[test]
fn fields_can_be_chosen() {
    let a = dense_overwrites();
    let r = a.read().range_i64("r", 3, 4).range_i64("c", 5, 6).attributes(["b"]).execute().unwrap();
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["r", "c", "b"]);
    let r = a
        .read()
        .range_i64("r", 3, 4)
        .range_i64("c", 5, 6)
        .dimensions(["c"])
        .attributes(["b", "a", "b"])
        .execute()
        .unwrap();
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["c", "b", "a", "b"]);
    assert_eq!(r.cell_num(), 4);
    let full = a.read().range_i64("r", 3, 4).range_i64("c", 5, 6).execute().unwrap();
    assert_eq!(r.column("a"), full.column("a"));
    let r = a.read().with_coordinates(false).attributes(Vec::<String>::new()).execute().unwrap();
    assert!(r.columns.is_empty());
    let r = a.read().with_coordinates(false).execute().unwrap();
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(r.cell_num(), 1200);
}

#[test]
fn dense_unordered_is_some_order_of_the_same_cells() {
    let a = dense_overwrites();
    let q = || a.read().range_i64("r", 3, 20).range_i64("c", 5, 36);
    let row = rows(&q().execute().unwrap());
    let any = rows(&q().layout(ReadLayout::Unordered).execute().unwrap());
    let global = rows(&q().layout(ReadLayout::GlobalOrder).execute().unwrap());
    assert_eq!(any, global);
    assert_rows_eq_unordered(&any, &row, "unordered");
    // Multi-range unordered: row-major.
    let q = || a.read().range_i64("r", 3, 4).range_i64("r", 1, 1).range_i64("c", 5, 6);
    assert_eq!(
        rows(&q().execute().unwrap()),
        rows(&q().layout(ReadLayout::Unordered).execute().unwrap())
    );
}

#[test]
fn arrays_without_fragments() {
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(-5, 100).tile_i64(7))
        .dimension(Dimension::new("y", Datatype::Int64).domain_i64(0, 3).tile_i64(2))
        .attribute(Attribute::new("a", Datatype::Float32))
        .attribute(Attribute::new("s", Datatype::StringUtf8).var().nullable(true))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage).unwrap();
    let r = array.read().execute().unwrap();
    assert_eq!(r.cell_num(), 0);
    assert_eq!(r.columns.len(), 4);
    assert_eq!(array.read().batches().unwrap().count(), 0);
    // With a range: fill values (the other dimension takes the whole domain).
    let r = array.read().range_i64("x", -5, -4).execute().unwrap();
    assert_eq!(r.cell_num(), 8);
    let got = rows(&r);
    assert_eq!(got[1], serde_json::json!({"x": -5, "y": 1, "a": "NaN", "s": null}));
    assert_eq!(got[7], serde_json::json!({"x": -4, "y": 3, "a": "NaN", "s": null}));
    assert_eq!(r.column("s").unwrap().cell(3), Some(&[0u8][..]));

    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("k", Datatype::StringAscii))
        .attribute(Attribute::new("a", Datatype::Int32))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage).unwrap();
    assert_eq!(array.read().execute().unwrap().cell_num(), 0);
    assert_eq!(array.read().range_str("k", "a", "b").execute().unwrap().cell_num(), 0);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn corrupt_tiles_name_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("zstd");
    copy_dir(&testdata().join("filters/zstd"), &root);
    let frag = std::fs::read_dir(root.join("__fragments")).unwrap().next().unwrap().unwrap().path();
    // Garble the compressed bytes of attribute 3's only tile (past its chunk header).
    let file = frag.join("a3.tdb");
    let mut bytes = std::fs::read(&file).unwrap();
    for b in &mut bytes[40..80] {
        *b ^= 0x5a;
    }
    std::fs::write(&file, &bytes).unwrap();
    let array = Array::open(Arc::new(LocalStorage::new(&root))).unwrap();
    let e = array.read().execute().unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Tile { tile: 0, offset: 0, .. }), "{msg}");
    assert!(msg.contains("a3.tdb") && msg.contains("__fragments/"), "{msg}");
    // Other attributes still read.
    let r = array.read().attributes(["u8", "f64"]).execute().unwrap();
    assert_eq!(r.cell_num(), 300);

    // A truncated file: the tile reaches past its end.
    std::fs::write(&file, &bytes[..100]).unwrap();
    let array = Array::open(Arc::new(LocalStorage::new(&root))).unwrap();
    let msg = array.read().attributes(["i64"]).execute().unwrap_err().to_string();
    assert!(msg.contains("a3.tdb"), "{msg}");
}
