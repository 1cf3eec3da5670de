//! Commit consolidation (`.con`) and the commit and fragment vacuums, on copies of the
//! libtiledb fixtures: the files written and removed are libtiledb's (checked byte for byte
//! against the `.con` libtiledb wrote for `commits_consolidated`), and the arrays read the
//! same before, after consolidation and after vacuum at every time.

use crate::common;
use crate::consolidate_common;

use bytes::Bytes;
use consolidate_common::*;
use tessera_fragment::{ConsolidatedCommits, IgnoreFile};
use tessera_query::Error;
use tessera_query::consolidate::{Mode, Options, consolidate, vacuum};

const CON_10_30: &str = "__commits/__10_30_7320b523b285b5fd8ea8d99c6de980cf_22.con";

fn con_paths(bytes: &[u8]) -> Vec<String> {
    ConsolidatedCommits::parse(bytes).unwrap().entries.into_iter().map(|e| e.path).collect()
}

#[test]
fn con_file_is_byte_identical_to_libtiledbs() {
    // commits_consolidated holds libtiledb's .con over the commit files that are still there;
    // without it, Tessera must write the same bytes under a name over the same range.
    let (_dir, storage) = fixture_copy("commits_consolidated");
    let libtiledbs = storage.read(CON_10_30).unwrap();
    storage.remove(CON_10_30).unwrap();
    let before = views(&storage);
    let report = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
    let out = report.output.unwrap();
    assert!(out.starts_with("__commits/__10_30_") && out.ends_with("_22.con"), "{out}");
    assert_eq!(storage.read(&out).unwrap(), libtiledbs);
    assert_eq!(
        report.inputs,
        con_paths(&libtiledbs),
        "inputs: the .wrt and .del files in listing order"
    );
    assert_eq!(report.inputs.len(), 4);
    assert_same_reads(&storage, &before, "after consolidation");
}

#[test]
fn existing_entries_first_then_new_commits_and_no_upd() {
    let (_dir, storage) = fixture_copy("commits_consolidated");
    // A later write, an update commit (never consolidated) and a name that is no commit.
    let wrt = "__commits/__40_40_0123456789abcdef0123456789abcdef_22.wrt";
    let upd = "__commits/__35_35_0123456789abcdef0123456789abcdef_22.upd";
    storage.write(wrt, Bytes::new()).unwrap();
    storage.write(upd, Bytes::from_static(b"x")).unwrap();
    storage.write("__commits/notes.txt", Bytes::from_static(b"x")).unwrap();
    let report = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
    let mut want = con_paths(&storage.read(CON_10_30).unwrap());
    want.sort();
    want.push(wrt.to_owned());
    assert_eq!(report.inputs, want);
    let out = report.output.unwrap();
    assert!(out.starts_with("__commits/__10_40_"), "{out}");
    let con = ConsolidatedCommits::parse(&storage.read(&out).unwrap()).unwrap();
    let del = con.entries.iter().find(|e| e.path.ends_with(".del")).unwrap();
    assert_eq!(
        del.delete_file.as_deref().unwrap(),
        &storage.read(&del.path).unwrap()[..],
        "the .del file's bytes follow its line"
    );
}

