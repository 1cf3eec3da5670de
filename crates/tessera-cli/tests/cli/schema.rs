//! `tessera schema` and `tessera create` end to end: snapshots of every fixture's schema JSON,
//! create → schema round trips, and one clear error per kind of bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera")).args(args).output().expect("run tessera")
}

fn ok_stdout(args: &[&str]) -> String {
    let out = tessera(args);
    assert!(out.status.success(), "tessera {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The one-line error of a failing command.
fn error_of(args: &[&str]) -> String {
    let out = tessera(args);
    assert!(!out.status.success(), "tessera {args:?} should fail");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Every array folder directly under `testdata/<family>/`.
fn arrays(family: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(testdata().join(family))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.join("__schema").is_dir()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn schema_json_snapshots_of_every_fixture() {
    let mut n = 0;
    for family in ["filters", "schemas"] {
        for array in arrays(family) {
            let name = array.file_name().unwrap().to_str().unwrap().to_owned();
            let json: Value =
                serde_json::from_str(&ok_stdout(&["schema", array.to_str().unwrap(), "--json"]))
                    .unwrap();
            insta::assert_json_snapshot!(format!("{family}__{name}"), json);
            // The human summary works too.
            ok_stdout(&["schema", array.to_str().unwrap()]);
            n += 1;
        }
    }
    assert!(n >= 28, "{n}");
}

/// Where the generator recorded libtiledb's view of a schema, Tessera prints the same JSON.
#[test]
fn schema_json_matches_libtiledbs_view() {
    for array in arrays("schemas") {
        let expected = array.with_extension("schema.json");
        let Ok(text) = std::fs::read_to_string(&expected) else { continue };
        let want: Value = serde_json::from_str(&text).unwrap();
        let got: Value =
            serde_json::from_str(&ok_stdout(&["schema", array.to_str().unwrap(), "--json"]))
                .unwrap();
        assert_eq!(got, want, "{}", array.display());
    }
}

/// `create` from each schema JSON, then `schema --json`, then `create` again from that output
/// gives the same schema: the JSON form loses nothing.
#[test]
fn create_then_schema_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(testdata().join("create"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    inputs.sort();
    inputs.push(write_inline(&dir, "inline", INLINE));
    for input in inputs {
        let name = input.file_stem().unwrap().to_str().unwrap();
        let first = dir.path().join(format!("{name}-1"));
        ok_stdout(&["create", first.to_str().unwrap(), "--schema", input.to_str().unwrap()]);
        let printed = ok_stdout(&["schema", first.to_str().unwrap(), "--json"]);
        let again = write_inline(&dir, &format!("{name}-printed"), &printed);
        let second = dir.path().join(format!("{name}-2"));
        ok_stdout(&["create", second.to_str().unwrap(), "--schema", again.to_str().unwrap()]);
        let reprinted = ok_stdout(&["schema", second.to_str().unwrap(), "--json"]);
        assert_eq!(printed, reprinted, "{name}");
        // Creating over an existing array fails clearly.
        let err =
            error_of(&["create", first.to_str().unwrap(), "--schema", input.to_str().unwrap()]);
        assert!(err.contains("already exists"), "{err}");
    }
}

const INLINE: &str = r#"{
  "array_type": "sparse",
  "cell_order": "hilbert",
  "capacity": 64,
  "allows_duplicates": true,
  "dimensions": [
    {"name": "x", "type": "float64", "domain": [-1.5, 1.5], "filters": [{"type": "byteshuffle"}, {"type": "zstd", "level": 5}]},
    {"name": "key", "type": "string_ascii", "domain": null, "tile": null}
  ],
  "attributes": [
    {"name": "a", "type": "float32", "fill": 0.1, "filters": [{"type": "scale_float", "factor": 0.5, "offset": 1, "byte_width": 2}]},
    {"name": "s", "type": "string_utf8", "cell_val_num": "var", "nullable": true,
     "filters": [{"type": "dictionary"}, {"type": "zstd", "level": -1}]},
    {"name": "color", "type": "uint8", "enumeration": "colors"},
    {"name": "xyz", "type": "int16", "cell_val_num": 3, "fill": [1, 2, 3], "filters": [{"type": "delta", "reinterpret_type": "uint16"}]}
  ],
  "enumerations": {"colors": {"type": "string_utf8", "ordered": true, "values": ["red", "green", "blue"]}},
  "current_domain": [[-1.0, 1.0], ["a", "zz"]],
  "validity_filters": []
}"#;

fn write_inline(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(format!("{name}.json"));
    std::fs::write(&p, text).unwrap();
    p
}

/// One clear error for each kind of bad schema JSON.
#[test]
fn bad_schema_json_gives_one_clear_error_each() {
    let dim = r#"{"name": "d", "type": "int32", "domain": [1, 10], "tile": 5}"#;
    let attr = r#"{"name": "a", "type": "int32"}"#;
    let with = |dims: &str, attrs: &str, extra: &str| {
        format!(
            r#"{{"array_type": "dense", "dimensions": [{dims}], "attributes": [{attrs}]{extra}}}"#
        )
    };
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "expected"),
        (r#"{"array_type": "dense"}"#.into(), "missing field `dimensions`"),
        (with(dim, attr, r#", "colour": 1"#), "unknown field `colour`"),
        (with(dim, attr, "").replace("dense", "tiled"), "array_type \"tiled\""),
        (with(dim, r#"{"name": "a", "type": "int33"}"#, ""), "unknown datatype name \"int33\""),
        (with("", attr, ""), "no dimensions"),
        (
            with(r#"{"name": "d", "type": "int32", "domain": [10, 1], "tile": 5}"#, attr, ""),
            "above high",
        ),
        (
            with(r#"{"name": "d", "type": "int32", "domain": [1, 10], "tile": 50}"#, attr, ""),
            "exceeds the domain",
        ),
        (
            with(r#"{"name": "d", "type": "int32", "domain": [1, 10], "tile": 0}"#, attr, ""),
            "must be positive",
        ),
        (
            with(r#"{"name": "d", "type": "int8", "domain": [1, 1000], "tile": 5}"#, attr, ""),
            "does not fit datatype int8",
        ),
        (with(r#"{"name": "d", "type": "int32"}"#, attr, ""), "domain is empty"),
        (
            with(dim, r#"{"name": "d", "type": "int32"}"#, ""),
            "duplicate dimension or attribute name \"d\"",
        ),
        (with(dim, r#"{"name": "__a", "type": "int32"}"#, ""), "reserved"),
        (with(dim, "", ""), "at least one attribute"),
        (
            with(dim, attr, r#", "cell_order": "hilbert""#),
            "Hilbert cell order is only allowed in sparse arrays",
        ),
        (with(dim, attr, r#", "allows_duplicates": true"#), "dense arrays cannot allow duplicates"),
        (
            with(r#"{"name": "d", "type": "float64", "domain": [0, 1]}"#, attr, ""),
            "integer or datetime dimensions",
        ),
        (
            with(r#"{"name": "s", "type": "string_ascii", "domain": null, "tile": 3}"#, attr, "")
                .replace("dense", "sparse"),
            "string dimensions cannot have a tile extent",
        ),
        (
            with(dim, r#"{"name": "a", "type": "int32", "cell_val_num": 0}"#, ""),
            "cell_val_num cannot be 0",
        ),
        (
            with(dim, r#"{"name": "a", "type": "int32", "fill": "x"}"#, ""),
            "does not fit datatype int32",
        ),
        (
            with(dim, r#"{"name": "a", "type": "int32", "cell_val_num": 2, "fill": 1}"#, ""),
            "fill value of 4 bytes",
        ),
        (
            with(dim, r#"{"name": "a", "type": "int32", "filters": [{"type": "snappy"}]}"#, ""),
            "unknown filter type name \"snappy\"",
        ),
        (
            with(
                dim,
                r#"{"name": "a", "type": "float32", "filters": [{"type": "scale_float", "byte_width": 3}]}"#,
                "",
            ),
            "byte_width 3",
        ),
        (
            with(dim, r#"{"name": "a", "type": "uint8", "enumeration": "nope"}"#, ""),
            "enumeration \"nope\" is not in the schema",
        ),
        (with(dim, attr, r#", "current_domain": [[0, 20]]"#), "inside the domain"),
        (with(dim, attr, r#", "current_domain": [[1, 2], [3, 4]]"#), "2 ranges for 1 dimensions"),
        (with(dim, attr, r#", "capacity": 0"#), "capacity cannot be 0"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (json, want)) in cases.iter().enumerate() {
        let input = write_inline(&dir, &format!("bad{i}"), json);
        let target = dir.path().join(format!("bad{i}"));
        let err =
            error_of(&["create", target.to_str().unwrap(), "--schema", input.to_str().unwrap()]);
        assert!(err.contains(want), "case {i}: {json}\nwanted {want:?} in {err}");
        assert!(!target.join("__schema").exists(), "case {i}: nothing is created");
    }
}

/// Corrupt or missing schema files give one clear error naming the file.
#[test]
fn corrupt_schema_files_give_one_clear_error_each() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    let input = write_inline(&dir, "good", INLINE);
    ok_stdout(&["create", good.to_str().unwrap(), "--schema", input.to_str().unwrap()]);
    let schema_file = std::fs::read_dir(good.join("__schema"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .unwrap();
    let bytes = std::fs::read(&schema_file).unwrap();
    type Mutation = fn(&mut Vec<u8>);
    let cases: Vec<(&str, Mutation, &str)> = vec![
        ("truncated header", |b| b.truncate(20), "truncated"),
        ("truncated data", |b| b.truncate(b.len() - 5), "truncated"),
        ("empty file", |b| b.clear(), "truncated"),
        ("bad header version", |b| b[0] = 99, "version"),
        (
            "inflated persisted size",
            |b| b[4..12].copy_from_slice(&u64::MAX.to_le_bytes()),
            "persisted",
        ),
        (
            "bad compressed stream",
            |b| {
                let n = b.len();
                b[n - 20] ^= 0xff;
            },
            "gzip",
        ),
    ];
    for (what, mutate, want) in cases {
        let case = dir.path().join(what.replace(' ', "_"));
        copy_dir(&good, &case);
        let file = case.join("__schema").join(schema_file.file_name().unwrap());
        let mut b = bytes.clone();
        mutate(&mut b);
        std::fs::write(&file, b).unwrap();
        let err = error_of(&["schema", case.to_str().unwrap(), "--json"]);
        assert!(err.to_lowercase().contains(want), "{what}: wanted {want:?} in {err}");
        assert!(err.contains("__schema/"), "{what}: names the file: {err}");
    }
    let err = error_of(&["schema", dir.path().join("nowhere").to_str().unwrap()]);
    assert!(err.contains("not a TileDB array"), "{err}");
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
