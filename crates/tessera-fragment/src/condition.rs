//! Delete (`.del`) and update (`.upd`) commit files: one generic tile holding a serialized
//! query-condition tree (`tiledb/sm/query/deletes_and_updates/serialization.cc`), plus update
//! values for `.upd`.
//!
//! The condition stored in a `.del` file is the **negation** of the user's delete condition
//! (it says which cells to keep); [`ConditionNode::negated`] computes it as libtiledb does.
//!
//! Node encoding:
//!
//! * node type `u8`: 0 = expression, 1 = value;
//! * value node: op `u8`, field name length `u32`, field name, value size `u64`, value; for
//!   `IN`/`NOT_IN` also an offsets size `u64` and the offsets (one `u64` start offset per set
//!   member);
//! * expression node: combination op `u8`, child count `u64`, children.
//!
//! An empty condition serializes to zero bytes.

use tessera_types::{EncryptionKey, FORMAT_VERSION};

use crate::parse::{PResult, bytes, fail, parse_all, u8f, u32f, u64f, utf8};
use crate::{Error, Result};

/// Deepest condition tree the parser accepts (libtiledb recurses without a limit; this bound
/// keeps hostile files from exhausting the stack).
pub const MAX_CONDITION_DEPTH: usize = 256;

/// A comparison operator of a value node (`QueryConditionOp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ConditionOp {
    /// `<`
    Lt = 0,
    /// `<=`
    Le = 1,
    /// `>`
    Gt = 2,
    /// `>=`
    Ge = 3,
    /// `==` (with an empty value: `IS NULL`)
    Eq = 4,
    /// `!=` (with an empty value: `IS NOT NULL`)
    Ne = 5,
    /// Set membership.
    In = 6,
    /// Set non-membership.
    NotIn = 7,
    /// Always true (a rewritten null test).
    AlwaysTrue = 253,
    /// Always false (a rewritten null test).
    AlwaysFalse = 254,
}

impl ConditionOp {
    /// The op stored as `id`.
    pub fn from_id(id: u8) -> Option<Self> {
        use ConditionOp as O;
        Some(match id {
            0 => O::Lt,
            1 => O::Le,
            2 => O::Gt,
            3 => O::Ge,
            4 => O::Eq,
            5 => O::Ne,
            6 => O::In,
            7 => O::NotIn,
            253 => O::AlwaysTrue,
            254 => O::AlwaysFalse,
            _ => return None,
        })
    }

    /// The on-disk id.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// Whether the op is `IN` or `NOT_IN` (its node carries set offsets).
    pub const fn is_set(self) -> bool {
        matches!(self, ConditionOp::In | ConditionOp::NotIn)
    }

    /// The negated op (`LT`↔`GE`, `GT`↔`LE`, `EQ`↔`NE`, `IN`↔`NOT_IN`); `None` for
    /// `ALWAYS_TRUE`/`ALWAYS_FALSE`, which libtiledb refuses to negate.
    pub const fn negated(self) -> Option<Self> {
        use ConditionOp as O;
        Some(match self {
            O::Lt => O::Ge,
            O::Ge => O::Lt,
            O::Gt => O::Le,
            O::Le => O::Gt,
            O::Eq => O::Ne,
            O::Ne => O::Eq,
            O::In => O::NotIn,
            O::NotIn => O::In,
            O::AlwaysTrue | O::AlwaysFalse => return None,
        })
    }
}

/// How an expression node combines its children (`QueryConditionCombinationOp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CombinationOp {
    /// All children hold.
    And = 0,
    /// Any child holds.
    Or = 1,
    /// The (single) child does not hold.
    Not = 2,
}

impl CombinationOp {
    /// The op stored as `id`.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(CombinationOp::And),
            1 => Some(CombinationOp::Or),
            2 => Some(CombinationOp::Not),
            _ => None,
        }
    }

    /// The on-disk id.
    pub const fn id(self) -> u8 {
        self as u8
    }
}

