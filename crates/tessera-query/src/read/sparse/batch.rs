//! Result batches: cells copied into result columns run by run, within the memory budget
//! when one is set.

use super::*;

impl<'a> SparseReader<'a> {
    /// Result bytes of one cell.
    pub(super) fn cell_bytes(&self, t: &LoadedTile, k: usize) -> u64 {
        let c = t.sel[k] as usize;
        self.out
            .iter()
            .zip(&self.out_slots)
            .map(|(f, &s)| {
                let mut b = f.fixed_bytes_per_cell();
                if f.is_var() {
                    b += match &t.fields[s] {
                        Some(x) => x.cells_range(c, 1).len() as u64,
                        None => f.fill.len() as u64,
                    };
                }
                b
            })
            .sum()
    }

    /// Appends the next batch to `out` (whose columns are those of the read); `false` when
    /// every cell was returned.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode.
    pub(crate) fn next_batch(&mut self, out: &mut ReadResult) -> Result<bool> {
        if self.mode == Mode::Concat && self.pending.is_none() {
            if !self.started {
                self.start()?;
            }
            if self.queue.is_empty() {
                return match self.budget {
                    None => self.concat_batch(out),
                    Some(b) => self.concat_budget_batch(out, batch_share(b)),
                };
            }
        }
        let mut cells: Vec<CellRef> = Vec::new();
        let mut used = 0u64;
        loop {
            // A batch ends with its partition, so that reading the next one holds no tile
            // of this one.
            if !cells.is_empty() && self.partition_done() {
                break;
            }
            let Some(c) = self.next_cell()? else { break };
            if let Some(budget) = self.budget {
                // The batch's half of the budget, with the reference each cell takes until
                // the batch is built.
                let b = self.cell_bytes(&c.0, c.1) + size_of::<CellRef>() as u64;
                if !cells.is_empty() && used + b > batch_share(budget) {
                    self.pending = Some(c);
                    break;
                }
                used += b;
            }
            cells.push(c);
        }
        if cells.is_empty() {
            return Ok(false);
        }
        self.build(&cells, out);
        Ok(true)
    }

    /// Concatenation without a budget: appends every remaining cell to `out`, tile after
    /// tile, each tile's kept cells as runs of consecutive cells (no per-cell bookkeeping).
    /// Tiles are loaded a window at a time ([`CONCAT_WINDOW`] decoded bytes per fragment),
    /// each window copied and dropped before the next is loaded, into columns reserved
    /// once for every cell the remaining tiles hold.
    pub(super) fn concat_batch(&mut self, out: &mut ReadResult) -> Result<bool> {
        self.reserve_concat(out);
        let mut any = false;
        loop {
            let mut tiles: Vec<Arc<LoadedTile>> = Vec::new();
            let mut runs: Vec<Run> = Vec::new();
            let mut n = 0u64;
            let mut bytes = 0u64;
            loop {
                let f = self.concat_frag;
                if f >= self.frags.len() {
                    break;
                }
                // Copy what the loaded windows gave before loading another one.
                if self.cursors[f].tiles.is_empty() && bytes >= CONCAT_WINDOW / 4 {
                    break;
                }
                self.ensure(f)?;
                let Some(t) = self.cursors[f].tiles.pop_front() else {
                    self.concat_frag += 1;
                    continue;
                };
                bytes += t.bytes();
                let slot = tiles.len() as u32;
                let sel = &t.sel;
                let mut i = 0;
                while i < sel.len() {
                    if !self.keep_after_dedup(&t, i) {
                        i += 1;
                        continue;
                    }
                    let first = sel[i];
                    let mut len = 1;
                    while i + len < sel.len()
                        && u64::from(sel[i + len]) == u64::from(first) + len as u64
                        && self.keep_after_dedup(&t, i + len)
                    {
                        len += 1;
                    }
                    runs.push(Run { slot, src: u64::from(first), dst: n, len: len as u64 });
                    n += len as u64;
                    i += len;
                }
                tiles.push(t);
            }
            if tiles.is_empty() {
                return Ok(any);
            }
            if n > 0 {
                any = true;
                self.append_runs(out, &tiles, &runs, n);
            }
        }
    }

