//! The key of an AES-256-GCM encrypted array.

use std::fmt;

/// Length in bytes of an AES-256-GCM key.
pub const ENCRYPTION_KEY_LEN: usize = 32;

/// A 32-byte AES-256-GCM key, as libtiledb takes it (`sm.encryption_key`, tiledb-py's `key=`):
/// the raw bytes of a 32-character string, or 64 hexadecimal digits.
///
/// Its `Debug` form never shows the bytes, and the bytes are overwritten when it is dropped.
///
/// ```
/// use tessera_types::EncryptionKey;
/// let key = EncryptionKey::parse("0123456789abcdeF0123456789abcdeF").unwrap();
/// assert_eq!(key.as_bytes()[0], b'0');
/// assert_eq!(format!("{key:?}"), "EncryptionKey(<32 bytes>)");
/// assert!(EncryptionKey::parse("short").is_err());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey([u8; ENCRYPTION_KEY_LEN]);

impl EncryptionKey {
    /// The key made of exactly these 32 bytes.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] when `bytes` is not 32 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> crate::Result<Self> {
        let key: [u8; ENCRYPTION_KEY_LEN] = bytes.try_into().map_err(|_| {
            crate::Error::invalid(
                "encryption key",
                "length",
                0,
                format!(
                    "an AES-256-GCM key is {ENCRYPTION_KEY_LEN} bytes, this one is {}",
                    bytes.len()
                ),
            )
        })?;
        Ok(EncryptionKey(key))
    }

    /// The key a user typed or stored in a file: 32 characters taken as their bytes (as
    /// libtiledb takes `sm.encryption_key`), or 64 hexadecimal digits. One trailing newline
    /// (`\n` or `\r\n`) is ignored, so a key file written by `echo` works.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for any other length, or 64 characters that are not hex.
    pub fn parse(text: &str) -> crate::Result<Self> {
        let text = text.strip_suffix('\n').map_or(text, |t| t.strip_suffix('\r').unwrap_or(t));
        if text.len() == 2 * ENCRYPTION_KEY_LEN {
            let mut key = [0u8; ENCRYPTION_KEY_LEN];
            for (i, pair) in text.as_bytes().chunks_exact(2).enumerate() {
                let digit = |c: u8| (c as char).to_digit(16);
                match (digit(pair[0]), digit(pair[1])) {
                    (Some(hi), Some(lo)) => key[i] = (hi * 16 + lo) as u8,
                    _ => {
                        return Err(crate::Error::invalid(
                            "encryption key",
                            "hex digits",
                            2 * i as u64,
                            "a 64-character key must be hexadecimal",
                        ));
                    }
                }
            }
            return Ok(EncryptionKey(key));
        }
        Self::from_bytes(text.as_bytes())
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; ENCRYPTION_KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncryptionKey(<{ENCRYPTION_KEY_LEN} bytes>)")
    }
}

impl Drop for EncryptionKey {
    fn drop(&mut self) {
        // Best effort: the compiler may keep copies elsewhere, but not this one.
        for b in &mut self.0 {
            *b = std::hint::black_box(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_raw_hex_and_refuses_other_lengths() {
        let raw = EncryptionKey::parse("0123456789abcdeF0123456789abcdeF\n").unwrap();
        assert_eq!(raw.as_bytes(), b"0123456789abcdeF0123456789abcdeF");
        let hex = EncryptionKey::parse(&"ab".repeat(32)).unwrap();
        assert_eq!(hex.as_bytes(), &[0xab; 32]);
        assert!(EncryptionKey::parse(&"zz".repeat(32)).is_err());
        let e = EncryptionKey::parse("abc").unwrap_err();
        assert!(e.to_string().contains("is 32 bytes, this one is 3"), "{e}");
        assert!(EncryptionKey::from_bytes(&[1; 31]).is_err());
    }
}
