//! Array metadata against files written by libtiledb 2.30.0: the payload codec, the visible
//! metadata at open timestamp ranges (deletes, consolidation, vacuum), the JSON of
//! `tessera meta list --json`, and the writer (byte-identical files).
//!
//! Fixtures: `testdata/fragments/array_metadata` (with its `.meta.json`) and
//! `tests/data/metadata/` (written by `tests/data/metadata/generate.py`, whose `expected.json`
//! holds what libtiledb reads at each open range).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;
use serde_json::ser::Formatter;
use sha2::{Digest, Sha256};
use tessera_query::metadata::{
    ArrayMetadata, MetadataEntry, MetadataValue, MetadataWriter, parse_payload, to_payload,
};
use tessera_query::{Array, Error, dirs};
use tessera_storage::{LocalStorage, MemoryStorage, Storage};
use tessera_types::Datatype;
use tessera_types::names::TimestampedName;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/metadata").join(name)
}

fn storage(path: &Path) -> Arc<dyn Storage> {
    Arc::new(LocalStorage::new(path))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// serde_json's compact output with `", "` and `": "` separators, the layout of docs/cli.md's
/// `meta list --json` example (and of Python's `json.dumps`).
struct Spaced;

impl Formatter for Spaced {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

fn render(v: &Json) -> String {
    let mut out = Vec::new();
    serde::Serialize::serialize(v, &mut serde_json::Serializer::with_formatter(&mut out, Spaced))
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// Every `__meta` file (not `.vac`) under `root`, but those of encrypted arrays
/// (`testdata/encrypted`, read with their key by tests/encrypted.rs).
fn meta_files(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.ends_with("testdata/encrypted") {
                continue;
            }
            meta_files(&p, out);
        } else if p.parent().and_then(Path::file_name).is_some_and(|n| n == dirs::META)
            && p.extension().is_none()
        {
            out.push(p);
        }
    }
}

#[test]
fn every_libtiledb_metadata_file_rewrites_byte_identical() {
    let mut files = Vec::new();
    meta_files(&workspace().join("testdata"), &mut files);
    meta_files(&data(""), &mut files);
    assert!(files.len() >= 15, "found only {files:?}");
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let payload = tessera_tile::read_generic_tile(&bytes).unwrap();
        let entries = parse_payload(&payload).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert!(!entries.is_empty(), "{path:?}");
        assert!(entries.windows(2).all(|w| w[0].key < w[1].key), "{path:?}: not sorted");
        assert_eq!(to_payload(&entries).unwrap(), payload, "{path:?}");
        // The whole file: generic tile with real zlib, as libtiledb writes it.
        let rewritten = tessera_tile::write_generic_tile(&payload, 22).unwrap();
        assert_eq!(rewritten, bytes, "{path:?}");
        // Through the writer: the same entries as one session give the same file.
        let name = TimestampedName::parse(path.file_name().unwrap().to_str().unwrap()).unwrap();
        let mut w = MetadataWriter::new(name.t2);
        for e in &entries {
            match &e.value {
                Some(v) => w.put(e.key.clone(), v.clone()).unwrap(),
                None => w.delete(e.key.clone()).unwrap(),
            };
        }
        let file = w.file().unwrap().unwrap();
        assert_eq!(file.bytes, bytes, "{path:?}");
    }
}

