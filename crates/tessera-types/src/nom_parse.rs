//! nom plumbing shared by the decoders of the schema and fragment crates: an error that
//! remembers the field and where it failed, one small parser per on-disk field kind, and
//! counts checked against the bytes left before anything is allocated. The crates that use it
//! turn a [`Failure`] into their own error; nom's types never reach their public APIs.

use nom::error::{ContextError, ErrorKind, ParseError};
use nom::number::complete::{le_u8, le_u32, le_u64};
use nom::{IResult, Parser};

use crate::Datatype;

/// A parse failure: the input left at the failure point, the field, and why.
#[derive(Debug)]
pub struct PErr<'a> {
    /// The input left at the failure point.
    pub rest: &'a [u8],
    /// The field being parsed (empty until named).
    pub field: &'static str,
    /// Why it failed.
    pub reason: String,
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

/// The result of a field parser: the input left and the value, or a [`PErr`].
pub type PResult<'a, T> = IResult<&'a [u8], T, PErr<'a>>;

/// A hard failure at `rest` (no backtracking).
pub fn fail<'a, T>(
    rest: &'a [u8],
    field: &'static str,
    reason: impl Into<String>,
) -> PResult<'a, T> {
    Err(nom::Err::Failure(PErr { rest, field, reason: reason.into() }))
}

/// Where and why a parse failed, without nom's types: what each crate turns into its own
/// error (see [`failure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The field that failed (`"field"` when none was named).
    pub field: &'static str,
    /// The byte offset of the failure within the whole input.
    pub offset: u64,
    /// Why: `truncated (N bytes left)` when the input ran out, else the parser's reason.
    pub reason: String,
}

/// The [`Failure`] of a nom error from parsing `whole`.
pub fn failure(whole: &[u8], e: nom::Err<PErr<'_>>) -> Failure {
    match e {
        nom::Err::Error(p) | nom::Err::Failure(p) => Failure {
            field: if p.field.is_empty() { "field" } else { p.field },
            offset: (whole.len() - p.rest.len()) as u64,
            reason: if p.reason == "truncated" {
                format!("truncated ({} bytes left)", p.rest.len())
            } else {
                p.reason
            },
        },
        nom::Err::Incomplete(_) => {
            Failure { field: "field", offset: whole.len() as u64, reason: "truncated".into() }
        }
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

/// A `u8`, failing as field `field`.
pub fn u8f<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, u8> {
    named(field, le_u8)
}

/// A little-endian `u32`, failing as field `field`.
pub fn u32f<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, u32> {
    named(field, le_u32)
}

/// A little-endian `u64`, failing as field `field`.
pub fn u64f<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, u64> {
    named(field, le_u64)
}

/// A byte that must be 0 or 1.
pub fn boolf<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, bool> {
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
pub fn bytes<'a>(i: &'a [u8], n: u64, field: &'static str) -> PResult<'a, &'a [u8]> {
    match usize::try_from(n) {
        Ok(n) if n <= i.len() => Ok((&i[n..], &i[..n])),
        _ => fail(i, field, format!("length {n} exceeds the {} bytes left", i.len())),
    }
}

/// A `u32`-length-prefixed UTF-8 string.
pub fn string_u32<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, String> {
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
pub fn string_u64<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, String> {
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
pub fn datatype<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, Datatype> {
    move |i| {
        let (rest, id) = u8f(field)(i)?;
        match Datatype::from_id(id) {
            Ok(d) => Ok((rest, d)),
            Err(e) => fail(i, field, e.to_string()),
        }
    }
}

/// A one-byte enum decoded by `from_id`.
pub fn enum_u8<'a, T>(
    field: &'static str,
    from_id: fn(u8) -> crate::Result<T>,
) -> impl FnMut(&'a [u8]) -> PResult<'a, T> {
    move |i| {
        let (rest, id) = u8f(field)(i)?;
        match from_id(id) {
            Ok(v) => Ok((rest, v)),
            Err(e) => fail(i, field, e.to_string()),
        }
    }
}

/// A `u32` count of items that each take at least `min_item` bytes, refused when the input
/// cannot hold that many (so no allocation is sized by a corrupt count).
pub fn count<'a>(
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

/// `n` little-endian `u64` values; `n` is checked against the bytes left before anything is
/// allocated. `at` is the input where the count was read, for the error position.
pub fn u64s<'a>(at: &'a [u8], i: &'a [u8], n: u64, field: &'static str) -> PResult<'a, Vec<u64>> {
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
pub fn read_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// A `u64` count followed by that many `u64`s.
pub fn counted_u64s<'a>(field: &'static str) -> impl FnMut(&'a [u8]) -> PResult<'a, Vec<u64>> {
    move |i| {
        let (rest, n) = u64f(field)(i)?;
        u64s(i, rest, n, field)
    }
}

/// Bytes as UTF-8 text, failing at `at` otherwise.
pub fn utf8<'a>(at: &'a [u8], b: &[u8], field: &'static str) -> Result<String, nom::Err<PErr<'a>>> {
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
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends little-endian `u64`s.
pub fn put_u64s(out: &mut Vec<u8>, vs: &[u64]) {
    out.reserve(vs.len() * 8);
    for v in vs {
        put_u64(out, *v);
    }
}
