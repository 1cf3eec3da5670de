//! Aggregates over a dense read: the runs of each batch scanned without building columns,
//! whole space tiles answered from tile metadata where it is exact, fill values counted.

use super::*;

impl<'a> DenseReader<'a> {
    /// Aggregates the cells of the read (see [`crate::aggregate`]): the attributes read are
    /// `plan`'s fields, in order. Whole space tiles are answered from tile metadata when
    /// `use_metadata` and the metadata is exact for them.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode; condition errors.
    pub(crate) fn aggregate(&mut self, plan: &Plan, use_metadata: bool) -> Result<Partial> {
        let mut total = Partial::new(plan);
        if self.total == 0 {
            return Ok(total);
        }
        if plan.count_only() && self.condition.is_none() {
            total.add_cells(self.total);
            return Ok(total);
        }
        if self.layout != Layout::GlobalOrder {
            let mut p0 = 0;
            while p0 < self.total {
                let p1 = p0.saturating_add(UNBOUNDED_CHUNK_CELLS).min(self.total);
                let groups: Vec<(u64, u64)> = (p0..p1)
                    .step_by(AGGREGATE_GROUP_CELLS as usize)
                    .map(|g| (g, AGGREGATE_GROUP_CELLS.min(p1 - g)))
                    .collect();
                for p in self.aggregate_positions(plan, p0, p1, &groups)? {
                    total.merge(plan, &p);
                }
                p0 = p1;
            }
            return Ok(total);
        }
        // Global order: space tile by space tile. Each block is answered from tile metadata,
        // or aggregated in one pass as a whole fragment tile (`fused`), or else gathered into
        // a batch of positions; partials are folded in block order whatever their path.
        let Some(mut c) = self.cursor.clone() else { return Ok(total) };
        let mut batch: Option<(BlockCursor, Vec<(u64, u64)>)> = None;
        let mut whole: Vec<(usize, u64)> = Vec::new();
        while !c.done {
            let size = self.block_size(&c.tile);
            let meta = if use_metadata { self.block_metadata(plan, &c.tile, size)? } else { None };
            let one_pass = match meta {
                Some(_) => None,
                None => self.fused_source(plan, &c.tile, size),
            };
            if (meta.is_some() || one_pass.is_some())
                && let Some((start, blocks)) = batch.take()
            {
                self.aggregate_blocks(plan, start, &blocks, &mut total)?;
            }
            if !whole.is_empty() && (one_pass.is_none() || whole.len() >= fused::FUSED_TILES) {
                for p in self.aggregate_tiles(plan, &whole)? {
                    total.merge(plan, &p);
                }
                whole.clear();
            }
            match (meta, one_pass) {
                (Some(p), _) => total.merge(plan, &p),
                (None, Some(src)) => whole.push(src),
                (None, None) => {
                    let (start, blocks) = batch.get_or_insert_with(|| (c.clone(), Vec::new()));
                    blocks.push((c.base, size));
                    if c.base + size - start.base >= UNBOUNDED_CHUNK_CELLS
                        && let Some((start, blocks)) = batch.take()
                    {
                        self.aggregate_blocks(plan, start, &blocks, &mut total)?;
                    }
                }
            }
            self.next_block(&mut c);
        }
        if let Some((start, blocks)) = batch.take() {
            self.aggregate_blocks(plan, start, &blocks, &mut total)?;
        }
        for p in self.aggregate_tiles(plan, &whole)? {
            total.merge(plan, &p);
        }
        Ok(total)
    }

    /// Aggregates consecutive global-order blocks (`(first position, cells)`), the cursor
    /// `start` being at the first, into `total`, block after block.
    pub(super) fn aggregate_blocks(
        &mut self,
        plan: &Plan,
        start: BlockCursor,
        blocks: &[(u64, u64)],
        total: &mut Partial,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (blocks.first(), blocks.last()) else { return Ok(()) };
        self.cursor = Some(start);
        for p in self.aggregate_positions(plan, first.0, last.0 + last.1, blocks)? {
            total.merge(plan, &p);
        }
        Ok(())
    }

