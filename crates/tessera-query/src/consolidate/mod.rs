//! Consolidation and vacuum (`docs/format/commits-and-names.md`), compatible with libtiledb 2.30 in
//! both directions: what Tessera consolidates libtiledb reads, and the other way round.
//!
//! [`consolidate`] runs one mode on an array:
//! * [`Mode::Fragments`] merges the fragments of a timestamp range into one (newest wins;
//!   sparse fragments keep every version of a cell with its timestamp, and the delete
//!   metadata, unless asked to purge), and writes a `.vac` file naming the merged ones;
//! * [`Mode::Commits`] gathers the commit files into one `.con` file;
//! * [`Mode::FragmentMeta`] gathers the fragments' footers into one `__fragment_meta/*.meta`;
//! * [`Mode::ArrayMeta`] merges the array metadata files into one.
//!
//! [`vacuum`] then removes what a mode made obsolete, and only that.

mod array_meta;
pub(crate) mod commits;
mod fragment_meta;
mod fragments;
mod vacuum;

use std::sync::Arc;

use tessera_storage::Storage;

use crate::Result;

pub use vacuum::vacuum;

/// What to consolidate (libtiledb's `sm.consolidation.mode`, `sm.vacuum.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Fragments into one fragment.
    #[default]
    Fragments,
    /// Commit files into one `.con` file.
    Commits,
    /// Fragment footers into one `__fragment_meta/*.meta` file.
    FragmentMeta,
    /// Array metadata files into one.
    ArrayMeta,
}

impl Mode {
    /// The mode named as the CLI and libtiledb's config name it: `fragments`, `commits`,
    /// `fragment_meta` (or `fragment-meta`), `array_meta` (or `array-meta`).
    pub fn parse(name: &str) -> Option<Mode> {
        Some(match name {
            "fragments" => Mode::Fragments,
            "commits" => Mode::Commits,
            "fragment_meta" | "fragment-meta" => Mode::FragmentMeta,
            "array_meta" | "array-meta" => Mode::ArrayMeta,
            _ => return None,
        })
    }
}

/// How to consolidate (libtiledb's `sm.consolidation.*` settings that Tessera honours).
#[derive(Clone, Default)]
pub struct Options {
    /// Only what lies in `[start, end]` (ms) is consolidated (`timestamp_start`/`_end`);
    /// `None` for everything. As in libtiledb, it applies to the fragments and array
    /// metadata modes; commits and fragment metadata always take everything up to now.
    pub range: Option<(u64, u64)>,
    /// Drop deleted cells instead of keeping them with their delete metadata
    /// (`purge_deleted_cells`).
    pub purge_deleted: bool,
    /// Called with (work done, total work) as a fragment consolidation goes, for progress
    /// bars.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("range", &self.range)
            .field("purge_deleted", &self.purge_deleted)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// What a consolidation or a vacuum did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The inputs merged (fragment names, commit paths or metadata file paths); for a
    /// vacuum, what it removed (paths relative to the array, in removal order).
    pub inputs: Vec<String>,
    /// The file or fragment written (none when there was nothing to consolidate); for a
    /// vacuum, the `.ign` file it wrote, if any.
    pub output: Option<String>,
}

/// Consolidates exactly the fragments `names` of the array at the root of `storage` into one
/// (libtiledb's `tiledb_array_consolidate_fragments`, tiledb-py's
/// `consolidate(uri, fragment_uris=...)`); names as `tessera fragments` shows them (a path or
/// URI is taken by its last part). `options.range` does not apply.
///
/// # Errors
/// [`crate::Error::InvalidQuery`] when a name is not a fragment the array shows, or, for a
/// dense array, when an older fragment not listed overlaps the listed ones; storage errors.
pub fn consolidate_fragments(
    storage: Arc<dyn Storage>,
    names: &[&str],
    options: &Options,
) -> Result<Report> {
    fragments::consolidate_list(storage, names, options)
}

/// Consolidates the array at the root of `storage` in `mode`.
///
/// # Errors
/// Storage errors; corrupt files; [`crate::Error::InvalidQuery`] for options that do not
/// apply.
pub fn consolidate(storage: Arc<dyn Storage>, mode: Mode, options: &Options) -> Result<Report> {
    match mode {
        Mode::Fragments => fragments::consolidate(storage, options),
        Mode::Commits => commits::consolidate(storage.as_ref(), options),
        Mode::FragmentMeta => fragment_meta::consolidate(storage, options),
        Mode::ArrayMeta => array_meta::consolidate(storage.as_ref(), options),
    }
}
