//! Creating and opening arrays on both storage backends.

use std::sync::Arc;

use tessera_query::{Array, Error, dirs};
use tessera_schema::{ArraySchema, Attribute, Dimension, Enumeration, EnumerationRef};
use tessera_storage::{LocalStorage, MemoryStorage, Storage};
use tessera_types::names::TimestampedName;
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype};

fn schema() -> (ArraySchema, Vec<Enumeration>) {
    let colors = Enumeration {
        name: "colors".into(),
        path: String::new(),
        datatype: Datatype::StringUtf8,
        cell_val_num: CELL_VAL_NUM_VAR,
        ordered: false,
        data: b"redgreenblue".to_vec(),
        offsets: Some(vec![0, 3, 8]),
    };
    let mut color = Attribute::new("color", Datatype::UInt8);
    color.enumeration = Some("colors".into());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("rows", Datatype::Int32).domain_i64(1, 100).tile_i64(10))
        .attribute(Attribute::new("a", Datatype::Float64))
        .attribute(color)
        .enumeration(EnumerationRef { name: "colors".into(), path: String::new() })
        .build()
        .unwrap();
    (schema, vec![colors])
}

fn create_and_open(storage: Arc<dyn Storage>) {
    let (schema, enums) = schema();
    Array::create_at(storage.clone(), &schema, &enums, 1_700_000_000_000).unwrap();
    // The layout libtiledb makes.
    for d in dirs::ALL {
        assert!(storage.is_dir(d).unwrap(), "{d}");
    }
    let files = storage.list(dirs::SCHEMA).unwrap();
    let schema_files: Vec<_> = files.iter().filter(|e| !e.is_dir).collect();
    assert_eq!(schema_files.len(), 1);
    let name = TimestampedName::parse(&schema_files[0].name).unwrap();
    assert_eq!((name.t1, name.t2, name.version), (1_700_000_000_000, 1_700_000_000_000, None));
    let enum_files = storage.list(dirs::ENUMERATIONS).unwrap();
    assert_eq!(enum_files.len(), 1);
    assert!(enum_files[0].name.starts_with("__") && enum_files[0].name.ends_with("_0"));
    assert_eq!(enum_files[0].name.len(), 2 + 32 + 2);

    let array = Array::open(storage.clone()).unwrap();
    let mut expected = schema.clone();
    expected.enumerations[0].path = enum_files[0].name.clone();
    assert_eq!(array.schema(), &expected);
    assert_eq!(array.enumerations()[0].data, b"redgreenblue");
    assert_eq!(array.enumerations()[0].path, enum_files[0].name);

    assert!(matches!(Array::create(storage.clone(), &schema, &enums), Err(Error::AlreadyExists)));
    // Before the first schema existed, libtiledb opens with the oldest schema.
    assert_eq!(Array::open_at(storage, 5).unwrap().schema(), &expected);
}

#[test]
fn create_and_open_in_memory() {
    create_and_open(Arc::new(MemoryStorage::new()));
}

#[test]
fn create_and_open_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    create_and_open(Arc::new(LocalStorage::new(dir.path().join("arr"))));
}

#[test]
fn schema_evolution_opens_the_newest_schema_and_older_ones_by_time() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let (schema, enums) = schema();
    Array::create_at(storage.clone(), &schema, &enums, 100).unwrap();
    let mut evolved = Array::open(storage.clone()).unwrap().schema().clone();
    evolved.attributes.push(Attribute::new("b", Datatype::Int8));
    let name = TimestampedName::generate(200, 200, None);
    storage.write(&format!("__schema/{name}"), evolved.to_file().unwrap().into()).unwrap();

    let now = Array::open(storage.clone()).unwrap();
    assert_eq!(now.schema().attributes.len(), 3);
    assert_eq!(now.schema_names().len(), 2);
    assert_eq!(now.schema_name(), &name);
    let then = Array::open_at(storage.clone(), 150).unwrap();
    assert_eq!(then.schema().attributes.len(), 2);
    let before = Array::open_at(storage, 50).unwrap();
    assert_eq!(before.schema().attributes.len(), 2);
}

#[test]
fn open_fails_clearly() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    assert!(matches!(Array::open(storage.clone()), Err(Error::NotAnArray(_))));
    storage.write("__array_schema.tdb", vec![0u8; 10].into()).unwrap();
    let err = Array::open(storage.clone()).unwrap_err().to_string();
    // Arrays older than format version 10 are read now: a corrupt schema file is named.
    assert!(err.contains("__array_schema.tdb") && err.contains("format version 0"), "{err}");

    // A schema of a format version newer than 22.
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let (schema, _) = schema();
    let mut payload = ArraySchema { enumerations: vec![], ..schema.clone() };
    payload.attributes.truncate(1);
    let mut bytes = payload.to_bytes();
    bytes[0] = 23;
    let file = tessera_tile::write_generic_tile(&bytes, 22).unwrap();
    storage
        .write(&format!("__schema/{}", TimestampedName::generate(1, 1, None)), file.into())
        .unwrap();
    let err = Array::open(storage.clone()).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("format version 23"), "{err}");

    // A corrupt schema file names the file and the offset.
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut bytes = payload.to_bytes();
    bytes.truncate(40);
    let file = tessera_tile::write_generic_tile(&bytes, 22).unwrap();
    let name = TimestampedName::generate(1, 1, None);
    storage.write(&format!("__schema/{name}"), file.into()).unwrap();
    let err = Array::open(storage).unwrap_err().to_string();
    assert!(err.contains(&format!("__schema/{name}")) && err.contains("offset"), "{err}");
}

/// The `evolution` fixture (libtiledb evolved its schema four times): `open` takes the newest
/// schema, and every older one loads by name, each equal to libtiledb's view of it.
#[test]
fn libtiledb_schema_evolution_fixture() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/schemas");
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.join("evolution")));
    let array = Array::open(storage).unwrap();
    let names = array.schema_names().to_vec();
    assert_eq!(names.len(), 5);
    assert_eq!(array.schema_name(), names.last().unwrap());
    let view = |name: &TimestampedName| {
        let (schema, enums) = array.load_schema(&name.to_string()).unwrap();
        serde_json::to_value(tessera_schema::json::to_json(&schema, &enums)).unwrap()
    };
    let expected = |file: String| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
    };
    for (i, name) in names.iter().enumerate().take(4) {
        assert_eq!(view(name), expected(format!("evolution.v{i}.schema.json")), "schema {i}");
    }
    assert_eq!(view(names.last().unwrap()), expected("evolution.schema.json".into()));
    let newest =
        serde_json::to_value(tessera_schema::json::to_json(array.schema(), array.enumerations()))
            .unwrap();
    assert_eq!(newest, expected("evolution.schema.json".into()));
}

/// A footer taken from consolidated fragment metadata that cannot fit in the fragment's own
/// metadata file is an error naming the file, not an arithmetic overflow.
#[test]
fn consolidated_footer_larger_than_its_file_is_an_error() {
    fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
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
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/fragments/fragment_meta_consolidated");
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("a");
    copy_dir(&src, &array);
    // A fragment whose footer the `.meta` file (over [10, 30]) holds.
    let frag = std::fs::read_dir(array.join("__fragments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("__10_10_"))
        .unwrap();
    std::fs::write(frag.join("__fragment_metadata.tdb"), [0u8; 8]).unwrap();
    let err = Array::open(Arc::new(LocalStorage::new(&array))).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("__fragment_metadata.tdb"), "{err}");
}
