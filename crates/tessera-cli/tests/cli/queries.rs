//! `tessera read` (with `--where`) and `tessera aggregate` on recorded queries of the
//! `queries` fixture family (libtiledb's results; `cargo xtask conformance` runs all of them
//! on the release build), and their errors: one line on standard error, a non-zero exit.

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

/// JSON equality telling integers from floats (1 is not 1.0).
fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64() && x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| strict_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, p), (l, q))| k == l && strict_eq(p, q))
        }
        _ => a == b,
    }
}

fn queries() -> Vec<Value> {
    let mut out = Vec::new();
    for file in ["queries/fragments.jsonl", "queries/filters.jsonl"] {
        let text = std::fs::read_to_string(testdata().join(file)).unwrap();
        out.extend(text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
    }
    out
}

fn args_of(q: &Value) -> Vec<String> {
    q["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect()
}

#[test]
fn aggregates_print_libtiledbs_values_in_the_order_given() {
    let mut n = 0;
    for q in queries().iter().filter(|q| q["command"] == "aggregate") {
        let array = testdata().join(q["array"].as_str().unwrap());
        let mut args = vec!["aggregate".to_owned(), array.to_str().unwrap().to_owned()];
        args.extend(args_of(q));
        args.push("--json".into());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = run(&argv);
        let got: Value = serde_json::from_str(text.trim()).unwrap();
        let given: Vec<String> =
            args_of(q).chunks(2).filter(|c| c[0] == "--agg").map(|c| c[1].clone()).collect();
        // The keys, in the order given (the text, as JSON maps here sort their keys).
        let at: Vec<usize> =
            given.iter().map(|k| text.find(&format!("\"{k}\": ")).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{argv:?}: {text}");
        assert_eq!(got.as_object().unwrap().len(), given.len(), "{argv:?}");
        let expected = &q["expected_json"];
        for (k, v) in got.as_object().unwrap() {
            assert!(strict_eq(v, &expected[k]), "{argv:?}: {k} = {v}, want {}", expected[k]);
        }
        n += 1;
    }
    assert!(n >= 70, "{n}");
}

#[test]
fn reads_with_conditions_print_libtiledbs_cells() {
    let mut n = 0;
    let reads = queries().into_iter().filter(|q| q["command"] == "read");
    // Every third read with a condition (all run in `cargo xtask conformance`).
    for q in reads.filter(|q| args_of(q).iter().any(|a| a == "--where")).step_by(3) {
        let array = testdata().join(q["array"].as_str().unwrap());
        let mut args = vec!["read".to_owned(), array.to_str().unwrap().to_owned()];
        args.extend(args_of(&q));
        args.extend(["--format".to_owned(), "jsonl".to_owned()]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = run(&argv);
        let mut got: Vec<String> = Vec::new();
        for line in text.lines() {
            got.push(serde_json::from_str::<Value>(line).unwrap().to_string());
        }
        let mut want: Vec<String> =
            q["expected"].as_array().unwrap().iter().map(Value::to_string).collect();
        if q["order_insensitive"].as_bool().unwrap() {
            got.sort();
            want.sort();
        }
        assert_eq!(got, want, "{argv:?}");
        n += 1;
    }
    assert!(n >= 50, "{n}");
}

#[test]
fn human_output_is_one_line() {
    let array = testdata().join("fragments/sparse_int64");
    let text = run(&["aggregate", array.to_str().unwrap(), "--agg", "count", "--agg", "max(v)"]);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("count: 580, max(v): "), "{text}");
    let text = run(&[
        "aggregate",
        array.to_str().unwrap(),
        "--agg",
        "count",
        "--where",
        "v > 2000",
        "--json",
    ]);
    assert_eq!(text, "{\"count\": 0}\n");
}

#[test]
fn bad_conditions_and_aggregates_fail_with_one_line() {
    let array = testdata().join("fragments/sparse_int64");
    let a = array.to_str().unwrap();
    for (args, needle) in [
        (vec!["read", a, "--where", "v >"], "invalid condition at column 4"),
        (vec!["read", a, "--where", "w == 1"], "no field named 'w'"),
        (vec!["aggregate", a, "--agg", "count", "--where", "v in [1"], "invalid condition"),
        (vec!["aggregate", a, "--agg", "sum(w)"], "no dimension or attribute named \"w\""),
        (vec!["aggregate", a, "--agg", "median(v)"], "--agg \"median(v)\""),
        (vec!["aggregate", a, "--agg", "null_count(v)"], "not nullable"),
    ] {
        let out = tessera(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("tessera: ") && err.contains(needle), "{args:?}: {err}");
    }
}
