//! WebP tiles: `testdata/webp/` (dense 2-D uint8 arrays libtiledb 2.30 wrote through
//! tiledb-py's WebpFilter, see `xtask/fixtures/gen_webp.py`) read equal to libtiledb's own
//! read of them, lossless ones equal to the pixels written; and lossless arrays Tessera
//! writes read back exactly.

use crate::common;

use std::sync::Arc;

use common::*;
use serde_json::Value as Json;
use tessera_filters::{Filter, FilterPipeline};
use tessera_query::Array;
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, MemoryStorage, Storage};
use tessera_types::{ArrayType, Datatype, WebpInputFormat};

fn manifest() -> serde_json::Map<String, Json> {
    let text = std::fs::read_to_string(testdata().join("webp/manifest.json")).unwrap();
    serde_json::from_str::<Json>(&text).unwrap().as_object().unwrap().clone()
}

fn read_pixels(storage: Arc<dyn Storage>) -> Vec<u8> {
    let array = Array::open(storage).unwrap();
    let result = array.read().attributes(["rgb"]).execute().unwrap();
    result.values::<u8>("rgb").unwrap().into_owned()
}

#[test]
fn libtiledb_webp_arrays_read_equal() {
    let m = manifest();
    assert_eq!(m.len(), 7);
    for (name, info) in &m {
        let got = read_pixels(Arc::new(LocalStorage::new(testdata().join("webp").join(name))));
        let want = std::fs::read(testdata().join(format!("webp/{name}.expected.bin"))).unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        let differing = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(
            differing,
            0,
            "{name}: {differing} of {} bytes differ from libtiledb",
            got.len()
        );
        if info["lossless"] == true {
            let written =
                std::fs::read(testdata().join(format!("webp/{name}.written.bin"))).unwrap();
            assert_eq!(got, written, "{name}");
        }
    }
}

#[test]
fn tessera_writes_lossless_webp_and_refuses_lossy() {
    for (format, depth) in [
        (WebpInputFormat::Rgb, 3),
        (WebpInputFormat::Bgr, 3),
        (WebpInputFormat::Rgba, 4),
        (WebpInputFormat::Bgra, 4),
    ] {
        for lossless in [true, false] {
            let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
            let webp = Filter::Webp { quality: 100.0, format, lossless, y_extent: 0, x_extent: 0 };
            let schema = ArraySchema::builder(ArrayType::Dense)
                .dimension(Dimension::new("y", Datatype::UInt32).domain_i64(0, 9).tile_i64(5))
                .dimension(
                    Dimension::new("x", Datatype::UInt32)
                        .domain_i64(0, 6 * depth - 1)
                        .tile_i64(3 * depth),
                )
                .attribute(
                    Attribute::new("rgb", Datatype::UInt8).filters(FilterPipeline::new(vec![webp])),
                )
                .build()
                .unwrap();
            Array::create(storage.clone(), &schema, &[]).unwrap();
            let array = Array::open(storage.clone()).unwrap();
            let n = 10 * 6 * depth as usize;
            let pixels: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8 | 1).collect();
            let res = array
                .write()
                .range_i64("y", 0, 9)
                .range_i64("x", 0, 6 * depth - 1)
                .values("rgb", &pixels)
                .timestamp(1)
                .submit();
            if lossless {
                res.unwrap();
                assert_eq!(read_pixels(storage), pixels, "{format:?}");
            } else {
                let e = res.unwrap_err();
                let chain =
                    std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(": ");
                assert!(chain.contains("lossy WebP encoding"), "{format:?}: {chain}");
            }
        }
    }
}
