//! The fragment crate's side of the shared nom plumbing ([`tessera_types::nom_parse`]): its
//! error conversion and whole-input parsing.

pub(crate) use tessera_types::nom_parse::{
    PErr, PResult, boolf, bytes, counted_u64s, fail, put_u64, put_u64s, read_u64, u8f, u32f, u64f,
    u64s, utf8,
};

use crate::Error;

/// Turns a nom error into a malformed-structure [`Error`] with the offset within `whole`.
pub(crate) fn to_error(structure: &'static str, whole: &[u8], e: nom::Err<PErr<'_>>) -> Error {
    let f = tessera_types::nom_parse::failure(whole, e);
    Error::malformed(structure, f.field, f.offset, f.reason)
}

/// Runs `parser` over all of `whole`, failing when bytes are left over.
pub(crate) fn parse_all<'a, T>(
    structure: &'static str,
    whole: &'a [u8],
    parser: impl FnOnce(&'a [u8]) -> PResult<'a, T>,
) -> Result<T, Error> {
    let (rest, v) = parser(whole).map_err(|e| to_error(structure, whole, e))?;
    if !rest.is_empty() {
        return Err(Error::malformed(
            structure,
            "end",
            (whole.len() - rest.len()) as u64,
            format!("{} bytes left over", rest.len()),
        ));
    }
    Ok(v)
}
