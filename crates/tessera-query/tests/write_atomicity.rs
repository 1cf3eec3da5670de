//! A write that fails part way leaves the array as it was; readers that open while writes
//! run see whole fragments only.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use tessera_query::Array;
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{Entry, LocalStorage, MemoryStorage, ObjectWriter, Result, Storage};
use tessera_types::{ArrayType, Datatype};

/// A storage that fails the `fail_at`-th piece written (through `write`, `writer` pieces or
/// `publish`), counting from 0.
#[derive(Debug)]
struct Failing {
    inner: Arc<MemoryStorage>,
    writes: AtomicUsize,
    fail_at: usize,
}

impl Failing {
    fn tick(&self, path: &str) -> Result<()> {
        if self.writes.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            return Err(tessera_storage::Error::io(
                tessera_storage::Op::Write,
                path,
                std::io::Error::other("injected failure"),
            ));
        }
        Ok(())
    }
}

struct FailingWriter<'a> {
    storage: &'a Failing,
    path: String,
    data: Vec<u8>,
}

impl ObjectWriter for FailingWriter<'_> {
    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.storage.tick(&self.path)?;
        self.data.extend_from_slice(data);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let n = self.data.len() as u64;
        self.storage.inner.write(&self.path, Bytes::from(self.data))?;
        Ok(n)
    }
}

impl Storage for Failing {
    fn read(&self, path: &str) -> Result<Bytes> {
        self.inner.read(path)
    }
    fn read_range(&self, path: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.read_range(path, range)
    }
    fn size(&self, path: &str) -> Result<u64> {
        self.inner.size(path)
    }
    fn exists(&self, path: &str) -> Result<bool> {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &str) -> Result<bool> {
        self.inner.is_dir(path)
    }
    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        self.inner.list(dir)
    }
    fn write(&self, path: &str, data: Bytes) -> Result<()> {
        self.tick(path)?;
        self.inner.write(path, data)
    }
    fn create_dir(&self, path: &str) -> Result<()> {
        self.inner.create_dir(path)
    }
    fn remove(&self, path: &str) -> Result<()> {
        self.inner.remove(path)
    }
    fn remove_dir_all(&self, dir: &str) -> Result<()> {
        self.inner.remove_dir_all(dir)
    }
    fn publish(&self, path: &str, data: Bytes) -> Result<()> {
        self.tick(path)?;
        self.inner.publish(path, data)
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn writer<'a>(&'a self, path: &str) -> Result<Box<dyn ObjectWriter + 'a>> {
        Ok(Box::new(FailingWriter { storage: self, path: path.to_owned(), data: Vec::new() }))
    }
}

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
