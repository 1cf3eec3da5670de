//! Tile pruning from fragment metadata: whether any cell of a tile can satisfy a condition,
//! judged from the tile's min, max and null count (`docs/format/fragment-metadata.md`, "Tile
//! statistics").
//!
//! The answer is conservative: `false` only when no cell can match. libtiledb's metadata
//! generator has quirks that make some statistics unreliable, so
//! [`TileStats::from_metadata`] keeps only what bounds the cells:
//!
//! * floats never prune on min/max from [`TileStats::from_metadata`]: a `NaN` cell resets
//!   the running min and max (`min = min < v ? min : v`), so values before it are not
//!   covered (the read engine passes float bounds only for tiles whose sum is finite, which
//!   holds no `NaN`);
//! * var-sized fields of dense fragments never prune on min/max (a nullable one reads
//!   validity at the wrong cell when a tile is written in several slabs, and the ordered
//!   writer may copy every tile's min/max into slot 0);
//! * null counts are used only where the generator counts them exactly: nullable fields
//!   with min/max (fixed-size ones only in dense fragments), and in sparse fragments also
//!   fixed-size fields of the other dispatched types;
//! * strings compare bytewise when evaluated but the generator uses `strncmp`, which stops
//!   at a NUL: a min or max containing a NUL byte is not used;
//! * fixed-size `CHAR` compares its first byte as a signed `char`: min/max prune only when
//!   the max's first byte is below `0x80` (where signed and unsigned orders agree).

use tessera_fragment::{ConditionOp, FieldInfo};
use tessera_types::Datatype;

use super::ast::{Kind, Leaf, Node, integral_value};

/// What a fragment's metadata says about one field in one tile.
///
/// `min`/`max` must bound every non-null cell of the tile (bytewise for strings,
/// numerically for numbers, the first byte for fixed-size `CHAR`) and `null_count` must be
/// exact; leave out (`None`) what is not known to be so. [`TileStats::from_metadata`]
/// applies libtiledb's rules to raw fragment metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TileStats<'a> {
    /// Number of cells in the tile (a larger number is safe, a smaller one is not).
    pub cell_num: u64,
    /// Number of null cells, when known exactly.
    pub null_count: Option<u64>,
    /// The tile's minimum value bytes (little-endian numbers; string bytes).
    pub min: Option<&'a [u8]>,
    /// The tile's maximum value bytes.
    pub max: Option<&'a [u8]>,
}

/// Whether libtiledb's metadata generator dispatches a fixed-size type at all (the others
/// get no statistics, not even null counts).
fn dispatched(dt: Datatype) -> bool {
    !matches!(
        dt,
        Datatype::StringUtf8
            | Datatype::StringUtf16
            | Datatype::StringUtf32
            | Datatype::StringUcs2
            | Datatype::StringUcs4
            | Datatype::Any
    )
}

impl<'a> TileStats<'a> {
    /// The statistics of a tile of `field` as fragment metadata stores them (`min`/`max`
    /// from the tile mins/maxs parts, `null_count` from the tile null counts), keeping only
    /// what libtiledb computes reliably for the field (see the module notes).
    pub fn from_metadata(
        field: &FieldInfo,
        cell_num: u64,
        null_count: Option<u64>,
        min: Option<&'a [u8]>,
        max: Option<&'a [u8]>,
    ) -> Self {
        let min_max = field.has_min_max()
            && !matches!(field.datatype, Datatype::Float32 | Datatype::Float64)
            && !(field.dense_array && field.var);
        let nulls = field.nullable
            && if field.dense_array {
                !field.var && field.has_min_max()
            } else {
                field.has_min_max() || (!field.var && dispatched(field.datatype))
            };
        TileStats {
            cell_num,
            null_count: null_count.filter(|_| nulls),
            min: min.filter(|_| min_max),
            max: max.filter(|_| min_max),
        }
    }
}

/// Whether some cell of the tile the statistics describe may satisfy `node`.
pub(crate) fn may_match<'a>(node: &Node, stats: &dyn Fn(&str) -> Option<TileStats<'a>>) -> bool {
    match node {
        Node::Leaf(l) => stats(&l.field).is_none_or(|s| leaf_may_match(l, &s)),
        Node::And(cs) => cs.iter().all(|c| may_match(c, stats)),
        Node::Or(cs) => cs.iter().any(|c| may_match(c, stats)),
    }
}

