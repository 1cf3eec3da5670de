//! The R-tree of a sparse fragment: build, (de)serialisation and range queries.

use crate::cursor::Cursor;
use crate::{DimType, Error, Level, Mbr, MbrRef, Range, RangeRef, Result};

/// The fan-out libtiledb gives every fragment R-tree (`constants::rtree_fanout`).
pub const DEFAULT_FANOUT: u32 = 10;

/// An empty leaf level, returned by [`RTree::leaves`] for a tree without levels.
static NO_LEAVES: Level = Level::new(0);

/// An R-tree over the tile MBRs of one fragment, as libtiledb's `RTree`.
///
/// The leaves are the tiles' MBRs in tile order; each level above groups consecutive runs of
/// `fanout` MBRs of the level below into their bounding box. Levels are kept root first, as
/// on disk. A dense fragment's tree has no levels; a tree of one leaf has one level.
///
/// A tree does not remember its dimensions: every method that compares or encodes bounds
/// takes the same `&[DimType]` the tree was built or parsed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RTree {
    fanout: u32,
    /// Root first; the last level holds the leaves.
    levels: Vec<Level>,
}

/// A tile selected by [`RTree::query`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TileOverlap {
    /// The tile's index (its leaf's position).
    pub tile: u64,
    /// Whether the tile's MBR lies entirely inside the query in every dimension, so that
    /// every cell of the tile qualifies without checking coordinates.
    pub full: bool,
}

impl Default for RTree {
    /// A tree without levels and the default fan-out: what a dense fragment stores.
    fn default() -> Self {
        Self::empty(DEFAULT_FANOUT)
    }
}

impl RTree {
    /// A tree without levels: what a dense fragment stores (`0a000000 00000000` with the
    /// default fan-out).
    pub const fn empty(fanout: u32) -> Self {
        Self { fanout, levels: Vec::new() }
    }

    /// Builds the tree over `leaves` (the tiles' MBRs in tile order) exactly as libtiledb's
    /// `RTree::build_tree` does: no leaves give no levels; one leaf gives one level; otherwise
    /// the height is `ceil(ln(n) / ln(fanout)) + 1`, computed in `f64`, and each level above
    /// the leaves holds the bounding boxes of consecutive runs of `fanout` MBRs of the level
    /// below (the last run may be short), grown as [`Mbr::expand`] does.
    ///
    /// # Errors
    /// [`Error::InvalidFanout`] for a fan-out below 2; [`Error::MbrShape`] for a leaf that
    /// does not fit `dims`.
    pub fn build(dims: &[DimType], leaves: &[Mbr], fanout: u32) -> Result<Self> {
        let mut level = Level::new(dims.len());
        level.reserve(leaves.len(), leaves.first().map_or(0, |m| m.encoded_len(dims)));
        for leaf in leaves {
            level.push(dims, leaf)?;
        }
        Self::from_leaves(dims, level, fanout)
    }

    /// Like [`Self::build`], from a leaf level filled with [`Level::push`].
    ///
    /// # Errors
    /// [`Error::InvalidFanout`] for a fan-out below 2; [`Error::MbrShape`] when the level's
    /// dimension count differs from `dims`.
    pub fn from_leaves(dims: &[DimType], leaves: Level, fanout: u32) -> Result<Self> {
        if fanout < 2 {
            return Err(Error::InvalidFanout { fanout });
        }
        if leaves.dim_num() != dims.len() {
            return Err(Error::MbrShape {
                index: 0,
                reason: format!(
                    "{} dimensions given for a level of {}",
                    dims.len(),
                    leaves.dim_num()
                ),
            });
        }
        let n = leaves.len();
        if n == 0 {
            return Ok(Self::empty(fanout));
        }
        let height = if n == 1 { 1 } else { tree_height(n, fanout) };
        let mut levels = Vec::with_capacity(height);
        levels.push(leaves);
        while levels.len() < height {
            let Some(below) = levels.last() else { break };
            let above = build_level(dims, below, fanout as usize);
            levels.push(above);
        }
        levels.reverse();
        Ok(Self { fanout, levels })
    }

