//! Point reads ([`ReadQuery::points`]): the cells at a list of coordinates, in the order
//! asked (libtiledb has none: its subarrays are cross products of ranges).
//!
//! The points are checked (types, domain, current domain) and deduplicated first; then:
//!
//! * dense arrays: the distinct points are grouped by space tile (or read as one group when
//!   that reads no more space tiles and few more cells), and each group is read as a
//!   row-major dense read of either its bounding box or the cross product of its distinct
//!   coordinates per dimension (runs of consecutive coordinates merged), whichever costs less
//!   (cells, plus a fixed cost per box of the cross product); groups are read in parallel,
//!   and each point's cell is found by its row-major position in its group's result (no
//!   coordinates compared);
//! * sparse arrays: one read in global order, whose fragment tiles are those whose MBRs hold
//!   a point (an R-tree walk carrying the points down, instead of the range query) and
//!   whose cells are kept when their coordinates are a point asked (a hash of the distinct
//!   points), conditions, deletes, time travel and duplicates applied as in every sparse
//!   read; the cells are then bucketed by point (a counting sort of an index).
//!
//! The result is then assembled in the order asked: a point asked twice comes twice; a sparse
//! point without a cell is left out, one with several (duplicates allowed) gives them all, in
//! the array's order; a dense point gives its cell, or the fill value.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use rayon::prelude::*;
use tessera_fragment::dim_types;
use tessera_rtree::{DimType, MbrRef, RTree, Range, TileOverlap};
use tessera_schema::ArraySchema;
use tessera_types::{Datatype, Layout, Primitive};

use super::ReadQuery;
use crate::read::column::{OutField, Source, empty_result};
use crate::read::dense::DenseReader;
use crate::read::order::{f64_value, int_value, ord_key, push_int};
use crate::read::sparse::{SparseFilter, SparseReader};
use crate::read::subarray::{Subarray, float_bytes, int_bytes, show_value};
use crate::result::ReadResult;
use crate::{Error, Result};

/// The cells a point read asks for ([`ReadQuery::points`]): one list of coordinates per
/// dimension of the array, all of the same length; point `i` is made of the `i`-th
/// coordinate of every list.
///
/// ```
/// use tessera_query::read::Points;
///
/// // (1, "a"), (5, "b"), (1, "a") again.
/// let points = Points::new().coords("x", [1i64, 5, 1]).coords_str("name", ["a", "b", "a"]);
/// assert_eq!(points.len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Points {
    dims: Vec<(String, Coords)>,
}

/// One dimension's coordinates, as given.
#[derive(Debug, Clone, PartialEq)]
enum Coords {
    /// Little-endian values of a Rust number type whose datatype is given.
    Typed(Datatype, Vec<u8>),
    /// Integers, converted to the dimension's type.
    I64(Vec<i64>),
    /// Bytes per point (`data[offsets[i]..offsets[i + 1]]`): little-endian values of the
    /// dimension's type, or whole strings (`strings` when given as strings).
    Bytes { data: Vec<u8>, offsets: Vec<usize>, strings: bool },
}

impl Coords {
    fn len(&self) -> usize {
        match self {
            Coords::Typed(dt, b) => b.len() / dt.size().max(1),
            Coords::I64(v) => v.len(),
            Coords::Bytes { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    fn bytes<I, B>(values: I, strings: bool) -> Self
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for v in values {
            data.extend_from_slice(v.as_ref());
            offsets.push(data.len());
        }
        Coords::Bytes { data, offsets, strings }
    }
}

impl Points {
    /// No points yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn set(mut self, dim: &str, coords: Coords) -> Self {
        self.dims.retain(|(d, _)| d != dim);
        self.dims.push((dim.to_owned(), coords));
        self
    }

    /// The coordinates on dimension `dim`, in a Rust number type matching its datatype
    /// (`i64` for datetime and time dimensions), replacing earlier ones of `dim`.
    pub fn coords<T: Primitive>(self, dim: &str, values: impl AsRef<[T]>) -> Self {
        let values = values.as_ref();
        let mut bytes = Vec::with_capacity(values.len() * T::SIZE);
        for v in values {
            v.write_le(&mut bytes);
        }
        self.set(dim, Coords::Typed(T::DATATYPE, bytes))
    }

    /// The coordinates on an integer, datetime or time dimension (or a float one) as `i64`;
    /// each must fit the dimension's type.
    pub fn coords_i64(self, dim: &str, values: impl AsRef<[i64]>) -> Self {
        self.set(dim, Coords::I64(values.as_ref().to_vec()))
    }

    /// The coordinates on a string dimension.
    pub fn coords_str<I, S>(self, dim: &str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        self.set(dim, Coords::bytes(values, true))
    }

    /// The coordinates on dimension `dim` as the little-endian bytes of its type (whole
    /// strings for a string dimension), one item per point.
    pub fn coords_bytes<I, B>(self, dim: &str, values: I) -> Self
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        self.set(dim, Coords::bytes(values, false))
    }

