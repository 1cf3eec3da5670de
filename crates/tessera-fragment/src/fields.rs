//! The field index ("idx") space of fragment metadata (`FragmentMetadata::build_idx_map`):
//! attributes `0..A`, the legacy `__coords` slot `A`, dimensions `A+1..=A+D`, then
//! `__timestamps` (if the fragment has timestamps), then `__delete_timestamps` and
//! `__delete_condition_index` (if it has delete metadata). Every per-field array of the footer
//! and every per-field generic tile follows this order.
//!
//! [`FieldInfo`] carries what the metadata rules need about one idx: its type as
//! `ArraySchema::type/cell_val_num/var_size/is_nullable/is_dim` report it, and from that
//! whether tiles get min/max and sums (`TileMetadataGenerator::has_min_max_metadata`,
//! `has_sum_metadata` and the dense-dimension guard of `set_num_tiles`).

use tessera_schema::ArraySchema;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype};

use crate::{Error, Result};

/// Name of the legacy zipped-coordinates pseudo-field.
pub const COORDS: &str = "__coords";
/// Name of the per-cell timestamps pseudo-field (`t.tdb`).
pub const TIMESTAMPS: &str = "__timestamps";
/// Name of the per-cell delete timestamps pseudo-field (`dt.tdb`).
pub const DELETE_TIMESTAMPS: &str = "__delete_timestamps";
/// Name of the per-cell delete condition index pseudo-field (`dci.tdb`).
pub const DELETE_CONDITION_INDEX: &str = "__delete_condition_index";

/// One field of the idx space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// Attribute `i` in schema order (data file `a<i>.tdb`).
    Attribute(usize),
    /// The legacy `__coords` slot (no data file since format 5).
    Coords,
    /// Dimension `j` in schema order (data file `d<j>.tdb`, sparse fragments only).
    Dimension(usize),
    /// `__timestamps` (`t.tdb`).
    Timestamps,
    /// `__delete_timestamps` (`dt.tdb`).
    DeleteTimestamps,
    /// `__delete_condition_index` (`dci.tdb`).
    DeleteConditionIndex,
}

impl Field {
    /// The stem of the field's data files in a fragment folder (`a<i>`, `d<j>`, `t`, `dt`,
    /// `dci`); `None` for the legacy `__coords` slot, which has no file in format 22.
    pub fn file_stem(self) -> Option<String> {
        Some(match self {
            Field::Attribute(i) => format!("a{i}"),
            Field::Dimension(j) => format!("d{j}"),
            Field::Timestamps => "t".to_owned(),
            Field::DeleteTimestamps => "dt".to_owned(),
            Field::DeleteConditionIndex => "dci".to_owned(),
            Field::Coords => return None,
        })
    }

    /// The fixed data file (or the offsets file of a var-sized field): `a<i>.tdb`.
    pub fn data_file(self) -> Option<String> {
        self.file_stem().map(|s| format!("{s}.tdb"))
    }

    /// The var data file of a var-sized field: `a<i>_var.tdb`.
    pub fn var_file(self) -> Option<String> {
        self.file_stem().map(|s| format!("{s}_var.tdb"))
    }

    /// The validity file of a nullable attribute: `a<i>_validity.tdb`.
    pub fn validity_file(self) -> Option<String> {
        self.file_stem().map(|s| format!("{s}_validity.tdb"))
    }
}

/// The shape of a fragment's idx space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldLayout {
    /// Attributes in the fragment's schema.
    pub attribute_num: usize,
    /// Dimensions in the fragment's schema.
    pub dim_num: usize,
    /// Whether the fragment stores per-cell timestamps.
    pub has_timestamps: bool,
    /// Whether the fragment stores delete timestamps and condition indexes.
    pub has_delete_meta: bool,
}

impl FieldLayout {
    /// The layout of a fragment of `schema`.
    pub fn new(schema: &ArraySchema, has_timestamps: bool, has_delete_meta: bool) -> Self {
        FieldLayout {
            attribute_num: schema.attributes.len(),
            dim_num: schema.dimensions.len(),
            has_timestamps,
            has_delete_meta,
        }
    }

