//! Fragment metadata consolidation (`sm.consolidation.mode = fragment_meta`): the footers of
//! the fragments the array shows gathered into one `__fragment_meta/<name>.meta` file, as
//! libtiledb 2.30's `FragmentMetaConsolidator` does (`docs/format/commits-and-names.md`,
//! "`__fragment_meta/`: consolidated footers").
//!
//! * The fragments are those of the array opened now (`[0, now]`; the consolidation's
//!   timestamp range does not apply, as in libtiledb), oldest first, with a format
//!   version above 2.
//! * Nothing is written for fewer than two fragments.
//! * The file is one generic tile (GZIP level 1): `u32` fragment count; per fragment the
//!   `u64` name length, the folder name and the `u64` offset of its footer in the payload;
//!   then the footers, each exactly as in the fragment's `__fragment_metadata.tdb` without
//!   the trailing length.
//! * The name spans `t1` of the first fragment and `t2` of the last, with the schema's
//!   write version: `__<t1>_<t2>_<label>_22.meta`.
//!
//! Readers (libtiledb and Tessera's [`crate::Array::open`]) then take each fragment's footer
//! from this file instead of reading the end of every fragment's metadata file. A vacuum in
//! `fragment_meta` mode removes every `.meta` file but those with the latest `t2`.

use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use tessera_fragment::{
    ConsolidatedFooter, ConsolidatedFragmentMeta, footer_length_range, footer_range,
    parse_footer_length,
};
use tessera_storage::Storage;
use tessera_types::FORMAT_VERSION;

use crate::consolidate::commits::{list_or_empty, name_over};
use crate::consolidate::{Options, Report};
use crate::{Array, Error, Result};
use tessera_fragment::FRAGMENT_METADATA_FILE;
use tessera_fragment::dirs;

/// Consolidates the footers of the array's fragments into one `.meta` file.
///
/// # Errors
/// As [`Array::open`]; storage errors and corrupt fragment metadata files.
pub(crate) fn consolidate(storage: Arc<dyn Storage>, options: &Options) -> Result<Report> {
    let array = Array::open(storage.clone())?;
    let fragments: Vec<_> =
        array.fragments().iter().filter(|f| f.name().format_version() > 2).cloned().collect();
    if fragments.len() < 2 {
        return Ok(Report::default());
    }
    // libtiledb names the file with the write version of the schema in force now.
    let version = array.schema().version;
    let write_version = if version < 7 { FORMAT_VERSION } else { version };
    let total = fragments.len() as u64;
    let done = std::sync::atomic::AtomicU64::new(0);
    let entries = fragments
        .par_iter()
        .map(|f| {
            let footer = raw_footer(storage.as_ref(), f.name().as_str())?;
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if let Some(p) = &options.progress {
                p(n, total);
            }
            Ok(ConsolidatedFooter { name: f.name().as_str().to_owned(), footer })
        })
        .collect::<Result<Vec<_>>>()?;
    let ranges: Vec<(u64, u64)> = fragments.iter().map(|f| f.name().timestamp_range()).collect();
    let name = name_over(&ranges, Some(write_version));
    let output = format!("{}/{name}.meta", dirs::FRAGMENT_META);
    let meta = ConsolidatedFragmentMeta { entries };
    let bytes = meta
        .to_file_with_key(storage.encryption_key())
        .map_err(|source| Error::Fragment { file: output.clone(), source: Box::new(source) })?;
    storage.publish(&output, Bytes::from(bytes))?;
    let inputs = meta.entries.into_iter().map(|e| e.name).collect();
    Ok(Report { inputs, output: Some(output), ..Report::default() })
}

/// The footer bytes of fragment `name` as its `__fragment_metadata.tdb` stores them, without
/// the trailing `u64` length.
fn raw_footer(storage: &dyn Storage, name: &str) -> Result<Vec<u8>> {
    let path = format!("{}/{name}/{FRAGMENT_METADATA_FILE}", dirs::FRAGMENTS);
    let err = |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
    let size = storage.size(&path)?;
    let len_range = footer_length_range(size).map_err(err)?;
    let len = parse_footer_length(&storage.read_range(&path, len_range)?).map_err(err)?;
    let range = footer_range(size, len).map_err(err)?;
    Ok(storage.read_range(&path, range)?.to_vec())
}

/// What a vacuum in `fragment_meta` mode removes: every file of `__fragment_meta/` whose `t2`
/// is not the latest `t2` there (`FragmentMetaConsolidator::vacuum`). Names that do not parse
/// are left alone.
pub(super) fn files_to_vacuum(storage: &dyn Storage) -> Result<Vec<String>> {
    let named: Vec<(String, u64)> = list_or_empty(storage, dirs::FRAGMENT_META)?
        .into_iter()
        .filter(|e| !e.is_dir)
        .filter_map(|e| {
            let t2 = tessera_fragment::FragmentName::parse(&e.name).ok()?.t2();
            Some((e.name, t2))
        })
        .collect();
    let latest = named.iter().map(|(_, t2)| *t2).max().unwrap_or(0);
    Ok(named
        .into_iter()
        .filter(|(_, t2)| *t2 != latest)
        .map(|(n, _)| format!("{}/{n}", dirs::FRAGMENT_META))
        .collect())
}
