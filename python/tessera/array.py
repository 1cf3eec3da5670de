"""Arrays as tiledb-py has them: `open`, `DenseArray`, `SparseArray`, indexing, queries,
writes and metadata, over the engine in `tessera._tessera`."""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from . import _tessera, _types
from ._tessera import TileDBError
from .cond import translate as _translate_cond
from .ctx import _config_dict
from .metadata import Metadata, session
from .schema import ArraySchema

_INT_TYPES = (int, np.integer)


def _is_secret(key: str) -> bool:
    """Whether a configuration key holds a credential (kept out of pickles)."""
    k = key.lower()
    return any(w in k for w in ("secret", "password", "token", "key_id", "access_key", "credential", "sas", "encryption_key"))


def _ts_range(timestamp):
    """(start, end) for the engine of tiledb-py's ``timestamp=``."""
    if timestamp is None:
        return None, None
    if isinstance(timestamp, tuple):
        if len(timestamp) != 2:
            raise TileDBError("timestamp must be an int or a (start, end) tuple")
        t0, t1 = timestamp
        if not all(t is None or isinstance(t, _INT_TYPES) for t in (t0, t1)):
            raise TypeError("Unexpected argument type for 'timestamp' keyword argument")
        return (0 if t0 is None else int(t0)), (None if t1 is None else int(t1))
    if not isinstance(timestamp, _INT_TYPES) or isinstance(timestamp, bool):
        raise TypeError("Unexpected argument type for 'timestamp' keyword argument")
    return None, int(timestamp)


def _key_bytes(key=None, config=None):
    """The encryption key as the engine takes it: tiledb-py's ``key=`` (its 32 bytes: a
    ``str`` as UTF-8), or the configuration's ``sm.encryption_key``; ``None`` without one."""
    if key is None and config:
        key = dict(config).get("sm.encryption_key") or None
        kind = dict(config).get("sm.encryption_type", "AES_256_GCM" if key else "NO_ENCRYPTION")
        if key is not None and kind != "AES_256_GCM":
            raise TileDBError(f"sm.encryption_type {kind!r}: only AES_256_GCM is known")
    if key is None:
        return None
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


def _native_open(uri: str, timestamp=None, key=None):
    start, end = _ts_range(timestamp)
    return _tessera.NativeArray.open(str(uri), start, end, key)


# ---------------------------------------------------------------------------------------
# result columns -> numpy


class _Field:
    """What the conversion needs to know of a dimension or attribute."""

    __slots__ = ("name", "type", "ncells", "dtype", "nullable", "enum", "is_dim")

    def __init__(self, name, type_, ncells, dtype, nullable, enum, is_dim):
        self.name, self.type, self.ncells, self.dtype = name, type_, ncells, dtype
        self.nullable, self.enum, self.is_dim = nullable, enum, is_dim


def _fields(schema: ArraySchema) -> dict:
    out = {}
    for d in schema.domain:
        out[d.name] = _Field(d.name, d._type, _types.VAR if d.isvar else 1, d.dtype, False, None, True)
    for a in schema:
        out[a.name] = _Field(a.name, a._type, a.ncells, a.dtype, a.isnullable, a.enum_label, False)
    return out


def _values(f: _Field, data: np.ndarray, offsets, objects) -> np.ndarray:
    """The values of one result column as tiledb-py returns them (before masking)."""
    if offsets is not None and len(offsets) == 0:
        # tiledb-py views an empty var-sized buffer with the field's dtype.
        if f.type == "string_utf8":
            return np.zeros(0, dtype="U1")
        if f.dtype.kind in "SU" or f.type in ("string_ascii", "char", "blob", "any"):
            return np.zeros(0, dtype="S1")
        return np.zeros(0, dtype=_types.VALUE_DTYPE.get(f.type, np.dtype("u1")))
    if offsets is not None:
        if f.type == "string_utf8":
            return objects
        if f.type in ("string_ascii", "char", "blob", "any", "geom_wkb", "geom_wkt") or f.dtype.kind in "SU":
            # Bytes for byte strings (the engine decodes UTF-8 only for string_utf8).
            if objects is not None and len(objects) and isinstance(objects[0], str):
                return np.array([o.encode() for o in objects], dtype=object)
            return objects
        base = _types.VALUE_DTYPE[f.type]
        values = data.view(base)
        bounds = np.append(offsets, len(data)) // base.itemsize
        out = np.empty(len(offsets), dtype=object)
        for i in range(len(offsets)):
            out[i] = values[bounds[i] : bounds[i + 1]]
        return out
    if f.type == "blob":
        return data.view("S1")
    if f.dtype.kind in "SU" or f.type == "char":
        return data.view(f.dtype if f.dtype.itemsize else np.dtype("S1"))
    return data.view(f.dtype)


def _convert(cols, fields: dict, enums=None, mask_nulls=False, labels=True) -> OrderedDict:
    out = OrderedDict()
    for name, data, offsets, validity, objects in cols:
        f = fields[name]
        arr = _values(f, data, offsets, objects)
        if labels and f.enum is not None and enums is not None:
            vals = enums[f.enum].values()
            arr = vals[arr.astype(np.int64)] if len(arr) else vals[:0]
        if mask_nulls and f.nullable and validity is not None:
            arr = np.ma.array(arr, mask=validity == 0)
        out[name] = arr
    return out


# ---------------------------------------------------------------------------------------
# indexing


def _index_tuple(idx, ndim: int) -> tuple:
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(i is Ellipsis for i in idx):
        if sum(i is Ellipsis for i in idx) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        k = idx.index(Ellipsis)
        fill = ndim - (len(idx) - 1)
        idx = idx[:k] + (slice(None),) * fill + idx[k + 1 :]
    if len(idx) < ndim:
        idx = idx + (slice(None),) * (ndim - len(idx))
    if len(idx) != ndim:
        raise IndexError(f"number of indices does not match domain rank: (got {len(idx)}, expected: {ndim})")
    return idx


