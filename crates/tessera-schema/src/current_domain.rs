//! The current domain: the part of the domain a (resizable) array uses now.

use tessera_types::{CURRENT_DOMAIN_VERSION, CurrentDomainType};

use crate::Dimension;
use crate::parse::{PResult, bytes, enum_u8, fail, u8f, u32f, u64f};

/// An N-dimensional rectangle inside the domain: one `[low, high]` per dimension, as
/// little-endian bytes (the whole strings for string dimensions).
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentDomain {
    /// Kind of current domain (only N-d rectangles exist).
    pub kind: CurrentDomainType,
    /// One range per dimension, in dimension order.
    pub ranges: Vec<[Vec<u8>; 2]>,
}

/// Parses the block; `None` when it is marked empty.
pub(crate) fn parse<'a>(i: &'a [u8], dims: &[Dimension]) -> PResult<'a, Option<CurrentDomain>> {
    let start = i;
    let (i, version) = u32f("current domain version")(i)?;
    if version > CURRENT_DOMAIN_VERSION {
        return fail(
            start,
            "current domain version",
            format!("version {version} is newer than {CURRENT_DOMAIN_VERSION}"),
        );
    }
    let (i, empty) = u8f("current domain empty")(i)?;
    if empty != 0 {
        return Ok((i, None));
    }
    let (mut i, kind) = enum_u8("current domain type", CurrentDomainType::from_id)(i)?;
    let mut ranges = Vec::with_capacity(dims.len());
    for d in dims {
        if d.is_var() {
            let (rest, total) = u64f("current domain range size")(i)?;
            let (rest, low_len) = u64f("current domain range start size")(rest)?;
            if low_len > total {
                return fail(
                    i,
                    "current domain range start size",
                    format!("{low_len} exceeds the range size {total}"),
                );
            }
            let (rest, b) = bytes(rest, total, "current domain range")?;
            let (lo, hi) = b.split_at(low_len as usize);
            ranges.push([lo.to_vec(), hi.to_vec()]);
            i = rest;
        } else {
            let size = d.datatype.size();
            let (rest, b) = bytes(i, 2 * size as u64, "current domain range")?;
            ranges.push([b[..size].to_vec(), b[size..].to_vec()]);
            i = rest;
        }
    }
    Ok((i, Some(CurrentDomain { kind, ranges })))
}

pub(crate) fn write(cd: Option<&CurrentDomain>, dims: &[Dimension], out: &mut Vec<u8>) {
    out.extend_from_slice(&CURRENT_DOMAIN_VERSION.to_le_bytes());
    let Some(cd) = cd else {
        out.push(1);
        return;
    };
    out.push(0);
    out.push(cd.kind.id());
    for (d, [lo, hi]) in dims.iter().zip(&cd.ranges) {
        if d.is_var() {
            out.extend_from_slice(&((lo.len() + hi.len()) as u64).to_le_bytes());
            out.extend_from_slice(&(lo.len() as u64).to_le_bytes());
        }
        out.extend_from_slice(lo);
        out.extend_from_slice(hi);
    }
}
