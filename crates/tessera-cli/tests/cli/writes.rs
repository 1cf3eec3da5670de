//! The commands that change arrays: `tessera write` (cells JSONL in, the same cells out of
//! `read --format jsonl`), `tessera delete` (libtiledb's `.del` files byte for byte) and
//! `tessera meta put` / `delete` (round trips through `meta list --json`); their errors:
//! one line naming the line and field, a non-zero exit, nothing written.
//! (`cargo xtask conformance` reads what these commands write with libtiledb, step
//! "writes-cli".)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Runs `tessera` with `stdin` on standard input: (success, stdout, stderr).
fn tessera_in(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn tessera(args: &[&str]) -> (bool, String, String) {
    tessera_in(args, "")
}

/// Runs `tessera`, which must succeed; its standard output.
fn run(args: &[&str]) -> String {
    let (ok, out, err) = tessera(args);
    assert!(ok, "{args:?}: {err}");
    out
}

/// Runs `tessera`, which must fail with one line on standard error; that line.
fn fails(args: &[&str], stdin: &str) -> String {
    let (ok, _, err) = tessera_in(args, stdin);
    assert!(!ok, "{args:?} succeeded");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A new array in a temporary folder, created by `tessera create` from
/// `testdata/create/<schema>.json`.
fn create(schema: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join(schema).to_str().unwrap().to_owned();
    let file = testdata().join("create").join(format!("{schema}.json"));
    run(&["create", &array, "--schema", file.to_str().unwrap()]);
    (dir, array)
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

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The cells of `array` as `tessera read ... --format jsonl` prints them.
fn read(array: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["read", array, "--format", "jsonl"];
    args.extend_from_slice(extra);
    jsonl(&run(&args))
}

/// Whether the array has no fragment (folders under `__fragments/`).
fn no_fragments(array: &str) -> bool {
    let dir = Path::new(array).join("__fragments");
    !dir.exists() || std::fs::read_dir(dir).unwrap().next().is_none()
}

// ---------------------------------------------------------------------------------------
// delete

/// The `.del` files of an array's `__commits/`, by timestamp.
fn del_files(array: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(array.join("__commits"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_str().unwrap().ends_with(".del"))
        .map(|e| {
            let name = e.file_name().to_str().unwrap().to_owned();
            let t = name[2..].split('_').next().unwrap().to_owned();
            (t, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn delete_writes_libtiledbs_files_and_hides_the_cells() {
    // libtiledb deleted `v < 0.25` at 30 and `tag == 'b'` at 50 in this fixture.
    let fixture = testdata().join("fragments/sparse_deletes");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    for (t, _) in del_files(&fixture) {
        for e in std::fs::read_dir(dir.path().join("__commits")).unwrap().flatten() {
            if e.file_name().to_str().unwrap().starts_with(&format!("__{t}_")) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }
    let a = dir.path().to_str().unwrap();
    assert!(tessera(&["delete", a, "--where", "v < 0.25", "--timestamp", "30"]).0);
    assert!(tessera(&["delete", a, "--where", "tag == 'b'", "--timestamp", "50"]).0);
    assert_eq!(del_files(dir.path()), del_files(&fixture), "the .del files differ");
    for (at, expected) in [
        ("25", "sparse_deletes.at25.cells.jsonl"),
        ("35", "sparse_deletes.at35.cells.jsonl"),
        ("55", "sparse_deletes.at55.cells.jsonl"),
    ] {
        let text = std::fs::read_to_string(testdata().join("fragments").join(expected)).unwrap();
        assert_eq!(read(a, &["--at", at]), jsonl(&text), "read at {at}");
    }
    // Without --timestamp: now, after every fragment.
    assert!(tessera(&["delete", a, "--where", "tag == 'a'"]).0);
    assert!(read(a, &[]).iter().all(|c| c["tag"] != "a"));
    assert!(!read(a, &["--at", "100"]).iter().all(|c| c["tag"] != "a"));
}

#[test]
fn delete_errors_write_nothing() {
    let (_dir, dense) = create("minimal_dense");
    let err = fails(&["delete", &dense, "--where", "a > 1"], "");
    assert!(err.contains("only supported on sparse arrays"), "{err}");
    let (_dir, sparse) = create("cli_example_sparse");
    let err = fails(&["delete", &sparse, "--where", "a > "], "");
    assert!(err.contains("at column"), "{err}");
    let err = fails(&["delete", &sparse, "--where", "nope == 1"], "");
    assert!(err.contains("nope"), "{err}");
    // A label the enumeration lacks: libtiledb cannot negate the rewritten condition.
    let err = fails(&["delete", &sparse, "--where", "color == 'purple'"], "");
    assert!(err.contains("always false"), "{err}");
    let (ok, _, err) = tessera(&["delete", &sparse]);
    assert!(!ok && err.contains("--where"), "{err}");
    for a in [&dense, &sparse] {
        assert_eq!(std::fs::read_dir(Path::new(a).join("__commits")).unwrap().count(), 0);
    }
}

// ---------------------------------------------------------------------------------------
// meta

#[test]
fn meta_put_and_delete_round_trip_through_list() {
    let (_dir, a) = create("minimal_sparse");
    let put = |key: &str, value: &str, ty: &str, t: &str| {
        run(&["meta", &a, "put", key, value, "--type", ty, "--timestamp", t]);
    };
    put("ints", "1,2, 3", "int32", "10");
    put("json_ints", "[-1, 4]", "int64", "10");
    put("floats", "0.5,NaN,-Infinity", "float64", "10");
    put("f32", "0.1", "float32", "10");
    put("flags", "true,false", "bool", "10");
    put("when", "1700000000000", "datetime_ms", "10");
    put("text", "hello, [world]", "string_utf8", "10");
    put("wide", "wörld", "string_utf16", "10");
    put("blob", "00ff10", "blob", "10");
    put("blob2", r#"{"hex": "abcd"}"#, "blob", "10");
    put("empty", "", "int64", "10");
    put("gone", "1", "uint8", "10");
    run(&["meta", &a, "delete", "gone", "--timestamp", "20"]);
    let got: Value = serde_json::from_str(&run(&["meta", &a, "list", "--json"])).unwrap();
    let want = json!({
        "blob": {"type": "blob", "value": {"hex": "00ff10"}},
        "blob2": {"type": "blob", "value": {"hex": "abcd"}},
        "empty": {"type": "int64", "value": []},
        "f32": {"type": "float32", "value": [0.1]},
        "flags": {"type": "bool", "value": [true, false]},
        "floats": {"type": "float64", "value": [0.5, "NaN", "-Infinity"]},
        "ints": {"type": "int32", "value": [1, 2, 3]},
        "json_ints": {"type": "int64", "value": [-1, 4]},
        "text": {"type": "string_utf8", "value": "hello, [world]"},
        "when": {"type": "datetime_ms", "value": [1_700_000_000_000_i64]},
        "wide": {"type": "string_utf16", "value": "wörld"},
    });
    assert_eq!(got, want);
    // Before the delete, the key is there.
    let got: Value =
        serde_json::from_str(&run(&["meta", &a, "list", "--json", "--at", "15"])).unwrap();
    assert_eq!(got["gone"], json!({"type": "uint8", "value": [1]}));
    // Bad values: one line, nothing written.
    let files = std::fs::read_dir(Path::new(&a).join("__meta")).unwrap().count();
    for (value, ty) in [("300", "uint8"), ("1,,2", "int32"), ("x", "float64"), ("0g", "blob")] {
        let err = fails(&["meta", &a, "put", "k", value, "--type", ty], "");
        assert!(err.contains(ty) || err.contains("element"), "{value}: {err}");
    }
    fails(&["meta", &a, "put", "k", "1", "--type", "int33"], "");
    assert_eq!(std::fs::read_dir(Path::new(&a).join("__meta")).unwrap().count(), files);
}

// ---------------------------------------------------------------------------------------
// write: errors (the input is checked before anything is written)

const SPARSE_CELLS: &str = r#"{"rows": 3, "key": "b", "a": 0.5, "s": "hello", "color": "green"}
{"rows": 1, "key": "zz", "a": "Infinity", "s": "", "color": "blue"}

{"rows": 1, "key": "a", "a": -1.5, "s": null, "color": "red"}
{"rows": 2, "key": "m", "a": 1e-10, "s": "x\ty", "color": "red"}
"#;

#[test]
fn write_errors_name_the_line_and_field_and_write_nothing() {
    let (_dir, a) = create("cli_example_sparse");
    let good = r#"{"rows": 1, "key": "a", "a": 1.0, "s": null, "color": "red"}"#;
    for (input, expected) in [
        (
            r#"{"rows": 1, "key": "a", "a": 1.0, "s": null, "color": "purple"}"#,
            r#"line 1, field "color": "purple" is not a label of enumeration "colors""#,
        ),
        ("{\"rows\": 1,", "line 2: invalid JSON: EOF while parsing a value at column 11"),
        ("[1, 2]", "line 2: expected a JSON object, got a list"),
        (
            r#"{"rows": 1, "key": "a", "a": 1.0, "color": "red"}"#,
            r#"line 2: missing attribute "s""#,
        ),
        (
            r#"{"key": "a", "a": 1.0, "s": "", "color": "red"}"#,
            r#"line 2: missing dimension "rows""#,
        ),
        (
            r#"{"rows": 1, "key": "a", "a": 1.0, "s": "", "color": "red", "zz": 1}"#,
            r#"line 2: no dimension or attribute named "zz""#,
        ),
        (
            r#"{"rows": 1, "key": "a", "a": null, "s": "", "color": "red"}"#,
            r#"line 2, field "a": null in an attribute that is not nullable"#,
        ),
        (
            r#"{"rows": "x", "key": "a", "a": 1.0, "s": "", "color": "red"}"#,
            r#"line 2, field "rows": "x" is not a valid int32 value"#,
        ),
        (
            r#"{"rows": 1, "key": null, "a": 1.0, "s": "", "color": "red"}"#,
            r#"line 2, field "key": a coordinate cannot be null"#,
        ),
        (
            r#"{"rows": 1, "key": "a", "a": 1.0, "s": 5, "color": "red"}"#,
            r#"line 2, field "s": a string_utf8 cell is a string, not 5"#,
        ),
    ] {
        // The bad line is line 2 after a good line (or line 1 where it says so).
        let text = if expected.starts_with("line 1") {
            input.to_owned()
        } else {
            format!("{good}\n{input}\n")
        };
        let err = fails(&["write", &a, "--input", "-"], &text);
        assert!(err.contains(expected), "{input}\n  expected: {expected}\n  got: {err}");
    }
    let err = fails(&["write", &a, "--input", "-", "--subarray", "rows=1:2"], SPARSE_CELLS);
    assert!(err.contains("--subarray is for dense arrays"), "{err}");
    let err = fails(&["write", &a, "--input", "/nonexistent/cells.jsonl"], "");
    assert!(err.contains("/nonexistent/cells.jsonl"), "{err}");
    // Coordinates outside the domain: the engine refuses them.
    let outside = r#"{"rows": 500, "key": "a", "a": 1.0, "s": "", "color": "red"}"#;
    fails(&["write", &a, "--input", "-"], outside);
    assert!(no_fragments(&a));

    let (_dir, d) = create("cell_val_num");
    let cell = |d: i64| {
        json!({"d": d, "one": 1, "pair": [1, 2], "xyz": [0.5, 1, 2], "rgb": [1, 2, 3],
               "code": "abc", "flags": [true, false], "span": [1, 2],
               "digest": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], "tag": "abcd",
               "ints": [], "floats": [1.5], "text": "t", "payload": [255]})
    };
    let lines = |cells: &[Value]| cells.iter().map(|c| format!("{c}\n")).collect::<String>();
    let w = |sub: &str, text: &str| fails(&["write", &d, "--input", "-", "--subarray", sub], text);
    let err = w("d=10:12", &lines(&[cell(10), cell(11)]));
    assert!(err.contains("the subarray holds 3 cells, the input 2"), "{err}");
    let err = w("d=10:11", &lines(&[cell(10), cell(11), cell(12)]));
    assert!(err.contains("line 3: more cells than the 2 of the subarray"), "{err}");
    let err = w("d=10:11", &lines(&[cell(10), cell(12)]));
    assert!(err.contains(r#"line 2, field "d": 12 is not this cell's coordinate 11"#), "{err}");
    let mut bad = cell(11);
    bad["pair"] = json!([1, 2, 3]);
    let err = w("d=10:11", &lines(&[cell(10), bad]));
    assert!(
        err.contains(r#"line 2, field "pair": a cell of this field holds 2 values, got 3"#),
        "{err}"
    );
    let mut bad = cell(11);
    bad["code"] = json!("ab");
    let err = w("d=10:11", &lines(&[cell(10), bad]));
    assert!(err.contains(r#"field "code": a cell of this field holds 3 bytes, got 2"#), "{err}");
    let err = w("e=1:2", "");
    assert!(err.contains(r#"no dimension "e""#), "{err}");
    let err = w("d=1:2,d=3:4", "");
    assert!(err.contains("given twice"), "{err}");
    let err = w("d=5:2", "");
    assert!(err.contains("above high bound"), "{err}");
    assert!(no_fragments(&d));
}

// ---------------------------------------------------------------------------------------
// write: round trips (need the write engine)

#[test]
fn write_sparse_reads_back_in_global_order() {
    let (_dir, a) = create("cli_example_sparse");
    let file = Path::new(&a).with_extension("jsonl");
    std::fs::write(&file, SPARSE_CELLS).unwrap();
    run(&["write", &a, "--input", file.to_str().unwrap(), "--timestamp", "10"]);
    let mut expected = jsonl(SPARSE_CELLS);
    expected.sort_by_key(|c| (c["rows"].as_i64(), c["key"].as_str().map(str::to_owned)));
    assert_eq!(read(&a, &[]), expected);
    let frags: Value = serde_json::from_str(&run(&["fragments", &a, "--json"])).unwrap();
    assert_eq!(frags[0]["timestamp_range"], json!([10, 10]));
    assert_eq!(frags[0]["cell_num"], json!(4));
    // A second write at a later time, and a delete between: time travel sees each.
    let more = r#"{"rows": 5, "key": "q", "a": 2, "s": "later", "color": "blue"}"#;
    run(&["write", &a, "--input", "-", "--timestamp", "20"]);
    let (ok, _, err) = tessera_in(&["write", &a, "--input", "-", "--timestamp", "30"], more);
    assert!(ok, "{err}");
    run(&["delete", &a, "--where", "color == 'red'", "--timestamp", "25"]);
    assert_eq!(read(&a, &["--at", "20"]), expected);
    let mut now: Vec<Value> = expected.into_iter().filter(|c| c["color"] != "red").collect();
    let mut later = jsonl(more);
    later[0]["a"] = json!(2.0);
    now.extend(later);
    assert_eq!(read(&a, &[]), now);
}

#[test]
fn write_dense_cells_of_every_kind() {
    let (_dir, d) = create("cell_val_num");
    let cells = jsonl(
        r#"{"d": 10, "one": 1, "pair": [1, -2], "xyz": [0.1, "NaN", "-Infinity"], "rgb": [1, 2, 255], "code": "abc", "flags": [true, false], "span": [1, -2], "digest": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255], "tag": "abcd", "ints": [], "floats": [1.5, 1e-300], "text": "hello", "payload": [0, 255]}
{"d": 11, "one": -7, "pair": [0, 0], "xyz": [1.5, 2.5, 3.5], "rgb": [0, 0, 0], "code": "a\u0000c", "flags": [false, false], "span": [0, 0], "digest": [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7], "tag": "wxyz", "ints": [-9223372036854775808, 9223372036854775807], "floats": [], "text": "", "payload": []}
{"d": 12, "one": 2147483647, "pair": [3, 4], "xyz": [0.0, -0.0, 1e-45], "rgb": [9, 8, 7], "code": {"hex": "80ff00"}, "flags": [true, true], "span": [5, 6], "digest": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "tag": "    ", "ints": [1], "floats": ["NaN"], "text": "π", "payload": [1, 2, 3]}"#,
    );
    let text: String = cells.iter().map(|c| format!("{c}\n")).collect();
    // With the dimension keys (checked) and without them.
    let (ok, _, err) = tessera_in(
        &["write", &d, "--input", "-", "--subarray", "d=10:12", "--timestamp", "5"],
        &text,
    );
    assert!(ok, "{err}");
    assert_eq!(read(&d, &["--range", "d=10:12"]), cells);
    let bare: String = cells
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.as_object_mut().unwrap().remove("d");
            format!("{c}\n")
        })
        .collect();
    let (ok, _, err) = tessera_in(
        &["write", &d, "--input", "-", "--subarray", "d=20:22", "--timestamp", "6"],
        &bare,
    );
    assert!(ok, "{err}");
    let moved: Vec<Value> = cells
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["d"] = json!(c["d"].as_i64().unwrap() + 10);
            c
        })
        .collect();
    assert_eq!(read(&d, &["--range", "d=20:22"]), moved);
}

#[test]
fn write_every_datatype() {
    let (_dir, a) = create("attribute_types");
    let cells = jsonl(
        r#"{"d": 0, "i8": -128, "u8": 255, "i16": -300, "u16": 65535, "i32": -70000, "u32": 4000000000, "i64": -5, "u64": 18446744073709551615, "f32": 0.1, "f64": 1e-300, "flag": true, "c": "x", "ascii": "abc", "utf8": "héllo", "utf16": "wörld", "utf32": "😀", "ucs2": "ab", "ucs4": "cd", "bytes": [0, 255], "raw": [7], "shape": [1, 2, 3], "shape_text": "POINT (1 2)"}
{"d": 1, "i8": 127, "u8": 0, "i16": 0, "u16": 0, "i32": 0, "u32": 0, "i64": 9223372036854775807, "u64": 0, "f32": "Infinity", "f64": -0.0, "flag": false, "c": {"hex": "80"}, "ascii": "", "utf8": "", "utf16": "", "utf32": "", "ucs2": "", "ucs4": "", "bytes": [], "raw": [], "shape": [], "shape_text": ""}"#,
    );
    let text: String = cells.iter().map(|c| format!("{c}\n")).collect();
    let (ok, _, err) = tessera_in(&["write", &a, "--input", "-", "--subarray", "d=0:1"], &text);
    assert!(ok, "{err}");
    assert_eq!(read(&a, &["--range", "d=0:1"]), cells);
}

#[test]
fn write_enumerations_as_labels_or_codes() {
    let (_dir, a) = create("enumerations");
    let labels = r#"{"id": 1, "species": "Ñandú", "size": null, "rank": 5, "weight": 1.25, "flag": true, "note": "x"}
{"id": 7, "species": "", "size": "large", "rank": 1, "weight": 0.5, "flag": false, "note": ""}"#;
    let (ok, _, err) = tessera_in(&["write", &a, "--input", "-", "--timestamp", "10"], labels);
    assert!(ok, "{err}");
    let codes =
        r#"{"id": 2, "species": 2, "size": 1, "rank": 0, "weight": 2, "flag": 0, "note": "y"}"#;
    let (ok, _, err) =
        tessera_in(&["write", &a, "--input", "-", "--enum-codes", "--timestamp", "20"], codes);
    assert!(ok, "{err}");
    let expected = jsonl(
        r#"{"id": 1, "species": "Ñandú", "size": null, "rank": 5, "weight": 1.25, "flag": true, "note": "x"}
{"id": 2, "species": "Danio rerio", "size": "medium", "rank": 1, "weight": 2.0, "flag": false, "note": "y"}
{"id": 7, "species": "", "size": "large", "rank": 1, "weight": 0.5, "flag": false, "note": ""}"#,
    );
    assert_eq!(read(&a, &[]), expected);
    let codes_out = read(&a, &["--enum-codes"]);
    assert_eq!(codes_out[0]["species"], json!(3));
    assert_eq!(codes_out[0]["rank"], json!(3));
    assert_eq!(codes_out[1]["size"], json!(1));
    // A label of the wrong type for a numeric enumeration.
    let err = fails(
        &["write", &a, "--input", "-"],
        r#"{"id": 3, "species": "", "size": null, "rank": 4, "weight": 0.5, "flag": true, "note": ""}"#,
    );
    assert!(
        err.contains(r#"line 1, field "rank": 4 is not a label of enumeration "ranks""#),
        "{err}"
    );
}
