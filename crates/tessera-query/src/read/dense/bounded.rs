//! Budgeted batches that cannot stream (a condition, or nullable or var-sized attributes):
//! each fragment tile a batch meets gives only the batch's cells, compact (see
//! [`crate::read::tiles::load_compact`]), decoded from the chunks holding them, so that a
//! row-major batch across a row of large tiles holds a few rows of each, not the tiles.
//! The offsets of var-sized fields come first, so that the batch is cut at its budget before
//! any value is loaded; the condition is evaluated over the batch's cells only, and the copy
//! into the result is that of every other batch.

use super::batch::{BUDGET_BATCH_SHARE, RUN_BYTES};
use super::*;
use crate::read::tiles::{CellRanges, VarIndex, load_compact};

/// A field's compact tile of each slot of a batch (`None`: the fragment lacks the field).
type SlotTiles = Vec<Option<Arc<DecodedTile>>>;

impl<'a> DenseReader<'a> {
    /// Appends the next batch to `out` under `budget` (see the module's documentation).
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode.
    pub(super) fn bounded_batch(&mut self, out: &mut ReadResult, budget: u64) -> Result<()> {
        self.cache.clear();
        self.masks.clear();
        let share = budget / BUDGET_BATCH_SHARE;
        let want = self.bounded_batch_cells(share);
        let p0 = self.pos;
        let p1 = p0.saturating_add(want).min(self.total);
        let (pieces, mut runs, slots) = self.carved(p0, p1)?;
        let storage = self.array.storage().as_ref();
        let nslots = slots.list.len();
        let nfields = self.fields.len() + self.extra.len();
        // The tile of each slot and field the fragment has.
        let frags = &self.frags;
        let jobs =
            |want: &dyn Fn(&TileJob<'_>, usize) -> bool| -> Vec<(usize, usize, TileJob<'_>)> {
                let mut jobs = Vec::new();
                for (k, &(f, t)) in slots.list.iter().enumerate() {
                    let frag = &frags[f];
                    for (i, reader) in frag.readers.iter().enumerate() {
                        let Some(reader) = reader else { continue };
                        let job =
                            TileJob { reader, tile: t, cells: frag.cells.get(t), wanted: None };
                        if want(&job, k) {
                            jobs.push((k, i, job));
                        }
                    }
                }
                jobs
            };
        let mut cells = slot_cells(&runs, nslots);
        // The offsets of var-sized fields at the batch's cells, then the batch cut where its
        // values would pass the budget.
        let indexes: HashMap<(usize, usize), VarIndex> = jobs(&|j, _| j.reader.is_var())
            .par_iter()
            .map(|(k, i, j)| Ok(((*k, *i), VarIndex::load(storage, j, &cells[*k])?)))
            .collect::<Result<_>>()?;
        let mut end = p1;
        if !indexes.is_empty() {
            end = self.bounded_cut(p0, p1, &runs, &indexes, share);
            if end < p1 {
                truncate_runs(&mut runs, end - p0);
                cells = slot_cells(&runs, nslots);
            }
        }
        // Every field's compact tile of every slot.
        let loaded: Vec<((usize, usize), DecodedTile)> = jobs(&|_, k| cells[k].len() > 0)
            .par_iter()
            .map(|(k, i, j)| {
                let tile = load_compact(storage, j, &cells[*k], indexes.get(&(*k, *i)))?;
                Ok(((*k, *i), tile))
            })
            .collect::<Result<_>>()?;
        drop(indexes);
        let mut tiles: Vec<SlotTiles> = vec![vec![None; nslots]; nfields];
        for ((k, i), tile) in loaded {
            tiles[i][k] = Some(Arc::new(tile));
        }
        // Runs now read the compact tiles.
        for r in &mut runs {
            if r.slot == FILL {
                continue;
            }
            let c = &cells[r.slot as usize];
            r.src = c.index_of(r.src, r.len).ok_or_else(|| {
                Error::InvalidQuery(format!("a run of cells {}.. lies outside its batch", r.src))
            })?;
        }
        let masks = self.compact_masks(&slots, &cells, &tiles)?;
        let mut split: Vec<Run> = Vec::new();
        if !masks.is_empty() && self.fields.iter().any(OutField::is_var) {
            for r in &runs {
                split_run(*r, &masks, |r, pass| {
                    split.push(if pass { r } else { Run { slot: FILL, ..r } });
                });
            }
        }
        self.copy_batch(out, &pieces, &runs, &split, &masks, &|i| tiles[i].clone(), p0, end);
        self.pos = end;
        self.advance_cursor();
        Ok(())
    }

    /// Bytes of one cell of a bounded batch besides var-sized values: its result (fixed
    /// values, offsets, validity), the same again for its compact tiles (of the condition's
    /// attributes too), and under a condition its mask and the coordinates it reads.
    fn bounded_fixed_bytes(&self) -> u64 {
        let result: u64 = self.fields.iter().map(OutField::fixed_bytes_per_cell).sum();
        let source: u64 = self
            .fields
            .iter()
            .chain(&self.extra)
            .filter(|f| matches!(f.source, Source::Attr(_)))
            .map(OutField::fixed_bytes_per_cell)
            .sum();
        let condition = self.condition.as_ref().map_or(0, |c| {
            let schema = self.array.schema();
            let coords: u64 = schema
                .dimensions
                .iter()
                .filter(|d| c.uses(&d.name))
                .map(|d| d.datatype.size() as u64)
                .sum();
            1 + coords
        });
        result + source + condition
    }

