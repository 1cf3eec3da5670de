//! Arrays holding a file of the bad-data corpus (`testdata/bad/`): the command fails with one
//! line naming the file, the structure, the field and the offset, each cause said once.

use std::path::{Path, PathBuf};
use std::process::Command;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_corrupt_delete_commit_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&testdata().join("fragments/sparse_deletes"), &array);
    let commits = array.join("__commits");
    let name = std::fs::read_dir(&commits)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".del"))
        .min()
        .expect("the fixture has a delete commit");
    std::fs::copy(testdata().join("bad/commits/del_bitflip_op.del"), commits.join(&name)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["read", array.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("__commits/{name}: query condition: op at offset 1")), "{err}");
    assert_eq!(err.matches("unknown query condition op").count(), 1, "{err}");
}