#[test]
fn array_metadata_fixture_lists_as_meta_json() {
    let dir = workspace().join("testdata/fragments/array_metadata");
    let want =
        std::fs::read_to_string(workspace().join("testdata/fragments/array_metadata.meta.json"))
            .unwrap();
    let array = Array::open(storage(&dir)).unwrap();
    let meta = array.metadata().unwrap();
    assert_eq!(render(&meta.to_json()), want.trim_end());
    assert_eq!(meta.files().iter().map(|n| n.t1).collect::<Vec<_>>(), [10, 20, 30]);
    assert_eq!(meta.get("count").unwrap().as_i64s(), Some(vec![43]));
    assert_eq!(meta.get("ratio").unwrap().as_f64s(), Some(vec![0.1]));
    assert_eq!(meta.get("unicode").unwrap().as_str(), Some("東京 🙂"));
    assert_eq!(meta.get("__np_flat_shape").unwrap().as_i64s(), Some(vec![3, -4, 5]));
    assert_eq!(meta.get("raw").unwrap().bytes(), b"\x00\x01\xfe");
    assert_eq!(meta.get("raw").unwrap().as_str(), None);
    assert!(!meta.contains_key("to_delete") && !meta.contains_key("shape"));
    assert_eq!(meta.len(), 7);
    let keys: Vec<&[u8]> = meta.iter().map(|(k, _)| k).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn array_metadata_fixture_time_travel() {
    let dir = workspace().join("testdata/fragments/array_metadata");
    let at = |t| Array::open_at(storage(&dir), t).unwrap().metadata().unwrap();
    assert!(at(9).is_empty());
    let m15 = at(15);
    assert_eq!(m15.get("count").unwrap().as_i64s(), Some(vec![42]));
    assert_eq!(m15.get("to_delete").unwrap().as_i64s(), Some(vec![7]));
    assert!(m15.get("unicode").is_none());
    let m25 = at(25);
    assert_eq!(m25.get("count").unwrap().as_i64s(), Some(vec![43]));
    assert!(m25.contains_key("to_delete") && m25.contains_key("unicode"));
    assert!(!m25.contains_key("added_at_30"));
    // Only the files fully inside the range: (11, 30) leaves out the one at 10.
    let between = Array::open_between(storage(&dir), 11, 30).unwrap().metadata().unwrap();
    assert_eq!(
        render(&between.to_json()),
        r#"{"added_at_30": {"type": "string_utf8", "value": "late"}, "count": {"type": "int64", "value": [43]}, "unicode": {"type": "string_utf8", "value": "東京 🙂"}}"#
    );
}

fn expected() -> Json {
    serde_json::from_str(&std::fs::read_to_string(data("expected.json")).unwrap()).unwrap()
}

fn value_text(b: &[u8]) -> String {
    if b.len() > 1024 { format!("sha256:{}", hex(&Sha256::digest(b))) } else { hex(b) }
}

/// Every read of expected.json: libtiledb's entries and the `meta list --json` text, through
/// both `ArrayMetadata::load` and `Array::open_between(..).metadata()`.
#[test]
fn libtiledb_views_at_every_open_range() {
    let expected = expected();
    let arrays = expected.as_object().unwrap();
    assert_eq!(arrays.keys().collect::<Vec<_>>(), ["consolidated", "deletes", "types", "vacuumed"]);
    for (name, e) in arrays {
        let dir = data(name);
        let mut files: Vec<String> = std::fs::read_dir(dir.join(dirs::META))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(Json::from(files), e["files"], "{name}");
        for read in e["reads"].as_array().unwrap() {
            let (start, end) = (read["start"].as_u64().unwrap(), read["end"].as_u64().unwrap());
            let what = format!("{name} at [{start}, {end}]");
            let meta = ArrayMetadata::load(storage(&dir).as_ref(), start, end).unwrap();
            let via_array =
                Array::open_between(storage(&dir), start, end).unwrap().metadata().unwrap();
            assert_eq!(meta, via_array, "{what}");
            let got: Vec<Json> = meta
                .iter()
                .map(|(k, v)| {
                    serde_json::json!([hex(k), v.datatype().id(), v.num(), value_text(v.bytes())])
                })
                .collect();
            assert_eq!(Json::from(got), read["entries"], "{what}");
            // The JSON view, without the values over 1024 bytes (left out of expected.json).
            let mut json = meta.to_json();
            json.as_object_mut()
                .unwrap()
                .retain(|k, _| meta.get(k.as_bytes()).is_none_or(|v| v.bytes().len() <= 1024));
            assert_eq!(render(&json), read["json"].as_str().unwrap(), "{what}");
        }
    }
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(dirs::META))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn applied(dir: &Path, start: u64, end: u64) -> Vec<(u64, u64)> {
    let meta = ArrayMetadata::load(storage(dir).as_ref(), start, end).unwrap();
    meta.files().iter().map(|n| (n.t1, n.t2)).collect()
}

#[test]
fn consolidation_and_vacuum_choose_the_files_libtiledb_loads() {
    let dir = data("consolidated");
    // The .vac applies only when its own range [10, 30] is inside the open range.
    assert_eq!(applied(&dir, 0, 25), [(10, 10), (20, 20)]);
    assert_eq!(applied(&dir, 0, 30), [(10, 30)]);
    assert_eq!(applied(&dir, 0, 45), [(10, 30), (40, 40)]);
    assert_eq!(applied(&dir, 15, 35), [(20, 20), (30, 30)]);
    assert_eq!(applied(&dir, 31, 45), [(40, 40)]);
    let dir = data("vacuumed");
    assert_eq!(applied(&dir, 0, 25), []);
    assert_eq!(applied(&dir, 0, 45), [(10, 30), (40, 40)]);
}

#[test]
fn consolidated_file_is_the_live_state_of_its_inputs() {
    let dir = data("consolidated");
    let names = file_names(&dir);
    let payload = |n: &str| {
        let bytes = std::fs::read(dir.join(dirs::META).join(n)).unwrap();
        tessera_tile::read_generic_tile(&bytes).unwrap()
    };
    let mut state = ArrayMetadata::default();
    for prefix in ["__10_10_", "__20_20_", "__30_30_"] {
        let n = names.iter().find(|n| n.starts_with(prefix)).unwrap();
        state.apply(parse_payload(&payload(n)).unwrap());
    }
    let consolidated = names.iter().find(|n| n.starts_with("__10_30_") && !n.contains('.'));
    let want = payload(consolidated.unwrap());
    assert_eq!(state.to_payload().unwrap(), want);
    // Deleted keys are gone from it (k1 was deleted at 20).
    assert!(parse_payload(&want).unwrap().iter().all(|e| e.value.is_some() && e.key != b"k1"));
    // The .vac lists the three inputs, relative to the array.
    let vac = names.iter().find(|n| n.ends_with(".vac")).unwrap();
    let text = std::fs::read_to_string(dir.join(dirs::META).join(vac)).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(
        text.lines().all(|l| l.starts_with("/__meta/__") && names.contains(&l[8..].to_owned()))
    );
}

#[test]
fn writer_sessions_match_libtiledb_files() {
    let dir = data("deletes");
    let names = file_names(&dir);
    let libtiledb = |t: u64| {
        let n = names.iter().find(|n| n.starts_with(&format!("__{t}_{t}_"))).unwrap();
        std::fs::read(dir.join(dirs::META).join(n)).unwrap()
    };
    let v = |dt, json: Json| MetadataValue::from_json(dt, &json).unwrap();
    // The sessions of generate.py, written independently here.
    let mut s10 = MetadataWriter::new(10);
    s10.put("a", v(Datatype::Int64, serde_json::json!([1]))).unwrap();
    s10.put("gone", v(Datatype::Int32, serde_json::json!(9))).unwrap();
    s10.put("c", MetadataValue::float64s(&[0.5]).unwrap()).unwrap();
    s10.put("b", MetadataValue::utf8("bee").unwrap()).unwrap();
    let mut s20 = MetadataWriter::new(20);
    s20.delete("b").unwrap();
    s20.put("c", v(Datatype::Int16, serde_json::json!([3, 4]))).unwrap();
    s20.delete("never_existed").unwrap();
    let mut s30 = MetadataWriter::new(30);
    s30.put("b", MetadataValue::utf8("again").unwrap()).unwrap().delete("a").unwrap();
    let mut s40 = MetadataWriter::new(40);
    s40.delete("gone").unwrap();
    s40.put("z", v(Datatype::UInt8, serde_json::json!([1]))).unwrap();
    s40.delete("gone").unwrap();
    for (t, w) in [(10, &s10), (20, &s20), (30, &s30), (40, &s40)] {
        let file = w.file().unwrap().unwrap();
        assert_eq!((file.name.t1, file.name.t2, file.name.version), (t, t, None));
        assert_eq!(file.name.label.len(), 32);
        assert_eq!(file.bytes, libtiledb(t), "session {t}");
    }
    // A later change of the same key in a session wins.
    let mut w = MetadataWriter::new(5);
    w.put("k", MetadataValue::int64s(&[1]).unwrap()).unwrap();
    w.delete("k").unwrap();
    assert_eq!(w.entries(), [MetadataEntry::delete("k")]);
    w.put("k", MetadataValue::int64s(&[2]).unwrap()).unwrap();
    assert_eq!(w.entries(), [MetadataEntry::put("k", MetadataValue::int64s(&[2]).unwrap())]);
}

#[test]
fn writer_commit_is_read_back() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    // No metadata folder at all: no metadata.
    assert!(ArrayMetadata::load(storage.as_ref(), 0, u64::MAX).unwrap().is_empty());
    // An empty session writes nothing.
    assert_eq!(MetadataWriter::new(7).commit(storage.as_ref()).unwrap(), None);
    assert!(MetadataWriter::new(7).file().unwrap().is_none());
    let mut w = MetadataWriter::new(10);
    w.put("x", MetadataValue::utf8("one").unwrap()).unwrap();
    w.put("y", MetadataValue::int64s(&[1, 2]).unwrap()).unwrap();
    let n10 = w.commit(storage.as_ref()).unwrap().unwrap();
    let mut w = MetadataWriter::new(20);
    w.delete("x").unwrap();
    w.put("z", MetadataValue::blob(b"\x00\xff").unwrap()).unwrap();
    let n20 = w.commit(storage.as_ref()).unwrap().unwrap();
    // Something that is not a metadata file name is skipped.
    storage.publish("__meta/README", bytes::Bytes::from_static(b"not metadata")).unwrap();
    let all = ArrayMetadata::load(storage.as_ref(), 0, 100).unwrap();
    assert_eq!(all.files(), [n10.clone(), n20]);
    assert_eq!(
        render(&all.to_json()),
        r#"{"y": {"type": "int64", "value": [1, 2]}, "z": {"type": "blob", "value": {"hex": "00ff"}}}"#
    );
    let at15 = ArrayMetadata::load(storage.as_ref(), 0, 15).unwrap();
    assert_eq!(at15.files(), [n10]);
    assert_eq!(at15.get("x").and_then(MetadataValue::as_str), Some("one"));
}

