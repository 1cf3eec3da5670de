//! The scans that feed aggregates: runs of cells (selected by a mask, with validity) reduced
//! to counts, sums, minima and maxima in loops the compiler vectorises, and fill values
//! counted without being materialised.

use super::*;

pub(super) fn scan_fill(field: &AggField, acc: &mut FieldAcc, n: u64) {
    if n == 0 {
        return;
    }
    if !field.fill_valid {
        acc.nulls += n;
        return;
    }
    let size = field.cell_size();
    let fill: Vec<u8> = if size == 0 || field.fill.len() == size {
        field.fill.clone()
    } else if field.fill.is_empty() {
        vec![0; size]
    } else {
        field.fill.iter().copied().cycle().take(size).collect()
    };
    let offsets = [0u64];
    let view = ColumnView {
        datatype: field.datatype,
        cell_val_num: field.cell_val_num,
        data: &fill,
        offsets: (size == 0).then_some(&offsets[..]),
        validity: None,
    };
    // The first copy: its value, min and max.
    let before = acc.sum;
    scan_iter(field, acc, &view, std::iter::once(0));
    let rest = n - 1;
    acc.values += rest;
    if rest == 0 || !field.want.sums || acc.overflow {
        return;
    }
    // The others: the same value added one at a time (floats round as a sequential sum
    // does), integers at once (an integer sum overflows iff the total does not fit).
    let one = match (before, acc.sum) {
        (Sum::I64(a), Sum::I64(b)) => Sum::I64(b - a),
        (Sum::U64(a), Sum::U64(b)) => Sum::U64(b - a),
        (Sum::F64(_), Sum::F64(_)) => {
            let v = match field.num {
                Some(Num::F32) => f64::from(f32::read_le(&fill)),
                _ => f64::read_le(&fill),
            };
            Sum::F64(v)
        }
        _ => return,
    };
    match (&mut acc.sum, one) {
        (Sum::I64(s), Sum::I64(v)) => {
            match i64::try_from(i128::from(*s) + i128::from(v) * i128::from(rest)) {
                Ok(t) => *s = t,
                Err(_) => {
                    *s = if v < 0 { i64::MIN } else { i64::MAX };
                    acc.overflow = true;
                }
            }
        }
        (Sum::U64(s), Sum::U64(v)) => {
            match u64::try_from(u128::from(*s) + u128::from(v) * u128::from(rest)) {
                Ok(t) => *s = t,
                Err(_) => {
                    *s = u64::MAX;
                    acc.overflow = true;
                }
            }
        }
        (Sum::F64(s), Sum::F64(v)) => {
            for _ in 0..rest {
                if !s.safe_add(v) {
                    acc.overflow = true;
                    break;
                }
            }
        }
        _ => {}
    }
}

pub(super) fn scan_iter(
    field: &AggField,
    acc: &mut FieldAcc,
    view: &ColumnView<'_>,
    cells: impl Iterator<Item = usize>,
) {
    if field.string || field.num.is_none() {
        scan_bytes(field, acc, view, cells);
        return;
    }
    match field.num {
        Some(Num::I8) => scan_num::<i8>(field, acc, view, cells),
        Some(Num::U8) => scan_num::<u8>(field, acc, view, cells),
        Some(Num::I16) => scan_num::<i16>(field, acc, view, cells),
        Some(Num::U16) => scan_num::<u16>(field, acc, view, cells),
        Some(Num::I32) => scan_num::<i32>(field, acc, view, cells),
        Some(Num::U32) => scan_num::<u32>(field, acc, view, cells),
        Some(Num::I64) => scan_num::<i64>(field, acc, view, cells),
        Some(Num::U64) => scan_num::<u64>(field, acc, view, cells),
        Some(Num::F32) => scan_num::<f32>(field, acc, view, cells),
        Some(Num::F64) => scan_num::<f64>(field, acc, view, cells),
        None => {}
    }
}

