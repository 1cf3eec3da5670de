//! Condition kernels: one value node of a condition over a block of cells of one column,
//! per datatype, into a `bool` per cell (a byte mask the compiler vectorises).
//!
//! A [`Kernel`] is made once per evaluation (the column checked against the field, the
//! value decoded into the field's type, set members turned into bit patterns or a lookup
//! table), then run block after block: each run is one tight loop for one operator and one
//! type, with no per-cell dispatch and no allocation. Strings are compared on the column's
//! offsets and bytes directly.
//!
//! Semantics are libtiledb 2.30's (see the module `condition`): comparisons of numbers are
//! C++'s (`NaN` satisfies only `!=`, `-0.0 == 0.0`), `in` and `not in` compare the cells'
//! **bytes** with the members (done here on same-width unsigned bit patterns, which is the
//! same thing), strings compare bytewise with the shorter prefix first, fixed-size `char`
//! compares the first byte of the cell as a signed `char`.

use std::collections::HashSet;

use tessera_fragment::ConditionOp;
use tessera_types::Primitive;

use super::ColumnView;
use super::ast::{Kind, Leaf};
use crate::{Error, Result};

fn err(message: String) -> Error {
    Error::Condition { column: None, message }
}

/// A number type cells compare as, with the unsigned type of the same width whose bit
/// patterns `in`/`not in` compare.
pub(crate) trait Num: Primitive + bytemuck::Pod {
    /// The same-width unsigned type.
    type Bits: Copy + Ord + Eq + std::hash::Hash + Default + bytemuck::Pod + Send + Sync + 'static;
    /// The bit pattern of the little-endian bytes `b` (at least the width).
    fn bits(b: &[u8]) -> Self::Bits;
}

macro_rules! num_impl {
    ($($t:ty => $b:ty),*) => {$(
        impl Num for $t {
            type Bits = $b;
            #[inline(always)]
            fn bits(b: &[u8]) -> $b {
                <$b>::read_le(b)
            }
        }
    )*};
}
num_impl!(i8 => u8, u8 => u8, i16 => u16, u16 => u16, i32 => u32, u32 => u32, i64 => u64,
          u64 => u64, f32 => u32, f64 => u64);

/// `out[i] = cell(i) OP v` for every cell of a block, `OP` chosen once outside the loop.
macro_rules! per_op {
    ($op:expr, $out:expr, $cells:expr, $v:expr) => {{
        let (out, v) = ($out, $v);
        match $op {
            ConditionOp::Lt => out.iter_mut().zip($cells).for_each(|(o, x)| *o = x < v),
            ConditionOp::Le => out.iter_mut().zip($cells).for_each(|(o, x)| *o = x <= v),
            ConditionOp::Gt => out.iter_mut().zip($cells).for_each(|(o, x)| *o = x > v),
            ConditionOp::Ge => out.iter_mut().zip($cells).for_each(|(o, x)| *o = x >= v),
            ConditionOp::Eq => out.iter_mut().zip($cells).for_each(|(o, x)| *o = x == v),
            ConditionOp::Ne => out.iter_mut().zip($cells).for_each(|(o, x)| *o = x != v),
            _ => out.fill(false),
        }
    }};
}

/// Set members of a fixed-width number, as bit patterns.
pub(crate) enum BitSet<B> {
    /// Few members: one vectorised pass per member.
    Few(Vec<B>),
    /// Many: binary search of the sorted members.
    Many(Vec<B>),
    /// One-byte cells: a table of the 256 patterns.
    Table(Box<[bool; 256]>),
}

/// Members up to which a set is tested by one pass per member.
const FEW_MEMBERS: usize = 12;

