//! `cargo xtask fuzz`: seed the corpora of the cargo-fuzz targets in `fuzz/` from the fixtures
//! in `testdata/`, then run the targets one at a time, each on one core, and print the number
//! of executions, the time and the outcome of each (what `docs/robustness.md` records).
//!
//! The seeds are written as `fuzz/corpus/<target>/seed-<hash>` in the input layouts of
//! `fuzz/src/input.rs` (included here, so both sides agree): schema, enumeration, fragment
//! metadata and array metadata files and their payloads, footers, R-trees and every lazily
//! loaded part, data tiles with their pipelines, commit files, delete conditions, the chunks
//! of each filter made from fixture cells, schema JSON, `--where` texts and cells JSONL.
//! Needs the nightly toolchain and `cargo install cargo-fuzz`. Not run in CI.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use tessera::layers::filters::{Filter, FilterPipeline};
use tessera::layers::fragment::{
    ConsolidatedFragmentMeta, DeleteCommit, Field, Footer, FragmentMetadata, IgnoreFile, LazyPart,
    UpdateCommit, UpdateValue, footer::dim_types,
};
use tessera::layers::schema::ArraySchema;
use tessera::layers::tile::{GenericTiles, read_generic_tile};
use tessera::layers::types::{CELL_VAL_NUM_VAR, Datatype, FilterType};

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../../fuzz/src/input.rs"]
mod input;

use input::Seed;

/// Seeds larger than this are left out (libFuzzer sizes its inputs after the corpus).
const MAX_SEED: usize = 256 * 1024;
/// Chunks of fixture cells encoded for the filter targets are at most this long.
const FILTER_CHUNK: usize = 16 * 1024;

/// The seeds of every target, by target name, deduplicated.
#[derive(Default)]
struct Corpora(BTreeMap<String, BTreeMap<u64, Vec<u8>>>);

impl Corpora {
    fn add(&mut self, target: &str, bytes: Vec<u8>) {
        if bytes.len() <= MAX_SEED {
            self.0.entry(target.to_owned()).or_default().insert(fnv(&bytes), bytes);
        }
    }
}

