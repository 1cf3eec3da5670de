//! Sparse reads in row- or col-major order under a memory budget, partition by partition.
//!
//! Sorting by coordinates needs every cell of a stretch of the order before it can return
//! the first, and tiles (in global order) need not follow the layout: a tile may span the
//! whole subarray along the layout's slowest dimension. So cells are read in partitions:
//! consecutive intervals `[start, cut)` of the layout's order of coordinates, each holding
//! only its own cells. Tiles are loaded a window at a time, in the order of the lower bounds
//! of their MBRs on the layout's slowest dimension, leaving out those that cannot hold a cell
//! of the interval; the cells of each tile inside the interval are copied out ("compacted")
//! and the tile is dropped. When the cells held pass the partition's cap, the interval is
//! cut at the coordinates where the cells held reach half the cap, and the cells past the
//! cut are dropped (the next partition reads them again). Once every tile that can hold a
//! cell of the interval was read, its cells are sorted, deduplicated and filtered exactly as
//! an unbounded read's are ([`SparseReader::sort_cells`]).
//!
//! Cells with equal coordinates fall in the same partition, so deduplication (and the
//! condition and deletes applied after it) keep what an unbounded read keeps; partitions
//! come in layout order, so their concatenation is the unbounded read's result.
//!
//! Memory: a window holds up to a quarter of the partition's cap (at least one tile), so
//! the decoded tile bytes held stay below about 1.5 times the cap: up to the cap of
//! compacted cells, a window, and the cells just copied out of it. Sorting adds a reference
//! and comparison keys per cell (about as much again as the cells of two int64 dimensions
//! and an attribute), and the batch being returned takes three eighths of the budget. So the cap is a
//! quarter of the budget; but at least [`MIN_TILES`] times the largest
//! tile's decoded bytes (a tile is decoded whole to read any of its cells, and smaller
//! partitions would read the same tiles over and over). A tile meeting several partitions
//! is read once for each (as in libtiledb, which also splits such reads).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use tessera_rtree::TileOverlap;
use tessera_types::Layout;

use super::{CellRef, Keys, LoadedTile, SparseReader};
use crate::read::order::ord_key;
use crate::read::tiles::DecodedTile;
use crate::{Error, Result};

/// The cap of a partition is at least this many times the largest tile's decoded bytes.
const MIN_TILES: u64 = 4;

/// A value of the layout's slowest dimension, as the cells of a read compare it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// The order key of a fixed-size value ([`ord_key`]).
    Fixed(u64),
    /// A var-sized value (bytewise order).
    Var(Vec<u8>),
}

/// A tile of the read, with the bounds of its cells on the layout's slowest dimension.
#[derive(Debug)]
struct PTile {
    /// Index in `SparseReader::frags`.
    frag: usize,
    ov: TileOverlap,
    /// The tile's MBR on the slowest dimension.
    lo: Key,
    hi: Key,
    /// Decoded bytes of the fields read.
    bytes: u64,
}

/// The partitions of a budgeted row- or col-major sparse read.
#[derive(Debug)]
pub(super) struct Partitions {
    /// Every tile of the read, by ascending lower bound on the slowest dimension.
    tiles: Vec<PTile>,
    /// The first cell of the next partition (a tile of its own); `None`: from the start.
    start: Option<CellRef>,
    /// Whether every partition was read.
    done: bool,
    /// Bytes of cells held beyond which a partition is cut.
    cap: u64,
    /// Decoded bytes of the tiles of a window, at most (unless one tile is larger).
    window: u64,
}

impl Partitions {
    /// The partitions of `r`'s read (row- or col-major, with a budget): the MBR bounds and
    /// decoded sizes of its tiles, the cap and window sizes.
    ///
    /// # Errors
    /// Storage and metadata errors loading R-trees; [`Error::Corrupt`] for a tile without
    /// an MBR.
    pub(super) fn new(r: &SparseReader<'_>) -> Result<Self> {
        let split = r.split_dim();
        let dim = r.dims[split];
        let key = |b: &[u8]| {
            if dim.var { Key::Var(b.to_vec()) } else { Key::Fixed(ord_key(dim.datatype, b)) }
        };
        let storage = r.array.storage().as_ref();
        let mut tiles = Vec::new();
        for (f, frag) in r.frags.iter().enumerate() {
            if frag.tiles.is_empty() {
                continue;
            }
            let rtree = frag.fragment.rtree(storage)?;
            for &ov in &frag.tiles {
                let range = rtree.leaf(ov.tile).and_then(|m| m.range(split)).ok_or_else(|| {
                    Error::Corrupt {
                        file: format!("{}/{}", frag.fragment.dir(), crate::FRAGMENT_METADATA_FILE),
                        reason: format!("tile {} has no MBR", ov.tile),
                    }
                })?;
                let cells = frag.cells.get(ov.tile);
                let bytes =
                    frag.readers.iter().flatten().map(|x| x.decoded_size(ov.tile, cells)).sum();
                tiles.push(PTile { frag: f, ov, lo: key(range.low), hi: key(range.high), bytes });
            }
        }
        tiles.sort_by(|a, b| a.lo.cmp(&b.lo));
        let largest = tiles.iter().map(|t| t.bytes).max().unwrap_or(0);
        let budget = r.budget.unwrap_or(u64::MAX);
        let cap = (budget / 4).max(MIN_TILES.saturating_mul(largest)).max(1);
        let window = (cap / 4).max(largest).max(1);
        Ok(Partitions { tiles, start: None, done: false, cap, window })
    }
}

