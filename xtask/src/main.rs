//! Project automation for Tessera, run as `cargo xtask <command>`.
//!
//! * `venv`: create the reference Python environment (`target/reference-venv`, tiledb-py
//!   0.36.1 = libtiledb 2.30.0) if it is missing; quick when it is there.
//! * `fixtures [--family NAME ...]`: regenerate the golden fixtures under `testdata/` (all
//!   families, or only those named) with the reference library (`xtask/fixtures/generate.py`),
//!   then check them.
//! * `fixtures-old [--release V ...] [--tiledb-repo PATH]`: regenerate `testdata/old/` with
//!   older tiledb releases, one venv each under `target/old-venvs/` (`xtask/src/old.rs`,
//!   `xtask/fixtures/gen_old.py`). Never run in CI.
//! * `conformance`: re-read every fixture with the reference library and compare it with its
//!   expected cells, schema JSON, fragment listings and manifest (`xtask/fixtures/check.py`);
//!   then the create conformance: every `testdata/create/<name>.json` is created with tiledb-py
//!   and checked (which validates the inputs and the checker), then built into an array by
//!   `tessera create` (when the `tessera-cli` package exists) and checked by
//!   `xtask/fixtures/check_create.py` against libtiledb; then the fragments conformance:
//!   `tessera fragments <array> --json` on every array of `testdata/fragments/` (when the CLI
//!   has that subcommand), compared with the expected `.fragments.json` by
//!   `xtask/fixtures/check_tessera_fragments.py`; then the read conformance: every recorded
//!   query of `testdata/queries/` (seeded random subarrays, multi-ranges, conditions, layouts
//!   and time points, with libtiledb's results) is run through a tiledb-py stand-in of the
//!   CLI (which validates the expectations and the checker, and checks that altered
//!   expectations fail), then through `tessera read` / `tessera aggregate` when the CLI has
//!   them, by `xtask/fixtures/check_queries.py`; then the writes-cli conformance:
//!   `tessera write`, `delete` and `meta put` / `delete` on new arrays, read back by libtiledb
//!   (`xtask/fixtures/check_cli_writes.py`); then the consolidation conformance: fixture
//!   arrays consolidated and vacuumed by `tessera consolidate` / `tessera vacuum` and, in a
//!   twin copy, by libtiledb, in each mode; the trees and bytes compared, and each array read
//!   by both engines (`xtask/fixtures/check_consolidation.py`); then the evolution
//!   conformance: arrays libtiledb wrote evolved step by step by `tessera evolve` and, in a
//!   twin copy, by tiledb-py's `ArraySchemaEvolution`; new files, schemas and reads at every
//!   step compared, invalid evolutions refused by both (`xtask/fixtures/check_evolution.py`);
//!   then the lifecycle conformance: fragments deleted by range and by name, arrays deleted,
//!   upgraded and consolidated from a list of fragments by `tessera` and by libtiledb on
//!   twin copies, trees and reads compared (`xtask/fixtures/check_lifecycle.py`); then the
//!   groups conformance:
//!   `tessera ls --json` on the groups libtiledb and tiledbsoma wrote (`testdata/groups`),
//!   their arrays read by `tessera read`, and groups made by `tessera group` / `tessera meta`
//!   read by libtiledb (`xtask/fixtures/check_groups.py`); then the s3 conformance: arrays
//!   and groups written by libtiledb to a local S3 emulator (moto's server, started and
//!   stopped by the script) read through `s3://` URIs by `tessera`, and the other way round
//!   (`xtask/fixtures/check_s3.py`); then the encryption conformance: the arrays libtiledb
//!   wrote with an AES-256-GCM key (`testdata/encrypted`) read by `tessera` with the key, and
//!   encrypted arrays and a group `tessera` writes read by libtiledb
//!   (`xtask/fixtures/check_encrypted.py`); then the WebP conformance: the WebP arrays
//!   libtiledb wrote (`testdata/webp`) read by `tessera`, and lossless WebP arrays `tessera`
//!   writes read by libtiledb (`xtask/fixtures/check_webp.py`); then the old-formats
//!   conformance: the arrays of formats 3 to 9 (`testdata/old/tiledb-0.4.4` to `-0.9.5`) read
//!   by `tessera`, and fragments `tessera` writes into copies of them read by libtiledb
//!   (`xtask/fixtures/check_old_formats.py`).
//! * `test`: `cargo test --workspace`, then the facade's `ndarray` feature tests, then the S3
//!   tests (`#[ignore]`d in plain `cargo test`: `cargo test --test s3 -- --ignored` of
//!   tessera-object-store and tessera-cli, against moto from the venv), then the Ballista
//!   checks (`crates/tessera-ballista`, outside the workspace, built once: the `proto`
//!   codec round trips, and a scheduler with two executors as processes answering SQL over
//!   local and S3 arrays as one node does), then the doc check
//!   (`cargo doc --workspace --no-deps` with rustdoc warnings denied: broken intra-doc links
//!   fail), then every `tessera` command of the README's `sh` blocks against `testdata`
//!   (`readme.rs`), then `conformance`, then the
//!   benchmarks' checks
//!   (the criterion benchmarks compiled in the test profile, `cargo test --workspace --benches --no-run`,
//!   and `bench --smoke --runs 1`: every workload once on
//!   tiny arrays, both engines' results compared, nothing timed against a limit). This is the
//!   project's test command.
//! * `crash [--kills N] [--cells N] [--seed S]`: the crash harness in full
//!   (`crates/tessera-cli/tests/crash.rs` in release mode): `tessera write`, `consolidate` and
//!   `vacuum` killed with SIGKILL at random points N times (default 100), the array checked
//!   after each kill. CI runs a short version (20 kills) as part of `cargo test`.
//! * `bench [--quick | --smoke] [--only NAME ...] [--runs N] [--list] [--regenerate]`: the same
//!   workloads in Tessera (`tessera-bench`, the `bench/` crate, built in release mode) and in
//!   libtiledb (tiledb-py), reads and writes, each run in its own process, alternating,
//!   median of the runs; arrays generated once by libtiledb under `target/bench/data` (and
//!   the write workloads' inputs under `target/bench/inputs`); a table on stdout and
//!   `target/bench/summary.json` (`xtask/bench/bench.py`). CI runs only the smoke size.
//!
//! * `bad-corpus`: regenerate `testdata/bad/` (truncated, bit-flipped, length-inflated and
//!   wrong-version variants of every file kind, with `manifest.json`) from the fixtures
//!   (`xtask/src/bad.rs`); `crates/tessera/tests/bad_data.rs` asserts each file's error.
//! * `fuzz [--target T ...] [--runs N] [--max-time S] [--seed-only]`: seed the corpora of the
//!   cargo-fuzz targets in `fuzz/` from `testdata/`, then run each target (all, or those
//!   named) for N executions (default 1,000,000) one after the other on one core, and print
//!   a table of executions, times and results (`xtask/src/fuzz.rs`, `docs/robustness.md`).
//!   Needs the nightly toolchain and cargo-fuzz. Not run in CI.
//!
//! Every command that needs Python creates the venv first; nothing is installed system-wide.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