/// Numbers: one typed loop (sum in the sum type with `SafeSum`'s rule, min/max with `<`
/// and `>` from the first value, as libtiledb's `MinMax` does).
pub(super) fn scan_num<T: Value>(
    field: &AggField,
    acc: &mut FieldAcc,
    view: &ColumnView<'_>,
    cells: impl Iterator<Item = usize>,
) {
    let want = field.want;
    let data = view.data;
    let validity = view.validity;
    let mut sum = T::load(acc.sum);
    let mut overflow = acc.overflow;
    let mut min: Option<T> = acc.min.as_deref().map(T::read_le);
    let mut max: Option<T> = acc.max.as_deref().map(T::read_le);
    let (mut values, mut nulls) = (0u64, 0u64);
    for c in cells {
        if validity.is_some_and(|v| v.get(c).is_none_or(|&b| b == 0)) {
            nulls += 1;
            continue;
        }
        let Some(b) = data.get(c * T::SIZE..(c + 1) * T::SIZE) else { continue };
        values += 1;
        let v = T::read_le(b);
        if want.sums && !overflow && !sum.safe_add(v.widen()) {
            overflow = true;
        }
        if want.min_max {
            // The first value, then any value comparing smaller (larger): a NaN replaces
            // nothing, and is replaced by nothing once taken, as in libtiledb.
            if min.is_none_or(|m| v < m) {
                min = Some(v);
            }
            if max.is_none_or(|m| v > m) {
                max = Some(v);
            }
        }
    }
    acc.values += values;
    acc.nulls += nulls;
    if want.sums {
        acc.sum = T::store(sum);
        acc.overflow = overflow;
    }
    if want.min_max {
        let bytes = |v: T| {
            let mut out = Vec::with_capacity(T::SIZE);
            v.write_le(&mut out);
            out
        };
        acc.min = min.map(bytes);
        acc.max = max.map(bytes);
    }
}

/// Cells `s..s + n` of `view` (those whose `mask` entry is true, with a mask) of a numeric
/// field, through [`scan_block`]; `false` (nothing done) when the view is shorter than the
/// run, which the cell-by-cell path handles.
pub(super) fn scan_run(
    num: Num,
    field: &AggField,
    acc: &mut FieldAcc,
    view: &ColumnView<'_>,
    s: usize,
    n: usize,
    mask: Option<&[bool]>,
) -> bool {
    macro_rules! go {
        ($t:ty) => {{
            let size = <$t>::SIZE;
            let Some(data) = view.data.get(s * size..(s + n) * size) else { return false };
            let validity = match view.validity {
                Some(v) => match v.get(s..s + n) {
                    Some(v) => Some(v),
                    None => return false,
                },
                None => None,
            };
            // Aligned little-endian cells are read in place; others decoded once.
            let typed: Option<&[$t]> = if cfg!(target_endian = "little") {
                bytemuck::try_cast_slice(data).ok()
            } else {
                None
            };
            let decoded: Vec<$t>;
            let vals = match typed {
                Some(v) => v,
                None => {
                    decoded = data.chunks_exact(size).map(<$t>::read_le).collect();
                    &decoded
                }
            };
            scan_block::<$t>(field, acc, vals, validity, mask);
            true
        }};
    }
    match num {
        Num::I8 => go!(i8),
        Num::U8 => go!(u8),
        Num::I16 => go!(i16),
        Num::U16 => go!(u16),
        Num::I32 => go!(i32),
        Num::U32 => go!(u32),
        Num::I64 => go!(i64),
        Num::U64 => go!(u64),
        Num::F32 => go!(f32),
        Num::F64 => go!(f64),
    }
}

/// A numeric type with the kernels of [`scan_block`].
pub(super) trait Fast: Value + bytemuck::Pod {
    /// Whether it is a float (min/max need `NaN` and `-0.0` care; sums round).
    const FLOAT: bool;
    /// Whether it is an integer of at most 4 bytes (block sums cannot overflow the sum type).
    const NARROW: bool;
    /// The largest and smallest values (`±inf` for floats).
    const HI: Self;
    const LO: Self;
    /// `|v|` as an `f64`, for the overflow bound of float sums.
    fn mag(self) -> f64;
    /// `if s { a } else { b }` as a select, not a branch: selections of random cells would
    /// mispredict half the branches, and vector loops need selects.
    fn pick(s: bool, a: Self, b: Self) -> Self;
}

/// [`Fast::pick`]: integers by arithmetic on the selection's byte (`a + ((b - a) & m)`, `m`
/// all ones when not selected), which the compiler keeps as vector arithmetic; floats by
/// an unpredictable select.
macro_rules! pick_impl {
    (false, $t:ty, $s:expr, $a:expr, $b:expr) => {{
        let m = <$t>::from($s).wrapping_sub(1);
        $a.wrapping_add($b.wrapping_sub($a) & m)
    }};
    (true, $t:ty, $s:expr, $a:expr, $b:expr) => {
        std::hint::select_unpredictable($s, $a, $b)
    };
}

