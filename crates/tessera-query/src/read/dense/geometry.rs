//! The geometry of a dense read: result positions cut into pieces (boxes inside one space
//! tile, mapped to the result by strides), pieces carved by the fragments' non-empty domains,
//! and boxes turned into runs contiguous both in a tile and in the result.

use super::*;

impl<'a> DenseReader<'a> {
    /// The pieces of positions `p0..p1`, carved into runs (sorted by position) over the
    /// fragment tiles they name in `Slots`.
    pub(super) fn carved(&self, p0: u64, p1: u64) -> Result<(Vec<Piece>, Vec<Run>, Slots)> {
        let pieces = self.pieces(p0, p1);
        let mut slots = Slots::default();
        let mut runs: Vec<Run> = Vec::new();
        for piece in &pieces {
            self.carve(piece, p0, &mut slots, &mut runs)?;
        }
        runs.sort_unstable_by_key(|r| r.dst);
        Ok((pieces, runs, slots))
    }

    /// Moves the global-order cursor to the block holding `self.pos`.
    pub(super) fn advance_cursor(&mut self) {
        let Some(mut c) = self.cursor.take() else { return };
        while !c.done {
            let size = self.block_size(&c.tile);
            if c.base + size > self.pos {
                break;
            }
            self.next_block(&mut c);
        }
        self.cursor = Some(c);
    }

    /// The box of the block (tile ∩ subarray) of space tile `tile` (global order: one range
    /// per dimension).
    pub(super) fn block_box(&self, tile: &[i128]) -> (Vec<i128>, Vec<i128>) {
        let mut lo = Vec::with_capacity(tile.len());
        let mut hi = Vec::with_capacity(tile.len());
        for (d, &t) in self.dims.iter().zip(tile) {
            let (rlo, rhi) = d.ranges[0];
            lo.push(rlo.max(d.tile_lo(t)));
            hi.push(rhi.min(d.tile_lo(t) + d.extent - 1));
        }
        (lo, hi)
    }

    pub(super) fn block_size(&self, tile: &[i128]) -> u64 {
        let (lo, hi) = self.block_box(tile);
        lo.iter().zip(&hi).map(|(l, h)| (h - l + 1) as u64).product()
    }

    pub(super) fn next_block(&self, c: &mut BlockCursor) {
        c.base += self.block_size(&c.tile);
        let order: Vec<usize> = if self.tile_order == Layout::ColMajor {
            (0..self.dims.len()).collect()
        } else {
            (0..self.dims.len()).rev().collect()
        };
        for &d in &order {
            let dim = &self.dims[d];
            let last = dim.tile_of(dim.ranges[0].1);
            if c.tile[d] < last {
                c.tile[d] += 1;
                return;
            }
            c.tile[d] = dim.tile_of(dim.ranges[0].0);
        }
        c.done = true;
    }