/// One node of a query-condition tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionNode {
    /// A comparison of one field with a value (or a set of values).
    Value {
        /// The operator.
        op: ConditionOp,
        /// The attribute or dimension name.
        field: String,
        /// The value's bytes (little-endian); for sets the members concatenated; empty for
        /// a null test.
        value: Vec<u8>,
        /// For `IN`/`NOT_IN`: the members' start offsets into `value` as `u64`s, stored as
        /// raw bytes (present exactly when the op is a set op).
        offsets: Option<Vec<u8>>,
    },
    /// A combination of child conditions.
    Expression {
        /// How the children combine.
        op: CombinationOp,
        /// The children in order.
        children: Vec<ConditionNode>,
    },
}

impl ConditionNode {
    const STRUCTURE: &'static str = "query condition";

    /// A value node comparing `field` with `value`.
    pub fn value(field: impl Into<String>, op: ConditionOp, value: impl Into<Vec<u8>>) -> Self {
        ConditionNode::Value { op, field: field.into(), value: value.into(), offsets: None }
    }

    /// A set-membership node (`IN` or `NOT_IN`) over `members`.
    pub fn set<'a>(
        field: impl Into<String>,
        op: ConditionOp,
        members: impl IntoIterator<Item = &'a [u8]>,
    ) -> Self {
        let mut value = Vec::new();
        let mut offsets = Vec::new();
        for m in members {
            offsets.extend_from_slice(&(value.len() as u64).to_le_bytes());
            value.extend_from_slice(m);
        }
        ConditionNode::Value { op, field: field.into(), value, offsets: Some(offsets) }
    }

    /// An expression node.
    pub fn expression(op: CombinationOp, children: Vec<ConditionNode>) -> Self {
        ConditionNode::Expression { op, children }
    }

    /// Parses a serialized condition that fills `payload` exactly (the payload of a `.del`
    /// tile). An empty payload is an empty condition (`None`).
    ///
    /// # Errors
    /// [`Error::Malformed`] naming the field and offset for unknown node types or ops, a
    /// count or size past the end, IN/NOT_IN offsets libtiledb would reject, names that are
    /// not UTF-8, trees deeper than [`MAX_CONDITION_DEPTH`], or trailing bytes.
    pub fn parse(payload: &[u8]) -> Result<Option<Self>> {
        if payload.is_empty() {
            return Ok(None);
        }
        parse_all(Self::STRUCTURE, payload, |i| node(i, 0)).map(Some)
    }

    /// Parses the condition at the start of `bytes`; returns it with the bytes it used.
    ///
    /// # Errors
    /// As [`ConditionNode::parse`], except that trailing bytes are allowed.
    pub fn parse_prefix(bytes: &[u8]) -> Result<(Self, usize)> {
        let (rest, n) =
            node(bytes, 0).map_err(|e| crate::parse::to_error(Self::STRUCTURE, bytes, e))?;
        Ok((n, bytes.len() - rest.len()))
    }

    /// Appends the serialized node.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            ConditionNode::Value { op, field, value, offsets } => {
                out.push(1);
                out.push(op.id());
                out.extend_from_slice(&(field.len() as u32).to_le_bytes());
                out.extend_from_slice(field.as_bytes());
                out.extend_from_slice(&(value.len() as u64).to_le_bytes());
                out.extend_from_slice(value);
                if op.is_set() {
                    let offsets = offsets.as_deref().unwrap_or_default();
                    out.extend_from_slice(&(offsets.len() as u64).to_le_bytes());
                    out.extend_from_slice(offsets);
                }
            }
            ConditionNode::Expression { op, children } => {
                out.push(0);
                out.push(op.id());
                out.extend_from_slice(&(children.len() as u64).to_le_bytes());
                for c in children {
                    c.write(out);
                }
            }
        }
    }

    /// The serialized node as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    /// The negated tree, as libtiledb computes the condition it stores for a delete:
    /// value ops are negated (`LT`↔`GE`, `GT`↔`LE`, `EQ`↔`NE`, `IN`↔`NOT_IN`), `AND`↔`OR`
    /// with every child negated (De Morgan).
    ///
    /// # Errors
    /// [`Error::Invalid`] for `ALWAYS_TRUE`/`ALWAYS_FALSE` and `NOT` nodes, which libtiledb
    /// refuses to negate.
    pub fn negated(&self) -> Result<Self> {
        Ok(match self {
            ConditionNode::Value { op, field, value, offsets } => ConditionNode::Value {
                op: op.negated().ok_or_else(|| {
                    Error::invalid(format!("cannot negate the {op:?} condition on {field:?}"))
                })?,
                field: field.clone(),
                value: value.clone(),
                offsets: offsets.clone(),
            },
            ConditionNode::Expression { op, children } => ConditionNode::Expression {
                op: match op {
                    CombinationOp::And => CombinationOp::Or,
                    CombinationOp::Or => CombinationOp::And,
                    CombinationOp::Not => {
                        return Err(Error::invalid("cannot negate a NOT combination"));
                    }
                },
                children: children.iter().map(Self::negated).collect::<Result<_>>()?,
            },
        })
    }

    /// The members of a set node (`IN`/`NOT_IN`): each runs from its offset to the next
    /// one (the last to the end of the value). `None` for other nodes.
    pub fn set_members(&self) -> Option<Vec<&[u8]>> {
        let ConditionNode::Value { value, offsets: Some(offsets), op, .. } = self else {
            return None;
        };
        if !op.is_set() {
            return None;
        }
        let starts: Vec<usize> =
            offsets.chunks_exact(8).map(|c| crate::parse::read_u64(c) as usize).collect();
        let mut out = Vec::with_capacity(starts.len());
        for (k, &s) in starts.iter().enumerate() {
            let e = starts.get(k + 1).copied().unwrap_or(value.len());
            out.push(value.get(s..e)?);
        }
        Some(out)
    }

    /// Every field name the tree mentions, in order of appearance (with repeats).
    pub fn field_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        fn walk<'a>(n: &'a ConditionNode, out: &mut Vec<&'a str>) {
            match n {
                ConditionNode::Value { field, .. } => out.push(field),
                ConditionNode::Expression { children, .. } => {
                    children.iter().for_each(|c| walk(c, out));
                }
            }
        }
        walk(self, &mut out);
        out
    }
}

