"""Tessera arrays in Dask: dense arrays as ``dask.array`` (read and write), any array as a
``dask.dataframe``.

Unlike ``dask.array.from_tiledb``, reads take any domain origin, size their chunks from the
tiles (and from the non-empty domain when the full domain is too large to hold), and pin the
array's timestamp when the graph is built, so that every task reads the same version even
while writers append. Graphs carry URIs, timestamps and configuration without credentials:
each worker finds its own (environment, instance role), as when it opens any array.

Needs ``dask`` (and ``dask.dataframe`` for :func:`read_dataframe`)."""

from __future__ import annotations

import math
import operator
import threading
import time
from typing import Any, Sequence

import numpy as np

from ._tessera import TileDBError
from .array import _is_secret, open as _open

__all__ = ["from_tessera", "to_tessera", "read_dataframe"]

# Above this many cells the full domain is not what a user wants as an array (a domain sized
# "as large as the type allows"): the non-empty domain is read instead.
_HUGE_DOMAIN = 2**40


def _public_config(config) -> dict | None:
    """The configuration a graph may carry: everything but credentials."""
    if not config:
        return None
    return {str(k): str(v) for k, v in dict(config).items() if not _is_secret(str(k))} or None


def _pinned(uri: str, timestamp, config) -> tuple[int, int]:
    """The timestamp range every task reads: the one given, or the array's as it is now."""
    with _open(uri, timestamp=timestamp, config=config) as A:
        return tuple(int(t) for t in A.timestamp_range)


def _version(uri: str, ts: tuple) -> tuple:
    """What a read at ``ts`` sees, for dask's keys: the fragments in the range (and, for a
    local array, the commit and schema files), so that equal reads of the same version share
    their keys however far apart they are built."""
    import os

    from .highlevel import array_fragments

    info = array_fragments(uri)
    frags = tuple(
        (u.rsplit("/", 1)[-1], tuple(t)) for u, t in zip(info.uri, info.timestamp_range) if ts[0] <= t[0] and t[1] <= ts[1]
    )
    local = uri[len("file://"):] if uri.startswith("file://") else (uri if "://" not in uri else None)
    files = ()
    if local is not None:
        for sub in ("__commits", "__schema", "__meta"):
            try:
                files += tuple(sorted(f"{sub}/{n}" for n in os.listdir(os.path.join(local, sub))))
            except OSError:
                pass
    return frags, files


# Arrays a worker has open, by (mode, URI, timestamp, configuration): a task reuses the
# schema and fragment list its neighbours loaded (an array opened at a fixed timestamp
# range never changes; a writer at a fixed timestamp writes each block as a new fragment). A few are kept; older ones are let go (not closed: another
# task may still be reading through them).
_OPEN: dict = {}
_OPEN_MAX = 16
_OPEN_LOCK = threading.Lock()


def _cached(uri: str, timestamp, config, mode: str = "r"):
    """The array open at ``timestamp`` (a range for reads, the write timestamp for writes)
    that this worker's earlier tasks opened, or a new one.

    Writers are cached too: opening an array loads every fragment's metadata it shows, so
    a ``to_tessera`` that opened the array again for each block would load 1, 2, ... n
    fragments' metadata for its n blocks. One open array writes any number of fragments."""
    stamp = tuple(timestamp) if mode == "r" else int(timestamp)
    key = (mode, uri, stamp, tuple(sorted((config or {}).items())))
    with _OPEN_LOCK:
        A = _OPEN.pop(key, None)
        if A is None:
            A = _open(uri, mode, timestamp=stamp, config=config)
        _OPEN[key] = A
        while len(_OPEN) > _OPEN_MAX:
            _OPEN.pop(next(iter(_OPEN)))
        return A


# ------------------------------------------------------------------------------------------
# dense arrays as dask arrays


def _read_block(uri: str, timestamp: tuple, config, attrs: tuple, box: tuple) -> dict:
    """One block: the attributes over ``box`` (inclusive integer bounds per dimension)."""
    A = _cached(uri, timestamp, config)
    # multi_index: inclusive bounds in domain coordinates (A[...] reads negative integers as
    # Python indices from the end, as tiledb-py does)
    sel = tuple(slice(lo, hi) for lo, hi in box)
    out = A.query(attrs=list(attrs)).multi_index[sel]
    shape = tuple(hi - lo + 1 for lo, hi in box)
    return {name: out[name].reshape(shape) for name in attrs}


