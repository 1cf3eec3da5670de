//! The write conformance step: every fixture array is written again by Tessera (same schema
//! files, same cells, same timestamps, same delete commits and array metadata), the copy's
//! fragments are compared with libtiledb's part by part and byte by byte, and libtiledb then
//! reads both arrays and checks that they hold the same cells (`check_writes.py`).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tessera::layers::filters::Filter;
use tessera::layers::fragment::FragmentMetadata;
use tessera::layers::query::metadata::{MetadataWriter, parse_payload};
use tessera::layers::query::{Array, FRAGMENT_METADATA_FILE};
use tessera::layers::storage::{LocalStorage, Storage};
use tessera::{ArraySchema, Layout, ReadLayout};

/// Where the copies go.
pub(crate) const WRITES_OUT: &str = "target/conformance/writes";
/// The fixture families whose arrays are rewritten.
const FAMILIES: &[&str] = &["filters", "fragments"];

/// What happened to one array.
struct Outcome {
    /// Every fragment was rewritten (so the whole array can be compared with libtiledb).
    complete: bool,
    /// Notes on fragments not rewritten or compared.
    notes: Vec<String>,
    /// Unexpected differences from libtiledb's bytes.
    failures: Vec<String>,
    /// Fragments whose metadata and data files are byte-identical to libtiledb's.
    identical: usize,
    /// Fragments rewritten.
    written: usize,
}

/// Rewrites every fixture array, compares bytes, and writes `target/conformance/writes/
/// pairs.json` listing `[original, copy]` pairs for the libtiledb check. Fails on any
/// unexpected byte difference or write error.
pub(crate) fn rewrite_fixtures(root: &Path) -> Result<()> {
    let out = root.join(WRITES_OUT);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    let mut pairs = Vec::new();
    let mut failures = Vec::new();
    let (mut written, mut identical) = (0, 0);
    for family in FAMILIES {
        let dir = root.join("testdata").join(family);
        let mut names: Vec<String> = fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("__schema").is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
        names.sort();
        for name in names {
            let src = dir.join(&name);
            let dst = out.join(family).join(&name);
            let what = format!("{family}/{name}");
            match rewrite_array(&src, &dst) {
                Ok(o) => {
                    for n in &o.notes {
                        println!("xtask: writes {what}: {n}");
                    }
                    for f in &o.failures {
                        println!("FAIL writes {what}: {f}");
                    }
                    written += o.written;
                    identical += o.identical;
                    if !o.failures.is_empty() {
                        failures.push(what.clone());
                    }
                    if o.complete {
                        pairs.push(json!([
                            format!("testdata/{family}/{name}"),
                            format!("{WRITES_OUT}/{family}/{name}")
                        ]));
                    }
                }
                Err(e) => {
                    println!("FAIL writes {what}: {e:#}");
                    failures.push(what);
                }
            }
        }
    }
    fs::create_dir_all(&out)?;
    fs::write(out.join("pairs.json"), serde_json::to_vec_pretty(&Value::Array(pairs))?)?;
    println!(
        "xtask: writes: {written} fragments rewritten by Tessera, {identical} byte-identical to libtiledb's"
    );
    if !failures.is_empty() {
        bail!(
            "Tessera's rewrite differs from libtiledb on {}: {}",
            failures.len(),
            failures.join(", ")
        );
    }
    Ok(())
}

fn copy_dir(src: &Path, dst: &Path) -> Result<()> {
    fs::create_dir_all(dst)?;
    for e in fs::read_dir(src)? {
        let e = e?;
        let to = dst.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &to)?;
        } else {
            fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}