    /// The number of points (of the first dimension given).
    pub fn len(&self) -> usize {
        self.dims.first().map_or(0, |(_, c)| c.len())
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One dimension's coordinates of the distinct points.
#[derive(Debug, Default)]
struct DimValues {
    /// Bytes per value; `None` for strings.
    size: Option<usize>,
    data: Vec<u8>,
    /// Start of each value and the end of the last (strings only).
    offsets: Vec<usize>,
}

impl DimValues {
    fn new(size: Option<usize>) -> Self {
        DimValues { size, data: Vec::new(), offsets: if size.is_none() { vec![0] } else { vec![] } }
    }

    fn get(&self, i: usize) -> &[u8] {
        match self.size {
            Some(s) => &self.data[i * s..(i + 1) * s],
            None => &self.data[self.offsets[i]..self.offsets[i + 1]],
        }
    }

    fn push(&mut self, v: &[u8]) {
        self.data.extend_from_slice(v);
        if self.size.is_none() {
            self.offsets.push(self.data.len());
        }
    }
}

/// The multiply-rotate hash of rustc (`FxHasher`): keys here are the user's own points, so
/// a fast hash beats a collision-resistant one.
#[derive(Debug, Default, Clone, Copy)]
struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }

    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// A hash table of keys of `width` `u64`s each, stored back to back (no allocation per key):
/// open addressing, linear probing, at most half full.
#[derive(Debug)]
struct KeyTable {
    width: usize,
    /// The keys, in the order inserted (key `i` at `keys[i * width..]`).
    keys: Vec<u64>,
    /// The index of the key in each slot, [`EMPTY`] for none.
    slots: Vec<usize>,
}

const EMPTY: usize = usize::MAX;

impl KeyTable {
    fn new(width: usize) -> Self {
        KeyTable { width, keys: Vec::new(), slots: vec![EMPTY; 16] }
    }

    fn len(&self) -> usize {
        self.keys.len() / self.width.max(1)
    }

    fn key(&self, i: usize) -> &[u64] {
        &self.keys[i * self.width..(i + 1) * self.width]
    }

    #[inline]
    fn slot_of(&self, key: &[u64]) -> usize {
        let mut h = FxHasher::default();
        for &k in key {
            h.add(k);
        }
        // The high bits are the best mixed.
        let h = h.finish() ^ (h.finish() >> 29);
        (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) as usize & (self.slots.len() - 1)
    }

    /// The index of `key`, if present.
    #[inline]
    fn find(&self, key: &[u64]) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut s = self.slot_of(key);
        loop {
            match self.slots[s] {
                EMPTY => return None,
                i if self.key(i) == key => return Some(i),
                _ => s = (s + 1) & mask,
            }
        }
    }

    /// The index of `key`, inserted if absent.
    fn insert(&mut self, key: &[u64]) -> usize {
        if let Some(i) = self.find(key) {
            return i;
        }
        if 2 * (self.len() + 1) > self.slots.len() {
            let len = self.slots.len() * 2;
            self.slots = vec![EMPTY; len];
            for i in 0..self.len() {
                let mut s = self.slot_of(self.key(i));
                while self.slots[s] != EMPTY {
                    s = (s + 1) & (len - 1);
                }
                self.slots[s] = i;
            }
        }
        let i = self.len();
        let mut s = self.slot_of(key);
        while self.slots[s] != EMPTY {
            s = (s + 1) & (self.slots.len() - 1);
        }
        self.slots[s] = i;
        self.keys.extend_from_slice(key);
        i
    }
}

