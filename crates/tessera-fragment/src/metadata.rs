//! A whole `__fragment_metadata.tdb`: the generic tiles in the order of
//! `docs/format/fragment-metadata.md` ("The metadata file"), the footer and the trailing
//! footer length.

use tessera_rtree::RTree;
use tessera_schema::ArraySchema;
use tessera_types::EncryptionKey;

use crate::fields::{FieldInfo, FieldLayout};
use crate::footer::{Footer, GenericTileOffsets, LazyPart, dim_types};
use crate::parts::{
    FragmentStats, ProcessedConditions, TileMinMax, TileSums, parse_u64s, u64s_payload,
};
use crate::{Error, Result};

const STRUCTURE: &str = "fragment metadata";

/// Everything a fragment metadata file holds, with every lazily loaded part decoded.
///
/// Per-field vectors are indexed by field idx ([`FieldLayout`]). [`FragmentMetadata::to_bytes`]
/// recomputes the generic-tile offsets of the footer, so a value built from scratch (by a
/// writer) only needs the footer's other fields.
#[derive(Debug, Clone, PartialEq)]
pub struct FragmentMetadata {
    /// The footer. Its `offsets` are those read from the file (or whatever a writer put
    /// there; [`FragmentMetadata::to_bytes`] ignores them).
    pub footer: Footer,
    /// The R-tree over the tile MBRs (no levels for dense fragments).
    pub rtree: RTree,
    /// Tile offsets in each field's fixed data file.
    pub tile_offsets: Vec<Vec<u64>>,
    /// Tile offsets in each field's var data file.
    pub tile_var_offsets: Vec<Vec<u64>>,
    /// Unfiltered size of each var tile.
    pub tile_var_sizes: Vec<Vec<u64>>,
    /// Tile offsets in each field's validity file.
    pub tile_validity_offsets: Vec<Vec<u64>>,
    /// Tile minimums (version 11 on; empty vectors before).
    pub tile_mins: Vec<TileMinMax>,
    /// Tile maximums (version 11 on).
    pub tile_maxs: Vec<TileMinMax>,
    /// Tile sums (version 11 on).
    pub tile_sums: Vec<TileSums>,
    /// Tile null counts (version 11 on).
    pub tile_null_counts: Vec<Vec<u64>>,
    /// Fragment min/max/sum/null count (version 12 on).
    pub fragment_stats: Option<FragmentStats>,
    /// Processed delete/update conditions (version 16 on; libtiledb also writes the tile for
    /// version 15, without a footer offset).
    pub processed_conditions: Option<ProcessedConditions>,
}

impl FragmentMetadata {
    /// Metadata for a fragment of `schema` described by `footer`, with every per-field
    /// buffer sized for the footer's tile count as libtiledb's `set_num_tiles` sizes them
    /// (zeros), an R-tree without levels, no processed conditions, and fragment statistics
    /// computed from those buffers. A writer fills in the tiles it writes and calls
    /// [`FragmentMetadata::update_fragment_stats`].
    ///
    /// # Errors
    /// As [`Footer::tile_num`] and [`crate::stats::field_tile_metadata`].
    pub fn new(footer: Footer, schema: &ArraySchema) -> Result<Self> {
        let layout = footer.layout(schema);
        let num = layout.num();
        let tile_num = footer.tile_num(schema)?;
        let n = usize::try_from(tile_num).map_err(|_| Error::invalid("too many tiles"))?;
        let cell_num = footer.cell_num_fn(schema)?;
        let mut md = FragmentMetadata {
            rtree: RTree::default(),
            tile_offsets: vec![vec![0; n]; num],
            tile_var_offsets: vec![vec![0; n]; num],
            tile_var_sizes: vec![vec![0; n]; num],
            tile_validity_offsets: vec![vec![0; n]; num],
            tile_mins: Vec::with_capacity(num),
            tile_maxs: Vec::with_capacity(num),
            tile_sums: Vec::with_capacity(num),
            tile_null_counts: Vec::with_capacity(num),
            fragment_stats: None,
            processed_conditions: (footer.version >= 15).then(ProcessedConditions::default),
            footer,
        };
        for f in FieldInfo::all(schema, &layout)? {
            let m = crate::stats::field_tile_metadata(&f, tile_num, &[], &cell_num)?;
            md.tile_mins.push(m.mins);
            md.tile_maxs.push(m.maxs);
            md.tile_sums.push(m.sums);
            md.tile_null_counts.push(m.null_counts);
        }
        md.update_fragment_stats(schema)?;
        Ok(md)
    }

