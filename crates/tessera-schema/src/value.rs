//! One typed value of a datatype (domain bounds, tile extents, fill values, current domain).

use tessera_types::Datatype;

use crate::{Error, Result};

/// A single value of some TileDB datatype, decoded from its little-endian bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Signed integers, char, datetimes and times.
    Int(i64),
    /// Unsigned integers and bool.
    UInt(u64),
    /// Floats.
    Float(f64),
    /// Bytes of a string type (or any other byte type read as a whole).
    Bytes(Vec<u8>),
}

impl Value {
    /// Decodes the first value of `dt` in `bytes`; string-like types take all of `bytes`.
    ///
    /// # Errors
    /// When `bytes` is shorter than one value.
    pub fn decode(dt: Datatype, bytes: &[u8]) -> Result<Value> {
        use Datatype as D;
        let need = dt.size();
        if is_bytes_like(dt) {
            return Ok(Value::Bytes(bytes.to_vec()));
        }
        if bytes.len() < need {
            return Err(Error::invalid(format!(
                "{dt} value needs {need} bytes, got {}",
                bytes.len()
            )));
        }
        let mut b8 = [0u8; 8];
        b8[..need].copy_from_slice(&bytes[..need]);
        Ok(match dt {
            D::Int8 => Value::Int(i64::from(bytes[0] as i8)),
            D::Char => Value::Int(i64::from(bytes[0] as i8)),
            D::Int16 => Value::Int(i64::from(i16::from_le_bytes([bytes[0], bytes[1]]))),
            D::Int32 => {
                Value::Int(i64::from(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])))
            }
            D::UInt8 | D::Bool => Value::UInt(u64::from(bytes[0])),
            D::UInt16 => Value::UInt(u64::from(u16::from_le_bytes([bytes[0], bytes[1]]))),
            D::UInt32 => {
                Value::UInt(u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])))
            }
            D::UInt64 => Value::UInt(u64::from_le_bytes(b8)),
            D::Float32 => Value::Float(f64::from(f32::from_le_bytes([
                bytes[0], bytes[1], bytes[2], bytes[3],
            ]))),
            D::Float64 => Value::Float(f64::from_le_bytes(b8)),
            _ => Value::Int(i64::from_le_bytes(b8)),
        })
    }

    /// Appends the little-endian bytes of this value as `dt`.
    ///
    /// # Errors
    /// When the value does not fit `dt` (wrong kind, out of range, a fraction for an integer).
    pub fn encode(&self, dt: Datatype, out: &mut Vec<u8>) -> Result<()> {
        use Datatype as D;
        let bad = || Error::invalid(format!("value {self:?} does not fit datatype {dt}"));
        if let Value::Bytes(b) = self {
            // Raw bytes (strings, or char cells given as text); the caller checks the length.
            if !(is_bytes_like(dt) || dt == D::Char) {
                return Err(bad());
            }
            out.extend_from_slice(b);
            return Ok(());
        }
        if is_bytes_like(dt) {
            return match self {
                Value::UInt(v) if dt.size() == 1 => {
                    out.push(u8::try_from(*v).map_err(|_| bad())?);
                    Ok(())
                }
                Value::Int(v) if dt.size() == 1 => {
                    out.push(u8::try_from(*v).map_err(|_| bad())?);
                    Ok(())
                }
                _ => Err(bad()),
            };
        }
        match dt {
            D::Float32 => {
                out.extend_from_slice(&(self.as_f64().ok_or_else(bad)? as f32).to_le_bytes())
            }
            D::Float64 => out.extend_from_slice(&self.as_f64().ok_or_else(bad)?.to_le_bytes()),
            _ => {
                let v = self.as_i128().ok_or_else(bad)?;
                let (lo, hi): (i128, i128) = match dt {
                    D::Int8 | D::Char => (i8::MIN.into(), i8::MAX.into()),
                    D::UInt8 => (0, u8::MAX.into()),
                    D::Bool => (0, 1),
                    D::Int16 => (i16::MIN.into(), i16::MAX.into()),
                    D::UInt16 => (0, u16::MAX.into()),
                    D::Int32 => (i32::MIN.into(), i32::MAX.into()),
                    D::UInt32 => (0, u32::MAX.into()),
                    D::UInt64 => (0, u64::MAX.into()),
                    _ => (i64::MIN.into(), i64::MAX.into()),
                };
                if v < lo || v > hi {
                    return Err(bad());
                }
                out.extend_from_slice(&v.to_le_bytes()[..dt.size()]);
            }
        }
        Ok(())
    }

    /// The value as `f64` when numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(v as f64),
            Value::UInt(v) => Some(v as f64),
            Value::Float(v) => Some(v),
            Value::Bytes(_) => None,
        }
    }

    /// The value as `i128` when integral.
    pub fn as_i128(&self) -> Option<i128> {
        match *self {
            Value::Int(v) => Some(v.into()),
            Value::UInt(v) => Some(v.into()),
            Value::Float(v) if v.fract() == 0.0 && v.is_finite() => Some(v as i128),
            _ => None,
        }
    }
}

/// Types whose values are handled as raw bytes (strings, blobs, geometry, any).
pub(crate) fn is_bytes_like(dt: Datatype) -> bool {
    dt.is_string()
        || matches!(dt, Datatype::Any | Datatype::Blob | Datatype::GeomWkb | Datatype::GeomWkt)
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bytes(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode() {
        for (dt, v) in [
            (Datatype::Int8, Value::Int(-3)),
            (Datatype::UInt64, Value::UInt(u64::MAX)),
            (Datatype::Float32, Value::Float(1.5)),
            (Datatype::DatetimeNs, Value::Int(-7)),
            (Datatype::StringAscii, Value::Bytes(b"abc".to_vec())),
        ] {
            let mut out = vec![];
            v.encode(dt, &mut out).unwrap();
            assert_eq!(Value::decode(dt, &out).unwrap(), v);
        }
        assert!(Value::Int(300).encode(Datatype::UInt8, &mut vec![]).is_err());
        assert!(Value::Float(0.5).encode(Datatype::Int32, &mut vec![]).is_err());
    }
}