/// The points of a read, checked against the schema and deduplicated.
///
/// A point's key is one `u64` per dimension: the order key of a fixed-size coordinate
/// ([`ord_key`], equal for `-0.0` and `0.0`), the number of a string among the distinct
/// strings of its dimension.
#[derive(Debug)]
pub(crate) struct PointSet {
    dims: Vec<DimType>,
    /// The coordinates of the distinct points, per dimension in schema order.
    coords: Vec<DimValues>,
    /// The keys of the distinct points (a distinct point's index is its key's).
    index: KeyTable,
    /// The distinct point of each point asked, in the order asked.
    ids: Vec<usize>,
    /// Per string dimension, the number of each distinct string.
    strings: Vec<HashMap<Vec<u8>, u64, FxBuild>>,
    /// Per fixed-size dimension, the keys of its coordinates (a first filter of cells).
    dim_keys: Vec<HashSet<u64, FxBuild>>,
}

impl PointSet {
    /// Checks `points` against `schema`: one list per dimension, all of one length, values
    /// of the dimension's type inside its domain and current domain.
    fn build(schema: &ArraySchema, points: &Points) -> Result<PointSet> {
        for (name, _) in &points.dims {
            if schema.dimension(name).is_none() {
                return Err(if schema.attribute(name).is_some() {
                    Error::InvalidQuery(format!(
                        "{name:?} is an attribute: points give coordinates of dimensions"
                    ))
                } else {
                    Error::UnknownField(name.clone())
                });
            }
        }
        let dims = dim_types(schema);
        let mut given: Vec<(usize, &Coords)> = Vec::with_capacity(dims.len());
        for dim in &schema.dimensions {
            let Some((_, c)) = points.dims.iter().find(|(n, _)| n == &dim.name) else {
                return Err(Error::InvalidQuery(format!(
                    "the points give no coordinates on dimension {:?}",
                    dim.name
                )));
            };
            given.push((c.len(), c));
        }
        let n = given.first().map_or(0, |g| g.0);
        if let Some((d, (len, _))) = given.iter().enumerate().find(|(_, (len, _))| *len != n) {
            return Err(Error::InvalidQuery(format!(
                "the points give {n} coordinates on dimension {:?} and {len} on {:?}",
                schema.dimensions[0].name, schema.dimensions[d].name
            )));
        }
        // Every coordinate as the dimension's bytes, checked.
        let all: Vec<DimValues> = given
            .iter()
            .enumerate()
            .map(|(d, (_, c))| convert(schema, d, dims[d], c, n))
            .collect::<Result<_>>()?;
        // Number the strings of each string dimension.
        let strings: Vec<HashMap<Vec<u8>, u64, FxBuild>> = all
            .iter()
            .zip(&dims)
            .map(|(values, dt)| {
                let mut numbers = HashMap::default();
                if dt.var {
                    for i in 0..n {
                        let next = numbers.len() as u64;
                        numbers.entry(values.get(i).to_vec()).or_insert(next);
                    }
                }
                numbers
            })
            .collect();
        // Deduplicate.
        let mut set = PointSet {
            coords: dims.iter().map(|d| DimValues::new(d.coord_size())).collect(),
            index: KeyTable::new(dims.len()),
            dim_keys: vec![HashSet::default(); dims.len()],
            dims,
            ids: Vec::with_capacity(n),
            strings,
        };
        let mut key = Vec::with_capacity(all.len());
        for i in 0..n {
            key.clear();
            for (d, values) in all.iter().enumerate() {
                key.push(set.key_of(d, values.get(i)).unwrap_or(u64::MAX));
            }
            let distinct = set.index.len();
            let id = set.index.insert(&key);
            if id == distinct {
                for (d, values) in all.iter().enumerate() {
                    set.coords[d].push(values.get(i));
                    if !set.dims[d].var {
                        set.dim_keys[d].insert(key[d]);
                    }
                }
            }
            set.ids.push(id);
        }
        Ok(set)
    }

