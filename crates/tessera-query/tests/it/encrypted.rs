//! AES-256-GCM encrypted arrays and groups: `testdata/encrypted/` (written by libtiledb 2.30
//! with the key below, see `xtask/fixtures/gen_encrypted.py`) read equal to what libtiledb
//! read back, wrong and missing keys are clear errors naming the file, and arrays Tessera
//! writes with a key (including consolidation and vacuum) read back with it.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use serde_json::{Value as Json, json};
use tessera_query::consolidate::{self, Mode, Options};
use tessera_query::metadata::{MetadataValue, MetadataWriter};
use tessera_query::{Array, Group, ReadResult};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{EncryptedStorage, LocalStorage, MemoryStorage, Storage};
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, EncryptionKey};

const KEY: &str = "0123456789abcdeF0123456789abcdeF";

fn key() -> EncryptionKey {
    EncryptionKey::parse(KEY).unwrap()
}

fn keyed(path: &Path, key: EncryptionKey) -> Arc<dyn Storage> {
    Arc::new(EncryptedStorage::new(Arc::new(LocalStorage::new(path)), key))
}

fn fixture(name: &str) -> Arc<dyn Storage> {
    keyed(&testdata().join("encrypted").join(name), key())
}

fn expected(name: &str) -> Json {
    let text = std::fs::read_to_string(testdata().join(format!("encrypted/{name}.expected.json")))
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The columns of `result` as `{name: [values]}` (strings as strings, null for null).
fn fields(result: &ReadResult) -> Json {
    let rows = rows(result);
    let mut out = serde_json::Map::new();
    for c in &result.columns {
        out.insert(c.name.clone(), rows.iter().map(|r| r[&c.name].clone()).collect());
    }
    Json::Object(out)
}

fn metadata_json(m: &tessera_query::metadata::ArrayMetadata) -> Json {
    let mut out = serde_json::Map::new();
    for (k, v) in m.iter() {
        let value = v.value_json();
        // libtiledb gives one-value numbers as scalars.
        let value = match value {
            Json::Array(a) if a.len() == 1 => a[0].clone(),
            v => v,
        };
        out.insert(String::from_utf8(k.to_vec()).unwrap(), value);
    }
    Json::Object(out)
}

/// Every error in the chain, joined.
fn chain(e: &dyn std::error::Error) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[test]
fn libtiledb_dense_reads_equal() {
    let array = Array::open(fixture("dense")).unwrap();
    assert_eq!(array.enumerations().len(), 1);
    let result = array.read().execute().unwrap();
    let want = expected("dense");
    let mut got = fields(&result);
    got.as_object_mut().unwrap().remove("d");
    assert_eq!(got, want["fields"]);
    assert_eq!(metadata_json(&array.metadata().unwrap()), want["meta"]);
}

#[test]
fn libtiledb_sparse_consolidated_with_delete_reads_equal() {
    let array = Array::open(fixture("sparse")).unwrap();
    let result = array.read().execute().unwrap();
    let want = expected("sparse");
    let mut pairs: Vec<(i64, f64)> = result
        .values::<i64>("d")
        .unwrap()
        .iter()
        .copied()
        .zip(result.values::<f64>("f").unwrap().iter().copied())
        .collect();
    pairs.sort_by_key(|p| p.0);
    let got = json!({
        "d": pairs.iter().map(|p| p.0).collect::<Vec<_>>(),
        "f": pairs.iter().map(|p| p.1).collect::<Vec<_>>(),
    });
    assert_eq!(got, want["fields"]);
    assert_eq!(metadata_json(&array.metadata().unwrap()), want["meta"]);
}

#[test]
fn libtiledb_group_reads_equal() {
    let group = Group::open(fixture("group")).unwrap();
    let want = expected("group");
    let names: Vec<Json> = group.members().iter().map(|m| json!(m.name)).collect();
    assert_eq!(Json::from(names), want["members"]);
    assert_eq!(metadata_json(&group.metadata().unwrap()), want["meta"]);
    let inner = Array::open(fixture("group/inner")).unwrap();
    let mut got = fields(&inner.read().execute().unwrap());
    got.as_object_mut().unwrap().remove("d");
    assert_eq!(got, want["inner"]["fields"]);
}

#[test]
fn missing_and_wrong_keys_are_errors_naming_the_file() {
    let plain = Arc::new(LocalStorage::new(testdata().join("encrypted/dense")));
    let e = Array::open(plain).unwrap_err();
    let text = chain(&e);
    assert!(text.contains("__schema/__"), "{text}");
    assert!(text.contains("an encryption key is needed"), "{text}");

    let wrong = EncryptionKey::from_bytes(&[b'x'; 32]).unwrap();
    let e = Array::open(keyed(&testdata().join("encrypted/dense"), wrong.clone())).unwrap_err();
    let text = chain(&e);
    assert!(text.contains("__schema/__"), "{text}");
    assert!(text.contains("wrong encryption key"), "{text}");

    let e = Group::open(keyed(&testdata().join("encrypted/group"), wrong)).unwrap_err();
    let text = chain(&e);
    assert!(text.contains("__group/__") || text.contains("__meta/__"), "{text}");
    assert!(text.contains("wrong encryption key"), "{text}");

    // A plain array opened with a key: refused, as libtiledb refuses it.
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    Array::create(storage.clone(), &schema(), &[]).unwrap();
    let keyed_mem = Arc::new(EncryptedStorage::new(storage, key()));
    let text = chain(&Array::open(keyed_mem).unwrap_err());
    assert!(text.contains("not encrypted, but an encryption key was given"), "{text}");
}

fn schema() -> ArraySchema {
    ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
        .attribute(Attribute::new("v", Datatype::Float64))
        .attribute(
            Attribute::new("s", Datatype::StringUtf8).cell_val_num(CELL_VAL_NUM_VAR).nullable(true),
        )
        .build()
        .unwrap()
}

fn write(array: &Array, t: u64, xs: &[i64]) {
    let v: Vec<f64> = xs.iter().map(|&x| x as f64 / 2.0).collect();
    let s: Vec<String> = xs.iter().map(|x| format!("s{x}")).collect();
    let valid: Vec<u8> = xs.iter().map(|x| u8::from(x % 3 != 0)).collect();
    array
        .write()
        .values("x", xs)
        .values("v", &v)
        .var_values("s", &s)
        .validity("s", valid)
        .timestamp(t)
        .submit()
        .unwrap();
}

#[test]
fn tessera_writes_consolidates_and_vacuums_encrypted_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let storage = keyed(dir.path(), key());
    Array::create(storage.clone(), &schema(), &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    write(&array, 1, &[1, 2, 3]);
    write(&array, 2, &[500, 7]);
    let mut meta = MetadataWriter::new(3);
    meta.put("k", MetadataValue::int64s(&[42]).unwrap()).unwrap();
    meta.commit(storage.as_ref()).unwrap();
    let mut meta = MetadataWriter::new(4);
    meta.put("name", MetadataValue::utf8("x").unwrap()).unwrap();
    meta.commit(storage.as_ref()).unwrap();

    // Every generic tile is encrypted (the header's byte 29), fragment footers are not.
    let schema_dir = dir.path().join("__schema");
    let schema_file = std::fs::read_dir(&schema_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file())
        .unwrap();
    assert_eq!(std::fs::read(schema_file).unwrap()[29], 1);

    let read_all = |storage: Arc<dyn Storage>| {
        let array = Array::open(storage).unwrap();
        let r = array.read().execute().unwrap();
        let mut rows = rows(&r);
        rows.sort_by_key(|r| r["x"].as_i64());
        (rows, metadata_json(&array.metadata().unwrap()))
    };
    let (before, meta_before) = read_all(storage.clone());
    assert_eq!(before.len(), 5);
    assert_eq!(before[0], json!({"x": 1, "v": 0.5, "s": "s1"}));
    assert_eq!(before[2], json!({"x": 3, "v": 1.5, "s": null}));
    assert_eq!(meta_before, json!({"k": 42, "name": "x"}));
    // Without the key nothing opens.
    assert!(Array::open(Arc::new(LocalStorage::new(dir.path()))).is_err());

    for mode in [Mode::FragmentMeta, Mode::Commits, Mode::ArrayMeta, Mode::Fragments] {
        consolidate::consolidate(storage.clone(), mode, &Options::default()).unwrap();
        assert_eq!(read_all(storage.clone()), (before.clone(), meta_before.clone()), "{mode:?}");
    }
    for mode in [Mode::FragmentMeta, Mode::Commits, Mode::ArrayMeta, Mode::Fragments] {
        consolidate::vacuum(storage.as_ref(), mode).unwrap();
        assert_eq!(read_all(storage.clone()), (before.clone(), meta_before.clone()), "{mode:?}");
    }
    assert_eq!(Array::open(storage).unwrap().fragments().len(), 1);
}

#[test]
fn schema_evolution_of_an_encrypted_array_stays_encrypted() {
    let dir = tempfile::tempdir().unwrap();
    let storage = keyed(dir.path(), key());
    Array::create(storage.clone(), &schema(), &[]).unwrap();
    write(&Array::open(storage.clone()).unwrap(), 1, &[4, 6]);
    let evolution = tessera_schema::SchemaEvolution::new()
        .add_attribute(Attribute::new("extra", Datatype::Int32).nullable(true))
        .timestamp(5);
    tessera_query::evolve::evolve(&storage, &evolution).unwrap();
    let array = Array::open(storage).unwrap();
    assert_eq!(array.schema().attributes.len(), 3);
    assert_eq!(array.read().execute().unwrap().cell_num(), 2);
    // Every schema file is encrypted (header byte 29).
    for e in std::fs::read_dir(dir.path().join("__schema")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            assert_eq!(std::fs::read(&p).unwrap()[29], 1, "{}", p.display());
        }
    }
}
