//! Property tests: queries against a brute-force scan of the leaves, round trips, and the
//! structure of built trees, over int, float and string dimensions.

use proptest::prelude::*;
use tessera_rtree::{DEFAULT_FANOUT, DimCoords, DimType, Level, Mbr, RTree, Range, TileOverlap};
use tessera_types::Datatype;

fn dim_type() -> impl Strategy<Value = DimType> {
    prop_oneof![
        Just(DimType::fixed(Datatype::Int64)),
        Just(DimType::fixed(Datatype::Int8)),
        Just(DimType::fixed(Datatype::UInt16)),
        Just(DimType::fixed(Datatype::DatetimeMs)),
        Just(DimType::fixed(Datatype::Float64)),
        Just(DimType::fixed(Datatype::Float32)),
        Just(DimType::string()),
    ]
}

/// One value of `dim`, from a small domain so that ranges overlap often.
fn value(dim: DimType) -> BoxedStrategy<Vec<u8>> {
    if dim.var {
        // Includes the empty string, NUL and a non-ASCII byte.
        return proptest::collection::vec(prop::sample::select(&b"ab\0z\xff"[..]), 0..4).boxed();
    }
    match dim.datatype {
        Datatype::Int8 => (-20i8..20).prop_map(|v| v.to_le_bytes().to_vec()).boxed(),
        Datatype::UInt16 => (0u16..40).prop_map(|v| v.to_le_bytes().to_vec()).boxed(),
        Datatype::Float64 => prop_oneof![
            (-40i32..40).prop_map(|v| f64::from(v) / 4.0),
            Just(-0.0f64),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
        ]
        .prop_map(|v| v.to_le_bytes().to_vec())
        .boxed(),
        Datatype::Float32 => prop_oneof![(-40i32..40).prop_map(|v| v as f32 / 4.0), Just(-0.0f32)]
            .prop_map(|v| v.to_le_bytes().to_vec())
            .boxed(),
        _ => (-20i64..20).prop_map(|v| v.to_le_bytes().to_vec()).boxed(),
    }
}

fn range(dim: DimType) -> impl Strategy<Value = Range> {
    (value(dim), value(dim)).prop_map(move |(a, b)| {
        if dim.compare(&a, &b).is_gt() { Range::new(b, a) } else { Range::new(a, b) }
    })
}

fn mbr(dims: &[DimType]) -> impl Strategy<Value = Mbr> + use<> {
    dims.iter().map(|&d| range(d)).collect::<Vec<_>>().prop_map(Mbr)
}

fn query(dims: &[DimType]) -> impl Strategy<Value = Vec<Vec<Range>>> + use<> {
    dims.iter().map(|&d| proptest::collection::vec(range(d), 0..4)).collect::<Vec<_>>()
}

type Case = (Vec<DimType>, Vec<Mbr>, u32, Vec<Vec<Vec<Range>>>);

fn case() -> impl Strategy<Value = Case> {
    proptest::collection::vec(dim_type(), 1..=3).prop_flat_map(|dims| {
        let leaves = proptest::collection::vec(mbr(&dims), 0..260);
        let fanout = prop_oneof![Just(DEFAULT_FANOUT), 2u32..6];
        let queries = proptest::collection::vec(query(&dims), 1..8);
        (Just(dims), leaves, fanout, queries)
    })
}

/// The brute-force model: scan every leaf.
fn scan(dims: &[DimType], leaves: &[Mbr], q: &[Vec<Range>]) -> Vec<TileOverlap> {
    let mut out = Vec::new();
    'leaf: for (t, leaf) in leaves.iter().enumerate() {
        let mut full = true;
        for ((r, &dim), qs) in leaf.0.iter().zip(dims).zip(q) {
            if !qs.iter().any(|x| x.overlaps(r, dim)) {
                continue 'leaf;
            }
            full &= qs.iter().any(|x| x.contains(r, dim));
        }
        out.push(TileOverlap { tile: t as u64, full });
    }
    out
}

