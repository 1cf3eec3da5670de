//! Every fragment written by libtiledb under `testdata/` and `tests/data/` parses, rewrites
//! byte for byte, and agrees with what libtiledb reports (`tests/data/expected.json`, written by
//! `tests/data/generate.py`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tessera_fragment::stats::{
    TileData, VarMinMaxCopy, dense_tile_slabs, field_tile_metadata_with, tile_stats,
};
use tessera_fragment::{
    CombinationOp, CommitEntry, CommitKind, ConditionNode, ConditionOp, ConsolidatedCommits,
    ConsolidatedFragmentMeta, DeleteCommit, Field, FieldInfo, Footer, FragmentMetadata,
    FragmentName, IgnoreFile, LazyPart, TileStats, VacuumFile, footer_length_range, footer_range,
    parse_footer_length, parse_u64s,
};
use tessera_schema::ArraySchema;
use tessera_tile::{TileCodec, VarTileCodec};
use tessera_types::{Datatype, Layout};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn data_dir() -> PathBuf {
    crate_dir().join("tests/data")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.file_name().is_some_and(|n| n == "__fragment_metadata.tdb") {
            out.push(p);
        }
    }
}

fn fragment_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(&crate_dir().join("../../testdata"), &mut out);
    // Older format versions (testdata/old) are checked by tests/old_versions.rs; encrypted
    // arrays (testdata/encrypted), which need their key, by tessera-query's tests/encrypted.rs.
    let old = crate_dir().join("../../testdata/old");
    let encrypted = crate_dir().join("../../testdata/encrypted");
    out.retain(|p| !p.starts_with(&old) && !p.starts_with(&encrypted));
    walk(&data_dir(), &mut out);
    out
}

/// The array folder of a fragment metadata file.
fn array_of(file: &Path) -> PathBuf {
    file.parent().unwrap().parent().unwrap().parent().unwrap().to_path_buf()
}

fn schema_for(file: &Path, bytes: &[u8]) -> ArraySchema {
    let r = footer_length_range(bytes.len() as u64).unwrap();
    let len = parse_footer_length(&bytes[r.start as usize..]).unwrap();
    let f = footer_range(bytes.len() as u64, len).unwrap();
    let (_, name) = Footer::peek_schema_name(&bytes[f.start as usize..f.end as usize]).unwrap();
    let s = std::fs::read(array_of(file).join("__schema").join(name)).unwrap();
    ArraySchema::parse_file(&s).unwrap()
}

fn load(file: &Path) -> (Vec<u8>, ArraySchema, FragmentMetadata) {
    let bytes = std::fs::read(file).unwrap();
    let schema = schema_for(file, &bytes);
    let md = FragmentMetadata::parse_all(&bytes, &schema)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    (bytes, schema, md)
}

fn data_file_name(field: &FieldInfo) -> Option<String> {
    match field.field {
        Field::Attribute(i) => Some(format!("a{i}")),
        Field::Dimension(j) => Some(format!("d{j}")),
        Field::Coords => None,
        Field::Timestamps => Some("t".into()),
        Field::DeleteTimestamps => Some("dt".into()),
        Field::DeleteConditionIndex => Some("dci".into()),
    }
}

