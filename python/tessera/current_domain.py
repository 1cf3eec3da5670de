"""``CurrentDomain`` and ``NDRectangle``: the part of an array's domain in use now, which
libtiledb (2.25 and later) lets a schema set and an evolution expand, as tiledb-py's classes
of those names (tiledbsoma's ``resize`` and ``upgrade_shape`` are built on them)."""

from __future__ import annotations

import enum
from typing import Union

import numpy as np

from ._tessera import TileDBError

__all__ = ["CurrentDomain", "CurrentDomainType", "NDRectangle"]


class CurrentDomainType(enum.IntEnum):
    """How a current domain is represented (libtiledb has one kind)."""

    NDRECTANGLE = 0


class NDRectangle:
    """One ``[start, end]`` range per dimension of ``domain``."""

    def __init__(self, ctx=None, domain=None):
        from .schema import Domain

        if not isinstance(domain, Domain):
            raise TypeError("NDRectangle takes a tiledb.Domain")
        self._ctx = ctx
        self._domain = domain
        self._ranges: list = [None] * domain.ndim

    def _index(self, dim: Union[str, int]) -> int:
        if isinstance(dim, str):
            for i, d in enumerate(self._domain):
                if d.name == dim:
                    return i
            raise TileDBError(f"NDRectangle: no dimension named {dim!r}")
        if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
            if 0 <= int(dim) < self._domain.ndim:
                return int(dim)
            raise TileDBError(
                f"NDRectangle: dimension index {dim} is not in [0, {self._domain.ndim})"
            )
        raise TypeError(f"a dimension name or index, not {type(dim).__name__}")

    def _value(self, i: int, v):
        """``v`` as a plain Python value of dimension ``i``'s type (checked)."""
        d = self._domain.dim(i)
        kind = d.dtype.kind
        if kind == "S":
            if isinstance(v, bytes):
                v = v.decode("utf-8")
            if not isinstance(v, str):
                raise TileDBError(f"NDRectangle: dimension {d.name!r} takes strings, not {v!r}")
            return v
        if kind in "Mm":
            if isinstance(v, (np.datetime64, np.timedelta64)):
                return int(v.astype(d.dtype).astype(np.int64))
            kind = "i"
        if kind in "iu":
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TileDBError(
                    f"NDRectangle: dimension {d.name!r} ({d.dtype}) takes integers, not {v!r}"
                )
            return int(v)
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TileDBError(f"NDRectangle: dimension {d.name!r} ({d.dtype}) takes numbers, not {v!r}")
        return float(v)

    def set_range(self, dim: Union[str, int], start, end) -> None:
        """Sets dimension ``dim``'s range to ``[start, end]``."""
        i = self._index(dim)
        lo, hi = self._value(i, start), self._value(i, end)
        if lo > hi:
            raise TileDBError(
                f"NDRectangle: lower range bound {start!r} cannot be larger than the higher "
                f"bound {end!r}"
            )
        self._ranges[i] = (lo, hi)

    def range(self, dim: Union[str, int]):
        """Dimension ``dim``'s range as ``(start, end)``; ``('', '')`` for a string dimension
        without one, as tiledb-py."""
        i = self._index(dim)
        r = self._ranges[i]
        if r is None:
            if self._domain.dim(i).dtype.kind == "S":
                return ("", "")
            # libtiledb 2.30 crashes (segfault) reading an unset numeric range; an error here.
            raise TileDBError(f"NDRectangle: no range set for dimension {self._domain.dim(i).name!r}")
        return r

    def _to_json(self) -> list:
        """The ranges as the schema JSON's ``current_domain`` lists them."""
        out = []
        for i, r in enumerate(self._ranges):
            if r is None:
                raise TileDBError(
                    f"NDRectangle: no range set for dimension {self._domain.dim(i).name!r}: a "
                    "current domain needs a range on every dimension"
                )
            out.append([r[0], r[1]])
        return out

    @classmethod
    def _from_json(cls, domain, ranges: list) -> "NDRectangle":
        nd = cls(None, domain)
        for i, pair in enumerate(ranges):
            kind = domain.dim(i).dtype.kind

            def conv(v):
                if isinstance(v, dict):  # a string bound that is not UTF-8
                    return bytes.fromhex(v["hex"]).decode("latin-1")
                if kind == "S":
                    return str(v)
                if kind == "f":
                    return float(v.replace("Infinity", "inf")) if isinstance(v, str) else float(v)
                return int(v)

            nd._ranges[i] = (conv(pair[0]), conv(pair[1]))
        return nd

    def __eq__(self, other) -> bool:
        return isinstance(other, NDRectangle) and self._ranges == other._ranges

    def __str__(self) -> str:
        parts = []
        for i, d in enumerate(self._domain):
            r = self._ranges[i]
            parts.append(f"{d.name}: {r if r is not None else 'unset'}")
        return f"NDRectangle({', '.join(parts)})"

    __repr__ = __str__


class CurrentDomain:
    """The current domain of a schema: empty, or an :class:`NDRectangle`."""

    def __init__(self, ctx=None):
        self._ctx = ctx
        self._ndrect: NDRectangle | None = None

    @property
    def type(self) -> CurrentDomainType:
        if self._ndrect is None:
            raise TileDBError("CurrentDomain: an empty current domain has no type")
        return CurrentDomainType.NDRECTANGLE

    @property
    def is_empty(self) -> bool:
        return self._ndrect is None

    def set_ndrectangle(self, ndrect: NDRectangle) -> None:
        if not isinstance(ndrect, NDRectangle):
            raise TypeError("set_ndrectangle takes a tiledb.NDRectangle")
        self._ndrect = ndrect

    @property
    def ndrectangle(self) -> NDRectangle:
        if self._ndrect is None:
            raise TileDBError("CurrentDomain: no NDRectangle is set on this current domain")
        return self._ndrect

    def _to_json(self):
        return None if self._ndrect is None else self._ndrect._to_json()

    def __eq__(self, other) -> bool:
        return isinstance(other, CurrentDomain) and self._ndrect == other._ndrect

    def __str__(self) -> str:
        return "CurrentDomain(empty)" if self._ndrect is None else f"CurrentDomain({self._ndrect})"

    __repr__ = __str__
