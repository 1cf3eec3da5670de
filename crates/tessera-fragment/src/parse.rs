//! nom plumbing shared by the decoders: an error that remembers the field and where it failed,
//! one small parser per on-disk field kind, and counts checked against the bytes left before
//! anything is allocated.

use nom::error::{ErrorKind, ParseError};
use nom::number::complete::{le_u8, le_u32, le_u64};
use nom::{IResult, Parser};

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
        nom::Err::Error(p) | nom::Err::Failure(p) => {
            let reason = if p.reason == "truncated" {
                format!("truncated ({} bytes left)", p.rest.len())
            } else {
                p.reason
            };
            Error::malformed(
                structure,
                if p.field.is_empty() { "field" } else { p.field },
                (whole.len() - p.rest.len()) as u64,
                reason,
            )
        }
        nom::Err::Incomplete(_) => {
            Error::malformed(structure, "field", whole.len() as u64, "truncated")
        }
    }
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

/// A byte that must be 0 or 1.
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

/// `n` little-endian `u64` values; `n` is checked against the bytes left before anything is
/// allocated. `at` is the input where the count was read, for the error position.
pub(crate) fn u64s<'a>(
    at: &'a [u8],
    i: &'a [u8],
    n: u64,
    field: &'static str,
) -> PResult<'a, Vec<u64>> {
    let max = (i.len() / 8) as u64;
    if n > max {
        return fail(
            at,
            field,
            format!("count {n} needs {} bytes but only {} are left", n as u128 * 8, i.len()),
        );
    }
    let (rest, raw) = bytes(i, n * 8, field)?;
    Ok((rest, raw.chunks_exact(8).map(read_u64).collect()))
}

/// The first 8 bytes of `b` as a little-endian `u64` (`b` must hold 8).
pub(crate) fn read_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// A `u64` count followed by that many `u64`s.
pub(crate) fn counted_u64s<'a>(
    field: &'static str,
) -> impl FnMut(&'a [u8]) -> PResult<'a, Vec<u64>> {
    move |i| {
        let (rest, n) = u64f(field)(i)?;
        u64s(i, rest, n, field)
    }
}

/// Bytes as UTF-8 text, failing at `at` otherwise.
pub(crate) fn utf8<'a>(
    at: &'a [u8],
    b: &[u8],
    field: &'static str,
) -> Result<String, nom::Err<PErr<'a>>> {
    match std::str::from_utf8(b) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => Err(nom::Err::Failure(PErr {
            rest: at,
            field,
            reason: format!("not valid UTF-8: {e}"),
        })),
    }
}

/// Appends a little-endian `u64`.
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends little-endian `u64`s.
pub(crate) fn put_u64s(out: &mut Vec<u8>, vs: &[u64]) {
    out.reserve(vs.len() * 8);
    for v in vs {
        put_u64(out, *v);
    }
}