    /// Appends the `n` cells of `runs` (over `tiles`) to every column of `out`, the columns
    /// in parallel.
    pub(super) fn append_runs(
        &self,
        out: &mut ReadResult,
        tiles: &[Arc<LoadedTile>],
        runs: &[Run],
        n: u64,
    ) {
        out.columns
            .par_iter_mut()
            .zip(self.out.par_iter().zip(self.out_slots.par_iter()))
            .with_min_len(columns_per_task(n, self.out.len()))
            .for_each(|(col, (f, &s))| {
                let field_tiles: Vec<Option<Arc<DecodedTile>>> =
                    tiles.iter().map(|t| t.fields[s].clone()).collect();
                copy_runs(f, col, runs, &field_tiles);
            });
    }

    /// Concatenation under a budget: appends to `out` the next cells, in runs of consecutive
    /// cells of each tile, until their result bytes would pass `budget` (at least one cell);
    /// a tile the batch ends in is kept for the next batch. `false` when every cell was
    /// returned.
    pub(super) fn concat_budget_batch(
        &mut self,
        out: &mut ReadResult,
        budget: u64,
    ) -> Result<bool> {
        let fixed: u64 = self.out.iter().map(OutField::fixed_bytes_per_cell).sum();
        let any_var = self.out.iter().any(OutField::is_var);
        let mut used = 0u64;
        let mut total = 0u64;
        // Room for the batch's fixed-size values, so that no column grows by copying (pages
        // reserved but never written are not memory the process holds).
        if let Some(cells) = budget.checked_div(fixed) {
            let cells = usize::try_from(cells + 1).unwrap_or(usize::MAX);
            for (col, f) in out.columns.iter_mut().zip(&self.out) {
                if !f.is_var() {
                    let _ = col.data.try_reserve(cells.saturating_mul(f.cell_size()));
                }
                if let Some(v) = &mut col.validity {
                    let _ = v.try_reserve(cells);
                }
            }
        }
        // Segments: the cells of the tiles loaded so far are copied before another window is
        // loaded, so that the batch never holds two windows.
        let mut full = false;
        while !full {
            let mut tiles: Vec<Arc<LoadedTile>> = Vec::new();
            let mut runs: Vec<Run> = Vec::new();
            let mut n = 0u64;
            loop {
                let (t, mut i) = match self.concat_part.take() {
                    Some(part) => part,
                    None => {
                        let f = self.concat_frag;
                        if f >= self.frags.len() {
                            full = true;
                            break;
                        }
                        if self.cursors[f].tiles.is_empty() && !tiles.is_empty() {
                            // Copy this window's cells before loading the next.
                            break;
                        }
                        self.ensure(f)?;
                        let Some(t) = self.cursors[f].tiles.pop_front() else {
                            self.concat_frag += 1;
                            continue;
                        };
                        (t, 0)
                    }
                };
                let slot = tiles.len() as u32;
                let sel = &t.sel;
                while i < sel.len() {
                    if !self.keep_after_dedup(&t, i) {
                        i += 1;
                        continue;
                    }
                    let first = sel[i];
                    let mut len = 0usize;
                    while i + len < sel.len()
                        && u64::from(sel[i + len]) == u64::from(first) + len as u64
                        && self.keep_after_dedup(&t, i + len)
                    {
                        let b = if any_var { self.cell_bytes(&t, i + len) } else { fixed };
                        if total + n + (len as u64) > 0 && used + b > budget {
                            break;
                        }
                        used += b;
                        len += 1;
                    }
                    if len > 0 {
                        runs.push(Run { slot, src: u64::from(first), dst: n, len: len as u64 });
                        n += len as u64;
                        i += len;
                    }
                    // A run cut short by the budget (or a first cell that does not fit).
                    if i < sel.len() && (len == 0 || used >= budget) {
                        self.concat_part = Some((t.clone(), i));
                        full = true;
                        break;
                    }
                }
                tiles.push(t);
                if full || used >= budget {
                    full = true;
                    break;
                }
            }
            if n > 0 {
                self.append_runs(out, &tiles, &runs, n);
                total += n;
            }
        }
        Ok(total > 0)
    }