    /// Recomputes [`FragmentMetadata::fragment_stats`] from the tile buffers (version 12
    /// on; older fragments have none).
    ///
    /// # Errors
    /// As [`FragmentMetadata::compute_fragment_stats`].
    pub fn update_fragment_stats(&mut self, schema: &ArraySchema) -> Result<()> {
        self.fragment_stats = if self.footer.version >= 12 {
            Some(self.compute_fragment_stats(schema)?)
        } else {
            None
        };
        Ok(())
    }

    /// Parses a whole metadata file of a fragment of `schema`: the footer from the trailing
    /// length, then every generic tile in file order, each checked to start where the footer
    /// says and where the previous one ended.
    ///
    /// # Errors
    /// As [`Footer::parse_file`]; [`Error::Tile`] for a tile that cannot be decoded;
    /// [`Error::Malformed`] when a tile is not where the footer says, or bytes lie between
    /// the last tile and the footer; the part parsers' errors.
    pub fn parse_all(file: &[u8], schema: &ArraySchema) -> Result<Self> {
        Self::parse_all_with_key(file, schema, None)
    }

    /// [`Self::parse_all`] of a fragment of an array encrypted with `key` (the footer is
    /// plain, every generic tile encrypted).
    ///
    /// # Errors
    /// As [`Self::parse_all`].
    pub fn parse_all_with_key(
        file: &[u8],
        schema: &ArraySchema,
        key: Option<&EncryptionKey>,
    ) -> Result<Self> {
        let size = file.len() as u64;
        let footer = Footer::parse_file(file, schema)?;
        let len_at = size - 8;
        let footer_start = len_at - crate::parse::read_u64(&file[len_at as usize..]);
        let tiles = &file[..footer_start as usize];
        let layout = footer.layout(schema);
        let dims = dim_types(schema);

        let mut cur = TileCursor { tiles, pos: 0, key };
        let at_part = |part: LazyPart, at: u64| {
            move |e: Error| Error::Part { part, offset: at, source: Box::new(e) }
        };

        let p = cur.next(LazyPart::RTree, footer.offsets.rtree)?;
        let rtree = RTree::parse(&p, &dims).map_err(|source| Error::RTree {
            structure: "R-tree",
            offset: footer.offsets.rtree,
            source,
        })?;
        let num = layout.num();
        let mut u64_group = |make: fn(usize) -> LazyPart, offs: &[u64]| -> Result<Vec<Vec<u64>>> {
            (0..num)
                .map(|i| {
                    let part = make(i);
                    let p = cur.next(part, offs[i])?;
                    parse_u64s(part, &p).map_err(at_part(part, offs[i]))
                })
                .collect()
        };
        let o = &footer.offsets;
        let tile_offsets = u64_group(LazyPart::TileOffsets, &o.tile_offsets)?;
        let tile_var_offsets = u64_group(LazyPart::TileVarOffsets, &o.tile_var_offsets)?;
        let tile_var_sizes = u64_group(LazyPart::TileVarSizes, &o.tile_var_sizes)?;
        let tile_validity_offsets =
            u64_group(LazyPart::TileValidityOffsets, &o.tile_validity_offsets)?;
        let mut tile_mins = Vec::new();
        let mut tile_maxs = Vec::new();
        let mut tile_sums = Vec::new();
        let mut tile_null_counts = Vec::new();
        if footer.version >= 11 {
            for (i, &at) in o.tile_mins.iter().enumerate() {
                let part = LazyPart::TileMins(i);
                tile_mins.push(
                    TileMinMax::parse(part, &cur.next(part, at)?).map_err(at_part(part, at))?,
                );
            }
            for (i, &at) in o.tile_maxs.iter().enumerate() {
                let part = LazyPart::TileMaxs(i);
                tile_maxs.push(
                    TileMinMax::parse(part, &cur.next(part, at)?).map_err(at_part(part, at))?,
                );
            }
            for (i, &at) in o.tile_sums.iter().enumerate() {
                let part = LazyPart::TileSums(i);
                tile_sums.push(TileSums::parse(&cur.next(part, at)?).map_err(at_part(part, at))?);
            }
            for (i, &at) in o.tile_null_counts.iter().enumerate() {
                let part = LazyPart::TileNullCounts(i);
                tile_null_counts
                    .push(parse_u64s(part, &cur.next(part, at)?).map_err(at_part(part, at))?);
            }
        }
        let mut fragment_stats = None;
        if let Some(at) = footer.part_offset(LazyPart::FragmentStats) {
            let part = LazyPart::FragmentStats;
            fragment_stats = Some(
                FragmentStats::parse(&cur.next(part, at)?, &layout).map_err(at_part(part, at))?,
            );
        }
        let mut processed_conditions = None;
        let part = LazyPart::ProcessedConditions;
        if let Some(at) = o.processed_conditions {
            processed_conditions =
                Some(ProcessedConditions::parse(&cur.next(part, at)?).map_err(at_part(part, at))?);
        } else if footer.version == 15 && cur.pos < footer_start {
            // store_v15_or_higher writes this tile for version 15 too, without an offset.
            let at = cur.pos;
            processed_conditions =
                Some(ProcessedConditions::parse(&cur.next(part, at)?).map_err(at_part(part, at))?);
        }
        if cur.pos != footer_start {
            return Err(Error::malformed(
                STRUCTURE,
                "footer",
                cur.pos,
                format!(
                    "{} bytes lie between the last generic tile and the footer",
                    footer_start - cur.pos
                ),
            ));
        }
        Ok(FragmentMetadata {
            footer,
            rtree,
            tile_offsets,
            tile_var_offsets,
            tile_var_sizes,
            tile_validity_offsets,
            tile_mins,
            tile_maxs,
            tile_sums,
            tile_null_counts,
            fragment_stats,
            processed_conditions,
        })
    }

