//! Dense arrays as [`ndarray`] arrays (the `ndarray` feature): reads of a box of cells as
//! an [`ArrayD`] laid out in memory in the layout asked for, and writes from any
//! [`ArrayView`] (whatever its strides).
//!
//! ```
//! use ndarray::{ArrayD, IxDyn, array};
//! use tessera::nd::{NdArray, NdWrite};
//! use tessera::{ArraySchema, ArrayType, Attribute, Datatype, Dimension, ReadLayout};
//!
//! let dir = tempfile::tempdir()?;
//! let schema = ArraySchema::builder(ArrayType::Dense)
//!     .dimension(Dimension::new("y", Datatype::Int32).domain_i64(0, 9).tile_i64(5))
//!     .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 9).tile_i64(5))
//!     .attribute(Attribute::new("a", Datatype::Float32))
//!     .build()?;
//! tessera::create(dir.path().join("grid"), &schema)?;
//! let grid = tessera::open(dir.path().join("grid"))?;
//! let values = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
//! grid.write().range_i64("y", 2, 3).range_i64("x", 0, 2).ndarray("a", values.view()).submit()?;
//!
//! let grid = tessera::open(dir.path().join("grid"))?;
//! let read: ArrayD<f32> = grid.read_ndarray("a", &[2..=3, 0..=2], ReadLayout::ColMajor)?;
//! assert_eq!(read, values.into_dyn());
//! assert!(read.t().is_standard_layout()); // column-major in memory
//! assert_eq!(read[IxDyn(&[1, 2])], 6.0);
//! # Ok::<(), tessera::Error>(())
//! ```

use std::ops::RangeInclusive;

use ndarray::{ArrayD, ArrayView, Dimension as NdDimension, IxDyn, ShapeBuilder};
use tessera_query::{Array, CellValue, Error, Result, WriteQuery};
use tessera_types::{Layout, ReadLayout};

/// Reads of a dense array into an [`ArrayD`].
pub trait NdArray {
    /// The cells of `attribute` in the box `subarray` (one inclusive range per dimension, in
    /// the schema's order) as an array of that shape: element `[i, j, ...]` is the cell at
    /// `(lo_0 + i, lo_1 + j, ...)`, whatever `layout`; `layout` decides the memory order
    /// (row-major: C order, col-major: Fortran order). Cells never written hold the fill
    /// value; null cells of a nullable attribute hold whatever their bytes are.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a sparse array, a range count other than the
    /// dimension count, or a global-order or unordered layout; [`Error::TypeMismatch`] when
    /// the attribute does not read as `T` or holds several values per cell; as
    /// [`tessera_query::ReadQuery::execute`].
    fn read_ndarray<T: CellValue>(
        &self,
        attribute: &str,
        subarray: &[RangeInclusive<i64>],
        layout: ReadLayout,
    ) -> Result<ArrayD<T>>;
}

impl NdArray for Array {
    fn read_ndarray<T: CellValue>(
        &self,
        attribute: &str,
        subarray: &[RangeInclusive<i64>],
        layout: ReadLayout,
    ) -> Result<ArrayD<T>> {
        let schema = self.schema();
        if !schema.is_dense() {
            return Err(Error::InvalidArgument("an ndarray read needs a dense array".into()));
        }
        if subarray.len() != schema.dimensions.len() {
            return Err(Error::InvalidArgument(format!(
                "{} ranges for {} dimensions",
                subarray.len(),
                schema.dimensions.len()
            )));
        }
        let fortran = match layout {
            ReadLayout::RowMajor => false,
            ReadLayout::ColMajor => true,
            l => {
                return Err(Error::InvalidArgument(format!(
                    "an ndarray read is row-major or col-major, not {l}"
                )));
            }
        };
        let mut query = self.read().attributes([attribute]).layout(layout);
        let mut shape = Vec::with_capacity(subarray.len());
        for (dim, r) in schema.dimensions.iter().zip(subarray) {
            query = query.range_i64(&dim.name, *r.start(), *r.end());
            let len = r.end().checked_sub(*r.start()).and_then(|d| usize::try_from(d).ok());
            shape.push(len.map_or(0, |d| d + 1));
        }
        let result = query.execute()?;
        let column =
            result.column(attribute).ok_or_else(|| Error::UnknownField(attribute.to_owned()))?;
        if column.cell_val_num != 1 {
            return Err(Error::TypeMismatch {
                column: attribute.to_owned(),
                datatype: column.datatype,
                asked: format!("ndarray of {}", std::any::type_name::<T>()),
                reason: format!("its cells hold {} values each", column.cell_val_num),
            });
        }
        let values = column.values::<T>()?.into_owned();
        ArrayD::from_shape_vec(IxDyn(&shape).set_f(fortran), values)
            .map_err(|e| Error::InvalidQuery(format!("the read's cells do not fill its box: {e}")))
    }
}

/// Writes from an [`ArrayView`].
pub trait NdWrite: Sized {
    /// Adds the values of `values` as the column `name`, in row-major order of its logical
    /// indexes whatever its strides, and makes the write row-major: the write's subarray
    /// (its ranges) must have the view's shape.
    fn ndarray<T: CellValue, D: NdDimension>(self, name: &str, values: ArrayView<'_, T, D>)
    -> Self;
}

impl NdWrite for WriteQuery<'_> {
    fn ndarray<T: CellValue, D: NdDimension>(
        self,
        name: &str,
        values: ArrayView<'_, T, D>,
    ) -> Self {
        let query = self.layout(Layout::RowMajor);
        match values.as_slice() {
            Some(standard) => query.values(name, standard),
            None => query.values(name, &values.iter().copied().collect::<Vec<T>>()),
        }
    }
}
