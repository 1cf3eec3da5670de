//! Fragment metadata footers of format versions 3 to 9 (`FragmentMetadata::load_footer`,
//! `get_footer_offset_and_size` and `footer_size_v3_v4` / `_v5_v6` / `_v7_v10` in libtiledb).
//!
//! The metadata file holds the same generic tiles as today's (R-tree, then per field the tile
//! offsets, var offsets, var sizes and, from version 7, validity offsets), followed by a
//! footer without the schema name:
//!
//! ```text
//! version u32 | dense u8 | null_non_empty_domain u8 | non_empty_domain
//! | sparse_tile_num u64 | last_tile_cell_num u64
//! | file_sizes N1 × u64 | file_var_sizes N2 × u64 | file_validity_sizes N × u64 (7–9)
//! | rtree_offset u64 | tile_offsets N1 × u64 | tile_var_offsets N2 × u64
//! | tile_var_sizes N2 × u64 | tile_validity_offsets N × u64 (7–9)
//! ```
//!
//! with `N = attribute_num + 1 + dim_num` from version 5 (today's field layout), and for
//! versions 3 and 4 `N1 = attribute_num + 1` (attributes, then the zipped coordinates) and
//! `N2 = attribute_num`. The non-empty domain is today's encoding (versions 3 and 4 only have
//! fixed-size dimensions of one type).
//!
//! Where the footer starts: when every dimension is fixed-size its size follows from the
//! schema, and libtiledb computes it from the *name* (a name without a format version, i.e.
//! versions 3–4, gives the version-3/4 size; versions 5–6 and 7–9 theirs); with a var-sized
//! dimension the file ends with the footer's `u64` length, as today.
//!
//! [`parse`] turns the footer into today's [`Footer`] (schema name `__array_schema.tdb`;
//! for versions 3–4 the coordinates and every dimension point at the zipped coordinates'
//! entries, parts a version lacks at [`ABSENT`]), so the engine reads it like any other.
//! The R-tree of versions 3–4 has a header of its own: [`rtree_payload`] rewrites it.

use tessera_rtree::Mbr;
use tessera_schema::ArraySchema;

use crate::footer::{Footer, GenericTileOffsets, dim_types};
use crate::parse::{PResult, parse_all, u64f, u64s};
use crate::{Error, FieldLayout, Result};

const STRUCTURE: &str = "fragment metadata footer (format 3-9)";

/// The schema every fragment of versions 3–9 was written with: the array's single schema
/// file.
pub const SCHEMA_NAME: &str = tessera_schema::previous::LEGACY_SCHEMA_FILE;

/// The generic tile offset of a part this version does not have (validity offsets before
/// version 7, var offsets of the zipped coordinates): past any file, so asking for it is a
/// clear error rather than the bytes of another part.
pub const ABSENT: u64 = u64::MAX;

/// Whether `version` has a footer of this module.
pub const fn is_v3_v9(version: u32) -> bool {
    3 <= version && version <= 9
}

/// The footer's size when the file does not store it: every dimension fixed-size. `version`
/// is the format version the fragment's *name* gives (4 for names without one, see
/// [`crate::FragmentName::format_version`]), as libtiledb picks the size by the name.
/// `None` when the footer's length is stored at the end of the file (a var-sized dimension).
pub fn fixed_footer_size(version: u32, schema: &ArraySchema) -> Option<u64> {
    if schema.dimensions.iter().any(|d| d.is_var()) {
        return None;
    }
    let dim_num = schema.dimensions.len() as u64;
    let attr_num = schema.attributes.len() as u64;
    // version, dense, null non-empty domain, sparse tile num, last tile cell num, R-tree offset
    let base = 4 + 1 + 1 + 8 + 8 + 8;
    if version <= 4 {
        let coord = schema.dimensions.first().map_or(0, |d| d.datatype.size() as u64);
        let domain = 2 * dim_num * coord;
        // file sizes and tile offsets: attributes + coords; var sizes, var offsets and var
        // tile sizes: attributes
        return Some(base + domain + 2 * 8 * (attr_num + 1) + 3 * 8 * attr_num);
    }
    let domain: u64 = schema.dimensions.iter().map(|d| 2 * d.datatype.size() as u64).sum();
    let num = attr_num + 1 + dim_num;
    let lists = if version <= 6 { 5 } else { 7 };
    Some(base + domain + lists * 8 * num)
}

