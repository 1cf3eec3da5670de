//! Crash safety: `tessera write`, `tessera consolidate` and `tessera vacuum` run as child
//! processes and are killed with SIGKILL at random points, again and again on one array.
//! After every kill the array must open, read exactly the cells of the writes that
//! committed (newest wins per coordinate: the array has no duplicates), show none of an
//! uncommitted write's cells, read each committed write exactly when opened at its own
//! timestamp, and verify without errors (leftover folders of interrupted writes are
//! warnings).
//!
//! Most kills wait until the child has created its fragment folder and then strike at a
//! random point of the measured write phase (so they land mid-write: data files half
//! written, the metadata not yet written, the commit not yet published); others strike at a
//! random point of the whole run (parsing, or after the commit); one run in eight is left to
//! finish, so that committed writes accumulate and consolidations have work.
//!
//! CI runs the short version (`TESSERA_CRASH_KILLS`, default 20 kills, writes of 30 000
//! cells: 60 tiles per field, about 0.6 MB); `cargo xtask crash --kills 100` runs the full
//! one in release mode with writes of 200 000 cells (400 tiles per field, about 4 MB).
//! `TESSERA_CRASH_SEED` replays a run; `TESSERA_CRASH_CELLS` sets the cells per write.

#![cfg(unix)]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{Model, Rng, batch, committed_at, create_array, first_difference, names, read_cells};
use tessera::layers::query::verify::{self, Options};

/// Where a kill landed.
#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    before_folder: usize,
    mid_write: usize,
    after_commit: usize,
    consolidations_killed: usize,
    vacuums_killed: usize,
    uncommitted_leftovers: usize,
    warnings_seen: usize,
    /// Checks that found a consolidation stopped between its commit and its `.vac` file.
    consolidation_windows: usize,
}

fn env_or(var: &str, default: u64) -> u64 {
    std::env::var(var).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn spawn(args: &[&str]) -> Child {
    Command::new(support::tessera_bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Fragment folders of the array.
fn folders(array: &Path) -> Vec<String> {
    names(&array.join("__fragments"))
}

/// How a kill went: whether it struck a running child, and whether the child had made a
/// new fragment folder by then.
struct Struck {
    killed: bool,
    saw_folder: bool,
}

/// When to kill a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Once a new fragment folder appears, after a random part of the measured write phase.
    MidWrite,
    /// After a random part of 1.3 times the whole measured run (some land after the end).
    Anytime,
    /// Never: let it finish.
    Finish,
}

impl Plan {
    /// Five kills mid-write, two at any time, one run to the end, in eight.
    fn pick(rng: &mut Rng) -> Plan {
        match rng.below(8) {
            0..=4 => Plan::MidWrite,
            5 | 6 => Plan::Anytime,
            _ => Plan::Finish,
        }
    }
}

/// Runs `child` and SIGKILLs it as `plan` says (`before`: the fragment folders before it
/// started; `phase`: how long a run lasts after its folder appears; `whole`: a whole run).
fn strike(
    mut child: Child,
    array: &Path,
    before: &[String],
    rng: &mut Rng,
    plan: Plan,
    phase: Duration,
    whole: Duration,
) -> Struck {
    let start = Instant::now();
    let mut saw_folder = false;
    let deadline = match plan {
        Plan::Finish => {
            let status = child.wait().unwrap();
            assert!(status.success(), "a child run to its end failed");
            return Struck { killed: false, saw_folder: true };
        }
        Plan::MidWrite => {
            // Wait for the folder (or the end of the child).
            loop {
                if child.try_wait().unwrap().is_some() {
                    return Struck { killed: false, saw_folder: true };
                }
                if folders(array).iter().any(|f| !before.contains(f)) {
                    saw_folder = true;
                    break;
                }
                if start.elapsed() > Duration::from_secs(120) {
                    panic!("the child made no fragment folder in 120 s");
                }
                std::thread::sleep(Duration::from_micros(300));
            }
            Instant::now() + phase.mul_f64(rng.unit() * 1.2)
        }
        Plan::Anytime => start + whole.mul_f64(rng.unit() * 1.3),
    };
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return Struck { killed: false, saw_folder: true };
        }
        std::thread::sleep(Duration::from_micros(200).min(deadline - Instant::now()));
    }
    saw_folder |= folders(array).iter().any(|f| !before.contains(f));
    // `Child::kill` sends SIGKILL on Unix.
    let killed = child.kill().is_ok();
    let status = child.wait().unwrap();
    Struck { killed: killed && !status.success(), saw_folder }
}