fn node(i: &[u8], depth: usize) -> PResult<'_, ConditionNode> {
    if depth >= MAX_CONDITION_DEPTH {
        return fail(i, "node type", format!("condition nested deeper than {MAX_CONDITION_DEPTH}"));
    }
    let (rest, node_type) = u8f("node type")(i)?;
    match node_type {
        1 => {
            let (r, op_id) = u8f("op")(rest)?;
            let op = match ConditionOp::from_id(op_id) {
                Some(op) => op,
                None => return fail(rest, "op", format!("unknown query condition op {op_id}")),
            };
            let (r2, name_len) = u32f("field name length")(r)?;
            let (r2, name) = bytes(r2, u64::from(name_len), "field name")?;
            let field = utf8(r, name, "field name")?;
            let (r3, value_size) = u64f("value size")(r2)?;
            let (r3, value) = bytes(r3, value_size, "value")?;
            if !op.is_set() {
                return Ok((
                    r3,
                    ConditionNode::Value { op, field, value: value.to_vec(), offsets: None },
                ));
            }
            let (r4, offsets_size) = u64f("offsets size")(r3)?;
            let (r5, offsets) = bytes(r4, offsets_size, "offsets")?;
            if let Err(why) = check_set_offsets(offsets, value.len()) {
                return fail(r4, "offsets", why);
            }
            Ok((
                r5,
                ConditionNode::Value {
                    op,
                    field,
                    value: value.to_vec(),
                    offsets: Some(offsets.to_vec()),
                },
            ))
        }
        0 => {
            let (r, op_id) = u8f("combination op")(rest)?;
            let op = match CombinationOp::from_id(op_id) {
                Some(op) => op,
                None => {
                    return fail(rest, "combination op", format!("unknown combination op {op_id}"));
                }
            };
            let (mut r2, count) = u64f("child count")(r)?;
            // The smallest node (an expression without children) takes 10 bytes.
            if count > (r2.len() / 10) as u64 {
                return fail(
                    r,
                    "child count",
                    format!("{count} children cannot fit in {} bytes", r2.len()),
                );
            }
            let mut children = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let (r3, c) = node(r2, depth + 1)?;
                children.push(c);
                r2 = r3;
            }
            Ok((r2, ConditionNode::Expression { op, children }))
        }
        t => fail(i, "node type", format!("unknown node type {t} (0 = expression, 1 = value)")),
    }
}

