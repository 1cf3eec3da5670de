//! The footer of `__fragment_metadata.tdb`: raw bytes (not a generic tile) after the last
//! generic tile, followed by a `u64` holding the footer's length
//! (`FragmentMetadata::write_footer`, `load_footer`, `get_footer_offset_and_size`).
//!
//! Layout (version 22; older versions drop fields as noted on [`Footer`]):
//!
//! ```text
//! version u32 | schema_name_size u64 | schema_name | dense u8 | null_non_empty_domain u8
//! | non_empty_domain (one range per dimension, as an R-tree MBR) | sparse_tile_num u64
//! | last_tile_cell_num u64 | has_timestamps u8 | has_delete_meta u8
//! | file_sizes[num] | file_var_sizes[num] | file_validity_sizes[num] (u64 each)
//! | rtree_offset u64 | tile_offsets[num] | tile_var_offsets[num] | tile_var_sizes[num]
//! | tile_validity_offsets[num] | tile_mins[num] | tile_maxs[num] | tile_sums[num]
//! | tile_null_counts[num] | fragment_min_max_sum_null_count u64 | processed_conditions u64
//! ```
//!
//! The engine locates the footer with two ranged reads: the last 8 bytes
//! ([`footer_length_range`], [`parse_footer_length`]), then [`footer_range`]. Each lazily
//! loaded part then lives in [`Footer::part_range`].

use std::ops::Range;

use tessera_rtree::{DimType, Mbr};
use tessera_schema::ArraySchema;
use tessera_types::{Datatype, FORMAT_VERSION};

use crate::fields::{Field, FieldLayout};
use crate::parse::{PResult, boolf, bytes, fail, put_u64, put_u64s, to_error, u32f, u64f, u64s};
use crate::{Error, Result};

/// Oldest fragment format version whose footer Tessera reads (the first with the schema name
/// in the footer and the trailing footer length).
pub const MIN_FOOTER_VERSION: u32 = 10;

/// Byte length of the footer-length field at the end of the file.
pub const FOOTER_LENGTH_SIZE: u64 = 8;

const STRUCTURE: &str = "fragment metadata footer";

/// The byte range of the trailing `u64` footer length in a metadata file of `file_size`
/// bytes: the first ranged read of a fragment.
///
/// # Errors
/// [`Error::Malformed`] when the file is shorter than 8 bytes.
pub fn footer_length_range(file_size: u64) -> Result<Range<u64>> {
    if file_size < FOOTER_LENGTH_SIZE {
        return Err(Error::malformed(
            STRUCTURE,
            "footer length",
            0,
            format!("a fragment metadata file of {file_size} bytes cannot hold the footer length"),
        ));
    }
    Ok(file_size - FOOTER_LENGTH_SIZE..file_size)
}

/// Reads the footer length from the 8 bytes of [`footer_length_range`].
///
/// # Errors
/// [`Error::Malformed`] unless `bytes` has exactly 8 bytes.
pub fn parse_footer_length(bytes: &[u8]) -> Result<u64> {
    let arr: [u8; 8] = bytes.try_into().map_err(|_| {
        Error::malformed(
            STRUCTURE,
            "footer length",
            0,
            format!("expected 8 bytes, got {}", bytes.len()),
        )
    })?;
    Ok(u64::from_le_bytes(arr))
}

/// The byte range of the footer in a metadata file of `file_size` bytes whose trailing length
/// field holds `footer_len`: `[file_size - 8 - footer_len, file_size - 8)`.
///
/// # Errors
/// [`Error::Malformed`] when the footer would start before the file.
pub fn footer_range(file_size: u64, footer_len: u64) -> Result<Range<u64>> {
    let end = footer_length_range(file_size)?.start;
    let start = end.checked_sub(footer_len).ok_or_else(|| {
        Error::malformed(
            STRUCTURE,
            "footer length",
            end,
            format!("footer length {footer_len} exceeds the {end} bytes before it"),
        )
    })?;
    Ok(start..end)
}

/// The dimension types of `schema` in schema order, as MBRs and non-empty domains need them.
pub fn dim_types(schema: &ArraySchema) -> Vec<DimType> {
    schema.dimensions.iter().map(|d| DimType { datatype: d.datatype, var: d.is_var() }).collect()
}

