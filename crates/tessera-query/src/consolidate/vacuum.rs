//! Vacuum (`sm.vacuum.mode`): removing what a consolidation made obsolete, exactly what
//! libtiledb 2.30 removes (`docs/format/commits-and-names.md`, "Vacuum"). Every mode looks
//! at the whole array (libtiledb lists it over `[0, u64::MAX]`, or `[0, now]` for commits);
//! a vacuum has no timestamp range.
//!
//! * [`Mode::Fragments`] (`FragmentConsolidator::vacuum`): the fragments listed by the
//!   `__commits/*.vac` files of fragment consolidations, among the committed ones (named by a
//!   `.wrt` file or by a `.con` entry no `.ign` file lists). When some of them are committed
//!   through a `.con` file, first an `.ign` file naming their `.wrt` paths is written (named
//!   over the first and last of them; where libtiledb cannot make that name, because the
//!   first `t1` is after the last `t2`, over the smallest `t1` and the largest `t2`), so the
//!   `.con` no longer commits them. Then per fragment its `.wrt` file goes, then its folder
//!   (a reader never finds a commit whose folder is gone); then the folders of listed
//!   fragments that are no longer committed (left by a vacuum that was interrupted between
//!   a commit and its folder; libtiledb leaves those for good); last, every `.vac` file.
//! * [`Mode::Commits`] (`CommitsConsolidator::vacuum`): the commit files (`.wrt`, `.del`,
//!   legacy `.ok`) that a `.con` file lists, and, when one `.con` file lists exactly every
//!   live commit, the other `.con` files and every `.ign` file (see
//!   `commits::files_to_vacuum`).
//! * [`Mode::FragmentMeta`] (`FragmentMetaConsolidator::vacuum`): every
//!   `__fragment_meta/` file whose `t2` is not the latest there.
//! * [`Mode::ArrayMeta`] (`ArrayMetaConsolidator::vacuum`): the `__meta/` files that a
//!   `__meta/*.vac` file lists, then every `.vac` file.
//!
//! The [`Report`] of a vacuum lists in `inputs` what was removed (relative paths; fragment
//! folders as `__fragments/<name>`), in removal order, and in `output` the `.ign` file
//! written, if any. Files already gone (a concurrent vacuum) are not an error.

use std::collections::HashSet;

use bytes::Bytes;
use tessera_fragment::{IgnoreFile, VacuumFile};
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;

use crate::Result;
use crate::consolidate::commits::{
    CommitsDir, latest_write_version, legacy_schema_version, name_of, name_over,
};
use crate::consolidate::{Mode, Report, array_meta, commits, fragment_meta};
use tessera_fragment::dirs;

/// Removes what consolidation in `mode` made obsolete.
///
/// # Errors
/// [`crate::Error::NotAnArray`]; storage errors and corrupt commit files.
pub fn vacuum(storage: &dyn Storage, mode: Mode) -> Result<Report> {
    // Arrays of formats 1 to 6 (`__array_schema.tdb`) are consolidated into format 22
    // fragments, as libtiledb does, and their fragments vacuumed; other modes and newer
    // legacy arrays stay refused.
    let legacy = legacy_schema_version(storage)?;
    if !(mode == Mode::Fragments
        && legacy.is_some_and(|v| v < commits::BACK_COMPAT_WRITES_MIN_VERSION))
    {
        latest_write_version(storage)?;
    }
    match mode {
        Mode::Fragments => vacuum_fragments(storage),
        Mode::Commits => remove_files(storage, commits::files_to_vacuum(storage)?),
        Mode::FragmentMeta => remove_files(storage, fragment_meta::files_to_vacuum(storage)?),
        Mode::ArrayMeta => remove_files(storage, array_meta::files_to_vacuum(storage)?),
    }
}

/// Removes `files` in order, skipping those already gone.
fn remove_files(storage: &dyn Storage, files: Vec<String>) -> Result<Report> {
    let mut removed = Vec::with_capacity(files.len());
    for f in files {
        if remove_file(storage, &f)? {
            removed.push(f);
        }
    }
    Ok(Report { inputs: removed, ..Report::default() })
}

