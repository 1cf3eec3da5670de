//! How many values a cell holds: a fixed number, or a variable number.

use std::fmt;

use crate::CELL_VAL_NUM_VAR;

/// How many values each cell of a dimension or attribute holds.
///
/// On disk this is one `u32`, with [`CELL_VAL_NUM_VAR`] (`u32::MAX`) for var-sized cells;
/// [`CellValNum::from`] and [`u32::from`] convert between the two.
///
/// ```
/// use tessera_types::CellValNum;
///
/// assert_eq!(CellValNum::from(u32::MAX), CellValNum::Var);
/// assert_eq!(u32::from(CellValNum::Fixed(3)), 3);
/// assert_eq!(CellValNum::Fixed(2).fixed(), Some(2));
/// assert_eq!("var".parse::<CellValNum>().unwrap(), CellValNum::Var);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellValNum {
    /// `n` values per cell (`n` is at least 1 in a valid schema; `Fixed(u32::MAX)` is the
    /// same on disk as [`CellValNum::Var`]).
    Fixed(u32),
    /// A variable number of values per cell (strings, blobs, lists), stored with offsets.
    Var,
}

impl CellValNum {
    /// One value per cell, the default.
    pub const SINGLE: CellValNum = CellValNum::Fixed(1);

    /// Whether cells are var-sized.
    pub fn is_var(self) -> bool {
        u32::from(self) == CELL_VAL_NUM_VAR
    }

    /// The values per cell of a fixed-size field, `None` for var-sized cells.
    pub fn fixed(self) -> Option<u32> {
        match u32::from(self) {
            CELL_VAL_NUM_VAR => None,
            n => Some(n),
        }
    }
}

impl Default for CellValNum {
    fn default() -> Self {
        CellValNum::SINGLE
    }
}

impl From<u32> for CellValNum {
    /// The on-disk number: [`CELL_VAL_NUM_VAR`] is [`CellValNum::Var`].
    fn from(n: u32) -> Self {
        if n == CELL_VAL_NUM_VAR { CellValNum::Var } else { CellValNum::Fixed(n) }
    }
}

impl From<CellValNum> for u32 {
    /// The on-disk number.
    fn from(n: CellValNum) -> Self {
        match n {
            CellValNum::Fixed(n) => n,
            CellValNum::Var => CELL_VAL_NUM_VAR,
        }
    }
}

impl fmt::Display for CellValNum {
    /// `var`, or the number (as tiledb-py prints it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fixed() {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("var"),
        }
    }
}

impl std::str::FromStr for CellValNum {
    type Err = crate::Error;

    /// `var` (any case), or a positive number.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("var") {
            return Ok(CellValNum::Var);
        }
        match s.parse::<u32>() {
            Ok(n) if n > 0 => Ok(CellValNum::from(n)),
            _ => Err(crate::Error::UnknownName { kind: "cell_val_num", name: s.to_owned() }),
        }
    }
}