/// Runs a child to the end and returns how long it took, and (writes) how long after its
/// fragment folder appeared.
fn timed(args: &[&str], array: &Path) -> (Duration, Duration) {
    let before = folders(array);
    let start = Instant::now();
    let mut child = spawn(args);
    let mut folder_at = None;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            assert!(status.success(), "{args:?}: {err}");
            break;
        }
        if folder_at.is_none() && folders(array).iter().any(|f| !before.contains(f)) {
            folder_at = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    let whole = start.elapsed();
    (whole, folder_at.map_or(whole / 2, |t| t.elapsed()))
}

/// Everything that must hold after a kill.
fn check(array: &Path, model: &Model, rng: &mut Rng, tally: &mut Tally, label: &str) {
    let got = read_cells(array, None).unwrap_or_else(|e| panic!("{label}: read failed: {e}"));
    let want = model.expected();
    assert!(got == want, "{label}: latest read: {}", first_difference(&got, &want));
    // A committed write (the newest, or a random one) read exactly at its own timestamp.
    let ts: Vec<u64> = model.writes.keys().copied().collect();
    let t =
        if rng.below(2) == 0 { ts[ts.len() - 1] } else { ts[rng.below(ts.len() as u64) as usize] };
    let got = read_cells(array, Some((t, t))).unwrap();
    let want = &model.writes[&t];
    assert!(got == *want, "{label}: write {t} at its time: {}", first_difference(&got, want));
    let report = verify::verify(&tessera::LocalStorage::new(array), &Options::default()).unwrap();
    assert!(report.is_ok(), "{label}: verify found corruption: {:#?}", report.problems);
    tally.warnings_seen += report.warnings().count();
    if report.warnings().any(|p| p.message.contains("no .vac file lists")) {
        tally.consolidation_windows += 1;
    }
    tally.uncommitted_leftovers = report.summary.uncommitted_fragments;
}

