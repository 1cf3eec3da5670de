//! `tessera fragments`, `info` and `layout` on the libtiledb-written `testdata/fragments`
//! family: listings equal to libtiledb's FragmentInfo, time travel by libtiledb's rules, and a
//! layout whose tiles cover every data file exactly.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fragments")
}

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn arrays() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(testdata())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("__schema").is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn fragments_json_equals_libtiledbs_fragment_info() {
    let mut n = 0;
    for array in arrays() {
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(array.with_extension("fragments.json")).unwrap(),
        )
        .unwrap();
        let got: Value =
            serde_json::from_str(&run(&["fragments", array.to_str().unwrap(), "--json"])).unwrap();
        assert_eq!(got, expected, "{}", array.display());
        // The table and the summary work on every array too.
        run(&["fragments", array.to_str().unwrap()]);
        run(&["info", array.to_str().unwrap()]);
        n += 1;
    }
    assert!(n >= 15, "{n}");
}

fn ranges_at(array: &str, at: u64) -> Vec<(u64, u64)> {
    let path = testdata().join(array);
    let got: Value = serde_json::from_str(&run(&[
        "fragments",
        path.to_str().unwrap(),
        "--json",
        "--at",
        &at.to_string(),
    ]))
    .unwrap();
    got.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (f["timestamp_range"][0].as_u64().unwrap(), f["timestamp_range"][1].as_u64().unwrap())
        })
        .collect()
}

/// Dense arrays count only fragments (and `.vac` files) fully inside the open range; sparse
/// arrays count any overlap (`docs/format/commits-and-names.md`, "Which fragments a reader sees").
#[test]
fn time_travel_selects_fragments_as_libtiledb() {
    // Not vacuumed: at 25 the consolidation [10, 30] is not inside [0, 25], so the dense
    // array shows its inputs; at the latest time only the consolidated fragment.
    assert_eq!(ranges_at("dense_consolidated", 25), [(10, 10), (20, 20)]);
    assert_eq!(ranges_at("dense_consolidated", 1_000), [(10, 30)]);
    // Sparse: the consolidated fragment overlaps [0, 15] and replaces its inputs.
    assert_eq!(ranges_at("sparse_consolidated", 15), [(10, 30)]);
    assert_eq!(ranges_at("sparse_consolidated", 1_000), [(10, 30), (40, 40)]);
    // After a vacuum the inputs are gone, so nothing dense is visible at 25.
    assert_eq!(ranges_at("dense_overwrites", 25), [(10, 10), (20, 20)]);
    assert_eq!(ranges_at("dense_old_timestamp", 5), [(5, 5)]);
    assert_eq!(ranges_at("dense_old_timestamp", 4), []);
    // Consolidated commits: fragments come from the .con file.
    assert_eq!(ranges_at("commits_consolidated_vacuumed", 22), [(10, 10), (20, 20)]);
}

#[test]
fn info_counts_delete_commits_in_range() {
    let path = testdata().join("sparse_deletes");
    let at = |t: u64| run(&["info", path.to_str().unwrap(), "--at", &t.to_string()]);
    assert!(at(25).contains("0 delete commit(s)"), "{}", at(25));
    assert!(at(35).contains("1 delete commit(s)"), "{}", at(35));
    assert!(at(1_000).contains("2 delete commit(s)"), "{}", at(1_000));
}

/// The tiles `layout --json` lists cover each data file exactly, back to back, and the
/// file sizes are the files' real sizes.
#[test]
fn layout_tiles_cover_every_file() {
    let mut files = 0;
    for array in arrays() {
        let layout: Value =
            serde_json::from_str(&run(&["layout", array.to_str().unwrap(), "--json"])).unwrap();
        for frag in layout.as_array().unwrap() {
            let dir = array.join("__fragments").join(frag["fragment"].as_str().unwrap());
            for field in frag["fields"].as_array().unwrap() {
                for file in field["files"].as_array().unwrap() {
                    let name = file["file"].as_str().unwrap();
                    let size = std::fs::metadata(dir.join(name)).unwrap().len();
                    assert_eq!(file["size"].as_u64(), Some(size), "{}/{name}", dir.display());
                    let tiles = file["tiles"].as_array().unwrap();
                    assert_eq!(tiles.len() as u64, frag["tile_num"].as_u64().unwrap(), "{name}");
                    let mut at = 0;
                    for t in tiles {
                        assert_eq!(t["offset"].as_u64(), Some(at), "{}/{name}", dir.display());
                        at += t["size"].as_u64().unwrap();
                    }
                    assert_eq!(at, size, "{}/{name}", dir.display());
                    files += 1;
                }
            }
        }
        run(&["layout", array.to_str().unwrap()]);
    }
    assert!(files > 100, "{files}");
}

/// `tessera fragments --json` and `tessera info` on arrays of older format versions
/// (`testdata/old/`): the listing equals the one the writing release reported (libtiledb 2.30
/// for TileDB's own old arrays), `format_version` as stored in each fragment's metadata
/// (format 1 for a `__<uuid>_<t>` fragment, whose name alone implies 2), and `info` prints
/// each fragment's format.
#[test]
fn fragments_of_old_format_versions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/old");
    let mut versions = std::collections::BTreeSet::new();
    for release in std::fs::read_dir(&root).unwrap().flatten() {
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(release.path().join("manifest.json")).unwrap(),
        )
        .unwrap();
        for a in manifest["arrays"].as_array().unwrap() {
            let array = release.path().join(a["path"].as_str().unwrap());
            let expected: Value = serde_json::from_str(
                &std::fs::read_to_string(release.path().join(a["expected"].as_str().unwrap()))
                    .unwrap(),
            )
            .unwrap();
            let mut got: Value =
                serde_json::from_str(&run(&["fragments", array.to_str().unwrap(), "--json"]))
                    .unwrap();
            for f in got.as_array_mut().unwrap() {
                assert!(f["size"].as_u64().unwrap() > 0, "{}", array.display());
                f.as_object_mut().unwrap().remove("size");
            }
            assert_eq!(got, expected["fragments"], "{}", array.display());
            let info = run(&["info", array.to_str().unwrap()]);
            for f in expected["fragments"].as_array().unwrap() {
                let v = f["format_version"].as_u64().unwrap();
                versions.insert(v);
                let line = info
                    .lines()
                    .find(|l| l.contains(f["name"].as_str().unwrap()))
                    .unwrap_or_else(|| panic!("{info}"));
                assert!(line.contains(&format!("format {v} ")), "{line}");
            }
            run(&["fragments", array.to_str().unwrap()]);
        }
    }
    assert!(
        versions.contains(&1) && versions.contains(&10) && versions.contains(&16),
        "{versions:?}"
    );
}