macro_rules! fast_impl {
    ($($t:ty: $float:tt, $narrow:expr, $hi:expr, $lo:expr);*) => {$(
        impl Fast for $t {
            const FLOAT: bool = $float;
            const NARROW: bool = $narrow;
            const HI: $t = $hi;
            const LO: $t = $lo;
            #[inline(always)]
            fn mag(self) -> f64 {
                (self as f64).abs()
            }
            #[inline(always)]
            fn pick(s: bool, a: $t, b: $t) -> $t {
                pick_impl!($float, $t, s, a, b)
            }
        }
    )*};
}
fast_impl!(
    i8: false, true, i8::MAX, i8::MIN; u8: false, true, u8::MAX, u8::MIN;
    i16: false, true, i16::MAX, i16::MIN; u16: false, true, u16::MAX, u16::MIN;
    i32: false, true, i32::MAX, i32::MIN; u32: false, true, u32::MAX, u32::MIN;
    i64: false, false, i64::MAX, i64::MIN; u64: false, false, u64::MAX, u64::MIN;
    f32: true, false, f32::INFINITY, f32::NEG_INFINITY;
    f64: true, false, f64::INFINITY, f64::NEG_INFINITY
);

/// Cells per sub-block of [`scan_block`]'s sums (a narrow integer sub-block's sum cannot
/// overflow 48 bits).
pub(super) const SUM_BLOCK: usize = 1 << 16;

/// Values a float sum gathers at once before adding them (a buffer on the stack).
const COMPACT: usize = 1024;

/// Lanes of the float min/max reductions.
pub(super) const LANES: usize = 8;

/// Aggregates a run of cells of `T` (`data`: their bytes; `validity`: one byte per cell;
/// `mask`: which cells are selected), with exactly the results of [`scan_num`] (which takes
/// the cells one by one), in loops the compiler vectorises: the selection (mask and
/// validity) is one `bool` per cell, walked in step with the values, never branched on;
/// counts are sums of bytes; narrow integer sums go by sub-blocks in the sum type, checked
/// against overflow before; float sums add in cell order (the rounding of a sequential sum;
/// cells not selected add `-0.0`, which changes nothing), without the per-cell overflow test
/// when a bound shows none can happen; minimum and maximum go by lanes, with the first value
/// kept among equal ones (`-0.0` and `0.0`) and a `NaN` first value kept, as `<` and `>`
/// from the first value do.
pub(super) fn scan_block<T: Fast>(
    field: &AggField,
    acc: &mut FieldAcc,
    vals: &[T],
    validity: Option<&[u8]>,
    mask: Option<&[bool]>,
) {
    let n = vals.len();
    let count = count_true;
    let masked = mask.map_or(n as u64, |m| count(&m[..n]));
    let both: Vec<bool>;
    let sel: Option<&[bool]> = match (mask, validity) {
        (None, None) => None,
        (Some(m), None) => Some(&m[..n]),
        (None, Some(v)) => {
            both = v[..n].iter().map(|&b| b != 0).collect();
            Some(&both)
        }
        (Some(m), Some(v)) => {
            both = m[..n].iter().zip(&v[..n]).map(|(&a, &b)| a & (b != 0)).collect();
            Some(&both)
        }
    };
    let picked = sel.map_or(n as u64, count);
    acc.values += picked;
    acc.nulls += masked - picked;
    if picked == 0 {
        return;
    }
    let want = field.want;
    if want.sums && !acc.overflow {
        let mut sum = T::load(acc.sum);
        let mut overflow = false;
        for b0 in (0..n).step_by(SUM_BLOCK) {
            let b1 = (b0 + SUM_BLOCK).min(n);
            let block = &vals[b0..b1];
            let bsel = sel.map(|s| &s[b0..b1]);
            if !block_sum::<T>(&mut sum, block, bsel) {
                // Cell by cell, with the overflow test of each addition.
                for (i, &v) in block.iter().enumerate() {
                    if bsel.is_none_or(|s| s[i]) && !sum.safe_add(v.widen()) {
                        overflow = true;
                        break;
                    }
                }
            }
            if overflow {
                break;
            }
        }
        acc.sum = T::store(sum);
        acc.overflow = overflow;
    }
    if want.min_max {
        let (lo, hi) = lanes_min_max(vals, sel);
        let selected = |i: usize| sel.is_none_or(|s| s[i]);
        // The value the sequential scan starts from: the state's, or the first selected.
        let first = (0..n).find(|&i| selected(i)).map(|i| vals[i]);
        let start_lo = acc.min.as_deref().map(T::read_le).or(first);
        let start_hi = acc.max.as_deref().map(T::read_le).or(first);
        let pick = |start: Option<T>, best: T, better: fn(T, T) -> bool| -> Option<T> {
            let st = start?;
            // A NaN start is never replaced; a best that is not better keeps the start.
            if !better(best, st) {
                return Some(st);
            }
            if T::FLOAT && best == T::default() {
                // Zeros compare equal: the first selected zero is the one kept.
                return (0..n)
                    .filter(|&i| selected(i))
                    .map(|i| vals[i])
                    .find(|&v| v == T::default());
            }
            Some(best)
        };
        let new_lo = pick(start_lo, lo, |a, b| a < b);
        let new_hi = pick(start_hi, hi, |a, b| a > b);
        let bytes = |v: T| {
            let mut out = Vec::with_capacity(T::SIZE);
            v.write_le(&mut out);
            out
        };
        acc.min = new_lo.map(bytes);
        acc.max = new_hi.map(bytes);
    }
}

