//! Truncated, corrupted and hostile R-tree bytes: exact errors, and never a panic.

use proptest::prelude::*;
use tessera_rtree::{DEFAULT_FANOUT, DimType, Error, Mbr, RTree, Range, TileOverlap};
use tessera_types::Datatype;

fn payload(name: &str) -> (Vec<DimType>, Vec<u8>) {
    let text = match name {
        "int64_2d" => include_str!("fixtures/int64_2d.txt"),
        "float64_2d" => include_str!("fixtures/float64_2d.txt"),
        "string_int32" => include_str!("fixtures/string_int32.txt"),
        "mixed_4d" => include_str!("fixtures/mixed_4d.txt"),
        _ => unreachable!(),
    };
    let mut dims = Vec::new();
    let mut bytes = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("dims ") {
            dims = v
                .split(' ')
                .map(|t| match t.strip_suffix(":var") {
                    Some(n) => DimType::var_sized(Datatype::from_name(n).unwrap()),
                    None => DimType::fixed(Datatype::from_name(t).unwrap()),
                })
                .collect();
        } else if let Some(v) = line.strip_prefix("payload ") {
            bytes = hex::decode(v).unwrap();
        }
    }
    (dims, bytes)
}

const FIXTURES: [&str; 4] = ["int64_2d", "float64_2d", "string_int32", "mixed_4d"];

/// Runs a few queries on a tree that parsed, checking the output is ordered and unique.
fn exercise(tree: &RTree, dims: &[DimType]) {
    let Some(root) = tree.root() else { return };
    let root = root.to_mbr();
    let whole: Vec<Vec<Range>> = root.0.iter().map(|r| vec![r.clone()]).collect();
    let points: Vec<Vec<Range>> = root
        .0
        .iter()
        .map(|r| vec![Range::point(r.low.clone()), Range::point(r.high.clone())])
        .collect();
    for q in [&whole, &points] {
        let hits = tree.query(dims, q);
        assert!(hits.windows(2).all(|w| w[0].tile < w[1].tile));
        assert!(hits.iter().all(|t| t.tile < tree.leaf_count()));
    }
    let _ = tree.leaves().to_mbrs();
}

#[test]
fn every_truncation_is_an_error() {
    for name in FIXTURES {
        let (dims, bytes) = payload(name);
        for n in 0..bytes.len() {
            let err = RTree::parse(&bytes[..n], &dims).unwrap_err();
            assert!(
                matches!(err, Error::Truncated { .. } | Error::CountTooLarge { .. }),
                "{name} cut at {n}: {err}"
            );
            assert!(err.offset().unwrap() <= n as u64, "{name} cut at {n}: {err}");
            assert!(err.field().is_some());
        }
    }
}

#[test]
fn every_bit_flip_parses_or_fails_cleanly() {
    for name in FIXTURES {
        let (dims, bytes) = payload(name);
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                match RTree::parse(&b, &dims) {
                    Ok(tree) => {
                        // A flipped value or size that still fits: the bytes round-trip.
                        assert_eq!(tree.to_bytes(&dims), b, "{name} byte {i} bit {bit}");
                        exercise(&tree, &dims);
                    }
                    Err(e) => {
                        let _ = e.to_string();
                    }
                }
            }
        }
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    let (dims, mut bytes) = payload("int64_2d");
    let len = bytes.len() as u64;
    bytes.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        RTree::parse(&bytes, &dims).unwrap_err(),
        Error::TrailingBytes { offset: len, count: 3 }
    );
}

fn header(fanout: u32, level_num: u32) -> Vec<u8> {
    let mut b = fanout.to_le_bytes().to_vec();
    b.extend_from_slice(&level_num.to_le_bytes());
    b
}

#[test]
fn counts_that_cannot_fit_are_rejected_before_allocating() {
    let dims = [DimType::fixed(Datatype::Int64)];
    // level_num = u32::MAX with nothing after it.
    let b = header(10, u32::MAX);
    assert_eq!(
        RTree::parse(&b, &dims).unwrap_err(),
        Error::CountTooLarge {
            field: "level_num",
            offset: 4,
            count: u64::from(u32::MAX),
            max: 0,
            available: 0
        }
    );
    // One level claiming u64::MAX MBRs of 16 bytes, with 40 bytes left.
    let mut b = header(10, 1);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&[0; 40]);
    assert_eq!(
        RTree::parse(&b, &dims).unwrap_err(),
        Error::CountTooLarge {
            field: "mbr_num",
            offset: 8,
            count: u64::MAX,
            max: 2,
            available: 40
        }
    );
    // Var dims: each MBR needs at least 16 bytes of sizes.
    let dims = [DimType::string()];
    let mut b = header(10, 1);
    b.extend_from_slice(&2u64.to_le_bytes());
    b.extend_from_slice(&[0; 31]);
    assert!(matches!(
        RTree::parse(&b, &dims).unwrap_err(),
        Error::CountTooLarge { field: "mbr_num", offset: 8, count: 2, max: 1, .. }
    ));
}

