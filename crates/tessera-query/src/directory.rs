//! Which fragments and delete commits an array shows at a timestamp range: the commits folder
//! (`.wrt`, `.del`, `.con`, `.ign`, `.vac`) read with libtiledb's rules.

use std::collections::{BTreeMap, HashSet};

use tessera_fragment::{
    CommitEntry, CommitKind, ConsolidatedCommits, FragmentName, IgnoreFile, VacuumFile,
};
use tessera_storage::Storage;

use crate::{Error, Result};
use tessera_fragment::dirs;

/// A delete (or update) commit visible in the open range.
#[derive(Debug, Clone)]
pub struct DeleteCommit {
    /// Its name (`t1 == t2` is the delete's timestamp).
    pub name: FragmentName,
    /// Delete or update.
    pub kind: CommitKind,
    /// The `.del`/`.upd` file's bytes when they came from a `.con` file; `None` when the file
    /// is in `__commits/` itself.
    pub inline: Option<Vec<u8>>,
}

/// The fragments and delete commits of an array visible in `[start, end]`.
#[derive(Debug, Clone, Default)]
pub struct ArrayDirectory {
    /// Visible fragments, oldest first (by start timestamp, then name).
    pub fragments: Vec<FragmentName>,
    /// Visible delete and update commits, by timestamp.
    pub deletes: Vec<DeleteCommit>,
    /// Fragments committed but made obsolete by a consolidation whose `.vac` applies (they
    /// stay on disk until vacuumed).
    pub vacuumable: Vec<FragmentName>,
}

/// Whether `[t1, t2]` counts in the open range `[start, end]`: fully inside when `full`,
/// else any overlap.
fn visible(t1: u64, t2: u64, start: u64, end: u64, full: bool) -> bool {
    if full { start <= t1 && t2 <= end } else { t1 <= end && start <= t2 }
}

impl ArrayDirectory {
    /// Reads `__commits/` and selects what is visible in `[start, end]` for an array that is
    /// `dense` or not, as libtiledb 2.30 does:
    /// - candidates are the fragments named by `.wrt` files and by the entries of `.con`
    ///   files (minus those an `.ign` file lists);
    /// - fragments listed by a `.vac` file whose range counts in the open range are dropped;
    /// - a fragment counts when its range is fully inside the open range (dense arrays, and
    ///   fragments older than format version 15), or overlaps it (sparse arrays);
    /// - delete and update commits count when their timestamp is inside the range;
    /// - fragments of format versions before 12 are found in the array folder itself
    ///   (committed by `.ok` files, see `old_layout_fragments`), with `.vac` files there too.
    ///
    /// # Errors
    /// Storage errors, and malformed commit files (naming the file).
    pub fn load(storage: &dyn Storage, start: u64, end: u64, dense: bool) -> Result<Self> {
        let entries = match storage.list_names(dirs::COMMITS) {
            Ok(e) => e,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        fn frag_err(file: &str) -> impl Fn(tessera_fragment::Error) -> Error + '_ {
            move |source| Error::Fragment { file: file.to_owned(), source: Box::new(source) }
        }
        let mut commits: Vec<(CommitEntry, Option<Vec<u8>>)> = Vec::new();
        let mut con_files = Vec::new();
        let mut ignored: HashSet<String> = HashSet::new();
        let mut vac_files = Vec::new();
        for e in entries.iter().filter(|e| !e.is_dir) {
            let path = format!("{}/{}", dirs::COMMITS, e.name);
            // Names that are not commit files (temporary files, foreign files) are skipped,
            // as libtiledb skips them.
            let Ok(Some(entry)) = CommitEntry::classify(&path) else { continue };
            match entry.kind {
                CommitKind::Write | CommitKind::Delete | CommitKind::Update => {
                    commits.push((entry, None));
                }
                CommitKind::ConsolidatedCommits => con_files.push(path),
                CommitKind::Ignore => {
                    let ign = IgnoreFile::parse(&storage.read(&path)?).map_err(frag_err(&path))?;
                    ignored.extend(ign.paths);
                }
                CommitKind::Vacuum => vac_files.push((entry.name, path)),
            }
        }
        for path in &con_files {
            let con = ConsolidatedCommits::parse(&storage.read(path)?).map_err(frag_err(path))?;
            for c in con.entries {
                if ignored.contains(&c.path) {
                    continue;
                }
                if let Some(entry) = c.commit().map_err(frag_err(path))? {
                    commits.push((entry, c.delete_file));
                }
            }
        }

        // Fragments of format versions before 12 live in the array folder itself.
        let mut old_vacuumed = Vec::new();
        for (entry, path) in old_layout_fragments(storage)? {
            match entry.kind {
                CommitKind::Vacuum => old_vacuumed.push((entry.name, path)),
                _ => commits.push((entry, None)),
            }
        }
        vac_files.extend(old_vacuumed);

        // Fragments a consolidation made obsolete, when its .vac counts in the range.
        let mut vacuumed: HashSet<String> = HashSet::new();
        for (name, path) in &vac_files {
            let (t1, t2) = name.timestamp_range();
            // As for fragments: a consolidation of format versions before 15 (whose result
            // has no per-cell timestamps) counts only when its whole range is open.
            if !visible(t1, t2, start, end, dense || name.format_version() < 15) {
                continue;
            }
            let vac = VacuumFile::parse(&storage.read(path)?).map_err(frag_err(path))?;
            for p in vac.relative_paths().map_err(frag_err(path))? {
                if let Some(fragment) = p.strip_prefix(&format!("{}/", dirs::FRAGMENTS)) {
                    vacuumed.insert(fragment.to_owned());
                } else if !p.contains('/') {
                    // an old-layout fragment, in the array folder
                    vacuumed.insert(p.trim_end_matches('/').to_owned());
                }
            }
        }

        let mut fragments: BTreeMap<(u64, String), FragmentName> = BTreeMap::new();
        let mut vacuumable = Vec::new();
        let mut deletes = Vec::new();
        let mut seen = HashSet::new();
        for (entry, inline) in commits {
            let (t1, t2) = entry.name.timestamp_range();
            if !seen.insert(entry.relative_path()) {
                continue; // listed both in __commits and in a .con
            }
            match entry.kind {
                CommitKind::Write => {
                    let full = dense || entry.name.format_version() < 15;
                    if vacuumed.contains(entry.name.as_str()) {
                        vacuumable.push(entry.name);
                    } else if visible(t1, t2, start, end, full) {
                        fragments.insert((t1, entry.name.as_str().to_owned()), entry.name);
                    }
                }
                CommitKind::Delete | CommitKind::Update if visible(t1, t2, start, end, true) => {
                    deletes.push(DeleteCommit { name: entry.name, kind: entry.kind, inline });
                }
                _ => {}
            }
        }
        deletes.sort_by(|a, b| (a.name.t1(), a.name.as_str()).cmp(&(b.name.t1(), b.name.as_str())));
        vacuumable.sort_by(|a, b| (a.t1(), a.as_str()).cmp(&(b.t1(), b.as_str())));
        Ok(ArrayDirectory { fragments: fragments.into_values().collect(), deletes, vacuumable })
    }
}

