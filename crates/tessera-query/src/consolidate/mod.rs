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
///
/// The step settings choose which fragments merge, as libtiledb's fragment consolidator
/// does: each step merges the run of consecutive fragments (oldest first) with the most
/// fragments in `[step_min_frags, step_max_frags]`, preferring the smallest total size;
/// adjacent fragments whose sizes differ by more than `step_size_ratio` allows are not put
/// in one run, nor (dense arrays) runs whose bounding box overlaps an older fragment or holds
/// more than `amplification` times the cells of their tile-expanded domains. The defaults are
/// libtiledb's: one step merging every fragment of the range.
#[derive(Clone)]
pub struct Options {
    /// Only what lies in `[start, end]` (ms) is consolidated (`timestamp_start`/`_end`);
    /// `None` for everything. As in libtiledb, it applies to the fragments and array
    /// metadata modes; commits and fragment metadata always take everything up to now.
    pub range: Option<(u64, u64)>,
    /// Drop deleted cells instead of keeping them with their delete metadata
    /// (`purge_deleted_cells`).
    pub purge_deleted: bool,
    /// The most merge steps (`sm.consolidation.steps`); each step writes one fragment.
    pub steps: u32,
    /// The fewest fragments one step merges (`sm.consolidation.step_min_frags`).
    pub step_min_frags: u32,
    /// The most fragments one step merges (`sm.consolidation.step_max_frags`).
    pub step_max_frags: u32,
    /// The smallest ratio of two adjacent fragments' sizes (smaller over larger) for them to
    /// merge in one step, in `[0, 1]` (`sm.consolidation.step_size_ratio`).
    pub step_size_ratio: f32,
    /// Dense arrays: the most cells a merged fragment may cover per cell of its inputs'
    /// tile-expanded domains (`sm.consolidation.amplification`); more would write fill values.
    pub amplification: f32,
    /// Fragments mode: about the most bytes the merge holds (read batches, decoded tiles,
    /// tiles waiting to be written); `None` for a tile row (dense) or a few tiles per
    /// input (sparse) at a time. A sparse merge always holds one decoded tile per input
    /// fragment, whatever the budget.
    pub memory_budget: Option<u64>,
    /// Called with (work done, total work) as a fragment consolidation goes, for progress
    /// bars.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            range: None,
            purge_deleted: false,
            steps: u32::MAX,
            step_min_frags: u32::MAX,
            step_max_frags: u32::MAX,
            step_size_ratio: 0.0,
            amplification: 1.0,
            memory_budget: None,
            progress: None,
        }
    }
}

impl Options {
    /// Checks the settings as libtiledb does before consolidating.
    ///
    /// # Errors
    /// [`crate::Error::InvalidQuery`] naming the setting that is out of range.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(crate::Error::InvalidQuery(format!("consolidation: {m}")));
        if self.step_min_frags > self.step_max_frags {
            return bad(&format!(
                "step_min_frags ({}) is larger than step_max_frags ({})",
                self.step_min_frags, self.step_max_frags
            ));
        }
        if !(0.0..=1.0).contains(&self.step_size_ratio) {
            return bad(&format!("step_size_ratio ({}) must be in [0, 1]", self.step_size_ratio));
        }
        if self.amplification.is_nan() || self.amplification < 0.0 {
            return bad(&format!("amplification ({}) must be non-negative", self.amplification));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("range", &self.range)
            .field("purge_deleted", &self.purge_deleted)
            .field("steps", &self.steps)
            .field("step_min_frags", &self.step_min_frags)
            .field("step_max_frags", &self.step_max_frags)
            .field("step_size_ratio", &self.step_size_ratio)
            .field("amplification", &self.amplification)
            .field("memory_budget", &self.memory_budget)
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
    /// vacuum, the `.ign` file it wrote, if any. A fragment consolidation in several steps:
    /// the last fragment written.
    pub output: Option<String>,
    /// A fragment consolidation in several steps: each step's inputs and output, in order
    /// (a later step may merge an earlier step's output). Empty for the other modes and for
    /// one step.
    pub steps: Vec<(Vec<String>, String)>,
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
