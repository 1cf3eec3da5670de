//! `tessera fragments`, `tessera info` and `tessera layout`: what an array holds on disk.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{Value as Json, json};
use tessera::layers::fragment::previous::{self, files};
use tessera::layers::fragment::{Field, FieldInfo, LazyPart};
use tessera::layers::rtree::Mbr;
use tessera::layers::schema::json::{pipeline_json, value_json};
use tessera::{Array, ArraySchema, Fragment};

/// The non-empty domain as JSON: one `[low, high]` per dimension.
fn domain_json(schema: &ArraySchema, mbr: Option<&Mbr>) -> Json {
    let Some(mbr) = mbr else { return Json::Null };
    Json::Array(
        schema
            .dimensions
            .iter()
            .zip(&mbr.0)
            .map(|(d, r)| json!([value_json(d.datatype, &r.low), value_json(d.datatype, &r.high)]))
            .collect(),
    )
}

/// Total bytes of the files in a fragment's folder.
fn fragment_size(array: &Array, f: &Fragment) -> Result<u64> {
    Ok(array.storage().list(&f.dir())?.iter().filter(|e| !e.is_dir).map(|e| e.size).sum())
}

/// One fragment in `tessera fragments --json`, keys in the order of `docs/cli.md`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct FragmentJson {
    name: String,
    timestamp_range: [u64; 2],
    sparse: bool,
    cell_num: u64,
    format_version: u32,
    nonempty_domain: Json,
    size: u64,
}

/// `tessera fragments --json`: one object per visible fragment, oldest first.
pub(crate) fn fragments_json(array: &Array) -> Result<Vec<FragmentJson>> {
    let mut out = Vec::new();
    for f in array.fragments() {
        let (t1, t2) = f.name().timestamp_range();
        out.push(FragmentJson {
            name: f.name().as_str().to_owned(),
            timestamp_range: [t1, t2],
            sparse: !f.footer().dense,
            cell_num: f.cell_num()?,
            // As stored in the fragment's metadata (what libtiledb's FragmentInfo reports; the
            // name of a format 1 fragment implies 2).
            format_version: f.footer().version,
            nonempty_domain: domain_json(f.schema(), f.footer().non_empty_domain.as_ref()),
            size: fragment_size(array, f)?,
        });
    }
    Ok(out)
}

/// `tessera fragments`: a table for people.
pub(crate) fn fragments_table(array: &Array) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<56} {:>27} {:>6} {:>6} {:>10} {:>10}  non-empty domain",
        "fragment", "timestamps", "kind", "format", "cells", "bytes"
    );
    for f in array.fragments() {
        let (t1, t2) = f.name().timestamp_range();
        let ned = domain_json(f.schema(), f.footer().non_empty_domain.as_ref());
        let _ = writeln!(
            out,
            "{:<56} {:>27} {:>6} {:>6} {:>10} {:>10}  {ned}",
            f.name().as_str(),
            format!("{t1}..{t2}"),
            if f.footer().dense { "dense" } else { "sparse" },
            f.footer().version,
            f.cell_num()?,
            fragment_size(array, f)?,
        );
    }
    let _ = write!(out, "{} fragment(s)", array.fragments().len());
    Ok(out)
}

/// `tessera info`: the schema in brief, the fragments, the non-empty domain and sizes.
pub(crate) fn info(array: &Array) -> Result<String> {
    let s = array.schema();
    let mut out = String::new();
    let dims: Vec<String> =
        s.dimensions.iter().map(|d| format!("{} {}", d.name, d.datatype)).collect();
    let attrs: Vec<String> =
        s.attributes.iter().map(|a| format!("{} {}", a.name, a.datatype)).collect();
    if array.is_legacy() {
        let _ = writeln!(
            out,
            "{} array, schema __array_schema.tdb (format {})",
            s.array_type, s.version
        );
    } else {
        let _ = writeln!(
            out,
            "{} array, schema {} (format {})",
            s.array_type,
            array.schema_name(),
            s.version
        );
    }
    let _ = writeln!(out, "dimensions: {}", dims.join(", "));
    let _ = writeln!(out, "attributes: {}", attrs.join(", "));
    // The union of the fragments' non-empty domains.
    let dim_types = tessera::layers::fragment::dim_types(s);
    let mut domain: Option<Mbr> = None;
    let mut bytes = 0;
    let mut cells = 0;
    for f in array.fragments() {
        if let Some(ned) = &f.footer().non_empty_domain {
            match &mut domain {
                Some(d) => d.expand(&dim_types, ned),
                None => domain = Some(ned.clone()),
            }
        }
        bytes += fragment_size(array, f)?;
        cells += f.cell_num()?;
    }
    let _ = writeln!(out, "non-empty domain: {}", domain_json(s, domain.as_ref()));
    let _ = writeln!(
        out,
        "{} fragment(s), {cells} cell(s), {bytes} bytes; {} delete commit(s); {} fragment(s) awaiting vacuum",
        array.fragments().len(),
        array.directory().deletes.len(),
        array.directory().vacuumable.len()
    );
    for f in array.fragments() {
        let (t1, t2) = f.name().timestamp_range();
        let _ = writeln!(
            out,
            "  {}  [{t1}, {t2}]  {}  format {}  {} cells",
            f.name().as_str(),
            if f.footer().dense { "dense" } else { "sparse" },
            f.footer().version,
            f.cell_num()?
        );
    }
    out.pop();
    Ok(out)
}

