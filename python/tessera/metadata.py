"""Array and group metadata as tiledb-py exposes it (``A.meta``): a mutable mapping whose
values are numbers, strings, bytes, tuples and numpy arrays, stored as tiledb-py stores them
(numpy arrays flattened under ``__np_flat_<key>``, with ``__np_shape_<key>`` for more than one
dimension). Changes are written when the array or group is closed, in one session."""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np

from . import _tessera, _types
from ._tessera import TileDBError

_NP_DATA = "__np_flat_"
_NP_SHAPE = "__np_shape_"


def _pack(value) -> tuple[str, bytes]:
    """(engine type name, bytes) of a value, as tiledb-py packs it."""
    if isinstance(value, bytes):
        return "blob", value
    if isinstance(value, str):
        return "string_utf8", value.encode("utf-8")
    if isinstance(value, np.ndarray):
        flat = np.ascontiguousarray(value.ravel())
        if flat.dtype.kind == "U":
            return "string_utf8", "".join(flat.tolist()).encode("utf-8")
        if flat.dtype.kind == "S":
            return "char", b"".join(flat.tolist())
        _, name, _n = _types.from_numpy(flat.dtype)
        return name, flat.astype(flat.dtype.newbyteorder("<")).tobytes()
    if isinstance(value, np.generic):
        if isinstance(value, np.str_):
            return "string_utf8", str(value).encode("utf-8")
        if isinstance(value, np.bytes_):
            return "char", bytes(value)
        _, name, _n = _types.from_numpy(value.dtype)
        return name, np.asarray(value).astype(value.dtype.newbyteorder("<")).tobytes()
    if not isinstance(value, (list, tuple)):
        value = (value,)
    if not value:
        return "int32", b""
    v0 = value[0]
    if not isinstance(v0, (int, float)):
        raise TypeError(f"Unsupported item type '{type(v0)}'")
    kind = int if isinstance(v0, int) else float
    for v in value:
        if not isinstance(v, kind):
            raise TypeError(f"Mixed-type sequences are not supported: {value}")
    dt = np.int64 if kind is int else np.float64
    return ("int64" if kind is int else "float64"), np.array(value, dtype=dt).tobytes()


def session(pending: dict | None) -> tuple[list, list]:
    """The engine's (puts, deletes) of a write session's changes (key -> packed value, or
    None for a deletion; the last change of a key wins)."""
    pending = pending or {}
    puts = [(k.encode("utf-8"), v[0], v[1]) for k, v in pending.items() if v is not None]
    deletes = [k.encode("utf-8") for k, v in pending.items() if v is None]
    return puts, deletes


def _unpack(tname: str, raw: bytes, as_array: bool):
    if tname == "string_utf8" and not as_array:
        return raw.decode("utf-8", "replace")
    if tname in ("blob", "char", "string_ascii") and not as_array:
        return raw
    dt = _types.VALUE_DTYPE.get(tname)
    if dt is None:
        raise TileDBError(f"metadata of type {tname} cannot be read")
    if tname in ("string_utf8",):
        return np.array([raw.decode("utf-8", "replace")])
    if as_array:
        # A copy the caller owns (tiledb-py returns a view of memory freed when the array
        # closes; Tessera's value stays valid).
        arr = np.frombuffer(raw, dtype=dt).copy()
        if dt.kind in "Mm":
            arr = arr.view(_types.to_numpy(tname, 1))
        return arr
    arr = np.frombuffer(raw, dtype=dt)
    if dt.kind in "Mm":
        arr = arr.view(_types.to_numpy(tname, 1))
    if len(arr) == 1:
        v = arr[0]
        if dt.kind in "if":
            return dt.type(v)
        if dt.kind == "u":
            return int(v)
        if dt.kind == "b":
            return bool(v)
        return v
    if len(arr) == 0:
        return ()
    return tuple(x.item() for x in arr)


class Metadata(MutableMapping):
    """The metadata of an array or group."""

    def __init__(self, owner):
        self._owner = owner
        self._cache = None

    def _load(self) -> dict:
        if getattr(self._owner, "mode", "r") == "w" and not hasattr(self._owner, "_adds"):
            raise TileDBError("array metadata can only be read with the array open for reading")
        if self._cache is None:
            o = self._owner
            start, end = o._meta_range() if hasattr(o, "_meta_range") else o._native.timestamp_range()
            entries = _tessera.array_metadata(o.uri, start, end, getattr(o, "_key", None))
            self._cache = {k.decode("utf-8", "surrogateescape"): (t, v) for k, t, v in entries}
        state = dict(self._cache)
        pending = getattr(self._owner, "_pending_meta", None)
        if pending is not None:
            for k, v in pending.items():
                if v is None:
                    state.pop(k, None)
                else:
                    state[k] = v
        return state

    def _pending(self) -> dict:
        o = self._owner
        if o.mode not in ("w", "m"):
            raise TileDBError(f"the array or group must be open for writing to change metadata (mode={o.mode!r})")
        if o._pending_meta is None:
            o._pending_meta = {}
        return o._pending_meta

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"Unexpected key type '{type(key)}': expected str")
        pending = self._pending()
        for k in (key, _NP_DATA + key, _NP_SHAPE + key):
            pending[k] = None
        if isinstance(value, np.ndarray):
            flat = value.ravel()
            pending[_NP_DATA + key] = _pack(flat)
            if value.shape != flat.shape:
                pending[_NP_SHAPE + key] = _pack(tuple(int(s) for s in value.shape))
        else:
            pending[key] = _pack(value)

    def __getitem__(self, key):
        if not isinstance(key, str):
            raise TypeError(f"Unexpected key type '{type(key)}': expected str")
        state = self._load()
        if key in state:
            t, raw = state[key]
            return _unpack(t, raw, False)
        if _NP_DATA + key in state:
            t, raw = state[_NP_DATA + key]
            arr = _unpack(t, raw, True)
            if _NP_SHAPE + key in state:
                st, sraw = state[_NP_SHAPE + key]
                shape = _unpack(st, sraw, False)
                arr = arr.reshape(shape if isinstance(shape, tuple) else (shape,))
            return arr
        raise KeyError(f"KeyError: {key}")

    def __delitem__(self, key):
        if not isinstance(key, str):
            raise TypeError(f"Unexpected key type '{type(key)}': expected str")
        pending = self._pending()
        for k in (key, _NP_DATA + key, _NP_SHAPE + key):
            pending[k] = None

    def __contains__(self, key) -> bool:
        if not isinstance(key, str):
            raise TypeError(f"Unexpected key type '{type(key)}': expected str")
        state = self._load()
        return key in state or (_NP_DATA + key) in state

    def _keys(self):
        out = []
        for k in self._load():
            if k.startswith(_NP_SHAPE):
                continue
            out.append(k[len(_NP_DATA):] if k.startswith(_NP_DATA) else k)
        return out

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def consolidate(self, config=None, ctx=None):
        _tessera.consolidate(self._owner.uri, "array_meta")

    def dump(self):
        for k, v in self.items():
            print(f"### Array Metadata ###\n- Key: {k}\n- Value: {v}\n")