#[test]
fn every_fixture_parses_and_rewrites_byte_for_byte() {
    let files = fragment_files();
    assert!(files.len() >= 28 + 12, "found only {} fragments", files.len());
    for file in &files {
        let (bytes, schema, md) = load(file);
        let what = file.display();
        assert_eq!(md.footer.version, 22, "{what}");
        let out = md.to_bytes(&schema).unwrap();
        assert!(out == bytes, "{what}: rewritten file differs");

        // Generic-tile count: 3 + 8 * num (docs/format/fragment-metadata.md).
        let layout = md.layout(&schema);
        assert_eq!(md.footer.parts().len(), 3 + 8 * layout.num(), "{what}");

        // Every part's byte range decodes to what parse_all found.
        let footer_start =
            bytes.len() as u64 - 8 - parse_footer_length(&bytes[bytes.len() - 8..]).unwrap();
        for (part, _) in md.footer.parts() {
            let r = md.footer.part_range(part, footer_start).unwrap();
            let payload =
                part.decode_tile(&bytes[r.start as usize..r.end as usize], r.start).unwrap();
            match part {
                LazyPart::TileOffsets(i) => {
                    assert_eq!(parse_u64s(part, &payload).unwrap(), md.tile_offsets[i])
                }
                LazyPart::TileVarSizes(i) => {
                    assert_eq!(parse_u64s(part, &payload).unwrap(), md.tile_var_sizes[i])
                }
                LazyPart::TileNullCounts(i) => {
                    assert_eq!(parse_u64s(part, &payload).unwrap(), md.tile_null_counts[i]);
                }
                LazyPart::TileMins(i) => assert_eq!(payload, md.tile_mins[i].to_payload()),
                LazyPart::ProcessedConditions => {
                    assert_eq!(payload, md.processed_conditions.as_ref().unwrap().to_payload());
                }
                _ => {}
            }
        }

        // Fragment stats recomputed from the tile buffers equal the stored ones.
        let recomputed = md.compute_fragment_stats(&schema).unwrap();
        assert_eq!(Some(&recomputed), md.fragment_stats.as_ref(), "{what}");

        // Every idx has tile_num entries in the four offset groups.
        let tile_num = md.footer.tile_num(&schema).unwrap();
        for i in 0..layout.num() {
            assert_eq!(md.tile_offsets[i].len() as u64, tile_num, "{what}");
            assert_eq!(md.tile_var_offsets[i].len() as u64, tile_num, "{what}");
            assert_eq!(md.tile_var_sizes[i].len() as u64, tile_num, "{what}");
            assert_eq!(md.tile_validity_offsets[i].len() as u64, tile_num, "{what}");
        }

        // File sizes in the footer are the sizes of the data files.
        let frag_dir = file.parent().unwrap();
        for f in md.fields(&schema).unwrap() {
            let idx = layout.idx(f.field).unwrap();
            let size = |suffix: &str| {
                data_file_name(&f)
                    .and_then(|n| std::fs::metadata(frag_dir.join(format!("{n}{suffix}.tdb"))).ok())
                    .map_or(0, |m| m.len())
            };
            assert_eq!(md.footer.file_sizes[idx], size(""), "{what} {}", f.name);
            assert_eq!(md.footer.file_var_sizes[idx], size("_var"), "{what} {}", f.name);
            assert_eq!(md.footer.file_validity_sizes[idx], size("_validity"), "{what} {}", f.name);
        }
    }
}

#[test]
fn truncated_and_corrupt_files_are_errors() {
    let names = ["sparse_nulls", "dense_partial", "sparse_strdim", "consolidated"];
    let mut files: Vec<PathBuf> = fragment_files()
        .into_iter()
        .filter(|f| names.iter().any(|n| f.starts_with(data_dir().join(n))))
        .collect();
    files.truncate(8);
    assert!(files.len() >= 4);
    for file in &files {
        let (bytes, schema, _) = load(file);
        let len = parse_footer_length(&bytes[bytes.len() - 8..]).unwrap();
        let f = footer_range(bytes.len() as u64, len).unwrap();
        let footer = &bytes[f.start as usize..f.end as usize];
        assert!(Footer::parse(footer, &schema).is_ok());
        for cut in 0..footer.len() {
            assert!(
                Footer::parse(&footer[..cut], &schema).is_err(),
                "{} cut {cut}",
                file.display()
            );
        }
        for cut in 0..bytes.len() {
            assert!(FragmentMetadata::parse_all(&bytes[..cut], &schema).is_err());
        }
        // A footer length pointing before the file.
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 8..].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(FragmentMetadata::parse_all(&bad, &schema).is_err());
        // An unknown version.
        let mut bad = footer.to_vec();
        bad[..4].copy_from_slice(&99u32.to_le_bytes());
        assert!(matches!(
            Footer::parse(&bad, &schema),
            Err(tessera_fragment::Error::UnsupportedVersion { version: 99, .. })
        ));
        // A corrupted count inside the first tile-offsets payload is reported, not allocated.
        let md = FragmentMetadata::parse_all(&bytes, &schema).unwrap();
        let mut huge = tessera_fragment::u64s_payload(&md.tile_offsets[0]);
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_u64s(LazyPart::TileOffsets(0), &huge).is_err());
        // Every single-byte flip of the footer either parses or fails cleanly.
        for i in 0..footer.len() {
            let mut b = footer.to_vec();
            b[i] ^= 0xff;
            let _ = Footer::parse(&b, &schema);
        }
    }
}