/// A lazily loaded part of fragment metadata: one generic tile of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LazyPart {
    /// The R-tree over the tile MBRs.
    RTree,
    /// Offsets of field idx's tiles in its fixed data file.
    TileOffsets(usize),
    /// Offsets of field idx's tiles in its var data file.
    TileVarOffsets(usize),
    /// Unfiltered sizes of field idx's var tiles.
    TileVarSizes(usize),
    /// Offsets of field idx's tiles in its validity file.
    TileValidityOffsets(usize),
    /// Tile minimums of field idx.
    TileMins(usize),
    /// Tile maximums of field idx.
    TileMaxs(usize),
    /// Tile sums of field idx.
    TileSums(usize),
    /// Tile null counts of field idx.
    TileNullCounts(usize),
    /// Fragment-level min/max/sum/null count of every field.
    FragmentStats,
    /// Markers of the delete/update commits a consolidation applied.
    ProcessedConditions,
}

impl LazyPart {
    /// A short name of what the part holds, used in errors.
    pub const fn structure(self) -> &'static str {
        match self {
            LazyPart::RTree => "R-tree",
            LazyPart::TileOffsets(_) => "tile offsets",
            LazyPart::TileVarOffsets(_) => "tile var offsets",
            LazyPart::TileVarSizes(_) => "tile var sizes",
            LazyPart::TileValidityOffsets(_) => "tile validity offsets",
            LazyPart::TileMins(_) => "tile mins",
            LazyPart::TileMaxs(_) => "tile maxs",
            LazyPart::TileSums(_) => "tile sums",
            LazyPart::TileNullCounts(_) => "tile null counts",
            LazyPart::FragmentStats => "fragment min/max/sum/null count",
            LazyPart::ProcessedConditions => "processed conditions",
        }
    }

    /// The field idx of a per-field part.
    pub const fn idx(self) -> Option<usize> {
        match self {
            LazyPart::TileOffsets(i)
            | LazyPart::TileVarOffsets(i)
            | LazyPart::TileVarSizes(i)
            | LazyPart::TileValidityOffsets(i)
            | LazyPart::TileMins(i)
            | LazyPart::TileMaxs(i)
            | LazyPart::TileSums(i)
            | LazyPart::TileNullCounts(i) => Some(i),
            LazyPart::RTree | LazyPart::FragmentStats | LazyPart::ProcessedConditions => None,
        }
    }

    /// Decodes the part's generic tile from `bytes`, which start at file offset
    /// `file_offset` (normally the bytes of [`Footer::part_range`]), and returns the
    /// unfiltered payload. Trailing bytes after the tile are ignored.
    ///
    /// # Errors
    /// [`Error::Tile`] (with file offsets) when the tile cannot be decoded.
    pub fn decode_tile(self, bytes: &[u8], file_offset: u64) -> Result<Vec<u8>> {
        self.decode_tile_with_key(bytes, file_offset, None)
    }

    /// [`Self::decode_tile`] for a fragment of an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::decode_tile`].
    pub fn decode_tile_with_key(
        self,
        bytes: &[u8],
        file_offset: u64,
        key: Option<&tessera_types::EncryptionKey>,
    ) -> Result<Vec<u8>> {
        tessera_tile::read_generic_tile_at_with_key(bytes, 0, key).map(|(t, _)| t.payload).map_err(
            |source| {
                Error::Tile { structure: self.structure(), offset: 0, source }
                    .at_offset(file_offset)
            },
        )
    }
}

impl std::fmt::Display for LazyPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.idx() {
            Some(i) => write!(f, "{} of field {i}", self.structure()),
            None => f.write_str(self.structure()),
        }
    }
}

/// Where each generic tile of the metadata file starts (the footer's `gt_offsets`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GenericTileOffsets {
    /// The R-tree (always 0).
    pub rtree: u64,
    /// Tile offsets, per field.
    pub tile_offsets: Vec<u64>,
    /// Tile var offsets, per field.
    pub tile_var_offsets: Vec<u64>,
    /// Tile var sizes, per field.
    pub tile_var_sizes: Vec<u64>,
    /// Tile validity offsets, per field.
    pub tile_validity_offsets: Vec<u64>,
    /// Tile mins, per field (empty before version 11).
    pub tile_mins: Vec<u64>,
    /// Tile maxs, per field (empty before version 11).
    pub tile_maxs: Vec<u64>,
    /// Tile sums, per field (empty before version 11).
    pub tile_sums: Vec<u64>,
    /// Tile null counts, per field (empty before version 11).
    pub tile_null_counts: Vec<u64>,
    /// The fragment min/max/sum/null-count tile (written since version 11; a version-11
    /// footer has the field but no such tile exists).
    pub fragment_stats: Option<u64>,
    /// The processed-conditions tile (version 16 on).
    pub processed_conditions: Option<u64>,
}

