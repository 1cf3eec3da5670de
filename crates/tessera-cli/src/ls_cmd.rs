//! `tessera ls`: the TileDB groups and arrays under a path, as a tree (members, types, group
//! metadata), or as the JSON of `docs/cli.md` ("ls JSON").

use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::Value as Json;
use tessera::{GroupMember, ObjectType};

use crate::location::Location;
use crate::meta_cmd;

/// One group or array as `tessera ls --json` prints it: `name`, `type`, `uri`, and for a
/// group its `metadata` and `members` (nested). `error` (not in the contract) appears only
/// when a member group cannot be opened; a group already being listed higher up the same
/// branch (a cycle) is printed without `metadata` and `members`.
#[derive(Debug, Serialize)]
struct Node {
    name: Option<String>,
    #[serde(rename = "type")]
    kind: &'static str,
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    members: Option<Vec<Node>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The metadata as text lines, for the tree.
    #[serde(skip)]
    metadata_lines: Vec<String>,
}

impl Node {
    fn leaf(name: Option<String>, kind: ObjectType, uri: String) -> Node {
        Node {
            name,
            kind: kind.name(),
            uri,
            metadata: None,
            members: None,
            error: None,
            metadata_lines: Vec::new(),
        }
    }
}

/// Runs `tessera ls PATH [--json]`.
pub(crate) fn run(path: &Path, json: bool) -> Result<()> {
    let text = path.to_string_lossy().into_owned();
    let location = Location::of(path)?;
    if !location.exists()? {
        bail!("{text}: no such file or directory");
    }
    let roots: Vec<(Location, String)> = match location.object_type()? {
        ObjectType::Invalid if location.is_dir()? => {
            let mut found = Vec::new();
            find_objects(&location, &mut found)?;
            found.into_iter().map(|l| (l.clone(), l.name())).collect()
        }
        ObjectType::Invalid => bail!("{text}: not a TileDB array or group, nor a folder"),
        _ => vec![(location, text.clone())],
    };
    if roots.is_empty() && !json {
        outln!("{text}: no TileDB arrays or groups")?;
    }
    for (root, uri) in roots {
        let node = object_node(Some(root.display_name()), &root, uri, &mut Vec::new())?;
        if json {
            outln!("{}", serde_json::to_string(&node)?)?;
        } else {
            let mut out = String::new();
            render(&node, "", "", &mut out);
            out!("{out}")?;
        }
    }
    Ok(())
}

/// The arrays and groups under the plain folder `dir`, in name order, searching plain
/// subfolders (not following symbolic links into them) but not the objects' own folders.
fn find_objects(dir: &Location, found: &mut Vec<Location>) -> Result<()> {
    for sub in dir.subfolders()? {
        if sub.object_type()? != ObjectType::Invalid {
            found.push(sub);
        } else if !sub.is_symlink() {
            find_objects(&sub, found)?;
        }
    }
    Ok(())
}

/// The node of the object at `location`, shown as `uri`; a group with its metadata and
/// members. `branch` holds the identities of the groups being listed above it.
fn object_node(
    name: Option<String>,
    location: &Location,
    uri: String,
    branch: &mut Vec<String>,
) -> Result<Node> {
    match location.object_type()? {
        ObjectType::Group => Ok(group_node(name, location, uri, branch)),
        kind => Ok(Node::leaf(name, kind, uri)),
    }
}

/// The node of the group at `location`; errors opening it (or its members) become the
/// node's `error`.
fn group_node(
    name: Option<String>,
    location: &Location,
    uri: String,
    branch: &mut Vec<String>,
) -> Node {
    let mut node = Node::leaf(name, ObjectType::Group, uri);
    let identity = location.identity();
    if branch.contains(&identity) {
        return node;
    }
    let group = match tessera::Group::open(location.storage()) {
        Ok(g) => g,
        Err(e) => {
            node.error = Some(e.to_string());
            return node;
        }
    };
    match group.metadata() {
        Ok(md) => {
            node.metadata_lines = md
                .iter()
                .map(|(k, v)| format!("{}: {}", String::from_utf8_lossy(k), meta_cmd::human(v)))
                .collect();
            node.metadata = Some(md.to_json());
        }
        Err(e) => node.error = Some(e.to_string()),
    }
    branch.push(identity);
    let members =
        group.members().iter().map(|m| member_node(m, location, &node.uri, branch)).collect();
    branch.pop();
    node.members = Some(members);
    node
}

/// The node of one member of the group at `group` shown as `group_uri`.
fn member_node(
    m: &GroupMember,
    group: &Location,
    group_uri: &str,
    branch: &mut Vec<String>,
) -> Node {
    let uri = m.resolved_uri(group_uri);
    if m.object_type != ObjectType::Group {
        return Node::leaf(m.name.clone(), m.object_type, uri);
    }
    match group.member(m) {
        Ok(location) => group_node(m.name.clone(), &location, uri, branch),
        Err(e) => {
            Node { error: Some(e.to_string()), ..Node::leaf(m.name.clone(), m.object_type, uri) }
        }
    }
}

/// Appends the tree of `node`: its line after `head`, then its metadata and members, each
/// line after `body`.
fn render(node: &Node, head: &str, body: &str, out: &mut String) {
    let name = node.name.as_deref().unwrap_or("(unnamed)");
    out.push_str(&format!("{head}{name}  {}  {}\n", node.kind, node.uri));
    let members = node.members.as_deref().unwrap_or_default();
    let bar = if members.is_empty() { "  " } else { "│ " };
    for line in &node.metadata_lines {
        out.push_str(&format!("{body}{bar} · {line}\n"));
    }
    if let Some(e) = &node.error {
        out.push_str(&format!("{body}{bar} (error: {e})\n"));
    }
    for (i, m) in members.iter().enumerate() {
        let last = i + 1 == members.len();
        let (h, b) = if last { ("└── ", "    ") } else { ("├── ", "│   ") };
        render(m, &format!("{body}{h}"), &format!("{body}{b}"), out);
    }
}
