//! The group details file codec: the payload of one `__group/__t1_t2_label_2` file (a generic
//! tile), as libtiledb 2.30 writes and reads it (`tiledb/sm/group/group_details_v2.cc`,
//! `group_member_v2.cc`; v1: `group_details_v1.cc`, `group_member_v1.cc`). All integers are
//! little-endian.
//!
//! ```text
//! details   u32 version (2; 1 for groups written before TileDB 2.15)
//!           u64 member_count
//!           member_count × member
//! member    u32 member version (2; 1 in v1 details)
//!           u8  object type (0 invalid, 1 group, 2 array)
//!           u8  relative (1: uri is relative to the group's folder)
//!           u64 uri_len, uri_len bytes of uri (a relative path, or an absolute URI such as
//!               `file:///data/x`, as stored)
//!           u8  name_set, then when 1: u64 name_len, name_len bytes of name
//!           u8  deleted (member version 2 only: 1 removes the member with this key)
//! ```
//!
//! A member's key is its name, or its URI when it has none; a group has at most one member per
//! key. libtiledb writes the members of a file in the iteration order of its hash map, which
//! carries no meaning; readers apply entries by key.

use tessera_types::ByteReader;

/// The structure name errors carry.
const STRUCTURE: &str = "group details";

/// The empty marker file every group has (and, alone, groups older than TileDB 2.15).
pub const GROUP_FILE: &str = "__tiledb_group.tdb";
/// The folder of the group details files.
pub const DETAILS_DIR: &str = "__group";

/// The details and member format version libtiledb 2.30 writes.
pub const DETAILS_VERSION: u32 = 2;

/// The fewest bytes a member can take (a v1 member without a name and with an empty URI), to
/// check a member count against the bytes left before allocating.
const MIN_MEMBER_LEN: usize = 4 + 1 + 1 + 8 + 1;

/// The codec errors of this module: structure, field and byte offset in the payload.
type CodecResult<T> = tessera_types::Result<T>;

/// What a location holds, with libtiledb's ids (`tiledb_object_t`): the type stored for each
/// group member and what the engine's object probe finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectType {
    /// No TileDB object (id 0). libtiledb stores this type for a member added without a type
    /// whose location held nothing at the time.
    Invalid,
    /// A group (id 1).
    Group,
    /// An array (id 2).
    Array,
}

impl ObjectType {
    /// The id libtiledb stores (`tiledb_object_t`).
    pub fn id(self) -> u8 {
        match self {
            ObjectType::Invalid => 0,
            ObjectType::Group => 1,
            ObjectType::Array => 2,
        }
    }

    /// The type of a stored id; `None` for ids libtiledb 2.30 does not define (3 was the
    /// removed key-value store).
    pub fn from_id(id: u8) -> Option<ObjectType> {
        match id {
            0 => Some(ObjectType::Invalid),
            1 => Some(ObjectType::Group),
            2 => Some(ObjectType::Array),
            _ => None,
        }
    }

    /// The lowercase name `tessera ls --json` prints: `"invalid"`, `"group"`, `"array"`.
    pub fn name(self) -> &'static str {
        match self {
            ObjectType::Invalid => "invalid",
            ObjectType::Group => "group",
            ObjectType::Array => "array",
        }
    }
}

impl std::fmt::Display for ObjectType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One member entry of a details file: a member of the group, or (with `deleted`) the removal
/// of the member with the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupMember {
    /// The URI as stored: a path relative to the group's folder when `relative`, otherwise an
    /// absolute URI (`file:///…`, `s3://…`).
    pub uri: String,
    /// What the member is, as recorded when it was added (not checked on read).
    pub object_type: ObjectType,
    /// Whether `uri` is relative to the group's folder.
    pub relative: bool,
    /// The member's name, if it was given one.
    pub name: Option<String>,
    /// Whether this entry removes the member with its key (member version 2 only).
    pub deleted: bool,
}

impl GroupMember {
    /// A member to add.
    pub fn new(
        uri: impl Into<String>,
        object_type: ObjectType,
        relative: bool,
        name: Option<String>,
    ) -> Self {
        GroupMember { uri: uri.into(), object_type, relative, name, deleted: false }
    }