mod bad;
mod fuzz;
mod old;
mod readme;
mod writes;

/// The packages of the reference environment. Changing this list rebuilds the venv.
/// moto's S3 server is the emulator of the `s3` conformance step and of the object-store
/// tests (`cargo test --test s3 -- --ignored`): `moto[s3]` with the two packages its server needs, not
/// `moto[server]`, which pulls in every AWS service's dependencies (several hundred MB that
/// a CI machine short of disk could not hold).
/// pytest, pandas (tiledb-py's dataframes need pandas < 3) and pyarrow run the Python
/// package's tests (`python/tests`) against tiledb-py.
const REFERENCE_PACKAGES: &[&str] = &[
    "tiledb==0.36.1",
    "numpy==2.4.6",
    "moto[s3]==5.2.5",
    "flask==3.1.3",
    "flask-cors==6.0.5",
    "pytest==9.2.0",
    "pandas==2.3.3",
    "pyarrow==26.0.1",
    // tessera.dask and the xarray backend are tested on a local Dask cluster, and against
    // what TileDB-CF writes.
    "dask[array,dataframe]==2026.8.0",
    "distributed==2026.8.0",
    "xarray==2026.9.0",
    "tiledb-cf==0.9.1",
];
/// Checked after installation: (tiledb-py version, libtiledb version).
const EXPECTED_VERSIONS: &str = "0.36.1 2.30.0";
/// Written into the venv once it is complete; holds the package list it was built from.
const STAMP_FILE: &str = ".tessera-reference";
/// The fixture families: the directories under `testdata/` that the generator owns (deleted
/// before regenerating).
const GENERATED_DIRS: &[&str] =
    &["filters", "schemas", "fragments", "queries", "groups", "encrypted", "webp"];
/// The schema JSON inputs of the create conformance step.
const CREATE_INPUTS: &str = "testdata/create";
/// Where `tessera create` makes the arrays of the create conformance step.
const CREATE_OUT: &str = "target/conformance/create";
/// Where the reference run (tiledb-py) of the create conformance step makes its arrays.
const CREATE_REFERENCE_OUT: &str = "target/conformance/create-reference";
/// The benchmark orchestrator (run with the venv python).
const BENCH_SCRIPT: &str = "xtask/bench/bench.py";
/// The manifest whose presence means the CLI package exists in the workspace.
const CLI_MANIFEST: &str = "crates/tessera-cli/Cargo.toml";
/// The `fragments` fixture family: arrays with `<name>.fragments.json` expectations.
const FRAGMENTS_FIXTURES: &str = "testdata/fragments";
/// Where the fragments conformance step stores what `tessera fragments --json` printed.
const FRAGMENTS_OUT: &str = "target/conformance/fragments";
/// The `queries` fixture family: recorded read and aggregate queries with libtiledb's results.
const QUERIES_FIXTURES: &str = "testdata/queries";
/// Where the writes-cli conformance step makes its arrays (and their input files).
const WRITES_CLI_OUT: &str = "target/conformance/writes-cli";
/// Where the consolidation conformance step copies the fixture arrays it consolidates.
const CONSOLIDATION_OUT: &str = "target/conformance/consolidation";
/// Where the evolution conformance step makes its arrays.
const EVOLUTION_OUT: &str = "target/conformance/evolution";
/// Where the lifecycle conformance step copies its arrays.
const LIFECYCLE_OUT: &str = "target/conformance/lifecycle";
/// Where the groups conformance step makes its groups.
const GROUPS_OUT: &str = "target/conformance/groups";
/// Where the encryption conformance step makes its encrypted arrays and group.
const ENCRYPTED_OUT: &str = "target/conformance/encrypted";
/// Where the WebP conformance step makes its arrays.
const WEBP_OUT: &str = "target/conformance/webp";
/// Where the old-formats conformance step writes into copies of the fixtures of formats 3-9.
const OLD_FORMATS_OUT: &str = "target/conformance/old-formats";