    /// The number of distinct points.
    fn distinct(&self) -> usize {
        self.index.len()
    }

    /// Coordinate `d` of distinct point `j`.
    fn value(&self, j: usize, d: usize) -> &[u8] {
        self.coords[d].get(j)
    }

    /// The key part of coordinate `v` on dimension `d`; `None` for a string no point has.
    #[inline]
    fn key_of(&self, d: usize, v: &[u8]) -> Option<u64> {
        let dt = self.dims[d];
        if dt.var {
            self.strings[d].get(v).copied()
        } else if v.len() == dt.datatype.size() {
            Some(ord_key(dt.datatype, v))
        } else {
            None
        }
    }

    /// The distinct point whose coordinates are `coord(d)` for each dimension `d`, if there
    /// is one (`key` is scratch space).
    #[inline]
    pub(crate) fn find<'v>(
        &self,
        coord: impl Fn(usize) -> &'v [u8],
        key: &mut Vec<u64>,
    ) -> Option<usize> {
        key.clear();
        for d in 0..self.dims.len() {
            key.push(self.key_of(d, coord(d))?);
        }
        self.index.find(key)
    }

    /// Clears `keep[c]` for the cells whose coordinate on fixed-size dimension `d` (the
    /// values of `data`) is no point's.
    pub(crate) fn retain_dim(&self, d: usize, data: &[u8], keep: &mut [bool]) {
        let dt = self.dims[d];
        if dt.var {
            return;
        }
        let set = &self.dim_keys[d];
        for (k, v) in keep.iter_mut().zip(data.chunks_exact(dt.datatype.size())) {
            if *k {
                *k = set.contains(&ord_key(dt.datatype, v));
            }
        }
    }

    /// The smallest and largest coordinate on each dimension (for the subarray of a sparse
    /// read: a box holding every point).
    fn bounding_box(&self) -> Vec<Range> {
        let dim_num = self.dims.len();
        (0..dim_num)
            .map(|d| {
                let dt = self.dims[d];
                let (mut lo, mut hi) = (0, 0);
                for j in 1..self.distinct() {
                    let v = self.value(j, d);
                    let less = if dt.var {
                        v < self.value(lo, d)
                    } else {
                        self.index.key(j)[d] < self.index.key(lo)[d]
                    };
                    let more = if dt.var {
                        v > self.value(hi, d)
                    } else {
                        self.index.key(j)[d] > self.index.key(hi)[d]
                    };
                    if less {
                        lo = j;
                    }
                    if more {
                        hi = j;
                    }
                }
                Range::new(self.value(lo, d).to_vec(), self.value(hi, d).to_vec())
            })
            .collect()
    }

    /// The points of `points` that lie in `mbr`, appended to `out`.
    fn inside(&self, mbr: &MbrRef<'_>, points: &[usize], out: &mut Vec<usize>) {
        // The bounds as keys (fixed-size dimensions) or bytes (strings), once per MBR.
        let bounds: Vec<(u64, u64, &[u8], &[u8])> = mbr
            .ranges()
            .zip(&self.dims)
            .map(|(r, dt)| {
                if dt.var || r.low.len() != dt.datatype.size() || r.high.len() != r.low.len() {
                    (0, 0, r.low, r.high)
                } else {
                    (ord_key(dt.datatype, r.low), ord_key(dt.datatype, r.high), r.low, r.high)
                }
            })
            .collect();
        out.extend(points.iter().copied().filter(|&j| {
            bounds.iter().zip(&self.dims).enumerate().all(|(d, (&(lo, hi, low, high), dt))| {
                if dt.var {
                    let v = self.value(j, d);
                    v >= low && v <= high
                } else {
                    let k = self.index.key(j)[d];
                    lo <= k && k <= hi
                }
            })
        }));
    }

    /// The tiles of a fragment whose MBRs hold a point, in tile order: the R-tree walked
    /// from the root, each node visited with the points its MBR holds (all partial: their
    /// cells are checked against the points).
    pub(crate) fn tiles(&self, rtree: &RTree) -> Vec<TileOverlap> {
        let levels = rtree.levels();
        let Some(leaf_level) = levels.len().checked_sub(1) else { return Vec::new() };
        let fanout = rtree.fanout().max(1) as usize;
        let mut out = Vec::new();
        let Some(root) = levels[0].get(0) else { return out };
        let all: Vec<usize> = (0..self.distinct()).collect();
        let mut inside = Vec::new();
        self.inside(&root, &all, &mut inside);
        if inside.is_empty() {
            return out;
        }
        // Depth first, children pushed last to first so that tiles come out in order.
        let mut stack: Vec<(usize, usize, Vec<usize>)> = vec![(0, 0, inside)];
        while let Some((l, i, points)) = stack.pop() {
            if l == leaf_level {
                out.push(TileOverlap { tile: i as u64, full: false });
                continue;
            }
            let below = &levels[l + 1];
            let start = i.saturating_mul(fanout);
            let end = start.saturating_add(fanout).min(below.len());
            for c in (start..end).rev() {
                let Some(mbr) = below.get(c) else { continue };
                let mut held = Vec::new();
                self.inside(&mbr, &points, &mut held);
                if !held.is_empty() {
                    stack.push((l + 1, c, held));
                }
            }
        }
        out
    }
}

