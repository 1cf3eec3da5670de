//! Loading tiles: windows of tiles fetched together and decoded in parallel, the cells each
//! tile contributes (subarray, time range, condition and deletes) and their comparison keys.

use super::*;

impl<'a> SparseReader<'a> {
    /// Loads the next window of tiles of each fragment in `which` into its cursor.
    pub(super) fn load_windows(&mut self, which: &[usize]) -> Result<()> {
        // An unbounded concatenation still loads a window at a time: each is copied into the
        // result and dropped before the next, so the decoded tiles never all live at once.
        // Under a budget, the batch being built takes three eighths of it (`batch_share`) and
        // the tiles being loaded a quarter: a window's decoded tiles an eighth,
        // the bytes they are decoded from at most as much. A concatenation loads one fragment
        // at a time; a merge holds a window of every fragment, and a batch's cells keep the
        // window before alive.
        let per_frag = match self.budget {
            Some(b) if self.mode == Mode::Concat => (b / 8).max(1),
            Some(b) => (b / 8 / self.frags.len().max(1) as u64).max(1),
            None if self.mode == Mode::Concat => CONCAT_WINDOW,
            None => u64::MAX,
        };
        // (fragment, tile overlap)
        let mut window: Vec<(usize, TileOverlap)> = Vec::new();
        for &f in which {
            let frag = &mut self.frags[f];
            let mut used = 0u64;
            while frag.next < frag.tiles.len() {
                let ov = frag.tiles[frag.next];
                let cells = frag.cells.get(ov.tile);
                let size: u64 =
                    frag.readers.iter().flatten().map(|r| r.decoded_size(ov.tile, cells)).sum();
                if used > 0 && used + size > per_frag {
                    break;
                }
                used += size;
                window.push((f, ov));
                frag.next += 1;
            }
        }
        let loaded = self.load(&window)?;
        for t in loaded {
            self.cursors[t.frag].tiles.push_back(Arc::new(t));
        }
        Ok(())
    }

