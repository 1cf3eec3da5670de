//! Property tests of the condition kernels: for random data over fields of every kind
//! (every number width, floats with `NaN` and `-0.0`, nullable fields, var-sized and
//! fixed-size strings, `char`, `bool`, datetimes, an enumeration) and random conditions
//! (every operator, `in`/`not in`, null tests, `and`/`or`/`not` nested), the block-at-a-time
//! evaluation equals a cell-by-cell evaluation written from the semantics, over cell counts
//! that cross block boundaries.

use std::cmp::Ordering;

use proptest::prelude::*;
use tessera_fragment::ConditionOp;
use tessera_schema::{ArraySchema, Attribute, Dimension, Enumeration, EnumerationRef};
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype};

use super::ast::{Kind, Leaf, Node};
use super::{QueryCondition, TileStats, eval::BLOCK};
use crate::Column;

/// name, datatype, cell_val_num, nullable.
const FIELDS: &[(&str, Datatype, u32, bool)] = &[
    ("i8", Datatype::Int8, 1, true),
    ("u16", Datatype::UInt16, 1, false),
    ("i32", Datatype::Int32, 1, true),
    ("u32", Datatype::UInt32, 1, false),
    ("i64", Datatype::Int64, 1, false),
    ("u64", Datatype::UInt64, 1, true),
    ("f32", Datatype::Float32, 1, true),
    ("f64", Datatype::Float64, 1, false),
    ("s", Datatype::StringAscii, CELL_VAL_NUM_VAR, true),
    ("u", Datatype::StringUtf8, CELL_VAL_NUM_VAR, false),
    ("c3", Datatype::Char, 3, false),
    ("c1", Datatype::Char, 1, true),
    ("fs", Datatype::StringAscii, 2, false),
    ("b", Datatype::Bool, 1, false),
    ("e", Datatype::UInt8, 1, true),
    ("dt", Datatype::DatetimeMs, 1, false),
];

const LABELS: [&str; 3] = ["low", "mid", "high"];

fn schema() -> (ArraySchema, Vec<Enumeration>) {
    let mut b = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("d", Datatype::Int64).domain_i64(0, 1 << 20).tile_i64(100));
    for &(name, dt, cvn, nullable) in FIELDS {
        let mut a = Attribute::new(name, dt).cell_val_num(cvn).nullable(nullable);
        if name == "e" {
            a.enumeration = Some("levels".into());
        }
        b = b.attribute(a);
    }
    let schema = b
        .enumeration(EnumerationRef { name: "levels".into(), path: String::new() })
        .build()
        .unwrap();
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for l in LABELS {
        offsets.push(data.len() as u64);
        data.extend_from_slice(l.as_bytes());
    }
    let e = Enumeration {
        name: "levels".into(),
        path: String::new(),
        datatype: Datatype::StringUtf8,
        cell_val_num: CELL_VAL_NUM_VAR,
        ordered: true,
        data,
        offsets: Some(offsets),
    };
    (schema, vec![e])
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const BYTES: [u8; 6] = [0x00, b'a', b'b', b'z', 0x80, 0xff];

