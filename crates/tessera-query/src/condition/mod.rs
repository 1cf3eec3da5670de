//! Query conditions: the `--where` text, resolved against a schema with libtiledb 2.30's
//! semantics; evaluation over result columns; tile pruning from fragment metadata; and the
//! delete conditions of `.del` commits.
//!
//! ```
//! use tessera_query::Column;
//! use tessera_query::condition::QueryCondition;
//! use tessera_schema::{ArraySchema, Attribute, Dimension};
//! use tessera_types::{ArrayType, Datatype};
//!
//! let schema = ArraySchema::builder(ArrayType::Sparse)
//!     .dimension(Dimension::new("d", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
//!     .attribute(Attribute::new("a", Datatype::Int32).nullable(true))
//!     .build()?;
//! let cond = QueryCondition::parse("not (a > 2) or a is null", &schema, &[])?;
//! // `not` negates the operator, as in libtiledb.
//! assert_eq!(cond.to_string(), "a <= 2 or a is null");
//!
//! let mut a = Column::new("a", Datatype::Int32, 1, true);
//! for v in [1i32, 5, 0] {
//!     a.data.extend_from_slice(&v.to_le_bytes());
//! }
//! a.validity = Some(vec![1, 1, 0]);
//! let mut keep = Vec::new();
//! cond.evaluate(&|name: &str| (name == "a").then_some(&a), 3, &mut keep)?;
//! assert_eq!(keep, [true, false, true]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Semantics (checked against libtiledb 2.30.0 on small arrays; see the tests):
//!
//! * a comparison, `in` or `not in` on a null cell is false (`!=` and `not in` too);
//!   `is null` / `is not null` test validity, and on a field that is not nullable become
//!   always false / always true;
//! * `not` is pushed down to the operators (`<` ↔ `>=`, `==` ↔ `!=`, `in` ↔ `not in`,
//!   `is null` ↔ `is not null`, `and` ↔ `or`), so `not (a > 0)` is `a <= 0` and fails
//!   on null and `NaN` cells;
//! * numbers compare as C++ does: `NaN` satisfies only `!=`; `in`/`not in` compare the
//!   cell's bytes, so `NaN in [nan]` holds and `-0.0` is not in `[0.0]`, while `-0.0 == 0`;
//! * strings (`string_ascii`, `string_utf8`, var-sized `char`) compare bytewise, a prefix
//!   first; fixed-size `char` cells compare **only their first byte, as a signed char**
//!   (`c3 == 'abc'` holds for every cell starting with `a`), while `in` compares whole cells
//!   and needs members of exactly the cell's size;
//! * on an enumeration attribute values are labels, mapped to codes; a label the
//!   enumeration lacks makes `!=` always true (still false on null cells) and every other
//!   operator always false, and is dropped from `in`/`not in` lists; `<`, `<=`, `>`, `>=`
//!   need an ordered enumeration;
//! * AND/OR nest as libtiledb's `combine` builds them: operands of the same combination
//!   are flattened into one node.

mod ast;
mod delete;
mod eval;
mod kernel;
mod parse;
mod prune;

#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod tests;

use std::fmt;

use tessera_fragment::{ConditionNode, ConditionOp, DeleteCommit as DeleteFile};
use tessera_schema::{ArraySchema, Enumeration};
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

pub use delete::{
    DeleteApplies, DeleteCondition, DeleteMarks, FragmentDeleteInfo, apply_deletes, delete_fields,
    delete_marks,
};
pub use prune::TileStats;

pub(crate) use delete::{apply_deletes_views, delete_marks_views};
pub(crate) use eval::Prepared;

use crate::{Column, Error, Result};
use ast::{Node, Resolver};

/// The cells of one field as evaluation reads them, borrowed from a result [`Column`] or
/// from a decoded tile (so the read engine evaluates tiles without copying them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ColumnView<'a> {
    /// Datatype of each value.
    pub(crate) datatype: Datatype,
    /// Values per cell, or [`CELL_VAL_NUM_VAR`].
    pub(crate) cell_val_num: u32,
    /// The values, cell after cell.
    pub(crate) data: &'a [u8],
    /// Start offset of each var-sized cell in `data`.
    pub(crate) offsets: Option<&'a [u64]>,
    /// One byte per cell, 0 = null.
    pub(crate) validity: Option<&'a [u8]>,
}