    /// The key that identifies the member in its group, as libtiledb's `GroupMember::key`: its
    /// name, or its URI when it has none.
    pub fn key(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.uri)
    }

    /// The member's location for a group at `group_uri` (a path or URI, as the caller spells
    /// it): `group_uri/uri` for a relative member (joined as libtiledb joins, without
    /// normalising `..`), the stored URI otherwise.
    pub fn resolved_uri(&self, group_uri: &str) -> String {
        if self.relative {
            let base = group_uri.trim_end_matches('/');
            let rel = self.uri.trim_start_matches('/');
            if base.is_empty() { rel.to_owned() } else { format!("{base}/{rel}") }
        } else {
            self.uri.clone()
        }
    }
}

/// The decoded payload of one details file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDetails {
    /// The details format version (1 or 2).
    pub version: u32,
    /// The member entries in file order.
    pub members: Vec<GroupMember>,
}

impl GroupDetails {
    /// Decodes a details payload (the generic tile's content). Bytes after the last member are
    /// ignored, as libtiledb ignores them.
    ///
    /// # Errors
    /// [`tessera_types::Error::Truncated`] when a field runs past the end, and
    /// [`tessera_types::Error::Invalid`] for a version other than 1 or 2, a member count
    /// larger than the bytes left can hold, an unknown object type, or a URI or name that is
    /// not UTF-8; each names the field and its byte offset in the payload.
    pub fn parse(payload: &[u8]) -> CodecResult<GroupDetails> {
        let mut r = ByteReader::new(payload, STRUCTURE);
        let version = r.u32("version")?;
        if !(1..=2).contains(&version) {
            return Err(tessera_types::Error::invalid(
                STRUCTURE,
                "version",
                0,
                format!("unsupported group details version {version} (TileDB writes 1 and 2)"),
            ));
        }
        let at = r.position() as u64;
        let count = r.u64("member_count")?;
        if count > (r.remaining() / MIN_MEMBER_LEN) as u64 {
            return Err(invalid_at(
                at,
                "member_count",
                format!("{count} members cannot fit in the {} bytes left", r.remaining()),
            ));
        }
        let mut members = Vec::with_capacity(count as usize);
        for _ in 0..count {
            members.push(parse_member(&mut r)?);
        }
        Ok(GroupDetails { version, members })
    }

    /// Encodes version 2 details holding `members` in the given order, as libtiledb's
    /// `GroupDetailsV2::serialize` lays them out (every member as version 2).
    pub fn to_payload(members: &[GroupMember]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&DETAILS_VERSION.to_le_bytes());
        out.extend_from_slice(&(members.len() as u64).to_le_bytes());
        for m in members {
            out.extend_from_slice(&DETAILS_VERSION.to_le_bytes());
            out.push(m.object_type.id());
            out.push(u8::from(m.relative));
            out.extend_from_slice(&(m.uri.len() as u64).to_le_bytes());
            out.extend_from_slice(m.uri.as_bytes());
            match &m.name {
                Some(name) => {
                    out.push(1);
                    out.extend_from_slice(&(name.len() as u64).to_le_bytes());
                    out.extend_from_slice(name.as_bytes());
                }
                None => out.push(0),
            }
            out.push(u8::from(m.deleted));
        }
        out
    }
}

/// Reads one member (either member version).
fn parse_member(r: &mut ByteReader<'_>) -> CodecResult<GroupMember> {
    let at = r.position() as u64;
    let version = r.u32("member version")?;
    if !(1..=2).contains(&version) {
        return Err(invalid_at(
            at,
            "member version",
            format!("unsupported group member version {version}"),
        ));
    }
    let at = r.position() as u64;
    let id = r.u8("object type")?;
    let object_type = ObjectType::from_id(id)
        .ok_or_else(|| invalid_at(at, "object type", format!("unknown object type {id}")))?;
    let relative = r.u8("relative")? != 0;
    let uri = string(r, "uri_len", "uri")?;
    let name = if r.u8("name_set")? != 0 { Some(string(r, "name_len", "name")?) } else { None };
    let deleted = if version >= 2 { r.u8("deleted")? != 0 } else { false };
    Ok(GroupMember { uri, object_type, relative, name, deleted })
}

/// Reads a `u64` length and that many bytes of UTF-8 text.
fn string(
    r: &mut ByteReader<'_>,
    len_field: &'static str,
    field: &'static str,
) -> CodecResult<String> {
    let len = r.u64(len_field)?;
    let at = r.position() as u64;
    let bytes = r.bytes_u64(len, field)?;
    String::from_utf8(bytes.to_vec()).map_err(|e| invalid_at(at, field, format!("not UTF-8: {e}")))
}

