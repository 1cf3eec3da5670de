//! The resolved condition tree: every value node knows its field's type and holds its value
//! as libtiledb holds it after `ASTNodeVal::rewrite_for_schema` (typed bytes, enumeration
//! codes, `ALWAYS_TRUE`/`ALWAYS_FALSE` rewrites), plus what the user wrote, for `Display`.

use std::fmt;

use tessera_fragment::{CombinationOp, ConditionNode, ConditionOp};
use tessera_schema::{ArraySchema, Enumeration};
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use super::parse::{
    Lit, LitKind, Pred, PredKind, Syntax, error_at, op_text, quote_bytes, quote_field,
};
use crate::{Error, Result};

/// How the cells of a field compare with a value (`QueryCondition::apply_ast_node_sparse`'s
/// type dispatch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    I8,
    /// `UINT8` and `BOOL`.
    U8,
    I16,
    U16,
    I32,
    U32,
    /// `INT64`, `DATETIME_*`, `TIME_*`.
    I64,
    U64,
    F32,
    F64,
    /// Fixed-size `CHAR` (any number of values per cell): the **first** byte of the cell,
    /// as a signed `char`, against the first byte of the value (libtiledb's `T = char`).
    CharFirst,
    /// Bytewise (unsigned, shorter prefix first): var-sized `CHAR`, `STRING_ASCII` and
    /// `STRING_UTF8`, and fixed-size `STRING_ASCII`/`STRING_UTF8`.
    Bytes,
    /// Only null tests apply (other string types, `ANY`, `BLOB`, geometries, var-sized or
    /// multi-value numbers).
    NullOnly,
}

impl Kind {
    /// The comparison a field of this type and cell value number gets.
    pub(crate) fn of(datatype: Datatype, cell_val_num: u32) -> Kind {
        use Datatype as D;
        let var = cell_val_num == CELL_VAL_NUM_VAR;
        match datatype {
            D::Char if var => Kind::Bytes,
            D::Char => Kind::CharFirst,
            D::StringAscii | D::StringUtf8 => Kind::Bytes,
            _ if var || cell_val_num != 1 => Kind::NullOnly,
            D::Int8 => Kind::I8,
            D::UInt8 | D::Bool => Kind::U8,
            D::Int16 => Kind::I16,
            D::UInt16 => Kind::U16,
            D::Int32 => Kind::I32,
            D::UInt32 => Kind::U32,
            D::Int64 => Kind::I64,
            D::UInt64 => Kind::U64,
            D::Float32 => Kind::F32,
            D::Float64 => Kind::F64,
            d if d.is_datetime() || d.is_time() => Kind::I64,
            _ => Kind::NullOnly,
        }
    }

    /// Whether values are numbers of a fixed size.
    pub(crate) fn is_numeric(self) -> bool {
        !matches!(self, Kind::CharFirst | Kind::Bytes | Kind::NullOnly)
    }
}

/// What the user wrote for a value node (after `not` was pushed down), for `Display`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Form {
    /// A comparison with one value.
    Cmp(ConditionOp, Vec<u8>),
    /// `in` (or `not in` when true) with the members.
    Set(bool, Vec<Vec<u8>>),
    /// `is null` (or `is not null` when true).
    Null(bool),
    /// A stored `ALWAYS_TRUE` (true) or `ALWAYS_FALSE` node.
    Always(bool),
}

/// A value node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Leaf {
    /// The attribute or dimension.
    pub(crate) field: String,
    /// Its datatype.
    pub(crate) datatype: Datatype,
    /// Its values per cell.
    pub(crate) cell_val_num: u32,
    /// Whether it is a nullable attribute.
    pub(crate) nullable: bool,
    /// How cells compare.
    pub(crate) kind: Kind,
    /// The operator libtiledb applies.
    pub(crate) op: ConditionOp,
    /// libtiledb's `is_null_`: the value is a null (a null test), not an empty value.
    pub(crate) null_test: bool,
    /// The value bytes as stored (members concatenated for sets).
    pub(crate) value: Vec<u8>,
    /// The set offsets bytes as stored (`IN`/`NOT_IN` only).
    pub(crate) offsets: Option<Vec<u8>>,
    /// Each set member's byte range in `value`.
    pub(crate) members: Vec<(usize, usize)>,
    /// What the user wrote.
    pub(crate) form: Form,
    /// The datatype of the values in `form` (the enumeration's for enumeration labels).
    pub(crate) form_type: Datatype,
}

