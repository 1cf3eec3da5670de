//! Writes read back by Tessera: dense and sparse, every layout, error cases.

use std::sync::Arc;

use tessera_query::{Array, Column, Error};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{MemoryStorage, Storage};
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, Layout, ReadLayout};

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn dense_array() -> Arc<MemoryStorage> {
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 6).tile_i64(4))
        .dimension(Dimension::new("c", Datatype::Int32).domain_i64(1, 5).tile_i64(2))
        .attribute(Attribute::new("a", Datatype::Int32))
        .attribute(
            Attribute::new("s", Datatype::StringUtf8).cell_val_num(CELL_VAL_NUM_VAR).nullable(true),
        )
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    storage
}

#[test]
fn dense_row_and_col_major_writes_read_back() {
    let storage = dense_array();
    let array = Array::open(storage.clone()).unwrap();
    // Rows 2..=4, cols 2..=4, row-major.
    let a: Vec<i32> = (0..9).collect();
    let s: Vec<String> = (0..9).map(|i| "x".repeat(i)).collect();
    array
        .write()
        .range_i64("r", 2, 4)
        .range_i64("c", 2, 4)
        .values("a", &a)
        .var_values("s", &s)
        .validity("s", vec![1, 0, 1, 1, 1, 1, 1, 1, 0])
        .timestamp(10)
        .submit()
        .unwrap()
        .unwrap();
    // The same region col-major at a later time, with a + 100.
    let a2: Vec<i32> = (0..9).map(|i| 100 + (i % 3) * 3 + i / 3).collect();
    let s2: Vec<String> = (0..9).map(|i| format!("y{i}")).collect();
    array
        .write()
        .range_i64("r", 3, 5)
        .range_i64("c", 3, 5)
        .values("a", &a2)
        .var_values("s", &s2)
        .layout(Layout::ColMajor)
        .timestamp(20)
        .submit()
        .unwrap()
        .unwrap();
    let array = Array::open(storage).unwrap();
    let res = array.read().range_i64("r", 2, 5).range_i64("c", 2, 5).execute().unwrap();
    let got = i32s(&res.column("a").unwrap().data);
    let m = i32::MIN;
    #[rustfmt::skip]
    let want = vec![
        0, 1, 2, m,
        3, 100, 101, 102,
        6, 103, 104, 105,
        m, 106, 107, 108,
    ];
    assert_eq!(got, want);
    let s = res.column("s").unwrap();
    assert!(!s.is_valid(1), "null kept");
    assert_eq!(s.cell(5), Some(&b"y0"[..]));
    assert_eq!(s.cell(2), Some(&b"xx"[..]));
}

#[test]
fn dense_global_order_write_in_pieces() {
    let storage = dense_array();
    let array = Array::open(storage.clone()).unwrap();
    // Rows 1..=4 x cols 1..=4 (tile aligned): two tiles of 4x2, cells tile by tile.
    let mut w = array
        .write()
        .range_i64("r", 1, 4)
        .range_i64("c", 1, 4)
        .layout(Layout::GlobalOrder)
        .timestamp(5)
        .begin()
        .unwrap();
    let all: Vec<i32> = (0..16).collect();
    for part in all.chunks(5) {
        let s: Vec<&str> = part.iter().map(|_| "v").collect();
        let mut a = Column::new("a", Datatype::Int32, 1, false);
        a.data = part.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut sc = Column::new("s", Datatype::StringUtf8, CELL_VAL_NUM_VAR, true);
        for v in &s {
            sc.offsets.as_mut().unwrap().push(sc.data.len() as u64);
            sc.data.extend_from_slice(v.as_bytes());
            sc.validity.as_mut().unwrap().push(1);
        }
        w.submit(vec![a, sc]).unwrap();
    }
    w.finalize().unwrap().unwrap();
    let array = Array::open(storage).unwrap();
    let res = array.read().range_i64("r", 1, 4).range_i64("c", 1, 4).execute().unwrap();
    let got = i32s(&res.column("a").unwrap().data);
    // Tile 0 = cols 1-2, tile 1 = cols 3-4; row-major within tiles.
    let want: Vec<i32> = (0..16)
        .map(|k| {
            let (r, c) = (k / 4, k % 4);
            let tile = c / 2;
            tile * 8 + r * 2 + c % 2
        })
        .collect();
    assert_eq!(got, want);
}