/// Value `k` of field `f`'s pool (small pools, so that equal values are common).
fn value(f: usize, k: usize) -> Vec<u8> {
    match FIELDS[f].0 {
        "i8" => vec![[-128i8, -1, 0, 1, 2, 127][k % 6] as u8],
        "u16" => [0u16, 1, 2, 300, 65535][k % 5].to_le_bytes().to_vec(),
        "i32" => [-3i32, -1, 0, 1, 2, i32::MIN, i32::MAX][k % 7].to_le_bytes().to_vec(),
        "u32" => [0u32, 1, 7, u32::MAX][k % 4].to_le_bytes().to_vec(),
        "i64" | "dt" => [-2i64, 0, 5, 1_000, i64::MIN, i64::MAX][k % 6].to_le_bytes().to_vec(),
        "u64" => [0u64, 1, 1 << 63, u64::MAX][k % 4].to_le_bytes().to_vec(),
        "f32" => [-1.0f32, 0.0, -0.0, 2.5, f32::NAN, f32::INFINITY, f32::MIN][k % 7]
            .to_le_bytes()
            .to_vec(),
        "f64" => [-1.0f64, 0.0, -0.0, 1.0, 2.5, f64::NAN, -f64::NAN, f64::NEG_INFINITY][k % 8]
            .to_le_bytes()
            .to_vec(),
        "s" | "u" => (0..(k % 4)).map(|j| BYTES[(k / 4 + j * 5) % 6]).collect(),
        "c3" => (0..3).map(|j| BYTES[(k / (j + 1)) % 6]).collect(),
        "c1" => vec![BYTES[k % 6]],
        "fs" => vec![BYTES[k % 6], BYTES[(k / 6) % 6]],
        "b" => vec![(k % 2) as u8],
        "e" => vec![(k % 3) as u8],
        other => unreachable!("{other}"),
    }
}

/// A literal for field `f` (`set`: an `in` member, of the cell's size for fixed strings).
fn literal(f: usize, k: usize, set: bool) -> String {
    let (name, dt, ..) = FIELDS[f];
    let quote =
        |b: &[u8]| format!("'{}'", b.iter().map(|x| format!("\\x{x:02x}")).collect::<String>());
    match name {
        "e" => format!("'{}'", ["low", "mid", "high", "absent"][k % 4]),
        "c3" | "c1" | "fs" if !set => {
            quote(&(0..(k % 4)).map(|j| BYTES[(k / 4 + j) % 6]).collect::<Vec<_>>())
        }
        _ => {
            let b = value(f, k);
            match dt {
                Datatype::Int8 => (b[0] as i8).to_string(),
                Datatype::UInt16 => u16::from_le_bytes(b.try_into().unwrap()).to_string(),
                Datatype::Int32 => i32::from_le_bytes(b.try_into().unwrap()).to_string(),
                Datatype::UInt32 => u32::from_le_bytes(b.try_into().unwrap()).to_string(),
                Datatype::Int64 | Datatype::DatetimeMs => {
                    i64::from_le_bytes(b.try_into().unwrap()).to_string()
                }
                Datatype::UInt64 => u64::from_le_bytes(b.try_into().unwrap()).to_string(),
                Datatype::Float32 => {
                    let v = f32::from_le_bytes(b.try_into().unwrap());
                    if v.is_nan() { "nan".into() } else { format!("{v:?}") }
                }
                Datatype::Float64 => {
                    let v = f64::from_le_bytes(b.try_into().unwrap());
                    if v.is_nan() { "nan".into() } else { format!("{v:?}") }
                }
                Datatype::Bool => (b[0] == 1).to_string(),
                _ => quote(&b),
            }
        }
    }
}

fn columns(rng: &mut Rng, n: usize) -> Vec<Column> {
    FIELDS
        .iter()
        .enumerate()
        .map(|(f, &(name, dt, cvn, nullable))| {
            let mut c = Column::new(name, dt, cvn, nullable);
            let mut offsets = Vec::with_capacity(n);
            let mut validity = Vec::with_capacity(n);
            for _ in 0..n {
                offsets.push(c.data.len() as u64);
                c.data.extend_from_slice(&value(f, rng.below(1000)));
                validity.push(u8::from(!nullable || rng.below(5) != 0));
            }
            if cvn == CELL_VAL_NUM_VAR {
                c.offsets = Some(offsets);
            }
            if nullable {
                c.validity = Some(validity);
            }
            c
        })
        .collect()
}

const OPS: [&str; 10] =
    ["<", "<=", ">", ">=", "==", "!=", "in", "not in", "is null", "is not null"];