    /// Decodes an R-tree from the payload of a fragment's first generic tile:
    /// `u32 fanout`, `u32 level_num`, then for each level, root first, `u64 mbr_num` and
    /// `mbr_num` MBRs (each one range per entry of `dims`, see [`Mbr::parse`]).
    ///
    /// Every count is checked against the bytes left before anything is allocated, and the
    /// level sizes must be those a build produces: the root holds one MBR and each level
    /// holds `ceil(n / fanout)` MBRs for the `n` of the level below. The upper MBRs are
    /// trusted to bound their children, as libtiledb trusts them. Error offsets are relative
    /// to `payload`.
    ///
    /// # Errors
    /// [`Error::NoDimensions`] when `dims` is empty; [`Error::Truncated`] when the payload
    /// ends inside a field; [`Error::CountTooLarge`] for a `level_num` or `mbr_num` the
    /// remaining bytes cannot hold; [`Error::Invalid`] for level sizes no build produces (or
    /// a zero fan-out with several levels) and for a var range whose `start_size` exceeds its
    /// `range_size`; [`Error::TrailingBytes`] when bytes follow the last level.
    pub fn parse(payload: &[u8], dims: &[DimType]) -> Result<Self> {
        if dims.is_empty() {
            return Err(Error::NoDimensions);
        }
        // At least 2 bytes, since every datatype is at least one byte wide.
        let min_mbr: usize = dims.iter().map(|d| d.min_encoded_len()).sum();
        let fixed_bounds: usize = dims.iter().filter_map(|d| d.coord_size()).map(|s| 2 * s).sum();
        let mut cur = Cursor::new(payload);
        let fanout = cur.u32("fanout")?;
        let level_num_offset = cur.position();
        let level_num = cur.u32("level_num")?;
        // Every level holds at least one MBR after its count.
        let max_levels = cur.remaining() / (8 + min_mbr);
        if level_num as usize > max_levels {
            return Err(Error::CountTooLarge {
                field: "level_num",
                offset: level_num_offset as u64,
                count: u64::from(level_num),
                max: max_levels as u64,
                available: cur.remaining() as u64,
            });
        }
        if level_num >= 2 && fanout == 0 {
            return Err(Error::Invalid {
                field: "fanout",
                offset: 0,
                reason: format!("a tree of {level_num} levels needs a fanout of at least 1"),
            });
        }
        let mut levels: Vec<Level> = Vec::with_capacity(level_num as usize);
        for _ in 0..level_num {
            let offset = cur.position();
            let mbr_num = cur.u64("mbr_num")?;
            let max = cur.remaining() / min_mbr;
            if mbr_num > max as u64 {
                return Err(Error::CountTooLarge {
                    field: "mbr_num",
                    offset: offset as u64,
                    count: mbr_num,
                    max: max as u64,
                    available: cur.remaining() as u64,
                });
            }
            check_level_size(levels.last().map(Level::len), mbr_num, fanout).map_err(|reason| {
                Error::Invalid { field: "mbr_num", offset: offset as u64, reason }
            })?;
            // mbr_num <= max, a usize.
            let mbr_num = mbr_num as usize;
            let mut level = Level::new(dims.len());
            level.reserve(mbr_num, fixed_bounds);
            for _ in 0..mbr_num {
                for &dim in dims {
                    level.push_range(RangeRef::read(&mut cur, dim)?);
                }
                level.end_mbr();
            }
            levels.push(level);
        }
        if cur.remaining() > 0 {
            return Err(Error::TrailingBytes {
                offset: cur.position() as u64,
                count: cur.remaining() as u64,
            });
        }
        Ok(Self { fanout, levels })
    }

    /// Appends the on-disk encoding (see [`Self::parse`]); `write` of a parsed tree gives back
    /// the bytes parsed.
    pub fn write(&self, dims: &[DimType], out: &mut Vec<u8>) {
        out.extend_from_slice(&self.fanout.to_le_bytes());
        // At most u32::MAX levels: a parsed tree has a u32 count, a built one at most 65.
        out.extend_from_slice(&(self.levels.len() as u32).to_le_bytes());
        for level in &self.levels {
            out.extend_from_slice(&(level.len() as u64).to_le_bytes());
            level.write(dims, out);
        }
    }

