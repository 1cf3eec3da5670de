//! The conformance suite and zero-copy checks for [`MemoryStorage`].

use std::sync::Arc;

use tessera_storage::{Bytes, MemoryStorage, Storage};

mod conformance {
    use super::*;

    fn make() -> Arc<dyn Storage> {
        Arc::new(MemoryStorage::new())
    }

    tessera_storage::storage_test_suite!(make);
}

#[test]
fn run_all_passes() {
    tessera_storage::testsuite::run_all(|| Arc::new(MemoryStorage::new()) as Arc<dyn Storage>);
}

#[test]
fn reads_are_zero_copy() {
    let storage = MemoryStorage::new();
    let data = Bytes::from(vec![7u8; 4096]);
    storage.write("a/b", data.clone()).unwrap();
    let whole = storage.read("a/b").unwrap();
    assert_eq!(whole.as_ptr(), data.as_ptr());
    let part = storage.read_range("a/b", 100..200).unwrap();
    assert_eq!(part.as_ptr(), data[100..].as_ptr());
    let parts = storage.read_ranges("a/b", &[10..20, 0..1]).unwrap();
    assert_eq!(parts[0].as_ptr(), data[10..].as_ptr());
    assert_eq!(parts[1].as_ptr(), data.as_ptr());
}

#[test]
fn failing_suite_is_reported() {
    /// A storage whose `list` forgets to sort.
    #[derive(Debug, Default)]
    struct Unsorted(MemoryStorage);
    impl Storage for Unsorted {
        fn read(&self, p: &str) -> tessera_storage::Result<Bytes> {
            self.0.read(p)
        }
        fn read_range(&self, p: &str, r: std::ops::Range<u64>) -> tessera_storage::Result<Bytes> {
            self.0.read_range(p, r)
        }
        fn size(&self, p: &str) -> tessera_storage::Result<u64> {
            self.0.size(p)
        }
        fn exists(&self, p: &str) -> tessera_storage::Result<bool> {
            self.0.exists(p)
        }
        fn is_dir(&self, p: &str) -> tessera_storage::Result<bool> {
            self.0.is_dir(p)
        }
        fn list(&self, p: &str) -> tessera_storage::Result<Vec<tessera_storage::Entry>> {
            let mut entries = self.0.list(p)?;
            entries.reverse();
            Ok(entries)
        }
        fn write(&self, p: &str, d: Bytes) -> tessera_storage::Result<()> {
            self.0.write(p, d)
        }
        fn create_dir(&self, p: &str) -> tessera_storage::Result<()> {
            self.0.create_dir(p)
        }
        fn remove(&self, p: &str) -> tessera_storage::Result<()> {
            self.0.remove(p)
        }
        fn remove_dir_all(&self, p: &str) -> tessera_storage::Result<()> {
            self.0.remove_dir_all(p)
        }
        fn publish(&self, p: &str, d: Bytes) -> tessera_storage::Result<()> {
            self.0.publish(p, d)
        }
        fn rename(&self, f: &str, t: &str) -> tessera_storage::Result<()> {
            self.0.rename(f, t)
        }
    }
    let result = std::panic::catch_unwind(|| {
        tessera_storage::testsuite::run_all(|| Arc::new(Unsorted::default()) as Arc<dyn Storage>);
    });
    let payload = result.expect_err("an unsorted listing must fail the suite");
    let message = payload.downcast_ref::<String>().map(String::as_str).unwrap_or_default();
    assert!(message.contains("list_sorted_direct_children"), "{message}");
}
