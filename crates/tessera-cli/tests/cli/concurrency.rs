//! Concurrency between processes (`docs/concurrency.md`): `tessera read` processes running
//! while `tessera write`, `consolidate` and `vacuum` processes run always print a consistent
//! array — the cells of some set of whole committed writes, and while consolidating always
//! the same cells (or, for a read whose fragments a vacuum removed after it opened the
//! array, a clear error); writers started at once each make their own fragment.

use crate::support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use support::{Cell, Model, Rng, batch, create_array, first_difference, tessera, to_jsonl};

/// Writes `cells` at timestamp `t` with `tessera write` (input in `dir`).
fn cli_write(array: &Path, dir: &Path, t: u64, cells: &[Cell]) {
    let input = dir.join(format!("input-{t}-{}.jsonl", cells[0].x));
    std::fs::write(&input, to_jsonl(cells)).unwrap();
    let (ok, _, err) = tessera(&[
        "write",
        array.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "--timestamp",
        &t.to_string(),
    ]);
    assert!(ok, "write {t}: {err}");
}

/// `tessera read ARRAY --format jsonl`, parsed and sorted; `Err(stderr)` when it fails.
fn cli_read(array: &Path) -> Result<Vec<Cell>, String> {
    let (ok, out, err) = tessera(&["read", array.to_str().unwrap(), "--format", "jsonl"]);
    if !ok {
        return Err(err);
    }
    let mut cells: Vec<Cell> = out
        .lines()
        .map(|l| {
            let j: serde_json::Value = serde_json::from_str(l).unwrap();
            Cell {
                x: j["x"].as_i64().unwrap(),
                v: j["v"].as_f64().unwrap(),
                s: j["s"].as_str().map(str::to_owned),
            }
        })
        .collect();
    cells.sort_by(|a, b| a.x.cmp(&b.x).then(a.v.total_cmp(&b.v)));
    Ok(cells)
}

#[test]
fn cli_readers_see_whole_writes_while_cli_writers_run() {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("array");
    create_array(&array, false);
    let mut rng = Rng::new(support::seed_from_env("TESSERA_CONCURRENCY_SEED"));
    // Writer A: even coordinates and timestamps; writer B: odd ones. Each writer's batches
    // overlap, so newer cells replace older ones.
    let per_writer = 4usize;
    let mk = |rng: &mut Rng, parity: i64| -> Vec<(u64, Vec<Cell>)> {
        (0..per_writer)
            .map(|i| {
                let t = 2 * i as u64 + 2 - parity as u64;
                (t, batch(rng, t, 2 * 500 * i as i64 + parity, 2, 2000))
            })
            .collect()
    };
    let a = mk(&mut rng, 0);
    let b = mk(&mut rng, 1);
    let mut states = Vec::new();
    for i in 0..=per_writer {
        for j in 0..=per_writer {
            let mut m = Model::default();
            for (t, c) in a[..i].iter().chain(&b[..j]) {
                m.writes.insert(*t, c.clone());
            }
            states.push(((i, j), m.expected()));
        }
    }
    let writers_done = AtomicUsize::new(0);
    let reads = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for writes in [&a, &b] {
            let (array, dir, writers_done) = (&array, tmp.path(), &writers_done);
            s.spawn(move || {
                for (t, c) in writes {
                    cli_write(array, dir, *t, c);
                }
                writers_done.fetch_add(1, Ordering::Release);
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                let mut last = (0, 0);
                loop {
                    let finished = writers_done.load(Ordering::Acquire) == 2;
                    let got = cli_read(&array).unwrap_or_else(|e| panic!("read failed: {e}"));
                    let Some((k, _)) = states.iter().find(|(_, st)| *st == got) else {
                        panic!("a read of {} cells matches no set of whole writes", got.len());
                    };
                    assert!(k.0 >= last.0 && k.1 >= last.1, "{k:?} after {last:?}");
                    last = *k;
                    reads.fetch_add(1, Ordering::Relaxed);
                    if finished {
                        assert_eq!(*k, (per_writer, per_writer));
                        break;
                    }
                }
            });
        }
    });
    assert!(reads.load(Ordering::Relaxed) >= 2);
}

