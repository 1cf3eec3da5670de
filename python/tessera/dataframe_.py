"""`from_pandas`: a pandas DataFrame as an array, laid out as tiledb-py lays it out (an
unnamed range index becomes the dense dimension ``__tiledb_rows``; named index levels or
``index_dims`` become sparse dimensions), with the pandas metadata tiledb-py records."""

from __future__ import annotations

import json

import numpy as np

from . import _tessera
from ._tessera import TileDBError
from .array import open as _open
from .filter import FilterList, ZstdFilter, _as_filter_list
from .schema import ArraySchema, Attr, Dim, Domain

_ROWS = "__tiledb_rows"


def _column_dtype(series, varlen_types=()):
    """(attr dtype, var, nullable, repr for metadata or None) of a column."""
    import pandas as pd

    dt = series.dtype
    if isinstance(dt, pd.CategoricalDtype):
        return _column_dtype(series.astype(dt.categories.dtype))
    if isinstance(dt, pd.api.extensions.ExtensionDtype) and dt.kind in "iub":
        return np.dtype(dt.numpy_dtype), False, True, str(dt)
    if dt == object or isinstance(dt, pd.StringDtype):
        vals = series.dropna()
        el0 = vals.iloc[0] if len(vals) else ""
        if isinstance(el0, bytes):
            return np.dtype("S"), True, bool(series.isna().any()), None
        return np.dtype("U"), True, bool(series.isna().any()), None
    if dt.kind == "b":
        return np.dtype("bool"), False, False, "bool"
    if dt.kind == "M":
        return np.dtype("datetime64[ns]") if dt.kind == "M" and getattr(dt, "tz", None) is None else np.dtype("datetime64[ns]"), False, False, None
    return np.dtype(dt), False, False, None


def _values(series, dtype, var, nullable):
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(series.dtype.categories.dtype)
    if var:
        vals = series.to_numpy(dtype=object)
        if nullable:
            mask = series.isna().to_numpy()
            vals = vals.copy()
            vals[mask] = None
        return vals
    if nullable:
        mask = series.isna().to_numpy()
        data = series.to_numpy(dtype=dtype, na_value=0)
        return np.ma.array(data, mask=mask)
    return series.to_numpy(dtype=dtype)