    /// Number of fields: `A + 1 + D + has_timestamps + 2 · has_delete_meta`.
    pub fn num(&self) -> usize {
        self.attribute_num
            + 1
            + self.dim_num
            + usize::from(self.has_timestamps)
            + 2 * usize::from(self.has_delete_meta)
    }

    /// The idx of `field`, `None` when the fragment does not have it.
    pub fn idx(&self, field: Field) -> Option<usize> {
        let a = self.attribute_num;
        let after_dims = a + 1 + self.dim_num;
        match field {
            Field::Attribute(i) => (i < a).then_some(i),
            Field::Coords => Some(a),
            Field::Dimension(j) => (j < self.dim_num).then_some(a + 1 + j),
            Field::Timestamps => self.has_timestamps.then_some(after_dims),
            Field::DeleteTimestamps => {
                self.has_delete_meta.then_some(after_dims + usize::from(self.has_timestamps))
            }
            Field::DeleteConditionIndex => {
                self.has_delete_meta.then_some(after_dims + usize::from(self.has_timestamps) + 1)
            }
        }
    }

    /// The field at `idx`, `None` past the end.
    pub fn field(&self, idx: usize) -> Option<Field> {
        let a = self.attribute_num;
        let d = self.dim_num;
        if idx < a {
            return Some(Field::Attribute(idx));
        }
        if idx == a {
            return Some(Field::Coords);
        }
        if idx <= a + d {
            return Some(Field::Dimension(idx - a - 1));
        }
        let mut k = idx - a - d - 1;
        if self.has_timestamps {
            if k == 0 {
                return Some(Field::Timestamps);
            }
            k -= 1;
        }
        if self.has_delete_meta {
            return match k {
                0 => Some(Field::DeleteTimestamps),
                1 => Some(Field::DeleteConditionIndex),
                _ => None,
            };
        }
        None
    }

    /// Every field in idx order.
    pub fn fields(&self) -> impl Iterator<Item = Field> + '_ {
        (0..self.num()).filter_map(|i| self.field(i))
    }

    /// The idx of the field named `name` (an attribute, a dimension, or one of the pseudo
    /// field names [`COORDS`], [`TIMESTAMPS`], [`DELETE_TIMESTAMPS`],
    /// [`DELETE_CONDITION_INDEX`]).
    pub fn idx_of_name(&self, schema: &ArraySchema, name: &str) -> Option<usize> {
        let field = match name {
            COORDS => Field::Coords,
            TIMESTAMPS => Field::Timestamps,
            DELETE_TIMESTAMPS => Field::DeleteTimestamps,
            DELETE_CONDITION_INDEX => Field::DeleteConditionIndex,
            _ => {
                if let Some(i) = schema.attributes.iter().position(|a| a.name == name) {
                    Field::Attribute(i)
                } else {
                    Field::Dimension(schema.dimensions.iter().position(|d| d.name == name)?)
                }
            }
        };
        self.idx(field)
    }
}

/// How a field's tile sums are typed (`metadata_generator_type_data<T>::sum_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SumType {
    /// Signed integers, `char`, datetimes and times.
    I64,
    /// Unsigned integers and `bool`.
    U64,
    /// `float32` and `float64`.
    F64,
}

/// A sum decoded with its type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SumValue {
    /// Sum of a signed field.
    I64(i64),
    /// Sum of an unsigned field.
    U64(u64),
    /// Sum of a floating-point field.
    F64(f64),
}

impl SumType {
    /// The sum type of a fixed-size field of `datatype` (whether sums exist at all is
    /// [`FieldInfo::has_sum`]).
    pub fn of(datatype: Datatype) -> Self {
        use Datatype as D;
        match datatype {
            D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64 | D::Bool => SumType::U64,
            D::Float32 | D::Float64 => SumType::F64,
            _ => SumType::I64,
        }
    }

