//! Verifying an array on disk (`tessera verify`): every file is read and decoded, and every
//! cross-reference between files is checked; each problem is reported with the file (relative
//! to the array) and, where there is one, the byte offset in it.
//!
//! What [`verify`] checks:
//!
//! * **Schemas**: every file of `__schema/` parses, every enumeration file of
//!   `__schema/__enumerations/` parses, and every enumeration a schema names exists.
//! * **Commits** (`__commits/`): every file has a commit name and a known extension; `.del`
//!   and `.upd` files decode; `.con`, `.vac` and `.ign` files parse, and the delete commits a
//!   `.con` file embeds decode. A `.wrt` (or a `.con` entry no `.ign` file cancels) whose
//!   fragment folder is missing is an error: committed data is gone.
//! * **Fragments**: every committed fragment's `__fragment_metadata.tdb` parses completely
//!   (footer, R-tree, offsets, statistics, every generic tile where the footer says); it
//!   names a schema that exists; every data file the footer lists exists with the size the
//!   footer records; tile offsets start at 0, never decrease and stay inside their file; every
//!   tile of every field (fixed data, var data, offsets, validity, per-cell timestamps and
//!   delete metadata) decodes through its filter pipeline to the size the metadata gives —
//!   so a checksum filter (MD5, SHA-256) that does not match is reported; var offsets stay
//!   inside their data; a sparse tile's coordinates lie inside its R-tree MBR; per-cell
//!   timestamps lie inside the fragment's timestamp range; and each tile's statistics
//!   (min, max, sum, null count) recomputed from its cells match the fragment metadata
//!   (except for fields behind a lossy filter, SCALE_FLOAT or WEBP, whose statistics were
//!   computed before filtering). The footer gives no size to a file a field cannot have.
//!
//! What it cannot see: without a checksum filter, damaged values are found only when they
//! break decoding or change a tile's min, max, sum or null count (a saturated sum, or a bit
//! of a value that is neither the minimum nor the maximum of a field without sums, goes
//! unnoticed); and bytes no reader looks at (the datatype and cell size in a generic tile's
//! header) are not checked.
//! * **Consolidated fragment metadata** (`__fragment_meta/*.meta`) parses, and the footer it
//!   holds for a committed fragment is byte for byte the fragment's own.
//! * **Array metadata** (`__meta/`): every file has a timestamped name and decodes; `.vac`
//!   files parse.
//!
//! What is a [`Severity::Warning`] rather than an error — states readers ignore and that an
//! interrupted (or still running) write, consolidation or vacuum leaves behind, with nothing
//! lost:
//!
//! * a fragment folder no commit names (an interrupted or in-progress write or
//!   consolidation; readers never see it; safe to delete once no writer is running);
//! * a `.vac` entry whose fragment is already gone, or a `__meta/*.vac` entry whose file is
//!   gone (an interrupted vacuum; `vacuum` finishes it);
//! * a `.vac`-listed fragment whose `.wrt` is gone but whose folder is still there (the same:
//!   vacuum removes the commit first, then the folder);
//! * an `.ign` entry that no `.con` file lists;
//! * a file Tessera does not know in a fragment folder or `__commits/`;
//! * a consolidated fragment that covers the timestamps of fragments no `.vac` file lists (a
//!   fragment consolidation interrupted between its commit and its `.vac` file: readers see
//!   the cells of both, which is the same data except in arrays that allow duplicates).
//!
//! `verify` reads a snapshot: run it on an array nothing is writing to, consolidating or
//! vacuuming (a concurrent write shows as an uncommitted folder; a concurrent vacuum may
//! show as missing files).
//!
//! It needs only the format layers and storage (`tessera_query::verify` re-exports it with the
//! engine's error type):
//!
//! ```
//! use tessera_storage::MemoryStorage;
//! use tessera_verify::{Error, Options, verify};
//!
//! let err = verify(&MemoryStorage::new(), &Options::default()).unwrap_err();
//! assert!(matches!(err, Error::NotAnArray(_)));
//! ```