def _tile_chunks(lo: int, hi: int, origin: int, tile: int) -> tuple[int, ...]:
    """Chunk sizes covering ``[lo, hi]`` with boundaries on the tile grid from ``origin``."""
    sizes = []
    start = lo
    while start <= hi:
        end = min(hi, origin + ((start - origin) // tile + 1) * tile - 1)
        sizes.append(end - start + 1)
        start = end + 1
    return tuple(sizes)


def _group_tiles(tile_chunks: list[tuple[int, ...]], tiles: list[int], cell_bytes: int, limit: int) -> tuple:
    """Tile-aligned chunks merged into blocks of whole tiles of at most ``limit`` bytes (one
    tile at least): the last dimension grows first (a block then spans whole rows of tiles,
    which the engine reads in order), and each dimension's groups are made as even as its
    tile count allows, so that workers get similar blocks.

    One task per tile costs more in the scheduler and workers than the read itself (a 4 MB
    tile reads in ~6 ms, its task's overhead is as large or larger), so fewer, larger blocks
    are what makes reductions over a whole array fast."""
    tile_bytes = cell_bytes * math.prod(min(t, max(c)) for t, c in zip(tiles, tile_chunks))
    budget = max(1, limit // max(1, tile_bytes))
    out = [None] * len(tile_chunks)
    for d in reversed(range(len(tile_chunks))):
        c = tile_chunks[d]
        per = max(1, min(len(c), budget))
        budget = max(1, budget // per)
        groups = math.ceil(len(c) / per)
        # `groups` runs of consecutive tiles, their lengths differing by one at most
        base, extra = divmod(len(c), groups)
        sizes, i = [], 0
        for g in range(groups):
            n = base + (1 if g < extra else 0)
            sizes.append(sum(c[i:i + n]))
            i += n
        out[d] = tuple(sizes)
    return tuple(out)


def _chunk_limit() -> int:
    """dask's ``array.chunk-size`` in bytes."""
    import dask
    from dask.utils import parse_bytes

    return int(parse_bytes(dask.config.get("array.chunk-size", "128MiB")))


def from_tessera(uri, attribute=None, chunks=None, timestamp=None, config=None, region=None):
    """A dense array as a ``dask.array.Array`` (or a dict of them, one per attribute, when
    ``attribute`` is a list).

    - ``attribute``: a name, a list of names, or ``None`` for the only attribute;
    - ``chunks``: dask's chunk spec; by default blocks of whole tiles up to dask's
      ``array.chunk-size`` (each task decodes whole tiles, and no task is so small that its
      overhead outweighs its read); ``"tiles"`` for one tile per chunk;
    - ``timestamp``: an int or ``(start, end)``; by default the array as it is when the graph
      is built, pinned so that every task reads that version;
    - ``region``: ``"domain"`` (the full domain, as tiledb-py's ``A[:]``), ``"nonempty"``, or
      ``None`` for the full domain unless it holds more than 2**40 cells.

    The dask array's index 0 is the domain's (or region's) lower bound.
    """
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    uri = str(uri)
    config = _public_config(config)
    ts = _pinned(uri, timestamp, config)
    with _open(uri, timestamp=ts, config=config) as A:
        schema = A.schema
        if schema.sparse:
            raise TileDBError(f"{uri}: from_tessera reads dense arrays; use read_dataframe for sparse ones")
        for dim in schema.domain:
            if dim.dtype.kind not in "iu":
                raise TileDBError(f"{uri}: dimension {dim.name!r} is {dim.dtype}: from_tessera needs integer dimensions")
        if attribute is None:
            if schema.nattr != 1:
                raise TileDBError(f"{uri}: the array has {schema.nattr} attributes: name one or a list (attribute=)")
            names, single = [schema.attr(0).name], True
        elif isinstance(attribute, str):
            names, single = [attribute], True
        else:
            names, single = list(attribute), False
        fields = []
        for n in names:
            if not schema.has_attr(n):
                raise TileDBError(f"{uri}: no attribute named {n!r}")
            a = schema.attr(n)
            if a.isvar or a.ncells != 1:
                raise TileDBError(f"{uri}: attribute {n!r} has {'var-sized' if a.isvar else a.ncells} values per cell: dask arrays hold one")
            fields.append(a)
        full = [tuple(int(x) for x in d.domain) for d in schema.domain]
        cells = math.prod(hi - lo + 1 for lo, hi in full)
        if region is None:
            region = "nonempty" if cells > _HUGE_DOMAIN else "domain"
        if region == "domain":
            bounds = full
        elif region == "nonempty":
            ned = A.nonempty_domain()
            if ned is None:
                raise TileDBError(f"{uri}: the array is empty: it has no non-empty domain")
            bounds = [tuple(int(x) for x in r) for r in ned]
        else:
            raise ValueError(f"region must be 'domain', 'nonempty' or None, not {region!r}")
        tiles = [int(d.tile) for d in schema.domain]
    shape = tuple(hi - lo + 1 for lo, hi in bounds)
    if chunks is None or (isinstance(chunks, str) and chunks == "tiles"):
        per_tile = [_tile_chunks(lo, hi, f[0], t) for (lo, hi), f, t in zip(bounds, full, tiles)]
        if chunks is None:
            cell_bytes = sum(np.dtype(a.dtype).itemsize for a in fields)
            chunks = _group_tiles(per_tile, tiles, cell_bytes, _chunk_limit())
        else:
            chunks = tuple(per_tile)
    else:
        chunks = da.core.normalize_chunks(chunks, shape, dtype=fields[0].dtype)
    token = tokenize("tessera", uri, _version(uri, ts), tuple(names), chunks, tuple(bounds))
    read_name = f"tessera-read-{token}"
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in chunks]
    layer = {}
    for idx in np.ndindex(*[len(c) for c in chunks]):
        box = tuple(
            (bounds[d][0] + int(starts[d][i]), bounds[d][0] + int(starts[d][i]) + chunks[d][i] - 1)
            for d, i in enumerate(idx)
        )
        layer[(read_name, *idx)] = (_read_block, uri, ts, config, tuple(names), box)
    out = {}
    for a in fields:
        meta = np.ma.empty((0,) * len(shape), dtype=a.dtype) if a.isnullable else np.empty((0,) * len(shape), dtype=a.dtype)
        if len(fields) == 1:
            # one attribute: each task gives its block itself
            name = f"tessera-{a.name or 'attr'}-{token}"
            blocks = {(name, *k[1:]): (operator.getitem, task, a.name) for k, task in layer.items()}
            out[a.name] = da.Array(HighLevelGraph.from_collections(name, blocks), name, chunks, meta=meta)
            continue
        # several: each block is read once, and each attribute picks its part
        name = f"tessera-{a.name or 'attr'}-{token}"
        pick = {(name, *k[1:]): (operator.getitem, k, a.name) for k in layer}
        graph = HighLevelGraph(
            {read_name: layer, name: pick},
            {read_name: set(), name: {read_name}},
        )
        out[a.name] = da.Array(graph, name, chunks, meta=meta)
    return out[names[0]] if single else out


# ------------------------------------------------------------------------------------------
# dask arrays into Tessera arrays


def _write_block(block: np.ndarray, uri: str, attr: str, timestamp: int, config, offset: tuple, block_info=None):
    """Writes one block as a fragment of its own at ``timestamp``; returns a 1-cell marker."""
    loc = block_info[0]["array-location"]
    sel = tuple(slice(o + a, o + b) for o, (a, b) in zip(offset, loc))
    if any(s.start < 0 for s in sel):
        raise TileDBError(f"{uri}: to_tessera writes at non-negative coordinates only (block at {sel})")
    W = _cached(uri, timestamp, config, mode="w")
    W[sel] = {attr: np.ascontiguousarray(block)}
    return np.zeros((1,) * block.ndim, dtype=np.int8)


def _finish(markers, uri: str, config, consolidate: bool):
    if consolidate:
        from .highlevel import consolidate as _consolidate, vacuum as _vacuum

        _consolidate(uri, config=config)
        _vacuum(uri, config=config)
    return None


def to_tessera(darray, uri, attr: str = "", mode: str = "create", offset: Sequence[int] | None = None,
               timestamp: int | None = None, config=None, consolidate: bool = False, filters=None,
               compute: bool = True):
    """Writes a dask array into a dense array, each block as a fragment of its own, all at one
    timestamp (given, or the time the graph is built), from as many workers as run it.

    ``mode="create"`` makes the array first (dimensions ``__dim_0``... from 0, tiles equal to
    the first chunk along each axis, the attribute ``attr`` of the array's dtype with
    ``filters``); ``mode="append"`` writes into an existing array at ``offset`` (domain
    coordinates of the block's origin; the domain's lower bound by default). A block's
    fragment is committed only once whole, so a worker lost mid-write leaves nothing a
    reader sees; dask reruns the block. ``consolidate=True`` consolidates (and vacuums) once
    every block is in. Returns ``None`` (or the ``dask.delayed`` of the write when
    ``compute=False``)."""
    import dask
    import dask.array as da

    from .schema import ArraySchema, Attr, Dim, Domain

    uri = str(uri)
    config = _public_config(config)
    darray = da.asarray(darray)
    if darray.dtype.kind not in "iufbM":
        raise TileDBError(f"to_tessera writes numeric arrays, not {darray.dtype}")
    if any(math.isnan(s) for s in darray.shape):
        raise TileDBError("to_tessera needs the array's shape (compute its chunk sizes first)")
    if mode == "create":
        dims = [
            Dim(f"__dim_{i}", domain=(0, max(n, 1) - 1), tile=max(1, int(c[0])), dtype=np.uint64)
            for i, (n, c) in enumerate(zip(darray.shape, darray.chunks))
        ]
        schema = ArraySchema(domain=Domain(*dims), attrs=[Attr(attr, dtype=darray.dtype, filters=filters)])
        from .array import Array

        Array.create(uri, schema)
        origin = (0,) * darray.ndim
    elif mode == "append":
        with _open(uri, config=config) as A:
            if A.schema.sparse:
                raise TileDBError(f"{uri}: to_tessera writes into dense arrays")
            if A.schema.ndim != darray.ndim:
                raise TileDBError(f"{uri}: the array has {A.schema.ndim} dimensions, the dask array {darray.ndim}")
            if not A.schema.has_attr(attr):
                raise TileDBError(f"{uri}: no attribute named {attr!r}")
            origin = tuple(int(d.domain[0]) for d in A.schema.domain)
    else:
        raise ValueError(f"mode must be 'create' or 'append', not {mode!r}")
    offset = tuple(int(o) for o in (offset if offset is not None else origin))
    if len(offset) != darray.ndim:
        raise ValueError(f"offset has {len(offset)} coordinates, the array {darray.ndim} dimensions")
    ts = int(timestamp) if timestamp is not None else int(time.time() * 1000)
    markers = darray.map_blocks(
        _write_block, uri, attr, ts, config, offset,
        dtype=np.int8, chunks=tuple((1,) * len(c) for c in darray.chunks),
        name=f"tessera-write-{dask.base.tokenize(darray, uri, attr, ts, offset)}",
    )
    done = dask.delayed(_finish)(markers, uri, config, consolidate)
    if compute:
        done.compute()
        return None
    return done


# ------------------------------------------------------------------------------------------
# any array as a dask dataframe


def _split_points(dim, lo, hi, weights: list[tuple[float, float]], n: int) -> list:
    """``n - 1`` cut points in ``[lo, hi]`` that split the weighted midpoints evenly."""
    if n <= 1 or not weights:
        return []
    weights = sorted(weights)
    total = sum(w for _, w in weights)
    cuts, acc, k = [], 0.0, 1
    for pos, w in weights:
        acc += w
        while k < n and acc >= total * k / n:
            cuts.append(pos)
            k += 1
    out = []
    for c in cuts:
        c = int(math.floor(c)) if dim.dtype.kind in "iuM" else float(c)
        if lo <= c < hi and (not out or c > out[-1]):
            out.append(c)
    return out


def _partition_ranges(uri: str, ts: tuple, config, npartitions: int | None, cells_per_partition: int):
    """Ranges on the first dimension (inclusive, disjoint, covering its domain) holding about
    equal numbers of cells, from each fragment's tile MBRs and cell counts."""
    from .highlevel import array_fragments

    with _open(uri, timestamp=ts, config=config) as A:
        dim = A.schema.domain.dim(0)
        if dim.dtype.kind not in "iufM":
            return dim.name, [None]
        lo, hi = (dim.domain[0], dim.domain[1])
        if dim.dtype.kind == "M":
            lo, hi = int(lo.astype(np.int64)), int(hi.astype(np.int64))
        info = array_fragments(uri, include_mbrs=True)
        weights, total = [], 0
        for i in range(len(info)):
            t0, t1 = info.timestamp_range[i]
            if t0 < ts[0] or t1 > ts[1]:
                continue
            n = int(info.cell_num[i])
            total += n
            mbrs = info.mbrs[i] if getattr(info, "mbrs", None) is not None else ()
            if mbrs:
                per = n / len(mbrs)
                for m in mbrs:
                    a, b = m[dim.name] if isinstance(m, dict) else m[0]
                    a, b = (float(np.int64(x.astype(np.int64))) if isinstance(x, np.datetime64) else float(x) for x in (a, b))
                    weights.append(((a + b) / 2, per))
            else:
                ned = info.nonempty_domain[i][0]
                a, b = (float(x.astype(np.int64)) if isinstance(x, np.datetime64) else float(x) for x in ned)
                weights.append(((a + b) / 2, n))
    n = npartitions or max(1, math.ceil(total / cells_per_partition))
    cuts = _split_points(dim, lo, hi, weights, n)
    if dim.dtype.kind in "iuM":
        bounds = [lo] + [c + 1 for c in cuts]
        ranges = [(b, e - 1) for b, e in zip(bounds, bounds[1:] + [hi + 1])]
    else:
        # float dimensions: a cut belongs to the partition below it
        bounds = [lo] + [float(np.nextafter(np.asarray(c, dim.dtype), np.asarray(np.inf, dim.dtype))) for c in cuts]
        ranges = [(b, e) for b, e in zip(bounds, cuts + [hi])]
    if dim.dtype.kind == "M":
        unit = np.datetime_data(dim.dtype)[0]
        ranges = [(np.datetime64(a, unit), np.datetime64(b, unit)) for a, b in ranges]
    return dim.name, ranges


class _ReadPartition:
    """Reads one partition (a range on the first dimension) as a pandas DataFrame; dask's
    optimiser passes ``columns`` to narrow the read to what the graph uses."""

    def __init__(self, uri, ts, config, dims, attrs, cond, dim0):
        self.uri, self.ts, self.config = uri, ts, config
        self.dims, self.attrs, self.cond, self.dim0 = list(dims), list(attrs), cond, dim0

    @property
    def columns(self):
        return self.dims + self.attrs

    def __call__(self, rng, columns=None):
        keep = set(self.columns if columns is None else columns)
        dims = [d for d in self.dims if d in keep]
        attrs = [a for a in self.attrs if a in keep]
        import pandas as pd

        A = _cached(self.uri, self.ts, self.config)
        q = A.query(attrs=attrs, dims=dims, cond=self.cond, index_col=False)
        if rng is None:
            df = q.df[:]
        else:
            sel = [slice(None)] * A.schema.ndim
            sel[0] = slice(rng[0], rng[1])
            df = q.df[tuple(sel)]

        # dimensions that the array's pandas metadata made the index become columns again
        # (each step only when needed: on a partition of a million rows, an unneeded
        # reset_index or column selection copies every column once more)
        idx = df.index
        if not (isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1):
            df = df.reset_index(drop=isinstance(idx, pd.RangeIndex))
        order = [c for c in dims + attrs if c in df.columns]
        return df if list(df.columns) == order else df[order]

    def meta(self, rng):
        """The empty frame with the partitions' columns and dtypes: a read of the range's
        first coordinate only (not of the whole first partition)."""
        return self(rng if rng is None else (rng[0], rng[0])).iloc[:0]


def read_dataframe(uri, columns=None, cond=None, timestamp=None, config=None, npartitions=None,
                   cells_per_partition: int = 1_000_000):
    """An array's cells as a ``dask.dataframe.DataFrame``: dimensions then attributes as
    columns, in partitions along the first dimension that hold about equal numbers of cells
    (from each fragment's tile MBRs), every cell in exactly one partition.

    ``columns`` projects (dask's optimiser also pushes projections into the reads); ``cond``
    (tiledb-py's condition syntax) is applied by every partition's read; the timestamp is
    pinned when the frame is built."""
    import dask.dataframe as dd

    uri = str(uri)
    config = _public_config(config)
    ts = _pinned(uri, timestamp, config)
    with _open(uri, timestamp=ts, config=config) as A:
        all_dims = [d.name for d in A.schema.domain]
        all_attrs = [a.name for a in A.schema]
    if columns is None:
        dims, attrs = all_dims, all_attrs
    else:
        unknown = [c for c in columns if c not in all_dims and c not in all_attrs]
        if unknown:
            raise TileDBError(f"{uri}: no dimension or attribute named {unknown[0]!r}")
        dims = [d for d in all_dims if d in columns]
        attrs = [a for a in all_attrs if a in columns]
    dim0, ranges = _partition_ranges(uri, ts, config, npartitions, cells_per_partition)
    reader = _ReadPartition(uri, ts, config, dims, attrs, cond, dim0)
    meta = reader.meta(ranges[0]) if ranges else None
    return dd.from_map(reader, ranges, meta=meta, enforce_metadata=False, label="read-tessera")
