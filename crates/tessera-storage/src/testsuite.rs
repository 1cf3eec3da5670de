//! The conformance suite every [`Storage`] backend runs, so that they all behave alike.
//!
//! Each test is a public function taking a fresh, empty storage (its root exists and holds
//! nothing) and panicking on failure. A backend runs them all in one of two ways:
//!
//! * [`storage_test_suite!`](crate::storage_test_suite) generates one `#[test]` per
//!   function. Invoke it inside a module of its own in the backend's tests. Its argument is
//!   a function or closure that returns a fresh fixture: anything that is
//!   `AsRef<dyn Storage>`, such as an `Arc<dyn Storage>` or a struct that also keeps a
//!   temporary directory alive for the length of the test.
//! * [`run_all`] runs every test from a single `#[test]`.
//!
//! ```
//! mod memory_conformance {
//!     use std::sync::Arc;
//!     use tessera_storage::{MemoryStorage, Storage};
//!
//!     fn make() -> Arc<dyn Storage> {
//!         Arc::new(MemoryStorage::new())
//!     }
//!     tessera_storage::storage_test_suite!(make);
//! }
//! ```
//!
//! What is covered: whole, ranged and multi-range reads (contents, empty ranges, overlapping
//! and unsorted ranges, ranges reaching past the end), `size`, `exists`, `is_dir`, listing
//! (byte-order sorting, direct children only, sizes, empty directories), writes that create
//! parents and overwrite, `create_dir`, `remove`, `remove_dir_all` (siblings that share a
//! name prefix survive), `publish` (replacement; concurrent readers never see a partial
//! object nor a temporary name), `rename` of objects and directories, path normalisation and
//! refusal of paths that could escape the root, concurrent writers, and for every failure the
//! error's kind, operation and path.

// `read_ranges` takes a slice of ranges, so one-range arrays are what is meant.
#![allow(clippy::single_range_in_vec_init)]

use std::io::ErrorKind;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use bytes::Bytes;

use crate::{Entry, Error, Op, Result, Storage};

/// One test of the suite: it gets a fresh, empty storage and panics on failure.
pub type TestFn = fn(&dyn Storage);

/// Every test of the suite with its name, in the order [`run_all`] runs them.
pub const TESTS: &[(&str, TestFn)] = &[
    ("write_then_read", write_then_read),
    ("read_missing", read_missing),
    ("read_directory", read_directory),
    ("read_range_contents", read_range_contents),
    ("read_range_out_of_bounds", read_range_out_of_bounds),
    ("read_ranges_many", read_ranges_many),
    ("exists_and_is_dir", exists_and_is_dir),
    ("write_creates_parents", write_creates_parents),
    ("create_dir_behaviour", create_dir_behaviour),
    ("write_under_object", write_under_object),
    ("list_sorted_direct_children", list_sorted_direct_children),
    ("list_errors", list_errors),
    ("list_names_like_list", list_names_like_list),
    ("read_tail_end", read_tail_end),
    ("read_range_into_buffer", read_range_into_buffer),
    ("read_range_scatter_pieces", read_range_scatter_pieces),
    ("remove_object", remove_object),
    ("remove_dir_all_tree", remove_dir_all_tree),
    ("publish_replaces", publish_replaces),
    ("publish_is_atomic", publish_is_atomic),
    ("rename_objects_and_dirs", rename_objects_and_dirs),
    ("paths_are_normalised", paths_are_normalised),
    ("invalid_paths_refused", invalid_paths_refused),
    ("concurrent_writers", concurrent_writers),
    ("writer_in_pieces", writer_in_pieces),
];

/// Runs every test in [`TESTS`], each on a fresh fixture from `make`, and panics naming the
/// tests that failed (each failure's own message is printed as it happens).
///
/// # Panics
///
/// If any test fails.
pub fn run_all<F: AsRef<dyn Storage>>(make: impl Fn() -> F) {
    let mut failed = Vec::new();
    for (name, test) in TESTS {
        let fixture = make();
        if catch_unwind(AssertUnwindSafe(|| test(fixture.as_ref()))).is_err() {
            failed.push(*name);
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} storage conformance tests failed: {}",
        failed.len(),
        TESTS.len(),
        failed.join(", ")
    );
}

/// Generates one `#[test]` per function of the conformance suite
/// ([`testsuite`](crate::testsuite)), plus a test checking that none is missing.
///
/// The argument is a function or closure returning a fresh fixture for each test: anything
/// that is `AsRef<dyn Storage>`. Invoke it inside a module of its own, as the generated test
/// functions take the names of the suite's functions.
#[macro_export]
macro_rules! storage_test_suite {
    ($make:expr $(,)?) => {
        $crate::__storage_tests!(
            $make;
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
    };
}

/// The body of [`storage_test_suite!`]; not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __storage_tests {
    ($make:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let fixture = ($make)();
                $crate::testsuite::$name(
                    ::core::convert::AsRef::<dyn $crate::Storage>::as_ref(&fixture),
                );
            }
        )*

        #[test]
        fn storage_test_suite_is_complete() {
            let generated: &[&str] = &[$(stringify!($name)),*];
            let listed: ::std::vec::Vec<&str> =
                $crate::testsuite::TESTS.iter().map(|(name, _)| *name).collect();
            assert_eq!(generated, listed.as_slice());
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// `len` bytes of a pattern that does not repeat at any small period.
fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 9) ^ (i >> 17)) as u8 ^ seed)
        .collect::<Vec<u8>>()
        .into()
}

