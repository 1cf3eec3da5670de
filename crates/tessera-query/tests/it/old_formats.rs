//! Arrays written by older TileDB releases (`testdata/old/<release>/`, made by
//! `cargo xtask fixtures-old`), and the older arrays of TileDB's own repository
//! (`testdata/old/tiledb-repo/`): for each, Tessera's schema, fragment list, whole read and
//! subarray reads must equal what the release itself (libtiledb 2.30 for the repository's
//! arrays) reported, as stored in `<name>.expected.json`.

use crate::common;

use std::collections::BTreeSet;

use common::*;
use serde_json::{Value as Json, json};
use tessera_query::{Array, ReadQuery};
use tessera_schema::json::value_json;
use tessera_schema::{ArraySchema, Dimension};
use tessera_types::Datatype;

fn type_name(dt: Datatype) -> String {
    if dt.is_string() || dt == Datatype::Char { "string".into() } else { dt.name().into() }
}

fn filter_names(p: &tessera_filters::FilterPipeline) -> Json {
    Json::from(p.filters.iter().map(|f| f.filter_type().name()).collect::<Vec<_>>())
}

fn dim_json(schema: &ArraySchema, d: &Dimension, own_filters: bool) -> Json {
    let var = d.is_var();
    let filters = if own_filters { &d.filters } else { schema.dimension_filters(d) };
    json!({
        "name": d.name,
        "type": type_name(d.datatype),
        "domain": if var { Json::Null } else {
            d.domain.as_ref().map_or(Json::Null, |[lo, hi]| {
                json!([value_json(d.datatype, lo), value_json(d.datatype, hi)])
            })
        },
        "tile": if var { Json::Null } else {
            d.tile_extent.as_ref().map_or(Json::Null, |e| value_json(d.datatype, e))
        },
        "filters": filter_names(filters),
    })
}

/// The schema summary `xtask/fixtures/gen_old.py` writes. Dimension filters are compared
/// both as stored and as in force (some releases show the coords filters on a dimension
/// without its own).
fn schema_json(s: &ArraySchema, own_dim_filters: bool) -> Json {
    json!({
        "array_type": s.array_type.name(),
        "cell_order": s.cell_order.name(),
        "tile_order": s.tile_order.name(),
        "capacity": s.capacity,
        "allows_duplicates": s.allows_duplicates,
        "dimensions": s.dimensions.iter().map(|d| dim_json(s, d, own_dim_filters)).collect::<Vec<_>>(),
        "attributes": s.attributes.iter().map(|a| json!({
            "name": a.name,
            "type": type_name(a.datatype),
            "var": a.is_var(),
            "nullable": a.nullable,
            "filters": filter_names(&a.filters),
        })).collect::<Vec<_>>(),
        "coords_filters": filter_names(&s.coords_filters),
        "offsets_filters": filter_names(&s.offsets_filters),
    })
}

fn ned_json(schema: &ArraySchema, ned: &tessera_rtree::Mbr) -> Json {
    Json::from(
        schema
            .dimensions
            .iter()
            .zip(&ned.0)
            .map(|(d, r)| json!([value_json(d.datatype, &r.low), value_json(d.datatype, &r.high)]))
            .collect::<Vec<_>>(),
    )
}

fn fragments_json(array: &Array) -> Json {
    let mut out = Vec::new();
    for f in array.fragments() {
        let (t1, t2) = f.name().timestamp_range();
        out.push(json!({
            "name": f.name().as_str(),
            "timestamp_range": [t1, t2],
            "sparse": !f.footer().dense,
            "cell_num": f.cell_num().unwrap(),
            "format_version": f.footer().version,
            "nonempty_domain": f.footer().non_empty_domain.as_ref().map_or(Json::Null, |n| ned_json(f.schema(), n)),
        }));
    }
    Json::from(out)
}

fn add_range<'a>(q: ReadQuery<'a>, d: &Dimension, r: &Json) -> ReadQuery<'a> {
    let (lo, hi) = (&r[0], &r[1]);
    if d.is_var() {
        q.range_str(&d.name, lo.as_str().unwrap(), hi.as_str().unwrap())
    } else if d.datatype == Datatype::UInt64 {
        q.range_u64(&d.name, lo.as_u64().unwrap(), hi.as_u64().unwrap())
    } else {
        q.range_i64(&d.name, lo.as_i64().unwrap(), hi.as_i64().unwrap())
    }
}

/// The union of the fragments' non-empty domains (integer dimensions), which a dense read of
/// "everything" covers in tiledb-py.
fn dense_extent(array: &Array, fragments: &Json) -> Json {
    let mut out = serde_json::Map::new();
    for (i, d) in array.schema().dimensions.iter().enumerate() {
        let lo = fragments
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["nonempty_domain"][i][0].as_i64().unwrap())
            .min();
        let hi = fragments
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["nonempty_domain"][i][1].as_i64().unwrap())
            .max();
        if let (Some(lo), Some(hi)) = (lo, hi) {
            out.insert(d.name.clone(), json!([lo, hi]));
        }
    }
    Json::Object(out)
}

fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

#[test]
fn old_fixtures_read_as_their_release_reads_them() {
    let root = testdata().join("old");
    let mut releases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    releases.sort();
    let mut checked = Vec::new();
    let mut all_versions = BTreeSet::new();
    let mut failed = Vec::new();
    for release in &releases {
        let manifest: Json = serde_json::from_str(
            &std::fs::read_to_string(root.join(release).join("manifest.json")).unwrap(),
        )
        .unwrap();
        for a in manifest["arrays"].as_array().unwrap() {
            let name = a["name"].as_str().unwrap();
            let rel = format!("old/{release}/{}", a["path"].as_str().unwrap());
            let what = format!("{release}/{name}");
            let expected: Json = serde_json::from_str(
                &std::fs::read_to_string(root.join(release).join(a["expected"].as_str().unwrap()))
                    .unwrap(),
            )
            .unwrap();
            let outcome = std::panic::catch_unwind(|| {
                let storage =
                    std::sync::Arc::new(tessera_storage::LocalStorage::new(testdata().join(&rel)));
                let array = Array::open(storage).unwrap_or_else(|e| panic!("{what}: open: {e}"));

                let want = &expected["schema"];
                let got = schema_json(array.schema(), true);
                if &got != want {
                    assert_eq!(&schema_json(array.schema(), false), want, "{what}: schema");
                }

                let frags = fragments_json(&array);
                let mut versions = BTreeSet::new();
                assert_eq!(&frags, &expected["fragments"], "{what}: fragments");
                for f in frags.as_array().unwrap() {
                    versions.insert(f["format_version"].as_u64().unwrap());
                }

                for (k, r) in expected["reads"].as_array().unwrap().iter().enumerate() {
                    let ranges = match &r["ranges"] {
                        Json::Null if array.schema().is_dense() => dense_extent(&array, &frags),
                        Json::Null => json!({}),
                        other => other.clone(),
                    };
                    let mut q = array.read();
                    for d in &array.schema().dimensions {
                        if let Some(range) = ranges.get(&d.name) {
                            q = add_range(q, d, range);
                        }
                    }
                    let what = format!("{what} read {k} {ranges}");
                    let result = q.execute().unwrap_or_else(|e| panic!("{what}: {e}"));
                    check_shape(&result);
                    let want: Vec<Json> = r["cells"].as_array().unwrap().clone();
                    assert_rows_eq_unordered(&rows(&result), &want, &what);
                }
                versions
            });
            match outcome {
                Ok(v) => {
                    all_versions.extend(v);
                    checked.push(what);
                }
                Err(e) => failed.push(format!("{what}: {}", panic_text(&e))),
            }
        }
    }
    eprintln!("checked {} arrays, format versions {all_versions:?}: {checked:?}", checked.len());
    assert!(failed.is_empty(), "{} failed:\n{}", failed.len(), failed.join("\n"));
    assert!(checked.len() >= 100, "{checked:?}");
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A write into a format-1 array adds a format-22 fragment whose footer names
/// `__array_schema.tdb`, as libtiledb 2.30 writes into such arrays; the old and new cells
/// read together, also once consolidated into one format 22 fragment.
#[test]
fn writes_into_a_format_1_array_name_its_legacy_schema() {
    use std::sync::Arc;
    use tessera_query::Column;
    use tessera_storage::LocalStorage;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1");
    copy_tree(&testdata().join("old/tiledb-repo/non_split_coords_v1_4_0"), &path);
    let storage = Arc::new(LocalStorage::new(&path));
    let array = Array::open(storage.clone()).unwrap();
    assert!(array.is_legacy());
    let int32 = |name: &str, v: i32| Column {
        name: name.into(),
        datatype: Datatype::Int32,
        cell_val_num: 1,
        data: v.to_le_bytes().to_vec(),
        offsets: None,
        validity: None,
    };
    array
        .write()
        .timestamp(5)
        .column(int32("d1", 7))
        .column(int32("d2", 7))
        .column(int32("a", 99))
        .submit()
        .unwrap()
        .expect("a fragment");
    let array = Array::open(storage.clone()).unwrap();
    let newest = array.fragments().last().unwrap();
    assert_eq!(newest.footer().schema_name, "__array_schema.tdb");
    let result = array.read().attributes(["a"]).execute().unwrap();
    let mut a: Vec<i32> = result
        .column("a")
        .unwrap()
        .data
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    a.sort_unstable();
    assert_eq!(a, [1, 2, 3, 4, 99]);
    // libtiledb consolidates arrays of formats 1 to 6 into a format 22 fragment
    tessera_query::consolidate::consolidate(
        storage.clone(),
        tessera_query::consolidate::Mode::Fragments,
        &Default::default(),
    )
    .unwrap();
    let array = Array::open(storage).unwrap();
    assert_eq!(array.fragments().len(), 1);
    let result = array.read().attributes(["a"]).execute().unwrap();
    let mut a: Vec<i32> = result
        .column("a")
        .unwrap()
        .data
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    a.sort_unstable();
    assert_eq!(a, [1, 2, 3, 4, 99]);
}

/// Writes into the arrays of formats 3 to 9 (one fixture per format): the new fragment is a
/// format 22 fragment in `__fragments/` naming `__array_schema.tdb`, the old and new cells
/// read together; consolidation and vacuum make one format 22 fragment of arrays of formats
/// 3 to 6 and are refused for 7 to 9 with the reason (libtiledb reading the results is
/// checked by the old-formats conformance step).
#[test]
fn writes_into_formats_3_to_9_then_consolidation() {
    use std::sync::Arc;
    use tessera_query::Column;
    use tessera_storage::LocalStorage;

    for (release, version) in [
        ("tiledb-0.4.4", 3),
        ("tiledb-0.5.9", 4),
        ("tiledb-0.6.6", 5),
        ("tiledb-0.7.7", 6),
        ("tiledb-0.8.0", 7),
        ("tiledb-0.8.11", 8),
        ("tiledb-0.9.5", 9),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        copy_tree(&testdata().join("old").join(release).join("sparse_multi_fragment"), &path);
        let storage = Arc::new(LocalStorage::new(&path));
        let array = Array::open(storage.clone()).unwrap();
        assert!(array.fragments().iter().all(|f| f.footer().version == version), "{release}");
        let t = array.fragments().iter().map(|f| f.name().timestamp_range().1).max().unwrap() + 1;
        array
            .write()
            .timestamp(t)
            .column(Column {
                name: "d".into(),
                datatype: Datatype::Int32,
                cell_val_num: 1,
                data: 42i32.to_le_bytes().to_vec(),
                offsets: None,
                validity: None,
            })
            .column(Column {
                name: "a".into(),
                datatype: Datatype::Float64,
                cell_val_num: 1,
                data: 0.5f64.to_le_bytes().to_vec(),
                offsets: None,
                validity: None,
            })
            .column(Column {
                name: "s".into(),
                datatype: array.schema().attributes[1].datatype,
                cell_val_num: tessera_types::CELL_VAL_NUM_VAR,
                data: b"new".to_vec(),
                offsets: Some(vec![0]),
                validity: None,
            })
            .submit()
            .unwrap()
            .expect("a fragment");
        let array = Array::open(storage.clone()).unwrap();
        let newest = array.fragments().last().unwrap();
        assert_eq!(newest.footer().version, 22, "{release}");
        assert_eq!(newest.footer().schema_name, "__array_schema.tdb", "{release}");
        assert!(path.join("__fragments").join(newest.name().as_str()).is_dir(), "{release}");
        let result = array.read().range_i64("d", 40, 45).execute().unwrap();
        assert_eq!(rows(&result), vec![json!({"d": 42, "a": 0.5, "s": "new"})], "{release}");
        let all = array.read().execute().unwrap();
        assert_eq!(all.cell_num(), 10, "{release}");
        let consolidated = tessera_query::consolidate::consolidate(
            storage.clone(),
            tessera_query::consolidate::Mode::Fragments,
            &Default::default(),
        );
        if version >= 7 {
            let err = consolidated.unwrap_err();
            assert!(err.to_string().contains("in that old format"), "{release}: {err}");
            continue;
        }
        consolidated.unwrap();
        tessera_query::consolidate::vacuum(
            storage.as_ref(),
            tessera_query::consolidate::Mode::Fragments,
        )
        .unwrap();
        let array = Array::open(storage.clone()).unwrap();
        assert_eq!(array.fragments().len(), 1, "{release}");
        assert_eq!(array.fragments()[0].footer().version, 22, "{release}");
        assert_eq!(array.read().execute().unwrap().cell_num(), 10, "{release}");
        let left: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("__") && n.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
            .collect();
        assert!(left.is_empty(), "{release}: {left:?}");
    }
}

/// An array of format 7 upgraded to format 22 consolidates its old fragments into a format 22
/// fragment, as libtiledb does for any array whose schema is of format 22.
#[test]
fn an_upgraded_format_7_array_consolidates_its_old_fragments() {
    use std::sync::Arc;
    use tessera_query::consolidate::{Mode, consolidate, vacuum};
    use tessera_storage::LocalStorage;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a");
    copy_tree(&testdata().join("old/tiledb-0.8.0/sparse_multi_fragment"), &path);
    let storage = Arc::new(LocalStorage::new(&path));
    let before = rows(&Array::open(storage.clone()).unwrap().read().execute().unwrap());
    assert!(consolidate(storage.clone(), Mode::Fragments, &Default::default()).is_err());
    tessera_query::upgrade_version(storage.as_ref()).unwrap().expect("upgraded");
    consolidate(storage.clone(), Mode::Fragments, &Default::default()).unwrap();
    vacuum(storage.as_ref(), Mode::Fragments).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    assert_eq!(array.fragments().len(), 1);
    assert_eq!(array.fragments()[0].footer().version, 22);
    assert_rows_eq_unordered(&rows(&array.read().execute().unwrap()), &before, "upgraded");
}