#[test]
fn consolidate_vacuum_and_reconsolidate_read_the_same() {
    for fixture in ["sparse_deletes", "sparse_consolidated_deletes", "dense_overwrites"] {
        let (_dir, storage) = fixture_copy(fixture);
        let before = views(&storage);
        let commits_before = names(storage.as_ref(), "__commits");
        let report = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
        let con = report.output.clone().unwrap();
        assert_same_reads(&storage, &before, &format!("{fixture}: after consolidation"));

        let removed = vacuum(storage.as_ref(), Mode::Commits).unwrap().inputs;
        // Every .wrt and .del the .con holds; nothing else (the .vac stays).
        let mut want: Vec<String> = commits_before
            .iter()
            .filter(|n| n.ends_with(".wrt") || n.ends_with(".del"))
            .map(|n| format!("__commits/{n}"))
            .collect();
        want.sort();
        assert_eq!(removed, want, "{fixture}");
        let mut left = names(storage.as_ref(), "__commits");
        left.retain(|n| !n.ends_with(".vac"));
        assert_eq!(left, [con.trim_start_matches("__commits/")], "{fixture}");
        assert_same_reads(&storage, &before, &format!("{fixture}: after vacuum"));

        // Again: the .del files are gone, their bytes come from the .con (where libtiledb
        // fails); the new .con holds the same entries.
        let again = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
        let new = storage.read(again.output.as_ref().unwrap()).unwrap();
        assert_eq!(new, storage.read(&con).unwrap(), "{fixture}");
        // A .con holding a .del never counts as holding everything (libtiledb reads it
        // line by line, .del bytes included), so the older .con stays.
        let removed = vacuum(storage.as_ref(), Mode::Commits).unwrap().inputs;
        let has_del = con_paths(&new).iter().any(|p| p.ends_with(".del"));
        assert_eq!(removed.is_empty(), has_del, "{fixture}: {removed:?}");
        assert_same_reads(&storage, &before, &format!("{fixture}: consolidated twice"));
    }
}

#[test]
fn fragment_vacuum_writes_an_ignore_file_for_consolidated_commits() {
    let (_dir, storage) = fixture_copy("sparse_consolidated");
    let before = views(&storage);
    consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
    let vac = names(storage.as_ref(), "__commits").into_iter().find(|n| n.ends_with(".vac"));
    let vac = vac.unwrap();
    let inputs: Vec<String> =
        String::from_utf8(storage.read(&format!("__commits/{vac}")).unwrap().to_vec())
            .unwrap()
            .lines()
            .map(|l| l.trim_start_matches("/__fragments/").to_owned())
            .collect();
    assert_eq!(inputs.len(), 3);

    let report = vacuum(storage.as_ref(), Mode::Fragments).unwrap();
    let ign = report.output.unwrap();
    assert!(ign.starts_with("__commits/__10_30_") && ign.ends_with("_22.ign"), "{ign}");
    let want: Vec<String> = inputs.iter().map(|f| format!("__commits/{f}.wrt")).collect();
    assert_eq!(IgnoreFile::parse(&storage.read(&ign).unwrap()).unwrap().paths, want);
    // Per fragment its .wrt then its folder, then the .vac.
    let mut removed = Vec::new();
    for f in &inputs {
        removed.push(format!("__commits/{f}.wrt"));
        removed.push(format!("__fragments/{f}"));
    }
    removed.push(format!("__commits/{vac}"));
    assert_eq!(report.inputs, removed);
    assert_eq!(names(storage.as_ref(), "__fragments").len(), 2);
    // Sparse: the consolidated fragment keeps every cell's timestamp, so time travel holds.
    assert_same_reads(&storage, &before, "after the fragment vacuum");

    // A second consolidation leaves the ignored commits out; the commit vacuum then removes
    // the remaining .wrt files, the first .con and the .ign.
    let report = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
    let con = report.output.unwrap();
    assert_eq!(report.inputs.len(), 2);
    assert!(report.inputs.iter().all(|p| !want.contains(p)), "{:?}", report.inputs);
    vacuum(storage.as_ref(), Mode::Commits).unwrap();
    assert_eq!(names(storage.as_ref(), "__commits"), [con.trim_start_matches("__commits/")]);
    assert_same_reads(&storage, &before, "after the commit vacuum");
}

#[test]
fn refuses_a_first_commit_after_the_last_as_libtiledb_does() {
    // __20, __30 then __5 in listing order: libtiledb cannot name the .con file.
    let (_dir, storage) = fixture_copy("dense_old_timestamp");
    let err = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap_err();
    assert!(matches!(err, Error::InvalidQuery(_)), "{err}");
    assert!(names(storage.as_ref(), "__commits").iter().all(|n| n.ends_with(".wrt")));
}

