//! `tessera evolve`, `delete-fragments`, `delete-array`, `upgrade` and `consolidate
//! --fragments` on copies of the fixtures: the forms of docs/cli.md, their output and errors.

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

fn copy(rel: &str, dir: &Path) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(rel);
    let dst: PathBuf = dir.join("a");
    copy_dir(&src, &dst);
    dst.to_string_lossy().into_owned()
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn evolve_adds_and_drops_attributes_and_refuses_bad_changes() {
    let dir = tempfile::tempdir().unwrap();
    let a = copy("fragments/sparse_int64", dir.path());
    let (ok, out, err) = tessera(&[
        "evolve",
        &a,
        "--add-attr",
        r#"{"name": "extra", "type": "int32", "fill": 5}"#,
        "--add-enum",
        r#"{"name": "colors", "type": "string_utf8", "values": ["red"]}"#,
        "--extend-enum",
        "colors",
        "--values",
        r#"["green"]"#,
        "--print-name",
    ]);
    assert!(ok, "{err}");
    // Named `__<now>_<now>_<label>` (no --timestamp: now).
    assert!(out.trim().starts_with("__1"), "{out}");
    let (ok, schema, _) = tessera(&["schema", &a, "--json"]);
    assert!(ok);
    let j: serde_json::Value = serde_json::from_str(&schema).unwrap();
    assert!(j["attributes"].as_array().unwrap().iter().any(|x| x["name"] == "extra"));
    assert_eq!(j["enumerations"]["colors"]["values"], serde_json::json!(["red", "green"]));
    // Old fragments read the fill value.
    let (ok, cells, _) = tessera(&["read", &a, "--format", "jsonl"]);
    assert!(ok);
    assert!(cells.lines().all(|l| l.contains("\"extra\": 5")), "{cells}");

    let before = files(dir.path());
    for (args, words) in [
        (vec!["--drop-attr", "nope"], "no attribute of that name"),
        (vec!["--add-attr", r#"{"name": "extra", "type": "int8"}"#], "duplicate"),
        (vec!["--extend-enum", "colors", "--values", r#"["red"]"#], "appears twice"),
        (vec!["--add-attr", "{not json"], "--add-attr"),
        (vec![], "nothing to change"),
    ] {
        let mut all = vec!["evolve", a.as_str()];
        all.extend(args.iter().copied());
        let (ok, _, err) = tessera(&all);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains(words), "{args:?}: {err}");
        assert_eq!(files(dir.path()), before, "{args:?} changed the array");
    }
}

#[test]
fn delete_fragments_and_delete_array() {
    let dir = tempfile::tempdir().unwrap();
    let a = copy("fragments/sparse_int64", dir.path());
    let (ok, out, err) = tessera(&["delete-fragments", &a, "--between", "0:15"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("deleted "), "{out}");
    let (ok, _, err) = tessera(&["delete-fragments", &a, "--names", "__1_1_nope_22"]);
    assert!(!ok);
    assert!(err.contains("is not a fragment of the array"), "{err}");
    let (ok, _, err) = tessera(&["delete-fragments", &a]);
    assert!(!ok, "needs --between or --names: {err}");
    let (ok, _, err) = tessera(&["delete-array", &a]);
    assert!(ok, "{err}");
    assert!(!Path::new(&a).exists(), "the emptied folder goes");
    let (ok, _, err) = tessera(&["delete-array", &a]);
    assert!(!ok);
    assert!(err.contains("not a TileDB array"), "{err}");
}

#[test]
fn upgrade_and_consolidate_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let a = copy("old/tiledb-repo/sparse_array_v11", dir.path());
    let (ok, out, err) = tessera(&["upgrade", &a]);
    assert!(ok, "{err}");
    assert!(out.starts_with("upgraded to format version 22"), "{out}");
    let (ok, out, _) = tessera(&["upgrade", &a]);
    assert!(ok && out.starts_with("already at format version 22"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let a = copy("fragments/sparse_int64", dir.path());
    let (_, json, _) = tessera(&["fragments", &a, "--json"]);
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    let list = j.as_array().unwrap_or_else(|| j["fragments"].as_array().unwrap());
    let names: Vec<&str> = list.iter().take(2).map(|f| f["name"].as_str().unwrap()).collect();
    let (ok, out, err) = tessera(&["consolidate", &a, "--fragments", &names.join(",")]);
    assert!(ok, "{err}");
    assert!(out.starts_with("consolidated 2 fragments"), "{out}");
}