fn expected() -> Value {
    serde_json::from_slice(&std::fs::read(data_dir().join("expected.json")).unwrap()).unwrap()
}

fn frag_file(array: &str, name: &str) -> PathBuf {
    data_dir().join(array).join("__fragments").join(name).join("__fragment_metadata.tdb")
}

/// A golden non-empty-domain bound as little-endian bytes of `dt`.
fn golden_value(dt: Datatype, v: &Value) -> Vec<u8> {
    match dt {
        Datatype::Int32 => (v.as_i64().unwrap() as i32).to_le_bytes().to_vec(),
        Datatype::Int64 => v.as_i64().unwrap().to_le_bytes().to_vec(),
        Datatype::Float64 => v.as_f64().unwrap().to_le_bytes().to_vec(),
        Datatype::StringAscii => v.as_str().unwrap().as_bytes().to_vec(),
        d => panic!("no golden decoding for {d}"),
    }
}

/// Compares a stored bound with its golden value; JSON floats are compared to one ulp (the
/// JSON parser does not promise exact round trips).
fn assert_bound(dt: Datatype, stored: &[u8], golden: &Value, what: &str) {
    if dt == Datatype::Float64 {
        let a = f64::from_le_bytes(stored.try_into().unwrap());
        let b = golden.as_f64().unwrap();
        assert!((a - b).abs() <= a.abs() * 2.0 * f64::EPSILON, "{what}: {a} vs {b}");
    } else {
        assert_eq!(stored, golden_value(dt, golden), "{what}");
    }
}

fn hex_cells(v: &Value) -> Vec<Vec<u8>> {
    v.as_array().unwrap().iter().map(|c| hex::decode(c.as_str().unwrap()).unwrap()).collect()
}

fn int(dt: Datatype, b: &[u8]) -> i128 {
    match dt {
        Datatype::Int32 => i128::from(i32::from_le_bytes(b[..4].try_into().unwrap())),
        Datatype::Int64 => i128::from(i64::from_le_bytes(b[..8].try_into().unwrap())),
        d => panic!("no integer decoding for {d}"),
    }
}

/// The range of every space tile of a dense fragment's non-empty domain, in row-major tile
/// order.
fn dense_tiles(schema: &ArraySchema, md: &FragmentMetadata) -> Vec<Vec<[i128; 2]>> {
    let ned = md.footer.non_empty_domain.as_ref().unwrap();
    let mut per_dim = Vec::new();
    for (d, r) in schema.dimensions.iter().zip(&ned.0) {
        let lo = int(d.datatype, &d.domain.as_ref().unwrap()[0]);
        let e = int(d.datatype, d.tile_extent.as_ref().unwrap());
        let (a, b) = ((int(d.datatype, &r.low) - lo) / e, (int(d.datatype, &r.high) - lo) / e);
        per_dim.push((a..=b).map(|t| [lo + t * e, lo + (t + 1) * e - 1]).collect::<Vec<_>>());
    }
    let mut out: Vec<Vec<[i128; 2]>> = vec![vec![]];
    for ranges in per_dim {
        out = out
            .into_iter()
            .flat_map(|p| ranges.iter().map(move |r| [p.clone(), vec![*r]].concat()))
            .collect();
    }
    out
}

