//! `tessera ls` on the groups libtiledb and tiledbsoma wrote (testdata/groups), `tessera read`
//! on member arrays, and `tessera group` / `tessera meta` making groups.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the CLI in the workspace root: (success, stdout, stderr).
fn tessera(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn ok(args: &[&str]) -> String {
    let (success, out, err) = tessera(args);
    assert!(success, "tessera {args:?}: {err}");
    out
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(root().join(format!("testdata/groups/{name}.ls.json"))).unwrap()
}

fn parse(text: &str) -> Json {
    serde_json::from_str(text).unwrap()
}

#[test]
fn ls_json_equals_libtiledbs_view() {
    for name in ["nested", "outside", "soma"] {
        let out = ok(&["ls", &format!("testdata/groups/{name}"), "--json"]);
        assert_eq!(out.lines().count(), 1, "{name}: one object");
        assert_eq!(parse(&out), parse(&expected(name)), "{name}");
    }
    // Keys in the order of docs/cli.md.
    let out = ok(&["ls", "testdata/groups/soma", "--json"]);
    assert!(
        out.starts_with(
            r#"{"name":"soma","type":"group","uri":"testdata/groups/soma","metadata":{"#
        )
    );
}

#[test]
fn ls_of_a_plain_folder_prints_one_object_per_line() {
    let out = ok(&["ls", "testdata/groups", "--json"]);
    let got: Vec<Json> = out.lines().map(parse).collect();
    let want: Vec<Json> =
        ["nested", "outside", "soma"].iter().map(|n| parse(&expected(n))).collect();
    assert_eq!(got, want);
}

#[test]
fn ls_tree() {
    let out = ok(&["ls", "testdata/groups/nested"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "nested  group  testdata/groups/nested");
    assert!(lines.contains(&"│  · title: string_utf8 nested fixture"), "{out}");
    assert!(lines.contains(&"├── (unnamed)  array  testdata/groups/nested/sparse"), "{out}");
    assert!(
        lines.contains(&"│   └── (unnamed)  array  testdata/groups/nested/child/leaf"),
        "{out}"
    );
    assert_eq!(lines.last(), Some(&"└── elsewhere  array  file:///tessera-fixture/elsewhere"));
}

#[test]
fn ls_errors_are_one_line() {
    let (success, _, err) = tessera(&["ls", "testdata/groups/nope"]);
    assert!(!success);
    assert_eq!(err.trim(), "tessera: testdata/groups/nope: no such file or directory");
    let (success, _, err) = tessera(&["ls", "testdata/groups/manifest.json"]);
    assert!(!success && err.lines().count() == 1, "{err}");
}

#[test]
fn member_arrays_are_read_by_their_folder() {
    for (array, cells) in [
        ("testdata/groups/soma/obs", "soma.obs"),
        ("testdata/groups/nested/../outside", "outside"),
        ("testdata/groups/soma/ms/RNA/X/data", "soma.ms.RNA.X.data"),
    ] {
        let out = ok(&["read", array, "--format", "jsonl"]);
        let want = std::fs::read_to_string(
            root().join(format!("testdata/groups/cells/{cells}.cells.jsonl")),
        )
        .unwrap();
        let got: Vec<Json> = out.lines().map(parse).collect();
        let want: Vec<Json> = want.lines().map(parse).collect();
        assert_eq!(got, want, "{array}");
    }
}

#[test]
fn group_commands_and_group_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g");
    let g = g.to_str().unwrap();
    let arr = dir.path().join("arr");
    let schema = root().join("testdata/create/minimal_dense.json");
    ok(&["create", arr.to_str().unwrap(), "--schema", schema.to_str().unwrap()]);
    ok(&["group", "create", g]);
    let (success, _, err) = tessera(&["group", "create", g]);
    assert!(!success && err.contains("a group already exists there"), "{err}");
    ok(&["group", "create", &format!("{g}/sub")]);
    ok(&["group", "add", g, "sub", "--relative", "--name", "s", "--timestamp", "10"]);
    ok(&["group", "add", g, arr.to_str().unwrap(), "--timestamp", "10"]);
    let (success, _, err) = tessera(&["group", "add", g, "missing", "--relative"]);
    assert!(!success && err.contains("no TileDB array or group there"), "{err}");
    ok(&["group", "add", g, "missing", "--relative", "--type", "array", "--timestamp", "11"]);
    ok(&["meta", g, "put", "n", "1,2", "--type", "int32", "--timestamp", "10"]);
    ok(&["meta", g, "put", "title", "hello", "--type", "string_utf8", "--timestamp", "12"]);
    // Remove the absolute member by its local path (looked up as its file:// URI).
    ok(&["group", "remove", g, arr.to_str().unwrap(), "--timestamp", "20"]);
    // Sessions at the same millisecond apply in an unspecified order (in libtiledb too): the
    // second holds the members it loaded, so each change gets its own time.
    ok(&["group", "remove", g, "missing", "--timestamp", "21"]);
    let (success, _, err) = tessera(&["group", "remove", g, "nothing", "--timestamp", "22"]);
    assert!(!success && err.contains("no such member"), "{err}");

    let listed = parse(&ok(&["ls", g, "--json"]));
    assert_eq!(
        listed,
        serde_json::json!({"name": "g", "type": "group", "uri": g,
            "metadata": {"n": {"type": "int32", "value": [1, 2]},
                         "title": {"type": "string_utf8", "value": "hello"}},
            "members": [{"name": "s", "type": "group", "uri": format!("{g}/sub"),
                         "metadata": {}, "members": []}]})
    );
    let meta = parse(&ok(&["meta", g, "list", "--json", "--at", "11"]));
    assert_eq!(meta, serde_json::json!({"n": {"type": "int32", "value": [1, 2]}}));
    let (success, _, err) = tessera(&["meta", dir.path().to_str().unwrap(), "list"]);
    assert!(!success && err.contains("not a TileDB array"), "{err}");
}
