//! Attributes: the values stored in each cell.

use tessera_filters::FilterPipeline;
use tessera_types::{CELL_VAL_NUM_VAR, CellValNum, DataOrder, Datatype};

use crate::parse::{
    PResult, boolf, bytes, datatype, enum_u8, fail, pipeline, string_u32, u32f, u64f,
};

/// The largest default fill (one cell) built for schemas of format versions before 6, which
/// do not store the fill.
const MAX_DEFAULT_FILL: u64 = 64 << 20;

/// One attribute of an array.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// Unique among dimensions and attributes.
    pub name: String,
    /// Datatype of each value.
    pub datatype: Datatype,
    /// Values per cell, or [`CELL_VAL_NUM_VAR`] for var-sized cells.
    pub cell_val_num: u32,
    /// Filters applied to this attribute's data tiles.
    pub filters: FilterPipeline,
    /// Little-endian bytes read for cells never written (dense arrays).
    pub fill_value: Vec<u8>,
    /// Whether cells may be null (a validity tile is stored).
    pub nullable: bool,
    /// Validity of the fill value (for nullable attributes).
    pub fill_value_validity: bool,
    /// Declared order of the values.
    pub order: DataOrder,
    /// Name of the enumeration the values index, if any.
    pub enumeration: Option<String>,
}

impl Attribute {
    /// A single-valued, non-nullable attribute with TileDB's default fill value; `any` and
    /// string types are var-sized as in TileDB.
    pub fn new(name: impl Into<String>, datatype: Datatype) -> Self {
        let cell_val_num = if datatype == Datatype::Any { CELL_VAL_NUM_VAR } else { 1 };
        let mut a = Attribute {
            name: name.into(),
            datatype,
            cell_val_num,
            filters: FilterPipeline::default(),
            fill_value: Vec::new(),
            nullable: false,
            fill_value_validity: false,
            order: DataOrder::Unordered,
            enumeration: None,
        };
        a.fill_value = a.default_fill_value();
        a
    }

    /// Sets the values per cell, [`CellValNum::Fixed`] or [`CellValNum::Var`] (a `u32` is
    /// taken as stored on disk, [`CELL_VAL_NUM_VAR`] meaning var-sized), resetting the fill
    /// to the default.
    #[must_use]
    pub fn cell_val_num(mut self, n: impl Into<CellValNum>) -> Self {
        self.cell_val_num = n.into().into();
        self.fill_value = self.default_fill_value();
        self
    }

    /// Var-sized cells.
    #[must_use]
    pub fn var(self) -> Self {
        self.cell_val_num(CELL_VAL_NUM_VAR)
    }

    /// Nullable cells.
    #[must_use]
    pub fn nullable(mut self, nullable: bool) -> Self {
        self.nullable = nullable;
        self
    }

    /// Sets the filters.
    #[must_use]
    pub fn filters(mut self, filters: FilterPipeline) -> Self {
        self.filters = filters;
        self
    }

    /// The values per cell.
    pub fn values_per_cell(&self) -> CellValNum {
        self.cell_val_num.into()
    }

    /// Whether cells are var-sized.
    pub fn is_var(&self) -> bool {
        self.cell_val_num == CELL_VAL_NUM_VAR
    }

    /// Bytes per cell of a fixed-size attribute (`None` for var-sized).
    pub fn cell_size(&self) -> Option<usize> {
        (!self.is_var()).then(|| self.datatype.size() * self.cell_val_num as usize)
    }

    /// TileDB's default fill: the type's default value, repeated `cell_val_num` times (once
    /// for var-sized attributes).
    pub fn default_fill_value(&self) -> Vec<u8> {
        let one = self.datatype.default_fill_value();
        let n = if self.is_var() { 1 } else { self.cell_val_num as usize };
        one.repeat(n)
    }

