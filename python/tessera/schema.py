"""Schema objects as tiledb-py has them (`Dim`, `Domain`, `Attr`, `Enumeration`,
`ArraySchema`), kept as plain Python values and exchanged with the engine as its schema JSON
(docs/cli.md)."""

from __future__ import annotations

import io
import json
import math
from typing import Any, Sequence

import numpy as np

from . import _types
from ._tessera import TileDBError
from .filter import FilterList, ZstdFilter, RleFilter, _as_filter_list


def _json_value(v, name: str):
    """A scalar as the schema JSON writes values of type ``name``."""
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return int(v.astype(np.int64))
    if isinstance(v, (bytes, np.bytes_)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": bytes(v).hex()}
    if isinstance(v, (str, np.str_)):
        return str(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    raise TypeError(f"cannot store {v!r} as a {name} value")


def _from_json_value(j, dtype: np.dtype):
    if isinstance(j, str) and dtype.kind == "f":
        return dtype.type(float(j.replace("Infinity", "inf")))
    if dtype.kind in "Mm":
        return dtype.type(int(j), np.datetime_data(dtype)[0])
    if dtype.kind in "SU":
        return j
    return dtype.type(j)


class Dim:
    """A dimension: name, domain, tile extent, datatype and filters."""

    def __init__(self, name: str = "__dim_0", domain=None, tile=None, filters=None, dtype=np.uint64, var=None, ctx=None):
        npdt = np.dtype("S") if isinstance(dtype, str) and dtype == "ascii" else np.dtype(dtype)
        if npdt.kind not in "iufMS":
            raise TypeError(f"invalid Dim dtype {npdt!r}")
        if var and npdt.kind != "S":
            raise TypeError("'var=True' specified for non-str/bytes dtype")
        if npdt.kind == "S":
            # string dimensions are var-sized ASCII; tiledb-py ignores a domain and tile
            self._type = "string_ascii"
            self._dtype = np.dtype("S")
            self._domain = None
            self._tile = None
        else:
            npdt, tname, ncells = _types.from_numpy(npdt)
            self._type, self._dtype = tname, npdt
            if domain is None or (len(domain) == 2 and domain[0] is None and domain[1] is None):
                if npdt.kind in "Mm":
                    info = np.iinfo(np.int64)
                    domain = (info.min + 1, info.max)
                elif npdt.kind == "f":
                    domain = (np.finfo(npdt).min, np.finfo(npdt).max)
                else:
                    domain = (np.iinfo(npdt).min, np.iinfo(npdt).max)
            elif npdt.kind in "iu":
                info = np.iinfo(npdt)
                if not all(info.min <= v <= info.max for v in domain):
                    raise TypeError(f"invalid domain extent, domain cannot be safely cast to dtype {npdt!r}")
            lo, hi = (self._cast(v) for v in domain)
            if hi < lo:
                raise TileDBError("Dimension: Domain check failed; lower domain bound larger than its upper")
            if npdt.kind in "iuMm":
                a = int(np.asarray(lo).astype(np.int64)) if npdt.kind in "Mm" else int(lo)
                b = int(np.asarray(hi).astype(np.int64)) if npdt.kind in "Mm" else int(hi)
                if b - a + 1 > (1 << (8 * npdt.itemsize)) - 1:
                    raise TileDBError("Dimension: Domain check failed; Domain range (upper + lower + 1) is larger than the maximum unsigned number")
            self._domain = (lo, hi)
            if tile is not None:
                if isinstance(tile, np.timedelta64) and npdt.kind == "M":
                    tile = int(tile / np.timedelta64(1, np.datetime_data(npdt)[0]))
                tile = self._cast_tile(tile)
                t = int(np.asarray(tile).astype(np.int64)) if npdt.kind in "Mm" else tile
                if t == 0:
                    raise TileDBError(f"Dimension: Tile extent check failed on dimension '{name}'; Tile extent must not be 0")
                if npdt.kind in "iuMm" and t > b - a + 1:
                    raise TileDBError(
                        f"Dimension: Tile extent check failed on dimension '{name}'; Tile extent {t} exceeds range on dimension domain [{a}, {b}]"
                    )
            self._tile = tile
        self.name = name
        self._filters = _as_filter_list(filters)

    def _cast(self, v):
        if self._dtype.kind in "Mm":
            if isinstance(v, (np.datetime64, np.timedelta64)):
                return v.astype(self._dtype)
            return self._dtype.type(int(v), np.datetime_data(self._dtype)[0])
        return self._dtype.type(v)

    def _cast_tile(self, t):
        if self._dtype.kind in "Mm":
            return np.timedelta64(int(t), np.datetime_data(self._dtype)[0])
        return self._dtype.type(t)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def domain(self):
        if self._domain is None:
            return ("", "")
        return self._domain

    @property
    def tile(self):
        if self._tile is None and self._domain is not None:
            # tiledb-py shows 0 until a schema gives the dimension its default extent
            return self._cast_tile(0)
        return self._tile

    def _set_default_tile(self) -> None:
        """libtiledb's default tile extent, set when a schema takes the dimension: the
        domain's range (+1 for integers), computed in the dimension's own type (so it may
        wrap)."""
        if self._tile is not None or self._domain is None:
            return
        lo, hi = self._domain
        npdt = self._dtype
        if npdt.kind == "f":
            with np.errstate(over="ignore"):
                self._tile = npdt.type(hi - lo)
            return
        a = int(np.asarray(lo).astype(np.int64)) if npdt.kind in "Mm" else int(lo)
        b = int(np.asarray(hi).astype(np.int64)) if npdt.kind in "Mm" else int(hi)
        width = 8 * npdt.itemsize
        ext = (b - a + 1) % (1 << width)
        if npdt.kind in "iMm" and ext >= 1 << (width - 1):
            ext -= 1 << width
        self._tile = self._cast_tile(ext)

    @property
    def filters(self) -> FilterList:
        return self._filters

    @property
    def isvar(self) -> bool:
        return self._domain is None

    @property
    def isanon(self) -> bool:
        return self.name == "" or self.name.startswith("__dim")

    @property
    def size(self):
        if self._domain is None or self._dtype.kind not in "ium":
            raise TypeError("size only valid for integer dimension domains")
        lo, hi = self._domain
        return int(hi) - int(lo) + 1

    @property
    def shape(self):
        if self._domain is None or self._dtype.kind not in "iuMm":
            raise TypeError("shape only valid for integer and datetime dimension domains")
        lo, hi = self._domain
        if self._dtype.kind in "Mm":
            return (int(hi.astype(np.int64)) - int(lo.astype(np.int64)) + 1,)
        return (int(hi) - int(lo) + 1,)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Dim):
            return False
        return (
            self.name == other.name
            and self._type == other._type
            and self.domain == other.domain
            and self.tile == other.tile
            and self.filters == other.filters
        )

    def __repr__(self) -> str:
        filters = ""
        if self.filters:
            filters = ", filters=FilterList([" + "".join(repr(f) + ", " for f in self.filters) + "])"
        var = ", var=True" if self._domain is None else ""
        dom = "('', '')" if self._domain is None else f"({self._domain[0]!r}, {self._domain[1]!r})"
        if self._dtype.kind not in "Mm" and self._domain is not None:
            dom = f"({self._domain[0]!s}, {self._domain[1]!s})"
        t = self.tile
        tile = repr(t) if t is None or self._dtype.kind in "Mm" else str(t)
        return f"Dim(name={self.name!r}, domain={dom}, tile={tile}, dtype='{self._dtype!s}'{var}{filters})"

    def _to_json(self) -> dict:
        filters = [] if getattr(self, "_inherited", False) else self.filters._to_json()
        j: dict = {"name": self.name, "type": self._type, "filters": filters}
        if self._domain is None:
            j["domain"] = None
            j["tile"] = None
        else:
            j["domain"] = [_json_value(v, self._type) for v in self._domain]
            j["tile"] = None if self._tile is None else _json_value(self._tile, self._type)
        return j

    @classmethod
    def _from_json(cls, j: dict) -> "Dim":
        if j["type"] in _types.STRING_TYPES:
            d = cls(name=j["name"], dtype="ascii", filters=FilterList._from_json(j.get("filters", [])))
            d._type = j["type"]
            return d
        npdt = _types.to_numpy(j["type"], 1)
        dom = [_from_json_value(v, npdt) for v in j["domain"]]
        tile = j.get("tile")
        d = cls(name=j["name"], domain=dom, dtype=npdt, filters=FilterList._from_json(j.get("filters", [])))
        if tile is not None:
            d._tile = d._cast_tile(tile) if npdt.kind in "Mm" else npdt.type(_from_json_value(tile, npdt))
        return d


class Domain:
    """The dimensions of an array, in order."""

    def __init__(self, *dims, ctx=None):
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        if not dims:
            raise TileDBError("a domain needs at least one dimension")
        for d in dims:
            if not isinstance(d, Dim):
                raise TypeError(f"{d!r} is not a Dim")
        if len(dims) > 1 and all(d.name == "__dim_0" for d in dims):
            # Anonymous dimensions are named in order, as tiledb-py names them.
            renamed = []
            for i, d in enumerate(dims):
                c = Dim.__new__(Dim)
                c.__dict__.update(d.__dict__)
                c.name = f"__dim_{i}"
                renamed.append(c)
            dims = tuple(renamed)
        elif any(d.name.startswith("__dim_0") for d in dims[1:]):
            raise TileDBError("Mixed dimension naming: dimensions must be either all anonymous or all named.")
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            raise TileDBError(f"duplicate dimension names {names}")
        self._dims = list(dims)

    @property
    def ndim(self) -> int:
        return len(self._dims)

    @property
    def dtype(self) -> np.dtype:
        if not self.homogeneous:
            raise TileDBError("Domain.dtype is only defined for homogeneous domains")
        return self._dims[0].dtype

    @property
    def homogeneous(self) -> bool:
        return len({d.dtype for d in self._dims}) == 1

    @property
    def shape(self):
        return tuple(d.shape[0] for d in self._dims)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def dim(self, i) -> Dim:
        if isinstance(i, str):
            for d in self._dims:
                if d.name == i:
                    return d
            raise TileDBError(f"no dimension named {i!r}")
        return self._dims[i]

    def has_dim(self, name: str) -> bool:
        return any(d.name == name for d in self._dims)

    def __iter__(self):
        return iter(self._dims)

    def __len__(self) -> int:
        return len(self._dims)

    def __eq__(self, other) -> bool:
        return isinstance(other, Domain) and self._dims == other._dims

    def __repr__(self) -> str:
        return "Domain(" + ",\n       ".join(repr(d) for d in self._dims) + ")"


class Attr:
    """An attribute: name, datatype, cells per value, fill value, nullability, filters and
    enumeration."""

    def __init__(self, name: str = "", dtype=np.float64, fill=None, var=None, nullable=False, filters=None, enum_label=None, ctx=None):
        npdt, tname, ncells = _types.from_numpy(dtype)
        # tiledb-py's rules: every str dtype and "ascii" is var-sized; blobs and S0 default
        # to var-sized; S<n> with var=True becomes S0.
        if (var is None and isinstance(dtype, str) and dtype == "ascii") or npdt.kind == "U":
            var = True
        elif npdt.kind == "S":
            if isinstance(dtype, str) and dtype == "blob":
                if var is None:
                    var = True
            elif npdt.itemsize == 0 and not (isinstance(dtype, str) and dtype == "ascii"):
                var = True
        if var:
            ncells = _types.VAR
            if npdt.kind in "SU":
                npdt = np.dtype(npdt.kind)
        elif ncells == _types.VAR:
            raise TypeError("dtype is not compatible with var-length attribute")
        self.name = name
        self._type = tname
        self._ncells = ncells
        self._dtype = _types.to_numpy(tname, ncells) if tname not in ("string_ascii", "blob", "geom_wkb", "geom_wkt") else npdt
        if tname == "string_utf8" and ncells == _types.VAR:
            self._dtype = np.dtype("<U0")
        self._nullable = bool(nullable)
        self._filters = _as_filter_list(filters)
        self._enum = enum_label
        self._fill = None if fill is None else self._fill_value(fill)
        self._fill_valid = False

    def _is_bytes_type(self) -> bool:
        return self._dtype.kind in "SU" or self._type in ("string_ascii", "blob", "any", "geom_wkb", "geom_wkt")

    def _fill_value(self, fill):
        """A fill value given as tiledb-py takes it, as it is kept here: raw bytes for the
        string and byte types, else a 1-d array of the attribute's dtype (one element)."""
        dt = self._dtype
        if self._is_bytes_type():
            if isinstance(fill, (np.ndarray, np.generic)) and not isinstance(fill, (np.bytes_, np.str_)):
                fill = np.asarray(fill).tobytes()
            raw = fill.encode("utf-8") if isinstance(fill, str) else bytes(fill)
            if dt.kind == "S" and dt.itemsize > 0:
                raw = raw[: dt.itemsize].ljust(dt.itemsize, b"\x00")
            return raw
        if dt.kind == "c":
            if getattr(fill, "dtype", None) is not None and fill.dtype.names is not None and len(fill.dtype.names) == 2:
                fill = fill["f0"] + fill["f1"] * 1j
            elif hasattr(fill, "__len__") and len(fill) == 2:
                fill = fill[0] + fill[1] * 1j
            return np.array(fill, dtype=dt).reshape(-1)[:1]
        if dt.kind == "M" and isinstance(fill, np.timedelta64):
            fill = fill.astype(np.int64)
        return np.array([fill], dtype=dt).reshape(-1)[:1]

    def _default_fill(self):
        """TileDB's default fill value, kept as ``_fill_value`` keeps one."""
        dt = self._dtype
        if self._is_bytes_type():
            if self._type == "char":
                n = 1 if self._ncells == _types.VAR else self._ncells
                return b"\x80" * n
            return b"\x00"
        base = _types.VALUE_DTYPE.get(self._type, dt)
        if base.kind == "f":
            v = np.array([np.nan], dtype=base)
        elif base.kind == "i":
            v = np.array([np.iinfo(base).min], dtype=base)
        elif base.kind == "u":
            v = np.array([np.iinfo(base).max], dtype=base)
        elif base.kind in "Mm":
            v = np.array([np.iinfo(np.int64).min], dtype=np.int64).view(base)
        else:
            v = np.zeros(1, dtype=base)
        n = 1 if self._ncells == _types.VAR else self._ncells
        return np.repeat(v, n).view(dt) if dt != base else np.repeat(v, n)

    @property
    def fill(self):
        if self._nullable:
            raise TileDBError("Attribute: Cannot get fill value; Attribute is nullable")
        v = self._default_fill() if self._fill is None else self._fill
        dt = self._dtype
        if dt.kind == "S" or (isinstance(v, bytes) and dt.kind != "U"):
            return bytes(v)
        if dt.kind == "U":
            return v.decode("utf-8")
        if dt.kind == "M":
            return v[0].astype(np.timedelta64)
        return v.copy()

    def _fill_json(self):
        """The fill value as the schema JSON has it (None: TileDB's default)."""
        if self._fill is None:
            return None
        f = self._fill
        if isinstance(f, bytes):
            if self._type in ("blob", "any", "geom_wkb"):
                return list(f)
            try:
                return f.decode("utf-8")
            except UnicodeDecodeError:
                return {"hex": f.hex()}
        base = _types.VALUE_DTYPE.get(self._type, self._dtype)
        vals = f.view(base) if f.dtype != base else f
        if self._ncells == 1:
            return _json_value(vals[0], self._type)
        return [_json_value(v, self._type) for v in vals]

    def _fill_from_json(self, j):
        if self._is_bytes_type():
            if isinstance(j, dict):
                return bytes.fromhex(j["hex"])
            if isinstance(j, list):
                return bytes(int(v) & 0xFF for v in j)
            return str(j).encode("utf-8")
        base = _types.VALUE_DTYPE.get(self._type, self._dtype)
        vals = j if isinstance(j, list) else [j]
        arr = np.array([_from_json_value(v, base) for v in vals], dtype=base)
        return arr.view(self._dtype) if self._dtype != base else arr

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def isvar(self) -> bool:
        return self._ncells == _types.VAR

    @property
    def ncells(self) -> int:
        return self._ncells

    @property
    def isnullable(self) -> bool:
        return self._nullable

    @property
    def isanon(self) -> bool:
        return self.name in ("", "__attr")

    @property
    def isascii(self) -> bool:
        return self._type == "string_ascii"

    @property
    def filters(self) -> FilterList:
        return self._filters

    @property
    def enum_label(self):
        return self._enum

    def __eq__(self, other) -> bool:
        if not isinstance(other, Attr):
            return False
        if self._nullable != other._nullable or self._dtype != other._dtype or self._type != other._type:
            return False
        if not self._nullable:
            a, b = self.fill, other.fill
            if isinstance(a, (bytes, str)) or isinstance(b, (bytes, str)):
                if a != b:
                    return False
            else:
                a, b = np.asarray(a), np.asarray(b)
                if a.dtype.kind == "V":
                    a, b = a.view(_types.VALUE_DTYPE.get(self._type)), b.view(_types.VALUE_DTYPE.get(other._type))
                if a.dtype.kind in "Mm":
                    a, b = a.view(np.int64), b.view(np.int64)
                if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                    return False
        return self.name == other.name and self._ncells == other._ncells and self.filters == other.filters

    def __repr__(self) -> str:
        filters = ""
        if self.filters:
            filters = ", filters=FilterList([" + "".join(repr(f) + ", " for f in self.filters) + "])"
        dt = {"string_ascii": "ascii", "blob": "blob", "geom_wkb": "wkb", "geom_wkt": "wkt"}.get(self._type, self._dtype)
        enum = None if self._enum is None else repr(self._enum)
        return f"Attr(name={self.name!r}, dtype='{dt!s}', var={self.isvar}, nullable={self._nullable}, enum_label={enum}{filters})"

    def _to_json(self) -> dict:
        j: dict = {"name": self.name, "type": self._type, "nullable": self._nullable, "filters": self.filters._to_json()}
        j["cell_val_num"] = "var" if self._ncells == _types.VAR else self._ncells
        if self._enum is not None:
            j["enumeration"] = self._enum
        fill = self._fill_json()
        if fill is not None:
            j["fill"] = fill
        return j

    @classmethod
    def _from_json(cls, j: dict) -> "Attr":
        tname = j["type"]
        cvn = j.get("cell_val_num", 1)
        ncells = _types.VAR if cvn == "var" else int(cvn if cvn is not None else 1)
        a = cls.__new__(cls)
        a.name = j["name"]
        a._type = tname
        a._ncells = ncells
        if tname == "string_utf8" and ncells == _types.VAR:
            a._dtype = np.dtype("<U0")
        elif tname in ("string_ascii", "blob", "geom_wkb", "geom_wkt", "any"):
            a._dtype = np.dtype("S")
        else:
            a._dtype = _types.to_numpy(tname, ncells)
            if a._dtype.kind == "S" and ncells == _types.VAR:
                a._dtype = np.dtype("S0")
        a._nullable = bool(j.get("nullable", False))
        a._filters = FilterList._from_json(j.get("filters", []))
        a._enum = j.get("enumeration")
        fill = j.get("fill")
        a._fill = None if fill is None else a._fill_from_json(fill)
        a._fill_valid = bool(j.get("fill_validity", False))
        return a


class Enumeration:
    """The labels of an enumerated attribute."""

    def __init__(self, name: str, ordered: bool, values=None, dtype=None, ctx=None):
        self.name = name
        self.ordered = bool(ordered)
        if values is None or len(values) == 0:
            if dtype is None:
                raise ValueError("dtype must be provided for empty enumeration")
            arr = np.array([], dtype=np.dtype(dtype))
        else:
            # as tiledb-py: the values' own dtype wins over ``dtype``
            arr = np.array(values)
        if arr.dtype.kind == "U":
            self._type, self._ncells = "string_utf8", _types.VAR
            self._values = np.array([str(v) for v in arr.tolist()], dtype=object)
        elif arr.dtype.kind == "S":
            self._type, self._ncells = "string_ascii", _types.VAR
            self._values = np.array([bytes(v) for v in arr.tolist()], dtype=object)
        else:
            _, self._type, self._ncells = _types.from_numpy(arr.dtype)
            self._values = arr
        self._dtype = _types.to_numpy(self._type, 1) if self._ncells == _types.VAR else arr.dtype

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def cell_val_num(self) -> int:
        return self._ncells

    def values(self) -> np.ndarray:
        if self._type == "string_utf8":
            return np.array(list(self._values), dtype=np.dtype("U")) if len(self._values) else np.array([], dtype="U1")
        if self._type == "string_ascii":
            return np.array(list(self._values), dtype=np.dtype("S")) if len(self._values) else np.array([], dtype="S1")
        return self._values.copy()

    def extend(self, values) -> "Enumeration":
        new = np.array(values)
        if self._dtype.kind in "US" and new.dtype.kind not in "US":
            raise TileDBError("Passed in enumeration must be string type")
        if self._dtype.kind in "iu" and new.dtype.kind not in "iu":
            raise TileDBError("Passed in enumeration must be integer type")
        if self._dtype.kind in "US":
            return Enumeration(self.name, self.ordered, list(self.values()) + list(new.tolist()))
        both = np.concatenate([self.values(), new.astype(self._dtype)])
        return Enumeration(self.name, self.ordered, both, dtype=self._dtype)

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Enumeration)
            and self.name == other.name
            and self.ordered == other.ordered
            and self._type == other._type
            and list(self.values()) == list(other.values())
        )

    def __repr__(self) -> str:
        return (
            f"Enumeration(name='{self.name}', dtype={self.dtype}, dtype_name='{self.dtype.name}', "
            f"cell_val_num={self._ncells}, ordered={self.ordered}, values={list(self.values())})"
        )

    def _to_json(self) -> dict:
        return {"type": self._type, "ordered": self.ordered, "values": [_json_value(v, self._type) for v in self._values]}

    @classmethod
    def _from_json(cls, name: str, j: dict) -> "Enumeration":
        t = j["type"]
        if t in _types.STRING_TYPES or t == "char":
            dtype = np.dtype("U") if t != "string_ascii" else np.dtype("S")
            vals = [v if t != "string_ascii" else str(v).encode() for v in j["values"]]
            return cls(name, j.get("ordered", False), vals, dtype=dtype)
        npdt = _types.to_numpy(t, 1)
        vals = np.array([_from_json_value(v, npdt) for v in j["values"]], dtype=npdt)
        return cls(name, j.get("ordered", False), vals, dtype=npdt)