/// The footer of a fragment metadata file, every field of `docs/format/fragment-metadata.md`
/// ("The footer").
///
/// Versions 10 to 22 are read: version 10 has no timestamp or delete flags and no min/max
/// offsets; version 11 adds the tile min/max/sum/null-count offsets and a fragment
/// min/max/sum/null-count offset (whose tile only exists from version 12); version 14 adds
/// `has_timestamps`, version 15 `has_delete_meta`, version 16 the processed-conditions offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    /// Format version of the fragment.
    pub version: u32,
    /// File name of the fragment's schema in `__schema/`.
    pub schema_name: String,
    /// Whether the fragment is dense.
    pub dense: bool,
    /// The non-empty domain, one range per dimension; `None` when stored as null (then the
    /// footer holds `2 · dim_num · coord_size(dim 0)` zero bytes, as libtiledb's writer puts
    /// them; its reader does not skip them, but libtiledb never writes a fragment without
    /// cells, so no such footer exists in practice).
    pub non_empty_domain: Option<Mbr>,
    /// Number of tiles of a sparse fragment (0 for dense fragments).
    pub sparse_tile_num: u64,
    /// Cells in the last tile, as stored (libtiledb stores the capacity, or the cells per
    /// dense tile, when its count is 0).
    pub last_tile_cell_num: u64,
    /// Whether the fragment has per-cell timestamps (`t.tdb`).
    pub has_timestamps: bool,
    /// Whether the fragment has delete timestamps and condition indexes (`dt.tdb`,
    /// `dci.tdb`).
    pub has_delete_meta: bool,
    /// Byte size of each field's fixed data file (the offsets file for var fields).
    pub file_sizes: Vec<u64>,
    /// Byte size of each field's var data file.
    pub file_var_sizes: Vec<u64>,
    /// Byte size of each field's validity file.
    pub file_validity_sizes: Vec<u64>,
    /// Where the generic tiles start.
    pub offsets: GenericTileOffsets,
}

impl Footer {
    /// A version-22 footer for a new fragment of `schema` (named `schema_name` in
    /// `__schema/`) with non-empty domain `non_empty_domain`: dense if the array is, no
    /// sparse tiles, no timestamps or delete metadata, zero file sizes and offsets, and
    /// `last_tile_cell_num` as libtiledb writes an unset one (the cells per dense tile, or the
    /// capacity). A writer then sets the tile counts and file sizes;
    /// [`crate::FragmentMetadata::to_bytes`] fills in the offsets.
    pub fn new(
        schema: &ArraySchema,
        schema_name: impl Into<String>,
        non_empty_domain: Mbr,
    ) -> Self {
        let num = FieldLayout::new(schema, false, false).num();
        Footer {
            version: FORMAT_VERSION,
            schema_name: schema_name.into(),
            dense: schema.is_dense(),
            non_empty_domain: Some(non_empty_domain),
            sparse_tile_num: 0,
            last_tile_cell_num: if schema.is_dense() {
                Self::dense_cell_num_per_tile(schema).unwrap_or(0)
            } else {
                schema.capacity
            },
            has_timestamps: false,
            has_delete_meta: false,
            file_sizes: vec![0; num],
            file_var_sizes: vec![0; num],
            file_validity_sizes: vec![0; num],
            offsets: GenericTileOffsets::default(),
        }
    }

    /// Parses a footer that fills `bytes` exactly (the bytes of [`footer_range`]), for a
    /// fragment of `schema`.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] for versions outside 10..=22; [`Error::Malformed`]
    /// naming the field and offset for truncated or impossible fields (an empty schema name,
    /// a flag byte other than 0 or 1, leftover bytes); [`Error::RTree`] for a malformed
    /// non-empty domain.
    pub fn parse(bytes: &[u8], schema: &ArraySchema) -> Result<Self> {
        let (footer, used) = Self::parse_prefix(bytes, schema)?;
        if used != bytes.len() {
            return Err(Error::malformed(
                STRUCTURE,
                "end",
                used as u64,
                format!("{} bytes follow the footer", bytes.len() - used),
            ));
        }
        Ok(footer)
    }

