//! Concurrency, threads in one process (`docs/concurrency.md`): readers running while
//! writers, consolidation and vacuum run always see a consistent array — exactly the cells
//! of some set of whole committed writes, and for consolidation always the same cells; two
//! writers at once each make their own fragment; a reader that opened before a vacuum fails
//! with a clear error, never with wrong data.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use tessera_query::consolidate::{self, Mode};
use tessera_query::{Array, Error};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, Storage};
use tessera_types::{ArrayType, Datatype};

/// One cell: coordinate, value, string.
type Cell = (i64, u64, Option<String>);

fn schema(dups: bool) -> ArraySchema {
    ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 1_000_000).tile_i64(1000))
        .attribute(Attribute::new("v", Datatype::UInt64))
        .attribute(Attribute::new("s", Datatype::StringUtf8).cell_val_num(u32::MAX).nullable(true))
        .capacity(200)
        .allows_duplicates(dups)
        .build()
        .unwrap()
}

fn new_array(dups: bool) -> (tempfile::TempDir, Arc<dyn Storage>) {
    let tmp = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(tmp.path()));
    Array::create(storage.clone(), &schema(dups), &[]).unwrap();
    (tmp, storage)
}

/// The cells of write `tag`: `n` coordinates from `base` by `step`, values unique to the tag.
fn cells(tag: u64, base: i64, step: i64, n: usize) -> Vec<Cell> {
    (0..n as i64)
        .map(|k| {
            let s = (k % 5 != 0).then(|| format!("t{tag}-{k}"));
            (base + k * step, tag * 1_000_000 + k as u64, s)
        })
        .collect()
}

fn write(storage: &Arc<dyn Storage>, t: u64, cells: &[Cell]) -> tessera_query::Result<()> {
    let array = Array::open(storage.clone())?;
    let x: Vec<i64> = cells.iter().map(|c| c.0).collect();
    let v: Vec<u64> = cells.iter().map(|c| c.1).collect();
    array
        .write()
        .values("x", &x)
        .values("v", &v)
        .var_values("s", cells.iter().map(|c| c.2.clone().unwrap_or_default()))
        .validity("s", cells.iter().map(|c| u8::from(c.2.is_some())).collect())
        .timestamp(t)
        .submit()
        .map(|_| ())
}

/// Every cell `array` shows, sorted.
fn read(array: &Array) -> tessera_query::Result<Vec<Cell>> {
    let r = array.read().execute()?;
    let (x, v, s) = (r.column("x").unwrap(), r.column("v").unwrap(), r.column("s").unwrap());
    let mut out: Vec<Cell> = (0..r.cell_num())
        .map(|i| {
            (
                i64::from_le_bytes(x.cell(i).unwrap().try_into().unwrap()),
                u64::from_le_bytes(v.cell(i).unwrap().try_into().unwrap()),
                s.is_valid(i).then(|| String::from_utf8(s.cell(i).unwrap().to_vec()).unwrap()),
            )
        })
        .collect();
    out.sort();
    Ok(out)
}

fn open_and_read(storage: &Arc<dyn Storage>) -> tessera_query::Result<Vec<Cell>> {
    read(&Array::open(storage.clone())?)
}

/// What a read shows after `writes` (by timestamp) committed: newest cell per coordinate.
fn state<'a>(writes: impl IntoIterator<Item = (u64, &'a Vec<Cell>)>) -> Vec<Cell> {
    let mut by_t: Vec<(u64, &Vec<Cell>)> = writes.into_iter().collect();
    by_t.sort_by_key(|(t, _)| *t);
    let mut by_x: BTreeMap<i64, Cell> = BTreeMap::new();
    for (_, cells) in by_t {
        for c in cells {
            by_x.insert(c.0, c.clone());
        }
    }
    by_x.into_values().collect()
}

#[test]
fn readers_see_whole_writes_only_while_two_writers_run() {
    let (_tmp, storage) = new_array(false);
    // Writer A: even coordinates, overlapping batches (newer replace older), even timestamps.
    // Writer B: odd coordinates, odd timestamps.
    let per_writer = 6;
    let a: Vec<(u64, Vec<Cell>)> = (0..per_writer)
        .map(|i| (2 * i as u64 + 2, cells(2 * i as u64 + 2, 2 * 300 * i as i64, 2, 1500)))
        .collect();
    let b: Vec<(u64, Vec<Cell>)> = (0..per_writer)
        .map(|i| (2 * i as u64 + 1, cells(2 * i as u64 + 1, 2 * 300 * i as i64 + 1, 2, 1500)))
        .collect();
    // Every valid state: a prefix of A's writes and a prefix of B's.
    let mut states: Vec<((usize, usize), Vec<Cell>)> = Vec::new();
    for i in 0..=per_writer {
        for j in 0..=per_writer {
            let ws = a[..i].iter().chain(&b[..j]).map(|(t, c)| (*t, c));
            states.push(((i, j), state(ws)));
        }
    }
    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for writes in [&a, &b] {
            let storage = storage.clone();
            s.spawn(move || {
                for (t, c) in writes {
                    write(&storage, *t, c).unwrap();
                }
            });
        }
        let readers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut last = (0, 0);
                    while !done.load(Ordering::Acquire) {
                        let got = open_and_read(&storage).unwrap();
                        let Some((k, _)) = states.iter().find(|(_, st)| *st == got) else {
                            panic!("a read of {} cells matches no set of whole writes", got.len());
                        };
                        // A later open never sees fewer writes.
                        assert!(k.0 >= last.0 && k.1 >= last.1, "{k:?} after {last:?}");
                        last = *k;
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // Wait for the writers (every thread but the readers), then stop the readers.
        while Array::open(storage.clone()).unwrap().fragments().len() < 2 * per_writer {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        done.store(true, Ordering::Release);
        for r in readers {
            r.join().unwrap();
        }
    });
    let all = states.last().unwrap().1.clone();
    assert_eq!(open_and_read(&storage).unwrap(), all);
    assert!(reads.load(Ordering::Relaxed) > 0);
}

