//! Placeholder until the filter lands (being written now).

use crate::{Error, Parts, Result};

pub(crate) fn encode_strings(_data: &[u8], _offsets: &[u64]) -> Result<Parts> {
    Err(Error::Unsupported("not implemented yet".into()))
}

pub(crate) fn decode_strings(
    _metadata: &[u8],
    _data: &[u8],
    _out_data: &mut Vec<u8>,
    _out_offsets: &mut Vec<u64>,
) -> Result<()> {
    Err(Error::Unsupported("not implemented yet".into()))
}
