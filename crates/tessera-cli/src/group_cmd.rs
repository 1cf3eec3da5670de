//! `tessera group`: create a group, add and remove members, as libtiledb's `tiledb.Group`
//! stores them (group metadata is `tessera meta GROUP ...`).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use tessera::ObjectType;

use crate::location::Location;

/// What `tessera group` does.
#[derive(Debug, Subcommand)]
pub(crate) enum GroupAction {
    /// Create an empty group (the folder, `__tiledb_group.tdb`, `__meta/`, `__group/`).
    Create {
        /// The folder to create the group in.
        group: PathBuf,
    },
    /// Add an array or group as a member (one write session: a new `__group/` file).
    Add {
        /// The group's folder.
        group: PathBuf,
        /// The member: with `--relative`, a path relative to the group's folder, stored as
        /// given; otherwise a path (or URI), stored as its absolute `file://` URI.
        member: String,
        /// The member's name (default: none; it is then known by its URI).
        #[arg(long)]
        name: Option<String>,
        /// Store the member's path relative to the group's folder.
        #[arg(long)]
        relative: bool,
        /// The member's type, `array` or `group` (default: what its folder holds).
        #[arg(long = "type", value_name = "TYPE")]
        object_type: Option<String>,
        /// Timestamp of the write (ms since the epoch; default now).
        #[arg(long)]
        timestamp: Option<u64>,
    },
    /// Remove a member, by name or by URI (as stored, or the local path of an absolute one).
    Remove {
        /// The group's folder.
        group: PathBuf,
        /// The member's name, or its URI.
        member: String,
        /// Timestamp of the write (ms since the epoch; default now).
        #[arg(long)]
        timestamp: Option<u64>,
    },
}

/// Runs `tessera group`.
pub(crate) fn run(action: GroupAction) -> Result<()> {
    match action {
        GroupAction::Create { group } => Location::of(&group)?.create_group()?,
        GroupAction::Add { group, member, name, relative, object_type, timestamp } => {
            let location = Location::of(&group)?;
            let context = || location.name();
            let object_type = match object_type.as_deref() {
                None => None,
                Some("array") => Some(ObjectType::Array),
                Some("group") => Some(ObjectType::Group),
                Some(other) => bail!("--type {other:?}: expected array or group"),
            };
            let entry = location
                .member_for(&member, relative, name.as_deref(), object_type)
                .with_context(|| format!("member {member}"))?;
            let mut writer = location.group_writer(timestamp)?;
            writer.add_member(entry).with_context(context)?;
            writer.commit().with_context(context)?;
        }
        GroupAction::Remove { group, member, timestamp } => {
            let location = Location::of(&group)?;
            let context = || location.name();
            let mut writer = location.group_writer(timestamp)?;
            let key = tessera::member_key(&writer, &member).with_context(context)?;
            writer.remove_member(&key).with_context(context)?;
            writer.commit().with_context(context)?;
        }
    }
    Ok(())
}