#[test]
fn writers_at_once_each_make_their_own_fragment() {
    let (_tmp, storage) = new_array(false);
    let n = 4;
    let barrier = Barrier::new(n);
    let batches: Vec<Vec<Cell>> =
        (0..n).map(|i| cells(i as u64, i as i64, n as i64, 2000)).collect();
    std::thread::scope(|s| {
        for b in &batches {
            let storage = storage.clone();
            let barrier = &barrier;
            // All at the same timestamp: the names still differ (a random UUID each).
            s.spawn(move || {
                barrier.wait();
                write(&storage, 7, b).unwrap();
            });
        }
    });
    let array = Array::open(storage.clone()).unwrap();
    assert_eq!(array.fragments().len(), n);
    let mut names: Vec<&str> = array.fragments().iter().map(|f| f.name().as_str()).collect();
    names.dedup();
    assert_eq!(names.len(), n);
    for f in array.fragments() {
        assert_eq!(f.cell_num().unwrap(), 2000);
    }
    let all = state(batches.iter().map(|b| (7, b)));
    assert_eq!(read(&array).unwrap(), all);
}

/// An array of `n` overlapping writes, and what it holds.
fn written(n: u64, dups: bool) -> (tempfile::TempDir, Arc<dyn Storage>, Vec<Cell>) {
    let (tmp, storage) = new_array(dups);
    let mut writes = Vec::new();
    for t in 1..=n {
        let c = cells(t, 100 * t as i64, 3, 1000);
        write(&storage, t, &c).unwrap();
        writes.push((t, c));
    }
    let expected = state(writes.iter().map(|(t, c)| (*t, c)));
    (tmp, storage, expected)
}