/// libtiledb's checks on set offsets (`ASTNodeVal` set constructor).
fn check_set_offsets(offsets: &[u8], data_len: usize) -> std::result::Result<(), String> {
    if offsets.is_empty() {
        return Err("set membership offsets are empty".into());
    }
    if !offsets.len().is_multiple_of(8) {
        return Err(format!("{} bytes of offsets is not a multiple of 8", offsets.len()));
    }
    let mut prev = 0u64;
    for (k, c) in offsets.chunks_exact(8).enumerate() {
        let o = crate::parse::read_u64(c);
        if k > 0 && o < prev {
            return Err(format!("offset {k} ({o}) is smaller than the one before ({prev})"));
        }
        prev = o;
    }
    if prev > data_len as u64 {
        return Err(format!("last offset {prev} is past the {data_len} value bytes"));
    }
    Ok(())
}

/// A delete commit (`.del` file): one generic tile holding the stored (negated) condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteCommit {
    /// The stored condition: the negation of the user's delete condition (cells for which
    /// it holds are kept). `None` for an empty tile.
    pub condition: Option<ConditionNode>,
}

impl DeleteCommit {
    /// The commit libtiledb writes for the user's delete condition `user`: its negation.
    ///
    /// # Errors
    /// As [`ConditionNode::negated`].
    pub fn for_user_condition(user: &ConditionNode) -> Result<Self> {
        Ok(DeleteCommit { condition: Some(user.negated()?) })
    }

    /// Parses a `.del` file (or the bytes a `.con` file embeds for it).
    ///
    /// # Errors
    /// [`Error::Tile`] when the generic tile cannot be decoded; otherwise as
    /// [`ConditionNode::parse`].
    pub fn parse_file(file: &[u8]) -> Result<Self> {
        Self::parse_file_with_key(file, None)
    }

    /// [`Self::parse_file`] of an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::parse_file`].
    pub fn parse_file_with_key(file: &[u8], key: Option<&EncryptionKey>) -> Result<Self> {
        let payload = read_tile(file, "delete commit", key)?;
        Ok(DeleteCommit { condition: ConditionNode::parse(&payload)? })
    }

    /// The tile payload (the serialized condition).
    pub fn payload(&self) -> Vec<u8> {
        self.condition.as_ref().map(ConditionNode::to_bytes).unwrap_or_default()
    }

    /// The `.del` file bytes, byte-identical to libtiledb's (GZIP level 1 generic tile).
    ///
    /// # Errors
    /// [`Error::Tile`] when the generic tile cannot be encoded.
    pub fn to_file(&self) -> Result<Vec<u8>> {
        self.to_file_with_key(None)
    }

    /// [`Self::to_file`] for an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::to_file`].
    pub fn to_file_with_key(&self, key: Option<&EncryptionKey>) -> Result<Vec<u8>> {
        write_tile(&self.payload(), "delete commit", key)
    }
}

/// One field value of an update commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateValue {
    /// The attribute to set.
    pub field: String,
    /// The new value's bytes.
    pub value: Vec<u8>,
}

