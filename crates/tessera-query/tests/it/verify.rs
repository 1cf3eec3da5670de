//! `verify`: every fixture array verifies clean, arrays Tessera writes and consolidates verify
//! clean, and damaged copies give the expected problem with its file and offset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_fragment::LazyPart;
use tessera_query::Array;
use tessera_query::consolidate::{self, Mode};
use tessera_query::verify::{Options, Problem, Report, Severity, verify};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, Storage};
use tessera_types::{ArrayType, Datatype};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

/// Every array folder (one holding `__schema`) under `dir`.
fn arrays_under(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("__schema").is_dir() {
        out.push(dir.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            arrays_under(&e.path(), out);
        }
    }
}

fn run(path: &Path) -> Report {
    verify(&LocalStorage::new(path), &Options::default()).unwrap()
}

/// A copy of fixture `rel` in a temporary folder.
fn damaged_copy(rel: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("array");
    copy_dir(&testdata().join(rel), &path);
    (tmp, path)
}

/// The first (oldest) fragment folder of the array, relative to it.
fn first_fragment(path: &Path) -> String {
    let array = Array::open(Arc::new(LocalStorage::new(path))).unwrap();
    array.fragments()[0].dir()
}

/// Start offsets of the tiles of field `idx` in its data file, in the oldest fragment.
fn tile_offsets(path: &Path, idx: usize) -> Vec<u64> {
    let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(path));
    let array = Array::open(storage.clone()).unwrap();
    array.fragments()[0].u64s(storage.as_ref(), LazyPart::TileOffsets(idx)).unwrap()
}

fn flip(file: &Path, at: usize) {
    let mut b = std::fs::read(file).unwrap();
    b[at] ^= 0x01;
    std::fs::write(file, b).unwrap();
}

fn errors(r: &Report) -> Vec<&Problem> {
    r.errors().collect()
}

#[test]
fn every_fixture_verifies_clean() {
    let mut arrays = Vec::new();
    for family in ["filters", "fragments", "schemas", "groups"] {
        arrays_under(&testdata().join(family), &mut arrays);
    }
    assert!(arrays.len() > 60, "{} arrays", arrays.len());
    for a in arrays {
        let r = run(&a);
        assert!(r.problems.is_empty(), "{}: {:#?}", a.display(), r.problems);
    }
}

#[test]
fn a_flipped_byte_in_an_unfiltered_data_tile_is_found_by_its_statistics() {
    let (_tmp, path) = damaged_copy("fragments/sparse_int64");
    let frag = first_fragment(&path);
    let offsets = tile_offsets(&path, 0);
    // A byte inside tile 1 of the float attribute `v` (no filters): the tile's sum changes.
    flip(&path.join(&frag).join("a0.tdb"), offsets[1] as usize + 40);
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].file, format!("{frag}/a0.tdb"));
    assert_eq!(e[0].offset, Some(offsets[1]));
    assert!(
        e[0].message.starts_with("tile 1: its cells do not match the tile statistics"),
        "{e:?}"
    );
}

#[test]
fn a_flipped_byte_in_a_checksummed_tile_is_a_checksum_mismatch() {
    let (_tmp, path) = damaged_copy("filters/checksums");
    let frag = first_fragment(&path);
    let file = path.join(&frag).join("a0.tdb");
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    flip(&file, len / 2);
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].file, format!("{frag}/a0.tdb"));
    assert_eq!(e[0].offset, Some(0));
    assert!(e[0].message.contains("checksum mismatch"), "{}", e[0].message);
    // Reading the array reports it too.
    let array = Array::open(Arc::new(LocalStorage::new(&path))).unwrap();
    let err = array.read().execute().unwrap_err();
    let text = format!(
        "{err}: {}",
        std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default()
    );
    assert!(text.contains("a0.tdb"), "{text}");
}