/// A byte-string set: a list when small, a hash set when large.
pub(crate) enum ByteSet<'a> {
    Few(Vec<&'a [u8]>),
    Many(HashSet<&'a [u8]>),
}

impl<'a> ByteSet<'a> {
    fn new(l: &'a Leaf) -> Self {
        let v: Vec<&[u8]> = l.member_bytes().collect();
        if v.len() > FEW_MEMBERS { ByteSet::Many(v.into_iter().collect()) } else { ByteSet::Few(v) }
    }

    #[inline]
    fn contains(&self, cell: &[u8]) -> bool {
        match self {
            ByteSet::Few(v) => v.contains(&cell),
            ByteSet::Many(s) => s.contains(cell),
        }
    }
}

/// A comparison (or set test) of one number type.
pub(crate) struct NumKernel<'a, T: Num> {
    data: &'a [u8],
    op: ConditionOp,
    value: T,
    set: Option<BitSet<T::Bits>>,
}

impl<T: Num> NumKernel<'_, T> {
    fn run(&self, start: usize, out: &mut [bool]) {
        let data = &self.data[start * T::SIZE..(start + out.len()) * T::SIZE];
        // Aligned little-endian cells are read in place as `T` (loads the compiler turns into
        // vector loads); others are decoded from their bytes.
        let typed: Option<&[T]> =
            if cfg!(target_endian = "little") { bytemuck::try_cast_slice(data).ok() } else { None };
        let Some(set) = &self.set else {
            match typed {
                Some(vals) => per_op!(self.op, out, vals.iter().copied(), self.value),
                None => {
                    per_op!(self.op, out, data.chunks_exact(T::SIZE).map(T::read_le), self.value)
                }
            }
            return;
        };
        let bits: Option<&[T::Bits]> =
            if cfg!(target_endian = "little") { bytemuck::try_cast_slice(data).ok() } else { None };
        match set {
            BitSet::Few(members) => match bits {
                Some(b) => any_of(out, b, members),
                None => {
                    out.fill(false);
                    for &m in members {
                        out.iter_mut()
                            .zip(data.chunks_exact(T::SIZE).map(T::bits))
                            .for_each(|(o, b)| *o |= b == m);
                    }
                }
            },
            BitSet::Many(sorted) => {
                let cells = data.chunks_exact(T::SIZE).map(T::bits);
                out.iter_mut().zip(cells).for_each(|(o, b)| *o = sorted.binary_search(&b).is_ok());
            }
            BitSet::Table(table) => {
                // One-byte cells: the bit pattern is the byte.
                out.iter_mut().zip(data).for_each(|(o, &b)| *o = table[b as usize]);
            }
        }
        if self.op == ConditionOp::NotIn {
            out.iter_mut().for_each(|o| *o = !*o);
        }
    }
}

/// `out[i] = cells[i]` is one of `members` (at most [`FEW_MEMBERS`]), in one pass over the
/// cells: the members are padded to a fixed count by repeating the first (which changes no
/// answer), so the compiler unrolls the comparisons of a cell and vectorises over the cells,
/// where a pass per member would read the cells and write the mask once per member.
fn any_of<B: Copy + Eq>(out: &mut [bool], cells: &[B], members: &[B]) {
    fn fixed<B: Copy + Eq, const N: usize>(out: &mut [bool], cells: &[B], members: &[B]) {
        let mut m = [members[0]; N];
        m[..members.len()].copy_from_slice(members);
        out.iter_mut()
            .zip(cells)
            .for_each(|(o, &c)| *o = m.iter().fold(false, |a, &x| a | (c == x)));
    }
    match members.len() {
        0 => out.fill(false),
        1 => fixed::<B, 1>(out, cells, members),
        2 => fixed::<B, 2>(out, cells, members),
        3 | 4 => fixed::<B, 4>(out, cells, members),
        5..=8 => fixed::<B, 8>(out, cells, members),
        9..=FEW_MEMBERS => fixed::<B, FEW_MEMBERS>(out, cells, members),
        _ => {
            out.iter_mut().zip(cells).for_each(|(o, c)| *o = members.contains(c));
        }
    }
}

