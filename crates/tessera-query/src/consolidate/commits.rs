//! Commit consolidation (`sm.consolidation.mode = commits`): every commit file of the array
//! gathered into one `__commits/<name>.con` file, as libtiledb 2.30's `CommitsConsolidator`
//! and `Consolidator::write_consolidated_commits_file` do (`docs/format/commits-and-names.md`,
//! "`.con`").
//!
//! The list of commits (`ArrayDirectory::load_commits_uris_to_consolidate`, directory mode
//! `COMMITS`):
//! 1. the entries of the existing `.con` files that no `.ign` file lists, once each, sorted by
//!    path (libtiledb collects them in a set and sorts it);
//! 2. then the legacy `.ok` files at the array's root that are not among them;
//! 3. then the `.wrt` and `.del` files of `__commits/` that are not among them, in listing
//!    (name) order. `.upd` files are left out, as libtiledb leaves them out.
//!
//! Each path is written relative to the array, without a leading slash, followed by `\n`; a
//! `.del` path is followed by the `u64` size and the bytes of the `.del` file. The file is
//! named `__<t1 of the first>_<t2 of the last>_<label>_<write version>.con`. The timestamp
//! range of the consolidation (`Options::range`) does not apply: libtiledb always gathers
//! every commit up to now. Nothing is written when there is no commit at all; when one `.con`
//! already holds everything, a second one with the same entries is written (as libtiledb does).
//!
//! When the first commit's `t1` is after the last one's `t2` (paths sort as text, so this
//! happens with timestamps of different digit counts, e.g. a fragment written at 5 after
//! others at 20 and 30), libtiledb cannot name the file and fails; so does Tessera, since a
//! `.con` in that order would also make every later fragment vacuum of libtiledb fail (it
//! names its `.ign` files the same way).
//!
//! One deliberate difference: a `.del` entry whose file a commit vacuum already removed takes
//! its bytes from the `.con` file that holds it (libtiledb stats the missing file and fails).
//!
//! The commit files stay until a vacuum in `commits` mode ([`super::vacuum`]).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use tessera_fragment::{ConsolidatedCommits, FragmentName, IgnoreFile};
use tessera_schema::ArraySchema;
use tessera_storage::{Entry, Storage};
use tessera_types::FORMAT_VERSION;
use tessera_types::names::{TimestampedName, now_ms};

use crate::consolidate::{Options, Report};
use crate::{Error, Result};
use tessera_fragment::dirs;

/// Suffix of legacy commit files at the root of arrays older than format version 12.
const OK_SUFFIX: &str = ".ok";