/// The parts a footer of format `version` lists per field: its count and how today's field
/// `idx` maps to it (versions 3–4 share the coordinates' entry among the dimensions).
fn old_index(version: u32, layout: &FieldLayout, idx: usize) -> usize {
    if version <= 4 { idx.min(layout.attribute_num) } else { idx }
}

/// Parses a footer of format version 3 to 9 that fills `bytes` exactly, for a fragment of
/// `schema` (the array's `__array_schema.tdb`), into today's [`Footer`].
///
/// # Errors
/// [`Error::UnsupportedVersion`] for a version outside 3..=9; [`Error::Invalid`] for a
/// version 3–4 fragment whose schema has var-sized dimensions or dimensions of several types;
/// [`Error::Malformed`] naming the field and offset for truncated or impossible fields and
/// trailing bytes; [`Error::RTree`] for a malformed non-empty domain.
pub fn parse(bytes_in: &[u8], schema: &ArraySchema) -> Result<Footer> {
    let dims = dim_types(schema);
    let Some(d0) = dims.first() else {
        return Err(Error::invalid("the schema has no dimensions"));
    };
    let version = bytes_in.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let version = version.ok_or_else(|| {
        Error::malformed(STRUCTURE, "version", 0, format!("truncated ({} bytes)", bytes_in.len()))
    })?;
    if !is_v3_v9(version) {
        return Err(Error::UnsupportedVersion {
            structure: STRUCTURE,
            version,
            supported: "versions 3 to 9 here",
        });
    }
    if version <= 4 && dims.iter().any(|d| d.var || d.datatype != d0.datatype) {
        return Err(Error::invalid(
            "format 3-4 fragments need fixed-size dimensions of one datatype",
        ));
    }
    // version, dense, null non-empty domain
    let head = bytes_in.get(..6).ok_or_else(|| {
        Error::malformed(STRUCTURE, "dense", 4, format!("truncated ({} bytes)", bytes_in.len()))
    })?;
    let flag = |at: usize, field: &'static str| match head[at] {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(Error::malformed(STRUCTURE, field, at as u64, format!("byte {v} is not 0 or 1"))),
    };
    let dense = flag(4, "dense")?;
    let null_ned = flag(5, "null_non_empty_domain")?;
    let rest = &bytes_in[6..];
    let (non_empty_domain, used) =
        if null_ned {
            if dims.iter().any(|d| d.var) {
                return Err(Error::malformed(
                    STRUCTURE,
                    "null_non_empty_domain",
                    5,
                    "a null non-empty domain with var-sized dimensions",
                ));
            }
            let n: usize = dims.iter().map(|d| 2 * d.datatype.size()).sum();
            if rest.len() < n {
                return Err(Error::malformed(
                    STRUCTURE,
                    "non_empty_domain",
                    6,
                    format!("null domain needs {n} bytes, {} left", rest.len()),
                ));
            }
            (None, n)
        } else {
            let (mbr, used): (Mbr, usize) = Mbr::parse(rest, &dims)
                .map_err(|source| Error::RTree { structure: STRUCTURE, offset: 6, source })?;
            (Some(mbr), used)
        };
    let tail_at = 6 + used;
    let layout = FieldLayout::new(schema, false, false);
    let num = layout.num() as u64;
    let attr_num = layout.attribute_num as u64;
    let (n1, n2) = if version <= 4 { (attr_num + 1, attr_num) } else { (num, num) };
    let tail = parse_all(STRUCTURE, &rest[used..], |i| -> PResult<'_, Tail> {
        let list = |n: u64, field: &'static str| move |i| u64s(i, i, n, field);
        let (r, sparse_tile_num) = u64f("sparse_tile_num")(i)?;
        let (r, last_tile_cell_num) = u64f("last_tile_cell_num")(r)?;
        let (r, file_sizes) = list(n1, "file_sizes")(r)?;
        let (mut r, file_var_sizes) = list(n2, "file_var_sizes")(r)?;
        let mut file_validity_sizes = Vec::new();
        if version >= 7 {
            (r, file_validity_sizes) = list(num, "file_validity_sizes")(r)?;
        }
        let (r, rtree) = u64f("rtree_offset")(r)?;
        let (r, tile_offsets) = list(n1, "tile_offsets_offsets")(r)?;
        let (r, tile_var_offsets) = list(n2, "tile_var_offsets_offsets")(r)?;
        let (mut r, tile_var_sizes) = list(n2, "tile_var_sizes_offsets")(r)?;
        let mut tile_validity_offsets = Vec::new();
        if version >= 7 {
            (r, tile_validity_offsets) = list(num, "tile_validity_offsets_offsets")(r)?;
        }
        Ok((
            r,
            Tail {
                sparse_tile_num,
                last_tile_cell_num,
                file_sizes,
                file_var_sizes,
                file_validity_sizes,
                rtree,
                tile_offsets,
                tile_var_offsets,
                tile_var_sizes,
                tile_validity_offsets,
            },
        ))
    })
    .map_err(|e| e.at_offset(tail_at as u64))?;
    // Today's field layout: fixed lists map through `old_index`; var lists of versions 3–4
    // have no entry for the coordinates or the dimensions.
    let n = layout.num();
    let fixed = |v: &[u64], absent: u64| -> Vec<u64> {
        (0..n)
            .map(|idx| v.get(old_index(version, &layout, idx)).copied().unwrap_or(absent))
            .collect()
    };
    let var = |v: &[u64], absent: u64| -> Vec<u64> {
        (0..n).map(|idx| v.get(idx).copied().unwrap_or(absent)).collect()
    };
    Ok(Footer {
        version,
        schema_name: SCHEMA_NAME.to_owned(),
        dense,
        non_empty_domain,
        sparse_tile_num: tail.sparse_tile_num,
        last_tile_cell_num: tail.last_tile_cell_num,
        has_timestamps: false,
        has_delete_meta: false,
        file_sizes: fixed(&tail.file_sizes, 0),
        file_var_sizes: var(&tail.file_var_sizes, 0),
        file_validity_sizes: var(&tail.file_validity_sizes, 0),
        offsets: GenericTileOffsets {
            rtree: tail.rtree,
            tile_offsets: fixed(&tail.tile_offsets, ABSENT),
            tile_var_offsets: var(&tail.tile_var_offsets, ABSENT),
            tile_var_sizes: var(&tail.tile_var_sizes, ABSENT),
            tile_validity_offsets: var(&tail.tile_validity_offsets, ABSENT),
            ..GenericTileOffsets::default()
        },
    })
}

