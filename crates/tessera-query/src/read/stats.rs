//! Tile metadata of fragments (tile mins, maxs, sums and null counts,
//! `docs/format/fragment-metadata.md`) as reads use it: to skip tiles no cell of which can
//! satisfy a query condition, and to answer aggregates over whole tiles without decoding them.
//!
//! libtiledb's metadata generator has quirks (see `tessera_fragment::stats`), so only what
//! bounds the cells exactly is used: [`TileStats::from_metadata`] for pruning, and
//! [`FieldMeta::exact`] for aggregates, which refuses a tile (so it is decoded instead)
//! whenever a statistic it needs might differ from the one computed from the cells.

use tessera_fragment::{Field, FieldInfo, LazyPart, TileMinMax, TileSums};
use tessera_storage::Storage;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use crate::condition::{QueryCondition, TileStats};
use crate::fragment::Fragment;
use crate::{Error, Result};

/// What a fragment's tile metadata says about a query condition, tile by tile: whether no
/// cell of a tile can satisfy it (the tile is skipped), or every cell does (an aggregate
/// answers the tile from its metadata as if there were no condition).
#[derive(Debug)]
pub(crate) struct ConditionMeta {
    /// The metadata of each field the condition reads (`None`: none usable).
    fields: Vec<(String, Option<FieldMeta>)>,
}

/// How a tile's metadata decides a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decided {
    /// No cell can satisfy it.
    None,
    /// Every cell satisfies it.
    All,
    /// The cells must be evaluated.
    Some,
}

impl ConditionMeta {
    /// Loads the metadata of the fields `cond` reads in `fragment`.
    pub(crate) fn load(
        storage: &dyn Storage,
        fragment: &Fragment,
        cond: &QueryCondition,
    ) -> Result<Self> {
        // (Float min/max come with the tile sums, which tell whether a tile holds a NaN.)
        let want = Want { min_max: true, sums: false, null_counts: true };
        let fields = cond
            .fields()
            .into_iter()
            .map(|name| Ok((name.to_owned(), FieldMeta::load(storage, fragment, name, want)?)))
            .collect::<Result<_>>()?;
        Ok(ConditionMeta { fields })
    }

    /// Whether no field of the condition has usable metadata (nothing can be decided).
    pub(crate) fn is_empty(&self) -> bool {
        self.fields.iter().all(|(_, m)| m.is_none())
    }

    /// What the metadata of tile `t` (of `cell_num` cells) decides about `cond`.
    pub(crate) fn decide(&self, cond: &QueryCondition, t: u64, cell_num: u64) -> Decided {
        let meta =
            |name: &str| self.fields.iter().find(|(m, _)| m == name).and_then(|(_, m)| m.as_ref());
        if !cond.may_match(&|name: &str| meta(name).map(|m| m.prune_stats(t, cell_num))) {
            Decided::None
        } else if cond.must_match(&|name: &str| meta(name).map(|m| m.decide_stats(t, cell_num))) {
            Decided::All
        } else {
            Decided::Some
        }
    }
}

/// Which parts of a field's tile metadata to load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Want {
    /// Tile mins and maxs.
    pub(crate) min_max: bool,
    /// Tile sums.
    pub(crate) sums: bool,
    /// Tile null counts.
    pub(crate) null_counts: bool,
}

/// The tile metadata of one field of one fragment.
#[derive(Debug)]
pub(crate) struct FieldMeta {
    /// What the metadata rules need to know about the field.
    pub(crate) info: FieldInfo,
    mins: Option<TileMinMax>,
    maxs: Option<TileMinMax>,
    sums: Option<TileSums>,
    null_counts: Vec<u64>,
    /// The fragment's format version.
    version: u32,
}

/// The exact statistics of one tile of one field, for aggregates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExactStats<'a> {
    /// Null cells.
    pub(crate) null_count: u64,
    /// The sum's 8 bytes (typed by the field's sum type), when asked for.
    pub(crate) sum: Option<u64>,
    /// Minimum and maximum value bytes, when asked for and the tile has a non-null cell.
    pub(crate) min: Option<&'a [u8]>,
    /// See `min`.
    pub(crate) max: Option<&'a [u8]>,
}

