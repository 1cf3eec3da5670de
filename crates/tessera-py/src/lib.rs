//! `tessera._tessera`: the engine calls behind the Python package `tessera`.
//!
//! This crate holds only what must be native: opening arrays and groups on any storage,
//! reads and writes with the GIL released, and the hand-over of result buffers to numpy
//! without copies. The tiledb-py-compatible API (indexing rules, schema classes, condition
//! syntax, pandas glue) is plain Python in `python/tessera/`.
//!
//! Values cross the boundary in three forms only: schemas and fragment lists as the CLI's
//! JSON (docs/cli.md), cell data as numpy arrays of bytes, offsets and validity (viewed with
//! the right dtype in Python), and scalars as Python numbers, strings and bytes.

use pyo3::prelude::*;

mod array;
mod arrow_stream;
mod convert;
mod errors;
mod group;
mod lifecycle;
mod location;
mod metadata;
mod runtime;

/// The module `tessera._tessera`.
#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TileDBError", py.get_type::<errors::TileDBError>())?;
    m.add("NotSupportedError", py.get_type::<errors::NotSupportedError>())?;
    m.add("__engine_version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<array::NativeArray>()?;
    m.add_class::<array::NativeBatches>()?;
    m.add_function(wrap_pyfunction!(array::create_array, m)?)?;
    m.add_function(wrap_pyfunction!(array::consolidate, m)?)?;
    m.add_function(wrap_pyfunction!(array::vacuum, m)?)?;
    m.add_function(wrap_pyfunction!(array::object_type, m)?)?;
    m.add_function(wrap_pyfunction!(array::pack_var, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle::evolve, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle::delete_array, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle::delete_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle::consolidate_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle::upgrade_version, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle::delete_group, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::array_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(metadata::put_array_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(group::group_create, m)?)?;
    m.add_function(wrap_pyfunction!(group::group_members, m)?)?;
    m.add_function(wrap_pyfunction!(group::group_update, m)?)?;
    m.add_function(wrap_pyfunction!(group::group_metadata, m)?)?;
    Ok(())
}
