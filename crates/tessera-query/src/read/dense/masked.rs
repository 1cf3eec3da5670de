//! Copies through a condition's mask: cells that pass are copied, the others take the
//! fill value, by a branch-free select on 1-, 2-, 4- and 8-byte lanes, in pieces spread
//! over the cores.

use super::*;

/// Bytes of one piece of a masked copy (long runs are cut, so that work spreads).
pub(super) const MASKED_PIECE_BYTES: usize = 256 << 10;

/// Appends to `col` (a column of the fixed-size `field`) the cells of `runs` (sorted by
/// `dst`, covering the batch once), each cell taken from its tile where the tile's condition
/// mask (`masks[slot]`) passes and the fill value (and fill validity) where it fails: whole
/// runs are copied through the mask by a branch-free select per cell, instead of being split
/// wherever the mask changes (random data would make runs of one or two cells).
pub(super) fn copy_runs_masked(
    field: &OutField,
    col: &mut Column,
    runs: &[Run],
    tiles: &[Option<Arc<DecodedTile>>],
    masks: &[Arc<Vec<bool>>],
) {
    let tile = |slot: u32| -> Option<&DecodedTile> {
        if slot == FILL { None } else { tiles.get(slot as usize).and_then(|t| t.as_deref()) }
    };
    let n: u64 = runs.iter().map(|r| r.len).sum();
    let fill_valid = u8::from(field.fill_valid);
    if let Some(validity) = &mut col.validity {
        validity.reserve(n as usize);
        for r in runs {
            let (s, e) = (r.src as usize, (r.src + r.len) as usize);
            match tile(r.slot) {
                Some(t) => {
                    let mask = &masks[r.slot as usize][s..e];
                    match &t.validity {
                        Some(v) => validity.extend(
                            v[s..e].iter().zip(mask).map(|(&v, &m)| if m { v } else { fill_valid }),
                        ),
                        None => {
                            validity.extend(mask.iter().map(|&m| if m { 1 } else { fill_valid }))
                        }
                    }
                }
                None => validity.resize(validity.len() + r.len as usize, fill_valid),
            }
        }
    }
    let size = field.cell_size();
    if size == 0 {
        return;
    }
    let fill = field.fill_cell();
    let start = col.data.len();
    let bytes = n as usize * size;
    if start == 0 {
        col.data = vec![0; bytes];
    } else {
        col.data.resize(start + bytes, 0);
    }
    let piece_cells = (MASKED_PIECE_BYTES / size).max(1) as u64;
    let mut pieces: Vec<(u32, u64, &mut [u8])> = Vec::with_capacity(runs.len());
    for_each_piece(runs, &mut col.data[start..], size, piece_cells, |slot, src, dst| {
        pieces.push((slot, src, dst));
    });
    let work = |(slot, src, dst): (u32, u64, &mut [u8])| match tile(slot) {
        Some(t) => {
            let cells = dst.len() / size;
            let mask = &masks[slot as usize][src as usize..src as usize + cells];
            select_cells(dst, &t.data[t.cells_range(src as usize, cells)], mask, &fill);
        }
        None => {
            for c in dst.chunks_exact_mut(size) {
                c.copy_from_slice(&fill);
            }
        }
    };
    if bytes >= MASKED_PIECE_BYTES {
        pieces.into_par_iter().for_each(work);
    } else {
        pieces.into_iter().for_each(work);
    }
}

/// `dst` cell `i` = `src` cell `i` where `mask[i]`, else `fill` (cells of `fill.len()` bytes).
/// One-, two-, four- and eight-byte cells are selected as unsigned integers with bit masks
/// (vector code, no branch per cell) when both slices are aligned for the type.
pub(super) fn select_cells(dst: &mut [u8], src: &[u8], mask: &[bool], fill: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    debug_assert_eq!(dst.len(), mask.len() * fill.len());
    let done = match fill.len() {
        1 => select_as::<u8>(dst, src, mask, fill),
        2 => select_as::<u16>(dst, src, mask, fill),
        4 => select_as::<u32>(dst, src, mask, fill),
        8 => select_as::<u64>(dst, src, mask, fill),
        _ => false,
    };
    if !done {
        let size = fill.len();
        for ((d, s), &m) in dst.chunks_exact_mut(size).zip(src.chunks_exact(size)).zip(mask) {
            d.copy_from_slice(if m { s } else { fill });
        }
    }
}

/// An unsigned integer a cell of its width is selected as.
pub(super) trait Lane:
    bytemuck::Pod + std::ops::BitAnd<Output = Self> + std::ops::BitOr<Output = Self>
{
    /// All ones when `m`, else zero.
    fn spread(m: bool) -> Self;
    /// The bitwise complement.
    fn not(self) -> Self;
}

macro_rules! lane_impl {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            #[inline(always)]
            fn spread(m: bool) -> Self {
                <$t>::from(m).wrapping_neg()
            }
            #[inline(always)]
            fn not(self) -> Self {
                !self
            }
        }
    )*};
}
lane_impl!(u8, u16, u32, u64);

/// [`select_cells`] on cells read as `T`; `false` when a slice is not aligned for `T`.
pub(super) fn select_as<T: Lane>(dst: &mut [u8], src: &[u8], mask: &[bool], fill: &[u8]) -> bool {
    let (Ok(d), Ok(s)) =
        (bytemuck::try_cast_slice_mut::<u8, T>(dst), bytemuck::try_cast_slice::<u8, T>(src))
    else {
        return false;
    };
    let f: T = bytemuck::pod_read_unaligned(fill);
    for ((d, &s), &m) in d.iter_mut().zip(s).zip(mask) {
        let keep = T::spread(m);
        *d = (s & keep) | (f & keep.not());
    }
    true
}

/// Calls `f(run, passes)` for the parts of `r` where the condition bitmap of its tile
/// (`masks[r.slot]`) is constant; runs of the fill value pass whole.
pub(super) fn split_run(r: Run, masks: &[Arc<Vec<bool>>], mut f: impl FnMut(Run, bool)) {
    if r.slot == FILL {
        f(r, true);
        return;
    }
    let mask = &masks[r.slot as usize];
    let (s, n) = (r.src as usize, r.len as usize);
    let mut i = 0;
    while i < n {
        let v = mask[s + i];
        let mut j = i + 1;
        while j < n && mask[s + j] == v {
            j += 1;
        }
        f(
            Run { slot: r.slot, src: r.src + i as u64, dst: r.dst + i as u64, len: (j - i) as u64 },
            v,
        );
        i = j;
    }
}
