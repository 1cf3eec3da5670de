//! The `__commits/` folder: classifying its files, and the text formats of `.con`
//! (consolidated commits), `.vac` (vacuum lists) and `.ign` (ignore lists).
//!
//! Sources: `tiledb/sm/array/array_directory.cc` (`load_consolidated_commit_uris`,
//! `get_full_vac_uri`, `write_commit_ignore_file`) and
//! `tiledb/sm/consolidator/consolidator.cc` (`write_consolidated_commits_file`).
//! Delete and update commit contents are in [`crate::condition`].

use crate::names::FragmentName;
use crate::{Error, Result};

/// Folder of commit files inside an array.
pub const COMMITS_DIR: &str = crate::dirs::COMMITS;

/// Folder of fragment folders inside an array.
pub const FRAGMENTS_DIR: &str = crate::dirs::FRAGMENTS;

/// Folder of array metadata files inside an array.
pub const ARRAY_METADATA_DIR: &str = crate::dirs::META;

/// What a file in `__commits/` is, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CommitKind {
    /// `.wrt`: an empty file committing the fragment of the same name.
    Write,
    /// `.del`: a delete condition (one generic tile).
    Delete,
    /// `.upd`: an update condition and values (one generic tile).
    Update,
    /// `.con`: consolidated commits (a list of commit paths with embedded `.del` files).
    ConsolidatedCommits,
    /// `.vac`: the fragments a consolidation replaced, to be vacuumed.
    Vacuum,
    /// `.ign`: commit paths inside `.con` files to ignore.
    Ignore,
}

impl CommitKind {
    /// Every kind.
    pub const ALL: [CommitKind; 6] = [
        CommitKind::Write,
        CommitKind::Delete,
        CommitKind::Update,
        CommitKind::ConsolidatedCommits,
        CommitKind::Vacuum,
        CommitKind::Ignore,
    ];

    /// The file extension, without the dot.
    pub const fn extension(self) -> &'static str {
        match self {
            CommitKind::Write => "wrt",
            CommitKind::Delete => "del",
            CommitKind::Update => "upd",
            CommitKind::ConsolidatedCommits => "con",
            CommitKind::Vacuum => "vac",
            CommitKind::Ignore => "ign",
        }
    }

    /// The kind with extension `ext` (without the dot).
    pub fn from_extension(ext: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.extension() == ext)
    }
}

/// One classified file of `__commits/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitEntry {
    /// The name without the extension (for `.wrt`, the fragment's folder name).
    pub name: FragmentName,
    /// What the file is.
    pub kind: CommitKind,
}

impl CommitEntry {
    /// A commit entry for `name`.
    pub fn new(name: FragmentName, kind: CommitKind) -> Self {
        CommitEntry { name, kind }
    }

    /// Classifies a file of `__commits/` by its extension (a path is allowed; only its last
    /// component is looked at). Files with other extensions give `Ok(None)`, as libtiledb
    /// ignores them.
    ///
    /// # Errors
    /// [`Error::Name`] when the extension is a commit extension but the name does not parse.
    pub fn classify(path: &str) -> Result<Option<Self>> {
        let file = path.trim_end_matches('/').rsplit('/').next().unwrap_or(path);
        let Some((_, ext)) = file.rsplit_once('.') else {
            return Ok(None);
        };
        let Some(kind) = CommitKind::from_extension(ext) else {
            return Ok(None);
        };
        Ok(Some(CommitEntry { name: FragmentName::parse(file)?, kind }))
    }

    /// The file name inside `__commits/`, e.g. `__1_1_<uuid>_22.wrt`.
    pub fn file_name(&self) -> String {
        self.name.with_extension(self.kind.extension())
    }

    /// The path relative to the array, as `.con` and `.ign` files and processed-condition
    /// markers write it: `__commits/<file name>`.
    pub fn relative_path(&self) -> String {
        format!("{COMMITS_DIR}/{}", self.file_name())
    }
}

/// Classifies every commit file among `paths`, skipping files that are not commit files.
///
/// # Errors
/// As [`CommitEntry::classify`], for the first bad name.
pub fn classify_commits<'a>(paths: impl IntoIterator<Item = &'a str>) -> Result<Vec<CommitEntry>> {
    let mut out = Vec::new();
    for p in paths {
        if let Some(e) = CommitEntry::classify(p)? {
            out.push(e);
        }
    }
    Ok(out)
}

/// Splits `bytes` into lines as `std::getline` does: `\n` ends a line, a last line without
/// `\n` still counts, and nothing follows a final `\n`.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        let end =
            bytes[start..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| start + p);
        pos = end + 1;
        Some((start, &bytes[start..end]))
    })
}

/// The line starting at `offset` as text; an error names the offset of its first byte that
/// is not UTF-8.
fn text_line(structure: &'static str, offset: usize, line: &[u8]) -> Result<String> {
    std::str::from_utf8(line).map(str::to_owned).map_err(|e| {
        Error::malformed(
            structure,
            "line",
            (offset + e.valid_up_to()) as u64,
            format!("not UTF-8 (the line starts at offset {offset}): {e}"),
        )
    })
}

