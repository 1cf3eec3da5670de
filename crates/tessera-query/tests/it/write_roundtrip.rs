//! Property test: random schemas and random writes (several fragments, overwrites, dense
//! subarrays in every layout, sparse cells with and without duplicates) read back by
//! Tessera exactly as a simple model of the array says, at the latest time and at every
//! fragment's timestamp.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use tessera_filters::{Filter, FilterPipeline};
use tessera_query::{Array, Column};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::MemoryStorage;
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, Layout, ReadLayout};

/// One attribute value: fixed bytes, or a string, or null.
type Value = Option<Vec<u8>>;

#[derive(Debug, Clone)]
struct AttrSpec {
    datatype: Datatype,
    var: bool,
    nullable: bool,
    filter: u8,
}

#[derive(Debug, Clone)]
struct Spec {
    dense: bool,
    dims: Vec<(i64, i64, i64)>, // (lo, hi, extent)
    attrs: Vec<AttrSpec>,
    capacity: u64,
    dups: bool,
    col_major: bool,
}

#[derive(Debug, Clone)]
enum WriteSpec {
    /// A dense subarray per dimension and a layout (0 row, 1 col, 2 global).
    Dense { sub: Vec<(i64, i64)>, layout: u8, seed: u64 },
    /// Sparse cells.
    Sparse { coords: Vec<Vec<i64>>, seed: u64 },
    /// A delete of the sparse cells whose first coordinate is below (`below`) or at least
    /// `value`.
    Delete { value: i64, below: bool },
}

fn filter(kind: u8) -> FilterPipeline {
    FilterPipeline::new(match kind {
        0 => vec![],
        1 => vec![Filter::zstd(1)],
        2 => vec![Filter::Gzip { level: 1 }],
        _ => vec![Filter::Lz4 { level: 1 }],
    })
}

fn schema_of(s: &Spec) -> ArraySchema {
    let mut b = ArraySchema::builder(if s.dense { ArrayType::Dense } else { ArrayType::Sparse });
    for (i, &(lo, hi, ext)) in s.dims.iter().enumerate() {
        b = b.dimension(
            Dimension::new(format!("d{i}"), Datatype::Int64).domain_i64(lo, hi).tile_i64(ext),
        );
    }
    for (i, a) in s.attrs.iter().enumerate() {
        let mut attr = Attribute::new(format!("a{i}"), a.datatype).filters(filter(a.filter));
        if a.var {
            attr = attr.cell_val_num(CELL_VAL_NUM_VAR);
        }
        if a.nullable {
            attr = attr.nullable(true);
        }
        b = b.attribute(attr);
    }
    if !s.dense {
        b = b.capacity(s.capacity).allows_duplicates(s.dups);
    }
    if s.col_major {
        b = b.cell_order(Layout::ColMajor).tile_order(Layout::ColMajor);
    }
    b.build().unwrap()
}

/// A deterministic value for cell `k` of a write with `seed`.
fn value(a: &AttrSpec, seed: u64, k: u64) -> Value {
    let h =
        seed.wrapping_mul(6364136223846793005).wrapping_add(k.wrapping_mul(1442695040888963407));
    if a.nullable && h.is_multiple_of(5) {
        return None;
    }
    Some(if a.var {
        let len = ((h >> 8) % 4) * a.datatype.size() as u64;
        (0..len).map(|i| b'a' + ((h >> (16 + i)) % 26) as u8).collect()
    } else {
        let bytes = (h >> 3).to_le_bytes();
        bytes[..a.datatype.size()].to_vec()
    })
}

fn column(name: &str, a: &AttrSpec, vals: &[Value]) -> Column {
    let mut c = Column::new(name, a.datatype, if a.var { CELL_VAL_NUM_VAR } else { 1 }, a.nullable);
    for v in vals {
        if let Some(o) = c.offsets.as_mut() {
            o.push(c.data.len() as u64);
        }
        match v {
            Some(b) => c.data.extend_from_slice(b),
            None if a.var => {}
            None => c.data.extend(std::iter::repeat_n(0u8, a.datatype.size())),
        }
        if let Some(val) = c.validity.as_mut() {
            val.push(u8::from(v.is_some()));
        }
    }
    c
}

