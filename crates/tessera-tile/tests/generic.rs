//! Generic tiles, against files written by libtiledb 2.30.

mod common;

use common::{filter_available, fixture, is_unsupported};
use tessera_filters::{Filter, FilterPipeline};
use tessera_tile::{
    Error, GENERIC_TILE_BASE_SIZE, GenericTileHeader, GenericTiles, TileLayout, read_generic_tile,
    read_generic_tile_at, read_generic_tile_with_key, read_generic_tiles, write_generic_tile,
    write_generic_tile_with, write_generic_tile_with_key,
};
use tessera_types::{Datatype, EncryptionKey, EncryptionType};

/// Decompressed schema of the golden array `a1`, as `docs/format/schema.md` prints it.
const A1_PAYLOAD: &str = "16000000 00 00 00 00 1027000000000000 | \
    00000100 01000000 02 05000000 02 ffffffff | 00000100 01000000 02 05000000 02 ffffffff | \
    00000100 01000000 04 05000000 04 ffffffff | 01000000 | \
    01000000 64 00 01000000 00000100 00000000 0800000000000000 01000000 04000000 00 04000000 | \
    01000000 | 01000000 61 00 01000000 00000100 00000000 \
    0400000000000000 00000080 00 00 00 00000000 | 00000000 | 00000000 | 00000000 01";

/// The header of `a1`'s schema file and its pipeline (`docs/format/filters.md`, "Generic
/// tiles").
const A1_HEADER: &str = "16000000 6d00000000000000 a700000000000000 04 0100000000000000 00 12000000 \
    00000100 01000000 01 05000000 01 01000000";

/// Bytes of a hex dump with spaces and `|` separators.
fn unhex(s: &str) -> Vec<u8> {
    let digits: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    hex::decode(digits).unwrap()
}

fn gzip() -> bool {
    filter_available(Filter::gzip(1), Datatype::Char)
}

#[test]
fn golden_a1_header() {
    let file = fixture("a1_schema.tdb");
    assert_eq!(file.len(), 34 + 18 + 109);
    let (h, end) = GenericTileHeader::parse(&file).unwrap();
    assert_eq!(end, 161);
    assert_eq!(
        (h.version, h.persisted_size, h.tile_size, h.datatype, h.cell_size),
        (22, 109, 167, Datatype::Char, 1)
    );
    assert_eq!((h.encryption_type, h.filter_pipeline_size), (EncryptionType::NoEncryption, 18));
    assert_eq!(h.pipeline, FilterPipeline::generic_tile());
    assert_eq!((h.header_len(), h.total_len()), (52, 161));
    assert_eq!(h.to_bytes(), unhex(A1_HEADER));
    assert_eq!(h.to_bytes(), file[..52]);
    // Tile data: one chunk, orig 167, filtered 73, metadata 16.
    let layout = TileLayout::parse(&file[52..]).unwrap();
    let c = &layout.chunks()[0];
    assert_eq!(
        (layout.num_chunks(), c.orig_len, c.filtered_len(), c.metadata_len()),
        (1, 167, 73, 16)
    );
    assert_eq!(file[52 + 20..52 + 36], unhex("00000000 01000000 a7000000 49000000"));
}

