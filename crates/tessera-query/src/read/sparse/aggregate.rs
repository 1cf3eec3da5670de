//! Aggregates over a sparse read: tiles scanned with their selections, or decided from
//! their metadata (min, max, sum, null count) without being read.

use super::*;

impl<'a> SparseReader<'a> {
    /// Aggregates the cells of the read (see [`crate::aggregate`]): the attributes read are
    /// `plan`'s fields, in order. Whole tiles inside the subarray of fragments that no
    /// condition, delete or other fragment affects are answered from tile metadata when
    /// `use_metadata` and the metadata is exact for them. One partial per tile, folded in
    /// (fragment, tile) order.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode; condition errors.
    pub(crate) fn aggregate(&mut self, plan: &Plan, use_metadata: bool) -> Result<Partial> {
        let mut parts: BTreeMap<(usize, u64), Partial> = BTreeMap::new();
        if use_metadata {
            let storage = self.array.storage().as_ref();
            let (dims, neds) = (&self.dims, &self.neds);
            let cond = self.filter.condition.as_ref();
            let found: Vec<Vec<((usize, u64), Partial)>> = self
                .frags
                .par_iter_mut()
                .map(|frag| tiles_from_metadata(storage, plan, frag, dims, neds, cond))
                .collect::<Result<_>>()?;
            parts.extend(found.into_iter().flatten());
        }
        match self.mode {
            Mode::Concat => {
                self.started = true;
                for f in 0..self.frags.len() {
                    loop {
                        self.ensure(f)?;
                        if self.cursors[f].tiles.is_empty() {
                            break;
                        }
                        let tiles: Vec<Arc<LoadedTile>> = self.cursors[f].tiles.drain(..).collect();
                        let done: Vec<((usize, u64), Partial)> = tiles
                            .par_iter()
                            .map(|t| {
                                let mut p = Partial::new(plan);
                                self.scan_tile(plan, t, Cells::List(&t.sel), &mut p);
                                ((self.frags[t.frag].order, t.tile), p)
                            })
                            .collect();
                        for (k, p) in done {
                            merge_into(&mut parts, plan, k, &p);
                        }
                    }
                }
            }
            Mode::Merge | Mode::Sort => {
                let mut group: Vec<u32> = Vec::new();
                let mut current: Option<Arc<LoadedTile>> = None;
                loop {
                    let next = self.next_cell()?;
                    let same = match (&next, &current) {
                        (Some((t, _)), Some(c)) => Arc::ptr_eq(t, c),
                        _ => false,
                    };
                    if !same {
                        if let Some(c) = current.take() {
                            // Into the tile's partial: its cells are aggregated in order.
                            let key = (self.frags[c.frag].order, c.tile);
                            let p = parts.entry(key).or_insert_with(|| Partial::new(plan));
                            self.scan_tile(plan, &c, Cells::List(&group), p);
                        }
                        group.clear();
                    }
                    let Some((t, k)) = next else { break };
                    group.push(t.sel[k]);
                    if current.is_none() {
                        current = Some(t);
                    }
                }
            }
        }
        let mut total = Partial::new(plan);
        for p in parts.values() {
            total.merge(plan, p);
        }
        Ok(total)
    }

    /// Adds `cells` of loaded tile `t` to `part`.
    pub(super) fn scan_tile(
        &self,
        plan: &Plan,
        t: &LoadedTile,
        cells: Cells<'_>,
        part: &mut Partial,
    ) {
        let n = match cells {
            Cells::Range(s, e) => (e - s) as u64,
            Cells::List(l) => l.len() as u64,
            Cells::Masked(_, m) => m.iter().filter(|&&k| k).count() as u64,
        };
        part.add_cells(n);
        for f in 0..plan.fields.len() {
            let s = self.out_slots[f];
            let (datatype, cell_val_num) = self.slot_types[s];
            let view = t.fields[s].as_ref().map(|d| ColumnView {
                datatype,
                cell_val_num,
                data: &d.data,
                offsets: d.offsets.as_deref(),
                validity: d.validity.as_deref(),
            });
            part.scan(plan, f, view.as_ref(), cells);
        }
    }
}

/// Folds `p` into the partial of tile `key` (cells of one tile may come in several groups).
pub(super) fn merge_into(
    parts: &mut BTreeMap<(usize, u64), Partial>,
    plan: &Plan,
    key: (usize, u64),
    p: &Partial,
) {
    match parts.get_mut(&key) {
        Some(q) => q.merge(plan, p),
        None => {
            parts.insert(key, p.clone());
        }
    }
}

