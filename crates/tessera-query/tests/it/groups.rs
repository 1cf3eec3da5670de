//! Groups written by libtiledb 2.30 (tiledb.Group) and by tiledbsoma (testdata/groups, see
//! xtask/fixtures/gen_groups.py): members, types and metadata at every recorded time equal
//! libtiledb's, the member arrays read equal to libtiledb's cells, and groups Tessera writes
//! (into copies and new folders) read back as libtiledb would read them.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{assert_rows_eq, read_jsonl, rows, testdata};
use serde_json::{Value as Json, json};
use tessera_query::group::{Group, GroupMember, GroupWriter};
use tessera_query::metadata::MetadataValue;
use tessera_query::{Array, ObjectType, ReadResult, object_type};
use tessera_schema::json::cell_json;
use tessera_storage::{LocalStorage, Storage};

fn manifest() -> Json {
    let text = std::fs::read_to_string(testdata().join("groups/manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn storage(path: impl Into<PathBuf>) -> Arc<dyn Storage> {
    Arc::new(LocalStorage::new(path.into()))
}

/// A member as the manifest records it.
fn member_json(m: &GroupMember) -> Json {
    json!({"name": m.name, "type": m.object_type.name(), "relative": m.relative, "uri": m.uri})
}

#[test]
fn members_and_metadata_equal_libtiledbs_at_every_time() {
    let manifest = manifest();
    let groups = manifest["groups"].as_array().unwrap();
    assert!(groups.len() >= 8, "nested, child, deeper and the SOMA groups");
    let mut reads = 0;
    for g in groups {
        let path = testdata().join(g["path"].as_str().unwrap());
        assert_eq!(object_type(storage(&path).as_ref()).unwrap(), ObjectType::Group);
        for read in g["reads"].as_array().unwrap() {
            let group = match read["at"].as_u64() {
                Some(t) => Group::open_at(storage(&path), t).unwrap(),
                None => Group::open(storage(&path)).unwrap(),
            };
            let what = format!("{} at {}", g["path"], read["at"]);
            let members: Vec<Json> = group.members().iter().map(member_json).collect();
            assert_eq!(Json::Array(members), read["members"], "{what}: members");
            assert_eq!(group.metadata().unwrap().to_json(), read["metadata"], "{what}: metadata");
            reads += 1;
        }
    }
    assert!(reads >= 15, "{reads} reads");
}

#[test]
fn nested_group_history() {
    let path = testdata().join("groups/nested");
    let keys = |g: &Group| g.members().iter().map(|m| m.key().to_owned()).collect::<Vec<_>>();
    let at = |t| Group::open_at(storage(&path), t).unwrap();
    assert!(at(9).members().is_empty());
    assert!(keys(&at(20)).contains(&"gone".to_owned()));
    let now = Group::open(storage(&path)).unwrap();
    assert!(!keys(&now).contains(&"gone".to_owned()), "removed at 30");
    assert!(keys(&now).contains(&"late".to_owned()), "added at 30");
    assert_eq!(now.details_files().len(), 2);
    // The removal is an entry with `deleted` set in the newest details file.
    let newest = &now.details_files()[1];
    let bytes = std::fs::read(path.join(format!("__group/{newest}"))).unwrap();
    let details = tessera_query::group::GroupDetails::parse(
        &tessera_tile::read_generic_tile(&bytes).unwrap(),
    )
    .unwrap();
    let gone = details.members.iter().find(|m| m.key() == "gone").unwrap();
    assert!(gone.deleted && gone.relative && gone.uri == "gone");
    // Metadata: consolidated at the end, so "now" reads the consolidated file alone.
    let md = now.metadata().unwrap();
    assert_eq!(md.files().len(), 1);
    assert_eq!((md.files()[0].t1, md.files()[0].t2), (10, 30));
    assert_eq!(md.get("version").unwrap().as_i64s(), Some(vec![3]));
    assert!(!md.contains_key("temp"));
    assert_eq!(at(15).metadata().unwrap().get("temp").unwrap().as_str(), Some("deleted at 20"));
    // The absolute member points nowhere (so that the fixture works in any checkout).
    let elsewhere = now.member("elsewhere").unwrap();
    assert_eq!(elsewhere.uri, "file:///tessera-fixture/elsewhere");
    assert!(!elsewhere.relative);
    let outside = now.member("outside").unwrap();
    assert_eq!(outside.resolved_uri("testdata/groups/nested"), "testdata/groups/nested/../outside");
}

/// Rows of a read with enumeration attributes shown as their labels (as `tessera read`
/// prints them and the cells files hold them).
fn labelled_rows(array: &Array, result: &ReadResult) -> Vec<Json> {
    let mut out = rows(result);
    for a in &array.schema().attributes {
        let Some(name) = &a.enumeration else { continue };
        let e = array.enumerations().iter().find(|e| &e.name == name).unwrap();
        for row in &mut out {
            let Some(code) = row[&a.name].as_i64() else { continue };
            let label = e.value(code as usize).unwrap();
            row[&a.name] = cell_json(e.datatype, e.cell_val_num, label);
        }
    }
    out
}

#[test]
fn member_arrays_read_equal_to_libtiledb() {
    let manifest = manifest();
    let arrays = manifest["arrays"].as_array().unwrap();
    assert!(arrays.len() >= 9, "every array reachable from the groups");
    for a in arrays {
        let rel = a["path"].as_str().unwrap();
        let array = Array::open(storage(testdata().join(rel))).unwrap();
        let result = array.read().execute().unwrap();
        let expected = read_jsonl(a["cells_file"].as_str().unwrap());
        assert_eq!(expected.len() as u64, a["cell_num"].as_u64().unwrap());
        assert_rows_eq(&labelled_rows(&array, &result), &expected, rel);
    }
}

/// Every array and group reachable from `group`, walking members (relative ones against the
/// group's folder): (path, type) pairs.
fn walk(group: &Path, out: &mut Vec<(PathBuf, ObjectType)>) {
    for m in Group::open(storage(group)).unwrap().members() {
        let path = if m.relative {
            group.join(&m.uri)
        } else {
            PathBuf::from(m.uri.strip_prefix("file://").unwrap())
        };
        let found = object_type(storage(&path).as_ref()).unwrap();
        if m.uri.starts_with("file:///tessera-fixture/") {
            assert_eq!(found, ObjectType::Invalid, "{}", m.uri);
            continue;
        }
        assert_eq!(found, m.object_type, "{}", path.display());
        out.push((path.clone(), found));
        if found == ObjectType::Group {
            walk(&path, out);
        }
    }
}

#[test]
fn recursing_into_members_reaches_every_object() {
    for (name, groups, arrays) in [("nested", 2, 5), ("soma", 5, 4)] {
        let mut found = Vec::new();
        walk(&testdata().join("groups").join(name), &mut found);
        let count = |t| found.iter().filter(|(_, k)| *k == t).count();
        assert_eq!(
            (count(ObjectType::Group), count(ObjectType::Array)),
            (groups, arrays),
            "{name}"
        );
    }
    assert_eq!(
        object_type(storage(testdata().join("groups")).as_ref()).unwrap(),
        ObjectType::Invalid
    );
    assert_eq!(
        object_type(storage(testdata().join("groups/outside")).as_ref()).unwrap(),
        ObjectType::Array
    );
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

#[test]
fn tessera_sessions_on_a_libtiledb_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested");
    copy_dir(&testdata().join("groups/nested"), &path);
    let mut w = GroupWriter::open(storage(&path), 40).unwrap();
    w.remove_member("late").unwrap();
    w.add_member(GroupMember::new("gone", ObjectType::Array, true, Some("gone".into()))).unwrap();
    w.metadata().put("version", MetadataValue::int64s(&[4]).unwrap()).unwrap();
    let commit = w.commit().unwrap();
    assert_eq!(commit.details.unwrap().t1, 40);

    let keys = |g: &Group| g.members().iter().map(|m| m.key().to_owned()).collect::<Vec<_>>();
    let now = Group::open(storage(&path)).unwrap();
    assert!(keys(&now).contains(&"gone".to_owned()) && !keys(&now).contains(&"late".to_owned()));
    assert_eq!(now.members().len(), 6);
    assert_eq!(now.metadata().unwrap().get("version").unwrap().as_i64s(), Some(vec![4]));
    // The past is unchanged.
    let before = Group::open_at(storage(&path), 35).unwrap();
    assert!(keys(&before).contains(&"late".to_owned()));
    assert_eq!(before.metadata().unwrap().get("version").unwrap().as_i64s(), Some(vec![3]));
}

#[test]
fn absolute_members_written_and_read_at_test_time() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path().join("g");
    Group::create(storage(&group).as_ref()).unwrap();
    copy_dir(&testdata().join("groups/outside"), &dir.path().join("arr"));
    let absolute = format!("file://{}", dir.path().join("arr").display());
    let mut w = GroupWriter::open(storage(&group), 5).unwrap();
    w.add_member(GroupMember::new(absolute.clone(), ObjectType::Array, false, None)).unwrap();
    w.add_member(GroupMember::new(absolute.clone(), ObjectType::Array, false, Some("n".into())))
        .unwrap();
    w.commit().unwrap();
    let g = Group::open(storage(&group)).unwrap();
    assert_eq!(g.members().len(), 2);
    for m in g.members() {
        assert_eq!(m.resolved_uri("anything"), absolute);
        let array = Array::open(storage(m.uri.strip_prefix("file://").unwrap())).unwrap();
        let expected = read_jsonl("groups/cells/outside.cells.jsonl");
        assert_rows_eq(&rows(&array.read().execute().unwrap()), &expected, &m.uri);
    }
    // A URI is first looked up as a key: it removes the unnamed member, not the named one.
    let mut w = GroupWriter::open(storage(&group), 6).unwrap();
    w.remove_member(&absolute).unwrap();
    w.commit().unwrap();
    let g = Group::open(storage(&group)).unwrap();
    assert_eq!(g.members().iter().map(GroupMember::key).collect::<Vec<_>>(), ["n"]);
    // With the unnamed one gone, the URI finds the named member.
    let mut w = GroupWriter::open(storage(&group), 7).unwrap();
    assert_eq!(w.find_member(&absolute).unwrap().unwrap().key(), "n");
    w.remove_member(&absolute).unwrap();
    w.commit().unwrap();
    assert!(Group::open(storage(&group)).unwrap().members().is_empty());
}

/// Every details file libtiledb and tiledbsoma wrote re-encodes to the same bytes (payload and
/// generic tile) from its decoded entries: the writer's layout is libtiledb's.
#[test]
fn details_files_reencode_byte_for_byte() {
    let manifest = manifest();
    let mut files = 0;
    for g in manifest["groups"].as_array().unwrap() {
        for f in g["details_files"].as_array().unwrap() {
            let bytes = std::fs::read(testdata().join(f.as_str().unwrap())).unwrap();
            let payload = tessera_tile::read_generic_tile(&bytes).unwrap();
            let details = tessera_query::group::GroupDetails::parse(&payload).unwrap();
            assert_eq!(details.version, 2, "{f}");
            assert_eq!(tessera_query::group::GroupDetails::to_payload(&details.members), payload);
            let tile = tessera_tile::write_generic_tile(&payload, tessera_types::FORMAT_VERSION);
            assert_eq!(tile.unwrap(), bytes, "{f}");
            files += 1;
        }
    }
    assert!(files >= 7, "{files} details files");
}
