"""Groups as tiledb-py has them: `Group` (create, open, add, remove, members, metadata) and
`Object`, the member entries."""

from __future__ import annotations

import os

from . import _tessera
from ._tessera import TileDBError
from .metadata import Metadata, session


class Object:
    """A TileDB object: its URI, its type (`tiledb.Array` or `tiledb.Group`) and its name in
    a group."""

    def __init__(self, type, uri: str, name: str | None = None):
        self._type = type
        self._uri = uri
        self._name = name

    @property
    def type(self):
        return self._type

    @property
    def uri(self) -> str:
        return _file_uri(self._uri)

    @property
    def name(self):
        return self._name

    def __repr__(self) -> str:
        if self._name:
            return f"{self._type.__name__}(uri={self._uri!r}, name={self._name!r})"
        return f"{self._type.__name__}(uri={self._uri!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Object) and (self._type, self._uri, self._name) == (other._type, other._uri, other._name)


def _file_uri(uri: str) -> str:
    """A local path as libtiledb shows it: an absolute ``file://`` URI."""
    if "://" in uri:
        return uri
    return "file://" + os.path.abspath(uri)


def _last_part(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _type_class(name: str):
    from .array import Array

    return Array if name == "array" else Group


class Group:
    """A group, open for reading (``mode='r'``) or writing (``'w'``: additions, removals and
    metadata are written when it is closed)."""

    def __init__(self, uri: str, mode: str = "r", config=None, ctx=None, timestamp=None):
        if mode not in ("r", "w", "m"):
            raise TileDBError(f"invalid mode {mode!r} for a group")
        self._uri = str(uri)
        if _tessera.object_type(self._uri) != "group":
            raise TileDBError(f"[TileDB::Group] Error: Cannot open group; Group does not exist: {uri}")
        self._mode = mode
        self._timestamp = timestamp
        self._adds: list = []
        self._removes: list = []
        self._pending_meta = None
        self._meta = None
        self._isopen = True
        self._members = None

    @staticmethod
    def create(uri: str, ctx=None) -> None:
        _tessera.group_create(str(uri))

    @property
    def uri(self) -> str:
        return _file_uri(self._uri)

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def isopen(self) -> bool:
        return self._isopen

    def _range(self):
        t = self._timestamp
        if t is None:
            return None, None
        if isinstance(t, tuple):
            return t
        return None, int(t)

    def _meta_range(self):
        start, end = self._range()
        return (start or 0), (end if end is not None else 2**64 - 1)

    def _load(self):
        if self._members is None:
            start, end = self._range()
            self._members = _tessera.group_members(self._uri, start, end)
        return self._members

    def _objects(self):
        return [Object(_type_class(t), _file_uri(resolved), name) for name, _stored, resolved, t, _rel in self._load()]

    def is_relative(self, name: str) -> bool:
        """Whether the member ``name`` was added with a URI relative to the group."""
        for n, _stored, _resolved, _t, rel in self._load():
            if n == name:
                return bool(rel)
        raise TileDBError(f"Group Details: {name} does not exist in group")

    def add(self, uri: str, name: str | None = None, relative: bool = False, type=None) -> None:
        if self._mode != "w":
            raise TileDBError("the group must be open for writing to add members")
        kind = None
        if type is not None:
            from .array import Array

            kind = "array" if (type is Array or (isinstance(type, str) and type == "array")) else "group"
        self._adds.append((str(uri), name, bool(relative), kind))

    def remove(self, member: str) -> None:
        if self._mode != "w":
            raise TileDBError("the group must be open for writing to remove members")
        self._removes.append(str(member))

    def __getitem__(self, member):
        if not isinstance(member, (int, str)) or isinstance(member, bool):
            raise TypeError(f"Unexpected member type '{type(member)}': expected int or str")
        objs = self._objects()
        if isinstance(member, int):
            if not 0 <= member < len(objs):
                raise TileDBError(f"Group Details: index {member} is larger than member count {len(objs)}")
            return objs[member]
        for o in objs:
            if o.name == member:
                return o
        raise TileDBError(f"Group Details: {member} does not exist in group")

    def __contains__(self, member) -> bool:
        return any(o.name == member for o in self._objects())

    def __iter__(self):
        return iter(self._objects())

    def __len__(self) -> int:
        return len(self._load())

    def has_member(self, name: str) -> bool:
        return name in self

    @property
    def meta(self) -> Metadata:
        if self._meta is None:
            self._meta = Metadata(self)
        return self._meta

    def close(self) -> None:
        if self._mode == "w" and (self._adds or self._removes or self._pending_meta):
            puts, deletes = session(self._pending_meta)
            start, end = self._range()
            _tessera.group_update(self._uri, self._adds, self._removes, puts, deletes, end)
        self._adds, self._removes, self._pending_meta = [], [], None
        self._isopen = False

    def open(self, mode: str = "r") -> None:
        self._mode = mode
        self._members = None
        self._meta = None
        self._isopen = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        # libtiledb's dump: the group's last path part, then every member (its name, else
        # the last part of its URI) and, recursively, the members of member groups
        out = [f"{_last_part(self._uri)} GROUP\n"]

        def dump(members, level):
            dashes = "-" * (2 * (1 + 2 * level))
            for name, _stored, resolved, t, _rel in members:
                out.append(f"|{dashes} {name or _last_part(resolved)} {t.upper()}\n")
                if t == "group":
                    try:
                        sub = _tessera.group_members(resolved)
                    except Exception:  # noqa: BLE001 (a member group that cannot be opened)
                        continue
                    dump(sub, level + 1)

        dump(self._load(), 0)
        return "".join(out)

    @staticmethod
    def delete_group(uri: str, recursive: bool = False, ctx=None) -> None:
        """Deletes the group at ``uri`` (and, ``recursive``, its members), as libtiledb."""
        _tessera.delete_group(str(uri), recursive)

    def delete(self, recursive: bool = False) -> None:
        """Deletes this group (opened in mode ``'m'``), as tiledb-py's ``Group.delete``."""
        if self._mode != "m":
            raise TileDBError("Group must be opened in modify mode ('m') to be deleted")
        _tessera.delete_group(self._uri, recursive)
        self._isopen = False

    @staticmethod
    def consolidate_metadata(uri: str, config=None, ctx=None) -> None:
        _tessera.consolidate(str(uri), "array_meta")

    @staticmethod
    def vacuum_metadata(uri: str, config=None, ctx=None) -> None:
        _tessera.vacuum(str(uri), "array_meta")
