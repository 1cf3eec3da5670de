//! `tessera sql`: a table holds what a plain `tessera read` returns, values print as `read`
//! prints them, computed columns print by their types, and errors are one line.
#![cfg(feature = "sql")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera")).args(args).output().unwrap()
}

fn run(args: &[&str]) -> String {
    let out = tessera(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `SELECT *` ordered by the dimensions prints what `read --layout row-major` prints.
fn same_as_read(array: &Path, dims: &str) {
    let a = array.to_str().unwrap();
    let table = format!("t={a}");
    let sql = run(&[
        "sql",
        &format!("SELECT * FROM t ORDER BY {dims}"),
        "--table",
        &table,
        "--format",
        "jsonl",
    ]);
    let read = run(&["read", a, "--layout", "row-major", "--format", "jsonl"]);
    assert!(!read.is_empty(), "{a}");
    assert_eq!(sql, read, "{a}");
}

#[test]
fn select_star_prints_what_read_prints() {
    for (rel, dims) in [
        ("fragments/sparse_attrs", "r, c"),
        ("fragments/sparse_deletes", "r, c"),
        ("fragments/dense_overwrites", "r, c"),
        ("fragments/sparse_consolidated", "r, c"),
    ] {
        same_as_read(&testdata().join(rel), dims);
    }
}

/// An array with enumerations of every kind and a datetime attribute, written through the
/// CLI.
fn enum_array(dir: &Path) -> PathBuf {
    let path = dir.join("e");
    let schema = testdata().join("create/enumerations.json");
    run(&["create", path.to_str().unwrap(), "--schema", schema.to_str().unwrap()]);
    let cells = dir.join("cells.jsonl");
    let rows = [
        r#"{"id": 1, "species": "Mus musculus", "size": "large", "rank": 5, "weight": 1.25, "flag": true, "note": "first"}"#,
        r#"{"id": 2, "species": "Ñandú", "size": null, "rank": 1, "weight": 0.5, "flag": false, "note": ""}"#,
        r#"{"id": 7, "species": "Homo sapiens", "size": "small", "rank": 8, "weight": 2.0, "flag": true, "note": "tab\there"}"#,
        r#"{"id": 9, "species": "Mus musculus", "size": "medium", "rank": 3, "weight": 0.5, "flag": false, "note": "last"}"#,
    ];
    std::fs::write(&cells, rows.join("\n") + "\n").unwrap();
    run(&[
        "write",
        path.to_str().unwrap(),
        "--input",
        cells.to_str().unwrap(),
        "--timestamp",
        "10",
    ]);
    path
}

#[test]
fn enumerations_print_as_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = enum_array(dir.path());
    same_as_read(&path, "id");
    let table = format!("e={}", path.display());
    let out = run(&[
        "sql",
        "SELECT id, species FROM e WHERE species = 'Mus musculus' ORDER BY id",
        "--table",
        &table,
        "--format",
        "jsonl",
    ]);
    insta::assert_snapshot!("sql_enum_filter", out);
}

#[test]
fn computed_columns_csv_and_table() {
    let del = testdata().join("fragments/sparse_deletes");
    let table = format!("d={}", del.display());
    let sql = "SELECT tag, count(*) AS n, min(r) AS first_r, max(v) AS top FROM d WHERE r <= 5 GROUP BY tag ORDER BY tag";
    insta::assert_snapshot!(
        "sql_group_table",
        run(&["sql", sql, "--table", &table, "--format", "table"])
    );
    insta::assert_snapshot!(
        "sql_group_csv",
        run(&["sql", sql, "--table", &table, "--format", "csv"])
    );
    // Not a terminal: JSONL by default.
    let out = run(&["sql", "SELECT count(*) AS n FROM d", "--table", &table]);
    let direct = run(&["read", del.to_str().unwrap(), "--format", "jsonl"]).lines().count();
    assert_eq!(lines(&out), vec![serde_json::json!({"n": direct})]);
}

#[test]
fn joins_over_two_tables() {
    let a = testdata().join("fragments/sparse_deletes");
    let b = testdata().join("fragments/sparse_consolidated");
    let out = run(&[
        "sql",
        "SELECT count(*) AS n FROM a JOIN b ON a.r = b.r AND a.c = b.c",
        "--table",
        &format!("a={}", a.display()),
        "--table",
        &format!("b={}", b.display()),
    ]);
    let rows = lines(&out);
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["n"].as_u64().is_some(), "{out}");
}

#[test]
fn errors_are_one_line() {
    let a = testdata().join("fragments/sparse_deletes");
    let table = format!("t={}", a.display());
    for args in [
        vec!["sql", "SELECT nope FROM t", "--table", table.as_str()],
        vec!["sql", "SELEC 1", "--table", table.as_str()],
        vec!["sql", "SELECT 1", "--table", "no-equals-sign"],
        vec!["sql", "SELECT * FROM t", "--table", "t=/no/such/array"],
    ] {
        let out = tessera(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("tessera: "), "{err}");
    }
}
