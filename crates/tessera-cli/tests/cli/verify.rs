//! `tessera verify`: a clean fixture, a damaged copy (a problem line with file and offset, a
//! non-zero exit), an interrupted write's leftover (a warning, exit 0), not an array.

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

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(rel)
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

fn only_fragment(array: &Path) -> String {
    let e = std::fs::read_dir(array.join("__fragments")).unwrap().flatten().next().unwrap();
    e.file_name().to_string_lossy().into_owned()
}

#[test]
fn a_clean_fixture_verifies() {
    let (ok, out, err) =
        tessera(&["verify", fixture("fragments/sparse_deletes").to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(err.is_empty(), "{err}");
    assert_eq!(
        out.trim(),
        "verified 1 schema, 6 commit files, 4 fragments (108 tiles, 29926 bytes), \
         0 metadata files: 0 errors, 0 warnings"
    );
}

#[test]
fn a_checksum_mismatch_fails_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&fixture("filters/checksums"), &array);
    let frag = only_fragment(&array);
    let file = array.join("__fragments").join(&frag).join("a0.tdb");
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&file, bytes).unwrap();
    let a = array.to_str().unwrap();
    let (ok, out, err) = tessera(&["verify", a]);
    assert!(!ok);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let prefix = format!("error: __fragments/{frag}/a0.tdb @ 0: tile 0 (bytes 0..");
    assert!(lines[0].starts_with(&prefix), "{}", lines[0]);
    assert!(lines[0].ends_with("checksum_md5 filter: checksum mismatch on data part 0"), "{out}");
    assert!(lines[1].ends_with(": 1 error, 0 warnings"), "{out}");
    assert_eq!(err, format!("tessera: {a}: 1 error found\n"));
}

#[test]
fn an_interrupted_write_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&fixture("fragments/sparse_int64"), &array);
    let leftover = "__fragments/__99_99_0123456789abcdef0123456789abcdef_22";
    std::fs::create_dir_all(array.join(leftover)).unwrap();
    let (ok, out, err) = tessera(&["verify", array.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with(&format!("warning: {leftover}: no commit names this fragment")),
        "{out}"
    );
    assert!(
        out.trim_end().ends_with("; 1 fragment folder not committed: 0 errors, 1 warning"),
        "{out}"
    );
}

#[test]
fn not_an_array_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = tessera(&["verify", dir.path().to_str().unwrap()]);
    assert!(!ok);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a TileDB array"), "{err}");
}