#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", about = "Tessera project automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the reference venv (target/reference-venv) if missing, and print its python.
    Venv,
    /// Delete and regenerate the golden fixtures in testdata/ with libtiledb, then check them.
    Fixtures {
        /// Regenerate only this family (repeatable): filters, schemas, fragments, queries or
        /// groups (which needs tiledbsoma: target/soma-venv is made for it).
        /// Default: all of them. The others are left as they are (and still checked). The
        /// queries read the filters and fragments arrays, so they come last.
        #[arg(long = "family", value_name = "FAMILY")]
        families: Vec<String>,
    },
    /// Regenerate testdata/old/: arrays written by older tiledb releases, each in its own venv
    /// under target/old-venvs (xtask/src/old.rs), and the older arrays of TileDB's own
    /// repository described by libtiledb 2.30. Never run in CI.
    FixturesOld {
        /// Only this release (repeatable), e.g. 0.19.1 or 0.4.4. Default: all of them.
        #[arg(long = "release", value_name = "VERSION")]
        releases: Vec<String>,
        /// A checkout of TileDB-Inc/TileDB: copy its older test arrays too (alone: only
        /// those).
        #[arg(long, value_name = "PATH")]
        tiledb_repo: Option<PathBuf>,
    },
    /// Re-read every fixture with libtiledb and compare with the committed expectations, then
    /// check `tessera create` against libtiledb on testdata/create/*.json,
    /// `tessera fragments --json` against the fragments family, and `tessera read` /
    /// `tessera aggregate` against the recorded queries of testdata/queries, and Tessera's
    /// writes (a rewrite of every fixture, and what `tessera write`, `delete` and `meta put`
    /// store) against libtiledb.
    Conformance {
        /// Run only this step (repeatable): fixtures, create, fragments, queries, writes,
        /// writes-cli, consolidation, groups.
        #[arg(long = "only", value_name = "STEP")]
        only: Vec<String>,
    },
    /// Run `cargo test --workspace`, then the conformance check. Extra arguments after `--`
    /// go to `cargo test`.
    Test {
        /// Arguments passed on to `cargo test --workspace`.
        #[arg(last = true)]
        cargo_args: Vec<OsString>,
    },
    /// Run the crash harness in full: `tessera write`, `consolidate` and `vacuum` killed with
    /// SIGKILL at random points, the array checked after every kill (release mode; CI runs
    /// a short version in `cargo test`).
    Crash {
        /// How many kills.
        #[arg(long, default_value_t = 100)]
        kills: u64,
        /// Cells per write (200 000 cells are about 4 MB, 400 tiles per field).
        #[arg(long, default_value_t = 200_000)]
        cells: u64,
        /// Replay a run with this seed (printed by every run).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Regenerate testdata/bad/ (corrupt variants of every file kind, and manifest.json) from
    /// the fixtures; crates/tessera/tests/bad_data.rs asserts the error of each file.
    BadCorpus,
    /// Seed the fuzz corpora from testdata/ and run the cargo-fuzz targets of fuzz/ one at a
    /// time on one core (needs `cargo +nightly` and `cargo install cargo-fuzz`). Not run in CI.
    Fuzz {
        /// Run only this target (repeatable). Default: every file of fuzz/fuzz_targets/.
        #[arg(long = "target", value_name = "T")]
        targets: Vec<String>,
        /// Executions per target.
        #[arg(long, default_value_t = 1_000_000)]
        runs: u64,
        /// Stop each target after this many seconds, whatever the count.
        #[arg(long, value_name = "S")]
        max_time: Option<u64>,
        /// Only write the seed corpora (`fuzz/corpus/<target>/seed-*`).
        #[arg(long)]
        seed_only: bool,
    },
    /// Benchmark Tessera against libtiledb on the same reads and writes (each engine in its
    /// own process, alternating, median of the runs); prints a table and writes
    /// target/bench/summary.json. Arrays are generated once by libtiledb under
    /// target/bench/data, write inputs under target/bench/inputs. CI runs only `--smoke`.
    Bench {
        /// Smaller arrays (about 30 s instead of about 6 min, plus the first generation).
        #[arg(long)]
        quick: bool,
        /// Tiny arrays: checks that both drivers run every workload and agree (CI runs this
        /// with `--runs 1`); the times mean nothing.
        #[arg(long, conflicts_with = "quick")]
        smoke: bool,
        /// Run only this workload (repeatable; shell-style wildcards, e.g. 'dense_*').
        #[arg(long = "only", value_name = "NAME")]
        only: Vec<String>,
        /// Runs per engine and workload; the median is reported.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// List the workloads and exit.
        #[arg(long)]
        list: bool,
        /// Regenerate the selected workloads' arrays even if they are there.
        #[arg(long)]
        regenerate: bool,
    },
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<()> {
    let cli = Cli::parse();
    let root = workspace_root()?;
    match cli.command {
        Cmd::Venv => {
            let python = ensure_venv(&root)?;
            println!("{}", python.display());
        }
        Cmd::Fixtures { families } => fixtures(&root, &families)?,
        Cmd::FixturesOld { releases, tiledb_repo } => {
            old::fixtures_old(&root, &releases, tiledb_repo.as_deref())?;
        }
        Cmd::Conformance { only } => conformance(&root, &only)?,
        Cmd::Test { cargo_args } => {
            let python = ensure_venv(&root)?;
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = Command::new(&cargo);
            cmd.current_dir(&root).args(["test", "--workspace"]).args(&cargo_args);
            run(&mut cmd, "cargo test --workspace")?;
            // The facade's optional feature: the ndarray round trips and the `nd` module's
            // examples, only (the facade's other tests ran above, and do not change with it).
            // `tessera-storage/testing` is on in the workspace run (dev-dependencies), so
            // asking for it here too lets this run reuse that build of the engine.
            for target in ["--test=ndarray", "--doc"] {
                let mut cmd = Command::new(&cargo);
                cmd.current_dir(&root).args([
                    "test",
                    "-p",
                    "tessera",
                    "--features",
                    "ndarray,tessera-storage/testing",
                    target,
                ]);
                run(
                    cmd.args(&cargo_args),
                    &format!("cargo test -p tessera --features ndarray {target}"),
                )?;
            }
            // The S3 tests are #[ignore]d in plain `cargo test`: they start moto's S3 server
            // from the venv on loopback, here.
            let dashes = cargo_args.iter().position(|a| a == "--").unwrap_or(cargo_args.len());
            let (cargo_part, test_part) = cargo_args.split_at(dashes);
            let mut cmd = Command::new(&cargo);
            cmd.current_dir(&root)
                // `--workspace` (the packages with an `s3` test: tessera-object-store and
                // tessera-cli) resolves features as the run above did, so nothing is rebuilt.
                .args(["test", "--workspace", "--test", "s3"])
                .args(cargo_part)
                .args(["--", "--ignored"])
                .args(test_part.iter().skip(1))
                .env("TESSERA_S3_PYTHON", &python);
            run(&mut cmd, "the S3 emulator tests (cargo test --test s3 -- --ignored)")?;
            ballista_checks(&root, &python)?;
            doc_check(&root)?;
            let tessera = build_cli(&root)?;
            readme::run_readme_commands(&root, &tessera, &target_dir(&root))?;
            conformance(&root, &[])?;
            bench_checks(&root)?;
            python_checks(&root, &python)?;
        }
        Cmd::Crash { kills, cells, seed } => crash(&root, kills, cells, seed)?,
        Cmd::BadCorpus => bad::bad_corpus(&root)?,
        Cmd::Fuzz { targets, runs, max_time, seed_only } => {
            fuzz::fuzz(&root, &targets, runs, max_time, seed_only)?;
        }
        Cmd::Bench { quick, smoke, only, runs, list, regenerate } => {
            let size = if smoke {
                "--smoke"
            } else if quick {
                "--quick"
            } else {
                ""
            };
            bench(&root, size, &only, runs, list, regenerate)?;
        }
    }
    Ok(())
}

/// `cargo xtask crash`: the crash harness test in release mode with `kills` kills and writes
/// of `cells` cells.
fn crash(root: &Path, kills: u64, cells: u64, seed: Option<u64>) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["test", "--release", "-p", "tessera-cli", "--no-default-features"])
        .args(["--test", "crash", "--", "--nocapture"])
        .env("TESSERA_CRASH_KILLS", kills.to_string())
        .env("TESSERA_CRASH_CELLS", cells.to_string());
    if let Some(s) = seed {
        cmd.env("TESSERA_CRASH_SEED", s.to_string());
    }
    run(&mut cmd, "the crash harness (cargo test --release -p tessera-cli --test crash)")
}

