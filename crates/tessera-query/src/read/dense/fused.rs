//! Aggregates of whole fragment tiles in one pass: each tile is read, decoded, tested
//! against the condition and aggregated by one worker, block after block while the block is
//! in the CPU's cache, tiles spread over the rayon pool. No result column, run list or
//! whole-tile mask is built, and a tile of a single fixed-size field is never decoded whole:
//! its chunks are decoded one at a time and consumed as they come.
//!
//! Used for the global-order blocks that are a whole space tile held entirely by one tile of
//! the newest fragment meeting it, storing every field read, when neither the aggregates nor
//! the condition read dimensions (their coordinates are computed, and the general path
//! handles them); tile metadata still answers the tiles it decides first.

use super::aggregate::BlockSource;
use super::*;
use crate::aggregate::AggField;
use crate::read::BUDGET_POOL_SHARE;
use crate::read::tiles::each_chunk;
use tessera_types::CELL_VAL_NUM_VAR;

/// Cells tested and aggregated at once in a decoded tile (their values and mask stay in the
/// second-level cache).
const FUSED_BLOCK: usize = 1 << 14;

/// Tiles aggregated per parallel pass (bounds the partials held).
pub(super) const FUSED_TILES: usize = 4096;

impl DenseReader<'_> {
    /// The fragment tile (fragment, tile index) whose cells are exactly the global-order block
    /// of space tile `tile` (`size` cells), when [`Self::aggregate_tiles`] can aggregate it:
    /// the aggregates and the condition read attributes only, the fragment stores each of
    /// them, and a worker per thread holding a tile of each stays within the budget.
    pub(super) fn fused_source(
        &self,
        plan: &Plan,
        tile: &[i128],
        size: u64,
    ) -> Option<(usize, u64)> {
        if plan.fields.iter().any(AggField::is_dim) {
            return None;
        }
        if let Some(cond) = &self.condition {
            let attrs: Vec<&str> =
                self.fields.iter().chain(&self.extra).map(|f| f.name.as_str()).collect();
            if !cond.fields().iter().all(|name| attrs.contains(name)) {
                return None;
            }
        }
        let BlockSource::Tile(fi, t) = self.block_source(tile)? else { return None };
        let frag = &self.frags[fi];
        if frag.cells.get(t) != size {
            return None;
        }
        let mut bytes = 0u64;
        for i in 0..self.fields.len() + self.extra.len() {
            bytes += frag.readers.get(i)?.as_ref()?.decoded_size(t, size);
        }
        // A worker holds the tile read and the tile decoded.
        let held = bytes.saturating_mul(2).saturating_mul(rayon::current_num_threads() as u64);
        let room = self.budget.map_or(u64::MAX, |b| b / BUDGET_POOL_SHARE);
        (held <= room).then_some((fi, t))
    }

    /// The partial aggregate of each of `tiles` (from [`Self::fused_source`]), in order,
    /// computed in parallel, a tile per worker.
    ///
    /// # Errors
    /// Storage errors, tiles that do not decode, condition errors.
    pub(super) fn aggregate_tiles(
        &self,
        plan: &Plan,
        tiles: &[(usize, u64)],
    ) -> Result<Vec<Partial>> {
        tiles
            .par_iter()
            .with_max_len(1)
            .map_init(Vec::new, |buf, &(fi, t)| self.aggregate_tile(plan, fi, t, buf))
            .collect()
    }

    /// The partial aggregate of the cells of tile `t` of fragment `fi` (`buf`: the worker's
    /// chunk buffer).
    fn aggregate_tile(&self, plan: &Plan, fi: usize, t: u64, buf: &mut Vec<u8>) -> Result<Partial> {
        let frag = &self.frags[fi];
        let n = frag.cells.get(t);
        let fields: Vec<&OutField> = self.fields.iter().chain(&self.extra).collect();
        let readers: Vec<&FieldReader> = frag.readers.iter().take(fields.len()).flatten().collect();
        if readers.len() != fields.len() {
            // `fused_source` checked that the fragment stores every field read.
            return Err(Error::Corrupt {
                file: frag.dir.clone(),
                reason: format!("tile {t}: a field read is not stored"),
            });
        }
        let storage = self.array.storage().as_ref();
        let mut part = Partial::new(plan);
        if let ([field], [reader]) = (&fields[..], &readers[..]) {
            let job = TileJob { reader, tile: t, cells: n, wanted: None };
            if let Some(p) = self.aggregate_chunks(plan, field, &job, buf)? {
                return Ok(p);
            }
        }
        let jobs: Vec<TileJob<'_>> = readers
            .iter()
            .map(|reader| TileJob { reader, tile: t, cells: n, wanted: None })
            .collect();
        let tiles = load_tiles_with(storage, &jobs, true)?;
        let view = |i: usize| ColumnView {
            datatype: fields[i].datatype,
            cell_val_num: fields[i].cell_val_num,
            data: &tiles[i].data,
            offsets: tiles[i].offsets.as_deref(),
            validity: tiles[i].validity.as_deref(),
        };
        let n = n as usize;
        let Some(cond) = &self.condition else {
            part.add_cells(n as u64);
            for f in 0..plan.fields.len() {
                part.scan(plan, f, Some(&view(f)), Cells::Range(0, n));
            }
            return Ok(part);
        };
        let columns = |name: &str| fields.iter().position(|f| f.name == name).map(view);
        let prepared = cond.prepare(&columns, n)?;
        let views: Vec<ColumnView<'_>> = (0..plan.fields.len()).map(view).collect();
        let mut mask = vec![true; FUSED_BLOCK.min(n)];
        for b0 in (0..n).step_by(FUSED_BLOCK) {
            let m = &mut mask[..FUSED_BLOCK.min(n - b0)];
            m.fill(true);
            prepared.and_into(b0, m)?;
            add_masked(plan, &mut part, &views, b0, m);
        }
        Ok(part)
    }

    /// The partial aggregate of tile `job` of the one field read, `field` (fixed-size, not
    /// nullable), its chunks decoded one at a time and each tested and aggregated while in
    /// cache; `None` for a field or tile this cannot stream (nothing is read then).
    fn aggregate_chunks(
        &self,
        plan: &Plan,
        field: &OutField,
        job: &TileJob<'_>,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Partial>> {
        if field.cell_val_num == CELL_VAL_NUM_VAR || field.nullable {
            return Ok(None);
        }
        let size = field.datatype.size() * field.cell_val_num as usize;
        let mut part = Partial::new(plan);
        let mut failed: Option<Error> = None;
        let mut mask: Vec<bool> = Vec::new();
        // Cells are read in place as their type when aligned to it (chunks stored without
        // filters start where their header ends); others are copied to an aligned buffer.
        let align = field.datatype.size().clamp(1, std::mem::align_of::<u64>());
        let mut aligned: Vec<u64> = Vec::new();
        let storage = self.array.storage().as_ref();
        let streamed = each_chunk(storage, job, buf, |at, bytes| {
            if failed.is_some() {
                return;
            }
            if size == 0 || at % size as u64 != 0 || bytes.len() % size != 0 {
                failed = Some(Error::Corrupt {
                    file: job.reader.data_file().to_owned(),
                    reason: format!(
                        "tile {}: a chunk at byte {at} of {} bytes does not hold whole cells \
                         of {size} bytes",
                        job.tile,
                        bytes.len()
                    ),
                });
                return;
            }
            let data = if (bytes.as_ptr() as usize).is_multiple_of(align) {
                bytes
            } else {
                aligned.clear();
                aligned.resize(bytes.len().div_ceil(8), 0);
                let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut aligned[..]);
                dst[..bytes.len()].copy_from_slice(bytes);
                &bytemuck::cast_slice::<u64, u8>(&aligned[..])[..bytes.len()]
            };
            let view = ColumnView {
                datatype: field.datatype,
                cell_val_num: field.cell_val_num,
                data,
                offsets: None,
                validity: None,
            };
            let cells = bytes.len() / size;
            // The one field is the aggregates' (or only the condition's).
            let views = if plan.fields.is_empty() { &[][..] } else { std::slice::from_ref(&view) };
            match &self.condition {
                None => {
                    part.add_cells(cells as u64);
                    for (f, v) in views.iter().enumerate() {
                        part.scan(plan, f, Some(v), Cells::Range(0, cells));
                    }
                }
                Some(cond) => {
                    mask.clear();
                    mask.resize(cells, true);
                    let columns = |name: &str| (name == field.name).then_some(view);
                    let prepared = match cond.prepare(&columns, cells) {
                        Ok(p) => p,
                        Err(e) => {
                            failed = Some(e);
                            return;
                        }
                    };
                    for b0 in (0..cells).step_by(FUSED_BLOCK) {
                        let m = &mut mask[b0..cells.min(b0 + FUSED_BLOCK)];
                        if let Err(e) = prepared.and_into(b0, m) {
                            failed = Some(e);
                            return;
                        }
                        add_masked(plan, &mut part, views, b0, m);
                    }
                }
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(streamed.then_some(part))
    }
}

/// Adds the cells `b0..b0 + mask.len()` of `views` (one per aggregate field) that `mask`
/// selects to `part`.
fn add_masked(plan: &Plan, part: &mut Partial, views: &[ColumnView<'_>], b0: usize, mask: &[bool]) {
    let k = crate::aggregate::count_true(mask);
    part.add_cells(k);
    if k == 0 {
        return;
    }
    for (f, v) in views.iter().enumerate() {
        part.scan(plan, f, Some(v), Cells::Masked(b0, mask));
    }
}