fn ok<T>(result: Result<T>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{what}: unexpected error: {e} ({e:?})"),
    }
}

/// Asserts an [`Error::Io`] of `kind` naming `op` and `path`, in its fields and its message.
#[track_caller]
fn expect_io<T>(result: Result<T>, op: Op, path: &str, kind: ErrorKind) -> Error {
    let Err(err) = result else {
        panic!("{op} {path:?}: expected a {kind:?} error, got Ok");
    };
    assert_eq!(err.io_error_kind(), Some(kind), "{op} {path:?}: wrong error: {err} ({err:?})");
    assert_eq!(err.is_not_found(), kind == ErrorKind::NotFound, "{err:?}");
    assert_eq!(err.op(), op, "{err:?}");
    assert_eq!(err.path(), path, "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(op.as_str()) && message.contains(path),
        "the message {message:?} should name {op} and {path:?}"
    );
    assert!(std::error::Error::source(&err).is_some(), "an I/O error keeps its cause: {err:?}");
    err
}

#[track_caller]
fn expect_not_found<T>(result: Result<T>, op: Op, path: &str) {
    expect_io(result, op, path, ErrorKind::NotFound);
}

#[track_caller]
fn expect_invalid_path<T>(result: Result<T>, op: Op, path: &str) {
    match result {
        Err(Error::InvalidPath { op: got_op, path: got_path, .. }) => {
            assert_eq!((got_op, got_path.as_str()), (op, path));
        }
        Err(e) => panic!("{op} {path:?}: expected InvalidPath, got {e:?}"),
        Ok(_) => panic!("{op} {path:?}: expected InvalidPath, got Ok"),
    }
}

#[track_caller]
fn expect_range<T>(result: Result<T>, op: Op, path: &str, range: Range<u64>, size: u64) {
    match result {
        Err(
            ref err @ Error::RangeOutOfBounds {
                op: got_op,
                path: ref got_path,
                range: ref got_range,
                size: got_size,
            },
        ) => {
            assert_eq!(
                (got_op, got_path.as_str(), got_range.clone(), got_size),
                (op, path, range.clone(), size)
            );
            let message = err.to_string();
            let range_text = format!("{}..{}", range.start, range.end);
            for part in [op.as_str(), path, &range_text, &size.to_string()] {
                assert!(message.contains(part), "{message:?} should name {part:?}");
            }
            assert!(!err.is_not_found());
        }
        Err(e) => panic!("{op} {path:?} {range:?}: expected RangeOutOfBounds, got {e:?}"),
        Ok(_) => panic!("{op} {path:?} {range:?}: expected RangeOutOfBounds, got Ok"),
    }
}

fn names(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.name.as_str()).collect()
}

// ---------------------------------------------------------------------------------------------
// The tests

/// Write then read whole objects: ordinary, overwritten by a shorter one, empty, large.
pub fn write_then_read(s: &dyn Storage) {
    let data = pattern(1000, 1);
    ok(s.write("a.bin", data.clone()), "write a.bin");
    assert_eq!(ok(s.read("a.bin"), "read"), data);
    assert_eq!(ok(s.size("a.bin"), "size"), 1000);
    assert!(ok(s.exists("a.bin"), "exists"));
    assert!(!ok(s.is_dir("a.bin"), "is_dir"));

    ok(s.write("a.bin", Bytes::from_static(b"short")), "overwrite");
    assert_eq!(ok(s.read("a.bin"), "read"), "short");
    assert_eq!(ok(s.size("a.bin"), "size"), 5);

    ok(s.write("empty", Bytes::new()), "write empty");
    assert!(ok(s.read("empty"), "read empty").is_empty());
    assert_eq!(ok(s.size("empty"), "size empty"), 0);

    let large = pattern((3 << 20) + 7, 2);
    ok(s.write("large", large.clone()), "write large");
    assert!(ok(s.read("large"), "read large") == large, "large object differs");
    assert_eq!(ok(s.size("large"), "size large"), large.len() as u64);

    assert_eq!(
        ok(s.list(""), "list root"),
        [
            Entry::file("a.bin", 5),
            Entry::file("empty", 0),
            Entry::file("large", large.len() as u64)
        ]
    );
}

