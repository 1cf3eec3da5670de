//! Evaluation over columns, block at a time, as `QueryCondition::apply_sparse` (and
//! `apply_dense`) evaluate a tree in libtiledb 2.30:
//!
//! * AND children multiply into the bitmap; OR children are evaluated into a fresh zeroed
//!   bitmap with `max` and the result multiplies into the bitmap; an AND below an OR gets a
//!   fresh bitmap of ones;
//! * a comparison on a nullable field fails on null cells (`cmp && valid`), `ALWAYS_TRUE`
//!   included; a null test (`EQ`/`NE` with a null value) tests validity only;
//! * comparisons are the kernels' (see `kernel`);
//! * a field missing from the columns (a fragment written before the attribute was added)
//!   zeroes the bitmap being combined into, as libtiledb does.
//!
//! The tree is prepared once per call ([`Prepared`]: every column looked up and checked,
//! every value decoded), then run over blocks of [`BLOCK`] cells, so each block's bitmaps
//! and cells stay in the first-level cache; scratch bitmaps (one per tree level) are
//! allocated once per call.

use tessera_fragment::ConditionOp;

use super::ColumnView;
use super::ast::{Leaf, Node};
use super::kernel::Kernel;
use crate::{Error, Result};

/// Cells evaluated at once.
pub(crate) const BLOCK: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Comb {
    And,
    Or,
}

fn err(message: String) -> Error {
    Error::Condition { column: None, message }
}

/// What a value node does to the cells of a block.
pub(crate) enum Test<'a> {
    /// A comparison or set test (failing on null cells).
    Kernel(Kernel<'a>),
    /// A constant (`ALWAYS_TRUE`, still failing on null cells, or `ALWAYS_FALSE`).
    Always(bool),
    /// A null test: true where validity is `want_valid`.
    Null { want_valid: bool },
}

/// A condition tree ready to run over the cells of its columns.
pub(crate) enum Prepared<'a> {
    Leaf {
        test: Test<'a>,
        validity: Option<&'a [u8]>,
    },
    /// The field is missing from the columns.
    Missing,
    And(Vec<Prepared<'a>>),
    Or(Vec<Prepared<'a>>),
}

impl<'a> Prepared<'a> {
    /// Prepares `node` over the first `n` cells of the columns.
    ///
    /// # Errors
    /// [`Error::Condition`] when a column does not match its field.
    pub(crate) fn new<'c: 'a>(
        node: &'a Node,
        columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
        n: usize,
    ) -> Result<Self> {
        Ok(match node {
            Node::Leaf(l) => match columns(&l.field) {
                None => Prepared::Missing,
                Some(col) => prepare_leaf(l, col, n)?,
            },
            Node::And(cs) => Prepared::And(
                cs.iter().map(|c| Prepared::new(c, columns, n)).collect::<Result<_>>()?,
            ),
            Node::Or(cs) => Prepared::Or(
                cs.iter().map(|c| Prepared::new(c, columns, n)).collect::<Result<_>>()?,
            ),
        })
    }

    /// Tree levels below this node that need a scratch bitmap.
    fn depth(&self) -> usize {
        match self {
            Prepared::Leaf { .. } | Prepared::Missing => 1,
            Prepared::And(cs) | Prepared::Or(cs) => {
                1 + cs.iter().map(Prepared::depth).max().unwrap_or(0)
            }
        }
    }

    /// ANDs the condition over cells `start..start + acc.len()` into `acc`, block by block.
    ///
    /// # Errors
    /// [`Error::Condition`] for bad var-sized offsets.
    pub(crate) fn and_into(&self, start: usize, acc: &mut [bool]) -> Result<()> {
        let mut scratch = vec![[false; BLOCK]; self.depth()];
        for (b, block) in acc.chunks_mut(BLOCK).enumerate() {
            self.run(Comb::And, start + b * BLOCK, block, &mut scratch)?;
        }
        Ok(())
    }

    fn run(
        &self,
        comb: Comb,
        start: usize,
        acc: &mut [bool],
        scratch: &mut [[bool; BLOCK]],
    ) -> Result<()> {
        let n = acc.len();
        let Some((mine, rest)) = scratch.split_first_mut() else {
            return Err(err("condition scratch exhausted".into()));
        };
        let tmp = &mut mine[..n];
        match self {
            Prepared::Missing => acc.fill(false),
            Prepared::Leaf { test, validity } => {
                let valid = validity.map(|v| &v[start..start + n]);
                match test {
                    Test::Null { want_valid } => match valid {
                        Some(v) => {
                            let w = *want_valid;
                            combine_with(comb, acc, v.iter().map(|&b| (b != 0) == w));
                        }
                        None => combine_const(comb, acc, *want_valid),
                    },
                    Test::Always(c) => match (c, valid) {
                        (true, Some(v)) => combine_with(comb, acc, v.iter().map(|&b| b != 0)),
                        (c, _) => combine_const(comb, acc, *c),
                    },
                    Test::Kernel(k) => {
                        k.run(start, tmp)?;
                        match valid {
                            Some(v) => combine_with(
                                comb,
                                acc,
                                tmp.iter().zip(v).map(|(&r, &b)| r & (b != 0)),
                            ),
                            None => combine_with(comb, acc, tmp.iter().copied()),
                        }
                    }
                }
            }
            Prepared::And(cs) => match comb {
                Comb::And => {
                    for c in cs {
                        c.run(Comb::And, start, acc, rest)?;
                    }
                }
                Comb::Or => {
                    tmp.fill(true);
                    for c in cs {
                        c.run(Comb::And, start, tmp, rest)?;
                    }
                    combine_with(Comb::Or, acc, tmp.iter().copied());
                }
            },
            Prepared::Or(cs) => {
                tmp.fill(false);
                for c in cs {
                    c.run(Comb::Or, start, tmp, rest)?;
                }
                // libtiledb multiplies, whatever the combination it is called with.
                combine_with(Comb::And, acc, tmp.iter().copied());
            }
        }
        Ok(())
    }
}

#[inline(always)]
fn combine_with(comb: Comb, acc: &mut [bool], r: impl Iterator<Item = bool>) {
    match comb {
        Comb::And => acc.iter_mut().zip(r).for_each(|(a, b)| *a &= b),
        Comb::Or => acc.iter_mut().zip(r).for_each(|(a, b)| *a |= b),
    }
}

fn combine_const(comb: Comb, acc: &mut [bool], c: bool) {
    match (comb, c) {
        (Comb::And, false) => acc.fill(false),
        (Comb::Or, true) => acc.fill(true),
        _ => {}
    }
}

fn prepare_leaf<'a>(l: &'a Leaf, col: ColumnView<'a>, n: usize) -> Result<Prepared<'a>> {
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
    let test = if l.null_test && matches!(l.op, ConditionOp::Eq | ConditionOp::Ne) {
        Test::Null { want_valid: l.op == ConditionOp::Ne }
    } else {
        match l.op {
            ConditionOp::AlwaysFalse => Test::Always(false),
            ConditionOp::AlwaysTrue => Test::Always(true),
            _ => Test::Kernel(Kernel::new(l, &col, n)?),
        }
    };
    Ok(Prepared::Leaf { test, validity })
}

/// ANDs the value of `node` on the first `acc.len()` cells of the columns into `acc`.
pub(crate) fn eval_and<'c>(
    node: &Node,
    columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
    acc: &mut [bool],
) -> Result<()> {
    Prepared::new(node, columns, acc.len())?.and_into(0, acc)
}