/// The `n` coordinates `c` of dimension `d` as bytes of its type, each checked against the
/// domain and current domain.
fn convert(schema: &ArraySchema, d: usize, dt: DimType, c: &Coords, n: usize) -> Result<DimValues> {
    let dim = &schema.dimensions[d];
    let err = |reason: String| Error::InvalidRange { dimension: dim.name.clone(), reason };
    let ty = dim.datatype;
    let mut out = DimValues::new(dt.coord_size());
    match c {
        Coords::Typed(given, bytes) => {
            let compatible = !dt.var
                && given.size() == ty.size()
                && if ty.is_float() {
                    given.is_float()
                } else if ty.is_datetime() || ty.is_time() {
                    *given == Datatype::Int64
                } else {
                    *given == ty
                };
            if !compatible {
                return Err(err(format!("{given} coordinates given for a dimension of type {ty}")));
            }
            out.data.extend_from_slice(bytes);
        }
        Coords::I64(values) => {
            if dt.var {
                return Err(err(format!("integer coordinates given for a dimension of type {ty}")));
            }
            out.data.reserve(values.len() * ty.size());
            for (i, &v) in values.iter().enumerate() {
                let at = |reason: String| err(format!("point {i}: {reason}"));
                if ty.is_float() {
                    out.data.extend(float_bytes(ty, v as f64, &at)?);
                } else {
                    out.data.extend(int_bytes(ty, i128::from(v), &at)?);
                }
            }
        }
        Coords::Bytes { data, offsets, strings } => {
            if *strings && !dt.var {
                return Err(err(format!("string coordinates given for a dimension of type {ty}")));
            }
            for (i, w) in offsets.windows(2).enumerate() {
                let v = &data[w[0]..w[1]];
                if !dt.var && v.len() != ty.size() {
                    return Err(err(format!(
                        "point {i}: a coordinate of {} bytes given for {ty} values of {} bytes",
                        v.len(),
                        ty.size()
                    )));
                }
                out.push(v);
            }
        }
    }
    // The domain and current domain.
    let show = |b: &[u8]| show_value(dim, b);
    let domain = dim.domain.as_ref();
    let current = schema.current_domain.as_ref().map(|cd| &cd.ranges[d]);
    for i in 0..n {
        let v = out.get(i);
        if ty.is_float() && !dt.var && f64_value(ty, v).is_nan() {
            return Err(err(format!("point {i}: the coordinate is NaN")));
        }
        for (what, bounds) in [("domain", domain), ("current domain", current)] {
            if let Some([lo, hi]) = bounds
                && (dt.compare(v, lo).is_lt() || dt.compare(v, hi).is_gt())
            {
                return Err(err(format!(
                    "point {i}: {} is outside the {what} [{}, {}]",
                    show(v),
                    show(lo),
                    show(hi)
                )));
            }
        }
    }
    Ok(out)
}