#[test]
fn var_sizes_are_checked() {
    let dims = [DimType::string()];
    let mut b = header(10, 1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes()); // range_size
    b.extend_from_slice(&1u64.to_le_bytes()); // start_size
    b.extend_from_slice(b"ab");
    assert_eq!(
        RTree::parse(&b, &dims).unwrap_err(),
        Error::Truncated { field: "range", offset: 32, needed: u64::MAX, available: 2 }
    );
    let mut b = header(10, 1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&2u64.to_le_bytes());
    b.extend_from_slice(&3u64.to_le_bytes());
    b.extend_from_slice(b"ab");
    assert!(matches!(
        RTree::parse(&b, &dims).unwrap_err(),
        Error::Invalid { field: "start_size", offset: 24, .. }
    ));
}

/// An int32 tree whose MBRs are `[v, v]`, or `[0, 9]` for the value 99.
fn tree_bytes(levels: &[&[i32]], fanout: u32) -> Vec<u8> {
    let mut b = header(fanout, levels.len() as u32);
    for level in levels {
        b.extend_from_slice(&(level.len() as u64).to_le_bytes());
        for &v in *level {
            let (lo, hi) = if v == 99 { (0, 9) } else { (v, v) };
            b.extend_from_slice(&lo.to_le_bytes());
            b.extend_from_slice(&hi.to_le_bytes());
        }
    }
    b
}

#[test]
fn level_sizes_must_be_those_of_a_build() {
    let dims = [DimType::fixed(Datatype::Int32)];
    // A consistent 2-level tree parses.
    assert!(RTree::parse(&tree_bytes(&[&[0], &[0, 1, 2]], 10), &dims).is_ok());
    // Root with two MBRs.
    let e = RTree::parse(&tree_bytes(&[&[0, 1]], 10), &dims).unwrap_err();
    assert!(matches!(e, Error::Invalid { field: "mbr_num", offset: 8, .. }), "{e}");
    // An empty single level.
    let e = RTree::parse(&tree_bytes(&[&[]], 10), &dims).unwrap_err();
    assert!(matches!(e, Error::CountTooLarge { .. } | Error::Invalid { .. }), "{e}");
    // 3 leaves under 2 parents with fanout 10.
    let e = RTree::parse(&tree_bytes(&[&[0], &[0, 1], &[0, 1, 2]], 10), &dims).unwrap_err();
    assert!(matches!(e, Error::Invalid { field: "mbr_num", offset: 48, .. }), "{e}");
    // 11 children under one root with fanout 10.
    let eleven: Vec<i32> = (0..11).collect();
    let e = RTree::parse(&tree_bytes(&[&[0], &eleven], 10), &dims).unwrap_err();
    assert!(matches!(e, Error::Invalid { field: "mbr_num", offset: 24, .. }), "{e}");
    // Zero fanout with two levels.
    let e = RTree::parse(&tree_bytes(&[&[0], &[0]], 0), &dims).unwrap_err();
    assert!(matches!(e, Error::Invalid { field: "fanout", offset: 0, .. }), "{e}");
    // A redundant single-MBR root level, as the f64 height formula can produce, is accepted.
    let t = RTree::parse(&tree_bytes(&[&[99], &[99], &[0, 1]], 10), &dims).unwrap();
    assert_eq!(
        t.query(&dims, &[vec![Range::from_values(1i32, 1)]]),
        [TileOverlap { tile: 1, full: true }]
    );
}

#[test]
fn no_dimensions_is_an_error() {
    assert_eq!(RTree::parse(&header(10, 0), &[]).unwrap_err(), Error::NoDimensions);
}

#[test]
fn errors_inside_a_larger_buffer_can_be_moved() {
    let dims = [DimType::fixed(Datatype::Int64)];
    let e = Mbr::parse(&[0; 10], &dims).unwrap_err().at_offset(1000);
    assert_eq!(e, Error::Truncated { field: "range", offset: 1000, needed: 16, available: 10 });
}

#[test]
fn build_then_parse_of_a_dense_tree() {
    let dims = [DimType::fixed(Datatype::Int64)];
    let t = RTree::build(&dims, &[], DEFAULT_FANOUT).unwrap();
    assert_eq!(RTree::parse(&t.to_bytes(&dims), &dims).unwrap(), t);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes, with a plausible header, never panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        level_num in 0u32..6,
        rest in proptest::collection::vec(any::<u8>(), 0..400),
        which in 0usize..3,
    ) {
        let dims = match which {
            0 => vec![DimType::fixed(Datatype::Int8)],
            1 => vec![DimType::string(), DimType::fixed(Datatype::UInt16)],
            _ => vec![DimType::fixed(Datatype::Float32), DimType::string()],
        };
        let mut b = header(2, level_num);
        b.extend_from_slice(&rest);
        if let Ok(tree) = RTree::parse(&b, &dims) {
            prop_assert_eq!(tree.to_bytes(&dims), b);
            exercise(&tree, &dims);
        }
        let _ = Mbr::parse(&rest, &dims);
    }
}
