//! Placeholder being written.

use std::sync::Arc;

use tessera_storage::Storage;

use crate::Result;
use crate::consolidate::{Options, Report};

/// Consolidates in this mode.
pub(crate) fn consolidate(_storage: Arc<dyn Storage>, _options: &Options) -> Result<Report> {
    Err(crate::Error::Unsupported("this consolidation mode is being written".into()))
}
