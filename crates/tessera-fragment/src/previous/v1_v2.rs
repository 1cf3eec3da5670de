//! Fragment metadata of format versions 1 and 2 (`FragmentMetadata::load_v1_v2` and
//! `V1V2PreloadedFragmentMetadata` in libtiledb): the whole `__fragment_metadata.tdb` is one
//! generic tile whose payload is
//!
//! ```text
//! version u32
//! | non_empty_domain_size u64 | non_empty_domain (per dimension low, high; 0 bytes: null)
//! | mbr_num u64 | mbr_num × (per dimension low, high)
//! | bounding_coords_num u64 | bounding_coords_num × 2 × dim_num × coord size (not used)
//! | per attribute and the coordinates: tile_offsets_num u64, tile_offsets_num × u64
//! | per attribute: tile_var_offsets_num u64, values
//! | per attribute: tile_var_sizes_num u64, values
//! | last_tile_cell_num u64
//! | file_sizes: (attribute_num + 1) × u64 | file_var_sizes: attribute_num × u64
//! ```
//!
//! There is no footer: [`V1V2Metadata::footer`] builds the [`Footer`] today's engine works
//! with (schema name `__array_schema.tdb`, every dimension pointing at the zipped coordinates'
//! offsets and file size), and [`V1V2Metadata::parts`] the payloads of the lazily loaded parts
//! in today's forms, so the rest of the engine needs no other path. Whether the fragment is
//! dense is not stored: it is dense when it has no `__coords.tdb`.

use tessera_rtree::{DEFAULT_FANOUT, Mbr, RTree, Range};
use tessera_schema::ArraySchema;

use crate::footer::{Footer, GenericTileOffsets, LazyPart, dim_types};
use crate::parse::{PResult, bytes, fail, parse_all, u32f, u64f, u64s};
use crate::parts::u64s_payload;
use crate::{Error, Field, FieldLayout, Result};

const STRUCTURE: &str = "fragment metadata (format 1-2)";

/// The schema name old fragments stand for: the array's single schema file.
pub const SCHEMA_NAME: &str = tessera_schema::previous::LEGACY_SCHEMA_FILE;

/// The content of a version 1–2 `__fragment_metadata.tdb`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1V2Metadata {
    /// Format version (1 or 2).
    pub version: u32,
    /// The non-empty domain; `None` when stored empty.
    pub non_empty_domain: Option<Mbr>,
    /// One MBR per tile of a sparse fragment.
    pub mbrs: Vec<Mbr>,
    /// Tile offsets, per attribute then the zipped coordinates.
    pub tile_offsets: Vec<Vec<u64>>,
    /// Var tile offsets, per attribute.
    pub tile_var_offsets: Vec<Vec<u64>>,
    /// Unfiltered var tile sizes, per attribute.
    pub tile_var_sizes: Vec<Vec<u64>>,
    /// Cells in the last tile.
    pub last_tile_cell_num: u64,
    /// Data file sizes, per attribute then the coordinates.
    pub file_sizes: Vec<u64>,
    /// Var data file sizes, per attribute.
    pub file_var_sizes: Vec<u64>,
}

fn check_schema(schema: &ArraySchema) -> Result<usize> {
    let Some(d0) = schema.dimensions.first() else {
        return Err(Error::invalid("the schema has no dimensions"));
    };
    if schema.dimensions.iter().any(|d| d.datatype != d0.datatype || d.is_var()) {
        return Err(Error::invalid(
            "format 1-2 fragments need fixed-size dimensions of one datatype",
        ));
    }
    Ok(d0.datatype.size())
}