/// Whether libtiledb's bytes for fragments of this schema are reproducible: LZ4 blocks differ
/// between lz4 implementations (both decode each other's).
fn deterministic_filters(schema: &ArraySchema) -> bool {
    let lz4 =
        |p: &tessera::FilterPipeline| p.filters.iter().any(|f| matches!(f, Filter::Lz4 { .. }));
    !(schema.attributes.iter().any(|a| lz4(&a.filters))
        || schema.dimensions.iter().any(|d| lz4(&d.filters))
        || lz4(&schema.coords_filters)
        || lz4(&schema.offsets_filters)
        || lz4(&schema.validity_filters))
}

fn rewrite_array(src: &Path, dst: &Path) -> Result<Outcome> {
    let mut o = Outcome {
        complete: true,
        notes: Vec::new(),
        failures: Vec::new(),
        identical: 0,
        written: 0,
    };
    fs::create_dir_all(dst)?;
    for d in tessera::layers::query::dirs::ALL {
        fs::create_dir_all(dst.join(d))?;
    }
    copy_dir(&src.join("__schema"), &dst.join("__schema"))?;
    let src_storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(src));
    let dst_storage: Arc<dyn Storage> = Arc::new(LocalStorage::new(dst).with_sync(false));
    let latest = Array::open_at(src_storage.clone(), u64::MAX - 1)?;
    // Delete and update commits: copied as they are (their writer has its own tests).
    for c in &latest.directory().deletes {
        if c.inline.is_some() {
            o.complete = false;
            o.notes.push(format!("{}: a delete inside a .con file, not copied", c.name.as_str()));
            continue;
        }
        let file = format!("__commits/{}", c.name.with_extension(c.kind.extension()));
        fs::copy(src.join(&file), dst.join(&file))?;
    }
    // Array metadata: each file's entries written again at its timestamp.
    let meta = latest.metadata()?;
    for f in meta.files() {
        let bytes = src_storage.read(&format!("__meta/{f}"))?;
        let payload = tessera::layers::tile::read_generic_tile(&bytes)?;
        let mut w = MetadataWriter::new(f.t2);
        for e in parse_payload(&payload)? {
            match e.value {
                Some(v) => w.put(e.key, v)?,
                None => w.delete(e.key)?,
            };
        }
        w.commit(dst_storage.as_ref())?;
    }
    let schema = latest.schema().clone();
    let compare_bytes = deterministic_filters(&schema);
    let mut names_seen = BTreeSet::new();
    for frag in latest.fragments() {
        let name = frag.name().clone();
        names_seen.insert(name.as_str().to_owned());
        let footer = frag.footer();
        let (t1, t2) = name.timestamp_range();
        if t1 != t2 || footer.has_timestamps || footer.has_delete_meta {
            o.complete = false;
            o.notes.push(format!(
                "{}: a consolidated fragment, not rewritten (consolidation writes those)",
                name.as_str()
            ));
            continue;
        }
        let window = Array::open_between(src_storage.clone(), t1, t2)?;
        if window.fragments().len() != 1 || window.fragments()[0].name() != &name {
            o.complete = false;
            o.notes.push(format!("{}: shares its timestamp with another fragment", name.as_str()));
            continue;
        }
        let target = Array::open_between(dst_storage.clone(), 0, t2)?;
        let fschema = window.schema();
        let dense = fschema.is_dense();
        let mut read = window.read().layout(if dense {
            ReadLayout::RowMajor
        } else {
            ReadLayout::GlobalOrder
        });
        let mut write = target.write().timestamp(t2);
        if dense {
            let ned =
                footer.non_empty_domain.as_ref().context("a dense fragment without a domain")?;
            for (r, d) in ned.0.iter().zip(&fschema.dimensions) {
                read = read.range_bytes(&d.name, r.low.clone(), r.high.clone());
                write = write.range_bytes(&d.name, r.low.clone(), r.high.clone());
            }
            read = read.with_coordinates(false);
        } else {
            write = write.layout(Layout::Unordered);
        }
        let cells = read.execute().with_context(|| format!("reading {}", name.as_str()))?;
        for c in cells.columns {
            write = write.column(c);
        }
        let copy = write
            .submit()
            .with_context(|| format!("writing {}", name.as_str()))?
            .context("the write made no fragment")?;
        o.written += 1;
        // Give the copy the original's name, so both arrays list the same fragments.
        let from = format!("__fragments/{}", copy.as_str());
        let to = format!("__fragments/{}", name.as_str());
        dst_storage.rename(&from, &to)?;
        dst_storage.remove(&format!("__commits/{}", copy.with_extension("wrt")))?;
        dst_storage
            .publish(&format!("__commits/{}", name.with_extension("wrt")), Default::default())?;
        let dups = !dense && fschema.allows_duplicates;
        let rules = Rules {
            bytes: compare_bytes && !dups,
            // Scale-float is lossy: the cells read back are not the cells libtiledb was given,
            // so their statistics differ.
            stats: !has_filter(fschema, |f| matches!(f, Filter::ScaleFloat { .. })),
            // libtiledb's dense ordered writer copies var min/max values into slot 0 reading
            // past shorter values (uninitialised bytes) when a write has more attributes than
            // tiles.
            var_min_max: !(dense && fschema.attributes.len() as u64 > frag.tile_num()?),
            // Bit width reduction writes an uninitialised window offset for windows it cannot
            // narrow.
            skip_files: fschema
                .attributes
                .iter()
                .enumerate()
                .filter(|(_, a)| {
                    a.filters.filters.iter().any(|f| matches!(f, Filter::BitWidthReduction { .. }))
                })
                .map(|(i, _)| format!("a{i}.tdb"))
                .collect(),
        };
        match compare_fragment(src, dst, name.as_str(), fschema, &rules) {
            Ok(true) => o.identical += 1,
            Ok(false) => o.notes.push(format!(
                "{}: not compared byte for byte ({})",
                name.as_str(),
                if dups { "duplicates keep an unspecified order" } else { "lz4 output differs" }
            )),
            Err(e) => o.failures.push(format!("{}: {e:#}", name.as_str())),
        }
    }
    Ok(o)
}

