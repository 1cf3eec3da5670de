//! Sums as libtiledb adds them: the sum type of each datatype, additions checked for
//! overflow, and the numeric view of a field's values.

use super::*;

/// The numeric interpretation of a field's values (sums, numeric min/max).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Num {
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
}

impl Num {
    pub(super) fn of(dt: Datatype) -> Option<Num> {
        use Datatype as D;
        Some(match dt {
            D::Int8 | D::Char => Num::I8,
            D::UInt8 | D::Bool => Num::U8,
            D::Int16 => Num::I16,
            D::UInt16 => Num::U16,
            D::Int32 => Num::I32,
            D::UInt32 => Num::U32,
            D::Int64 => Num::I64,
            D::UInt64 => Num::U64,
            D::Float32 => Num::F32,
            D::Float64 => Num::F64,
            d if d.is_datetime() || d.is_time() => Num::I64,
            _ => return None,
        })
    }

    pub(super) fn zero(self) -> Sum {
        match self {
            Num::I8 | Num::I16 | Num::I32 | Num::I64 => Sum::I64(0),
            Num::U8 | Num::U16 | Num::U32 | Num::U64 => Sum::U64(0),
            Num::F32 | Num::F64 => Sum::F64(0.0),
        }
    }
}

/// A running sum in the attribute's sum type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sum {
    /// Signed integers, `char`, datetimes, times.
    I64(i64),
    /// Unsigned integers, `bool`.
    U64(u64),
    /// Floats.
    F64(f64),
}

/// Adding into a sum type with libtiledb's `SafeSum` rule: `false` on overflow, the sum then
/// saturated at the type's maximum (or lowest value, for a negative addition).
pub(super) trait SumAcc: Copy {
    /// Zero.
    const ZERO: Self;
    fn safe_add(&mut self, v: Self) -> bool;
    /// `self + v` where no overflow can happen (a narrow block's sum).
    fn wrapping(self, v: Self) -> Self;
    /// Adds a block's sum when the running sum cannot overflow within the block (narrow
    /// integers: its magnitude has 2^48 of room); `false` (nothing added) otherwise.
    fn add_block(&mut self, part: Self) -> bool;
    /// `|self|` as an `f64`.
    fn magnitude(self) -> f64;
    /// `self += v` without the overflow test.
    fn plain_add(&mut self, v: Self);
}

impl SumAcc for i64 {
    const ZERO: i64 = 0;
    #[inline(always)]
    fn wrapping(self, v: i64) -> i64 {
        self.wrapping_add(v)
    }
    fn add_block(&mut self, part: i64) -> bool {
        if self.unsigned_abs() > (i64::MAX as u64) - (1 << 48) {
            return false;
        }
        *self += part;
        true
    }
    fn magnitude(self) -> f64 {
        self.unsigned_abs() as f64
    }
    fn plain_add(&mut self, v: i64) {
        *self = self.wrapping_add(v);
    }
    #[inline]
    fn safe_add(&mut self, v: i64) -> bool {
        match self.checked_add(v) {
            Some(s) => {
                *self = s;
                true
            }
            None => {
                *self = if v < 0 { i64::MIN } else { i64::MAX };
                false
            }
        }
    }
}

impl SumAcc for u64 {
    const ZERO: u64 = 0;
    #[inline(always)]
    fn wrapping(self, v: u64) -> u64 {
        self.wrapping_add(v)
    }
    fn add_block(&mut self, part: u64) -> bool {
        if *self > u64::MAX - (1 << 48) {
            return false;
        }
        *self += part;
        true
    }
    fn magnitude(self) -> f64 {
        self as f64
    }
    fn plain_add(&mut self, v: u64) {
        *self = self.wrapping_add(v);
    }
    #[inline]
    fn safe_add(&mut self, v: u64) -> bool {
        match self.checked_add(v) {
            Some(s) => {
                *self = s;
                true
            }
            None => {
                *self = u64::MAX;
                false
            }
        }
    }
}

impl SumAcc for f64 {
    const ZERO: f64 = 0.0;
    #[inline(always)]
    fn wrapping(self, v: f64) -> f64 {
        self + v
    }
    fn add_block(&mut self, _: f64) -> bool {
        false
    }
    fn magnitude(self) -> f64 {
        self.abs()
    }
    #[inline(always)]
    fn plain_add(&mut self, v: f64) {
        *self += v;
    }
    #[inline]
    fn safe_add(&mut self, v: f64) -> bool {
        if (*self < 0.0) == (v < 0.0) && self.abs() > f64::MAX - v.abs() {
            *self = if v < 0.0 { f64::MIN } else { f64::MAX };
            return false;
        }
        *self += v;
        true
    }
}

/// A numeric type values are aggregated as.
pub(super) trait Value: Primitive {
    type Acc: SumAcc;
    fn widen(self) -> Self::Acc;
    fn load(s: Sum) -> Self::Acc;
    fn store(a: Self::Acc) -> Sum;
}

macro_rules! value_impl {
    ($acc:ty, $var:ident: $($t:ty),*) => {$(
        impl Value for $t {
            type Acc = $acc;
            #[inline]
            fn widen(self) -> $acc {
                self as $acc
            }
            fn load(s: Sum) -> $acc {
                match s {
                    Sum::$var(v) => v,
                    _ => Default::default(),
                }
            }
            fn store(a: $acc) -> Sum {
                Sum::$var(a)
            }
        }
    )*};
}
value_impl!(i64, I64: i8, i16, i32, i64);
value_impl!(u64, U64: u8, u16, u32, u64);
value_impl!(f64, F64: f32, f64);
