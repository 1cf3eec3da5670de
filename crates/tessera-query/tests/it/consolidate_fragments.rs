//! Fragment consolidation by Tessera: every fixture array reads the same before and after,
//! at the latest time and at times before, inside and after the consolidated range.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_query::consolidate::{Mode, Options, consolidate};
use tessera_query::{Array, ReadResult};
use tessera_storage::{LocalStorage, Storage};
use tessera_types::ReadLayout;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// One cell: each field's bytes, `None` when null.
type Row = Vec<Option<Vec<u8>>>;

/// Every cell as a sortable row of its fields' bytes.
fn rows(r: &ReadResult) -> Vec<Row> {
    (0..r.cell_num())
        .map(|i| {
            r.columns
                .iter()
                .map(|c| c.is_valid(i).then(|| c.cell(i).unwrap_or_default().to_vec()))
                .collect()
        })
        .collect()
}

fn read_at(storage: &Arc<dyn Storage>, at: u64) -> Option<(bool, Vec<Row>)> {
    let array = Array::open_at(storage.clone(), at).unwrap();
    let dense = array.schema().is_dense();
    let r = array
        .read()
        .layout(if dense { ReadLayout::RowMajor } else { ReadLayout::GlobalOrder })
        .execute()
        .unwrap();
    let mut rows = rows(&r);
    if !dense {
        rows.sort();
    }
    Some((dense, rows))
}

fn times(storage: &Arc<dyn Storage>) -> Vec<u64> {
    let array = Array::open_at(storage.clone(), u64::MAX - 1).unwrap();
    let mut t: Vec<u64> = vec![u64::MAX - 1];
    for f in array.fragments() {
        let (a, b) = f.name().timestamp_range();
        t.extend([a.saturating_sub(1), a, b, b + 1]);
    }
    for d in &array.directory().deletes {
        t.extend([d.name.t1().saturating_sub(1), d.name.t1()]);
    }
    t.sort_unstable();
    t.dedup();
    t
}

#[test]
fn consolidated_fixtures_read_the_same() {
    let mut checked = 0;
    for family in ["fragments", "filters"] {
        let dir = testdata().join(family);
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("__schema").is_dir())
            .collect();
        names.sort();
        for src in names {
            let tmp = tempfile::tempdir().unwrap();
            let dst = tmp.path().join("a");
            copy_dir(&src, &dst);
            let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(&dst).with_sync(false));
            let ts = times(&storage);
            let before: Vec<_> = ts.iter().map(|&t| read_at(&storage, t)).collect();
            let report = consolidate(
                storage.clone(),
                Mode::Fragments,
                &Options { range: Some((0, u64::MAX - 1)), ..Options::default() },
            )
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
            let after: Vec<_> = ts.iter().map(|&t| read_at(&storage, t)).collect();
            for ((t, b), a) in ts.iter().zip(&before).zip(&after) {
                assert!(
                    b == a,
                    "{}: read at {t} differs after consolidating {:?}",
                    src.display(),
                    report
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} arrays");
}

/// libtiledb's step settings: merging in pairs takes one step per merge, every step keeps
/// what every time reads, and invalid settings are refused before anything is written.
#[test]
fn consolidation_in_steps_reads_the_same() {
    let pairs = Options {
        range: Some((0, u64::MAX - 1)),
        step_min_frags: 2,
        step_max_frags: 2,
        ..Options::default()
    };
    let mut multi = 0;
    for name in ["sparse_consolidated", "sparse_deletes", "sparse_int64", "dense_overwrites"] {
        let src = testdata().join("fragments").join(name);
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join("a");
        copy_dir(&src, &dst);
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(&dst).with_sync(false));
        let ts = times(&storage);
        let before: Vec<_> = ts.iter().map(|&t| read_at(&storage, t)).collect();
        let n = Array::open(storage.clone()).unwrap().fragments().len();
        let report = consolidate(storage.clone(), Mode::Fragments, &pairs).unwrap();
        for (inputs, _) in &report.steps {
            assert_eq!(inputs.len(), 2, "{name}: {report:?}");
        }
        multi += usize::from(report.steps.len() > 1);
        let left = Array::open(storage.clone()).unwrap().fragments().len();
        if !report.steps.is_empty() {
            assert_eq!(left, n - report.steps.len(), "{name}: {report:?}");
        }
        let after: Vec<_> = ts.iter().map(|&t| read_at(&storage, t)).collect();
        assert!(before == after, "{name}: reads differ after {report:?}");
        for bad in [
            Options { step_min_frags: 3, step_max_frags: 2, ..Options::default() },
            Options { step_size_ratio: 1.5, ..Options::default() },
            Options { amplification: -1.0, ..Options::default() },
        ] {
            let err = consolidate(storage.clone(), Mode::Fragments, &bad).unwrap_err();
            assert!(err.to_string().contains("consolidation:"), "{err}");
        }
        assert_eq!(Array::open(storage.clone()).unwrap().fragments().len(), left);
    }
    assert!(multi >= 2, "merging in pairs took several steps on {multi} arrays");
}

use crate::common;

/// A consolidation interrupted at any point (a storage failure at each write in turn) leaves
/// the array reading as before.
#[test]
fn an_interrupted_consolidation_leaves_the_contents_unchanged() {
    use tessera_storage::MemoryStorage;
    let src = testdata().join("fragments/sparse_deletes");
    // Load the fixture into memory.
    let mem = Arc::new(MemoryStorage::new());
    fn load(dir: &Path, rel: &str, mem: &MemoryStorage) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            if e.file_type().unwrap().is_dir() {
                mem.create_dir(&path).unwrap();
                load(&e.path(), &path, mem);
            } else {
                mem.write(&path, std::fs::read(e.path()).unwrap().into()).unwrap();
            }
        }
    }
    load(&src, "", &mem);
    let plain: Arc<dyn Storage> = mem.clone();
    let ts = times(&plain);
    let before: Vec<_> = ts.iter().map(|&t| read_at(&plain, t)).collect();
    // Count the pieces a whole consolidation writes, on a copy.
    let probe_mem = Arc::new(MemoryStorage::new());
    load(&src, "", &probe_mem);
    let probe = common::failing::Failing::new(probe_mem, usize::MAX);
    consolidate(probe.clone(), Mode::Fragments, &Options::default()).unwrap();
    let pieces = probe.pieces();
    assert!(pieces > 5, "{pieces}");
    for k in 0..pieces {
        let copy = Arc::new(MemoryStorage::new());
        load(&src, "", &copy);
        let failing = common::failing::Failing::new(copy.clone(), k);
        assert!(consolidate(failing, Mode::Fragments, &Options::default()).is_err(), "piece {k}");
        let storage: Arc<dyn Storage> = copy;
        for ((t, b), a) in ts.iter().zip(&before).zip(ts.iter().map(|&t| read_at(&storage, t))) {
            assert!(*b == a, "failure at piece {k}: read at {t} differs");
        }
    }
}