/// Equal as values of `dims` (bytes may differ for -0.0 / 0.0).
fn same_box(dims: &[DimType], a: &Mbr, b: &Mbr) -> bool {
    a.contains(dims, b) && b.contains(dims, a)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn query_matches_brute_force((dims, leaves, fanout, queries) in case()) {
        let tree = RTree::build(&dims, &leaves, fanout).unwrap();
        for q in &queries {
            prop_assert_eq!(tree.query(&dims, q), scan(&dims, &leaves, q));
        }
        // A query made of each leaf's own bounds finds that leaf, fully.
        for (t, leaf) in leaves.iter().enumerate().take(20) {
            let q: Vec<Vec<Range>> = leaf.0.iter().map(|r| vec![r.clone()]).collect();
            let hits = tree.query(&dims, &q);
            let own = TileOverlap { tile: t as u64, full: true };
            prop_assert!(hits.contains(&own), "leaf {} not found fully", t);
            prop_assert_eq!(hits, scan(&dims, &leaves, &q));
        }
    }

    #[test]
    fn bytes_round_trip((dims, leaves, fanout, _q) in case()) {
        let tree = RTree::build(&dims, &leaves, fanout).unwrap();
        let bytes = tree.to_bytes(&dims);
        let parsed = RTree::parse(&bytes, &dims).unwrap();
        prop_assert_eq!(&parsed, &tree);
        prop_assert_eq!(parsed.to_bytes(&dims), bytes);
        prop_assert_eq!(tree.leaves().to_mbrs(), leaves.clone());
        for leaf in &leaves {
            let enc = leaf.to_bytes(&dims);
            prop_assert_eq!(enc.len(), leaf.encoded_len(&dims));
            prop_assert_eq!(Mbr::parse(&enc, &dims).unwrap(), (leaf.clone(), enc.len()));
        }
    }

    #[test]
    fn built_trees_have_libtiledb_shape((dims, leaves, fanout, _q) in case()) {
        let tree = RTree::build(&dims, &leaves, fanout).unwrap();
        let n = leaves.len();
        let expected_height = match n {
            0 => 0,
            1 => 1,
            _ => ((n as f64).ln() / f64::from(fanout).ln()).ceil() as usize + 1,
        };
        prop_assert_eq!(tree.height(), expected_height);
        let f = fanout as usize;
        for pair in tree.levels().windows(2) {
            let (up, down) = (&pair[0], &pair[1]);
            prop_assert_eq!(up.len(), down.len().div_ceil(f));
            for (i, parent) in up.iter().enumerate() {
                let parent = parent.to_mbr();
                let children: Vec<Mbr> =
                    (i * f..((i + 1) * f).min(down.len())).map(|c| down.get(c).unwrap().to_mbr()).collect();
                // The parent is exactly the bounding box of its children.
                prop_assert!(same_box(&dims, &parent, &Mbr::bounding(&dims, &children).unwrap()));
                for c in &children {
                    prop_assert!(parent.contains(&dims, c));
                }
            }
        }
        if let Some(root) = tree.root() {
            prop_assert!(same_box(&dims, &root.to_mbr(), &Mbr::bounding(&dims, &leaves).unwrap()));
        }
    }

    #[test]
    fn level_push_equals_build((dims, leaves, fanout, _q) in case()) {
        let mut level = Level::new(dims.len());
        for l in &leaves {
            level.push(&dims, l).unwrap();
        }
        prop_assert_eq!(level.len(), leaves.len());
        prop_assert_eq!(
            RTree::from_leaves(&dims, level, fanout).unwrap(),
            RTree::build(&dims, &leaves, fanout).unwrap()
        );
    }

    #[test]
    fn of_cells_bounds_every_cell(
        (dim, cells) in dim_type().prop_flat_map(|d| (Just(d), proptest::collection::vec(value(d), 1..30)))
    ) {
        let dims = [dim];
        let mbr = if dim.var {
            let mut offsets = Vec::new();
            let mut data = Vec::new();
            for c in &cells {
                offsets.push(data.len() as u64);
                data.extend_from_slice(c);
            }
            Mbr::of_cells(&dims, &[DimCoords::Var { offsets: &offsets, data: &data }]).unwrap()
        } else {
            let data = cells.concat();
            Mbr::of_cells(&dims, &[DimCoords::Fixed(&data)]).unwrap()
        };
        let r = &mbr.0[0];
        // Both bounds are cells, and every cell lies inside.
        prop_assert!(cells.contains(&r.low) && cells.contains(&r.high));
        for c in &cells {
            prop_assert!(r.contains(&Range::point(c.clone()), dim));
        }
        // The earliest of equal minima / maxima is kept.
        let first_min = cells.iter().find(|c| dim.compare(c, &r.low).is_eq()).unwrap();
        let first_max = cells.iter().find(|c| dim.compare(c, &r.high).is_eq()).unwrap();
        prop_assert_eq!(first_min, &r.low);
        prop_assert_eq!(first_max, &r.high);
    }
}