    /// The pieces covering positions `p0..p1`.
    pub(super) fn pieces(&self, p0: u64, p1: u64) -> Vec<Piece> {
        let mut out = Vec::new();
        let dim_num = self.dims.len();
        if self.layout == Layout::GlobalOrder {
            let Some(mut c) = self.cursor.clone() else { return out };
            let cell_col = self.cell_order == Layout::ColMajor;
            while !c.done && c.base < p1 {
                let (lo, hi) = self.block_box(&c.tile);
                let ext: Vec<u64> = lo.iter().zip(&hi).map(|(l, h)| (h - l + 1) as u64).collect();
                let size: u64 = ext.iter().product();
                let q0 = p0.max(c.base) - c.base;
                let q1 = p1.min(c.base + size) - c.base;
                if q0 < q1 {
                    let lstrides = strides(&ext, cell_col);
                    for b in grid_boxes(&ext, cell_col, q0, q1) {
                        let plo: Vec<i128> = (0..dim_num).map(|k| lo[k] + b[k].0 as i128).collect();
                        let phi: Vec<i128> = (0..dim_num).map(|k| lo[k] + b[k].1 as i128).collect();
                        let dst_base =
                            c.base + (0..dim_num).map(|k| b[k].0 * lstrides[k]).sum::<u64>();
                        out.push(Piece {
                            lo: plo,
                            hi: phi,
                            tile: c.tile.clone(),
                            dst_base,
                            dst_strides: lstrides.clone(),
                        });
                    }
                }
                self.next_block(&mut c);
            }
            return out;
        }
        let lens: Vec<u64> = self.dims.iter().map(|d| d.len).collect();
        for b in grid_boxes(&lens, self.layout == Layout::ColMajor, p0, p1) {
            // Per dimension, the grid interval split at range and tile boundaries.
            let segs: Vec<Vec<(i128, i128, u64, i128)>> =
                self.dims.iter().zip(&b).map(|(d, &(g0, g1))| segments(d, g0, g1)).collect();
            let mut idx = vec![0usize; dim_num];
            'outer: loop {
                let mut lo = Vec::with_capacity(dim_num);
                let mut hi = Vec::with_capacity(dim_num);
                let mut tile = Vec::with_capacity(dim_num);
                let mut dst_base = 0u64;
                for k in 0..dim_num {
                    let (l, h, g, t) = segs[k][idx[k]];
                    lo.push(l);
                    hi.push(h);
                    tile.push(t);
                    dst_base += g * self.grid_strides[k];
                }
                out.push(Piece { lo, hi, tile, dst_base, dst_strides: self.grid_strides.clone() });
                let mut k = dim_num;
                loop {
                    if k == 0 {
                        break 'outer;
                    }
                    k -= 1;
                    idx[k] += 1;
                    if idx[k] < segs[k].len() {
                        break;
                    }
                    idx[k] = 0;
                }
            }
        }
        out
    }

    /// Splits `piece` by the fragments' non-empty domains, newest first, into runs.
    pub(super) fn carve(
        &self,
        piece: &Piece,
        p0: u64,
        slots: &mut Slots,
        runs: &mut Vec<Run>,
    ) -> Result<()> {
        let dim_num = self.dims.len();
        let cell_fast_first: Vec<usize> = if self.cell_order == Layout::ColMajor {
            (0..dim_num).collect()
        } else {
            (0..dim_num).rev().collect()
        };
        let dst_of = |lo: &[i128]| -> u64 {
            piece.dst_base - p0
                + (0..dim_num)
                    .map(|k| (lo[k] - piece.lo[k]) as u64 * piece.dst_strides[k])
                    .sum::<u64>()
        };
        let mut uncovered: Vec<(Vec<i128>, Vec<i128>)> = vec![(piece.lo.clone(), piece.hi.clone())];
        for (fi, frag) in self.frags.iter().enumerate() {
            if uncovered.is_empty() {
                break;
            }
            if !(0..dim_num).all(|k| frag.ned[k].0 <= piece.hi[k] && piece.lo[k] <= frag.ned[k].1) {
                continue;
            }
            // The fragment's tile holding the piece.
            let mut tile_idx = 0u64;
            for k in 0..dim_num {
                tile_idx += (piece.tile[k] - frag.first_tile[k]) as u64 * frag.tile_strides[k];
            }
            if tile_idx >= frag.tile_num {
                return Err(Error::Corrupt {
                    file: format!("{}/{}", frag.dir, crate::FRAGMENT_METADATA_FILE),
                    reason: format!("tile {tile_idx} past the fragment's {} tiles", frag.tile_num),
                });
            }
            let tile_lo: Vec<i128> =
                (0..dim_num).map(|k| self.dims[k].tile_lo(piece.tile[k])).collect();
            let mut rest = Vec::new();
            for (blo, bhi) in uncovered.drain(..) {
                let ilo: Vec<i128> = (0..dim_num).map(|k| blo[k].max(frag.ned[k].0)).collect();
                let ihi: Vec<i128> = (0..dim_num).map(|k| bhi[k].min(frag.ned[k].1)).collect();
                if (0..dim_num).any(|k| ilo[k] > ihi[k]) {
                    rest.push((blo, bhi));
                    continue;
                }
                let slot = match slots.map.get(&(fi, tile_idx)) {
                    Some(&s) => s,
                    None => {
                        slots.list.push((fi, tile_idx));
                        slots.tiles.push(piece.tile.clone());
                        let s = (slots.list.len() - 1) as u32;
                        slots.map.insert((fi, tile_idx), s);
                        s
                    }
                };
                let src_base: u64 =
                    (0..dim_num).map(|k| (ilo[k] - tile_lo[k]) as u64 * self.cell_strides[k]).sum();
                emit_runs(
                    &ilo,
                    &ihi,
                    &cell_fast_first,
                    Some((&self.cell_strides, src_base)),
                    &piece.dst_strides,
                    dst_of(&ilo),
                    |src, dst, len| runs.push(Run { slot, src, dst, len }),
                );
                subtract(&blo, &bhi, &ilo, &ihi, &mut rest);
            }
            uncovered = rest;
        }
        // What no fragment holds takes the fill value.
        let mut by_stride: Vec<usize> = (0..dim_num).collect();
        by_stride.sort_by_key(|&k| piece.dst_strides[k]);
        for (blo, bhi) in uncovered {
            emit_runs(
                &blo,
                &bhi,
                &by_stride,
                None,
                &piece.dst_strides,
                dst_of(&blo),
                |src, dst, len| {
                    runs.push(Run { slot: FILL, src, dst, len });
                },
            );
        }
        Ok(())
    }
}

