//! The array lifecycle as libtiledb 2.30 runs it: deleting fragments (by time range or by
//! name) and deleting a whole array (`Array::delete_fragments`,
//! `ArrayDirectory::delete_fragments_list`, `Array::delete_array`).
//!
//! Deleting fragments removes, per fragment, its commit file first (`__commits/<name>.wrt`, or
//! `<name>.ok` at the root before format version 12), then its folder, so a reader never finds
//! a commit without its fragment. A fragment committed through a consolidated commits file
//! (`.con`) has no commit file of its own: before anything is removed, one `.ign` file naming
//! those commits is written (named over the first and last of them), so the `.con` no longer
//! commits them. Fragments a fragment consolidation made obsolete (listed by a `.vac` file)
//! are left to the vacuum, as libtiledb leaves them.
//!
//! Upgrading an array older than format version 22 (`Array::upgrade_version`) writes its newest
//! schema again at version 22 as a new schema file (timestamped now), then makes the folders of
//! format 12 on that it lacks (`__schema/__enumerations`, `__commits`, `__fragments`,
//! `__fragment_meta`); its fragments stay as they are (libtiledb reads them in place).
//!
//! Deleting an array deletes every fragment that way, then the array metadata files, the
//! consolidated fragment metadata files and the schema files, then TileDB's folders
//! (`__schema`, `__meta`, `__commits`, `__fragment_meta`, `__fragments`, `__labels`,
//! `__enumerations`) with whatever they still hold. Files of the array's folder that are not
//! TileDB's are left (the caller removes the folder when it is empty).

use bytes::Bytes;
use tessera_fragment::{FragmentName, IgnoreFile};
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;
use tessera_types::names::{TimestampedName, now_ms};

use crate::consolidate::commits::{CommitsDir, name_over};
use crate::directory::ArrayDirectory;
use crate::{Error, Result};
use tessera_fragment::dirs;

/// The folders libtiledb's `delete_array` removes, in its order.
const ARRAY_DIRS: [&str; 7] = [
    dirs::SCHEMA,
    dirs::META,
    dirs::COMMITS,
    dirs::FRAGMENT_META,
    dirs::FRAGMENTS,
    dirs::LABELS,
    "__enumerations",
];

/// Checks that `storage` holds an array.
fn ensure_array(storage: &dyn Storage) -> Result<()> {
    if storage.is_dir(dirs::SCHEMA)? || storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
        Ok(())
    } else {
        Err(Error::NotAnArray("no __schema directory".into()))
    }
}

/// The commit file of fragment `name` and its folder, relative to the array.
fn commit_and_folder(name: &FragmentName) -> (String, String) {
    if name.format_version() < tessera_fragment::previous::FRAGMENTS_DIR_MIN_VERSION {
        (format!("{}.ok", name.as_str()), name.as_str().to_owned())
    } else {
        (
            format!("{}/{}.wrt", dirs::COMMITS, name.as_str()),
            format!("{}/{}", dirs::FRAGMENTS, name.as_str()),
        )
    }
}