    /// The partial aggregate of each group (`(first position, cells)`, consecutive, covering
    /// `p0..p1`) of the cells at positions `p0..p1`.
    pub(super) fn aggregate_positions(
        &mut self,
        plan: &Plan,
        p0: u64,
        p1: u64,
        groups: &[(u64, u64)],
    ) -> Result<Vec<Partial>> {
        let (pieces, runs, slots) = self.prepare(p0, p1)?;
        let masks = self.slot_masks(&slots)?;
        // Coordinates of the positions: of the dimensions aggregated, and of those a
        // condition reads when it is evaluated over fill values.
        let cond_dims = self.condition.as_ref().filter(|_| runs.iter().any(|r| r.slot == FILL));
        let wanted = |d: usize, name: &str| {
            plan.fields.iter().any(|f| f.source == Source::Dim(d))
                || cond_dims.is_some_and(|c| c.uses(name))
        };
        let schema = self.array.schema();
        let coords: Vec<(String, Column)> = schema
            .dimensions
            .par_iter()
            .enumerate()
            .filter(|(d, dim)| wanted(*d, &dim.name))
            .map(|(d, dim)| {
                let field = OutField::dim(schema, d);
                let mut col = field.empty_column();
                self.coord_column(None, &mut col, &field, d, &pieces, p0, p1);
                (dim.name.clone(), col)
            })
            .collect();
        // The runs of each group.
        let mut bounds = Vec::with_capacity(groups.len());
        let mut ri = 0;
        for &(base, size) in groups {
            let first = ri;
            let end = base + size - p0;
            while ri < runs.len() && runs[ri].dst < end {
                ri += 1;
            }
            bounds.push((first, ri));
        }
        let this = &*self;
        bounds
            .par_iter()
            .map(|&(a, b)| {
                let mut part = Partial::new(plan);
                for r in &runs[a..b] {
                    this.aggregate_run(plan, r, &slots, &masks, &coords, &mut part)?;
                }
                Ok(part)
            })
            .collect()
    }

    /// Adds the cells of run `r` to `part` (`coords`: the batch's coordinates of the
    /// dimensions aggregated or read by the condition, by position).
    pub(super) fn aggregate_run(
        &self,
        plan: &Plan,
        r: &Run,
        slots: &Slots,
        masks: &[Arc<Vec<bool>>],
        coords: &[(String, Column)],
        part: &mut Partial,
    ) -> Result<()> {
        let (s, e) = (r.src as usize, (r.src + r.len) as usize);
        let (d0, d1) = (r.dst as usize, (r.dst + r.len) as usize);
        // Which fill-value cells satisfy the condition.
        let fill_mask = match &self.condition {
            Some(c) if r.slot == FILL => Some(self.fill_passing(c, r, coords)?),
            _ => None,
        };
        // The cells of the run by position in the batch (for coordinates), and by cell in
        // its tile (`None` for fill values).
        let (by_pos, by_cell, n) = if r.slot == FILL {
            match &fill_mask {
                Some(m) => (Cells::Masked(d0, m), None, m.iter().filter(|&&k| k).count() as u64),
                None => (Cells::Range(d0, d1), None, r.len),
            }
        } else {
            match masks.get(r.slot as usize) {
                Some(m) => {
                    let m = &m[s..e];
                    let n = m.iter().filter(|&&k| k).count() as u64;
                    (Cells::Masked(d0, m), Some(Cells::Masked(s, m)), n)
                }
                None => (Cells::Range(d0, d1), Some(Cells::Range(s, e)), r.len),
            }
        };
        part.add_cells(n);
        for (f, field) in self.fields.iter().enumerate().take(plan.fields.len()) {
            if let Source::Dim(_) = field.source {
                let col = coords.iter().find(|(name, _)| *name == field.name).map(|(_, c)| c);
                part.scan(plan, f, col.map(ColumnView::from).as_ref(), by_pos);
                continue;
            }
            let Some(cells) = by_cell else {
                part.scan_fill(plan, f, n);
                continue;
            };
            let (fi, t) = slots.list[r.slot as usize];
            let view = self.cache.get(&(fi, t, f)).map(|tile| ColumnView {
                datatype: field.datatype,
                cell_val_num: field.cell_val_num,
                data: &tile.data,
                offsets: tile.offsets.as_deref(),
                validity: tile.validity.as_deref(),
            });
            part.scan(plan, f, view.as_ref(), cells);
        }
        Ok(())
    }