impl V1V2Metadata {
    /// Parses the payload of the metadata file's generic tile for a fragment of `schema`.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] for a version other than 1 or 2; [`Error::Malformed`]
    /// naming the field and offset for truncated or impossible fields (counts that cannot fit
    /// in what is left, a non-empty domain of the wrong size, trailing bytes);
    /// [`Error::Invalid`] for a schema whose dimensions are not of one fixed-size type.
    pub fn parse(payload: &[u8], schema: &ArraySchema) -> Result<Self> {
        let coord = check_schema(schema)? as u64;
        let dim_num = schema.dimensions.len() as u64;
        let attr_num = schema.attributes.len();
        let mbr_size = 2 * dim_num * coord;
        let version = payload.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if let Some(v) = version.filter(|v| !(1..=2).contains(v)) {
            return Err(Error::UnsupportedVersion {
                structure: STRUCTURE,
                version: v,
                supported: "versions 1 and 2 here",
            });
        }
        let mbr = |b: &[u8]| {
            Mbr((0..dim_num as usize)
                .map(|d| {
                    let at = d * 2 * coord as usize;
                    let c = coord as usize;
                    Range::new(&b[at..at + c], &b[at + c..at + 2 * c])
                })
                .collect())
        };
        parse_all(STRUCTURE, payload, |i| -> PResult<'_, Self> {
            let (r, version) = u32f("version")(i)?;
            let (r2, ned_size) = u64f("non_empty_domain_size")(r)?;
            let (r2, ned) = match ned_size {
                0 => (r2, None),
                n if n == mbr_size => {
                    let (r3, b) = bytes(r2, n, "non_empty_domain")?;
                    (r3, Some(mbr(b)))
                }
                n => {
                    return fail(
                        r,
                        "non_empty_domain_size",
                        format!("{n} bytes, the schema's dimensions need {mbr_size}"),
                    );
                }
            };
            let (r3, mbr_num) = u64f("mbr_num")(r2)?;
            let (r4, raw) = bytes(r3, mbr_num.saturating_mul(mbr_size), "mbrs")?;
            let mbrs = raw.chunks_exact(mbr_size as usize).map(mbr).collect();
            let (r5, bc_num) = u64f("bounding_coords_num")(r4)?;
            let (r, _) = bytes(r5, bc_num.saturating_mul(mbr_size), "bounding_coords")?;
            let (r, tile_offsets) = lists(r, attr_num + 1, "tile_offsets")?;
            let (r, tile_var_offsets) = lists(r, attr_num, "tile_var_offsets")?;
            let (r, tile_var_sizes) = lists(r, attr_num, "tile_var_sizes")?;
            let (r, last_tile_cell_num) = u64f("last_tile_cell_num")(r)?;
            let (r, file_sizes) = u64s(r, r, attr_num as u64 + 1, "file_sizes")?;
            let (r, file_var_sizes) = u64s(r, r, attr_num as u64, "file_var_sizes")?;
            Ok((
                r,
                V1V2Metadata {
                    version,
                    non_empty_domain: ned,
                    mbrs,
                    tile_offsets,
                    tile_var_offsets,
                    tile_var_sizes,
                    last_tile_cell_num,
                    file_sizes,
                    file_var_sizes,
                },
            ))
        })
    }
}

/// `n` lists, each a `u64` count and that many `u64`s.
fn lists<'a>(mut r: &'a [u8], n: usize, field: &'static str) -> PResult<'a, Vec<Vec<u64>>> {
    let mut out = Vec::with_capacity(n.min(r.len() / 8));
    for _ in 0..n {
        let (r1, num) = u64f(field)(r)?;
        let (r2, v) = u64s(r, r1, num, field)?;
        out.push(v);
        r = r2;
    }
    Ok((r, out))
}

impl V1V2Metadata {
    /// Maps an index of today's field layout to this file's lists: attributes keep theirs,
    /// the coordinates and every dimension share the zipped coordinates' (`attribute_num`).
    fn old_index(layout: &FieldLayout, idx: usize) -> Option<usize> {
        let a = layout.attribute_num;
        (idx < a + 1 + layout.dim_num).then_some(idx.min(a))
    }

    /// The footer the engine works with: dense unless `sparse` (whether `__coords.tdb`
    /// exists), no timestamps or delete metadata, file sizes in today's field layout, no
    /// generic tile offsets (every part comes from [`Self::parts`]).
    pub fn footer(&self, schema: &ArraySchema, sparse: bool) -> Footer {
        let layout = FieldLayout::new(schema, false, false);
        let pick = |v: &[u64], idx: usize| {
            Self::old_index(&layout, idx).and_then(|i| v.get(i).copied()).unwrap_or(0)
        };
        let num = layout.num();
        Footer {
            version: self.version,
            schema_name: SCHEMA_NAME.to_owned(),
            dense: !sparse,
            non_empty_domain: self.non_empty_domain.clone(),
            sparse_tile_num: if sparse { self.mbrs.len() as u64 } else { 0 },
            last_tile_cell_num: self.last_tile_cell_num,
            has_timestamps: false,
            has_delete_meta: false,
            file_sizes: (0..num).map(|i| pick(&self.file_sizes, i)).collect(),
            file_var_sizes: (0..num).map(|i| pick(&self.file_var_sizes, i)).collect(),
            file_validity_sizes: vec![0; num],
            offsets: GenericTileOffsets::default(),
        }
    }