/// Removes `path`; `Ok(false)` when it was not there.
fn remove_file(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.remove(path) {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn remove_dir(storage: &dyn Storage, path: &str) -> Result<bool> {
    match storage.remove_dir_all(path) {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Deletes the fragments `selected` (in this order), as described in the module docs.
fn delete_selected(storage: &dyn Storage, selected: &[FragmentName]) -> Result<()> {
    if selected.is_empty() {
        return Ok(());
    }
    let commits = CommitsDir::load(storage)?;
    let to_ignore: Vec<(String, (u64, u64))> = selected
        .iter()
        .map(|n| (commit_and_folder(n).0, n.timestamp_range()))
        .filter(|(c, _)| commits.consolidated_set.contains(c))
        .collect();
    if !to_ignore.is_empty() {
        let ranges: Vec<(u64, u64)> = to_ignore.iter().map(|(_, r)| *r).collect();
        let name = name_over(&ranges, Some(FORMAT_VERSION));
        let ign = IgnoreFile { paths: to_ignore.into_iter().map(|(c, _)| c).collect() };
        storage.publish(&format!("{}/{name}.ign", dirs::COMMITS), Bytes::from(ign.to_bytes()))?;
    }
    for name in selected {
        let (commit, folder) = commit_and_folder(name);
        remove_file(storage, &commit)?;
        remove_dir(storage, &folder)?;
    }
    Ok(())
}

/// Deletes every fragment whose timestamp range lies inside `[start, end]` (ms), as
/// libtiledb's `tiledb_array_delete_fragments_v2` (see the module docs). Returns the names of
/// the fragments deleted, oldest first.
///
/// # Errors
/// [`Error::NotAnArray`]; storage errors and corrupt commit files.
pub fn delete_fragments_between(
    storage: &dyn Storage,
    start: u64,
    end: u64,
) -> Result<Vec<String>> {
    ensure_array(storage)?;
    // Fully inside the range, as libtiledb selects them for deletion (dense or not).
    let dir = ArrayDirectory::load(storage, start, end, true)?;
    delete_selected(storage, &dir.fragments)?;
    Ok(dir.fragments.iter().map(|n| n.as_str().to_owned()).collect())
}

/// Deletes the fragments named `names` (as `tessera fragments` shows them; a path or URI
/// ending in the name is taken by its last part), as libtiledb's
/// `tiledb_array_delete_fragments_list`: every name must be a fragment the array shows (one
/// made obsolete by a consolidation is not), else nothing is deleted.
///
/// # Errors
/// [`Error::InvalidQuery`] naming a fragment the array does not have, or an empty list;
/// [`Error::NotAnArray`]; storage errors.
pub fn delete_fragments_list(storage: &dyn Storage, names: &[&str]) -> Result<Vec<String>> {
    ensure_array(storage)?;
    if names.is_empty() {
        return Err(Error::InvalidQuery("no fragment to delete was named".into()));
    }
    let dir = ArrayDirectory::load(storage, 0, u64::MAX, true)?;
    let mut selected = Vec::with_capacity(names.len());
    for n in names {
        let short = n.trim_end_matches('/').rsplit('/').next().unwrap_or(n);
        match dir.fragments.iter().find(|f| f.as_str() == short) {
            Some(f) => selected.push(f.clone()),
            None => {
                return Err(Error::InvalidQuery(format!(
                    "{n} is not a fragment of the array (nothing was deleted)"
                )));
            }
        }
    }
    delete_selected(storage, &selected)?;
    Ok(selected.iter().map(|n| n.as_str().to_owned()).collect())
}

/// Upgrades the array to format version 22 as libtiledb's `tiledb_array_upgrade_version` (see
/// the module docs). Returns the new schema file's name, or `None` when the newest schema is
/// already at version 22 (nothing is written then).
///
/// # Errors
/// [`Error::NotAnArray`]; corrupt schema files; storage errors.
pub fn upgrade_version(storage: &dyn Storage) -> Result<Option<TimestampedName>> {
    ensure_array(storage)?;
    let (schema, _, _) = crate::evolve::latest_schema(storage)?;
    if schema.version >= FORMAT_VERSION {
        return Ok(None);
    }
    let schema = tessera_schema::rewritten(&schema);
    let t = now_ms();
    let name = TimestampedName::generate(t, t, None);
    let file = format!("{}/{name}", dirs::SCHEMA);
    let bytes = schema
        .to_file_with_key(storage.encryption_key())
        .map_err(|source| Error::Schema { file: file.clone(), source })?;
    for dir in [dirs::SCHEMA] {
        if !storage.is_dir(dir)? {
            storage.create_dir(dir)?;
        }
    }
    storage.publish(&file, Bytes::from(bytes))?;
    for dir in [dirs::ENUMERATIONS, dirs::COMMITS, dirs::FRAGMENTS, dirs::FRAGMENT_META] {
        if !storage.is_dir(dir)? {
            storage.create_dir(dir)?;
        }
    }
    Ok(Some(name))
}

/// Deletes the array: every fragment, then the metadata, fragment metadata and schema files,
/// then TileDB's folders, as libtiledb's `tiledb_array_delete` (see the module docs). The
/// array's own folder is left to the caller (it is removed when empty).
///
/// # Errors
/// [`Error::NotAnArray`]; storage errors.
pub fn delete_array(storage: &dyn Storage) -> Result<()> {
    ensure_array(storage)?;
    delete_fragments_between(storage, 0, u64::MAX)?;
    for dir in [dirs::META, dirs::FRAGMENT_META, dirs::SCHEMA] {
        let entries = match storage.list(dir) {
            Ok(e) => e,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for e in entries.iter().filter(|e| !e.is_dir) {
            remove_file(storage, &format!("{dir}/{}", e.name))?;
        }
    }
    remove_file(storage, dirs::LEGACY_SCHEMA_FILE)?;
    for dir in ARRAY_DIRS {
        remove_dir(storage, dir)?;
    }
    Ok(())
}

/// Deletes the group on `storage` itself, as the last step of libtiledb's
/// `Group::delete_group`: its details files (`__group/`), its metadata files (with those a
/// consolidation made obsolete and the `.vac` files), its `__tiledb_group.tdb`, then the folders
/// `__group` and `__meta` with whatever they still hold. Members are not touched: a recursive
/// delete deletes them first (arrays with [`delete_array`], groups with this, depth first), as
/// the facade's and the CLI's recursive deletes do. The group's own folder is left to the
/// caller (it is removed when empty).
///
/// # Errors
/// [`Error::NotAGroup`] when there is no group; storage errors.
pub fn delete_group(storage: &dyn Storage) -> Result<()> {
    use crate::group::{DETAILS_DIR, GROUP_FILE, META_DIR};
    if !storage.exists(GROUP_FILE)? {
        return Err(Error::NotAGroup(format!("no {GROUP_FILE}")));
    }
    for dir in [DETAILS_DIR, META_DIR] {
        let entries = match storage.list(dir) {
            Ok(e) => e,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for e in entries.iter().filter(|e| !e.is_dir) {
            remove_file(storage, &format!("{dir}/{}", e.name))?;
        }
    }
    remove_file(storage, GROUP_FILE)?;
    for dir in [DETAILS_DIR, META_DIR] {
        remove_dir(storage, dir)?;
    }
    Ok(())
}

/// Consolidates the metadata of the group on `storage` whose URI is `group_uri` (as
/// libtiledb's `tiledb_group_consolidate_metadata`, `GroupMetaConsolidator`): the metadata files
/// visible in `range` (default all) merged into one `__meta/__<t1>_<t2>_<label>` (live keys
/// only; none when every key was deleted), then a `.vac` file of the same name listing the
/// merged files by their full URIs (`<group_uri>/__meta/<name>`), as libtiledb writes it for
/// groups. Nothing happens with fewer than two files.
///
/// # Errors
/// [`Error::NotAGroup`]; storage errors and corrupt metadata files.
pub fn consolidate_group_metadata(
    storage: &dyn Storage,
    group_uri: &str,
    range: Option<(u64, u64)>,
) -> Result<crate::consolidate::Report> {
    use crate::group::{GROUP_FILE, META_DIR};
    use tessera_fragment::VacuumFile;
    if !storage.exists(GROUP_FILE)? {
        return Err(Error::NotAGroup(format!("no {GROUP_FILE}")));
    }
    let (start, end) = range.unwrap_or((0, u64::MAX));
    let metadata = crate::metadata::ArrayMetadata::load(storage, start, end)?;
    let files = metadata.files();
    if files.len() <= 1 {
        return Ok(crate::consolidate::Report::default());
    }
    let ranges: Vec<(u64, u64)> = files.iter().map(|n| (n.t1, n.t2)).collect();
    let name = name_over(&ranges, None);
    let output = format!("{META_DIR}/{name}");
    let err = |source: tessera_tile::Error| Error::Metadata {
        file: output.clone(),
        source: Box::new(source),
    };
    let payload = metadata.to_payload().map_err(|e| err(e.into()))?;
    let written = !payload.is_empty();
    if written {
        let tile = tessera_tile::write_generic_tile_with_key(
            &payload,
            FORMAT_VERSION,
            storage.encryption_key(),
        )
        .map_err(err)?;
        storage.publish(&output, Bytes::from(tile))?;
    }
    let base = group_uri.trim_end_matches('/');
    let inputs: Vec<String> = files.iter().map(|n| format!("{META_DIR}/{n}")).collect();
    let vac = VacuumFile { lines: inputs.iter().map(|p| format!("{base}/{p}")).collect() };
    let vac_path = format!("{output}.vac");
    storage.publish(&vac_path, Bytes::from(vac.to_bytes()))?;
    Ok(crate::consolidate::Report {
        inputs,
        output: Some(if written { output } else { vac_path }),
        ..Default::default()
    })
}

/// Removes what group metadata consolidations made obsolete (libtiledb's
/// `tiledb_group_vacuum_metadata`) from the group on `storage` whose URI is `group_uri`: the
/// `__meta/` files a `.vac` file lists (by their full URI, `<group_uri>/__meta/<name>`, as
/// libtiledb compares them: a `.vac` file written where the group was before it was copied or
/// moved lists none), then every `.vac` file. Returns what was removed.
///
/// # Errors
/// [`Error::NotAGroup`]; storage errors and corrupt `.vac` files.
pub fn vacuum_group_metadata(storage: &dyn Storage, group_uri: &str) -> Result<Vec<String>> {
    use crate::group::{GROUP_FILE, META_DIR};
    use tessera_fragment::VacuumFile;
    if !storage.exists(GROUP_FILE)? {
        return Err(Error::NotAGroup(format!("no {GROUP_FILE}")));
    }
    let base = group_uri.trim_end_matches('/');
    let entries = match storage.list(META_DIR) {
        Ok(e) => e,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut vac_files = Vec::new();
    let mut files = Vec::new();
    for e in entries.iter().filter(|e| !e.is_dir) {
        if TimestampedName::parse(&e.name).is_err() {
            continue;
        }
        if e.name.ends_with(".vac") {
            vac_files.push(format!("{META_DIR}/{}", e.name));
        } else {
            files.push(e.name.clone());
        }
    }
    let mut listed = std::collections::HashSet::new();
    for path in &vac_files {
        let vac = VacuumFile::parse(&storage.read(path)?)
            .map_err(|source| Error::Fragment { file: path.clone(), source: Box::new(source) })?;
        listed.extend(vac.lines);
    }
    let mut removed = Vec::new();
    for f in files {
        let full = format!("{base}/{META_DIR}/{f}");
        let relative = format!("/{META_DIR}/{f}");
        if (listed.contains(&full) || listed.contains(&relative))
            && remove_file(storage, &format!("{META_DIR}/{f}"))?
        {
            removed.push(format!("{META_DIR}/{f}"));
        }
    }
    for v in vac_files {
        if remove_file(storage, &v)? {
            removed.push(v);
        }
    }
    Ok(removed)
}