/// Offsets of the tiles of one file and their sizes (the last runs to the file's end).
fn tiles_json(offsets: &[u64], file_size: u64, unfiltered: impl Fn(usize) -> u64) -> Json {
    Json::Array(
        offsets
            .iter()
            .enumerate()
            .map(|(t, &o)| {
                let end = offsets.get(t + 1).copied().unwrap_or(file_size);
                json!({"offset": o, "size": end.saturating_sub(o), "unfiltered_size": unfiltered(t)})
            })
            .collect(),
    )
}

/// `tessera layout --json`: per fragment and field, each file's tiles with offsets, sizes and
/// the filters that encode them.
pub(crate) fn layout_json(array: &Array) -> Result<Json> {
    let storage = array.storage().as_ref();
    let mut out = Vec::new();
    for f in array.fragments() {
        let schema = f.schema();
        let footer = f.footer();
        let layout = footer.layout(schema);
        let tile_num = f.tile_num()?;
        let cells = footer.cell_num_fn(schema).map_err(|e| anyhow::anyhow!("{}: {e}", f.dir()))?;
        let mut fields = Vec::new();
        // Older versions name files after the fields and zip coordinates (format 1-4).
        let version = footer.version;
        let zipped = previous::zipped_coords(version);
        for (idx, field) in layout.fields().enumerate() {
            if matches!(field, Field::Coords)
                || (zipped && matches!(field, Field::Dimension(j) if j > 0))
            {
                continue; // one `__coords.tdb` holds every dimension, shown once
            }
            let Some(data_file) = files::data_file(field, version, schema) else { continue };
            if footer.file_sizes.get(idx).copied().unwrap_or(0) == 0 {
                continue; // dense dimensions have no files
            }
            let mut info = FieldInfo::new(schema, field)?;
            if zipped && matches!(field, Field::Dimension(_)) {
                info.name = files::COORDS_STEM.to_owned();
                info.cell_size *= schema.dimensions.len() as u64;
            }
            let (pipeline, kind) = match field {
                Field::Attribute(i) => (schema.attributes[i].filters.clone(), "attribute"),
                Field::Dimension(_) if zipped => (schema.coords_filters.clone(), "dimension"),
                Field::Dimension(j) => {
                    (schema.dimension_filters(&schema.dimensions[j]).clone(), "dimension")
                }
                _ => (tessera::FilterPipeline::default(), "timestamps"),
            };
            let offsets = f.u64s(storage, LazyPart::TileOffsets(idx))?;
            let mut files = Vec::new();
            if info.var {
                let var_offsets = f.u64s(storage, LazyPart::TileVarOffsets(idx))?;
                let var_sizes = f.u64s(storage, LazyPart::TileVarSizes(idx))?;
                files.push(json!({
                    "file": data_file, "role": "offsets", "size": footer.file_sizes[idx],
                    "filters": pipeline_json(&schema.offsets_filters),
                    "tiles": tiles_json(&offsets, footer.file_sizes[idx], |t| 8 * cells(t as u64)),
                }));
                files.push(json!({
                    "file": files::var_file(field, version, schema), "role": "var", "size": footer.file_var_sizes[idx],
                    "filters": pipeline_json(&pipeline),
                    "tiles": tiles_json(&var_offsets, footer.file_var_sizes[idx], |t| var_sizes.get(t).copied().unwrap_or(0)),
                }));
            } else {
                files.push(json!({
                    "file": data_file, "role": "data", "size": footer.file_sizes[idx],
                    "filters": pipeline_json(&pipeline),
                    "tiles": tiles_json(&offsets, footer.file_sizes[idx], |t| info.cell_size * cells(t as u64)),
                }));
            }
            if info.nullable {
                let validity = f.u64s(storage, LazyPart::TileValidityOffsets(idx))?;
                files.push(json!({
                    "file": files::validity_file(field, version, schema), "role": "validity", "size": footer.file_validity_sizes[idx],
                    "filters": pipeline_json(&schema.validity_filters),
                    "tiles": tiles_json(&validity, footer.file_validity_sizes[idx], |t| cells(t as u64)),
                }));
            }
            fields.push(json!({"name": info.name, "kind": kind, "type": info.datatype.name(), "files": files}));
        }
        out.push(json!({
            "fragment": f.name().as_str(),
            "dense": footer.dense,
            "tile_num": tile_num,
            "metadata_size": f.metadata_file_size(),
            "fields": fields,
        }));
    }
    Ok(Json::Array(out))
}

/// `tessera layout`: the same, as text.
pub(crate) fn layout_text(array: &Array) -> Result<String> {
    let mut out = String::new();
    for frag in layout_json(array)?.as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{}  ({} tiles)",
            frag["fragment"].as_str().unwrap_or(""),
            frag["tile_num"]
        );
        for field in frag["fields"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  {} ({} {})",
                field["name"].as_str().unwrap_or(""),
                field["kind"].as_str().unwrap_or(""),
                field["type"].as_str().unwrap_or("")
            );
            for file in field["files"].as_array().into_iter().flatten() {
                let tiles = file["tiles"].as_array().map_or(0, Vec::len);
                let filters: Vec<&str> = file["filters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f["type"].as_str())
                    .collect();
                let _ = writeln!(
                    out,
                    "    {:<20} {:<9} {:>10} bytes  {tiles} tiles  filters {}",
                    file["file"].as_str().unwrap_or(""),
                    file["role"].as_str().unwrap_or(""),
                    file["size"],
                    if filters.is_empty() { "-".to_owned() } else { filters.join(" → ") }
                );
            }
        }
    }
    out.pop();
    Ok(out)
}
