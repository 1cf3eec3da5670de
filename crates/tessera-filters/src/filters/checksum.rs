//! Placeholder until the filter lands (being written now).

use crate::{Error, Filter, FilterCodec, Result};

pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    Err(Error::Unsupported(format!("filter {} is not implemented yet", filter.filter_type())))
}
