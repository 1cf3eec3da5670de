//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use tessera_filters::{Filter, FilterPipeline};
use tessera_types::Datatype;

/// A fixture under `tests/data/` (see `gen_fixtures.py`).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether an error comes from a filter Tessera does not implement yet.
pub fn is_unsupported(e: &tessera_tile::Error) -> bool {
    use tessera_filters::Error::Unsupported;
    matches!(
        e,
        tessera_tile::Error::Unsupported(_)
            | tessera_tile::Error::Filter(Unsupported(_))
            | tessera_tile::Error::DecodeChunk { source: Unsupported(_), .. }
            | tessera_tile::Error::EncodeChunk { source: Unsupported(_), .. }
    )
}

/// Whether `filter` runs in this build (the filters are being written concurrently).
pub fn filter_available(filter: Filter, datatype: Datatype) -> bool {
    let p = FilterPipeline::new(vec![filter]);
    match p.codec(datatype, datatype.size(), 22) {
        Ok(c) => c.encode_chunk(&vec![0u8; datatype.size() * 4]).is_ok(),
        Err(_) => false,
    }
}

/// Frames raw chunks as an empty pipeline does (`orig_len == filtered_len`, no metadata).
pub fn raw_tile(data: &[u8], chunk_lens: &[usize]) -> Vec<u8> {
    let mut out = (chunk_lens.len() as u64).to_le_bytes().to_vec();
    let mut at = 0;
    for &n in chunk_lens {
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&data[at..at + n]);
        at += n;
    }
    assert_eq!(at, data.len());
    out
}

/// `(orig_len, filtered_len, metadata_len)` of every chunk of a tile.
pub fn chunk_table(tile: &[u8]) -> Vec<(u32, usize, usize)> {
    tessera_tile::TileLayout::parse(tile)
        .unwrap()
        .chunks()
        .iter()
        .map(|c| (c.orig_len, c.filtered_len(), c.metadata_len()))
        .collect()
}

/// Offsets and bytes of var cells of the given lengths, cell `i` filled with `b'a' + i % 26`.
pub fn var_cells(lens: &[usize]) -> (Vec<u64>, Vec<u8>) {
    let mut offsets = Vec::with_capacity(lens.len());
    let mut data = Vec::new();
    for (i, &n) in lens.iter().enumerate() {
        offsets.push(data.len() as u64);
        data.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, n));
    }
    (offsets, data)
}