impl Leaf {
    /// The set members' bytes.
    pub(crate) fn member_bytes(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter().map(|&(s, e)| &self.value[s..e])
    }
}

/// A node of the resolved tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A value node.
    Leaf(Leaf),
    /// All children hold.
    And(Vec<Node>),
    /// Any child holds.
    Or(Vec<Node>),
}

impl Node {
    /// `children` combined with AND (`and`) or OR, flattening children of the same
    /// combination, as libtiledb's `ASTNode::combine` does.
    pub(crate) fn combine(and: bool, children: Vec<Node>) -> Node {
        let mut flat = Vec::with_capacity(children.len());
        for c in children {
            match c {
                Node::And(cs) if and => flat.extend(cs),
                Node::Or(cs) if !and => flat.extend(cs),
                c => flat.push(c),
            }
        }
        if flat.len() == 1 {
            return flat.remove(0);
        }
        if and { Node::And(flat) } else { Node::Or(flat) }
    }

    /// Visits every leaf in order.
    pub(crate) fn leaves<'a>(&'a self, f: &mut dyn FnMut(&'a Leaf)) {
        match self {
            Node::Leaf(l) => f(l),
            Node::And(cs) | Node::Or(cs) => cs.iter().for_each(|c| c.leaves(f)),
        }
    }

    /// The stored form.
    pub(crate) fn to_node(&self) -> ConditionNode {
        match self {
            Node::Leaf(l) => ConditionNode::Value {
                op: l.op,
                field: l.field.clone(),
                value: l.value.clone(),
                offsets: l.offsets.clone(),
            },
            Node::And(cs) => ConditionNode::Expression {
                op: CombinationOp::And,
                children: cs.iter().map(Node::to_node).collect(),
            },
            Node::Or(cs) => ConditionNode::Expression {
                op: CombinationOp::Or,
                children: cs.iter().map(Node::to_node).collect(),
            },
        }
    }
}

/// A field of the schema as conditions see it.
struct FieldDef<'a> {
    datatype: Datatype,
    cell_val_num: u32,
    nullable: bool,
    enumeration: Option<&'a Enumeration>,
    has_enumeration: bool,
}

fn field_def<'a>(
    schema: &'a ArraySchema,
    enums: &'a [Enumeration],
    name: &str,
) -> Option<FieldDef<'a>> {
    if let Some(a) = schema.attribute(name) {
        return Some(FieldDef {
            datatype: a.datatype,
            cell_val_num: a.cell_val_num,
            nullable: a.nullable,
            enumeration: a.enumeration.as_ref().and_then(|e| enums.iter().find(|x| &x.name == e)),
            has_enumeration: a.enumeration.is_some(),
        });
    }
    schema.dimension(name).map(|d| FieldDef {
        datatype: d.datatype,
        cell_val_num: d.cell_val_num,
        nullable: false,
        enumeration: None,
        has_enumeration: false,
    })
}

fn describe_field(datatype: Datatype, cell_val_num: u32) -> String {
    match cell_val_num {
        CELL_VAL_NUM_VAR => format!("var-sized {datatype}"),
        1 => datatype.to_string(),
        n => format!("{datatype} with {n} values per cell"),
    }
}

fn set_offsets(members: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>, Vec<(usize, usize)>) {
    let mut value = Vec::new();
    let mut offsets = Vec::with_capacity(members.len() * 8);
    let mut ranges = Vec::with_capacity(members.len());
    for m in members {
        offsets.extend_from_slice(&(value.len() as u64).to_le_bytes());
        ranges.push((value.len(), value.len() + m.len()));
        value.extend_from_slice(m);
    }
    (value, offsets, ranges)
}

/// Resolves a syntax tree against a schema.
pub(crate) struct Resolver<'a> {
    pub(crate) text: &'a str,
    pub(crate) schema: &'a ArraySchema,
    pub(crate) enums: &'a [Enumeration],
}