/// Decodes tile `t` of `field` from the fragment's data files.
fn decode_tile(
    frag_dir: &Path,
    schema: &ArraySchema,
    md: &FragmentMetadata,
    field: &FieldInfo,
    idx: usize,
    t: usize,
) -> (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>) {
    let name = data_file_name(field).unwrap();
    let read = |suffix: &str, offsets: &[u64], size: u64| {
        let file = std::fs::read(frag_dir.join(format!("{name}{suffix}.tdb"))).unwrap();
        let end = offsets.get(t + 1).copied().unwrap_or(size);
        file[offsets[t] as usize..end as usize].to_vec()
    };
    let pipeline = match field.field {
        Field::Attribute(i) => schema.attributes[i].filters.clone(),
        Field::Dimension(j) => schema.dimension_filters(&schema.dimensions[j]).clone(),
        _ => schema.coords_filters.clone(),
    };
    let validity = field.nullable.then(|| {
        let codec = TileCodec::validity(&schema.validity_filters, schema.version).unwrap();
        codec
            .decode(&read(
                "_validity",
                &md.tile_validity_offsets[idx],
                md.footer.file_validity_sizes[idx],
            ))
            .unwrap()
    });
    if field.var {
        let codec =
            VarTileCodec::new(&pipeline, &schema.offsets_filters, field.datatype, schema.version)
                .unwrap();
        let tile = codec
            .decode(
                &read("", &md.tile_offsets[idx], md.footer.file_sizes[idx]),
                &read("_var", &md.tile_var_offsets[idx], md.footer.file_var_sizes[idx]),
            )
            .unwrap();
        let fixed = tile.offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        (fixed, Some(tile.data), validity)
    } else {
        let codec =
            TileCodec::fixed_data(&pipeline, field.datatype, field.cell_val_num, schema.version)
                .unwrap();
        (
            codec.decode(&read("", &md.tile_offsets[idx], md.footer.file_sizes[idx])).unwrap(),
            None,
            validity,
        )
    }
}