#[test]
fn killed_writers_and_consolidators_never_corrupt_the_array() {
    let kills = env_or("TESSERA_CRASH_KILLS", 20) as usize;
    let cells = env_or("TESSERA_CRASH_CELLS", 30_000) as usize;
    let seed = support::seed_from_env("TESSERA_CRASH_SEED");
    let mut rng = Rng::new(seed);
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("array");
    create_array(&array, false);
    let a = array.to_str().unwrap().to_owned();
    let input = tmp.path().join("input.jsonl");
    let mut model = Model::default();
    let mut tally = Tally::default();
    let n = cells as i64;
    // Writes overlap (newer cells replace older ones) within a window of 8n coordinates.
    let write_input = |rng: &mut Rng, t: u64| {
        let base = (t as i64 % 5) * n;
        let step = 1 + (t % 3) as i64;
        let cells = batch(rng, t, base, step, n as usize);
        std::fs::write(&input, support::to_jsonl(&cells)).unwrap();
        cells
    };

    // Calibration: one write and one consolidation run to the end.
    let mut t = 1u64;
    let cells0 = write_input(&mut rng, t);
    let ts = t.to_string();
    let (w_whole, w_phase) =
        timed(&["write", &a, "--input", input.to_str().unwrap(), "--timestamp", &ts], &array);
    model.writes.insert(t, cells0);
    t += 1;
    let cells1 = write_input(&mut rng, t);
    let ts = t.to_string();
    timed(&["write", &a, "--input", input.to_str().unwrap(), "--timestamp", &ts], &array);
    model.writes.insert(t, cells1);
    let (c_whole, c_phase) = timed(&["consolidate", &a], &array);
    let (v_whole, _) = timed(&["vacuum", &a], &array);
    eprintln!(
        "calibration: write {w_whole:?} (after its folder appears: {w_phase:?}), \
         consolidate {c_whole:?} ({c_phase:?}), vacuum {v_whole:?}"
    );
    check(&array, &model, &mut rng, &mut tally, "calibration");

    let started = Instant::now();
    let mut round = 0;
    let mut last_consolidate = false;
    while tally.kills < kills {
        round += 1;
        // After a consolidation, often a vacuum; otherwise mostly writes.
        let op = if last_consolidate && rng.below(2) == 0 { 9 } else { rng.below(10) };
        last_consolidate = false;
        let before = folders(&array);
        let plan = Plan::pick(&mut rng);
        let label;
        if op < 7 {
            // A write.
            t += 1;
            let cells = write_input(&mut rng, t);
            let ts = t.to_string();
            let child =
                spawn(&["write", &a, "--input", input.to_str().unwrap(), "--timestamp", &ts]);
            let s = strike(child, &array, &before, &mut rng, plan, w_phase, w_whole);
            let committed = committed_at(&array, t);
            if s.killed {
                tally.kills += 1;
                if committed {
                    tally.after_commit += 1;
                } else if s.saw_folder {
                    tally.mid_write += 1;
                } else {
                    tally.before_folder += 1;
                }
            }
            if committed {
                model.writes.insert(t, cells);
            } else {
                assert!(s.killed, "round {round}: write {t} neither committed nor killed");
            }
            label =
                format!("round {round} (write {t}, killed {}, committed {committed})", s.killed);
        } else if op < 9 {
            last_consolidate = true;
            let child = spawn(&["consolidate", &a]);
            let s = strike(child, &array, &before, &mut rng, plan, c_phase, c_whole);
            if s.killed {
                tally.kills += 1;
                tally.consolidations_killed += 1;
            }
            label = format!("round {round} (consolidate, killed {})", s.killed);
        } else {
            let child = spawn(&["vacuum", &a]);
            let s = strike(
                child,
                &array,
                &before,
                &mut rng,
                if plan == Plan::Finish { plan } else { Plan::Anytime },
                v_whole,
                v_whole,
            );
            if s.killed {
                tally.kills += 1;
                tally.vacuums_killed += 1;
            }
            label = format!("round {round} (vacuum, killed {})", s.killed);
        }
        check(&array, &model, &mut rng, &mut tally, &label);
    }
    // At the end: every committed write exactly, and the CLI's verify succeeds.
    for (t, want) in &model.writes {
        let got = read_cells(&array, Some((*t, *t))).unwrap();
        assert!(got == *want, "write {t} at the end: {}", first_difference(&got, want));
    }
    let (ok, out, err) = support::tessera(&["verify", &a]);
    assert!(ok, "tessera verify: {out}{err}");
    eprintln!(
        "crash harness (seed {seed}): {} rounds in {:?}, {} kills: {} before the fragment folder \
         existed, {} mid-write, {} after the commit, {} consolidations and {} vacuums killed; \
         {} committed writes; {} uncommitted leftover folders at the end; {} warnings seen \
         over all checks ({} checks found a consolidation stopped between its commit and its \
         .vac file); no corruption. Last verify: {}",
        round,
        started.elapsed(),
        tally.kills,
        tally.before_folder,
        tally.mid_write,
        tally.after_commit,
        tally.consolidations_killed,
        tally.vacuums_killed,
        model.writes.len(),
        tally.uncommitted_leftovers,
        tally.warnings_seen,
        tally.consolidation_windows,
        out.lines().last().unwrap_or_default()
    );
}
