//! Streamed batches: fixed-size attributes copied run by run straight from the tiles (or
//! from only the chunks of the batch's cells) into the result, with no condition to apply.

use super::*;

impl<'a> DenseReader<'a> {
    /// Whether batches can be streamed ([`Self::stream`]): no condition, and every attribute
    /// read fixed-size and not nullable. Under a memory budget, streaming is what keeps the
    /// tiles a batch meets from being held whole: only the chunks of its cells are decoded.
    pub(super) fn can_stream(&self) -> bool {
        self.condition.is_none()
            && self.fields.iter().all(|f| match f.source {
                Source::Dim(_) => true,
                Source::Attr(_) => !f.is_var() && !f.nullable && f.cell_size() > 0,
            })
    }

    /// The space tiles of the batch after the one ending at `end` (of up to `want` cells),
    /// whose fragment tiles are worth keeping in the cache.
    pub(super) fn next_tiles(&mut self, end: u64, want: u64) -> HashSet<Vec<i128>> {
        if end >= self.total {
            return HashSet::new();
        }
        let (pos, cursor) = (self.pos, self.cursor.clone());
        self.pos = end;
        self.advance_cursor();
        let next = self.pieces(end, end.saturating_add(want).min(self.total));
        self.pos = pos;
        self.cursor = cursor;
        let next: HashSet<Vec<i128>> = next.into_iter().map(|p| p.tile).collect();
        // Under a budget, whole tiles are kept only while they fit its share for them;
        // otherwise every batch decodes just the chunks of its own cells.
        if let Some(budget) = self.budget
            && self.kept_tile_bytes(&next) > budget / BUDGET_TILE_SHARE
        {
            return HashSet::new();
        }
        next
    }

    /// The decoded bytes of the fragment tiles (of every field read) of space tiles `tiles`.
    pub(super) fn kept_tile_bytes(&self, tiles: &HashSet<Vec<i128>>) -> u64 {
        let cell_bytes: u64 = self.fields.iter().map(OutField::fixed_bytes_per_cell).sum();
        let tile_cells: u64 = self.dims.iter().map(|d| d.extent as u64).product();
        let frags =
            self.frags.iter().filter(|f| f.readers.iter().any(Option::is_some)).count().max(1)
                as u64;
        // Every fragment holding some cell of a space tile may be decoded for it: a bound.
        (tiles.len() as u64)
            .saturating_mul(tile_cells)
            .saturating_mul(cell_bytes)
            .saturating_mul(frags)
    }

