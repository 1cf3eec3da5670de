//! Footers and metadata files of the older format versions Tessera reads (10 to 21), built by
//! rewriting a libtiledb fragment with the fields each version has, then parsed back.

use std::path::PathBuf;

use tessera_fragment::{
    Error, Footer, FragmentMetadata, LazyPart, ProcessedConditions, footer_range,
    parse_footer_length,
};
use tessera_schema::ArraySchema;

fn fixture() -> (ArraySchema, FragmentMetadata) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sparse_nulls");
    let frag = std::fs::read_dir(dir.join("__fragments")).unwrap().next().unwrap().unwrap().path();
    let bytes = std::fs::read(frag.join("__fragment_metadata.tdb")).unwrap();
    let n = bytes.len();
    let len = parse_footer_length(&bytes[n - 8..]).unwrap();
    let r = footer_range(n as u64, len).unwrap();
    let (_, name) = Footer::peek_schema_name(&bytes[r.start as usize..r.end as usize]).unwrap();
    let schema =
        ArraySchema::parse_file(&std::fs::read(dir.join("__schema").join(name)).unwrap()).unwrap();
    let md = FragmentMetadata::parse_all(&bytes, &schema).unwrap();
    (schema, md)
}

/// The fixture as a fragment of format `version`.
fn as_version(md: &FragmentMetadata, version: u32) -> FragmentMetadata {
    let mut m = md.clone();
    m.footer.version = version;
    if version < 11 {
        m.tile_mins.clear();
        m.tile_maxs.clear();
        m.tile_sums.clear();
        m.tile_null_counts.clear();
    }
    if version < 12 {
        m.fragment_stats = None;
    }
    m.footer.offsets.fragment_stats = (version == 11).then_some(0);
    if version < 15 {
        m.processed_conditions = None;
    } else {
        m.processed_conditions = Some(ProcessedConditions(vec!["__commits/x.del".into()]));
    }
    m
}

#[test]
fn versions_10_to_22_round_trip() {
    let (schema, md) = fixture();
    for version in 10..=22 {
        let m = as_version(&md, version);
        let bytes = m.to_bytes(&schema).unwrap();
        let back = FragmentMetadata::parse_all(&bytes, &schema)
            .unwrap_or_else(|e| panic!("version {version}: {e}"));
        assert_eq!(back.to_bytes(&schema).unwrap(), bytes, "version {version}");
        assert_eq!(back.footer.version, version);
        assert_eq!(back.tile_mins, m.tile_mins, "version {version}");
        assert_eq!(back.fragment_stats, m.fragment_stats, "version {version}");
        assert_eq!(back.processed_conditions, m.processed_conditions, "version {version}");
        assert_eq!(back.tile_offsets, m.tile_offsets);

        // The footer shrinks with the version: no flags before 14/15, no min/max offsets
        // before 11, no processed-conditions offset before 16.
        let f = &back.footer;
        let n = bytes.len() as u64;
        let footer_len = parse_footer_length(&bytes[bytes.len() - 8..]).unwrap();
        let r = footer_range(n, footer_len).unwrap();
        let num = f.layout(&schema).num() as u64;
        let ned = 4 * 8; // two int64 dimensions
        let expected = 4
            + 8
            + f.schema_name.len() as u64
            + 2
            + ned
            + 16
            + u64::from(version >= 14)
            + u64::from(version >= 15)
            + 3 * 8 * num
            + 8
            + 4 * 8 * num
            + if version >= 11 { 4 * 8 * num + 8 } else { 0 }
            + if version >= 16 { 8 } else { 0 };
        assert_eq!(r.end - r.start, expected, "version {version}");
        assert_eq!(f.part_offset(LazyPart::TileMins(0)).is_some(), version >= 11);
        assert_eq!(f.part_offset(LazyPart::FragmentStats).is_some(), version >= 12);
        assert_eq!(f.part_offset(LazyPart::ProcessedConditions).is_some(), version >= 16);
        for (part, _) in f.parts() {
            assert!(f.part_range(part, r.start).is_ok(), "version {version} {part}");
        }
        assert!(f.part_range(LazyPart::TileMins(num as usize), r.start).is_err());
    }
}

#[test]
fn unsupported_versions() {
    let (schema, md) = fixture();
    let mut footer = Vec::new();
    md.footer.write(&schema, &mut footer).unwrap();
    for v in [0u32, 1, 9, 23, 1000] {
        let mut b = footer.clone();
        b[..4].copy_from_slice(&v.to_le_bytes());
        let e = Footer::parse(&b, &schema).unwrap_err();
        assert!(matches!(e, Error::UnsupportedVersion { version, .. } if version == v), "{e}");
        assert!(Footer::peek_schema_name(&b).is_err());
        let mut f = md.footer.clone();
        f.version = v;
        assert!(f.write(&schema, &mut Vec::new()).is_err());
    }
    let (v, name) = Footer::peek_schema_name(&footer).unwrap();
    assert_eq!((v, name.as_str()), (22, md.footer.schema_name.as_str()));
}

#[test]
fn writer_checks_shapes() {
    let (schema, md) = fixture();
    let mut f = md.footer.clone();
    f.file_sizes.pop();
    assert!(matches!(f.write(&schema, &mut Vec::new()), Err(Error::Invalid(_))));
    let mut m = md.clone();
    m.tile_sums.pop();
    assert!(m.to_bytes(&schema).is_err());
    let mut f = md.footer.clone();
    f.schema_name.clear();
    assert!(f.write(&schema, &mut Vec::new()).is_err());
    let mut f = md.footer.clone();
    f.non_empty_domain = None;
    let mut out = Vec::new();
    f.write(&schema, &mut out).unwrap();
    let back = Footer::parse(&out, &schema).unwrap();
    assert_eq!(back.non_empty_domain, None);
}