impl<'a> From<&'a Column> for ColumnView<'a> {
    fn from(c: &'a Column) -> Self {
        ColumnView {
            datatype: c.datatype,
            cell_val_num: c.cell_val_num,
            data: &c.data,
            offsets: c.offsets.as_deref(),
            validity: c.validity.as_deref(),
        }
    }
}

/// A query condition resolved against an array schema.
///
/// It holds each value node as libtiledb holds it after `rewrite_for_schema` (values typed
/// by the field, enumeration labels as codes, null tests on fields that are not nullable as
/// `ALWAYS_FALSE`/`ALWAYS_TRUE`), along with what was written, for [`Display`](fmt::Display).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryCondition {
    root: Node,
    dense: bool,
}

impl QueryCondition {
    /// Parses `text` (the `--where` grammar of `docs/cli.md`) and resolves it against
    /// `schema`: each field is an attribute or a dimension, each value is typed by its field
    /// (by the enumeration's values for an enumeration attribute, whose labels are mapped to
    /// codes with `enumerations`).
    ///
    /// # Errors
    /// [`Error::Condition`] with the 1-based column of the problem: a syntax error (saying
    /// what was expected), an unknown field, a value of the wrong type or out of range, an
    /// inequality on an unordered enumeration, a comparison on a field only null tests
    /// apply to, an `in` member of the wrong size for a fixed-size string field.
    pub fn parse(text: &str, schema: &ArraySchema, enumerations: &[Enumeration]) -> Result<Self> {
        let syntax = parse::parse(text)?;
        let root = Resolver { text, schema, enums: enumerations }.build(&syntax, false)?;
        Ok(QueryCondition { root, dense: schema.is_dense() })
    }

    /// Resolves a stored condition (such as the one of a `.del` file) against `schema`, as
    /// libtiledb loads a delete condition: values are taken as stored (enumeration codes,
    /// and an empty value is an empty value, not a null test), and the tree is checked as
    /// `QueryCondition::check` does.
    ///
    /// # Errors
    /// [`Error::Condition`] where libtiledb fails to load or apply the condition: an
    /// unknown field, a `NOT` combination, an AND/OR with fewer than two children, a value
    /// whose size does not match a fixed-size numeric field (libtiledb's "value size
    /// mismatch", which is how a stored `is null` on such a field reads back), set members
    /// of the wrong size, invalid set offsets, a field type conditions cannot compare.
    pub fn from_node(
        node: &ConditionNode,
        schema: &ArraySchema,
        enumerations: &[Enumeration],
    ) -> Result<Self> {
        Ok(QueryCondition {
            root: ast::from_node(node, schema, enumerations)?,
            dense: schema.is_dense(),
        })
    }

    /// The stored form: the tree as libtiledb holds it once rewritten for the schema.
    /// [`QueryCondition::from_node`] of it gives back an equal tree; for a condition from
    /// `from_node`, it is the node it was made from.
    pub fn to_node(&self) -> ConditionNode {
        self.root.to_node()
    }

    /// The `.del` commit libtiledb writes for a delete with this condition: the negation
    /// of [`QueryCondition::to_node`].
    ///
    /// # Errors
    /// [`Error::Condition`] where libtiledb refuses the delete — a dense array; a condition
    /// rewritten to always true or false (a null test on a field that is not nullable, a
    /// label the enumeration lacks), which it cannot negate — and where libtiledb would
    /// write a file it cannot read back: a null test on a fixed-size field (stored as an
    /// empty value, rejected on load as a size mismatch), an `in` list whose labels are all
    /// missing from the enumeration (an empty set).
    ///
    /// A null test on a var-sized field is accepted, as libtiledb accepts it; it reads back
    /// as a comparison with the empty string, so `s is null` then also deletes cells
    /// holding `""` (libtiledb behaves the same).
    pub fn to_delete_commit(&self) -> Result<DeleteFile> {
        let refuse = |m: String| Err(Error::Condition { column: None, message: m });
        if self.dense {
            return refuse("deletes are only supported on sparse arrays".into());
        }
        let mut problem = None;
        self.root.leaves(&mut |l| {
            if problem.is_some() {
                return;
            }
            problem = if matches!(l.op, ConditionOp::AlwaysTrue | ConditionOp::AlwaysFalse) {
                Some(format!(
                    "'{l}' is always {} for this schema and libtiledb cannot negate it into a \
                     delete",
                    l.op == ConditionOp::AlwaysTrue
                ))
            } else if l.null_test && l.cell_val_num != CELL_VAL_NUM_VAR {
                Some(format!(
                    "'{l}' on a fixed-size field would be stored as an empty value, which \
                     libtiledb then fails to read"
                ))
            } else if l.op.is_set() && l.members.is_empty() {
                Some(format!("'{l}' has no member in the enumeration (an empty set)"))
            } else {
                None
            };
        });
        if let Some(p) = problem {
            return refuse(p);
        }
        DeleteFile::for_user_condition(&self.to_node())
            .map_err(|e| Error::Condition { column: None, message: e.to_string() })
    }

