//! Groups: create, list members at a timestamp range, and one write session of member
//! additions, removals and metadata changes (as tiledb-py's `Group` opened for writing
//! collects them until it is closed).

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use tessera::layers::query::object_type as stored_object_type;
use tessera::layers::types::names::now_ms;
use tessera::{Group, GroupMember, GroupWriter, ObjectType};
use tessera_object_store::is_object_store_uri;

use crate::errors::{chain, tiledb_error};
use crate::location;
use crate::metadata::session;
use crate::runtime::run;

/// Creates an empty group at `uri`.
#[pyfunction]
pub(crate) fn group_create(py: Python<'_>, uri: String) -> PyResult<()> {
    let storage = location::storage(&uri)?;
    run(py, move || {
        Group::create(storage.as_ref()).map_err(|e| tiledb_error(format!("{uri}: {}", chain(&e))))
    })
}

/// The members of the group at `uri` visible in `[start, end]`: a list of `(name or None,
/// uri as stored, resolved uri, type name, relative)`.
#[pyfunction]
#[pyo3(signature = (uri, start=None, end=None))]
pub(crate) fn group_members<'py>(
    py: Python<'py>,
    uri: String,
    start: Option<u64>,
    end: Option<u64>,
) -> PyResult<Bound<'py, PyList>> {
    let storage = location::storage(&uri)?;
    let name = uri.clone();
    let group = run(py, move || {
        match (start, end) {
            (None, None) => Group::open(storage),
            (None, Some(e)) => Group::open_at(storage, e),
            (Some(s), e) => Group::open_between(storage, s, e.unwrap_or(u64::MAX)),
        }
        .map_err(|e| tiledb_error(format!("{name}: {}", chain(&e))))
    })?;
    let base = uri.trim_end_matches('/');
    let out = PyList::empty(py);
    for m in group.members() {
        out.append(PyTuple::new(
            py,
            [
                m.name.clone().into_pyobject(py)?.into_any(),
                m.uri.clone().into_pyobject(py)?.into_any(),
                m.resolved_uri(base).into_pyobject(py)?.into_any(),
                m.object_type.name().into_pyobject(py)?.into_any(),
                pyo3::types::PyBool::new(py, m.relative).to_owned().into_any(),
            ],
        )?)?;
    }
    Ok(out)
}

/// The type of the object at `uri`, from `given` (`"array"`/`"group"`) or by looking.
fn member_type(uri: &str, given: Option<&str>) -> PyResult<ObjectType> {
    match given {
        Some("array") => return Ok(ObjectType::Array),
        Some("group") => return Ok(ObjectType::Group),
        Some(other) => return Err(tiledb_error(format!("unknown member type {other:?}"))),
        None => {}
    }
    let storage = location::storage(uri)?;
    match stored_object_type(storage.as_ref()) {
        Ok(ObjectType::Invalid) => {
            Err(tiledb_error(format!("{uri}: no TileDB array or group there to add as a member")))
        }
        Ok(t) => Ok(t),
        Err(e) => Err(tiledb_error(format!("{uri}: {}", chain(&e)))),
    }
}

/// One write session on the group at `uri`: `adds` of `(member uri, name or None, relative,
/// type or None)`, `removes` of names or URIs, metadata `puts` and `deletes` (as
/// [`crate::metadata::put_array_metadata`]), at `timestamp` (ms; now when None).
#[pyfunction]
#[pyo3(signature = (uri, adds, removes, puts, deletes, timestamp=None))]
#[allow(clippy::type_complexity)]
pub(crate) fn group_update(
    py: Python<'_>,
    uri: String,
    adds: Vec<(String, Option<String>, bool, Option<String>)>,
    removes: Vec<String>,
    puts: Vec<(Vec<u8>, String, Vec<u8>)>,
    deletes: Vec<Vec<u8>>,
    timestamp: Option<u64>,
) -> PyResult<()> {
    // The session's entries are copied into the group writer's own, at its timestamp.
    let meta = session(timestamp.unwrap_or_else(now_ms), puts, deletes)?;
    let base = uri.trim_end_matches('/').to_owned();
    let mut members = Vec::with_capacity(adds.len());
    for (member, name, relative, kind) in adds {
        let (stored, location) = if relative {
            (member.clone(), format!("{base}/{member}"))
        } else if is_object_store_uri(&member) || member.contains("://") {
            (member.clone(), member.clone())
        } else {
            let path = location::local_path(&member)?;
            let stored = tessera::file_uri(&path.to_string_lossy())
                .map_err(|e| tiledb_error(format!("{member}: {}", chain(&e))))?;
            (stored, member.clone())
        };
        let object_type = member_type(&location, kind.as_deref())?;
        members.push(GroupMember::new(stored, object_type, relative, name));
    }
    let storage = location::storage(&uri)?;
    run(py, move || {
        let fail = |e: tessera::Error| tiledb_error(format!("{uri}: {}", chain(&e)));
        let mut writer = match timestamp {
            Some(t) => GroupWriter::open(storage, t),
            None => GroupWriter::open_now(storage),
        }
        .map_err(fail)?;
        for m in members {
            writer.add_member(m).map_err(fail)?;
        }
        for r in removes {
            let key = match writer.find_member(&r).map_err(fail)? {
                Some(_) => r,
                None if !r.contains("://") => {
                    let uri = tessera::file_uri(&r).map_err(fail)?;
                    if writer.find_member(&uri).map_err(fail)?.is_some() { uri } else { r }
                }
                None => r,
            };
            writer.remove_member(&key).map_err(fail)?;
        }
        for entry in meta.entries() {
            match entry.value {
                Some(v) => writer.metadata().put(entry.key, v),
                None => writer.metadata().delete(entry.key),
            }
            .map_err(|e| tiledb_error(format!("{uri}: metadata: {e}")))?;
        }
        writer.commit().map(|_| ()).map_err(fail)
    })
}

/// The metadata of a group is read as an array's: see [`crate::metadata::array_metadata`].
#[pyfunction]
#[pyo3(signature = (uri, start=0, end=u64::MAX))]
pub(crate) fn group_metadata<'py>(
    py: Python<'py>,
    uri: String,
    start: u64,
    end: u64,
) -> PyResult<Bound<'py, PyList>> {
    crate::metadata::array_metadata(py, uri, start, end, None)
}
