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
    /// Delete the group as libtiledb's delete_group: its details, metadata and group file,
    /// then its folders (the folder itself when left empty); with --recursive its members
    /// first (arrays as `delete-array`, groups recursively).
    Delete {
        /// The group's folder.
        group: PathBuf,
        /// Delete the members too, depth first.
        #[arg(long)]
        recursive: bool,
    },
    /// Consolidate the group's metadata files into one (libtiledb's
    /// Group.consolidate_metadata).
    ConsolidateMetadata {
        /// The group's folder.
        group: PathBuf,
    },
    /// Remove the group metadata files a consolidation made obsolete (libtiledb's
    /// Group.vacuum_metadata).
    VacuumMetadata {
        /// The group's folder.
        group: PathBuf,
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
        GroupAction::Delete { group, recursive } => {
            let location = Location::of(&group)?;
            delete(&location, recursive)?;
        }
        GroupAction::ConsolidateMetadata { group } => {
            let location = Location::of(&group)?;
            let uri = group_uri(&location)?;
            let report = tessera::layers::query::consolidate_group_metadata(
                location.storage().as_ref(),
                &uri,
                None,
            )
            .with_context(|| location.name())?;
            match &report.output {
                Some(out) => {
                    outln!("consolidated {} metadata files into {out}", report.inputs.len())?;
                }
                None => outln!("nothing to consolidate")?,
            }
        }
        GroupAction::VacuumMetadata { group } => {
            let location = Location::of(&group)?;
            let removed = tessera::layers::query::vacuum_group_metadata(
                location.storage().as_ref(),
                &group_uri(&location)?,
            )
            .with_context(|| location.name())?;
            outln!("vacuumed {} file(s)", removed.len())?;
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

/// The URI libtiledb knows the group at `location` by (`file://` for local folders).
fn group_uri(location: &Location) -> Result<String> {
    Ok(match location {
        Location::Local(p) => tessera::file_uri(&p.to_string_lossy())?,
        Location::Remote(_) => location.name(),
    })
}

/// Deletes the group at `location` (its members first when `recursive`), as libtiledb's
/// `Group::delete_group`. libtiledb fails on a member that is not there, after deleting the
/// members it met before it (in no set order): here every member is checked first, and
/// nothing is deleted then.
fn delete(location: &Location, recursive: bool) -> Result<()> {
    if recursive {
        let group = location.open_group(None)?;
        let mut members = Vec::with_capacity(group.members().len());
        for m in group.members() {
            let member = location.member(m).with_context(|| format!("member {}", m.uri))?;
            if member.object_type()? != m.object_type {
                bail!(
                    "{}: cannot delete the group recursively: its member {} is not there \
                     (nothing was deleted)",
                    location.name(),
                    m.uri
                );
            }
            members.push((member, m.object_type));
        }
        for (member, t) in members {
            match t {
                ObjectType::Array => member.delete_array()?,
                ObjectType::Group => delete(&member, true)?,
                _ => {}
            }
        }
    }
    tessera::layers::query::delete_group(location.storage().as_ref())
        .with_context(|| location.name())?;
    if let Location::Local(p) = location {
        // Only when empty: files that are not TileDB's stay, as libtiledb leaves them.
        let _ = std::fs::remove_dir(p);
    }
    Ok(())
}