    /// Loads the tiles of `window`: selection, then the fields of tiles with selected cells,
    /// then comparison keys. Tiles without selected cells are dropped.
    pub(super) fn load(&self, window: &[(usize, TileOverlap)]) -> Result<Vec<LoadedTile>> {
        let storage = self.array.storage().as_ref();
        let nslots = self.qfields.len();
        let dim_num = self.dims.len();
        let mut tiles: Vec<LoadedTile> = window
            .iter()
            .map(|&(f, ov)| LoadedTile {
                frag: f,
                tile: ov.tile,
                keep: None,
                fields: vec![None; nslots],
                sel: Vec::new(),
                keys: Keys::default(),
                origin: None,
                held: None,
            })
            .collect();
        // Phase A: coordinates and timestamps of tiles whose cells must be checked. With
        // several fixed-size dimensions, the first is loaded alone, then the others decode only
        // the chunks holding cells it keeps (unless a condition or deletes read whole tiles).
        let ts_slot = self.cmp.ts_slot;
        let mut jobs: Vec<TileJob<'_>> = Vec::new();
        let mut dest: Vec<(usize, usize)> = Vec::new();
        let needs_check: Vec<bool> =
            window.iter().map(|&(f, ov)| !ov.full || self.frags[f].partial_ts).collect();
        let split_dims = dim_num > 1 && self.dims.iter().all(|d| !d.var);
        let deferred: Vec<bool> = window
            .iter()
            .map(|&(f, ov)| split_dims && !ov.full && !self.frags[f].filtered)
            .collect();
        for (i, &(f, ov)) in window.iter().enumerate() {
            if !needs_check[i] {
                continue;
            }
            let frag = &self.frags[f];
            let cells = frag.cells.get(ov.tile);
            let mut slots: Vec<usize> = Vec::new();
            if !ov.full {
                slots.extend(0..if deferred[i] { 1 } else { dim_num });
            }
            if frag.partial_ts {
                slots.push(ts_slot);
            }
            for s in slots {
                if let Some(r) = &frag.readers[s] {
                    jobs.push(TileJob { reader: r, tile: ov.tile, cells, wanted: None });
                    dest.push((i, s));
                }
            }
        }
        for ((i, s), t) in dest.into_iter().zip(load_tiles(storage, &jobs)?) {
            tiles[i].fields[s] = Some(t);
        }
        // The other dimensions of deferred tiles: (tile, cell runs the first dimension keeps).
        let mut kept_runs: Vec<(usize, Vec<std::ops::Range<u64>>)> = Vec::new();
        for (i, &(f, ov)) in window.iter().enumerate() {
            if !deferred[i] {
                continue;
            }
            let cells = self.frags[f].cells.get(ov.tile) as usize;
            let mut keep = vec![true; cells];
            if let Some(first) = &tiles[i].fields[0] {
                retain_in_ranges(
                    self.dims[0].datatype,
                    &first.data,
                    &self.range_keys[0],
                    &mut keep,
                );
                if let Some(points) = &self.filter.points {
                    points.retain_dim(0, &first.data, &mut keep);
                }
            }
            kept_runs.push((i, runs_of(&keep)));
        }
        self.load_wanted(&mut tiles, window, &kept_runs, |_, s| s > 0 && s < dim_num)?;
        let mut window_held = Vec::with_capacity(2);
        window_held.push(self.meter.hold(tiles.iter().map(LoadedTile::bytes).sum()));
        let min_len = tiles_per_task(window.len());
        tiles
            .par_iter_mut()
            .zip(window.par_iter())
            .zip(needs_check.par_iter())
            .with_min_len(min_len)
            .for_each(|((t, &(f, ov)), &check)| {
                let cells = self.frags[f].cells.get(ov.tile) as u32;
                t.sel = if check { self.select(t, &ov, cells) } else { (0..cells).collect() };
            });
        // Phase B: every other field of the tiles with selected cells; of a tile with some
        // cells selected, only the chunks holding them (unless a condition or deletes read
        // whole tiles).
        let keys = self.needs_keys();
        let mut sel_runs: Vec<(usize, Vec<std::ops::Range<u64>>)> = Vec::new();
        for (i, &(f, ov)) in window.iter().enumerate() {
            let t = &tiles[i];
            if t.sel.is_empty() {
                continue;
            }
            let frag = &self.frags[f];
            let whole = t.sel.len() as u64 == frag.cells.get(ov.tile);
            let runs = if whole || frag.filtered {
                std::iter::once(0..frag.cells.get(ov.tile)).collect()
            } else {
                let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
                for &c in &t.sel {
                    let c = u64::from(c);
                    match runs.last_mut() {
                        Some(r) if r.end == c => r.end = c + 1,
                        _ => runs.push(c..c + 1),
                    }
                }
                runs
            };
            sel_runs.push((i, runs));
        }
        let before: u64 = tiles.iter().map(LoadedTile::bytes).sum();
        self.load_wanted(&mut tiles, window, &sel_runs, |f, s| match self.qfields[s] {
            QField::Dim(_) => {
                keys || self.out_slots.contains(&s) || self.frags[f].filter_slots.contains(&s)
            }
            _ => true,
        })?;
        let after: u64 = tiles.iter().map(LoadedTile::bytes).sum();
        window_held.push(self.meter.hold(after.saturating_sub(before)));
        tiles
            .par_iter_mut()
            .with_min_len(min_len)
            .map(|t| self.filter_tile(t))
            .collect::<Result<()>>()?;
        tiles.retain(|t| !t.sel.is_empty());
        if keys {
            tiles.par_iter_mut().with_min_len(min_len).for_each(|t| self.compute_keys(t));
        }
        // From the window to each tile kept.
        drop(window_held);
        for t in &mut tiles {
            t.held = Some(self.meter.hold(t.bytes()));
        }
        Ok(tiles)
    }