    /// The whole file: the generic tiles in their order (GZIP level 1, byte-identical to
    /// libtiledb's), the footer with the offsets where they landed, and the footer length.
    ///
    /// # Errors
    /// [`Error::Invalid`] when a per-field vector does not have one entry per field or the
    /// footer does not fit the schema; [`Error::Tile`] when a tile cannot be encoded.
    pub fn to_bytes(&self, schema: &ArraySchema) -> Result<Vec<u8>> {
        self.to_bytes_with_key(schema, None)
    }

    /// [`Self::to_bytes`] for an array encrypted with `key`: every generic tile encrypted,
    /// the footer plain, as libtiledb writes them.
    ///
    /// # Errors
    /// As [`Self::to_bytes`].
    pub fn to_bytes_with_key(
        &self,
        schema: &ArraySchema,
        key: Option<&EncryptionKey>,
    ) -> Result<Vec<u8>> {
        let layout = self.footer.layout(schema);
        let num = layout.num();
        let v = self.footer.version;
        let check = |name: &str, len: usize, want: usize| -> Result<()> {
            if len == want {
                Ok(())
            } else {
                Err(Error::invalid(format!(
                    "{name} has {len} entries, the fragment has {want} fields"
                )))
            }
        };
        check("tile_offsets", self.tile_offsets.len(), num)?;
        check("tile_var_offsets", self.tile_var_offsets.len(), num)?;
        check("tile_var_sizes", self.tile_var_sizes.len(), num)?;
        check("tile_validity_offsets", self.tile_validity_offsets.len(), num)?;
        let meta_num = if v >= 11 { num } else { 0 };
        check("tile_mins", self.tile_mins.len(), meta_num)?;
        check("tile_maxs", self.tile_maxs.len(), meta_num)?;
        check("tile_sums", self.tile_sums.len(), meta_num)?;
        check("tile_null_counts", self.tile_null_counts.len(), meta_num)?;
        if v >= 12 && self.fragment_stats.is_none() {
            return Err(Error::invalid(format!("a version-{v} fragment needs fragment stats")));
        }
        if let Some(s) = &self.fragment_stats {
            check("fragment_stats", s.fields.len(), num)?;
        }
        if v >= 16 && self.processed_conditions.is_none() {
            return Err(Error::invalid(format!(
                "a version-{v} fragment needs processed conditions"
            )));
        }

        let dims = dim_types(schema);
        let mut out = Vec::new();
        let mut put = |part: LazyPart, payload: &[u8]| -> Result<u64> {
            let at = out.len() as u64;
            let tile =
                tessera_tile::write_generic_tile_with_key(payload, v, key).map_err(|source| {
                    Error::Tile { structure: part.structure(), offset: at, source }
                })?;
            out.extend_from_slice(&tile);
            Ok(at)
        };
        let mut o = GenericTileOffsets {
            rtree: put(LazyPart::RTree, &self.rtree.to_bytes(&dims))?,
            ..GenericTileOffsets::default()
        };
        for (i, t) in self.tile_offsets.iter().enumerate() {
            o.tile_offsets.push(put(LazyPart::TileOffsets(i), &u64s_payload(t))?);
        }
        for (i, t) in self.tile_var_offsets.iter().enumerate() {
            o.tile_var_offsets.push(put(LazyPart::TileVarOffsets(i), &u64s_payload(t))?);
        }
        for (i, t) in self.tile_var_sizes.iter().enumerate() {
            o.tile_var_sizes.push(put(LazyPart::TileVarSizes(i), &u64s_payload(t))?);
        }
        for (i, t) in self.tile_validity_offsets.iter().enumerate() {
            o.tile_validity_offsets.push(put(LazyPart::TileValidityOffsets(i), &u64s_payload(t))?);
        }
        for (i, t) in self.tile_mins.iter().enumerate() {
            o.tile_mins.push(put(LazyPart::TileMins(i), &t.to_payload())?);
        }
        for (i, t) in self.tile_maxs.iter().enumerate() {
            o.tile_maxs.push(put(LazyPart::TileMaxs(i), &t.to_payload())?);
        }
        for (i, t) in self.tile_sums.iter().enumerate() {
            o.tile_sums.push(put(LazyPart::TileSums(i), &t.to_payload())?);
        }
        for (i, t) in self.tile_null_counts.iter().enumerate() {
            o.tile_null_counts.push(put(LazyPart::TileNullCounts(i), &u64s_payload(t))?);
        }
        if v == 11 {
            // libtiledb's footer writer puts a (never read) fragment stats offset here.
            o.fragment_stats = Some(self.footer.offsets.fragment_stats.unwrap_or_default());
        }
        if let Some(s) = &self.fragment_stats {
            o.fragment_stats = Some(put(LazyPart::FragmentStats, &s.to_payload())?);
        }
        if let Some(c) = &self.processed_conditions {
            let at = put(LazyPart::ProcessedConditions, &c.to_payload())?;
            if v >= 16 {
                o.processed_conditions = Some(at);
            }
        }
        let footer = Footer { offsets: o, ..self.footer.clone() };
        let tail = footer.to_bytes_with_length(schema)?;
        out.extend_from_slice(&tail);
        Ok(out)
    }