impl Resolver<'_> {
    fn err(&self, pos: usize, message: impl Into<String>) -> Error {
        error_at(self.text, pos, message)
    }

    /// The resolved tree of `s`, negated when `negate` (libtiledb's `get_negated_tree`:
    /// operators negated, AND and OR swapped).
    pub(crate) fn build(&self, s: &Syntax, negate: bool) -> Result<Node> {
        Ok(match s {
            Syntax::And(cs) | Syntax::Or(cs) => {
                let and = matches!(s, Syntax::And(_)) != negate;
                let children = cs.iter().map(|c| self.build(c, negate)).collect::<Result<_>>()?;
                Node::combine(and, children)
            }
            Syntax::Not(inner) => self.build(inner, !negate)?,
            Syntax::Pred(p) => Node::Leaf(self.leaf(p, negate)?),
        })
    }

    fn leaf(&self, p: &Pred, negate: bool) -> Result<Leaf> {
        let Some(def) = field_def(self.schema, self.enums, &p.field) else {
            return Err(self.err(p.field_pos, unknown_field(self.schema, &p.field)));
        };
        let kind = Kind::of(def.datatype, def.cell_val_num);
        let mut leaf = Leaf {
            field: p.field.clone(),
            datatype: def.datatype,
            cell_val_num: def.cell_val_num,
            nullable: def.nullable,
            kind,
            op: ConditionOp::Eq,
            null_test: false,
            value: Vec::new(),
            offsets: None,
            members: Vec::new(),
            form: Form::Null(false),
            form_type: def.datatype,
        };
        if let PredKind::Null { negated } = p.kind {
            // A null test on a field that is not nullable is always false (`is null`) or
            // always true (`is not null`): `ASTNodeVal::rewrite_for_schema`.
            let not_null = negated != negate;
            leaf.null_test = true;
            leaf.form = Form::Null(not_null);
            leaf.op = match (not_null, def.nullable) {
                (false, true) => ConditionOp::Eq,
                (true, true) => ConditionOp::Ne,
                (false, false) => ConditionOp::AlwaysFalse,
                (true, false) => ConditionOp::AlwaysTrue,
            };
            return Ok(leaf);
        }
        if kind == Kind::NullOnly {
            return Err(self.err(
                p.field_pos,
                format!(
                    "field '{}' is {}: only 'is null' and 'is not null' apply to it",
                    p.field,
                    describe_field(def.datatype, def.cell_val_num)
                ),
            ));
        }
        // Enumeration labels are typed by the enumeration's values.
        let (value_type, value_cvn) = match def.enumeration {
            Some(e) => (e.datatype, e.cell_val_num),
            None if def.has_enumeration => {
                return Err(self.err(
                    p.field_pos,
                    format!("the enumeration of field '{}' is not loaded", p.field),
                ));
            }
            None => (def.datatype, def.cell_val_num),
        };
        let code_of = |label: &[u8]| -> Option<Vec<u8>> {
            let e = def.enumeration?;
            let idx = (0..e.len()).find(|&i| e.value(i) == Some(label))?;
            integral_bytes(def.datatype, idx as i128)
        };
        match &p.kind {
            PredKind::Cmp { op, op_pos, value } => {
                let op = if negate { op.negated().unwrap_or(*op) } else { *op };
                let bytes = self.typed(value, value_type, value_cvn, &p.field)?;
                leaf.form = Form::Cmp(op, bytes.clone());
                leaf.form_type = value_type;
                leaf.op = op;
                if let Some(e) = def.enumeration {
                    if !e.ordered
                        && matches!(
                            op,
                            ConditionOp::Lt | ConditionOp::Le | ConditionOp::Gt | ConditionOp::Ge
                        )
                    {
                        return Err(self.err(
                            *op_pos,
                            format!(
                                "'{}' needs an ordered enumeration, and the enumeration '{}' of \
                                 field '{}' is not ordered",
                                op_text(op),
                                e.name,
                                p.field
                            ),
                        ));
                    }
                    match code_of(&bytes) {
                        Some(code) => leaf.value = code,
                        None => {
                            // A label missing from the enumeration.
                            leaf.op = if op == ConditionOp::Ne {
                                ConditionOp::AlwaysTrue
                            } else {
                                ConditionOp::AlwaysFalse
                            };
                            leaf.value = vec![0; def.datatype.size()];
                        }
                    }
                } else {
                    leaf.value = bytes;
                }
            }
            PredKind::In { negated, values } => {
                let not_in = *negated != negate;
                leaf.op = if not_in { ConditionOp::NotIn } else { ConditionOp::In };
                let mut shown = Vec::with_capacity(values.len());
                for v in values {
                    let bytes = self.typed(v, value_type, value_cvn, &p.field)?;
                    if def.enumeration.is_none() && def.cell_val_num != CELL_VAL_NUM_VAR {
                        let cell_size = def.datatype.size() * def.cell_val_num as usize;
                        if bytes.len() != cell_size {
                            return Err(self.err(
                                v.pos,
                                format!(
                                    "field '{}' holds {cell_size} bytes per cell; this member has \
                                     {}",
                                    p.field,
                                    bytes.len()
                                ),
                            ));
                        }
                    }
                    shown.push(bytes);
                }
                let stored: Vec<Vec<u8>> = if def.enumeration.is_some() {
                    // Labels missing from the enumeration are dropped.
                    shown.iter().filter_map(|b| code_of(b)).collect()
                } else {
                    shown.clone()
                };
                let (value, offsets, members) = set_offsets(&stored);
                leaf.value = value;
                leaf.offsets = Some(offsets);
                leaf.members = members;
                leaf.form = Form::Set(not_in, shown);
                leaf.form_type = value_type;
            }
            PredKind::Null { .. } => unreachable!("handled above"),
        }
        Ok(leaf)
    }

    /// The bytes of literal `lit` for a value of type `dt` (`cvn` values per cell).
    fn typed(&self, lit: &Lit, dt: Datatype, cvn: u32, field: &str) -> Result<Vec<u8>> {
        let kind = Kind::of(dt, cvn);
        let what = lit.kind.describe();
        let bad = |expected: &str| {
            self.err(lit.pos, format!("field '{field}' takes {expected} ({dt} values), not {what}"))
        };
        match (kind, &lit.kind) {
            (Kind::Bytes | Kind::CharFirst, LitKind::Str(b)) => Ok(b.clone()),
            (Kind::Bytes | Kind::CharFirst, _) => Err(bad("a string")),
            (Kind::F32, LitKind::Num { text, .. }) => text
                .parse::<f32>()
                .map(|v| v.to_le_bytes().to_vec())
                .map_err(|_| self.err(lit.pos, format!("{text} is not a float32"))),
            (Kind::F64, LitKind::Num { text, .. }) => text
                .parse::<f64>()
                .map(|v| v.to_le_bytes().to_vec())
                .map_err(|_| self.err(lit.pos, format!("{text} is not a float64"))),
            (Kind::F32 | Kind::F64, _) => Err(bad("a number")),
            (Kind::U8, LitKind::Bool(b)) if dt == Datatype::Bool => Ok(vec![u8::from(*b)]),
            (Kind::U8, LitKind::Num { text, integer: true }) if dt == Datatype::Bool => {
                match text.as_str() {
                    "0" => Ok(vec![0]),
                    "1" => Ok(vec![1]),
                    _ => Err(bad("true or false")),
                }
            }
            (_, _) if dt == Datatype::Bool => Err(bad("true or false")),
            (_, LitKind::Num { text, integer: true }) => {
                let v = text.parse::<i128>().ok();
                v.and_then(|v| integral_bytes(dt, v)).ok_or_else(|| {
                    self.err(lit.pos, format!("{text} does not fit in {dt} field '{field}'"))
                })
            }
            _ => Err(bad("an integer")),
        }
    }
}