    /// Reads the 8 stored bytes (as a little-endian `u64`) as this type.
    pub fn decode(self, raw: u64) -> SumValue {
        match self {
            SumType::I64 => SumValue::I64(raw as i64),
            SumType::U64 => SumValue::U64(raw),
            SumType::F64 => SumValue::F64(f64::from_bits(raw)),
        }
    }
}

impl SumValue {
    /// The 8 bytes libtiledb stores, as a little-endian `u64`.
    pub fn to_raw(self) -> u64 {
        match self {
            SumValue::I64(v) => v as u64,
            SumValue::U64(v) => v,
            SumValue::F64(v) => v.to_bits(),
        }
    }
}

/// What the metadata rules need to know about one field of the idx space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    /// Which field.
    pub field: Field,
    /// Its name (`__coords`, `__timestamps`, ... for the pseudo fields).
    pub name: String,
    /// `ArraySchema::type`: dimension 0's type for `__coords`, `UINT64` for the timestamp
    /// and delete fields.
    pub datatype: Datatype,
    /// Values per cell (1 for pseudo fields, [`CELL_VAL_NUM_VAR`] for var-sized fields).
    pub cell_val_num: u32,
    /// Whether cells are var-sized (never for pseudo fields).
    pub var: bool,
    /// Whether the field has validity (attributes only).
    pub nullable: bool,
    /// Whether the field is a dimension.
    pub is_dim: bool,
    /// Whether the array is dense.
    pub dense_array: bool,
    /// `ArraySchema::cell_size`: bytes per fixed cell (for `__coords`: `dim_num ×` dimension
    /// 0's type size); for var-sized fields the 8 bytes of an offset, as `set_num_tiles`
    /// sizes the min/max buffers.
    pub cell_size: u64,
}

impl FieldInfo {
    /// The field `field` of a fragment of `schema`.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the schema has no such attribute or dimension, or no
    /// dimensions at all (for `__coords`).
    pub fn new(schema: &ArraySchema, field: Field) -> Result<Self> {
        let dense_array = schema.is_dense();
        let pseudo = |name: &str, datatype: Datatype, cell_size: u64| FieldInfo {
            field,
            name: name.to_owned(),
            datatype,
            cell_val_num: 1,
            var: false,
            nullable: false,
            is_dim: false,
            dense_array,
            cell_size,
        };
        Ok(match field {
            Field::Attribute(i) => {
                let a = schema
                    .attributes
                    .get(i)
                    .ok_or_else(|| Error::invalid(format!("the schema has no attribute {i}")))?;
                let var = a.cell_val_num == CELL_VAL_NUM_VAR;
                FieldInfo {
                    field,
                    name: a.name.clone(),
                    datatype: a.datatype,
                    cell_val_num: a.cell_val_num,
                    var,
                    nullable: a.nullable,
                    is_dim: false,
                    dense_array,
                    cell_size: if var {
                        8
                    } else {
                        a.datatype.size() as u64 * u64::from(a.cell_val_num)
                    },
                }
            }
            Field::Dimension(j) => {
                let d = schema
                    .dimensions
                    .get(j)
                    .ok_or_else(|| Error::invalid(format!("the schema has no dimension {j}")))?;
                let var = d.cell_val_num == CELL_VAL_NUM_VAR;
                FieldInfo {
                    field,
                    name: d.name.clone(),
                    datatype: d.datatype,
                    cell_val_num: d.cell_val_num,
                    var,
                    nullable: false,
                    is_dim: true,
                    dense_array,
                    cell_size: if var {
                        8
                    } else {
                        d.datatype.size() as u64 * u64::from(d.cell_val_num)
                    },
                }
            }
            Field::Coords => {
                let d0 = schema
                    .dimensions
                    .first()
                    .ok_or_else(|| Error::invalid("the schema has no dimensions"))?;
                pseudo(
                    COORDS,
                    d0.datatype,
                    schema.dimensions.len() as u64 * d0.datatype.size() as u64,
                )
            }
            Field::Timestamps => pseudo(TIMESTAMPS, Datatype::UInt64, 8),
            Field::DeleteTimestamps => pseudo(DELETE_TIMESTAMPS, Datatype::UInt64, 8),
            Field::DeleteConditionIndex => pseudo(DELETE_CONDITION_INDEX, Datatype::UInt64, 8),
        })
    }