/// The number of `true`s in `s`, added as bytes in runs short enough for a byte counter
/// (byte lanes: 16 or 32 cells an instruction).
pub(crate) fn count_true(s: &[bool]) -> u64 {
    s.chunks(255).map(|c| u64::from(c.iter().fold(0u8, |n, &b| n.wrapping_add(u8::from(b))))).sum()
}

/// The smallest and largest selected values of `vals` by `<` and `>` (`T::HI` and `T::LO`
/// when none is selected; `NaN` values never win), over [`LANES`] lanes with the selection
/// applied as a blend: loops of vector compares and blends, without branches.
#[inline(always)]
fn lanes_min_max<T: Fast>(vals: &[T], sel: Option<&[bool]>) -> (T, T) {
    if !T::FLOAT {
        // One accumulator: integer min and max reductions vectorise as they are.
        let (mut lo, mut hi) = (T::HI, T::LO);
        match sel {
            None => {
                for &v in vals {
                    lo = if v < lo { v } else { lo };
                    hi = if v > hi { v } else { hi };
                }
            }
            Some(s) => {
                // Indexed (not zipped): the form the vectoriser takes.
                let s = &s[..vals.len()];
                for i in 0..vals.len() {
                    let (v, k) = (vals[i], s[i]);
                    let a = if k { v } else { T::HI };
                    let b = if k { v } else { T::LO };
                    lo = if a < lo { a } else { lo };
                    hi = if b > hi { b } else { hi };
                }
            }
        }
        return (lo, hi);
    }
    let mut lanes_lo = [T::HI; LANES];
    let mut lanes_hi = [T::LO; LANES];
    let chunks = vals.chunks_exact(LANES);
    let tail = chunks.remainder();
    let whole = vals.len() - tail.len();
    match sel {
        None => {
            for vc in chunks {
                for k in 0..LANES {
                    let v = vc[k];
                    lanes_lo[k] = if v < lanes_lo[k] { v } else { lanes_lo[k] };
                    lanes_hi[k] = if v > lanes_hi[k] { v } else { lanes_hi[k] };
                }
            }
        }
        Some(s) => {
            for (vc, sc) in chunks.zip(s.chunks_exact(LANES)) {
                for k in 0..LANES {
                    let a = T::pick(sc[k], vc[k], T::HI);
                    let b = T::pick(sc[k], vc[k], T::LO);
                    lanes_lo[k] = if a < lanes_lo[k] { a } else { lanes_lo[k] };
                    lanes_hi[k] = if b > lanes_hi[k] { b } else { lanes_hi[k] };
                }
            }
        }
    }
    let (mut lo, mut hi) = (T::HI, T::LO);
    for (i, &v) in tail.iter().enumerate() {
        if sel.is_none_or(|s| s[whole + i]) {
            if v < lo {
                lo = v;
            }
            if v > hi {
                hi = v;
            }
        }
    }
    for k in 0..LANES {
        if lanes_lo[k] < lo {
            lo = lanes_lo[k];
        }
        if lanes_hi[k] > hi {
            hi = lanes_hi[k];
        }
    }
    (lo, hi)
}