/// The partial aggregates of the tiles of `frag` that tile metadata answers exactly (whole
/// tiles inside the subarray, of a fragment no delete, time filter or other fragment
/// affects, whose metadata shows that every cell satisfies the condition `cond`, if any),
/// keyed by (fragment order, tile); those tiles are removed from the fragment's list.
pub(super) fn tiles_from_metadata(
    storage: &dyn tessera_storage::Storage,
    plan: &Plan,
    frag: &mut SFrag,
    dims: &[DimType],
    neds: &[Mbr],
    cond: Option<&QueryCondition>,
) -> Result<Vec<((usize, u64), Partial)>> {
    if (frag.filtered && !frag.cond_only) || frag.partial_ts || !frag.tiles.iter().any(|t| t.full) {
        return Ok(Vec::new());
    }
    // With a condition, only the tiles every cell of which satisfies it.
    let decide = match cond.filter(|_| frag.filtered) {
        Some(c) => {
            let meta = ConditionMeta::load(storage, &frag.fragment, c)?;
            if meta.is_empty() {
                return Ok(Vec::new());
            }
            Some((c, meta))
        }
        None => None,
    };
    let alone = if frag.alone {
        vec![true; frag.tiles.len()]
    } else if frag.has_ts {
        return Ok(Vec::new());
    } else {
        lone_tiles(storage, dims, &frag.fragment, &frag.tiles, neds, frag.index)?
    };
    if !alone.iter().any(|&a| a) {
        return Ok(Vec::new());
    }
    let mut metas: Vec<Option<FieldMeta>> = Vec::with_capacity(plan.fields.len());
    let mut stored: Vec<bool> = Vec::with_capacity(plan.fields.len());
    // Dimensions have no tile min/max metadata: their tiles' MBRs bound them exactly.
    let rtree = if plan.fields.iter().any(|f| f.is_dim() && f.want.min_max) {
        Some(frag.fragment.rtree(storage)?)
    } else {
        None
    };
    for field in &plan.fields {
        let has = match field.source {
            Source::Dim(_) => true,
            Source::Attr(_) => {
                frag.fragment.schema().attributes.iter().any(|a| a.name == field.name)
            }
        };
        stored.push(has);
        if !has {
            metas.push(None);
            continue;
        }
        match FieldMeta::load(storage, &frag.fragment, &field.name, field.want)? {
            Some(m) => metas.push(Some(m)),
            None => return Ok(Vec::new()),
        }
    }
    let mut out = Vec::new();
    let cells = frag.cells;
    let mut k = 0;
    frag.tiles.retain(|ov| {
        k += 1;
        if !ov.full || !alone[k - 1] {
            return true;
        }
        let n = cells.get(ov.tile);
        if let Some((c, meta)) = &decide
            && meta.decide(c, ov.tile, n) != Decided::All
        {
            return true;
        }
        let mut stats = Vec::with_capacity(metas.len());
        for (m, field) in metas.iter().zip(&plan.fields) {
            let Some(m) = m else {
                stats.push(None);
                continue;
            };
            let exact = match field.source {
                Source::Dim(d) => dim_stats(m, rtree.as_deref(), field, d, ov.tile, n),
                Source::Attr(_) => m.exact(ov.tile, n, field.want),
            };
            match exact {
                Some(s) => stats.push(Some(s)),
                None => return true,
            }
        }
        let mut p = Partial::new(plan);
        p.add_tile_stats(plan, n, &stats);
        for (f, has) in stored.iter().enumerate() {
            if !has {
                p.scan_fill(plan, f, n);
            }
        }
        out.push(((frag.order, ov.tile), p));
        false
    });
    Ok(out)
}

/// The exact statistics of dimension `d` (`field` of the plan) in tile `tile` (of `n` cells):
/// the sum from the tile metadata, the minimum and maximum from the tile's MBR (the exact
/// bounds of its coordinates). `None` where they might differ from an aggregate of the
/// cells: a float bound that is zero (`-0.0` and `0.0` compare equal, so which one an
/// aggregate keeps depends on the order of the cells) or NaN.
pub(super) fn dim_stats<'a>(
    meta: &'a FieldMeta,
    rtree: Option<&'a RTree>,
    field: &AggField,
    d: usize,
    tile: u64,
    n: u64,
) -> Option<ExactStats<'a>> {
    let mut stats = meta.exact(tile, n, Want { min_max: false, ..field.want })?;
    if field.want.min_max && n > 0 {
        let range = rtree?.leaf(tile)?.range(d)?;
        let doubtful = |b: &[u8]| {
            let v = match field.datatype {
                Datatype::Float32 => b.try_into().map(|x| f64::from(f32::from_le_bytes(x))),
                Datatype::Float64 => b.try_into().map(f64::from_le_bytes),
                _ => return false,
            };
            !matches!(v, Ok(v) if v != 0.0 && !v.is_nan())
        };
        let size = field.datatype.size();
        let fixed = field.cell_val_num != tessera_types::CELL_VAL_NUM_VAR;
        if doubtful(range.low)
            || doubtful(range.high)
            || (fixed && (range.low.len() != size || range.high.len() != size))
        {
            return None;
        }
        stats.min = Some(range.low);
        stats.max = Some(range.high);
    }
    Some(stats)
}