    /// Parses the footer at the start of `bytes`; returns it with the bytes it used. A
    /// version-11 footer's fragment min/max/sum/null-count offset is taken only when exactly
    /// 8 bytes follow (libtiledb writes it but never reads it).
    ///
    /// # Errors
    /// As [`Footer::parse`], except that trailing bytes are allowed.
    pub fn parse_prefix(bytes: &[u8], schema: &ArraySchema) -> Result<(Self, usize)> {
        let dims = dim_types(schema);
        if dims.is_empty() {
            return Err(Error::invalid("the schema has no dimensions"));
        }
        let version = bytes
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| {
                Error::malformed(
                    STRUCTURE,
                    "version",
                    0,
                    format!("truncated ({} bytes left)", bytes.len()),
                )
            })?;
        check_version(version)?;
        // The non-empty domain is parsed by tessera-rtree, outside nom; split there.
        let (rest, head) = head(bytes).map_err(|e| to_error(STRUCTURE, bytes, e))?;
        let ned_at = bytes.len() - rest.len();
        let (non_empty_domain, used) = if head.null_ned {
            let n = 2 * dims.len() as u64 * dims[0].datatype.size() as u64;
            if (rest.len() as u64) < n {
                return Err(Error::malformed(
                    STRUCTURE,
                    "non_empty_domain",
                    ned_at as u64,
                    format!("null domain needs {n} bytes, {} left", rest.len()),
                ));
            }
            (None, n as usize)
        } else {
            let (mbr, used) = Mbr::parse(rest, &dims).map_err(|source| Error::RTree {
                structure: STRUCTURE,
                offset: ned_at as u64,
                source,
            })?;
            (Some(mbr), used)
        };
        let tail_in = &rest[used..];
        let tail_at = ned_at + used;
        let (after, tail) = tail(tail_in, head.version, schema)
            .map_err(|e| to_error(STRUCTURE, tail_in, e).at_offset(tail_at as u64))?;
        let mut consumed = bytes.len() - after.len();
        let mut offsets = tail.offsets;
        if head.version == 11 && after.len() == 8 {
            offsets.fragment_stats = Some(crate::parse::read_u64(after));
            consumed += 8;
        }
        let footer = Footer {
            version: head.version,
            schema_name: head.schema_name,
            dense: head.dense,
            non_empty_domain,
            sparse_tile_num: tail.sparse_tile_num,
            last_tile_cell_num: tail.last_tile_cell_num,
            has_timestamps: tail.has_timestamps,
            has_delete_meta: tail.has_delete_meta,
            file_sizes: tail.file_sizes,
            file_var_sizes: tail.file_var_sizes,
            file_validity_sizes: tail.file_validity_sizes,
            offsets,
        };
        Ok((footer, consumed))
    }

    /// Reads the format version and schema name at the start of footer bytes, which do not
    /// depend on the schema: what an engine needs to pick the schema to parse the footer
    /// with.
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] for versions outside 10..=22; [`Error::Malformed`] for a
    /// truncated or empty schema name, or one that is not UTF-8.
    pub fn peek_schema_name(bytes: &[u8]) -> Result<(u32, String)> {
        let version = bytes
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| {
                Error::malformed(
                    STRUCTURE,
                    "version",
                    0,
                    format!("truncated ({} bytes left)", bytes.len()),
                )
            })?;
        check_version(version)?;
        let (_, h) = head(bytes).map_err(|e| to_error(STRUCTURE, bytes, e))?;
        Ok((h.version, h.schema_name))
    }

    /// Parses the footer of a whole metadata file (from its trailing length).
    ///
    /// # Errors
    /// As [`footer_range`] and [`Footer::parse`], with offsets in the file.
    pub fn parse_file(file: &[u8], schema: &ArraySchema) -> Result<Self> {
        let size = file.len() as u64;
        let len_range = footer_length_range(size)?;
        let len = parse_footer_length(&file[len_range.start as usize..])?;
        let range = footer_range(size, len)?;
        Self::parse(&file[range.start as usize..range.end as usize], schema)
            .map_err(|e| e.at_offset(range.start))
    }

    /// Appends the footer bytes (without the trailing length) for a fragment of `schema`.
    ///
    /// # Errors
    /// [`Error::Invalid`] when a per-field vector does not have one entry per field, the
    /// non-empty domain does not match the dimensions, the schema name is empty, a null
    /// domain is used with var-sized or mixed-type dimensions, or the version is not
    /// supported.
    pub fn write(&self, schema: &ArraySchema, out: &mut Vec<u8>) -> Result<()> {
        self.check(schema)?;
        let v = self.version;
        let dims = dim_types(schema);
        out.extend_from_slice(&v.to_le_bytes());
        put_u64(out, self.schema_name.len() as u64);
        out.extend_from_slice(self.schema_name.as_bytes());
        out.push(u8::from(self.dense));
        match &self.non_empty_domain {
            None => {
                out.push(1);
                let n = 2 * dims.len() * dims[0].datatype.size();
                out.resize(out.len() + n, 0);
            }
            Some(mbr) => {
                out.push(0);
                mbr.write(&dims, out);
            }
        }
        put_u64(out, self.sparse_tile_num);
        put_u64(out, self.last_tile_cell_num);
        if v >= 14 {
            out.push(u8::from(self.has_timestamps));
        }
        if v >= 15 {
            out.push(u8::from(self.has_delete_meta));
        }
        put_u64s(out, &self.file_sizes);
        put_u64s(out, &self.file_var_sizes);
        put_u64s(out, &self.file_validity_sizes);
        let o = &self.offsets;
        put_u64(out, o.rtree);
        put_u64s(out, &o.tile_offsets);
        put_u64s(out, &o.tile_var_offsets);
        put_u64s(out, &o.tile_var_sizes);
        put_u64s(out, &o.tile_validity_offsets);
        if v >= 11 {
            put_u64s(out, &o.tile_mins);
            put_u64s(out, &o.tile_maxs);
            put_u64s(out, &o.tile_sums);
            put_u64s(out, &o.tile_null_counts);
            if let Some(f) = o.fragment_stats {
                put_u64(out, f);
            }
        }
        if v >= 16 {
            put_u64(out, o.processed_conditions.unwrap_or_default());
        }
        Ok(())
    }

    /// The footer bytes followed by the `u64` footer length: the end of a metadata file.
    ///
    /// # Errors
    /// As [`Footer::write`].
    pub fn to_bytes_with_length(&self, schema: &ArraySchema) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write(schema, &mut out)?;
        let len = out.len() as u64;
        put_u64(&mut out, len);
        Ok(out)
    }

    fn check(&self, schema: &ArraySchema) -> Result<()> {
        check_version(self.version)?;
        let dims = dim_types(schema);
        if dims.is_empty() {
            return Err(Error::invalid("the schema has no dimensions"));
        }
        if self.schema_name.is_empty() {
            return Err(Error::invalid("the footer's schema name is empty"));
        }
        let num = self.layout(schema).num();
        let v = self.version;
        let o = &self.offsets;
        let mut lists: Vec<(&str, usize)> = vec![
            ("file_sizes", self.file_sizes.len()),
            ("file_var_sizes", self.file_var_sizes.len()),
            ("file_validity_sizes", self.file_validity_sizes.len()),
            ("tile_offsets", o.tile_offsets.len()),
            ("tile_var_offsets", o.tile_var_offsets.len()),
            ("tile_var_sizes", o.tile_var_sizes.len()),
            ("tile_validity_offsets", o.tile_validity_offsets.len()),
        ];
        if v >= 11 {
            lists.extend([
                ("tile_mins", o.tile_mins.len()),
                ("tile_maxs", o.tile_maxs.len()),
                ("tile_sums", o.tile_sums.len()),
                ("tile_null_counts", o.tile_null_counts.len()),
            ]);
        }
        for (name, len) in lists {
            if len != num {
                return Err(Error::invalid(format!(
                    "footer {name} has {len} entries, the fragment has {num} fields"
                )));
            }
        }
        if v >= 12 && o.fragment_stats.is_none() {
            return Err(Error::invalid(format!(
                "a version-{v} footer needs a fragment stats offset"
            )));
        }
        if (v < 14 && self.has_timestamps) || (v < 15 && self.has_delete_meta) {
            return Err(Error::invalid(format!(
                "a version-{v} footer cannot flag timestamps or delete metadata"
            )));
        }
        match &self.non_empty_domain {
            Some(mbr) => mbr.check(&dims).map_err(|source| Error::RTree {
                structure: STRUCTURE,
                offset: 0,
                source,
            })?,
            None => {
                if dims.iter().any(|d| d.var || d.datatype != dims[0].datatype) {
                    return Err(Error::invalid(
                        "a null non-empty domain needs fixed-size dimensions of one type",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The idx space of this fragment.
    pub fn layout(&self, schema: &ArraySchema) -> FieldLayout {
        FieldLayout::new(schema, self.has_timestamps, self.has_delete_meta)
    }

    /// The idx of `field` in this fragment (see [`FieldLayout::idx`]).
    pub fn field_idx(&self, schema: &ArraySchema, field: Field) -> Option<usize> {
        self.layout(schema).idx(field)
    }

    /// Number of tiles: `sparse_tile_num` for sparse fragments; for dense fragments the
    /// number of space tiles of the non-empty domain (the product over dimensions of
    /// `tile(hi) - tile(lo) + 1`, with `tile(v) = (v - domain_low) / extent` in the
    /// dimension's unsigned type; 1 for a dimension without extent).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a dense fragment without a non-empty domain, or whose schema
    /// dimensions lack a domain, have a zero extent, or are not numeric.
    pub fn tile_num(&self, schema: &ArraySchema) -> Result<u64> {
        if !self.dense {
            return Ok(self.sparse_tile_num);
        }
        let ned = self.non_empty_domain.as_ref().ok_or_else(|| {
            Error::invalid("a dense fragment without a non-empty domain has no tiles")
        })?;
        let mut n: u64 = 1;
        for (d, r) in schema.dimensions.iter().zip(&ned.0) {
            let Some(extent) = &d.tile_extent else { continue };
            let [lo, _] = d
                .domain
                .as_ref()
                .ok_or_else(|| Error::invalid(format!("dimension {:?} has no domain", d.name)))?;
            let first = tile_index(d.datatype, &r.low, lo, extent)?;
            let last = tile_index(d.datatype, &r.high, lo, extent)?;
            let count =
                last.checked_sub(first).and_then(|c| c.checked_add(1)).ok_or_else(|| {
                    Error::invalid(format!("non-empty domain of {:?} is reversed", d.name))
                })?;
            n = n
                .checked_mul(count)
                .ok_or_else(|| Error::invalid("the number of dense tiles overflows u64"))?;
        }
        Ok(n)
    }

    /// Cells per tile of a dense array (the product of the integer tile extents,
    /// `Domain::cell_num_per_tile`).
    ///
    /// # Errors
    /// [`Error::Invalid`] when a dimension has no extent or is not an integer type, or the
    /// product overflows.
    pub fn dense_cell_num_per_tile(schema: &ArraySchema) -> Result<u64> {
        let mut n: u64 = 1;
        for d in &schema.dimensions {
            let e = d.tile_extent.as_ref().ok_or_else(|| {
                Error::invalid(format!("dimension {:?} has no tile extent", d.name))
            })?;
            let e = int_value(d.datatype, e).filter(|&e| e > 0).ok_or_else(|| {
                Error::invalid(format!("dimension {:?} has no positive integer extent", d.name))
            })?;
            n = u64::try_from(e)
                .ok()
                .and_then(|e| n.checked_mul(e))
                .ok_or_else(|| Error::invalid("cells per tile overflow u64"))?;
        }
        Ok(n)
    }

    /// Cells in tile `t` as libtiledb counts them (`FragmentMetadata::cell_num(tile)`): the
    /// cells per space tile for dense fragments, the capacity for every sparse tile but the
    /// last, and `last_tile_cell_num` for the last.
    ///
    /// # Errors
    /// As [`Footer::tile_num`] and [`Footer::dense_cell_num_per_tile`].
    pub fn cell_num_in_tile(&self, schema: &ArraySchema, t: u64) -> Result<u64> {
        if self.dense {
            return Self::dense_cell_num_per_tile(schema);
        }
        Ok(if t + 1 != self.tile_num(schema)? { schema.capacity } else { self.last_tile_cell_num })
    }

    /// [`Footer::cell_num_in_tile`] as a function of the tile, with the schema lookups done
    /// once.
    ///
    /// # Errors
    /// As [`Footer::cell_num_in_tile`].
    pub fn cell_num_fn(&self, schema: &ArraySchema) -> Result<impl Fn(u64) -> u64 + use<>> {
        let tile_num = self.tile_num(schema)?;
        let per_tile = if self.dense { Self::dense_cell_num_per_tile(schema)? } else { 0 };
        let (dense, capacity, last) = (self.dense, schema.capacity, self.last_tile_cell_num);
        Ok(move |t: u64| {
            if dense {
                per_tile
            } else if t + 1 != tile_num {
                capacity
            } else {
                last
            }
        })
    }

    /// Total cells (`FragmentMetadata::cell_num()`): tiles × cells per tile for dense
    /// fragments, `(tiles - 1) × capacity + last_tile_cell_num` for sparse ones.
    ///
    /// # Errors
    /// As [`Footer::cell_num_in_tile`], and when the count overflows.
    pub fn cell_num(&self, schema: &ArraySchema) -> Result<u64> {
        let tiles = self.tile_num(schema)?;
        let over = || Error::invalid("the cell count overflows u64");
        if self.dense {
            return tiles.checked_mul(Self::dense_cell_num_per_tile(schema)?).ok_or_else(over);
        }
        if tiles == 0 {
            return Ok(0);
        }
        (tiles - 1)
            .checked_mul(schema.capacity)
            .and_then(|c| c.checked_add(self.last_tile_cell_num))
            .ok_or_else(over)
    }

    /// Every part this footer points at, with its offset, in file order
    /// (`docs/format/fragment-metadata.md`): R-tree, then per field the offsets, var offsets,
    /// var sizes, validity offsets, mins, maxs, sums and null counts groups, then the fragment
    /// stats and processed conditions.
    pub fn parts(&self) -> Vec<(LazyPart, u64)> {
        let o = &self.offsets;
        let mut out = vec![(LazyPart::RTree, o.rtree)];
        type Group<'a> = (fn(usize) -> LazyPart, &'a Vec<u64>);
        let groups: [Group<'_>; 8] = [
            (LazyPart::TileOffsets, &o.tile_offsets),
            (LazyPart::TileVarOffsets, &o.tile_var_offsets),
            (LazyPart::TileVarSizes, &o.tile_var_sizes),
            (LazyPart::TileValidityOffsets, &o.tile_validity_offsets),
            (LazyPart::TileMins, &o.tile_mins),
            (LazyPart::TileMaxs, &o.tile_maxs),
            (LazyPart::TileSums, &o.tile_sums),
            (LazyPart::TileNullCounts, &o.tile_null_counts),
        ];
        for (make, offs) in groups {
            out.extend(offs.iter().enumerate().map(|(i, &off)| (make(i), off)));
        }
        if let Some(f) = o.fragment_stats.filter(|_| self.version >= 12) {
            out.push((LazyPart::FragmentStats, f));
        }
        if let Some(p) = o.processed_conditions {
            out.push((LazyPart::ProcessedConditions, p));
        }
        out
    }

    /// The file offset of `part`'s generic tile, `None` when this footer has no such part
    /// (an idx past the fields, min/max parts before version 11, ...).
    pub fn part_offset(&self, part: LazyPart) -> Option<u64> {
        let o = &self.offsets;
        let at = |v: &Vec<u64>, i: usize| v.get(i).copied();
        match part {
            LazyPart::RTree => Some(o.rtree),
            LazyPart::TileOffsets(i) => at(&o.tile_offsets, i),
            LazyPart::TileVarOffsets(i) => at(&o.tile_var_offsets, i),
            LazyPart::TileVarSizes(i) => at(&o.tile_var_sizes, i),
            LazyPart::TileValidityOffsets(i) => at(&o.tile_validity_offsets, i),
            LazyPart::TileMins(i) => at(&o.tile_mins, i),
            LazyPart::TileMaxs(i) => at(&o.tile_maxs, i),
            LazyPart::TileSums(i) => at(&o.tile_sums, i),
            LazyPart::TileNullCounts(i) => at(&o.tile_null_counts, i),
            LazyPart::FragmentStats => o.fragment_stats.filter(|_| self.version >= 12),
            LazyPart::ProcessedConditions => o.processed_conditions,
        }
    }

    /// The byte range of `part`'s generic tile in the metadata file whose footer starts at
    /// `footer_offset`: from the part's offset to the next larger offset of any part, or to
    /// the footer.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the footer has no such part; [`Error::Malformed`] when the
    /// part's offset is not before the footer.
    pub fn part_range(&self, part: LazyPart, footer_offset: u64) -> Result<Range<u64>> {
        let start = self.part_offset(part).ok_or_else(|| {
            Error::invalid(format!("a version-{} footer has no {part}", self.version))
        })?;
        if start >= footer_offset {
            return Err(Error::malformed(
                STRUCTURE,
                part.structure(),
                start,
                format!("{part} starts at {start}, not before the footer at {footer_offset}"),
            ));
        }
        let end = self
            .parts()
            .into_iter()
            .map(|(_, off)| off)
            .filter(|&off| off > start && off < footer_offset)
            .min()
            .unwrap_or(footer_offset);
        Ok(start..end)
    }
}

fn check_version(version: u32) -> Result<()> {
    if !(MIN_FOOTER_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            structure: STRUCTURE,
            version,
            supported: "fragment metadata footers of format versions 10 to 22",
        });
    }
    Ok(())
}

struct Head {
    version: u32,
    schema_name: String,
    dense: bool,
    null_ned: bool,
}

fn head(i: &[u8]) -> PResult<'_, Head> {
    let (r, version) = u32f("version")(i)?;
    let (r2, name_size) = u64f("schema_name_size")(r)?;
    if name_size == 0 {
        return fail(r, "schema_name_size", "the schema name is empty");
    }
    let (r2, name) = bytes(r2, name_size, "schema_name")?;
    let schema_name = crate::parse::utf8(r, name, "schema_name")?;
    let (r3, dense) = boolf("dense")(r2)?;
    let (r3, null_ned) = boolf("null_non_empty_domain")(r3)?;
    Ok((r3, Head { version, schema_name, dense, null_ned }))
}

struct Tail {
    sparse_tile_num: u64,
    last_tile_cell_num: u64,
    has_timestamps: bool,
    has_delete_meta: bool,
    file_sizes: Vec<u64>,
    file_var_sizes: Vec<u64>,
    file_validity_sizes: Vec<u64>,
    offsets: GenericTileOffsets,
}

fn tail<'a>(i: &'a [u8], version: u32, schema: &ArraySchema) -> PResult<'a, Tail> {
    let (r, sparse_tile_num) = u64f("sparse_tile_num")(i)?;
    let (mut r, last_tile_cell_num) = u64f("last_tile_cell_num")(r)?;
    let mut has_timestamps = false;
    let mut has_delete_meta = false;
    if version >= 14 {
        (r, has_timestamps) = boolf("has_timestamps")(r)?;
    }
    if version >= 15 {
        (r, has_delete_meta) = boolf("has_delete_meta")(r)?;
    }
    let num = FieldLayout::new(schema, has_timestamps, has_delete_meta).num() as u64;
    let list = |field: &'static str| move |i: &'a [u8]| u64s(i, i, num, field);
    let (r, file_sizes) = list("file_sizes")(r)?;
    let (r, file_var_sizes) = list("file_var_sizes")(r)?;
    let (r, file_validity_sizes) = list("file_validity_sizes")(r)?;
    let (r, rtree) = u64f("rtree_offset")(r)?;
    let (r, tile_offsets) = list("tile_offsets_offsets")(r)?;
    let (r, tile_var_offsets) = list("tile_var_offsets_offsets")(r)?;
    let (r, tile_var_sizes) = list("tile_var_sizes_offsets")(r)?;
    let (mut r, tile_validity_offsets) = list("tile_validity_offsets_offsets")(r)?;
    let mut o = GenericTileOffsets {
        rtree,
        tile_offsets,
        tile_var_offsets,
        tile_var_sizes,
        tile_validity_offsets,
        ..GenericTileOffsets::default()
    };
    if version >= 11 {
        (r, o.tile_mins) = list("tile_mins_offsets")(r)?;
        (r, o.tile_maxs) = list("tile_maxs_offsets")(r)?;
        (r, o.tile_sums) = list("tile_sums_offsets")(r)?;
        (r, o.tile_null_counts) = list("tile_null_counts_offsets")(r)?;
    }
    if version >= 12 {
        let (r2, f) = u64f("fragment_min_max_sum_null_count_offset")(r)?;
        o.fragment_stats = Some(f);
        r = r2;
    }
    if version >= 16 {
        let (r2, p) = u64f("processed_conditions_offset")(r)?;
        o.processed_conditions = Some(p);
        r = r2;
    }
    Ok((
        r,
        Tail {
            sparse_tile_num,
            last_tile_cell_num,
            has_timestamps,
            has_delete_meta,
            file_sizes,
            file_var_sizes,
            file_validity_sizes,
            offsets: o,
        },
    ))
}

