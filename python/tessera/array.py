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
from .metadata import Metadata
from .schema import ArraySchema

_INT_TYPES = (int, np.integer)


def _ts_range(timestamp):
    """(start, end) for the engine of tiledb-py's ``timestamp=``."""
    if timestamp is None:
        return None, None
    if isinstance(timestamp, tuple):
        if len(timestamp) != 2:
            raise TileDBError("timestamp must be an int or a (start, end) tuple")
        t0, t1 = timestamp
        return (0 if t0 is None else int(t0)), (None if t1 is None else int(t1))
    return None, int(timestamp)


def _native_open(uri: str, timestamp=None):
    start, end = _ts_range(timestamp)
    return _tessera.NativeArray.open(str(uri), start, end)


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
                raise IndexError(f"empty slice {start}:{stop} on dimension {dim.name!r}")
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

    def __init__(self, uri, mode: str = "r", key=None, timestamp=None, attr=None, config=None, ctx=None):
        if mode not in ("r", "w", "d", "m"):
            raise TileDBError(f"invalid mode {mode!r} (expected 'r', 'w', 'd' or 'm')")
        if key is not None:
            raise _tessera.NotSupportedError("encrypted arrays are not supported yet (key=)")
        self._uri = str(uri)
        self._mode = mode
        self._timestamp = timestamp
        self._config = _config_dict(config, ctx)
        self._native = _native_open(self._uri, timestamp)
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
        if key is not None:
            raise _tessera.NotSupportedError("encrypted arrays are not supported yet (key=)")
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
        _tessera.create_array(str(uri), json.dumps(schema._to_json()))

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
        if timestamp is not None:
            self._timestamp = timestamp
        self._native = _native_open(self._uri, self._timestamp)
        self._schema = ArraySchema._from_json(json.loads(self._native.schema_json()))
        self._fields = _fields(self._schema)
        self._isopen = True
        self._meta = None

    def __getstate__(self):
        # Pickled as its URI, mode and the timestamp range it was opened at: the copy
        # reopens the same version wherever it is unpickled (credentials come from there).
        return {"uri": self._uri, "mode": self._mode, "timestamp": tuple(self._native.timestamp_range()) if self._mode == "r" else self._timestamp, "attr": self.view_attr}

    def __setstate__(self, state):
        type(self).__init__(self, state["uri"], mode=state["mode"], timestamp=state["timestamp"], attr=state["attr"])

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
        return self._schema.attr(0).dtype

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
            elif isinstance(lo, bytes):
                out.append((lo.decode("utf-8", "replace"), hi.decode("utf-8", "replace")))
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
        pending, self._pending_meta = self._pending_meta, None
        puts = [(k.encode("utf-8"), t, raw) for k, v in pending.items() if v is not None for t, raw in [v]]
        deletes = [k.encode("utf-8") for k, v in pending.items() if v is None]
        if puts or deletes:
            start, end = _ts_range(self._timestamp)
            _tessera.put_array_metadata(self._uri, puts, deletes, end)

    def _meta_range(self):
        return tuple(self._native.timestamp_range())

    # -- reads ------------------------------------------------------------------------------
    def _read_cols(self, ranges, attrs, dims, order, cond):
        self._check_open()
        if self._mode != "r":
            raise TileDBError(f"Array must be opened in read mode to read (mode={self._mode!r})")
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
        return MultiRangeIndexer(Query(self, coords=None))

    @property
    def df(self):
        return DataFrameIndexer(Query(self, coords=True))

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
        res = _convert(cols, self._fields, self._schema._enums, mask_nulls=False)
        out = OrderedDict((n, res[n]) for n in names)
        for n in dim_names or []:
            out[n] = res[n]
        return out

    def consolidate(self, config=None, key=None, fragment_uris=None, timestamp=None):
        from .highlevel import consolidate

        return consolidate(self._uri, config=config, key=key, fragment_uris=fragment_uris, timestamp=timestamp)

    def label_index(self, labels):
        raise _tessera.NotSupportedError("dimension labels are not supported for reads yet")

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
            values = values.filled(values.fill_value if values.dtype.kind not in "OSU" else "")
        if f.ncells == _types.VAR:
            arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
            flat = arr.reshape(-1, order="K") if arr.ndim > 1 else arr
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
            ok = np.can_cast(arr.dtype, want, casting="same_kind") or (arr.dtype.kind in "iub" and want.kind in "iuf") or (arr.dtype.kind == "f" and want.kind == "f")
            if want.kind == "V" or arr.dtype.kind == "V" or arr.dtype.kind in "SU" or want.kind in "SU":
                ok = arr.dtype.itemsize == want.itemsize or (arr.dtype.kind == want.kind == "S")
            if arr.dtype.kind == "M" and want.kind == "M":
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
            if arr.dtype.kind == "f":
                validity = (~np.isnan(arr.reshape(-1))).astype(np.uint8) if False else np.ones(arr.size, np.uint8)
            else:
                validity = np.ones(arr.size if f.ncells in (1,) else arr.size, np.uint8)
        return (name, data, None, validity)

    def _submit(self, cols, ranges=None, order=None):
        return self._native.write(cols, ranges, order, self._write_timestamp())

    def __repr__(self):
        kind = "SparseArray" if self._schema.sparse else "DenseArray"
        if self._isopen:
            return f"{kind}(uri={self._uri!r}, mode={self._mode}, ndim={self._schema.ndim})"
        return f"{kind}(uri={self._uri!r}, mode=closed)"

    def __del__(self):
        try:
            if getattr(self, "_pending_meta", None) is not None:
                self._flush_meta()
        except Exception:
            pass

    # -- lifecycle ---------------------------------------------------------------------------
    @staticmethod
    def delete_array(uri, ctx=None):
        raise _tessera.NotSupportedError("deleting arrays is not supported yet")

    @staticmethod
    def delete_fragments(uri, timestamp_start, timestamp_end, ctx=None):
        raise _tessera.NotSupportedError("deleting fragments is not supported yet")


