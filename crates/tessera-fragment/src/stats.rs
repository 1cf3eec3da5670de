//! Tile and fragment statistics (min, max, sum, null count) computed from cell data exactly as
//! libtiledb 2.30 computes them, quirks included:
//!
//! * per tile, `TileMetadataGenerator` (`tiledb/sm/tile/tile_metadata_generator.cc`) over the
//!   written cell slabs of a tile ([`tile_stats`]);
//! * into the per-field buffers of fragment metadata, as `set_num_tiles` sizes them and
//!   `WriterBase::write_tiles` fills them ([`field_tile_metadata`]);
//! * per fragment, `FragmentMetadata::compute_fragment_min_max_sum_null_count`
//!   ([`fragment_stats`]).
//!
//! The quirks reproduced here (`docs/format/fragment-metadata.md`, "Tile statistics" and
//! "Fragment statistics", and the sources):
//!
//! * numeric min/max use `min = (min < v) ? min : v`, so a NaN replaces the running value and
//!   the next value replaces the NaN; a tile without a non-null cell keeps `T::max` /
//!   `T::lowest`;
//! * strings compare with C `strncmp` (bytes as unsigned, stopping at a NUL); var strings
//!   compare over the shorter length, then the shorter is the smaller;
//! * sums saturate and stop summing the slab (a later slab of the same tile continues from the
//!   saturated value);
//! * a nullable field without min/max counts the nulls of the **whole** tile once per slab;
//!   a var field without min/max (e.g. `STRING_UTF8`) counts no nulls at all, nor do fixed
//!   fields of types the generator does not dispatch (`STRING_UTF8`/`UTF16`/... , `ANY`);
//! * a nullable var field reads the validity of slab cell `c` at `c - start` (the pointer is
//!   not moved to the slab start);
//! * the dense ordered writer copies every tile's var-sized min/max into slot 0 when a write
//!   has more attributes than tiles ([`VarMinMaxCopy::SlotZero`]);
//! * a tile whose null count equals its cell count (for dense fragments: the cells of a whole
//!   space tile) records zero bytes as min/max;
//! * the fragment fold over fixed strings advances through the tile buffer only for non-null
//!   tiles, and computes no sum for `CHAR`/`STRING_ASCII` fields (even `CHAR` with one value
//!   per cell, whose tiles do have sums).

use std::cmp::Ordering;
use std::ops::Range;

use tessera_types::{Datatype, Primitive};

use crate::fields::FieldInfo;
use crate::parse::{put_u64, read_u64};
use crate::parts::{FieldStats, FragmentStats, TileMinMax, TileSums};
use crate::{Error, Result};

/// The cells of one tile of one field, before filtering.
#[derive(Debug, Clone, Copy)]
pub struct TileData<'a> {
    /// Number of cells in the tile (for dense tiles: every cell of the space tile).
    pub cell_num: u64,
    /// Fixed-size fields: the values (`cell_num × cell_size` bytes). Var-sized fields: one
    /// little-endian `u64` offset per cell into `var`, starting at 0, without a final offset.
    pub fixed: &'a [u8],
    /// Var-sized fields: the values back to back.
    pub var: Option<&'a [u8]>,
    /// Nullable fields: one byte per cell, 0 = null.
    pub validity: Option<&'a [u8]>,
}

/// The metadata of one tile, as `TileMetadataGenerator::set_tile_metadata` hands it over.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TileStats {
    /// The minimum's bytes: `cell_size` bytes for fixed-size fields (zeros when no value was
    /// chosen), the chosen string for var-sized fields (empty when none). Empty for fields
    /// without min/max.
    pub min: Vec<u8>,
    /// The maximum's bytes, as `min`.
    pub max: Vec<u8>,
    /// The sum's 8 bytes as a little-endian `u64` (0 for fields without sums).
    pub sum: u64,
    /// Null cells counted (see the module notes for the quirks).
    pub null_count: u64,
}

/// C `strncmp`: compares at most `n` bytes as unsigned chars and stops after a NUL. Bytes
/// past the end of a slice count as NUL.
pub fn strncmp(a: &[u8], b: &[u8], n: usize) -> Ordering {
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        if x != y {
            return x.cmp(&y);
        }
        if x == 0 {
            return Ordering::Equal;
        }
    }
    Ordering::Equal
}

/// How the generator dispatches a fixed-size field's type (`process_cell_slab`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dispatch {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Char,
    Bytes,
    Nothing,
}

fn dispatch(dt: Datatype) -> Dispatch {
    use Datatype as D;
    match dt {
        D::Int8 => Dispatch::I8,
        D::UInt8 | D::Bool => Dispatch::U8,
        D::Int16 => Dispatch::I16,
        D::UInt16 => Dispatch::U16,
        D::Int32 => Dispatch::I32,
        D::UInt32 => Dispatch::U32,
        D::Int64 => Dispatch::I64,
        D::UInt64 => Dispatch::U64,
        D::Float32 => Dispatch::F32,
        D::Float64 => Dispatch::F64,
        d if d.is_datetime() || d.is_time() => Dispatch::I64,
        D::StringAscii | D::Char => Dispatch::Char,
        D::Blob | D::GeomWkb | D::GeomWkt => Dispatch::Bytes,
        _ => Dispatch::Nothing,
    }
}

/// A number type of the generator with its sum type.
trait Num: Primitive {
    /// `std::numeric_limits<T>::max()`.
    const MAX: Self;
    /// `std::numeric_limits<T>::lowest()`.
    const LOWEST: Self;
    /// Adds `self` to a running sum (raw 8 bytes) with libtiledb's saturation; returns
    /// `false` when the sum saturated (the slab loop stops).
    fn add_to(self, sum: &mut u64) -> bool;

    /// Adds every little-endian value of `bytes` as [`Num::add_to`] would one by one;
    /// returns `false` when the sum saturated.
    fn add_all(bytes: &[u8], sum: &mut u64) -> bool {
        bytes.chunks_exact(Self::SIZE).all(|c| Self::read_le(c).add_to(sum))
    }

    /// Folds every little-endian value of `bytes` into `min` and `max` as libtiledb does,
    /// value after value (`min = (min < v) ? min : v`).
    fn min_max_all(bytes: &[u8], min: &mut Self, max: &mut Self) {
        for c in bytes.chunks_exact(Self::SIZE) {
            let v = Self::read_le(c);
            *min = if *min < v { *min } else { v };
            *max = if *max > v { *max } else { v };
        }
    }

