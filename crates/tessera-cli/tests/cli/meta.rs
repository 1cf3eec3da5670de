//! `tessera meta`: list and get on the libtiledb fixture, and put / delete round trips.

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

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fragments/array_metadata")
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

#[test]
fn list_equals_libtiledbs_view() {
    let (ok, out, err) = tessera(&["meta", fixture().to_str().unwrap(), "list", "--json"]);
    assert!(ok, "{err}");
    let got: serde_json::Value = serde_json::from_str(&out).unwrap();
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().with_extension("meta.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(got, want);
}

#[test]
fn put_get_delete_round_trip_with_time_travel() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&fixture(), &array);
    let a = array.to_str().unwrap();
    assert!(
        tessera(&["meta", a, "put", "k", "[1, 2, 3]", "--type", "int32", "--timestamp", "100"]).0
    );
    assert!(
        tessera(&["meta", a, "put", "s", "hello", "--type", "string_utf8", "--timestamp", "100"]).0
    );
    let (ok, out, _) = tessera(&["meta", a, "get", "k", "--json"]);
    assert!(ok);
    assert_eq!(out.trim(), r#"{"type":"int32","value":[1,2,3]}"#);
    assert!(tessera(&["meta", a, "delete", "k", "--timestamp", "200"]).0);
    let (ok, _, err) = tessera(&["meta", a, "get", "k"]);
    assert!(!ok && err.contains("no metadata key"), "{err}");
    // Still there when opened before the delete.
    let (ok, out, _) = tessera(&["meta", a, "get", "k", "--at", "150", "--json"]);
    assert!(ok && out.contains("[1,2,3]"), "{out}");
    let (ok, out, _) = tessera(&["meta", a, "get", "s"]);
    assert!(ok && out.trim() == "string_utf8 hello", "{out}");
    // A value that does not fit its type is a clear error.
    let (ok, _, err) = tessera(&["meta", a, "put", "x", "300", "--type", "uint8"]);
    assert!(!ok && err.lines().count() == 1, "{err}");
}
