//! Timestamped names `__<t1>_<t2>_<label>[_<version>]` of schema files, fragments, commits
//! and metadata files, generated and parsed as libtiledb 2.30 does.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Error, Result};

/// Milliseconds since the Unix epoch, as libtiledb timestamps its files.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The per-millisecond counter state of the label generator.
static LABEL_STATE: Mutex<(u64, u32)> = Mutex::new((u64::MAX, 0));

/// A fresh 32-hex-digit label: 8 digits of a per-millisecond counter (a random start with
/// the top bit clear for each new millisecond, then +1 per label in the same millisecond, so
/// labels made in one millisecond sort in creation order), then 24 random digits.
pub fn random_label() -> String {
    let random = uuid::Uuid::new_v4().as_u128();
    let now = now_ms();
    let counter = {
        let mut state = LABEL_STATE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.0 == now {
            state.1 = state.1.wrapping_add(1);
        } else {
            *state = (now, (random >> 96) as u32 & 0x7fff_ffff);
        }
        state.1
    };
    format!("{counter:08x}{:024x}", random & ((1u128 << 96) - 1))
}

/// A parsed `__t1_t2_label[_version]` name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimestampedName {
    /// Start of the timestamp range (ms).
    pub t1: u64,
    /// End of the timestamp range (ms).
    pub t2: u64,
    /// The 32-hex-digit label.
    pub label: String,
    /// Format version suffix (fragments and commits), if any.
    pub version: Option<u32>,
}

impl TimestampedName {
    /// A new name for `[t1, t2]` with a fresh label.
    pub fn generate(t1: u64, t2: u64, version: Option<u32>) -> Self {
        TimestampedName { t1, t2, label: random_label(), version }
    }

    /// Parses a file or folder name, ignoring any extension (`.wrt`, `.meta`, ...).
    ///
    /// # Errors
    /// [`Error::Invalid`] when the name does not have the `__t1_t2_label[_v]` shape.
    pub fn parse(name: &str) -> Result<Self> {
        let bad =
            |why: &str| Error::invalid("timestamped name", "name", 0, format!("{name:?}: {why}"));
        let stem = name.rsplit('/').next().unwrap_or(name);
        let stem = match stem.find('.') {
            Some(dot) => &stem[..dot],
            None => stem,
        };
        let body = stem.strip_prefix("__").ok_or_else(|| bad("does not start with \"__\""))?;
        let parts: Vec<&str> = body.split('_').collect();
        let (t1, t2, label, version) = match parts.as_slice() {
            [t1, t2, label] => (t1, t2, label, None),
            [t1, t2, label, v] => {
                (t1, t2, label, Some(v.parse::<u32>().map_err(|_| bad("version is not a number"))?))
            }
            _ => return Err(bad("expected __t1_t2_label[_version]")),
        };
        let t1 = t1.parse::<u64>().map_err(|_| bad("t1 is not a number"))?;
        let t2 = t2.parse::<u64>().map_err(|_| bad("t2 is not a number"))?;
        if label.len() != 32 || !label.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("label is not 32 hex digits"));
        }
        Ok(TimestampedName { t1, t2, label: (*label).to_owned(), version })
    }
}

impl std::fmt::Display for TimestampedName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "__{}_{}_{}", self.t1, self.t2, self.label)?;
        if let Some(v) = self.version {
            write!(f, "_{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_and_parse() {
        let a = TimestampedName::generate(5, 7, Some(22));
        let b = TimestampedName::generate(5, 7, Some(22));
        assert_ne!(a.label, b.label);
        let text = a.to_string();
        assert!(text.starts_with("__5_7_") && text.ends_with("_22"));
        assert_eq!(TimestampedName::parse(&text).unwrap(), a);
        assert_eq!(TimestampedName::parse(&format!("__commits/{text}.wrt")).unwrap(), a);
        let schema = "__1795234485325_1795234485325_153024faa07f916c52cb81755ebee69a";
        let s = TimestampedName::parse(schema).unwrap();
        assert_eq!((s.t1, s.version), (1_795_234_485_325, None));
        assert_eq!(s.to_string(), schema);
        for bad in ["", "__1_2", "x_1_2_abc", "__a_2_153024faa07f916c52cb81755ebee69a", "__1_2_xyz"]
        {
            assert!(TimestampedName::parse(bad).is_err(), "{bad}");
        }
    }
}
