//! Dimension labels: references to the label arrays stored under `__labels/`.

use tessera_types::{DataOrder, Datatype};

use crate::parse::{PResult, boolf, datatype, enum_u8, string_u32, string_u64, u32f};

/// A dimension label: a dense array under `__labels/` mapping a dimension's index to labels.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionLabel {
    /// Index of the labelled dimension.
    pub dim_index: u32,
    /// The label's name.
    pub name: String,
    /// Whether `uri` is relative to the array.
    pub relative_uri: bool,
    /// Location of the label array (e.g. `__labels/l0`).
    pub uri: String,
    /// Name of the label attribute in the label array (`label`).
    pub attribute_name: String,
    /// Increasing or decreasing label order.
    pub order: DataOrder,
    /// Label datatype.
    pub datatype: Datatype,
    /// Label values per cell (var for strings).
    pub cell_val_num: u32,
    /// Whether the label array is owned elsewhere.
    pub is_external: bool,
}

impl DimensionLabel {
    pub(crate) fn parse(i: &[u8]) -> PResult<'_, DimensionLabel> {
        let (i, dim_index) = u32f("label dimension index")(i)?;
        let (i, name) = string_u32("label name")(i)?;
        let (i, relative_uri) = boolf("label relative uri")(i)?;
        let (i, uri) = string_u64("label uri")(i)?;
        let (i, attribute_name) = string_u32("label attribute name")(i)?;
        let (i, order) = enum_u8("label order", DataOrder::from_id)(i)?;
        let (i, dt) = datatype("label datatype")(i)?;
        let (i, cell_val_num) = u32f("label cell_val_num")(i)?;
        let (i, is_external) = boolf("label is external")(i)?;
        Ok((
            i,
            DimensionLabel {
                dim_index,
                name,
                relative_uri,
                uri,
                attribute_name,
                order,
                datatype: dt,
                cell_val_num,
                is_external,
            },
        ))
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.dim_index.to_le_bytes());
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.push(u8::from(self.relative_uri));
        out.extend_from_slice(&(self.uri.len() as u64).to_le_bytes());
        out.extend_from_slice(self.uri.as_bytes());
        out.extend_from_slice(&(self.attribute_name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.attribute_name.as_bytes());
        out.push(self.order.id());
        out.push(self.datatype.id());
        out.extend_from_slice(&self.cell_val_num.to_le_bytes());
        out.push(u8::from(self.is_external));
    }
}