fn check_golden_fragment(array: &str, g: &Value) {
    let name = g["name"].as_str().unwrap();
    let file = frag_file(array, name);
    let (_, schema, md) = load(&file);
    let what = format!("{array}/{name}");
    let f = &md.footer;
    assert_eq!(u64::from(f.version), g["version"].as_u64().unwrap(), "{what}");
    assert_eq!(f.schema_name, g["schema_name"].as_str().unwrap(), "{what}");
    assert_eq!(f.dense, !g["sparse"].as_bool().unwrap(), "{what}");
    assert_eq!(f.cell_num(&schema).unwrap(), g["cell_num"].as_u64().unwrap(), "{what}");
    let fname = FragmentName::parse(name).unwrap();
    let tr = g["timestamp_range"].as_array().unwrap();
    assert_eq!(fname.timestamp_range(), (tr[0].as_u64().unwrap(), tr[1].as_u64().unwrap()));

    // Non-empty domain.
    let ned = f.non_empty_domain.as_ref().unwrap();
    for (d, (dim, r)) in schema.dimensions.iter().zip(&ned.0).enumerate() {
        let gd = &g["nonempty_domain"][d];
        assert_bound(dim.datatype, &r.low, &gd[0], &what);
        assert_bound(dim.datatype, &r.high, &gd[1], &what);
    }

    // R-tree leaves are the MBRs FragmentInfo reports.
    let tile_num = f.tile_num(&schema).unwrap();
    if let Some(mbrs) = g.get("mbrs") {
        let mbrs = mbrs.as_array().unwrap();
        assert_eq!(tile_num, mbrs.len() as u64, "{what}");
        assert_eq!(md.rtree.leaf_count(), tile_num, "{what}");
        for (t, m) in mbrs.iter().enumerate() {
            let leaf = md.rtree.leaf(t as u64).unwrap().to_mbr();
            for (d, dim) in schema.dimensions.iter().enumerate() {
                assert_bound(dim.datatype, &leaf.0[d].low, &m[d][0], &format!("{what} tile {t}"));
                assert_bound(dim.datatype, &leaf.0[d].high, &m[d][1], &format!("{what} tile {t}"));
            }
        }
    } else {
        assert_eq!(md.rtree.height(), 0, "{what}: dense fragments have no R-tree levels");
    }

    let Some(tiles) = g.get("tiles") else { return };
    let tiles = tiles.as_array().unwrap();
    assert_eq!(tiles.len() as u64, tile_num, "{what}");
    let layout = md.layout(&schema);
    let cell_num = f.cell_num_fn(&schema).unwrap();
    let frag_dir = file.parent().unwrap();
    let space_tiles = if f.dense { dense_tiles(&schema, &md) } else { Vec::new() };
    let sub: Vec<[i128; 2]> = f
        .non_empty_domain
        .as_ref()
        .unwrap()
        .0
        .iter()
        .zip(&schema.dimensions)
        .filter(|_| f.dense)
        .map(|(r, d)| [int(d.datatype, &r.low), int(d.datatype, &r.high)])
        .collect();
    for field in md.fields(&schema).unwrap() {
        let idx = layout.idx(field.field).unwrap();
        if field.field == Field::Coords || (field.dense_array && field.is_dim) {
            continue;
        }
        let mut stats: Vec<TileStats> = Vec::new();
        for (t, gt) in tiles.iter().enumerate() {
            let gf = &gt["fields"][&field.name];
            let (fixed, var, validity) = decode_tile(frag_dir, &schema, &md, &field, idx, t);
            let n =
                if field.var { fixed.len() / 8 } else { fixed.len() / field.cell_size as usize };
            let slab = match gt.get("positions") {
                Some(p) => {
                    let slab = dense_tile_slabs(
                        &sub,
                        &space_tiles[t],
                        schema.cell_order,
                        Layout::RowMajor,
                    )
                    .unwrap();
                    let mut covered: Vec<u64> = slab.iter().flat_map(Clone::clone).collect();
                    covered.sort_unstable();
                    let golden: Vec<u64> =
                        p.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
                    assert_eq!(covered, golden, "{what} tile {t} slabs");
                    slab
                }
                None => std::iter::once(0..n as u64).collect(),
            };
            // The decoded cells are the cells libtiledb reads (null cells excepted).
            let golden = hex_cells(&gf["cells"]);
            let mut positions: Vec<usize> =
                slab.iter().flat_map(|r| r.start as usize..r.end as usize).collect();
            positions.sort_unstable();
            assert_eq!(golden.len(), positions.len(), "{what} {} tile {t}", field.name);
            for (k, &p) in positions.iter().enumerate() {
                let valid = gf.get("validity").is_none_or(|v| v[k].as_u64() == Some(1));
                if let Some(v) = &validity {
                    assert_eq!(v[p] != 0, valid, "{what} {} tile {t} cell {p}", field.name);
                }
                if !valid {
                    continue;
                }
                let cell = if field.var {
                    let off = |c: usize| {
                        u64::from_le_bytes(fixed[c * 8..c * 8 + 8].try_into().unwrap()) as usize
                    };
                    let d = var.as_ref().unwrap();
                    let e = if p + 1 == n { d.len() } else { off(p + 1) };
                    d[off(p)..e].to_vec()
                } else {
                    let cs = field.cell_size as usize;
                    fixed[p * cs..(p + 1) * cs].to_vec()
                };
                assert_eq!(cell, golden[k], "{what} {} tile {t} cell {p}", field.name);
            }
            let data = TileData {
                cell_num: n as u64,
                fixed: &fixed,
                var: var.as_deref(),
                validity: validity.as_deref(),
            };
            stats.push(tile_stats(&field, &data, &slab).unwrap());
        }
        // The dense ordered writer's slot-0 quirk applies when a write has more attributes
        // than tiles.
        let copy = if f.dense && schema.attributes.len() as u64 > tile_num {
            VarMinMaxCopy::SlotZero
        } else {
            VarMinMaxCopy::PerTile
        };
        let built = field_tile_metadata_with(&field, tile_num, &stats, &cell_num, copy).unwrap();
        assert_eq!(built.mins, md.tile_mins[idx], "{what} {} mins", field.name);
        assert_eq!(built.maxs, md.tile_maxs[idx], "{what} {} maxs", field.name);
        assert_eq!(built.sums, md.tile_sums[idx], "{what} {} sums", field.name);
        assert_eq!(
            built.null_counts, md.tile_null_counts[idx],
            "{what} {} null counts",
            field.name
        );
    }

    // libtiledb's aggregates over the fragment alone.
    let stats = md.fragment_stats.as_ref().unwrap();
    if let Some(aggs) = g.get("aggregates").and_then(Value::as_object) {
        for (attr, a) in aggs {
            if a.get("error").is_some() || has_nan(tiles, attr, &schema) {
                // With NaN cells libtiledb's aggregates differ from its own stored
                // metadata (checked above, cell by cell): a NaN replaces the running
                // min/max in the metadata.
                continue;
            }
            let idx = layout.idx_of_name(&schema, attr).unwrap();
            let field = FieldInfo::new(&schema, layout.field(idx).unwrap()).unwrap();
            let s = &stats.fields[idx];
            let h = |k: &str| hex::decode(a[k].as_str().unwrap()).unwrap();
            // A NaN sum (a NaN cell) is compared as NaN.
            let sum = h("sum");
            let sum = u64::from_le_bytes(sum[..8].try_into().unwrap());
            match field.sum_type() {
                tessera_fragment::SumType::F64 if f64::from_bits(sum).is_nan() => {
                    assert!(f64::from_bits(s.sum).is_nan(), "{what} {attr} sum");
                }
                // libtiledb sums the cells in another order than the tile sums: compare
                // floating-point sums to rounding.
                tessera_fragment::SumType::F64 => {
                    let (a, b) = (f64::from_bits(s.sum), f64::from_bits(sum));
                    assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{what} {attr} sum {a} {b}");
                }
                _ => assert_eq!(s.sum, sum, "{what} {attr} sum"),
            }
            let w = field.datatype.size();
            assert_eq!(s.min, h("min")[..w], "{what} {attr} min");
            assert_eq!(s.max, h("max")[..w], "{what} {attr} max");
            if let Some(nc) = a.get("null_count") {
                let nc = hex::decode(nc.as_str().unwrap()).unwrap();
                assert_eq!(
                    s.null_count,
                    u64::from_le_bytes(nc[..8].try_into().unwrap()),
                    "{what} {attr}"
                );
            }
        }
    }
}