/// Every read of a missing object, or of a path through an object, is "not found".
pub fn read_missing(s: &dyn Storage) {
    for path in ["missing", "no/such/dir/file"] {
        expect_not_found(s.read(path), Op::Read, path);
        expect_not_found(s.read_range(path, 0..1), Op::ReadRange, path);
        expect_not_found(s.read_ranges(path, &[0..1]), Op::ReadRanges, path);
        expect_not_found(s.size(path), Op::Size, path);
        assert!(!ok(s.exists(path), "exists"));
        assert!(!ok(s.is_dir(path), "is_dir"));
    }
    ok(s.write("obj", Bytes::from_static(b"x")), "write");
    expect_not_found(s.read("obj/x"), Op::Read, "obj/x");
    expect_not_found(s.size("obj/x"), Op::Size, "obj/x");
    assert!(!ok(s.exists("obj/x"), "exists through an object"));
    assert!(!ok(s.is_dir("obj/x"), "is_dir through an object"));
}

/// Reading, sizing or removing a directory as if it were an object fails with `IsADirectory`.
pub fn read_directory(s: &dyn Storage) {
    ok(s.create_dir("d"), "create_dir");
    expect_io(s.read("d"), Op::Read, "d", ErrorKind::IsADirectory);
    expect_io(s.read_range("d", 0..0), Op::ReadRange, "d", ErrorKind::IsADirectory);
    expect_io(s.read_ranges("d", &[0..0]), Op::ReadRanges, "d", ErrorKind::IsADirectory);
    expect_io(s.size("d"), Op::Size, "d", ErrorKind::IsADirectory);
    expect_io(s.remove("d"), Op::Remove, "d", ErrorKind::IsADirectory);
    expect_io(s.read(""), Op::Read, "", ErrorKind::IsADirectory);
    assert!(ok(s.is_dir("d"), "is_dir"), "the directory survives");
}

/// Ranged reads return exactly the bytes asked for, including empty ranges at either end.
pub fn read_range_contents(s: &dyn Storage) {
    let data = pattern(100_000, 3);
    ok(s.write("r", data.clone()), "write");
    let ranges = [0..0, 0..1, 5..17, 4096..65_539, 99_999..100_000, 100_000..100_000, 0..100_000];
    for range in ranges {
        let got = ok(s.read_range("r", range.clone()), "read_range");
        let want = &data[range.start as usize..range.end as usize];
        assert!(got == want, "range {range:?} differs");
    }
    ok(s.write("empty", Bytes::new()), "write empty");
    assert!(ok(s.read_range("empty", 0..0), "empty range of empty object").is_empty());
}

/// Reversed ranges and ranges past the end fail, naming the path, the range and the size.
pub fn read_range_out_of_bounds(s: &dyn Storage) {
    ok(s.write("dir/obj", pattern(100, 4)), "write");
    let reversed = Range { start: 50, end: 40 };
    for range in [0..101, 100..101, 200..300, reversed, 101..101] {
        expect_range(s.read_range("dir/obj", range.clone()), Op::ReadRange, "dir/obj", range, 100);
    }
    expect_range(
        s.read_ranges("dir/obj", &[0..10, 90..100, 95..105, 0..1]),
        Op::ReadRanges,
        "dir/obj",
        95..105,
        100,
    );
    ok(s.write("empty", Bytes::new()), "write empty");
    expect_range(s.read_range("empty", 0..1), Op::ReadRange, "empty", 0..1, 0);
}

/// `read_ranges`: results in the order asked, overlapping, duplicate, empty, unsorted and
/// far-apart ranges.
pub fn read_ranges_many(s: &dyn Storage) {
    let data = pattern(1 << 20, 5);
    ok(s.write("m", data.clone()), "write");
    let ranges = [
        10..20,
        0..5,
        15..30,
        30..30,
        1_000_000..1_048_576,
        500_000..500_100,
        10..20,
        0..1_048_576,
        200_000..200_001,
        20..25,
    ];
    let got = ok(s.read_ranges("m", &ranges), "read_ranges");
    assert_eq!(got.len(), ranges.len());
    for (range, bytes) in ranges.iter().zip(&got) {
        let want = &data[range.start as usize..range.end as usize];
        assert!(bytes == want, "range {range:?} differs");
    }
    assert!(ok(s.read_ranges("m", &[]), "no ranges").is_empty());
}

/// `exists` and `is_dir` on the root, objects, directories and missing paths.
pub fn exists_and_is_dir(s: &dyn Storage) {
    assert!(ok(s.exists(""), "root exists"));
    assert!(ok(s.is_dir(""), "root is a directory"));
    assert_eq!(ok(s.list(""), "list empty root"), []);
    ok(s.write("d/f", Bytes::from_static(b"abc")), "write");
    assert!(ok(s.exists("d"), "exists"));
    assert!(ok(s.is_dir("d"), "is_dir"));
    assert!(ok(s.exists("d/f"), "exists"));
    assert!(!ok(s.is_dir("d/f"), "is_dir"));
    assert!(!ok(s.exists("d/g"), "exists"));
    assert!(!ok(s.is_dir("nope"), "is_dir"));
    assert!(!ok(s.exists("d/f/x"), "exists"));
}

