//! Planning a sparse read: the fragments and tiles that meet the subarray, how results are
//! ordered (concatenation, merge or sort), and which fields are read.

use super::*;

impl<'a> SparseReader<'a> {
    /// Prepares a sparse read of `out` over `subarray` in `layout`, keeping the cells that
    /// pass `filter`. Multi-range subarrays return each cell once, in any layout (libtiledb
    /// refuses them in global order; `docs/cli.md` asks for them).
    ///
    /// # Errors
    /// Storage and metadata errors loading R-trees, tile offsets, processed conditions and
    /// tile metadata.
    pub(crate) fn new(
        array: &'a Array,
        subarray: &Subarray,
        out: Vec<OutField>,
        layout: Layout,
        budget: Option<u64>,
        filter: SparseFilter,
    ) -> Result<Self> {
        let schema = array.schema();
        let dims = dim_types(schema);
        let ranges = subarray.sorted_merged(&dims);
        let range_keys: Vec<Vec<(u64, u64)>> = ranges
            .iter()
            .zip(&dims)
            .map(|(rs, dt)| {
                if dt.var {
                    Vec::new()
                } else {
                    rs.iter()
                        .map(|r| (ord_key(dt.datatype, &r.low), ord_key(dt.datatype, &r.high)))
                        .collect()
                }
            })
            .collect();
        // The bounding box of the subarray (ranges are sorted and disjoint).
        let bbox = Mbr(ranges
            .iter()
            .map(|rs| Range::new(rs[0].low.clone(), rs[rs.len() - 1].high.clone()))
            .collect());
        let order = GlobalOrder::new(schema);
        let allows_dups = schema.allows_duplicates;
        let open = array.timestamp_range();
        let storage = array.storage().as_ref();

        // Fragments meeting the subarray, with their tiles.
        let candidates: Vec<(usize, &Arc<Fragment>)> = array
            .fragments()
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.footer().non_empty_domain.as_ref().is_some_and(|ned| ned.overlaps(&dims, &bbox))
            })
            .collect();
        for (_, f) in &candidates {
            if f.footer().dense {
                return Err(Error::Corrupt {
                    file: f.dir(),
                    reason: "a dense fragment in a sparse array".into(),
                });
            }
        }
        let tiles: Vec<Vec<TileOverlap>> = candidates
            .par_iter()
            .with_min_len(FRAGMENTS_PER_TASK)
            .map(|(_, f)| {
                let rtree = f.rtree(storage)?;
                Ok(match &filter.points {
                    Some(points) => points.tiles(&rtree),
                    None => rtree.query(&dims, &ranges),
                })
            })
            .collect::<Result<_>>()?;
        let mut used: Vec<(usize, Arc<Fragment>, Vec<TileOverlap>)> = candidates
            .into_iter()
            .zip(tiles)
            .filter(|(_, t)| !t.is_empty())
            .map(|((o, f), t)| (o, f.clone(), t))
            .collect();

        // The mode.
        let any_ts = used.iter().any(|(_, f, _)| f.footer().has_timestamps);
        let mode = match layout {
            Layout::RowMajor | Layout::ColMajor => Mode::Sort,
            Layout::GlobalOrder => {
                if used.len() <= 1 && !any_ts {
                    Mode::Concat
                } else {
                    Mode::Merge
                }
            }
            _ => {
                if allows_dups || (!any_ts && disjoint(&dims, &used)) {
                    Mode::Concat
                } else {
                    Mode::Merge
                }
            }
        };
        let dedup = !allows_dups && mode != Mode::Concat;
        // Fragments whose tiles may be skipped on their metadata: no other fragment can hold
        // their coordinates (so skipping cannot let an older version through).
        let skippable: Vec<bool> = (0..used.len())
            .map(|i| {
                allows_dups
                    || (!used[i].1.footer().has_timestamps && overlaps_none(&dims, &used, i))
            })
            .collect();

        // The fields to read, by slot: dimensions, timestamps, delete timestamps, attributes.
        let dim_num = schema.dimensions.len();
        let mut qfields: Vec<QField> = (0..dim_num).map(QField::Dim).collect();
        let ts_slot = qfields.len();
        qfields.push(QField::Timestamps);
        let dt_slot = qfields.len();
        qfields.push(QField::DeleteTimestamps);
        let attr_slot = |qfields: &mut Vec<QField>, a: usize| {
            let q = QField::Attr(a);
            qfields.iter().position(|x| *x == q).unwrap_or_else(|| {
                qfields.push(q);
                qfields.len() - 1
            })
        };
        let mut out_slots = Vec::with_capacity(out.len());
        for f in &out {
            match f.source {
                Source::Dim(d) => out_slots.push(d),
                Source::Attr(a) => out_slots.push(attr_slot(&mut qfields, a)),
            }
        }
        // The fields conditions and deletes read, by name.
        let mut names: Vec<(String, usize)> = Vec::new();
        for (d, dim) in schema.dimensions.iter().enumerate() {
            names.push((dim.name.clone(), d));
        }
        names.push((TIMESTAMPS.to_owned(), ts_slot));
        names.push((DELETE_TIMESTAMPS.to_owned(), dt_slot));
        let mut filter_fields: Vec<&str> = Vec::new();
        if let Some(c) = &filter.condition {
            filter_fields.extend(c.fields());
        }
        for d in &filter.deletes {
            filter_fields.extend(d.stored().fields());
        }
        for name in filter_fields {
            if names.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Some(a) = schema.attributes.iter().position(|x| x.name == name) {
                let slot = attr_slot(&mut qfields, a);
                names.push((name.to_owned(), slot));
            }
        }
        let slot_types: Vec<(Datatype, u32)> = qfields
            .iter()
            .map(|q| match *q {
                QField::Dim(d) => {
                    (schema.dimensions[d].datatype, schema.dimensions[d].cell_val_num)
                }
                QField::Attr(a) => {
                    (schema.attributes[a].datatype, schema.attributes[a].cell_val_num)
                }
                QField::Timestamps | QField::DeleteTimestamps | QField::DeleteConditionIndex => {
                    (Datatype::UInt64, 1)
                }
            })
            .collect();

        let (start, end) = open;
        let filter_ref = &filter;
        let names_ref = &names;
        let neds: Vec<Mbr> = used
            .iter()
            .map(|(_, f, _)| f.footer().non_empty_domain.clone().unwrap_or_else(|| Mbr(Vec::new())))
            .collect();
        let neds_ref = &neds;
        let dims_ref = &dims;
        let built: Vec<SFrag> = used
            .par_drain(..)
            .zip(skippable.into_par_iter())
            .with_min_len(FRAGMENTS_PER_TASK)
            .enumerate()
            .map(|(index, ((o, f, mut tiles), skippable))| {
                let footer = f.footer();
                let (t1, t2) = f.name().timestamp_range();
                let has_ts = footer.has_timestamps;
                let has_dt = footer.has_delete_meta;
                let partial_ts = has_ts && !(start <= t1 && t2 <= end);
                let processed = if has_dt && !filter_ref.deletes.is_empty() {
                    Some(processed_conditions(storage, &f)?)
                } else if has_dt {
                    Some(Vec::new())
                } else {
                    None
                };
                let info = FragmentDeleteInfo {
                    timestamp_range: (t1, t2),
                    has_timestamps: has_ts,
                    processed_conditions: processed.as_deref(),
                };
                let deleted = filter_ref.deletes.iter().any(|d| {
                    matches!(
                        d.applies_to(&info),
                        DeleteApplies::AllCells | DeleteApplies::CellsUpToTimestamp
                    )
                });
                let filtered = filter_ref.condition.is_some() || deleted || has_dt;
                let cond_only = filter_ref.condition.is_some() && !deleted && !has_dt;
                let mut filter_slots: Vec<usize> = Vec::new();
                if filtered {
                    let mut wanted: Vec<&str> = Vec::new();
                    if let Some(c) = &filter_ref.condition {
                        wanted.extend(c.fields());
                    }
                    wanted.extend(delete_fields(&filter_ref.deletes, &info));
                    for w in wanted {
                        if let Some(&(_, s)) = names_ref.iter().find(|(n, _)| n == w)
                            && !filter_slots.contains(&s)
                        {
                            filter_slots.push(s);
                        }
                    }
                }
                // Tiles no cell of which can satisfy the condition (where skipping them cannot
                // change deduplication).
                let cells = TileCells::of(&f)?;
                if let Some(c) = &filter_ref.condition {
                    let alone = if skippable {
                        vec![true; tiles.len()]
                    } else if has_ts {
                        vec![false; tiles.len()]
                    } else {
                        lone_tiles(storage, dims_ref, &f, &tiles, neds_ref, index)?
                    };
                    if alone.iter().any(|&a| a) {
                        prune(storage, &f, c, &cells, &mut tiles, &alone)?;
                    }
                }
                // Coordinates are read to compare cells, to check cells of tiles partly in the
                // subarray, or to return them.
                let coords_needed = mode != Mode::Concat || tiles.iter().any(|t| !t.full);
                let readers = qfields
                    .iter()
                    .enumerate()
                    .map(|(slot, &q)| {
                        let wanted = out_slots.contains(&slot) || filter_slots.contains(&slot);
                        let needed = match q {
                            QField::Dim(_) => coords_needed || wanted,
                            QField::Attr(_) => wanted,
                            QField::Timestamps => has_ts && (partial_ts || dedup || wanted),
                            QField::DeleteTimestamps => has_dt,
                            QField::DeleteConditionIndex => false,
                        };
                        if needed { FieldReader::new(storage, &f, schema, q) } else { Ok(None) }
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(SFrag {
                    fragment: f.clone(),
                    order: o,
                    tiles,
                    next: 0,
                    cells,
                    readers,
                    partial_ts,
                    has_ts,
                    t1,
                    t2,
                    processed,
                    filtered,
                    cond_only,
                    filter_slots,
                    alone: skippable,
                    index,
                })
            })
            .collect::<Result<_>>()?;

        let mut fixed_pos = Vec::with_capacity(dim_num);
        let mut fixed_dims = 0;
        for d in &dims {
            if d.var {
                fixed_pos.push(None);
            } else {
                fixed_pos.push(Some(fixed_dims));
                fixed_dims += 1;
            }
        }
        let cmp = Cmp {
            tile_dims: order.tile_dims(),
            order,
            dim_slots: (0..dim_num).collect(),
            fixed_pos,
            fixed_dims,
            ts_slot,
        };
        let cursors = built.iter().map(|_| Cursor::default()).collect();
        Ok(SparseReader {
            array,
            mode,
            layout,
            dims,
            ranges,
            range_keys,
            frags: built,
            neds,
            out,
            out_slots,
            qfields,
            cmp,
            allows_dups,
            dedup,
            filter,
            names,
            slot_types,
            open,
            budget,
            started: false,
            cursors,
            heap: Vec::new(),
            queue: VecDeque::new(),
            concat_frag: 0,
            sorted: None,
            parts: None,
            pending: None,
            concat_part: None,
            meter: TileMeter::new(),
        })
    }

    /// Whether the mode compares cells (keys and all dimensions needed).
    pub(super) fn needs_keys(&self) -> bool {
        self.mode != Mode::Concat
    }

    /// Starts the read: loads the first windows.
    pub(super) fn start(&mut self) -> Result<()> {
        self.started = true;
        match self.mode {
            // Fragment after fragment, window after window (`concat_batch`, `ensure`).
            Mode::Concat => Ok(()),
            Mode::Merge => {
                let all: Vec<usize> = (0..self.frags.len()).collect();
                self.load_windows(&all)?;
                for f in 0..self.frags.len() {
                    self.ensure(f)?;
                    if !self.cursors[f].tiles.is_empty() {
                        self.heap_push(f);
                    }
                }
                Ok(())
            }
            Mode::Sort if self.budget.is_some() => {
                self.parts = Some(partition::Partitions::new(self)?);
                self.next_partition()?;
                Ok(())
            }
            Mode::Sort => {
                let all: Vec<usize> = (0..self.frags.len()).collect();
                self.load_windows(&all)?;
                let mut cells: Vec<CellRef> = Vec::new();
                for c in &mut self.cursors {
                    for t in c.tiles.drain(..) {
                        cells.extend((0..t.sel.len()).map(|k| (t.clone(), k)));
                    }
                }
                self.sort_cells(&mut cells);
                self.sorted = Some((cells, 0));
                Ok(())
            }
        }
    }
}