struct Tail {
    sparse_tile_num: u64,
    last_tile_cell_num: u64,
    file_sizes: Vec<u64>,
    file_var_sizes: Vec<u64>,
    file_validity_sizes: Vec<u64>,
    rtree: u64,
    tile_offsets: Vec<u64>,
    tile_var_offsets: Vec<u64>,
    tile_var_sizes: Vec<u64>,
    tile_validity_offsets: Vec<u64>,
}

/// The R-tree payload of a version 3–4 fragment in today's form. Those versions start it
/// with `dim_num u32 | fanout u32 | datatype u8 | level_num u32` (`RTree::deserialize_v1_v4`
/// in libtiledb), today's with `fanout u32 | level_num u32`; the levels that follow are the
/// same (one type, fixed-size ranges). Payloads of other versions (versions 1–2 included,
/// whose R-tree Tessera builds) are returned as they are.
///
/// # Errors
/// [`Error::Malformed`] when a version 3–4 payload is shorter than its header or names a
/// dimension count other than the schema's.
pub fn rtree_payload(version: u32, payload: Vec<u8>, dim_num: usize) -> Result<Vec<u8>> {
    if !(3..=4).contains(&version) {
        return Ok(payload);
    }
    const STRUCT: &str = "R-tree (format 3-4)";
    if payload.len() < 13 {
        return Err(Error::malformed(
            STRUCT,
            "header",
            0,
            format!("{} bytes, the header needs 13", payload.len()),
        ));
    }
    let stored_dims = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
    if stored_dims as usize != dim_num {
        return Err(Error::malformed(
            STRUCT,
            "dim_num",
            0,
            format!("{stored_dims} dimensions, the schema has {dim_num}"),
        ));
    }
    let mut out = Vec::with_capacity(payload.len() - 5);
    out.extend_from_slice(&payload[4..8]);
    out.extend_from_slice(&payload[9..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_schema::{Attribute, Dimension};
    use tessera_types::{ArrayType, Datatype};

    fn schema() -> ArraySchema {
        ArraySchema::builder(ArrayType::Sparse)
            .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
            .attribute(Attribute::new("v", Datatype::Int32))
            .build()
            .unwrap()
    }

    fn le(vals: &[u64]) -> Vec<u8> {
        vals.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// A version-3 footer as TileDB 1.6 wrote it (sparse, one int64 dimension, one attribute).
    fn v3_footer() -> Vec<u8> {
        let mut b = 3u32.to_le_bytes().to_vec();
        b.extend([0, 0]);
        b.extend(le(&[1, 7]));
        b.extend(le(&[1, 3]));
        b.extend(le(&[32, 64]));
        b.extend(le(&[0]));
        b.extend(le(&[0]));
        b.extend(le(&[114, 213]));
        b.extend(le(&[312]));
        b.extend(le(&[411]));
        b
    }

    #[test]
    fn parses_v3() {
        let s = schema();
        let b = v3_footer();
        assert_eq!(fixed_footer_size(4, &s), Some(b.len() as u64));
        let f = parse(&b, &s).unwrap();
        assert_eq!(f.version, 3);
        assert!(!f.dense);
        assert_eq!(f.sparse_tile_num, 1);
        assert_eq!(f.last_tile_cell_num, 3);
        // attribute, coords, dimension x (the coords' entries)
        assert_eq!(f.file_sizes, vec![32, 64, 64]);
        assert_eq!(f.offsets.tile_offsets, vec![114, 213, 213]);
        assert_eq!(f.offsets.tile_var_offsets, vec![312, ABSENT, ABSENT]);
        assert_eq!(f.offsets.tile_validity_offsets, vec![ABSENT; 3]);
        assert_eq!(f.schema_name, SCHEMA_NAME);
        assert!(parse(&b[..b.len() - 1], &s).is_err());
        let mut more = b.clone();
        more.push(0);
        assert!(parse(&more, &s).is_err());
    }

    #[test]
    fn sizes_by_version() {
        let s = schema();
        // v5-6: base 30 + domain 16 + 5 lists of 3
        assert_eq!(fixed_footer_size(5, &s), Some(30 + 16 + 5 * 8 * 3));
        assert_eq!(fixed_footer_size(9, &s), Some(30 + 16 + 7 * 8 * 3));
    }

    #[test]
    fn rtree_header() {
        let mut p = 1u32.to_le_bytes().to_vec();
        p.extend(10u32.to_le_bytes());
        p.push(7);
        p.extend(1u32.to_le_bytes());
        p.extend([9, 9]);
        let out = rtree_payload(4, p.clone(), 1).unwrap();
        assert_eq!(out[..4], 10u32.to_le_bytes());
        assert_eq!(out[4..8], 1u32.to_le_bytes());
        assert_eq!(out[8..], [9, 9]);
        assert!(rtree_payload(4, p.clone(), 2).is_err());
        assert_eq!(rtree_payload(5, p.clone(), 2).unwrap(), p);
        assert_eq!(rtree_payload(1, p.clone(), 2).unwrap(), p);
    }
}