def _engine_bound(v, dim):
    """A range bound as the engine takes it."""
    if isinstance(v, np.datetime64):
        return int(v.astype(dim.dtype).astype(np.int64))
    if isinstance(v, np.timedelta64):
        return int(v.astype(np.int64))
    if isinstance(v, (np.bytes_, bytes)):
        return bytes(v)
    if isinstance(v, (np.str_, str)):
        return str(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return int(v)
    return v


def _dense_ranges(array: "Array", idx) -> tuple[list, list, list]:
    """tiledb-py's dense ``A[...]``: per dimension a range (half-open for integers, inclusive
    for floats, datetimes and strings), the axes scalars drop, and the steps."""
    dom = array.schema.domain
    idx = _index_tuple(idx, dom.ndim)
    ranges, drop, steps = [], [], []
    ned = None
    for i, (dim, sel) in enumerate(zip(dom, idx)):
        step = None
        if isinstance(sel, (list, np.ndarray)):
            raise IndexError("lists of indices are not supported by []: use .multi_index")
        if not isinstance(sel, slice):
            if not np.isscalar(sel) and not isinstance(sel, (np.datetime64,)):
                raise IndexError(f"invalid index type: {type(sel)!r}")
            drop.append(i)
            if isinstance(sel, _INT_TYPES) and dim.dtype.kind in "iu":
                start = int(sel)
                if start < 0:
                    start += int(dim.domain[1]) + 1
                sel = slice(start, start + 1)
            else:
                sel = slice(sel, sel)
                if dim.dtype.kind in "iu":
                    raise IndexError("cannot index integral domain dimension with non-integral value")
        start, stop, step = sel.start, sel.stop, sel.step
        if dim.isvar:
            if start is None or stop is None:
                if ned is None:
                    ned = array.nonempty_domain() or [(None, None)] * dom.ndim
                start = ned[i][0] if start is None else start
                stop = ned[i][1] if stop is None else stop
            elif not isinstance(start, (str, bytes)) or not isinstance(stop, (str, bytes)):
                raise TileDBError(f"Non-string range '({start},{stop})' provided for string dimension '{dim.name}'")
            ranges.append((dim.name, [(start, stop)]) if start is not None else (dim.name, []))
            steps.append(step)
            continue
        lo, hi = dim.domain
        kind = dim.dtype.kind
        if kind == "M":
            s = lo if start is None else start
            e = hi if stop is None else stop
            if not isinstance(s, np.datetime64) or not isinstance(e, np.datetime64):
                raise IndexError("cannot index datetime dimension with non-datetime interval")
            s, e = s.astype(dim.dtype), min(e.astype(dim.dtype), hi)
            ranges.append((dim.name, [(s, e)]))
        elif kind == "f" or isinstance(start, (float, np.floating)) or isinstance(stop, (float, np.floating)):
            if kind in "iu":
                raise IndexError("cannot index integral domain dimension with floating point slice")
            s = lo if start is None else dim.dtype.type(start)
            e = hi if stop is None else dim.dtype.type(stop)
            ranges.append((dim.name, [(s, e)]))
        else:
            for v in (start, stop):
                if v is not None and not isinstance(v, _INT_TYPES):
                    raise IndexError(f"cannot index integral domain dimension with non-integral slice (dtype: {type(v)})")
            if start is None:
                s = int(lo)
            else:
                s = int(start)
                if s < 0:
                    s += int(hi) + 1
                if s < int(lo):
                    raise IndexError(f"index {start} out of bounds of dimension {dim.name!r} domain {lo}..{hi}")
            if stop is None:
                e = int(hi) + 1
            else:
                e = int(stop)
                if e < 0:
                    e += int(hi)
                if e > int(hi):
                    e = int(hi) + 1
            if e <= s:
                raise TileDBError(f"empty or reversed range {start}:{stop} on dimension {dim.name!r}")
            ranges.append((dim.name, [(s, e - 1)]))
        steps.append(step)
    return ranges, drop, steps


def _multi_ranges(array: "Array", idx) -> list:
    """tiledb-py's ``multi_index[...]``: inclusive ranges, lists of scalars and slices per
    dimension (cross product); an open slice end takes the non-empty domain's."""
    dom = array.schema.domain
    if not isinstance(idx, tuple):
        idx = (idx,)
    if len(idx) > dom.ndim:
        raise IndexError(f"too many indices: {len(idx)} for {dom.ndim} dimension(s)")
    ned = None
    out = []
    for i, sel in enumerate(idx):
        dim = dom.dim(i)
        sels = sel if isinstance(sel, list) else ([sel] if not isinstance(sel, np.ndarray) else list(sel))
        rs = []
        for s in sels:
            if isinstance(s, slice):
                if s.step is not None:
                    raise ValueError("Stepped slice ranges are not supported")
                lo, hi = s.start, s.stop
                if lo is None or hi is None:
                    if lo is None and hi is None and array.schema.sparse:
                        continue
                    if ned is None:
                        ned = array.nonempty_domain()
                    if ned is None:
                        continue
                    lo = ned[i][0] if lo is None else lo
                    hi = ned[i][1] if hi is None else hi
                rs.append((_scalar(lo), _scalar(hi)))
            elif isinstance(s, tuple):
                if len(s) != 2:
                    raise IndexError("a range tuple must be (low, high)")
                rs.append((_scalar(s[0]), _scalar(s[1])))
            else:
                v = _scalar(s)
                rs.append((v, v))
        out.append((dim.name, rs))
    if not array.schema.sparse:
        # Dense dimensions left out are read whole (libtiledb's default subarray).
        for dim in list(dom)[len(idx):]:
            out.append((dim.name, [dim.domain]))
    return out


def _scalar(v):
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v[()]
    if np.isscalar(v) or isinstance(v, (np.datetime64, np.timedelta64)):
        return v
    raise ValueError(f"Cannot convert {type(v)} to scalar")


def _to_engine_ranges(array: "Array", ranges) -> list:
    dom = array.schema.domain
    out = []
    for name, rs in ranges:
        dim = dom.dim(name)
        conv = []
        for lo, hi in rs:
            lo, hi = _engine_bound(lo, dim), _engine_bound(hi, dim)
            if dim.dtype.kind in "iu" and (isinstance(lo, float) or isinstance(hi, float)):
                raise IndexError("cannot index integral domain dimension with floating point value")
            conv.append((lo, hi))
        if conv:
            out.append((name, conv))
    return out


def _range_len(dim, rs) -> int:
    n = 0
    for lo, hi in rs:
        if dim.dtype.kind == "M":
            n += int(np.asarray(hi).astype(dim.dtype).astype(np.int64)) - int(np.asarray(lo).astype(dim.dtype).astype(np.int64)) + 1
        else:
            n += int(hi) - int(lo) + 1
    return n


# ---------------------------------------------------------------------------------------
# arrays


class Array:
    """An open TileDB array (tiledb-py's ``tiledb.Array``)."""

    def __init__(self, uri, mode: str = "r", key=None, timestamp=None, attr=None, config=None, ctx=None, _native=None):
        if mode not in ("r", "w", "d", "m"):
            raise TileDBError(f"invalid mode {mode!r} (expected 'r', 'w', 'd' or 'm')")
        self._uri = str(uri)
        self._mode = mode
        self._timestamp = timestamp
        self._config = _config_dict(config, ctx)
        self._key = _key_bytes(key, self._config)
        self._native = _native if _native is not None else _native_open(self._uri, timestamp, self._key)
        self._schema = ArraySchema._from_json(json.loads(self._native.schema_json()))
        if attr is not None and not self._schema.has_attr(attr):
            raise TileDBError(f"Selected attribute does not exist: {attr!r}")
        self.view_attr = attr
        self._isopen = True
        self._meta = None
        self._fields = _fields(self._schema)
        self._pending_meta = None

    # -- state ------------------------------------------------------------------------------
    @classmethod
    def create(cls, uri, schema: ArraySchema, key=None, overwrite: bool = False, ctx=None):
        key = _key_bytes(key, _config_dict(None, ctx))
        if overwrite and _tessera.object_type(str(uri)) == "array":
            import shutil

            shutil.rmtree(str(uri), ignore_errors=True)
        if isinstance(schema, ArraySchema):
            if cls is SparseArray and not schema.sparse:
                raise ValueError("Array.create `schema` argument must be a sparse schema to build a SparseArray")
            if cls is DenseArray and schema.sparse:
                raise ValueError("Array.create `schema` argument must be a dense schema to build a DenseArray")
        else:
            raise TypeError("schema must be a tiledb.ArraySchema")
        _tessera.create_array(str(uri), json.dumps(schema._to_json()), None, key)

    @staticmethod
    def load_typed(uri, mode="r", key=None, timestamp=None, attr=None, ctx=None, config=None):
        return open(uri, mode=mode, key=key, timestamp=timestamp, attr=attr, config=config, ctx=ctx)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self._pending_meta is not None:
            self._flush_meta()
        self._isopen = False

    def reopen(self, timestamp=None) -> None:
        # As tiledb-py: a reopen without a timestamp shows the array as it is now.
        self._timestamp = timestamp
        self._native = _native_open(self._uri, self._timestamp, self._key)
        self._schema = ArraySchema._from_json(json.loads(self._native.schema_json()))
        self._fields = _fields(self._schema)
        self._isopen = True
        self._meta = None

    def __getstate__(self):
        # Pickled as its URI, mode and the timestamp range it was opened at: the copy
        # reopens the same version wherever it is unpickled (credentials come from there).
        # The configuration travels too, except credentials (they never go into a pickle).
        config = {k: v for k, v in self._config.items() if not _is_secret(k)}
        return {"uri": self._uri, "mode": self._mode, "timestamp": tuple(self._native.timestamp_range()) if self._mode == "r" else self._timestamp, "attr": self.view_attr, "config": config}

    def __setstate__(self, state):
        type(self).__init__(self, state["uri"], mode=state["mode"], timestamp=state["timestamp"], attr=state["attr"], config=state.get("config") or None)

    def _check_open(self):
        if not self._isopen:
            raise TileDBError("Array is not opened")

    # -- properties -------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._uri

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def isopen(self) -> bool:
        return self._isopen

    @property
    def schema(self) -> ArraySchema:
        return self._schema

    @property
    def domain(self):
        return self._schema.domain

    @property
    def ndim(self) -> int:
        return self._schema.ndim

    @property
    def shape(self):
        return self._schema.shape

    @property
    def nattr(self) -> int:
        return 1 if self.view_attr is not None else self._schema.nattr

    @property
    def dtype(self):
        if self.view_attr is not None:
            return self._schema.attr(self.view_attr).dtype
        if self._schema.nattr != 1:
            raise NotImplementedError("Multi-attribute does not have single dtype!")
        return self._schema.attr(0).dtype

    @property
    def ctx(self):
        """The context the array was opened with (its configuration)."""
        from .ctx import Ctx, default_ctx

        return Ctx(self._config) if self._config else default_ctx()

    @property
    def iswritable(self) -> bool:
        return self._mode == "w"

    @property
    def timestamp_range(self):
        return tuple(self._native.timestamp_range())

    @property
    def timestamp(self):
        return self._native.timestamp_range()[1]

    def attr(self, key):
        return self._schema.attr(key)

    def dim(self, key):
        return self._schema.domain.dim(key)

    def enum(self, name):
        return self._schema.enum(name)

    def nonempty_domain(self):
        self._check_open()
        if self._mode != "r":
            raise TileDBError("nonempty_domain needs the array open for reading (mode 'r')")
        ned = self._native.nonempty_domain()
        if ned is None:
            return None
        out = []
        for dim, (lo, hi) in zip(self._schema.domain, ned):
            if dim.dtype.kind == "M":
                u = np.datetime_data(dim.dtype)[0]
                out.append((np.datetime64(lo, u), np.datetime64(hi, u)))
            elif dim.dtype.kind == "m":
                u = np.datetime_data(dim.dtype)[0]
                out.append((np.timedelta64(lo, u), np.timedelta64(hi, u)))
            else:
                out.append((lo, hi))
        return tuple(out)

    @property
    def meta(self) -> Metadata:
        self._check_open()
        if self._meta is None:
            self._meta = Metadata(self)
        return self._meta

    def _flush_meta(self):
        puts, deletes = session(self._pending_meta)
        self._pending_meta = None
        if puts or deletes:
            start, end = _ts_range(self._timestamp)
            _tessera.put_array_metadata(self._uri, puts, deletes, end, self._key)

    def _meta_range(self):
        return tuple(self._native.timestamp_range())

    # -- reads ------------------------------------------------------------------------------
    def _read_cols(self, ranges, attrs, dims, order, cond):
        self._check_open()
        if self._mode != "r":
            raise TileDBError(f"Array must be opened in read mode to read (mode={self._mode!r})")
        if order == "G" and any(len(rs) > 1 for _, rs in ranges):
            raise TileDBError("Multi-range reads are not supported on a global order query")
        if not self._schema.sparse and order == "U":
            raise TileDBError("TILEDB_UNORDERED read is not supported for dense arrays")
        if self._schema.sparse and order in (None, "U"):
            # libtiledb returns an unordered sparse read in global order (without
            # duplicates); so does Tessera, so that results come in the same order.
            order = "G"
        return self._native.read(_to_engine_ranges(self, ranges), attrs, dims, order, _translate_cond(cond, self._schema))

    def _attr_names(self, attrs):
        if attrs is None:
            if self.view_attr is not None:
                return [self.view_attr]
            return [a.name for a in self._schema]
        names = []
        for a in attrs:
            if isinstance(a, _INT_TYPES):
                a = self._schema.attr(int(a)).name
            if not self._schema.has_attr(a) and not self._schema.domain.has_dim(a):
                raise TileDBError(f"Selected attribute does not exist: {a!r}")
            names.append(a)
        return names

    def __arrow_c_stream__(self, requested_schema=None):
        """Every cell (dimensions then attributes) as an Arrow C stream: see
        :meth:`Query.__arrow_c_stream__`."""
        return self.query(coords=True).__arrow_c_stream__(requested_schema)

    def query(self, attrs=None, cond=None, dims=None, coords=False, order=None, use_arrow=None, return_arrow=False, return_incomplete=False, index_col=True, memory_budget=None, attr_cond=None):
        self._check_open()
        if self._mode != "r":
            if self._mode == "d" and not self._schema.sparse:
                raise TileDBError("Delete mode is not supported for queries on Dense Arrays")
            if self._mode == "w":
                raise TileDBError("Write mode is not supported for queries on Dense Arrays" if not self._schema.sparse else "Write mode is not supported for queries")
        return Query(self, attrs=attrs, cond=cond if cond is not None else attr_cond, dims=dims, coords=coords, order=order, use_arrow=use_arrow, return_arrow=return_arrow, return_incomplete=return_incomplete, index_col=index_col, memory_budget=memory_budget)

    @property
    def multi_index(self):
        if self._mode != "r":
            raise ValueError("multi_index needs the array open for reading (mode 'r')")
        return MultiRangeIndexer(Query(self, coords=None, order="U" if self._schema.sparse else "C"))

    @property
    def df(self):
        if self._mode != "r":
            raise ValueError(".df needs the array open for reading (mode 'r')")
        return DataFrameIndexer(Query(self, coords=True, order="U" if self._schema.sparse else "C"))

    def read_points(self, coords, attrs=None, dims=True):
        """Reads the cells at the given points (one coordinate list per dimension, all of the
        same length), in the order asked; sparse points holding no cell are left out, dense
        points give their value or the fill value. Beyond tiledb-py (which reads only cross
        products of ranges)."""
        self._check_open()
        if not hasattr(self._native, "read_points"):
            raise _tessera.NotSupportedError("point reads need an engine built with them")
        dom = self._schema.domain
        if isinstance(coords, dict):
            cols = [coords[d.name] for d in dom]
        else:
            cols = list(coords)
        pts = []
        for d, c in zip(dom, cols):
            pts.append((d.name, [_engine_bound(v, d) for v in np.asarray(c).tolist()] if not d.isvar else list(c)))
        names = self._attr_names(attrs)
        dim_names = [d.name for d in dom] if dims is True else (list(dims) if dims else None)
        cols = self._native.read_points(pts, names, dim_names)
        res = _convert(cols, self._fields, self._schema._enums, mask_nulls=True)
        out = OrderedDict((n, res[n]) for n in names)
        for n in dim_names or []:
            out[n] = res[n]
        return out

    def consolidate(self, config=None, key=None, fragment_uris=None, timestamp=None):
        from .highlevel import consolidate

        return consolidate(self._uri, config=config, key=key, fragment_uris=fragment_uris, timestamp=timestamp)

    def label_index(self, labels):
        raise _tessera.NotSupportedError("dimension labels are not supported for reads yet")

    def _labelled(self, res):
        """``A[...]``'s results: enumerated attributes as their labels (tiledb-py maps the
        codes there, not in ``subarray``/``query``)."""

        def label(name, v):
            a = self._schema.attr(name)
            if a.enum_label is None:
                return v
            vals = self._schema.enum(a.enum_label).values()
            if isinstance(v, np.ma.MaskedArray):
                return np.ma.array(np.array([vals[i] for i in v.data.reshape(-1)]).reshape(v.shape), mask=v.mask)
            return np.array([vals[i] for i in np.asarray(v).reshape(-1)]).reshape(np.shape(v))

        if isinstance(res, dict):
            for n in list(res):
                if self._schema.has_attr(n):
                    res[n] = label(n, res[n])
            return res
        name = self.view_attr if self.view_attr is not None else self._schema.attr(0).name
        return label(name, res)

    # -- writes -----------------------------------------------------------------------------
    def _check_write(self):
        self._check_open()
        if self._mode != "w":
            raise TileDBError("Array must be opened in write mode to write")

    def _write_timestamp(self):
        start, end = _ts_range(self._timestamp)
        return end

    def _column(self, name, values, nullmap=None):
        """One write column ``(name, data, offsets, validity)`` of numpy values for a field."""
        f = self._fields.get(name)
        if f is None:
            raise TileDBError(f"no attribute or dimension named {name!r}")
        validity = None
        if isinstance(values, np.ma.MaskedArray):
            if not f.nullable:
                raise TileDBError(f"attribute {name!r} is not nullable: masked values cannot be written")
            validity = (~np.ma.getmaskarray(values)).astype(np.uint8).reshape(-1)
            # The values under the mask are written as they are (tiledb-py writes .data).
            values = values.data
        if f.ncells == _types.VAR:
            arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
            flat = arr.reshape(-1) if arr.ndim > 1 else arr
            if f.nullable and validity is None:
                validity = np.array([v is not None for v in flat.tolist()], dtype=np.uint8)
            if f.type in ("string_utf8", "string_ascii", "char", "blob", "any", "geom_wkb", "geom_wkt") or f.dtype.kind in "SU":
                if flat.dtype.kind == "U" and f.type != "string_utf8":
                    flat = np.char.encode(flat, "utf-8")
                data, offsets = _tessera.pack_var(flat.tolist() if flat.dtype.kind in "SU" else flat)
            else:
                base = _types.VALUE_DTYPE[f.type]
                parts = [np.asarray(v, dtype=base).reshape(-1) for v in flat]
                sizes = np.array([p.nbytes for p in parts], dtype=np.uint64)
                offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.uint64) if len(parts) else np.zeros(0, np.uint64)
                data = np.concatenate(parts).view(np.uint8) if parts else np.zeros(0, np.uint8)
            return (name, np.ascontiguousarray(data, dtype=np.uint8), np.ascontiguousarray(offsets, dtype=np.uint64), validity)
        arr = np.asarray(values)
        want = f.dtype
        if f.type == "blob":
            want = np.dtype("S1")
        if arr.dtype.kind == "O":
            raise TileDBError(f"attribute {name!r} is fixed-size ({want}): object values cannot be written")
        if arr.dtype != want:
            # numbers of any kind convert (floats to integers truncate), as tiledb-py's
            # astype does
            ok = np.can_cast(arr.dtype, want, casting="same_kind") or (arr.dtype.kind in "iubf" and want.kind in "iuf")
            if want.kind == "V" or arr.dtype.kind == "V" or arr.dtype.kind in "SU" or want.kind in "SU":
                ok = arr.dtype.itemsize == want.itemsize or (arr.dtype.kind == want.kind == "S")
            if arr.dtype.kind == "M" and want.kind == "M":
                ok = True
            if not ok:
                raise TileDBError(f"cannot write values of dtype {arr.dtype} to {name!r} of dtype {want}")
            if arr.dtype.kind in "iufb" and want.kind in "iufb":
                ok = True
            if not ok:
                raise TileDBError(f"cannot write values of dtype {arr.dtype} to {name!r} of dtype {want}")
            if want.kind == "S" and arr.dtype.kind == "S" and arr.dtype.itemsize != want.itemsize:
                arr = arr.astype(want)
            elif want.kind == "V" or arr.dtype.kind == "V":
                arr = np.ascontiguousarray(arr).view(want)
            else:
                arr = arr.astype(want)
        data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        if f.nullable and validity is None:
            # tiledb-py: NaN and infinities of a float attribute mark nulls.
            flat = arr.reshape(len(arr) if arr.ndim else 1, -1) if arr.dtype.kind == "f" and f.ncells > 1 else arr.reshape(-1)
            if arr.dtype.kind == "f":
                validity = np.isfinite(flat).all(axis=-1).astype(np.uint8) if flat.ndim > 1 else np.isfinite(flat).astype(np.uint8)
            else:
                validity = np.ones(data.size // max(1, _types.VALUE_DTYPE.get(f.type, np.dtype("u1")).itemsize * (f.ncells if f.ncells != _types.VAR else 1)), np.uint8)
        return (name, data, None, validity)

    def _submit(self, cols, ranges=None, order=None):
        return self._native.write(cols, ranges, order, self._write_timestamp())

    def __repr__(self):
        kind = "SparseArray" if self._schema.sparse else "DenseArray"
        # tiledb-py quotes the URI of dense arrays only.
        uri = repr(self._uri) if kind == "DenseArray" else self._uri
        if self._isopen:
            return f"{kind}(uri={uri}, mode={self._mode}, ndim={self._schema.ndim})"
        return f"{kind}(uri={uri}, mode=closed)"

    def __del__(self):
        try:
            if getattr(self, "_pending_meta", None) is not None:
                self._flush_meta()
        except Exception:
            pass

    # -- lifecycle ---------------------------------------------------------------------------
    @staticmethod
    def delete_array(uri, ctx=None):
        """Deletes the array at ``uri``: what libtiledb's ``tiledb_array_delete`` removes, in
        its order."""
        if _tessera.object_type(str(uri)) != "array":
            raise TileDBError(f"[TileDB::Array] Error: Cannot delete array; Array does not exist: {uri}")
        _tessera.delete_array(str(uri))

    @staticmethod
    def delete_fragments(uri, timestamp_start, timestamp_end=None, ctx=None):
        """Deletes the fragments written in ``[timestamp_start, timestamp_end]`` (or, given a
        list of fragment names or URIs, those), as libtiledb (fragments inside a consolidated
        commit through ``.ign`` files)."""
        if isinstance(timestamp_start, (list, tuple)) and timestamp_end is None:
            _tessera.delete_fragments(str(uri), None, None, [str(f) for f in timestamp_start])
            return
        _tessera.delete_fragments(str(uri), int(timestamp_start), int(timestamp_end))

    def upgrade_version(self, config=None):
        """Rewrites the schema of an array written by an older TileDB at format 22 (and makes
        the folders of format 12 and later), as libtiledb's ``upgrade_version``."""
        _tessera.upgrade_version(self._uri)


class DenseArray(Array):
    """A dense array."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self._schema.sparse:
            raise ValueError(f"Array at {self._uri} is not a dense array")

    def __len__(self):
        return self.domain.shape[0]

    def __getitem__(self, selection):
        return self._labelled(self.subarray(selection))

    def subarray(self, selection, attrs=None, cond=None, coords=False, order=None):
        self._check_open()
        if self._mode != "r":
            raise TileDBError("Write mode is not supported for subarray queries on Dense Arrays" if self._mode == "w" else "Invalid mode for subarray query on Dense Array")
        ranges, drop, steps = _dense_ranges(self, selection)
        return self._dense_read(ranges, drop, steps, attrs, cond, coords, order or "C", mask=True, labels=False)

    def _dense_read(self, ranges, drop, steps, attrs, cond, coords, order, mask, labels):
        if self.view_attr is not None and attrs is None:
            attr_names = [self.view_attr]
        elif attrs is None:
            attr_names = [a.name for a in self._schema]
        else:
            attr_names = self._attr_names(attrs)
        if coords is True:
            dim_names = [d.name for d in self.domain]
        elif coords:
            dim_names = list(coords)
        else:
            dim_names = []
        shape = []
        rng = dict(ranges)
        for dim in self.domain:
            rs = rng.get(dim.name)
            if rs is None:
                shape.append(dim.size)
            elif dim.isvar or dim.dtype.kind == "f":
                shape.append(None)
            else:
                shape.append(_range_len(dim, rs))
        into = self._read_into(ranges, attr_names, dim_names, shape, order, cond)
        if into is not None:
            res = {attr_names[0]: into}
        else:
            cols = self._read_cols(ranges, [n for n in attr_names if self._schema.has_attr(n)], dim_names or None, order, cond)
            res = _convert(cols, self._fields, self._schema._enums, mask_nulls=mask, labels=labels)
        out = OrderedDict()
        for n in dim_names:
            out[n] = res[n]
        for n in attr_names:
            if n in res:
                out[n] = res[n]
        if order in ("C", "F", "G") and None not in shape:
            n_cells = int(np.prod(shape))
            for n, v in out.items():
                # tiledb-py leaves fixed-size cells of a global-order read flat but gives
                # var-sized ones the box's shape, row by row
                if order == "G" and (n in dim_names or self._fields[n].ncells != _types.VAR):
                    continue
                if v.shape[:1] == (n_cells,) and v.ndim == 1:
                    v = v.reshape(shape, order="F" if order == "F" else "C")
                    if any(s is not None for s in steps):
                        v = v[tuple(slice(None, None, s) for s in steps)]
                    if drop:
                        v = v.squeeze(axis=tuple(drop))
                    out[n] = v
        if not coords and self._schema.nattr == 1 and self._schema.attr(0).isanon and self.view_attr is None:
            return out[self._schema.attr(0).name]
        if self.view_attr is not None:
            return out[self.view_attr]
        return out

    def _read_into(self, ranges, attr_names, dim_names, shape, order, cond):
        """One fixed-size, non-nullable number attribute of a box read in C or F order: read
        by the engine straight into a numpy array allocated here (with numpy's allocation
        policy, no copy), flat in the read's order; ``None`` when the read is not such a one."""
        if len(attr_names) != 1 or dim_names or order not in ("C", "F") or None in shape:
            return None
        f = self._fields.get(attr_names[0])
        if f is None or f.is_dim or f.ncells != 1 or f.nullable or f.enum is not None:
            return None
        if f.dtype.kind not in "biufmM" or f.dtype.itemsize != _types.VALUE_DTYPE.get(f.type, np.dtype("V")).itemsize:
            return None
        rng = dict(ranges)
        if any(not rng.get(d.name) for d in self.domain):
            return None
        self._check_open()
        if self._mode != "r":
            raise TileDBError(f"Array must be opened in read mode to read (mode={self._mode!r})")
        n_cells = int(np.prod(shape, dtype=np.int64))
        buf = np.empty(n_cells, dtype=f.dtype)
        self._native.read_into(buf.view(np.uint8), f.name, _to_engine_ranges(self, ranges), order, _translate_cond(cond, self._schema))
        return buf

    def __setitem__(self, selection, value):
        self._check_write()
        empty = isinstance(selection, tuple) and len(selection) == 0
        ranges, drop, steps = _dense_ranges(self, selection) if not empty else ([], [], [])
        if any(s is not None for s in steps):
            raise IndexError("steps are not supported in writes")
        if isinstance(value, dict):
            items = list(value.items())
        elif np.ndim(value) == 0 and not isinstance(value, (str, bytes)):
            # a scalar fills the box in every attribute (tiledb-py)
            items = [(a.name, value) for a in self._schema]
        else:
            if self._schema.nattr != 1:
                raise ValueError("value must be a dict with one array per attribute")
            items = [(self._schema.attr(0).name, value)]
        shape = [(_range_len(d, dict(ranges).get(d.name, [d.domain])) if dict(ranges).get(d.name) else d.size) for d in self.domain]
        cols = []
        nullmaps = {}
        for name, v in items:
            a = self._schema.attr(name)
            if not isinstance(v, np.ndarray) and not a.isvar:
                v = np.asarray(v)
            if isinstance(v, np.ndarray) and v.ndim == 0 and not isinstance(v, np.ma.MaskedArray):
                v = np.full([int(x) for x in shape], v[()], dtype=v.dtype if v.dtype.kind != "U" or not a.isvar else object)
            if isinstance(v, np.ndarray) and v.dtype.kind != "O" and not a.isvar:
                expect = int(np.prod([s for i, s in enumerate(shape)]))
                if v.size != expect and not (a.ncells > 1 and v.dtype.kind != "V" and v.size == expect * a.ncells):
                    # tiledb-py: ValueError for a single array, TileDBError for a dict.
                    err = TileDBError if isinstance(value, dict) else ValueError
                    raise err(f"value shape {v.shape} does not match the subarray shape {tuple(shape)}")
            elif isinstance(v, np.ndarray) and v.size != int(np.prod(shape)):
                err = TileDBError if isinstance(value, dict) else ValueError
                raise err(f"value shape {v.shape} does not match the subarray shape {tuple(shape)}")
            cols.append(self._column(name, v, nullmaps.get(name)))
        missing = [a.name for a in self._schema if a.name not in dict(items)]
        if missing:
            raise TileDBError(f"values for every attribute are required (missing {missing})")
        eng_ranges = _to_engine_ranges(self, ranges)
        self._submit(cols, eng_ranges, "C")

    def write_direct(self, array, **kw):
        self[...] = array


class SparseArray(Array):
    """A sparse array."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if not self._schema.sparse:
            raise ValueError(f"Array at {self._uri} is not a sparse array")

    def __len__(self):
        raise TypeError("SparseArray length is ambiguous; use shape")

    def __getitem__(self, selection):
        return self._labelled(self.subarray(selection))

    def subarray(self, selection, coords=True, attrs=None, cond=None, order=None):
        self._check_open()
        if self._mode != "r":
            raise TileDBError("Array must be opened in read mode for reads")
        ranges = _sparse_ranges(self, selection)
        return self._sparse_read(ranges, attrs, cond, coords, order or "U", mask=True, labels=False)

    def _sparse_read(self, ranges, attrs, cond, coords, order, mask, labels):
        names = self._attr_names(attrs)
        attr_names = [n for n in names if self._schema.has_attr(n)]
        if coords is True:
            dim_names = [d.name for d in self.domain]
        elif coords:
            dim_names = list(coords)
        else:
            dim_names = []
        dim_names = [n for n in names if self.domain.has_dim(n) and n not in dim_names] + dim_names
        cols = self._read_cols(ranges, attr_names, dim_names or None, order, cond)
        res = _convert(cols, self._fields, self._schema._enums, mask_nulls=mask, labels=labels)
        out = OrderedDict()
        for n in attr_names:
            out[n] = res[n]
        for n in dim_names:
            out[n] = res[n]
        if self.view_attr is not None and attrs is None and not coords:
            return out[self.view_attr]
        return out

    def __setitem__(self, selection, value):
        self._check_write()
        idx = selection if isinstance(selection, tuple) else (selection,)
        if len(idx) != self._schema.ndim:
            raise IndexError(f"sparse writes need one coordinate array per dimension (got {len(idx)}, expected {self._schema.ndim})")
        if not isinstance(value, dict):
            if self._schema.nattr != 1:
                raise TileDBError("value must be a dict with one array per attribute")
            value = {self._schema.attr(0).name: value}
        cols = []
        n = None
        for dim, c in zip(self.domain, idx):
            if dim.isvar:
                c = np.asarray(c, dtype=object) if not isinstance(c, np.ndarray) else c
            else:
                c = np.asarray(c)
                if dim.dtype.kind == "M" and c.dtype.kind != "M":
                    c = c.astype(np.int64).view(dim.dtype)
            if c.ndim != 1:
                c = c.reshape(-1)
            if n is None:
                n = len(c)
            elif len(c) != n:
                raise TileDBError("coordinate arrays must all have the same length")
            cols.append(self._column(dim.name, c))
        for a in self._schema:
            if a.name not in value:
                raise TileDBError(f"values for every attribute are required (missing {a.name!r})")
        for name, v in value.items():
            a = self._schema.attr(name)
            if a.enum_label is not None and isinstance(v, np.ndarray) and v.dtype.kind in "USO":
                vals = list(self._schema.enum(a.enum_label).values())
                lookup = {x: i for i, x in enumerate(vals)}
                try:
                    v = np.array([lookup[x] for x in v.tolist()], dtype=a.dtype)
                except KeyError as e:
                    raise TileDBError(f"value {e.args[0]!r} is not in enumeration {a.enum_label!r}") from None
            if not isinstance(v, np.ndarray):
                v = np.asarray(v, dtype=object if a.isvar else None)
            if (v.shape[0] if v.ndim else 1) != n and not (a.ncells > 1 and v.dtype.kind not in "VO" and v.size == n * a.ncells):
                raise TileDBError(f"attribute {name!r}: {len(v)} values for {n} coordinates")
            cols.append(self._column(name, v))
        self._submit(cols, None, "U")

    def query(self, attrs=None, cond=None, dims=None, coords=None, order="U", use_arrow=None, return_arrow=False, return_incomplete=False, index_col=True, memory_budget=None, attr_cond=None):
        if dims is False:
            coords = False
        elif dims is None and coords is None:
            coords = True
        return super().query(attrs=attrs, cond=cond, dims=dims, coords=coords, order=order, use_arrow=use_arrow, return_arrow=return_arrow, return_incomplete=return_incomplete, index_col=index_col, memory_budget=memory_budget, attr_cond=attr_cond)

    def unique_dim_values(self, dim=None):
        q = self.query(attrs=[])[:]
        if dim is not None:
            return tuple(np.unique(q[dim]))
        return OrderedDict((d, tuple(np.unique(v))) for d, v in q.items())


def _sparse_ranges(array, selection) -> list:
    """tiledb-py's sparse ``A[...]``: integer slices half-open, floats and strings inclusive,
    no steps."""
    dom = array.schema.domain
    idx = _index_tuple(selection, dom.ndim)
    out = []
    for dim, sel in zip(dom, idx):
        if isinstance(sel, slice):
            if sel.step is not None:
                raise IndexError("steps are not supported for sparse arrays")
            start, stop = sel.start, sel.stop
            if start is None and stop is None:
                continue
            if dim.isvar:
                if start is None or stop is None:
                    ned = array.nonempty_domain()
                    if ned is None:
                        continue
                    start = ned[dom._dims.index(dim)][0] if start is None else start
                    stop = ned[dom._dims.index(dim)][1] if stop is None else stop
                out.append((dim.name, [(start, stop)]))
                continue
            lo, hi = dim.domain
            if dim.dtype.kind in "iu":
                for v in (start, stop):
                    if v is not None and not isinstance(v, _INT_TYPES):
                        raise IndexError("cannot index integral domain dimension with floating point slice")
                s = int(lo) if start is None else int(start)
                if start is not None and s < 0:
                    s += int(hi) + 1
                e = int(hi) if stop is None else int(stop) - 1
                if stop is not None and int(stop) < 0:
                    e = int(stop) + int(hi) - 1
                if s < int(lo) or e > int(hi):
                    raise TileDBError(f"range {s}..{e} is outside the domain {lo}..{hi} of dimension {dim.name!r}")
                out.append((dim.name, [(s, e)]))
            else:
                s = lo if start is None else start
                e = hi if stop is None else stop
                out.append((dim.name, [(s, e)]))
        elif isinstance(sel, (list, np.ndarray)):
            raise IndexError("lists of indices are not supported by []: use .multi_index")
        else:
            if isinstance(sel, _INT_TYPES) and dim.dtype.kind in "iu" and int(sel) < 0:
                sel = int(sel) + int(dim.domain[1]) + 1
            out.append((dim.name, [(sel, sel)]))
    return out


# ---------------------------------------------------------------------------------------
# queries


class Query:
    """A read set up with attributes, dimensions, order and condition (``A.query(...)``)."""

    def __init__(self, array: Array, attrs=None, cond=None, dims=None, coords=False, order=None, use_arrow=None, return_arrow=False, return_incomplete=False, index_col=True, memory_budget=None):
        self.array = array
        self.attrs = attrs
        self.cond = cond
        self.dims = dims
        self.coords = coords
        self.order = order
        self.use_arrow = use_arrow
        self.return_arrow = return_arrow
        self.return_incomplete = return_incomplete
        self.index_col = index_col
        self.memory_budget = memory_budget
        if order is not None and order not in ("C", "F", "G", "U"):
            raise ValueError("order must be 'C' (TILEDB_ROW_MAJOR), 'F' (TILEDB_COL_MAJOR), 'G' (TILEDB_GLOBAL_ORDER), or 'U' (TILEDB_UNORDERED)")
        if dims not in (False, None) and coords is True and array.schema.sparse is False:
            raise ValueError("Cannot pass both dims and has_coords=True to Query")
        dom = array.schema.domain
        if dims is True or coords is True:
            self._dims = [d.name for d in dom]
        elif dims:
            for d in dims:
                if not dom.has_dim(d):
                    raise TileDBError(f"Selected dimension does not exist: '{d}'")
            self._dims = list(dims)
        else:
            self._dims = None
        self._has_coords = coords
        if attrs is not None:
            # attributes may be given by position, as tiledb-py documents
            attrs = [array.schema.attr(n).name if isinstance(n, (int, np.integer)) else n for n in attrs]
            self.attrs = attrs
            for n in attrs:
                if not array.schema.has_attr(n):
                    raise TileDBError(f"Selected attribute does not exist: '{n}'")

    def _indexer_attrs(self):
        """The attributes ``multi_index`` and ``df`` return: those asked for, in the schema's
        order (as tiledb-py, whose query()[...] alone keeps the order asked)."""
        a = self.array
        if a.view_attr is not None:
            return [a.view_attr]
        names = [x.name for x in a.schema]
        if self.attrs is None:
            return names
        asked = list(self.attrs)
        return [n for n in names if n in asked] + [n for n in asked if n not in names]

    def _dim_names(self, default=None):
        """The dimensions a multi-range read returns (tiledb-py's rules)."""
        if self._dims is not None:
            return list(self._dims)
        if self._has_coords is False:
            return []
        if not self.array.schema.sparse:
            return []
        return [d.name for d in self.array.domain]

    def _attr_names(self):
        if self.attrs is None:
            return self.array._attr_names(None)
        return self.array._attr_names(self.attrs)

    def __getitem__(self, selection):
        a = self.array
        if self.return_arrow:
            raise TileDBError("`return_arrow=True` requires .df indexer`")
        # With return_incomplete alone, ``[]`` runs the read to completion (as tiledb-py);
        # with a memory budget too it gives the batches (Tessera's extension).
        if self.return_incomplete and self.memory_budget is not None:
            if a.schema.sparse:
                ranges = _sparse_ranges(a, selection)
            else:
                ranges, _, _ = _dense_ranges(a, selection)
            return self._batches(ranges)
        coords = self._has_coords if self._has_coords else self._dims
        if a.schema.sparse:
            return a.subarray(selection, coords=coords if coords is not None else False, attrs=self.attrs, cond=self.cond, order=self.order)
        return a.subarray(selection, attrs=self.attrs, cond=self.cond, coords=coords or False, order=self.order)

    def _batches(self, ranges, mask=True):
        """Results in batches of about the memory budget: for ``[]`` as ``A[...]`` gives them
        (attributes then dimensions, nulls masked), for ``multi_index`` as it does
        (dimensions then attributes). Dense batches are 1-D runs of the cells in order, with
        their coordinates."""
        budget = int(self.memory_budget or a_config_budget(self.array))
        a = self.array
        names = self._attr_names()
        attr_names = [n for n in names if a.schema.has_attr(n)]
        dims = self._dim_names() or [d.name for d in a.domain]
        order = self.order or ("U" if a.schema.sparse else "C")
        it = a._native.read_batches(budget, _to_engine_ranges(a, ranges), attr_names, dims, order, _translate_cond(self.cond, a.schema))

        def gen():
            for cols in it:
                res = _convert(cols, a._fields, a.schema._enums, mask_nulls=mask, labels=True)
                keys = (attr_names + dims) if mask else (dims + attr_names)
                yield OrderedDict((n, res[n]) for n in keys)

        return gen()

    def __arrow_c_stream__(self, requested_schema=None):
        """The query's cells (the whole of a sparse array, the non-empty domain of a dense
        one; dimensions, as ``.df`` returns them, then attributes) as an Arrow C stream of record batches of about the memory budget, for
        ``pyarrow.table(q)``, ``polars.from_arrow(q)``, DuckDB and other consumers of the
        protocol. ``requested_schema`` is not applied: the stream has the array's types."""
        a = self.array
        a._check_open()
        if a._mode != "r":
            raise TileDBError(f"Array must be opened in read mode to read (mode={a._mode!r})")
        order = self.order or ("U" if a.schema.sparse else "C")
        if not a.schema.sparse and order == "U":
            raise TileDBError("TILEDB_UNORDERED read is not supported for dense arrays")
        if a.schema.sparse and order == "U":
            order = "G"
        dims = self._dims if self._dims is not None else ([] if self._has_coords is False else [d.name for d in a.domain])
        budget = int(self.memory_budget or a_config_budget(a))
        return a._native.arrow_stream(budget, None, self._indexer_attrs(), dims, order, _translate_cond(self.cond, a.schema))

    def _batches_raw(self, ranges, attr_names, dims):
        a = self.array
        budget = int(self.memory_budget or a_config_budget(a))
        order = self.order or ("U" if a.schema.sparse else "C")
        return a._native.read_batches(budget, _to_engine_ranges(a, ranges), attr_names, dims or None, order, _translate_cond(self.cond, a.schema))

    @property
    def multi_index(self):
        return MultiRangeIndexer(self)

    @property
    def df(self):
        return DataFrameIndexer(self)

    def agg(self, aggs):
        return AggregationProxy(self, aggs)

    def submit(self):
        a = self.array
        if a.mode != "d":
            raise TileDBError("submit() without a subarray is only for deletes (mode='d')")
        if self.cond is None:
            raise TileDBError("a delete needs a condition (cond=)")
        start, end = _ts_range(a._timestamp)
        a._native.delete(_translate_cond(self.cond, a.schema), end)

    def __repr__(self):
        return f"Query(array={self.array!r}, attrs={self.attrs!r}, order={self.order!r})"


def a_config_budget(array) -> int:
    cfg = array._config or {}
    for k in ("sm.memory_budget", "py.init_buffer_bytes"):
        if k in cfg:
            return int(cfg[k])
    return 64 << 20


class MultiRangeIndexer:
    """``A.multi_index[...]`` and ``A.query(...).multi_index[...]``: inclusive ranges, the
    cross product of each dimension's ranges."""

    def __init__(self, query: Query):
        self.query = query
        self.array = query.array

    def __getitem__(self, idx):
        q = self.query
        a = self.array
        ranges = _multi_ranges(a, idx)
        if q.return_incomplete:
            return q._batches(ranges, mask=False)
        attr_names = q._indexer_attrs()
        dims = q._dim_names()
        order = q.order or ("U" if a.schema.sparse else "C")
        if q.return_arrow:
            raise TileDBError("`return_arrow=True` requires .df indexer`")
        cols = a._read_cols(ranges, attr_names, dims or None, order, q.cond)
        res = _convert(cols, a._fields, a.schema._enums, mask_nulls=False, labels=True)
        out = OrderedDict()
        for n in dims:
            out[n] = res[n]
        for n in attr_names:
            out[n] = res[n]
        if not a.schema.sparse:
            if order in ("C", "F", "G"):
                shape = []
                rng = dict(_to_engine_ranges(a, ranges))
                ok = True
                for dim in a.domain:
                    rs = dict(ranges).get(dim.name) or [dim.domain]
                    if dim.dtype.kind in "iuM":
                        shape.append(_range_len(dim, rs))
                    else:
                        ok = False
                if ok:
                    for n, v in out.items():
                        if v.size == int(np.prod(shape)):
                            # tiledb-py gives global-order cells the box's shape, row by row
                            out[n] = v.reshape(shape, order="F" if order == "F" else "C")
        return out


class DataFrameIndexer(MultiRangeIndexer):
    """``A.df[...]``: the cells as a pandas DataFrame (dimensions then attributes), built as
    tiledb-py builds it (through Arrow unless an attribute has several values per cell, or
    ``use_arrow=False``), with the index and dtypes its pandas metadata records."""

    def __getitem__(self, idx):
        q = self.query
        a = self.array
        ranges = _multi_ranges(a, idx)
        attr_names = q._indexer_attrs()
        dims = q._dim_names()
        order = q.order or ("U" if a.schema.sparse else "C")
        arrow_ok = not any(
            (f.ncells == _types.VAR and f.dtype.kind not in "SU") or (f.ncells not in (1, _types.VAR) and f.dtype.kind not in "SU")
            for f in (a._fields[n] for n in attr_names)
        )
        use_arrow = q.use_arrow
        if q.return_arrow and use_arrow is False:
            raise TileDBError("Cannot initialize return_arrow with use_arrow=False")
        if use_arrow and not arrow_ok:
            raise TileDBError("Multi-value attributes are not currently supported when use_arrow=True. Use `query(use_arrow=False)`.")
        use_arrow = arrow_ok if use_arrow is None else use_arrow
        if q.return_incomplete:
            return (self._frame(a, r, dims + attr_names, use_arrow, q.return_arrow) for r in q._batches_raw(ranges, attr_names, dims))
        cols = a._read_cols(ranges, attr_names, dims or None, order, q.cond)
        return self._frame(a, cols, dims + attr_names, use_arrow, q.return_arrow)

    def _frame(self, a, cols, names, use_arrow, return_arrow):
        import pandas as pd

        if not use_arrow:
            res = _convert(cols, a._fields, a.schema._enums, mask_nulls=False, labels=True)
            df = pd.DataFrame(OrderedDict((n, res[n]) for n in names))
            return _update_df_from_meta(df, a, self.query.index_col)
        by_name = {c[0]: c for c in cols}
        if not return_arrow and _plain_numeric(a, by_name, names):
            # What Arrow's to_pandas would give, without its copy of every column into a
            # new block: the engine's buffers become the frame's columns as they are.
            df = pd.DataFrame({n: by_name[n][1].view(a._fields[n].dtype) for n in names}, copy=False)
            return _update_df_from_meta(df, a, self.query.index_col)
        table = _arrow_table(a, cols, names)
        if return_arrow:
            return table
        df = table.to_pandas()
        return _update_df_from_meta(df, a, self.query.index_col)


def _plain_numeric(a, by_name, names):
    """Whether every column (``by_name``: the read's columns by name) is one integer or
    float (not half) value per cell, with no validity and no enumeration: the columns Arrow's
    pandas conversion gives back unchanged."""
    for n in names:
        f = a._fields[n]
        _, _data, offsets, validity, objects = by_name[n]
        if (f.ncells != 1 or f.enum is not None or offsets is not None or validity is not None
                or objects is not None or f.dtype.kind not in "iuf"
                or (f.dtype.kind == "f" and f.dtype.itemsize < 4)):
            return False
    return bool(names)


def _arrow_table(a, cols, names):
    """The cells as the pyarrow Table tiledb-py's dataframe path builds (its types, and the
    pandas metadata it attaches)."""
    import pyarrow as pa

    by_name = {c[0]: c for c in cols}
    arrays, fields, meta_cols = [], [], []
    for n in names:
        _, data, offsets, validity, objects = by_name[n]
        f = a._fields[n]
        mask = None if validity is None else (validity == 0)
        if f.enum is not None:
            e = a.schema.enum(f.enum)
            idx = pa.array(data.view(f.dtype), mask=mask)
            dictionary = pa.array(list(e.values()))
            arr = pa.DictionaryArray.from_arrays(idx, dictionary)
        elif offsets is not None:
            # Arrow's var-sized layout is the engine's plus the end offset: the cells' bytes
            # are handed over as they are (fill values keep their NUL, as tiledb-py's Arrow
            # path keeps it).
            ends = np.empty(len(offsets) + 1, dtype=np.int64)
            ends[:-1] = offsets
            ends[-1] = len(data)
            valid = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
            kind = pa.large_string() if f.type in ("string_utf8", "string_ascii") else pa.large_binary()
            arr = pa.Array.from_buffers(kind, len(offsets), [valid, pa.py_buffer(ends), pa.py_buffer(np.ascontiguousarray(data))], null_count=-1 if mask is not None else 0)
        elif f.dtype.kind == "S":
            width = max(f.dtype.itemsize, 1)
            cells = len(data) // width
            valid = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
            arr = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), cells, [valid, pa.py_buffer(data)], null_count=-1 if mask is not None else 0)
        elif f.dtype.kind == "b":
            arr = pa.array(data.view(np.uint8), mask=mask)
        else:
            arr = pa.array(data.view(f.dtype), mask=mask)
        if not f.is_dim and f.enum is None:
            if f.dtype.kind == "b":
                meta_cols.append({"field_name": n, "name": n, "numpy_type": "uint8", "pandas_type": "uint8"})
            elif f.nullable and f.dtype.kind in "iu":
                pd_t = f"{'U' if f.dtype.kind == 'u' else ''}Int{f.dtype.itemsize * 8}"
                meta_cols.append({"field_name": n, "name": n, "numpy_type": pd_t, "pandas_type": pd_t})
        arrays.append(arr)
        fields.append(pa.field(n, arr.type))
    meta = {b"pandas": json.dumps({
        "columns": meta_cols,
        "index_columns": [{"kind": "range", "name": None, "start": 0, "step": 1, "stop": len(arrays[0]) if arrays else 0}],
    }).encode()}
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def _update_df_from_meta(df, array, index_col=True):
    meta = array.meta
    dtypes = {}
    if "__pandas_attribute_repr" in meta:
        for n, dt in json.loads(meta["__pandas_attribute_repr"]).items():
            if n in df:
                dtypes[n] = dt
    index_cols = []
    if "__pandas_index_dims" in meta:
        idx = json.loads(meta["__pandas_index_dims"])
        index_cols = [c for c in idx if c in df]
        for n, dt in idx.items():
            if n in df:
                dtypes[n] = dt
    if dtypes:
        df = df.astype(dtypes, copy=False)
    if index_col:
        if index_col is not True:
            df.set_index(index_col, inplace=True)
        elif index_cols:
            df.set_index(index_cols, inplace=True)
            if "__tiledb_rows" in index_cols:
                index_cols[index_cols.index("__tiledb_rows")] = None
                if len(index_cols) == 1:
                    df.index.rename(index_cols[0], inplace=True)
                else:
                    df.index.rename(index_cols, inplace=True)
    return df


