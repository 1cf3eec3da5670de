//! Fragment layouts of older format versions, kept apart from the current one (the way lance
//! keeps `previous/`). What differs, by format version (from libtiledb's
//! `fragment_metadata.cc`, `fragment_identifier.cc` and `array_directory.cc`; the bytes of
//! TileDB's own test arrays win where they disagree):
//!
//! | versions | what differs | where |
//! |---|---|---|
//! | 1–2 | the whole `__fragment_metadata.tdb` is one generic tile: version, non-empty domain (`u64` size + bytes), MBRs (`u64` count + MBRs), bounding coordinates (skipped), tile offsets (attributes + coords), var offsets, var sizes (attributes), last tile cell count, file sizes (attributes + coords), var file sizes (attributes); no footer; a fragment is sparse when it has `__coords.tdb` | [`v1_v2`] |
//! | 1–4 | the coordinates of every dimension share one `__coords.tdb`: side by side per cell in version 1 without compression, else one dimension after the other within each tile ([`coords_stored_split`]) | [`files`], [`unzip_coords`], the engine's tile loader |
//! | 1–7 | data files are named after the attribute (`a.tdb`, `a_var.tdb`) | [`files`] |
//! | 8 | the same, with the attribute name percent-encoded | [`files`] |
//! | 9– | `a<i>.tdb`, `d<i>.tdb` | [`crate::Field::data_file`] |
//! | 1–2 | names `__<uuid>_<t>` | [`crate::FragmentName`] |
//! | 1–11 | fragments live in the array folder itself, committed by a `<name>.ok` file (before version 5 by their `__fragment_metadata.tdb` alone); the schema of versions 1–9 is `__array_schema.tdb` | the engine's `directory` |
//! | 3–9 | footers without the schema name, of a size fixed by the schema unless a dimension is var-sized; versions 3–4 list the zipped coordinates once and their R-tree has a header of its own | [`v3_v9`] |
//! | 10– | the footer of [`crate::Footer`] | [`crate::footer`] |

pub mod files;
pub mod v1_v2;
pub mod v3_v9;

/// The oldest format version whose fragment metadata ends with a [`crate::Footer`].
pub const FOOTER_MIN_VERSION: u32 = crate::footer::MIN_FOOTER_VERSION;

/// The first format version that keeps fragments in `__fragments/` and commits in
/// `__commits/`; older fragments live in the array folder.
pub const FRAGMENTS_DIR_MIN_VERSION: u32 = 12;

/// The first format version with one coordinate file per dimension; older fragments zip every
/// dimension of a cell into `__coords.tdb`.
pub const SPLIT_COORDS_MIN_VERSION: u32 = 5;

/// Whether fragments of format `version` keep their coordinates zipped in `__coords.tdb`.
pub const fn zipped_coords(version: u32) -> bool {
    version < SPLIT_COORDS_MIN_VERSION
}

/// Whether the coordinates tile of a format 1–4 fragment, once its filters are undone, holds
/// each dimension's values one after the other (split: `d0 d0 … d1 d1 …`) rather than a cell's
/// coordinates side by side (zipped: `d0 d1 d0 d1 …`). libtiledb's reader zips a tile after
/// unfiltering it when the version is above 1 or the coords filters compress
/// (`ReaderBase::zip_tile_coordinates`): only version 1 without compression stored them zipped.
/// The coords filters are those of `schema`, the fragment's.
pub fn coords_stored_split(version: u32, schema: &tessera_schema::ArraySchema) -> bool {
    use tessera_types::FilterType as F;
    version > 1
        || schema.coords_filters.filters.iter().any(|f| {
            matches!(
                f.filter_type(),
                F::Gzip | F::Zstd | F::Lz4 | F::Rle | F::Bzip2 | F::DoubleDelta | F::Dictionary
            )
        })
}

/// Dimension `dim`'s coordinates out of a decoded coordinates tile of versions 1–4 holding
/// `dim_num` coordinates of `coord_size` bytes per cell, split or zipped as
/// [`coords_stored_split`] says. A trailing partial cell is ignored (the tile loader checks
/// the decoded size first).
pub fn unzip_coords(
    tile: &[u8],
    dim: usize,
    dim_num: usize,
    coord_size: usize,
    split: bool,
) -> Vec<u8> {
    let cell = dim_num * coord_size;
    if cell == 0 || dim >= dim_num {
        return Vec::new();
    }
    let cells = tile.len() / cell;
    if split {
        let start = dim * cells * coord_size;
        return tile[start..start + cells * coord_size].to_vec();
    }
    let start = dim * coord_size;
    let mut out = Vec::with_capacity(cells * coord_size);
    for c in tile.chunks_exact(cell) {
        out.extend_from_slice(&c[start..start + coord_size]);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn unzips() {
        let zipped: Vec<u8> =
            [1i32, 10, 2, 10, 3, 11].iter().flat_map(|v| v.to_le_bytes()).collect();
        let d1: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        let d2: Vec<u8> = [10i32, 10, 11].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(super::unzip_coords(&zipped, 0, 2, 4, false), d1);
        assert_eq!(super::unzip_coords(&zipped, 1, 2, 4, false), d2);
        assert!(super::unzip_coords(&zipped, 2, 2, 4, false).is_empty());
        let split: Vec<u8> = [d1.clone(), d2.clone()].concat();
        assert_eq!(super::unzip_coords(&split, 0, 2, 4, true), d1);
        assert_eq!(super::unzip_coords(&split, 1, 2, 4, true), d2);
        use tessera_schema::{ArraySchema, Attribute, Dimension};
        use tessera_types::{ArrayType, Datatype};
        let mut schema = ArraySchema::builder(ArrayType::Sparse)
            .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 9).tile_i64(5))
            .attribute(Attribute::new("a", Datatype::Int32))
            .build()
            .unwrap();
        schema.coords_filters = tessera_filters::FilterPipeline::default();
        assert!(!super::coords_stored_split(1, &schema));
        assert!(super::coords_stored_split(2, &schema));
        schema.coords_filters.filters.push(tessera_filters::Filter::Zstd { level: 1 });
        assert!(super::coords_stored_split(1, &schema));
    }
}