impl SparseReader<'_> {
    /// The layout's slowest dimension: the first for row-major, the last for col-major.
    fn split_dim(&self) -> usize {
        if self.layout == Layout::ColMajor { self.dims.len() - 1 } else { 0 }
    }

    /// Whether the current partition was returned whole and another may follow.
    pub(super) fn partition_done(&self) -> bool {
        self.parts.as_ref().is_some_and(|p| !p.done)
            && self.pending.is_none()
            && self.sorted.as_ref().is_some_and(|(cells, i)| *i >= cells.len())
    }

    /// Reads the next partition into `self.sorted` (dropping the previous one's cells);
    /// `false` when every partition was read, or the read is not partitioned.
    ///
    /// # Errors
    /// Storage errors and tiles that do not decode; condition errors.
    pub(super) fn next_partition(&mut self) -> Result<bool> {
        let Some(mut parts) = self.parts.take() else { return Ok(false) };
        if parts.done {
            self.parts = Some(parts);
            return Ok(false);
        }
        self.sorted = None;
        let cells = self.read_partition(&mut parts);
        self.parts = Some(parts);
        self.sorted = Some((cells?, 0));
        Ok(true)
    }

    /// The cells of the partition starting at `parts.start`, sorted and deduplicated; moves
    /// `parts.start` to the partition's end.
    fn read_partition(&self, parts: &mut Partitions) -> Result<Vec<CellRef>> {
        let mut held: Vec<CellRef> = Vec::new();
        let mut held_bytes = 0u64;
        let mut cut: Option<CellRef> = None;
        let mut next = 0;
        loop {
            // The next window: tiles that may hold cells of [start, cut).
            let mut window: Vec<(usize, TileOverlap)> = Vec::new();
            let mut bytes = 0u64;
            while let Some(t) = parts.tiles.get(next) {
                if cut.as_ref().is_some_and(|c| self.cmp_split(c, &t.lo) == Ordering::Less) {
                    // This tile and every later one start past the cut.
                    next = parts.tiles.len();
                    break;
                }
                if !window.is_empty() && bytes + t.bytes > parts.window {
                    break;
                }
                next += 1;
                if parts.start.as_ref().is_some_and(|s| self.cmp_split(s, &t.hi).is_gt()) {
                    continue; // ends before the partition
                }
                window.push((t.frag, t.ov));
                bytes += t.bytes;
            }
            if window.is_empty() {
                break;
            }
            for t in self.load(&window)? {
                let ks: Vec<usize> = (0..t.sel.len())
                    .filter(|&k| self.in_interval(parts.start.as_ref(), cut.as_ref(), &t, k))
                    .collect();
                if ks.is_empty() {
                    continue;
                }
                // A tile all of whose cells are kept is kept as it is.
                let whole = ks.len() == self.frags[t.frag].cells.get(t.tile) as usize;
                let c = Arc::new(if whole { t } else { self.compact(&t, &ks) });
                held_bytes += c.bytes();
                held.extend((0..ks.len()).map(|k| (c.clone(), k)));
            }
            if held_bytes > parts.cap
                && let Some(at) = self.cut_point(&mut held, held_bytes, parts.cap / 2)
            {
                let (t, k) = &held[at];
                cut = Some((Arc::new(self.compact(t, &[*k])), 0));
                held.truncate(at);
                held = self.recompact(held);
                held_bytes = distinct_bytes(&held);
            }
        }
        parts.done = cut.is_none();
        parts.start = cut;
        self.sort_cells(&mut held);
        Ok(held)
    }

    /// How the value of the slowest dimension of cell `c` compares with `key`.
    fn cmp_split(&self, (t, k): &CellRef, key: &Key) -> Ordering {
        let d = self.split_dim();
        match (self.cmp.fixed_pos[d], key) {
            (Some(j), Key::Fixed(v)) => t.keys.coords[k * self.cmp.fixed_dims + j].cmp(v),
            (None, Key::Var(v)) => {
                let value = t.fields[self.cmp.dim_slots[d]]
                    .as_ref()
                    .map_or(&[][..], |x| x.cell(t.sel[*k] as usize));
                value.cmp(v.as_slice())
            }
            // Keys follow the dimension's kind.
            _ => Ordering::Equal,
        }
    }

    /// Whether cell `k` of `t` lies in `[start, cut)` (in the layout's order).
    fn in_interval(
        &self,
        start: Option<&CellRef>,
        cut: Option<&CellRef>,
        t: &LoadedTile,
        k: usize,
    ) -> bool {
        let col = self.layout == Layout::ColMajor;
        start.is_none_or(|(s, sk)| !self.cmp.layout(col, s, *sk, t, k).is_gt())
            && cut.is_none_or(|(c, ck)| self.cmp.layout(col, t, k, c, *ck).is_lt())
    }

    /// Sorts `held` in the layout's order and returns where to cut it so that the cells
    /// before hold about `target` bytes (`bytes` in all): the first cell of a group of equal
    /// coordinates, after at least one cell. `None` when every cell has the same coordinates.
    fn cut_point(&self, held: &mut [CellRef], bytes: u64, target: u64) -> Option<usize> {
        let col = self.layout == Layout::ColMajor;
        let cmp = &self.cmp;
        held.par_sort_by(|(a, ka), (b, kb)| cmp.layout(col, a, *ka, b, *kb));
        let same = |i: usize, j: usize| {
            let ((a, ka), (b, kb)) = (&held[i], &held[j]);
            cmp.layout(col, a, *ka, b, *kb).is_eq()
        };
        let per_cell = (bytes / held.len().max(1) as u64).max(1);
        let mut at = usize::try_from(target / per_cell).unwrap_or(usize::MAX).clamp(1, held.len());
        if at == held.len() {
            at -= 1;
        }
        while at > 0 && same(at - 1, at) {
            at -= 1;
        }
        if at == 0 {
            at = (1..held.len()).find(|&i| !same(0, i))?;
        }
        Some(at)
    }

    /// `held` with each tile compacted to the cells still held (tiles all of whose cells are
    /// held are kept as they are).
    fn recompact(&self, held: Vec<CellRef>) -> Vec<CellRef> {
        let mut groups: HashMap<*const LoadedTile, (Arc<LoadedTile>, Vec<usize>)> = HashMap::new();
        for (t, k) in held {
            groups.entry(Arc::as_ptr(&t)).or_insert_with(|| (t.clone(), Vec::new())).1.push(k);
        }
        let mut out = Vec::new();
        for (_, (t, mut ks)) in groups {
            let t = if ks.len() == t.sel.len() {
                t
            } else {
                ks.sort_unstable();
                Arc::new(self.compact(&t, &ks))
            };
            out.extend((0..t.sel.len()).map(|k| (t.clone(), k)));
        }
        out
    }

    /// A tile holding only the selected cells at positions `ks` of `t`, with their fields,
    /// post-deduplication bitmap and comparison keys (its selection is every cell).
    fn compact(&self, t: &LoadedTile, ks: &[usize]) -> LoadedTile {
        let cells: Vec<usize> = ks.iter().map(|&k| t.sel[k] as usize).collect();
        let fields =
            t.fields.iter().map(|f| f.as_ref().map(|d| Arc::new(gather(d, &cells)))).collect();
        let keep = t.keep.as_ref().map(|keep| cells.iter().map(|&c| keep[c]).collect());
        let n = self.cmp.fixed_dims;
        let coords = if t.keys.coords.is_empty() {
            Vec::new()
        } else {
            ks.iter().flat_map(|&k| t.keys.coords[k * n..(k + 1) * n].iter().copied()).collect()
        };
        let mut c = LoadedTile {
            frag: t.frag,
            tile: t.tile,
            keep,
            fields,
            sel: (0..ks.len() as u32).collect(),
            keys: Keys { coords, ..Keys::default() },
            origin: Some(ks.iter().map(|&k| t.origin(k)).collect()),
            held: None,
        };
        c.held = Some(self.meter.hold(c.bytes()));
        c
    }
}

/// The bytes of the distinct tiles of `cells`.
fn distinct_bytes(cells: &[CellRef]) -> u64 {
    let mut seen: HashMap<*const LoadedTile, u64> = HashMap::new();
    for (t, _) in cells {
        seen.entry(Arc::as_ptr(t)).or_insert_with(|| t.bytes());
    }
    seen.values().sum()
}

/// The cells `cells` of `d`, in this order.
fn gather(d: &DecodedTile, cells: &[usize]) -> DecodedTile {
    let validity =
        d.validity.as_ref().map(|v| Bytes::from(cells.iter().map(|&c| v[c]).collect::<Vec<u8>>()));
    let mut data = Vec::new();
    let offsets = match &d.offsets {
        Some(_) => {
            let mut offsets = Vec::with_capacity(cells.len());
            for &c in cells {
                offsets.push(data.len() as u64);
                data.extend_from_slice(d.cell(c));
            }
            Some(offsets)
        }
        None => {
            data.reserve(cells.len() * d.cell_size);
            for &c in cells {
                data.extend_from_slice(d.cell(c));
            }
            None
        }
    };
    DecodedTile { data: Bytes::from(data), offsets, validity, cell_size: d.cell_size }
}