#[test]
fn a_truncated_data_file_is_reported_with_the_tiles_it_cuts() {
    let (_tmp, path) = damaged_copy("fragments/sparse_int64");
    let frag = first_fragment(&path);
    let offsets = tile_offsets(&path, 0);
    let file = path.join(&frag).join("a0.tdb");
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(len - 10).unwrap();
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 2, "{e:#?}");
    let last = *offsets.last().unwrap();
    assert_eq!((e[0].file.as_str(), e[0].offset), (format!("{frag}/a0.tdb").as_str(), Some(last)));
    assert!(e[0].message.contains("runs past the end of the file"), "{}", e[0].message);
    assert_eq!(e[1].offset, Some(len - 10));
    assert!(e[1].message.contains(&format!("the file has {} bytes", len - 10)), "{}", e[1].message);
}

#[test]
fn a_missing_committed_fragment_folder_is_an_error() {
    let (_tmp, path) = damaged_copy("fragments/sparse_int64");
    let frag = first_fragment(&path);
    std::fs::remove_dir_all(path.join(&frag)).unwrap();
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!((e[0].file.as_str(), e[0].offset), (frag.as_str(), None));
    assert!(e[0].message.contains("the fragment folder is missing"), "{}", e[0].message);
}

#[test]
fn a_corrupt_footer_is_reported_at_its_offset() {
    let (_tmp, path) = damaged_copy("fragments/sparse_int64");
    let frag = first_fragment(&path);
    let file = path.join(&frag).join("__fragment_metadata.tdb");
    let len = std::fs::metadata(&file).unwrap().len() as usize;
    // The footer length (last 8 bytes) made huge.
    flip(&file, len - 2);
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].file, format!("{frag}/__fragment_metadata.tdb"));
    assert_eq!(e[0].offset, Some(len as u64 - 8));
    assert!(e[0].message.contains("footer length"), "{}", e[0].message);

    // A generic tile offset inside the footer pointing elsewhere.
    let (_tmp2, path) = damaged_copy("fragments/sparse_int64");
    let file = path.join(&frag).join("__fragment_metadata.tdb");
    flip(&file, len - 8 - 20);
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].file, format!("{frag}/__fragment_metadata.tdb"));
    assert!(e[0].offset.is_some(), "{e:?}");
}

#[test]
fn a_missing_data_file_and_a_bad_commit_are_errors() {
    let (_tmp, path) = damaged_copy("fragments/sparse_deletes");
    let frag = first_fragment(&path);
    std::fs::remove_file(path.join(&frag).join("d1.tdb")).unwrap();
    let del = std::fs::read_dir(path.join("__commits"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "del"))
        .unwrap();
    std::fs::write(&del, b"not a generic tile").unwrap();
    let r = run(&path);
    let files: Vec<&str> = r.errors().map(|p| p.file.as_str()).collect();
    let del_rel = format!("__commits/{}", del.file_name().unwrap().to_string_lossy());
    assert_eq!(files, [del_rel.as_str(), &format!("{frag}/d1.tdb")], "{:#?}", r.problems);
}

#[test]
fn leftovers_of_interrupted_writes_and_vacuums_are_warnings() {
    let (_tmp, path) = damaged_copy("fragments/sparse_consolidated");
    // An interrupted write: a folder without a commit.
    let leftover = "__fragments/__99_99_0123456789abcdef0123456789abcdef_22";
    std::fs::create_dir_all(path.join(leftover)).unwrap();
    std::fs::write(path.join(leftover).join("a0.tdb"), b"partial").unwrap();
    // An interrupted vacuum: one consolidated fragment's commit and folder already gone.
    let vac = std::fs::read_dir(path.join("__commits"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "vac"))
        .unwrap();
    let text = std::fs::read_to_string(vac).unwrap();
    let old = text.lines().next().unwrap().rsplit('/').next().unwrap().to_owned();
    let second = text.lines().nth(1).unwrap().rsplit('/').next().unwrap().to_owned();
    std::fs::remove_file(path.join(format!("__commits/{old}.wrt"))).unwrap();
    std::fs::remove_dir_all(path.join(format!("__fragments/{old}"))).unwrap();
    // ... and stopped between the next one's commit and its folder.
    std::fs::remove_file(path.join(format!("__commits/{second}.wrt"))).unwrap();
    let r = run(&path);
    assert!(r.is_ok(), "{:#?}", r.problems);
    let warned: Vec<(&str, Severity)> =
        r.problems.iter().map(|p| (p.file.as_str(), p.severity)).collect();
    assert_eq!(warned.len(), 3, "{:#?}", r.problems);
    assert!(warned.contains(&(leftover, Severity::Warning)), "{warned:?}");
    assert!(r.problems.iter().any(|p| p.file.ends_with(".vac") && p.message.contains(&old)));
    assert!(
        r.problems
            .iter()
            .any(|p| p.file.ends_with(&second) && p.message.contains("a vacuum removed"))
    );
    assert_eq!(r.summary.uncommitted_fragments, 2);
    // Vacuuming again finishes the interrupted vacuum; the write's leftover stays.
    let storage = LocalStorage::new(&path);
    consolidate::vacuum(&storage, Mode::Fragments).unwrap();
    let r = run(&path);
    let files: Vec<&str> = r.problems.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(files, [leftover], "{:#?}", r.problems);
}

