//! Deletes on read: which cells of a fragment the visible delete commits remove, exactly as
//! libtiledb 2.30's sparse readers decide (`SparseIndexReaderBase::apply_query_condition`,
//! `ReaderBase::generate_timestamped_conditions` and `add_delete_timestamps_condition`).
//!
//! A `.del` file stores the **negation** of the user's condition: the condition a cell must
//! satisfy to be kept. It is evaluated with the usual rules, so a cell for which it fails —
//! including a null or `NaN` cell, for which every comparison fails — is deleted. (A
//! delete `a == 3` therefore also deletes the cells where `a` is null: libtiledb stores
//! `a != 3`, which fails on nulls.)
//!
//! For a fragment `F` with timestamps `[t1, t2]` and a delete `D` at `T`:
//!
//! * `D` is skipped when `F` has delete metadata (`dt.tdb`, `dci.tdb`) and lists `D`'s
//!   marker (`__commits/<name>.del`) among its processed conditions;
//! * `D` is skipped when `T < t1`;
//! * when `F` has no per-cell timestamps, or `T > t2`, a cell is kept iff the stored
//!   condition holds;
//! * otherwise a cell is kept iff `__timestamps > T` or the stored condition holds (the
//!   libtiledb tree `OR(__timestamps > T, stored)`, flattened): a delete removes the
//!   matching cells written at or before `T`;
//! * when `F` has delete metadata, a cell is kept only if its delete timestamp is after the
//!   open end (`dt > end`, or `dt >= end` when the array is open up to `u64::MAX`).
//!
//! Update commits (`.upd`) carry a condition too, and libtiledb's readers apply it exactly
//! like a delete's (their values are never applied); [`DeleteCondition::load`] reads both.

use tessera_fragment::fields::{DELETE_TIMESTAMPS, TIMESTAMPS};
use tessera_fragment::{
    CommitKind, ConditionOp, DeleteCommit as DeleteFile, FragmentName, UpdateCommit,
};
use tessera_schema::{ArraySchema, Enumeration};
use tessera_storage::Storage;
use tessera_types::Datatype;

use super::ast::{Form, Kind, Leaf, Node};
use super::{ColumnView, QueryCondition};
use crate::dirs;
use crate::{Column, DeleteCommit, Error, Result};

/// The condition of one visible delete (or update) commit, ready to apply to fragments.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteCondition {
    timestamp: u64,
    marker: String,
    stored: QueryCondition,
    timestamped: QueryCondition,
}

fn file_error(file: &str) -> impl Fn(tessera_fragment::Error) -> Error + '_ {
    move |source| Error::Fragment { file: file.to_owned(), source: Box::new(source) }
}

impl DeleteCondition {
    /// The delete whose stored (negated) condition is `stored`, committed at `timestamp`
    /// under `marker` (its path relative to the array, `__commits/<name>.del`).
    pub fn new(timestamp: u64, marker: impl Into<String>, stored: QueryCondition) -> Self {
        let t_leaf = Leaf {
            field: TIMESTAMPS.to_owned(),
            datatype: Datatype::UInt64,
            cell_val_num: 1,
            nullable: false,
            kind: Kind::U64,
            op: ConditionOp::Gt,
            null_test: false,
            value: timestamp.to_le_bytes().to_vec(),
            offsets: None,
            members: Vec::new(),
            form: Form::Cmp(ConditionOp::Gt, timestamp.to_le_bytes().to_vec()),
            form_type: Datatype::UInt64,
        };
        let root = Node::combine(false, vec![Node::Leaf(t_leaf), stored.root.clone()]);
        let timestamped = QueryCondition { root, dense: stored.dense };
        DeleteCondition { timestamp, marker: marker.into(), stored, timestamped }
    }