/// Writing an object creates its missing parent directories.
pub fn write_creates_parents(s: &dyn Storage) {
    ok(s.write("a/b/c/d.txt", Bytes::from_static(b"abc")), "write");
    for dir in ["a", "a/b", "a/b/c"] {
        assert!(ok(s.is_dir(dir), "is_dir"), "{dir} should be a directory");
    }
    assert_eq!(ok(s.list(""), "list"), [Entry::dir("a")]);
    assert_eq!(ok(s.list("a"), "list"), [Entry::dir("b")]);
    assert_eq!(ok(s.list("a/b/c"), "list"), [Entry::file("d.txt", 3)]);
}

/// `create_dir` is recursive and idempotent; empty directories list as directories; objects
/// and directories do not overwrite each other.
pub fn create_dir_behaviour(s: &dyn Storage) {
    ok(s.create_dir("x/y/z"), "create_dir");
    ok(s.create_dir("x/y/z"), "create_dir again");
    ok(s.create_dir("x/"), "create_dir of an existing parent");
    ok(s.create_dir(""), "create_dir of the root");
    for dir in ["x", "x/y", "x/y/z"] {
        assert!(ok(s.is_dir(dir), "is_dir"), "{dir} should be a directory");
        assert!(ok(s.exists(dir), "exists"), "{dir} should exist");
    }
    assert_eq!(ok(s.list("x/y"), "list"), [Entry::dir("z")]);
    assert_eq!(ok(s.list("x/y/z"), "list empty dir"), []);

    ok(s.write("file", Bytes::from_static(b"data")), "write");
    expect_io(s.create_dir("file"), Op::CreateDir, "file", ErrorKind::AlreadyExists);
    expect_io(s.create_dir("file/sub"), Op::CreateDir, "file/sub", ErrorKind::NotADirectory);
    expect_io(s.write("x/y", Bytes::from_static(b"no")), Op::Write, "x/y", ErrorKind::IsADirectory);
    expect_io(
        s.publish("x/y", Bytes::from_static(b"no")),
        Op::Publish,
        "x/y",
        ErrorKind::IsADirectory,
    );
    assert_eq!(ok(s.read("file"), "read"), "data");
    assert!(ok(s.is_dir("x/y"), "is_dir"));
    assert_eq!(ok(s.list("x/y"), "list"), [Entry::dir("z")]);
}

/// Writing below an object fails with `NotADirectory` and leaves the object alone.
pub fn write_under_object(s: &dyn Storage) {
    ok(s.write("f", Bytes::from_static(b"keep")), "write");
    for path in ["f/x", "f/x/y"] {
        expect_io(
            s.write(path, Bytes::from_static(b"no")),
            Op::Write,
            path,
            ErrorKind::NotADirectory,
        );
        expect_io(
            s.publish(path, Bytes::from_static(b"no")),
            Op::Publish,
            path,
            ErrorKind::NotADirectory,
        );
    }
    assert_eq!(ok(s.read("f"), "read"), "keep");
    assert_eq!(ok(s.list(""), "list"), [Entry::file("f", 4)]);
}

/// `list` returns the direct children only, sorted by name in byte order, with sizes.
pub fn list_sorted_direct_children(s: &dyn Storage) {
    let objects = [
        ("dir/b", 2),
        ("dir/a/nested/deep", 9),
        ("dir/B", 1),
        ("dir/a.txt", 3),
        ("dir/_x", 0),
        ("dir/z", 5),
        ("dir/__commits/x.wrt", 0),
        ("dir/a-b", 4),
        ("dir/a/f", 6),
        ("other", 1),
    ];
    for (path, len) in objects {
        ok(s.write(path, pattern(len, 6)), "write");
    }
    ok(s.create_dir("dir/empty"), "create_dir");
    let expected = [
        Entry::file("B", 1),
        Entry::dir("__commits"),
        Entry::file("_x", 0),
        Entry::dir("a"),
        Entry::file("a-b", 4),
        Entry::file("a.txt", 3),
        Entry::file("b", 2),
        Entry::dir("empty"),
        Entry::file("z", 5),
    ];
    let listed = ok(s.list("dir"), "list");
    assert_eq!(listed, expected, "listing of dir: {:?}", names(&listed));
    assert_eq!(ok(s.list("dir/"), "list with a trailing slash"), expected);
    assert_eq!(ok(s.list("dir/a"), "list"), [Entry::file("f", 6), Entry::dir("nested")]);
    assert_eq!(ok(s.list(""), "list"), [Entry::dir("dir"), Entry::file("other", 1)]);
}

