"""tiledb-py's module-level functions: `from_numpy`, `from_pandas`, `consolidate`, `vacuum`,
`object_type`, `array_exists`, `array_fragments`, `schema_like`, `empty_like`."""

from __future__ import annotations

import json
import os

import numpy as np

from . import _tessera
from ._tessera import TileDBError
from .array import Array, DenseArray, SparseArray, _native_open, open
from .ctx import _config_dict
from .schema import ArraySchema, Attr, Dim, Domain


def object_type(uri, ctx=None):
    """``"array"``, ``"group"`` or ``None`` for what ``uri`` holds."""
    return _tessera.object_type(str(uri))


def array_exists(uri, isdense=False, issparse=False, ctx=None) -> bool:
    """Whether an array is at ``uri`` (and dense or sparse, if asked)."""
    if _tessera.object_type(str(uri)) != "array":
        return False
    if isdense or issparse:
        sparse = ArraySchema.load(str(uri)).sparse
        return (issparse and sparse) or (isdense and not sparse)
    return True


def consolidate(uri, config=None, ctx=None, fragment_uris=None, timestamp=None, key=None):
    """Consolidates the array at ``uri`` in ``sm.consolidation.mode`` (fragments by default)."""
    if key is not None:
        raise _tessera.NotSupportedError("encrypted arrays are not supported yet (key=)")
    cfg = _config_dict(config, ctx)
    mode = cfg.get("sm.consolidation.mode", "fragments")
    if fragment_uris is not None:
        raise _tessera.NotSupportedError("consolidating a chosen list of fragments (fragment_uris=) is not supported yet")
    start = end = None
    if timestamp is not None:
        start, end = timestamp
    else:
        if "sm.consolidation.timestamp_start" in cfg:
            start = int(cfg["sm.consolidation.timestamp_start"])
        if "sm.consolidation.timestamp_end" in cfg:
            end = int(cfg["sm.consolidation.timestamp_end"])
    purge = cfg.get("sm.consolidation.purge_deleted_cells", "false").lower() == "true"
    _tessera.consolidate(str(uri), mode, start, end, purge)
    return str(uri)


def vacuum(uri, config=None, ctx=None, timestamp=None):
    """Removes what consolidations in ``sm.vacuum.mode`` (fragments by default) made obsolete."""
    cfg = _config_dict(config, ctx)
    mode = cfg.get("sm.vacuum.mode", "fragments")
    _tessera.vacuum(str(uri), mode)


class FragmentInfo:
    """One fragment of an array."""

    def __init__(self, array_uri: str, j: dict, schema: ArraySchema):
        self.array_uri = array_uri
        self.uri = "file://" + os.path.abspath(os.path.join(array_uri, j["dir"])) if "://" not in array_uri else f"{array_uri.rstrip('/')}/{j['dir']}"
        self.name = j["name"]
        self.timestamp_range = tuple(j["timestamp_range"])
        self.sparse = j["sparse"]
        self.dense = not j["sparse"]
        self.cell_num = j["cell_num"]
        self.version = j["format_version"]
        self.array_schema_name = j.get("schema_name")
        ned = j.get("nonempty_domain")
        out = []
        for d, pair in zip(schema.domain, ned or []):
            if d.dtype.kind == "M":
                u = np.datetime_data(d.dtype)[0]
                out.append(tuple(np.datetime64(int(v), u) for v in pair))
            elif d.dtype.kind == "f":
                out.append(tuple(float(v) for v in pair))
            else:
                out.append(tuple(pair))
        self.nonempty_domain = tuple(out)
        self.has_consolidated_metadata = False

    def __repr__(self) -> str:
        return f"FragmentInfo(uri={self.uri!r}, timestamp_range={self.timestamp_range})"


class FragmentInfoList:
    """The visible fragments of an array, oldest first (``tiledb.array_fragments``)."""

    def __init__(self, array_uri, include_mbrs=False, ctx=None):
        native = _native_open(str(array_uri))
        schema = ArraySchema._from_json(json.loads(native.schema_json()))
        self.array_uri = str(array_uri)
        self._frags = [FragmentInfo(self.array_uri, j, schema) for j in json.loads(native.fragments_json())]

    def __len__(self) -> int:
        return len(self._frags)

    def __iter__(self):
        return iter(self._frags)

    def __getitem__(self, i):
        return self._frags[i]

    @property
    def uri(self):
        return [f.uri for f in self._frags]

    @property
    def timestamp_range(self):
        return [f.timestamp_range for f in self._frags]

    @property
    def nonempty_domain(self):
        return [f.nonempty_domain for f in self._frags]

    @property
    def cell_num(self):
        return [f.cell_num for f in self._frags]

    @property
    def sparse(self):
        return [f.sparse for f in self._frags]

    @property
    def dense(self):
        return [f.dense for f in self._frags]

    @property
    def version(self):
        return [f.version for f in self._frags]

    @property
    def to_vacuum(self):
        return []

    def __repr__(self) -> str:
        return "\n".join(repr(f) for f in self._frags)


