//! A write that fails part way leaves the array as it was; readers that open while writes
//! run see whole fragments only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::common;

use common::failing::Failing;
use tessera_query::Array;
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, MemoryStorage, Storage};
use tessera_types::{ArrayType, Datatype};

fn schema() -> ArraySchema {
    ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 1_000_000).tile_i64(1000))
        .attribute(Attribute::new("v", Datatype::Float64))
        .attribute(Attribute::new("s", Datatype::StringAscii).cell_val_num(u32::MAX).nullable(true))
        .capacity(100)
        .build()
        .unwrap()
}

fn write(array: &Array, first: i64, n: i64, t: u64) -> tessera_query::Result<()> {
    let x: Vec<i64> = (first..first + n).collect();
    let v: Vec<f64> = x.iter().map(|&i| i as f64).collect();
    array
        .write()
        .values("x", &x)
        .values("v", &v)
        .var_values("s", x.iter().map(|i| i.to_string()))
        .validity("s", vec![1; n as usize])
        .timestamp(t)
        .submit()
        .map(|_| ())
}

#[test]
fn a_write_failing_at_any_point_leaves_the_array_unchanged() {
    // Count the pieces a successful write makes, then fail at each of them in turn.
    let probe = Arc::new(Failing {
        inner: Arc::new(MemoryStorage::new()),
        writes: AtomicUsize::new(0),
        fail_at: usize::MAX,
    });
    Array::create_at(probe.clone(), &schema(), &[], 1).unwrap();
    let before = probe.writes.load(Ordering::SeqCst);
    write(&Array::open(probe.clone()).unwrap(), 0, 1000, 5).unwrap();
    let pieces = probe.writes.load(Ordering::SeqCst) - before;
    assert!(pieces > 10, "{pieces} pieces");
    for k in 0..pieces {
        let storage = Arc::new(Failing {
            inner: Arc::new(MemoryStorage::new()),
            writes: AtomicUsize::new(0),
            fail_at: usize::MAX,
        });
        Array::create_at(storage.clone(), &schema(), &[], 1).unwrap();
        let array = Array::open(storage.clone()).unwrap();
        write(&array, 0, 10, 2).unwrap();
        let failing = Arc::new(Failing {
            inner: storage.inner.clone(),
            writes: AtomicUsize::new(0),
            fail_at: k,
        });
        let array = Array::open(failing.clone()).unwrap();
        let err = write(&array, 100, 1000, 5).unwrap_err();
        assert!(matches!(err, tessera_query::Error::Storage(_)), "{err}");
        let frags = storage.inner.list("__fragments").unwrap();
        assert_eq!(frags.len(), 1, "failure at piece {k}: {frags:?}");
        assert_eq!(storage.inner.list("__commits").unwrap().len(), 1, "failure at piece {k}");
        let res = Array::open(storage.clone()).unwrap().read().execute().unwrap();
        assert_eq!(res.cell_num(), 10, "failure at piece {k}");
    }
}

#[test]
fn readers_see_whole_fragments_while_writers_run() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).with_sync(false));
    Array::create_at(storage.clone(), &schema(), &[], 1).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let storage = storage.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut last = 0;
                let mut reads = 0;
                while !done.load(Ordering::SeqCst) {
                    let array = Array::open(storage.clone()).unwrap();
                    let n = array.read().execute().unwrap().cell_num();
                    assert_eq!(n % 2000, 0, "a reader saw part of a fragment: {n} cells");
                    assert!(n >= last, "cells went from {last} to {n}");
                    last = n;
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for w in 0..12i64 {
        let array = Array::open(storage.clone()).unwrap();
        write(&array, w * 2000, 2000, 10 + w as u64).unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let n = Array::open(storage).unwrap().read().execute().unwrap().cell_num();
    assert_eq!(n, 24_000);
}

#[test]
fn two_writers_at_once_each_make_their_own_fragment() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).with_sync(false));
    Array::create_at(storage.clone(), &schema(), &[], 1).unwrap();
    let handles: Vec<_> = (0..2i64)
        .map(|w| {
            let storage = storage.clone();
            std::thread::spawn(move || {
                let array = Array::open(storage).unwrap();
                write(&array, w * 5000, 5000, 7).unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let array = Array::open(storage).unwrap();
    assert_eq!(array.fragments().len(), 2);
    assert_eq!(array.read().execute().unwrap().cell_num(), 10_000);
}

#[test]
fn a_global_order_write_streams_its_tiles_to_disk_as_they_fill() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).with_sync(false));
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int64).domain_i64(0, 3999).tile_i64(100))
        .dimension(Dimension::new("c", Datatype::Int64).domain_i64(0, 99).tile_i64(100))
        .attribute(Attribute::new("a", Datatype::Int64))
        .build()
        .unwrap();
    Array::create_at(storage.clone(), &schema, &[], 1).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    let mut w = array
        .write()
        .range_i64("r", 0, 3999)
        .range_i64("c", 0, 99)
        .layout(tessera_types::Layout::GlobalOrder)
        .timestamp(3)
        .begin()
        .unwrap();
    for k in 0..40u64 {
        let vals: Vec<i64> = (0..10_000).map(|i| (k * 10_000 + i) as i64).collect();
        let mut col = tessera_query::Column::new("a", Datatype::Int64, 1, false);
        col.data = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        w.submit(vec![col]).unwrap();
        // The fragment folder is not committed yet, but its data file already holds every
        // complete tile but the last batch (filtered while the next one arrives): nothing
        // waits in memory for the end of the write.
        let frag = storage.list("__fragments").unwrap();
        assert_eq!(frag.len(), 1);
        let size = storage.size(&format!("__fragments/{}/a0.tdb", frag[0].name)).unwrap();
        assert!(size >= k * (100 * 100 * 8), "after tile {k}: {size} bytes on disk");
        assert!(storage.list("__commits").unwrap().is_empty(), "committed early");
    }
    w.finalize().unwrap().unwrap();
    let r = Array::open(storage)
        .unwrap()
        .read()
        .range_i64("r", 3998, 3999)
        .range_i64("c", 98, 99)
        .execute()
        .unwrap();
    let got: Vec<i64> = r
        .column("a")
        .unwrap()
        .data
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [399_898, 399_899, 399_998, 399_999]);
}