class DenseArray(Array):
    """A dense array."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self._schema.sparse:
            raise ValueError(f"Array at {self._uri} is not a dense array")

    def __len__(self):
        return self.domain.shape[0]

    def __getitem__(self, selection):
        res = self.subarray(selection)
        return res

    def subarray(self, selection, attrs=None, cond=None, coords=False, order=None):
        self._check_open()
        if self._mode != "r":
            raise TileDBError("Write mode is not supported for subarray queries on Dense Arrays" if self._mode == "w" else "Invalid mode for subarray query on Dense Array")
        ranges, drop, steps = _dense_ranges(self, selection)
        return self._dense_read(ranges, drop, steps, attrs, cond, coords, order or "C", mask=True, labels=True)

    def _dense_read(self, ranges, drop, steps, attrs, cond, coords, order, mask, labels):
        names = self._attr_names(attrs)
        attr_names = [n for n in names if self._schema.has_attr(n)]
        dim_names = [d.name for d in self.domain] if coords is True else ([n for n in names if self.domain.has_dim(n)] + list(coords or []) if coords else [n for n in names if self.domain.has_dim(n)])
        cols = self._read_cols(ranges, attr_names, dim_names or None, order, cond)
        res = _convert(cols, self._fields, self._schema._enums, mask_nulls=mask, labels=labels)
        shape = []
        rng = dict(ranges)
        for dim in self.domain:
            rs = rng.get(dim.name)
            if rs is None:
                shape.append(dim.size)
            elif dim.isvar:
                shape.append(None)
            else:
                shape.append(_range_len(dim, rs) if dim.dtype.kind != "f" else None)
        out = OrderedDict()
        for n in dim_names or []:
            out[n] = res[n]
        for n in attr_names:
            out[n] = res[n]
        if order in ("C", "F") and None not in shape:
            for n, v in out.items():
                if v.size == int(np.prod(shape)):
                    v = v.reshape(shape, order=order)
                    if any(s is not None for s in steps):
                        v = v[tuple(slice(None, None, s) for s in steps)]
                    if drop:
                        v = v.reshape([s for i, s in enumerate(v.shape) if i not in drop], order=order) if v.ndim else v
                        if v.ndim == 0 or v.size == 1 and not v.shape:
                            v = v[()]
                    out[n] = v
        if self.view_attr is not None and attrs is None and not coords:
            return out[self.view_attr]
        if len(out) == 1 and attrs is None and not coords and len(attr_names) == 1:
            return out[attr_names[0]]
        return out

    def __setitem__(self, selection, value):
        self._check_write()
        ranges, drop, steps = _dense_ranges(self, selection) if selection != () else ([], [], [])
        if any(s is not None for s in steps):
            raise IndexError("steps are not supported in writes")
        if isinstance(value, dict):
            items = list(value.items())
        else:
            if self._schema.nattr != 1:
                raise ValueError("value must be a dict with one array per attribute")
            items = [(self._schema.attr(0).name, value)]
        shape = [(_range_len(d, dict(ranges).get(d.name, [d.domain])) if dict(ranges).get(d.name) else d.size) for d in self.domain]
        cols = []
        nullmaps = {}
        for name, v in items:
            if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], np.ndarray) and False:
                pass
            a = self._schema.attr(name)
            if not isinstance(v, np.ndarray) and not a.isvar:
                v = np.asarray(v)
            if isinstance(v, np.ndarray) and v.dtype.kind != "O" and not a.isvar:
                expect = int(np.prod([s for i, s in enumerate(shape)]))
                if v.size * max(1, 1) != expect and not (a.ncells > 1 and v.dtype.kind != "V" and v.size == expect * a.ncells):
                    raise ValueError(f"value shape {v.shape} does not match the subarray shape {tuple(shape)}")
            elif isinstance(v, np.ndarray) and v.size != int(np.prod(shape)):
                raise ValueError(f"value shape {v.shape} does not match the subarray shape {tuple(shape)}")
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
        return self.subarray(selection)

    def subarray(self, selection, coords=True, attrs=None, cond=None, order=None):
        self._check_open()
        if self._mode != "r":
            raise TileDBError("Array must be opened in read mode for reads")
        ranges = _sparse_ranges(self, selection)
        return self._sparse_read(ranges, attrs, cond, coords, order or "U", mask=True, labels=True)

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

    def query(self, attrs=None, cond=None, dims=None, coords=True, order="U", use_arrow=None, return_arrow=False, return_incomplete=False, index_col=True, memory_budget=None, attr_cond=None):
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
                e = int(hi) if stop is None else int(stop) - 1
                if s < int(lo) or e > int(hi):
                    raise IndexError(f"index out of bounds of dimension {dim.name!r} domain {lo}..{hi}")
                out.append((dim.name, [(s, e)]))
            else:
                s = lo if start is None else start
                e = hi if stop is None else stop
                out.append((dim.name, [(s, e)]))
        elif isinstance(sel, (list, np.ndarray)):
            raise IndexError("lists of indices are not supported by []: use .multi_index")
        else:
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
        if dims not in (None, False) and dims is not True:
            for d in dims:
                if not array.schema.domain.has_dim(d):
                    raise TileDBError(f"Selected dimension does not exist: {d!r}")

    def _dim_names(self, default):
        if self.dims is True:
            return [d.name for d in self.array.domain]
        if self.dims not in (None, False):
            return list(self.dims)
        if self.coords is True:
            return [d.name for d in self.array.domain]
        if self.coords is None:
            return default
        return []

    def _attr_names(self):
        if self.attrs is None:
            return self.array._attr_names(None)
        return self.array._attr_names(self.attrs)

    def __getitem__(self, selection):
        a = self.array
        if self.return_incomplete:
            if a.schema.sparse:
                ranges = _sparse_ranges(a, selection)
            else:
                ranges, _, _ = _dense_ranges(a, selection)
            return self._batches(ranges)
        if a.schema.sparse:
            ranges = _sparse_ranges(a, selection)
            dims = self._dim_names([d.name for d in a.domain])
            res = a._sparse_read(ranges, self.attrs if self.attrs is not None else None, self.cond, dims, self.order or "U", mask=True, labels=True)
            if isinstance(res, dict) and self.attrs is not None:
                return res
            return res
        ranges, drop, steps = _dense_ranges(a, selection)
        dims = self._dim_names([])
        res = a._dense_read(ranges, drop, steps, self._attr_names(), self.cond, dims or False, self.order or "C", mask=True, labels=True)
        if not isinstance(res, dict):
            res = OrderedDict([(self._attr_names()[0], res)])
        return res

    def _batches(self, ranges):
        budget = int(self.memory_budget or a_config_budget(self.array))
        a = self.array
        names = self._attr_names()
        attr_names = [n for n in names if a.schema.has_attr(n)]
        dims = self._dim_names([d.name for d in a.domain]) or [d.name for d in a.domain]
        order = self.order or ("U" if a.schema.sparse else "C")
        it = a._native.read_batches(budget, _to_engine_ranges(a, ranges), attr_names, dims, order, _translate_cond(self.cond, a.schema))
        for cols in it:
            res = _convert(cols, a._fields, a.schema._enums, mask_nulls=False, labels=True)
            out = OrderedDict()
            for n in attr_names:
                out[n] = res[n]
            for n in dims:
                out[n] = res[n]
            yield out

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
            return q._batches(ranges)
        names = q._attr_names()
        attr_names = [n for n in names if a.schema.has_attr(n)]
        if a.schema.sparse:
            dims = q._dim_names([d.name for d in a.domain])
            order = q.order or "U"
        else:
            dims = q._dim_names([])
            order = q.order or "C"
        dims = [n for n in names if a.schema.domain.has_dim(n) and n not in dims] + dims
        if q.return_arrow:
            return self._arrow(ranges, attr_names, dims, order)
        cols = a._read_cols(ranges, attr_names, dims or None, order, q.cond)
        res = _convert(cols, a._fields, a.schema._enums, mask_nulls=False, labels=True)
        out = OrderedDict()
        if a.schema.sparse:
            for n in attr_names:
                out[n] = res[n]
            for n in dims:
                out[n] = res[n]
        else:
            for n in dims:
                out[n] = res[n]
            for n in attr_names:
                out[n] = res[n]
            if order in ("C", "F"):
                shape = []
                rng = dict(_to_engine_ranges(a, ranges))
                ok = True
                for dim in a.domain:
                    rs = dict(ranges).get(dim.name)
                    if not rs:
                        ok = False
                        break
                    if dim.dtype.kind in "iuM":
                        shape.append(_range_len(dim, rs))
                    else:
                        ok = False
                if ok:
                    for n, v in out.items():
                        if v.size == int(np.prod(shape)):
                            out[n] = v.reshape(shape, order=order)
        return out

    def _arrow(self, ranges, attr_names, dims, order):
        import pyarrow as pa

        a = self.array
        cols = a._read_cols(ranges, attr_names, dims or None, order, self.query.cond)
        res = _convert(cols, a._fields, a.schema._enums, mask_nulls=True, labels=True)
        arrays, names = [], []
        for n in dims + attr_names:
            v = res[n]
            if isinstance(v, np.ma.MaskedArray):
                arrays.append(pa.array(v.data, mask=np.ma.getmaskarray(v)))
            else:
                arrays.append(pa.array(v))
            names.append(n)
        return pa.Table.from_arrays(arrays, names=names)


class DataFrameIndexer(MultiRangeIndexer):
    """``A.df[...]``: the cells as a pandas DataFrame (dimensions then attributes), with the
    index and dtypes tiledb-py's pandas metadata records."""

    def __getitem__(self, idx):
        import pandas as pd

        q = self.query
        a = self.array
        ranges = _multi_ranges(a, idx)
        names = q._attr_names()
        attr_names = [n for n in names if a.schema.has_attr(n)]
        dims = q._dim_names([d.name for d in a.domain]) if q.dims not in (None, False) or q.coords in (True, None) else []
        if q.dims is None and q.coords in (True, None, False) and not (q.coords is False and a.schema.sparse is False and q.dims is not None):
            dims = [d.name for d in a.domain] if q.coords is not False or q.dims is None else dims
        order = q.order or ("U" if a.schema.sparse else "C")
        if q.return_incomplete:
            return (self._frame(pd, a, r) for r in q._batches(ranges))
        cols = a._read_cols(ranges, attr_names, dims or None, order, q.cond)
        res = _convert(cols, a._fields, a.schema._enums, mask_nulls=True, labels=False)
        data = OrderedDict()
        for n in dims:
            data[n] = res[n]
        for n in attr_names:
            data[n] = res[n]
        if q.return_arrow:
            import pyarrow as pa

            return pa.Table.from_pandas(self._frame(pd, a, data), preserve_index=False)
        return self._frame(pd, a, data)

    def _frame(self, pd, a, data):
        cols = {}
        for n, v in data.items():
            f = a._fields[n]
            if f.enum is not None:
                vals = a.schema.enum(f.enum).values()
                codes = np.asarray(v.data if isinstance(v, np.ma.MaskedArray) else v).astype(np.int64)
                if isinstance(v, np.ma.MaskedArray):
                    codes = np.where(np.ma.getmaskarray(v), -1, codes)
                cols[n] = pd.Categorical.from_codes(codes, categories=vals, ordered=a.schema.enum(f.enum).ordered)
            elif isinstance(v, np.ma.MaskedArray):
                m = np.ma.getmaskarray(v)
                if v.dtype.kind in "iu":
                    cols[n] = pd.array(v.data, dtype=f"{'U' if v.dtype.kind == 'u' else ''}Int{v.dtype.itemsize * 8}")
                    cols[n][m] = pd.NA
                elif v.dtype.kind == "f":
                    cols[n] = np.where(m, np.nan, v.data)
                elif v.dtype.kind == "O":
                    d = v.data.copy()
                    d[m] = None
                    cols[n] = d
                elif v.dtype.kind == "b":
                    cols[n] = pd.array(np.where(m, None, v.data), dtype="boolean")
                else:
                    cols[n] = v.data
            elif v.dtype.kind == "V" or (v.dtype.kind == "S" and v.dtype.itemsize > 1 and False):
                cols[n] = list(v)
            elif f.type == "bool" or v.dtype.kind == "b":
                cols[n] = v.astype(bool)
            else:
                cols[n] = v
        df = pd.DataFrame(cols)
        return _update_df_from_meta(df, a, self.query.index_col)


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
                texts.append("count" if op == "count" else f"{op}({name})")
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
            elif v is not None and op in ("sum",):
                f = a._fields[name]
                v = np.float64(v) if f.dtype.kind == "f" else (np.uint64(v) if f.dtype.kind == "u" else np.int64(v))
            elif v is not None and op == "mean":
                v = np.float64(v)
            elif v is not None and op in ("count", "null_count"):
                v = np.uint64(v)
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
    native = _native_open(str(uri), timestamp)
    sparse = json.loads(native.schema_json())["array_type"] == "sparse"
    cls = SparseArray if sparse else DenseArray
    return cls(uri, mode=mode, key=key, timestamp=timestamp, attr=attr, config=config, ctx=ctx)
