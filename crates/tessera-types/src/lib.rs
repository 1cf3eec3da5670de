//! The vocabulary every other Tessera crate shares: TileDB's datatypes with their on-disk IDs
//! and sizes, layouts, array types, compressor and filter IDs, format constants, a checked
//! little-endian byte reader, and the error type that names the structure, field and offset
//! of whatever was wrong.
//!
//! Every ID is defined here once, so that a datatype's size or a filter's number has a single
//! home.
//!
//! ```
//! use tessera_types::Datatype;
//! let t = Datatype::from_id(25).unwrap();
//! assert_eq!(t, Datatype::DatetimeMs);
//! assert_eq!(t.size(), 8);
//! assert_eq!(t.name(), "datetime_ms");
//! ```

mod cell_val_num;
mod compare;
mod constants;
mod datatype;
mod enums;
mod error;
mod int_value;
mod key;
pub mod names;
pub mod nom_parse;
mod primitive;
mod read_layout;
mod reader;

pub use cell_val_num::CellValNum;
pub use compare::compare;
pub use constants::*;
pub use datatype::Datatype;
pub use enums::{
    ArrayType, Compressor, CurrentDomainType, DataOrder, EncryptionType, FilterType, Layout,
    WebpInputFormat,
};
pub use error::{Error, Result};
pub use int_value::int_value;
pub use key::{ENCRYPTION_KEY_LEN, EncryptionKey};
pub use primitive::Primitive;
pub use read_layout::ReadLayout;
pub use reader::ByteReader;
