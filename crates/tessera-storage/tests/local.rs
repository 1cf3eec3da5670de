//! The conformance suite and local-only checks for [`LocalStorage`].

use std::fs;
use std::sync::Arc;

use tempfile::TempDir;
use tessera_storage::{Bytes, Entry, Error, LocalStorage, Storage};

/// A storage rooted in a fresh temporary directory that lives as long as the fixture.
struct Fixture {
    storage: LocalStorage,
    _dir: TempDir,
}

impl AsRef<dyn Storage> for Fixture {
    fn as_ref(&self) -> &(dyn Storage + 'static) {
        &self.storage
    }
}

fn fixture() -> Fixture {
    let dir = TempDir::new().unwrap();
    Fixture { storage: LocalStorage::new(dir.path()), _dir: dir }
}

mod conformance {
    tessera_storage::storage_test_suite!(super::fixture);
}

mod conformance_small_coalesce_gap {
    fn fixture() -> super::Fixture {
        let mut f = super::fixture();
        f.storage = f.storage.clone().with_coalesce_gap(0).with_sync(false);
        f
    }
    tessera_storage::storage_test_suite!(fixture);
}

#[test]
fn run_all_in_one_temp_dir() {
    let dir = TempDir::new().unwrap();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    tessera_storage::testsuite::run_all(|| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = dir.path().join(n.to_string());
        fs::create_dir(&root).unwrap();
        Arc::new(LocalStorage::new(root)) as Arc<dyn Storage>
    });
}

#[test]
fn objects_are_plain_files_under_the_root() {
    let f = fixture();
    f.storage.write("arr/__schema/s", Bytes::from_static(b"schema")).unwrap();
    f.storage.publish("arr/__commits/c.wrt", Bytes::new()).unwrap();
    let root = f._dir.path();
    assert_eq!(fs::read(root.join("arr/__schema/s")).unwrap(), b"schema");
    assert_eq!(fs::metadata(root.join("arr/__commits/c.wrt")).unwrap().len(), 0);
    let names: Vec<_> =
        fs::read_dir(root.join("arr/__commits")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["c.wrt"], "publish leaves no temporary file behind");
}

#[test]
fn leftover_temporary_files_are_hidden() {
    let f = fixture();
    let root = f._dir.path();
    fs::create_dir(root.join("d")).unwrap();
    fs::write(root.join("d/.obj.123-4.tessera-tmp"), b"partial").unwrap();
    fs::write(root.join("d/.hidden"), b"a dot file is listed").unwrap();
    fs::write(root.join("d/obj"), b"whole").unwrap();
    assert_eq!(f.storage.list("d").unwrap(), [Entry::file(".hidden", 20), Entry::file("obj", 5)]);
}

#[test]
fn root_is_created_on_first_write() {
    let dir = TempDir::new().unwrap();
    let storage = LocalStorage::new(dir.path().join("not/yet"));
    assert!(!storage.exists("").unwrap());
    assert!(storage.list("").unwrap_err().is_not_found());
    storage.write("a", Bytes::from_static(b"1")).unwrap();
    assert!(storage.is_dir("").unwrap());
    assert_eq!(fs::read(dir.path().join("not/yet/a")).unwrap(), b"1");
}

#[test]
fn nothing_outside_the_root_is_reached() {
    let outer = TempDir::new().unwrap();
    fs::write(outer.path().join("secret"), b"secret").unwrap();
    fs::create_dir(outer.path().join("root")).unwrap();
    let storage = LocalStorage::new(outer.path().join("root"));
    for path in ["../secret", "a/../../secret", "/etc/passwd"] {
        assert!(matches!(storage.read(path), Err(Error::InvalidPath { .. })));
    }
    assert!(matches!(
        storage.write("../written", Bytes::from_static(b"x")),
        Err(Error::InvalidPath { .. })
    ));
    assert!(!outer.path().join("written").exists());
}

#[test]
fn coalesced_reads_match_separate_reads() {
    let f = fixture();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    f.storage.write("x", Bytes::from(data.clone())).unwrap();
    let ranges =
        [0..10, 5..15, 100..100, 70_000..70_010, 70_005..200_000, 299_990..300_000, 20..30];
    for gap in [0, 1, 100, 65_536, u64::MAX] {
        let storage = f.storage.clone().with_coalesce_gap(gap);
        let got = storage.read_ranges("x", &ranges).unwrap();
        for (range, bytes) in ranges.iter().zip(&got) {
            assert_eq!(
                bytes.as_ref(),
                &data[range.start as usize..range.end as usize],
                "gap {gap}, range {range:?}"
            );
        }
    }
}

#[test]
fn io_errors_keep_their_cause() {
    let f = fixture();
    let err = f.storage.read("missing/file").unwrap_err();
    assert!(err.is_not_found());
    let source = std::error::Error::source(&err).expect("an io::Error source");
    assert!(source.downcast_ref::<std::io::Error>().is_some());
    assert_eq!(err.to_string(), "read \"missing/file\": entity not found");
}

/// A file written piece by piece well past the early-writeback threshold (a helper thread
/// syncs it as it grows) holds exactly what was written, with or without syncing.
#[test]
fn large_streamed_files_are_written_whole() {
    for sync in [true, false] {
        let dir = TempDir::new().unwrap();
        let storage = LocalStorage::new(dir.path()).with_sync(sync);
        let piece: Vec<u8> = (0..(3 << 20) as u32).map(|i| (i % 251) as u8).collect();
        let mut writer = storage.writer("big/data.tdb").unwrap();
        for k in 0..25u8 {
            let mut p = piece.clone();
            p[0] = k;
            writer.write_all(&p).unwrap();
        }
        assert_eq!(writer.finish().unwrap(), 25 * piece.len() as u64);
        let back = fs::read(dir.path().join("big/data.tdb")).unwrap();
        assert_eq!(back.len(), 25 * piece.len());
        for (k, p) in back.chunks(piece.len()).enumerate() {
            assert_eq!(p[0], k as u8);
            assert!(p[1..] == piece[1..], "piece {k}");
        }
    }
}