/// Strides of a grid of `lens`: row-major (last dimension fastest) or col-major.
pub(super) fn strides(lens: &[u64], col_major: bool) -> Vec<u64> {
    let n = lens.len();
    let mut s = vec![1u64; n];
    if col_major {
        for k in 1..n {
            s[k] = s[k - 1].saturating_mul(lens[k - 1]);
        }
    } else {
        for k in (0..n.saturating_sub(1)).rev() {
            s[k] = s[k + 1].saturating_mul(lens[k + 1]);
        }
    }
    s
}

/// The grid interval `[g0, g1]` of dimension `d` as segments `(lo, hi, grid start, tile)`,
/// each inside one range and one space tile.
pub(super) fn segments(d: &DDim, g0: u64, g1: u64) -> Vec<(i128, i128, u64, i128)> {
    let mut out = Vec::new();
    for (&(rlo, rhi), &off) in d.ranges.iter().zip(&d.range_off) {
        let rlen = (rhi - rlo + 1) as u64;
        let (s, e) = (g0.max(off), g1.min(off + rlen - 1));
        if s > e {
            continue;
        }
        let mut c = rlo + (s - off) as i128;
        let last = rlo + (e - off) as i128;
        while c <= last {
            let t = d.tile_of(c);
            let tile_end = d.tile_lo(t) + d.extent - 1;
            let h = last.min(tile_end);
            out.push((c, h, off + (c - rlo) as u64, t));
            c = h + 1;
        }
    }
    out
}

/// The positions `q0..q1` of a grid of `lens` (row-major, or col-major) as boxes of grid
/// indexes, one `(first, last)` per dimension; at most about `2 × dimensions` boxes.
pub(super) fn grid_boxes(lens: &[u64], col_major: bool, q0: u64, q1: u64) -> Vec<Vec<(u64, u64)>> {
    let n = lens.len();
    let mut out = Vec::new();
    if q0 >= q1 || n == 0 {
        return out;
    }
    // Levels: slowest dimension first.
    let order: Vec<usize> = if col_major { (0..n).rev().collect() } else { (0..n).collect() };
    let lvl_lens: Vec<u64> = order.iter().map(|&d| lens[d]).collect();
    let unravel = |p: u64| -> Vec<u64> {
        let mut idx = vec![0u64; n];
        let mut rest = p;
        for k in (0..n).rev() {
            idx[k] = rest % lvl_lens[k];
            rest /= lvl_lens[k];
        }
        idx
    };
    let a = unravel(q0);
    let b = unravel(q1 - 1);
    let mut prefix = Vec::with_capacity(n);
    let mut lvl_boxes = Vec::new();
    decompose(&a, &b, &lvl_lens, 0, &mut prefix, &mut lvl_boxes);
    for lb in lvl_boxes {
        let mut bx = vec![(0u64, 0u64); n];
        for (k, &d) in order.iter().enumerate() {
            bx[d] = lb[k];
        }
        out.push(bx);
    }
    out
}

