//! Fragment names, parsed the way libtiledb's `FragmentID` does
//! (`tiledb/sm/fragment/fragment_identifier.cc`), and generated for new fragments.
//!
//! Three shapes exist:
//!
//! | name version | shape | format version |
//! |---|---|---|
//! | 3 | `__<t1>_<t2>_<uuid>_<v>` | `v` |
//! | 2 | `__<t1>_<t2>_<uuid>` | assumed 4 |
//! | 1 | `__<uuid>_<t>` | assumed 2 (`t1 = t2 = t`) |
//!
//! Commit files (`.wrt`, `.del`, `.con`, ...) and consolidated fragment metadata files
//! (`.meta`) carry the same names plus an extension.

use std::fmt;

use tessera_types::FORMAT_VERSION;
use tessera_types::names::TimestampedName;

use crate::{Error, Result};

/// Length of the uuid (label) part of a fragment name.
pub const UUID_LEN: usize = 32;

/// Which of the three name shapes a fragment name has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NameVersion {
    /// `__<uuid>_<t>` (format version 2 and older).
    One,
    /// `__<t1>_<t2>_<uuid>` (format versions 3 and 4).
    Two,
    /// `__<t1>_<t2>_<uuid>_<v>` (format version 5 and newer).
    Three,
}

/// A parsed fragment (or commit, or consolidated-metadata) name.
///
/// Names order by their text; libtiledb orders fragments by `t1` (ties unordered), which
/// callers get from [`FragmentName::t1`].
///
/// ```
/// use tessera_fragment::{FragmentName, NameVersion};
/// let n = FragmentName::parse(
///     "__fragments/__10_20_0123456789abcdef0123456789abcdef_22/",
/// )
/// .unwrap();
/// assert_eq!((n.t1(), n.t2(), n.format_version()), (10, 20, 22));
/// assert_eq!(n.name_version(), NameVersion::Three);
/// assert_eq!(n.to_string(), "__10_20_0123456789abcdef0123456789abcdef_22");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FragmentName {
    name: String,
    t1: u64,
    t2: u64,
    uuid_start: usize,
    name_version: NameVersion,
    format_version: u32,
}

impl FragmentName {
    /// Parses the last path component of `path` (a trailing `/` is ignored), without the
    /// extension after the last `.`, as libtiledb's `FragmentID` does.
    ///
    /// # Errors
    /// [`Error::Name`] when the name has none of the three shapes, a timestamp or version is
    /// not a decimal number, the uuid is not 32 hex digits, or `t1 > t2`.
    pub fn parse(path: &str) -> Result<Self> {
        let trimmed = path.trim_end_matches('/');
        let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
        if last.is_empty() {
            return Err(Error::name(path, "empty name"));
        }
        let name = match last.rfind('.') {
            Some(dot) => &last[..dot],
            None => last,
        };
        let bad = |why: &str| Error::name(path, why.to_owned());
        let last_us = name.rfind('_').ok_or_else(|| bad("no '_' in the name"))?;
        let tail = &name[last_us + 1..];
        let underscores = name.bytes().filter(|&b| b == b'_').count();
        let body = name.strip_prefix("__").ok_or_else(|| bad("does not start with \"__\""))?;
        let (t1, t2, uuid_start, name_version, format_version) = if underscores == 5 {
            // __t1_t2_uuid_v
            let parts: Vec<&str> = body.split('_').collect();
            let [t1, t2, uuid, v] = parts.as_slice() else {
                return Err(bad("expected __t1_t2_uuid_version"));
            };
            let version = decimal(v).ok_or_else(|| bad("version is not a decimal number"))?;
            let version = u32::try_from(version).map_err(|_| bad("version does not fit u32"))?;
            check_uuid(uuid).map_err(bad)?;
            let t1v = decimal(t1).ok_or_else(|| bad("t1 is not a decimal number"))?;
            let t2v = decimal(t2).ok_or_else(|| bad("t2 is not a decimal number"))?;
            (t1v, t2v, 2 + t1.len() + 1 + t2.len() + 1, NameVersion::Three, version)
        } else if tail.len() == UUID_LEN {
            // __t1_t2_uuid
            let parts: Vec<&str> = body.split('_').collect();
            let [t1, t2, uuid] = parts.as_slice() else {
                return Err(bad("expected __t1_t2_uuid"));
            };
            check_uuid(uuid).map_err(bad)?;
            let t1v = decimal(t1).ok_or_else(|| bad("t1 is not a decimal number"))?;
            let t2v = decimal(t2).ok_or_else(|| bad("t2 is not a decimal number"))?;
            (t1v, t2v, 2 + t1.len() + 1 + t2.len() + 1, NameVersion::Two, 4)
        } else {
            // __uuid_t (the timestamp is the text after the last '_')
            let uuid = body.get(..UUID_LEN).ok_or_else(|| bad("too short for __uuid_t"))?;
            check_uuid(uuid).map_err(bad)?;
            if body.as_bytes().get(UUID_LEN) != Some(&b'_') {
                return Err(bad("expected '_' after the uuid"));
            }
            let t = decimal(tail).ok_or_else(|| bad("timestamp is not a decimal number"))?;
            (t, t, 2, NameVersion::One, 2)
        };
        if t1 > t2 {
            return Err(bad("start timestamp is after end timestamp"));
        }
        Ok(FragmentName { name: name.to_owned(), t1, t2, uuid_start, name_version, format_version })
    }