/// Whether the non-empty domain of fragment `i` of `frags` overlaps no other's.
pub(super) fn overlaps_none(
    dims: &[DimType],
    frags: &[(usize, Arc<Fragment>, Vec<TileOverlap>)],
    i: usize,
) -> bool {
    let Some(ned) = frags[i].1.footer().non_empty_domain.as_ref() else { return true };
    frags.iter().enumerate().all(|(j, (_, f, _))| {
        j == i || f.footer().non_empty_domain.as_ref().is_none_or(|o| !o.overlaps(dims, ned))
    })
}

/// Fragments set up by one task of the pool (a few are set up faster on the calling thread).
pub(super) const FRAGMENTS_PER_TASK: usize = 16;

/// Whether the non-empty domains of the fragments are pairwise disjoint (so no two can hold
/// the same coordinates).
pub(super) fn disjoint(
    dims: &[DimType],
    frags: &[(usize, Arc<Fragment>, Vec<TileOverlap>)],
) -> bool {
    let neds: Vec<&Mbr> =
        frags.iter().filter_map(|(_, f, _)| f.footer().non_empty_domain.as_ref()).collect();
    for i in 0..neds.len() {
        for j in i + 1..neds.len() {
            if neds[i].overlaps(dims, neds[j]) {
                return false;
            }
        }
    }
    true
}