mod fragment;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use tessera_fragment::{
    CommitEntry, CommitKind, ConsolidatedCommits, ConsolidatedFragmentMeta, DeleteCommit,
    FragmentName, IgnoreFile, UpdateCommit, VacuumFile,
};
use tessera_schema::{ArraySchema, Enumeration};
use tessera_storage::{Entry, Storage};
use tessera_types::names::TimestampedName;

use tessera_fragment::dirs;

/// Why an array could not be verified at all (problems in its files are a [`Report`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Listing the array's folders failed.
    #[error(transparent)]
    Storage(#[from] tessera_storage::Error),
    /// The location holds no TileDB array.
    #[error("not a TileDB array: {0}")]
    NotAnArray(String),
    /// An array Tessera cannot verify (older than format version 10).
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How serious a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Data that readers would fail on, read wrongly, or that is lost.
    Error,
    /// Leftovers readers ignore (see the module docs); nothing is lost.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One problem found by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// The file or folder, relative to the array (`__fragments/<name>/a0.tdb`).
    pub file: String,
    /// The byte offset in `file` where the problem is (the start of the tile, field or
    /// structure that is wrong), when there is one.
    pub offset: Option<u64>,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    fn error(file: impl Into<String>, offset: Option<u64>, message: impl Into<String>) -> Self {
        Problem { severity: Severity::Error, file: file.into(), offset, message: message.into() }
    }

    fn warning(file: impl Into<String>, offset: Option<u64>, message: impl Into<String>) -> Self {
        Problem { severity: Severity::Warning, file: file.into(), offset, message: message.into() }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.file)?;
        if let Some(o) = self.offset {
            write!(f, " @ {o}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// What [`verify`] looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Schema files read.
    pub schemas: usize,
    /// Commit files read in `__commits/`.
    pub commit_files: usize,
    /// Committed fragments verified.
    pub fragments: usize,
    /// Fragment folders that no commit names.
    pub uncommitted_fragments: usize,
    /// Data tiles decoded (one per tile and field).
    pub tiles: u64,
    /// Bytes of fragment files read.
    pub bytes: u64,
    /// Files read in `__meta/` and `__fragment_meta/`.
    pub metadata_files: usize,
}

/// The result of [`verify`]: every problem found, errors first, then by file and offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The problems, errors first.
    pub problems: Vec<Problem>,
    /// What was looked at.
    pub summary: Summary,
}

impl Report {
    /// The problems that are errors.
    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().filter(|p| p.severity == Severity::Error)
    }

    /// The problems that are warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().filter(|p| p.severity == Severity::Warning)
    }

    /// Whether no error was found (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.errors().next().is_none()
    }
}

/// Progress callback: (bytes of fragment files verified, total bytes to verify).
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// Options of [`verify`].
#[derive(Clone, Default)]
pub struct Options {
    /// Called as fragments are verified, for progress bars.
    pub progress: Option<Progress>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options").field("progress", &self.progress.is_some()).finish()
    }
}

/// At most this many problems are listed per file; the rest are counted in one more problem.
const MAX_PER_FILE: usize = 20;