/// Runs the point read `q` of `points`.
pub(super) fn read(q: &ReadQuery<'_>, points: &Points) -> Result<ReadResult> {
    if !q.ranges.is_empty() {
        return Err(Error::InvalidQuery(
            "a read of points takes no ranges (the points are its subarray)".into(),
        ));
    }
    let fields = q.fields()?;
    let condition = q.parsed_condition()?;
    let schema = q.array.schema();
    let set = PointSet::build(schema, points)?;
    if set.ids.is_empty() {
        return Ok(empty_result(&fields));
    }
    if schema.is_dense() {
        dense(q, &set, &fields, condition.as_ref())
    } else {
        let filter = SparseFilter { condition, deletes: q.deletes()?, points: None };
        sparse(q, Arc::new(set), &fields, filter)
    }
}

/// The result of `fields` holding, in order, cell `cell` of result `source` for each
/// `(source, cell)` of `picks`, where `column_of(k)` is the column of the sources that
/// output column `k` comes from.
fn assemble(
    fields: &[OutField],
    sources: &[ReadResult],
    column_of: impl Fn(usize) -> usize + Sync,
    picks: &[(usize, usize)],
) -> ReadResult {
    let mut out = empty_result(fields);
    out.columns.par_iter_mut().enumerate().for_each(|(k, col)| {
        let from = column_of(k);
        if let Some(size) = col.cell_size() {
            col.data.reserve(picks.len() * size);
        } else if let Some(o) = &mut col.offsets {
            o.reserve(picks.len());
        }
        if let Some(v) = &mut col.validity {
            v.reserve(picks.len());
        }
        for &(s, c) in picks {
            col.push_from(&sources[s].columns[from], c);
        }
    });
    out
}

/// A point read of a sparse array.
fn sparse(
    q: &ReadQuery<'_>,
    set: Arc<PointSet>,
    fields: &[OutField],
    mut filter: SparseFilter,
) -> Result<ReadResult> {
    let array = q.array;
    let schema = array.schema();
    let dim_num = schema.dimensions.len();
    // Every dimension (to match cells with points), then the attributes asked.
    let mut inner: Vec<OutField> = (0..dim_num).map(|d| OutField::dim(schema, d)).collect();
    let mut column_of = Vec::with_capacity(fields.len());
    for f in fields {
        match f.source {
            Source::Dim(d) => column_of.push(d),
            Source::Attr(_) => {
                column_of.push(inner.len());
                inner.push(f.clone());
            }
        }
    }
    // The subarray: a box holding every point (the points filter the cells of its tiles).
    let ranges: Vec<Vec<Range>> = set.bounding_box().into_iter().map(|r| vec![r]).collect();
    filter.points = Some(set.clone());
    let mut reader = SparseReader::new(
        array,
        &Subarray { ranges },
        inner.clone(),
        Layout::GlobalOrder,
        q.budget,
        filter,
    )?;
    let mut all = empty_result(&inner);
    while reader.next_batch(&mut all)? {}
    drop(reader);
    // The distinct point of each cell, then the cells of each point in the array's order
    // (a counting sort of the cell indexes).
    let cells = all.cell_num();
    let m = set.distinct();
    let mut key = Vec::new();
    let mut start = vec![0usize; m + 2];
    let cell_point: Vec<usize> = (0..cells)
        .map(|c| {
            let coord = |d: usize| all.columns[d].cell(c).unwrap_or_default();
            // (`m`: a cell of no point, which the reader does not return.)
            let j = set.find(coord, &mut key).unwrap_or(m);
            start[j + 1] += 1;
            j
        })
        .collect();
    for j in 0..=m {
        start[j + 1] += start[j];
    }
    let mut next = start.clone();
    let mut by_point = vec![0usize; cells];
    for (c, &j) in cell_point.iter().enumerate() {
        by_point[next[j]] = c;
        next[j] += 1;
    }
    let picks: Vec<(usize, usize)> = set
        .ids
        .iter()
        .flat_map(|&j| by_point[start[j]..start[j + 1]].iter().map(|&c| (0, c)))
        .collect();
    Ok(assemble(fields, std::slice::from_ref(&all), |k| column_of[k], &picks))
}

/// A fixed cost of each box of a dense group read, in cells.
const BOX_COST: u128 = 16;

