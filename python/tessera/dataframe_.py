"""`from_pandas` and `open_dataframe`: a pandas DataFrame as an array, laid out as tiledb-py
lays it out (the index levels, or the ``index_dims`` columns, become the dimensions; an
unnamed index becomes ``__tiledb_rows``; every other column an attribute), with the pandas
metadata tiledb-py records (``__pandas_index_dims``, ``__pandas_attribute_repr``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import _tessera
from ._tessera import TileDBError
from .array import open as _open
from .filter import Filter, FilterList, ZstdFilter
from .schema import ArraySchema, Attr, Dim, Domain, Enumeration

_ROWS = "__tiledb_rows"

# tiledb-py's keyword arguments and their defaults (None: not given)
_DEFAULTS = {
    "ctx": None,
    "sparse": None,
    "index_dims": None,
    "allows_duplicates": True,
    "mode": "ingest",
    "attr_filters": True,
    "dim_filters": True,
    "coords_filters": True,
    "offsets_filters": True,
    "full_domain": False,
    "tile": None,
    "row_start_idx": None,
    "fillna": None,
    "column_types": None,
    "varlen_types": None,
    "capacity": None,
    "date_spec": None,
    "cell_order": "row-major",
    "tile_order": "row-major",
    "timestamp": None,
    "debug": None,
    "fit_to_df": False,
}


@dataclass(frozen=True)
class _Column:
    """How a column is stored: dtype, pandas repr for the metadata, nullability,
    var-size, and the categories of a categorical column (an enumeration)."""

    dtype: Any
    repr: Optional[str] = None
    nullable: bool = False
    var: bool = False
    categories: Any = None
    ordered: bool = False
    categories_dtype: Any = None
    extra: dict = field(default_factory=dict)


def _categories_dtype(values, name):
    from pandas.api import types as pdt

    kind = pdt.infer_dtype(values)
    simple = {
        "bytes": np.bytes_,
        "string": "<U0",
        "floating": np.float64,
        "integer": np.int64,
        "decimal": np.float64,
        "complex": np.complex128,
        "boolean": np.bool_,
        "datetime64": np.datetime64,
        "datetime": np.datetime64,
        "date": np.datetime64,
        "timedelta64": np.timedelta64,
        "timedelta": np.timedelta64,
        "time": np.timedelta64,
    }
    if kind in simple:
        return simple[kind]
    raise NotImplementedError(f"Pandas type '{kind}' is not supported (column {name})")


def _column_from_dtype(dtype, name, varlen_types=()):
    from pandas.api import types as pdt

    if isinstance(dtype, str) and dtype == "ascii":
        return _Column("ascii", var=True)
    if isinstance(dtype, str) and dtype == "blob":
        return _Column(np.bytes_, var=True)
    dtype = pdt.pandas_dtype(dtype)
    if pdt.is_extension_array_dtype(dtype):
        np_type = getattr(dtype, "subtype", dtype.type)
        var = bool(varlen_types and dtype in varlen_types)
        nullable = False if var else bool(dtype.construct_array_type()._can_hold_na)
        return _Column(np.dtype(np_type), repr=dtype.name, nullable=nullable, var=var)
    if pdt.is_bool_dtype(dtype):
        return _Column(np.dtype("bool"), repr="bool")
    if pdt.is_complex_dtype(dtype):
        raise NotImplementedError(f"complex dtype not supported (column {name})")
    if pdt.is_numeric_dtype(dtype):
        if dtype == np.float16 or (hasattr(np, "float128") and dtype == np.float128):
            raise NotImplementedError(f"Only single and double precision float dtypes are supported (column {name})")
        return _Column(dtype)
    if pdt.is_datetime64_any_dtype(dtype):
        if dtype == "datetime64[ns]":
            return _Column(dtype)
        raise NotImplementedError(f"Only 'datetime64[ns]' datetime dtype is supported (column {name})")
    if dtype.type in (np.bytes_, np.str_):
        return _Column(dtype, var=True)
    raise NotImplementedError(f"{dtype} dtype not supported (column {name})")


def _column_from_values(values, varlen_types=()):
    import pandas as pd
    from pandas.api import types as pdt

    name = getattr(values, "name", None)
    if pdt.is_object_dtype(values):
        kind = pdt.infer_dtype(values)
        if kind == "bytes":
            return _column_from_dtype(np.bytes_, name)
        if kind == "string":
            return _column_from_dtype(np.str_, name)
        raise NotImplementedError(f"{kind} inferred dtype not supported (column {name})")
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cats = values.cat.categories.values
        return _Column(
            np.int32,
            repr=values.dtype.name,
            categories=cats,
            ordered=bool(values.cat.ordered),
            categories_dtype=_categories_dtype(cats, name),
        )
    if not hasattr(values, "dtype"):
        values = np.asanyarray(values)
    return _column_from_dtype(values.dtype, name, varlen_types)


def _filters(value) -> FilterList:
    if value is True:
        return FilterList([ZstdFilter()])
    if value is None:
        return FilterList()
    if isinstance(value, (list, FilterList)):
        return FilterList(list(value))
    if isinstance(value, Filter):
        return FilterList([value])
    raise ValueError("Unknown FilterList type!")


def _field_filters(name, value) -> FilterList:
    if isinstance(value, dict):
        return _filters(value.get(name, True))
    return _filters(value)


def _full_domain(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "Mm":
        info = np.iinfo(np.int64)
        unit = np.datetime_data(dtype)[0]
        return dtype.type(info.min + 1, unit), dtype.type(info.max, unit)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min, info.max
    if dtype.kind == "f":
        info = np.finfo(dtype)
        return info.min, info.max
    if dtype.kind == "b":
        return False, True
    return None, None


def _make_dim(name, dtype, values, full_domain, tile, filters) -> Dim:
    is_char = np.dtype(dtype).kind in "SU"
    if not full_domain:
        values = np.asarray(values)
        lo, hi = values.min(), values.max()
    elif not is_char:
        lo, hi = dmin, dmax = _full_domain(dtype)
        dt = np.dtype(dtype)
        if dt.kind in "Miu":
            # leave room for a tile above the domain, as tiledb-py does
            span = int(np.asarray(dmax).astype(np.int64)) - int(np.asarray(dmin).astype(np.int64)) if dt.kind == "M" else int(dmax) - int(dmin)
            if span > (2**64 - 1) - int(tile):
                if dt.kind == "M":
                    unit = np.datetime_data(dt)[0]
                    hi = np.datetime64(int(np.asarray(dmax).astype(np.int64)) - int(tile), unit)
                else:
                    hi = dmax - int(tile)
    else:
        lo, hi = None, None
    dt = np.dtype(dtype)
    if dt.kind in "iuM":
        if dt.kind == "M":
            span = int(np.asarray(hi).astype(np.int64)) - int(np.asarray(lo).astype(np.int64))
        else:
            span = int(hi) - int(lo)
        tile = max(1, min(int(tile), 1 + (span % 2**64)))
    elif dt.kind == "f":
        with np.errstate(over="ignore"):
            rng = hi - lo
        if rng < tile:
            tile = np.ceil(rng)
    return Dim(name=name, domain=(lo, hi), dtype=np.bytes_ if dt.kind == "U" else dtype, tile=tile, filters=filters)


def _sparse_from_dtypes(dtypes, sparse):
    dtypes = list(dtypes)
    if any(np.dtype(d).kind in "SU" for d in dtypes):
        if sparse is False:
            raise TileDBError("Cannot create dense array with string-typed dimensions")
        if sparse is None:
            return True
    if not all(np.dtype(d) == np.dtype(dtypes[0]) for d in dtypes):
        if sparse is False:
            raise TileDBError("Cannot create dense array with heterogeneous dimension data types")
        if sparse is None:
            return True
    return sparse if sparse is not None else False


def _make_dims(df, index_dims, infos, tile, full_domain, filters):
    per_dim = isinstance(tile, dict)
    if tile is not None:
        vals = tile.values() if per_dim else (tile,)
        if not all(isinstance(v, (int, float)) for v in vals):
            raise ValueError(f"Invalid tile kwarg: expected int or dict of column names mapped to ints. Got '{tile!r}'")
    index = df.index
    found = []
    meta = {}
    for name in index_dims or index.names:
        if name in index.names:
            values = index.get_level_values(name)
        elif name in df.columns:
            values = df[name]
        else:
            raise ValueError(f"Unknown column or index named {name!r}")
        dtype = infos[name].dtype if name in infos else _column_from_values(values).dtype
        if name is None:
            name = _ROWS
        meta[name] = dtype
        found.append((name, dtype, values))
    ndim = len(found)
    default_tile = 10000 if ndim == 1 else 1000 if ndim == 2 else 100 if ndim == 3 else 10

    def dim_tile(name):
        t = tile.get(name) if per_dim else tile
        return t if t is not None else default_tile

    dims = [_make_dim(n, dt, v, full_domain, dim_tile(n), _field_filters(n, filters)) for n, dt, v in found]
    return dims, meta


def _arrays(df, infos, fillna):
    """Each column as the numpy values to write (masked where a nullable column is NA)."""
    out = {}
    for name, col in df.items():
        info = infos[name]
        if fillna is not None and name in fillna:
            col = col.fillna(fillna[name])
        kw = {}
        if not info.var and info.categories is None:
            kw["dtype"] = info.dtype
        if info.nullable:
            kw["na_value"] = np.dtype(info.dtype).type()
        if info.categories is not None:
            vals = col.cat.codes.to_numpy(**kw)
        else:
            vals = col.to_numpy(**kw)
        if info.nullable:
            mask = col.isna().to_numpy()
            if vals.dtype.kind == "U" or vals.dtype.kind == "S":
                vals = vals.astype(object)
            vals = np.ma.array(vals, mask=mask)
        out[name] = vals
    return out


def from_pandas(uri, dataframe, **kwargs):
    """Creates an array from a DataFrame (``mode='ingest'``, the default), only its schema
    (``'schema_only'``), or appends the frame to an existing array (``'append'``)."""
    import pandas as pd

    args = dict(_DEFAULTS)
    for k in _DEFAULTS:
        if k in kwargs:
            args[k] = kwargs.pop(k)
    kwargs.pop("chunksize", None)
    kwargs.pop("cfg", None)

    mode = args["mode"]
    exists = _tessera.object_type(str(uri)) == "array"
    if mode != "append" and exists:
        raise TileDBError(f"Array URI '{uri}' already exists!")
    sparse = args["sparse"]
    index_dims = args["index_dims"] or ()
    row_start_idx = args["row_start_idx"]
    fit_to_df = args["fit_to_df"]

    write = True
    create = True
    if mode == "schema_only":
        write = False
    elif mode == "append":
        create = False
        schema = ArraySchema.load(str(uri))
        if not schema.sparse and row_start_idx is None and not fit_to_df:
            raise TileDBError("Cannot append to dense array without either 'row_start_idx' or 'fit_to_df'")
    elif mode != "ingest":
        raise TileDBError(f"Invalid mode specified ('{mode}')")

    full_domain = args["full_domain"]
    if sparse is False and (not index_dims or "index_col" not in args):
        full_domain = True

    df = dataframe
    if args["date_spec"]:
        df = df.assign(**{n: pd.to_datetime(df[n], format=f) for n, f in args["date_spec"].items()})
    # tiledb-py renames the caller's columns to strings in place
    dataframe.columns = dataframe.columns.map(str)
    if df is not dataframe:
        df.columns = df.columns.map(str)
    column_types = args["column_types"]
    varlen_types = args["varlen_types"]
    infos = {}
    for name, col in df.items():
        if column_types and name in column_types:
            infos[name] = _column_from_dtype(column_types[name], name, varlen_types)
        else:
            infos[name] = _column_from_values(col, varlen_types)

    if create:
        _create(uri, df, sparse, full_domain, index_dims, infos, args)
    if write:
        _write(uri, df, _arrays(df, infos, args["fillna"]), create, index_dims, row_start_idx, fit_to_df, args["timestamp"])


def _create(uri, df, sparse, full_domain, index_dims, infos, args):
    dims, dim_meta = _make_dims(df, index_dims, infos, args["tile"], full_domain, args["dim_filters"])
    sparse = _sparse_from_dtypes(dim_meta.values(), sparse)
    attr_names = [c for c in df.columns if c not in index_dims]
    attrs, attr_meta, enums = [], {}, []
    for name in attr_names:
        info = infos[name]
        flt = _field_filters(name, args["attr_filters"])
        if info.categories is not None:
            attrs.append(Attr(name=name, filters=flt, dtype=np.int32, enum_label=name, nullable=info.nullable, var=info.var))
            enums.append(Enumeration(name=name, ordered=info.ordered, values=np.array(info.categories, dtype=info.categories_dtype)))
        else:
            attrs.append(Attr(name=name, filters=flt, dtype=info.dtype, nullable=info.nullable, var=info.var))
        if info.repr is not None:
            attr_meta[name] = info.repr
    cf = args["coords_filters"]
    schema = ArraySchema(
        sparse=sparse,
        domain=Domain(*dims),
        attrs=attrs,
        enums=enums,
        cell_order=args["cell_order"],
        tile_order=args["tile_order"],
        coords_filters=None if cf is True else _filters(cf),
        offsets_filters=_filters(args["offsets_filters"]),
        capacity=args["capacity"] or 0,
        allows_duplicates=bool(sparse and args["allows_duplicates"]),
    )
    _tessera.create_array(str(uri), json.dumps(schema._to_json()))
    # the pandas metadata is written at creation, as tiledb-py writes it
    if attr_meta or dim_meta:
        with _open(uri, mode="w") as A:
            if attr_meta:
                A.meta["__pandas_attribute_repr"] = json.dumps({n: str(t) for n, t in attr_meta.items()})
            if dim_meta:
                A.meta["__pandas_index_dims"] = json.dumps({n: str(np.dtype(t)) if not isinstance(t, str) else t for n, t in dim_meta.items()})


def _write(uri, df, values, created, index_dims, row_start_idx, fit_to_df, timestamp):
    with _open(uri, mode="w", timestamp=timestamp) as A:
        schema = A.schema
        for a in schema:
            if a.enum_label is not None:
                labels = A.enum(a.enum_label).values()
                codes = df[a.name].cat.set_categories(labels).cat.codes.to_numpy()
                values[a.name] = codes.astype(np.int32)
        if schema.sparse:
            coords = []
            for k, d in enumerate(schema.domain):
                if (not created or d.name in index_dims) and d.name not in df.index.names and d.name != _ROWS:
                    coord = values.pop(d.name)
                    if isinstance(coord, np.ma.MaskedArray):
                        coord = coord.data
                else:
                    coord = df.index.get_level_values(k)
                if row_start_idx is not None and d.name == _ROWS:
                    coord = coord + row_start_idx
                coord = np.asarray(coord)
                if d.isvar:
                    coord = coord.astype(object)
                elif coord.dtype != d.dtype:
                    coord = coord.astype(d.dtype)
                coords.append(coord)
            A[tuple(coords)] = values
        else:
            if fit_to_df:
                sel = tuple(slice(df[d.name].min(), df[d.name].max() + 1) for d in schema.domain)
                A[sel] = values
            else:
                start = row_start_idx if row_start_idx is not None else 0
                A[start : start + len(df)] = values


def open_dataframe(uri, *, attrs=None, use_arrow=None, idx=slice(None), ctx=None):
    """The array at ``uri`` read as a DataFrame (as ``from_pandas`` stored it)."""
    with _open(uri) as A:
        df = A.query(attrs=attrs, use_arrow=use_arrow, coords=True).df[idx]
    if attrs and list(df.columns) != list(attrs):
        df = df[attrs]
    return df
