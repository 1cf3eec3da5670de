//! The crate's error type.

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a tile could not be split, framed, encoded or decoded.
///
/// Every variant about bytes read from disk carries the byte offset where the problem was
/// found, counted from the start of the tile (or of the buffer given to a generic-tile
/// reader). Callers that know where the tile sits in its file add that position with
/// [`Error::at_offset`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A field of a structure is truncated or holds an impossible value (generic-tile header
    /// fields, the serialized pipeline of a header).
    #[error(transparent)]
    Format(#[from] tessera_types::Error),
    /// The chunk framing of a filtered tile is inconsistent.
    #[error("tile framing: {}{field} at offset {offset}: {reason}", chunk_prefix(*.chunk))]
    Framing {
        /// Index of the chunk being read, `None` for tile-level fields (`num_chunks`, trailing
        /// bytes).
        chunk: Option<u64>,
        /// The field: `num_chunks`, `orig_len`, `filtered_len`, `metadata_len`, `metadata`,
        /// `data` or `end of tile`.
        field: &'static str,
        /// Byte offset of the field within the tile.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The filter pipeline failed to decode one chunk.
    #[error("tile chunk {chunk} (framed at offset {offset}): cannot decode")]
    DecodeChunk {
        /// Index of the chunk.
        chunk: usize,
        /// Byte offset of the chunk's `orig_len` field within the tile.
        offset: u64,
        /// The filter's error.
        #[source]
        source: tessera_filters::Error,
    },
    /// The filter pipeline failed to encode one chunk.
    #[error("tile chunk {chunk} (unfiltered bytes from offset {offset}): cannot encode")]
    EncodeChunk {
        /// Index of the chunk.
        chunk: usize,
        /// Byte offset of the chunk within the unfiltered tile.
        offset: u64,
        /// The filter's error.
        #[source]
        source: tessera_filters::Error,
    },
    /// A chunk decoded to a different number of bytes than its `orig_len` says.
    #[error(
        "tile chunk {chunk} (framed at offset {offset}): decoded to {actual} bytes, orig_len is {expected}"
    )]
    ChunkLength {
        /// Index of the chunk.
        chunk: usize,
        /// Byte offset of the chunk's `orig_len` field within the tile.
        offset: u64,
        /// The chunk's `orig_len`.
        expected: u64,
        /// Bytes the pipeline produced.
        actual: u64,
    },
    /// A filter pipeline could not be set up (invalid options, a filter that does not apply
    /// to the tile's datatype, a filter Tessera does not implement).
    #[error(transparent)]
    Filter(#[from] tessera_filters::Error),
    /// The unfiltered size of a tile differs from what its header or the caller expects.
    #[error("{structure}: unfiltered size is {actual} bytes, expected {expected}")]
    SizeMismatch {
        /// The structure (`"generic tile"`, `"tile"`, `"offsets tile"`...).
        structure: &'static str,
        /// The size announced by the header or the caller.
        expected: u64,
        /// The sum of the chunks' `orig_len` (or the decoded length).
        actual: u64,
    },
    /// Cell offsets of a var-sized tile are not non-decreasing or point past the data.
    #[error("{structure}: offset of cell {cell} is {value}: {reason}")]
    Offsets {
        /// `"offsets tile"` for decoded offsets, `"var tile input"` for offsets given to an
        /// encoder.
        structure: &'static str,
        /// Index of the offending cell.
        cell: u64,
        /// Its offset.
        value: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The data given to an encoder or a chunking routine cannot be written as TileDB would
    /// (a zero cell size, a chunk longer than `u32::MAX`, var data without offsets).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A generic tile's encryption and the key given disagree (an encrypted tile read without
    /// a key, or a plain tile read with one, which libtiledb refuses too).
    #[error("encryption: {0}")]
    Encryption(String),
    /// Valid input that Tessera does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The output buffer of a tile could not be allocated (its announced size is absurd).
    #[error("cannot allocate {bytes} bytes for {what}")]
    Allocation {
        /// What was being allocated.
        what: &'static str,
        /// The size asked for.
        bytes: u64,
    },
}

fn chunk_prefix(chunk: Option<u64>) -> String {
    match chunk {
        Some(i) => format!("chunk {i}: "),
        None => String::new(),
    }
}

impl Error {
    /// The same error with every byte offset it carries moved by `base`: use it to report
    /// offsets within a file when the tile started at `base`.
    #[must_use]
    pub fn at_offset(self, base: u64) -> Self {
        match self {
            Error::Format(e) => Error::Format(e.at_offset(base)),
            Error::Framing { chunk, field, offset, reason } => {
                Error::Framing { chunk, field, offset: offset + base, reason }
            }
            Error::DecodeChunk { chunk, offset, source } => {
                Error::DecodeChunk { chunk, offset: offset + base, source }
            }
            Error::ChunkLength { chunk, offset, expected, actual } => {
                Error::ChunkLength { chunk, offset: offset + base, expected, actual }
            }
            Error::Filter(tessera_filters::Error::Format(e)) => {
                Error::Filter(tessera_filters::Error::Format(e.at_offset(base)))
            }
            e => e,
        }
    }

    /// The byte offset the error points at, when it has one (see [`Error::at_offset`]).
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Format(
                tessera_types::Error::Truncated { offset, .. }
                | tessera_types::Error::Invalid { offset, .. },
            )
            | Error::Filter(tessera_filters::Error::Format(
                tessera_types::Error::Truncated { offset, .. }
                | tessera_types::Error::Invalid { offset, .. },
            ))
            | Error::Framing { offset, .. }
            | Error::DecodeChunk { offset, .. }
            | Error::ChunkLength { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    pub(crate) fn framing(
        chunk: Option<u64>,
        field: &'static str,
        offset: usize,
        reason: impl Into<String>,
    ) -> Self {
        Error::Framing { chunk, field, offset: offset as u64, reason: reason.into() }
    }
}