    pub(crate) fn parse(i: &[u8], version: u32) -> PResult<'_, Attribute> {
        let (i, name) = string_u32("attribute name")(i)?;
        let (i, dt) = datatype("attribute datatype")(i)?;
        let cell_val_num_at = i;
        let (i, cell_val_num) = u32f("attribute cell_val_num")(i)?;
        let (i, filters) = pipeline("attribute filters", version)(i)?;
        let mut a = Attribute::new(name, dt);
        a.cell_val_num = cell_val_num;
        a.filters = filters;
        let mut i = i;
        if version < 6 {
            // Before version 6 the fill is not stored: it is the type's default, one per
            // value of a cell, built here from a `cell_val_num` read from disk.
            let size = a.cell_size().map_or(0, |s| s as u64);
            if size > MAX_DEFAULT_FILL {
                return fail(
                    cell_val_num_at,
                    "attribute cell_val_num",
                    format!(
                        "{cell_val_num} values of {dt} make a {size}-byte cell; Tessera builds \
                         the default fill of format {version} only for cells of at most \
                         {MAX_DEFAULT_FILL} bytes"
                    ),
                );
            }
            a.fill_value = a.default_fill_value();
        }
        if version >= 6 {
            let (rest, n) = u64f("attribute fill value size")(i)?;
            let (rest, fill) = bytes(rest, n, "attribute fill value")?;
            a.fill_value = fill.to_vec();
            i = rest;
        }
        if version >= 7 {
            let (rest, nullable) = boolf("attribute nullable")(i)?;
            let (rest, fill_validity) = boolf("attribute fill value validity")(rest)?;
            a.nullable = nullable;
            a.fill_value_validity = fill_validity;
            i = rest;
        }
        if version >= 17 {
            let (rest, order) = enum_u8("attribute order", DataOrder::from_id)(i)?;
            a.order = order;
            i = rest;
        }
        if version >= 20 {
            let (rest, enumeration) = string_u32("attribute enumeration name")(i)?;
            a.enumeration = (!enumeration.is_empty()).then_some(enumeration);
            i = rest;
        }
        Ok((i, a))
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.push(self.datatype.id());
        out.extend_from_slice(&self.cell_val_num.to_le_bytes());
        self.filters.write(out);
        out.extend_from_slice(&(self.fill_value.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.fill_value);
        out.push(u8::from(self.nullable));
        out.push(u8::from(self.fill_value_validity));
        out.push(self.order.id());
        let e = self.enumeration.as_deref().unwrap_or("");
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An attribute as a schema of format `version` stores it, up to its filters.
    fn attribute_bytes(cell_val_num: u32) -> Vec<u8> {
        let mut b = 1u32.to_le_bytes().to_vec();
        b.push(b'a');
        b.push(Datatype::Int64.id());
        b.extend_from_slice(&cell_val_num.to_le_bytes());
        FilterPipeline::default().write(&mut b);
        b
    }

    #[test]
    fn a_stored_fill_is_read_without_building_the_default() {
        // Found by the `schema_payload` fuzz target: every attribute first built the default
        // fill, `cell_val_num` (from disk) values long: 2^31 values were 16 GiB.
        let mut b = attribute_bytes(1 << 31);
        b.extend_from_slice(&8u64.to_le_bytes());
        b.extend_from_slice(&7i64.to_le_bytes());
        let (rest, a) = Attribute::parse(&b, 6).unwrap();
        assert!(rest.is_empty());
        assert_eq!(a.fill_value, 7i64.to_le_bytes());
    }

    #[test]
    fn an_old_schema_builds_the_default_fill_only_for_cells_of_sane_size() {
        let (_, a) = Attribute::parse(&attribute_bytes(3), 5).unwrap();
        assert_eq!(a.fill_value, Datatype::Int64.default_fill_value().repeat(3));
        let b = attribute_bytes(1 << 31);
        let e = Attribute::parse(&b, 5).unwrap_err();
        let nom::Err::Failure(e) = e else { panic!("{e:?}") };
        assert_eq!(e.field, "attribute cell_val_num");
        assert_eq!(b.len() - e.rest.len(), 6, "the offset of cell_val_num");
        assert!(e.reason.contains("make a 17179869184-byte cell"), "{}", e.reason);
    }
}
