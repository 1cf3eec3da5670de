//! Delete conditions of the libtiledb fixtures: every `.del` (in `__commits/` or embedded in
//! a `.con`) loads, converts back to its bytes, prints and parses back; the user's
//! condition gives the same file; applying a delete to the cells read before it gives the
//! cells libtiledb reads after it.

use std::path::PathBuf;
use std::sync::Arc;

use tessera_fragment::DeleteCommit as DeleteFile;
use tessera_query::condition::{
    DeleteApplies, DeleteCondition, FragmentDeleteInfo, QueryCondition, apply_deletes,
    delete_fields, delete_marks,
};
use tessera_query::{Array, Column};
use tessera_storage::{LocalStorage, Storage};
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

fn fixture(name: &str) -> (Arc<dyn Storage>, Array) {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fragments").join(name);
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(root));
    let array = Array::open(storage.clone()).unwrap();
    (storage, array)
}

/// Each fixture with its deletes: timestamp and the condition the generator deleted with.
const FIXTURES: &[(&str, &[(u64, &str)])] = &[
    ("sparse_deletes", &[(30, "v < 0.25"), (50, "tag == 'b'")]),
    ("sparse_consolidated_deletes", &[(30, "v < 0.25")]),
    ("commits_consolidated", &[(25, "tag == 'a'")]),
    ("commits_consolidated_vacuumed", &[(25, "tag == 'a'")]),
];

#[test]
fn fixture_deletes_round_trip() {
    for &(name, expected) in FIXTURES {
        let (storage, array) = fixture(name);
        let deletes = &array.directory().deletes;
        assert_eq!(deletes.len(), expected.len(), "{name}");
        for (d, &(t, user)) in deletes.iter().zip(expected) {
            let marker = format!("__commits/{}", d.name.with_extension("del"));
            let bytes = match &d.inline {
                Some(b) => b.clone(),
                None => storage.read(&marker).unwrap().to_vec(),
            };
            let file = DeleteFile::parse_file(&bytes).unwrap();
            let del =
                DeleteCondition::load(&*storage, d, array.schema(), array.enumerations()).unwrap();
            assert_eq!((del.timestamp(), del.marker()), (t, marker.as_str()), "{name}");
            // The stored node converts back to the same bytes.
            let node = del.stored().to_node();
            assert_eq!(Some(&node), file.condition.as_ref(), "{name} {marker}");
            let rewritten = DeleteFile { condition: Some(node.clone()) }.to_file().unwrap();
            assert_eq!(rewritten, bytes, "{name} {marker}: byte for byte");
            // The stored condition prints and parses back.
            let text = del.stored().to_string();
            let again = QueryCondition::parse(&text, array.schema(), array.enumerations()).unwrap();
            assert_eq!(again.to_node(), node, "{name}: {text}");
            // The user's condition gives libtiledb's file.
            let user = QueryCondition::parse(user, array.schema(), array.enumerations()).unwrap();
            assert_eq!(user.to_delete_commit().unwrap().to_file().unwrap(), bytes, "{name}");
        }
    }
    let (_, array) = fixture("sparse_deletes");
    let d = DeleteCondition::load(
        &*fixture("sparse_deletes").0,
        &array.directory().deletes[0],
        array.schema(),
        array.enumerations(),
    )
    .unwrap();
    assert_eq!(d.stored().to_string(), "v >= 0.25");
}

/// The cells of a `.cells.jsonl` file as columns (`r`, `c` int32, `v` float64, `tag`
/// string_ascii), keyed by coordinates.
fn cells(file: &str) -> (Vec<(i64, i64)>, Vec<Column>) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fragments").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let mut coords = Vec::new();
    let mut r = Column::new("r", Datatype::Int32, 1, false);
    let mut c = Column::new("c", Datatype::Int32, 1, false);
    let mut v = Column::new("v", Datatype::Float64, 1, false);
    let mut tag = Column::new("tag", Datatype::StringAscii, CELL_VAL_NUM_VAR, false);
    for line in text.lines() {
        let j: serde_json::Value = serde_json::from_str(line).unwrap();
        let (ri, ci) = (j["r"].as_i64().unwrap(), j["c"].as_i64().unwrap());
        coords.push((ri, ci));
        r.data.extend_from_slice(&(ri as i32).to_le_bytes());
        c.data.extend_from_slice(&(ci as i32).to_le_bytes());
        v.data.extend_from_slice(&j["v"].as_f64().unwrap().to_le_bytes());
        tag.offsets.as_mut().unwrap().push(tag.data.len() as u64);
        tag.data.extend_from_slice(j["tag"].as_str().unwrap().as_bytes());
    }
    (coords, vec![r, c, v, tag])
}

