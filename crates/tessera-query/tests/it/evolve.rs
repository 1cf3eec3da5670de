//! Schema evolution through the library: each change writes one new schema file (and the
//! enumeration files it names); reads and writes afterwards use the right schema per fragment;
//! every invalid evolution is an error that leaves the array's files as they were.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tessera_query::{Array, SchemaEvolution, evolve};
use tessera_schema::{
    ArraySchema, Attribute, CurrentDomain, Dimension, Enumeration, EnumerationRef,
};
use tessera_storage::{LocalStorage, Storage};
use tessera_types::{ArrayType, CurrentDomainType, Datatype};

fn i64b(v: i64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// A sparse array: `x` in [0, 999] with current domain [0, 9]; `cat` int8 indexing the string
/// enumeration `cats` = [a, b]; `val` float64. One fragment at 10: x = 1, 2.
fn sparse(dir: &Path) -> Arc<dyn Storage> {
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir));
    let mut cat = Attribute::new("cat", Datatype::Int8);
    cat.enumeration = Some("cats".into());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
        .attribute(cat)
        .attribute(Attribute::new("val", Datatype::Float64))
        .enumeration(EnumerationRef { name: "cats".into(), path: String::new() })
        .current_domain(Some(CurrentDomain {
            kind: CurrentDomainType::NdRectangle,
            ranges: vec![[i64b(0), i64b(9)]],
        }))
        .build()
        .unwrap();
    let cats = Enumeration::from_values("cats", Datatype::StringUtf8, false, &["a", "b"]).unwrap();
    Array::create_at(storage.clone(), &schema, &[cats], 1).unwrap();
    let array = Array::open_at(storage.clone(), 10).unwrap();
    array
        .write()
        .values("x", &[1i64, 2])
        .values("cat", &[0i8, 1])
        .values("val", &[0.5f64, 1.5])
        .submit()
        .unwrap();
    storage
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.insert(rel + "/", Vec::new());
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn strings(array: &Array, at_least: usize) -> Vec<String> {
    let e = array.enumerations().iter().find(|e| e.name == "cats").unwrap();
    assert!(e.len() >= at_least);
    (0..e.len()).map(|i| String::from_utf8(e.value(i).unwrap().to_vec()).unwrap()).collect()
}

#[test]
fn each_evolution_is_one_new_schema_and_reads_follow_it() {
    let dir = tempfile::tempdir().unwrap();
    let storage = sparse(dir.path());

    // 20: the enumeration extended, the current domain expanded, an attribute added.
    let mut score = Attribute::new("score", Datatype::Int32).nullable(true);
    score.fill_value = 7i32.to_le_bytes().to_vec();
    let name = evolve(
        &storage,
        &SchemaEvolution::new()
            .extend_enumeration("cats", ["c"])
            .expand_current_domain(vec![[i64b(0), i64b(99)]])
            .add_attribute(score)
            .timestamp(20),
    )
    .unwrap();
    assert_eq!((name.t1, name.t2), (20, 20));
    let schemas = storage.list("__schema").unwrap();
    assert_eq!(schemas.iter().filter(|e| !e.is_dir).count(), 2);
    assert_eq!(storage.list("__schema/__enumerations").unwrap().len(), 2);

    let array = Array::open_at(storage.clone(), 25).unwrap();
    assert_eq!(strings(&array, 3), ["a", "b", "c"]);
    assert_eq!(array.schema().attributes.len(), 3);
    let cd = array.schema().current_domain.as_ref().unwrap();
    assert_eq!(cd.ranges[0], [i64b(0), i64b(99)]);
    // The old fragment lacks `score`: its fill value, valid or not as the fill validity says.
    let res = array.read().execute().unwrap();
    let score = res.column("score").unwrap();
    assert_eq!(res.cell_num(), 2);
    assert_eq!(&score.values::<i32>().unwrap()[..], &[7, 7]);
    // A write after the evolution uses the new schema.
    let writer = Array::open_at(storage.clone(), 30).unwrap();
    writer
        .write()
        .values("x", &[50i64])
        .values("cat", &[2i8])
        .values("val", &[9.0f64])
        .values("score", &[5i32])
        .validity("score", vec![1])
        .submit()
        .unwrap();

    // 40: `val` dropped; the old fragments' `val` data is no longer read.
    evolve(&storage, &SchemaEvolution::new().drop_attribute("val").timestamp(40)).unwrap();
    let now = Array::open_at(storage.clone(), 45).unwrap();
    let res = now.read().execute().unwrap();
    assert!(res.column("val").is_none());
    assert_eq!(&res.values::<i64>("x").unwrap()[..], &[1, 2, 50]);
    assert_eq!(&res.values::<i8>("cat").unwrap()[..], &[0, 1, 2]);

    // Time travel: at 15 the first schema (two attributes, two labels).
    let then = Array::open_at(storage.clone(), 15).unwrap();
    assert_eq!(then.schema().attributes.len(), 2);
    assert_eq!(strings(&then, 2), ["a", "b"]);
    let res = then.read().execute().unwrap();
    assert_eq!(&res.values::<f64>("val").unwrap()[..], &[0.5, 1.5]);
}