_DEFAULT_COORDS = [{"type": "zstd", "level": -1}]
_DEFAULT_VALIDITY = [{"type": "rle", "level": -1}]


class ArraySchema:
    """The schema of an array: domain, attributes, orders, capacity, filters, enumerations."""

    def __init__(
        self,
        domain: Domain | None = None,
        attrs: Sequence[Attr] = (),
        cell_order: str = "row-major",
        tile_order: str = "row-major",
        capacity: int = 0,
        coords_filters=None,
        offsets_filters=None,
        validity_filters=None,
        allows_duplicates: bool = False,
        sparse: bool = False,
        dim_labels=None,
        enums: Sequence[Enumeration] | None = None,
        ctx=None,
    ):
        if domain is None:
            raise TileDBError("an array schema needs a domain")
        if not isinstance(domain, Domain):
            raise TypeError("domain must be a tiledb.Domain")
        self._domain = domain
        self._attrs = list(attrs)
        names = [a.name for a in self._attrs]
        if len(set(names)) != len(names):
            raise TileDBError(f"duplicate attribute names {names}")
        clash = set(names) & {d.name for d in domain}
        if clash:
            raise TileDBError(f"attribute and dimension names clash: {sorted(clash)}")
        self._cell_order = _order(cell_order, "cell")
        self._tile_order = _order(tile_order, "tile")
        self._sparse = bool(sparse)
        self._capacity = int(capacity) if capacity else 10000
        self._allows_duplicates = bool(allows_duplicates)
        if coords_filters is None:
            self._coords_filters = FilterList._from_json(_DEFAULT_COORDS)
        else:
            # tiledb-py (coords_filters is deprecated there): the filters replace every
            # dimension's, and the schema's own coordinate filters are left empty.
            cf = _as_filter_list(coords_filters)
            for d in domain:
                d._filters = FilterList(list(cf))
                d._inherited = False
            self._coords_filters = FilterList()
        for d in domain:
            # the schema shares the dimensions, as libtiledb does, and gives those
            # without a tile extent the default one
            d._set_default_tile()
        self._offsets_filters = FilterList._from_json(_DEFAULT_COORDS) if offsets_filters is None else _as_filter_list(offsets_filters)
        self._validity_filters = FilterList._from_json(_DEFAULT_VALIDITY) if validity_filters is None else _as_filter_list(validity_filters)
        self._enums = {e.name: e for e in (enums or [])}
        self._current_domain = None
        self._version = None
        self._check()

    def _check(self) -> None:
        """libtiledb's checks of a schema as tiledb-py builds it."""
        if not self._sparse:
            for d in self._domain:
                if d.isvar:
                    raise TileDBError("ArraySchema: Array schema check failed; Dense arrays cannot have string dimensions")
                if d.dtype.kind == "f":
                    raise TileDBError("ArraySchema: Array schema check failed; Dense arrays cannot have floating point dimensions")
            if len({d._type for d in self._domain}) > 1:
                raise TileDBError("ArraySchema: Array schema check failed; In dense arrays, all dimensions must have the same datatype")
            if self._allows_duplicates:
                raise TileDBError("ArraySchema: Array schema check failed; Dense arrays cannot allow duplicates")
            if self._cell_order == "hilbert":
                raise TileDBError("ArraySchema: Cannot set cell order; Hilbert order is only applicable to sparse arrays")
        for a in self._attrs:
            if a._enum is not None and a._enum not in self._enums:
                raise TileDBError(f"ArraySchema: Attribute '{a.name}' refers to an unknown enumeration '{a._enum}'")

    # -- properties ---------------------------------------------------------------------
    @property
    def domain(self) -> Domain:
        return self._domain

    @property
    def current_domain(self):
        """The current domain (a :class:`tessera.CurrentDomain`, empty when not set)."""
        from .current_domain import CurrentDomain, NDRectangle

        cd = CurrentDomain(None)
        if self._current_domain is not None:
            cd._ndrect = NDRectangle._from_json(self._domain, self._current_domain)
        return cd

    def set_current_domain(self, current_domain) -> None:
        """Sets the current domain of a schema not yet created (``Array.create`` writes it;
        an existing array's grows with ``ArraySchemaEvolution.expand_current_domain``)."""
        from .current_domain import CurrentDomain

        if not isinstance(current_domain, CurrentDomain):
            raise TypeError("set_current_domain takes a tiledb.CurrentDomain")
        if current_domain._ndrect is not None and current_domain._ndrect._domain.ndim != self._domain.ndim:
            raise TileDBError("set_current_domain: the NDRectangle has a different number of dimensions")
        ranges = current_domain._to_json()
        if ranges is not None:
            for d, (lo, hi) in zip(self._domain, ranges):
                if d.dtype.kind != "S":
                    a, b = (_json_value(v, d._type) for v in d.domain)
                    if lo < a or hi > b:
                        raise TileDBError(
                            f"set_current_domain: the range [{lo}, {hi}] of dimension "
                            f"{d.name!r} leaves its domain [{a}, {b}]"
                        )
        self._current_domain = ranges

    @property
    def sparse(self) -> bool:
        return self._sparse

    @property
    def ndim(self) -> int:
        return self._domain.ndim

    @property
    def nattr(self) -> int:
        return len(self._attrs)

    @property
    def shape(self):
        return self._domain.shape

    @property
    def cell_order(self) -> str:
        return self._cell_order

    @property
    def tile_order(self):
        return self._tile_order if self._cell_order != "hilbert" else None

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def allows_duplicates(self) -> bool:
        if not self._sparse:
            raise TileDBError("ArraySchema.allows_duplicates does not apply to dense arrays")
        return self._allows_duplicates

    @property
    def coords_filters(self) -> FilterList:
        return self._coords_filters

    @property
    def offsets_filters(self) -> FilterList:
        return self._offsets_filters

    @property
    def validity_filters(self) -> FilterList:
        return self._validity_filters

    @property
    def version(self):
        return self._version

    def attr(self, key) -> Attr:
        if isinstance(key, str):
            for a in self._attrs:
                if a.name == key:
                    return a
            raise TileDBError(f"ArraySchema has no attribute named {key!r}")
        if isinstance(key, (int, np.integer)):
            if not -len(self._attrs) <= key < len(self._attrs):
                raise TileDBError(f"attribute index {key} out of range")
            return self._attrs[key]
        raise TileDBError(f"attribute key must be a name or an index, got {key!r}")

    def has_attr(self, name: str) -> bool:
        return any(a.name == name for a in self._attrs)

    def attr_or_dim_dtype(self, name: str) -> np.dtype:
        if self.has_attr(name):
            dtype = self.attr(name).dtype
        elif self._domain.has_dim(name):
            dtype = self._domain.dim(name).dtype
        else:
            raise TileDBError(f"Unknown attribute or dimension ('{name}')")
        if dtype.itemsize == 0:
            # flexible dtypes are given one character
            dtype = np.dtype((dtype, 1))
        return dtype

    def enum(self, name: str) -> Enumeration:
        if name not in self._enums:
            raise TileDBError(f"no enumeration named {name!r}")
        return self._enums[name]

    def check(self) -> None:
        """Raises TileDBError when the schema is not valid (libtiledb's checks)."""
        self._check()

    def __iter__(self):
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)

    def __eq__(self, other) -> bool:
        if not isinstance(other, ArraySchema):
            return False
        return (
            self._domain == other._domain
            and self._attrs == other._attrs
            and self._sparse == other._sparse
            and self._cell_order == other._cell_order
            and self._tile_order == other._tile_order
            and (not self._sparse or self._capacity == other._capacity)
            and self._allows_duplicates == other._allows_duplicates
            and self._coords_filters == other._coords_filters
            and self._offsets_filters == other._offsets_filters
            and self._validity_filters == other._validity_filters
        )

    def __repr__(self) -> str:
        out = io.StringIO()
        out.write("ArraySchema(\n  domain=Domain(*[\n")
        for d in self._domain:
            out.write(f"    {d!r},\n")
        out.write("  ]),\n  attrs=[\n")
        for a in self._attrs:
            out.write(f"    {a!r},\n")
        out.write("  ],\n")
        out.write(f"  cell_order='{self._cell_order}',\n  tile_order={self.tile_order!r},\n")
        if self._sparse:
            out.write(f"  capacity={self._capacity},\n")
        out.write(f"  sparse={self._sparse},\n")
        if self._sparse:
            out.write(f"  allows_duplicates={self._allows_duplicates},\n")
        out.write(")\n")
        return out.getvalue()

    def dump(self) -> None:
        print(repr(self))

    # -- JSON ---------------------------------------------------------------------------
    def _to_json(self) -> dict:
        j = {
            "array_type": "sparse" if self._sparse else "dense",
            "tile_order": self._tile_order,
            "cell_order": self._cell_order,
            "capacity": self._capacity,
            "allows_duplicates": self._allows_duplicates,
            "dimensions": [d._to_json() for d in self._domain],
            "attributes": [a._to_json() for a in self._attrs],
            "enumerations": {n: e._to_json() for n, e in self._enums.items()},
            "coords_filters": self._coords_filters._to_json(),
            "offsets_filters": self._offsets_filters._to_json(),
            "validity_filters": self._validity_filters._to_json(),
        }
        if self._current_domain is not None:
            j["current_domain"] = self._current_domain
        return j

    @classmethod
    def _from_json(cls, j: dict) -> "ArraySchema":
        s = cls.__new__(cls)
        dims = [Dim._from_json(d) for d in j["dimensions"]]
        coords = FilterList._from_json(j.get("coords_filters", _DEFAULT_COORDS))
        for d in dims:
            # libtiledb reports the schema's coordinate filters for a dimension without
            # filters of its own (tiledb-py shows them); the stored list stays empty.
            if not d._filters:
                d._filters = FilterList(list(coords))
                d._inherited = True
        s._domain = Domain(*dims)
        s._attrs = [Attr._from_json(a) for a in j.get("attributes", [])]
        s._cell_order = j.get("cell_order", "row-major")
        s._tile_order = j.get("tile_order", "row-major")
        s._sparse = j["array_type"] == "sparse"
        s._capacity = j.get("capacity", 10000)
        s._allows_duplicates = j.get("allows_duplicates", False)
        s._coords_filters = FilterList._from_json(j.get("coords_filters", _DEFAULT_COORDS))
        s._offsets_filters = FilterList._from_json(j.get("offsets_filters", _DEFAULT_COORDS))
        s._validity_filters = FilterList._from_json(j.get("validity_filters", _DEFAULT_VALIDITY))
        s._enums = {n: Enumeration._from_json(n, e) for n, e in j.get("enumerations", {}).items()}
        s._current_domain = j.get("current_domain")
        s._version = None
        return s

    @classmethod
    def load(cls, uri: str, ctx=None, key=None) -> "ArraySchema":
        from .array import _key_bytes, _native_open
        from .ctx import _config_dict

        key = _key_bytes(key, _config_dict(None, ctx))
        return cls._from_json(json.loads(_native_open(uri, None, key).schema_json()))


def _order(value: str, what: str) -> str:
    v = {"C": "row-major", "F": "col-major", "H": "hilbert", "U": "unordered", "G": "global"}.get(value, value)
    v = str(v).replace("_", "-")
    allowed = ("row-major", "col-major", "hilbert") if what == "cell" else ("row-major", "col-major")
    if v not in allowed:
        raise TileDBError(f"unknown {what} order {value!r} (expected one of {allowed})")
    return v