/// `list` of a missing path or of an object fails.
pub fn list_errors(s: &dyn Storage) {
    expect_not_found(s.list("missing"), Op::List, "missing");
    ok(s.write("f", Bytes::from_static(b"1")), "write");
    expect_io(s.list("f"), Op::List, "f", ErrorKind::NotADirectory);
    expect_not_found(s.list("f/x"), Op::List, "f/x");
}

/// `list_names` gives the names and kinds `list` gives (sizes may be 0), and its errors.
pub fn list_names_like_list(s: &dyn Storage) {
    for (path, len) in [("d/b", 2), ("d/a/x", 1), ("d/c", 0), ("d/_t", 3)] {
        ok(s.write(path, pattern(len, 8)), "write");
    }
    let full = ok(s.list("d"), "list");
    let names = ok(s.list_names("d"), "list_names");
    let kinds = |v: &[Entry]| v.iter().map(|e| (e.name.clone(), e.is_dir)).collect::<Vec<_>>();
    assert_eq!(kinds(&names), kinds(&full));
    for (n, f) in names.iter().zip(&full) {
        assert!(n.size == 0 || n.size == f.size, "{}: size {} vs {}", n.name, n.size, f.size);
    }
    expect_not_found(s.list_names("missing"), Op::List, "missing");
    expect_io(s.list_names("d/b"), Op::List, "d/b", ErrorKind::NotADirectory);
}

/// `read_tail` gives the last bytes of an object (all of a smaller one) and its size.
pub fn read_tail_end(s: &dyn Storage) {
    let data = pattern(50_000, 9);
    ok(s.write("t", data.clone()), "write");
    for max in [0u64, 1, 100, 49_999, 50_000, 1 << 20] {
        let (tail, size) = ok(s.read_tail("t", max), "read_tail");
        assert_eq!(size, 50_000);
        let start = 50_000 - max.min(50_000) as usize;
        assert!(tail == data[start..], "tail of {max} bytes differs");
    }
    ok(s.write("empty", Bytes::new()), "write empty");
    assert_eq!(ok(s.read_tail("empty", 10), "read_tail of empty").1, 0);
    match s.read_tail("missing", 10) {
        Err(e) if e.is_not_found() => {}
        Err(e) => panic!("read_tail of a missing object: expected NotFound, got {e:?}"),
        Ok(_) => panic!("read_tail of a missing object: expected NotFound, got Ok"),
    }
}

/// `read_range_into`: the bytes of the range replace what the buffer held; bad ranges and
/// missing objects fail as `read_range` does, leaving the buffer empty.
pub fn read_range_into_buffer(s: &dyn Storage) {
    let data = pattern(100_000, 11);
    ok(s.write("r", data.clone()), "write");
    let mut buf = vec![0xAA; 300_000];
    for range in [0..0, 0..1, 5..17, 4096..65_539, 99_999..100_000, 0..100_000] {
        ok(s.read_range_into("r", range.clone(), &mut buf), "read_range_into");
        assert!(buf == data[range.start as usize..range.end as usize], "range {range:?} differs");
    }
    buf.extend_from_slice(b"stale");
    expect_range(
        s.read_range_into("r", 0..100_001, &mut buf),
        Op::ReadRange,
        "r",
        0..100_001,
        100_000,
    );
    assert!(buf.is_empty(), "a failed read leaves the buffer empty");
    buf.extend_from_slice(b"stale");
    match s.read_range_into("missing", 0..1, &mut buf) {
        Err(e) if e.is_not_found() => {}
        Err(e) => panic!("read_range_into of a missing object: expected NotFound, got {e:?}"),
        Ok(()) => panic!("read_range_into of a missing object: expected NotFound, got Ok"),
    }
    assert!(buf.is_empty(), "a failed read leaves the buffer empty");
}

/// `read_range_scatter`: consecutive bytes fill the buffers in order (empty buffers and more
/// buffers than one vectored read takes included); ranges past the end and missing objects
/// fail as `read_range` does.
pub fn read_range_scatter_pieces(s: &dyn Storage) {
    let data = pattern(100_000, 13);
    ok(s.write("r", data.clone()), "write");
    for (offset, sizes) in [
        (0u64, vec![0usize]),
        (0, vec![100_000]),
        (7, vec![3, 0, 4096, 1, 60_000]),
        (99_990, vec![4, 6]),
        // 3000 buffers of 30 bytes: more than the 1024 of one `preadv`.
        (1000, vec![30; 3000]),
    ] {
        let mut bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0xAA; n]).collect();
        let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(Vec::as_mut_slice).collect();
        ok(s.read_range_scatter("r", offset, &mut refs), "read_range_scatter");
        let got: Vec<u8> = bufs.concat();
        let start = offset as usize;
        assert!(got == data[start..start + got.len()], "offset {offset}, sizes {sizes:?} differ");
    }
    let mut a = vec![0u8; 10];
    let mut b = vec![0u8; 11];
    expect_range(
        s.read_range_scatter("r", 99_980, &mut [&mut a, &mut b]),
        Op::ReadRange,
        "r",
        99_980..100_001,
        100_000,
    );
    match s.read_range_scatter("missing", 0, &mut [&mut a]) {
        Err(e) if e.is_not_found() => {}
        Err(e) => panic!("read_range_scatter of a missing object: expected NotFound, got {e:?}"),
        Ok(()) => panic!("read_range_scatter of a missing object: expected NotFound, got Ok"),
    }
}