#[test]
fn nothing_to_do() {
    let (_dir, storage) = fixture_copy("sparse_int64");
    for n in names(storage.as_ref(), "__commits") {
        storage.remove(&format!("__commits/{n}")).unwrap();
    }
    let report = consolidate(storage.clone(), Mode::Commits, &Options::default()).unwrap();
    assert_eq!(report.output, None);
    assert!(vacuum(storage.as_ref(), Mode::Commits).unwrap().inputs.is_empty());
    assert!(vacuum(storage.as_ref(), Mode::Fragments).unwrap().inputs.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let empty: std::sync::Arc<dyn tessera_storage::Storage> =
        std::sync::Arc::new(tessera_storage::LocalStorage::new(dir.path()));
    let err = consolidate(empty.clone(), Mode::Commits, &Options::default()).unwrap_err();
    assert!(matches!(err, Error::NotAnArray(_)), "{err}");
    assert!(matches!(vacuum(empty.as_ref(), Mode::Commits), Err(Error::NotAnArray(_))));
}

/// The names in `dir` with every 32-digit label replaced, sorted.
fn shapes(storage: &dyn tessera_storage::Storage, dir: &str) -> Vec<String> {
    let mut out: Vec<String> = names(storage, dir)
        .into_iter()
        .map(|n| {
            let parts: Vec<&str> = n.split('_').collect();
            parts
                .iter()
                .map(|p| {
                    let (stem, ext) = p.split_once('.').map_or((*p, ""), |(s, e)| (s, e));
                    if stem.len() == 32 && stem.bytes().all(|b| b.is_ascii_hexdigit()) {
                        format!("L{}{ext}", if ext.is_empty() { "" } else { "." })
                    } else {
                        (*p).to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("_")
        })
        .collect();
    out.sort();
    out
}

#[test]
fn fragment_vacuum_leaves_what_libtiledbs_leaves() {
    // sparse_consolidated_vacuumed is sparse_consolidated vacuumed by libtiledb.
    let (_dir, storage) = fixture_copy("sparse_consolidated");
    let (_dir2, theirs) = fixture_copy("sparse_consolidated_vacuumed");
    let before = views(&storage);
    let report = vacuum(storage.as_ref(), Mode::Fragments).unwrap();
    assert_eq!(report.output, None, "no .con: no .ign");
    assert_eq!(report.inputs.len(), 7, "{:?}", report.inputs);
    for dir in ["__commits", "__fragments"] {
        assert_eq!(shapes(storage.as_ref(), dir), shapes(theirs.as_ref(), dir), "{dir}");
    }
    assert_same_reads(&storage, &before, "after the fragment vacuum");
    for (rel, at) in [("", None), (".at15", Some(15)), (".at25", Some(25))] {
        let want =
            common::read_jsonl(&format!("fragments/sparse_consolidated_vacuumed{rel}.cells.jsonl"));
        assert_eq!(view(&storage, at).cells, want, "at {at:?}");
    }
    // Nothing left to do.
    assert_eq!(vacuum(storage.as_ref(), Mode::Fragments).unwrap(), Default::default());

    // Dense: the consolidated fragment alone; the latest view is unchanged (time travel into
    // the consolidated range no longer sees the inputs, as in libtiledb).
    let (_dir, storage) = fixture_copy("dense_consolidated");
    let now = view(&storage, None);
    vacuum(storage.as_ref(), Mode::Fragments).unwrap();
    assert_eq!(names(storage.as_ref(), "__fragments").len(), 1);
    assert_eq!(names(storage.as_ref(), "__commits").len(), 1);
    assert_eq!(view(&storage, None), now);
    assert!(view(&storage, Some(25)).cells.is_empty());
}
