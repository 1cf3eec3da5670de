//! `tessera ls`: the TileDB groups and arrays under a path, as a tree (members, types, group
//! metadata), or as the JSON of shared/cli.md.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::Value as Json;
use tessera::{GroupMember, ObjectType};

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
    if !path.exists() {
        bail!("{text}: no such file or directory");
    }
    let roots: Vec<(PathBuf, String)> = match tessera::object_type(path)? {
        ObjectType::Invalid if path.is_dir() => {
            let mut found = Vec::new();
            find_objects(path, &mut found)?;
            found.into_iter().map(|p| (p.clone(), p.to_string_lossy().into_owned())).collect()
        }
        ObjectType::Invalid => bail!("{text}: not a TileDB array or group, nor a folder"),
        _ => vec![(path.to_path_buf(), text.clone())],
    };
    if roots.is_empty() && !json {
        println!("{text}: no TileDB arrays or groups");
    }
    for (root, uri) in roots {
        let node = object_node(Some(display_name(&root)), &root, uri, &mut Vec::new())?;
        if json {
            println!("{}", serde_json::to_string(&node)?);
        } else {
            let mut out = String::new();
            render(&node, "", "", &mut out);
            print!("{out}");
        }
    }
    Ok(())
}

/// The name of a top-level object: the last component of its path (of the absolute path for
/// `.` and the like).
fn display_name(path: &Path) -> String {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    name(path)
        .or_else(|| std::fs::canonicalize(path).ok().and_then(|p| name(&p)))
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}

/// The arrays and groups under the plain folder `dir`, in name order, searching plain
/// subfolders (not following symbolic links into them) but not the objects' own folders.
fn find_objects(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if tessera::object_type(&path)? != ObjectType::Invalid {
            found.push(path);
        } else if !entry.file_type()?.is_symlink() {
            find_objects(&path, found)?;
        }
    }
    Ok(())
}

/// The node of the object in the folder `path`, shown as `uri`; a group with its metadata and
/// members. `branch` holds the canonical folders of the groups being listed above it.
fn object_node(
    name: Option<String>,
    path: &Path,
    uri: String,
    branch: &mut Vec<PathBuf>,
) -> Result<Node> {
    match tessera::object_type(path)? {
        ObjectType::Group => Ok(group_node(name, path, uri, branch)),
        kind => Ok(Node::leaf(name, kind, uri)),
    }
}

/// The node of the group in the folder `path`; errors opening it (or its members) become the
/// node's `error`.
fn group_node(name: Option<String>, path: &Path, uri: String, branch: &mut Vec<PathBuf>) -> Node {
    let mut node = Node::leaf(name, ObjectType::Group, uri);
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if branch.contains(&canonical) {
        return node;
    }
    let group = match tessera::open_group(path) {
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
    branch.push(canonical);
    let members = group.members().iter().map(|m| member_node(m, path, &node.uri, branch)).collect();
    branch.pop();
    node.members = Some(members);
    node
}

/// The node of one member of the group in the folder `group` shown as `group_uri`.
fn member_node(m: &GroupMember, group: &Path, group_uri: &str, branch: &mut Vec<PathBuf>) -> Node {
    let uri = m.resolved_uri(group_uri);
    if m.object_type != ObjectType::Group {
        return Node::leaf(m.name.clone(), m.object_type, uri);
    }
    match tessera::member_path(group, m) {
        Ok(path) => group_node(m.name.clone(), &path, uri, branch),
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