/// The Python part of `cargo xtask test`: `pip install ./python` into the reference venv (a
/// release build of crates/tessera-py by maturin, as a user installs it), then the pytest
/// suite of `python/tests`, which compares the package with tiledb-py on the same arrays.
fn python_checks(root: &Path, python: &Path) -> Result<()> {
    println!("xtask: pip install ./python (release build of the extension)");
    let mut cmd = Command::new(python);
    cmd.current_dir(root)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input"])
        .args(["--progress-bar", "off", "--force-reinstall", "--no-deps", "./python"])
        // The release build of the workspace (the CLI, the benchmark driver) is in the same
        // target folder: with the workspace's release settings (no link-time optimisation,
        // minutes on two cores; the debug level of `[profile.release]`) and the versions both
        // lock files pin alike, the crates both use are not compiled again. Wheels for users
        // keep the extension's own profile (thin LTO, no debug info).
        .env("CARGO_TARGET_DIR", target_dir(root))
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_DEBUG", release_debug());
    run(&mut cmd, "pip install ./python")?;
    println!("xtask: python -m pytest python/tests");
    let mut cmd = Command::new(python);
    cmd.current_dir(root)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    run(&mut cmd, "pytest python/tests")
}

/// The debug level of the workspace's release builds: `CARGO_PROFILE_RELEASE_DEBUG` when set
/// (CI sets 0), else `[profile.release]`'s 1, so that the extension's build matches them.
fn release_debug() -> String {
    std::env::var("CARGO_PROFILE_RELEASE_DEBUG").unwrap_or_else(|_| "1".to_owned())
}

/// The Ballista part of `cargo xtask test`. `crates/tessera-ballista` is outside the workspace
/// (Ballista brings tonic, prost and an HTTP stack that `cargo test --workspace` should not
/// build), so it is built here, once, into the same target directory, and its tests run, all
/// in one test binary (`tests/it`; each test binary links all of Ballista): the round trips of
/// tessera-datafusion's `proto` codecs, and the cluster tests (a scheduler and two executors as
/// separate processes, one cluster for the queries over local arrays, over moto's S3 and
/// through `tessera sql --cluster`, hence the venv python and the debug `tessera` binary that
/// `cargo test --workspace` built; a second cluster loses an executor).
fn ballista_checks(root: &Path, python: &Path) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = root.join("crates/tessera-ballista/Cargo.toml");
    // `cargo test --workspace` built the debug `tessera` (tessera-cli's integration tests
    // need it); a build with other features would rebuild DataFusion for nothing.
    let tessera =
        target_dir(root).join("debug").join(if cfg!(windows) { "tessera.exe" } else { "tessera" });
    if !tessera.is_file() {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(root).args(["build", "-p", "tessera-cli", "--bin", "tessera"]);
        run(&mut cmd, "cargo build -p tessera-cli (for tessera sql --cluster)")?;
    }
    // The build and the tests as two steps, so that CI's log times them apart.
    let test = |extra: &[&str]| {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(root)
            .arg("test")
            .arg("--manifest-path")
            .arg(&manifest)
            .args(["-p", "tessera-ballista"])
            .args(extra)
            .env("CARGO_TARGET_DIR", target_dir(root))
            .env("TESSERA_S3_PYTHON", python)
            .env("TESSERA_BIN", &tessera);
        cmd
    };
    run(
        &mut test(&["--no-run"]),
        "the Ballista build (crates/tessera-ballista, cargo test --no-run)",
    )?;
    // --nocapture: the cluster tests print how long each phase took (a CI budget matter).
    let args = ["--", "--include-ignored", "--test-threads", "1", "--nocapture"];
    run(&mut test(&args), "the Ballista cluster tests (crates/tessera-ballista)")
}

/// The documentation check of `cargo xtask test`: `cargo doc --workspace --no-deps` with
/// rustdoc's warnings denied, so that a broken intra-doc link (or any other rustdoc warning)
/// in a doc comment fails the test command. Flags already in `RUSTDOCFLAGS` are kept.
fn doc_check(root: &Path) -> Result<()> {
    let flags = match std::env::var("RUSTDOCFLAGS") {
        Ok(f) if !f.trim().is_empty() => format!("{f} -D warnings"),
        _ => "-D warnings".to_owned(),
    };
    println!("xtask: RUSTDOCFLAGS=\"{flags}\" cargo doc --workspace --no-deps");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", flags);
    run(&mut cmd, "cargo doc --workspace --no-deps")
}

/// The benchmarks' part of `cargo xtask test`: the criterion benchmarks compile, and every
/// `cargo xtask bench` workload runs once at the smoke size in both engines with the same
/// results. Nothing is timed against a limit.
fn bench_checks(root: &Path) -> Result<()> {
    // `cargo test --benches --no-run` compiles the benchmarks in the test profile, against the
    // libraries the workspace's `cargo test` already built; a `cargo bench --no-run` would
    // compile the engine once more in the bench profile only to check that they build.
    // `--workspace`, as in that run, so features resolve alike and nothing but the benchmark
    // binaries is compiled.
    let args = ["test", "--workspace", "--benches", "--no-run"];
    println!("xtask: cargo {}", args.join(" "));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(args);
    run(&mut cmd, "cargo test --workspace --benches --no-run")?;
    println!("xtask: benchmark smoke run (cargo xtask bench --smoke --runs 1)");
    bench(root, "--smoke", &[], 1, false, false)
}

/// `cargo xtask bench`: build the Tessera driver in release mode, then hand over to
/// `xtask/bench/bench.py` (run with the reference venv's python), which generates the arrays,
/// runs both engines and prints the table.
fn bench(
    root: &Path,
    size: &str,
    only: &[String],
    runs: u32,
    list: bool,
    regenerate: bool,
) -> Result<()> {
    let python = ensure_venv(root)?;
    let mut cmd = Command::new(&python);
    cmd.current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0")
        .arg(root.join(BENCH_SCRIPT))
        .arg("--root")
        .arg(root)
        .args(["--runs", &runs.to_string()]);
    for name in only {
        cmd.args(["--only", name]);
    }
    if !size.is_empty() {
        cmd.arg(size);
    }
    if regenerate {
        cmd.arg("--regenerate");
    }
    if list {
        cmd.arg("--list");
    } else {
        let (_, tessera_bench) = build_release_tools(root)?;
        cmd.arg("--tessera-bench").arg(tessera_bench);
    }
    run(&mut cmd, BENCH_SCRIPT)
}

/// The cargo target directory (`CARGO_TARGET_DIR`, relative to the root, or `target`).
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(|| root.join("target"), |d| root.join(d))
}

/// The repository root: the parent of this crate's directory.
fn workspace_root() -> Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().context("xtask has no parent directory")?;
    Ok(root.to_path_buf())
}

