//! The domain of schemas of format versions 1 to 4 (`Domain::deserialize` and
//! `Dimension::deserialize` for `version < 5` in libtiledb):
//!
//! ```text
//! datatype u8 | dim_num u32 | per dimension: name_size u32, name,
//!     domain (2 × datatype size bytes), null_tile_extent u8, [tile_extent (datatype size)]
//! ```
//!
//! Every dimension has the domain's datatype; string types are var-sized, others hold one
//! value; a dimension has no filters of its own (the schema's coords filters apply).

use tessera_filters::FilterPipeline;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use crate::Dimension;
use crate::parse::{PResult, bytes, count, datatype, fail, string_u32, u8f};

/// Parses the domain block of a version 1–4 schema.
pub(crate) fn parse_domain(i: &[u8]) -> PResult<'_, Vec<Dimension>> {
    let (i, dt) = datatype("domain datatype")(i)?;
    let size = dt.size() as u64;
    if size == 0 {
        return fail(i, "domain datatype", format!("{dt} has no fixed size"));
    }
    let (mut i, n) = count("dimension count", 5)(i)?;
    let mut dims = Vec::with_capacity(n);
    for _ in 0..n {
        let (r, name) = string_u32("dimension name")(i)?;
        let (r, domain) = bytes(r, 2 * size, "dimension domain")?;
        let (lo, hi) = domain.split_at(size as usize);
        let (r, null_tile_extent) = u8f("dimension null tile extent")(r)?;
        let (r, tile_extent) = if null_tile_extent == 0 {
            let (r, b) = bytes(r, size, "dimension tile extent")?;
            (r, Some(b.to_vec()))
        } else {
            (r, None)
        };
        let var = dt.is_string() || dt == Datatype::StringAscii;
        dims.push(Dimension {
            name,
            datatype: dt,
            cell_val_num: if var { CELL_VAL_NUM_VAR } else { 1 },
            filters: FilterPipeline::default(),
            domain: Some([lo.to_vec(), hi.to_vec()]),
            tile_extent,
        });
        i = r;
    }
    Ok((i, dims))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain_bytes() -> Vec<u8> {
        let mut b = vec![0u8]; // int32
        b.extend_from_slice(&2u32.to_le_bytes());
        for (name, ext) in [("d1", Some(10i32)), ("d2", None)] {
            b.extend_from_slice(&(name.len() as u32).to_le_bytes());
            b.extend_from_slice(name.as_bytes());
            b.extend_from_slice(&0i32.to_le_bytes());
            b.extend_from_slice(&99i32.to_le_bytes());
            match ext {
                Some(e) => {
                    b.push(0);
                    b.extend_from_slice(&e.to_le_bytes());
                }
                None => b.push(1),
            }
        }
        b
    }

    #[test]
    fn parses_and_refuses_truncation() {
        let b = domain_bytes();
        let (rest, dims) = parse_domain(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!(dims.len(), 2);
        assert_eq!(dims[0].datatype, Datatype::Int32);
        assert_eq!(dims[0].tile_extent.as_deref(), Some(&10i32.to_le_bytes()[..]));
        assert_eq!(dims[1].tile_extent, None);
        for cut in 0..b.len() {
            assert!(parse_domain(&b[..cut]).is_err(), "cut at {cut}");
        }
    }
}