    /// Both folds of a slab: min/max when `min_max` is given, the sum when `sum` is.
    fn stats_all(bytes: &[u8], min_max: Option<(&mut Self, &mut Self)>, sum: Option<&mut u64>) {
        if let Some((min, max)) = min_max {
            Self::min_max_all(bytes, min, max);
        }
        if let Some(sum) = sum {
            Self::add_all(bytes, sum);
        }
    }
}

/// Float values per block of the float fast path ([`float_stats_all`]).
const FLOAT_BLOCK: usize = 1024;
/// Lanes of the float fast path's min/max.
const FLOAT_LANES: usize = 8;

/// A float type of the generator: what the fast path needs beyond [`Num`].
trait Float: Num {
    /// A NaN or a negative zero: the values for which the order of libtiledb's
    /// `(min < v) ? min : v` fold decides the result (NaN replaces the running value, and
    /// of -0.0 and +0.0 the later one wins).
    fn order_matters(self) -> bool;
    /// The value as the `f64` libtiledb sums it as.
    fn as_f64(self) -> f64;
}

impl Float for f32 {
    fn order_matters(self) -> bool {
        self.is_nan() || self.to_bits() == (-0.0f32).to_bits()
    }
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Float for f64 {
    fn order_matters(self) -> bool {
        self.is_nan() || self.to_bits() == (-0.0f64).to_bits()
    }
    fn as_f64(self) -> f64 {
        self
    }
}

/// [`Num::stats_all`] for floats, block by block. A block without a value whose order matters
/// ([`Float::order_matters`]) has one minimum and one maximum whatever the order (equal
/// values other than zeros share their bits), so its min/max run in independent lanes
/// (vectorised) and then fold into the running values with libtiledb's step, which gives
/// what the value-by-value fold gives (a running NaN is replaced by the block's first value,
/// then the rest fold as usual). Its sum, while far enough from the limits that no value
/// of the block can saturate it, is the same sequence of additions without the saturation
/// checks. Other blocks take the value-by-value folds.
fn float_stats_all<T: Float>(
    bytes: &[u8],
    mut min_max: Option<(&mut T, &mut T)>,
    mut sum: Option<&mut u64>,
) {
    let mut values = [T::default(); FLOAT_BLOCK];
    for block in bytes.chunks(FLOAT_BLOCK * T::SIZE) {
        let n = block.len() / T::SIZE;
        for (v, c) in values.iter_mut().zip(block.chunks_exact(T::SIZE)) {
            *v = T::read_le(c);
        }
        let values = &values[..n];
        if n == 0 || values.iter().fold(false, |any, v| any | v.order_matters()) {
            if let Some((min, max)) = min_max.as_mut() {
                T::min_max_all(block, min, max);
            }
            if let Some(s) = sum.as_deref_mut()
                && !T::add_all(block, s)
            {
                // Saturated: the slab stops summing, as the value-by-value loop does.
                sum = None;
            }
            continue;
        }
        let mut lo = [values[0]; FLOAT_LANES];
        let mut hi = lo;
        let lanes = values.chunks_exact(FLOAT_LANES);
        for v in lanes.remainder() {
            lo[0] = if lo[0] < *v { lo[0] } else { *v };
            hi[0] = if hi[0] > *v { hi[0] } else { *v };
        }
        for vs in lanes {
            for j in 0..FLOAT_LANES {
                lo[j] = if lo[j] < vs[j] { lo[j] } else { vs[j] };
                hi[j] = if hi[j] > vs[j] { hi[j] } else { vs[j] };
            }
        }
        let block_min = lo.iter().fold(lo[0], |m, &v| if m < v { m } else { v });
        let block_max = hi.iter().fold(hi[0], |m, &v| if m > v { m } else { v });
        if let Some((min, max)) = min_max.as_mut() {
            **min = if **min < block_min { **min } else { block_min };
            **max = if **max > block_max { **max } else { block_max };
        }
        let mut saturated = false;
        if let Some(sum) = sum.as_deref_mut() {
            let s = f64::from_bits(*sum);
            let reach = block_min.as_f64().abs().max(block_max.as_f64().abs()) * n as f64;
            if s.is_finite() && reach.is_finite() && s.abs() + reach <= f64::MAX / 2.0 {
                *sum = values.iter().fold(s, |s, v| s + v.as_f64()).to_bits();
            } else {
                saturated = !T::add_all(block, sum);
            }
        }
        if saturated {
            sum = None;
        }
    }
}

/// Values summed at once by the fast paths: a chunk of them cannot move a sum by more than
/// `CHUNK << bits`, so while the running sum is that far from its limits no value of the
/// chunk can saturate it and a plain (vectorised) sum is exact.
const CHUNK: usize = 1 << 16;

/// [`Num::add_all`] for signed types of at most 32 bits (summed as `i64`).
fn add_all_small_signed<T: Num + Into<i64>>(bytes: &[u8], sum: &mut u64) -> bool {
    let reach = (CHUNK as u64) << (8 * T::SIZE - 1);
    for chunk in bytes.chunks(CHUNK * T::SIZE) {
        let s = *sum as i64;
        if s.unsigned_abs() <= i64::MAX as u64 - reach {
            let part: i64 = chunk.chunks_exact(T::SIZE).map(|c| T::read_le(c).into()).sum();
            *sum = (s + part) as u64;
        } else if !chunk.chunks_exact(T::SIZE).all(|c| T::read_le(c).add_to(sum)) {
            return false;
        }
    }
    true
}

/// [`Num::add_all`] for unsigned types of at most 32 bits (summed as `u64`).
fn add_all_small_unsigned<T: Num + Into<u64>>(bytes: &[u8], sum: &mut u64) -> bool {
    let reach = (CHUNK as u64) << (8 * T::SIZE);
    for chunk in bytes.chunks(CHUNK * T::SIZE) {
        if *sum <= u64::MAX - reach {
            let part: u64 = chunk.chunks_exact(T::SIZE).map(|c| T::read_le(c).into()).sum();
            *sum += part;
        } else if !chunk.chunks_exact(T::SIZE).all(|c| T::read_le(c).add_to(sum)) {
            return false;
        }
    }
    true
}

fn add_i64(sum: &mut u64, v: i64) -> bool {
    let s = *sum as i64;
    if s > 0 && v > 0 && s > i64::MAX - v {
        *sum = i64::MAX as u64;
        return false;
    }
    if s < 0 && v < 0 && s < i64::MIN - v {
        *sum = i64::MIN as u64;
        return false;
    }
    *sum = s.wrapping_add(v) as u64;
    true
}

fn add_u64(sum: &mut u64, v: u64) -> bool {
    if *sum > u64::MAX - v {
        *sum = u64::MAX;
        return false;
    }
    *sum += v;
    true
}

fn add_f64(sum: &mut u64, v: f64) -> bool {
    let s = f64::from_bits(*sum);
    if (s < 0.0) == (v < 0.0) && s.abs() > f64::MAX - v.abs() {
        *sum = if s < 0.0 { f64::MIN } else { f64::MAX }.to_bits();
        return false;
    }
    *sum = (s + v).to_bits();
    true
}

macro_rules! num {
    ($($t:ty => $add:ident as $st:ty $(, all: $all:ident)? $(, stats: $stats:ident)?);* $(;)?) => {$(
        impl Num for $t {
            const MAX: Self = <$t>::MAX;
            const LOWEST: Self = <$t>::MIN;
            fn add_to(self, sum: &mut u64) -> bool {
                $add(sum, self as $st)
            }
            $(
                fn add_all(bytes: &[u8], sum: &mut u64) -> bool {
                    $all::<$t>(bytes, sum)
                }
            )?
            $(
                fn stats_all(
                    bytes: &[u8],
                    min_max: Option<(&mut Self, &mut Self)>,
                    sum: Option<&mut u64>,
                ) {
                    $stats::<$t>(bytes, min_max, sum)
                }
            )?
        }
    )*};
}
num!(
    i8 => add_i64 as i64, all: add_all_small_signed;
    i16 => add_i64 as i64, all: add_all_small_signed;
    i32 => add_i64 as i64, all: add_all_small_signed;
    i64 => add_i64 as i64;
    u8 => add_u64 as u64, all: add_all_small_unsigned;
    u16 => add_u64 as u64, all: add_all_small_unsigned;
    u32 => add_u64 as u64, all: add_all_small_unsigned;
    u64 => add_u64 as u64;
    f32 => add_f64 as f64, stats: float_stats_all;
    f64 => add_f64 as f64, stats: float_stats_all;
);

fn check_input(field: &FieldInfo, tile: &TileData<'_>, slabs: &[Range<u64>]) -> Result<()> {
    let n = tile.cell_num;
    let want =
        n.checked_mul(field.cell_size).ok_or_else(|| Error::invalid("tile size overflows"))?;
    if tile.fixed.len() as u64 != want {
        return Err(Error::invalid(format!(
            "field {:?}: {} bytes of {} for {n} cells, expected {want}",
            field.name,
            tile.fixed.len(),
            if field.var { "offsets" } else { "values" }
        )));
    }
    if field.var && tile.var.is_none() {
        return Err(Error::invalid(format!("var field {:?} needs its var data", field.name)));
    }
    if field.nullable {
        match tile.validity {
            Some(v) if v.len() as u64 == n => {}
            _ => {
                return Err(Error::invalid(format!(
                    "nullable field {:?} needs {n} validity bytes",
                    field.name
                )));
            }
        }
    }
    for s in slabs {
        if s.start > s.end || s.end > n {
            return Err(Error::invalid(format!("slab {s:?} is outside the tile's {n} cells")));
        }
    }
    if field.var {
        let var_len = tile.var.map_or(0, <[u8]>::len) as u64;
        let mut prev = 0;
        for c in tile.fixed.chunks_exact(8) {
            let o = read_u64(c);
            if o < prev || o > var_len {
                return Err(Error::invalid(format!(
                    "field {:?}: offset {o} after {prev} in {var_len} bytes of var data",
                    field.name
                )));
            }
            prev = o;
        }
    }
    Ok(())
}

/// Computes the metadata of one tile from its cells, processing `slabs` (cell ranges, in the
/// order the writer hands them over) as libtiledb's `TileMetadataGenerator` does; a sparse or
/// fully written dense tile is the single slab `0..cell_num` (see [`tile_stats_full`]).
///
/// # Errors
/// [`Error::Invalid`] when the buffers do not match `cell_num` and the field (value bytes,
/// offsets, validity), offsets decrease or point past the var data, or a slab is outside the
/// tile.
pub fn tile_stats(
    field: &FieldInfo,
    tile: &TileData<'_>,
    slabs: &[Range<u64>],
) -> Result<TileStats> {
    check_input(field, tile, slabs)?;
    let mut g = Generator::new(field);
    for s in slabs {
        g.process(tile, s.start as usize, s.end as usize);
    }
    Ok(g.finish(field))
}

/// [`tile_stats`] over the whole tile (one slab).
///
/// # Errors
/// As [`tile_stats`].
pub fn tile_stats_full(field: &FieldInfo, tile: &TileData<'_>) -> Result<TileStats> {
    tile_stats(field, tile, std::slice::from_ref(&(0..tile.cell_num)))
}

/// The running state of `TileMetadataGenerator`.
struct Generator {
    has_min_max: bool,
    has_sum: bool,
    var: bool,
    nullable: bool,
    dispatch: Dispatch,
    cell_size: usize,
    /// Fixed numeric: the current min/max values (little-endian), once initialised.
    num: Option<(Vec<u8>, Vec<u8>)>,
    /// Strings: the chosen min/max values, once chosen.
    text: Option<(Vec<u8>, Vec<u8>)>,
    /// Whether `process_cell_range` ran (it sets the fixed min/max sizes).
    ran: bool,
    sum: u64,
    null_count: u64,
}

impl Generator {
    fn new(field: &FieldInfo) -> Self {
        Generator {
            has_min_max: field.has_min_max(),
            has_sum: crate::fields::has_sum_metadata(field.datatype, field.var, field.cell_val_num),
            var: field.var,
            nullable: field.nullable,
            dispatch: dispatch(field.datatype),
            cell_size: field.cell_size as usize,
            num: None,
            text: None,
            ran: false,
            sum: 0,
            null_count: 0,
        }
    }