    /// Appends positions `p0..end` to `out` (see [`Self::can_stream`]): the attribute columns
    /// are grown at once and cut into the slots of `runs`; then every fragment tile (on the
    /// rayon pool) is fetched and decoded unless cached, copied into its slots, and dropped,
    /// unless its space tile is in `keep` (the next batch's), in which case it is cached.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stream(
        &mut self,
        out: &mut ReadResult,
        pieces: &[Piece],
        runs: &[Run],
        slots: &Slots,
        keep: &HashSet<Vec<i128>>,
        p0: u64,
        end: u64,
        mut into: Option<&mut [u8]>,
    ) -> Result<()> {
        /// Bytes of one copy at most (long runs are cut, so that work spreads).
        const PIECE_BYTES: usize = 256 << 10;
        let n = (end - p0) as usize;
        out.columns.par_iter_mut().zip(self.fields.par_iter()).for_each(|(col, field)| {
            if let Source::Dim(d) = field.source {
                self.coord_column(self.presized, col, field, d, pieces, p0, end);
            }
        });
        // (field, first cell in the tile, destination) of every slot; fills apart.
        type Work<'c> = Vec<(usize, u64, &'c mut [u8])>;
        let mut work: Vec<Work<'_>> = (0..slots.list.len()).map(|_| Vec::new()).collect();
        let mut fills: Vec<(usize, &mut [u8])> = Vec::new();
        for (i, (col, field)) in out.columns.iter_mut().zip(&self.fields).enumerate() {
            if !matches!(field.source, Source::Attr(_)) {
                continue;
            }
            let size = field.cell_size();
            let piece_cells = (PIECE_BYTES / size).max(1) as u64;
            let dst = match into.take() {
                Some(buf) => buf,
                None => batch_slice(col, size, p0, n, self.presized),
            };
            for_each_piece(runs, dst, size, piece_cells, |slot, src, piece| {
                if slot == FILL {
                    fills.push((i, piece));
                } else {
                    work[slot as usize].push((i, src, piece));
                }
            });
        }
        let fields = &self.fields;
        let fill_cells: Vec<Vec<u8>> = fields.iter().map(OutField::fill_cell).collect();
        let fill = |i: usize, dst: &mut [u8]| {
            for c in dst.chunks_exact_mut(fields[i].cell_size()) {
                c.copy_from_slice(&fill_cells[i]);
            }
        };
        fills.into_par_iter().for_each(|(i, dst)| fill(i, dst));
        let storage = self.array.storage().as_ref();
        let (cache, frags) = (&self.cache, &self.frags);
        // Slots are decoded in parallel; with enough of them, each decodes its chunks in order.
        let sequential = work.len() >= rayon::current_num_threads();
        let kept: Vec<Vec<(CacheKey, Arc<DecodedTile>)>> = work
            .into_par_iter()
            .enumerate()
            .map(|(k, mut work)| {
                let (f, t) = slots.list[k];
                let frag = &frags[f];
                let keep_it = keep.contains(&slots.tiles[k]);
                let mut kept = Vec::new();
                work.sort_by_key(|w| w.0);
                let mut rest = work.as_mut_slice();
                while let Some(&(i, _, _)) = rest.first() {
                    let len = rest.iter().take_while(|w| w.0 == i).count();
                    let (group, tail) = rest.split_at_mut(len);
                    rest = tail;
                    let size = fields[i].cell_size();
                    let loaded = match (cache.get(&(f, t, i)), frag.readers.get(i)) {
                        (Some(tile), _) => Loaded::Whole(tile.clone()),
                        (None, Some(Some(r))) => {
                            let job = TileJob {
                                reader: r,
                                tile: t,
                                cells: frag.cells.get(t),
                                wanted: None,
                            };
                            // A tile no later batch needs, while the other workers have
                            // tiles of their own: its chunks decode one at a time straight
                            // into the result.
                            if !keep_it && sequential {
                                group.sort_unstable_by_key(|w| w.1);
                                let mut dsts: Vec<(u64, &mut [u8])> = group
                                    .iter_mut()
                                    .map(|(_, src, dst)| (*src * size as u64, &mut **dst))
                                    .collect();
                                if scatter_tile(storage, &job, &mut dsts)? {
                                    continue;
                                }
                            }
                            // A tile no later batch needs: only the chunks of its cells here.
                            let part = if keep_it {
                                None
                            } else {
                                let wanted = wanted_bytes(group, size);
                                load_tile_part(storage, &job, &wanted, !sequential)?
                            };
                            match part {
                                Some(part) => Loaded::Part(part),
                                None => load_tiles_with(storage, &[job], sequential)?
                                    .pop()
                                    .map_or(Loaded::Missing, Loaded::Whole),
                            }
                        }
                        (None, _) => Loaded::Missing,
                    };
                    for (_, src, dst) in group.iter_mut() {
                        match &loaded {
                            Loaded::Whole(tile) => {
                                let range = tile.cells_range(*src as usize, dst.len() / size);
                                dst.copy_from_slice(&tile.data[range]);
                            }
                            Loaded::Part(part) => {
                                if !part.copy_to(*src * size as u64, dst) {
                                    return Err(Error::Corrupt {
                                        file: frag.dir.clone(),
                                        reason: format!("tile {t}: cells {src}.. were not decoded"),
                                    });
                                }
                            }
                            Loaded::Missing => fill(i, dst),
                        }
                    }
                    if keep_it && let Loaded::Whole(tile) = loaded {
                        kept.push(((f, t, i), tile));
                    }
                }
                Ok(kept)
            })
            .collect::<Result<_>>()?;
        self.cache = kept.into_iter().flatten().collect();
        Ok(())
    }
}

/// Under a memory budget, the whole tiles kept from one batch for the next take at most the
/// budget over this.
pub(super) const BUDGET_TILE_SHARE: u64 = 4;

/// A fragment tile as the streaming copy has it.
pub(super) enum Loaded {
    /// Decoded whole (or cached from the previous batch).
    Whole(Arc<DecodedTile>),
    /// Only the chunks holding the cells of this batch.
    Part(TilePart),
    /// The fragment does not have the field: cells take the fill value.
    Missing,
}

/// The byte ranges of a tile that the copies `group` (field, first cell, destination) read,
/// sorted and merged.
pub(super) fn wanted_bytes(group: &[(usize, u64, &mut [u8])], size: usize) -> Vec<Range<u64>> {
    let wanted: Vec<Range<u64>> = group
        .iter()
        .map(|(_, src, dst)| {
            let start = src * size as u64;
            start..start + dst.len() as u64
        })
        .collect();
    crate::read::tiles::merge_ranges(wanted)
}

/// The bytes of `col` (of `size`-byte cells) where positions `p0..p0 + n` go: in place when
/// the column holds every cell from position `base` on (see [`DenseReader::presize`]), else
/// appended (zeroed first).
pub(super) fn batch_slice(
    col: &mut Column,
    size: usize,
    p0: u64,
    n: usize,
    base: Option<u64>,
) -> &mut [u8] {
    let bytes = n * size;
    let start = match base {
        Some(base) => (p0 - base) as usize * size,
        None => {
            let start = col.data.len();
            if start == 0 {
                col.data = vec![0; bytes];
            } else {
                col.data.resize(start + bytes, 0);
            }
            start
        }
    };
    &mut col.data[start..start + bytes]
}