    /// Reads a visible delete or update commit (from `__commits/` or from the `.con` file
    /// that embeds it) and resolves its condition against `schema`, as libtiledb does
    /// (`load_delete_and_update_conditions`: the array's latest schema).
    ///
    /// # Errors
    /// Storage errors; [`Error::Fragment`] for a malformed file; [`Error::Condition`] for a
    /// condition libtiledb would refuse to load (see [`QueryCondition::from_node`]),
    /// including an empty one.
    pub fn load(
        storage: &dyn Storage,
        commit: &DeleteCommit,
        schema: &ArraySchema,
        enumerations: &[Enumeration],
    ) -> Result<Self> {
        let ext = if commit.kind == CommitKind::Update { "upd" } else { "del" };
        let marker = format!("{}/{}", dirs::COMMITS, commit.name.with_extension(ext));
        let owned;
        let file = match &commit.inline {
            Some(bytes) => bytes.as_slice(),
            None => {
                owned = storage.read(&marker)?;
                &owned[..]
            }
        };
        Self::from_file_with_key(
            &commit.name,
            commit.kind,
            file,
            schema,
            enumerations,
            storage.encryption_key(),
        )
    }

    /// Parses the bytes of a `.del` (or `.upd`) file named `name` and resolves its condition.
    ///
    /// # Errors
    /// As [`DeleteCondition::load`].
    pub fn from_file(
        name: &FragmentName,
        kind: CommitKind,
        file: &[u8],
        schema: &ArraySchema,
        enumerations: &[Enumeration],
    ) -> Result<Self> {
        Self::from_file_with_key(name, kind, file, schema, enumerations, None)
    }

    /// [`Self::from_file`] for an array encrypted with `key`.
    ///
    /// # Errors
    /// As [`DeleteCondition::load`].
    pub fn from_file_with_key(
        name: &FragmentName,
        kind: CommitKind,
        file: &[u8],
        schema: &ArraySchema,
        enumerations: &[Enumeration],
        key: Option<&tessera_types::EncryptionKey>,
    ) -> Result<Self> {
        let ext = if kind == CommitKind::Update { "upd" } else { "del" };
        let marker = format!("{}/{}", dirs::COMMITS, name.with_extension(ext));
        let node = if kind == CommitKind::Update {
            UpdateCommit::parse_file_with_key(file, key).map_err(file_error(&marker))?.condition
        } else {
            DeleteFile::parse_file_with_key(file, key).map_err(file_error(&marker))?.condition
        };
        let Some(node) = node else {
            return Err(Error::Condition {
                column: None,
                message: format!("{marker} holds an empty condition, which libtiledb cannot load"),
            });
        };
        let stored =
            QueryCondition::from_node(&node, schema, enumerations).map_err(|e| match e {
                Error::Condition { column, message } => {
                    Error::Condition { column, message: format!("{marker}: {message}") }
                }
                e => e,
            })?;
        Ok(Self::new(name.t1(), marker, stored))
    }

    /// The delete's timestamp.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// Its marker: the commit's path relative to the array (`__commits/<name>.del`), as
    /// fragments consolidated with delete metadata list it among their processed
    /// conditions.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// The stored condition: the negation of the user's delete condition, which kept cells
    /// satisfy.
    pub fn stored(&self) -> &QueryCondition {
        &self.stored
    }

    /// How this delete treats a fragment.
    pub fn applies_to(&self, fragment: &FragmentDeleteInfo<'_>) -> DeleteApplies {
        let (t1, t2) = fragment.timestamp_range;
        if fragment.processed_conditions.is_some_and(|p| p.iter().any(|m| m == &self.marker)) {
            return DeleteApplies::AlreadyProcessed;
        }
        if self.timestamp < t1 {
            return DeleteApplies::No;
        }
        if !fragment.has_timestamps || self.timestamp > t2 {
            DeleteApplies::AllCells
        } else {
            DeleteApplies::CellsUpToTimestamp
        }
    }

