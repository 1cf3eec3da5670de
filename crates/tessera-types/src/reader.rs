//! A bounds-checked little-endian cursor for hand-written decoders.

use crate::{Error, Result};

/// Reads little-endian fields from a byte slice, failing with the structure, field and offset
/// instead of panicking when the input is short.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    data: &'a [u8],
    pos: usize,
    structure: &'static str,
}

impl<'a> ByteReader<'a> {
    /// A reader over `data` whose errors name `structure`.
    pub fn new(data: &'a [u8], structure: &'static str) -> Self {
        Self { data, pos: 0, structure }
    }

    /// Current offset from the start of the input.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The unread bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }

    /// Takes the next `n` bytes of field `field`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than `n` bytes are left.
    pub fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated(field, n));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Like [`Self::bytes`] with a length read from disk as `u64`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than `n` bytes are left.
    pub fn bytes_u64(&mut self, n: u64, field: &'static str) -> Result<&'a [u8]> {
        match usize::try_from(n) {
            Ok(n) => self.bytes(n, field),
            Err(_) => Err(Error::Truncated {
                structure: self.structure,
                field,
                offset: self.pos as u64,
                needed: n,
                available: self.remaining() as u64,
            }),
        }
    }

    /// Reads a fixed-size array.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        let b = self.bytes(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    /// Reads a `u8`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn u8(&mut self, field: &'static str) -> Result<u8> {
        Ok(self.array::<1>(field)?[0])
    }

    /// Reads a little-endian `u16`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn u16(&mut self, field: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }

    /// Reads a little-endian `u32`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn u32(&mut self, field: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    /// Reads a little-endian `i32`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn i32(&mut self, field: &'static str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(field)?))
    }

    /// Reads a little-endian `u64`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn u64(&mut self, field: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// Reads a little-endian `f32`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn f32(&mut self, field: &'static str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(field)?))
    }

    /// Reads a little-endian `f64`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the input is short.
    pub fn f64(&mut self, field: &'static str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(field)?))
    }

    /// An [`Error::Invalid`] for `field` at the current offset.
    pub fn invalid(&self, field: &'static str, reason: impl Into<String>) -> Error {
        Error::invalid(self.structure, field, self.pos as u64, reason)
    }

    fn truncated(&self, field: &'static str, needed: usize) -> Error {
        Error::Truncated {
            structure: self.structure,
            field,
            offset: self.pos as u64,
            needed: needed as u64,
            available: self.remaining() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_reports_truncation() {
        let mut r = ByteReader::new(&[1, 0, 0, 0, 7], "test");
        assert_eq!(r.u32("a").unwrap(), 1);
        let e = r.u32("b").unwrap_err();
        assert_eq!(
            e,
            Error::Truncated { structure: "test", field: "b", offset: 4, needed: 4, available: 1 }
        );
        assert_eq!(r.u8("c").unwrap(), 7);
        assert!(r.is_empty());
        assert!(r.bytes_u64(u64::MAX, "d").is_err());
    }
}