fn write_lines(lines: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
    }
    out
}

/// One entry of a `.con` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsolidatedCommit {
    /// The commit's path relative to the array, without a leading slash
    /// (`__commits/<name>.wrt`, `__commits/<name>.del`, or a legacy `<name>.ok`).
    pub path: String,
    /// For a `.del` entry: the whole `.del` file (its generic tile), which follows the line
    /// as a `u64` size and the bytes.
    pub delete_file: Option<Vec<u8>>,
}

impl ConsolidatedCommit {
    /// The commit entry the path names (`None` for paths that are not commit files, such as
    /// legacy `.ok` files).
    ///
    /// # Errors
    /// [`Error::Name`] when the path has a commit extension but a bad name.
    pub fn commit(&self) -> Result<Option<CommitEntry>> {
        CommitEntry::classify(&self.path)
    }
}

/// A `.con` file: the commits it consolidates, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsolidatedCommits {
    /// The entries in file order.
    pub entries: Vec<ConsolidatedCommit>,
}

impl ConsolidatedCommits {
    const STRUCTURE: &'static str = "consolidated commits (.con)";

    /// Parses a `.con` file: `\n`-terminated relative paths; after a path ending in `.del`,
    /// a `u64` byte size and that many bytes of the `.del` file.
    ///
    /// # Errors
    /// [`Error::Malformed`] for a path that is not UTF-8, or a `.del` size or body that runs
    /// past the end of the file.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let mut entries = Vec::new();
        let mut pos = 0usize;
        while pos < bytes.len() {
            let end =
                bytes[pos..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| pos + p);
            let path = text_line(Self::STRUCTURE, pos, &bytes[pos..end])?;
            pos = (end + 1).min(bytes.len());
            let mut delete_file = None;
            if path.ends_with(".del") {
                let size_bytes = bytes.get(pos..pos + 8).ok_or_else(|| {
                    Error::malformed(
                        Self::STRUCTURE,
                        "delete file size",
                        pos as u64,
                        format!("truncated ({} bytes left)", bytes.len() - pos),
                    )
                })?;
                let size = crate::parse::read_u64(size_bytes);
                pos += 8;
                let body = usize::try_from(size)
                    .ok()
                    .and_then(|s| pos.checked_add(s))
                    .and_then(|e| bytes.get(pos..e))
                    .ok_or_else(|| {
                        Error::malformed(
                            Self::STRUCTURE,
                            "delete file",
                            pos as u64,
                            format!("size {size} exceeds the {} bytes left", bytes.len() - pos),
                        )
                    })?;
                pos += body.len();
                delete_file = Some(body.to_vec());
            }
            entries.push(ConsolidatedCommit { path, delete_file });
        }
        Ok(ConsolidatedCommits { entries })
    }

    /// The file bytes, exactly as libtiledb writes them.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for e in &self.entries {
            out.extend_from_slice(e.path.as_bytes());
            out.push(b'\n');
            if let Some(d) = &e.delete_file {
                crate::parse::put_u64(&mut out, d.len() as u64);
                out.extend_from_slice(d);
            }
        }
        out
    }
}

/// A `.vac` file: the items a consolidation replaced, one per line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VacuumFile {
    /// The lines as stored: since format 19 relative to the array with a leading `/`
    /// (`/__fragments/<name>`, `/__meta/<name>`); older files hold absolute URIs.
    pub lines: Vec<String>,
}

impl VacuumFile {
    const STRUCTURE: &'static str = "vacuum file (.vac)";

    /// A vacuum file listing fragments, as a fragment consolidation writes it.
    pub fn for_fragments<'a>(names: impl IntoIterator<Item = &'a FragmentName>) -> Self {
        let line = |n: &FragmentName| {
            if n.format_version() < crate::previous::FRAGMENTS_DIR_MIN_VERSION {
                format!("/{n}") // a fragment in the array folder itself
            } else {
                format!("/{FRAGMENTS_DIR}/{n}")
            }
        };
        VacuumFile { lines: names.into_iter().map(line).collect() }
    }

    /// Parses the lines.
    ///
    /// # Errors
    /// [`Error::Malformed`] for a line that is not UTF-8.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let lines =
            lines(bytes).map(|(at, l)| text_line(Self::STRUCTURE, at, l)).collect::<Result<_>>()?;
        Ok(VacuumFile { lines })
    }

    /// The file bytes: every line followed by `\n`.
    pub fn to_bytes(&self) -> Vec<u8> {
        write_lines(&self.lines)
    }

    /// Every line as a path relative to the array without a leading slash, as libtiledb's
    /// `get_full_vac_uri` resolves it: from `__fragments` on if the line contains it, else
    /// from `__meta` on, else the last path component.
    ///
    /// # Errors
    /// [`Error::Malformed`] for a line with neither folder name nor `/`.
    pub fn relative_paths(&self) -> Result<Vec<String>> {
        // Where each line starts in the file the lines were parsed from (`\n`-separated).
        let starts = self.lines.iter().scan(0u64, |at, l| {
            let start = *at;
            *at += l.len() as u64 + 1;
            Some(start)
        });
        self.lines
            .iter()
            .zip(starts)
            .map(|(l, offset)| {
                if let Some(p) = l.find(FRAGMENTS_DIR) {
                    Ok(l[p..].to_owned())
                } else if let Some(p) = l.find(ARRAY_METADATA_DIR) {
                    Ok(l[p..].to_owned())
                } else if let Some(p) = l.rfind('/') {
                    Ok(l[p + 1..].to_owned())
                } else {
                    Err(Error::malformed(
                        Self::STRUCTURE,
                        "line",
                        offset,
                        format!("{l:?} names no __fragments, __meta or path"),
                    ))
                }
            })
            .collect()
    }
}