fn remove_file(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.remove(path) {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The fragments vacuum (see the module docs).
fn vacuum_fragments(storage: &dyn Storage) -> Result<Report> {
    let dir = CommitsDir::load(storage)?;
    let commit_path = |name: &str| format!("{}/{name}.wrt", dirs::COMMITS);
    // libtiledb's unfiltered fragment list: the fragments the .con files commit (in their
    // sorted order), then those of __commits/ in listing order, with the .vac files.
    let mut fragments: Vec<String> = Vec::new();
    for p in &dir.consolidated {
        if let Some(file) = p.strip_prefix(&format!("{}/", dirs::COMMITS))
            && let Some(name) = file.strip_suffix(".wrt")
        {
            fragments.push(name.to_owned());
        }
    }
    let mut vac_files = Vec::new();
    for e in &dir.commits {
        if let Some(name) = e.name.strip_suffix(".wrt") {
            if !dir.consolidated_set.contains(&commit_path(name)) {
                fragments.push(name.to_owned());
            }
        } else if e.name.ends_with(".vac") {
            vac_files.push(format!("{}/{}", dirs::COMMITS, e.name));
        }
    }
    // `.vac` files of consolidations that older releases made in the array folder itself
    // (format versions before 12), listing the fragments they merged by absolute URIs.
    if storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
        let mut root: Vec<String> = storage
            .list_names("")?
            .into_iter()
            .filter(|e| !e.is_dir && e.name.ends_with(".vac"))
            .filter(|e| {
                tessera_fragment::FragmentName::parse(&e.name).is_ok_and(|n| {
                    n.format_version() < tessera_fragment::previous::FRAGMENTS_DIR_MIN_VERSION
                })
            })
            .map(|e| e.name)
            .collect();
        root.sort();
        vac_files.extend(root);
    }
    if vac_files.is_empty() {
        return Ok(Report::default());
    }
    let mut listed: HashSet<String> = HashSet::new();
    // Fragments of the old layout (before format 12) that a consolidation of an array of
    // format 1 to 6 merged: in the array folder, committed by `<name>.ok`.
    let mut old_listed: Vec<String> = Vec::new();
    for path in &vac_files {
        let vac =
            VacuumFile::parse(&storage.read(path)?).and_then(|v| v.relative_paths()).map_err(
                |source| crate::Error::Fragment { file: path.clone(), source: Box::new(source) },
            )?;
        for p in vac {
            if let Some(name) = p.strip_prefix(&format!("{}/", dirs::FRAGMENTS)) {
                listed.insert(name.to_owned());
            } else if !p.contains('/')
                && tessera_fragment::FragmentName::parse(&p).is_ok_and(|n| {
                    n.format_version() < tessera_fragment::previous::FRAGMENTS_DIR_MIN_VERSION
                })
            {
                old_listed.push(p);
            }
        }
    }
    old_listed.sort();
    old_listed.dedup();
    let to_vacuum: Vec<&String> = fragments.iter().filter(|f| listed.contains(*f)).collect();
    let to_ignore: Vec<String> = to_vacuum
        .iter()
        .map(|f| commit_path(f))
        .filter(|c| dir.consolidated_set.contains(c))
        .collect();

    let mut report = Report::default();
    if !to_ignore.is_empty() {
        let ranges = to_ignore
            .iter()
            .map(|p| name_of(p).map(|n| n.timestamp_range()))
            .collect::<Result<Vec<_>>>()?;
        let name = name_over(&ranges, Some(FORMAT_VERSION));
        let path = format!("{}/{name}.ign", dirs::COMMITS);
        let ign = IgnoreFile { paths: to_ignore };
        storage.publish(&path, Bytes::from(ign.to_bytes()))?;
        report.output = Some(path);
    }
    for f in to_vacuum {
        let wrt = commit_path(f);
        if remove_file(storage, &wrt)? {
            report.inputs.push(wrt);
        }
        let folder = format!("{}/{f}", dirs::FRAGMENTS);
        match storage.remove_dir_all(&folder) {
            Ok(()) => report.inputs.push(folder),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    // Folders of listed fragments whose commits are already gone: a vacuum that stopped
    // between a commit and its folder left them (readers ignore them; libtiledb would leave
    // them for good). Nothing can need them: they are consolidated and not committed.
    let committed: HashSet<&String> = fragments.iter().collect();
    let mut leftovers: Vec<&String> = listed.iter().filter(|f| !committed.contains(f)).collect();
    leftovers.sort();
    for f in leftovers {
        let folder = format!("{}/{f}", dirs::FRAGMENTS);
        match storage.remove_dir_all(&folder) {
            Ok(()) => report.inputs.push(folder),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    // As libtiledb: the commit (`.ok`) first, then the folder.
    for f in old_listed {
        let ok = format!("{f}.ok");
        if remove_file(storage, &ok)? {
            report.inputs.push(ok);
        }
        match storage.remove_dir_all(&f) {
            Ok(()) => report.inputs.push(f),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    for v in vac_files {
        if remove_file(storage, &v)? {
            report.inputs.push(v);
        }
    }
    Ok(report)
}