/// The kernel of one value node over one column, ready to run over blocks.
pub(crate) enum Kernel<'a> {
    I8(NumKernelBox<'a, i8>),
    U8(NumKernelBox<'a, u8>),
    I16(NumKernelBox<'a, i16>),
    U16(NumKernelBox<'a, u16>),
    I32(NumKernelBox<'a, i32>),
    U32(NumKernelBox<'a, u32>),
    I64(NumKernelBox<'a, i64>),
    U64(NumKernelBox<'a, u64>),
    F32(NumKernelBox<'a, f32>),
    F64(NumKernelBox<'a, f64>),
    /// Fixed-size `char`: first byte as a signed char (or whole cells for sets).
    CharFirst {
        data: &'a [u8],
        size: usize,
        op: ConditionOp,
        value: i8,
        set: Option<ByteSetBox<'a>>,
    },
    /// Bytewise strings, fixed-size cells of `size` bytes.
    FixedBytes {
        data: &'a [u8],
        size: usize,
        op: ConditionOp,
        value: &'a [u8],
        set: Option<ByteSetBox<'a>>,
    },
    /// Bytewise strings, var-sized cells.
    VarBytes {
        data: &'a [u8],
        offsets: &'a [u64],
        op: ConditionOp,
        value: &'a [u8],
        set: Option<ByteSetBox<'a>>,
        field: &'a str,
    },
}

/// Boxed to keep [`Kernel`] small.
pub(crate) type NumKernelBox<'a, T> = Box<NumKernel<'a, T>>;
/// Boxed to keep [`Kernel`] small.
pub(crate) type ByteSetBox<'a> = Box<ByteSet<'a>>;

fn num_kernel<'a, T: Num>(l: &'a Leaf, data: &'a [u8]) -> Result<NumKernelBox<'a, T>> {
    let set = if l.op.is_set() {
        let mut bits: Vec<T::Bits> = Vec::with_capacity(l.members.len());
        for m in l.member_bytes() {
            // A member of another width is never a cell's bytes.
            if m.len() == T::SIZE {
                bits.push(T::bits(m));
            }
        }
        Some(if T::SIZE == 1 {
            let mut table = Box::new([false; 256]);
            for m in l.member_bytes().filter(|m| m.len() == 1) {
                table[m[0] as usize] = true;
            }
            BitSet::Table(table)
        } else if bits.len() <= FEW_MEMBERS {
            BitSet::Few(bits)
        } else {
            bits.sort_unstable();
            bits.dedup();
            BitSet::Many(bits)
        })
    } else {
        if l.value.len() < T::SIZE {
            return Err(err(format!(
                "the value compared with '{}' has {} bytes",
                l.field,
                l.value.len()
            )));
        }
        None
    };
    let value = if set.is_none() { T::read_le(&l.value) } else { T::default() };
    Ok(Box::new(NumKernel { data, op: l.op, value, set }))
}

impl<'a> Kernel<'a> {
    /// The kernel of comparison (or set test) `l` over the first `n` cells of `col`.
    ///
    /// # Errors
    /// [`Error::Condition`] when the column does not hold the field's cells (datatype,
    /// cell size, too few cells or offsets) or the value does not have the field's width.
    pub(crate) fn new(l: &'a Leaf, col: &ColumnView<'a>, n: usize) -> Result<Kernel<'a>> {
        let fixed = |size: usize| -> Result<&'a [u8]> {
            if size == 0 || col.data.len() < n * size {
                return Err(err(format!(
                    "column '{}' has {} bytes, too few for {n} cells of {size} bytes",
                    l.field,
                    col.data.len()
                )));
            }
            Ok(&col.data[..n * size])
        };
        let cell_size = l.datatype.size() * l.cell_val_num as usize;
        let byte_set = || l.op.is_set().then(|| Box::new(ByteSet::new(l)));
        Ok(match l.kind {
            Kind::I8 => Kernel::I8(num_kernel(l, fixed(1)?)?),
            Kind::U8 => Kernel::U8(num_kernel(l, fixed(1)?)?),
            Kind::I16 => Kernel::I16(num_kernel(l, fixed(2)?)?),
            Kind::U16 => Kernel::U16(num_kernel(l, fixed(2)?)?),
            Kind::I32 => Kernel::I32(num_kernel(l, fixed(4)?)?),
            Kind::U32 => Kernel::U32(num_kernel(l, fixed(4)?)?),
            Kind::I64 => Kernel::I64(num_kernel(l, fixed(8)?)?),
            Kind::U64 => Kernel::U64(num_kernel(l, fixed(8)?)?),
            Kind::F32 => Kernel::F32(num_kernel(l, fixed(4)?)?),
            Kind::F64 => Kernel::F64(num_kernel(l, fixed(8)?)?),
            Kind::CharFirst => Kernel::CharFirst {
                data: fixed(cell_size)?,
                size: cell_size,
                op: l.op,
                // libtiledb reads one `char` of the value (an empty value is the
                // terminating NUL of "").
                value: l.value.first().map_or(0, |&b| b as i8),
                set: byte_set(),
            },
            Kind::Bytes => match col.offsets {
                Some(offsets) => {
                    if offsets.len() < n {
                        return Err(err(format!(
                            "column '{}' has {} offsets for {n} cells",
                            l.field,
                            offsets.len()
                        )));
                    }
                    Kernel::VarBytes {
                        data: col.data,
                        offsets,
                        op: l.op,
                        value: &l.value,
                        set: byte_set(),
                        field: &l.field,
                    }
                }
                None => Kernel::FixedBytes {
                    data: fixed(cell_size)?,
                    size: cell_size,
                    op: l.op,
                    value: &l.value,
                    set: byte_set(),
                },
            },
            Kind::NullOnly => {
                return Err(err(format!("field '{}' cannot be compared", l.field)));
            }
        })
    }

    /// `out[i]` = whether cell `start + i` satisfies the comparison (validity aside).
    ///
    /// # Errors
    /// [`Error::Condition`] for var-sized cells whose offsets are out of order or bounds.
    pub(crate) fn run(&self, start: usize, out: &mut [bool]) -> Result<()> {
        match self {
            Kernel::I8(k) => k.run(start, out),
            Kernel::U8(k) => k.run(start, out),
            Kernel::I16(k) => k.run(start, out),
            Kernel::U16(k) => k.run(start, out),
            Kernel::I32(k) => k.run(start, out),
            Kernel::U32(k) => k.run(start, out),
            Kernel::I64(k) => k.run(start, out),
            Kernel::U64(k) => k.run(start, out),
            Kernel::F32(k) => k.run(start, out),
            Kernel::F64(k) => k.run(start, out),
            Kernel::CharFirst { data, size, op, value, set } => {
                let cells = data[start * size..(start + out.len()) * size].chunks_exact(*size);
                match set {
                    Some(set) => set_test(*op, set, cells, out),
                    None => per_op!(*op, out, cells.map(|c| c[0] as i8), *value),
                }
            }
            Kernel::FixedBytes { data, size, op, value, set } => {
                let cells = data[start * size..(start + out.len()) * size].chunks_exact(*size);
                match set {
                    Some(set) => set_test(*op, set, cells, out),
                    None => per_op!(*op, out, cells, *value),
                }
            }
            Kernel::VarBytes { data, offsets, op, value, set, field } => {
                let len = data.len() as u64;
                let n = out.len();
                let starts = &offsets[start..start + n];
                let next = offsets.get(start + n).copied().unwrap_or(len);
                let ends = starts[1..].iter().copied().chain(std::iter::once(next));
                let mut bad = false;
                let cells = starts.iter().zip(ends).map(|(&s, e)| {
                    if s <= e && e <= len {
                        &data[s as usize..e as usize]
                    } else {
                        bad = true;
                        &[][..]
                    }
                });
                match set {
                    Some(set) => set_test(*op, set, cells, out),
                    None => per_op!(*op, out, cells, *value),
                }
                if bad {
                    return Err(err(format!("column '{field}' has invalid offsets")));
                }
            }
        }
        Ok(())
    }
}

fn set_test<'c>(
    op: ConditionOp,
    set: &ByteSet<'_>,
    cells: impl Iterator<Item = &'c [u8]>,
    out: &mut [bool],
) {
    let want = op == ConditionOp::In;
    out.iter_mut().zip(cells).for_each(|(o, c)| *o = set.contains(c) == want);
}
