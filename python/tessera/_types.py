"""TileDB datatypes (by the engine's lowercase names) and the numpy dtypes tiledb-py gives
them, in both directions."""

from __future__ import annotations

import numpy as np

VAR = 4294967295
"""The ``cell_val_num`` of var-sized cells (``TILEDB_VAR_NUM``)."""

_UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
_DT_NAMES = ["year", "month", "week", "day", "hr", "min", "sec", "ms", "us", "ns", "ps", "fs", "as"]

_NAME_TO_NUMPY = {
    "bool": np.dtype("bool"),
    "int8": np.dtype("int8"),
    "int16": np.dtype("int16"),
    "int32": np.dtype("int32"),
    "int64": np.dtype("int64"),
    "uint8": np.dtype("uint8"),
    "uint16": np.dtype("uint16"),
    "uint32": np.dtype("uint32"),
    "uint64": np.dtype("uint64"),
    "float32": np.dtype("float32"),
    "float64": np.dtype("float64"),
    "char": np.dtype("S1"),
    "string_utf8": np.dtype("<U1"),
    "string_ascii": np.dtype("S"),
    "blob": np.dtype("S"),
    "geom_wkb": np.dtype("S"),
    "geom_wkt": np.dtype("S"),
}
for _u, _n in zip(_UNITS, _DT_NAMES):
    _NAME_TO_NUMPY["datetime_" + _n] = np.dtype(f"<M8[{_u}]")
for _u, _n in zip(_UNITS[4:], _DT_NAMES[4:]):
    _NAME_TO_NUMPY["time_" + _n] = np.dtype(f"<m8[{_u}]")

_NUMPY_TO_NAME = {}
for _name, _dt in _NAME_TO_NUMPY.items():
    if _name in ("string_ascii", "blob", "geom_wkb", "geom_wkt"):
        continue
    _NUMPY_TO_NAME[_dt] = _name
_NUMPY_TO_NAME[np.dtype("complex64")] = "float32"
_NUMPY_TO_NAME[np.dtype("complex128")] = "float64"

#: Engine names of the fixed-size numeric types and the little-endian numpy dtype of one value.
VALUE_DTYPE = {
    **{n: d for n, d in _NAME_TO_NUMPY.items() if d.kind in "biufMm"},
    "char": np.dtype("S1"),
    "string_ascii": np.dtype("S1"),
    "string_utf8": np.dtype("S1"),
    "string_utf16": np.dtype("<u2"),
    "string_utf32": np.dtype("<u4"),
    "string_ucs2": np.dtype("<u2"),
    "string_ucs4": np.dtype("<u4"),
    "blob": np.dtype("u1"),
    "any": np.dtype("u1"),
    "geom_wkb": np.dtype("u1"),
    "geom_wkt": np.dtype("S1"),
}

STRING_TYPES = {"string_ascii", "string_utf8", "string_utf16", "string_utf32", "string_ucs2", "string_ucs4"}


def from_numpy(dtype) -> tuple[np.dtype, str, int]:
    """``(numpy dtype, engine type name, cell_val_num)`` of a dtype given as tiledb-py
    accepts it (numpy dtypes, Python types, ``"ascii"``, ``"blob"``, ``"wkb"``, ``"wkt"``)."""
    if isinstance(dtype, str):
        if dtype == "ascii":
            return np.dtype("S"), "string_ascii", VAR
        if dtype == "blob":
            return np.dtype("S"), "blob", 1
        if dtype == "wkb":
            return np.dtype("S"), "geom_wkb", 1
        if dtype == "wkt":
            return np.dtype("S"), "geom_wkt", 1
    dtype = np.dtype(dtype)
    if dtype.kind == "V":
        if dtype.fields is None:
            raise TypeError(f"{dtype!r} cannot be mapped to a DataType")
        bases = {v[0] for v in dtype.fields.values()}
        if len(bases) > 1:
            raise TypeError("heterogenous record numpy dtypes are not supported")
        base = bases.pop()
        ncells = len(dtype.fields)
    elif dtype.kind in "SU":
        base = np.dtype((dtype.kind, 1))
        ncells = VAR if dtype.itemsize == 0 else dtype.itemsize // base.itemsize
    else:
        base = dtype
        ncells = 2 if dtype.kind == "c" else 1
    name = _NUMPY_TO_NAME.get(base.newbyteorder("<") if base.byteorder == ">" else base)
    if name is None:
        raise TypeError(f"{dtype!r} cannot be mapped to a DataType")
    return dtype, name, ncells


def to_numpy(name: str, ncells: int) -> np.dtype:
    """The numpy dtype tiledb-py gives a field of engine type ``name``."""
    if name in ("string_utf16", "string_utf32", "string_ucs2", "string_ucs4"):
        base = np.dtype("U1")
    elif name == "any":
        base = np.dtype("S")
    else:
        base = _NAME_TO_NUMPY.get(name)
        if base is None:
            raise TypeError(f"datatype {name!r} has no numpy equivalent")
    if name in ("char", "string_utf8"):
        return np.dtype((base.kind, ncells) if ncells != VAR else base.kind)
    if ncells in (1, VAR):
        return base
    if ncells == 2 and base.kind == "f":
        return np.dtype("complex64" if base.itemsize == 4 else "complex128")
    return np.dtype([("", base)] * ncells)


def is_datetime(name: str) -> bool:
    return name.startswith("datetime_")


def is_time(name: str) -> bool:
    return name.startswith("time_")


def unit(name: str) -> str:
    """The numpy unit of a datetime or time type."""
    return _UNITS[_DT_NAMES.index(name.split("_", 1)[1])]
