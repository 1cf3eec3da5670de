//! Every command on `s3://` URIs, against a local S3 emulator (moto's server, started by the
//! test on loopback): the same operations on a local folder and on the bucket must print the
//! same. The tests are `#[ignore]`d: `cargo xtask test` starts
//! them with `--ignored`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use tessera_object_store::emulator::S3Emulator;

const BUCKET: &str = "tessera-cli-tests";

const SCHEMA: &str = r#"{"array_type": "sparse", "capacity": 3,
 "dimensions": [{"name": "x", "type": "int64", "domain": [0, 99], "tile": 10}],
 "attributes": [{"name": "v", "type": "float64", "filters": [{"type": "zstd", "level": 1}]},
                {"name": "s", "type": "string_utf8", "cell_val_num": "var", "nullable": true}]}"#;

fn emulator() -> Option<&'static S3Emulator> {
    let s3 = S3Emulator::shared().expect("the S3 emulator (moto) should start");
    s3.create_bucket(BUCKET).expect("create the test bucket");
    Some(s3)
}

/// Runs `tessera args` with the emulator's AWS variables and `stdin`; (success, out, err).
fn tessera(s3: &S3Emulator, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(args).envs(s3.env()).stdin(Stdio::piped()).stdout(Stdio::piped());
    cmd.stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a command that must succeed; its standard output.
fn ok(s3: &S3Emulator, args: &[&str], stdin: Option<&str>) -> String {
    let (success, out, err) = tessera(s3, args, stdin);
    assert!(success, "tessera {args:?} failed: {err}");
    out
}

fn unique(what: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("s3://{BUCKET}/{what}-{}-{n}", std::process::id())
}

/// The same session of commands on `array` (a folder or a URI); what each printed.
fn session(s3: &S3Emulator, array: &str, schema: &Path) -> Vec<String> {
    let schema = schema.to_str().unwrap();
    let batch = |t: i64| -> String {
        (0..12)
            .map(|i| {
                let s = if i % 5 == 4 { "null".to_owned() } else { format!("\"w{t}-{i}\"") };
                format!("{{\"x\": {}, \"v\": {}.5, \"s\": {s}}}\n", (i * 7 + t) % 100, i + 10 * t)
            })
            .collect()
    };
    let mut printed = Vec::new();
    ok(s3, &["create", array, "--schema", schema], None);
    ok(s3, &["write", array, "--input", "-", "--timestamp", "10"], Some(&batch(1)));
    ok(s3, &["write", array, "--input", "-", "--timestamp", "20"], Some(&batch(2)));
    ok(s3, &["meta", array, "put", "k", "1,2", "--type", "int32"], None);
    ok(s3, &["delete", array, "--where", "v < 12", "--timestamp", "30"], None);
    printed.push(ok(s3, &["read", array, "--format", "jsonl"], None));
    printed.push(ok(
        s3,
        &["read", array, "--format", "csv", "--at", "15", "--range", "x=0:50"],
        None,
    ));
    printed.push(ok(
        s3,
        &[
            "aggregate",
            array,
            "--agg",
            "count",
            "--agg",
            "sum(v)",
            "--agg",
            "null_count(s)",
            "--json",
        ],
        None,
    ));
    printed.push(ok(s3, &["schema", array, "--json"], None));
    printed.push(ok(s3, &["meta", array, "list", "--json"], None));
    let fragments: Value =
        serde_json::from_str(&ok(s3, &["fragments", array, "--json"], None)).unwrap();
    printed.push(format!("{} fragments", fragments.as_array().unwrap().len()));
    printed.push(ok(s3, &["consolidate", array], None).split(" into ").next().unwrap().to_owned());
    printed.push(ok(s3, &["vacuum", array], None));
    printed.push(ok(s3, &["read", array, "--format", "jsonl"], None));
    let fragments: Value =
        serde_json::from_str(&ok(s3, &["fragments", array, "--json"], None)).unwrap();
    printed.push(format!("{} fragments after vacuum", fragments.as_array().unwrap().len()));
    // The fragment's byte count is left out: its metadata holds the `.del` commit's name,
    // whose random UUID goes through the GZIP of a generic tile, so two sessions' sizes may
    // differ by a byte or two (libtiledb's own fragments vary the same way).
    let verified = ok(s3, &["verify", array], None);
    printed.push(without_byte_count(&verified));
    ok(s3, &["info", array], None);
    ok(s3, &["layout", array, "--json"], None);
    printed
}

/// `verify`'s summary with "(N tiles, B bytes)" turned into "(N tiles, _ bytes)".
fn without_byte_count(summary: &str) -> String {
    summary
        .split(' ')
        .scan(false, |after_tiles, word| {
            let out =
                if *after_tiles && word.chars().all(|c| c.is_ascii_digit()) { "_" } else { word };
            *after_tiles = word == "tiles,";
            Some(out)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn commands_on_s3_print_what_they_print_locally() {
    let Some(s3) = emulator() else { return };
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let local = dir.path().join("local");
    let local = session(s3, local.to_str().unwrap(), &schema);
    let uri = unique("array");
    let remote = session(s3, &uri, &schema);
    assert_eq!(local.len(), remote.len());
    for (l, r) in local.iter().zip(&remote) {
        assert_eq!(l, r);
    }
    assert!(remote[0].lines().count() > 5, "{}", remote[0]);
    let verified = remote.last().unwrap();
    assert!(verified.contains("1 fragment (48 tiles, _ bytes)"), "{verified}");
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn groups_on_s3() {
    let Some(s3) = emulator() else { return };
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    let group = unique("group");
    let array = format!("{group}/arr");
    let outside = unique("outside");
    ok(s3, &["group", "create", &group], None);
    ok(s3, &["create", &array, "--schema", schema.to_str().unwrap()], None);
    ok(s3, &["create", &outside, "--schema", schema.to_str().unwrap()], None);
    ok(s3, &["group", "add", &group, "arr", "--relative", "--name", "arr"], None);
    ok(s3, &["group", "add", &group, &outside, "--name", "far"], None);
    ok(s3, &["meta", &group, "put", "title", "hello", "--type", "string_utf8"], None);
    let listed: Value = serde_json::from_str(&ok(s3, &["ls", &group, "--json"], None)).unwrap();
    assert_eq!(listed["type"], "group");
    assert_eq!(listed["metadata"]["title"]["value"], "hello");
    let members: Vec<(String, String, String)> = listed["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (s("name"), s("type"), s("uri"))
        })
        .collect();
    assert_eq!(
        members,
        [
            ("arr".to_owned(), "array".to_owned(), array.clone()),
            ("far".to_owned(), "array".to_owned(), outside.clone())
        ]
    );
    // A plain prefix holding the group: ls searches below it.
    let parent = group.rsplit_once('/').unwrap().0.to_owned();
    let found = ok(s3, &["ls", &parent, "--json"], None);
    assert!(found.lines().any(|l| l.contains(&group)), "{found}");
    ok(s3, &["group", "remove", &group, "far"], None);
    let listed: Value = serde_json::from_str(&ok(s3, &["ls", &group, "--json"], None)).unwrap();
    assert_eq!(listed["members"].as_array().unwrap().len(), 1);
}

#[test]
#[ignore = "needs the S3 emulator (moto): `cargo xtask test` runs it with --ignored"]
fn errors_on_s3_are_one_line() {
    let Some(s3) = emulator() else { return };
    let uri = unique("missing");
    let (success, out, err) = tessera(s3, &["read", &uri], None);
    assert!(!success);
    assert!(out.is_empty());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(&uri), "{err}");
    let (success, _, err) = tessera(s3, &["schema", "s3:///no-bucket"], None);
    assert!(!success);
    assert!(err.contains("bucket"), "{err}");
}