fn condition_text(rng: &mut Rng, depth: usize) -> String {
    if depth == 0 || rng.below(3) == 0 {
        let f = rng.below(FIELDS.len());
        let name = FIELDS[f].0;
        let mut op = OPS[rng.below(OPS.len())];
        if name == "e" && FIELDS[f].0 == "e" && op.starts_with('<') | op.starts_with('>') {
            // ordered enumeration: fine
        }
        if name == "b" && matches!(op, "<" | "<=" | ">" | ">=") {
            op = "==";
        }
        return match op {
            "is null" | "is not null" => format!("{name} {op}"),
            "in" | "not in" => {
                let m: Vec<String> =
                    (0..1 + rng.below(20)).map(|_| literal(f, rng.below(1000), true)).collect();
                format!("{name} {op} [{}]", m.join(", "))
            }
            _ => format!("{name} {op} {}", literal(f, rng.below(1000), false)),
        };
    }
    let k = 2 + rng.below(2);
    let parts: Vec<String> = (0..k).map(|_| condition_text(rng, depth - 1)).collect();
    let joined = parts.join(if rng.below(2) == 0 { " and " } else { " or " });
    if rng.below(3) == 0 { format!("not ({joined})") } else { format!("({joined})") }
}

/// Cell `i` of a column, as bytes.
fn cell(c: &Column, i: usize) -> &[u8] {
    match &c.offsets {
        Some(o) => {
            let e = o.get(i + 1).map_or(c.data.len(), |&e| e as usize);
            &c.data[o[i] as usize..e]
        }
        None => {
            let size = c.datatype.size() * c.cell_val_num as usize;
            &c.data[i * size..(i + 1) * size]
        }
    }
}

/// How a cell orders against the value, for a leaf's kind (`None`: unordered, `NaN`).
fn order(kind: Kind, a: &[u8], b: &[u8]) -> Option<Ordering> {
    macro_rules! p {
        ($t:ty) => {
            <$t>::from_le_bytes(a.try_into().unwrap())
                .partial_cmp(&<$t>::from_le_bytes(b[..a.len()].try_into().unwrap()))
        };
    }
    match kind {
        Kind::I8 => p!(i8),
        Kind::U8 => p!(u8),
        Kind::I16 => p!(i16),
        Kind::U16 => p!(u16),
        Kind::I32 => p!(i32),
        Kind::U32 => p!(u32),
        Kind::I64 => p!(i64),
        Kind::U64 => p!(u64),
        Kind::F32 => p!(f32),
        Kind::F64 => p!(f64),
        Kind::CharFirst => (a[0] as i8).partial_cmp(&b.first().map_or(0, |&x| x as i8)),
        Kind::Bytes => Some(a.cmp(b)),
        Kind::NullOnly => None,
    }
}

fn leaf_cell(l: &Leaf, c: &Column, i: usize) -> bool {
    let valid = c.validity.as_ref().is_none_or(|v| v[i] != 0);
    if l.null_test && matches!(l.op, ConditionOp::Eq | ConditionOp::Ne) {
        return valid == (l.op == ConditionOp::Ne);
    }
    if !valid {
        return false;
    }
    let x = cell(c, i);
    match l.op {
        ConditionOp::AlwaysTrue => true,
        ConditionOp::AlwaysFalse => false,
        ConditionOp::In => l.member_bytes().any(|m| m == x),
        ConditionOp::NotIn => !l.member_bytes().any(|m| m == x),
        op => {
            let o = order(l.kind, x, &l.value);
            match op {
                ConditionOp::Lt => o == Some(Ordering::Less),
                ConditionOp::Le => matches!(o, Some(Ordering::Less | Ordering::Equal)),
                ConditionOp::Gt => o == Some(Ordering::Greater),
                ConditionOp::Ge => matches!(o, Some(Ordering::Greater | Ordering::Equal)),
                ConditionOp::Eq => o == Some(Ordering::Equal),
                ConditionOp::Ne => o != Some(Ordering::Equal),
                _ => false,
            }
        }
    }
}