fn leaf_may_match(l: &Leaf, s: &TileStats<'_>) -> bool {
    if s.cell_num == 0 {
        return false;
    }
    let all_null = s.null_count.is_some_and(|c| c >= s.cell_num);
    if l.null_test && matches!(l.op, ConditionOp::Eq | ConditionOp::Ne) {
        return if l.op == ConditionOp::Eq { s.null_count != Some(0) } else { !all_null };
    }
    // Everything else fails on null cells.
    if all_null || l.op == ConditionOp::AlwaysFalse {
        return false;
    }
    if l.op == ConditionOp::AlwaysTrue {
        return true;
    }
    let (Some(min), Some(max)) = (s.min, s.max) else { return true };
    match l.kind {
        Kind::I8
        | Kind::U8
        | Kind::I16
        | Kind::U16
        | Kind::I32
        | Kind::U32
        | Kind::I64
        | Kind::U64 => {
            let (Some(lo), Some(hi)) =
                (integral_value(l.datatype, min), integral_value(l.datatype, max))
            else {
                return true;
            };
            if lo > hi {
                // The initial values of a tile without a non-null cell.
                return false;
            }
            let value = |b: &[u8]| integral_value(l.datatype, b);
            ordered(l, lo, hi, value)
        }
        Kind::CharFirst => {
            let (Some(&lo), Some(&hi)) = (min.first(), max.first()) else { return true };
            if hi >= 0x80 || lo > hi {
                return true;
            }
            if l.op.is_set() {
                // Whole cells are compared: a member must start within the range.
                return l.op == ConditionOp::NotIn
                    || l.member_bytes().any(|m| m.first().is_some_and(|&b| lo <= b && b <= hi));
            }
            let v = i128::from(l.value.first().map_or(0, |&b| b as i8));
            range_test(l.op, i128::from(lo), i128::from(hi), v)
        }
        Kind::F32 | Kind::F64 => {
            let f = |b: &[u8]| float_value(l.kind, b);
            let (Some(lo), Some(hi)) = (f(min), f(max)) else { return true };
            if lo.is_nan() || hi.is_nan() || lo > hi {
                return true;
            }
            if l.op.is_set() {
                // `in` compares bytes: a member matches only a cell equal to it.
                return l.op != ConditionOp::In
                    || l.member_bytes()
                        .any(|m| f(m).is_none_or(|m| m.is_nan() || (lo <= m && m <= hi)));
            }
            let Some(v) = f(&l.value) else { return true };
            if v.is_nan() {
                return true;
            }
            match l.op {
                ConditionOp::Lt => lo < v,
                ConditionOp::Le => lo <= v,
                ConditionOp::Gt => hi > v,
                ConditionOp::Ge => hi >= v,
                ConditionOp::Eq => lo <= v && v <= hi,
                ConditionOp::Ne => !(lo == hi && lo == v),
                _ => true,
            }
        }
        Kind::Bytes => {
            let min = (!min.contains(&0)).then_some(min);
            let max = (!max.contains(&0)).then_some(max);
            let may_equal = |v: &[u8]| min.is_none_or(|m| m <= v) && max.is_none_or(|m| v <= m);
            let v: &[u8] = &l.value;
            match l.op {
                ConditionOp::Lt => min.is_none_or(|m| m < v),
                ConditionOp::Le => min.is_none_or(|m| m <= v),
                ConditionOp::Gt => max.is_none_or(|m| m > v),
                ConditionOp::Ge => max.is_none_or(|m| m >= v),
                ConditionOp::Eq => may_equal(v),
                ConditionOp::In => l.member_bytes().any(may_equal),
                _ => true,
            }
        }
        _ => true,
    }
}

/// A float cell or value of kind `kind` (`F32` or `F64`) as `f64`; `None` for other kinds
/// or sizes.
fn float_value(kind: Kind, b: &[u8]) -> Option<f64> {
    match (kind, b.len()) {
        (Kind::F32, 4) => Some(f64::from(f32::from_le_bytes(b.try_into().ok()?))),
        (Kind::F64, 8) => Some(f64::from_le_bytes(b.try_into().ok()?)),
        _ => None,
    }
}

/// Integer comparison of the tile range `[lo, hi]` with the leaf's value or members.
fn ordered(l: &Leaf, lo: i128, hi: i128, value: impl Fn(&[u8]) -> Option<i128>) -> bool {
    if l.op.is_set() {
        let mut members = l.member_bytes().filter_map(&value);
        return match l.op {
            ConditionOp::In => members.any(|m| lo <= m && m <= hi),
            _ => !(lo == hi && members.any(|m| m == lo)),
        };
    }
    value(&l.value).is_none_or(|v| range_test(l.op, lo, hi, v))
}