    /// Loads, for each `(tile, cell runs)` of `runs`, the fields `want(fragment, slot)` names
    /// that the tile does not have yet; fixed-size ones decode only the chunks holding the
    /// runs' cells (the rest of the tile left zero: only those cells are read afterwards).
    /// Tiles whose runs are empty load nothing.
    pub(super) fn load_wanted(
        &self,
        tiles: &mut [LoadedTile],
        window: &[(usize, TileOverlap)],
        runs: &[(usize, Vec<std::ops::Range<u64>>)],
        want: impl Fn(usize, usize) -> bool,
    ) -> Result<()> {
        let storage = self.array.storage().as_ref();
        // (tile, slot, byte ranges or None for the whole tile)
        let mut plan: Vec<(usize, usize, Option<CellBytes>)> = Vec::new();
        for (i, cell_runs) in runs {
            let (f, ov) = window[*i];
            let frag = &self.frags[f];
            let cells = frag.cells.get(ov.tile);
            if cell_runs.is_empty() {
                continue;
            }
            let whole = cell_runs.len() == 1 && cell_runs[0] == (0..cells);
            for (s, r) in frag.readers.iter().enumerate() {
                let Some(r) = r else { continue };
                if tiles[*i].fields[s].is_some() || !want(f, s) {
                    continue;
                }
                let bytes = match r.fixed_cell_size() {
                    Some(size) if !whole => {
                        Some(cell_runs.iter().map(|c| c.start * size..c.end * size).collect())
                    }
                    _ => None,
                };
                plan.push((*i, s, bytes));
            }
        }
        let jobs: Vec<TileJob<'_>> = plan
            .iter()
            .filter_map(|(i, s, bytes)| {
                let (f, ov) = window[*i];
                let frag = &self.frags[f];
                frag.readers[*s].as_ref().map(|r| TileJob {
                    reader: r,
                    tile: ov.tile,
                    cells: frag.cells.get(ov.tile),
                    wanted: bytes.as_deref(),
                })
            })
            .collect();
        for ((i, s, _), t) in plan.iter().zip(load_tiles(storage, &jobs)?) {
            tiles[*i].fields[*s] = Some(t);
        }
        Ok(())
    }

    /// The cells of a tile inside the subarray (when `ov` is partial) and the open time range
    /// (when the fragment's range is only partly open).
    pub(super) fn select(&self, t: &LoadedTile, ov: &TileOverlap, cells: u32) -> Vec<u32> {
        let frag = &self.frags[t.frag];
        let mut keep = vec![true; cells as usize];
        if !ov.full {
            for (d, dt) in self.dims.iter().enumerate() {
                let Some(tile) = &t.fields[d] else { continue };
                let ranges = &self.ranges[d];
                if dt.var {
                    for (c, k) in keep.iter_mut().enumerate() {
                        if *k {
                            let v = tile.cell(c);
                            *k = ranges.iter().any(|r| {
                                cmp_bytes(v, &r.low) != Ordering::Less
                                    && cmp_bytes(v, &r.high) != Ordering::Greater
                            });
                        }
                    }
                } else {
                    retain_in_ranges(dt.datatype, &tile.data, &self.range_keys[d], &mut keep);
                }
            }
        }
        if let Some(points) = &self.filter.points {
            // The cells at a point asked (every tile of a point read is partial).
            let mut key = Vec::new();
            for (c, k) in keep.iter_mut().enumerate() {
                if *k {
                    let coord = |d: usize| t.fields[d].as_ref().map_or(&[][..], |x| x.cell(c));
                    *k = points.find(coord, &mut key).is_some();
                }
            }
        }
        if frag.partial_ts
            && let Some(ts) = &t.fields[self.cmp.ts_slot]
        {
            let (start, end) = self.open;
            for (c, k) in keep.iter_mut().enumerate() {
                if *k {
                    let v = u64_at(&ts.data, c);
                    *k = start <= v && v <= end;
                }
            }
        }
        keep.iter().enumerate().filter(|(_, k)| **k).map(|(c, _)| c as u32).collect()
    }

    /// Computes the comparison keys of the selected cells of `t`.
    pub(super) fn compute_keys(&self, t: &mut LoadedTile) {
        let order = &self.cmp.order;
        let n = t.sel.len();
        let dim_tiles: Vec<Option<&Arc<DecodedTile>>> =
            (0..self.dims.len()).map(|d| t.fields[d].as_ref()).collect();
        let mut keys = Keys::default();
        if self.cmp.fixed_dims > 0 {
            keys.coords.reserve(n * self.cmp.fixed_dims);
        }
        let hilbert = order.is_hilbert() && self.mode == Mode::Merge;
        let tiled = !order.is_hilbert() && self.mode == Mode::Merge;
        let mut coords: Vec<&[u8]> = Vec::with_capacity(self.dims.len());
        for &c in &t.sel {
            let c = c as usize;
            for (d, dt) in self.dims.iter().enumerate() {
                if !dt.var {
                    let v = dim_tiles[d].map_or(&[][..], |x| x.cell(c));
                    keys.coords.push(if v.is_empty() { 0 } else { ord_key(dt.datatype, v) });
                }
            }
            if hilbert {
                coords.clear();
                coords.extend(dim_tiles.iter().map(|x| x.map_or(&[][..], |x| x.cell(c))));
                keys.hilbert.push(order.hilbert_value(&coords));
            }
            if tiled {
                for &d in &self.cmp.tile_dims {
                    let dim = &order.dims[d];
                    if let (Some((lo, ext)), Some(x)) = (&dim.tiling, dim_tiles[d]) {
                        keys.tiles.push(tile_index(dim.datatype, x.cell(c), lo, ext));
                    } else {
                        keys.tiles.push(0);
                    }
                }
            }
        }
        t.keys = keys;
    }