    fn process(&mut self, tile: &TileData<'_>, start: usize, end: usize) {
        if self.var {
            self.process_var(tile, start, end);
            return;
        }
        match self.dispatch {
            Dispatch::I8 => self.process_num::<i8>(tile, start, end),
            Dispatch::U8 => self.process_num::<u8>(tile, start, end),
            Dispatch::I16 => self.process_num::<i16>(tile, start, end),
            Dispatch::U16 => self.process_num::<u16>(tile, start, end),
            Dispatch::I32 => self.process_num::<i32>(tile, start, end),
            Dispatch::U32 => self.process_num::<u32>(tile, start, end),
            Dispatch::I64 => self.process_num::<i64>(tile, start, end),
            Dispatch::U64 => self.process_num::<u64>(tile, start, end),
            Dispatch::F32 => self.process_num::<f32>(tile, start, end),
            Dispatch::F64 => self.process_num::<f64>(tile, start, end),
            Dispatch::Char => self.process_char(tile, start, end),
            Dispatch::Bytes => self.process_bytes(tile),
            Dispatch::Nothing => {}
        }
    }

    /// `process_cell_range<T>` for numbers.
    fn process_num<T: Num>(&mut self, tile: &TileData<'_>, start: usize, end: usize) {
        self.ran = true;
        let size = T::SIZE;
        // With cell_val_num > 1 the generator indexes values, not cells; those fields have
        // neither min/max nor sums, so only the validity loop below matters.
        let value = |c: usize| T::read_le(&tile.fixed[c * size..]);
        match tile.validity.filter(|_| self.nullable) {
            None => {
                let bytes = &tile.fixed[start * size..end * size];
                let (mut min, mut max) = self.num_state::<T>();
                let min_max = self.has_min_max.then_some((&mut min, &mut max));
                T::stats_all(bytes, min_max, self.has_sum.then_some(&mut self.sum));
                if self.has_min_max {
                    self.set_num_state(min, max);
                }
            }
            Some(validity) => {
                if self.has_min_max {
                    let (mut min, mut max) = self.num_state::<T>();
                    for (c, &valid) in validity.iter().enumerate().take(end).skip(start) {
                        let is_null = valid == 0;
                        if !is_null {
                            let v = value(c);
                            min = if min < v { min } else { v };
                            max = if max > v { max } else { v };
                        }
                        self.null_count += u64::from(is_null);
                    }
                    self.set_num_state(min, max);
                } else {
                    // Counts the nulls of the whole tile, once per slab.
                    self.null_count += validity.iter().filter(|&&v| v == 0).count() as u64;
                }
                if self.has_sum {
                    for (c, &valid) in validity.iter().enumerate().take(end).skip(start) {
                        if valid != 0 && !value(c).add_to(&mut self.sum) {
                            break;
                        }
                    }
                }
            }
        }
    }