    /// ANDs "kept by this delete" into `keep` for the first `keep.len()` cells, or leaves
    /// `keep` alone when the delete does not apply to the fragment.
    ///
    /// # Errors
    /// As [`QueryCondition::evaluate_and`]; [`Error::Condition`] when the fragment's
    /// per-cell timestamps are needed and missing from `columns`.
    pub fn apply<'c>(
        &self,
        fragment: &FragmentDeleteInfo<'_>,
        columns: &dyn Fn(&str) -> Option<&'c Column>,
        keep: &mut [bool],
    ) -> Result<()> {
        let views = |name: &str| columns(name).map(ColumnView::from);
        self.apply_views(fragment, &views, keep)
    }

    /// [`DeleteCondition::apply`] over borrowed views (decoded tiles).
    pub(crate) fn apply_views<'c>(
        &self,
        fragment: &FragmentDeleteInfo<'_>,
        columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
        keep: &mut [bool],
    ) -> Result<()> {
        match self.applies_to(fragment) {
            DeleteApplies::No | DeleteApplies::AlreadyProcessed => Ok(()),
            DeleteApplies::AllCells => self.stored.evaluate_views(columns, keep),
            DeleteApplies::CellsUpToTimestamp => {
                if columns(TIMESTAMPS).is_none() {
                    return Err(Error::Condition {
                        column: None,
                        message: format!(
                            "{}: the fragment's per-cell timestamps ({TIMESTAMPS}) are needed",
                            self.marker
                        ),
                    });
                }
                self.timestamped.evaluate_views(columns, keep)
            }
        }
    }
}

/// How a delete treats a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteApplies {
    /// Not at all: the delete is older than the fragment.
    No,
    /// Not at all: the fragment was consolidated with this delete already processed (its
    /// delete timestamps say which cells it removed).
    AlreadyProcessed,
    /// To every cell: the stored condition decides.
    AllCells,
    /// To the cells with a timestamp at or before the delete's (the fragment has per-cell
    /// timestamps and its range contains the delete's timestamp).
    CellsUpToTimestamp,
}

/// What the delete rules need to know about a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentDeleteInfo<'a> {
    /// The fragment's `[t1, t2]`.
    pub timestamp_range: (u64, u64),
    /// Whether it has per-cell timestamps (`t.tdb`; consolidated with timestamps).
    pub has_timestamps: bool,
    /// Its processed conditions when it has delete metadata (`dt.tdb`/`dci.tdb`), `None`
    /// otherwise.
    pub processed_conditions: Option<&'a [String]>,
}

impl FragmentDeleteInfo<'_> {
    /// Whether the fragment has delete metadata.
    pub fn has_delete_meta(&self) -> bool {
        self.processed_conditions.is_some()
    }
}

/// The fields the readers must provide to apply `deletes` to a fragment: the fields of the
/// applicable conditions, then [`TIMESTAMPS`] and [`DELETE_TIMESTAMPS`] when needed.
pub fn delete_fields<'a>(
    deletes: &'a [DeleteCondition],
    fragment: &FragmentDeleteInfo<'_>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    let mut timestamps = false;
    for d in deletes {
        match d.applies_to(fragment) {
            DeleteApplies::AllCells => {}
            DeleteApplies::CellsUpToTimestamp => timestamps = true,
            _ => continue,
        }
        for f in d.stored.fields() {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    if timestamps {
        out.push(TIMESTAMPS);
    }
    if fragment.has_delete_meta() {
        out.push(DELETE_TIMESTAMPS);
    }
    out
}

/// ANDs "not deleted" into `keep` for the first `keep.len()` cells of a fragment: the
/// delete metadata check against the open end `open_end` (when the fragment has it), then
/// every delete in `deletes` (the visible delete and update commits, by timestamp).
/// `columns` must hold the fields [`delete_fields`] lists.
///
/// # Errors
/// [`Error::Condition`] when a needed column is missing or does not match the schema.
pub fn apply_deletes<'c>(
    deletes: &[DeleteCondition],
    fragment: &FragmentDeleteInfo<'_>,
    open_end: u64,
    columns: &dyn Fn(&str) -> Option<&'c Column>,
    keep: &mut [bool],
) -> Result<()> {
    let views = |name: &str| columns(name).map(ColumnView::from);
    apply_deletes_views(deletes, fragment, open_end, &views, keep)
}

/// [`apply_deletes`] over borrowed views (decoded tiles).
pub(crate) fn apply_deletes_views<'c>(
    deletes: &[DeleteCondition],
    fragment: &FragmentDeleteInfo<'_>,
    open_end: u64,
    columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
    keep: &mut [bool],
) -> Result<()> {
    if fragment.has_delete_meta() {
        let dt = u64_column(columns, DELETE_TIMESTAMPS, keep.len())?;
        if open_end == u64::MAX {
            keep.iter_mut().zip(dt).for_each(|(k, t)| *k &= t >= open_end);
        } else {
            keep.iter_mut().zip(dt).for_each(|(k, t)| *k &= t > open_end);
        }
    }
    for d in deletes {
        d.apply_views(fragment, columns, keep)?;
    }
    Ok(())
}

