//! Batches of a dense read: how many positions a batch takes (within the memory budget or
//! presized to the result), the fragment tiles it fetches and decodes, the condition's masks
//! over them, and coordinates generated for dimensions.

use super::*;

impl<'a> DenseReader<'a> {
    /// Cells of a batch under `budget`: its share for the result and the batch's bookkeeping
    /// (the runs, a few tens of bytes each, about one per row of a tile the batch meets).
    pub(super) fn budget_batch_cells(&self, budget: u64) -> u64 {
        let run = self.cells_per_run().max(1);
        let per_cell = self.bytes_per_cell() + RUN_BYTES.div_ceil(run);
        (budget / BUDGET_BATCH_SHARE / per_cell).clamp(1, UNBOUNDED_CHUNK_CELLS)
    }

    /// About how many cells a run holds (cells contiguous both in a tile and in the result):
    /// the innermost dimension's extent, within the subarray, when the result and the cells
    /// are in the same order (or the read is in global order), else one.
    pub(super) fn cells_per_run(&self) -> u64 {
        let inner = match (self.layout, self.cell_order) {
            (Layout::RowMajor | Layout::GlobalOrder, Layout::RowMajor) => self.dims.last(),
            (Layout::ColMajor | Layout::GlobalOrder, Layout::ColMajor) => self.dims.first(),
            _ => None,
        };
        inner.map_or(1, |d| {
            let ext = u64::try_from(d.extent).unwrap_or(u64::MAX);
            if d.ranges.len() == 1 { ext.min(d.len) } else { 1 }
        })
    }

    /// The pieces of positions `p0..p1`, carved into runs (sorted by position) over the
    /// fragment tiles of `Slots`, whose tiles are then fetched and decoded (those not cached).
    pub(super) fn prepare(&mut self, p0: u64, p1: u64) -> Result<(Vec<Piece>, Vec<Run>, Slots)> {
        let (pieces, runs, slots) = self.carved(p0, p1)?;
        self.fetch(&slots.list)?;
        Ok((pieces, runs, slots))
    }

    /// Fetches and decodes the tiles of every field read of `slot_list` not in the cache;
    /// the cache then holds exactly these.
    pub(super) fn fetch(&mut self, slot_list: &[(usize, u64)]) -> Result<()> {
        let nfields = self.fields.len() + self.extra.len();
        let mut jobs: Vec<TileJob<'_>> = Vec::new();
        let mut job_keys = Vec::new();
        for &(f, t) in slot_list {
            let frag = &self.frags[f];
            for (i, r) in frag.readers.iter().enumerate() {
                if let Some(r) = r
                    && !self.cache.contains_key(&(f, t, i))
                {
                    jobs.push(TileJob {
                        reader: r,
                        tile: t,
                        cells: frag.cells.get(t),
                        wanted: None,
                    });
                    job_keys.push((f, t, i));
                }
            }
        }
        let loaded = load_tiles(self.array.storage().as_ref(), &jobs)?;
        let mut cache: TileCache = HashMap::new();
        for (k, tile) in job_keys.into_iter().zip(loaded) {
            cache.insert(k, tile);
        }
        for &(f, t) in slot_list {
            for i in 0..nfields {
                if let Some(tile) = self.cache.remove(&(f, t, i)) {
                    cache.insert((f, t, i), tile);
                }
            }
        }
        self.cache = cache;
        Ok(())
    }

