//! Fragment metadata consolidation (`__fragment_meta/*.meta`) and array metadata
//! consolidation (`__meta/`), with their vacuums, on copies of the libtiledb fixtures: the
//! files are libtiledb's (the `.meta` payload checked against libtiledb's own file), readers
//! use them, and the arrays read the same at every time.

use crate::consolidate_common;

use std::sync::Arc;

use bytes::Bytes;
use consolidate_common::*;
use tessera_fragment::{ConsolidatedFragmentMeta, VacuumFile};
use tessera_query::consolidate::{Mode, Options, consolidate, vacuum};
use tessera_query::metadata::{ArrayMetadata, MetadataValue, MetadataWriter, parse_payload};
use tessera_query::{Array, FRAGMENT_METADATA_FILE};
use tessera_storage::{LocalStorage, Storage};

const LIBTILEDB_META: &str = "__fragment_meta/__10_30_274bb25965a83503d2a4df1d05bd83ce_22.meta";

fn meta_files(storage: &dyn Storage) -> Vec<String> {
    names(storage, "__fragment_meta")
}

#[test]
fn fragment_meta_matches_libtiledbs_and_readers_use_it() {
    let (_dir, storage) = fixture_copy("fragment_meta_consolidated");
    let before = views(&storage);
    let fragments = before.last().unwrap().fragments.clone();
    assert_eq!(fragments.len(), 4);
    let report = consolidate(storage.clone(), Mode::FragmentMeta, &Options::default()).unwrap();
    let out = report.output.unwrap();
    assert!(out.starts_with("__fragment_meta/__10_40_") && out.ends_with("_22.meta"), "{out}");
    assert_eq!(report.inputs, fragments);
    let ours = ConsolidatedFragmentMeta::parse_file(&storage.read(&out).unwrap()).unwrap();
    // libtiledb's .meta of the first three fragments: the same entries, and the same file
    // bytes for the same entries.
    let theirs = storage.read(LIBTILEDB_META).unwrap();
    let parsed = ConsolidatedFragmentMeta::parse_file(&theirs).unwrap();
    assert_eq!(parsed.entries[..], ours.entries[..3]);
    let first3 = ConsolidatedFragmentMeta { entries: ours.entries[..3].to_vec() };
    assert_eq!(first3.to_file().unwrap(), theirs);
    // Each footer is the one at the end of the fragment's own metadata file.
    for e in &ours.entries {
        let file = storage.read(&format!("__fragments/{}/{FRAGMENT_METADATA_FILE}", e.name));
        let file = file.unwrap();
        let len = u64::from_le_bytes(file[file.len() - 8..].try_into().unwrap()) as usize;
        assert_eq!(e.footer[..], file[file.len() - 8 - len..file.len() - 8], "{}", e.name);
    }
    assert_same_reads(&storage, &before, "after consolidation");

    // The vacuum keeps only the .meta with the latest t2.
    let removed = vacuum(storage.as_ref(), Mode::FragmentMeta).unwrap().inputs;
    assert_eq!(removed, [LIBTILEDB_META]);
    assert_eq!(meta_files(storage.as_ref()), [out.trim_start_matches("__fragment_meta/")]);
    assert_same_reads(&storage, &before, "after vacuum");

    // Readers take the footers from the .meta file: with the footer length at the end of
    // every fragment's own file spoiled, the array still reads the same...
    for f in &fragments {
        let path = format!("__fragments/{f}/{FRAGMENT_METADATA_FILE}");
        let mut file = storage.read(&path).unwrap().to_vec();
        let n = file.len();
        file[n - 8..].copy_from_slice(&u64::MAX.to_le_bytes());
        storage.write(&path, Bytes::from(file)).unwrap();
    }
    assert_same_reads(&storage, &before, "with the footers' lengths spoiled");
    // ...and without the .meta file it cannot open.
    storage.remove(&out).unwrap();
    assert!(Array::open(storage.clone()).is_err());
}

#[test]
fn fragment_meta_twice_and_too_few_fragments() {
    let (_dir, storage) = fixture_copy("sparse_int64");
    let before = views(&storage);
    let a = consolidate(storage.clone(), Mode::FragmentMeta, &Options::default()).unwrap();
    let b = consolidate(storage.clone(), Mode::FragmentMeta, &Options::default()).unwrap();
    let (a, b) = (a.output.unwrap(), b.output.unwrap());
    assert_eq!(storage.read(&a).unwrap(), storage.read(&b).unwrap());
    // Both end at the latest t2: the vacuum keeps both, as libtiledb does.
    assert!(vacuum(storage.as_ref(), Mode::FragmentMeta).unwrap().inputs.is_empty());
    assert_eq!(meta_files(storage.as_ref()).len(), 2);
    assert_same_reads(&storage, &before, "two .meta files");

    // One fragment visible: nothing to consolidate.
    let (_dir, storage) = fixture_copy("sparse_int64");
    let mut wrts = names(storage.as_ref(), "__commits");
    wrts.pop();
    for w in wrts {
        storage.remove(&format!("__commits/{w}")).unwrap();
    }
    let report = consolidate(storage.clone(), Mode::FragmentMeta, &Options::default()).unwrap();
    assert_eq!(report, Default::default());
    assert!(meta_files(storage.as_ref()).is_empty());
}

