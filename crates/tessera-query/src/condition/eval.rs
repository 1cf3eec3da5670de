//! Evaluation over result columns, as `QueryCondition::apply_sparse` (and `apply_dense`)
//! evaluate a tree in libtiledb 2.30:
//!
//! * AND children multiply into the bitmap; OR children are evaluated into a fresh zeroed
//!   bitmap with `max` and the result multiplies into the bitmap; an AND below an OR gets a
//!   fresh bitmap of ones;
//! * a comparison on a nullable field fails on null cells (`cmp && valid`), `ALWAYS_TRUE`
//!   included; a null test (`EQ`/`NE` with a null value) tests validity only;
//! * numbers compare with C++ operators (`NaN` fails everything but `!=`), `IN`/`NOT_IN`
//!   compare cell **bytes** with the members (so `NaN in [NaN]` holds and `-0.0` is not in
//!   `[0.0]`), strings compare bytewise with the shorter prefix first, fixed-size `CHAR`
//!   compares the first byte of the cell as a signed `char`;
//! * a field missing from the columns (a fragment written before the attribute was added)
//!   zeroes the bitmap being combined into, as libtiledb does.
//!
//! Each value node runs one loop over its column's slices (the operator is chosen outside
//! the loop).

use std::collections::HashSet;

use tessera_fragment::ConditionOp;
use tessera_types::Primitive;

use super::ColumnView;
use super::ast::{Kind, Leaf, Node};
use crate::{Error, Result};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Comb {
    And,
    Or,
}

fn err(message: String) -> Error {
    Error::Condition { column: None, message }
}

/// ANDs the value of `node` on the first `acc.len()` cells of the columns into `acc`.
pub(crate) fn eval_and<'c>(
    node: &Node,
    columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
    acc: &mut [bool],
) -> Result<()> {
    eval(node, columns, Comb::And, acc)
}

fn eval<'c>(
    node: &Node,
    columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
    comb: Comb,
    acc: &mut [bool],
) -> Result<()> {
    let n = acc.len();
    match node {
        Node::Leaf(l) => {
            let Some(col) = columns(&l.field) else {
                acc.fill(false);
                return Ok(());
            };
            let mut r = vec![false; n];
            leaf(l, &col, &mut r)?;
            match comb {
                Comb::And => acc.iter_mut().zip(&r).for_each(|(a, &b)| *a &= b),
                Comb::Or => acc.iter_mut().zip(&r).for_each(|(a, &b)| *a |= b),
            }
        }
        Node::And(cs) => match comb {
            Comb::And => {
                for c in cs {
                    eval(c, columns, Comb::And, acc)?;
                }
            }
            Comb::Or => {
                let mut tmp = vec![true; n];
                for c in cs {
                    eval(c, columns, Comb::And, &mut tmp)?;
                }
                acc.iter_mut().zip(&tmp).for_each(|(a, &b)| *a |= b);
            }
        },
        Node::Or(cs) => {
            let mut tmp = vec![false; n];
            for c in cs {
                eval(c, columns, Comb::Or, &mut tmp)?;
            }
            // libtiledb multiplies, whatever the combination it is called with.
            acc.iter_mut().zip(&tmp).for_each(|(a, &b)| *a &= b);
        }
    }
    Ok(())
}

/// Evaluates one value node on the first `r.len()` cells of `col`.
pub(crate) fn leaf(l: &Leaf, col: &ColumnView<'_>, r: &mut [bool]) -> Result<()> {
    let n = r.len();
    if col.datatype != l.datatype || col.cell_val_num != l.cell_val_num {
        return Err(err(format!(
            "column '{}' holds {} with cell_val_num {}, the condition expects {} with {}",
            l.field, col.datatype, col.cell_val_num, l.datatype, l.cell_val_num
        )));
    }
    let validity = match col.validity {
        Some(v) if v.len() < n => {
            return Err(err(format!(
                "column '{}' has {} validity bytes for {n} cells",
                l.field,
                v.len()
            )));
        }
        Some(v) => Some(&v[..n]),
        None => None,
    };
    if l.null_test && matches!(l.op, ConditionOp::Eq | ConditionOp::Ne) {
        let want_valid = l.op == ConditionOp::Ne;
        match validity {
            Some(v) => r.iter_mut().zip(v).for_each(|(o, &b)| *o = (b != 0) == want_valid),
            None => r.fill(want_valid),
        }
        return Ok(());
    }
    match l.op {
        ConditionOp::AlwaysFalse => r.fill(false),
        ConditionOp::AlwaysTrue => r.fill(true),
        _ => compare(l, col, r)?,
    }
    if let Some(v) = validity {
        r.iter_mut().zip(v).for_each(|(o, &b)| *o &= b != 0);
    }
    Ok(())
}