#[test]
fn consolidation_and_vacuum_never_change_what_readers_see() {
    let (_tmp, storage, expected) = written(8, false);
    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    let removed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..3)
            .map(|r| {
                let (storage, expected, done, reads, removed) =
                    (&storage, &expected, &done, &reads, &removed);
                s.spawn(move || {
                    let mut held: Option<Array> = None;
                    while !done.load(Ordering::Acquire) {
                        // A fresh open always works and shows the same cells. A vacuum may
                        // remove its fragments between the open and the read (libtiledb has
                        // the same window): that read fails clearly and a new open succeeds.
                        let array = Array::open(storage.clone())
                            .unwrap_or_else(|e| panic!("an open during a vacuum failed: {e:?}"));
                        match read(&array) {
                            Ok(got) => assert_eq!(got, *expected),
                            Err(Error::FragmentRemoved { .. }) => {
                                removed.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            Err(e) => panic!("a read of a fresh open failed: {e:?}"),
                        }
                        reads.fetch_add(1, Ordering::Relaxed);
                        // Reader 0 also keeps a handle across consolidations and vacuums:
                        // it reads the same cells, or fails clearly once its fragments are
                        // vacuumed.
                        if r == 0 {
                            match held.as_ref().map(read) {
                                Some(Ok(got)) => assert_eq!(got, *expected),
                                Some(Err(Error::FragmentRemoved { .. })) => {
                                    removed.fetch_add(1, Ordering::Relaxed);
                                    held = None;
                                }
                                Some(Err(e)) => panic!("a held handle failed: {e}"),
                                None => held = Some(array),
                            }
                        }
                    }
                })
            })
            .collect();
        for round in 0..3 {
            // More fragments each round (the same cells again, newer), so there is work.
            let opts = consolidate::Options::default();
            for mode in [Mode::Commits, Mode::FragmentMeta, Mode::Fragments] {
                consolidate::consolidate(storage.clone(), mode, &opts).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            for mode in [Mode::Fragments, Mode::Commits, Mode::FragmentMeta] {
                consolidate::vacuum(storage.as_ref(), mode).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if round < 2 {
                let array = Array::open(storage.clone()).unwrap();
                let again = read(&array).unwrap();
                assert_eq!(again, expected);
            }
        }
        done.store(true, Ordering::Release);
        for r in readers {
            r.join().unwrap();
        }
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    eprintln!(
        "{} reads during consolidation and vacuum; a handle held across a vacuum failed cleanly \
         {} times",
        reads.load(Ordering::Relaxed),
        removed.load(Ordering::Relaxed)
    );
}

#[test]
fn a_reader_opened_before_a_vacuum_fails_clearly_and_never_reads_wrong_cells() {
    let (_tmp, storage, expected) = written(4, false);
    // Opened before: footers loaded; offsets, R-trees and tiles are read later.
    let before = Array::open(storage.clone()).unwrap();
    // Opened and read before: its tile offsets are loaded too.
    let read_before = Array::open(storage.clone()).unwrap();
    assert_eq!(read(&read_before).unwrap(), expected);
    consolidate::consolidate(storage.clone(), Mode::Fragments, &Default::default()).unwrap();
    // Between consolidation and vacuum, both old handles still read the old fragments.
    assert_eq!(read(&before).unwrap(), expected);
    let between = Array::open(storage.clone()).unwrap();
    consolidate::vacuum(storage.as_ref(), Mode::Fragments).unwrap();
    for handle in [&before, &read_before] {
        match read(handle) {
            Err(e @ Error::FragmentRemoved { .. }) => {
                let text = e.to_string();
                assert!(text.starts_with("__fragments/"), "{text}");
                assert!(text.contains("removed after the array was opened"), "{text}");
            }
            other => panic!("a read after the vacuum gave {other:?}"),
        }
    }
    // A handle opened after the consolidation only uses the consolidated fragment.
    assert_eq!(read(&between).unwrap(), expected);
    assert_eq!(open_and_read(&storage).unwrap(), expected);
}

#[test]
fn between_a_consolidation_commit_and_its_vac_file_duplicates_show_twice() {
    // The window libtiledb has too: the consolidated fragment is committed, its `.vac` file
    // not yet written (a crash there, or a reader opening in that instant).
    for dups in [false, true] {
        let (tmp, storage, expected) = written(3, dups);
        consolidate::consolidate(storage.clone(), Mode::Fragments, &Default::default()).unwrap();
        let vac = std::fs::read_dir(tmp.path().join("__commits"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "vac"))
            .unwrap();
        std::fs::remove_file(vac).unwrap();
        let got = open_and_read(&storage).unwrap();
        if dups {
            // Every written cell (no overwrites in an array with duplicates), twice.
            assert_eq!(got.len(), 2 * 3000);
        } else {
            assert_eq!(got, expected);
        }
        let report = tessera_query::verify::verify(storage.as_ref(), &Default::default()).unwrap();
        assert!(report.is_ok());
        assert_eq!(report.warnings().count(), 1, "{:#?}", report.problems);
        assert!(report.problems[0].message.contains("no .vac file lists"), "{:?}", report.problems);
    }
}

#[test]
fn opens_racing_writes_consolidations_and_vacuums_always_succeed() {
    // A fresh open lists the commits, then reads footers: a vacuum in between removes some
    // of what it listed, and the open lists the array again. A vacuum between the open and
    // the read makes the read fail with `FragmentRemoved` (never wrong cells).
    let (_tmp, storage) = new_array(false);
    let rounds = 12u64;
    let writes: Vec<(u64, Vec<Cell>)> =
        (1..=2 * rounds).map(|t| (t, cells(t, 7 * (t as i64 % 9), 2, 300))).collect();
    let states: Vec<Vec<Cell>> =
        (0..=writes.len()).map(|k| state(writes[..k].iter().map(|(t, c)| (*t, c)))).collect();
    let done = AtomicBool::new(false);
    let opens = AtomicUsize::new(0);
    let removed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut last = 0;
                    while !done.load(Ordering::Acquire) {
                        let array = Array::open(storage.clone())
                            .unwrap_or_else(|e| panic!("an open racing a vacuum failed: {e}"));
                        // The vacuum may remove the fragments this handle shows before it
                        // reads them: a clear error, and the caller reopens.
                        let got = match read(&array) {
                            Ok(got) => got,
                            Err(Error::FragmentRemoved { .. }) => {
                                removed.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            Err(e) => panic!("a read racing a vacuum failed: {e}"),
                        };
                        let k = states.iter().rposition(|st| *st == got).unwrap_or_else(|| {
                            panic!("a read of {} cells matches no prefix of the writes", got.len())
                        });
                        assert!(k >= last, "saw {k} writes after {last}");
                        last = k;
                        opens.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for pair in writes.chunks(2) {
            for (t, c) in pair {
                write(&storage, *t, c).unwrap();
            }
            consolidate::consolidate(storage.clone(), Mode::Fragments, &Default::default())
                .unwrap();
            consolidate::vacuum(storage.as_ref(), Mode::Fragments).unwrap();
        }
        done.store(true, Ordering::Release);
        for r in readers {
            r.join().unwrap();
        }
    });
    assert_eq!(open_and_read(&storage).unwrap(), *states.last().unwrap());
    eprintln!(
        "{} opens and reads raced {rounds} consolidations and vacuums; {} reads found their \
         fragments vacuumed after the open",
        opens.load(Ordering::Relaxed),
        removed.load(Ordering::Relaxed)
    );
}