    /// Whether a cell that won deduplication is returned: it passes the query condition and
    /// the deletes (libtiledb's post-deduplication bitmap). Without deduplication the tile's
    /// selection holds only such cells already.
    pub(super) fn keep_after_dedup(&self, t: &LoadedTile, k: usize) -> bool {
        t.keep.as_ref().is_none_or(|keep| keep[t.sel[k] as usize])
    }

    /// The view of field `name` in a loaded tile's fields, for conditions and deletes.
    pub(super) fn view_of<'t>(
        &self,
        fields: &'t [Option<Arc<DecodedTile>>],
        name: &str,
    ) -> Option<ColumnView<'t>> {
        let &(_, s) = self.names.iter().find(|(n, _)| n == name)?;
        let d = fields[s].as_ref()?;
        let (datatype, cell_val_num) = self.slot_types[s];
        Some(ColumnView {
            datatype,
            cell_val_num,
            data: &d.data,
            offsets: d.offsets.as_deref(),
            validity: d.validity.as_deref(),
        })
    }

    /// Evaluates the condition and deletes over the whole of tile `t` (tile `tile` of its
    /// fragment): with deduplication the result is kept for after it, otherwise the
    /// selection is narrowed now.
    pub(super) fn filter_tile(&self, t: &mut LoadedTile) -> Result<()> {
        let frag = &self.frags[t.frag];
        if !frag.filtered || t.sel.is_empty() {
            return Ok(());
        }
        let n = frag.cells.get(t.tile) as usize;
        let mut keep = vec![true; n];
        {
            let fields = &t.fields;
            let col = |name: &str| self.view_of(fields, name);
            if let Some(c) = &self.filter.condition {
                c.evaluate_views(&col, &mut keep)?;
            }
            let info = frag.delete_info();
            apply_deletes_views(&self.filter.deletes, &info, self.open.1, &col, &mut keep)?;
        }
        if self.dedup {
            t.keep = Some(keep);
        } else {
            t.sel.retain(|&c| keep[c as usize]);
        }
        Ok(())
    }
}

/// The markers of the delete and update commits a consolidation applied to fragment `f`
/// (its processed conditions).
pub(crate) fn processed_conditions(
    storage: &dyn tessera_storage::Storage,
    f: &Fragment,
) -> Result<Vec<String>> {
    let part = f.part(storage, tessera_fragment::LazyPart::ProcessedConditions)?;
    let done =
        tessera_fragment::ProcessedConditions::parse(&part).map_err(|source| Error::Fragment {
            file: format!("{}/{}", f.dir(), crate::FRAGMENT_METADATA_FILE),
            source: Box::new(source),
        })?;
    Ok(done.0)
}

/// Byte ranges of a tile's cells (of one field).
pub(super) type CellBytes = Vec<std::ops::Range<u64>>;

/// Tiles per task of the per-tile steps of a window (selection, conditions, keys): a window
/// of a few tiles (a small query) is handled on the calling thread.
pub(super) fn tiles_per_task(tiles: usize) -> usize {
    if tiles <= 4 { tiles.max(1) } else { 1 }
}

/// The runs of consecutive `true` cells of `keep`.
pub(super) fn runs_of(keep: &[bool]) -> Vec<std::ops::Range<u64>> {
    let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
    let mut c = 0;
    while c < keep.len() {
        if !keep[c] {
            c += 1;
            continue;
        }
        let start = c;
        while c < keep.len() && keep[c] {
            c += 1;
        }
        runs.push(start as u64..c as u64);
    }
    runs
}
