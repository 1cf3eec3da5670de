"""``ArraySchemaEvolution``: changes to an array's schema written as one new schema, as
tiledb-py's class of that name (and libtiledb's ``ArraySchemaEvolution``) does."""

from __future__ import annotations

import json

from . import _tessera
from ._tessera import TileDBError
from .schema import Attr, Enumeration

__all__ = ["ArraySchemaEvolution"]


def _named(enmr: Enumeration) -> dict:
    j = enmr._to_json()
    return {"name": enmr.name, "type": j["type"], "ordered": j["ordered"], "values": j["values"]}


class ArraySchemaEvolution:
    """Lists attribute and enumeration changes; :meth:`array_evolve` writes them to an array
    as one new schema (validated as libtiledb validates; a refused evolution leaves the array
    as it was)."""

    def __init__(self, ctx=None):
        self._ctx = ctx
        self._spec: dict = {
            "add_attributes": [], "drop_attributes": [], "add_enumerations": [],
            "extend_enumerations": [], "drop_enumerations": [],
        }

    def add_attribute(self, attr: Attr):
        if not isinstance(attr, Attr):
            raise TypeError("add_attribute takes a tiledb.Attr")
        self._spec["add_attributes"].append(attr._to_json())

    def drop_attribute(self, attr_name: str):
        self._spec["drop_attributes"].append(str(attr_name))

    def add_enumeration(self, enmr: Enumeration):
        if not isinstance(enmr, Enumeration):
            raise TypeError("add_enumeration takes a tiledb.Enumeration")
        self._spec["add_enumerations"].append(_named(enmr))

    def drop_enumeration(self, enmr_name: str):
        self._spec["drop_enumerations"].append(str(enmr_name))

    def extend_enumeration(self, enmr: Enumeration):
        """``enmr`` is the extended enumeration (``old.extend(new_values)``): the old values
        first, in their order."""
        if not isinstance(enmr, Enumeration):
            raise TypeError("extend_enumeration takes a tiledb.Enumeration")
        self._spec["extend_enumerations"].append(_named(enmr))

    def expand_current_domain(self, current_domain):
        """Replaces the array's current domain by ``current_domain``, which must contain the
        one in force and lie in the domain (checked when the evolution is applied)."""
        from .current_domain import CurrentDomain

        if not isinstance(current_domain, CurrentDomain):
            raise TypeError("expand_current_domain takes a tiledb.CurrentDomain")
        if current_domain.is_empty:
            raise TileDBError("expand_current_domain: the new current domain is empty")
        self._spec["expand_current_domain"] = current_domain._to_json()

    def timestamp(self, timestamp: int):
        if not isinstance(timestamp, int) or timestamp < 0:
            raise TileDBError("timestamp must be a non-negative int (ms)")
        self._spec["timestamp"] = int(timestamp)

    def array_evolve(self, uri: str):
        from .array import _key_bytes
        from .ctx import _config_dict

        key = _key_bytes(None, _config_dict(None, self._ctx))
        _tessera.evolve(str(uri), json.dumps(self._spec), key)