/// FNV-1a, for stable seed file names.
fn fnv(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// The fuzz targets: the files of `fuzz/fuzz_targets/`.
pub(crate) fn targets(root: &Path) -> Result<Vec<String>> {
    let dir = root.join("fuzz/fuzz_targets");
    let mut out: Vec<String> = fs::read_dir(&dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rs").map(str::to_owned))
        .collect();
    out.sort();
    Ok(out)
}

/// `cargo xtask fuzz`: seeds every corpus, then runs `targets` (all when empty) for `runs`
/// executions each (or `max_time` seconds), one after the other on one core.
pub(crate) fn fuzz(
    root: &Path,
    only: &[String],
    runs: u64,
    max_time: Option<u64>,
    seed_only: bool,
) -> Result<()> {
    let all = targets(root)?;
    for t in only {
        if !all.contains(t) {
            bail!("no fuzz target {t:?}; the targets are: {}", all.join(", "));
        }
    }
    let corpora = seeds(root)?;
    for t in &all {
        let dir = root.join("fuzz/corpus").join(t);
        fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
        let seeds = corpora.0.get(t).map(BTreeMap::len).unwrap_or(0);
        for (h, bytes) in corpora.0.get(t).into_iter().flatten() {
            fs::write(dir.join(format!("seed-{h:016x}")), bytes)?;
        }
        if only.is_empty() || only.contains(t) {
            println!("fuzz/corpus/{t}: {seeds} seeds");
        }
    }
    if seed_only {
        return Ok(());
    }
    let selected: Vec<&String> =
        all.iter().filter(|t| only.is_empty() || only.contains(t)).collect();
    let logs = root.join("target/fuzz");
    fs::create_dir_all(&logs)?;
    let bins = build(root)?;
    let mut rows = Vec::new();
    for t in selected {
        rows.push(run_target(root, &bins, &logs, t, runs, max_time)?);
    }
    println!("\n| target | executions | seconds | exec/s | result |\n|---|---:|---:|---:|---|");
    let mut failed = Vec::new();
    for r in &rows {
        println!(
            "| `{}` | {} | {} | {} | {} |",
            r.target,
            r.execs,
            r.seconds,
            r.execs / r.seconds.max(1),
            r.result
        );
        if r.result != "ok" {
            failed.push(r.target.clone());
        }
    }
    if !failed.is_empty() {
        bail!("fuzz targets failed: {} (logs in target/fuzz/)", failed.join(", "));
    }
    Ok(())
}

struct Outcome {
    target: String,
    execs: u64,
    seconds: u64,
    result: String,
}

/// Builds every target with `cargo +nightly fuzz build` (release, debug assertions,
/// AddressSanitizer) and returns the folder of the binaries.
fn build(root: &Path) -> Result<PathBuf> {
    println!("building the fuzz targets (cargo +nightly fuzz build) ...");
    let status = Command::new("cargo")
        .current_dir(root)
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN")
        .args(["+nightly", "fuzz", "build"])
        .status()
        .context("running cargo +nightly fuzz build (is cargo-fuzz installed?)")?;
    if !status.success() {
        bail!("cargo +nightly fuzz build failed");
    }
    Ok(root.join("fuzz/target/x86_64-unknown-linux-gnu/release"))
}

/// Runs one target's binary on its corpus (one process, one core), its log in
/// `logs/<target>.log` and crashes in `fuzz/artifacts/<target>/`.
fn run_target(
    root: &Path,
    bins: &Path,
    logs: &Path,
    target: &str,
    runs: u64,
    max_time: Option<u64>,
) -> Result<Outcome> {
    let log_path = logs.join(format!("{target}.log"));
    let log = fs::File::create(&log_path)?;
    let artifacts = root.join("fuzz/artifacts").join(target);
    fs::create_dir_all(&artifacts)?;
    println!("fuzzing {target} ...");
    let mut cmd = Command::new(bins.join(target));
    cmd.current_dir(root)
        .arg(root.join("fuzz/corpus").join(target))
        .args(["-print_final_stats=1", "-timeout=20", "-rss_limit_mb=2048"])
        .arg(format!("-runs={runs}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .stdout(Stdio::null())
        .stderr(log);
    if let Some(s) = max_time {
        cmd.arg(format!("-max_total_time={s}"));
    }
    let start = Instant::now();
    let status =
        cmd.status().with_context(|| format!("running {}", bins.join(target).display()))?;
    let elapsed = start.elapsed().as_secs();
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    let execs = text
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    // libFuzzer's own count: "Done N runs in S second(s)".
    let seconds = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Done ")?.split_once(" runs in ")?.1.split(' ').next()?.parse().ok()
        })
        .unwrap_or(elapsed);
    let result = if status.success() {
        "ok".to_owned()
    } else {
        let artifact = text
            .lines()
            .find_map(|l| l.split_once("Test unit written to ").map(|(_, a)| a.trim().to_owned()))
            .unwrap_or_else(|| format!("see {}", log_path.display()));
        format!("FAILED ({artifact})")
    };
    Ok(Outcome { target: target.to_owned(), execs, seconds, result })
}

/// Every file under `dir`, recursively, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The arrays under `testdata/` (folders holding `__schema`), relative to it.
fn arrays(testdata: &Path) -> Vec<String> {
    let mut out: Vec<String> = files(testdata)
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(testdata).ok()?.to_str()?;
            let (array, _) = rel.split_once("/__schema/")?;
            // Encrypted arrays need the key: the `encrypted` target has its own inputs.
            (!array.starts_with("encrypted/")).then(|| array.to_owned())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The seeds of every target, from the fixtures.
fn seeds(root: &Path) -> Result<Corpora> {
    let testdata = root.join("testdata");
    let mut c = Corpora::default();
    for array in arrays(&testdata) {
        let index = input::ARRAYS.iter().position(|a| *a == array).map(|i| i as u8);
        seed_array(&mut c, &testdata.join(&array), index)
            .with_context(|| format!("seeding from testdata/{array}"))?;
    }
    for f in files(&testdata) {
        let name = f.to_string_lossy().into_owned();
        if name.ends_with(".schema.json") || (name.contains("/create/") && name.ends_with(".json"))
        {
            c.add("schema_json", fs::read(&f)?);
        }
    }
    seed_queries(&mut c, &testdata)?;
    Ok(c)
}

/// The seeds one array gives; `index` is its place in `input::ARRAYS`, if it has one.
fn seed_array(c: &mut Corpora, dir: &Path, index: Option<u8>) -> Result<()> {
    let array = tessera::open(dir)?;
    let schema = array.schema().clone();
    let sel = index.unwrap_or(0);
    for f in files(dir) {
        let rel = f.strip_prefix(dir)?.to_string_lossy().into_owned();
        let bytes = fs::read(&f)?;
        let generic = || Seed::default().u8(1).bytes(&bytes).0;
        if rel.starts_with("__schema/__enumerations/") {
            c.add("generic_tile", generic());
            c.add("enumeration", read_generic_tile(&bytes)?);
        } else if rel.starts_with("__schema/") {
            c.add("generic_tile", generic());
            c.add("schema_file", bytes.clone());
            let payload = read_generic_tile(&bytes)?;
            c.add("schema_payload", payload);
            seed_pipelines(c, &ArraySchema::parse_file(&bytes)?);
        } else if rel.starts_with("__meta/") && !rel.ends_with(".vac") {
            c.add("generic_tile", generic());
            c.add("array_metadata", Seed::default().u8(0).bytes(&bytes).0);
            c.add("array_metadata", Seed::default().u8(1).bytes(&read_generic_tile(&bytes)?).0);
        } else if rel.ends_with(".vac") {
            c.add("commit_files", Seed::default().u8(1).bytes(&bytes).0);
        } else if rel.ends_with(".con") {
            c.add("commit_files", Seed::default().u8(0).bytes(&bytes).0);
        } else if rel.ends_with(".del") {
            seed_delete(c, sel, &bytes)?;
        } else if rel.ends_with(".meta") && rel.starts_with("__fragment_meta/") {
            c.add("generic_tile", generic());
            c.add("consolidated_fragment_meta", Seed::default().u8(sel).u8(0).bytes(&bytes).0);
            let payload = read_generic_tile(&bytes)?;
            c.add("consolidated_fragment_meta", Seed::default().u8(sel).u8(1).bytes(&payload).0);
            for e in ConsolidatedFragmentMeta::parse_payload(&payload)?.entries {
                c.add("footer", Seed::default().u8(sel).bytes(&e.footer).0);
            }
        } else if rel.ends_with("__fragment_metadata.tdb") {
            let frag = f.parent().context("fragment folder")?;
            seed_fragment(c, &schema, index, frag, &bytes)?;
        }
        if rel.starts_with("__commits/") || rel.starts_with("__fragments/") {
            let name = rel.split('/').nth(1).unwrap_or_default();
            c.add("commit_files", Seed::default().u8(3).bytes(name.as_bytes()).0);
        }
    }
    let commits: Vec<String> = files(&dir.join("__commits"))
        .iter()
        .filter_map(|p| Some(format!("__commits/{}", p.file_name()?.to_str()?)))
        .collect();
    if !commits.is_empty() {
        let ign = IgnoreFile { paths: commits };
        c.add("commit_files", Seed::default().u8(2).bytes(&ign.to_bytes()).0);
    }
    if let Some(i) = index {
        seed_cells(c, dir, i, &schema)?;
    }
    seed_filters(c, &array)?;
    Ok(())
}

/// `filter_pipeline` seeds: every pipeline of a schema.
fn seed_pipelines(c: &mut Corpora, schema: &ArraySchema) {
    let mut add = |p: &FilterPipeline, dt: Datatype| {
        let dt = input::datatype_byte(dt).unwrap_or(0);
        c.add(
            "filter_pipeline",
            Seed::default().u8(input::version_byte(22)).u8(dt).bytes(&p.to_bytes()).0,
        );
    };
    add(&schema.coords_filters, Datatype::UInt64);
    add(&schema.offsets_filters, Datatype::UInt64);
    add(&schema.validity_filters, Datatype::UInt8);
    for a in &schema.attributes {
        add(&a.filters, a.datatype);
    }
    for d in &schema.dimensions {
        add(&d.filters, d.datatype);
    }
}

/// `.del` seeds for `delete_condition` (file, payload, and an update payload made from it).
fn seed_delete(c: &mut Corpora, sel: u8, bytes: &[u8]) -> Result<()> {
    c.add("generic_tile", Seed::default().u8(1).bytes(bytes).0);
    c.add("delete_condition", Seed::default().u8(sel).u8(0).bytes(bytes).0);
    let payload = read_generic_tile(bytes)?;
    c.add("delete_condition", Seed::default().u8(sel).u8(1).bytes(&payload).0);
    if let Some(condition) = DeleteCommit::parse_file(bytes)?.condition {
        let values = vec![UpdateValue { field: "a".into(), value: 7i32.to_le_bytes().to_vec() }];
        let update = UpdateCommit { condition: Some(condition), values };
        c.add("delete_condition", Seed::default().u8(sel).u8(2).bytes(&update.payload()).0);
    }
    Ok(())
}

/// Seeds from one fragment: its metadata file, footer, R-tree and parts (for arrays of
/// `input::ARRAYS`), and its data tiles (for every array).
fn seed_fragment(
    c: &mut Corpora,
    schema: &ArraySchema,
    index: Option<u8>,
    frag: &Path,
    file: &[u8],
) -> Result<()> {
    let md = FragmentMetadata::parse_all(file, schema)?;
    if let Some(sel) = index {
        c.add("fragment_metadata", Seed::default().u8(sel).bytes(file).0);
        c.add("generic_tile", Seed::default().u8(15).bytes(file).0);
        let footer_len = u64::from_le_bytes(file[file.len() - 8..].try_into()?) as usize;
        let footer_start = file.len() - 8 - footer_len;
        c.add("footer", Seed::default().u8(sel).bytes(&file[footer_start..file.len() - 8]).0);
        c.add("rtree", Seed::default().u8(sel).bytes(&md.rtree.to_bytes(&dim_types(schema))).0);
        let footer = Footer::parse(&file[footer_start..file.len() - 8], schema)?;
        for (part, _) in footer.parts() {
            let Ok(range) = footer.part_range(part, footer_start as u64) else { continue };
            let bytes = &file[range.start as usize..range.end as usize];
            let Ok(payload) = part.decode_tile(bytes, range.start) else { continue };
            let kind = match part {
                LazyPart::RTree => continue,
                LazyPart::TileOffsets(_) => 0,
                LazyPart::TileVarOffsets(_) => 1,
                LazyPart::TileVarSizes(_) => 2,
                LazyPart::TileValidityOffsets(_) => 3,
                LazyPart::TileMins(_) => 4,
                LazyPart::TileMaxs(_) => 5,
                LazyPart::TileSums(_) => 6,
                LazyPart::TileNullCounts(_) => 7,
                LazyPart::FragmentStats => {
                    8 | (u8::from(footer.has_timestamps) << 6)
                        | (u8::from(footer.has_delete_meta) << 7)
                }
                LazyPart::ProcessedConditions => 9,
            };
            c.add("fragment_part", Seed::default().u8(sel).u8(kind).bytes(&payload).0);
        }
    }
    // Data tiles: the first two of each attribute and dimension file.
    let layout = md.footer.layout(schema);
    for idx in 0..layout.num() {
        let (filters, datatype, cvn, nullable) = match layout.field(idx) {
            Some(Field::Attribute(i)) => {
                let a = &schema.attributes[i];
                (&a.filters, a.datatype, a.cell_val_num, a.nullable)
            }
            Some(Field::Dimension(j)) if !schema.is_dense() => {
                let d = &schema.dimensions[j];
                (schema.dimension_filters(d), d.datatype, d.cell_val_num, false)
            }
            _ => continue,
        };
        let field = layout.field(idx).context("field")?;
        let Some(dt) = input::datatype_byte(datatype) else { continue };
        let cvn_sel = input::CELL_VAL_NUMS.iter().position(|&n| n == cvn).unwrap_or(0) as u8;
        let tiles = |name: Option<String>, offsets: &[u64]| -> Vec<Vec<u8>> {
            let Some(bytes) = name.and_then(|n| fs::read(frag.join(n)).ok()) else {
                return Vec::new();
            };
            (0..offsets.len().min(2))
                .filter_map(|t| {
                    let start = offsets[t] as usize;
                    let end = offsets.get(t + 1).map_or(bytes.len(), |&e| e as usize);
                    bytes.get(start..end).map(<[u8]>::to_vec)
                })
                .collect()
        };
        let head = |role: u8, p: &FilterPipeline, op: &FilterPipeline| {
            let p = p.to_bytes();
            let op = op.to_bytes();
            Seed::default()
                .u8(role)
                .u8(input::version_byte(md.footer.version))
                .u8(dt)
                .u8(cvn_sel)
                .u16(p.len() as u16)
                .bytes(&p)
                .u16(op.len() as u16)
                .bytes(&op)
        };
        let fixed = tiles(field.data_file(), &md.tile_offsets[idx]);
        if cvn == CELL_VAL_NUM_VAR {
            let var = tiles(field.var_file(), &md.tile_var_offsets[idx]);
            for (o, d) in fixed.iter().zip(&var) {
                let s = head(1, filters, &schema.offsets_filters).u32(o.len() as u32).bytes(o);
                c.add("tile", s.bytes(d).0);
                let s = head(3, &schema.offsets_filters, &FilterPipeline::default());
                c.add("tile", s.u32(0).bytes(o).0);
            }
        } else {
            for t in &fixed {
                c.add("tile", head(0, filters, &FilterPipeline::default()).u32(0).bytes(t).0);
            }
        }
        if nullable {
            for t in tiles(field.validity_file(), &md.tile_validity_offsets[idx]) {
                let s = head(2, &schema.validity_filters, &FilterPipeline::default());
                c.add("tile", s.u32(0).bytes(&t).0);
            }
        }
    }
    for t in GenericTiles::new(file).take(3).flatten() {
        c.add("generic_tile", Seed::default().u8(1).bytes(&file[t.0 as usize..]).0);
    }
    Ok(())
}

/// `cells_jsonl` seeds: the first cells of the array's `.cells.jsonl`.
fn seed_cells(c: &mut Corpora, dir: &Path, sel: u8, schema: &ArraySchema) -> Result<()> {
    let jsonl = dir.with_extension("cells.jsonl");
    let Ok(text) = fs::read_to_string(&jsonl) else { return Ok(()) };
    let lines: Vec<&str> = text.lines().take(if schema.is_dense() { 400 } else { 40 }).collect();
    let body = lines.join("\n");
    c.add("cells_jsonl", Seed::default().u8(sel).u8(0).bytes(body.as_bytes()).0);
    if let Some(first) = lines.first() {
        c.add("cells_jsonl", Seed::default().u8(sel).u8(1).bytes(first.as_bytes()).0);
    }
    Ok(())
}

/// `query_condition` seeds: the `--where` texts of the recorded queries, for arrays of
/// `input::ARRAYS`.
fn seed_queries(c: &mut Corpora, testdata: &Path) -> Result<()> {
    for f in files(&testdata.join("queries")) {
        if f.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        for line in fs::read_to_string(&f)?.lines() {
            let q: serde_json::Value = serde_json::from_str(line)?;
            let Some(array) = q["array"].as_str() else { continue };
            let Some(sel) = input::ARRAYS.iter().position(|a| *a == array) else { continue };
            let args: Vec<&str> =
                q["args"].as_array().into_iter().flatten().filter_map(|a| a.as_str()).collect();
            for w in args.windows(2).filter(|w| w[0] == "--where") {
                c.add("query_condition", Seed::default().u8(sel as u8).bytes(w[1].as_bytes()).0);
            }
        }
    }
    Ok(())
}

/// `filter_<name>` seeds: chunks of the array's cells encoded by each filter (with the
/// options the fixtures use and the defaults), as the first filter of a pipeline sees them.
fn seed_filters(c: &mut Corpora, array: &tessera::Array) -> Result<()> {
    let schema = array.schema();
    let Ok(result) = array.read().execute() else { return Ok(()) };
    let version = 22;
    for col in &result.columns {
        let Some(dt) = input::datatype_byte(col.datatype) else { continue };
        let mut filters: Vec<Filter> =
            FilterType::ALL.iter().map(|&t| Filter::with_defaults(t)).collect();
        if let Some(a) = schema.attribute(&col.name) {
            filters.extend(a.filters.filters.iter().copied());
        }
        let var = col.cell_val_num == CELL_VAL_NUM_VAR;
        let cells = if var { 1 } else { col.cell_val_num as usize };
        let cvn_sel = [1, 2, 3, 4, 8].iter().position(|&n| n == cells).unwrap_or(0) as u8;
        let cell_size = col.datatype.size() * cells;
        let len = col.data.len().min(FILTER_CHUNK) / cell_size.max(1) * cell_size;
        let chunk = &col.data[..len];
        for f in filters {
            let Ok(codec) = FilterPipeline::new(vec![f]).codec(col.datatype, cell_size, version)
            else {
                continue;
            };
            let encoded = if codec.is_string_path() {
                let Some(offsets) = &col.offsets else { continue };
                codec.encode_strings(&col.data, offsets)
            } else {
                codec.encode_chunk(chunk)
            };
            let Ok(e) = encoded else { continue };
            let Ok(md_len) = u16::try_from(e.metadata.len()) else { continue };
            let mut options = Vec::new();
            f.write(&mut options);
            let options = &options[5..];
            let target = format!("filter_{}", f.filter_type().name());
            let seed = Seed::default()
                .u8(dt)
                .u8(cvn_sel)
                .u8(input::version_byte(version))
                .u8(options.len() as u8)
                .bytes(options)
                .u16(md_len)
                .bytes(&e.metadata)
                .bytes(&e.data);
            c.add(&target, seed.0);
        }
    }
    Ok(())
}