#[test]
fn fixture_delete_applies_as_libtiledb() {
    let (storage, array) = fixture("sparse_deletes");
    let deletes: Vec<DeleteCondition> = array
        .directory()
        .deletes
        .iter()
        .map(|d| DeleteCondition::load(&*storage, d, array.schema(), array.enumerations()).unwrap())
        .collect();
    // Before the delete at 30 (read at 25) and after it (read at 35): fragments 10 and 20.
    let (before, cols) = cells("sparse_deletes.at25.cells.jsonl");
    let (after, _) = cells("sparse_deletes.at35.cells.jsonl");
    let fragment = FragmentDeleteInfo {
        timestamp_range: (20, 20),
        has_timestamps: false,
        processed_conditions: None,
    };
    assert_eq!(delete_fields(&deletes[..1], &fragment), ["v"]);
    let mut keep = vec![true; before.len()];
    let lookup = |n: &str| cols.iter().find(|c| c.name == n);
    apply_deletes(&deletes[..1], &fragment, 35, &lookup, &mut keep).unwrap();
    let kept: Vec<(i64, i64)> =
        before.iter().zip(&keep).filter(|&(_, &k)| k).map(|(c, _)| *c).collect();
    assert_eq!(kept, after);
    assert!(kept.len() < before.len());
    // The delete at 50 (tag == 'b') on top: no kept cell has tag 'b'.
    apply_deletes(&deletes, &fragment, 55, &lookup, &mut keep).unwrap();
    let tags = &cols[3];
    for (i, &k) in keep.iter().enumerate() {
        assert_eq!(k, kept.contains(&before[i]) && tags.cell(i) != Some(b"b"), "cell {i}");
    }
}

/// Columns `v` (float64) and the pseudo fields for a consolidated fragment.
fn consolidated_columns(v: &[f64], t: &[u64], dt: &[u64], dci: &[u64]) -> Vec<Column> {
    let mut out = Vec::new();
    let mut col = Column::new("v", Datatype::Float64, 1, false);
    v.iter().for_each(|x| col.data.extend_from_slice(&x.to_le_bytes()));
    out.push(col);
    for (name, values) in
        [("__timestamps", t), ("__delete_timestamps", dt), ("__delete_condition_index", dci)]
    {
        let mut col = Column::new(name, Datatype::UInt64, 1, false);
        values.iter().for_each(|x| col.data.extend_from_slice(&x.to_le_bytes()));
        out.push(col);
    }
    out
}

#[test]
fn timestamps_and_delete_metadata() {
    let (storage, array) = fixture("sparse_consolidated_deletes");
    let d30 = DeleteCondition::load(
        &*storage,
        &array.directory().deletes[0],
        array.schema(),
        array.enumerations(),
    )
    .unwrap();
    let none = u64::MAX;
    // A fragment consolidated from writes at 10, 20 and 40 with timestamps, before any
    // delete was processed: the delete at 30 removes matching cells written up to 30.
    let cols =
        consolidated_columns(&[0.1, 0.1, 0.1, 0.9], &[10, 30, 40, 10], &[none; 4], &[none; 4]);
    let lookup = |n: &str| cols.iter().find(|c| c.name == n);
    let plain = FragmentDeleteInfo {
        timestamp_range: (10, 40),
        has_timestamps: true,
        processed_conditions: None,
    };
    assert_eq!(d30.applies_to(&plain), DeleteApplies::CellsUpToTimestamp);
    assert_eq!(delete_fields(std::slice::from_ref(&d30), &plain), ["v", "__timestamps"]);
    let mut keep = vec![true; 4];
    apply_deletes(std::slice::from_ref(&d30), &plain, 45, &lookup, &mut keep).unwrap();
    assert_eq!(keep, [false, false, true, true]);
    // What consolidation records for these cells.
    let marks = delete_marks(std::slice::from_ref(&d30), &plain, &lookup, 4).unwrap();
    assert_eq!(marks.timestamps, [30, 30, none, none]);
    assert_eq!(marks.condition_indexes, [0, 0, none, none]);
    // A fragment starting after the delete is not touched; one without timestamps whose
    // range holds the delete is, entirely.
    let late = FragmentDeleteInfo { timestamp_range: (31, 40), ..plain };
    assert_eq!(d30.applies_to(&late), DeleteApplies::No);
    let whole = FragmentDeleteInfo { has_timestamps: false, ..plain };
    assert_eq!(d30.applies_to(&whole), DeleteApplies::AllCells);
    let mut keep = vec![true; 4];
    apply_deletes(std::slice::from_ref(&d30), &whole, 45, &lookup, &mut keep).unwrap();
    assert_eq!(keep, [false, false, false, true]);

    // The same fragment consolidated after the delete: dt/dci mark the deleted cell and the
    // delete is a processed condition, so only the open end decides.
    let processed = vec![d30.marker().to_owned()];
    let meta = FragmentDeleteInfo { processed_conditions: Some(&processed), ..plain };
    assert_eq!(d30.applies_to(&meta), DeleteApplies::AlreadyProcessed);
    assert_eq!(delete_fields(std::slice::from_ref(&d30), &meta), ["__delete_timestamps"]);
    let cols = consolidated_columns(
        &[0.1, 0.1, 0.1, 0.9],
        &[10, 30, 40, 10],
        &[30, 30, none, none],
        &[0, 0, none, none],
    );
    let lookup = |n: &str| cols.iter().find(|c| c.name == n);
    for (open_end, expected) in [
        (25, [true, true, true, true]),
        (29, [true, true, true, true]),
        (30, [false, false, true, true]),
        (35, [false, false, true, true]),
        (u64::MAX, [false, false, true, true]),
    ] {
        let mut keep = vec![true; 4];
        apply_deletes(std::slice::from_ref(&d30), &meta, open_end, &lookup, &mut keep).unwrap();
        assert_eq!(keep, expected, "open at {open_end}");
    }
    // Consolidating again keeps the recorded marks (translated to the new list).
    let marks = delete_marks(std::slice::from_ref(&d30), &meta, &lookup, 4).unwrap();
    assert_eq!(marks.timestamps, [30, 30, none, none]);
    assert_eq!(marks.condition_indexes, [0, 0, none, none]);
}
