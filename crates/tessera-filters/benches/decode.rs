//! Decode throughput of every filter on ~64 MiB of representative data, chunked in 64 KiB as
//! TileDB chunks tiles, with a plain memcpy of the same bytes as the yardstick.
//!
//! Run with `cargo bench -p tessera-filters --bench decode`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tessera_filters::{EncodedChunk, Filter, FilterPipeline, PipelineCodec, Scratch};
use tessera_types::Datatype;

const TOTAL: usize = 64 << 20;
const CHUNK: usize = 65_536;

/// Sensor-like int32 series: slow drift plus small noise.
fn ints() -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut v = 1_000_000i32;
    let mut out = Vec::with_capacity(TOTAL);
    while out.len() < TOTAL {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        v += (state % 16) as i32 - 7;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// A smooth float64 signal.
fn floats() -> Vec<u8> {
    (0..TOTAL / 8).flat_map(|i| ((i as f64) * 0.001).sin().to_le_bytes()).collect()
}

fn encode_all(codec: &PipelineCodec, data: &[u8], chunk: usize) -> Vec<EncodedChunk> {
    data.chunks(chunk).map(|c| codec.encode_chunk(c).expect("encode")).collect()
}

fn bench(c: &mut Criterion) {
    let ints = ints();
    let floats = floats();
    let level = -1;
    let cases: Vec<(&str, Filter, Datatype)> = vec![
        ("none", Filter::None, Datatype::Int32),
        ("gzip", Filter::Gzip { level }, Datatype::Int32),
        ("zstd", Filter::Zstd { level }, Datatype::Int32),
        ("lz4", Filter::Lz4 { level }, Datatype::Int32),
        ("bzip2", Filter::Bzip2 { level }, Datatype::Int32),
        ("rle", Filter::Rle { level }, Datatype::Int32),
        (
            "double_delta",
            Filter::DoubleDelta { level, reinterpret: Datatype::Any },
            Datatype::Int32,
        ),
        ("delta", Filter::Delta { level, reinterpret: Datatype::Any }, Datatype::Int32),
        ("bit_width_reduction", Filter::BitWidthReduction { max_window: 256 }, Datatype::Int32),
        ("bitshuffle", Filter::Bitshuffle, Datatype::Int32),
        ("byteshuffle", Filter::Byteshuffle, Datatype::Int32),
        ("positive_delta", Filter::PositiveDelta { max_window: 1024 }, Datatype::UInt8),
        ("checksum_md5", Filter::ChecksumMd5, Datatype::Int32),
        ("checksum_sha256", Filter::ChecksumSha256, Datatype::Int32),
        ("xor", Filter::Xor, Datatype::Float64),
        (
            "scale_float",
            Filter::ScaleFloat { factor: 1e-6, offset: 0.0, byte_width: 4 },
            Datatype::Float64,
        ),
    ];

    let mut group = c.benchmark_group("decode_64MiB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(TOTAL as u64));
    group.bench_function("memcpy", |b| {
        let mut out = vec![0u8; TOTAL];
        b.iter(|| {
            out.copy_from_slice(black_box(&ints));
            black_box(&out);
        });
    });
    for (name, filter, dt) in cases {
        let data: Vec<u8> = match dt {
            Datatype::Float64 => floats.clone(),
            // positive delta needs non-decreasing values: a sorted byte ramp
            Datatype::UInt8 => (0..TOTAL).map(|i| ((i % CHUNK) / 257) as u8).collect(),
            _ => ints.clone(),
        };
        let codec = FilterPipeline::new(vec![filter]).codec(dt, dt.size(), 22).expect("codec");
        let chunks = encode_all(&codec, &data, CHUNK);
        let mut out = Vec::with_capacity(TOTAL);
        let mut scratch = Scratch::default();
        for ch in &chunks {
            codec
                .decode_chunk_with(&ch.metadata, &ch.data, &mut out, &mut scratch)
                .expect("decode");
        }
        // scale_float is lossy; every other filter must give the input back
        assert!(name == "scale_float" || out == data, "{name}: round trip differs");
        group.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                for ch in &chunks {
                    codec
                        .decode_chunk_with(&ch.metadata, &ch.data, &mut out, &mut scratch)
                        .expect("decode");
                }
                black_box(&out);
            });
        });
    }

    // The offset-free dictionary and RLE paths on 64 MiB of repetitive strings, one tile per
    // 1 MiB of strings (these tiles are not chunked).
    let words = ["GATTACA", "CCGGTTAA", "TTTT", "ACGTACGTACGT", "N"];
    for (name, filter) in [
        ("dictionary_strings", Filter::Dictionary { level }),
        ("rle_strings", Filter::Rle { level }),
    ] {
        let codec =
            FilterPipeline::new(vec![filter]).codec(Datatype::StringAscii, 1, 22).expect("codec");
        let mut tiles = Vec::new();
        let mut total = 0;
        let mut i = 0usize;
        while total < TOTAL {
            let (mut data, mut offsets) = (Vec::new(), Vec::new());
            while data.len() < 1 << 20 {
                offsets.push(data.len() as u64);
                data.extend_from_slice(words[(i / 4) % words.len()].as_bytes());
                i += 1;
            }
            total += data.len();
            tiles.push(codec.encode_strings(&data, &offsets).expect("encode"));
        }
        group.throughput(Throughput::Bytes(total as u64));
        let (mut d, mut o) = (Vec::new(), Vec::new());
        group.bench_function(name, |b| {
            b.iter(|| {
                d.clear();
                o.clear();
                for t in &tiles {
                    codec.decode_strings(&t.metadata, &t.data, &mut d, &mut o).expect("decode");
                }
                black_box((&d, &o));
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
