//! The golden schema payload of `docs/format/schema.md`, "A worked example" (array `a1`:
//! dense, dim `d` int32 [1,4] extent 4, attribute `a` int32) parses to what libtiledb wrote
//! and writes back identically.

use tessera_filters::{Filter, FilterPipeline};
use tessera_schema::{ArraySchema, Attribute, Dimension, Error};
use tessera_types::{ArrayType, Datatype, Layout};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const A1: &str = "16000000 00 00 00 00 1027000000000000 00000100 01000000 02 05000000 02 ffffffff \
    00000100 01000000 02 05000000 02 ffffffff \
    00000100 01000000 04 05000000 04 ffffffff 01000000 01000000 64 00 01000000 00000100 00000000 \
    0800000000000000 01000000 04000000 00 04000000 01000000 01000000 61 00 01000000 00000100 00000000 \
    0400000000000000 00000080 00 00 00 00000000 00000000 00000000 00000000 01";

#[test]
fn a1_parses_and_writes_back() {
    let bytes = hex(A1);
    assert_eq!(bytes.len(), 167);
    let schema = ArraySchema::parse(&bytes).unwrap();
    assert_eq!(schema.array_type, ArrayType::Dense);
    assert_eq!(schema.capacity, 10_000);
    assert_eq!(schema.dimensions.len(), 1);
    assert_eq!(schema.dimensions[0].name, "d");
    assert_eq!(schema.dimensions[0].tile_extent.as_deref(), Some(&4i32.to_le_bytes()[..]));
    assert_eq!(schema.attributes[0].fill_value, i32::MIN.to_le_bytes());
    assert_eq!(schema.validity_filters, FilterPipeline::new(vec![Filter::Rle { level: -1 }]));
    assert_eq!(schema.current_domain, None);
    assert_eq!(schema.to_bytes(), bytes);

    // The builder makes the same schema from the user's view of it.
    let built = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("d", Datatype::Int32).domain_i64(1, 4).tile_i64(4))
        .attribute(Attribute::new("a", Datatype::Int32))
        .build()
        .unwrap();
    assert_eq!(built, schema);
}

#[test]
fn every_truncation_is_an_error_with_an_offset() {
    let bytes = hex(A1);
    for cut in 0..bytes.len() {
        match ArraySchema::parse(&bytes[..cut]) {
            Err(Error::Malformed { offset, .. }) => assert!(offset <= cut as u64),
            Err(Error::UnsupportedVersion { .. }) if cut < 4 => {}
            other => panic!("cut {cut}: {other:?}"),
        }
    }
    let mut long = bytes.clone();
    long.push(0);
    let err = ArraySchema::parse(&long).unwrap_err().to_string();
    assert!(err.contains("offset 167") && err.contains("trailing"), "{err}");
}

#[test]
fn versions_outside_the_supported_range_fail_clearly() {
    let mut bytes = hex(A1);
    bytes[0] = 23;
    let err = ArraySchema::parse(&bytes).unwrap_err().to_string();
    assert!(err.contains("format version 23"), "{err}");
}

#[test]
fn default_extent_fills_in_like_libtiledb() {
    let s = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99))
        .dimension(Dimension::new("y", Datatype::Float64).domain_f64(0.0, 1.0))
        .dimension(Dimension::new("s", Datatype::StringAscii))
        .attribute(Attribute::new("a", Datatype::StringUtf8).var())
        .cell_order(Layout::RowMajor)
        .build()
        .unwrap();
    assert_eq!(s.dimensions[0].tile_extent.as_deref(), Some(&100i64.to_le_bytes()[..]));
    assert_eq!(s.dimensions[1].tile_extent.as_deref(), Some(&1.0f64.to_le_bytes()[..]));
    assert_eq!(s.dimensions[2].tile_extent, None);
    assert_eq!(ArraySchema::parse(&s.to_bytes()).unwrap(), s);
}