#[test]
fn cli_writers_started_at_once_each_make_their_own_fragment() {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("array");
    create_array(&array, false);
    let mut rng = Rng::new(7);
    let n = 4;
    let batches: Vec<Vec<Cell>> =
        (0..n).map(|i| batch(&mut rng, i as u64, i as i64, n as i64, 3000)).collect();
    let inputs: Vec<_> = batches
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = tmp.path().join(format!("in{i}.jsonl"));
            std::fs::write(&p, to_jsonl(b)).unwrap();
            p
        })
        .collect();
    // All at once, all at the same timestamp.
    let children: Vec<_> = inputs
        .iter()
        .map(|p| {
            std::process::Command::new(support::tessera_bin())
                .args(["write", array.to_str().unwrap(), "--input", p.to_str().unwrap()])
                .args(["--timestamp", "5"])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let (ok, out, err) = tessera(&["fragments", array.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let frags: serde_json::Value = serde_json::from_str(&out).unwrap();
    let frags = frags.as_array().unwrap();
    assert_eq!(frags.len(), n);
    assert!(
        frags
            .iter()
            .all(|f| f["cell_num"] == 3000 && f["timestamp_range"] == serde_json::json!([5, 5]))
    );
    let mut m = Model::default();
    for (i, b) in batches.iter().enumerate() {
        m.writes.insert(i as u64, b.clone());
    }
    let got = cli_read(&array).unwrap();
    assert!(got == m.expected(), "{}", first_difference(&got, &m.expected()));
}

#[test]
fn cli_consolidate_and_vacuum_never_change_what_cli_readers_see() {
    let tmp = tempfile::tempdir().unwrap();
    let array = tmp.path().join("array");
    let a = array.to_str().unwrap();
    create_array(&array, false);
    let mut rng = Rng::new(11);
    // Disjoint batches: writing one again (the same cells, newer) changes nothing.
    let batches: Vec<Vec<Cell>> =
        (0..4).map(|i| batch(&mut rng, i, 10_000 * i as i64, 3, 1500)).collect();
    let mut t = 0;
    for b in &batches {
        t += 1;
        cli_write(&array, tmp.path(), t, b);
    }
    let expected = cli_read(&array).unwrap();
    let done = AtomicBool::new(false);
    let (reads, removed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    match cli_read(&array) {
                        Ok(got) => {
                            assert!(got == expected, "{}", first_difference(&got, &expected));
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                        // A vacuum removed the fragments the read had opened: a clear error.
                        Err(e) if e.contains("removed after the array was opened") => {
                            removed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("read failed: {e}"),
                    }
                }
            });
        }
        for round in 0..3 {
            // Write a batch again (the same cells, newer): the contents stay the same, and
            // consolidation has something to do.
            t += 1;
            cli_write(&array, tmp.path(), t, &batches[round % batches.len()]);
            for args in [
                ["consolidate", a, "--mode", "commits"],
                ["consolidate", a, "--mode", "fragments"],
                ["vacuum", a, "--mode", "fragments"],
                ["consolidate", a, "--mode", "fragment-meta"],
                ["vacuum", a, "--mode", "commits"],
                ["vacuum", a, "--mode", "fragment-meta"],
            ] {
                let (ok, _, err) = tessera(&args);
                assert!(ok, "{args:?}: {err}");
            }
        }
        done.store(true, Ordering::Release);
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    let (ok, out, err) = tessera(&["verify", a]);
    assert!(ok, "{out}{err}");
    eprintln!(
        "{} reads during consolidations and vacuums, {} found their fragments vacuumed",
        reads.load(Ordering::Relaxed),
        removed.load(Ordering::Relaxed)
    );
}