fn u64_column<'c>(
    columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
    name: &str,
    n: usize,
) -> Result<impl Iterator<Item = u64> + 'c> {
    let col = columns(name)
        .filter(|c| c.datatype == Datatype::UInt64 && c.data.len() >= n * 8)
        .ok_or_else(|| Error::Condition {
            column: None,
            message: format!("a uint64 column {name} with {n} cells is needed to apply deletes"),
        })?;
    Ok(col.data[..n * 8]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())))
}

/// Per-cell delete metadata as sparse consolidation writes it (`dt.tdb`, `dci.tdb`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteMarks {
    /// The timestamp of the delete that removed each cell, `u64::MAX` if none.
    pub timestamps: Vec<u64>,
    /// The index of that delete in the consolidated fragment's processed conditions (the
    /// markers of `deletes`, in order), `u64::MAX` if none.
    pub condition_indexes: Vec<u64>,
}

/// Which delete removed each cell, as libtiledb's consolidation without purge records it
/// (`ResultTile::compute_per_cell_delete_condition` and
/// `SparseGlobalOrderReader::copy_delete_meta_tiles`): the first delete of `deletes` (all
/// visible delete and update commits, by timestamp; they become the consolidated
/// fragment's processed conditions) that removes it. When the source fragment has delete
/// metadata, an earlier recorded delete wins; its index is translated through the markers
/// (a marker no longer visible maps to 0, as libtiledb's map lookup does).
///
/// # Errors
/// As [`apply_deletes`], plus the delete condition indexes
/// ([`tessera_fragment::fields::DELETE_CONDITION_INDEX`]) missing when the fragment has
/// delete metadata.
pub fn delete_marks<'c>(
    deletes: &[DeleteCondition],
    fragment: &FragmentDeleteInfo<'_>,
    columns: &dyn Fn(&str) -> Option<&'c Column>,
    cell_num: usize,
) -> Result<DeleteMarks> {
    let columns = |name: &str| columns(name).map(ColumnView::from);
    delete_marks_views(deletes, fragment, &columns, cell_num)
}

/// [`delete_marks`] over borrowed views (decoded tiles).
pub(crate) fn delete_marks_views<'c>(
    deletes: &[DeleteCondition],
    fragment: &FragmentDeleteInfo<'_>,
    columns: &dyn Fn(&str) -> Option<ColumnView<'c>>,
    cell_num: usize,
) -> Result<DeleteMarks> {
    let mut index = vec![u64::MAX; cell_num];
    let mut keep = vec![true; cell_num];
    for (i, d) in deletes.iter().enumerate() {
        keep.fill(true);
        d.apply_views(fragment, columns, &mut keep)?;
        for (x, &k) in index.iter_mut().zip(&keep) {
            if !k && *x == u64::MAX {
                *x = i as u64;
            }
        }
    }
    let mut marks = DeleteMarks {
        timestamps: index
            .iter()
            .map(|&i| if i == u64::MAX { u64::MAX } else { deletes[i as usize].timestamp })
            .collect(),
        condition_indexes: index,
    };
    if let Some(processed) = fragment.processed_conditions {
        let dt = u64_column(columns, DELETE_TIMESTAMPS, cell_num)?;
        let dci = u64_column(columns, tessera_fragment::fields::DELETE_CONDITION_INDEX, cell_num)?;
        for ((c, old_t), old_i) in (0..cell_num).zip(dt).zip(dci) {
            if marks.timestamps[c] >= old_t {
                marks.timestamps[c] = old_t;
                marks.condition_indexes[c] = if old_i == u64::MAX {
                    u64::MAX
                } else {
                    let marker = usize::try_from(old_i).ok().and_then(|i| processed.get(i));
                    marker
                        .and_then(|m| deletes.iter().position(|d| &d.marker == m))
                        .map_or(0, |p| p as u64)
                };
            }
        }
    }
    Ok(marks)
}
