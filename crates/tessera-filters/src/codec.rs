//! The interface every filter implements.

use tessera_types::Datatype;

use crate::Result;

/// What a filter needs to know about the stage it runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterContext {
    /// The datatype this stage sees: the field's type for the first filter, then each filter's
    /// output type (DELTA, DOUBLE_DELTA, SCALE_FLOAT and XOR change it).
    pub datatype: Datatype,
    /// The tile's cell size in bytes (type size × cell_val_num for fixed tiles, the type size
    /// for var data tiles, 8 for offsets, 1 for validity); RLE runs over values of this width.
    pub cell_size: usize,
    /// Format version of the tile being processed; some filters changed with it.
    pub version: u32,
}

/// A chunk on its way through the forward pipeline: metadata and data, each split into parts
/// exactly as libtiledb's `FilterBuffer`s are, because some filters record the part structure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    /// Metadata parts, first to last (a filter prepends its own header as a new first part).
    pub metadata: Vec<Vec<u8>>,
    /// Data parts, first to last.
    pub data: Vec<Vec<u8>>,
}

impl Parts {
    /// The input of the first filter: one data part, no metadata.
    pub fn from_data(data: Vec<u8>) -> Self {
        Parts { metadata: Vec::new(), data: vec![data] }
    }

    /// Total bytes of all data parts.
    pub fn data_len(&self) -> usize {
        self.data.iter().map(Vec::len).sum()
    }

    /// Total bytes of all metadata parts.
    pub fn metadata_len(&self) -> usize {
        self.metadata.iter().map(Vec::len).sum()
    }
}

/// The output of one reverse step, appended to by the filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Metadata left for the previous filter (what this filter did not consume, or what it
    /// decompressed).
    pub metadata: Vec<u8>,
    /// The data as the previous filter produced it.
    pub data: Vec<u8>,
}

impl Decoded {
    /// Empties both buffers, keeping their capacity.
    pub fn clear(&mut self) {
        self.metadata.clear();
        self.data.clear();
    }
}

/// One filter stage, with its options already validated (built once by
/// [`crate::Filter::codec`]).
pub trait FilterCodec: Send + Sync + std::fmt::Debug {
    /// Forward (write path): transforms `input` into this stage's output parts, the way
    /// libtiledb's `run_forward` does.
    ///
    /// # Errors
    /// When the data cannot be encoded by this filter.
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts>;

    /// Reverse (read path): consumes this filter's header from the front of `metadata` and
    /// appends the previous stage's metadata and data to `out`. Bytes already in `out` are
    /// left untouched.
    ///
    /// # Errors
    /// When the metadata or data are truncated or inconsistent.
    fn decode(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()>;

    /// A cheap upper bound of the decoded data length, when the metadata tells it.
    fn decoded_len_hint(&self, _metadata: &[u8], data: &[u8]) -> Option<usize> {
        Some(data.len())
    }
}
