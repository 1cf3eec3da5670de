//! The array lifecycle on copies of the libtiledb fixtures: deleting fragments by range and
//! by name (with `.ign` files for fragments inside consolidated commits), deleting an array,
//! upgrading an old one and consolidating a chosen list of fragments. (What libtiledb leaves
//! for the same operations is compared by `xtask/fixtures/check_lifecycle.py`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_fragment::IgnoreFile;
use tessera_query::consolidate::{Options, consolidate_fragments};
use tessera_query::{
    Array, Error, delete_array, delete_fragments_between, delete_fragments_list, upgrade_version,
};
use tessera_storage::{LocalStorage, Storage};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(rel)
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

/// A copy of fixture `rel` in a fresh temporary folder, and its storage.
fn copy(rel: &str) -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&testdata(rel), &dir.path().join("a"));
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path().join("a")));
    (dir, storage)
}

fn names(storage: &dyn Storage, dir: &str) -> Vec<String> {
    let mut out: Vec<String> = storage.list(dir).unwrap().into_iter().map(|e| e.name).collect();
    out.sort();
    out
}

fn fragment_names(storage: &Arc<dyn Storage>) -> Vec<String> {
    Array::open(storage.clone())
        .unwrap()
        .fragments()
        .iter()
        .map(|f| f.name().as_str().to_owned())
        .collect()
}

#[test]
fn deleting_by_range_removes_commit_and_folder_of_fragments_inside_it() {
    let (_dir, storage) = copy("fragments/sparse_int64");
    let before = fragment_names(&storage);
    let deleted = delete_fragments_between(storage.as_ref(), 0, 15).unwrap();
    assert!(!deleted.is_empty());
    assert!(deleted.iter().all(|n| n.starts_with("__10_10_")), "{deleted:?}");
    let after = fragment_names(&storage);
    assert_eq!(after.len(), before.len() - deleted.len());
    for n in &deleted {
        assert!(!storage.exists(&format!("__commits/{n}.wrt")).unwrap());
        assert!(!storage.exists(&format!("__fragments/{n}")).unwrap());
    }
    // Nothing inside a range that holds no fragment whole.
    assert!(delete_fragments_between(storage.as_ref(), 21, 29).unwrap().is_empty());
}

#[test]
fn fragments_inside_consolidated_commits_are_ignored_through_an_ign_file() {
    let (_dir, storage) = copy("fragments/commits_consolidated");
    let first = fragment_names(&storage)[0].clone();
    assert!(first.starts_with("__10_10_"));
    delete_fragments_list(storage.as_ref(), &[first.as_str()]).unwrap();
    let commits = names(storage.as_ref(), "__commits");
    let ign: Vec<&String> = commits.iter().filter(|n| n.ends_with(".ign")).collect();
    assert_eq!(ign.len(), 1, "{commits:?}");
    assert!(ign[0].starts_with("__10_10_"), "named over the fragment: {ign:?}");
    let file = IgnoreFile::parse(&storage.read(&format!("__commits/{}", ign[0])).unwrap()).unwrap();
    assert_eq!(file.paths, [format!("__commits/{first}.wrt")]);
    assert!(!fragment_names(&storage).contains(&first));
    assert!(!storage.exists(&format!("__fragments/{first}")).unwrap());
}

#[test]
fn an_unknown_name_deletes_nothing() {
    let (dir, storage) = copy("fragments/sparse_int64");
    let before = fragment_names(&storage);
    let err = delete_fragments_list(storage.as_ref(), &[before[0].as_str(), "__1_1_nope_22"])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidQuery(_)), "{err}");
    assert!(err.to_string().contains("__1_1_nope_22"), "{err}");
    assert_eq!(fragment_names(&storage), before);
    drop(dir);
}

#[test]
fn obsolete_fragments_are_left_to_the_vacuum() {
    let (_dir, storage) = copy("fragments/sparse_consolidated");
    let deleted = delete_fragments_between(storage.as_ref(), 0, u64::MAX).unwrap();
    // The consolidated fragment and the one after it; the three it replaced wait for vacuum.
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    assert_eq!(names(storage.as_ref(), "__fragments").len(), 3);
}