/// `v` as a little-endian integer of `dt`'s width, if it fits (`INT64` for datetimes).
pub(crate) fn integral_bytes(dt: Datatype, v: i128) -> Option<Vec<u8>> {
    use Datatype as D;
    let fits = |lo: i128, hi: i128| (lo..=hi).contains(&v);
    Some(match dt {
        D::Int8 | D::Char => {
            fits(i8::MIN.into(), i8::MAX.into()).then(|| (v as i8).to_le_bytes().to_vec())?
        }
        D::UInt8 | D::Bool => fits(0, u8::MAX.into()).then(|| (v as u8).to_le_bytes().to_vec())?,
        D::Int16 => {
            fits(i16::MIN.into(), i16::MAX.into()).then(|| (v as i16).to_le_bytes().to_vec())?
        }
        D::UInt16 => fits(0, u16::MAX.into()).then(|| (v as u16).to_le_bytes().to_vec())?,
        D::Int32 => {
            fits(i32::MIN.into(), i32::MAX.into()).then(|| (v as i32).to_le_bytes().to_vec())?
        }
        D::UInt32 => fits(0, u32::MAX.into()).then(|| (v as u32).to_le_bytes().to_vec())?,
        D::UInt64 => fits(0, u64::MAX.into()).then(|| (v as u64).to_le_bytes().to_vec())?,
        D::Int64 => {
            fits(i64::MIN.into(), i64::MAX.into()).then(|| (v as i64).to_le_bytes().to_vec())?
        }
        d if d.is_datetime() || d.is_time() => {
            fits(i64::MIN.into(), i64::MAX.into()).then(|| (v as i64).to_le_bytes().to_vec())?
        }
        _ => return None,
    })
}