/// Whether some `x` in `[lo, hi]` satisfies `x OP v`.
fn range_test(op: ConditionOp, lo: i128, hi: i128, v: i128) -> bool {
    match op {
        ConditionOp::Lt => lo < v,
        ConditionOp::Le => lo <= v,
        ConditionOp::Gt => hi > v,
        ConditionOp::Ge => hi >= v,
        ConditionOp::Eq => lo <= v && v <= hi,
        ConditionOp::Ne => !(lo == hi && lo == v),
        _ => true,
    }
}

/// Whether every cell of the tile the statistics describe satisfies `node`: `false` when
/// the statistics do not prove it. `null_count` must be `Some(0)` for a field that is not
/// nullable (its cells are never null), and is otherwise needed exactly.
pub(crate) fn must_match<'a>(node: &Node, stats: &dyn Fn(&str) -> Option<TileStats<'a>>) -> bool {
    match node {
        Node::Leaf(l) => stats(&l.field).is_some_and(|s| leaf_must_match(l, &s)),
        Node::And(cs) => cs.iter().all(|c| must_match(c, stats)),
        Node::Or(cs) => cs.iter().any(|c| must_match(c, stats)),
    }
}

fn leaf_must_match(l: &Leaf, s: &TileStats<'_>) -> bool {
    if s.cell_num == 0 {
        return true;
    }
    let Some(nulls) = s.null_count else { return false };
    if l.null_test && matches!(l.op, ConditionOp::Eq | ConditionOp::Ne) {
        return if l.op == ConditionOp::Eq { nulls >= s.cell_num } else { nulls == 0 };
    }
    // Everything else fails on null cells.
    if nulls != 0 || l.op == ConditionOp::AlwaysFalse {
        return false;
    }
    if l.op == ConditionOp::AlwaysTrue {
        return true;
    }
    let (Some(min), Some(max)) = (s.min, s.max) else { return false };
    match l.kind {
        Kind::I8
        | Kind::U8
        | Kind::I16
        | Kind::U16
        | Kind::I32
        | Kind::U32
        | Kind::I64
        | Kind::U64 => {
            let value = |b: &[u8]| integral_value(l.datatype, b);
            let (Some(lo), Some(hi)) = (value(min), value(max)) else { return false };
            if lo > hi {
                return false;
            }
            if l.op.is_set() {
                // Members of another width never equal a cell: they are left out.
                let mut members = l.member_bytes().filter_map(value);
                return match l.op {
                    ConditionOp::In => lo == hi && members.any(|m| m == lo),
                    _ => members.all(|m| m < lo || hi < m),
                };
            }
            value(&l.value).is_some_and(|v| range_all(l.op, lo, hi, v))
        }
        Kind::F32 | Kind::F64 => {
            // `in` compares bytes (`-0.0` is not `0.0` there): never decided here.
            if l.op.is_set() {
                return false;
            }
            let f = |b: &[u8]| float_value(l.kind, b);
            let (Some(lo), Some(hi), Some(v)) = (f(min), f(max), f(&l.value)) else {
                return false;
            };
            if lo.is_nan() || hi.is_nan() || v.is_nan() || lo > hi {
                return false;
            }
            match l.op {
                ConditionOp::Lt => hi < v,
                ConditionOp::Le => hi <= v,
                ConditionOp::Gt => lo > v,
                ConditionOp::Ge => lo >= v,
                ConditionOp::Eq => lo == v && hi == v,
                ConditionOp::Ne => v < lo || hi < v,
                _ => false,
            }
        }
        // Strings and first bytes of `CHAR`: the generator's orders differ from the
        // condition's in corner cases (see the module notes), so they only prune.
        _ => false,
    }
}

/// Whether every `x` in `[lo, hi]` satisfies `x OP v`.
fn range_all(op: ConditionOp, lo: i128, hi: i128, v: i128) -> bool {
    match op {
        ConditionOp::Lt => hi < v,
        ConditionOp::Le => hi <= v,
        ConditionOp::Gt => lo > v,
        ConditionOp::Ge => lo >= v,
        ConditionOp::Eq => lo == v && hi == v,
        ConditionOp::Ne => v < lo || hi < v,
        _ => false,
    }
}