fn i64_col(name: &str, vals: &[i64]) -> Column {
    let mut c = Column::new(name, Datatype::Int64, 1, false);
    c.data = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    c
}

/// The cells of a box in row-major (or col-major) order.
fn box_cells(sub: &[(i64, i64)], col_major: bool) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    let dims: Vec<usize> =
        if col_major { (0..sub.len()).rev().collect() } else { (0..sub.len()).collect() };
    for &d in &dims {
        let mut next = Vec::new();
        for prefix in &out {
            for v in sub[d].0..=sub[d].1 {
                let mut p = prefix.clone();
                p.push(v);
                next.push(p);
            }
        }
        out = next;
    }
    if col_major {
        for c in &mut out {
            c.reverse();
        }
    }
    out
}

/// Cells of a dense subarray in global order: tile by tile (tile order), cell order inside.
fn global_cells(spec: &Spec, sub: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let tiles: Vec<(i64, i64)> = spec
        .dims
        .iter()
        .zip(sub)
        .map(|(&(lo, _, e), &(a, b))| ((a - lo) / e, (b - lo) / e))
        .collect();
    let mut out = Vec::new();
    for t in box_cells(&tiles, spec.col_major) {
        let region: Vec<(i64, i64)> = t
            .iter()
            .zip(&spec.dims)
            .zip(sub)
            .map(|((&k, &(lo, _, e)), &(a, b))| ((lo + k * e).max(a), (lo + k * e + e - 1).min(b)))
            .collect();
        out.extend(box_cells(&region, spec.col_major));
    }
    out
}

fn spec_strategy() -> impl Strategy<Value = (Spec, Vec<WriteSpec>)> {
    let attr =
        (0u8..5, any::<bool>(), any::<bool>(), 0u8..4).prop_map(|(t, var, nullable, filter)| {
            let datatype = [
                Datatype::Int32,
                Datatype::Float64,
                Datatype::UInt8,
                Datatype::Int64,
                Datatype::StringAscii,
            ][t as usize];
            AttrSpec { datatype, var: var || datatype == Datatype::StringAscii, nullable, filter }
        });
    let dim =
        (-5i64..5, 1i64..12, 1i64..5).prop_map(|(lo, len, ext)| (lo, lo + len.max(ext) - 1, ext));
    (
        any::<bool>(),
        prop::collection::vec(dim, 1..3),
        prop::collection::vec(attr, 1..4),
        1u64..6,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(dense, dims, attrs, capacity, dups, col_major)| {
            let spec = Spec { dense, dims: dims.clone(), attrs, capacity, dups, col_major };
            let d2 = dims.clone();
            let dense_write = (
                dims.iter()
                    .map(|&(lo, hi, _)| (lo..=hi, lo..=hi).prop_map(|(a, b)| (a.min(b), a.max(b))))
                    .collect::<Vec<_>>(),
                0u8..3,
                any::<u64>(),
            )
                .prop_map(|(sub, layout, seed)| WriteSpec::Dense { sub, layout, seed });
            let sparse_write = (
                prop::collection::vec(
                    d2.iter().map(|&(lo, hi, _)| lo..=hi).collect::<Vec<_>>(),
                    1..25,
                ),
                any::<u64>(),
            )
                .prop_map(|(coords, seed)| WriteSpec::Sparse { coords, seed });
            let (lo0, hi0, _) = d2[0];
            let delete = (lo0..=hi0, any::<bool>())
                .prop_map(|(value, below)| WriteSpec::Delete { value, below });
            let writes = if dense {
                prop::collection::vec(dense_write.boxed(), 1..4).boxed()
            } else {
                prop::collection::vec(
                    prop_oneof![3 => sparse_write.boxed(), 1 => delete.boxed()],
                    1..5,
                )
                .boxed()
            };
            (Just(spec), writes)
        })
}