/// The integer stored little-endian in `b` as `dt`, if `b` has its width.
pub(crate) fn integral_value(dt: Datatype, b: &[u8]) -> Option<i128> {
    use Datatype as D;
    Some(match (dt, b.len()) {
        (D::Int8 | D::Char, 1) => i128::from(b[0] as i8),
        (D::UInt8 | D::Bool, 1) => i128::from(b[0]),
        (D::Int16, 2) => i128::from(i16::from_le_bytes(b.try_into().ok()?)),
        (D::UInt16, 2) => i128::from(u16::from_le_bytes(b.try_into().ok()?)),
        (D::Int32, 4) => i128::from(i32::from_le_bytes(b.try_into().ok()?)),
        (D::UInt32, 4) => i128::from(u32::from_le_bytes(b.try_into().ok()?)),
        (D::UInt64, 8) => i128::from(u64::from_le_bytes(b.try_into().ok()?)),
        (d, 8) if d == D::Int64 || d.is_datetime() || d.is_time() => {
            i128::from(i64::from_le_bytes(b.try_into().ok()?))
        }
        _ => return None,
    })
}

fn unknown_field(schema: &ArraySchema, name: &str) -> String {
    let dims: Vec<&str> = schema.dimensions.iter().map(|d| d.name.as_str()).collect();
    let attrs: Vec<&str> = schema.attributes.iter().map(|a| a.name.as_str()).collect();
    format!(
        "no field named '{name}' (dimensions: {}; attributes: {})",
        dims.join(", "),
        if attrs.is_empty() { "none".to_owned() } else { attrs.join(", ") }
    )
}

/// Resolves a stored condition node as libtiledb does when it loads a delete condition
/// (`deserialize_condition` and `QueryCondition::check`, no `rewrite_for_schema`).
pub(crate) fn from_node(
    node: &ConditionNode,
    schema: &ArraySchema,
    enums: &[Enumeration],
) -> Result<Node> {
    let err = |m: String| Error::Condition { column: None, message: m };
    match node {
        ConditionNode::Expression { op, children } => {
            if *op == CombinationOp::Not {
                return Err(err("a NOT combination, which libtiledb cannot evaluate".into()));
            }
            if children.len() < 2 {
                return Err(err(format!(
                    "an {op:?} combination with {} children (libtiledb needs at least 2)",
                    children.len()
                )));
            }
            let cs =
                children.iter().map(|c| from_node(c, schema, enums)).collect::<Result<Vec<_>>>()?;
            Ok(if *op == CombinationOp::And { Node::And(cs) } else { Node::Or(cs) })
        }
        ConditionNode::Value { op, field, value, offsets } => {
            let Some(def) = field_def(schema, enums, field) else {
                return Err(err(format!("field '{field}' does not exist in the schema")));
            };
            let kind = Kind::of(def.datatype, def.cell_val_num);
            let always = matches!(op, ConditionOp::AlwaysTrue | ConditionOp::AlwaysFalse);
            if kind == Kind::NullOnly {
                return Err(err(format!(
                    "field '{field}' is {}, which conditions cannot compare",
                    describe_field(def.datatype, def.cell_val_num)
                )));
            }
            let cell_size = def.datatype.size() * def.cell_val_num as usize;
            if kind.is_numeric() && !always && !op.is_set() && value.len() != cell_size {
                // An `IS NULL` on a fixed-size field stored by a delete is an empty value
                // (libtiledb reads it back as an empty value, not a null test).
                return Err(err(format!(
                    "value node condition value size mismatch on field '{field}': \
                     {cell_size} != {}",
                    value.len()
                )));
            }
            let mut members = Vec::new();
            if op.is_set() {
                let offsets = offsets.as_deref().unwrap_or_default();
                if offsets.is_empty() || offsets.len() % 8 != 0 {
                    return Err(err(format!(
                        "set membership offsets of field '{field}' take {} bytes (a non-zero \
                         multiple of 8)",
                        offsets.len()
                    )));
                }
                let starts: Vec<u64> = offsets
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                    .collect();
                for (k, &s) in starts.iter().enumerate() {
                    let e = starts.get(k + 1).copied().unwrap_or(value.len() as u64);
                    if s > e || e > value.len() as u64 {
                        return Err(err(format!(
                            "set membership offsets of field '{field}' are invalid"
                        )));
                    }
                    members.push((s as usize, e as usize));
                }
                let wrong_size = members.iter().find(|&&(s, e)| e - s != cell_size);
                if let Some(&(s, e)) = wrong_size
                    && def.cell_val_num != CELL_VAL_NUM_VAR
                    && !def.has_enumeration
                {
                    return Err(err(format!(
                        "value node set member size mismatch on field '{field}': {cell_size} != {}",
                        e - s
                    )));
                }
            }
            // What to show: labels for enumeration codes when they are in range.
            let label = |code: &[u8]| -> Option<Vec<u8>> {
                let e = def.enumeration?;
                let i = usize::try_from(integral_value(def.datatype, code)?).ok()?;
                e.value(i).map(<[u8]>::to_vec)
            };
            let labels_ok = def.enumeration.is_some()
                && match op {
                    o if o.is_set() => members.iter().all(|&(s, e)| label(&value[s..e]).is_some()),
                    _ if always => true,
                    _ => label(value).is_some(),
                };
            let shown =
                |b: &[u8]| if labels_ok { label(b).unwrap_or_default() } else { b.to_vec() };
            let form = match op {
                ConditionOp::AlwaysTrue => Form::Always(true),
                ConditionOp::AlwaysFalse => Form::Always(false),
                o if o.is_set() => Form::Set(
                    *o == ConditionOp::NotIn,
                    members.iter().map(|&(s, e)| shown(&value[s..e])).collect(),
                ),
                o => Form::Cmp(*o, shown(value)),
            };
            let form_type = match def.enumeration {
                Some(e) if labels_ok => e.datatype,
                _ => def.datatype,
            };
            Ok(Node::Leaf(Leaf {
                field: field.clone(),
                datatype: def.datatype,
                cell_val_num: def.cell_val_num,
                nullable: def.nullable,
                kind,
                op: *op,
                null_test: false,
                value: value.clone(),
                offsets: if op.is_set() { offsets.clone() } else { None },
                members,
                form,
                form_type,
            }))
        }
    }
}

