//! `tessera read --points FILE`: the cells at the points of a JSONL file, in that order,
//! checked against libtiledb's reads of the fixtures; its errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn tessera(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn run(args: &[&str], stdin: Option<&str>) -> String {
    let out = tessera(args, stdin);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn fail(args: &[&str], stdin: Option<&str>) -> String {
    let out = tessera(args, stdin);
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

fn lines(rel: &str) -> Vec<String> {
    std::fs::read_to_string(testdata().join(rel)).unwrap().lines().map(str::to_owned).collect()
}

/// The value of `key` in a cells-JSONL line.
fn field(line: &str, key: &str) -> serde_json::Value {
    serde_json::from_str::<serde_json::Value>(line).unwrap()[key].clone()
}

#[test]
fn sparse_points_print_libtiledbs_cells_in_the_order_asked() {
    let cells = lines("fragments/sparse_int64.cells.jsonl");
    let array = testdata().join("fragments/sparse_int64");
    let array = array.to_str().unwrap();
    // Every fifth cell backwards, one twice, and a point with no cell.
    let mut asked: Vec<&String> = cells.iter().rev().step_by(5).collect();
    asked.insert(3, &cells[10]);
    asked.push(&cells[10]);
    let mut file = String::new();
    let mut want = String::new();
    for (k, line) in asked.iter().enumerate() {
        // Points written without the attribute, keys in another order.
        file.push_str(&format!("{{\"y\": {}, \"x\": {}}}\n", field(line, "y"), field(line, "x")));
        want.push_str(line);
        want.push('\n');
        if k == 2 {
            file.push_str("{\"x\": -50, \"y\": 8}\n");
        }
    }
    assert!(!cells.iter().any(|c| field(c, "x") == -50 && field(c, "y") == 8));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("points.jsonl");
    std::fs::write(&path, &file).unwrap();
    let got = run(&["read", array, "--points", path.to_str().unwrap(), "--format", "jsonl"], None);
    assert_eq!(got, want);
    // From standard input, too; and a read's own output fed back gives it again.
    assert_eq!(run(&["read", array, "--points", "-", "--format", "jsonl"], Some(&file)), want);
    assert_eq!(run(&["read", array, "--points", "-", "--format", "jsonl"], Some(&want)), want);
}

#[test]
fn dense_points_with_attributes_and_formats() {
    let cells = lines("fragments/dense_overwrites.cells.jsonl");
    let array = testdata().join("fragments/dense_overwrites");
    let array = array.to_str().unwrap();
    let asked = [&cells[7], &cells[0], &cells[7], &cells[cells.len() - 1]];
    let file: String = asked
        .iter()
        .map(|l| format!("{{\"r\": {}, \"c\": {}}}\n", field(l, "r"), field(l, "c")))
        .collect();
    let want: String = asked
        .iter()
        .map(|l| format!("{},{},{}\n", field(l, "r"), field(l, "c"), field(l, "b")))
        .collect();
    let got =
        run(&["read", array, "--points", "-", "--attrs", "b", "--format", "csv"], Some(&file));
    assert_eq!(got, format!("r,c,b\n{want}"));
    // A point no fragment wrote: the fill values, as libtiledb read them.
    let fill = cells.iter().find(|l| field(l, "r") == 30 && field(l, "c") == 0).unwrap();
    assert_eq!(field(fill, "a"), i32::MIN);
    let got = run(
        &["read", array, "--points", "-", "--attrs", "a", "--format", "jsonl"],
        Some("{\"r\": 30, \"c\": 0}\n"),
    );
    assert_eq!(got, "{\"r\": 30, \"c\": 0, \"a\": -2147483648}\n");
}

#[test]
fn string_and_float_dimensions() {
    let cells = lines("fragments/sparse_string_float_dims.cells.jsonl");
    let array = testdata().join("fragments/sparse_string_float_dims");
    let asked = [&cells[3], &cells[0], &cells[3]];
    let file: String = asked.iter().map(|l| format!("{l}\n")).collect();
    let got =
        run(&["read", array.to_str().unwrap(), "--points", "-", "--format", "jsonl"], Some(&file));
    assert_eq!(got, file);
}

#[test]
fn bad_points_fail_with_one_line() {
    let array = testdata().join("fragments/sparse_int64");
    let a = array.to_str().unwrap();
    let cases: &[(&str, &str)] = &[
        ("{\"x\": 1}\n", "line 1: missing dimension \"y\""),
        ("{\"x\": 1, \"y\": 2}\n{\"x\": 1, \"y\": \"z\"}\n", "line 2, field \"y\""),
        ("{\"x\": 1, \"y\": 2, \"w\": 0}\n", "no dimension or attribute named \"w\""),
        (
            "{\"x\": 1, \"y\": 99999}\n",
            "range on dimension \"y\": point 0: 99999 is outside the domain",
        ),
        ("not json\n", "line 1: invalid JSON"),
    ];
    for (input, want) in cases {
        let err = fail(&["read", a, "--points", "-"], Some(input));
        assert!(err.contains(want), "{input:?}: {err}");
        // Errors of the file name it; those of the read name the array.
        assert!(err.contains("--points -") || err.contains("sparse_int64: range"), "{err}");
    }
    let err = fail(&["read", a, "--points", "/nonexistent/points.jsonl"], None);
    assert!(err.contains("/nonexistent/points.jsonl"), "{err}");
    // Points replace ranges and the layout.
    let out = tessera(&["read", a, "--points", "-", "--range", "x=0:3"], Some(""));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}