/// The model: for each time, the cells visible (dense: newest wins; sparse: newest wins
/// unless duplicates are allowed).
fn run(spec: &Spec, writes: &[WriteSpec], consolidated: bool) -> Result<(), TestCaseError> {
    let storage = Arc::new(MemoryStorage::new());
    let schema = schema_of(spec);
    Array::create_at(storage.clone(), &schema, &[], 1).unwrap();
    // (timestamp, coords, values)
    let mut history: Vec<(u64, Vec<i64>, Vec<Value>)> = Vec::new();
    // (timestamp, value, below)
    let mut deletes: Vec<(u64, i64, bool)> = Vec::new();
    for (w, ws) in writes.iter().enumerate() {
        let t = 10 * (w as u64 + 1);
        let array = Array::open_at(storage.clone(), t).unwrap();
        match ws {
            WriteSpec::Dense { sub, layout, seed } => {
                let (cells, layout) = match layout {
                    0 => (box_cells(sub, false), Layout::RowMajor),
                    1 => (box_cells(sub, true), Layout::ColMajor),
                    _ => {
                        // Global order needs a tile-aligned subarray: widen it.
                        let aligned: Vec<(i64, i64)> = spec
                            .dims
                            .iter()
                            .zip(sub)
                            .map(|(&(lo, hi, e), &(a, b))| {
                                (lo + (a - lo) / e * e, (lo + ((b - lo) / e + 1) * e - 1).min(hi))
                            })
                            .collect();
                        let ok = aligned
                            .iter()
                            .zip(&spec.dims)
                            .all(|(&(_, b), &(lo, _, e))| (b - lo + 1) % e == 0);
                        if !ok {
                            // Aligned to the domain end only when the domain ends a tile.
                            (box_cells(sub, false), Layout::RowMajor)
                        } else {
                            (global_cells(spec, &aligned), Layout::GlobalOrder)
                        }
                    }
                };
                let region: Vec<(i64, i64)> = if layout == Layout::GlobalOrder {
                    spec.dims
                        .iter()
                        .zip(sub)
                        .map(|(&(lo, hi, e), &(a, b))| {
                            (lo + (a - lo) / e * e, (lo + ((b - lo) / e + 1) * e - 1).min(hi))
                        })
                        .collect()
                } else {
                    sub.clone()
                };
                let mut q = array.write().layout(layout);
                for (d, &(a, b)) in region.iter().enumerate() {
                    q = q.range_i64(&format!("d{d}"), a, b);
                }
                let mut vals: Vec<Vec<Value>> = vec![Vec::new(); spec.attrs.len()];
                for (k, c) in cells.iter().enumerate() {
                    let v: Vec<Value> =
                        spec.attrs.iter().map(|a| value(a, *seed, k as u64)).collect();
                    for (i, x) in v.iter().enumerate() {
                        vals[i].push(x.clone());
                    }
                    history.push((t, c.clone(), v));
                }
                for (i, a) in spec.attrs.iter().enumerate() {
                    q = q.column(column(&format!("a{i}"), a, &vals[i]));
                }
                q.submit().map_err(|e| TestCaseError::fail(format!("dense write: {e}")))?;
            }
            WriteSpec::Sparse { coords, seed } => {
                let mut coords = coords.clone();
                if !spec.dups {
                    let mut seen = std::collections::HashSet::new();
                    coords.retain(|c| seen.insert(c.clone()));
                }
                let mut q = array.write();
                for d in 0..spec.dims.len() {
                    let v: Vec<i64> = coords.iter().map(|c| c[d]).collect();
                    q = q.column(i64_col(&format!("d{d}"), &v));
                }
                let mut vals: Vec<Vec<Value>> = vec![Vec::new(); spec.attrs.len()];
                for (k, c) in coords.iter().enumerate() {
                    let v: Vec<Value> =
                        spec.attrs.iter().map(|a| value(a, *seed, k as u64)).collect();
                    for (i, x) in v.iter().enumerate() {
                        vals[i].push(x.clone());
                    }
                    history.push((t, c.clone(), v));
                }
                for (i, a) in spec.attrs.iter().enumerate() {
                    q = q.column(column(&format!("a{i}"), a, &vals[i]));
                }
                q.submit().map_err(|e| TestCaseError::fail(format!("sparse write: {e}")))?;
            }
            WriteSpec::Delete { value, below } => {
                let op = if *below { "<" } else { ">=" };
                array
                    .delete()
                    .where_text(&format!("d0 {op} {value}"))
                    .timestamp(t)
                    .submit()
                    .map_err(|e| TestCaseError::fail(format!("delete: {e}")))?;
                deletes.push((t, *value, *below));
            }
        }
    }
    if consolidated {
        tessera_query::consolidate::consolidate(
            storage.clone(),
            tessera_query::consolidate::Mode::Fragments,
            &tessera_query::consolidate::Options {
                range: Some((0, 10 * writes.len() as u64)),
                ..Default::default()
            },
        )
        .map_err(|e| TestCaseError::fail(format!("consolidate: {e}")))?;
    }
    let stamps: Vec<u64> = (1..=writes.len() as u64).map(|w| 10 * w).collect();
    for &at in &stamps {
        let deleted = |h: &(u64, Vec<i64>, Vec<Value>)| {
            deletes.iter().any(|&(t, v, below)| {
                t <= at && h.0 <= t && if below { h.1[0] < v } else { h.1[0] >= v }
            })
        };
        let visible: Vec<&(u64, Vec<i64>, Vec<Value>)> =
            history.iter().filter(|h| h.0 <= at && !deleted(h)).collect();
        let array = Array::open_at(storage.clone(), at).unwrap();
        let res = array
            .read()
            .layout(if spec.dense { ReadLayout::RowMajor } else { ReadLayout::GlobalOrder })
            .execute()
            .map_err(|e| TestCaseError::fail(format!("read at {at}: {e}")))?;
        let n = res.cell_num();
        let mut got: Vec<(Vec<i64>, Vec<Value>)> = (0..n)
            .map(|i| {
                let coords = (0..spec.dims.len())
                    .map(|d| {
                        i64::from_le_bytes(
                            res.column(&format!("d{d}"))
                                .unwrap()
                                .cell(i)
                                .unwrap()
                                .try_into()
                                .unwrap(),
                        )
                    })
                    .collect();
                let vals = (0..spec.attrs.len())
                    .map(|a| {
                        let c = res.column(&format!("a{a}")).unwrap();
                        c.is_valid(i).then(|| c.cell(i).unwrap().to_vec())
                    })
                    .collect();
                (coords, vals)
            })
            .collect();
        let mut want: Vec<(Vec<i64>, Vec<Value>)> = if spec.dense || !spec.dups {
            let mut m: BTreeMap<Vec<i64>, Vec<Value>> = BTreeMap::new();
            for (_, c, v) in &visible {
                m.insert(c.clone(), v.clone());
            }
            m.into_iter().collect()
        } else {
            visible.iter().map(|(_, c, v)| (c.clone(), v.clone())).collect()
        };
        if spec.dense {
            // The read covers the bounding box of the written subarrays: cells never written
            // come back as fill values; compare only the written ones.
            let written: std::collections::HashSet<Vec<i64>> =
                want.iter().map(|w| w.0.clone()).collect();
            got.retain(|g| written.contains(&g.0));
        }
        got.sort();
        want.sort();
        prop_assert_eq!(got.len(), want.len(), "cells at {}", at);
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(g, w, "at {}", at);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn random_writes_read_back((spec, writes) in spec_strategy()) {
        run(&spec, &writes, false)?;
    }

    #[test]
    fn random_writes_read_back_after_consolidation((spec, writes) in spec_strategy()) {
        run(&spec, &writes, true)?;
    }
}