/// Verifies the array on `storage` (rooted at the array's folder); see the module docs for
/// what is checked. Problems in the array's files are returned in the [`Report`], never as
/// an `Err`.
///
/// # Errors
/// [`Error::NotAnArray`] when there is no `__schema` folder; [`Error::Unsupported`] for the
/// single-schema-file layout of format versions before 10; a storage error listing the
/// array's folders.
pub fn verify(storage: &dyn Storage, options: &Options) -> Result<Report> {
    if !storage.is_dir(dirs::SCHEMA)? {
        if storage.exists(dirs::LEGACY_SCHEMA_FILE)? {
            return Err(Error::Unsupported(format!(
                "verifying arrays older than format version 10 ({})",
                dirs::LEGACY_SCHEMA_FILE
            )));
        }
        return Err(Error::NotAnArray("no __schema directory".into()));
    }
    let mut v = Verifier { storage, problems: Vec::new(), summary: Summary::default() };
    let schemas = v.schemas()?;
    let commits = v.commits()?;
    let fragments = v.fragments(&commits, &schemas, options)?;
    v.fragment_meta(&commits, &fragments)?;
    v.array_meta()?;
    v.interrupted_consolidations(&commits);
    let mut problems = cap_per_file(v.problems);
    problems.sort_by(|a, b| {
        (a.severity, &a.file, a.offset.unwrap_or(0)).cmp(&(
            b.severity,
            &b.file,
            b.offset.unwrap_or(0),
        ))
    });
    Ok(Report { problems, summary: v.summary })
}

/// Keeps the first [`MAX_PER_FILE`] problems of each file (and severity), and one more
/// saying how many were left out.
fn cap_per_file(problems: Vec<Problem>) -> Vec<Problem> {
    let mut count: HashMap<(String, Severity), usize> = HashMap::new();
    let mut out = Vec::with_capacity(problems.len());
    for p in problems {
        let n = count.entry((p.file.clone(), p.severity)).or_default();
        *n += 1;
        if *n <= MAX_PER_FILE {
            out.push(p);
        }
    }
    for ((file, severity), n) in count {
        if n > MAX_PER_FILE {
            out.push(Problem {
                severity,
                file,
                offset: None,
                message: format!("{} more problems of this kind in this file", n - MAX_PER_FILE),
            });
        }
    }
    out
}

/// The schemas that parsed, by file name in `__schema/`.
type Schemas = HashMap<String, Arc<ArraySchema>>;

/// What `__commits/` says.
#[derive(Debug, Default)]
struct Commits {
    /// Committed fragments: named by a `.wrt` file, or by a `.con` entry no `.ign` cancels;
    /// with the file that commits each.
    committed: BTreeMap<String, String>,
    /// Fragments with a `.wrt` file of their own.
    wrt: BTreeSet<String>,
    /// Fragments listed by a `.vac` file, with that file.
    vacuumable: BTreeMap<String, String>,
    /// Every `.vac` file name with the fragment names it lists.
    vac_files: Vec<(FragmentName, Vec<String>)>,
}

struct Verifier<'a> {
    storage: &'a dyn Storage,
    problems: Vec<Problem>,
    summary: Summary,
}

