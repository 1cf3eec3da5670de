//! The storage conformance suite and end-to-end array tests on a local S3 emulator (moto's
//! server, started by the tests on loopback). They are `#[ignore]`d: `cargo xtask test` runs
//! them with `--ignored`.

// `read_ranges` takes a slice of ranges, so one-range arrays are what is meant.
#![allow(clippy::single_range_in_vec_init)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tessera::layers::query::consolidate::{self, Mode, Options};
use tessera::{Array, ArraySchema, ArrayType, Attribute, Datatype, Dimension, Storage};
use tessera_object_store::ObjectStoreStorage;
use tessera_object_store::emulator::S3Emulator;

const BUCKET: &str = "tessera-tests";

/// The shared emulator with the test bucket (always `Some`: the tests that need it are
/// `#[ignore]`d, so plain `cargo test` does not get here).
fn emulator() -> Option<&'static S3Emulator> {
    let s3 = S3Emulator::shared().expect("the S3 emulator (moto) should start");
    s3.create_bucket(BUCKET).expect("create the test bucket");
    Some(s3)
}

/// A fresh, empty storage: a prefix of its own in the test bucket.
fn fresh(s3: &S3Emulator, what: &str) -> ObjectStoreStorage {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let uri = format!("s3://{BUCKET}/{what}-{}-{n}", std::process::id());
    s3.storage(&uri).expect("a storage on the emulator")
}

/// One `#[test]` per suite function, each `#[ignore]`d as it needs the emulator.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod conformance {
            use super::*;
            $(
                #[test]
                #[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
                fn $name() {
                    let Some(s3) = emulator() else { return };
                    let storage = fresh(s3, stringify!($name));
                    tessera_storage::testsuite::$name(&storage);
                }
            )*

            #[test]
            fn suite_is_complete() {
                let generated: &[&str] = &[$(stringify!($name)),*];
                let listed: Vec<&str> =
                    tessera_storage::testsuite::TESTS.iter().map(|(name, _)| *name).collect();
                assert_eq!(generated, listed.as_slice());
            }
        }
    };
}