/// Formats one literal of type `dt`.
fn literal(f: &mut fmt::Formatter<'_>, dt: Datatype, b: &[u8]) -> fmt::Result {
    match dt {
        Datatype::Bool if b == [0] => f.write_str("false"),
        Datatype::Bool if b == [1] => f.write_str("true"),
        Datatype::Float32 if b.len() == 4 => {
            let v = f32::from_le_bytes(b.try_into().unwrap_or_default());
            if v.is_nan() && v.is_sign_negative() {
                f.write_str("-NaN")
            } else {
                write!(f, "{v:?}")
            }
        }
        Datatype::Float64 if b.len() == 8 => {
            let v = f64::from_le_bytes(b.try_into().unwrap_or_default());
            if v.is_nan() && v.is_sign_negative() {
                f.write_str("-NaN")
            } else {
                write!(f, "{v:?}")
            }
        }
        dt if Kind::of(dt, 1).is_numeric()
            && dt != Datatype::Float32
            && dt != Datatype::Float64 =>
        {
            match integral_value(dt, b) {
                Some(v) => write!(f, "{v}"),
                None => f.write_str(&quote_bytes(b)),
            }
        }
        _ => f.write_str(&quote_bytes(b)),
    }
}

impl fmt::Display for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = quote_field(&self.field);
        match &self.form {
            Form::Cmp(op, v) => {
                write!(f, "{field} {} ", op_text(*op))?;
                literal(f, self.form_type, v)
            }
            Form::Set(not_in, vs) => {
                write!(f, "{field} {} [", if *not_in { "not in" } else { "in" })?;
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    literal(f, self.form_type, v)?;
                }
                f.write_str("]")
            }
            Form::Null(false) => write!(f, "{field} is null"),
            Form::Null(true) => write!(f, "{field} is not null"),
            // libtiledb's ALWAYS_TRUE fails null cells, as `is not null` does.
            Form::Always(true) => write!(f, "{field} is not null"),
            Form::Always(false) => write!(f, "{field} is null and {field} is not null"),
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Leaf(l) => l.fmt(f),
            Node::And(cs) | Node::Or(cs) => {
                let and = matches!(self, Node::And(_));
                for (i, c) in cs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(if and { " and " } else { " or " })?;
                    }
                    // `and` binds tighter than `or` (an always-false leaf prints as an `and`).
                    let bare = match c {
                        Node::Leaf(_) => true,
                        Node::And(_) => !and,
                        Node::Or(_) => false,
                    };
                    if bare { write!(f, "{c}")? } else { write!(f, "({c})")? }
                }
                Ok(())
            }
        }
    }
}