def array_fragments(uri, include_mbrs=False, ctx=None) -> FragmentInfoList:
    return FragmentInfoList(uri, include_mbrs=include_mbrs, ctx=ctx)


def _regular_tiles(tile, ndim):
    if not tile:
        return None
    if np.isscalar(tile):
        return tuple(int(tile) for _ in range(ndim))
    if isinstance(tile, str) or len(tile) != ndim:
        raise ValueError("'tile' must be iterable and match array dimensionality")
    return tuple(tile)


def _schema_like_numpy(array, dim_dtype=np.uint64, attr_name="", full_domain=False, tile=None, **kw):
    tiles = _regular_tiles(tile, array.ndim)
    dims = []
    for d in range(array.ndim):
        hi = array.shape[d] - 1
        if full_domain:
            info = np.iinfo(dim_dtype)
            hi = info.max - (tiles[d] if tiles else array.shape[d])
        dims.append(Dim(name=f"__dim_{d}", domain=(0, hi), tile=tiles[d] if tiles else array.shape[d], dtype=dim_dtype))
    var = False
    if array.dtype == object:
        el0 = array.flat[0]
        if isinstance(el0, bytes):
            el_dtype, var = np.dtype("S"), True
        elif isinstance(el0, str):
            el_dtype, var = np.dtype("U"), True
        elif isinstance(el0, np.ndarray):
            el_dtype, var = el0.dtype, True
        else:
            raise TypeError(f"Unsupported sub-array type for Attribute: {type(el0)}")
    else:
        el_dtype = array.dtype
    attr = Attr(name=attr_name, dtype=el_dtype, var=var)
    kw.pop("ctx", None)
    return ArraySchema(domain=Domain(*dims), attrs=(attr,), **{k: v for k, v in kw.items() if k in ("cell_order", "tile_order", "capacity", "coords_filters", "offsets_filters", "validity_filters", "sparse", "allows_duplicates")})


def schema_like(*args, shape=None, dtype=None, ctx=None, **kw):
    if args and isinstance(args[0], np.ndarray):
        return _schema_like_numpy(args[0], **kw)
    if shape is not None and dtype is not None:
        return _schema_like_numpy(np.empty(shape, dtype=dtype), **kw)
    raise TypeError("schema_like needs a numpy array, or shape= and dtype=")


def empty_like(uri, arr, config=None, key=None, tile=None, ctx=None, dtype=None):
    schema = schema_like(arr, tile=tile) if dtype is None else schema_like(shape=arr.shape, dtype=dtype, tile=tile)
    DenseArray.create(uri, schema)
    return DenseArray(uri, mode="w")


def from_numpy(uri, array, config=None, ctx=None, **kw):
    """Creates (``mode='ingest'``, the default; ``'schema_only'``) a dense array like the numpy
    array and writes it, or appends it to an existing one (``'append'``)."""
    if not isinstance(array, np.ndarray):
        raise Exception("from_numpy is only currently supported for numpy.ndarray")
    mode = kw.pop("mode", "ingest")
    timestamp = kw.pop("timestamp", None)
    if kw.pop("sparse", False):
        raise TileDBError("from_numpy only supports dense arrays")
    if mode not in ("ingest", "schema_only", "append"):
        raise TileDBError(f"Invalid mode specified ('{mode}')")
    append_dim = kw.pop("append_dim", 0)
    start_idx = kw.pop("start_idx", None)
    if mode in ("ingest", "schema_only"):
        if _tessera.object_type(str(uri)) is not None:
            raise TileDBError(f"Array URI '{uri}' already exists!")
        DenseArray.create(uri, _schema_like_numpy(array, **kw))
    if mode == "append" and ArraySchema.load(uri).sparse:
        raise TileDBError("Cannot append to sparse array")
    if mode in ("ingest", "append"):
        with open(uri, mode="w", timestamp=timestamp) as A:
            data = np.ascontiguousarray(array) if array.dtype != object else array
            start = [start_idx or 0] * array.ndim
            if mode == "append":
                with open(uri) as R:
                    ned = R.nonempty_domain()
                if array.ndim <= append_dim:
                    raise IndexError("`append_dim` out of range")
                if ned is None or len(ned) != array.ndim:
                    raise ValueError("The number of dimension of the TileDB array and Numpy array to append do not match")
                for n in range(array.ndim):
                    if n == append_dim:
                        start[n] = start_idx if start_idx is not None else int(ned[n][1]) + 1
                    else:
                        if array.shape[n] != int(ned[n][1]) - int(ned[n][0]) + 1:
                            raise ValueError("The input Numpy array must be of the same shape as the TileDB array, exluding the `append_dim`")
                        start[n] = int(ned[n][0])
            sel = tuple(slice(start[n], start[n] + array.shape[n]) for n in range(array.ndim))
            A[sel] = data
    return DenseArray(uri, mode="r")


def from_pandas(uri, dataframe, **kwargs):
    """Creates an array from a pandas DataFrame (see tessera.dataframe_)."""
    from .dataframe_ import from_pandas as _fp

    return _fp(uri, dataframe, **kwargs)