#[test]
fn golden_a1_payload_round_trip() {
    let file = fixture("a1_schema.tdb");
    let payload = match read_generic_tile(&file) {
        Ok(p) => p,
        Err(e) if is_unsupported(&e) => return eprintln!("skipped: {e}"),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(payload, unhex(A1_PAYLOAD));
    if gzip() {
        assert_eq!(write_generic_tile(&payload, 22).unwrap(), file);
    }
}

/// A 70102-byte metadata payload: chunks of 65536 and 4566 bytes (libtiledb).
#[test]
fn chunked_metadata_tile() {
    let file = fixture("m1_meta.tdb");
    let (h, end) = GenericTileHeader::parse(&file).unwrap();
    assert_eq!((h.tile_size, end), (70102, file.len() as u64));
    let layout = TileLayout::parse(&file[52..]).unwrap();
    let lens: Vec<u32> = layout.chunks().iter().map(|c| c.orig_len).collect();
    assert_eq!(lens, [65536, 4566]);
    match read_generic_tile(&file) {
        Ok(payload) => {
            assert_eq!(payload.len(), 70102);
            // Sorted keys: Python's deletion of `__np_flat_big` comes first (del = 1).
            assert_eq!(&payload[..18], b"\x0d\x00\x00\x00__np_flat_big\x01");
            if gzip() {
                assert_eq!(write_generic_tile(&payload, 22).unwrap(), file);
            }
        }
        Err(e) if is_unsupported(&e) => eprintln!("skipped: {e}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn back_to_back_fixture_tiles() {
    let mut buf = fixture("a1_schema.tdb");
    buf.extend(fixture("m1_meta.tdb"));
    buf.extend(b"footer, not a generic tile");
    match read_generic_tiles(&buf, 0, 2) {
        Ok((tiles, end)) => {
            assert_eq!(end, 161 + 699);
            assert_eq!(tiles[1].payload.len(), 70102);
        }
        Err(e) if is_unsupported(&e) => eprintln!("skipped: {e}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn uncompressed_generic_tiles() {
    let none = FilterPipeline::default();
    let payload: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let tile = write_generic_tile_with(&payload, 22, &none).unwrap();
    let (h, end) = GenericTileHeader::parse(&tile).unwrap();
    assert_eq!((h.filter_pipeline_size, h.tile_size, end), (8, 70_000, tile.len() as u64));
    let lens: Vec<u32> =
        TileLayout::parse(&tile[42..]).unwrap().chunks().iter().map(|c| c.orig_len).collect();
    assert_eq!(lens, [65536, 4464]);
    assert_eq!(read_generic_tile(&tile).unwrap(), payload);

    // Chunked at 65536 even when the pipeline's max_chunk_size is 0, as libtiledb does.
    let unchunked = FilterPipeline { max_chunk_size: 0, ..none.clone() };
    let t = write_generic_tile_with(&payload, 22, &unchunked).unwrap();
    assert_eq!(TileLayout::parse(&t[42..]).unwrap().num_chunks(), 2);

    // An empty payload has no chunks at all.
    let empty = write_generic_tile_with(&[], 22, &none).unwrap();
    assert_eq!(empty.len(), 34 + 8 + 8);
    assert!(read_generic_tile(&empty).unwrap().is_empty());

    // Several back to back, then a footer.
    let small = write_generic_tile_with(b"hello", 22, &none).unwrap();
    let mut buf = tile.clone();
    buf.extend(&small);
    buf.extend(&empty);
    let footer_at = buf.len() as u64;
    buf.extend(b"FOOTER");
    let (tiles, end) = read_generic_tiles(&buf, 0, 3).unwrap();
    assert_eq!(end, footer_at);
    assert_eq!(tiles[1].payload, b"hello");
    let mut it = GenericTiles::new(&buf);
    let offsets: Vec<u64> = it.by_ref().take(3).map(|t| t.unwrap().0).collect();
    assert_eq!(offsets, [0, tile.len() as u64, (tile.len() + small.len()) as u64]);
    assert_eq!(it.position(), footer_at);
    // Going on into the footer fails, then the iterator stops.
    assert!(it.next().unwrap().is_err());
    assert!(it.next().is_none());
    let (second, end) = read_generic_tile_at(&buf, tile.len() as u64).unwrap();
    assert_eq!(
        (second.payload.as_slice(), end),
        (&b"hello"[..], (tile.len() + small.len()) as u64)
    );
}

#[test]
fn encrypted_header_parses_but_needs_a_key() {
    let pipeline = FilterPipeline::new(vec![Filter::gzip(1), Filter::EncryptionAes256Gcm]);
    let header = GenericTileHeader {
        version: 22,
        persisted_size: 8,
        tile_size: 0,
        datatype: Datatype::Char,
        cell_size: 1,
        encryption_type: EncryptionType::Aes256Gcm,
        filter_pipeline_size: 23,
        pipeline: pipeline.clone(),
    };
    let mut bytes = header.to_bytes();
    assert_eq!(bytes.len(), 34 + 23);
    bytes.extend([0u8; 8]);
    let (parsed, end) = GenericTileHeader::parse(&bytes).unwrap();
    assert_eq!(parsed, header);
    assert_eq!(end, bytes.len() as u64);
    let e = read_generic_tile(&bytes).unwrap_err();
    assert!(matches!(e, Error::Encryption(_)), "{e}");
    assert!(e.to_string().contains("AES-256-GCM: an encryption key is needed"), "{e}");
}

#[test]
fn encrypted_generic_tiles_round_trip_and_refuse_wrong_keys() {
    let key = EncryptionKey::parse("0123456789abcdeF0123456789abcdeF").unwrap();
    let other = EncryptionKey::from_bytes(&[7; 32]).unwrap();
    let payload: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    let file = write_generic_tile_with_key(&payload, 22, Some(&key)).unwrap();
    let (h, end) = GenericTileHeader::parse(&file).unwrap();
    assert_eq!((h.encryption_type, h.filter_pipeline_size), (EncryptionType::Aes256Gcm, 23));
    assert_eq!(h.pipeline.filters, [Filter::gzip(1), Filter::EncryptionAes256Gcm]);
    assert_eq!(end, file.len() as u64);
    assert_eq!(read_generic_tile_with_key(&file, Some(&key)).unwrap(), payload);
    // Two writes differ (fresh IVs) but both decrypt.
    let again = write_generic_tile_with_key(&payload, 22, Some(&key)).unwrap();
    assert_ne!(again, file);
    assert_eq!(read_generic_tile_with_key(&again, Some(&key)).unwrap(), payload);
    let e = read_generic_tile_with_key(&file, Some(&other)).unwrap_err();
    let chain = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    assert!(chain.contains("fails authentication (wrong encryption key"), "{chain}");
    let e = read_generic_tile(&file).unwrap_err();
    assert!(matches!(e, Error::Encryption(_)), "{e}");
    let plain = write_generic_tile(&payload, 22).unwrap();
    let e = read_generic_tile_with_key(&plain, Some(&key)).unwrap_err();
    assert!(e.to_string().contains("not encrypted, but an encryption key was given"), "{e}");
    // Flipped tag bits, flipped ciphertext and truncation: errors, never garbage.
    let tag_at = h.header_len() as usize + 8 + 12 + 8 + 8 + 12;
    for at in [tag_at, file.len() - 1] {
        let mut bad = file.clone();
        bad[at] ^= 0x10;
        assert!(read_generic_tile_with_key(&bad, Some(&key)).is_err(), "flip at {at}");
    }
    for cut in [file.len() - 1, file.len() / 2, 40] {
        assert!(read_generic_tile_with_key(&file[..cut], Some(&key)).is_err(), "cut at {cut}");
    }
}

#[test]
fn corrupt_headers() {
    let file = write_generic_tile_with(b"some payload", 22, &FilterPipeline::default()).unwrap();
    // Every truncation is an error; none panics.
    for cut in 0..file.len() {
        assert!(read_generic_tile(&file[..cut]).is_err(), "cut at {cut}");
    }
    // Exact cases.
    let e = GenericTileHeader::parse(&file[..20]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Format(tessera_types::Error::Truncated { field: "datatype", offset: 20, .. })
        ),
        "{e}"
    );
    let e = read_generic_tile(&file[..file.len() - 1]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Format(tessera_types::Error::Truncated { field: "tile data", offset: 42, .. })
        ),
        "{e}"
    );
    let mut bad = file.clone();
    bad[20] = 200;
    assert!(matches!(
        read_generic_tile(&bad),
        Err(Error::Format(tessera_types::Error::Invalid { field: "datatype", offset: 20, .. }))
    ));
    let mut bad = file.clone();
    bad[29] = 7;
    assert_eq!(read_generic_tile(&bad).unwrap_err().offset(), Some(29));
    // filter_pipeline_size larger than the pipeline.
    let mut bad = file.clone();
    bad[30..34].copy_from_slice(&9u32.to_le_bytes());
    let e = GenericTileHeader::parse(&bad).unwrap_err();
    assert_eq!(e.offset(), Some(30), "{e}");
    // tile_size disagrees with the chunks.
    let mut bad = file.clone();
    bad[12..20].copy_from_slice(&1_000_000_000u64.to_le_bytes());
    assert!(matches!(read_generic_tile(&bad), Err(Error::SizeMismatch { .. })));
    // persisted_size inflated to the maximum.
    let mut bad = file.clone();
    bad[4..12].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(GenericTileHeader::parse(&bad).unwrap_err().offset(), Some(4));
    // A framing error inside the tile data is reported at its offset in the buffer:
    // the chunk's orig_len field is at 42 + 8; make its data overrun the tile.
    let mut bad = file.clone();
    bad[54..58].copy_from_slice(&1000u32.to_le_bytes());
    let mut buf = vec![0xee; 100];
    buf.extend(&bad);
    let e = read_generic_tile_at(&buf, 100).unwrap_err();
    assert!(matches!(e, Error::Framing { chunk: Some(0), field: "data", .. }), "{e}");
    assert_eq!(e.offset(), Some(100 + 42 + 8 + 12));
    // Bit flips anywhere: errors or (for payload bytes) other payloads, never panics.
    for i in 0..file.len() {
        for bit in 0..8 {
            let mut t = file.clone();
            t[i] ^= 1 << bit;
            let _ = read_generic_tile(&t);
            let _ = read_generic_tiles(&t, 0, 3);
        }
    }
    assert!(read_generic_tile_at(&file, u64::MAX).is_err());
    assert_eq!(GENERIC_TILE_BASE_SIZE, 34);
}

#[test]
fn gzip_generic_tiles_when_available() {
    if !gzip() {
        return eprintln!("skipped: gzip not implemented yet");
    }
    for len in [0usize, 1, 65_535, 65_536, 65_537, 200_000] {
        let payload: Vec<u8> = (0..len).map(|i| (i % 13) as u8).collect();
        let tile = write_generic_tile(&payload, 22).unwrap();
        assert_eq!(read_generic_tile(&tile).unwrap(), payload, "len {len}");
    }
    // Bit flips and truncations of a real compressed schema file never panic.
    let file = fixture("a1_schema.tdb");
    for i in 0..file.len() {
        for bit in 0..8 {
            let mut t = file.clone();
            t[i] ^= 1 << bit;
            let _ = read_generic_tile(&t);
        }
        assert!(read_generic_tile(&file[..i]).is_err());
    }
    // The empty tile written by gzip: no chunks.
    assert_eq!(write_generic_tile(&[], 22).unwrap().len(), 34 + 18 + 8);
}