#[test]
fn array_meta_merges_live_keys_and_vacuum_removes_the_inputs() {
    let (_dir, storage) = fixture_copy("array_metadata");
    let before = views(&storage);
    let inputs: Vec<String> =
        names(storage.as_ref(), "__meta").into_iter().map(|n| format!("__meta/{n}")).collect();
    assert_eq!(inputs.len(), 3);
    let report = consolidate(storage.clone(), Mode::ArrayMeta, &Options::default()).unwrap();
    let out = report.output.unwrap();
    assert_eq!(report.inputs, inputs);
    // __10_30_<label>: no version suffix.
    let name = out.trim_start_matches("__meta/");
    assert!(name.starts_with("__10_30_") && name.len() == "__10_30_".len() + 32, "{out}");
    let vac = VacuumFile::parse(&storage.read(&format!("{out}.vac")).unwrap()).unwrap();
    let want: Vec<String> = inputs.iter().map(|p| format!("/{p}")).collect();
    assert_eq!(vac.lines, want);
    // The consolidated file holds the state at 30: live keys only, sorted.
    let payload = tessera_tile::read_generic_tile(&storage.read(&out).unwrap()).unwrap();
    let entries = parse_payload(&payload).unwrap();
    assert!(entries.iter().all(|e| !e.is_deletion()));
    let latest = ArrayMetadata::load(storage.as_ref(), 0, u64::MAX).unwrap();
    assert_eq!(payload, latest.to_payload().unwrap());
    assert_eq!(latest.files().len(), 1, "the inputs are hidden by the .vac");
    assert_same_reads(&storage, &before, "after consolidation");

    let removed = vacuum(storage.as_ref(), Mode::ArrayMeta).unwrap().inputs;
    let mut want = inputs.clone();
    want.push(format!("{out}.vac"));
    assert_eq!(removed, want);
    assert_eq!(names(storage.as_ref(), "__meta"), [name]);
    // The history before 30 is gone with the inputs (libtiledb's semantics); now is the same.
    assert_eq!(view(&storage, None).metadata, before.last().unwrap().metadata);
    assert_eq!(view(&storage, Some(20)).metadata, serde_json::json!({}));
    // One file left: nothing to consolidate.
    let report = consolidate(storage.clone(), Mode::ArrayMeta, &Options::default()).unwrap();
    assert_eq!(report.output, None);
}

#[test]
fn array_meta_honours_the_range() {
    let (_dir, storage) = fixture_copy("array_metadata");
    let before = views(&storage);
    let opts = Options { range: Some((10, 20)), ..Options::default() };
    let report = consolidate(storage.clone(), Mode::ArrayMeta, &opts).unwrap();
    let out = report.output.unwrap();
    assert!(out.starts_with("__meta/__10_20_"), "{out}");
    assert_eq!(report.inputs.len(), 2);
    assert_same_reads(&storage, &before, "after consolidating 10..20");
    // Then everything: the first consolidation's file and the file at 30.
    let report = consolidate(storage.clone(), Mode::ArrayMeta, &Options::default()).unwrap();
    assert_eq!(report.inputs.len(), 2);
    assert_eq!(report.inputs[0], out);
    assert_same_reads(&storage, &before, "after consolidating everything");
    assert_eq!(vacuum(storage.as_ref(), Mode::ArrayMeta).unwrap().inputs.len(), 6);
    assert_eq!(names(storage.as_ref(), "__meta").len(), 1);
    // A range holding one file or none: nothing to do.
    let (_dir, storage) = fixture_copy("array_metadata");
    for range in [(11, 19), (10, 10), (40, 50)] {
        let opts = Options { range: Some(range), ..Options::default() };
        let report = consolidate(storage.clone(), Mode::ArrayMeta, &opts).unwrap();
        assert_eq!(report.output, None, "{range:?}");
    }
    let opts = Options { range: Some((20, 10)), ..Options::default() };
    assert!(consolidate(storage, Mode::ArrayMeta, &opts).is_err());
}

#[test]
fn array_meta_with_every_key_deleted_writes_only_the_vac() {
    let (_dir, storage) = fixture_copy("sparse_int64");
    let mut w = MetadataWriter::new(10);
    w.put("k", MetadataValue::int64s(&[1]).unwrap()).unwrap();
    w.commit(storage.as_ref()).unwrap();
    let mut w = MetadataWriter::new(20);
    w.delete("k").unwrap();
    w.commit(storage.as_ref()).unwrap();
    let report = consolidate(storage.clone(), Mode::ArrayMeta, &Options::default()).unwrap();
    let out = report.output.unwrap();
    assert!(out.starts_with("__meta/__10_20_") && out.ends_with(".vac"), "{out}");
    assert_eq!(names(storage.as_ref(), "__meta").len(), 3);
    assert_eq!(vacuum(storage.as_ref(), Mode::ArrayMeta).unwrap().inputs.len(), 3);
    assert!(names(storage.as_ref(), "__meta").is_empty());
    let storage2: Arc<dyn Storage> = Arc::new(LocalStorage::new(_dir.path().join("a")));
    assert!(Array::open(storage2).unwrap().metadata().unwrap().is_empty());
}