/// An update commit (`.upd` file): the condition, then `u64` value count and per value
/// `u64` name size, name, `u64` value size, value. Updates are experimental in libtiledb and
/// not applied on reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateCommit {
    /// The stored condition (`None` for an empty one).
    pub condition: Option<ConditionNode>,
    /// The values to set.
    pub values: Vec<UpdateValue>,
}

impl UpdateCommit {
    const STRUCTURE: &'static str = "update commit";

    /// Parses the payload of a `.upd` tile.
    ///
    /// # Errors
    /// As [`ConditionNode::parse`], plus counts and sizes running past the end.
    pub fn parse_payload(payload: &[u8]) -> Result<Self> {
        // The condition is never empty in an update written by libtiledb; an empty condition
        // would leave only the values, which cannot be told apart, so a condition is required.
        parse_all(Self::STRUCTURE, payload, |i| {
            let (rest, condition) = node(i, 0)?;
            let (mut rest, count) = u64f("value count")(rest)?;
            if count > (rest.len() / 16) as u64 {
                return fail(
                    rest,
                    "value count",
                    format!("{count} values cannot fit in {} bytes", rest.len()),
                );
            }
            let mut values = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let (r, n) = u64f("field name size")(rest)?;
                let (r2, name) = bytes(r, n, "field name")?;
                let field = utf8(r, name, "field name")?;
                let (r3, vs) = u64f("value size")(r2)?;
                let (r4, v) = bytes(r3, vs, "value")?;
                values.push(UpdateValue { field, value: v.to_vec() });
                rest = r4;
            }
            Ok((rest, UpdateCommit { condition: Some(condition), values }))
        })
    }

    /// Parses a `.upd` file.
    ///
    /// # Errors
    /// [`Error::Tile`] when the generic tile cannot be decoded; otherwise as
    /// [`UpdateCommit::parse_payload`].
    pub fn parse_file(file: &[u8]) -> Result<Self> {
        Self::parse_file_with_key(file, None)
    }

    /// [`Self::parse_file`] of an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::parse_file`].
    pub fn parse_file_with_key(file: &[u8], key: Option<&EncryptionKey>) -> Result<Self> {
        Self::parse_payload(&read_tile(file, Self::STRUCTURE, key)?)
    }

    /// The tile payload.
    pub fn payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(c) = &self.condition {
            c.write(&mut out);
        }
        out.extend_from_slice(&(self.values.len() as u64).to_le_bytes());
        for v in &self.values {
            out.extend_from_slice(&(v.field.len() as u64).to_le_bytes());
            out.extend_from_slice(v.field.as_bytes());
            out.extend_from_slice(&(v.value.len() as u64).to_le_bytes());
            out.extend_from_slice(&v.value);
        }
        out
    }

    /// The `.upd` file bytes (GZIP level 1 generic tile).
    ///
    /// # Errors
    /// [`Error::Tile`] when the generic tile cannot be encoded.
    pub fn to_file(&self) -> Result<Vec<u8>> {
        self.to_file_with_key(None)
    }

    /// [`Self::to_file`] for an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`Self::to_file`].
    pub fn to_file_with_key(&self, key: Option<&EncryptionKey>) -> Result<Vec<u8>> {
        write_tile(&self.payload(), Self::STRUCTURE, key)
    }
}

/// Decodes the single generic tile of a file.
pub(crate) fn read_tile(
    file: &[u8],
    structure: &'static str,
    key: Option<&EncryptionKey>,
) -> Result<Vec<u8>> {
    let (tile, end) = tessera_tile::read_generic_tile_at_with_key(file, 0, key)
        .map_err(|source| Error::Tile { structure, offset: 0, source })?;
    if end != file.len() as u64 {
        return Err(Error::malformed(
            structure,
            "end",
            end,
            format!("{} bytes follow the generic tile", file.len() as u64 - end),
        ));
    }
    Ok(tile.payload)
}