/// Consolidates the commits of the array on `storage` into one `.con` file.
///
/// # Errors
/// [`Error::NotAnArray`]; [`Error::InvalidQuery`] for arrays older than format version 12
/// (they have no `__commits/` folder, as libtiledb says); storage errors and corrupt commit
/// files.
pub(crate) fn consolidate(storage: &dyn Storage, options: &Options) -> Result<Report> {
    let write_version = latest_write_version(storage)?;
    if write_version < 12 {
        return Err(Error::InvalidQuery(format!(
            "commits can be consolidated from format version 12 on; this array has version {write_version}"
        )));
    }
    let dir = CommitsDir::load(storage)?;
    let to_consolidate = dir.commits_to_consolidate();
    if to_consolidate.is_empty() {
        return Ok(Report::default());
    }

    let ranges = to_consolidate
        .iter()
        .map(|p| name_of(p).map(|n| n.timestamp_range()))
        .collect::<Result<Vec<_>>>()?;
    let (first, last) = (ranges[0].0, ranges[ranges.len() - 1].1);
    if first > last {
        return Err(Error::InvalidQuery(format!(
            "cannot consolidate commits: in libtiledb's order the first commit ({}) starts at \
             {first}, after the last one ({}) ends at {last}, so the .con file has no name \
             (libtiledb 2.30 fails here too)",
            to_consolidate[0],
            to_consolidate[to_consolidate.len() - 1]
        )));
    }
    let name = name_over(&ranges, Some(write_version));

    let mut con = ConsolidatedCommits::default();
    let total = to_consolidate.len() as u64;
    for (i, path) in to_consolidate.iter().enumerate() {
        let delete_file = if path.ends_with(".del") {
            // libtiledb reads the file itself; once a commit vacuum removed it, only the .con
            // that holds it has its bytes.
            match storage.read(path) {
                Ok(b) => Some(b.to_vec()),
                Err(e) if e.is_not_found() => match dir.inline_deletes.get(path) {
                    Some(b) => Some(b.clone()),
                    None => return Err(e.into()),
                },
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        con.entries.push(tessera_fragment::ConsolidatedCommit { path: path.clone(), delete_file });
        if let Some(p) = &options.progress {
            p(i as u64 + 1, total);
        }
    }
    let output = format!("{}/{name}.con", dirs::COMMITS);
    storage.publish(&output, Bytes::from(con.to_bytes()))?;
    Ok(Report { inputs: to_consolidate, output: Some(output), ..Report::default() })
}

/// What a vacuum in `commits` mode removes (`ArrayDirectory` in mode `COMMITS`): the commit
/// files that the `.con` files list and that still exist; and, when one `.con` file lists
/// exactly every live (not ignored) commit, every other `.con` file and every `.ign` file.
///
/// The "exactly every" test reads the `.con` file line by line as libtiledb does, without
/// skipping the bytes of embedded `.del` files, so a `.con` file holding a delete never
/// qualifies (libtiledb 2.30 behaves so).
pub(super) fn files_to_vacuum(storage: &dyn Storage) -> Result<Vec<String>> {
    let dir = CommitsDir::load(storage)?;
    let existing: HashSet<String> = dir
        .root
        .iter()
        .map(|e| e.name.clone())
        .chain(dir.commits.iter().map(|e| format!("{}/{}", dirs::COMMITS, e.name)))
        .collect();
    let mut out: Vec<String> =
        dir.consolidated.iter().filter(|p| existing.contains(*p)).cloned().collect();
    for (con_name, bytes) in &dir.con_files {
        let mut count = 0usize;
        let mut all_in_set = true;
        for line in getline(bytes) {
            if std::str::from_utf8(line).is_ok_and(|l| dir.consolidated_set.contains(l)) {
                count += 1;
            } else {
                all_in_set = false;
                break;
            }
        }
        if all_in_set && count == dir.consolidated_set.len() {
            for e in &dir.commits {
                if (e.name.ends_with(".con") && &e.name != con_name) || e.name.ends_with(".ign") {
                    out.push(format!("{}/{}", dirs::COMMITS, e.name));
                }
            }
            break;
        }
    }
    Ok(out)
}

/// The commit files of an array as libtiledb's `ArrayDirectory` sees them for consolidation
/// and vacuum: the root and `__commits/` listings, the `.ign` lines and the `.con` entries.
pub(crate) struct CommitsDir {
    /// The entries at the array's root, by name.
    pub(super) root: Vec<Entry>,
    /// The entries of `__commits/`, by name.
    pub(super) commits: Vec<Entry>,
    /// Every `.con` file (name inside `__commits/`, bytes), by name.
    pub(super) con_files: Vec<(String, Bytes)>,
    /// The entries of the `.con` files that no `.ign` file lists: paths relative to the
    /// array, once each, sorted (libtiledb's `consolidated_commit_uris`).
    pub(super) consolidated: Vec<String>,
    /// The same, as a set.
    pub(crate) consolidated_set: HashSet<String>,
    /// The bytes of the `.del` files embedded in `.con` files, by path.
    pub(super) inline_deletes: HashMap<String, Vec<u8>>,
}

impl CommitsDir {
    /// Lists and reads the commit files.
    ///
    /// # Errors
    /// Storage errors and malformed `.ign` or `.con` files (naming the file).
    pub(crate) fn load(storage: &dyn Storage) -> Result<Self> {
        let root = list_or_empty(storage, "")?;
        let commits = list_or_empty(storage, dirs::COMMITS)?;
        let frag_err = |file: &str| {
            let file = file.to_owned();
            move |source| Error::Fragment { file, source: Box::new(source) }
        };
        let mut ignored: HashSet<String> = HashSet::new();
        for e in commits.iter().filter(|e| !e.is_dir && e.name.ends_with(".ign")) {
            let path = format!("{}/{}", dirs::COMMITS, e.name);
            ignored
                .extend(IgnoreFile::parse(&storage.read(&path)?).map_err(frag_err(&path))?.paths);
        }
        let mut con_files = Vec::new();
        let mut consolidated_set = HashSet::new();
        let mut inline_deletes = HashMap::new();
        for e in commits.iter().filter(|e| !e.is_dir && e.name.ends_with(".con")) {
            let path = format!("{}/{}", dirs::COMMITS, e.name);
            let bytes = storage.read(&path)?;
            let con = ConsolidatedCommits::parse(&bytes).map_err(frag_err(&path))?;
            for c in con.entries {
                if ignored.contains(&c.path) {
                    continue;
                }
                if let Some(d) = c.delete_file {
                    inline_deletes.entry(c.path.clone()).or_insert(d);
                }
                consolidated_set.insert(c.path);
            }
            con_files.push((e.name.clone(), bytes));
        }
        let mut consolidated: Vec<String> = consolidated_set.iter().cloned().collect();
        consolidated.sort();
        Ok(CommitsDir { root, commits, con_files, consolidated, consolidated_set, inline_deletes })
    }

    /// The commits a consolidation gathers, in libtiledb's order (see the module docs).
    pub(super) fn commits_to_consolidate(&self) -> Vec<String> {
        let mut out = self.consolidated.clone();
        for e in &self.root {
            if !e.is_dir && e.name.ends_with(OK_SUFFIX) && !self.consolidated_set.contains(&e.name)
            {
                out.push(e.name.clone());
            }
        }
        for e in &self.commits {
            let path = format!("{}/{}", dirs::COMMITS, e.name);
            if !e.is_dir
                && (e.name.ends_with(".wrt") || e.name.ends_with(".del"))
                && !self.consolidated_set.contains(&path)
            {
                out.push(path);
            }
        }
        out
    }
}

/// The entries of `dir`, or none when it does not exist.
pub(super) fn list_or_empty(storage: &dyn Storage, dir: &str) -> Result<Vec<Entry>> {
    match storage.list(dir) {
        Ok(e) => Ok(e),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// The parsed name of the last component of `path` (a commit file, fragment or metadata
/// file).
///
/// # Errors
/// [`Error::Fragment`] naming the path when it is not a timestamped name.
pub(crate) fn name_of(path: &str) -> Result<FragmentName> {
    FragmentName::parse(path)
        .map_err(|source| Error::Fragment { file: path.to_owned(), source: Box::new(source) })
}

/// A fresh name over the timestamp ranges of the inputs, in their order, as libtiledb's
/// `generate_consolidated_fragment_name` makes it: `t1` of the first, `t2` of the last (both
/// "now" when both are 0, as `generate_timestamped_name` does). When the first `t1` is after
/// the last `t2` (libtiledb refuses then), the smallest `t1` and the largest `t2`.
///
/// # Panics
/// When `ranges` is empty.
pub(crate) fn name_over(ranges: &[(u64, u64)], version: Option<u32>) -> TimestampedName {
    let (mut t1, mut t2) = (ranges[0].0, ranges[ranges.len() - 1].1);
    if t1 > t2 {
        t1 = ranges.iter().map(|r| r.0).min().unwrap_or(t1);
        t2 = ranges.iter().map(|r| r.1).max().unwrap_or(t2);
    }
    if t1 == 0 && t2 == 0 {
        let now = now_ms();
        (t1, t2) = (now, now);
    }
    TimestampedName::generate(t1, t2, version)
}

/// The lines of `bytes` as `std::getline` splits them: `\n` ends a line, a last line without
/// `\n` still counts, nothing follows a final `\n`.
pub(super) fn getline(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or(&[]);
        Some(line)
    })
}

/// The oldest schema format whose arrays libtiledb 2.30 writes into in their own format
/// (`constants::back_compat_writes_min_format_version`); older arrays get format 22.
pub(crate) const BACK_COMPAT_WRITES_MIN_VERSION: u32 = 7;

/// The version of an array's single `__array_schema.tdb` (arrays older than format version
/// 10, which have no `__schema/`); `None` for other arrays.
///
/// # Errors
/// Storage and schema errors.
pub(super) fn legacy_schema_version(storage: &dyn Storage) -> Result<Option<u32>> {
    if storage.is_dir(dirs::SCHEMA)? || !storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
        return Ok(None);
    }
    let file = dirs::LEGACY_SCHEMA_FILE.to_owned();
    let schema = ArraySchema::parse_file_with_key(&storage.read(&file)?, storage.encryption_key())
        .map_err(|source| Error::Schema { file, source })?;
    Ok(Some(schema.version))
}

/// The write version of the array's newest schema, as libtiledb's
/// `array_schema_latest().write_version()` for an array opened for writing: the schema file
/// that lists last; format versions before 7 count as the current one.
///
/// # Errors
/// [`Error::NotAnArray`] without a `__schema/` folder or schema file,
/// [`Error::Unsupported`] for arrays older than format version 10, and schema errors.
pub(super) fn latest_write_version(storage: &dyn Storage) -> Result<u32> {
    if !storage.is_dir(dirs::SCHEMA)? {
        if storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
            return Err(Error::Unsupported(format!(
                "the array was written by TileDB before format version 10 ({})",
                dirs::LEGACY_SCHEMA_FILE
            )));
        }
        return Err(Error::NotAnArray("no __schema directory".into()));
    }
    let latest = storage
        .list(dirs::SCHEMA)?
        .into_iter()
        .filter(|e| !e.is_dir && TimestampedName::parse(&e.name).is_ok())
        .map(|e| e.name)
        .next_back()
        .ok_or_else(|| Error::NotAnArray("__schema holds no schema file".into()))?;
    let file = format!("{}/{latest}", dirs::SCHEMA);
    let schema = ArraySchema::parse_file_with_key(&storage.read(&file)?, storage.encryption_key())
        .map_err(|source| Error::Schema { file, source })?;
    Ok(if schema.version < BACK_COMPAT_WRITES_MIN_VERSION {
        FORMAT_VERSION
    } else {
        schema.version
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getline_splits_as_std_getline() {
        let lines: Vec<&[u8]> = getline(b"a\nb\n\nc").collect();
        assert_eq!(lines, [&b"a"[..], b"b", b"", b"c"]);
        assert_eq!(getline(b"a\n").count(), 1);
        assert_eq!(getline(b"").count(), 0);
    }

    #[test]
    fn names_span_first_and_last() {
        let n = name_over(&[(10, 10), (5, 5), (30, 40)], Some(22));
        assert_eq!((n.t1, n.t2, n.version), (10, 40, Some(22)));
        let n = name_over(&[(100, 100), (20, 20)], None);
        assert_eq!((n.t1, n.t2), (20, 100));
        let n = name_over(&[(0, 0)], None);
        assert!(n.t1 > 0 && n.t1 == n.t2);
    }
}