/// Boxes covering the cells from multi-index `a` to `b` (inclusive, in level order, equal on
/// levels `..k`, fixed in `prefix`).
pub(super) fn decompose(
    a: &[u64],
    b: &[u64],
    lens: &[u64],
    k: usize,
    prefix: &mut Vec<(u64, u64)>,
    out: &mut Vec<Vec<(u64, u64)>>,
) {
    let n = lens.len();
    if k == n {
        out.push(prefix.clone());
        return;
    }
    if a[k] == b[k] {
        prefix.push((a[k], a[k]));
        decompose(a, b, lens, k + 1, prefix, out);
        prefix.pop();
        return;
    }
    let full_tail =
        |prefix: &mut Vec<(u64, u64)>, lo: u64, hi: u64, out: &mut Vec<Vec<(u64, u64)>>| {
            let mut bx = prefix.clone();
            bx.push((lo, hi));
            bx.extend((k + 1..n).map(|j| (0, lens[j] - 1)));
            out.push(bx);
        };
    let a_rest_zero = a[k + 1..].iter().all(|&x| x == 0);
    let b_rest_max = b[k + 1..].iter().zip(&lens[k + 1..]).all(|(&x, &m)| x == m - 1);
    let mut mid_lo = a[k] + 1;
    if a_rest_zero {
        mid_lo = a[k];
    } else {
        // From `a` to the end of its row at level k.
        let mut end = a.to_vec();
        for j in k + 1..n {
            end[j] = lens[j] - 1;
        }
        prefix.push((a[k], a[k]));
        decompose(a, &end, lens, k + 1, prefix, out);
        prefix.pop();
    }
    let mid_hi = if b_rest_max { Some(b[k]) } else { b[k].checked_sub(1) };
    if let Some(mid_hi) = mid_hi
        && mid_lo <= mid_hi
    {
        full_tail(prefix, mid_lo, mid_hi, out);
    }
    if !b_rest_max {
        let mut start = b.to_vec();
        for s in start.iter_mut().skip(k + 1) {
            *s = 0;
        }
        prefix.push((b[k], b[k]));
        decompose(&start, b, lens, k + 1, prefix, out);
        prefix.pop();
    }
}

/// Adds to `out` the boxes covering `[blo, bhi]` minus `[ilo, ihi]` (which lies inside it).
pub(super) fn subtract(
    blo: &[i128],
    bhi: &[i128],
    ilo: &[i128],
    ihi: &[i128],
    out: &mut Vec<(Vec<i128>, Vec<i128>)>,
) {
    let mut lo = blo.to_vec();
    let mut hi = bhi.to_vec();
    for k in 0..blo.len() {
        if lo[k] < ilo[k] {
            let mut h = hi.clone();
            h[k] = ilo[k] - 1;
            out.push((lo.clone(), h));
            lo[k] = ilo[k];
        }
        if hi[k] > ihi[k] {
            let mut l = lo.clone();
            l[k] = ihi[k] + 1;
            out.push((l, hi.clone()));
            hi[k] = ihi[k];
        }
    }
}

/// Calls `f(src, dst, len)` for runs covering box `[lo, hi]`: cells contiguous both in the
/// source (strides `src.0`, first cell `src.1`; `None` for the fill value) and in the result
/// (strides `dst_strides`, first position `dst_base`). `order` lists dimensions fastest first
/// in the source's order.
pub(super) fn emit_runs(
    lo: &[i128],
    hi: &[i128],
    order: &[usize],
    src: Option<(&[u64], u64)>,
    dst_strides: &[u64],
    dst_base: u64,
    mut f: impl FnMut(u64, u64, u64),
) {
    let ext: Vec<u64> = lo.iter().zip(hi).map(|(l, h)| (h - l + 1) as u64).collect();
    let src_strides = src.map(|(s, _)| s);
    let src_base = src.map_or(0, |(_, b)| b);
    let mut len = 1u64;
    let mut k = 0;
    while k < order.len() {
        let d = order[k];
        let ok = ext[d] == 1 || (src_strides.is_none_or(|s| s[d] == len) && dst_strides[d] == len);
        if !ok {
            break;
        }
        len *= ext[d];
        k += 1;
    }
    let outer: Vec<usize> = order[k..].iter().copied().filter(|&d| ext[d] > 1).collect();
    let mut idx = vec![0u64; outer.len()];
    loop {
        let mut s = src_base;
        let mut t = dst_base;
        for (j, &d) in outer.iter().enumerate() {
            if let Some(ss) = src_strides {
                s += idx[j] * ss[d];
            }
            t += idx[j] * dst_strides[d];
        }
        f(s, t, len);
        let mut j = 0;
        loop {
            if j == outer.len() {
                return;
            }
            idx[j] += 1;
            if idx[j] < ext[outer[j]] {
                break;
            }
            idx[j] = 0;
            j += 1;
        }
    }
}