/// Compares a rewritten fragment with libtiledb's: every decoded metadata part, and (when
/// `bytes`) the metadata file and every data file byte for byte. `Ok(true)` when identical,
/// `Ok(false)` when only the decoded parts were compared.
/// What a fragment comparison can expect to be equal.
struct Rules {
    /// File sizes, tile offsets and data files (not with lz4, nor with duplicates).
    bytes: bool,
    /// Tile and fragment statistics.
    stats: bool,
    /// Min/max values of var-sized fields.
    var_min_max: bool,
    /// Data files libtiledb fills with uninitialised bytes.
    skip_files: Vec<String>,
}

fn has_filter(schema: &ArraySchema, pred: impl Fn(&Filter) -> bool) -> bool {
    schema.attributes.iter().any(|a| a.filters.filters.iter().any(&pred))
}

fn compare_fragment(
    src: &Path,
    dst: &Path,
    name: &str,
    schema: &ArraySchema,
    rules: &Rules,
) -> Result<bool> {
    let bytes = rules.bytes;
    let a_dir = src.join("__fragments").join(name);
    let b_dir = dst.join("__fragments").join(name);
    let a = fs::read(a_dir.join(FRAGMENT_METADATA_FILE))?;
    let b = fs::read(b_dir.join(FRAGMENT_METADATA_FILE))?;
    let ma = FragmentMetadata::parse_all(&a, schema)?;
    let mb = FragmentMetadata::parse_all(&b, schema)?;
    let mut diffs = Vec::new();
    let mut check = |what: &str, same: bool| {
        if !same {
            diffs.push(what.to_owned());
        }
    };
    let (mut fa, mut fb) = (ma.footer.clone(), mb.footer.clone());
    if !bytes {
        // File sizes and tile offsets follow the filtered sizes.
        fa.file_sizes.clear();
        fb.file_sizes.clear();
        fa.file_var_sizes.clear();
        fb.file_var_sizes.clear();
        fa.file_validity_sizes.clear();
        fb.file_validity_sizes.clear();
    }
    fa.offsets = Default::default();
    fb.offsets = Default::default();
    check("footer", fa == fb);
    check("R-tree", ma.rtree == mb.rtree);
    if bytes {
        check("tile offsets", ma.tile_offsets == mb.tile_offsets);
        check("tile var offsets", ma.tile_var_offsets == mb.tile_var_offsets);
        check("tile validity offsets", ma.tile_validity_offsets == mb.tile_validity_offsets);
    }
    check("tile var sizes", ma.tile_var_sizes == mb.tile_var_sizes);
    let per_field = |what: &str, a: &[String], b: &[String]| -> Option<String> {
        let bad: Vec<String> = a
            .iter()
            .zip(b)
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(i, (x, y))| format!("field {i}: {x} vs {y}"))
            .collect();
        (!bad.is_empty()).then(|| format!("{what} ({})", bad.join("; ")))
    };
    let n = ma.tile_mins.len().min(mb.tile_mins.len());
    let fields = ma.fields(schema)?;
    let mm = |i: usize| rules.stats && (rules.var_min_max || !fields[i].var);
    let dbg = |v: &dyn Fn(usize) -> String, n: usize| {
        (0..n).map(|i| if mm(i) { v(i) } else { String::new() }).collect::<Vec<_>>()
    };
    let dbg_s = |v: &dyn Fn(usize) -> String, n: usize| {
        (0..n).map(|i| if rules.stats { v(i) } else { String::new() }).collect::<Vec<_>>()
    };
    for (what, a, b) in [
        (
            "tile mins",
            dbg(&|i| format!("{:?}", ma.tile_mins[i]), n),
            dbg(&|i| format!("{:?}", mb.tile_mins[i]), n),
        ),
        (
            "tile maxs",
            dbg(&|i| format!("{:?}", ma.tile_maxs[i]), n),
            dbg(&|i| format!("{:?}", mb.tile_maxs[i]), n),
        ),
        (
            "tile sums",
            dbg_s(&|i| format!("{:?}", ma.tile_sums[i]), n),
            dbg_s(&|i| format!("{:?}", mb.tile_sums[i]), n),
        ),
        (
            "tile null counts",
            dbg(&|i| format!("{:?}", ma.tile_null_counts[i]), n),
            dbg(&|i| format!("{:?}", mb.tile_null_counts[i]), n),
        ),
    ] {
        if let Some(d) = per_field(what, &a, &b) {
            check(&d, false);
        }
    }
    let whole_stats = rules.stats && rules.var_min_max;
    check(
        "fragment min/max/sum/null count",
        !whole_stats || ma.fragment_stats == mb.fragment_stats,
    );
    check("processed conditions", ma.processed_conditions == mb.processed_conditions);
    if bytes {
        check(FRAGMENT_METADATA_FILE, !whole_stats || a == b);
        let mut files: Vec<String> = fs::read_dir(&a_dir)?
            .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_owned))
            .filter(|f| f != FRAGMENT_METADATA_FILE)
            .collect();
        files.sort();
        let mut b_files: Vec<String> = fs::read_dir(&b_dir)?
            .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_owned))
            .filter(|f| f != FRAGMENT_METADATA_FILE)
            .collect();
        b_files.sort();
        if files != b_files {
            diffs.push(format!("data files {files:?} vs {b_files:?}"));
        } else {
            for f in files.iter().filter(|f| !rules.skip_files.contains(f)) {
                if fs::read(a_dir.join(f))? != fs::read(b_dir.join(f))? {
                    diffs.push(f.clone());
                }
            }
        }
    }
    if diffs.is_empty() {
        Ok(bytes)
    } else {
        bail!("differs from libtiledb's in: {}", diffs.join(", "))
    }
}