/// Encodes `payload` as one libtiledb generic tile.
pub(crate) fn write_tile(
    payload: &[u8],
    structure: &'static str,
    key: Option<&EncryptionKey>,
) -> Result<Vec<u8>> {
    tessera_tile::write_generic_tile_with_key(payload, FORMAT_VERSION, key)
        .map_err(|source| Error::Tile { structure, offset: 0, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_example_a_eq_15() {
        // docs/format/commits-and-names.md (`.del`): `a == 15` is stored as NE.
        let user = ConditionNode::value("a", ConditionOp::Eq, 15i32.to_le_bytes());
        let stored = DeleteCommit::for_user_condition(&user).unwrap();
        assert_eq!(hex::encode(stored.payload()), "0105010000006104000000000000000f000000");
        let file = stored.to_file().unwrap();
        assert_eq!(DeleteCommit::parse_file(&file).unwrap(), stored);
    }

    #[test]
    fn sets_negation_and_round_trip() {
        let set = ConditionNode::set("s", ConditionOp::In, [&b"ab"[..], b"", b"c"]);
        assert_eq!(set.set_members().unwrap(), [&b"ab"[..], b"", b"c"]);
        let tree = ConditionNode::expression(
            CombinationOp::Or,
            vec![set.clone(), ConditionNode::value("a", ConditionOp::Gt, 900i32.to_le_bytes())],
        );
        let neg = tree.negated().unwrap();
        let ConditionNode::Expression { op, children } = &neg else { panic!() };
        assert_eq!(*op, CombinationOp::And);
        assert!(matches!(children[0], ConditionNode::Value { op: ConditionOp::NotIn, .. }));
        assert!(matches!(children[1], ConditionNode::Value { op: ConditionOp::Le, .. }));
        assert_eq!(neg.negated().unwrap(), tree);
        let b = neg.to_bytes();
        assert_eq!(ConditionNode::parse(&b).unwrap().unwrap(), neg);
        assert_eq!(neg.field_names(), ["s", "a"]);
        for cut in 0..b.len() {
            assert!(ConditionNode::parse(&b[..cut]).map_or(true, |c| c.is_none() && cut == 0));
        }
        assert!(ConditionNode::value("a", ConditionOp::AlwaysTrue, []).negated().is_err());
        assert!(ConditionNode::expression(CombinationOp::Not, vec![]).negated().is_err());
        assert_eq!(ConditionNode::parse(&[]).unwrap(), None);
    }

    #[test]
    fn rejects_bad_nodes() {
        assert!(ConditionNode::parse(&[2]).is_err());
        assert!(ConditionNode::parse(&[1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        // an expression claiming u64::MAX children
        let mut b = vec![0, 0];
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        let e = ConditionNode::parse(&b).unwrap_err();
        assert!(matches!(e, Error::Malformed { field: "child count", offset: 2, .. }), "{e}");
        // deeply nested
        let mut deep = Vec::new();
        for _ in 0..(MAX_CONDITION_DEPTH + 1) {
            deep.extend_from_slice(&[0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        }
        assert!(ConditionNode::parse(&deep).is_err());
        // set offsets past the value
        let mut bad = ConditionNode::set("s", ConditionOp::In, [&b"a"[..]]);
        if let ConditionNode::Value { offsets, .. } = &mut bad {
            *offsets = Some(5u64.to_le_bytes().to_vec());
        }
        assert!(ConditionNode::parse(&bad.to_bytes()).is_err());
    }

    #[test]
    fn update_round_trip() {
        let u = UpdateCommit {
            condition: Some(ConditionNode::value("a", ConditionOp::Lt, 3i32.to_le_bytes())),
            values: vec![UpdateValue { field: "b".into(), value: vec![1, 2] }],
        };
        let file = u.to_file().unwrap();
        assert_eq!(UpdateCommit::parse_file(&file).unwrap(), u);
        let p = u.payload();
        for cut in 0..p.len() {
            assert!(UpdateCommit::parse_payload(&p[..cut]).is_err());
        }
    }
}