/// A `.ign` file: commit paths relative to the array (`__commits/<name>.wrt`) that readers
/// skip when they appear in `.con` files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IgnoreFile {
    /// The lines as stored.
    pub paths: Vec<String>,
}

impl IgnoreFile {
    const STRUCTURE: &'static str = "ignore file (.ign)";

    /// Parses the lines.
    ///
    /// # Errors
    /// [`Error::Malformed`] for a line that is not UTF-8.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let paths =
            lines(bytes).map(|(at, l)| text_line(Self::STRUCTURE, at, l)).collect::<Result<_>>()?;
        Ok(IgnoreFile { paths })
    }

    /// The file bytes: every path followed by `\n`.
    pub fn to_bytes(&self) -> Vec<u8> {
        write_lines(&self.paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: &str = "__10_10_0123456789abcdef0123456789abcdef_22";

    #[test]
    fn classify() {
        for k in CommitKind::ALL {
            let e = CommitEntry::classify(&format!("{COMMITS_DIR}/{N}.{}", k.extension()))
                .unwrap()
                .unwrap();
            assert_eq!(e.kind, k);
            assert_eq!(e.name.as_str(), N);
            assert_eq!(e.relative_path(), format!("__commits/{N}.{}", k.extension()));
        }
        assert_eq!(CommitEntry::classify("x.txt").unwrap(), None);
        assert_eq!(CommitEntry::classify("noext").unwrap(), None);
        assert!(CommitEntry::classify("bad.wrt").is_err());
        let all = classify_commits([format!("{N}.wrt").as_str(), "README"]).unwrap();
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn con_round_trip_and_truncation() {
        let con = ConsolidatedCommits {
            entries: vec![
                ConsolidatedCommit { path: format!("__commits/{N}.wrt"), delete_file: None },
                ConsolidatedCommit {
                    path: format!("__commits/{N}.del"),
                    delete_file: Some(b"\n\nbinary\0".to_vec()),
                },
                ConsolidatedCommit { path: format!("__commits/{N}.wrt"), delete_file: None },
            ],
        };
        let bytes = con.to_bytes();
        assert_eq!(ConsolidatedCommits::parse(&bytes).unwrap(), con);
        for cut in 0..bytes.len() {
            // never panics; cuts inside a .del body or size are errors
            let _ = ConsolidatedCommits::parse(&bytes[..cut]);
        }
        let cut = bytes.len() - (N.len() + 15) - 3; // inside the .del body
        assert!(matches!(
            ConsolidatedCommits::parse(&bytes[..cut]),
            Err(Error::Malformed { field: "delete file", .. })
        ));
    }

    #[test]
    fn vac_and_ign() {
        let n = FragmentName::parse(N).unwrap();
        let v = VacuumFile::for_fragments([&n, &n]);
        let b = v.to_bytes();
        assert_eq!(b, format!("/__fragments/{N}\n/__fragments/{N}\n").as_bytes());
        assert_eq!(VacuumFile::parse(&b).unwrap(), v);
        assert_eq!(v.relative_paths().unwrap()[0], format!("__fragments/{N}"));
        let legacy = VacuumFile::parse(b"file:///a/b/__meta/x\ns3://bucket/arr/y").unwrap();
        assert_eq!(legacy.relative_paths().unwrap(), ["__meta/x", "y"]);
        assert!(VacuumFile::parse(b"plain").unwrap().relative_paths().is_err());
        let i = IgnoreFile { paths: vec![format!("__commits/{N}.wrt")] };
        assert_eq!(IgnoreFile::parse(&i.to_bytes()).unwrap(), i);
        assert!(IgnoreFile::parse(b"\xff\n").is_err());
    }

    #[test]
    fn line_errors_name_the_byte_offset() {
        let e = VacuumFile::parse(b"/__fragments/a\n/__fr\xffagments/b\n").unwrap_err();
        assert!(
            matches!(e, Error::Malformed { field: "line", offset: 20, .. }),
            "the bad byte is at 20: {e:?}"
        );
        assert!(e.to_string().contains("the line starts at offset 15"), "{e}");
        let vac = VacuumFile::parse(b"/__fragments/a\nplain\n").unwrap();
        let e = vac.relative_paths().unwrap_err();
        assert!(
            matches!(e, Error::Malformed { field: "line", offset: 15, .. }),
            "the second line starts at byte 15, not at line 1: {e:?}"
        );
    }
}