    /// Every field of `layout` in idx order.
    ///
    /// # Errors
    /// As [`FieldInfo::new`].
    pub fn all(schema: &ArraySchema, layout: &FieldLayout) -> Result<Vec<Self>> {
        layout.fields().map(|f| Self::new(schema, f)).collect()
    }

    /// Whether the fragment metadata carries tile min/max values for this field: never for
    /// dimensions; var-sized or multi-value fields only as `CHAR`/`STRING_ASCII`; never for
    /// `ANY`, `BLOB`, `GEOM_*` and the non-ASCII string types.
    pub fn has_min_max(&self) -> bool {
        has_min_max_metadata(self.datatype, self.is_dim, self.var, self.cell_val_num)
    }

    /// Whether the fragment metadata carries tile sums for this field: fixed-size, one value
    /// per cell, not `ANY`/`BLOB`/`GEOM_*`/`STRING_*` (dimensions of sparse arrays included,
    /// dimensions of dense arrays excluded).
    pub fn has_sum(&self) -> bool {
        !(self.dense_array && self.is_dim)
            && has_sum_metadata(self.datatype, self.var, self.cell_val_num)
    }

    /// Whether tile null counts are stored (nullable attributes).
    pub fn stores_null_counts(&self) -> bool {
        self.nullable
    }

    /// The type of this field's sums.
    pub fn sum_type(&self) -> SumType {
        SumType::of(self.datatype)
    }

    /// Whether min/max values compare as strings (`CHAR`/`STRING_ASCII`).
    pub fn is_string(&self) -> bool {
        matches!(self.datatype, Datatype::Char | Datatype::StringAscii)
    }
}

/// `TileMetadataGenerator::has_min_max_metadata`.
pub(crate) fn has_min_max_metadata(
    dt: Datatype,
    is_dim: bool,
    var: bool,
    cell_val_num: u32,
) -> bool {
    use Datatype as D;
    if is_dim {
        return false;
    }
    let string = matches!(dt, D::Char | D::StringAscii);
    if var && !string {
        return false;
    }
    if cell_val_num != 1 && !string {
        return false;
    }
    !matches!(
        dt,
        D::Any
            | D::Blob
            | D::GeomWkb
            | D::GeomWkt
            | D::StringUtf8
            | D::StringUtf16
            | D::StringUtf32
            | D::StringUcs2
            | D::StringUcs4
    )
}

/// `TileMetadataGenerator::has_sum_metadata`.
pub(crate) fn has_sum_metadata(dt: Datatype, var: bool, cell_val_num: u32) -> bool {
    use Datatype as D;
    if var || cell_val_num != 1 {
        return false;
    }
    !matches!(
        dt,
        D::Any
            | D::Blob
            | D::GeomWkb
            | D::GeomWkt
            | D::StringUtf8
            | D::StringUtf16
            | D::StringUtf32
            | D::StringUcs2
            | D::StringUcs4
            | D::StringAscii
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idx_round_trip() {
        for (ts, dm) in [(false, false), (true, false), (false, true), (true, true)] {
            let l = FieldLayout {
                attribute_num: 3,
                dim_num: 2,
                has_timestamps: ts,
                has_delete_meta: dm,
            };
            assert_eq!(l.num(), 6 + usize::from(ts) + 2 * usize::from(dm));
            for i in 0..l.num() {
                let f = l.field(i).unwrap();
                assert_eq!(l.idx(f), Some(i));
            }
            assert_eq!(l.field(l.num()), None);
            assert_eq!(l.idx(Field::Coords), Some(3));
            assert_eq!(l.idx(Field::Dimension(1)), Some(5));
            assert_eq!(l.idx(Field::Dimension(2)), None);
        }
    }
}