/// Sets `r[i] = cell(i) OP value` with `OP` chosen once, outside the loop.
macro_rules! per_op {
    ($op:expr, $r:expr, $cells:expr, $v:expr) => {{
        let (r, v) = ($r, $v);
        match $op {
            ConditionOp::Lt => r.iter_mut().zip($cells).for_each(|(o, x)| *o = x < v),
            ConditionOp::Le => r.iter_mut().zip($cells).for_each(|(o, x)| *o = x <= v),
            ConditionOp::Gt => r.iter_mut().zip($cells).for_each(|(o, x)| *o = x > v),
            ConditionOp::Ge => r.iter_mut().zip($cells).for_each(|(o, x)| *o = x >= v),
            ConditionOp::Eq => r.iter_mut().zip($cells).for_each(|(o, x)| *o = x == v),
            ConditionOp::Ne => r.iter_mut().zip($cells).for_each(|(o, x)| *o = x != v),
            _ => r.fill(false),
        }
    }};
}

/// A set membership test over byte strings.
enum Members<'a> {
    Few(Vec<&'a [u8]>),
    Many(HashSet<&'a [u8]>),
}

impl<'a> Members<'a> {
    fn new(l: &'a Leaf) -> Self {
        let v: Vec<&[u8]> = l.member_bytes().collect();
        if v.len() > 16 { Members::Many(v.into_iter().collect()) } else { Members::Few(v) }
    }

    #[inline]
    fn contains(&self, cell: &[u8]) -> bool {
        match self {
            Members::Few(v) => v.contains(&cell),
            Members::Many(s) => s.contains(cell),
        }
    }
}

fn set_test<'c>(l: &Leaf, cells: impl Iterator<Item = &'c [u8]>, r: &mut [bool]) {
    let members = Members::new(l);
    let want = l.op == ConditionOp::In;
    r.iter_mut().zip(cells).for_each(|(o, c)| *o = members.contains(c) == want);
}

fn fixed_cells<'c>(
    l: &Leaf,
    col: &ColumnView<'c>,
    n: usize,
) -> Result<std::slice::ChunksExact<'c, u8>> {
    let size = l.datatype.size() * l.cell_val_num as usize;
    if size == 0 || col.data.len() < n * size {
        return Err(err(format!(
            "column '{}' has {} bytes, too few for {n} cells of {size} bytes",
            l.field,
            col.data.len()
        )));
    }
    Ok(col.data[..n * size].chunks_exact(size))
}

fn numeric<T: Primitive>(l: &Leaf, col: &ColumnView<'_>, r: &mut [bool]) -> Result<()> {
    let cells = fixed_cells(l, col, r.len())?;
    if l.op.is_set() {
        set_test(l, cells, r);
        return Ok(());
    }
    if l.value.len() < T::SIZE {
        return Err(err(format!(
            "the value compared with '{}' has {} bytes",
            l.field,
            l.value.len()
        )));
    }
    let v = T::read_le(&l.value);
    per_op!(l.op, r, cells.map(T::read_le), v);
    Ok(())
}

fn compare(l: &Leaf, col: &ColumnView<'_>, r: &mut [bool]) -> Result<()> {
    let n = r.len();
    match l.kind {
        Kind::I8 => numeric::<i8>(l, col, r),
        Kind::U8 => numeric::<u8>(l, col, r),
        Kind::I16 => numeric::<i16>(l, col, r),
        Kind::U16 => numeric::<u16>(l, col, r),
        Kind::I32 => numeric::<i32>(l, col, r),
        Kind::U32 => numeric::<u32>(l, col, r),
        Kind::I64 => numeric::<i64>(l, col, r),
        Kind::U64 => numeric::<u64>(l, col, r),
        Kind::F32 => numeric::<f32>(l, col, r),
        Kind::F64 => numeric::<f64>(l, col, r),
        Kind::CharFirst => {
            let cells = fixed_cells(l, col, n)?;
            if l.op.is_set() {
                set_test(l, cells, r);
            } else {
                // libtiledb reads one `char` of the cell and of the value (an empty value
                // is the terminating NUL of "").
                let v = l.value.first().map_or(0, |&b| b as i8);
                per_op!(l.op, r, cells.map(|c| c[0] as i8), v);
            }
            Ok(())
        }
        Kind::Bytes => {
            let v: &[u8] = &l.value;
            match col.offsets {
                Some(offsets) => {
                    if offsets.len() < n {
                        return Err(err(format!(
                            "column '{}' has {} offsets for {n} cells",
                            l.field,
                            offsets.len()
                        )));
                    }
                    let len = col.data.len() as u64;
                    let ends = offsets.iter().skip(1).copied().chain(std::iter::once(len));
                    let mut bad = false;
                    let cells = offsets.iter().zip(ends).take(n).map(|(&s, e)| {
                        if s <= e && e <= len {
                            &col.data[s as usize..e as usize]
                        } else {
                            bad = true;
                            &[][..]
                        }
                    });
                    if l.op.is_set() {
                        set_test(l, cells, r);
                    } else {
                        per_op!(l.op, r, cells, v);
                    }
                    if bad {
                        return Err(err(format!("column '{}' has invalid offsets", l.field)));
                    }
                }
                None => {
                    let cells = fixed_cells(l, col, n)?;
                    if l.op.is_set() {
                        set_test(l, cells, r);
                    } else {
                        per_op!(l.op, r, cells, v);
                    }
                }
            }
            Ok(())
        }
        Kind::NullOnly => Err(err(format!("field '{}' cannot be compared", l.field))),
    }
}