fn sparse_array(dups: bool) -> Arc<MemoryStorage> {
    let storage = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
        .dimension(Dimension::new("y", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
        .attribute(Attribute::new("v", Datatype::Int32))
        .capacity(3)
        .allows_duplicates(dups)
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    storage
}

#[test]
fn sparse_unordered_write_is_sorted_into_global_order() {
    let storage = sparse_array(false);
    let array = Array::open(storage.clone()).unwrap();
    let x = [5i64, 1, 50, 1, 22, 7, 3];
    let y = [5i64, 2, 3, 1, 40, 2, 90];
    let v: Vec<i32> = (0..7).collect();
    array.write().values("x", &x).values("y", &y).values("v", &v).timestamp(1).submit().unwrap();
    let res =
        Array::open(storage).unwrap().read().layout(ReadLayout::GlobalOrder).execute().unwrap();
    assert_eq!(i64s(&res.column("x").unwrap().data), [1, 1, 5, 7, 3, 22, 50]);
    assert_eq!(i64s(&res.column("y").unwrap().data), [1, 2, 5, 2, 90, 40, 3]);
    assert_eq!(i32s(&res.column("v").unwrap().data), [3, 1, 0, 5, 6, 4, 2]);
}

#[test]
fn sparse_errors_leave_the_array_unchanged() {
    let storage = sparse_array(false);
    let array = Array::open(storage.clone()).unwrap();
    let err = array
        .write()
        .values("x", &[1i64, 1])
        .values("y", &[2i64, 2])
        .values("v", &[0i32, 1])
        .submit()
        .unwrap_err();
    assert!(err.to_string().contains("Duplicate coordinates (1, 2)"), "{err}");
    let err = array
        .write()
        .values("x", &[1i64, 100])
        .values("y", &[2i64, 2])
        .values("v", &[0i32, 1])
        .submit()
        .unwrap_err();
    assert!(
        err.to_string().contains("Coordinate 100 is out of domain bounds [0, 99] on dimension 'x'"),
        "{err}"
    );
    let err = array
        .write()
        .values("x", &[1i64])
        .values("y", &[2i64, 3])
        .values("v", &[0i32])
        .submit()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidWrite(_)), "{err}");
    let err = array.write().values("x", &[1i64]).values("y", &[2i64]).submit().unwrap_err();
    assert!(err.to_string().contains("\"v\""), "{err}");
    // Global order: unsorted cells.
    let err = array
        .write()
        .layout(Layout::GlobalOrder)
        .values("x", &[5i64, 1])
        .values("y", &[2i64, 2])
        .values("v", &[0i32, 1])
        .submit()
        .unwrap_err();
    assert!(err.to_string().contains("succeed"), "{err}");
    assert!(storage.list("__fragments").unwrap().is_empty());
    assert!(storage.list("__commits").unwrap().is_empty());
}

/// The data files of the only fragment in `storage`, by name.
fn fragment_files(storage: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    let frags = storage.list("__fragments").unwrap();
    assert_eq!(frags.len(), 1);
    let dir = format!("__fragments/{}", frags[0].name);
    let mut files: Vec<(String, Vec<u8>)> = storage
        .list(&dir)
        .unwrap()
        .into_iter()
        .filter(|e| e.name != "__fragment_metadata.tdb")
        .map(|e| (e.name.clone(), storage.read(&format!("{dir}/{}", e.name)).unwrap().to_vec()))
        .collect();
    files.sort();
    files
}

#[test]
fn a_write_of_one_whole_tile_stores_what_the_tiling_path_stores() {
    // Rows 1..=4, cols 1..=2 are exactly tile 0: in row-major order the cells become the tile
    // without a copy; in global order they go through the tiling path. Same files, same cells.
    let a: Vec<i32> = (0..8).map(|i| i * 7 - 20).collect();
    let s: Vec<String> = (0..8).map(|i| "z".repeat(i % 3)).collect();
    let validity = vec![1, 1, 0, 1, 1, 0, 1, 1];
    let mut stored = Vec::new();
    for layout in [Layout::RowMajor, Layout::GlobalOrder] {
        let storage = dense_array();
        let array = Array::open(storage.clone()).unwrap();
        array
            .write()
            .range_i64("r", 1, 4)
            .range_i64("c", 1, 2)
            .values("a", &a)
            .var_values("s", &s)
            .validity("s", validity.clone())
            .layout(layout)
            .timestamp(10)
            .submit()
            .unwrap()
            .unwrap();
        let array = Array::open(storage.clone()).unwrap();
        let res = array.read().range_i64("r", 1, 4).range_i64("c", 1, 2).execute().unwrap();
        assert_eq!(i32s(&res.column("a").unwrap().data), a, "{layout:?}");
        let col = res.column("s").unwrap();
        for (i, v) in validity.iter().enumerate() {
            assert_eq!(col.is_valid(i), *v == 1, "{layout:?} cell {i}");
            if *v == 1 {
                assert_eq!(col.cell(i), Some(s[i].as_bytes()), "{layout:?} cell {i}");
            }
        }
        stored.push(fragment_files(&storage));
    }
    assert_eq!(stored[0], stored[1]);
    assert_eq!(stored[0].len(), 4, "a, s, its offsets and its validity");
}
