//! The filters themselves, one module per filter (or per family sharing a framing).

use tessera_types::FilterType;

use crate::{Error, Filter, FilterCodec, Result};

pub(crate) mod aes;
pub(crate) mod bit_width_reduction;
pub(crate) mod bitshuffle;
pub(crate) mod byteshuffle;
pub(crate) mod bzip2;
pub(crate) mod checksum;
pub(crate) mod compression;
pub(crate) mod delta;
pub(crate) mod dictionary;
pub(crate) mod double_delta;
pub(crate) mod gzip;
pub(crate) mod lz4;
pub(crate) mod noop;
pub(crate) mod positive_delta;
pub(crate) mod rle;
pub(crate) mod scale_float;
pub(crate) mod util;
pub(crate) mod webp;
pub(crate) mod xor;
pub(crate) mod zstd;

/// The codec for `filter` (see [`Filter::codec`]).
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    match filter.filter_type() {
        FilterType::None => noop::build(filter),
        FilterType::Gzip
        | FilterType::Zstd
        | FilterType::Lz4
        | FilterType::Rle
        | FilterType::Bzip2
        | FilterType::DoubleDelta
        | FilterType::Delta
        | FilterType::Dictionary => compression::build(filter),
        FilterType::BitWidthReduction => bit_width_reduction::build(filter),
        FilterType::Bitshuffle => bitshuffle::build(filter),
        FilterType::Byteshuffle => byteshuffle::build(filter),
        FilterType::PositiveDelta => positive_delta::build(filter),
        FilterType::ChecksumMd5 | FilterType::ChecksumSha256 => checksum::build(filter),
        FilterType::ScaleFloat => scale_float::build(filter),
        FilterType::Xor => xor::build(filter),
        FilterType::Webp => webp::build(filter),
        // The key is not an option of the filter: see `FilterPipeline::codec_with_key`.
        FilterType::EncryptionAes256Gcm => Err(Error::KeyRequired),
    }
}