/// The direct children of `dir`, or none when it does not exist.
fn list_or_empty(storage: &dyn Storage, dir: &str) -> Result<Vec<Entry>> {
    match storage.list(dir) {
        Ok(e) => Ok(e),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// An error with its sources: `outer: inner: innermost` (each source's text once, when an
/// outer error repeats it).
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Problem text and offset of a fragment-crate error (commit files, fragment metadata).
fn frag_problem(file: &str, e: &tessera_fragment::Error) -> Problem {
    Problem::error(file, e.offset(), chain(e))
}

/// Problem text of a tile-crate error; its offset when it has one.
fn tile_problem(file: &str, e: &tessera_tile::Error) -> Problem {
    Problem::error(file, e.offset(), chain(e))
}

impl Verifier<'_> {
    fn push(&mut self, p: Problem) {
        self.problems.push(p);
    }

    /// Reads `path`, or records why it cannot be read.
    fn read(&mut self, path: &str) -> Option<tessera_storage::Bytes> {
        match self.storage.read(path) {
            Ok(b) => Some(b),
            Err(e) => {
                self.push(Problem::error(path, None, format!("cannot be read: {}", chain(&e))));
                None
            }
        }
    }

    /// `__schema/` and its enumerations.
    fn schemas(&mut self) -> Result<Schemas> {
        let mut schemas = Schemas::new();
        let mut enumerations: BTreeSet<String> = BTreeSet::new();
        for e in list_or_empty(self.storage, dirs::ENUMERATIONS)? {
            let path = format!("{}/{}", dirs::ENUMERATIONS, e.name);
            if e.is_dir {
                self.push(Problem::warning(path, None, "unexpected folder"));
                continue;
            }
            let Some(bytes) = self.read(&path) else { continue };
            match tessera_tile::read_generic_tile_with_key(&bytes, self.storage.encryption_key()) {
                Ok(payload) => match Enumeration::parse(&payload) {
                    Ok(_) => {
                        enumerations.insert(e.name);
                    }
                    Err(err) => self.push(Problem::error(
                        path,
                        None,
                        format!("{} (offset in the decoded payload)", chain(&err)),
                    )),
                },
                Err(err) => self.push(tile_problem(&path, &err)),
            }
        }
        for e in self.storage.list(dirs::SCHEMA)? {
            if e.is_dir {
                if e.name != "__enumerations" {
                    let path = format!("{}/{}", dirs::SCHEMA, e.name);
                    self.push(Problem::warning(path, None, "unexpected folder"));
                }
                continue;
            }
            let path = format!("{}/{}", dirs::SCHEMA, e.name);
            if TimestampedName::parse(&e.name).is_err() {
                self.push(Problem::warning(path, None, "not a schema file name"));
                continue;
            }
            let Some(bytes) = self.read(&path) else { continue };
            self.summary.schemas += 1;
            match ArraySchema::parse_file_with_key(&bytes, self.storage.encryption_key()) {
                Ok(schema) => {
                    for r in &schema.enumerations {
                        if !enumerations.contains(&r.path) {
                            self.push(Problem::error(
                                path.clone(),
                                None,
                                format!(
                                    "enumeration {:?} is in {}/{}, which is missing or corrupt",
                                    r.name,
                                    dirs::ENUMERATIONS,
                                    r.path
                                ),
                            ));
                        }
                    }
                    schemas.insert(e.name, Arc::new(schema));
                }
                Err(err) => {
                    let offset = match &err {
                        tessera_schema::Error::Tile(t) => t.offset(),
                        _ => None,
                    };
                    self.push(Problem::error(path, offset, chain(&err)));
                }
            }
        }
        if self.summary.schemas == 0 {
            self.push(Problem::error(dirs::SCHEMA, None, "no schema file"));
        }
        Ok(schemas)
    }

    /// `__commits/`: every file parses; which fragments are committed.
    fn commits(&mut self) -> Result<Commits> {
        let mut c = Commits::default();
        let mut con_wrt: Vec<(String, String)> = Vec::new();
        let mut ignored: BTreeMap<String, String> = BTreeMap::new();
        for e in list_or_empty(self.storage, dirs::COMMITS)? {
            let path = format!("{}/{}", dirs::COMMITS, e.name);
            if e.is_dir {
                self.push(Problem::warning(path, None, "unexpected folder"));
                continue;
            }
            let entry = match CommitEntry::classify(&e.name) {
                Ok(Some(entry)) => entry,
                Ok(None) => {
                    self.push(Problem::warning(
                        path,
                        None,
                        "not a commit file (ignored by readers)",
                    ));
                    continue;
                }
                Err(err) => {
                    self.push(frag_problem(&path, &err));
                    continue;
                }
            };
            self.summary.commit_files += 1;
            let name = entry.name.as_str().to_owned();
            match entry.kind {
                CommitKind::Write => {
                    c.wrt.insert(name.clone());
                    c.committed.insert(name, path);
                }
                CommitKind::Delete => {
                    if let Some(bytes) = self.read(&path)
                        && let Err(err) =
                            DeleteCommit::parse_file_with_key(&bytes, self.storage.encryption_key())
                    {
                        self.push(frag_problem(&path, &err));
                    }
                }
                CommitKind::Update => {
                    if let Some(bytes) = self.read(&path) {
                        match tessera_tile::read_generic_tile_with_key(
                            &bytes,
                            self.storage.encryption_key(),
                        ) {
                            Ok(payload) => {
                                if let Err(err) = UpdateCommit::parse_payload(&payload) {
                                    self.push(Problem::error(
                                        path,
                                        None,
                                        format!("{} (offset in the decoded payload)", chain(&err)),
                                    ));
                                }
                            }
                            Err(err) => self.push(tile_problem(&path, &err)),
                        }
                    }
                }
                CommitKind::ConsolidatedCommits => {
                    let Some(bytes) = self.read(&path) else { continue };
                    match ConsolidatedCommits::parse(&bytes) {
                        Ok(con) => {
                            for item in con.entries {
                                match item.commit() {
                                    Ok(Some(ce)) if ce.kind == CommitKind::Write => {
                                        con_wrt.push((ce.name.as_str().to_owned(), path.clone()));
                                    }
                                    Ok(Some(ce)) if ce.kind == CommitKind::Delete => {
                                        let Some(del) = &item.delete_file else { continue };
                                        if let Err(err) = DeleteCommit::parse_file_with_key(
                                            del,
                                            self.storage.encryption_key(),
                                        ) {
                                            self.push(Problem::error(
                                                path.clone(),
                                                None,
                                                format!("embedded {}: {}", item.path, chain(&err)),
                                            ));
                                        }
                                    }
                                    Ok(_) => {}
                                    Err(err) => self.push(frag_problem(&path, &err)),
                                }
                            }
                        }
                        Err(err) => self.push(frag_problem(&path, &err)),
                    }
                }
                CommitKind::Ignore => {
                    let Some(bytes) = self.read(&path) else { continue };
                    match IgnoreFile::parse(&bytes) {
                        Ok(ign) => {
                            for p in ign.paths {
                                ignored.insert(p, path.clone());
                            }
                        }
                        Err(err) => self.push(frag_problem(&path, &err)),
                    }
                }
                CommitKind::Vacuum => {
                    let Some(bytes) = self.read(&path) else { continue };
                    match VacuumFile::parse(&bytes).and_then(|v| v.relative_paths()) {
                        Ok(paths) => {
                            let mut names = Vec::new();
                            for p in paths {
                                match p.strip_prefix(&format!("{}/", dirs::FRAGMENTS)) {
                                    Some(f) if FragmentName::parse(f).is_ok() => {
                                        c.vacuumable.insert(f.to_owned(), path.clone());
                                        names.push(f.to_owned());
                                    }
                                    Some(f) => self.push(Problem::error(
                                        path.clone(),
                                        None,
                                        format!("entry {f:?} is not a fragment name"),
                                    )),
                                    None => self.push(Problem::error(
                                        path.clone(),
                                        None,
                                        format!("entry {p:?} is not a fragment"),
                                    )),
                                }
                            }
                            c.vac_files.push((entry.name, names));
                        }
                        Err(err) => self.push(frag_problem(&path, &err)),
                    }
                }
            }
        }
        let con_paths: BTreeSet<String> =
            con_wrt.iter().map(|(n, _)| format!("{}/{n}.wrt", dirs::COMMITS)).collect();
        for (name, con) in con_wrt {
            let wrt = format!("{}/{name}.wrt", dirs::COMMITS);
            if !ignored.contains_key(&wrt) {
                c.committed.entry(name).or_insert(con);
            }
        }
        for (p, ign) in ignored {
            if !con_paths.contains(&p) {
                self.push(Problem::warning(
                    ign,
                    None,
                    format!("entry {p:?} is in no .con file (a leftover; harmless)"),
                ));
            }
        }
        Ok(c)
    }

    /// `__fragments/`: every committed fragment verified; folders without commits reported.
    /// Returns the raw footer bytes of each fragment whose metadata file has a footer.
    fn fragments(
        &mut self,
        commits: &Commits,
        schemas: &Schemas,
        options: &Options,
    ) -> Result<HashMap<String, Vec<u8>>> {
        let folders: BTreeSet<String> = list_or_empty(self.storage, dirs::FRAGMENTS)?
            .into_iter()
            .filter_map(|e| {
                if e.is_dir {
                    Some(e.name)
                } else {
                    let path = format!("{}/{}", dirs::FRAGMENTS, e.name);
                    self.push(Problem::warning(path, None, "unexpected file"));
                    None
                }
            })
            .collect();
        for f in &folders {
            if commits.committed.contains_key(f) {
                continue;
            }
            let path = format!("{}/{f}", dirs::FRAGMENTS);
            self.summary.uncommitted_fragments += 1;
            let message = if commits.vacuumable.contains_key(f) {
                "consolidated fragment whose commit a vacuum removed (an interrupted vacuum; \
                 `vacuum` finishes it)"
            } else {
                "no commit names this fragment folder (an interrupted or running write or \
                 consolidation); readers ignore it, and it can be removed once nothing writes"
            };
            self.push(Problem::warning(path, None, message));
        }
        for (f, vac) in &commits.vacuumable {
            if !folders.contains(f) && !commits.committed.contains_key(f) {
                self.push(Problem::warning(
                    vac.clone(),
                    None,
                    format!(
                        "lists fragment {f}, which is already removed (an interrupted vacuum; \
                         `vacuum` finishes it)"
                    ),
                ));
            }
        }
        // Verify the committed fragments that have folders.
        let mut todo = Vec::new();
        for (f, commit) in &commits.committed {
            let path = format!("{}/{f}", dirs::FRAGMENTS);
            if !folders.contains(f) {
                let mut message =
                    format!("committed by {commit} but the fragment folder is missing");
                if commits.vacuumable.contains_key(f) {
                    // Vacuum removes the commit before the folder, so this is not an
                    // interrupted vacuum; and reads at times before the consolidation need it.
                    message.push_str(
                        " (a .vac file lists it as consolidated, but reads at earlier times \
                         still need it)",
                    );
                }
                self.push(Problem::error(path, None, message));
                continue;
            }
            match FragmentName::parse(f) {
                Ok(name) => todo.push(name),
                Err(err) => self.push(frag_problem(&path, &err)),
            }
        }
        let mut sizes = Vec::with_capacity(todo.len());
        let mut total = 0u64;
        for name in &todo {
            let dir = format!("{}/{}", dirs::FRAGMENTS, name.as_str());
            let entries = list_or_empty(self.storage, &dir)?;
            total += entries.iter().map(|e| e.size).sum::<u64>();
            sizes.push(entries);
        }
        let mut footers = HashMap::new();
        let mut done = 0u64;
        for (name, entries) in todo.iter().zip(sizes) {
            let bytes: u64 = entries.iter().map(|e| e.size).sum();
            let base = done;
            let progress = |d: u64| {
                if let Some(p) = &options.progress {
                    p(base + d, total);
                }
            };
            let out = fragment::verify_fragment(self.storage, name, &entries, schemas, &progress);
            self.problems.extend(out.problems);
            self.summary.fragments += 1;
            self.summary.tiles += out.tiles;
            self.summary.bytes += out.bytes;
            if let Some(f) = out.footer {
                footers.insert(name.as_str().to_owned(), f);
            }
            done += bytes;
            if let Some(p) = &options.progress {
                p(done, total);
            }
        }
        Ok(footers)
    }

    /// `__fragment_meta/`: every file parses; footers of committed fragments match theirs.
    fn fragment_meta(
        &mut self,
        commits: &Commits,
        footers: &HashMap<String, Vec<u8>>,
    ) -> Result<()> {
        for e in list_or_empty(self.storage, dirs::FRAGMENT_META)? {
            let path = format!("{}/{}", dirs::FRAGMENT_META, e.name);
            if e.is_dir || !e.name.ends_with(".meta") {
                self.push(Problem::warning(path, None, "unexpected entry"));
                continue;
            }
            let Some(bytes) = self.read(&path) else { continue };
            self.summary.metadata_files += 1;
            match ConsolidatedFragmentMeta::parse_file_with_key(
                &bytes,
                self.storage.encryption_key(),
            ) {
                Ok(meta) => {
                    for entry in meta.entries {
                        if !commits.committed.contains_key(&entry.name) {
                            continue; // vacuumed since: readers never ask for it
                        }
                        if let Some(own) = footers.get(&entry.name)
                            && *own != entry.footer
                        {
                            self.push(Problem::error(
                                path.clone(),
                                None,
                                format!(
                                    "the footer of {} differs from the one in its \
                                     __fragment_metadata.tdb (readers use this one)",
                                    entry.name
                                ),
                            ));
                        }
                    }
                }
                Err(err) => self.push(frag_problem(&path, &err)),
            }
        }
        Ok(())
    }

    /// `__meta/`: array metadata files decode; `.vac` files parse.
    fn array_meta(&mut self) -> Result<()> {
        let listing = list_or_empty(self.storage, dirs::META)?;
        let names: BTreeSet<&str> = listing.iter().map(|e| e.name.as_str()).collect();
        for e in &listing {
            let path = format!("{}/{}", dirs::META, e.name);
            if e.is_dir {
                self.push(Problem::warning(path, None, "unexpected folder"));
                continue;
            }
            if TimestampedName::parse(&e.name).is_err() {
                self.push(Problem::warning(path, None, "not a metadata file name (ignored)"));
                continue;
            }
            let Some(bytes) = self.read(&path) else { continue };
            self.summary.metadata_files += 1;
            if e.name.ends_with(".vac") {
                match VacuumFile::parse(&bytes).and_then(|v| v.relative_paths()) {
                    Ok(paths) => {
                        for p in paths {
                            let file = p.strip_prefix(&format!("{}/", dirs::META));
                            if file.is_none_or(|f| !names.contains(f)) {
                                self.push(Problem::warning(
                                    path.clone(),
                                    None,
                                    format!(
                                        "lists {p}, which is already removed (an interrupted \
                                         vacuum; `vacuum --mode array-meta` finishes it)"
                                    ),
                                ));
                            }
                        }
                    }
                    Err(err) => self.push(frag_problem(&path, &err)),
                }
                continue;
            }
            match tessera_tile::read_generic_tile_with_key(&bytes, self.storage.encryption_key()) {
                Ok(payload) => {
                    if let Err(err) = tessera_fragment::array_metadata::parse_payload(&payload) {
                        self.push(Problem::error(
                            path,
                            None,
                            format!("{} (offset in the decoded payload)", chain(&err)),
                        ));
                    }
                }
                Err(err) => self.push(tile_problem(&path, &err)),
            }
        }
        Ok(())
    }

    /// Consolidated fragments whose inputs are still committed and listed by no `.vac` file.
    fn interrupted_consolidations(&mut self, commits: &Commits) {
        let names: Vec<FragmentName> =
            commits.committed.keys().filter_map(|n| FragmentName::parse(n).ok()).collect();
        for c in names.iter().filter(|n| n.t1() < n.t2()) {
            if commits.vacuumable.contains_key(c.as_str()) {
                continue;
            }
            let covered: Vec<&str> = names
                .iter()
                .filter(|n| {
                    n.as_str() != c.as_str()
                        && c.t1() <= n.t1()
                        && n.t2() <= c.t2()
                        && !commits.vacuumable.contains_key(n.as_str())
                })
                .map(FragmentName::as_str)
                .collect();
            if !covered.is_empty() {
                self.push(Problem::warning(
                    format!("{}/{}", dirs::FRAGMENTS, c.as_str()),
                    None,
                    format!(
                        "covers the timestamps of committed fragments no .vac file lists ({}): \
                         a consolidation interrupted before writing its .vac file? Readers see \
                         the cells of both",
                        covered.join(", ")
                    ),
                ));
            }
        }
    }
}
