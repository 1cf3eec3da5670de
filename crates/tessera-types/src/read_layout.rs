//! The order a read returns its cells in: a [`Layout`] that cannot be Hilbert.

use std::fmt;
use std::str::FromStr;

use crate::Layout;

/// The order of the cells a read returns. Unlike [`Layout`], it has no Hilbert order (a cell
/// order of sparse arrays, never a read's), so a read cannot ask for it.
///
/// ```
/// use tessera_types::{Layout, ReadLayout};
///
/// assert_eq!(Layout::from(ReadLayout::ColMajor), Layout::ColMajor);
/// assert_eq!(ReadLayout::try_from(Layout::GlobalOrder), Ok(ReadLayout::GlobalOrder));
/// assert!(ReadLayout::try_from(Layout::Hilbert).is_err());
/// assert_eq!("row-major".parse::<ReadLayout>(), Ok(ReadLayout::RowMajor));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadLayout {
    /// Row-major over the query's subarray: the last dimension varies fastest.
    RowMajor,
    /// Column-major over the query's subarray: the first dimension varies fastest.
    ColMajor,
    /// The array's global order: tile order, then cell order (Hilbert for sparse arrays so
    /// ordered).
    GlobalOrder,
    /// Any order (sparse arrays: the fastest).
    Unordered,
}

impl From<ReadLayout> for Layout {
    fn from(l: ReadLayout) -> Self {
        match l {
            ReadLayout::RowMajor => Layout::RowMajor,
            ReadLayout::ColMajor => Layout::ColMajor,
            ReadLayout::GlobalOrder => Layout::GlobalOrder,
            ReadLayout::Unordered => Layout::Unordered,
        }
    }
}

impl TryFrom<Layout> for ReadLayout {
    type Error = crate::Error;

    /// Every layout but [`Layout::Hilbert`].
    fn try_from(l: Layout) -> Result<Self, Self::Error> {
        match l {
            Layout::RowMajor => Ok(ReadLayout::RowMajor),
            Layout::ColMajor => Ok(ReadLayout::ColMajor),
            Layout::GlobalOrder => Ok(ReadLayout::GlobalOrder),
            Layout::Unordered => Ok(ReadLayout::Unordered),
            Layout::Hilbert => {
                Err(crate::Error::Unsupported("Hilbert is a cell order, not a read layout".into()))
            }
        }
    }
}

impl fmt::Display for ReadLayout {
    /// The layout's name as [`Layout`] writes it (`row-major`, `col-major`, `global`,
    /// `unordered`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Layout::from(*self), f)
    }
}

impl FromStr for ReadLayout {
    type Err = crate::Error;

    /// A name [`Layout`] parses, except `hilbert`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ReadLayout::try_from(Layout::from_name(s)?)
    }
}