    /// The on-disk encoding, the payload of the fragment's R-tree generic tile.
    pub fn to_bytes(&self, dims: &[DimType]) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(dims, &mut out);
        out
    }

    /// The fan-out.
    pub fn fanout(&self) -> u32 {
        self.fanout
    }

    /// Number of levels (0 for a dense fragment's tree).
    pub fn height(&self) -> usize {
        self.levels.len()
    }

    /// The levels, root first.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The root MBR (the bounding box of every tile), `None` for a tree without levels.
    pub fn root(&self) -> Option<MbrRef<'_>> {
        self.levels.first()?.get(0)
    }

    /// The leaf level: one MBR per tile, in tile order (empty for a tree without levels).
    pub fn leaves(&self) -> &Level {
        self.levels.last().unwrap_or(&NO_LEAVES)
    }

    /// The MBR of tile `tile`.
    pub fn leaf(&self, tile: u64) -> Option<MbrRef<'_>> {
        self.leaves().get(usize::try_from(tile).ok()?)
    }

    /// Number of leaves (tiles).
    pub fn leaf_count(&self) -> u64 {
        self.leaves().len() as u64
    }

    /// Approximate heap bytes held, for memory budgets.
    pub fn heap_size(&self) -> usize {
        self.levels.iter().map(Level::heap_size).sum::<usize>()
            + self.levels.capacity() * size_of::<Level>()
    }

    /// The tiles whose MBR meets a multi-range subarray, in increasing tile order, each once.
    ///
    /// `ranges[d]` lists the ranges of dimension `d`. A tile qualifies when, in every
    /// dimension, its MBR range overlaps at least one of that dimension's ranges; it is
    /// [`TileOverlap::full`] when, in every dimension, its MBR range lies inside one of them.
    /// A dimension with an empty list matches nothing; a dimension past the end of `ranges`
    /// is not constrained.
    ///
    /// The walk starts at the root and skips every subtree whose MBR misses the subarray;
    /// a subtree whose MBR lies fully inside it yields all its leaves as full without
    /// visiting them.
    pub fn query<R: AsRef<[Range]>>(&self, dims: &[DimType], ranges: &[R]) -> Vec<TileOverlap> {
        let mut out = Vec::new();
        self.query_into(dims, ranges, &mut out);
        out
    }

    /// Like [`Self::query`], appending to `out`.
    pub fn query_into<R: AsRef<[Range]>>(
        &self,
        dims: &[DimType],
        ranges: &[R],
        out: &mut Vec<TileOverlap>,
    ) {
        let Some(leaf_level) = self.levels.len().checked_sub(1) else { return };
        let fanout = self.fanout as usize;
        // Depth first, children pushed last to first so that tiles come out in order.
        let mut stack = vec![(0usize, 0usize)];
        while let Some((l, i)) = stack.pop() {
            let Some(mbr) = self.levels.get(l).and_then(|level| level.get(i)) else { continue };
            match classify(dims, mbr, ranges) {
                Overlap::None => {}
                Overlap::Full => {
                    let (lo, hi) = self.leaf_span(l, i);
                    out.extend((lo..hi).map(|t| TileOverlap { tile: t as u64, full: true }));
                }
                Overlap::Partial if l == leaf_level => {
                    out.push(TileOverlap { tile: i as u64, full: false });
                }
                Overlap::Partial => {
                    let below = self.levels.get(l + 1).map_or(0, Level::len);
                    let start = i.saturating_mul(fanout);
                    let end = start.saturating_add(fanout).min(below);
                    stack.extend((start..end).rev().map(|c| (l + 1, c)));
                }
            }
        }
    }

    /// The leaves under MBR `index` of level `level`, as a range of tile ids.
    fn leaf_span(&self, level: usize, index: usize) -> (usize, usize) {
        let f = self.fanout as usize;
        let (mut lo, mut hi) = (index, index.saturating_add(1));
        for below in self.levels.get(level + 1..).unwrap_or_default() {
            lo = lo.saturating_mul(f);
            hi = hi.saturating_mul(f).min(below.len());
        }
        (lo, hi.max(lo))
    }
}

