//! The schema crate's side of the shared nom plumbing ([`tessera_types::nom_parse`]): its
//! error conversion and the filter-pipeline field.

use tessera_filters::FilterPipeline;
pub(crate) use tessera_types::nom_parse::{
    PErr, PResult, boolf, bytes, count, datatype, enum_u8, fail, string_u32, string_u64, u8f, u32f,
    u64f,
};

use crate::Error;

/// Turns a nom error into [`Error::Malformed`] with the offset within `whole`.
pub(crate) fn to_error(structure: &'static str, whole: &[u8], e: nom::Err<PErr<'_>>) -> Error {
    let f = tessera_types::nom_parse::failure(whole, e);
    Error::Malformed { structure, field: f.field, offset: f.offset, reason: f.reason }
}

/// A serialized filter pipeline.
pub(crate) fn pipeline<'a>(
    field: &'static str,
    version: u32,
) -> impl FnMut(&'a [u8]) -> PResult<'a, FilterPipeline> {
    move |i| match FilterPipeline::parse(i, version) {
        Ok((p, used)) => Ok((&i[used..], p)),
        Err(e) => fail(i, field, e.to_string()),
    }
}