/// The fragments of the old layout (format versions before 12) at the array root, as write
/// commits, and the `.vac` files there: a fragment folder counts when a `<name>.ok` file
/// commits it or, before format version 5 (which wrote no `.ok` files), when it holds
/// `__fragment_metadata.tdb` (libtiledb's `ArrayDirectory::is_fragment`).
///
/// # Errors
/// Storage errors.
fn old_layout_fragments(storage: &dyn Storage) -> Result<Vec<(CommitEntry, String)>> {
    use tessera_fragment::previous::{FRAGMENTS_DIR_MIN_VERSION, SPLIT_COORDS_MIN_VERSION};
    let entries = match storage.list("") {
        Ok(e) => e,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let files: HashSet<&str> =
        entries.iter().filter(|e| !e.is_dir).map(|e| e.name.as_str()).collect();
    let mut out = Vec::new();
    for e in &entries {
        if e.is_dir {
            let Ok(name) = FragmentName::parse(&e.name) else { continue };
            if name.format_version() >= FRAGMENTS_DIR_MIN_VERSION {
                continue;
            }
            let committed = files.contains(format!("{}.ok", e.name).as_str())
                || (name.format_version() < SPLIT_COORDS_MIN_VERSION
                    && storage.exists(&format!(
                        "{}/{}",
                        e.name,
                        tessera_fragment::FRAGMENT_METADATA_FILE
                    ))?);
            if committed {
                out.push((CommitEntry::new(name, CommitKind::Write), e.name.clone()));
            }
        } else if let Some(stem) = e.name.strip_suffix(".vac")
            && let Ok(name) = FragmentName::parse(stem)
        {
            out.push((CommitEntry::new(name, CommitKind::Vacuum), e.name.clone()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn visibility_rules() {
        assert!(visible(10, 20, 0, 20, true));
        assert!(!visible(10, 20, 0, 15, true));
        assert!(visible(10, 20, 0, 15, false));
        assert!(visible(10, 20, 20, 30, false));
        assert!(!visible(10, 20, 21, 30, false));
    }
}
