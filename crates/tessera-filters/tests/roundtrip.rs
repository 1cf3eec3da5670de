//! The shared round-trip test: every filter × every datatype it applies to × several chunk
//! sizes, through two independently built codecs, decoding after bytes already in the output
//! buffer (which must stay untouched).

use tessera_filters::{Filter, FilterPipeline};
use tessera_types::{Datatype, FilterType, WebpInputFormat};

/// Deterministic values of `dt` that every filter accepts: non-decreasing (for positive
/// delta), small steps (for double delta and bit-width reduction), with runs (for RLE).
fn values(dt: Datatype, cell_val_num: usize, cells: usize) -> Vec<u8> {
    let n = cells * cell_val_num;
    let mut out = Vec::with_capacity(n * dt.size());
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut acc: i64 = 0;
    for i in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if i % 5 != 0 {
            acc += (state % 4) as i64; // runs where the step is 0
        }
        match dt.size() {
            // scaled so that the values never decrease and stay inside i8 / i16
            1 => out.push((acc * 127 / (2 * n as i64 + 10)) as u8),
            2 => {
                out.extend_from_slice(&((acc * 32_767 / (2 * n as i64 + 10)) as i16).to_le_bytes())
            }
            4 if dt == Datatype::Float32 => {
                out.extend_from_slice(&(acc as f32 * 0.25).to_le_bytes());
            }
            4 => out.extend_from_slice(&(acc as i32).to_le_bytes()),
            _ if dt == Datatype::Float64 => {
                out.extend_from_slice(&(acc as f64 * 0.5).to_le_bytes());
            }
            _ => out.extend_from_slice(&(acc + 1_000_000_000).to_le_bytes()),
        }
    }
    out
}

const INTEGERS: &[Datatype] = &[
    Datatype::Int8,
    Datatype::UInt8,
    Datatype::Int16,
    Datatype::UInt16,
    Datatype::Int32,
    Datatype::UInt32,
    Datatype::Int64,
    Datatype::UInt64,
    Datatype::DatetimeMs,
    Datatype::TimeNs,
];
const FLOATS: &[Datatype] = &[Datatype::Float32, Datatype::Float64];
const BYTES: &[Datatype] = &[Datatype::Char, Datatype::Blob, Datatype::Bool, Datatype::StringAscii];

fn all_types() -> Vec<Datatype> {
    INTEGERS.iter().chain(FLOATS).chain(BYTES).copied().collect()
}

/// Each filter with the datatypes it applies to.
fn cases() -> Vec<(Filter, Vec<Datatype>)> {
    let level = -1;
    vec![
        (Filter::None, all_types()),
        (Filter::Gzip { level }, all_types()),
        (Filter::Gzip { level: 9 }, vec![Datatype::Int32]),
        (Filter::Zstd { level }, all_types()),
        (Filter::Zstd { level: 19 }, vec![Datatype::Float64]),
        (Filter::Lz4 { level }, all_types()),
        (Filter::Bzip2 { level }, all_types()),
        (Filter::Rle { level }, all_types()),
        (Filter::DoubleDelta { level, reinterpret: Datatype::Any }, INTEGERS.to_vec()),
        (Filter::DoubleDelta { level, reinterpret: Datatype::UInt8 }, all_types()),
        (Filter::Delta { level, reinterpret: Datatype::Any }, INTEGERS.to_vec()),
        (
            Filter::Delta { level, reinterpret: Datatype::Int32 },
            vec![Datatype::Int64, Datatype::Float64, Datatype::Int32],
        ),
        (Filter::BitWidthReduction { max_window: 256 }, all_types()),
        (Filter::BitWidthReduction { max_window: 24 }, INTEGERS.to_vec()),
        (Filter::Bitshuffle, all_types()),
        (Filter::Byteshuffle, all_types()),
        (Filter::PositiveDelta { max_window: 1024 }, all_types()),
        (Filter::PositiveDelta { max_window: 40 }, INTEGERS.to_vec()),
        (Filter::ChecksumMd5, all_types()),
        (Filter::ChecksumSha256, all_types()),
        (Filter::Xor, all_types()),
        (Filter::ScaleFloat { factor: 0.25, offset: 0.0, byte_width: 8 }, FLOATS.to_vec()),
        (Filter::ScaleFloat { factor: 0.25, offset: 10.0, byte_width: 4 }, FLOATS.to_vec()),
        (Filter::ScaleFloat { factor: 0.25, offset: 0.0, byte_width: 2 }, vec![Datatype::Float32]),
    ]
}

/// Cell counts: empty, one cell, odd, a full 64 KiB chunk for the type, and just under it.
fn sizes(cell_size: usize) -> Vec<usize> {
    let full = 65_536 / cell_size;
    vec![0, 1, 7, 1001, full, full - 3]
}

fn round_trip(pipeline: &FilterPipeline, dt: Datatype, cell_val_num: usize) {
    round_trip_sizes(pipeline, dt, cell_val_num, &sizes(dt.size() * cell_val_num));
}