#[test]
fn writer_refuses_what_libtiledb_refuses() {
    let mut w = MetadataWriter::new(1);
    let any = MetadataValue::from_bytes(Datatype::Any, vec![1]).unwrap();
    assert!(w.put("k", any).is_err());
    assert!(w.put(b"a\0b".to_vec(), MetadataValue::int64s(&[1]).unwrap()).is_err());
    assert!(w.delete(b"\0".to_vec()).is_err());
    assert!(w.is_empty());
    // Non-UTF-8 keys are fine (libtiledb keys are bytes).
    w.put(b"\xff\xfe".to_vec(), MetadataValue::int64s(&[1]).unwrap()).unwrap();
    assert_eq!(
        w.payload().unwrap(),
        b"\x02\x00\x00\x00\xff\xfe\x00\x01\x01\x00\x00\x00\x01\0\0\0\0\0\0\0"
    );
}

#[test]
fn value_json_round_trips_for_every_type() {
    let dir = data("types");
    let meta = ArrayMetadata::load(storage(&dir).as_ref(), 0, 10).unwrap();
    assert_eq!(meta.len(), 50);
    for (key, value) in meta.iter() {
        let json = value.value_json();
        let back = MetadataValue::from_json(value.datatype(), &json)
            .unwrap_or_else(|e| panic!("{key:?}: {json}: {e}"));
        assert_eq!(&back, value, "{:?}: {json}", String::from_utf8_lossy(key));
        assert_eq!(value.to_json()["type"], value.datatype().name());
    }
    let get = |k: &str| meta.get(k).unwrap();
    assert_eq!(get("u64").as_i64s(), None); // u64::MAX does not fit an i64
    assert_eq!(get("u32").as_i64s(), Some(vec![4_294_967_295, 7]));
    assert_eq!(get("bool").as_i64s(), Some(vec![1, 0, 1]));
    assert_eq!(get("datetime_ms").as_i64s(), Some(vec![-1, 0, 1_700_000_000_000]));
    assert_eq!(get("i8").as_f64s(), None);
    let f32s = get("f32").as_f64s().unwrap();
    assert_eq!(f32s[0], f64::from(0.1f32));
    assert!(f32s[5].is_nan() && f32s[1].is_sign_negative());
    assert_eq!(get("empty_str").as_str(), Some(""));
    assert_eq!(get("empty_str").num(), 0);
    assert_eq!(get("utf8_bad").as_str(), None);
    assert_eq!(get("wkt").as_str(), Some("POINT (1 2)"));
    assert_eq!(get("utf16").value_json(), "hé🙂");
    let big = get("big");
    assert_eq!(big.num(), 70_000);
    assert!(big.bytes().iter().enumerate().all(|(i, b)| *b == ((i * 7 + i / 251) % 256) as u8));
    assert_eq!(meta.get(b"\xff\xfe").unwrap().as_i64s(), Some(vec![1]));
    assert!(meta.to_json().as_object().unwrap().contains_key("\u{fffd}\u{fffd}"));
}

