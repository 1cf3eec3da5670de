//! nom plumbing shared by the schema and enumeration decoders: an error type that remembers
//! the field and where it failed, and one small parser per on-disk field kind.

use nom::error::{ContextError, ErrorKind, ParseError};
use nom::number::complete::{le_u8, le_u32, le_u64};
use nom::{IResult, Parser};
use tessera_filters::FilterPipeline;
use tessera_types::Datatype;

use crate::Error;

/// A parse failure: the input left at the failure point, the field, and why.
#[derive(Debug)]
pub(crate) struct PErr<'a> {
    pub(crate) rest: &'a [u8],
    pub(crate) field: &'static str,
    pub(crate) reason: String,
}

impl<'a> ParseError<&'a [u8]> for PErr<'a> {
    fn from_error_kind(input: &'a [u8], kind: ErrorKind) -> Self {
        let reason = match kind {
            ErrorKind::Eof | ErrorKind::Complete => "truncated".to_owned(),
            k => format!("{k:?}"),
        };
        PErr { rest: input, field: "", reason }
    }

    fn append(_: &'a [u8], _: ErrorKind, other: Self) -> Self {
        other
    }
}

impl<'a> ContextError<&'a [u8]> for PErr<'a> {
    fn add_context(_input: &'a [u8], ctx: &'static str, mut other: Self) -> Self {
        if other.field.is_empty() {
            other.field = ctx;
        }
        other
    }
}

pub(crate) type PResult<'a, T> = IResult<&'a [u8], T, PErr<'a>>;

/// A hard failure at `rest` (no backtracking).
pub(crate) fn fail<'a, T>(
    rest: &'a [u8],
    field: &'static str,
    reason: impl Into<String>,
) -> PResult<'a, T> {
    Err(nom::Err::Failure(PErr { rest, field, reason: reason.into() }))
}

/// Turns a nom error into [`Error::Malformed`] with the offset within `whole`.
pub(crate) fn to_error(structure: &'static str, whole: &[u8], e: nom::Err<PErr<'_>>) -> Error {
    match e {
        nom::Err::Error(p) | nom::Err::Failure(p) => Error::Malformed {
            structure,
            field: if p.field.is_empty() { "field" } else { p.field },
            offset: (whole.len() - p.rest.len()) as u64,
            reason: if p.reason == "truncated" {
                format!("truncated ({} bytes left)", p.rest.len())
            } else {
                p.reason
            },
        },
        nom::Err::Incomplete(_) => Error::Malformed {
            structure,
            field: "field",
            offset: whole.len() as u64,
            reason: "truncated".into(),
        },
    }
}

fn named<'a, T>(
    field: &'static str,
    mut p: impl Parser<&'a [u8], Output = T, Error = PErr<'a>>,
) -> impl FnMut(&'a [u8]) -> PResult<'a, T> {
    move |i: &'a [u8]| match p.parse(i) {
        Ok(v) => Ok(v),
        Err(nom::Err::Error(mut e) | nom::Err::Failure(mut e)) => {
            if e.field.is_empty() {
                e.field = field;
            }
            Err(nom::Err::Failure(e))
        }
        Err(e) => Err(e),
    }
}

pub(crate) fn u8f<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, u8> {
    named(field, le_u8)
}

pub(crate) fn u32f<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, u32> {
    named(field, le_u32)
}

pub(crate) fn u64f<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, u64> {
    named(field, le_u64)
}

pub(crate) fn boolf<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, bool> {
    move |i| {
        let (rest, v) = u8f(field)(i)?;
        match v {
            0 => Ok((rest, false)),
            1 => Ok((rest, true)),
            v => fail(i, field, format!("boolean byte {v} is not 0 or 1")),
        }
    }
}

/// `n` raw bytes, failing (not allocating) when fewer are left.
pub(crate) fn bytes<'a>(i: &'a [u8], n: u64, field: &'static str) -> PResult<'a, &'a [u8]> {
    match usize::try_from(n) {
        Ok(n) if n <= i.len() => Ok((&i[n..], &i[..n])),
        _ => fail(i, field, format!("length {n} exceeds the {} bytes left", i.len())),
    }
}

/// A `u32`-length-prefixed UTF-8 string.
pub(crate) fn string_u32<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, String> {
    move |i| {
        let (rest, n) = u32f(field)(i)?;
        let (rest, b) = bytes(rest, u64::from(n), field)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok((rest, s.to_owned())),
            Err(_) => fail(i, field, "not valid UTF-8"),
        }
    }
}

/// A `u64`-length-prefixed UTF-8 string.
pub(crate) fn string_u64<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, String> {
    move |i| {
        let (rest, n) = u64f(field)(i)?;
        let (rest, b) = bytes(rest, n, field)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok((rest, s.to_owned())),
            Err(_) => fail(i, field, "not valid UTF-8"),
        }
    }
}

/// A datatype byte.
pub(crate) fn datatype<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, Datatype> {
    move |i| {
        let (rest, id) = u8f(field)(i)?;
        match Datatype::from_id(id) {
            Ok(d) => Ok((rest, d)),
            Err(e) => fail(i, field, e.to_string()),
        }
    }
}

/// A one-byte enum decoded by `from_id`.
pub(crate) fn enum_u8<'a, T>(
    field: &'static str,
    from_id: fn(u8) -> tessera_types::Result<T>,
) -> impl FnMut(&'a [u8]) -> PResult<'a, T> {
    move |i| {
        let (rest, id) = u8f(field)(i)?;
        match from_id(id) {
            Ok(v) => Ok((rest, v)),
            Err(e) => fail(i, field, e.to_string()),
        }
    }
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

/// A `u32` count of items that each take at least `min_item` bytes, refused when the input
/// cannot hold that many (so no allocation is sized by a corrupt count).
pub(crate) fn count<'a>(
    field: &'static str,
    min_item: usize,
) -> impl FnMut(&'a [u8]) -> PResult<'a, usize> {
    move |i| {
        let (rest, n) = u32f(field)(i)?;
        if (n as u64).saturating_mul(min_item as u64) > rest.len() as u64 {
            return fail(
                i,
                field,
                format!("count {n} cannot fit in the {} bytes left", rest.len()),
            );
        }
        Ok((rest, n as usize))
    }
}