    /// A new version-3 name `__<t1>_<t2>_<uuid>_22` with a fresh uuid, as libtiledb 2.30
    /// names new fragments (`t1 = t2` = the write timestamp) and consolidated fragments and
    /// commit files (`t1` of the first input, `t2` of the last).
    ///
    /// # Errors
    /// [`Error::Name`] when `t1 > t2`.
    pub fn generate(t1: u64, t2: u64) -> Result<Self> {
        Self::from_timestamped(&TimestampedName::generate(t1, t2, Some(FORMAT_VERSION)))
    }

    /// A version-3 name from its parts.
    ///
    /// # Errors
    /// [`Error::Name`] when `uuid` is not 32 hex digits or `t1 > t2`.
    pub fn new(t1: u64, t2: u64, uuid: &str, format_version: u32) -> Result<Self> {
        Self::parse(&format!("__{t1}_{t2}_{uuid}_{format_version}"))
    }

    /// The name of a [`TimestampedName`] with a version suffix.
    ///
    /// # Errors
    /// [`Error::Name`] when it has no version or does not parse as a fragment name.
    pub fn from_timestamped(t: &TimestampedName) -> Result<Self> {
        if t.version.is_none() {
            return Err(Error::name(&t.to_string(), "a fragment name needs a version suffix"));
        }
        Self::parse(&t.to_string())
    }

    /// The name as a [`TimestampedName`] (version-2 and version-3 names; version-1 names
    /// have no such form).
    pub fn to_timestamped(&self) -> Option<TimestampedName> {
        match self.name_version {
            NameVersion::One => None,
            NameVersion::Two => Some(TimestampedName {
                t1: self.t1,
                t2: self.t2,
                label: self.uuid().to_owned(),
                version: None,
            }),
            NameVersion::Three => Some(TimestampedName {
                t1: self.t1,
                t2: self.t2,
                label: self.uuid().to_owned(),
                version: Some(self.format_version),
            }),
        }
    }

    /// The name without path and extension (`__t1_t2_uuid_v`).
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// Start of the timestamp range (ms since the epoch).
    pub fn t1(&self) -> u64 {
        self.t1
    }

    /// End of the timestamp range (ms since the epoch).
    pub fn t2(&self) -> u64 {
        self.t2
    }

    /// `(t1, t2)`.
    pub fn timestamp_range(&self) -> (u64, u64) {
        (self.t1, self.t2)
    }

    /// The 32-character uuid (label).
    pub fn uuid(&self) -> &str {
        &self.name[self.uuid_start..self.uuid_start + UUID_LEN]
    }

    /// Which shape the name has.
    pub fn name_version(&self) -> NameVersion {
        self.name_version
    }