/// libtiledb's height for `leaf_num >= 2` leaves:
/// `(size_t)std::ceil(utils::math::log(fanout, leaf_num)) + 1`, where `log(b, x)` is
/// `::log(x) / ::log(b)` in `double`.
fn tree_height(leaf_num: usize, fanout: u32) -> usize {
    ((leaf_num as f64).ln() / f64::from(fanout).ln()).ceil() as usize + 1
}

/// The level above `below`: the bounding box of each run of `fanout` MBRs (libtiledb's
/// `RTree::build_level`: the first MBR of a run is copied, the others expand it).
fn build_level(dims: &[DimType], below: &Level, fanout: usize) -> Level {
    let mut level = Level::new(below.dim_num());
    let groups = below.len().div_ceil(fanout);
    level.reserve(groups, 0);
    let mut acc: Vec<RangeRef<'_>> = Vec::with_capacity(below.dim_num());
    for g in 0..groups {
        let start = g * fanout;
        let end = (start + fanout).min(below.len());
        acc.clear();
        for i in start..end {
            let Some(mbr) = below.get(i) else { break };
            if i == start {
                acc.extend(mbr.ranges());
            } else {
                for ((a, r), &dim) in acc.iter_mut().zip(mbr.ranges()).zip(dims) {
                    a.expand(r, dim);
                }
            }
        }
        level.push_ranges(acc.iter().copied());
    }
    level
}

/// Why a level of `mbr_num` MBRs cannot follow a level of `above` MBRs (`None`: it is the
/// root), if it cannot.
fn check_level_size(
    above: Option<usize>,
    mbr_num: u64,
    fanout: u32,
) -> std::result::Result<(), String> {
    match above {
        None if mbr_num != 1 => Err(format!("the root level holds {mbr_num} MBRs, not 1")),
        None => Ok(()),
        Some(above) => {
            // fanout > 0 here: parse rejects a zero fan-out with more than one level.
            let parents = mbr_num.div_ceil(u64::from(fanout.max(1)));
            if parents == above as u64 {
                Ok(())
            } else {
                Err(format!(
                    "{mbr_num} MBRs with fanout {fanout} need {parents} parents, \
                     but the level above holds {above}"
                ))
            }
        }
    }
}

/// How an MBR meets a multi-range subarray.
enum Overlap {
    /// Misses it in some dimension.
    None,
    /// Meets it in every dimension, inside it in some but not all.
    Partial,
    /// Lies inside one range in every dimension.
    Full,
}