#[test]
fn value_constructors_and_json_input() {
    let f = |dt, j: Json| MetadataValue::from_json(dt, &j);
    assert_eq!(f(Datatype::Int8, serde_json::json!(-5)).unwrap().bytes(), [0xfb]);
    assert!(f(Datatype::Int8, serde_json::json!([200])).is_err());
    assert!(f(Datatype::UInt32, serde_json::json!([-1])).is_err());
    assert!(f(Datatype::Int32, serde_json::json!([1.5])).is_err());
    assert!(f(Datatype::Int32, serde_json::json!("1")).is_err());
    assert_eq!(f(Datatype::Bool, serde_json::json!([true, false])).unwrap().bytes(), [1, 0]);
    assert_eq!(
        f(Datatype::Float32, serde_json::json!(["-Infinity"])).unwrap().bytes(),
        f32::NEG_INFINITY.to_le_bytes()
    );
    assert_eq!(f(Datatype::UInt64, serde_json::json!([u64::MAX])).unwrap().as_i64s(), None);
    assert_eq!(f(Datatype::Blob, serde_json::json!({"hex": "00ff"})).unwrap().bytes(), [0, 255]);
    assert_eq!(f(Datatype::Blob, serde_json::json!("ab")).unwrap().bytes(), b"ab");
    assert!(f(Datatype::Blob, serde_json::json!({"hex": "0"})).is_err());
    assert!(f(Datatype::Int16, serde_json::json!({"hex": "000"})).is_err());
    assert!(f(Datatype::Int16, serde_json::json!({"hex": "0000ff"})).is_err());
    assert_eq!(f(Datatype::StringUcs2, serde_json::json!("ab")).unwrap().num(), 2);
    assert_eq!(f(Datatype::Int32, serde_json::json!([])).unwrap().num(), 0);
    assert!(f(Datatype::Blob, serde_json::json!({"hex": "00", "x": 1})).is_err());
    assert!(f(Datatype::Blob, serde_json::json!({"text": "00"})).is_err());
    // A high surrogate before a non-surrogate is not UTF-16 (even though these bytes are
    // valid UTF-8): hex.
    let bad16 = MetadataValue::new(Datatype::StringUtf16, 2, vec![0, 0xd8, 0x80, 0]).unwrap();
    assert_eq!(bad16.value_json(), serde_json::json!({"hex": "00d88000"}));
    let bad32 = MetadataValue::new(Datatype::StringUtf32, 1, vec![0, 0xd8, 0, 0]).unwrap();
    assert_eq!(bad32.value_json(), serde_json::json!({"hex": "00d80000"}));
    assert!(MetadataValue::new(Datatype::Int32, 2, vec![0; 4]).is_err());
    assert_eq!(MetadataValue::new(Datatype::Int32, 1, vec![0; 4]).unwrap().num(), 1);
    assert!(MetadataValue::from_bytes(Datatype::Int64, vec![0; 7]).is_err());
    assert_eq!(
        MetadataValue::float64s(&[0.1]).unwrap().to_json(),
        serde_json::json!({"type": "float64", "value": [0.1]})
    );
}

