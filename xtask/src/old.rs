//! `cargo xtask fixtures-old`: fixtures written by older TileDB releases, under
//! `testdata/old/`. Never run in CI (CI only verifies the committed fixtures, in
//! `crates/tessera-query/tests/old_formats.rs`).
//!
//! * Each release of [`OLD_RELEASES`] gets its own venv, `target/old-venvs/tiledb-<minor>.x`,
//!   with that exact `tiledb` wheel (and `numpy<2`, which the older wheels need); then
//!   `xtask/fixtures/gen_old.py` writes the release's arrays and expected JSON into
//!   `testdata/old/tiledb-<version>/`.
//! * The releases of [`OLDEST_RELEASES`] (formats 3 to 9) have wheels for CPython 3.7 or 3.8
//!   only: their venvs are made with that python (`TESSERA_PYTHON_3_8` / `_3_7`, else
//!   `~/.pyenv/versions/3.8.*`, else `python3.8` on the path). They only write the arrays
//!   (`gen_old.py --write-only`); the expected JSON is what libtiledb 2.30 (the reference
//!   venv) reads from them (`gen_old.py --describe-written`).
//! * With `--tiledb-repo PATH` (a checkout of TileDB-Inc/TileDB), the older arrays of its
//!   `test/inputs/arrays` that libtiledb 2.30 reads ([`TILEDB_REPO_ARRAYS`]) are copied to
//!   `testdata/old/tiledb-repo/` and described by the reference venv (libtiledb 2.30).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{ensure_venv, python_script, run, venv_python};

/// The older tiledb-py releases that install for Python 3.11, with their libtiledb and the
/// fragment format version it writes. Older wheels (0.15 to 0.18) have no Python 3.11 build.
pub(crate) const OLD_RELEASES: [(&str, &str, u32); 9] = [
    ("0.19.1", "2.13.1", 16),
    ("0.20.0", "2.14.0", 17),
    ("0.21.6", "2.15.4", 18),
    ("0.22.3", "2.16.3", 19),
    ("0.23.5", "2.17.5", 20),
    ("0.25.1", "2.19.2", 21),
    ("0.28.0", "2.22.0", 21),
    ("0.30.2", "2.24.2", 21),
    ("0.33.6", "2.27.2", 22),
];

/// The tiledb-py releases that write format versions 3 to 9 (found by writing arrays: the
/// footer's version, the `_<v>` of the fragment names from format 5), with their libtiledb,
/// the format they write and the CPython they have wheels for. Format 7 is only written by
/// 0.8.0 (libtiledb 2.2.2), whose Python API has no nullable attributes; 0.8.7 already writes
/// format 8. Before 0.19 tiledb-py cannot write var-sized nullable attributes.
pub(crate) const OLDEST_RELEASES: [(&str, &str, u32, &str); 7] = [
    ("0.4.4", "1.6.3", 3, "3.7"),
    ("0.5.9", "1.7.7", 4, "3.8"),
    ("0.6.6", "2.0.8", 5, "3.8"),
    ("0.7.7", "2.1.6", 6, "3.8"),
    ("0.8.0", "2.2.2", 7, "3.8"),
    ("0.8.11", "2.2.9", 8, "3.8"),
    ("0.9.5", "2.3.3", 9, "3.8"),
];

/// Arrays of TileDB-Inc/TileDB's `test/inputs/arrays` that libtiledb 2.30 reads, with the
/// subarrays (`dim=lo:hi` lists, JSON) read besides the whole array. `dense_array_v1_3_0`
/// (libtiledb 2.30: "Reading data past end of serialized data size") and
/// `experimental_array_vUINT32_MAX` (a format version newer than 22) are left out.
pub(crate) const TILEDB_REPO_ARRAYS: [(&str, &str); 3] = [
    (
        "non_split_coords_v1_4_0",
        r#"[{"d1": [2, 3], "d2": [0, 10000]}, {"d1": [0, 10000], "d2": [9, 10]}]"#,
    ),
    ("zero_var_chunks_v10", "[]"),
    ("sparse_array_v11", r#"[{"d1": [1, 2], "d2": [1, 4]}]"#),
];

/// The venv of release `version`: `target/old-venvs/tiledb-<version>`.
fn venv_dir(root: &Path, version: &str) -> PathBuf {
    root.join("target").join("old-venvs").join(format!("tiledb-{version}"))
}

/// A CPython of version `minor` ("3.8"): `TESSERA_PYTHON_3_8`, else the newest
/// `~/.pyenv/versions/3.8.*`, else `python3.8` on the path.
fn find_python(minor: &str) -> Result<std::ffi::OsString> {
    let var = format!("TESSERA_PYTHON_{}", minor.replace('.', "_"));
    if let Some(p) = std::env::var_os(&var) {
        return Ok(p);
    }
    if let Some(home) = std::env::var_os("HOME") {
        let versions = Path::new(&home).join(".pyenv").join("versions");
        if let Ok(entries) = fs::read_dir(&versions) {
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{minor}.")))
                .map(|e| e.path().join("bin").join("python3"))
                .filter(|p| p.is_file())
                .collect();
            found.sort();
            if let Some(p) = found.pop() {
                return Ok(p.into());
            }
        }
    }
    let on_path = format!("python{minor}");
    if Command::new(&on_path).arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Ok(on_path.into());
    }
    bail!("no CPython {minor} found: set {var} (tiledb-py releases before 0.19 need it)")
}