fn classify<R: AsRef<[Range]>>(dims: &[DimType], mbr: MbrRef<'_>, ranges: &[R]) -> Overlap {
    let mut full = true;
    for ((r, &dim), query) in mbr.ranges().zip(dims).zip(ranges) {
        let mut hit = false;
        let mut inside = false;
        for q in query.as_ref() {
            let q = q.view();
            if q.overlaps(r, dim) {
                hit = true;
                if q.contains(r, dim) {
                    inside = true;
                    break;
                }
            }
        }
        if !hit {
            return Overlap::None;
        }
        full &= inside;
    }
    if full { Overlap::Full } else { Overlap::Partial }
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;

    /// The smallest `h` with `fanout^(h-1) >= n`, plus one: the height an exact integer
    /// formula would give.
    fn exact_height(n: usize, fanout: usize) -> usize {
        let (mut h, mut cap) = (1, 1usize);
        while cap < n {
            cap *= fanout;
            h += 1;
        }
        h
    }

    #[test]
    fn f64_height_is_exact_for_fanout_ten() {
        for n in 2..300_000 {
            assert_eq!(tree_height(n, 10), exact_height(n, 10), "n = {n}");
        }
    }

    #[test]
    fn f64_height_overshoot_is_reproduced_and_parsed() {
        // ln(125) / ln(5) = 3.0000000000000004 in f64, so libtiledb builds one level more
        // than needed: a root holding one MBR above another single-MBR level.
        assert_eq!(tree_height(125, 5), 5);
        let dims = [DimType::fixed(Datatype::Int32)];
        let leaves: Vec<Mbr> = (0..125).map(|i| Mbr(vec![Range::from_values(i, i + 1)])).collect();
        let tree = RTree::build(&dims, &leaves, 5).unwrap();
        let sizes: Vec<usize> = tree.levels().iter().map(Level::len).collect();
        assert_eq!(sizes, [1, 1, 5, 25, 125]);
        let bytes = tree.to_bytes(&dims);
        assert_eq!(RTree::parse(&bytes, &dims).unwrap(), tree);
        let q = [vec![Range::from_values(10i32, 20)]];
        let hits: Vec<u64> = tree.query(&dims, &q).iter().map(|t| t.tile).collect();
        assert_eq!(hits, (9..=20).collect::<Vec<u64>>());
    }

    #[test]
    fn level_sizes_follow_libtiledb() {
        let dims = [DimType::fixed(Datatype::UInt8)];
        for (n, sizes) in [
            (0usize, &[][..]),
            (1, &[1][..]),
            (2, &[1, 2][..]),
            (10, &[1, 10][..]),
            (11, &[1, 2, 11][..]),
            (100, &[1, 10, 100][..]),
            (101, &[1, 2, 11, 101][..]),
        ] {
            let leaves: Vec<Mbr> =
                (0..n).map(|i| Mbr(vec![Range::from_values(i as u8, i as u8)])).collect();
            let tree = RTree::build(&dims, &leaves, DEFAULT_FANOUT).unwrap();
            let got: Vec<usize> = tree.levels().iter().map(Level::len).collect();
            assert_eq!(got, sizes, "n = {n}");
            assert_eq!(tree.leaf_count(), n as u64);
        }
    }

    #[test]
    fn upper_levels_keep_the_later_bound_on_ties() {
        // -0.0 and 0.0 compare equal; libtiledb's std::min/std::max keep the incoming MBR's
        // bound, so the parent takes the second leaf's bytes.
        let dims = [DimType::fixed(Datatype::Float64)];
        let leaves = [
            Mbr(vec![Range::from_values(0.0f64, -0.0)]),
            Mbr(vec![Range::from_values(-0.0f64, 0.0)]),
        ];
        let tree = RTree::build(&dims, &leaves, DEFAULT_FANOUT).unwrap();
        assert_eq!(tree.root().unwrap(), Mbr(vec![Range::from_values(-0.0f64, 0.0)]));
    }

    #[test]
    fn build_rejects_bad_input() {
        let dims = [DimType::fixed(Datatype::Int32)];
        let leaf = Mbr(vec![Range::from_values(1i32, 2)]);
        assert_eq!(
            RTree::build(&dims, std::slice::from_ref(&leaf), 1),
            Err(Error::InvalidFanout { fanout: 1 })
        );
        let short = Mbr(vec![Range::new(vec![1], vec![2])]);
        assert!(matches!(
            RTree::build(&dims, &[leaf.clone(), short], 10),
            Err(Error::MbrShape { index: 1, .. })
        ));
        assert!(matches!(
            RTree::build(&dims, &[Mbr(vec![])], 10),
            Err(Error::MbrShape { index: 0, .. })
        ));
        assert!(matches!(RTree::from_leaves(&[], Level::new(1), 10), Err(Error::MbrShape { .. })));
    }

    #[test]
    fn full_subtrees_are_reported_without_descending() {
        let dims = [DimType::fixed(Datatype::Int64)];
        let leaves: Vec<Mbr> =
            (0..35i64).map(|i| Mbr(vec![Range::from_values(i * 10, i * 10 + 9)])).collect();
        let tree = RTree::build(&dims, &leaves, DEFAULT_FANOUT).unwrap();
        let all = tree.query(&dims, &[vec![Range::from_values(i64::MIN, i64::MAX)]]);
        assert_eq!(all.len(), 35);
        assert!(all.iter().enumerate().all(|(i, t)| t.tile == i as u64 && t.full));
        // [95, 205]: tile 9 partial, 10..=19 full, 20 partial.
        let got = tree.query(&dims, &[vec![Range::from_values(95i64, 205)]]);
        let want: Vec<TileOverlap> =
            (9..=20).map(|t| TileOverlap { tile: t, full: (10..=19).contains(&t) }).collect();
        assert_eq!(got, want);
        // A dimension without ranges matches nothing; a missing dimension is unconstrained.
        assert!(tree.query(&dims, &[Vec::<Range>::new()]).is_empty());
        assert_eq!(tree.query::<Vec<Range>>(&dims, &[]).len(), 35);
    }
}
