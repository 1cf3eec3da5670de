//! Deletes written by Tessera ([`Array::delete`]): libtiledb's `.del` files byte for byte, the
//! cells they hide (libtiledb's reads of the same deletes), and the deletes libtiledb refuses.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{assert_rows_eq_unordered, read_jsonl, rows, testdata};
use tessera_query::condition::QueryCondition;
use tessera_query::{Array, Error};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, MemoryStorage, Storage};
use tessera_types::{ArrayType, Datatype};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// The `.del` files of `__commits/`: (timestamp, bytes).
fn del_files(storage: &dyn Storage) -> Vec<(u64, Vec<u8>)> {
    let mut out: Vec<(u64, Vec<u8>)> = storage
        .list("__commits")
        .unwrap()
        .into_iter()
        .filter(|e| e.name.ends_with(".del"))
        .map(|e| {
            let t = e.name[2..].split('_').next().unwrap().parse().unwrap();
            (t, storage.read(&format!("__commits/{}", e.name)).unwrap().to_vec())
        })
        .collect();
    out.sort();
    out
}

/// The `sparse_deletes` fixture (libtiledb deleted `v < 0.25` at 30 and `tag == 'b'` at
/// 50) without its deletes, then deleted again by Tessera: the same files, and every read
/// libtiledb recorded.
#[test]
fn replays_libtiledbs_deletes_byte_for_byte() {
    let fixture = testdata().join("fragments/sparse_deletes");
    let original = del_files(&LocalStorage::new(&fixture));
    assert_eq!(original.iter().map(|d| d.0).collect::<Vec<_>>(), [30, 50]);

    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    for e in std::fs::read_dir(dir.path().join("__commits")).unwrap().flatten() {
        if e.file_name().to_str().unwrap().ends_with(".del") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()));
    // Opened at 30 and no timestamp given: the delete takes the open timestamp, as in
    // libtiledb (`tiledb.open(uri, 'd', timestamp=30)`).
    let at30 = Array::open_at(storage.clone(), 30).unwrap();
    let name = at30.delete().where_text("v < 0.25").submit().unwrap();
    assert_eq!(name.timestamp_range(), (30, 30));
    assert_eq!(name.format_version(), 22);
    // A parsed condition and an explicit timestamp.
    let now = Array::open(storage.clone()).unwrap();
    let cond = QueryCondition::parse("tag == 'b'", now.schema(), now.enumerations()).unwrap();
    let name = now.delete().condition(cond).timestamp(50).submit().unwrap();
    assert_eq!(name.timestamp_range(), (50, 50));
    assert!(storage.exists(&format!("__commits/{}", name.with_extension("del"))).unwrap());

    assert_eq!(del_files(storage.as_ref()), original, "the .del files differ from libtiledb's");
    for (at, expected) in [
        (Some(25), "sparse_deletes.at25.cells.jsonl"),
        (Some(35), "sparse_deletes.at35.cells.jsonl"),
        (Some(55), "sparse_deletes.at55.cells.jsonl"),
        (None, "sparse_deletes.cells.jsonl"),
    ] {
        let array = match at {
            Some(t) => Array::open_at(storage.clone(), t).unwrap(),
            None => Array::open(storage.clone()).unwrap(),
        };
        let result = array.read().execute().unwrap();
        let expected = read_jsonl(&format!("fragments/{expected}"));
        assert_rows_eq_unordered(&rows(&result), &expected, &format!("read at {at:?}"));
    }
}

fn sparse_array() -> (Arc<dyn Storage>, Array) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
        .attribute(Attribute::new("a", Datatype::Int32))
        .attribute(Attribute::new("n", Datatype::Float64).nullable(true))
        .build()
        .unwrap();
    Array::create_at(storage.clone(), &schema, &[], 1).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    (storage, array)
}

fn commits(storage: &dyn Storage) -> Vec<String> {
    storage.list("__commits").unwrap().into_iter().map(|e| e.name).collect()
}

#[test]
fn default_timestamp_is_when_the_array_was_opened() {
    let (storage, array) = sparse_array();
    let opened = array.timestamp_range().1;
    let name = array.delete().where_text("a > 3").submit().unwrap();
    assert_eq!(name.timestamp_range(), (opened, opened));
    let again = Array::open(storage).unwrap();
    assert_eq!(again.directory().deletes.len(), 1);
    assert_eq!(again.directory().deletes[0].name, name);
}

#[test]
fn deletes_libtiledb_refuses_write_nothing() {
    let (storage, array) = sparse_array();
    let refuse = |q: tessera_query::DeleteQuery<'_>| q.submit().unwrap_err();
    // No condition.
    let e = refuse(array.delete().timestamp(5));
    assert!(matches!(e, Error::InvalidQuery(_)), "{e}");
    // A condition that does not parse or fit the schema.
    let e = refuse(array.delete().where_text("a >").timestamp(5));
    assert!(matches!(e, Error::Condition { column: Some(_), .. }), "{e}");
    let e = refuse(array.delete().where_text("zz == 1").timestamp(5));
    assert!(matches!(e, Error::Condition { .. }), "{e}");
    // Conditions libtiledb cannot negate or would store unreadably.
    let e = refuse(array.delete().where_text("a is null").timestamp(5));
    assert!(e.to_string().contains("always false"), "{e}");
    let e = refuse(array.delete().where_text("n is null").timestamp(5));
    assert!(e.to_string().contains("empty value"), "{e}");
    assert!(commits(storage.as_ref()).is_empty());

    // Dense arrays.
    let dense: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 9).tile_i64(5))
        .attribute(Attribute::new("a", Datatype::Int32))
        .build()
        .unwrap();
    Array::create_at(dense.clone(), &schema, &[], 1).unwrap();
    let e = Array::open(dense.clone()).unwrap().delete().where_text("a == 1").submit().unwrap_err();
    assert!(e.to_string().contains("only supported on sparse arrays"), "{e}");
    assert!(commits(dense.as_ref()).is_empty());
}

#[test]
fn refused_inside_a_fragment_consolidated_without_timestamps() {
    let (storage, array) = sparse_array();
    // A fragment of format version 14 (consolidated without timestamps) over [10, 20].
    storage.create_dir("__fragments/__10_20_0123456789abcdef0123456789abcdef_14").unwrap();
    for t in [10, 15, 20] {
        let e = array.delete().where_text("a == 1").timestamp(t).submit().unwrap_err();
        assert!(e.to_string().contains("consolidated without timestamps"), "{t}: {e}");
    }
    assert!(commits(storage.as_ref()).is_empty());
    array.delete().where_text("a == 1").timestamp(21).submit().unwrap();
    // Version 15 and later keep timestamps: no restriction.
    storage.create_dir("__fragments/__30_40_0123456789abcdef0123456789abcdef_15").unwrap();
    array.delete().where_text("a == 1").timestamp(35).submit().unwrap();
    assert_eq!(commits(storage.as_ref()).len(), 2);
}