/// Adds the selected cells of `vals` (all without `sel`) to `sum` at once when no addition
/// of the sequential sum can overflow (narrow integers: the sum type has room for the
/// block; floats: the block's magnitude bound stays under half of `f64::MAX`); `false`
/// (nothing added) otherwise. Float cells are added in order, so the result rounds as the
/// sequential sum.
#[inline]
pub(super) fn block_sum<T: Fast>(sum: &mut T::Acc, vals: &[T], sel: Option<&[bool]>) -> bool {
    if T::NARROW {
        // |block sum| <= 2^16 * 2^32 = 2^48.
        let part = match sel {
            None => vals.iter().fold(T::Acc::ZERO, |p, &v| p.wrapping(v.widen())),
            Some(s) => vals
                .iter()
                .zip(s)
                .fold(T::Acc::ZERO, |p, (&v, &s)| p.wrapping(T::pick(s, v, T::default()).widen())),
        };
        return sum.add_block(part);
    }
    if T::FLOAT {
        // The largest selected magnitude, by lanes (exact whatever the order).
        let mut lanes = [0f64; LANES];
        let chunks = vals.chunks_exact(LANES);
        let tail = chunks.remainder();
        match sel {
            None => chunks.for_each(|vc| {
                for k in 0..LANES {
                    let m = vc[k].mag();
                    lanes[k] = if m > lanes[k] { m } else { lanes[k] };
                }
            }),
            Some(s) => chunks.zip(s.chunks_exact(LANES)).for_each(|(vc, sc)| {
                for k in 0..LANES {
                    let m = T::pick(sc[k], vc[k], T::default()).mag();
                    lanes[k] = if m > lanes[k] { m } else { lanes[k] };
                }
            }),
        }
        let at = vals.len() - tail.len();
        let mut bound = lanes.iter().fold(0f64, |b, &m| if m > b { m } else { b });
        for (i, &v) in tail.iter().enumerate() {
            if sel.is_none_or(|s| s[at + i]) && v.mag() > bound {
                bound = v.mag();
            }
        }
        // Infinities fail the bound (and take the per-cell path); NaN values add as
        // `safe_add` adds them.
        let start = sum.magnitude();
        let room = (start + bound * vals.len() as f64).partial_cmp(&(f64::MAX / 2.0));
        if !matches!(room, Some(Ordering::Less | Ordering::Equal)) {
            return false;
        }
        match sel {
            None => vals.iter().for_each(|&v| sum.plain_add(v.widen())),
            Some(s) => {
                // The selected values are gathered without branches (each is written, the
                // next slot taken only when selected), then added in order: the addition
                // chain holds only them.
                let mut picked = [T::default(); COMPACT];
                for (vc, sc) in vals.chunks(COMPACT).zip(s.chunks(COMPACT)) {
                    let mut k = 0;
                    for (&v, &s) in vc.iter().zip(sc) {
                        picked[k] = v;
                        k += usize::from(s);
                    }
                    picked[..k].iter().for_each(|&v| sum.plain_add(v.widen()));
                }
            }
        }
        return true;
    }
    false
}

/// Strings (min/max bytewise) and values only counted.
pub(super) fn scan_bytes(
    field: &AggField,
    acc: &mut FieldAcc,
    view: &ColumnView<'_>,
    cells: impl Iterator<Item = usize>,
) {
    let want = field.want.min_max;
    let size = field.cell_size();
    let data = view.data;
    let cell = |c: usize| -> Option<&[u8]> {
        match view.offsets {
            Some(o) => {
                let s = usize::try_from(*o.get(c)?).ok()?;
                let e = match o.get(c + 1) {
                    Some(&e) => usize::try_from(e).ok()?,
                    None => data.len(),
                };
                data.get(s..e)
            }
            None => data.get(c * size..(c + 1) * size),
        }
    };
    let mut min: Option<&[u8]> = None;
    let mut max: Option<&[u8]> = None;
    let (mut values, mut nulls) = (0u64, 0u64);
    for c in cells {
        if view.validity.is_some_and(|v| v.get(c).is_none_or(|&b| b == 0)) {
            nulls += 1;
            continue;
        }
        values += 1;
        if want && let Some(v) = cell(c) {
            if min.is_none_or(|m| v.cmp(m) == Ordering::Less) {
                min = Some(v);
            }
            if max.is_none_or(|m| v.cmp(m) == Ordering::Greater) {
                max = Some(v);
            }
        }
    }
    acc.values += values;
    acc.nulls += nulls;
    if let Some(m) = min {
        acc.offer_min(field, m);
    }
    if let Some(m) = max {
        acc.offer_max(field, m);
    }
}