#[test]
fn corrupt_schema_and_array_metadata_files_are_errors() {
    let (_tmp, path) = damaged_copy("fragments/array_metadata");
    let meta = std::fs::read_dir(path.join("__meta")).unwrap().flatten().next().unwrap().path();
    let len = std::fs::metadata(&meta).unwrap().len() as usize;
    flip(&meta, len - 1);
    let r = run(&path);
    let e = errors(&r);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].file.starts_with("__meta/"), "{e:?}");

    let (_tmp, path) = damaged_copy("fragments/sparse_int64");
    let schema = std::fs::read_dir(path.join("__schema"))
        .unwrap()
        .flatten()
        .find(|e| e.file_type().unwrap().is_file())
        .unwrap()
        .path();
    std::fs::write(&schema, b"garbage").unwrap();
    let r = run(&path);
    // The schema, and every fragment that names it.
    assert!(r.errors().any(|p| p.file.starts_with("__schema/")), "{:#?}", r.problems);
    assert_eq!(r.errors().count(), 4, "{:#?}", r.problems);
}

fn schema(dense: bool) -> ArraySchema {
    let b = if dense {
        ArraySchema::builder(ArrayType::Dense)
            .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
    } else {
        ArraySchema::builder(ArrayType::Sparse)
            .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
            .capacity(64)
    };
    b.attribute(Attribute::new("v", Datatype::Float64))
        .attribute(Attribute::new("s", Datatype::StringUtf8).cell_val_num(u32::MAX).nullable(true))
        .build()
        .unwrap()
}

#[test]
fn arrays_tessera_writes_and_consolidates_verify_clean() {
    for dense in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(tmp.path()));
        Array::create(storage.clone(), &schema(dense), &[]).unwrap();
        for (k, (lo, hi)) in [(0i64, 499i64), (250, 799), (600, 999)].into_iter().enumerate() {
            let array = Array::open(storage.clone()).unwrap();
            let x: Vec<i64> = (lo..=hi).collect();
            let v: Vec<f64> = x.iter().map(|&i| i as f64 * 0.5 + k as f64).collect();
            let mut q = array.write().timestamp(10 * (k as u64 + 1));
            q = if dense { q.range_i64("x", lo, hi) } else { q.values("x", &x) };
            q.values("v", &v)
                .var_values("s", x.iter().map(|i| format!("s{i}")))
                .validity("s", x.iter().map(|i| u8::from(i % 3 != 0)).collect())
                .submit()
                .unwrap();
        }
        let r = verify(storage.as_ref(), &Options::default()).unwrap();
        assert!(r.problems.is_empty(), "dense {dense}: {:#?}", r.problems);
        assert_eq!(r.summary.fragments, 3);
        consolidate::consolidate(storage.clone(), Mode::Fragments, &Default::default()).unwrap();
        let r = verify(storage.as_ref(), &Options::default()).unwrap();
        assert!(r.problems.is_empty(), "dense {dense}, consolidated: {:#?}", r.problems);
        consolidate::vacuum(storage.as_ref(), Mode::Fragments).unwrap();
        let r = verify(storage.as_ref(), &Options::default()).unwrap();
        assert!(r.problems.is_empty(), "dense {dense}, vacuumed: {:#?}", r.problems);
    }
}
