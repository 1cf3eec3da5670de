//! Ordering cells: the k-way merge of fragments in global order with deduplication, the
//! fragment-after-fragment concatenation, and sorting by coordinates.

use super::*;

impl<'a> SparseReader<'a> {
    /// Sorts `cells` in the layout (row- or col-major), keeps the winner of each group of
    /// equal coordinates (every copy, newest fragment first, with duplicates allowed), then
    /// the cells passing the condition and deletes.
    pub(super) fn sort_cells(&self, cells: &mut Vec<CellRef>) {
        let col = self.layout == Layout::ColMajor;
        let cmp = &self.cmp;
        let frags = &self.frags;
        let dedup = !self.allows_dups;
        cells.par_sort_by(|(a, ka), (b, kb)| {
            cmp.layout(col, a, *ka, b, *kb)
                .then_with(|| {
                    // Winners first among equal coordinates; with duplicates, newest fragment
                    // first.
                    let pa = cmp.priority(frags, a, *ka);
                    let pb = cmp.priority(frags, b, *kb);
                    if dedup { pb.cmp(&pa) } else { pb.1.cmp(&pa.1) }
                })
                // Then in stored order (copies in one fragment).
                .then_with(|| (a.tile, a.origin(*ka)).cmp(&(b.tile, b.origin(*kb))))
        });
        if dedup {
            cells.dedup_by(|(b, kb), (a, ka)| cmp.layout(col, a, *ka, b, *kb).is_eq());
        }
        cells.retain(|(t, k)| self.keep_after_dedup(t, *k));
    }

    /// Makes sure fragment `f`'s cursor has a tile, loading its next window if needed.
    pub(super) fn ensure(&mut self, f: usize) -> Result<()> {
        while self.cursors[f].tiles.is_empty() && self.frags[f].next < self.frags[f].tiles.len() {
            self.load_windows(&[f])?;
        }
        Ok(())
    }

    pub(super) fn heap_less(&self, a: usize, b: usize) -> bool {
        let (Some(ta), Some(tb)) = (self.cursors[a].tiles.front(), self.cursors[b].tiles.front())
        else {
            return false;
        };
        match self.cmp.global(ta, self.cursors[a].k, tb, self.cursors[b].k) {
            Ordering::Less => true,
            Ordering::Greater => false,
            // Newer fragments first among equal coordinates.
            Ordering::Equal => self.frags[a].order > self.frags[b].order,
        }
    }

    pub(super) fn heap_push(&mut self, c: usize) {
        self.heap.push(c);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let p = (i - 1) / 2;
            if self.heap_less(self.heap[i], self.heap[p]) {
                self.heap.swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    pub(super) fn heap_pop(&mut self) -> Option<usize> {
        if self.heap.is_empty() {
            return None;
        }
        let last = self.heap.len() - 1;
        self.heap.swap(0, last);
        let top = self.heap.pop();
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap_less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.heap_less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == i {
                break;
            }
            self.heap.swap(i, m);
            i = m;
        }
        top
    }

    /// Advances cursor `c` past its current cell, loading more tiles when needed.
    pub(super) fn step(&mut self, c: usize) -> Result<()> {
        self.cursors[c].advance();
        self.ensure(c)
    }

    /// Merges the next group of cells with equal coordinates into the queue.
    pub(super) fn merge_next(&mut self) -> Result<bool> {
        let Some(c) = self.heap_pop() else { return Ok(false) };
        let Some(first) = self.cursors[c].current() else { return Ok(false) };
        let mut group: Vec<CellRef> = vec![first.clone()];
        let same = |s: &Self, x: &CellRef| s.cmp.global(&first.0, first.1, &x.0, x.1).is_eq();
        self.step(c)?;
        // Equal coordinates later in the same fragment (consolidated with timestamps, or
        // duplicates).
        while let Some(x) = self.cursors[c].current() {
            if !same(self, &x) {
                break;
            }
            group.push(x);
            self.step(c)?;
        }
        if self.cursors[c].current().is_some() {
            self.heap_push(c);
        }
        // Equal coordinates in other fragments.
        while let Some(&top) = self.heap.first() {
            let Some(x) = self.cursors[top].current() else { break };
            if !same(self, &x) {
                break;
            }
            let top = self.heap_pop().unwrap_or(top);
            while let Some(x) = self.cursors[top].current() {
                if !same(self, &x) {
                    break;
                }
                group.push(x);
                self.step(top)?;
            }
            if self.cursors[top].current().is_some() {
                self.heap_push(top);
            }
        }
        if self.allows_dups {
            // Newest fragment first, stored order within a fragment.
            let frags = &self.frags;
            group.sort_by(|(a, _), (b, _)| frags[b.frag].order.cmp(&frags[a.frag].order));
            for x in group {
                if self.keep_after_dedup(&x.0, x.1) {
                    self.queue.push_back(x);
                }
            }
        } else {
            let mut best = 0;
            let mut best_p = self.cmp.priority(&self.frags, &group[0].0, group[0].1);
            for (i, (t, k)) in group.iter().enumerate().skip(1) {
                let p = self.cmp.priority(&self.frags, t, *k);
                if p > best_p {
                    best = i;
                    best_p = p;
                }
            }
            let (t, k) = group.swap_remove(best);
            if self.keep_after_dedup(&t, k) {
                self.queue.push_back((t, k));
            }
        }
        Ok(true)
    }

    /// Concatenation: queues the cells of the next tile.
    pub(super) fn concat_next(&mut self) -> Result<bool> {
        loop {
            let f = self.concat_frag;
            if f >= self.frags.len() {
                return Ok(false);
            }
            self.ensure(f)?;
            let Some(t) = self.cursors[f].tiles.pop_front() else {
                self.concat_frag += 1;
                continue;
            };
            for k in 0..t.sel.len() {
                if self.keep_after_dedup(&t, k) {
                    self.queue.push_back((t.clone(), k));
                }
            }
            return Ok(true);
        }
    }

    /// The next result cell.
    pub(super) fn next_cell(&mut self) -> Result<Option<CellRef>> {
        if !self.started {
            self.start()?;
        }
        if let Some(c) = self.pending.take() {
            return Ok(Some(c));
        }
        while let Some((cells, i)) = &mut self.sorted {
            if let Some(c) = cells.get(*i).cloned() {
                *i += 1;
                return Ok(Some(c));
            }
            if !self.next_partition()? {
                return Ok(None);
            }
        }
        loop {
            if let Some(c) = self.queue.pop_front() {
                return Ok(Some(c));
            }
            let more = match self.mode {
                Mode::Concat => self.concat_next()?,
                _ => self.merge_next()?,
            };
            if !more {
                return Ok(None);
            }
        }
    }
}