    /// The array format version the name implies (the suffix, or 4 / 2 for older shapes).
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// The name with an extension appended (`ext` without the dot), e.g. the commit file
    /// `__t1_t2_uuid_v.wrt`.
    pub fn with_extension(&self, ext: &str) -> String {
        format!("{}.{ext}", self.name)
    }
}

impl fmt::Display for FragmentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl std::str::FromStr for FragmentName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

/// A non-empty run of ASCII digits as a `u64`.
fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn check_uuid(s: &str) -> std::result::Result<(), &'static str> {
    if s.len() != UUID_LEN {
        return Err("uuid is not 32 characters");
    }
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("uuid is not hex digits");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "0123456789ABCDEF0123456789ABCDEF";

    #[test]
    fn libtiledb_valid_cases() {
        // tiledb/sm/fragment/test/unit_fragment_identifier.cc, "Valid uris"
        type Case<'a> = (&'a str, (u64, u64), NameVersion, u32, &'a str);
        let cases: [Case<'_>; 7] = [
            ("file:///__0123456789ABCDEF0123456789ABCDEF_1", (1, 1), NameVersion::One, 2, U),
            ("file:///__0123456789ABCDEF0123456789ABCDEF_1_2", (2, 2), NameVersion::One, 2, U),
            ("file:///__0123456789ABCDEF0123456789ABCDEF_2_1", (1, 1), NameVersion::One, 2, U),
            ("file:///__1_2_0123456789ABCDEF0123456789ABCDEF", (1, 2), NameVersion::Two, 4, U),
            ("file:///__1_2_0123456789ABCDEF0123456789ABCDEF_5", (1, 2), NameVersion::Three, 5, U),
            (
                "file:///__1_2_123456789ABCDEF0123456789ABCDEF0_21",
                (1, 2),
                NameVersion::Three,
                21,
                "123456789ABCDEF0123456789ABCDEF0",
            ),
            (
                "file:///__1_2_23456789ABCDEF0123456789ABCDEF01_22",
                (1, 2),
                NameVersion::Three,
                22,
                "23456789ABCDEF0123456789ABCDEF01",
            ),
        ];
        for (path, range, nv, v, uuid) in cases {
            let n = FragmentName::parse(path).unwrap();
            assert_eq!(n.timestamp_range(), range, "{path}");
            assert_eq!(n.name_version(), nv, "{path}");
            assert_eq!(n.format_version(), v, "{path}");
            assert_eq!(n.uuid(), uuid, "{path}");
            assert_eq!(n.as_str(), path.trim_start_matches("file:///"));
        }
    }

    #[test]
    fn libtiledb_invalid_cases() {
        for bad in [
            "",
            "_",
            "X",
            "__",
            "___",
            "____",
            "_____",
            "__1_2_0123456789ABCDEF0123456789ABCDEF_",
            "__1_2_5_0123456789ABCDEF0123456789ABCDEF",
            "__1_0123456789ABCDEF0123456789ABCDEF_2_5",
            "1_2_0123456789ABCDEF0123456789ABCDEF__5",
            "__2_1_0123456789abcdef0123456789abcdef_22",
            "__1_2_0123456789abcdef0123456789abcdeX_22",
            "__a_2_0123456789abcdef0123456789abcdef_22",
        ] {
            assert!(FragmentName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn extensions_paths_and_generation() {
        let n =
            FragmentName::parse("/a/b/__commits/__30_30_50c133ad0000000000000000000000aa_22.del")
                .unwrap();
        assert_eq!(n.as_str(), "__30_30_50c133ad0000000000000000000000aa_22");
        assert_eq!(n.with_extension("del"), "__30_30_50c133ad0000000000000000000000aa_22.del");
        let g = FragmentName::generate(5, 9).unwrap();
        assert_eq!((g.t1(), g.t2(), g.format_version()), (5, 9, 22));
        assert_eq!(FragmentName::parse(&g.to_string()).unwrap(), g);
        assert_eq!(g.to_timestamped().unwrap().to_string(), g.to_string());
        assert!(FragmentName::generate(9, 5).is_err());
        let n2 = FragmentName::new(1, 1, &"a".repeat(32), 22).unwrap();
        assert_eq!(n2.uuid(), "a".repeat(32));
    }
}
