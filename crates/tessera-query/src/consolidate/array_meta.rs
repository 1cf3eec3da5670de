//! Array metadata consolidation (`sm.consolidation.mode = array_meta`): the metadata files
//! visible in the consolidation's timestamp range merged into one, as libtiledb 2.30's
//! `ArrayMetaConsolidator` does (`docs/format/metadata.md`).
//!
//! * The inputs are the `__meta/` files an array opened at the range `[start, end]` loads
//!   ([`ArrayMetadata::load`]: fully inside the range, not vacuumed, by timestamp); the range
//!   is `Options::range`, by default `[0, u64::MAX]` (libtiledb's
//!   `sm.consolidation.timestamp_start` / `_end`).
//! * Nothing happens with fewer than two inputs.
//! * The merged state (live keys only, sorted by key) is written as one generic tile to
//!   `__meta/__<t1 of the first input>_<t2 of the last>_<label>` (no version suffix); when
//!   every key was deleted nothing is written there, as libtiledb writes no empty metadata
//!   file (the report's `output` is then the `.vac` file).
//! * Then `__meta/<same name>.vac` lists the inputs, one `/__meta/<name>` line each (the form
//!   libtiledb writes for arrays of format version 19 and later), which hides them from
//!   readers until a vacuum in `array_meta` mode removes them and the `.vac` file.

use bytes::Bytes;
use tessera_fragment::VacuumFile;
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;

use crate::consolidate::commits::{latest_write_version, list_or_empty, name_over};
use crate::consolidate::{Options, Report};
use crate::metadata::ArrayMetadata;
use crate::{Error, Result};
use tessera_fragment::dirs;

/// Merges the array's metadata files into one.
///
/// # Errors
/// [`Error::NotAnArray`]; [`Error::InvalidQuery`] for a range whose start is after its end;
/// storage errors and corrupt metadata files.
pub(crate) fn consolidate(storage: &dyn Storage, options: &Options) -> Result<Report> {
    let (start, end) = options.range.unwrap_or((0, u64::MAX));
    if start > end {
        return Err(Error::InvalidQuery(format!(
            "the consolidation range starts at {start}, after its end {end}"
        )));
    }
    latest_write_version(storage)?;
    let metadata = ArrayMetadata::load(storage, start, end)?;
    let files = metadata.files();
    if files.len() <= 1 {
        return Ok(Report::default());
    }
    let ranges: Vec<(u64, u64)> = files.iter().map(|n| (n.t1, n.t2)).collect();
    let name = name_over(&ranges, None);
    let output = format!("{}/{name}", dirs::META);
    let err = |source: tessera_tile::Error| Error::Metadata {
        file: output.clone(),
        source: Box::new(source),
    };
    let payload = metadata.to_payload().map_err(|e| err(e.into()))?;
    let written = !payload.is_empty();
    if written {
        let tile = tessera_tile::write_generic_tile_with_key(
            &payload,
            FORMAT_VERSION,
            storage.encryption_key(),
        )
        .map_err(err)?;
        storage.publish(&output, Bytes::from(tile))?;
    }
    if let Some(p) = &options.progress {
        p(1, 2);
    }
    let inputs: Vec<String> = files.iter().map(|n| format!("{}/{n}", dirs::META)).collect();
    let vac = VacuumFile { lines: inputs.iter().map(|p| format!("/{p}")).collect() };
    let vac_path = format!("{output}.vac");
    storage.publish(&vac_path, Bytes::from(vac.to_bytes()))?;
    if let Some(p) = &options.progress {
        p(2, 2);
    }
    Ok(Report {
        inputs,
        output: Some(if written { output } else { vac_path }),
        ..Report::default()
    })
}

/// What a vacuum in `array_meta` mode removes (`ArrayMetaConsolidator::vacuum`, the array
/// directory over `[0, u64::MAX]`): the metadata files that a `__meta/*.vac` file lists and
/// that exist, then every `.vac` file.
pub(super) fn files_to_vacuum(storage: &dyn Storage) -> Result<Vec<String>> {
    let listing = list_or_empty(storage, dirs::META)?;
    let mut vac_files = Vec::new();
    let mut others = Vec::new();
    for e in &listing {
        // libtiledb parses every name; names of another shape are skipped here.
        if tessera_types::names::TimestampedName::parse(&e.name).is_err() {
            continue;
        }
        if e.name.ends_with(".vac") {
            vac_files.push(format!("{}/{}", dirs::META, e.name));
        } else {
            others.push(format!("{}/{}", dirs::META, e.name));
        }
    }
    let mut listed = std::collections::HashSet::new();
    for path in &vac_files {
        let vac = VacuumFile::parse(&storage.read(path)?)
            .and_then(|v| v.relative_paths())
            .map_err(|source| Error::Fragment { file: path.clone(), source: Box::new(source) })?;
        listed.extend(vac);
    }
    let mut out: Vec<String> = others.into_iter().filter(|p| listed.contains(p)).collect();
    out.extend(vac_files);
    Ok(out)
}