    /// The payload of every lazily loaded part in today's forms: the R-tree built over the
    /// MBRs (libtiledb builds it on load, with the default fan-out), and per field of today's
    /// layout its tile offsets, var offsets, var sizes and (empty) validity offsets.
    ///
    /// # Errors
    /// [`Error::RTree`] when the MBRs do not fit the schema.
    pub fn parts(&self, schema: &ArraySchema) -> Result<Vec<(LazyPart, Vec<u8>)>> {
        let layout = FieldLayout::new(schema, false, false);
        let dims = dim_types(schema);
        let rtree = RTree::build(&dims, &self.mbrs, DEFAULT_FANOUT)
            .map_err(|source| Error::RTree { structure: STRUCTURE, offset: 0, source })?;
        let mut out = vec![(LazyPart::RTree, rtree.to_bytes(&dims))];
        let empty: Vec<u64> = Vec::new();
        for idx in 0..layout.num() {
            let old = Self::old_index(&layout, idx);
            let get = |v: &Vec<Vec<u64>>| old.and_then(|i| v.get(i)).unwrap_or(&empty).clone();
            out.push((LazyPart::TileOffsets(idx), u64s_payload(&get(&self.tile_offsets))));
            out.push((LazyPart::TileVarOffsets(idx), u64s_payload(&get(&self.tile_var_offsets))));
            out.push((LazyPart::TileVarSizes(idx), u64s_payload(&get(&self.tile_var_sizes))));
            out.push((LazyPart::TileValidityOffsets(idx), u64s_payload(&[])));
        }
        Ok(out)
    }

    /// Whether `field` is stored in the zipped coordinates file.
    pub fn is_zipped(field: Field) -> bool {
        matches!(field, Field::Coords | Field::Dimension(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_schema::{Attribute, Dimension};
    use tessera_types::{ArrayType, Datatype};

    fn schema() -> ArraySchema {
        ArraySchema::builder(ArrayType::Sparse)
            .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 99).tile_i64(100))
            .dimension(Dimension::new("y", Datatype::Int32).domain_i64(0, 99).tile_i64(100))
            .attribute(Attribute::new("a", Datatype::Int32))
            .build()
            .unwrap()
    }

    fn payload() -> Vec<u8> {
        let mut b = Vec::new();
        let u64s = |b: &mut Vec<u8>, v: &[u64]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
        let i32s = |b: &mut Vec<u8>, v: &[i32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
        b.extend(1u32.to_le_bytes());
        u64s(&mut b, &[16]);
        i32s(&mut b, &[1, 4, 10, 10]);
        u64s(&mut b, &[1]);
        i32s(&mut b, &[1, 4, 10, 10]);
        u64s(&mut b, &[1]);
        i32s(&mut b, &[1, 10, 4, 10]);
        u64s(&mut b, &[1, 0, 1, 0]); // offsets: a [0], coords [0]
        u64s(&mut b, &[0, 0]); // var offsets, var sizes of a
        u64s(&mut b, &[4, 36, 68, 0]); // last tile cells; file sizes a, coords; var size a
        b
    }

    #[test]
    fn parses_and_maps_to_todays_layout() {
        let s = schema();
        let m = V1V2Metadata::parse(&payload(), &s).unwrap();
        assert_eq!(m.mbrs.len(), 1);
        assert_eq!(m.tile_offsets, vec![vec![0], vec![0]]);
        assert_eq!(m.file_sizes, [36, 68]);
        let f = m.footer(&s, true);
        assert_eq!(f.file_sizes, [36, 68, 68, 68]);
        assert_eq!(f.tile_num(&s).unwrap(), 1);
        assert_eq!(f.cell_num(&s).unwrap(), 4);
        assert_eq!(m.parts(&s).unwrap().len(), 1 + 4 * 4);
    }

    #[test]
    fn truncation_and_bad_sizes_are_errors() {
        let s = schema();
        let p = payload();
        for cut in 0..p.len() {
            assert!(V1V2Metadata::parse(&p[..cut], &s).is_err(), "cut at {cut}");
        }
        let mut bad = p.clone();
        bad[4] = 15;
        assert!(matches!(
            V1V2Metadata::parse(&bad, &s),
            Err(Error::Malformed { field: "non_empty_domain_size", offset: 4, .. })
        ));
        let mut huge = p.clone();
        huge[28..36].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(V1V2Metadata::parse(&huge, &s).is_err());
        let mut v = p;
        v[0] = 3;
        assert!(matches!(V1V2Metadata::parse(&v, &s), Err(Error::UnsupportedVersion { .. })));
    }
}