fn has_nan(tiles: &[Value], attr: &str, schema: &ArraySchema) -> bool {
    let Some(a) = schema.attribute(attr) else { return false };
    if !a.datatype.is_float() {
        return false;
    }
    tiles.iter().flat_map(|t| hex_cells(&t["fields"][attr]["cells"])).any(|c| match c.len() {
        4 => f32::from_le_bytes(c[..].try_into().unwrap()).is_nan(),
        8 => f64::from_le_bytes(c[..].try_into().unwrap()).is_nan(),
        _ => false,
    })
}

#[test]
fn golden_values_match_libtiledb() {
    let e = expected();
    let arrays = e["arrays"].as_object().unwrap();
    assert_eq!(arrays.len(), 6);
    let mut checked = 0;
    for (array, a) in arrays {
        for key in ["fragments", "before"] {
            for g in a.get(key).and_then(Value::as_array).into_iter().flatten() {
                if key == "before" && !frag_file(array, g["name"].as_str().unwrap()).exists() {
                    continue; // deleted by delete_fragments
                }
                check_golden_fragment(array, g);
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "{checked}");
}

fn commit_files(array: &str, ext: &str) -> Vec<(String, Vec<u8>)> {
    let dir = data_dir().join(array).join("__commits");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| (p.file_name().unwrap().to_str().unwrap().to_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn commits_of_the_consolidated_array() {
    let e = expected();
    let a = &e["arrays"]["consolidated"];
    let listing: Vec<&str> =
        a["listing"]["__commits"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let entries = tessera_fragment::classify_commits(listing.iter().copied()).unwrap();
    let kinds: BTreeMap<CommitKind, usize> = entries.iter().fold(BTreeMap::new(), |mut m, e| {
        *m.entry(e.kind).or_default() += 1;
        m
    });
    assert_eq!(kinds[&CommitKind::Write], 3);
    assert_eq!(kinds[&CommitKind::Delete], 2);
    assert_eq!(kinds[&CommitKind::Vacuum], 1);
    assert_eq!(kinds[&CommitKind::ConsolidatedCommits], 1);

    // Delete commits hold the negated conditions.
    let dels = commit_files("consolidated", "del");
    let d30 = DeleteCommit::parse_file(&dels[0].1).unwrap();
    assert_eq!(
        d30.condition,
        Some(ConditionNode::value("a", ConditionOp::Ne, 15i32.to_le_bytes()))
    );
    assert_eq!(d30.to_file().unwrap(), dels[0].1, "a .del file is rewritten byte for byte");
    let user = ConditionNode::expression(
        CombinationOp::Or,
        vec![
            ConditionNode::set(
                "a",
                ConditionOp::In,
                [&1i32.to_le_bytes()[..], &2i32.to_le_bytes()[..]],
            ),
            ConditionNode::value("a", ConditionOp::Gt, 900i32.to_le_bytes()),
        ],
    );
    let d35 = DeleteCommit::parse_file(&dels[1].1).unwrap();
    assert_eq!(d35, DeleteCommit::for_user_condition(&user).unwrap());
    assert_eq!(d35.to_file().unwrap(), dels[1].1);

    // The .con lists every commit, with the .del files embedded.
    let (con_name, con_bytes) = &commit_files("consolidated", "con")[0];
    let con = ConsolidatedCommits::parse(con_bytes).unwrap();
    assert_eq!(con.to_bytes(), *con_bytes);
    let con_fn = FragmentName::parse(con_name).unwrap();
    assert_eq!(con_fn.timestamp_range(), (10, 35));
    let mut embedded = 0;
    for c in &con.entries {
        assert!(c.path.starts_with("__commits/"), "{}", c.path);
        let entry = c.commit().unwrap().unwrap();
        if entry.kind == CommitKind::Delete {
            let file = dels.iter().find(|(n, _)| *n == entry.file_name()).unwrap();
            assert_eq!(c.delete_file.as_deref(), Some(&file.1[..]));
            embedded += 1;
        }
    }
    assert_eq!(embedded, 2);

    // The .vac lists the two consolidated fragments with a leading slash.
    let (_, vac_bytes) = &commit_files("consolidated", "vac")[0];
    let vac = VacuumFile::parse(vac_bytes).unwrap();
    assert_eq!(vac.to_bytes(), *vac_bytes);
    let before: Vec<&str> =
        a["before"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let names: Vec<FragmentName> = before.iter().map(|n| FragmentName::parse(n).unwrap()).collect();
    assert_eq!(VacuumFile::for_fragments(&names), vac);
    assert_eq!(
        vac.relative_paths().unwrap(),
        before.iter().map(|n| format!("__fragments/{n}")).collect::<Vec<_>>()
    );

    // The consolidated fragment: timestamps, delete metadata, processed conditions.
    let consolidated = a["fragments"][0]["name"].as_str().unwrap();
    let (_, schema, md) = load(&frag_file("consolidated", consolidated));
    assert!(md.footer.has_timestamps && md.footer.has_delete_meta);
    let markers = &md.processed_conditions.as_ref().unwrap().0;
    let want: Vec<String> = dels.iter().map(|(n, _)| format!("__commits/{n}")).collect();
    assert_eq!(*markers, want);
    let layout = md.layout(&schema);
    assert_eq!(layout.num(), 1 + 1 + 2 + 1 + 2);
    let t = layout.idx(Field::Timestamps).unwrap();
    let stats = md.fragment_stats.as_ref().unwrap();
    assert_eq!(stats.fields[t].min, 10u64.to_le_bytes());
    assert_eq!(stats.fields[t].max, 20u64.to_le_bytes());
    let dt = layout.idx(Field::DeleteTimestamps).unwrap();
    assert_eq!(stats.fields[dt].sum, u64::MAX, "delete timestamp sums saturate");

    // __fragment_meta/*.meta holds the two footers, byte-identical to the fragments' own.
    let meta_dir = data_dir().join("consolidated/__fragment_meta");
    let meta_path = std::fs::read_dir(&meta_dir).unwrap().next().unwrap().unwrap().path();
    let meta_bytes = std::fs::read(&meta_path).unwrap();
    let meta = ConsolidatedFragmentMeta::parse_file(&meta_bytes).unwrap();
    assert_eq!(meta.to_file().unwrap(), meta_bytes);
    assert_eq!(meta.entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), before);
    for entry in &meta.entries {
        let bytes = std::fs::read(frag_file("consolidated", &entry.name)).unwrap();
        let len = parse_footer_length(&bytes[bytes.len() - 8..]).unwrap();
        let r = footer_range(bytes.len() as u64, len).unwrap();
        assert_eq!(entry.footer, bytes[r.start as usize..r.end as usize]);
        let footer = entry.parse_footer(&schema).unwrap();
        assert_eq!(footer, Footer::parse_file(&bytes, &schema).unwrap());
    }
}

#[test]
fn ignore_file_of_a_deleted_fragment() {
    let (ign_name, ign_bytes) = &commit_files("ignore", "ign")[0];
    let ign = IgnoreFile::parse(ign_bytes).unwrap();
    assert_eq!(ign.to_bytes(), *ign_bytes);
    assert_eq!(ign.paths.len(), 1);
    let ignored = CommitEntry::classify(&ign.paths[0]).unwrap().unwrap();
    assert_eq!(ignored.kind, CommitKind::Write);
    assert_eq!(ignored.name.timestamp_range(), (1, 1));
    assert_eq!(FragmentName::parse(ign_name).unwrap().timestamp_range(), (1, 1));
    assert_eq!(format!("{}", ignored.relative_path()), ign.paths[0]);
    let (_, con_bytes) = &commit_files("ignore", "con")[0];
    let con = ConsolidatedCommits::parse(con_bytes).unwrap();
    assert_eq!(con.entries.len(), 3);
    assert!(con.entries.iter().any(|c| c.path == ign.paths[0]));
}

/// The `testdata/filters` arrays: dense 1-D, one tile, written whole; every filter and many
/// datatypes. Tile statistics computed from the decoded data tiles equal the stored ones.
#[test]
fn filters_fixtures_tile_stats_from_decoded_tiles() {
    let files: Vec<PathBuf> = fragment_files()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("testdata/filters/"))
        .collect();
    assert_eq!(files.len(), 28);
    let mut fields_checked = 0;
    for file in &files {
        let (_, schema, md) = load(file);
        let layout = md.layout(&schema);
        let tile_num = md.footer.tile_num(&schema).unwrap();
        assert_eq!(tile_num, 1);
        let cell_num = md.footer.cell_num_fn(&schema).unwrap();
        for field in md.fields(&schema).unwrap() {
            let Field::Attribute(a) = field.field else { continue };
            if schema.attributes[a].filters.contains(tessera_types::FilterType::ScaleFloat) {
                continue; // lossy: the metadata describes the values before quantisation
            }
            let idx = layout.idx(field.field).unwrap();
            let (fixed, var, validity) =
                decode_tile(file.parent().unwrap(), &schema, &md, &field, idx, 0);
            let n =
                if field.var { fixed.len() / 8 } else { fixed.len() / field.cell_size as usize };
            let data = TileData {
                cell_num: n as u64,
                fixed: &fixed,
                var: var.as_deref(),
                validity: validity.as_deref(),
            };
            let stats = tessera_fragment::stats::tile_stats_full(&field, &data).unwrap();
            let built =
                field_tile_metadata_with(&field, 1, &[stats], &cell_num, VarMinMaxCopy::PerTile)
                    .unwrap();
            let what = format!("{} {}", file.display(), field.name);
            assert_eq!(built.mins, md.tile_mins[idx], "{what} mins");
            assert_eq!(built.maxs, md.tile_maxs[idx], "{what} maxs");
            assert_eq!(built.sums, md.tile_sums[idx], "{what} sums");
            assert_eq!(built.null_counts, md.tile_null_counts[idx], "{what} null counts");
            fields_checked += 1;
        }
    }
    assert!(fields_checked > 150, "{fields_checked}");
}

/// Deterministic byte mutations of whole metadata files and commit files: parsers return
/// errors or values, never panic.
#[test]
fn mutated_files_never_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let files: Vec<PathBuf> =
        fragment_files().into_iter().filter(|f| f.starts_with(data_dir())).take(6).collect();
    for file in &files {
        let (bytes, schema, _) = load(file);
        for _ in 0..300 {
            let mut b = bytes.clone();
            for _ in 0..(1 + next() % 4) {
                let i = (next() % b.len() as u64) as usize;
                b[i] = next() as u8;
            }
            if let Ok(md) = FragmentMetadata::parse_all(&b, &schema) {
                let _ = md.compute_fragment_stats(&schema);
                let _ = md.to_bytes(&schema);
            }
        }
    }
    for (_, del) in commit_files("consolidated", "del") {
        let payload = tessera_tile::read_generic_tile(&del).unwrap();
        for _ in 0..500 {
            let mut p = payload.clone();
            let i = (next() % p.len() as u64) as usize;
            p[i] = next() as u8;
            let _ = ConditionNode::parse(&p);
        }
    }
    let (_, con) = &commit_files("consolidated", "con")[0];
    for _ in 0..500 {
        let mut c = con.clone();
        let i = (next() % c.len() as u64) as usize;
        c[i] = next() as u8;
        let _ = ConsolidatedCommits::parse(&c);
    }
}