fn round_trip_sizes(pipeline: &FilterPipeline, dt: Datatype, cell_val_num: usize, sizes: &[usize]) {
    let cell_size = dt.size() * cell_val_num;
    let a = pipeline.codec(dt, cell_size, 22).unwrap();
    let b = pipeline.codec(dt, cell_size, 22).unwrap();
    for &cells in sizes {
        let input = values(dt, cell_val_num, cells);
        let what = format!("{:?} on {dt} x{cell_val_num}, {cells} cells", pipeline.filters);
        let enc_a = a.encode_chunk(&input).unwrap_or_else(|e| panic!("{what}: encode: {e}"));
        let enc_b = b.encode_chunk(&input).unwrap();
        assert_eq!(enc_a, enc_b, "{what}: two instances encode differently");
        let mut out = b"untouched".to_vec();
        b.decode_chunk(&enc_a.metadata, &enc_a.data, &mut out)
            .unwrap_or_else(|e| panic!("{what}: decode: {e}"));
        assert_eq!(&out[..9], b"untouched", "{what}: prefix changed");
        assert!(out[9..] == input[..], "{what}: round trip differs");
    }
}

#[test]
fn every_filter_round_trips_on_every_applicable_datatype() {
    for (filter, types) in cases() {
        for &dt in &types {
            round_trip(&FilterPipeline::new(vec![filter]), dt, 1);
        }
        // cell_val_num > 1: 3 values of a type the filter applies to
        let dt = if types.contains(&Datatype::Float32) { Datatype::Float32 } else { types[0] };
        round_trip(&FilterPipeline::new(vec![filter]), dt, 3);
    }
}

#[test]
fn chains_round_trip() {
    let level = -1;
    let chains: Vec<(Vec<Filter>, Datatype)> = vec![
        (
            vec![Filter::BitWidthReduction { max_window: 256 }, Filter::Zstd { level }],
            Datatype::Int32,
        ),
        (vec![Filter::Byteshuffle, Filter::Lz4 { level }], Datatype::Float64),
        (vec![Filter::ChecksumMd5, Filter::Gzip { level }], Datatype::Int16),
        (vec![Filter::Gzip { level }, Filter::ChecksumSha256], Datatype::UInt64),
        (
            vec![
                Filter::Xor,
                Filter::BitWidthReduction { max_window: 256 },
                Filter::Zstd { level },
            ],
            Datatype::Float32,
        ),
        (
            vec![
                Filter::ScaleFloat { factor: 0.5, offset: 0.0, byte_width: 4 },
                Filter::Byteshuffle,
                Filter::Zstd { level },
            ],
            Datatype::Float64,
        ),
        (
            vec![
                Filter::ChecksumMd5,
                Filter::BitWidthReduction { max_window: 64 },
                Filter::Zstd { level },
            ],
            Datatype::UInt32,
        ),
        (vec![Filter::Bitshuffle, Filter::Zstd { level }], Datatype::Int32),
        (
            vec![Filter::Delta { level, reinterpret: Datatype::Int32 }, Filter::Bzip2 { level: 9 }],
            Datatype::Int64,
        ),
        (
            vec![Filter::BitWidthReduction { max_window: 256 }, Filter::Rle { level }],
            Datatype::UInt8,
        ),
        (
            vec![Filter::None, Filter::ChecksumSha256, Filter::ChecksumMd5, Filter::Xor],
            Datatype::Int8,
        ),
    ];
    for (filters, dt) in chains {
        round_trip(&FilterPipeline::new(filters), dt, 1);
    }
    // Positive delta's window table goes through double delta as a metadata part, which (as in
    // libtiledb) only works when the table is a whole number of values: 1 window (16 bytes)
    // or 3 windows (40 bytes) of int64 here. Empty chunks never reach a pipeline: an empty
    // fixed tile has no chunks.
    let pd_dd = FilterPipeline::new(vec![
        Filter::PositiveDelta { max_window: 1024 },
        Filter::DoubleDelta { level: -1, reinterpret: Datatype::Any },
    ]);
    round_trip_sizes(&pd_dd, Datatype::Int64, 1, &[1, 100, 300]);
    let two_windows = pd_dd.codec(Datatype::Int64, 8, 22).unwrap().encode_chunk(&[0u8; 8 * 200]);
    assert!(two_windows.is_err(), "a 28-byte window table is not whole int64 values");
}