/// The points of a dense array are read at once (rather than space tile by space tile)
/// when that reads no more space tiles and at most this many cells per distinct point (plus
/// [`ONE_READ_SLACK`]).
const ONE_READ_CELLS_PER_POINT: u128 = 4;

/// See [`ONE_READ_CELLS_PER_POINT`].
const ONE_READ_SLACK: u128 = 4096;

/// How one dimension of a dense group is read: ranges in increasing order.
#[derive(Debug)]
struct DimPlan {
    ranges: Vec<(i128, i128)>,
    /// The grid offset of each range.
    offs: Vec<u64>,
    /// Cells over all ranges.
    len: u64,
}

impl DimPlan {
    fn new(ranges: Vec<(i128, i128)>) -> Self {
        let mut offs = Vec::with_capacity(ranges.len());
        let mut len = 0u64;
        for &(lo, hi) in &ranges {
            offs.push(len);
            len += (hi - lo + 1) as u64;
        }
        DimPlan { ranges, offs, len }
    }

    /// The grid index of coordinate `c` (which one of the ranges holds).
    fn index(&self, c: i128) -> u64 {
        let k = self.ranges.partition_point(|r| r.0 <= c).saturating_sub(1);
        self.offs[k] + (c - self.ranges[k].0) as u64
    }
}

/// The plan of a dense group whose points' coordinates are `coords(j, d)`: per dimension the
/// bounding range, or the runs of consecutive distinct coordinates, whichever costs less
/// over all dimensions; and its cost in cells.
fn plan_group(group: &[usize], dim_num: usize, coords: &[i128]) -> (Vec<DimPlan>, u128) {
    let mut runs: Vec<Vec<(i128, i128)>> = Vec::with_capacity(dim_num);
    let mut values = Vec::with_capacity(group.len());
    for d in 0..dim_num {
        values.clear();
        values.extend(group.iter().map(|&j| coords[j * dim_num + d]));
        values.sort_unstable();
        values.dedup();
        let mut rs: Vec<(i128, i128)> = Vec::new();
        for &v in &values {
            match rs.last_mut() {
                Some(last) if last.1 + 1 == v => last.1 = v,
                _ => rs.push((v, v)),
            }
        }
        runs.push(rs);
    }
    let product = |f: fn(&[(i128, i128)]) -> u128| {
        runs.iter().fold(1u128, |acc, rs| acc.saturating_mul(f(rs)))
    };
    let bbox_cells = product(|rs| (rs[rs.len() - 1].1 - rs[0].0 + 1) as u128);
    let cross_cells = product(|rs| rs.iter().map(|r| (r.1 - r.0 + 1) as u128).sum());
    let boxes = product(|rs| rs.len() as u128);
    let bbox_cost = bbox_cells.saturating_add(BOX_COST);
    let cross_cost = cross_cells.saturating_add(boxes.saturating_mul(BOX_COST));
    if bbox_cost <= cross_cost {
        let plans =
            runs.into_iter().map(|rs| DimPlan::new(vec![(rs[0].0, rs[rs.len() - 1].1)])).collect();
        (plans, bbox_cost)
    } else {
        (runs.into_iter().map(DimPlan::new).collect(), cross_cost)
    }
}