impl FieldMeta {
    /// Loads the parts `want` asks for of the field `name` of `fragment` (an attribute or a
    /// dimension of the fragment's own schema). `None` when the fragment does not have the
    /// field or its format stores no tile metadata.
    ///
    /// # Errors
    /// Storage errors and corrupt metadata.
    pub(crate) fn load(
        storage: &dyn Storage,
        fragment: &Fragment,
        name: &str,
        want: Want,
    ) -> Result<Option<Self>> {
        let schema = fragment.schema();
        let footer = fragment.footer();
        let field = if let Some(i) = schema.attributes.iter().position(|a| a.name == name) {
            Field::Attribute(i)
        } else if let Some(j) = schema.dimensions.iter().position(|d| d.name == name) {
            Field::Dimension(j)
        } else {
            return Ok(None);
        };
        let Some(idx) = footer.field_idx(schema, field) else { return Ok(None) };
        if footer.part_offset(LazyPart::TileMins(idx)).is_none() {
            return Ok(None);
        }
        let corrupt = |source| Error::Fragment {
            file: format!("{}/{}", fragment.dir(), crate::FRAGMENT_METADATA_FILE),
            source: Box::new(source),
        };
        let info = FieldInfo::new(schema, field).map_err(corrupt)?;
        let min_max = |part: LazyPart| -> Result<Option<TileMinMax>> {
            if !want.min_max || !info.has_min_max() {
                return Ok(None);
            }
            let payload = fragment.part(storage, part)?;
            TileMinMax::parse(part, &payload).map(Some).map_err(corrupt)
        };
        let mins = min_max(LazyPart::TileMins(idx))?;
        let maxs = min_max(LazyPart::TileMaxs(idx))?;
        // Float min/max are trusted only in tiles whose sum shows they hold no NaN.
        let float = matches!(info.datatype, Datatype::Float32 | Datatype::Float64);
        let sums = if (want.sums || (want.min_max && float)) && info.has_sum() {
            let payload = fragment.part(storage, LazyPart::TileSums(idx))?;
            Some(TileSums::parse(&payload).map_err(corrupt)?)
        } else {
            None
        };
        let null_counts = if want.null_counts && info.nullable {
            fragment.u64s(storage, LazyPart::TileNullCounts(idx))?
        } else {
            Vec::new()
        };
        Ok(Some(FieldMeta { info, mins, maxs, sums, null_counts, version: footer.version }))
    }

    fn min_max(&self, t: u64) -> (Option<&[u8]>, Option<&[u8]>) {
        (self.value_of(self.mins.as_ref(), t), self.value_of(self.maxs.as_ref(), t))
    }

