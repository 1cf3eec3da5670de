"""An xarray backend (``xr.open_dataset(uri, engine="tessera")``) and a writer
(:func:`to_tessera`, or ``ds.tessera.to_tessera(uri)``).

Two layouts open:

- **a dense array**: its dimensions become coordinates (the domain's integer values), its
  attributes data variables, its metadata the Dataset's attributes;
- **a group laid out as TileDB-CF lays out a Dataset**: one array per variable; a coordinate
  is the array named after its dimension whose attribute is that name with ``_`` appended;
  a variable's attributes are the array metadata ``__tiledb_attr.<attribute>.<key>``, a
  dimension's ``__tiledb_dim.<dimension>.<key>``; the group's metadata are the Dataset's.

Reads are lazy: indexing a variable reads only the tiles it needs, and
``encoding["preferred_chunks"]`` holds the tile extents, so ``chunks={}`` gives tile-aligned
dask chunks. :func:`to_tessera` writes the TileDB-CF layout, which libtiledb reads as any
group of arrays."""

from __future__ import annotations

import os
import threading

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._tessera import TileDBError
from .array import open as _open

__all__ = ["TesseraBackendEntrypoint", "to_tessera"]

ATTR_PREFIX = "__tiledb_attr."
DIM_PREFIX = "__tiledb_dim."


def _meta_for(meta: dict, prefix: str, name: str) -> dict:
    head = f"{prefix}{name}."
    return {k[len(head):]: _plain(v) for k, v in meta.items() if k.startswith(head)}


def _plain(v):
    if isinstance(v, tuple) and len(v) == 1:
        return v[0]
    return v


def _user_meta(meta: dict) -> dict:
    return {k: _plain(v) for k, v in meta.items() if not k.startswith("__")}


class TesseraBackendArray(BackendArray):
    """One attribute of a dense array, read lazily box by box."""

    def __init__(self, uri, attr, dtype, shape, origin, timestamp, lock):
        self.uri, self.attr = uri, attr
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.origin = tuple(origin)
        self.timestamp = timestamp
        self.lock = lock

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._raw)

    def _raw(self, key):
        box, squeeze = [], []
        for axis, (k, n, o) in enumerate(zip(key, self.shape, self.origin)):
            if isinstance(k, (int, np.integer)):
                k = int(k) + (n if k < 0 else 0)
                box.append((o + k, o + k))
                squeeze.append(axis)
            else:
                start, stop, step = k.indices(n)
                if stop <= start:
                    return np.empty(tuple(0 if i == axis else m for i, m in enumerate(self.shape) if i not in squeeze), self.dtype)
                box.append((o + start, o + stop - 1, step))
        sel = tuple(slice(b[0], b[1]) for b in box)
        with _open(self.uri, timestamp=self.timestamp) as A:
            out = A.query(attrs=[self.attr]).multi_index[sel][self.attr]
        out = np.asarray(out).reshape(tuple(b[1] - b[0] + 1 for b in box))
        steps = tuple(slice(None, None, b[2]) if len(b) == 3 else slice(None) for b in box)
        out = out[steps]
        if squeeze:
            out = out.reshape(tuple(s for i, s in enumerate(out.shape) if i not in squeeze))
        return out


def _array_variables(uri, timestamp, lock, drop=()):
    """``{name: Variable}`` of a dense array's attributes, plus its dimension names and
    domains, and its metadata."""
    with _open(uri, timestamp=timestamp) as A:
        schema = A.schema
        if schema.sparse:
            raise TileDBError(f"{uri}: the xarray backend opens dense arrays (sparse ones: tessera.dask.read_dataframe)")
        ts = tuple(A.timestamp_range)
        meta = dict(A.meta.items())
        dims = [d for d in schema.domain]
        for d in dims:
            if d.dtype.kind not in "iu":
                raise TileDBError(f"{uri}: dimension {d.name!r} is {d.dtype}: the xarray backend needs integer dimensions")
        origin = [int(d.domain[0]) for d in dims]
        shape = [int(d.domain[1]) - int(d.domain[0]) + 1 for d in dims]
        tiles = {d.name: int(d.tile) for d in dims}
        out = {}
        for a in schema:
            if a.name in drop or a.isvar or a.ncells != 1:
                continue
            data = indexing.LazilyIndexedArray(TesseraBackendArray(uri, a.name, a.dtype, shape, origin, ts, lock))
            attrs = _meta_for(meta, ATTR_PREFIX, a.name)
            var = xr.Variable([d.name for d in dims], data, attrs=attrs)
            var.encoding["preferred_chunks"] = dict(tiles)
            var.encoding["source"] = uri
            out[a.name] = var
    return out, dims, origin, shape, meta


class TesseraBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(uri, engine="tessera")``: a dense array, or a group of them laid
    out as TileDB-CF writes a Dataset."""

    description = "Open TileDB arrays and TileDB-CF groups with Tessera (no libtiledb needed)"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "timestamp")

    def guess_can_open(self, filename_or_obj):
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        from .highlevel import object_type

        try:
            return object_type(path) in ("array", "group")
        except Exception:
            return False

    def open_dataset(self, filename_or_obj, *, drop_variables=None, timestamp=None):
        from .highlevel import object_type

        uri = os.fspath(filename_or_obj)
        drop = set(drop_variables or ())
        lock = threading.Lock()
        kind = object_type(uri)
        if kind == "array":
            variables, dims, origin, shape, meta = _array_variables(uri, timestamp, lock, drop)
            coords = {}
            for d, o, n in zip(dims, origin, shape):
                coords[d.name] = xr.Variable(d.name, np.arange(o, o + n, dtype=d.dtype), attrs=_meta_for(meta, DIM_PREFIX, d.name))
            return xr.Dataset(variables, coords=coords, attrs=_user_meta(meta))
        if kind != "group":
            raise TileDBError(f"{uri}: not a TileDB array or group")
        from .array import Array
        from .group import Group

        variables, coords, attrs = {}, {}, {}
        with Group(uri) as G:
            attrs = _user_meta(dict(G.meta.items()))
            members = [(m.name, m.uri) for m in G if issubclass(m.type, Array)]
        for name, member_uri in members:
            vars_, dims, origin, shape, meta = _array_variables(member_uri, timestamp, lock, drop)
            dim_names = [d.name for d in dims]
            for attr_name, var in vars_.items():
                if len(dim_names) == 1 and attr_name == dim_names[0] + "_":
                    # a TileDB-CF coordinate: the array named after its dimension
                    var.attrs.update(_meta_for(meta, DIM_PREFIX, dim_names[0]))
                    if dim_names[0] not in drop:
                        coords[dim_names[0]] = var
                else:
                    variables[attr_name] = var
        return xr.Dataset(variables, coords=coords, attrs=attrs)


# ------------------------------------------------------------------------------------------
# writing


def _write_variable(uri, name, attr_name, var: xr.Variable, meta: dict, tiles: dict):
    from .array import Array
    from .filter import FilterList, ZstdFilter
    from .schema import ArraySchema, Attr, Dim, Domain

    dims = [
        Dim(d, domain=(0, max(n, 1) - 1), tile=max(1, min(int(tiles.get(d, n)), n)), dtype=np.uint32,
            filters=FilterList([ZstdFilter(level=-1)]))
        for d, n in zip(var.dims, var.shape)
    ]
    values = np.asarray(var.values)
    if values.dtype.kind not in "iufbM":
        raise TileDBError(f"variable {name!r}: to_tessera writes numeric variables, not {values.dtype}")
    schema = ArraySchema(domain=Domain(*dims), attrs=[Attr(attr_name, dtype=values.dtype, filters=FilterList([ZstdFilter(level=-1)]))])
    Array.create(uri, schema)
    with _open(uri, "w") as W:
        if values.size:
            W[tuple(slice(0, n) for n in var.shape)] = {attr_name: np.ascontiguousarray(values)}
        for k, v in meta.items():
            W.meta[k] = v


def _meta_value(v):
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, (list, tuple)):
        return np.asarray(v)
    return v


def to_tessera(ds: xr.Dataset, uri) -> None:
    """Writes ``ds`` as a group in TileDB-CF's layout: one dense array per data variable and
    per dimension coordinate (its attribute is the dimension's name with ``_`` appended),
    dimensions indexed from 0, tiles from the variables' dask chunks or
    ``encoding["preferred_chunks"]`` (else the whole axis), attributes as
    ``__tiledb_attr.<attribute>.<key>`` metadata, the Dataset's attributes on the group."""
    from .group import Group

    uri = os.fspath(uri)
    Group.create(uri)
    names = []
    for name, var in list(ds.coords.items()) + list(ds.data_vars.items()):
        var = var.variable
        is_dim_coord = name in ds.dims and var.dims == (name,)
        attr_name = f"{name}_" if is_dim_coord else str(name)
        tiles = dict(var.encoding.get("preferred_chunks") or {})
        if var.chunks:
            tiles.update({d: c[0] for d, c in zip(var.dims, var.chunks)})
        meta = {f"{ATTR_PREFIX}{attr_name}.{k}": _meta_value(v) for k, v in var.attrs.items()}
        if is_dim_coord:
            meta.update({f"{DIM_PREFIX}{name}.{k}": _meta_value(v) for k, v in var.attrs.items()})
        _write_variable(os.path.join(uri, str(name)), name, attr_name, var, meta, tiles)
        names.append(str(name))
    with Group(uri, "w") as G:
        for n in names:
            G.add(n, name=n, relative=True)
        for k, v in ds.attrs.items():
            G.meta[k] = _meta_value(v)


@xr.register_dataset_accessor("tessera")
class TesseraAccessor:
    """``ds.tessera.to_tessera(uri)``: see :func:`to_tessera`."""

    def __init__(self, ds: xr.Dataset):
        self._ds = ds

    def to_tessera(self, uri) -> None:
        to_tessera(self._ds, uri)
