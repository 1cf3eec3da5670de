//! Placeholder being written.

use tessera_storage::Storage;

use crate::Result;
use crate::consolidate::{Mode, Report};

/// Removes what consolidation in `mode` made obsolete.
///
/// # Errors
/// Storage errors and corrupt commit files.
pub fn vacuum(_storage: &dyn Storage, _mode: Mode) -> Result<Report> {
    Err(crate::Error::Unsupported("vacuum is being written".into()))
}
