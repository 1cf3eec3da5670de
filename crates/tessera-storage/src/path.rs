//! The one path syntax every backend accepts.

use std::borrow::Cow;

use crate::{Error, Op, Result};

/// Checks `path` and puts it in canonical form: `/`-separated components relative to the
/// storage root, with empty and `.` components dropped (so `"a//b/./c/"` becomes `"a/b/c"`).
/// The root itself is the empty string; `"."` and `"./"` name it too.
///
/// Backends call this first, so they all accept and refuse the same paths.
///
/// # Errors
///
/// [`Error::InvalidPath`] if the path starts with `/` (paths are relative to the backend's
/// root), has a `..` component (it could escape the root), or contains a NUL byte.
pub fn normalize_path(op: Op, path: &str) -> Result<Cow<'_, str>> {
    let invalid = |reason| Error::InvalidPath { op, path: path.to_owned(), reason };
    if path.starts_with('/') {
        return Err(invalid(
            "absolute paths are not allowed; paths are relative to the storage root",
        ));
    }
    if path.contains('\0') {
        return Err(invalid("a path may not contain a NUL byte"));
    }
    let mut canonical = true;
    let mut count = 0usize;
    for component in path.split('/') {
        match component {
            ".." => return Err(invalid("`..` components are not allowed")),
            "" | "." => canonical = false,
            _ => count += 1,
        }
    }
    // "" (the root) splits into one empty component but is canonical.
    if path.is_empty() || (canonical && count > 0) {
        return Ok(Cow::Borrowed(path));
    }
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    Ok(Cow::Owned(parts.join("/")))
}

/// Like [`normalize_path`], but also refuses the root: for operations that need an object or
/// a directory below the root (`write`, `remove`, `remove_dir_all`, ...).
///
/// # Errors
///
/// As [`normalize_path`], and [`Error::InvalidPath`] when the path names the root.
pub fn normalize_non_root(op: Op, path: &str) -> Result<Cow<'_, str>> {
    let normalized = normalize_path(op, path)?;
    if normalized.is_empty() {
        return Err(Error::InvalidPath {
            op,
            path: path.to_owned(),
            reason: "the path names the storage root",
        });
    }
    Ok(normalized)
}

/// The parent of a canonical path (`"a/b"` → `"a"`, `"a"` → `""`).
pub(crate) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        let n = |p| normalize_path(Op::Read, p).unwrap().into_owned();
        assert_eq!(n(""), "");
        assert_eq!(n("."), "");
        assert_eq!(n("./"), "");
        assert_eq!(n("a"), "a");
        assert_eq!(n("a/b"), "a/b");
        assert_eq!(n("a//b/./c/"), "a/b/c");
        assert_eq!(n("a/.b"), "a/.b");
        assert_eq!(n("a/..b"), "a/..b");
        assert!(matches!(normalize_path(Op::Read, "a/b"), Ok(Cow::Borrowed("a/b"))));
    }

    #[test]
    fn refused() {
        for p in ["..", "a/..", "../a", "a/../b", "/a", "/", "a\0b"] {
            let err = normalize_path(Op::List, p).unwrap_err();
            assert!(matches!(err, Error::InvalidPath { .. }), "{p:?}: {err}");
            assert_eq!(err.path(), p);
            assert_eq!(err.op(), Op::List);
        }
        assert!(normalize_non_root(Op::Remove, "./").is_err());
        assert_eq!(normalize_non_root(Op::Remove, "x/").unwrap(), "x");
    }

    #[test]
    fn parents() {
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("a"), "");
    }
}