    /// Which of the fill-value cells of run `r` satisfy `cond` (`coords`: the batch's
    /// coordinates of the dimensions it reads).
    pub(super) fn fill_passing(
        &self,
        cond: &QueryCondition,
        r: &Run,
        coords: &[(String, Column)],
    ) -> Result<Vec<bool>> {
        let n = r.len as usize;
        let fills: Vec<(&str, Column)> = self
            .fields
            .iter()
            .chain(&self.extra)
            .filter(|f| matches!(f.source, Source::Attr(_)) && cond.uses(&f.name))
            .map(|f| {
                let mut col = f.empty_column();
                copy_runs(f, &mut col, &[Run { slot: FILL, src: 0, dst: 0, len: r.len }], &[]);
                (f.name.as_str(), col)
            })
            .collect();
        let (s, e) = (r.dst as usize, r.dst as usize + n);
        let col = |name: &str| -> Option<ColumnView<'_>> {
            if let Some((_, c)) = coords.iter().find(|(d, _)| d == name) {
                let size = c.datatype.size();
                return Some(ColumnView {
                    datatype: c.datatype,
                    cell_val_num: 1,
                    data: &c.data[s * size..e * size],
                    offsets: None,
                    validity: None,
                });
            }
            fills.iter().find(|(f, _)| *f == name).map(|(_, c)| ColumnView::from(c))
        };
        let mut keep = vec![true; n];
        cond.evaluate_views(&col, &mut keep)?;
        Ok(keep)
    }

    /// The aggregate of the global-order block of space tile `tile` (`size` cells) from
    /// tile metadata, when the block is the whole tile, the newest fragment meeting it holds
    /// all of it, that fragment's metadata is exact for what `plan` needs, and, under a
    /// condition, it shows that every cell satisfies the condition (or none does: the
    /// block then adds nothing); `None` otherwise.
    pub(super) fn block_metadata(
        &mut self,
        plan: &Plan,
        tile: &[i128],
        size: u64,
    ) -> Result<Option<Partial>> {
        let Some(source) = self.block_source(tile) else { return Ok(None) };
        let BlockSource::Tile(fi, tile_idx) = source else {
            if self.condition.is_some() {
                // The condition over fill values (and coordinates) is left to the scan.
                return Ok(None);
            }
            // No fragment: every cell holds the fill value.
            let mut p = Partial::new(plan);
            p.add_cells(size);
            for (f, field) in plan.fields.iter().enumerate() {
                if !field.is_dim() {
                    p.scan_fill(plan, f, size);
                }
            }
            self.scan_tile_coords(plan, tile, size, &mut p);
            return Ok(Some(p));
        };
        if self.frags[fi].cells.get(tile_idx) != size {
            return Ok(None);
        }
        if let Some(cond) = &self.condition {
            let meta = match self.cond_metas.get(&fi) {
                Some(m) => m.clone(),
                None => {
                    let storage = self.array.storage().as_ref();
                    let m = Arc::new(ConditionMeta::load(storage, &self.frags[fi].fragment, cond)?);
                    self.cond_metas.insert(fi, m.clone());
                    m
                }
            };
            match meta.decide(cond, tile_idx, size) {
                Decided::None => return Ok(Some(Partial::new(plan))),
                Decided::All => {}
                Decided::Some => return Ok(None),
            }
        }
        // Attribute metadata (`None`: not stored, the cells hold fill values; dimensions
        // come from the coordinates).
        let mut metas: Vec<Option<Arc<FieldMeta>>> = Vec::with_capacity(plan.fields.len());
        for (f, field) in plan.fields.iter().enumerate() {
            if field.is_dim() || self.frags[fi].readers.get(f).is_none_or(Option::is_none) {
                metas.push(None);
                continue;
            }
            let meta = match self.metas.get(&(fi, f)) {
                Some(m) => m.clone(),
                None => {
                    let m = FieldMeta::load(
                        self.array.storage().as_ref(),
                        &self.frags[fi].fragment,
                        &field.name,
                        field.want,
                    )?
                    .map(Arc::new);
                    self.metas.insert((fi, f), m.clone());
                    m
                }
            };
            let Some(meta) = meta else { return Ok(None) };
            metas.push(Some(meta));
        }
        let mut stats = Vec::with_capacity(metas.len());
        for (m, field) in metas.iter().zip(&plan.fields) {
            match m {
                Some(m) => match m.exact(tile_idx, size, field.want) {
                    Some(s) => stats.push(Some(s)),
                    None => return Ok(None),
                },
                None => stats.push(None),
            }
        }
        let mut p = Partial::new(plan);
        p.add_tile_stats(plan, size, &stats);
        for (f, (m, field)) in metas.iter().zip(&plan.fields).enumerate() {
            if m.is_none() && !field.is_dim() {
                p.scan_fill(plan, f, size);
            }
        }
        self.scan_tile_coords(plan, tile, size, &mut p);
        Ok(Some(p))
    }

    /// Where the cells of whole space tile `tile` come from when one source holds all of
    /// them: no fragment (fill values), or one tile of the newest fragment meeting it.
    /// `None` when the read's block of the tile is not the whole tile, or the newest
    /// fragment meeting it does not cover it.
    pub(super) fn block_source(&self, tile: &[i128]) -> Option<BlockSource> {
        let dim_num = self.dims.len();
        let (lo, hi) = self.block_box(tile);
        let whole = (0..dim_num).all(|k| {
            let d = &self.dims[k];
            lo[k] == d.tile_lo(tile[k]) && hi[k] == d.tile_lo(tile[k]) + d.extent - 1
        });
        if !whole {
            return None;
        }
        let Some(fi) = self
            .frags
            .iter()
            .position(|f| (0..dim_num).all(|k| f.ned[k].0 <= hi[k] && lo[k] <= f.ned[k].1))
        else {
            return Some(BlockSource::Fill);
        };
        let frag = &self.frags[fi];
        if !(0..dim_num).all(|k| frag.ned[k].0 <= lo[k] && hi[k] <= frag.ned[k].1) {
            return None;
        }
        let tile_idx: u64 = tile
            .iter()
            .zip(&frag.first_tile)
            .zip(&frag.tile_strides)
            .map(|((&t, &first), &stride)| (t - first) as u64 * stride)
            .sum();
        (tile_idx < frag.tile_num).then_some(BlockSource::Tile(fi, tile_idx))
    }

    /// Adds the coordinates of the `size` cells of space tile `tile` (all of it, in cell
    /// order) to the aggregates of `plan`'s dimensions.
    pub(super) fn scan_tile_coords(
        &self,
        plan: &Plan,
        tile: &[i128],
        size: u64,
        part: &mut Partial,
    ) {
        if !plan.fields.iter().any(|f| f.is_dim()) {
            return;
        }
        let wanted = |name: &str| plan.fields.iter().any(|f| f.is_dim() && f.name == name);
        let coords = self.tile_coords(wanted, tile, size as usize);
        for (f, field) in plan.fields.iter().enumerate() {
            if field.is_dim() {
                let col = coords.iter().find(|(name, _)| *name == field.name).map(|(_, c)| c);
                let view = col.map(ColumnView::from);
                part.scan(plan, f, view.as_ref(), Cells::Range(0, size as usize));
            }
        }
    }
}

/// Cells per partial aggregate of a row- or col-major aggregate (partials are computed in
/// parallel, then folded in order).
pub(super) const AGGREGATE_GROUP_CELLS: u64 = 1 << 16;

/// Where the cells of a whole space tile come from (see [`DenseReader::block_source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockSource {
    /// No fragment meets the tile: every cell holds the fill value.
    Fill,
    /// (fragment, tile index in it): the newest fragment meeting the tile holds all of it.
    Tile(usize, u64),
}