/// The python executable inside a venv.
fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// Create `target/reference-venv` unless a complete one built from `REFERENCE_PACKAGES` is
/// there. Returns the venv's python.
fn ensure_venv(root: &Path) -> Result<PathBuf> {
    let venv = root.join("target").join("reference-venv");
    let python = venv_python(&venv);
    let stamp = venv.join(STAMP_FILE);
    let wanted = REFERENCE_PACKAGES.join("\n");
    if python.is_file() && fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(python);
    }
    if venv.exists() {
        println!("xtask: removing incomplete or outdated {}", venv.display());
        fs::remove_dir_all(&venv).with_context(|| format!("removing {}", venv.display()))?;
    }
    let base = std::env::var_os("TESSERA_PYTHON").unwrap_or_else(|| "python3".into());
    println!(
        "xtask: creating the reference venv {} ({})",
        venv.display(),
        REFERENCE_PACKAGES.join(", ")
    );
    let mut cmd = Command::new(&base);
    cmd.arg("-m").arg("venv").arg(&venv);
    run(&mut cmd, "python3 -m venv (set TESSERA_PYTHON to use another interpreter)")?;
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--no-cache-dir",
        "--progress-bar",
        "off",
    ])
    .args(REFERENCE_PACKAGES);
    run(&mut cmd, "pip install of the reference packages")?;
    let out = Command::new(&python)
        .args([
            "-c",
            "import tiledb, numpy; \
             print(tiledb.__version__, '.'.join(map(str, tiledb.libtiledb.version())))",
        ])
        .output()
        .context("running the venv python")?;
    let versions = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || versions.trim() != EXPECTED_VERSIONS {
        bail!(
            "the reference venv has tiledb {:?} (want {EXPECTED_VERSIONS}): {}",
            versions.trim(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    fs::write(&stamp, wanted).with_context(|| format!("writing {}", stamp.display()))?;
    println!("xtask: reference venv ready (tiledb-py, libtiledb: {})", versions.trim());
    Ok(python)
}

/// Regenerate the fixture directories of `families` (every one the generator owns when empty),
/// then check all of them.
fn fixtures(root: &Path, families: &[String]) -> Result<()> {
    for family in families {
        if !GENERATED_DIRS.contains(&family.as_str()) {
            bail!("unknown fixture family {family:?} (known: {})", GENERATED_DIRS.join(", "));
        }
    }
    let selected: Vec<&str> = if families.is_empty() {
        GENERATED_DIRS.to_vec()
    } else {
        GENERATED_DIRS.iter().copied().filter(|d| families.iter().any(|f| f == d)).collect()
    };
    let python = ensure_venv(root)?;
    let testdata = root.join("testdata");
    for dir in &selected {
        let path = testdata.join(dir);
        if path.exists() {
            println!("xtask: deleting {}", path.display());
            fs::remove_dir_all(&path).with_context(|| format!("deleting {}", path.display()))?;
        }
    }
    fs::create_dir_all(&testdata)?;
    println!("xtask: generating fixtures with libtiledb into {}", testdata.display());
    let mut cmd = python_script(&python, root, "generate.py");
    cmd.arg("--out").arg(&testdata);
    if !families.is_empty() {
        for dir in &selected {
            cmd.args(["--family", dir]);
        }
    }
    run(&mut cmd, "xtask/fixtures/generate.py")?;
    check_fixtures(&python, root)
}

/// Ensure the venv, then run the fixture checker, the create conformance step, the
/// fragments conformance step and the read conformance step. All run even if an earlier one
/// fails; the command fails if any does.
fn conformance(root: &Path, only: &[String]) -> Result<()> {
    let python = ensure_venv(root)?;
    type Step = fn(&Path, &Path) -> Result<()>;
    let steps: [(&str, Step); 14] = [
        ("fixtures", check_fixtures),
        ("create", create_conformance),
        ("fragments", fragments_conformance),
        ("queries", queries_conformance),
        ("writes", writes_conformance),
        ("writes-cli", writes_cli_conformance),
        ("consolidation", consolidation_conformance),
        ("evolution", evolution_conformance),
        ("lifecycle", lifecycle_conformance),
        ("groups", groups_conformance),
        ("s3", s3_conformance),
        ("encrypted", encrypted_conformance),
        ("webp", webp_conformance),
        ("old-formats", old_formats_conformance),
    ];
    for o in only {
        if !steps.iter().any(|(n, _)| n == o) {
            bail!("no conformance step {o:?}");
        }
    }
    let results: Vec<Result<()>> = steps
        .iter()
        .filter(|(n, _)| only.is_empty() || only.iter().any(|o| o == n))
        .map(|(_, step)| step(&python, root))
        .collect();
    let errors: Vec<String> =
        results.into_iter().filter_map(|r| r.err().map(|e| format!("{e:#}"))).collect();
    if errors.is_empty() { Ok(()) } else { bail!("{}", errors.join("; and ")) }
}

fn check_fixtures(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: checking the fixtures in testdata/ against libtiledb");
    let mut cmd = python_script(python, root, "check.py");
    cmd.arg("--testdata").arg(root.join("testdata"));
    run(&mut cmd, "conformance check (xtask/fixtures/check.py)")
}

/// The create conformance step.
///
/// 1. Reference run: every `testdata/create/<name>.json` is created with tiledb-py and
///    checked, and deliberately altered arrays must be rejected (validates the inputs and the
///    checker; runs even without the CLI).
/// 2. If the `tessera-cli` package exists: build it, run
///    `tessera create target/conformance/create/<name> --schema testdata/create/<name>.json`
///    for each input (removing the target first), then check every array with
///    `xtask/fixtures/check_create.py`. Without the package the step is skipped, loudly.
fn create_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: create conformance, reference run (tiledb-py creates {CREATE_INPUTS}/*.json)");
    let mut cmd = python_script(python, root, "check_create.py");
    cmd.args(["--inputs", CREATE_INPUTS, "--arrays", CREATE_REFERENCE_OUT, "--reference"]);
    run(&mut cmd, "create conformance reference run (xtask/fixtures/check_create.py)")?;

    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         `tessera create` was NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;

    let mut inputs = Vec::new();
    for entry in fs::read_dir(root.join(CREATE_INPUTS)).context("listing testdata/create")? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            inputs.push(path);
        }
    }
    inputs.sort();
    let out = root.join(CREATE_OUT);
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut failures = Vec::new();
    for input in &inputs {
        let name = input
            .file_stem()
            .and_then(|s| s.to_str())
            .context("a testdata/create file name is not UTF-8")?;
        let array = format!("{CREATE_OUT}/{name}");
        let schema = format!("{CREATE_INPUTS}/{name}.json");
        let target = root.join(&array);
        if target.exists() {
            fs::remove_dir_all(&target)
                .with_context(|| format!("removing {}", target.display()))?;
        }
        let output = Command::new(&tessera)
            .current_dir(root)
            .args(["create", &array, "--schema", &schema])
            .output()
            .with_context(|| format!("could not start {}", tessera.display()))?;
        if output.status.success() {
            println!("xtask: tessera create {array} --schema {schema}");
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            println!(
                "FAIL create/{name}: `tessera create {array} --schema {schema}` failed ({}): {}",
                output.status,
                stderr.trim()
            );
            failures.push(name.to_owned());
        }
    }
    println!("xtask: checking the arrays tessera created against libtiledb");
    let mut cmd = python_script(python, root, "check_create.py");
    cmd.args(["--inputs", CREATE_INPUTS, "--arrays", CREATE_OUT]);
    let checked = run(&mut cmd, "create conformance check (xtask/fixtures/check_create.py)");
    if !failures.is_empty() {
        bail!("tessera create failed on {} input(s): {}", failures.len(), failures.join(", "));
    }
    checked
}

/// The fragments conformance step: for every array `testdata/fragments/<name>` (one per
/// `<name>.fragments.json`), run `tessera fragments testdata/fragments/<name> --json`, store
/// its standard output in `target/conformance/fragments/<name>.fragments.json`, then compare
/// each with the expected file (parsed JSON, exact values, every difference reported) with
/// `xtask/fixtures/check_tessera_fragments.py`. Skipped loudly when the CLI package does not
/// exist or its binary has no `fragments` subcommand (`tessera fragments --help` fails).
fn fragments_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: fragments conformance (tessera fragments --json vs {FRAGMENTS_FIXTURES})");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         `tessera fragments` was NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    if !has_subcommand(root, &tessera, "fragments") {
        loud_skip(&[
            "SKIPPED: tessera fragments not available (`tessera fragments --help` failed):",
            "         `tessera fragments --json` was NOT checked against libtiledb",
        ]);
        return Ok(());
    }

    let mut names = Vec::new();
    let listing = fs::read_dir(root.join(FRAGMENTS_FIXTURES))
        .with_context(|| format!("listing {FRAGMENTS_FIXTURES}"))?;
    for entry in listing {
        let file_name = entry?.file_name();
        let Some(file_name) = file_name.to_str() else { continue };
        if let Some(name) = file_name.strip_suffix(".fragments.json") {
            names.push(name.to_owned());
        }
    }
    names.sort();
    if names.is_empty() {
        bail!("no {FRAGMENTS_FIXTURES}/*.fragments.json: run `cargo xtask fixtures`");
    }
    let out = root.join(FRAGMENTS_OUT);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut failures = Vec::new();
    for name in &names {
        let array = format!("{FRAGMENTS_FIXTURES}/{name}");
        let output = Command::new(&tessera)
            .current_dir(root)
            .args(["fragments", &array, "--json"])
            .output()
            .with_context(|| format!("could not start {}", tessera.display()))?;
        if output.status.success() {
            let file = out.join(format!("{name}.fragments.json"));
            fs::write(&file, &output.stdout)
                .with_context(|| format!("writing {}", file.display()))?;
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            println!(
                "FAIL fragments/{name}: `tessera fragments {array} --json` failed ({}): {}",
                output.status,
                stderr.trim()
            );
            failures.push(name.clone());
        }
    }
    println!("xtask: comparing `tessera fragments --json` with the expected listings");
    let mut cmd = python_script(python, root, "check_tessera_fragments.py");
    cmd.args(["--testdata", "testdata", "--actual", FRAGMENTS_OUT]);
    let checked = run(&mut cmd, "fragments conformance check (check_tessera_fragments.py)");
    if failures.is_empty() {
        return checked;
    }
    let failed =
        format!("tessera fragments failed on {} array(s): {}", failures.len(), failures.join(", "));
    match checked {
        Ok(()) => bail!("{failed}"),
        Err(e) => bail!("{failed}; and {e:#}"),
    }
}

/// The read conformance step, on the recorded queries of `testdata/queries/` (the `queries`
/// fixture family: `tessera read` / `tessera aggregate` argument lists with libtiledb's
/// results).
///
/// 1. Reference run (always): `check_queries.py --standin --self-test` runs every query
///    through `tessera_standin.py`, a tiledb-py stand-in of the CLI that reads another way
///    (one bounding-box read; conditions, orders and aggregates computed in Python), compares
///    with the expectations, then checks that deliberately altered expectations fail. This
///    validates the expectations and the checker.
/// 2. If the `tessera-cli` package exists: build it; if `tessera read --help` succeeds, every
///    read query runs as `tessera read testdata/<array> <args...> --format jsonl`, and if
///    `tessera aggregate --help` succeeds, every aggregate query as
///    `tessera aggregate testdata/<array> <args...> --json`; `check_queries.py --tessera`
///    compares each output with the expectation and prints `reads (<family>): N passed, M
///    failed`. A missing subcommand is skipped, loudly, without failing.
fn queries_conformance(python: &Path, root: &Path) -> Result<()> {
    println!(
        "xtask: read conformance, reference run (tiledb-py stand-in of the CLI on {QUERIES_FIXTURES})"
    );
    let mut cmd = python_script(python, root, "check_queries.py");
    cmd.args(["--testdata", "testdata", "--standin", "--self-test"]);
    run(&mut cmd, "read conformance reference run (xtask/fixtures/check_queries.py --standin)")?;

    let not_checked =
        "         `tessera read` and `tessera aggregate` were NOT checked against libtiledb";
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            not_checked,
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    let reads = has_subcommand(root, &tessera, "read");
    let aggregates = has_subcommand(root, &tessera, "aggregate");
    if !reads {
        loud_skip(&[
            "SKIPPED: tessera read not available (`tessera read --help` failed):",
            "         `tessera read` was NOT checked against libtiledb",
        ]);
    }
    if !aggregates {
        loud_skip(&[
            "SKIPPED: tessera aggregate not available (`tessera aggregate --help` failed):",
            "         `tessera aggregate` was NOT checked against libtiledb",
        ]);
    }
    if !reads && !aggregates {
        return Ok(());
    }
    println!("xtask: read conformance (tessera vs the recorded queries of {QUERIES_FIXTURES})");
    let mut cmd = python_script(python, root, "check_queries.py");
    cmd.args(["--testdata", "testdata"]).arg("--tessera").arg(&tessera);
    if !reads {
        cmd.arg("--skip-reads");
    }
    if !aggregates {
        cmd.arg("--skip-aggregates");
    }
    run(&mut cmd, "read conformance check (xtask/fixtures/check_queries.py)")
}

/// The write conformance step: Tessera writes a copy of every fixture array (see
/// [`writes::rewrite_fixtures`]), its fragments are compared with libtiledb's bytes, and
/// `check_writes.py` has libtiledb read each original and its copy (at the latest time and at
/// every fragment's timestamp) and compare the cells.
fn writes_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: write conformance (Tessera rewrites the fixtures; libtiledb compares)");
    let rewritten = writes::rewrite_fixtures(root);
    let mut cmd = python_script(python, root, "check_writes.py");
    cmd.arg("--pairs").arg(root.join(writes::WRITES_OUT).join("pairs.json"));
    let checked = run(&mut cmd, "write conformance check (xtask/fixtures/check_writes.py)");
    match (rewritten, checked) {
        (Ok(()), c) => c,
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(c)) => bail!("{e:#}; and {c:#}"),
    }
}

/// The writes-cli conformance step: `xtask/fixtures/check_cli_writes.py` makes arrays with
/// `tessera create`, writes cells with `tessera write` (sparse and dense, every datatype,
/// enumeration labels and codes), deletes with `tessera delete` and changes metadata with
/// `tessera meta put` / `delete`, all at explicit timestamps, under
/// `target/conformance/writes-cli`; then libtiledb reads the cells (at every time point) and
/// the metadata, which must equal what was given to the commands. Skipped loudly when the CLI
/// package does not exist or lacks one of those subcommands.
fn writes_cli_conformance(python: &Path, root: &Path) -> Result<()> {
    println!(
        "xtask: writes-cli conformance (tessera write / delete / meta put, read by libtiledb)"
    );
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         `tessera write`, `delete` and `meta put` were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    for sub in ["write", "delete", "meta"] {
        if !has_subcommand(root, &tessera, sub) {
            loud_skip(&[
                &format!("SKIPPED: tessera {sub} not available (`tessera {sub} --help` failed):"),
                "         `tessera write`, `delete` and `meta put` were NOT checked against libtiledb",
            ]);
            return Ok(());
        }
    }
    let out = root.join(WRITES_CLI_OUT);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    let mut cmd = python_script(python, root, "check_cli_writes.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", WRITES_CLI_OUT, "--inputs", CREATE_INPUTS]);
    run(&mut cmd, "writes-cli conformance check (xtask/fixtures/check_cli_writes.py)")
}

/// The consolidation conformance step: `xtask/fixtures/check_consolidation.py` copies fixture
/// arrays of `testdata/fragments` twice under `target/conformance/consolidation`, runs the
/// same consolidate / vacuum steps (each mode, and longer sequences) with `tessera
/// consolidate` / `tessera vacuum` on one copy and with libtiledb on the other, and after each
/// step compares the file trees (the files made byte for byte, labels aside) and the cells and
/// metadata both engines read from both copies at several times; then libtiledb's own
/// consolidation and vacuum must still work on Tessera's copy. Skipped loudly when the CLI
/// package does not exist or lacks one of the subcommands it needs.
fn consolidation_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: consolidation conformance (tessera consolidate / vacuum vs libtiledb)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         `tessera consolidate` and `vacuum` were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    for sub in ["consolidate", "vacuum", "read", "meta"] {
        if !has_subcommand(root, &tessera, sub) {
            loud_skip(&[
                &format!("SKIPPED: tessera {sub} not available (`tessera {sub} --help` failed):"),
                "         `tessera consolidate` and `vacuum` were NOT checked against libtiledb",
            ]);
            return Ok(());
        }
    }
    let out = root.join(CONSOLIDATION_OUT);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    let mut cmd = python_script(python, root, "check_consolidation.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", CONSOLIDATION_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "consolidation conformance check (xtask/fixtures/check_consolidation.py)")
}

/// The evolution conformance step: `xtask/fixtures/check_evolution.py` has libtiledb write
/// arrays (a tiledbsoma-style sparse dataframe with an enumeration and a current domain, a
/// dense array, old-format fixtures) under `target/conformance/evolution`, copies each twice,
/// evolves one copy with `tessera evolve` and the other with tiledb-py's
/// `ArraySchemaEvolution` step by step (libtiledb writing between steps), and compares the new
/// files (schema and enumeration payloads byte for byte, labels aside), the schemas both
/// engines read, and the cells both engines read from both copies at every step's time; then
/// every invalid evolution must fail in both engines and leave the array unchanged. Skipped
/// loudly when the CLI package does not exist or lacks `tessera evolve`.
fn evolution_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: evolution conformance (tessera evolve vs libtiledb's ArraySchemaEvolution)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         `tessera evolve` was NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    for sub in ["evolve", "read", "schema"] {
        if !has_subcommand(root, &tessera, sub) {
            loud_skip(&[
                &format!("SKIPPED: tessera {sub} not available (`tessera {sub} --help` failed):"),
                "         `tessera evolve` was NOT checked against libtiledb",
            ]);
            return Ok(());
        }
    }
    let out = root.join(EVOLUTION_OUT);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    let mut cmd = python_script(python, root, "check_evolution.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", EVOLUTION_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "evolution conformance check (xtask/fixtures/check_evolution.py)")
}

/// The lifecycle conformance step: `xtask/fixtures/check_lifecycle.py` copies fixture arrays
/// (`testdata/fragments`, `testdata/old`) twice under `target/conformance/lifecycle`, runs
/// `tessera delete-fragments` (by range and by name), `tessera delete-array`, `tessera
/// upgrade` and `tessera consolidate --fragments` on one copy and libtiledb's own operation on
/// the other, and compares the remaining trees (files made byte for byte, labels aside) and
/// the cells both engines read from both at every time point; what libtiledb refuses Tessera
/// must refuse, leaving the array unchanged. Skipped loudly when the CLI package does not
/// exist or lacks one of the subcommands.
fn lifecycle_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: lifecycle conformance (delete-fragments, delete-array, ... vs libtiledb)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         the array lifecycle was NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    for sub in ["delete-fragments", "delete-array", "consolidate", "read"] {
        if !has_subcommand(root, &tessera, sub) {
            loud_skip(&[
                &format!("SKIPPED: tessera {sub} not available (`tessera {sub} --help` failed):"),
                "         the array lifecycle was NOT checked against libtiledb",
            ]);
            return Ok(());
        }
    }
    let out = root.join(LIFECYCLE_OUT);
    if out.exists() {
        fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    let mut cmd = python_script(python, root, "check_lifecycle.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", LIFECYCLE_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "lifecycle conformance check (xtask/fixtures/check_lifecycle.py)")
}

/// The groups conformance step: `xtask/fixtures/check_groups.py` compares `tessera ls --json`
/// on the `groups` fixture family (groups written by libtiledb and by tiledbsoma) with the
/// expected listings, every array of the family read by `tessera read` with libtiledb's read,
/// `tessera ls` on a group with absolute members that libtiledb makes at test time (under
/// `target/conformance/groups`), and a group built by `tessera group` / `tessera meta` at
/// explicit timestamps with what libtiledb lists at each of them (then libtiledb changes it
/// and `tessera ls` must show the change). Skipped loudly when the CLI package does not exist
/// or lacks one of the subcommands it needs.
fn groups_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: groups conformance (tessera ls / group / meta / read vs libtiledb)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         `tessera ls` and `tessera group` were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    for sub in ["ls", "group", "meta", "read"] {
        if !has_subcommand(root, &tessera, sub) {
            loud_skip(&[
                &format!("SKIPPED: tessera {sub} not available (`tessera {sub} --help` failed):"),
                "         `tessera ls` and `tessera group` were NOT checked against libtiledb",
            ]);
            return Ok(());
        }
    }
    let mut cmd = python_script(python, root, "check_groups.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", GROUPS_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "groups conformance check (xtask/fixtures/check_groups.py)")
}

/// The s3 conformance step: `xtask/fixtures/check_s3.py` starts moto's S3 server on
/// loopback (and stops it, whatever happens), has libtiledb write arrays and a group to it
/// that `tessera` must read, and `tessera` write arrays and a group that libtiledb must read.
fn s3_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: s3 conformance (tessera and libtiledb on a local S3 emulator, moto)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         s3:// URIs were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    let mut cmd = python_script(python, root, "check_s3.py");
    cmd.arg("--tessera").arg(&tessera);
    run(&mut cmd, "s3 conformance check (xtask/fixtures/check_s3.py)")
}

/// The encryption conformance step: `xtask/fixtures/check_encrypted.py` reads the
/// `encrypted` fixture family (written by libtiledb with an AES-256-GCM key) with
/// `tessera read` / `tessera meta` and the key, checks that a missing or wrong key is a
/// one-line error naming the file, and has `tessera` create, write, delete from,
/// consolidate and vacuum encrypted arrays and build an encrypted group (under
/// `target/conformance/encrypted`) that libtiledb must read with the key and refuse without.
fn encrypted_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: encryption conformance (AES-256-GCM arrays, tessera vs libtiledb)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         encrypted arrays were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    let mut cmd = python_script(python, root, "check_encrypted.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", ENCRYPTED_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "encryption conformance check (xtask/fixtures/check_encrypted.py)")
}

/// The WebP conformance step: `xtask/fixtures/check_webp.py` reads the `webp` fixture family
/// (lossless and lossy WebP tiles libtiledb wrote) with `tessera read`, which must equal
/// libtiledb's read exactly, and has `tessera` write lossless WebP arrays in every colour
/// format (under `target/conformance/webp`) that libtiledb must read exactly; a lossy write
/// must be a one-line error.
fn webp_conformance(python: &Path, root: &Path) -> Result<()> {
    println!("xtask: webp conformance (WebP tiles, tessera vs libtiledb)");
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         WebP tiles were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    let mut cmd = python_script(python, root, "check_webp.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", WEBP_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "webp conformance check (xtask/fixtures/check_webp.py)")
}

/// The old-formats conformance step: `xtask/fixtures/check_old_formats.py` reads every array
/// of the fixtures of formats 3 to 9 (`testdata/old/tiledb-0.4.4` to `-0.9.5`) with `tessera
/// read`, which must equal libtiledb 2.30's read, then has `tessera write` add a fragment to a
/// copy of each (under `target/conformance/old-formats`) that libtiledb must list as a format
/// 22 fragment and read back with the old cells.
fn old_formats_conformance(python: &Path, root: &Path) -> Result<()> {
    println!(
        "xtask: old-formats conformance (formats 3-9: tessera read, tessera write into copies)"
    );
    if !root.join(CLI_MANIFEST).is_file() {
        loud_skip(&[
            &format!("SKIPPED: tessera-cli not built ({CLI_MANIFEST} does not exist):"),
            "         writes into arrays of formats 3-9 were NOT checked against libtiledb",
        ]);
        return Ok(());
    }
    let tessera = build_cli(root)?;
    let mut cmd = python_script(python, root, "check_old_formats.py");
    cmd.arg("--tessera").arg(&tessera).args(["--out", OLD_FORMATS_OUT, "--testdata", "testdata"]);
    run(&mut cmd, "old-formats conformance check (xtask/fixtures/check_old_formats.py)")
}

/// Whether the CLI binary has a subcommand: `tessera <name> --help` exits 0.
fn has_subcommand(root: &Path, tessera: &Path, name: &str) -> bool {
    Command::new(tessera)
        .current_dir(root)
        .args([name, "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Build the CLI in release mode (`cargo build --release -p tessera-cli`) and return the path
/// of the `tessera` binary.
fn build_cli(root: &Path) -> Result<PathBuf> {
    Ok(build_release_tools(root)?.0)
}

/// The release binaries the checks run: the CLI (without the `sql` feature: no conformance
/// step runs SQL, and DataFusion in release mode would cost CI minutes; `tessera sql` is
/// tested by `cargo test`) and the benchmark driver. They are built by one cargo command, so
/// both resolve the engine's features alike and it is compiled once for the two; every
/// caller asks for the same pair, so the later calls find them built.
fn build_release_tools(root: &Path) -> Result<(PathBuf, PathBuf)> {
    let args =
        ["build", "--release", "-p", "tessera-cli", "--no-default-features", "-p", "tessera-bench"];
    println!("xtask: cargo {}", args.join(" "));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(args);
    run(&mut cmd, "cargo build --release -p tessera-cli -p tessera-bench")?;
    let release = target_dir(root).join("release");
    let exe = |name: &str| {
        release.join(if cfg!(windows) { format!("{name}.exe") } else { name.to_string() })
    };
    Ok((exe("tessera"), exe("tessera-bench")))
}

/// Print a skipped step between two rules, so that it cannot be missed in the output.
fn loud_skip(lines: &[&str]) {
    let rule = "=".repeat(78);
    println!("xtask: {rule}");
    for line in lines {
        println!("xtask: {line}");
    }
    println!("xtask: {rule}");
}

/// A command running one of the committed scripts in `xtask/fixtures/` with the venv python.
fn python_script(python: &Path, root: &Path, script: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0")
        .arg(root.join("xtask").join("fixtures").join(script));
    cmd
}

/// Run a command with inherited stdio; fail if it cannot start or exits non-zero.
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let start = std::time::Instant::now();
    let status = cmd.status().with_context(|| format!("could not start {what}"))?;
    // Each step's time, so a slow CI run shows where its minutes went.
    eprintln!("xtask: {what}: {:.0} s", start.elapsed().as_secs_f64());
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