/// Var-sized strings through the offset-free RLE and DICTIONARY paths, alone and followed by
/// a compressor.
#[test]
fn string_paths_round_trip() {
    let words = ["", "a", "bb", "ccc", "dddd", "a long string with spaces", "é", "aa"];
    for dt in [Datatype::StringAscii, Datatype::StringUtf8] {
        for first in [Filter::Rle { level: -1 }, Filter::Dictionary { level: -1 }] {
            for rest in [
                vec![],
                vec![Filter::Zstd { level: -1 }],
                vec![Filter::Gzip { level: 1 }, Filter::ChecksumMd5],
            ] {
                let mut filters = vec![first];
                filters.extend(rest.iter().copied());
                let pipeline = FilterPipeline::new(filters);
                assert!(pipeline.skips_offsets_filtering(dt, 22));
                let codec = pipeline.codec(dt, 1, 22).unwrap();
                assert!(codec.is_string_path());
                for cells in [0usize, 1, 5, 300, 20_000] {
                    let mut data = Vec::new();
                    let mut offsets = Vec::new();
                    for i in 0..cells {
                        offsets.push(data.len() as u64);
                        // runs of equal strings, then a change
                        data.extend_from_slice(words[(i / 3 + i / 7) % words.len()].as_bytes());
                    }
                    let enc = codec.encode_strings(&data, &offsets).unwrap();
                    let (mut d, mut o) = (b"x".to_vec(), vec![7u64]);
                    codec.decode_strings(&enc.metadata, &enc.data, &mut d, &mut o).unwrap();
                    assert_eq!(&d[1..], &data[..], "{first:?} {rest:?} {dt} {cells}");
                    assert_eq!(&o[1..], &offsets[..], "{first:?} {rest:?} {dt} {cells}");
                }
            }
        }
    }
}

#[test]
fn pipeline_bytes_round_trip_for_every_filter() {
    let mut all: Vec<Filter> = FilterType::ALL.iter().map(|t| Filter::with_defaults(*t)).collect();
    all.push(Filter::Webp {
        quality: 75.0,
        format: WebpInputFormat::Rgb,
        lossless: false,
        y_extent: 10,
        x_extent: 30,
    });
    all.push(Filter::ScaleFloat { factor: 0.1, offset: -3.0, byte_width: 2 });
    all.push(Filter::Delta { level: 3, reinterpret: Datatype::UInt16 });
    let pipeline = FilterPipeline::new(all);
    let bytes = pipeline.to_bytes();
    assert_eq!(bytes.len(), pipeline.serialized_len());
    let (parsed, used) = FilterPipeline::parse(&bytes, 22).unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(parsed, pipeline);
    // Every strict prefix is an error, never a panic.
    for cut in 0..bytes.len() {
        assert!(FilterPipeline::parse(&bytes[..cut], 22).is_err(), "prefix {cut} parsed");
    }
}

#[test]
fn webp_lossless_round_trips_and_lossy_encoding_is_a_clear_error() {
    let webp = |lossless| {
        FilterPipeline::new(vec![Filter::Webp {
            quality: 100.0,
            format: WebpInputFormat::Rgb,
            lossless,
            y_extent: 2,
            x_extent: 6,
        }])
    };
    let codec = webp(true).codec(Datatype::UInt8, 1, 22).unwrap();
    let pixels: Vec<u8> = (0..12).map(|i| i * 20).collect();
    let enc = codec.encode_chunk(&pixels).unwrap();
    assert_eq!(&enc.data[..4], b"RIFF");
    let mut out = Vec::new();
    codec.decode_chunk(&enc.metadata, &enc.data, &mut out).unwrap();
    assert_eq!(out, pixels);
    let err = webp(false).codec(Datatype::UInt8, 1, 22).unwrap().encode_chunk(&pixels).unwrap_err();
    assert!(err.to_string().contains("lossy WebP encoding"), "{err}");
    let err = codec.decode_chunk(&[], &[0; 12], &mut Vec::new()).unwrap_err();
    assert!(err.to_string().to_lowercase().contains("webp"), "{err}");
}

#[test]
fn golden_generic_tile_pipeline_bytes() {
    // docs/format/filters.md, "Generic tiles": the generic-tile pipeline as libtiledb 2.30
    // writes it.
    let bytes = hex("00000100 01000000 01 05000000 01 01000000");
    let (p, used) = FilterPipeline::parse(&bytes, 22).unwrap();
    assert_eq!(used, 18);
    assert_eq!(p, FilterPipeline::generic_tile());
    assert_eq!(p.to_bytes(), bytes);
    // Compressor option bytes of DICTIONARY (7) and DELTA (8, with reinterpret ANY = 17).
    let dict = hex("00000100 01000000 0e 05000000 07 ffffffff");
    assert_eq!(
        FilterPipeline::parse(&dict, 22).unwrap().0.filters,
        vec![Filter::Dictionary { level: -1 }]
    );
    let delta = hex("00000100 01000000 13 06000000 08 ffffffff 11");
    assert_eq!(
        FilterPipeline::parse(&delta, 22).unwrap().0.filters,
        vec![Filter::Delta { level: -1, reinterpret: Datatype::Any }]
    );
    // A compressor byte that contradicts the filter type is rejected with its offset.
    let bad = hex("00000100 01000000 02 05000000 01 ffffffff");
    let err = FilterPipeline::parse(&bad, 22).unwrap_err().to_string();
    assert!(err.contains("offset 13"), "{err}");
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}