/// An [`tessera_types::Error::Invalid`] for `field` at `offset` in the payload.
fn invalid_at(offset: u64, field: &'static str, reason: impl Into<String>) -> tessera_types::Error {
    tessera_types::Error::invalid(STRUCTURE, field, offset, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload libtiledb 2.30 wrote (`tiledb.Group`, then decompressed) for a group with
    /// an absolute member `file:///tmp/gx/other` named `abs` removed in this session, a
    /// relative group `sub` without a name and a relative array `arr` named `arr`.
    const LIBTILEDB: &str = "02000000 0300000000000000 \
        02000000 02 01 0300000000000000 617272 01 0300000000000000 617272 00 \
        02000000 01 01 0300000000000000 737562 00 00 \
        02000000 02 00 1400000000000000 66696c653a2f2f2f746d702f67782f6f74686572 \
        01 0300000000000000 616273 01";

    fn hex(text: &str) -> Vec<u8> {
        let digits: String = text.split_whitespace().collect();
        (0..digits.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn decodes_and_reencodes_libtiledbs_bytes() {
        let bytes = hex(LIBTILEDB);
        let d = GroupDetails::parse(&bytes).unwrap();
        assert_eq!(d.version, 2);
        assert_eq!(
            d.members,
            [
                GroupMember::new("arr", ObjectType::Array, true, Some("arr".into())),
                GroupMember::new("sub", ObjectType::Group, true, None),
                GroupMember {
                    deleted: true,
                    ..GroupMember::new(
                        "file:///tmp/gx/other",
                        ObjectType::Array,
                        false,
                        Some("abs".into())
                    )
                },
            ]
        );
        assert_eq!(d.members[1].key(), "sub");
        assert_eq!(d.members[2].key(), "abs");
        assert_eq!(GroupDetails::to_payload(&d.members), bytes);
    }

    #[test]
    fn resolves_relative_members() {
        let m = GroupMember::new("obs", ObjectType::Array, true, None);
        assert_eq!(m.resolved_uri("data/pbmc/"), "data/pbmc/obs");
        assert_eq!(m.resolved_uri(""), "obs");
        let m = GroupMember::new("file:///x/y", ObjectType::Array, false, None);
        assert_eq!(m.resolved_uri("data/pbmc"), "file:///x/y");
    }

    #[test]
    fn version_1_members_have_no_deleted_flag() {
        let bytes = hex(
            "01000000 0100000000000000 01000000 02 01 0100000000000000 61 01 0100000000000000 62",
        );
        let d = GroupDetails::parse(&bytes).unwrap();
        assert_eq!(d.version, 1);
        assert_eq!(d.members, [GroupMember::new("a", ObjectType::Array, true, Some("b".into()))]);
    }

    #[test]
    fn errors_name_field_and_offset() {
        let bytes = hex(LIBTILEDB);
        let err = |b: &[u8]| GroupDetails::parse(b).unwrap_err().to_string();
        assert_eq!(
            err(&bytes[..20]),
            "group details: invalid member_count at offset 4: 3 members cannot fit in the 8 \
             bytes left"
        );
        let mut one = bytes.clone();
        one[4] = 1;
        assert_eq!(
            err(&one[..30]),
            "group details: truncated at name_len (offset 30: need 8 bytes, 0 left)"
        );
        let mut bad = bytes.clone();
        bad[16] = 7;
        assert_eq!(
            err(&bad),
            "group details: invalid object type at offset 16: unknown object type 7"
        );
        let mut bad = bytes.clone();
        bad[0] = 3;
        assert!(err(&bad).contains("invalid version at offset 0"), "{}", err(&bad));
        let mut bad = bytes.clone();
        bad[4] = 0xff;
        assert!(err(&bad).contains("invalid member_count at offset 4"), "{}", err(&bad));
        let mut bad = bytes;
        bad[26] = 0xff;
        assert!(err(&bad).contains("invalid uri at offset 26: not UTF-8"), "{}", err(&bad));
    }

    #[test]
    fn ids() {
        for t in [ObjectType::Invalid, ObjectType::Group, ObjectType::Array] {
            assert_eq!(ObjectType::from_id(t.id()), Some(t));
        }
        assert_eq!(ObjectType::from_id(3), None);
        assert_eq!(ObjectType::Group.to_string(), "group");
    }
}