/// A value of an integer (or datetime/time) type as `i128`; `None` for other types or short
/// input.
fn int_value(dt: Datatype, b: &[u8]) -> Option<i128> {
    use tessera_types::Primitive;
    let n = dt.size();
    if b.len() < n {
        return None;
    }
    Some(match dt {
        Datatype::Int8 => i128::from(i8::read_le(b)),
        Datatype::UInt8 => i128::from(u8::read_le(b)),
        Datatype::Int16 => i128::from(i16::read_le(b)),
        Datatype::UInt16 => i128::from(u16::read_le(b)),
        Datatype::Int32 => i128::from(i32::read_le(b)),
        Datatype::UInt32 => i128::from(u32::read_le(b)),
        Datatype::Int64 => i128::from(i64::read_le(b)),
        Datatype::UInt64 => i128::from(u64::read_le(b)),
        d if d.is_datetime() || d.is_time() => i128::from(i64::read_le(b)),
        _ => return None,
    })
}

/// `Dimension::tile_idx`: `(unsigned)(v - lo) / (unsigned)extent` in the type's width for
/// integers, `(v - lo) / extent` truncated for floats.
fn tile_index(dt: Datatype, v: &[u8], lo: &[u8], extent: &[u8]) -> Result<u64> {
    use tessera_types::Primitive;
    let bad = || Error::invalid(format!("cannot compute a {dt} tile index"));
    if let (Some(v), Some(lo), Some(e)) =
        (int_value(dt, v), int_value(dt, lo), int_value(dt, extent))
    {
        let bits = 8 * dt.size() as u32;
        let mask: u128 = if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 };
        let diff = (v - lo) as u128 & mask;
        let e = e as u128 & mask;
        if e == 0 {
            return Err(Error::invalid("zero tile extent"));
        }
        return u64::try_from(diff / e).map_err(|_| bad());
    }
    match dt {
        Datatype::Float32 if v.len() >= 4 && lo.len() >= 4 && extent.len() >= 4 => {
            let (v, lo, e) = (f32::read_le(v), f32::read_le(lo), f32::read_le(extent));
            if e == 0.0 {
                return Err(Error::invalid("zero tile extent"));
            }
            Ok(((v - lo) / e) as u64)
        }
        Datatype::Float64 if v.len() >= 8 && lo.len() >= 8 && extent.len() >= 8 => {
            let (v, lo, e) = (f64::read_le(v), f64::read_le(lo), f64::read_le(extent));
            if e == 0.0 {
                return Err(Error::invalid("zero tile extent"));
            }
            Ok(((v - lo) / e) as u64)
        }
        _ => Err(bad()),
    }
}