    /// Cells of a bounded batch under `share` of the budget: the fixed bytes of a cell, its
    /// var-sized values (the fragments' average) in the compact tiles and, for a returned
    /// field, in the result, and the runs' bookkeeping.
    fn bounded_batch_cells(&self, share: u64) -> u64 {
        let mut per_cell = self.bounded_fixed_bytes();
        let nout = self.fields.len();
        for (i, f) in self.fields.iter().chain(&self.extra).enumerate() {
            if f.is_var() {
                let avg = self.avg_var_bytes(i, f);
                per_cell += if i < nout { 2 * avg } else { avg };
            }
        }
        per_cell += RUN_BYTES.div_ceil(self.cells_per_run().max(1));
        (share / per_cell.max(1)).clamp(1, UNBOUNDED_CHUNK_CELLS)
    }

    /// The position where the batch `[p0, p1)` holding `runs` (sorted by position) passes
    /// `share` bytes, counting var-sized values from their offsets (`indexes`, by slot and
    /// field): twice for a returned field (compact tile and result), plus the fill value of
    /// every cell that may take it. At least one cell.
    fn bounded_cut(
        &self,
        p0: u64,
        p1: u64,
        runs: &[Run],
        indexes: &HashMap<(usize, usize), VarIndex>,
        share: u64,
    ) -> u64 {
        let fixed = self.bounded_fixed_bytes();
        let nout = self.fields.len();
        let var: Vec<(usize, &OutField)> =
            self.fields.iter().chain(&self.extra).enumerate().filter(|(_, f)| f.is_var()).collect();
        let masked = self.condition.is_some();
        // Var-sized bytes of cells `src..src + n` of a run of `slot`.
        let var_bytes = |slot: u32, src: u64, n: u64| -> u64 {
            let mut bytes = 0u64;
            for &(i, f) in &var {
                let fill = n * f.fill.len() as u64;
                let source = match (slot != FILL).then(|| indexes.get(&(slot as usize, i))) {
                    Some(Some(index)) => index.bytes(src, n).unwrap_or(0),
                    _ => 0,
                };
                bytes += source;
                if i < nout {
                    let may_fill = slot == FILL || masked || source == 0;
                    bytes += source + if may_fill { fill } else { 0 };
                }
            }
            bytes
        };
        let mut used = 0u64;
        for r in runs {
            let run_bytes = fixed * r.len + var_bytes(r.slot, r.src, r.len);
            if used + run_bytes <= share {
                used += run_bytes;
                continue;
            }
            // The budget ends inside this run.
            for k in 0..r.len {
                let b = fixed + var_bytes(r.slot, r.src + k, 1);
                if used + b > share {
                    return (p0 + r.dst + k).max(p0 + 1);
                }
                used += b;
            }
        }
        p1
    }

    /// The condition's bitmap over each slot's compact tile (its cells of the batch).
    fn compact_masks(
        &self,
        slots: &Slots,
        cells: &[CellRanges],
        tiles: &[SlotTiles],
    ) -> Result<Vec<Arc<Vec<bool>>>> {
        let Some(cond) = &self.condition else { return Ok(Vec::new()) };
        let all: Vec<&OutField> = self.fields.iter().chain(&self.extra).collect();
        (0..slots.list.len())
            .into_par_iter()
            .map(|k| {
                let n = cells[k].len() as usize;
                let coords =
                    self.cells_coords(|d| cond.uses(d), &slots.tiles[k], cells[k].ranges());
                let col = |name: &str| -> Option<ColumnView<'_>> {
                    if let Some((_, col)) = coords.iter().find(|(d, _)| d == name) {
                        return Some(ColumnView::from(col));
                    }
                    let i = all
                        .iter()
                        .position(|x| matches!(x.source, Source::Attr(_)) && x.name == name)?;
                    let tile = tiles[i][k].as_deref()?;
                    Some(ColumnView {
                        datatype: all[i].datatype,
                        cell_val_num: all[i].cell_val_num,
                        data: &tile.data,
                        offsets: tile.offsets.as_deref(),
                        validity: tile.validity.as_deref(),
                    })
                };
                let mut keep = vec![true; n];
                cond.evaluate_views(&col, &mut keep)?;
                Ok(Arc::new(keep))
            })
            .collect()
    }
}

/// The cells each slot's runs read (`runs` of a batch with `nslots` slots).
fn slot_cells(runs: &[Run], nslots: usize) -> Vec<CellRanges> {
    let mut by_slot: Vec<Vec<Range<u64>>> = vec![Vec::new(); nslots];
    for r in runs {
        if let Some(v) = by_slot.get_mut(r.slot as usize) {
            v.push(r.src..r.src + r.len);
        }
    }
    by_slot.into_iter().map(CellRanges::new).collect()
}