/// A point read of a dense array.
fn dense(
    q: &ReadQuery<'_>,
    set: &PointSet,
    fields: &[OutField],
    condition: Option<&crate::condition::QueryCondition>,
) -> Result<ReadResult> {
    let array = q.array;
    let schema = array.schema();
    let dim_num = schema.dimensions.len();
    let m = set.distinct();
    // The integer coordinates of the distinct points, point after point.
    let mut coords: Vec<i128> = Vec::with_capacity(m * dim_num);
    for j in 0..m {
        for (d, dim) in schema.dimensions.iter().enumerate() {
            coords.push(int_value(dim.datatype, set.value(j, d)).ok_or_else(|| {
                Error::Unsupported(format!(
                    "dense reads of {} dimension {:?}",
                    dim.datatype, dim.name
                ))
            })?);
        }
    }
    // The space tile of each point, and the points grouped by it.
    let mut tiling: Vec<(i128, i128)> = Vec::with_capacity(dim_num);
    for dim in &schema.dimensions {
        let (Some([lo, _]), Some(ext)) = (&dim.domain, &dim.tile_extent) else {
            return Err(Error::Unsupported(format!(
                "dense dimension {:?} without a domain or tile extent",
                dim.name
            )));
        };
        let lo = int_value(dim.datatype, lo).unwrap_or(0);
        let ext = int_value(dim.datatype, ext).unwrap_or(0).max(1);
        tiling.push((lo, ext));
    }
    let mut tiles: Vec<i128> = Vec::with_capacity(m * dim_num);
    for j in 0..m {
        for (d, &(lo, ext)) in tiling.iter().enumerate() {
            tiles.push((coords[j * dim_num + d] - lo).div_euclid(ext));
        }
    }
    let tile = |j: usize| &tiles[j * dim_num..(j + 1) * dim_num];
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_unstable_by(|&a, &b| tile(a).cmp(tile(b)));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for j in order {
        match groups.last_mut() {
            Some(g) if tile(g[0]) == tile(j) => g.push(j),
            _ => groups.push(vec![j]),
        }
    }
    // All the points in one read instead, when that reads no space tile more and few cells
    // more than the points (points along a row, or packed in a box).
    if groups.len() > 1 {
        let all: Vec<usize> = (0..m).collect();
        let (plans, cost) = plan_group(&all, dim_num, &coords);
        let tiles_read = plans.iter().zip(&tiling).fold(1u128, |acc, (p, &(lo, ext))| {
            // Space tiles the ranges (in increasing order) meet on this dimension.
            let (mut count, mut last) = (0u128, None::<i128>);
            for &(a, b) in &p.ranges {
                let (ta, tb) = ((a - lo).div_euclid(ext), (b - lo).div_euclid(ext));
                let from = last.map_or(ta, |t| ta.max(t + 1));
                if tb >= from {
                    count += (tb - from + 1) as u128;
                    last = Some(tb);
                }
            }
            acc.saturating_mul(count)
        });
        let cheap = cost
            <= (m as u128).saturating_mul(ONE_READ_CELLS_PER_POINT).saturating_add(ONE_READ_SLACK);
        if cheap && tiles_read <= groups.len() as u128 {
            groups = vec![all];
        }
    }
    // Each group read as one row-major dense read, groups in parallel.
    let reads: Vec<(ReadResult, Vec<u64>)> = groups
        .par_iter()
        .map(|group| {
            let (plans, _) = plan_group(group, dim_num, &coords);
            let ranges = plans
                .iter()
                .zip(&schema.dimensions)
                .map(|(p, dim)| {
                    p.ranges
                        .iter()
                        .map(|&(lo, hi)| {
                            let (mut l, mut h) = (Vec::new(), Vec::new());
                            push_int(dim.datatype, lo, &mut l);
                            push_int(dim.datatype, hi, &mut h);
                            Range::new(l, h)
                        })
                        .collect()
                })
                .collect();
            let mut reader = DenseReader::new(
                array,
                &Subarray { ranges },
                fields.to_vec(),
                Layout::RowMajor,
                q.budget,
                condition.cloned(),
            )?;
            let mut out = empty_result(fields);
            while reader.next_batch(&mut out)? {}
            // Row-major positions: the last dimension fastest.
            let mut strides = vec![1u64; dim_num];
            for d in (0..dim_num.saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * plans[d + 1].len;
            }
            let positions = group
                .iter()
                .map(|&j| {
                    (0..dim_num).map(|d| plans[d].index(coords[j * dim_num + d]) * strides[d]).sum()
                })
                .collect();
            Ok((out, positions))
        })
        .collect::<Result<_>>()?;
    let mut loc = vec![(0usize, 0usize); m];
    for (g, (group, (_, positions))) in groups.iter().zip(&reads).enumerate() {
        for (&j, &p) in group.iter().zip(positions) {
            loc[j] = (g, p as usize);
        }
    }
    let picks: Vec<(usize, usize)> = set.ids.iter().map(|&j| loc[j]).collect();
    let results: Vec<ReadResult> = reads.into_iter().map(|(r, _)| r).collect();
    Ok(assemble(fields, &results, |k| k, &picks))
}
