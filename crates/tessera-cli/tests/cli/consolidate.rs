//! `tessera consolidate` and `tessera vacuum` on copies of the libtiledb fixtures: each mode,
//! the summary line, the default mode, quiet standard error off a terminal, errors.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tessera(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera")).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fragments").join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()))
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn read(array: &str) -> String {
    let (ok, out, err) = tessera(&["read", array, "--format", "jsonl"]);
    assert!(ok, "{err}");
    out
}

#[test]
fn commits_mode_consolidates_and_vacuums() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&fixture("sparse_deletes"), &array);
    let a = array.to_str().unwrap();
    let before = read(a);
    let (ok, out, err) = tessera(&["consolidate", a, "--mode", "commits"]);
    assert!(ok, "{err}");
    assert!(err.is_empty(), "no progress bar off a terminal: {err:?}");
    let line = out.trim();
    assert!(
        line.starts_with("consolidated 6 commit files into __commits/__10_60_")
            && line.ends_with("_22.con"),
        "{line}"
    );
    assert_eq!(read(a), before);
    let (ok, out, err) = tessera(&["vacuum", a, "--mode", "commits"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "vacuumed 6 files and folders (mode commits)");
    assert_eq!(names(&array.join("__commits")).len(), 1);
    assert_eq!(read(a), before);
    let (ok, out, _) = tessera(&["vacuum", a, "--mode", "commits"]);
    assert!(ok);
    assert_eq!(out.trim(), "nothing to vacuum (mode commits)");
}

#[test]
fn meta_modes_with_both_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&fixture("array_metadata"), &array);
    let a = array.to_str().unwrap();
    let (_, meta_before, _) = tessera(&["meta", a, "list", "--json"]);
    let (ok, out, err) = tessera(&["consolidate", a, "--mode", "array-meta", "--between", "10:20"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("consolidated 2 metadata files into __meta/__10_20_"), "{out}");
    let (ok, out, err) = tessera(&["consolidate", a, "--mode", "array_meta"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("consolidated 2 metadata files into __meta/__10_30_"), "{out}");
    let (ok, out, err) = tessera(&["vacuum", a, "--mode", "array-meta"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "vacuumed 6 files and folders (mode array-meta)");
    assert_eq!(tessera(&["meta", a, "list", "--json"]).1, meta_before);

    let (ok, out, err) = tessera(&["consolidate", a, "--mode", "fragment-meta"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("consolidated 2 fragment footers into __fragment_meta/__10_20_"),
        "{out}"
    );
    let (ok, out, _) = tessera(&["vacuum", a, "--mode", "fragment_meta"]);
    assert!(ok);
    assert_eq!(out.trim(), "nothing to vacuum (mode fragment-meta)");
    assert_eq!(names(&array.join("__fragment_meta")).len(), 1);
}

#[test]
fn vacuum_defaults_to_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&fixture("sparse_consolidated"), &array);
    let a = array.to_str().unwrap();
    let before = read(a);
    let (ok, out, err) = tessera(&["vacuum", a]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "vacuumed 7 files and folders (mode fragments)");
    assert_eq!(names(&array.join("__fragments")).len(), 2);
    assert_eq!(read(a), before);
}

#[test]
fn errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().to_str().unwrap();
    for args in [
        vec!["consolidate", a, "--mode", "commits"],
        vec!["vacuum", a, "--mode", "commits"],
        vec!["consolidate", a, "--mode", "nope"],
        vec!["consolidate", a, "--mode", "array-meta", "--between", "x"],
    ] {
        let (ok, out, err) = tessera(&args);
        assert!(!ok, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let (_, _, err) = tessera(&["consolidate", a, "--mode", "commits"]);
    assert!(err.trim().lines().count() == 1 && err.contains("not a TileDB array"), "{err}");
    // libtiledb cannot name this .con either (first commit __20, last __5).
    let array = dir.path().join("old");
    copy_dir(&fixture("dense_old_timestamp"), &array);
    let (ok, _, err) = tessera(&["consolidate", array.to_str().unwrap(), "--mode", "commits"]);
    assert!(!ok && err.contains("libtiledb 2.30 fails here too"), "{err}");
}
