//! Output into a closed pipe (`tessera read ... | head`): every command that prints stops
//! quietly, without a "Broken pipe" message or a panic, with status 141 (128 + SIGPIPE, as a
//! process killed by the signal reports it) or 0 when it had finished writing first.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn tessera() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
}

/// Runs `tessera args...` with standard output a pipe whose reading end is already closed;
/// returns the exit code and standard error.
fn into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = tessera().args(args).stdout(writer).stderr(Stdio::piped()).spawn().unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn every_printing_command_exits_quietly() {
    let sparse = testdata().join("fragments/sparse_int64");
    let dense = testdata().join("fragments/dense_overwrites");
    let meta = testdata().join("fragments/array_metadata");
    let (s, d, m) = (sparse.to_str().unwrap(), dense.to_str().unwrap(), meta.to_str().unwrap());
    let fragments = testdata().join("fragments");
    let table = format!("t={s}");
    let commands: Vec<Vec<&str>> = vec![
        vec!["read", s, "--format", "jsonl"],
        vec!["read", s, "--format", "csv"],
        vec!["read", d, "--format", "table"],
        vec!["schema", s],
        vec!["schema", s, "--json"],
        vec!["info", s],
        vec!["fragments", s],
        vec!["fragments", s, "--json"],
        vec!["layout", d],
        vec!["layout", d, "--json"],
        vec!["aggregate", s, "--agg", "count"],
        vec!["aggregate", s, "--agg", "count", "--json"],
        vec!["meta", m],
        vec!["meta", m, "--json"],
        vec!["ls", fragments.to_str().unwrap()],
        vec!["ls", fragments.to_str().unwrap(), "--json"],
        vec!["verify", s],
        vec!["sql", "SELECT count(*) AS n FROM t", "--table", &table],
    ];
    for args in commands {
        let (code, stderr) = into_closed_pipe(&args);
        assert_eq!(stderr, "", "{args:?}");
        assert!(matches!(code, Some(0 | 141)), "{args:?}: exit {code:?}");
    }
}

#[test]
fn a_large_read_stops_when_its_reader_does() {
    // A dense array of 2 million cells, nothing written: every cell is a fill value.
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("big");
    let schema = r#"{"array_type": "dense",
        "dimensions": [{"name": "x", "type": "int64", "domain": [0, 1999999], "tile": 100000}],
        "attributes": [{"name": "a", "type": "int32"}]}"#;
    let schema_file = dir.path().join("schema.json");
    std::fs::write(&schema_file, schema).unwrap();
    let status = tessera()
        .args(["create", array.to_str().unwrap(), "--schema", schema_file.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    // `| head -n 2`: read two lines, then close the pipe while tessera still writes.
    let mut child = tessera()
        .args(["read", array.to_str().unwrap(), "--range", "x=0:1999999", "--format", "jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "{\"x\": 0, \"a\": -2147483648}\n{\"x\": 1, \"a\": -2147483648}\n");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(out.status.code(), Some(141));
}