    /// The condition's bitmap of each slot's fragment tile (over all the tile's cells, in
    /// cell order), computed in parallel for the tiles not done by the last batch.
    pub(super) fn slot_masks(&mut self, slots: &Slots) -> Result<Vec<Arc<Vec<bool>>>> {
        let Some(cond) = &self.condition else { return Ok(Vec::new()) };
        let todo: Vec<usize> =
            (0..slots.list.len()).filter(|&k| !self.masks.contains_key(&slots.list[k])).collect();
        let computed: Vec<(usize, Vec<bool>)> =
            todo.par_iter()
                .map(|&k| {
                    let (f, t) = slots.list[k];
                    let n = self.frags[f].cells.get(t) as usize;
                    let coords = self.tile_coords(|d| cond.uses(d), &slots.tiles[k], n);
                    let col = |name: &str| -> Option<ColumnView<'_>> {
                        if let Some((_, col)) = coords.iter().find(|(d, _)| d == name) {
                            return Some(ColumnView::from(col));
                        }
                        let i =
                            self.fields.iter().chain(&self.extra).position(|x| {
                                matches!(x.source, Source::Attr(_)) && x.name == name
                            })?;
                        let field = self.fields.iter().chain(&self.extra).nth(i)?;
                        let tile = self.cache.get(&(f, t, i))?;
                        Some(ColumnView {
                            datatype: field.datatype,
                            cell_val_num: field.cell_val_num,
                            data: &tile.data,
                            offsets: tile.offsets.as_deref(),
                            validity: tile.validity.as_deref(),
                        })
                    };
                    let mut keep = vec![true; n];
                    cond.evaluate_views(&col, &mut keep)?;
                    Ok((k, keep))
                })
                .collect::<Result<_>>()?;
        let mut masks: HashMap<(usize, u64), Arc<Vec<bool>>> = HashMap::new();
        for (k, keep) in computed {
            masks.insert(slots.list[k], Arc::new(keep));
        }
        for key in &slots.list {
            if let Some(m) = self.masks.remove(key) {
                masks.insert(*key, m);
            }
        }
        let out = slots.list.iter().map(|key| masks[key].clone()).collect();
        self.masks = masks;
        Ok(out)
    }

    /// The coordinates of the `n` cells of space tile `tile` (in cell order), as columns of
    /// the dimensions `wanted` names.
    pub(super) fn tile_coords(
        &self,
        wanted: impl Fn(&str) -> bool,
        tile: &[i128],
        n: usize,
    ) -> Vec<(String, Column)> {
        self.cells_coords(wanted, tile, std::slice::from_ref(&(0..n as u64)))
    }

    /// The coordinates of cells `cells` (ranges of cell-order indexes) of space tile `tile`,
    /// one after the other, as columns of the dimensions `wanted` names.
    pub(super) fn cells_coords(
        &self,
        wanted: impl Fn(&str) -> bool,
        tile: &[i128],
        cells: &[Range<u64>],
    ) -> Vec<(String, Column)> {
        let schema = self.array.schema();
        let n: u64 = cells.iter().map(|c| c.end - c.start).sum();
        let mut out = Vec::new();
        for (d, dim) in schema.dimensions.iter().enumerate() {
            if !wanted(&dim.name) {
                continue;
            }
            let dd = &self.dims[d];
            let lo = dd.tile_lo(tile[d]);
            let stride = self.cell_strides[d].max(1);
            let ext = dd.extent as u64;
            let mut col = Column::new(dim.name.clone(), dim.datatype, 1, false);
            col.data.reserve(n as usize * dim.datatype.size());
            for i in cells.iter().flat_map(Clone::clone) {
                push_int(dim.datatype, lo + ((i / stride) % ext) as i128, &mut col.data);
            }
            out.push((dim.name.clone(), col));
        }
        out
    }

    /// Cells of a batch of a presized stream: about [`PRESIZED_BATCH_RUNS`] runs (batches
    /// hold no decoded tiles but those they share with the next, so larger batches mean fewer
    /// tiles decoded twice or kept), from [`UNBOUNDED_CHUNK_CELLS`] up to 64 times as many.
    pub(super) fn presized_batch_cells(&self) -> u64 {
        // Result positions in a row of one tile (global order was never presized).
        let run = self.cells_per_run();
        run.saturating_mul(PRESIZED_BATCH_RUNS)
            .clamp(UNBOUNDED_CHUNK_CELLS, UNBOUNDED_CHUNK_CELLS * 64)
    }

    /// Makes room in `out` for every remaining cell (reads without a budget, whose batches
    /// all go to one result). When batches stream, the columns are allocated whole and zeroed
    /// at once (fresh pages, first touched by the parallel copies, instead of a single-thread
    /// `memset` per batch) and batches write into them in place; otherwise room is reserved.
    pub(crate) fn presize(&mut self, out: &mut ReadResult) {
        let Ok(cells) = usize::try_from(self.total - self.pos) else { return };
        // Bytes of each column, when they can be held at all (else batches grow them and the
        // allocation fails there, as any oversized read does).
        let bytes =
            |f: &OutField| cells.checked_mul(f.cell_size()).filter(|&b| isize::try_from(b).is_ok());
        let sizes: Option<Vec<usize>> = self.fields.iter().map(bytes).collect();
        let Some(sizes) = sizes else { return };
        if self.can_stream()
            && self.presized.is_none()
            && out.columns.iter().all(|c| c.data.is_empty())
        {
            for (col, &size) in out.columns.iter_mut().zip(&sizes) {
                col.data = vec![0; size];
            }
            self.presized = Some(self.pos);
            return;
        }
        for ((col, f), &size) in out.columns.iter_mut().zip(&self.fields).zip(&sizes) {
            if !f.is_var() {
                let _ = col.data.try_reserve(size);
            }
            if let Some(v) = &mut col.validity {
                let _ = v.try_reserve(cells);
            }
        }
    }

    /// The coordinates of dimension `d` at positions `p0..end`, into `col` in place from
    /// position `base` on, or appended.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn coord_column(
        &self,
        base: Option<u64>,
        col: &mut Column,
        field: &OutField,
        d: usize,
        pieces: &[Piece],
        p0: u64,
        end: u64,
    ) {
        let size = field.datatype.size();
        let n = (end - p0) as usize;
        let data = batch_slice(col, size, p0, n, base);
        let mut value = Vec::with_capacity(16);
        let dim_num = self.dims.len();
        let others: Vec<usize> = (0..dim_num).filter(|&k| k != d).collect();
        for piece in pieces {
            let ext: Vec<u64> =
                (0..dim_num).map(|k| (piece.hi[k] - piece.lo[k] + 1) as u64).collect();
            let strides = &piece.dst_strides;
            let mut write = |pos: u64, value: &[u8]| {
                if pos < n as u64 {
                    let at = pos as usize * size;
                    data[at..at + size].copy_from_slice(value);
                }
            };
            // The cells holding each value of dimension `d` form a box of the other
            // dimensions.
            for vi in 0..ext[d] {
                value.clear();
                push_int(field.datatype, piece.lo[d] + i128::from(vi), &mut value);
                let base = piece.dst_base - p0 + vi * strides[d];
                let Some((&inner, outer)) = others.split_last() else {
                    write(base, &value);
                    continue;
                };
                let mut idx = vec![0u64; outer.len()];
                loop {
                    let b =
                        base + outer.iter().zip(&idx).map(|(&k, &i)| i * strides[k]).sum::<u64>();
                    for i in 0..ext[inner] {
                        write(b + i * strides[inner], &value);
                    }
                    let mut j = outer.len();
                    loop {
                        if j == 0 {
                            break;
                        }
                        j -= 1;
                        idx[j] += 1;
                        if idx[j] < ext[outer[j]] {
                            break;
                        }
                        idx[j] = 0;
                    }
                    if idx.iter().all(|&x| x == 0) {
                        break;
                    }
                }
            }
        }
    }
}

/// Runs (copies of cells in a row of one tile) of a batch of a presized stream, about
/// (see [`DenseReader::presized_batch_cells`]).
pub(super) const PRESIZED_BATCH_RUNS: u64 = 1 << 20;

/// Under a memory budget, a batch's result and bookkeeping take at most the budget over this
/// (the chunks decoded for it as much again, the tiles kept for the next batch
/// [`BUDGET_TILE_SHARE`], the tile pool [`crate::read::BUDGET_POOL_SHARE`]: the rest is the
/// caller's, which converts or writes out the batch).
pub(super) const BUDGET_BATCH_SHARE: u64 = 4;

/// Bytes of bookkeeping per run of a streamed batch: the run and the copy it becomes.
pub(super) const RUN_BYTES: u64 = 80;

/// Drops the parts of `runs` (sorted by position) at or after position `end` of the batch.
pub(super) fn truncate_runs(runs: &mut Vec<Run>, end: u64) {
    runs.retain_mut(|r| {
        if r.dst >= end {
            return false;
        }
        r.len = r.len.min(end - r.dst);
        true
    });
}