_AGG_OPS = ("sum", "min", "max", "mean", "count", "null_count")


class AggregationProxy:
    """``A.query(...).agg(...)[...]``: aggregates over the selected cells."""

    def __init__(self, query: Query, aggs):
        self.query = query
        a = query.array
        if isinstance(aggs, str):
            aggs = [aggs]
        if isinstance(aggs, dict):
            spec = {k: ([v] if isinstance(v, str) else list(v)) for k, v in aggs.items()}
        else:
            names = query._attr_names()
            spec = {n: list(aggs) for n in names}
        for name, ops in spec.items():
            if not a.schema.has_attr(name) and not a.schema.domain.has_dim(name):
                raise TileDBError(f"Selected attribute does not exist: {name!r}")
            for op in ops:
                if op not in _AGG_OPS:
                    raise TileDBError(f"{op!r} is not a valid aggregate (expected one of {_AGG_OPS})")
        self.spec = spec

    def __getitem__(self, idx):
        a = self.query.array
        if a.schema.sparse:
            ranges = _sparse_ranges(a, idx)
        else:
            ranges, _, _ = _dense_ranges(a, idx)
        return self._run(ranges)

    @property
    def df(self):
        raise NotImplementedError("`.df` is not supported for aggregates: use `[]` or `.multi_index`")

    @property
    def multi_index(self):
        proxy = self

        class _MI:
            def __getitem__(self, idx):
                return proxy._run(_multi_ranges(proxy.query.array, idx))

        return _MI()

    def _run(self, ranges):
        a = self.query.array
        texts, keys = [], []
        for name, ops in self.spec.items():
            for op in ops:
                texts.append((op, name))
                keys.append((name, op))
        vals = a._native.aggregate(texts, _to_engine_ranges(a, ranges), _translate_cond(self.query.cond, a.schema))
        out = OrderedDict()
        for (name, op), v in zip(keys, vals):
            if isinstance(v, tuple):
                tname, raw = v
                f = a._fields[name]
                if f.ncells == _types.VAR or tname in _types.STRING_TYPES:
                    v = raw.decode("utf-8", "replace") if tname == "string_utf8" else raw
                else:
                    v = np.frombuffer(raw, dtype=_types.VALUE_DTYPE[tname])[0]
                    if f.dtype.kind in "Mm":
                        v = v.astype(f.dtype)
            if isinstance(v, np.generic) and v.dtype.kind not in "Mm":
                v = v.item()
            if v is None and (op == "mean" or (op in ("min", "max", "sum") and a._fields[name].dtype.kind == "f")):
                v = float("nan")
            out.setdefault(name, OrderedDict())[op] = v
        if len(keys) == 1:
            name, op = keys[0]
            return out[name][op]
        if len(out) == 1 and not isinstance(self.spec, dict):
            return next(iter(out.values()))
        if len(out) == 1:
            (name, ops), = out.items()
            return dict(ops)
        return {n: dict(ops) for n, ops in out.items()}


# ---------------------------------------------------------------------------------------


def open(uri, mode: str = "r", key=None, attr=None, config=None, timestamp=None, ctx=None):
    """Opens the array at ``uri`` as a `DenseArray` or `SparseArray`."""
    t = _tessera.object_type(str(uri))
    if t != "array":
        raise TileDBError(f"[TileDB::Array] Error: Cannot open array; Array does not exist: {uri}")
    native = _native_open(str(uri), timestamp, _key_bytes(key, _config_dict(config, ctx)))
    schema_json = native.schema_json()
    cls = SparseArray if json.loads(schema_json)["array_type"] == "sparse" else DenseArray
    # the array opened above is the one handed over (opened once)
    return cls(uri, mode=mode, key=key, timestamp=timestamp, attr=attr, config=config, ctx=ctx, _native=native)