/// `remove` deletes one object, keeps its directory, and fails on missing paths and
/// directories.
pub fn remove_object(s: &dyn Storage) {
    ok(s.write("d/f", Bytes::from_static(b"1")), "write");
    ok(s.write("d/g", Bytes::from_static(b"22")), "write");
    ok(s.remove("d/f"), "remove");
    assert!(!ok(s.exists("d/f"), "exists"));
    expect_not_found(s.read("d/f"), Op::Read, "d/f");
    assert_eq!(ok(s.list("d"), "list"), [Entry::file("g", 2)]);
    ok(s.remove("d/g"), "remove");
    assert!(ok(s.is_dir("d"), "is_dir"), "the emptied directory stays");
    assert_eq!(ok(s.list("d"), "list"), []);
    expect_not_found(s.remove("d/f"), Op::Remove, "d/f");
    expect_not_found(s.remove("d/f/x"), Op::Remove, "d/f/x");
    expect_io(s.remove("d"), Op::Remove, "d", ErrorKind::IsADirectory);
    expect_invalid_path(s.remove(""), Op::Remove, "");
}

/// `remove_dir_all` deletes a whole tree and nothing else, even siblings sharing its prefix.
pub fn remove_dir_all_tree(s: &dyn Storage) {
    for path in ["t/a/x", "t/a/y/z", "t/b", "t/a.txt", "t/a-1/f", "t/ab"] {
        ok(s.write(path, Bytes::from_static(b"1")), "write");
    }
    ok(s.create_dir("t/a/empty"), "create_dir");
    ok(s.remove_dir_all("t/a"), "remove_dir_all");
    for gone in ["t/a", "t/a/x", "t/a/y", "t/a/y/z", "t/a/empty"] {
        assert!(!ok(s.exists(gone), "exists"), "{gone} should be gone");
    }
    assert_eq!(
        ok(s.list("t"), "list"),
        [Entry::dir("a-1"), Entry::file("a.txt", 1), Entry::file("ab", 1), Entry::file("b", 1)]
    );
    assert_eq!(ok(s.list("t/a-1"), "list"), [Entry::file("f", 1)]);
    expect_not_found(s.remove_dir_all("t/a"), Op::RemoveDirAll, "t/a");
    expect_io(s.remove_dir_all("t/b"), Op::RemoveDirAll, "t/b", ErrorKind::NotADirectory);
    expect_invalid_path(s.remove_dir_all(""), Op::RemoveDirAll, "");
    expect_invalid_path(s.remove_dir_all("./"), Op::RemoveDirAll, "./");
    ok(s.remove_dir_all("t/"), "remove_dir_all");
    assert_eq!(ok(s.list(""), "list"), []);
    assert!(ok(s.is_dir(""), "the root stays"));
}

/// `publish` creates parents, replaces objects, and leaves no temporary names behind.
pub fn publish_replaces(s: &dyn Storage) {
    ok(s.publish("c/__commits/f.wrt", Bytes::new()), "publish empty");
    assert!(ok(s.read("c/__commits/f.wrt"), "read").is_empty());
    let first = pattern(70_000, 7);
    ok(s.publish("c/obj", first.clone()), "publish");
    assert!(ok(s.read("c/obj"), "read") == first);
    ok(s.publish("c/obj", Bytes::from_static(b"second")), "republish");
    assert_eq!(ok(s.read("c/obj"), "read"), "second");
    assert_eq!(ok(s.list("c"), "list"), [Entry::dir("__commits"), Entry::file("obj", 6)]);
    assert_eq!(ok(s.list("c/__commits"), "list"), [Entry::file("f.wrt", 0)]);
}

