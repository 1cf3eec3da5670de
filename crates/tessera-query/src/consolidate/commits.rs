//! Placeholder being written.

use tessera_storage::Storage;

use crate::Result;
use crate::consolidate::{Options, Report};

/// Consolidates in this mode.
pub(crate) fn consolidate(_storage: &dyn Storage, _options: &Options) -> Result<Report> {
    Err(crate::Error::Unsupported("this consolidation mode is being written".into()))
}