def from_pandas(uri, dataframe, **kw):
    """Creates (or appends to, ``mode='append'``) an array from a DataFrame."""
    import pandas as pd

    mode = kw.pop("mode", "ingest")
    if mode not in ("ingest", "schema_only", "append"):
        raise TileDBError(f"Invalid mode specified ('{mode}')")
    sparse = kw.pop("sparse", None)
    index_dims = kw.pop("index_dims", None)
    attr_filters = kw.pop("attr_filters", ZstdFilter(level=-1))
    dim_filters = kw.pop("dim_filters", ZstdFilter(level=-1))
    coords_filters = kw.pop("coords_filters", None)
    tile = kw.pop("tile", None)
    capacity = kw.pop("capacity", 0)
    allows_duplicates = kw.pop("allows_duplicates", True)
    row_start_idx = kw.pop("row_start_idx", None)
    full_domain = kw.pop("full_domain", None)
    column_types = kw.pop("column_types", None) or {}
    varlen_types = kw.pop("varlen_types", ())
    timestamp = kw.pop("timestamp", None)
    cell_order = kw.pop("cell_order", "row-major")
    tile_order = kw.pop("tile_order", "row-major")
    fillna = kw.pop("fillna", None)
    kw.pop("ctx", None)
    kw.pop("cfg", None)
    kw.pop("chunksize", None)
    if kw:
        raise TileDBError(f"unknown keyword arguments: {sorted(kw)}")

    df = dataframe
    if fillna:
        df = df.fillna(fillna)
    if index_dims:
        df = df.reset_index(drop=isinstance(df.index, pd.RangeIndex) and df.index.name is None).set_index(list(index_dims))
    has_named = not (isinstance(df.index, pd.RangeIndex) and df.index.name is None and not isinstance(df.index, pd.MultiIndex))
    if sparse is None:
        sparse = has_named
        if full_domain is None:
            full_domain = False
    elif full_domain is None:
        full_domain = not sparse
    if has_named:
        df = df.reset_index()
        dim_names = [n if n is not None else f"__tiledb_index_{i}" for i, n in enumerate(dataframe.index.names if not index_dims else index_dims)]
    else:
        dim_names = [_ROWS]
        df = df.copy()
        start = row_start_idx or 0
        df.insert(0, _ROWS, np.arange(start, start + len(df), dtype=np.int64))

    attr_f = _as_filter_list(attr_filters)
    dim_f = _as_filter_list(dim_filters)
    index_meta = {}
    attr_meta = {}
    if mode != "append":
        dims = []
        for name in dim_names:
            col = df[name]
            dtype, var, _, _ = _column_dtype(col)
            if var or dtype.kind in "SU":
                dims.append(Dim(name=name, dtype="ascii", filters=dim_f))
                index_meta[name] = "<U0" if dtype.kind == "U" else "|S0"
                continue
            if dtype.kind == "b":
                raise TileDBError(f"boolean column {name!r} cannot be a dimension")
            if name == _ROWS:
                dtype = np.dtype("uint64") if sparse is False and not full_domain and False else np.dtype("int64")
            if full_domain:
                if dtype.kind in "iu":
                    info = np.iinfo(dtype)
                    t = tile if isinstance(tile, int) else (tile or {}).get(name, 10000) if isinstance(tile, dict) else 10000
                    dom = (info.min, info.max - t)
                elif dtype.kind == "M":
                    info = np.iinfo(np.int64)
                    t = 1000 if not tile else tile
                    dom = (np.datetime64(info.min + 1, "ns"), np.datetime64(info.max - t, "ns"))
                else:
                    info = np.finfo(dtype)
                    t = tile
                    dom = (info.min, info.max)
            else:
                lo, hi = col.min(), col.max()
                if dtype.kind == "M":
                    lo, hi = np.datetime64(lo, "ns"), np.datetime64(hi, "ns")
                dom = (lo, hi)
                if dtype.kind in "iu":
                    t = tile if isinstance(tile, int) else int(min(max(int(hi) - int(lo) + 1, 1), 10000))
                elif dtype.kind == "M":
                    t = tile if isinstance(tile, int) else int(max(min(int((hi - lo) / np.timedelta64(1, "ns")) + 1, 10000), 1))
                else:
                    t = tile
            dims.append(Dim(name=name, domain=dom, tile=t, dtype=dtype, filters=dim_f))
            index_meta[name] = str(dtype)
        attrs = []
        for name in df.columns:
            if name in dim_names:
                continue
            if name in column_types:
                dtype, var, nullable = np.dtype(column_types[name]), np.dtype(column_types[name]).kind in "OUS", False
                rep = None
            else:
                dtype, var, nullable, rep = _column_dtype(df[name], varlen_types)
            if rep is not None:
                attr_meta[name] = rep
            attrs.append(Attr(name=str(name), dtype=dtype, var=var or None, nullable=nullable, filters=attr_f))
        schema = ArraySchema(
            domain=Domain(*dims), attrs=attrs, sparse=bool(sparse), allows_duplicates=bool(allows_duplicates) if sparse else False,
            capacity=capacity, cell_order=cell_order, tile_order=tile_order,
            coords_filters=coords_filters,
        )
        if _tessera.object_type(str(uri)) is not None:
            raise TileDBError(f"Array URI '{uri}' already exists!")
        _tessera.create_array(str(uri), json.dumps(schema._to_json()))
    if mode == "schema_only":
        return
    with _open(uri, mode="w", timestamp=timestamp) as A:
        schema = A.schema
        if mode == "append" and not schema.sparse and row_start_idx is None:
            raise TileDBError("Cannot append to dense array without either 'row_start_idx' or 'full_domain'")
        values = {}
        for a in schema:
            col = df[a.name]
            dtype, var, nullable, _ = _column_dtype(col)
            values[a.name] = _values(col, a.dtype if not a.isvar else object, a.isvar, a.isnullable)
        if schema.sparse:
            coords = []
            for d in schema.domain:
                col = df[d.name]
                coords.append(col.to_numpy(dtype=object) if d.isvar else col.to_numpy(dtype=d.dtype))
            A[tuple(coords)] = values
        else:
            start = int(df[_ROWS].iloc[0]) if len(df) else 0
            A[start : start + len(df)] = values
        if mode != "append":
            A.meta["__pandas_index_dims"] = json.dumps(index_meta)
            if attr_meta:
                A.meta["__pandas_attribute_repr"] = json.dumps(attr_meta)