    fn value_of<'s>(&self, m: Option<&'s TileMinMax>, t: u64) -> Option<&'s [u8]> {
        let m = m?;
        if self.info.var { m.var_value(t).ok() } else { m.fixed_value(t, self.info.cell_size) }
    }

    /// The statistics of tile `t` (holding `cell_num` cells) for pruning, as
    /// [`TileStats::from_metadata`] keeps them.
    /// Float bounds are kept for tiles whose sum is finite and did not saturate: such a
    /// tile holds no `NaN` (which would spoil the generator's min and max).
    pub(crate) fn prune_stats(&self, t: u64, cell_num: u64) -> TileStats<'_> {
        let (min, max) = self.min_max(t);
        let nulls = self.null_counts.get(t as usize).copied();
        let mut stats = TileStats::from_metadata(&self.info, cell_num, nulls, min, max);
        let float = matches!(self.info.datatype, Datatype::Float32 | Datatype::Float64);
        if float && self.info.has_min_max() {
            let sum =
                self.sums.as_ref().and_then(|s| s.0.get(t as usize)).map(|&r| f64::from_bits(r));
            if sum.is_some_and(|s| s.is_finite() && s.abs() != f64::MAX) {
                stats.min = min;
                stats.max = max;
            }
        }
        stats
    }

    /// The statistics of tile `t` for deciding that every cell satisfies a condition
    /// ([`crate::QueryCondition::must_match`]): [`Self::prune_stats`], with a null count of
    /// zero for a field that is not nullable.
    pub(crate) fn decide_stats(&self, t: u64, cell_num: u64) -> TileStats<'_> {
        let mut stats = self.prune_stats(t, cell_num);
        if !self.info.nullable {
            stats.null_count = Some(0);
        }
        stats
    }

    /// Whether the tile null counts count exactly the null cells of a tile
    /// (`docs/format/fragment-metadata.md`, "Tile null counts", and the generator's quirks:
    /// in dense fragments only fixed-size fields with min/max; in sparse fragments fields
    /// with min/max and fixed-size fields of the types the generator dispatches).
    fn exact_null_counts(&self) -> bool {
        let i = &self.info;
        if !i.nullable {
            return true;
        }
        if i.dense_array {
            !i.var && i.has_min_max()
        } else {
            i.has_min_max()
                || (!i.var
                    && !matches!(
                        i.datatype,
                        Datatype::StringUtf8
                            | Datatype::StringUtf16
                            | Datatype::StringUtf32
                            | Datatype::StringUcs2
                            | Datatype::StringUcs4
                            | Datatype::Any
                    ))
        }
    }

    /// The statistics of tile `t` (holding `cell_num` cells) exactly as computing them from
    /// the tile's cells would give, or `None` when the metadata cannot be trusted for what
    /// `want` asks (the tile must then be decoded):
    ///
    /// * null counts only where they are exact (see `exact_null_counts`);
    /// * sums that did not saturate (a saturated tile sum may have stopped early);
    /// * min/max of floats only in tiles whose sum is finite and did not saturate (so no
    ///   cell is `NaN`, which would reset the generator's running min and max, or infinite)
    ///   and whose min/max is not zero (the generator keeps the last of `0.0` and `-0.0`,
    ///   an aggregate the first); never for var-sized fields of dense fragments, for
    ///   fixed-size strings of dense fragments, or for strings holding a NUL byte (the
    ///   generator compares with `strncmp`).
    pub(crate) fn exact(&self, t: u64, cell_num: u64, want: Want) -> Option<ExactStats<'_>> {
        let i = &self.info;
        let null_count = if i.nullable {
            if !self.exact_null_counts() {
                return None;
            }
            *self.null_counts.get(t as usize)?
        } else {
            0
        };
        if null_count > cell_num {
            return None;
        }
        let mut out = ExactStats { null_count, sum: None, min: None, max: None };
        let float = matches!(i.datatype, Datatype::Float32 | Datatype::Float64);
        // The tile sum, when it did not saturate (a saturated sum may have stopped early).
        let sum = || -> Option<u64> {
            let raw = *self.sums.as_ref()?.0.get(t as usize)?;
            let saturated = match i.sum_type() {
                tessera_fragment::SumType::I64 => raw as i64 == i64::MAX || raw as i64 == i64::MIN,
                tessera_fragment::SumType::U64 => raw == u64::MAX,
                tessera_fragment::SumType::F64 => f64::from_bits(raw).abs() == f64::MAX,
            };
            (!saturated).then_some(raw)
        };
        if want.sums {
            out.sum = Some(sum()?);
        }
        if want.min_max && null_count < cell_num {
            let string = i.is_string();
            if float && !sum().is_some_and(|raw| f64::from_bits(raw).is_finite()) {
                return None;
            }
            if !i.has_min_max()
                || (i.dense_array && (i.var || string))
                || (string && i.cell_val_num != CELL_VAL_NUM_VAR && self.version <= 20)
            {
                return None;
            }
            let (min, max) = self.min_max(t);
            let (min, max) = (min?, max?);
            if string && (min.contains(&0) || max.contains(&0)) {
                return None;
            }
            if !i.var && (min.len() as u64 != i.cell_size || max.len() as u64 != i.cell_size) {
                return None;
            }
            let zero = |b: &[u8]| match i.datatype {
                Datatype::Float32 => f32::from_le_bytes(b.try_into().unwrap_or_default()) == 0.0,
                Datatype::Float64 => f64::from_le_bytes(b.try_into().unwrap_or_default()) == 0.0,
                _ => false,
            };
            if zero(min) || zero(max) {
                return None;
            }
            out.min = Some(min);
            out.max = Some(max);
        }
        Some(out)
    }
}