    /// Reserves room in `out` for every cell of the tiles a concatenation has still to read
    /// (an upper bound: tiles partly outside the subarray count whole), so that the columns
    /// grow without reallocating. Var-sized values are left to grow.
    pub(super) fn reserve_concat(&self, out: &mut ReadResult) {
        let cells: u64 = self
            .frags
            .iter()
            .skip(self.concat_frag)
            .map(|f| f.tiles[f.next..].iter().map(|ov| f.cells.get(ov.tile)).sum::<u64>())
            .sum::<u64>()
            + self.cursors.iter().flat_map(|c| &c.tiles).map(|t| t.sel.len() as u64).sum::<u64>();
        let Ok(cells) = usize::try_from(cells) else { return };
        // Cell counts come from fragment metadata: a room that cannot be had (a corrupt
        // count) is simply not reserved, and the columns grow as cells arrive.
        for (col, f) in out.columns.iter_mut().zip(&self.out) {
            if f.is_var() {
                let _ = col.offsets.get_or_insert_with(Vec::new).try_reserve(cells);
            } else {
                let size = f.datatype.size().saturating_mul(f.cell_val_num as usize);
                let _ = col.data.try_reserve(cells.saturating_mul(size));
            }
            if let Some(v) = &mut col.validity {
                let _ = v.try_reserve(cells);
            }
        }
    }

    /// Appends `cells` to the columns of `out`.
    pub(super) fn build(&self, cells: &[CellRef], out: &mut ReadResult) {
        // Distinct tiles, in order of appearance.
        let mut slot_of: HashMap<*const LoadedTile, u32> = HashMap::new();
        let mut tiles: Vec<&Arc<LoadedTile>> = Vec::new();
        let mut refs: Vec<(u32, u32)> = Vec::with_capacity(cells.len());
        let mut last: Option<(*const LoadedTile, u32)> = None;
        for (t, k) in cells {
            let p = Arc::as_ptr(t);
            let slot = match last {
                Some((lp, s)) if lp == p => s,
                _ => {
                    let s = *slot_of.entry(p).or_insert_with(|| {
                        tiles.push(t);
                        (tiles.len() - 1) as u32
                    });
                    last = Some((p, s));
                    s
                }
            };
            refs.push((slot, t.sel[*k]));
        }
        out.columns
            .par_iter_mut()
            .zip(self.out.par_iter().zip(self.out_slots.par_iter()))
            .with_min_len(columns_per_task(refs.len() as u64, self.out.len()))
            .for_each(|(col, (f, &s))| {
                let field_tiles: Vec<Option<Arc<DecodedTile>>> =
                    tiles.iter().map(|t| t.fields[s].clone()).collect();
                gather(f, col, &refs, &field_tiles);
            });
    }
}

/// The part of a memory budget the batch being built may take: three eighths. The tiles
/// being loaded take at most a quarter (decoded, and the bytes they are decoded from), and
/// the rest is the allocator's slack (memory freed by one thread and not yet reused).
pub(super) fn batch_share(budget: u64) -> u64 {
    (budget / 8 * 3).max(1)
}

/// Columns per task of copying `cells` cells into `columns` result columns: small results are
/// copied on the calling thread.
pub(super) fn columns_per_task(cells: u64, columns: usize) -> usize {
    if cells < 1 << 16 { columns.max(1) } else { 1 }
}
