//! TileDB datatypes (`tiledb/api/c_api/datatype/datatype_api_enum.h`).

use crate::{Error, Result};

macro_rules! datatypes {
    ($( $(#[$doc:meta])* $variant:ident = $id:literal, $size:literal, $name:literal; )*) => {
        /// A TileDB datatype: its on-disk ID is the enum discriminant.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Datatype {
            $( $(#[$doc])* $variant = $id, )*
        }

        impl Datatype {
            /// Every datatype, in ID order.
            pub const ALL: &'static [Datatype] = &[$(Datatype::$variant,)*];

            /// The datatype stored on disk as `id`.
            ///
            /// # Errors
            /// [`Error::UnknownId`] when `id` names no TileDB 2.30 datatype.
            pub fn from_id(id: u8) -> Result<Self> {
                match id {
                    $( $id => Ok(Datatype::$variant), )*
                    _ => Err(Error::UnknownId { kind: "datatype", id: u64::from(id) }),
                }
            }

            /// Size in bytes of one value.
            pub const fn size(self) -> usize {
                match self { $( Datatype::$variant => $size, )* }
            }

            /// TileDB's lowercase name (`"int32"`, `"string_utf8"`, `"datetime_ms"`).
            pub const fn name(self) -> &'static str {
                match self { $( Datatype::$variant => $name, )* }
            }

            /// The datatype with TileDB name `name` (case-insensitive).
            ///
            /// # Errors
            /// [`Error::UnknownName`] when no datatype has that name.
            pub fn from_name(name: &str) -> Result<Self> {
                let lower = name.to_ascii_lowercase();
                match lower.as_str() {
                    $( $name => Ok(Datatype::$variant), )*
                    _ => Err(Error::UnknownName { kind: "datatype", name: name.to_owned() }),
                }
            }
        }
    };
}

datatypes! {
    /// 32-bit signed integer.
    Int32 = 0, 4, "int32";
    /// 64-bit signed integer.
    Int64 = 1, 8, "int64";
    /// 32-bit IEEE float.
    Float32 = 2, 4, "float32";
    /// 64-bit IEEE float.
    Float64 = 3, 8, "float64";
    /// C `char` (signed byte); strings of fixed length use it.
    Char = 4, 1, "char";
    /// 8-bit signed integer.
    Int8 = 5, 1, "int8";
    /// 8-bit unsigned integer.
    UInt8 = 6, 1, "uint8";
    /// 16-bit signed integer.
    Int16 = 7, 2, "int16";
    /// 16-bit unsigned integer.
    UInt16 = 8, 2, "uint16";
    /// 32-bit unsigned integer.
    UInt32 = 9, 4, "uint32";
    /// 64-bit unsigned integer.
    UInt64 = 10, 8, "uint64";
    /// ASCII string bytes.
    StringAscii = 11, 1, "string_ascii";
    /// UTF-8 string bytes.
    StringUtf8 = 12, 1, "string_utf8";
    /// UTF-16 code units.
    StringUtf16 = 13, 2, "string_utf16";
    /// UTF-32 code units.
    StringUtf32 = 14, 4, "string_utf32";
    /// UCS-2 code units.
    StringUcs2 = 15, 2, "string_ucs2";
    /// UCS-4 code units.
    StringUcs4 = 16, 4, "string_ucs4";
    /// Untyped bytes.
    Any = 17, 1, "any";
    /// Years since the epoch (i64).
    DatetimeYear = 18, 8, "datetime_year";
    /// Months since the epoch (i64).
    DatetimeMonth = 19, 8, "datetime_month";
    /// Weeks since the epoch (i64).
    DatetimeWeek = 20, 8, "datetime_week";
    /// Days since the epoch (i64).
    DatetimeDay = 21, 8, "datetime_day";
    /// Hours since the epoch (i64).
    DatetimeHr = 22, 8, "datetime_hr";
    /// Minutes since the epoch (i64).
    DatetimeMin = 23, 8, "datetime_min";
    /// Seconds since the epoch (i64).
    DatetimeSec = 24, 8, "datetime_sec";
    /// Milliseconds since the epoch (i64).
    DatetimeMs = 25, 8, "datetime_ms";
    /// Microseconds since the epoch (i64).
    DatetimeUs = 26, 8, "datetime_us";
    /// Nanoseconds since the epoch (i64).
    DatetimeNs = 27, 8, "datetime_ns";
    /// Picoseconds since the epoch (i64).
    DatetimePs = 28, 8, "datetime_ps";
    /// Femtoseconds since the epoch (i64).
    DatetimeFs = 29, 8, "datetime_fs";
    /// Attoseconds since the epoch (i64).
    DatetimeAs = 30, 8, "datetime_as";
    /// Hours of a day (i64).
    TimeHr = 31, 8, "time_hr";
    /// Minutes (i64).
    TimeMin = 32, 8, "time_min";
    /// Seconds (i64).
    TimeSec = 33, 8, "time_sec";
    /// Milliseconds (i64).
    TimeMs = 34, 8, "time_ms";
    /// Microseconds (i64).
    TimeUs = 35, 8, "time_us";
    /// Nanoseconds (i64).
    TimeNs = 36, 8, "time_ns";
    /// Picoseconds (i64).
    TimePs = 37, 8, "time_ps";
    /// Femtoseconds (i64).
    TimeFs = 38, 8, "time_fs";
    /// Attoseconds (i64).
    TimeAs = 39, 8, "time_as";
    /// Binary large object bytes.
    Blob = 40, 1, "blob";
    /// Boolean, one byte.
    Bool = 41, 1, "bool";
    /// Geometry as well-known binary.
    GeomWkb = 42, 1, "geom_wkb";
    /// Geometry as well-known text.
    GeomWkt = 43, 1, "geom_wkt";
}

impl Datatype {
    /// The on-disk ID.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// Any `DATETIME_*` unit.
    pub const fn is_datetime(self) -> bool {
        matches!(self.id(), 18..=30)
    }

    /// Any `TIME_*` unit.
    pub const fn is_time(self) -> bool {
        matches!(self.id(), 31..=39)
    }

    /// The eight fixed-width integer types (not char, bool, datetimes).
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            Datatype::Int8
                | Datatype::UInt8
                | Datatype::Int16
                | Datatype::UInt16
                | Datatype::Int32
                | Datatype::UInt32
                | Datatype::Int64
                | Datatype::UInt64
        )
    }

    /// `float32` or `float64`.
    pub const fn is_float(self) -> bool {
        matches!(self, Datatype::Float32 | Datatype::Float64)
    }

    /// Any `STRING_*` type.
    pub const fn is_string(self) -> bool {
        matches!(self.id(), 11..=16)
    }

    /// Whether values are signed integers in filter arithmetic (ints, char, datetimes, times).
    pub const fn is_signed(self) -> bool {
        matches!(
            self,
            Datatype::Int8 | Datatype::Int16 | Datatype::Int32 | Datatype::Int64 | Datatype::Char
        ) || self.is_datetime()
            || self.is_time()
    }

    /// The signed integer type of `width` bytes (1, 2, 4, 8), as XOR and SCALE_FLOAT output.
    pub const fn signed_of_width(width: usize) -> Option<Datatype> {
        match width {
            1 => Some(Datatype::Int8),
            2 => Some(Datatype::Int16),
            4 => Some(Datatype::Int32),
            8 => Some(Datatype::Int64),
            _ => None,
        }
    }

    /// TileDB's default fill value for one value of this type, little-endian.
    pub fn default_fill_value(self) -> Vec<u8> {
        match self {
            Datatype::Int8 | Datatype::Char => vec![0x80],
            Datatype::UInt8 => vec![0xff],
            Datatype::Int16 => i16::MIN.to_le_bytes().to_vec(),
            Datatype::UInt16 => u16::MAX.to_le_bytes().to_vec(),
            Datatype::Int32 => i32::MIN.to_le_bytes().to_vec(),
            Datatype::UInt32 => u32::MAX.to_le_bytes().to_vec(),
            Datatype::Int64 => i64::MIN.to_le_bytes().to_vec(),
            Datatype::UInt64 => u64::MAX.to_le_bytes().to_vec(),
            Datatype::Float32 => f32::NAN.to_le_bytes().to_vec(),
            Datatype::Float64 => f64::NAN.to_le_bytes().to_vec(),
            d if d.is_datetime() || d.is_time() => i64::MIN.to_le_bytes().to_vec(),
            d => vec![0; d.size()],
        }
    }
}

impl std::fmt::Display for Datatype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Datatype {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Datatype::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_dense() {
        assert_eq!(Datatype::ALL.len(), 44);
        for (i, d) in Datatype::ALL.iter().enumerate() {
            assert_eq!(d.id() as usize, i);
            assert_eq!(Datatype::from_id(d.id()).unwrap(), *d);
            assert_eq!(Datatype::from_name(d.name()).unwrap(), *d);
        }
        assert!(Datatype::from_id(44).is_err());
        assert!(Datatype::from_name("int33").is_err());
    }

    #[test]
    fn sizes_and_fills() {
        assert_eq!(Datatype::StringUtf32.size(), 4);
        assert_eq!(Datatype::DatetimeAs.size(), 8);
        assert_eq!(Datatype::Float32.default_fill_value(), [0, 0, 0xc0, 0x7f]);
        assert_eq!(Datatype::StringUtf16.default_fill_value(), [0, 0]);
        assert_eq!(Datatype::TimeNs.default_fill_value(), i64::MIN.to_le_bytes());
        assert_eq!(Datatype::Bool.default_fill_value(), [0]);
    }
}
