//! The crate's error type.

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an R-tree or MBR could not be decoded or built.
///
/// Decoding errors name the on-disk field (`fanout`, `level_num`, `mbr_num`, `range_size`,
/// `start_size`, `range`, `low`, `high`) and its byte offset, counted from the start of the
/// bytes given to the parser. A caller that parsed a sub-slice (an MBR inside a footer, an
/// R-tree inside a file) moves the offset with [`Error::at_offset`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ended inside a field.
    #[error("truncated at {field} (offset {offset}: need {needed} bytes, {available} left)")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// A count read from disk cannot fit in the bytes that follow it, so it was not used to
    /// allocate anything.
    #[error(
        "{field} at offset {offset} is {count}, but the {available} bytes left hold at most {max}"
    )]
    CountTooLarge {
        /// The count field (`level_num`, `mbr_num`).
        field: &'static str,
        /// Byte offset of the count.
        offset: u64,
        /// The count read.
        count: u64,
        /// The largest count the remaining bytes could hold.
        max: u64,
        /// Bytes left after the count.
        available: u64,
    },
    /// A field holds a value that cannot be right.
    #[error("invalid {field} at offset {offset}: {reason}")]
    Invalid {
        /// The offending field.
        field: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// Why it is wrong.
        reason: String,
    },
    /// Bytes follow the last level of an R-tree.
    #[error("{count} trailing bytes after the R-tree at offset {offset}")]
    TrailingBytes {
        /// Where the R-tree ended.
        offset: u64,
        /// How many bytes follow it.
        count: u64,
    },
    /// The parser was given no dimensions (every TileDB domain has at least one).
    #[error("no dimensions given")]
    NoDimensions,
    /// A fan-out below 2 was given to [`crate::RTree::build`].
    #[error("invalid R-tree fanout {fanout}: it must be at least 2")]
    InvalidFanout {
        /// The fan-out given.
        fanout: u32,
    },
    /// An MBR given by the caller does not match the dimensions.
    #[error("MBR {index} does not match the dimensions: {reason}")]
    MbrShape {
        /// Position of the MBR in the caller's input (leaf index).
        index: u64,
        /// What does not match.
        reason: String,
    },
    /// Cell coordinates given to [`crate::Mbr::of_cells`] are inconsistent.
    #[error("coordinates of dimension {dim}: {reason}")]
    InvalidCoords {
        /// Index of the dimension.
        dim: usize,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// The same error with its byte offset moved by `base`, for errors raised while parsing a
    /// sub-slice that starts `base` bytes into a larger buffer.
    #[must_use]
    pub fn at_offset(self, base: u64) -> Self {
        match self {
            Error::Truncated { field, offset, needed, available } => {
                Error::Truncated { field, offset: offset.saturating_add(base), needed, available }
            }
            Error::CountTooLarge { field, offset, count, max, available } => Error::CountTooLarge {
                field,
                offset: offset.saturating_add(base),
                count,
                max,
                available,
            },
            Error::Invalid { field, offset, reason } => {
                Error::Invalid { field, offset: offset.saturating_add(base), reason }
            }
            Error::TrailingBytes { offset, count } => {
                Error::TrailingBytes { offset: offset.saturating_add(base), count }
            }
            e => e,
        }
    }

    /// The on-disk field a decoding error is about, if any.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Error::Truncated { field, .. }
            | Error::CountTooLarge { field, .. }
            | Error::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The byte offset a decoding error is about, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Truncated { offset, .. }
            | Error::CountTooLarge { offset, .. }
            | Error::Invalid { offset, .. }
            | Error::TrailingBytes { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}