suite!(
    write_then_read,
    read_missing,
    read_directory,
    read_range_contents,
    read_range_out_of_bounds,
    read_ranges_many,
    exists_and_is_dir,
    write_creates_parents,
    create_dir_behaviour,
    write_under_object,
    list_sorted_direct_children,
    list_errors,
    list_names_like_list,
    read_tail_end,
    read_range_into_buffer,
    read_range_scatter_pieces,
    remove_object,
    remove_dir_all_tree,
    publish_replaces,
    publish_is_atomic,
    rename_objects_and_dirs,
    paths_are_normalised,
    invalid_paths_refused,
    concurrent_writers,
    writer_in_pieces,
);

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn suite_with_no_coalescing() {
    let Some(s3) = emulator() else { return };
    let storage = fresh(s3, "gap0").with_coalesce_gap(0).with_concurrency(1);
    tessera_storage::testsuite::read_ranges_many(&storage);
    tessera_storage::testsuite::read_range_out_of_bounds(&fresh(s3, "gap0b").with_coalesce_gap(0));
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn large_objects_go_up_in_parts() {
    let Some(s3) = emulator() else { return };
    let storage = fresh(s3, "multipart").with_part_size(5 * 1024 * 1024);
    let data: Vec<u8> = (0..(12 * 1024 * 1024 + 123)).map(|i: u32| (i % 251) as u8).collect();
    let mut w = storage.writer("big/object.bin").unwrap();
    for piece in data.chunks(1_000_003) {
        w.write_all(piece).unwrap();
    }
    assert_eq!(w.finish().unwrap(), data.len() as u64);
    assert_eq!(storage.size("big/object.bin").unwrap(), data.len() as u64);
    let got = storage.read_ranges("big/object.bin", &[0..10, 6_000_000..6_000_100]).unwrap();
    assert_eq!(got[0], data[..10]);
    assert_eq!(got[1], data[6_000_000..6_000_100]);
    assert!(storage.read("big/object.bin").unwrap() == data);

    // An upload dropped before `finish` leaves nothing behind.
    let mut w = storage.writer("big/abandoned.bin").unwrap();
    w.write_all(&data).unwrap();
    drop(w);
    assert!(!storage.exists("big/abandoned.bin").unwrap());
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn works_from_inside_a_tokio_runtime() {
    let Some(s3) = emulator() else { return };
    let storage: Arc<dyn Storage> = Arc::new(fresh(s3, "tokio"));
    storage.write("x", tessera_storage::Bytes::from_static(b"hello")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    // On a worker thread of another runtime.
    let s = Arc::clone(&storage);
    let on_worker = rt.block_on(async move { tokio::spawn(async move { s.read("x") }).await });
    assert_eq!(on_worker.unwrap().unwrap(), "hello");
    // On one of its blocking threads (as DataFusion calls Tessera).
    let s = Arc::clone(&storage);
    let blocking = rt.block_on(rt.spawn_blocking(move || s.read_range("x", 1..3)));
    assert_eq!(blocking.unwrap().unwrap(), "el");
    // Inside `block_on` itself, and from a current-thread runtime.
    let s = Arc::clone(&storage);
    assert_eq!(rt.block_on(async move { s.size("x") }).unwrap(), 5);
    let current = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert!(current.block_on(async { storage.exists("x") }).unwrap());
    drop(rt);
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn directories_are_prefixes() {
    let Some(s3) = emulator() else { return };
    let storage = fresh(s3, "dirs");
    storage.create_dir("empty/inner").unwrap();
    // The marker of an empty directory sits beside it, not inside.
    let keys = keys(&storage);
    assert_eq!(keys, ["empty/.inner.tessera-dir"], "{keys:?}");
    storage.write("empty/inner/f", tessera_storage::Bytes::from_static(b"1")).unwrap();
    // Once an object is inside, the marker this storage wrote is gone.
    assert_eq!(keys_of(&storage), ["empty/inner/f"]);
    storage.remove("empty/inner/f").unwrap();
    assert!(storage.is_dir("empty/inner").unwrap(), "the emptied directory stays");
}

fn keys(storage: &ObjectStoreStorage) -> Vec<String> {
    keys_of(storage)
}

/// Every key below the storage's root, relative to it, sorted.
fn keys_of(storage: &ObjectStoreStorage) -> Vec<String> {
    use futures::TryStreamExt;
    let store = Arc::clone(storage.store());
    let root = storage.uri().splitn(4, '/').nth(3).unwrap_or_default().to_owned();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let metas: Vec<_> = rt
        .block_on(async move {
            let prefix = tessera_object_store::object_store::path::Path::from(root.as_str());
            store.list(Some(&prefix)).try_collect::<Vec<_>>().await
        })
        .unwrap();
    let root = storage.uri().splitn(4, '/').nth(3).unwrap_or_default().to_owned();
    let mut keys: Vec<String> = metas
        .into_iter()
        .map(|m| {
            m.location.as_ref().strip_prefix(&format!("{root}/")).unwrap_or_default().to_owned()
        })
        .collect();
    keys.sort();
    keys
}

fn schema(array_type: ArrayType) -> ArraySchema {
    ArraySchema::builder(array_type)
        .dimension(Dimension::new("rows", Datatype::Int64).domain_i64(1, 100).tile_i64(10))
        .dimension(Dimension::new("cols", Datatype::Int64).domain_i64(1, 100).tile_i64(10))
        .attribute(Attribute::new("a", Datatype::Float64))
        .build()
        .unwrap()
}

fn column_f64(result: &tessera::ReadResult, name: &str) -> Vec<f64> {
    result
        .column(name)
        .unwrap()
        .data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn arrays_end_to_end() {
    let Some(s3) = emulator() else { return };
    let storage: Arc<dyn Storage> = Arc::new(fresh(s3, "array"));
    Array::create(Arc::clone(&storage), &schema(ArrayType::Dense), &[]).unwrap();
    for (i, t) in [(0.0, 10), (100.0, 20)] {
        let values: Vec<f64> = (0..20).map(|v| f64::from(v) + i).collect();
        let array = Array::open(Arc::clone(&storage)).unwrap();
        array
            .write()
            .range_i64("rows", 1, 2)
            .range_i64("cols", 1, 10)
            .values("a", &values)
            .timestamp(t)
            .submit()
            .unwrap();
    }
    let array = Array::open(Arc::clone(&storage)).unwrap();
    assert_eq!(array.fragments().len(), 2);
    let read = |array: &Array| {
        let result = array
            .read()
            .range_i64("rows", 1, 2)
            .range_i64("cols", 1, 10)
            .attributes(["a"])
            .execute()
            .unwrap();
        column_f64(&result, "a")
    };
    let want: Vec<f64> = (0..20).map(|v| f64::from(v) + 100.0).collect();
    assert_eq!(read(&array), want);

    consolidate::consolidate(Arc::clone(&storage), Mode::Fragments, &Options::default()).unwrap();
    consolidate::vacuum(storage.as_ref(), Mode::Fragments).unwrap();
    let array = Array::open(Arc::clone(&storage)).unwrap();
    assert_eq!(array.fragments().len(), 1);
    assert_eq!(read(&array), want);
    let report =
        tessera::layers::query::verify::verify(storage.as_ref(), &Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