#[test]
fn enumerations_added_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let storage = sparse(dir.path());
    let levels = Enumeration::from_values(
        "levels",
        Datatype::Int32,
        true,
        &[10i32.to_le_bytes(), 20i32.to_le_bytes()],
    )
    .unwrap();
    let mut lv = Attribute::new("lv", Datatype::UInt8);
    lv.enumeration = Some("levels".into());
    evolve(
        &storage,
        &SchemaEvolution::new().add_enumeration(levels).add_attribute(lv).timestamp(20),
    )
    .unwrap();
    let array = Array::open_at(storage.clone(), 20).unwrap();
    assert_eq!(array.schema().enumerations.len(), 2);
    assert!(array.enumerations().iter().any(|e| e.name == "levels" && e.ordered));
    // Dropping the attribute and its enumeration in one evolution.
    evolve(
        &storage,
        &SchemaEvolution::new().drop_attribute("lv").drop_enumeration("levels").timestamp(30),
    )
    .unwrap();
    let array = Array::open_at(storage.clone(), 30).unwrap();
    assert_eq!(array.schema().enumerations.len(), 1);
    assert!(array.schema().attribute("lv").is_none());
    // An extension given whole, as libtiledb's API takes it.
    let old = array.enumerations()[0].clone();
    let whole = old.extended(&["z"]).unwrap();
    evolve(&storage, &SchemaEvolution::new().extend_enumeration_to(whole).timestamp(40)).unwrap();
    let array = Array::open_at(storage, 40).unwrap();
    assert_eq!(strings(&array, 3), ["a", "b", "z"]);
}

#[test]
fn invalid_evolutions_are_errors_that_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let storage = sparse(dir.path());
    let before = snapshot(dir.path());
    let reordered =
        Enumeration::from_values("cats", Datatype::StringUtf8, false, &["b", "a", "c"]).unwrap();
    let mut unknown = Attribute::new("u", Datatype::Int32);
    unknown.enumeration = Some("nope".into());
    let mut narrow = Attribute::new("n", Datatype::Float32);
    narrow.enumeration = Some("cats".into());
    let dup_enum =
        Enumeration::from_values("cats", Datatype::Int32, false, &[1i32.to_le_bytes()]).unwrap();
    let cases: Vec<(SchemaEvolution, &str)> = vec![
        (SchemaEvolution::new().add_attribute(Attribute::new("val", Datatype::Int32)), "\"val\""),
        (SchemaEvolution::new().add_attribute(Attribute::new("x", Datatype::Int32)), "\"x\""),
        (
            SchemaEvolution::new()
                .add_attribute(Attribute::new("b", Datatype::Int32))
                .add_attribute(Attribute::new("b", Datatype::Int8)),
            "added twice",
        ),
        (SchemaEvolution::new().drop_attribute("x"), "it is a dimension"),
        (SchemaEvolution::new().drop_attribute("nope"), "no attribute of that name"),
        (
            SchemaEvolution::new().expand_current_domain(vec![[i64b(0), i64b(5)]]),
            "can only be expanded",
        ),
        (
            SchemaEvolution::new().expand_current_domain(vec![[i64b(0), i64b(5000)]]),
            "leaves the domain",
        ),
        (SchemaEvolution::new().expand_current_domain(vec![[i64b(20), i64b(10)]]), "above high"),
        (SchemaEvolution::new().extend_enumeration("cats", ["a"]), "appears twice"),
        (SchemaEvolution::new().extend_enumeration("nope", ["a"]), "no enumeration"),
        (SchemaEvolution::new().extend_enumeration_to(reordered), "not an extension"),
        (SchemaEvolution::new().drop_enumeration("cats"), "attribute \"cat\" uses it"),
        (SchemaEvolution::new().add_attribute(unknown), "unknown enumeration"),
        (SchemaEvolution::new().add_attribute(narrow), "one integer per cell"),
        (SchemaEvolution::new().add_enumeration(dup_enum), "already has one"),
    ];
    for (ev, words) in cases {
        let err = evolve(&storage, &ev).unwrap_err().to_string();
        assert!(err.contains(words), "{ev:?}: {err:?} lacks {words:?}");
        assert!(err.starts_with("schema evolution: "), "{err}");
        assert_eq!(snapshot(dir.path()), before, "{ev:?} changed the array");
    }
    // Dropping an enumeration the schema lacks is no error (libtiledb ignores it).
    evolve(&storage, &SchemaEvolution::new().drop_enumeration("nope").timestamp(50)).unwrap();
}

#[test]
fn an_attribute_too_narrow_for_its_enumeration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let storage = sparse(dir.path());
    // int8 indexes at most 126 values (libtiledb: the type's maximum must exceed the count).
    let values: Vec<String> = (0..130).map(|i| format!("v{i}")).collect();
    let err = evolve(&storage, &SchemaEvolution::new().extend_enumeration("cats", &values))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot index the 132 values"), "{err}");
}