    /// The idx space of this fragment.
    pub fn layout(&self, schema: &ArraySchema) -> FieldLayout {
        self.footer.layout(schema)
    }

    /// The fragment-level statistics recomputed from the tile buffers, as libtiledb computes
    /// them when it stores a fragment (see [`crate::stats::fragment_stats`]); for a fragment
    /// written by libtiledb this equals [`FragmentMetadata::fragment_stats`].
    ///
    /// # Errors
    /// As [`crate::stats::fragment_stats`] and [`Footer::tile_num`].
    pub fn compute_fragment_stats(&self, schema: &ArraySchema) -> Result<FragmentStats> {
        let fields = self.fields(schema)?;
        let tile_num = self.footer.tile_num(schema)?;
        let cell_num = self.footer.cell_num_fn(schema)?;
        crate::stats::fragment_stats(
            &fields,
            tile_num,
            cell_num,
            &self.tile_mins,
            &self.tile_maxs,
            &self.tile_sums,
            &self.tile_null_counts,
        )
    }

    /// Every field of this fragment in idx order.
    ///
    /// # Errors
    /// As [`FieldInfo::new`].
    pub fn fields(&self, schema: &ArraySchema) -> Result<Vec<FieldInfo>> {
        FieldInfo::all(schema, &self.layout(schema))
    }
}

/// Walks the generic tiles of a metadata file, checking each starts where the previous ended.
struct TileCursor<'a> {
    tiles: &'a [u8],
    pos: u64,
    key: Option<&'a EncryptionKey>,
}

impl TileCursor<'_> {
    fn next(&mut self, part: LazyPart, at: u64) -> Result<Vec<u8>> {
        if at != self.pos {
            return Err(Error::malformed(
                STRUCTURE,
                part.structure(),
                self.pos,
                format!(
                    "the footer puts {part} at {at}, but the previous tile ends at {}",
                    self.pos
                ),
            ));
        }
        let (tile, end) = tessera_tile::read_generic_tile_at_with_key(self.tiles, at, self.key)
            .map_err(|source| Error::Tile { structure: part.structure(), offset: at, source })?;
        self.pos = end;
        Ok(tile.payload)
    }
}
