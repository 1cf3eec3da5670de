//! The storage error: which operation failed, on which path, and why.

use std::fmt;
use std::io;
use std::ops::Range;

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A [`Storage`](crate::Storage) operation, as named in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// [`Storage::read`](crate::Storage::read).
    Read,
    /// [`Storage::read_range`](crate::Storage::read_range).
    ReadRange,
    /// [`Storage::read_ranges`](crate::Storage::read_ranges).
    ReadRanges,
    /// [`Storage::size`](crate::Storage::size).
    Size,
    /// [`Storage::exists`](crate::Storage::exists).
    Exists,
    /// [`Storage::is_dir`](crate::Storage::is_dir).
    IsDir,
    /// [`Storage::list`](crate::Storage::list).
    List,
    /// [`Storage::write`](crate::Storage::write).
    Write,
    /// [`Storage::create_dir`](crate::Storage::create_dir).
    CreateDir,
    /// [`Storage::remove`](crate::Storage::remove).
    Remove,
    /// [`Storage::remove_dir_all`](crate::Storage::remove_dir_all).
    RemoveDirAll,
    /// [`Storage::publish`](crate::Storage::publish).
    Publish,
    /// [`Storage::rename`](crate::Storage::rename).
    Rename,
}

impl Op {
    /// The operation's name, the same as the trait method's (`"read_range"`, ...).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::ReadRange => "read_range",
            Op::ReadRanges => "read_ranges",
            Op::Size => "size",
            Op::Exists => "exists",
            Op::IsDir => "is_dir",
            Op::List => "list",
            Op::Write => "write",
            Op::CreateDir => "create_dir",
            Op::Remove => "remove",
            Op::RemoveDirAll => "remove_dir_all",
            Op::Publish => "publish",
            Op::Rename => "rename",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong in a [`Storage`](crate::Storage) operation.
///
/// Every variant names the operation and the path (as the caller gave it). I/O failures keep
/// the underlying [`io::Error`] as their [`source`](std::error::Error::source); its
/// [`kind`](io::Error::kind) says what happened in the terms listed on
/// [`Storage`](crate::Storage) (`NotFound`, `IsADirectory`, `NotADirectory`, `AlreadyExists`,
/// ...), the same for every backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation failed (including "not found"; see [`Error::is_not_found`]).
    #[error("{op} {path:?}: {}", source.kind())]
    Io {
        /// The operation.
        op: Op,
        /// The path the failure is about (for a rename, the source or the destination).
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A byte range that is reversed or reaches past the end of the object.
    #[error(
        "{op} {path:?}: range {}..{} is not within the object's {size} bytes",
        range.start,
        range.end
    )]
    RangeOutOfBounds {
        /// The operation.
        op: Op,
        /// The object's path.
        path: String,
        /// The range asked for.
        range: Range<u64>,
        /// The object's size in bytes.
        size: u64,
    },
    /// A path that is not allowed: one with a `..` component, an absolute path, a NUL byte,
    /// or the root where an object or a removable directory is needed.
    #[error("{op} {path:?}: invalid path: {reason}")]
    InvalidPath {
        /// The operation.
        op: Op,
        /// The path as given.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
}

impl Error {
    /// An [`Error::Io`] for `op` on `path`.
    pub fn io(op: Op, path: impl Into<String>, source: io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }

    /// An [`Error::Io`] of kind `kind`, with `message` as the underlying error's text.
    pub fn io_kind(op: Op, path: impl Into<String>, kind: io::ErrorKind, message: &str) -> Self {
        Error::io(op, path, io::Error::new(kind, message.to_owned()))
    }

    /// An [`Error::Io`] of kind [`io::ErrorKind::NotFound`].
    pub fn not_found(op: Op, path: impl Into<String>) -> Self {
        Error::io_kind(op, path, io::ErrorKind::NotFound, "no such file or directory")
    }

    /// True when the object or directory does not exist (an [`Error::Io`] of kind
    /// [`io::ErrorKind::NotFound`]).
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        self.io_error_kind() == Some(io::ErrorKind::NotFound)
    }

    /// The kind of the underlying I/O error, for [`Error::Io`]; `None` otherwise.
    #[must_use]
    pub fn io_error_kind(&self) -> Option<io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// The operation that failed.
    #[must_use]
    pub fn op(&self) -> Op {
        match self {
            Error::Io { op, .. }
            | Error::RangeOutOfBounds { op, .. }
            | Error::InvalidPath { op, .. } => *op,
        }
    }

    /// The path the error is about.
    #[must_use]
    pub fn path(&self) -> &str {
        match self {
            Error::Io { path, .. }
            | Error::RangeOutOfBounds { path, .. }
            | Error::InvalidPath { path, .. } => path,
        }
    }
}