fn node_cell(node: &Node, cols: &[Column], i: usize) -> bool {
    match node {
        Node::Leaf(l) => leaf_cell(l, cols.iter().find(|c| c.name == l.field).unwrap(), i),
        Node::And(cs) => cs.iter().all(|c| node_cell(c, cols, i)),
        Node::Or(cs) => cs.iter().any(|c| node_cell(c, cols, i)),
    }
}

fn check(seed: u64, n: usize, depth: usize) -> Result<(), TestCaseError> {
    let (schema, enums) = schema();
    let mut rng = Rng(seed | 1);
    let cols = columns(&mut rng, n);
    // Statistics of the cells as trusted metadata gives them decide the condition
    // only where the cells agree.
    let stats: Vec<(&str, Option<Bounds>, u64)> =
        cols.iter().map(|c| (c.name.as_str(), tile_bounds(c), null_count(c))).collect();
    let lookup = |name: &str| {
        stats.iter().find(|(f, ..)| *f == name).map(|(_, b, nulls)| TileStats {
            cell_num: n as u64,
            null_count: Some(*nulls),
            min: b.as_ref().map(|b| b.0.as_slice()),
            max: b.as_ref().map(|b| b.1.as_slice()),
        })
    };
    for _ in 0..8 {
        let text = condition_text(&mut rng, depth);
        let cond = match QueryCondition::parse(&text, &schema, &enums) {
            Ok(c) => c,
            // e.g. an `in` member of the wrong size: the parser's business, not the kernels'.
            Err(_) => continue,
        };
        let mut keep = Vec::new();
        cond.evaluate(&|name: &str| cols.iter().find(|c| c.name == name), n, &mut keep).unwrap();
        for (i, &got) in keep.iter().enumerate() {
            let want = node_cell(&cond.root, &cols, i);
            prop_assert_eq!(got, want, "{} (as {}) on cell {} of {}", text, cond, i, n);
        }
        if cond.must_match(&lookup) {
            prop_assert!(keep.iter().all(|&k| k), "{} decided true for every cell", cond);
        }
        if !cond.may_match(&lookup) {
            prop_assert!(keep.iter().all(|&k| !k), "{} decided false for every cell", cond);
        }
    }
    Ok(())
}

/// The least and greatest cells of a column.
type Bounds = (Vec<u8>, Vec<u8>);

/// The null cells of `c`.
fn null_count(c: &Column) -> u64 {
    c.validity.as_ref().map_or(0, |v| v.iter().filter(|&&b| b == 0).count() as u64)
}

/// The least and greatest non-null cells of a numeric column, as the tile metadata a read
/// trusts holds them (none for a float column holding a `NaN`, whose metadata bounds are
/// not trusted; none for strings and `char`).
fn tile_bounds(c: &Column) -> Option<Bounds> {
    let kind = Kind::of(c.datatype, c.cell_val_num);
    if matches!(kind, Kind::CharFirst | Kind::Bytes | Kind::NullOnly) {
        return None;
    }
    let n = c.data.len() / c.datatype.size().max(1);
    let cells: Vec<&[u8]> = (0..n)
        .filter(|&i| c.validity.as_ref().is_none_or(|v| v[i] != 0))
        .map(|i| cell(c, i))
        .collect();
    if cells.iter().any(|x| order(kind, x, x).is_none()) {
        return None;
    }
    let lo = cells.iter().copied().min_by(|a, b| order(kind, a, b).unwrap())?;
    let hi = cells.iter().copied().max_by(|a, b| order(kind, a, b).unwrap())?;
    Some((lo.to_vec(), hi.to_vec()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn kernels_equal_cell_by_cell_evaluation(
        seed in any::<u64>(),
        n in prop_oneof![0usize..64, (BLOCK - 3)..(BLOCK + 70), 2 * BLOCK + 1..2 * BLOCK + 9],
        depth in 0usize..4,
    ) {
        check(seed, n, depth)?;
    }
}