    /// The names of the fields the condition reads, in order of first appearance.
    pub fn fields(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.root.leaves(&mut |l| {
            if !out.contains(&l.field.as_str()) {
                out.push(&l.field);
            }
        });
        out
    }

    /// Evaluates the condition on the first `cell_num` cells of a batch: `out` becomes one
    /// `bool` per cell, true where the cell satisfies it. `columns` gives the column of
    /// each field [`QueryCondition::fields`] names (the read engine's result columns); a
    /// field it does not give is one the fragment lacks (added to the schema later), which
    /// libtiledb treats as failing (and which, directly under an OR, also clears the OR's
    /// earlier operands, as libtiledb does).
    ///
    /// # Errors
    /// [`Error::Condition`] when a column does not match the field (datatype, cell size,
    /// too few cells, bad offsets).
    pub fn evaluate<'c>(
        &self,
        columns: &dyn Fn(&str) -> Option<&'c Column>,
        cell_num: usize,
        out: &mut Vec<bool>,
    ) -> Result<()> {
        out.clear();
        out.resize(cell_num, true);
        self.evaluate_and(columns, out)
    }

    /// ANDs the condition into an existing bitmap over the first `keep.len()` cells, as
    /// libtiledb multiplies a condition into a tile's bitmap.
    ///
    /// # Errors
    /// As [`QueryCondition::evaluate`].
    pub fn evaluate_and<'c>(
        &self,
        columns: &dyn Fn(&str) -> Option<&'c Column>,
        keep: &mut [bool],
    ) -> Result<()> {
        let views = |name: &str| columns(name).map(ColumnView::from);
        eval::eval_and(&self.root, &views, keep)
    }

    /// [`QueryCondition::evaluate_and`] over borrowed views (decoded tiles).
    pub(crate) fn evaluate_views<'c>(
        &self,
        columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
        keep: &mut [bool],
    ) -> Result<()> {
        eval::eval_and(&self.root, columns, keep)
    }

    /// The condition ready to run over the first `n` cells of `columns` block by block
    /// ([`Prepared::and_into`]): every column looked up and checked, every value decoded,
    /// once for all the blocks.
    ///
    /// # Errors
    /// As [`Self::evaluate_views`].
    pub(crate) fn prepare<'a, 'c: 'a>(
        &'a self,
        columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
        n: usize,
    ) -> Result<Prepared<'a>> {
        Prepared::new(&self.root, columns, n)
    }

    /// Whether some leaf reads field `name`.
    pub(crate) fn uses(&self, name: &str) -> bool {
        self.fields().contains(&name)
    }

    /// Whether some cell of a tile may satisfy the condition, judged from `stats` (the
    /// tile's statistics per field; `None` for a field without usable ones). `false` only
    /// when no cell can match, so the tile can be skipped.
    pub fn may_match<'a>(&self, stats: &dyn Fn(&str) -> Option<TileStats<'a>>) -> bool {
        prune::may_match(&self.root, stats)
    }

    /// Whether every cell of a tile satisfies the condition, judged from `stats` as for
    /// [`Self::may_match`] (with `null_count` `Some(0)` for fields that are not nullable).
    /// `false` when the statistics do not prove it; `true` lets an aggregate answer the
    /// tile from its metadata as if there were no condition.
    pub fn must_match<'a>(&self, stats: &dyn Fn(&str) -> Option<TileStats<'a>>) -> bool {
        prune::must_match(&self.root, stats)
    }
}

impl fmt::Display for QueryCondition {
    /// The condition as text that parses back to it, with `not` pushed down to the
    /// operators, labels for enumeration codes and single-quoted strings.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.fmt(f)
    }
}