/// While one thread republishes large objects of changing sizes, readers in other threads
/// always see one whole version, and listings show the object under its own name only.
pub fn publish_is_atomic(s: &dyn Storage) {
    const ROUNDS: usize = 40;
    const READERS: usize = 4;
    const BASE: usize = 512 * 1024;
    const STEP: usize = 4099;
    // Version `v` is `BASE + v * STEP` bytes, all equal to `v`.
    let version = |v: usize| Bytes::from(vec![v as u8; BASE + v * STEP]);
    ok(s.publish("pub/obj", version(0)), "publish version 0");

    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    thread::scope(|scope| {
        for reader in 0..READERS {
            let (done, reads) = (&done, &reads);
            scope.spawn(move || {
                let mut last = 0;
                loop {
                    // Decide before reading, so that the last read sees the last version.
                    let finished = done.load(Ordering::Acquire);
                    let data = ok(s.read("pub/obj"), "read while publishing");
                    let Some(&first) = data.first() else {
                        panic!("a reader saw an empty, partial object");
                    };
                    let v = usize::from(first);
                    assert_eq!(data.len(), BASE + v * STEP, "partial object (version {v})");
                    assert!(data.iter().all(|&b| usize::from(b) == v), "mixed versions");
                    assert!(v >= last, "went back from version {last} to {v}");
                    last = v;
                    if reader % 2 == 0 {
                        let listed = ok(s.list("pub"), "list while publishing");
                        assert_eq!(names(&listed), ["obj"], "temporary names are hidden");
                        let size = listed[0].size as usize;
                        assert!(size >= BASE && (size - BASE).is_multiple_of(STEP), "size {size}");
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                    if finished {
                        assert_eq!(v, ROUNDS, "the last version is visible");
                        break;
                    }
                }
            });
        }
        for v in 1..=ROUNDS {
            ok(s.publish("pub/obj", version(v)), "publish");
        }
        done.store(true, Ordering::Release);
    });
    assert!(reads.load(Ordering::Relaxed) >= READERS);
    assert!(ok(s.read("pub/obj"), "read") == version(ROUNDS));
    assert_eq!(ok(s.list("pub"), "list"), [Entry::file("obj", (BASE + ROUNDS * STEP) as u64)]);
}

/// `rename` moves objects (replacing an object at the destination) and directory trees, and
/// refuses what a file system refuses.
pub fn rename_objects_and_dirs(s: &dyn Storage) {
    let data = pattern(5000, 8);
    ok(s.write("r/a", data.clone()), "write");
    ok(s.rename("r/a", "r/b"), "rename");
    assert!(!ok(s.exists("r/a"), "exists"));
    assert!(ok(s.read("r/b"), "read") == data);

    ok(s.write("r/c", Bytes::from_static(b"old")), "write");
    ok(s.rename("r/b", "r/c"), "rename onto an object");
    assert!(ok(s.read("r/c"), "read") == data);
    assert_eq!(ok(s.list("r"), "list"), [Entry::file("c", 5000)]);

    ok(s.rename("r/c", "r/c"), "rename to itself");
    assert!(ok(s.read("r/c"), "read") == data);

    expect_not_found(s.rename("r/missing", "r/x"), Op::Rename, "r/missing");

    ok(s.write("r/dir/f", Bytes::from_static(b"f")), "write");
    ok(s.write("r/dir/sub/g", Bytes::from_static(b"gg")), "write");
    ok(s.create_dir("r/dir/empty"), "create_dir");
    ok(s.rename("r/dir", "s/moved"), "rename a directory");
    assert!(!ok(s.exists("r/dir"), "exists"));
    assert_eq!(ok(s.read("s/moved/f"), "read"), "f");
    assert_eq!(ok(s.read("s/moved/sub/g"), "read"), "gg");
    assert!(ok(s.is_dir("s/moved/empty"), "is_dir"));
    assert_eq!(
        ok(s.list("s/moved"), "list"),
        [Entry::dir("empty"), Entry::file("f", 1), Entry::dir("sub")]
    );

    expect_io(s.rename("r/c", "s/moved"), Op::Rename, "s/moved", ErrorKind::AlreadyExists);
    expect_io(s.rename("s/moved", "r/c"), Op::Rename, "r/c", ErrorKind::AlreadyExists);
    expect_io(
        s.rename("s/moved", "s/moved/sub/inner"),
        Op::Rename,
        "s/moved/sub/inner",
        ErrorKind::InvalidInput,
    );
    expect_io(s.rename("s/moved/f", "r/c/x"), Op::Rename, "r/c/x", ErrorKind::NotADirectory);
    assert!(ok(s.read("r/c"), "read") == data);
    assert_eq!(ok(s.read("s/moved/f"), "read"), "f");
}

/// Empty and `.` components are ignored; a trailing `/` is allowed.
pub fn paths_are_normalised(s: &dyn Storage) {
    ok(s.write("n//a/./b", Bytes::from_static(b"nb")), "write");
    assert_eq!(ok(s.read("n/a/b"), "read"), "nb");
    assert_eq!(ok(s.read("./n/a/b"), "read"), "nb");
    assert_eq!(ok(s.read_range("n/a//b", 1..2), "read_range"), "b");
    assert_eq!(ok(s.list("n/"), "list"), [Entry::dir("a")]);
    assert_eq!(ok(s.list("./n//a/"), "list"), [Entry::file("b", 2)]);
    assert_eq!(ok(s.list("."), "list"), [Entry::dir("n")]);
    assert!(ok(s.is_dir("n/a/"), "is_dir"));
    assert!(ok(s.exists("n/./a/b"), "exists"));
    ok(s.remove("n/a/b/"), "remove");
    assert!(!ok(s.exists("n/a/b"), "exists"));
}

/// Paths that are absolute, contain `..` or a NUL byte, or name the root where that makes no
/// sense, are refused by every operation before anything happens.
pub fn invalid_paths_refused(s: &dyn Storage) {
    ok(s.write("in/x", Bytes::from_static(b"x")), "write");
    let data = || Bytes::from_static(b"escape");
    for path in ["..", "../x", "in/../x", "in/x/..", "/in/x", "/", "in\0x"] {
        expect_invalid_path(s.read(path), Op::Read, path);
        expect_invalid_path(s.read_range(path, 0..1), Op::ReadRange, path);
        expect_invalid_path(s.read_ranges(path, &[0..1]), Op::ReadRanges, path);
        expect_invalid_path(s.size(path), Op::Size, path);
        expect_invalid_path(s.exists(path), Op::Exists, path);
        expect_invalid_path(s.is_dir(path), Op::IsDir, path);
        expect_invalid_path(s.list(path), Op::List, path);
        expect_invalid_path(s.write(path, data()), Op::Write, path);
        expect_invalid_path(s.create_dir(path), Op::CreateDir, path);
        expect_invalid_path(s.remove(path), Op::Remove, path);
        expect_invalid_path(s.remove_dir_all(path), Op::RemoveDirAll, path);
        expect_invalid_path(s.publish(path, data()), Op::Publish, path);
        expect_invalid_path(s.rename(path, "in/y"), Op::Rename, path);
        expect_invalid_path(s.rename("in/x", path), Op::Rename, path);
    }
    for root in ["", ".", "./"] {
        expect_invalid_path(s.write(root, data()), Op::Write, root);
        expect_invalid_path(s.publish(root, data()), Op::Publish, root);
        expect_invalid_path(s.remove(root), Op::Remove, root);
        expect_invalid_path(s.remove_dir_all(root), Op::RemoveDirAll, root);
        expect_invalid_path(s.rename(root, "in/y"), Op::Rename, root);
        expect_invalid_path(s.rename("in/x", root), Op::Rename, root);
    }
    assert_eq!(ok(s.list(""), "list"), [Entry::dir("in")]);
    assert_eq!(ok(s.list("in"), "list"), [Entry::file("x", 1)]);
}

/// Threads writing and publishing different objects at once all succeed.
pub fn concurrent_writers(s: &dyn Storage) {
    const THREADS: usize = 8;
    const FILES: usize = 10;
    thread::scope(|scope| {
        for t in 0..THREADS {
            scope.spawn(move || {
                for i in 0..FILES {
                    ok(s.write(&format!("w/{t}/{i}"), pattern(1000 + i, t as u8)), "write");
                }
                ok(s.publish(&format!("w/{t}.done"), Bytes::new()), "publish");
            });
        }
    });
    let listed = ok(s.list("w"), "list");
    assert_eq!(listed.len(), 2 * THREADS, "{:?}", names(&listed));
    for t in 0..THREADS {
        assert_eq!(ok(s.list(&format!("w/{t}")), "list").len(), FILES);
        assert!(ok(s.exists(&format!("w/{t}.done")), "exists"));
        for i in 0..FILES {
            let got = ok(s.read(&format!("w/{t}/{i}")), "read");
            assert!(got == pattern(1000 + i, t as u8), "w/{t}/{i} differs");
        }
    }
}

/// [`Storage::writer`] builds an object from pieces, appended one by one or many at once
/// (creating parents, replacing an object), reports its size, and refuses the root.
pub fn writer_in_pieces(s: &dyn Storage) {
    let data = pattern(100_000, 9);
    let mut w = ok(s.writer("dir/sub/pieces.bin"), "writer");
    let (one_by_one, at_once) = data.split_at(60_000);
    for piece in one_by_one.chunks(7919) {
        ok(w.write_all(piece), "write_all");
    }
    ok(w.write_all(&[]), "write_all empty");
    // More pieces than one `writev` takes (1024), empty ones among them.
    let pieces: Vec<&[u8]> =
        at_once.chunks(13).flat_map(|p| [p, &p[..0]]).chain([&at_once[..0]]).collect();
    assert!(pieces.len() > 3000);
    ok(w.write_all_vectored(&pieces), "write_all_vectored");
    assert_eq!(ok(w.finish(), "finish"), data.len() as u64);
    assert!(ok(s.read("dir/sub/pieces.bin"), "read") == data, "pieces differ");

    let w = ok(s.writer("dir/sub/pieces.bin"), "writer over an object");
    assert_eq!(ok(w.finish(), "finish empty"), 0);
    assert_eq!(ok(s.size("dir/sub/pieces.bin"), "size"), 0);
    assert!(s.writer("").is_err(), "a writer for the root");
}
