//! The shared round trip at tile level: every filter × datatypes it applies to × tile sizes of
//! 0 cells, 1 cell, several chunks, and a size that is not a multiple of the chunk size; fixed
//! and var-sized tiles; two independently built codecs.

use tessera_filters::{Filter, FilterPipeline};
use tessera_tile::{TileCodec, VarTileCodec};
use tessera_types::{Datatype, FilterType};

/// Non-decreasing values with small steps and runs, which every filter accepts.
fn values(dt: Datatype, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * dt.size());
    for i in 0..n {
        let v = (i / 3) as i64;
        match dt {
            // integral floats, which scale_float (factor 1) stores exactly
            Datatype::Float32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            Datatype::Float64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
            _ => match dt.size() {
                1 => out.push((v * 100 / (n as i64 + 1)) as u8),
                2 => out.extend_from_slice(&((v * 30_000 / (n as i64 + 1)) as u16).to_le_bytes()),
                4 => out.extend_from_slice(&(v as u32).to_le_bytes()),
                _ => out.extend_from_slice(&(v + 1_000_000).to_le_bytes()),
            },
        }
    }
    out
}

fn applicable(f: FilterType) -> Vec<Datatype> {
    use Datatype as D;
    match f {
        FilterType::DoubleDelta | FilterType::Delta => {
            vec![D::Int8, D::UInt16, D::Int32, D::Int64, D::DatetimeNs]
        }
        FilterType::ScaleFloat => vec![D::Float32, D::Float64],
        FilterType::Dictionary | FilterType::Webp | FilterType::EncryptionAes256Gcm => vec![],
        _ => vec![D::UInt8, D::Int16, D::Int32, D::UInt64, D::Float32, D::Float64],
    }
}

#[test]
fn every_filter_round_trips_whole_tiles() {
    for &t in FilterType::ALL {
        let pipeline = FilterPipeline::new(vec![Filter::with_defaults(t)]);
        for dt in applicable(t) {
            let chunk_cells = 65_536 / dt.size();
            for cells in [0, 1, 3 * chunk_cells, 3 * chunk_cells + chunk_cells / 2 + 1] {
                let data = values(dt, cells);
                let a = TileCodec::fixed_data(&pipeline, dt, 1, 22).unwrap();
                let b = TileCodec::fixed_data(&pipeline, dt, 1, 22).unwrap();
                let tile = a.encode(&data).unwrap_or_else(|e| panic!("{t} {dt} {cells}: {e}"));
                assert!(tile == b.encode(&data).unwrap(), "{t} {dt} {cells}: not deterministic");
                assert!(b.decode(&tile).unwrap() == data, "{t} {dt} {cells}: round trip differs");
            }
        }
    }
}

#[test]
fn var_tiles_round_trip_through_every_byte_filter() {
    let offsets_pipeline = FilterPipeline::new(vec![
        Filter::PositiveDelta { max_window: 1024 },
        Filter::Zstd { level: -1 },
    ]);
    for &t in FilterType::ALL {
        // (positive delta needs non-decreasing bytes, which these strings are not)
        if matches!(
            t,
            FilterType::Webp
                | FilterType::EncryptionAes256Gcm
                | FilterType::ScaleFloat
                | FilterType::PositiveDelta
        ) {
            continue;
        }
        let pipeline = FilterPipeline::new(vec![Filter::with_defaults(t)]);
        for dt in [Datatype::StringAscii, Datatype::StringUtf8, Datatype::Blob] {
            if t == FilterType::Dictionary && dt == Datatype::Blob {
                continue;
            }
            for cells in [0usize, 1, 5000, 40_000] {
                let mut data = Vec::new();
                let mut offsets = Vec::new();
                for i in 0..cells {
                    offsets.push(data.len() as u64);
                    data.extend(std::iter::repeat_n(b'a' + (i % 7) as u8, (i / 5) % 13));
                }
                let codec = VarTileCodec::new(&pipeline, &offsets_pipeline, dt, 22).unwrap();
                let enc = codec
                    .encode(&offsets, &data)
                    .unwrap_or_else(|e| panic!("{t} {dt} {cells}: {e}"));
                let dec = codec
                    .decode(&enc.offsets, &enc.data)
                    .unwrap_or_else(|e| panic!("{t} {dt} {cells}: {e}"));
                assert!(dec.data == data, "{t} {dt} {cells}: data differs");
                assert!(dec.offsets == offsets, "{t} {dt} {cells}: offsets differ");
            }
        }
    }
}