    fn num_state<T: Num>(&self) -> (T, T) {
        match &self.num {
            Some((min, max)) => (T::read_le(min), T::read_le(max)),
            None => (T::MAX, T::LOWEST),
        }
    }

    fn set_num_state<T: Num>(&mut self, min: T, max: T) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        min.write_le(&mut a);
        max.write_le(&mut b);
        self.num = Some((a, b));
    }

    /// `process_cell_range<char>`: fixed strings (and `CHAR` with one value per cell).
    fn process_char(&mut self, tile: &TileData<'_>, start: usize, end: usize) {
        self.ran = true;
        let cs = self.cell_size;
        let cell = |c: usize| &tile.fixed[c * cs..(c + 1) * cs];
        match tile.validity.filter(|_| self.nullable) {
            None => {
                if self.has_min_max && !tile.fixed.is_empty() && start < end {
                    let mut start = start;
                    let (mut min, mut max) = match self.text.take() {
                        Some(mm) => mm,
                        None => {
                            start += 1;
                            (cell(start - 1).to_vec(), cell(start - 1).to_vec())
                        }
                    };
                    for c in start..end {
                        let v = cell(c);
                        if strncmp(&min, v, cs) == Ordering::Greater {
                            min = v.to_vec();
                        }
                        if strncmp(&max, v, cs) == Ordering::Less {
                            max = v.to_vec();
                        }
                    }
                    self.text = Some((min, max));
                }
                if self.has_sum {
                    for c in start..end {
                        if !(tile.fixed[c] as i8).add_to(&mut self.sum) {
                            break;
                        }
                    }
                }
            }
            Some(validity) => {
                if self.has_min_max {
                    let (mut min, mut max) = match self.text.take() {
                        Some((a, b)) => (Some(a), Some(b)),
                        None => (None, None),
                    };
                    for (c, &valid) in validity.iter().enumerate().take(end).skip(start) {
                        let is_null = valid == 0;
                        let v = cell(c);
                        if !is_null
                            && min.as_deref().is_none_or(|m| strncmp(m, v, cs) == Ordering::Greater)
                        {
                            min = Some(v.to_vec());
                        }
                        if !is_null
                            && max.as_deref().is_none_or(|m| strncmp(m, v, cs) == Ordering::Less)
                        {
                            max = Some(v.to_vec());
                        }
                        self.null_count += u64::from(is_null);
                    }
                    if let (Some(a), Some(b)) = (min, max) {
                        self.text = Some((a, b));
                    }
                } else {
                    self.null_count += validity.iter().filter(|&&v| v == 0).count() as u64;
                }
                if self.has_sum {
                    for (c, &valid) in validity.iter().enumerate().take(end).skip(start) {
                        if valid != 0 && !(tile.fixed[c] as i8).add_to(&mut self.sum) {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// `process_cell_range<std::byte>`: no min/max, no sum; only the null count.
    fn process_bytes(&mut self, tile: &TileData<'_>) {
        self.ran = true;
        if let Some(validity) = tile.validity.filter(|_| self.nullable) {
            self.null_count += validity.iter().filter(|&&v| v == 0).count() as u64;
        }
    }

    /// `process_cell_range_var`.
    fn process_var(&mut self, tile: &TileData<'_>, start: usize, end: usize) {
        if !self.has_min_max || tile.fixed.is_empty() {
            return;
        }
        let var = tile.var.unwrap_or_default();
        let n = tile.fixed.len() / 8;
        let off = |c: usize| read_u64(&tile.fixed[c * 8..]) as usize;
        let value = |c: usize| {
            let s = off(c);
            let e = if c == n - 1 { var.len() } else { off(c + 1) };
            &var[s..e]
        };
        match tile.validity.filter(|_| self.nullable) {
            None => {
                let mut start = start;
                if self.text.is_none() && start < end {
                    self.text = Some((value(start).to_vec(), value(start).to_vec()));
                    start += 1;
                }
                for c in start..end {
                    self.min_max_var(value(c));
                }
            }
            Some(validity) => {
                for c in start..end {
                    // The validity pointer is not moved to the slab start.
                    let is_null = validity[c - start] == 0;
                    if !is_null {
                        let v = value(c);
                        if self.text.is_none() {
                            self.text = Some((v.to_vec(), v.to_vec()));
                        } else {
                            self.min_max_var(v);
                        }
                    }
                    self.null_count += u64::from(is_null);
                }
            }
        }
    }

    /// `TileMetadataGenerator::min_max_var`.
    fn min_max_var(&mut self, v: &[u8]) {
        let Some((min, max)) = &mut self.text else { return };
        match strncmp(min, v, min.len().min(v.len())) {
            Ordering::Greater => *min = v.to_vec(),
            Ordering::Equal if v.len() < min.len() => *min = v.to_vec(),
            _ => {}
        }
        match strncmp(max, v, max.len().min(v.len())) {
            Ordering::Less => *max = v.to_vec(),
            Ordering::Equal if v.len() > max.len() => *max = v.to_vec(),
            _ => {}
        }
    }

    fn finish(self, field: &FieldInfo) -> TileStats {
        let (min, max) = if !self.has_min_max {
            (Vec::new(), Vec::new())
        } else if self.var {
            self.text.unwrap_or_default()
        } else if let Some(mm) = self.num.or(self.text) {
            mm
        } else if self.ran {
            (vec![0; field.cell_size as usize], vec![0; field.cell_size as usize])
        } else {
            (Vec::new(), Vec::new())
        };
        TileStats { min, max, sum: self.sum, null_count: self.null_count }
    }
}

/// The cell slabs a dense ordered write hands to the metadata generator for one tile, in
/// order (`DenseTiler::copy_plan` and `compute_tile_metadata`): `sub` is the written subarray
/// and `tile` the space tile's range per dimension (integer coordinates, inclusive),
/// `cell_order` the schema's cell order and `sub_layout` the layout of the write's buffers.
///
/// With one dimension the slab is the whole overlap. When the layouts differ every cell is a
/// slab. Otherwise a slab runs along the fastest-varying dimension and is merged with the
/// next dimension's slabs while the overlap spans the whole tile extent and the whole
/// subarray in the faster dimensions. Slabs are visited with the last dimension fastest.
///
/// The slabs matter for byte compatibility: a nullable var field reads validity relative to
/// each slab's start (see the module notes), and NaN and string ties depend on the order.
///
/// # Errors
/// [`Error::Invalid`] when the ranges are empty, reversed, of different lengths, or do not
/// overlap, or a layout is neither row- nor column-major.
pub fn dense_tile_slabs(
    sub: &[[i128; 2]],
    tile: &[[i128; 2]],
    cell_order: tessera_types::Layout,
    sub_layout: tessera_types::Layout,
) -> Result<Vec<Range<u64>>> {
    use tessera_types::Layout;
    let n = sub.len();
    if n == 0 || tile.len() != n {
        return Err(Error::invalid("subarray and tile need one range per dimension"));
    }
    for l in [cell_order, sub_layout] {
        if !matches!(l, Layout::RowMajor | Layout::ColMajor) {
            return Err(Error::invalid(format!(
                "dense slabs need a row- or column-major layout, not {l:?}"
            )));
        }
    }
    let mut lo = vec![0i128; n];
    let mut w = vec![0i128; n];
    let mut ext = vec![0i128; n];
    for d in 0..n {
        let (s, t) = (sub[d], tile[d]);
        if s[0] > s[1] || t[0] > t[1] {
            return Err(Error::invalid(format!("range {d} is reversed")));
        }
        lo[d] = s[0].max(t[0]);
        let hi = s[1].min(t[1]);
        if lo[d] > hi {
            return Err(Error::invalid(format!("the subarray misses the tile in dimension {d}")));
        }
        w[d] = hi - lo[d] + 1;
        ext[d] = t[1] - t[0] + 1;
    }
    // Tile strides in cells, by cell order.
    let mut stride = vec![1i128; n];
    if cell_order == Layout::RowMajor {
        for d in (0..n.saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * ext[d + 1];
        }
    } else {
        for d in 1..n {
            stride[d] = stride[d - 1] * ext[d - 1];
        }
    }
    let start: i128 = (0..n).map(|d| (lo[d] - tile[d][0]) * stride[d]).sum();
    let covers = |d: usize| w[d] == ext[d] && lo[d] == sub[d][0] && lo[d] + w[d] - 1 == sub[d][1];
    // (copy_el, first_d, number of dims iterated)
    let (copy_el, first_d, iter_dims) = if n == 1 {
        (w[0], 0, 0)
    } else if sub_layout != cell_order {
        (1, 0, n)
    } else if cell_order == Layout::RowMajor {
        let mut copy = w[n - 1];
        let mut last_d = n as isize - 2;
        while last_d >= 0 && covers(last_d as usize + 1) {
            copy *= w[last_d as usize];
            last_d -= 1;
        }
        (copy, 0, (last_d + 1) as usize)
    } else {
        let mut copy = w[0];
        let mut last_d = 1;
        while last_d < n && covers(last_d - 1) {
            copy *= w[last_d];
            last_d += 1;
        }
        if last_d == n { (copy, n - 1, 0) } else { (copy, last_d, n - last_d) }
    };
    let to_u64 =
        |v: i128| u64::try_from(v).map_err(|_| Error::invalid("slab position overflows u64"));
    let copy = to_u64(copy_el)?;
    if iter_dims == 0 {
        let s = to_u64(start)?;
        return Ok(std::iter::once(s..s + copy).collect());
    }
    // Iterate the coordinates of dims first_d..first_d+iter_dims, the last fastest.
    let dims: Vec<usize> = (first_d..first_d + iter_dims).collect();
    let mut idx = vec![0i128; iter_dims];
    let mut out = Vec::new();
    loop {
        let off = start + dims.iter().zip(&idx).map(|(&d, &i)| i * stride[d]).sum::<i128>();
        let s = to_u64(off)?;
        out.push(s..s + copy);
        let mut k = iter_dims;
        loop {
            if k == 0 {
                return Ok(out);
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < w[dims[k]] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// One field's tile buffers in fragment metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldTileMetadata {
    /// Tile minimums.
    pub mins: TileMinMax,
    /// Tile maximums.
    pub maxs: TileMinMax,
    /// Tile sums.
    pub sums: TileSums,
    /// Tile null counts (empty for fields that are not nullable).
    pub null_counts: Vec<u64>,
}

/// How a writer copies the var-sized min/max values of its tiles into the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VarMinMaxCopy {
    /// Tile `t`'s value goes to slot `t` (the unordered and global-order writers, and the
    /// dense ordered writer when it parallelises over tiles).
    #[default]
    PerTile,
    /// Every tile's value is copied into slot 0, truncated to slot 0's size; the other slots
    /// keep zero bytes of their own sizes. libtiledb 2.30's dense ordered writer does this
    /// when a write has more attributes than tiles (`OrderedWriter::ordered_write`, which
    /// restarts the slot index for every batch of one tile); the last tile wins. When a
    /// tile's value is shorter than slot 0, libtiledb copies slot 0's size anyway, reading
    /// past the value (uninitialised bytes); Tessera copies the value and leaves the rest of
    /// the slot as the earlier tiles left it.
    SlotZero,
}

/// Builds one field's tile buffers for a fragment of `tile_num` tiles from the metadata of its
/// written tiles (`tiles[t]` for tile `t`; tiles past `tiles.len()`, such as every tile of
/// the `__coords` slot, stay zero), as `set_num_tiles` sizes them (zero-filled) and
/// `write_tiles` fills them: min/max only for tiles whose null count differs from
/// `cell_num(t)`; nothing for a dense array's dimensions. Var-sized values are copied
/// [`VarMinMaxCopy::PerTile`]; see [`field_tile_metadata_with`].
///
/// # Errors
/// [`Error::Invalid`] when `tiles` has more entries than `tile_num`, or a fixed min/max does
/// not have `cell_size` bytes.
pub fn field_tile_metadata(
    field: &FieldInfo,
    tile_num: u64,
    tiles: &[TileStats],
    cell_num: impl Fn(u64) -> u64,
) -> Result<FieldTileMetadata> {
    field_tile_metadata_with(field, tile_num, tiles, cell_num, VarMinMaxCopy::PerTile)
}

/// [`field_tile_metadata`] with the way var-sized min/max values are copied.
///
/// # Errors
/// As [`field_tile_metadata`].
pub fn field_tile_metadata_with(
    field: &FieldInfo,
    tile_num: u64,
    tiles: &[TileStats],
    cell_num: impl Fn(u64) -> u64,
    var_copy: VarMinMaxCopy,
) -> Result<FieldTileMetadata> {
    let mut out = FieldTileMetadata::default();
    if tiles.len() as u64 > tile_num {
        return Err(Error::invalid(format!("{} tiles given for {tile_num}", tiles.len())));
    }
    if field.dense_array && field.is_dim {
        return Ok(out);
    }
    let n = usize::try_from(tile_num).map_err(|_| Error::invalid("too many tiles"))?;
    let cs = field.cell_size as usize;
    let recorded = |t: usize| tiles.get(t).filter(|s| s.null_count != cell_num(t as u64));
    if field.has_min_max() {
        if field.var {
            let values = |pick: fn(&TileStats) -> &Vec<u8>| {
                // Sizes (set for recorded tiles), turned into offsets, then the values.
                let sizes: Vec<usize> =
                    (0..n).map(|t| recorded(t).map_or(0, |s| pick(s).len())).collect();
                let mut m = TileMinMax::default();
                let mut starts = Vec::with_capacity(n);
                let mut total = 0usize;
                for &z in &sizes {
                    put_u64(&mut m.fixed, total as u64);
                    starts.push(total);
                    total += z;
                }
                m.var = vec![0; total];
                for (t, tile) in tiles.iter().enumerate() {
                    let slot = match var_copy {
                        VarMinMaxCopy::PerTile => t,
                        VarMinMaxCopy::SlotZero => 0,
                    };
                    let value = pick(tile);
                    let k = sizes[slot].min(value.len());
                    m.var[starts[slot]..starts[slot] + k].copy_from_slice(&value[..k]);
                }
                m
            };
            out.mins = values(|s| &s.min);
            out.maxs = values(|s| &s.max);
        } else {
            let size =
                n.checked_mul(cs).ok_or_else(|| Error::invalid("min/max buffer overflows"))?;
            out.mins.fixed = vec![0; size];
            out.maxs.fixed = vec![0; size];
            for t in 0..n {
                if let Some(s) = recorded(t) {
                    if s.min.len() != cs || s.max.len() != cs {
                        return Err(Error::invalid(format!(
                            "tile {t} of {:?}: min/max of {}/{} bytes, cell size {cs}",
                            field.name,
                            s.min.len(),
                            s.max.len()
                        )));
                    }
                    out.mins.fixed[t * cs..(t + 1) * cs].copy_from_slice(&s.min);
                    out.maxs.fixed[t * cs..(t + 1) * cs].copy_from_slice(&s.max);
                }
            }
        }
    }
    if field.has_sum() {
        out.sums = TileSums((0..n).map(|t| tiles.get(t).map_or(0, |s| s.sum)).collect());
    }
    if field.nullable {
        out.null_counts = (0..n).map(|t| tiles.get(t).map_or(0, |s| s.null_count)).collect();
    }
    Ok(out)
}

/// The fragment-level statistics of every field from its tile buffers
/// (`compute_fragment_min_max_sum_null_count`). `fields`, `mins`, `maxs`, `sums` and
/// `null_counts` are indexed by field idx; `cell_num(t)` is the cell count of tile `t`
/// ([`crate::Footer::cell_num_in_tile`]).
///
/// # Errors
/// [`Error::Invalid`] when the vectors do not have one entry per field, or a buffer is
/// shorter than `tile_num` values (libtiledb would read past it).
pub fn fragment_stats(
    fields: &[FieldInfo],
    tile_num: u64,
    cell_num: impl Fn(u64) -> u64,
    mins: &[TileMinMax],
    maxs: &[TileMinMax],
    sums: &[TileSums],
    null_counts: &[Vec<u64>],
) -> Result<FragmentStats> {
    let num = fields.len();
    for (name, len) in [
        ("mins", mins.len()),
        ("maxs", maxs.len()),
        ("sums", sums.len()),
        ("null counts", null_counts.len()),
    ] {
        if len != num {
            return Err(Error::invalid(format!("{len} {name} for {num} fields")));
        }
    }
    let n = usize::try_from(tile_num).map_err(|_| Error::invalid("too many tiles"))?;
    let mut out = FragmentStats { fields: Vec::with_capacity(num) };
    for (idx, f) in fields.iter().enumerate() {
        let nc = &null_counts[idx];
        let mut s = FieldStats {
            null_count: nc.iter().fold(0u64, |a, &b| a.wrapping_add(b)),
            ..FieldStats::default()
        };
        let is_null = |t: usize| -> Result<bool> {
            if !f.nullable {
                return Ok(false);
            }
            let c = nc.get(t).ok_or_else(|| short(f, "null counts", t))?;
            Ok(*c == cell_num(t as u64))
        };
        if f.var {
            if f.has_min_max() {
                fold_var(f, n, &mins[idx], &maxs[idx], &is_null, &mut s)?;
            }
        } else {
            match dispatch(f.datatype) {
                Dispatch::I8 => fold_num::<i8>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::U8 => fold_num::<u8>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::I16 => fold_num::<i16>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::U16 => fold_num::<u16>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::I32 => fold_num::<i32>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::U32 => fold_num::<u32>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::I64 => fold_num::<i64>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::U64 => fold_num::<u64>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::F32 => fold_num::<f32>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::F64 => fold_num::<f64>(f, n, idx, mins, maxs, &is_null, &mut s)?,
                Dispatch::Char => {
                    if f.has_min_max() {
                        fold_char(f, n, &mins[idx], &maxs[idx], &is_null, &mut s)?;
                    }
                }
                Dispatch::Bytes | Dispatch::Nothing => {}
            }
            if f.has_sum()
                && !matches!(
                    dispatch(f.datatype),
                    Dispatch::Char | Dispatch::Bytes | Dispatch::Nothing
                )
            {
                let values = &sums[idx].0;
                let mut sum = 0u64;
                for t in 0..n {
                    if is_null(t)? {
                        continue;
                    }
                    let v = *values.get(t).ok_or_else(|| short(f, "sums", t))?;
                    let go_on = match f.sum_type() {
                        crate::SumType::I64 => add_i64(&mut sum, v as i64),
                        crate::SumType::U64 => add_u64(&mut sum, v),
                        crate::SumType::F64 => add_f64(&mut sum, f64::from_bits(v)),
                    };
                    if !go_on {
                        break;
                    }
                }
                s.sum = sum;
            }
        }
        out.fields.push(s);
    }
    Ok(out)
}

fn short(f: &FieldInfo, what: &str, t: usize) -> Error {
    Error::invalid(format!("field {:?}: tile {what} end before tile {t}", f.name))
}

/// `compute_fragment_min_max_sum<T>` (the min/max half; the caller adds the sum).
fn fold_num<T: Num>(
    f: &FieldInfo,
    n: usize,
    idx: usize,
    mins: &[TileMinMax],
    maxs: &[TileMinMax],
    is_null: &dyn Fn(usize) -> Result<bool>,
    s: &mut FieldStats,
) -> Result<()> {
    if (f.dense_array && f.is_dim) || !f.has_min_max() {
        return Ok(());
    }
    let (mut min, mut max) = (T::MAX, T::LOWEST);
    let size = T::SIZE;
    for t in 0..n {
        if is_null(t)? {
            continue;
        }
        let a = mins[idx].fixed.get(t * size..(t + 1) * size).ok_or_else(|| short(f, "mins", t))?;
        let b = maxs[idx].fixed.get(t * size..(t + 1) * size).ok_or_else(|| short(f, "maxs", t))?;
        let (a, b) = (T::read_le(a), T::read_le(b));
        min = if min < a { min } else { a };
        max = if max > b { max } else { b };
    }
    min.write_le(&mut s.min);
    max.write_le(&mut s.max);
    Ok(())
}

/// `compute_fragment_min_max_sum<char>`: the buffer pointer moves by `cell_val_num` only for
/// tiles that are not all null; no sum.
fn fold_char(
    f: &FieldInfo,
    n: usize,
    mins: &TileMinMax,
    maxs: &TileMinMax,
    is_null: &dyn Fn(usize) -> Result<bool>,
    s: &mut FieldStats,
) -> Result<()> {
    let k = f.cell_val_num as usize;
    let mut min: Option<&[u8]> = None;
    let mut max: Option<&[u8]> = None;
    let mut pos = 0usize;
    for t in 0..n {
        if is_null(t)? {
            continue;
        }
        let a = mins.fixed.get(pos..pos + k).ok_or_else(|| short(f, "mins", t))?;
        let b = maxs.fixed.get(pos..pos + k).ok_or_else(|| short(f, "maxs", t))?;
        if min.is_none_or(|m| strncmp(m, a, k) == Ordering::Greater) {
            min = Some(a);
        }
        if max.is_none_or(|m| strncmp(m, b, k) == Ordering::Less) {
            max = Some(b);
        }
        pos += k;
    }
    if let Some(m) = min {
        s.min = m.to_vec();
    }
    if let Some(m) = max {
        s.max = m.to_vec();
    }
    Ok(())
}

/// `FragmentMetadata::min_max_var`.
fn fold_var(
    f: &FieldInfo,
    n: usize,
    mins: &TileMinMax,
    maxs: &TileMinMax,
    is_null: &dyn Fn(usize) -> Result<bool>,
    s: &mut FieldStats,
) -> Result<()> {
    let value = |m: &'_ TileMinMax, t: usize| -> Result<Vec<u8>> {
        let off = |k: usize| m.fixed.get(k * 8..k * 8 + 8).map(read_u64);
        let start = off(t).ok_or_else(|| short(f, "min/max offsets", t))? as usize;
        let end = if t == n - 1 {
            m.var.len()
        } else {
            off(t + 1).ok_or_else(|| short(f, "min/max offsets", t))? as usize
        };
        m.var.get(start..end).map(<[u8]>::to_vec).ok_or_else(|| short(f, "min/max values", t))
    };
    let mut chosen: Option<(Vec<u8>, Vec<u8>)> = None;
    for t in 0..n {
        if is_null(t)? {
            continue;
        }
        let a = value(mins, t)?;
        let b = value(maxs, t)?;
        match &mut chosen {
            None => chosen = Some((a, b)),
            Some((min, max)) => {
                match strncmp(min, &a, min.len().min(a.len())) {
                    Ordering::Greater => *min = a,
                    Ordering::Equal if a.len() < min.len() => *min = a,
                    _ => {}
                }
                match strncmp(max, &b, max.len().min(b.len())) {
                    Ordering::Less => *max = b,
                    Ordering::Equal if b.len() > max.len() => *max = b,
                    _ => {}
                }
            }
        }
    }
    if let Some((a, b)) = chosen {
        s.min = a;
        s.max = b;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunked sums agree with libtiledb's value-by-value rule, saturation included.
    #[test]
    fn chunked_sums_equal_value_by_value_sums() {
        fn check<T: Num>(values: &[T], start: u64) {
            let mut bytes = Vec::new();
            for v in values {
                v.write_le(&mut bytes);
            }
            let (mut fast, mut slow) = (start, start);
            let a = T::add_all(&bytes, &mut fast);
            let b = bytes.chunks_exact(T::SIZE).all(|c| T::read_le(c).add_to(&mut slow));
            assert_eq!((a, fast), (b, slow), "start {start:#x}");
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = 3 * CHUNK + 17;
        let i32s: Vec<i32> = (0..n).map(|_| next() as i32).collect();
        let i32_big: Vec<i32> =
            (0..n).map(|i| if i % 3 == 0 { i32::MIN } else { i32::MAX }).collect();
        let u32s: Vec<u32> = (0..n).map(|_| next() as u32 | 0xf000_0000).collect();
        let i8s: Vec<i8> = (0..n).map(|_| next() as i8).collect();
        let u16s: Vec<u16> = (0..n).map(|_| next() as u16).collect();
        for start in [
            0,
            i64::MAX as u64 - 5,
            (i64::MAX - (1 << 46)) as u64,
            i64::MIN as u64 + 3,
            (-5i64) as u64,
        ] {
            check(&i32s, start);
            check(&i32_big, start);
            check(&i8s, start);
        }
        for start in [0, u64::MAX - 5, u64::MAX - (1 << 47), 1 << 40] {
            check(&u32s, start);
            check(&u16s, start);
        }
    }

    #[test]
    fn strncmp_is_unsigned_and_stops_at_nul() {
        assert_eq!(strncmp(b"a", b"\x80", 1), Ordering::Less);
        assert_eq!(strncmp(b"a\0x", b"a\0y", 3), Ordering::Equal);
        assert_eq!(strncmp(b"ab", b"ac", 1), Ordering::Equal);
        assert_eq!(strncmp(b"", b"a", 1), Ordering::Less);
    }

    #[test]
    fn sums_saturate() {
        let mut s = 0u64;
        assert!(add_i64(&mut s, i64::MAX));
        assert!(!add_i64(&mut s, 1));
        assert_eq!(s as i64, i64::MAX);
        let mut u = u64::MAX - 1;
        assert!(!add_u64(&mut u, 2));
        assert_eq!(u, u64::MAX);
        let mut f = f64::MAX.to_bits();
        assert!(!add_f64(&mut f, f64::MAX));
        assert_eq!(f64::from_bits(f), f64::MAX);
    }

    /// libtiledb's folds, value by value: (min, max, sum bits).
    fn reference<T: Num>(values: &[T], min: T, max: T, sum: u64) -> (T, T, u64) {
        let (mut min, mut max, mut sum) = (min, max, sum);
        for &v in values {
            min = if min < v { min } else { v };
            max = if max > v { max } else { v };
        }
        for &v in values {
            if !v.add_to(&mut sum) {
                break;
            }
        }
        (min, max, sum)
    }

    fn check<T: Num>(values: &[T], start: (T, T, u64), what: &str) {
        let mut bytes = Vec::new();
        for v in values {
            v.write_le(&mut bytes);
        }
        let (mut min, mut max, mut sum) = start;
        T::stats_all(&bytes, Some((&mut min, &mut max)), Some(&mut sum));
        let (rmin, rmax, rsum) = reference(values, start.0, start.1, start.2);
        let bits = |v: T| {
            let mut b = Vec::new();
            v.write_le(&mut b);
            b
        };
        assert_eq!((bits(min), bits(max), sum), (bits(rmin), bits(rmax), rsum), "{what}");
    }

    /// A deterministic stream of doubles: mostly ordinary values, with the given specials
    /// sprinkled in.
    fn values(n: usize, seed: u64, specials: &[f64]) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if !specials.is_empty() && x.is_multiple_of(97) {
                    specials[(x / 97) as usize % specials.len()]
                } else {
                    ((x % 2_000_001) as f64 - 1_000_000.0) / 8.0
                }
            })
            .collect()
    }

    #[test]
    fn float_fast_paths_fold_as_libtiledb_does() {
        let specials = [
            [f64::NAN, -0.0, 0.0].as_slice(),
            &[0.0],
            &[-0.0],
            &[f64::NAN],
            &[f64::INFINITY, f64::NEG_INFINITY],
            &[f64::MAX, f64::MAX / 3.0],
            &[-f64::MAX],
            &[],
        ];
        let starts: [(f64, f64, u64); 5] = [
            (f64::MAX, f64::MIN, 0),
            (f64::NAN, f64::NAN, 1.5f64.to_bits()),
            (-0.0, 0.0, (-2.0f64).to_bits()),
            (3.0, 4.0, (f64::MAX * 0.75).to_bits()),
            (1.0, 1.0, f64::MAX.to_bits()),
        ];
        for (k, sp) in specials.iter().enumerate() {
            for n in [0, 1, 7, 8, 9, 1023, 1024, 1025, 5000] {
                for (s, &start) in starts.iter().enumerate() {
                    let v = values(n, (k * 31 + n + s) as u64, sp);
                    check(&v, start, &format!("f64 specials {sp:?}, {n} values, start {s}"));
                    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                    let start32 = (start.0 as f32, start.1 as f32, start.2);
                    check(&v32, start32, &format!("f32 specials {sp:?}, {n} values, start {s}"));
                }
            }
        }
        // A zero of each sign in one block: the later one wins, in both folds.
        check(&[1.0, -0.0, 2.0, 0.0, 5.0, -0.0, 0.0], (f64::MAX, f64::MIN, 0), "zeros");
        // Saturation part way through the second block stops the slab's sum.
        let mut v = vec![1.0e300; 2048];
        v.extend(vec![f64::MAX / 2.0; 2048]);
        check(&v, (f64::MAX, f64::MIN, 0), "saturation");
    }
}
