//! A bounds-checked little-endian cursor whose errors are this crate's [`Error`].

use crate::{Error, Result};

/// Reads fields front to back; every read checks the remaining length first.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Offset of the next unread byte.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Takes the next `n` bytes of `field`.
    pub(crate) fn take(&mut self, n: u64, field: &'static str) -> Result<&'a [u8]> {
        let available = self.remaining();
        let end = usize::try_from(n).ok().filter(|&n| n <= available).map(|n| self.pos + n);
        match end.and_then(|end| self.data.get(self.pos..end).map(|s| (s, end))) {
            Some((slice, end)) => {
                self.pos = end;
                Ok(slice)
            }
            None => Err(Error::Truncated {
                field,
                offset: self.pos as u64,
                needed: n,
                available: available as u64,
            }),
        }
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64, field)?);
        Ok(out)
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
}
