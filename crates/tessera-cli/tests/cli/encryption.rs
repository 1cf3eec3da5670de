//! `--key-file FILE` and `TESSERA_ENCRYPTION_KEY`: the arrays libtiledb encrypted
//! (`testdata/encrypted`) read with the key; arrays and groups created with a key are
//! encrypted and read back with it; a missing, wrong or malformed key is one line naming the
//! file.

use std::path::{Path, PathBuf};
use std::process::Command;

const KEY: &str = "0123456789abcdeF0123456789abcdeF";

/// Runs `tessera` with `TESSERA_ENCRYPTION_KEY` set to `env_key` (unset when `None`).
fn tessera(args: &[&str], env_key: Option<&str>, stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(args).env_remove("TESSERA_ENCRYPTION_KEY");
    if let Some(k) = env_key {
        cmd.env("TESSERA_ENCRYPTION_KEY", k);
    }
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/encrypted").join(name)
}

#[test]
fn reads_libtiledbs_encrypted_arrays_with_the_key() {
    let dense = fixture("dense");
    let dense = dense.to_str().unwrap();
    let (ok, out, err) = tessera(&["read", dense, "--format", "jsonl"], Some(KEY), None);
    assert!(ok, "{err}");
    assert_eq!(out.lines().next().unwrap(), r#"{"d": 1, "a": -1, "s": "q", "c": "blue"}"#);
    assert_eq!(out.lines().count(), 8);

    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let kf = key_file.to_str().unwrap();
    let (ok, out2, err) =
        tessera(&["read", dense, "--format", "jsonl", "--key-file", kf], None, None);
    assert!(ok, "{err}");
    assert_eq!(out2, out);

    // Missing, wrong and malformed keys: one line, naming the file.
    let (ok, _, err) = tessera(&["read", dense], None, None);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("__schema/__") && err.contains("an encryption key is needed"), "{err}");
    let (ok, _, err) = tessera(&["read", dense], Some(&"x".repeat(32)), None);
    assert!(!ok);
    assert!(err.contains("__schema/__") && err.contains("wrong encryption key"), "{err}");
    let (ok, _, err) = tessera(&["read", dense], Some("short"), None);
    assert!(!ok);
    assert!(err.contains("TESSERA_ENCRYPTION_KEY") && err.contains("32 bytes"), "{err}");
}

#[test]
fn arrays_and_groups_created_with_a_key_are_encrypted() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"array_type": "sparse", "dimensions": [{"name": "x", "type": "int64", "domain": [0, 99], "tile": 10}], "attributes": [{"name": "v", "type": "float64"}]}"#,
    )
    .unwrap();
    let group = dir.path().join("g");
    let g = group.to_str().unwrap();
    let array = group.join("a");
    let a = array.to_str().unwrap();
    let hex_key = "ab".repeat(32);
    let key = Some(hex_key.as_str());
    assert!(tessera(&["group", "create", g], key, None).0);
    let (ok, _, err) = tessera(&["create", a, "--schema", schema.to_str().unwrap()], key, None);
    assert!(ok, "{err}");
    let cells = "{\"x\": 3, \"v\": 1.5}\n{\"x\": 1, \"v\": 0.5}\n";
    let (ok, _, err) = tessera(&["write", a, "--input", "-"], key, Some(cells));
    assert!(ok, "{err}");
    assert!(tessera(&["group", "add", g, "a", "--relative", "--name", "a"], key, None).0);
    assert!(tessera(&["meta", g, "put", "k", "v", "--type", "string_utf8"], key, None).0);

    let (ok, out, err) = tessera(&["read", a, "--format", "jsonl"], key, None);
    assert!(ok, "{err}");
    assert_eq!(out, "{\"x\": 1, \"v\": 0.5}\n{\"x\": 3, \"v\": 1.5}\n");
    let (ok, out, err) = tessera(&["ls", g, "--json"], key, None);
    assert!(ok, "{err}");
    assert!(out.contains(r#""name":"a","type":"array""#), "{out}");
    // Without the key neither opens; a plain array does not open with one.
    assert!(!tessera(&["read", a], None, None).0);
    assert!(!tessera(&["meta", g, "list"], None, None).0);
    let plain = dir.path().join("plain");
    let p = plain.to_str().unwrap();
    assert!(tessera(&["create", p, "--schema", schema.to_str().unwrap()], None, None).0);
    let (ok, _, err) = tessera(&["read", p], key, None);
    assert!(!ok);
    assert!(err.contains("not encrypted, but an encryption key was given"), "{err}");
}
