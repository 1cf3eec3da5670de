//! Dimensions: name, datatype, domain, tile extent and their own filters.

use nom::Parser;
use tessera_filters::FilterPipeline;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use crate::parse::{PResult, bytes, datatype, fail, pipeline, string_u32, u8f, u32f, u64f};
use crate::{Result, Value};

/// One dimension of an array's domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    /// Unique among dimensions and attributes.
    pub name: String,
    /// An integer, float, datetime/time type, or `string_ascii` (var-sized).
    pub datatype: Datatype,
    /// 1 for fixed-size dimensions, [`CELL_VAL_NUM_VAR`] for string dimensions.
    pub cell_val_num: u32,
    /// Coordinate filters of this dimension; empty means the schema's coords filters.
    pub filters: FilterPipeline,
    /// `[low, high]` as little-endian bytes (each `datatype.size()` long); `None` for string
    /// dimensions, whose domain is unbounded.
    pub domain: Option<[Vec<u8>; 2]>,
    /// Space-tile extent as little-endian bytes; `None` when the dimension has none.
    pub tile_extent: Option<Vec<u8>>,
}

impl Dimension {
    /// A dimension without domain or extent yet (set them with the builder methods); string
    /// types become var-sized.
    pub fn new(name: impl Into<String>, datatype: Datatype) -> Self {
        let var = datatype.is_string();
        Dimension {
            name: name.into(),
            datatype,
            cell_val_num: if var { CELL_VAL_NUM_VAR } else { 1 },
            filters: FilterPipeline::default(),
            domain: None,
            tile_extent: None,
        }
    }

    /// Sets an integral domain `[low, high]`.
    ///
    /// Values that do not fit the type are caught by validation when the schema is built.
    #[must_use]
    pub fn domain_i64(mut self, low: i64, high: i64) -> Self {
        self.domain =
            Some([self.encode_lossy(&Value::Int(low)), self.encode_lossy(&Value::Int(high))]);
        self
    }

    /// Sets a float domain `[low, high]`.
    #[must_use]
    pub fn domain_f64(mut self, low: f64, high: f64) -> Self {
        self.domain =
            Some([self.encode_lossy(&Value::Float(low)), self.encode_lossy(&Value::Float(high))]);
        self
    }

    /// Sets an integral tile extent.
    #[must_use]
    pub fn tile_i64(mut self, extent: i64) -> Self {
        self.tile_extent = Some(self.encode_lossy(&Value::Int(extent)));
        self
    }

    /// Sets a float tile extent.
    #[must_use]
    pub fn tile_f64(mut self, extent: f64) -> Self {
        self.tile_extent = Some(self.encode_lossy(&Value::Float(extent)));
        self
    }

    /// Sets the dimension's own filters.
    #[must_use]
    pub fn filters(mut self, filters: FilterPipeline) -> Self {
        self.filters = filters;
        self
    }

    fn encode_lossy(&self, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        if v.encode(self.datatype, &mut out).is_err() {
            // Keep a wrong-width value so validation reports it rather than losing it.
            out = vec![0xff; self.datatype.size() + 1];
        }
        out
    }

    /// The values per coordinate: one, or var-sized for string dimensions.
    pub fn values_per_cell(&self) -> tessera_types::CellValNum {
        self.cell_val_num.into()
    }

    /// Whether coordinates are var-sized (string dimensions).
    pub fn is_var(&self) -> bool {
        self.cell_val_num == CELL_VAL_NUM_VAR
    }

    /// The decoded domain bounds.
    ///
    /// # Errors
    /// When the stored bytes are shorter than a value.
    pub fn domain_values(&self) -> Result<Option<[Value; 2]>> {
        self.domain
            .as_ref()
            .map(|[lo, hi]| {
                Ok([Value::decode(self.datatype, lo)?, Value::decode(self.datatype, hi)?])
            })
            .transpose()
    }

    /// The decoded tile extent.
    ///
    /// # Errors
    /// When the stored bytes are shorter than a value.
    pub fn tile_extent_value(&self) -> Result<Option<Value>> {
        self.tile_extent.as_ref().map(|e| Value::decode(self.datatype, e)).transpose()
    }

    pub(crate) fn parse(i: &[u8], version: u32) -> PResult<'_, Dimension> {
        let (i, name) = string_u32("dimension name")(i)?;
        let (i, dt) = datatype("dimension datatype")(i)?;
        let (i, cell_val_num) = u32f("dimension cell_val_num")(i)?;
        let (i, filters) = pipeline("dimension filters", version)(i)?;
        let before_domain = i;
        let (i, domain_size) = u64f("dimension domain size")(i)?;
        let (i, domain) = match domain_size {
            0 => (i, None),
            n if n == 2 * dt.size() as u64 => {
                let (i, b) = bytes(i, n, "dimension domain")?;
                let (lo, hi) = b.split_at(dt.size());
                (i, Some([lo.to_vec(), hi.to_vec()]))
            }
            n => {
                return fail(
                    before_domain,
                    "dimension domain size",
                    format!("{n} bytes is not twice the {dt} size"),
                );
            }
        };
        let (i, null_tile_extent) = u8f("dimension null tile extent")(i)?;
        let (i, tile_extent) = if null_tile_extent == 0 {
            let (i, b) = bytes(i, dt.size() as u64, "dimension tile extent")?;
            (i, Some(b.to_vec()))
        } else {
            (i, None)
        };
        Ok((i, Dimension { name, datatype: dt, cell_val_num, filters, domain, tile_extent }))
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.push(self.datatype.id());
        out.extend_from_slice(&self.cell_val_num.to_le_bytes());
        self.filters.write(out);
        match &self.domain {
            Some([lo, hi]) => {
                out.extend_from_slice(&((lo.len() + hi.len()) as u64).to_le_bytes());
                out.extend_from_slice(lo);
                out.extend_from_slice(hi);
            }
            None => out.extend_from_slice(&0u64.to_le_bytes()),
        }
        match &self.tile_extent {
            Some(e) => {
                out.push(0);
                out.extend_from_slice(e);
            }
            None => out.push(1),
        }
    }
}

/// Parses `n` dimensions (the domain block: `u32 count` then the dimensions).
pub(crate) fn parse_domain(i: &[u8], version: u32) -> PResult<'_, Vec<Dimension>> {
    let (mut i, n) = crate::parse::count("dimension count", 12)(i)?;
    let mut dims = Vec::with_capacity(n);
    for _ in 0..n {
        let (rest, d) = (|x| Dimension::parse(x, version)).parse(i)?;
        dims.push(d);
        i = rest;
    }
    Ok((i, dims))
}