/// Creates (or reuses) the venv of `version` and returns its python.
fn ensure_old_venv(root: &Path, version: &str) -> Result<PathBuf> {
    ensure_venv_with(root, version, None, "numpy<2")
}

/// Creates (or reuses) the venv of `version` with `base_python` (default: `TESSERA_PYTHON`
/// or `python3`) and `numpy` (a requirement), and returns its python.
fn ensure_venv_with(
    root: &Path,
    version: &str,
    base_python: Option<std::ffi::OsString>,
    numpy: &str,
) -> Result<PathBuf> {
    let venv = venv_dir(root, version);
    let python = venv_python(&venv);
    let installed = python.is_file()
        && Command::new(&python)
            .args(["-c", "import tiledb; print(tiledb.__version__)"])
            .output()
            .is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == version
            });
    if installed {
        return Ok(python);
    }
    if venv.exists() {
        fs::remove_dir_all(&venv).with_context(|| format!("removing {}", venv.display()))?;
    }
    let base = base_python
        .or_else(|| std::env::var_os("TESSERA_PYTHON"))
        .unwrap_or_else(|| "python3".into());
    println!("xtask: creating {} (tiledb=={version})", venv.display());
    run(Command::new(&base).arg("-m").arg("venv").arg(&venv), "python3 -m venv")?;
    run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input"])
            .args(["--progress-bar", "off", "--only-binary=:all:"])
            .arg(format!("tiledb=={version}"))
            .arg(numpy),
        &format!("pip install tiledb=={version}"),
    )?;
    Ok(python)
}

/// `cargo xtask fixtures-old [--release V ...] [--tiledb-repo PATH]`.
pub(crate) fn fixtures_old(
    root: &Path,
    releases: &[String],
    tiledb_repo: Option<&Path>,
) -> Result<()> {
    for r in releases {
        if !OLD_RELEASES.iter().any(|(v, _, _)| v == r)
            && !OLDEST_RELEASES.iter().any(|(v, ..)| v == r)
        {
            let known: Vec<&str> = OLDEST_RELEASES
                .iter()
                .map(|(v, ..)| *v)
                .chain(OLD_RELEASES.iter().map(|(v, _, _)| *v))
                .collect();
            bail!("unknown release {r:?} (known: {})", known.join(", "));
        }
    }
    let out = root.join("testdata").join("old");
    fs::create_dir_all(&out)?;
    let only_repo = tiledb_repo.is_some() && releases.is_empty();
    for (version, _, _) in OLD_RELEASES {
        if only_repo || (!releases.is_empty() && !releases.iter().any(|r| r == version)) {
            continue;
        }
        let python = ensure_old_venv(root, version)?;
        let dir = out.join(format!("tiledb-{version}"));
        let mut cmd = python_script(&python, root, "gen_old.py");
        cmd.arg(&dir);
        run(&mut cmd, &format!("gen_old.py with tiledb {version}"))?;
    }
    for (version, _, _, python) in OLDEST_RELEASES {
        if only_repo || (!releases.is_empty() && !releases.iter().any(|r| r == version)) {
            continue;
        }
        let old = ensure_venv_with(root, version, Some(find_python(python)?), "numpy<1.22")?;
        let dir = out.join(format!("tiledb-{version}"));
        let mut cmd = python_script(&old, root, "gen_old.py");
        cmd.arg("--write-only").arg(&dir);
        run(&mut cmd, &format!("gen_old.py --write-only with tiledb {version}"))?;
        let reference = ensure_venv(root)?;
        let mut cmd = python_script(&reference, root, "gen_old.py");
        cmd.arg("--describe-written").arg(&dir);
        run(&mut cmd, &format!("gen_old.py --describe-written of tiledb {version}"))?;
    }
    if let Some(repo) = tiledb_repo {
        let python = ensure_venv(root)?;
        let dir = out.join("tiledb-repo");
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
        let src = repo.join("test").join("inputs").join("arrays");
        let mut cmd = python_script(&python, root, "gen_old.py");
        cmd.arg("--describe").arg(&dir);
        for (name, ranges) in TILEDB_REPO_ARRAYS {
            copy_dir(&src.join(name), &dir.join(name))?;
            cmd.arg(name).arg(ranges);
        }
        run(&mut cmd, "gen_old.py --describe with libtiledb 2.30")?;
    }
    Ok(())
}

/// Copies a folder tree (files and folders only).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            fs::copy(e.path(), &target)
                .with_context(|| format!("copying {}", e.path().display()))?;
        }
    }
    Ok(())
}