#[test]
fn deleting_an_array_removes_tiledb_folders_and_keeps_other_files() {
    let (dir, storage) = copy("fragments/sparse_consolidated_vacuumed");
    storage.write("notes.txt", bytes::Bytes::from_static(b"mine")).unwrap();
    delete_array(storage.as_ref()).unwrap();
    assert_eq!(names(storage.as_ref(), ""), ["notes.txt"]);
    assert!(matches!(delete_array(storage.as_ref()), Err(Error::NotAnArray(_))));
    drop(dir);
}

#[test]
fn upgrading_an_old_array_writes_a_version_22_schema_and_the_new_folders() {
    let (_dir, storage) = copy("old/tiledb-repo/non_split_coords_v1_4_0");
    let before = Array::open(storage.clone()).unwrap().read().execute().unwrap().cell_num();
    let name = upgrade_version(storage.as_ref()).unwrap().expect("an old array is upgraded");
    for dir in ["__schema/__enumerations", "__commits", "__fragments", "__fragment_meta"] {
        assert!(storage.is_dir(dir).unwrap(), "{dir}");
    }
    let array = Array::open(storage.clone()).unwrap();
    assert_eq!(array.schema().version, 22);
    assert_eq!(array.schema_name(), &name);
    assert_eq!(array.read().execute().unwrap().cell_num(), before);
    // Again: nothing to do.
    assert!(upgrade_version(storage.as_ref()).unwrap().is_none());
}

#[test]
fn consolidating_a_list_merges_exactly_those_fragments() {
    let (_dir, storage) = copy("fragments/sparse_int64");
    let frags = fragment_names(&storage);
    assert!(frags.len() >= 3);
    let cells = Array::open(storage.clone()).unwrap().read().execute().unwrap().cell_num();
    let report =
        consolidate_fragments(storage.clone(), &[&frags[1], &frags[2]], &Options::default())
            .unwrap();
    assert_eq!(report.inputs, [frags[1].clone(), frags[2].clone()]);
    let now = fragment_names(&storage);
    assert!(now.contains(&frags[0]));
    assert!(!now.contains(&frags[1]) && !now.contains(&frags[2]));
    assert_eq!(Array::open(storage.clone()).unwrap().read().execute().unwrap().cell_num(), cells);
    let err = consolidate_fragments(storage, &[&frags[0], "__9_9_nope_22"], &Options::default())
        .unwrap_err();
    assert!(err.to_string().contains("found 1 of the 2"), "{err}");
}

#[test]
fn group_delete_and_metadata_consolidation() {
    use tessera_query::{Group, consolidate_group_metadata, delete_group, vacuum_group_metadata};
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&testdata("groups"), dir.path());
    let soma: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path().join("soma")));
    // Two metadata files merged into one, the .vac listing them by full URI.
    let before = Group::open(soma.clone()).unwrap().metadata().unwrap();
    let uri = "file:///somewhere/soma";
    let report = consolidate_group_metadata(soma.as_ref(), uri, None).unwrap();
    assert_eq!(report.inputs.len(), 2);
    let vac = format!("{}.vac", report.output.as_ref().unwrap());
    let text = String::from_utf8(soma.read(&vac).unwrap().to_vec()).unwrap();
    assert!(text.lines().all(|l| l.starts_with("file:///somewhere/soma/__meta/__")), "{text}");
    let after = Group::open(soma.clone()).unwrap().metadata().unwrap();
    assert_eq!(before.iter().collect::<Vec<_>>(), after.iter().collect::<Vec<_>>());
    assert!(!after.is_empty());
    // A vacuum under another URI removes only the .vac file (libtiledb matches full URIs).
    let removed = vacuum_group_metadata(soma.as_ref(), "file:///elsewhere/soma").unwrap();
    assert_eq!(removed, std::slice::from_ref(&vac));
    let report = consolidate_group_metadata(soma.as_ref(), uri, None).unwrap();
    let removed = vacuum_group_metadata(soma.as_ref(), uri).unwrap();
    assert_eq!(removed.len(), report.inputs.len() + 1, "{removed:?}");
    // The group itself: details, metadata, group file and folders; members stay.
    delete_group(soma.as_ref()).unwrap();
    assert!(!soma.exists("__tiledb_group.tdb").unwrap());
    assert!(!soma.exists("__meta").unwrap() && !soma.exists("__group").unwrap());
    assert!(soma.is_dir("ms").unwrap(), "members are not touched");
    assert!(matches!(delete_group(soma.as_ref()), Err(Error::NotAGroup(_))));
}