#[test]
fn corrupt_payloads_name_field_and_offset() {
    let err = |b: &[u8]| parse_payload(b).unwrap_err().to_string();
    // key_len says 5, 2 bytes follow
    assert_eq!(
        err(b"\x05\0\0\0ab"),
        "array metadata: truncated at key (offset 4: need 5 bytes, 2 left)"
    );
    assert_eq!(
        err(b"\x01\0"),
        "array metadata: truncated at key_len (offset 0: need 4 bytes, 2 left)"
    );
    assert_eq!(
        err(b"\x01\0\0\0a"),
        "array metadata: truncated at del (offset 5: need 1 bytes, 0 left)"
    );
    assert_eq!(
        err(b"\x01\0\0\0a\0"),
        "array metadata: truncated at datatype (offset 6: need 1 bytes, 0 left)"
    );
    assert_eq!(
        err(b"\x01\0\0\0a\0\x01\x01\0"),
        "array metadata: truncated at value_num (offset 7: need 4 bytes, 2 left)"
    );
    assert_eq!(
        err(b"\x01\0\0\0a\0\x01\x02\0\0\0\x01\0\0\0\0\0\0\0"),
        "array metadata: truncated at value (offset 11: need 16 bytes, 8 left)"
    );
    assert_eq!(
        err(b"\x01\0\0\0a\0\x63\x01\0\0\0\x01"),
        "array metadata: invalid datatype at offset 6: unknown datatype id 99"
    );
    // Huge counts fail before allocating.
    assert_eq!(
        err(b"\xff\xff\xff\xff"),
        "array metadata: truncated at key (offset 4: need 4294967295 bytes, 0 left)"
    );
    assert_eq!(
        err(b"\0\0\0\0\0\x01\xff\xff\xff\xff"),
        "array metadata: truncated at value (offset 10: need 34359738360 bytes, 0 left)"
    );
    // The second entry is the bad one: its offsets are from the start of the payload.
    assert_eq!(
        err(b"\x01\0\0\0a\x01\x01\0\0\0"),
        "array metadata: truncated at key (offset 10: need 1 bytes, 0 left)"
    );
    // Deletions, a zero-length key and an empty value are fine; any non-zero del deletes.
    let ok = parse_payload(b"\0\0\0\0\x07\x01\0\0\0k\0\x0c\0\0\0\0").unwrap();
    assert_eq!(ok[0], MetadataEntry::delete(""));
    assert_eq!(ok[1], MetadataEntry::put("k", MetadataValue::utf8("").unwrap()));
    assert_eq!(parse_payload(b"").unwrap(), []);
}

#[test]
fn corrupt_files_name_the_file() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut w = MetadataWriter::new(10);
    w.put("k", MetadataValue::int64s(&[1]).unwrap()).unwrap();
    let good = w.file().unwrap().unwrap();
    let name = format!("{}/{}", dirs::META, good.name);
    // A truncated generic tile.
    storage.publish(&name, bytes::Bytes::from(good.bytes[..20].to_vec())).unwrap();
    let e = ArrayMetadata::load(storage.as_ref(), 0, 10).unwrap_err();
    assert!(matches!(&e, Error::Metadata { file, .. } if *file == name), "{e}");
    assert!(e.to_string().starts_with(&format!("{name}: ")), "{e}");
    // Outside the open range it is not read at all.
    assert!(ArrayMetadata::load(storage.as_ref(), 0, 9).unwrap().is_empty());
    // A valid tile holding a bad payload.
    let tile = tessera_tile::write_generic_tile(b"\x05\0\0\0ab", 22).unwrap();
    storage.publish(&name, bytes::Bytes::from(tile)).unwrap();
    let e = ArrayMetadata::load(storage.as_ref(), 0, 10).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{name}: array metadata: truncated at key (offset 4: need 5 bytes, 2 left)")
    );
}
