"""tiledb-py's module-level functions: `from_numpy`, `from_pandas`, `consolidate`, `vacuum`,
`object_type`, `array_exists`, `array_fragments`, `schema_like`, `empty_like`."""

from __future__ import annotations

import builtins
import json
import os

import numpy as np

from . import _tessera
from ._tessera import TileDBError
from .array import Array, DenseArray, SparseArray, _key_bytes, _native_open, open
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
    cfg = _config_dict(config, ctx)
    key = _key_bytes(key, cfg)
    mode = cfg.get("sm.consolidation.mode", "fragments")
    if fragment_uris is not None:
        # the fragments' names (URIs work too), merged into one as libtiledb does
        _tessera.consolidate_fragments(str(uri), [str(f).rstrip("/") for f in fragment_uris], key)
        return str(uri)
    start = end = None
    if timestamp is not None:
        start, end = timestamp
    else:
        if "sm.consolidation.timestamp_start" in cfg:
            start = int(cfg["sm.consolidation.timestamp_start"])
        if "sm.consolidation.timestamp_end" in cfg:
            end = int(cfg["sm.consolidation.timestamp_end"])
    purge = cfg.get("sm.consolidation.purge_deleted_cells", "false").lower() == "true"
    steps = {k: str(v) for k, v in cfg.items() if k.startswith("sm.consolidation.")}
    _tessera.consolidate(str(uri), mode, start, end, purge, key, steps)
    return str(uri)


def vacuum(uri, config=None, ctx=None, timestamp=None):
    """Removes what consolidations in ``sm.vacuum.mode`` (fragments by default) made obsolete."""
    cfg = _config_dict(config, ctx)
    mode = cfg.get("sm.vacuum.mode", "fragments")
    _tessera.vacuum(str(uri), mode, _key_bytes(None, cfg))


builtins_open = builtins.open


def _local_path(uri: str):
    """The local path of a ``file://`` or plain URI (None for other schemes)."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if "://" in uri:
        return None
    return uri


def _generic_tile_payloads(data: bytes):
    """The payloads of the generic tiles back to back at the start of ``data`` (gzip pipelines
    only, as libtiledb writes them); stops at the first tile it cannot read."""
    import struct
    import zlib

    pos = 0
    while pos + 34 <= len(data):
        _version, persisted, tile_size = struct.unpack_from("<IQQ", data, pos)
        pipeline_size = struct.unpack_from("<I", data, pos + 30)[0]
        pipe = data[pos + 34 : pos + 34 + pipeline_size]
        body = memoryview(data)[pos + 34 + pipeline_size : pos + 34 + pipeline_size + persisted]
        pos += 34 + pipeline_size + persisted
        nfilters = struct.unpack_from("<I", pipe, 4)[0] if len(pipe) >= 8 else 0
        ftypes = []
        off = 8
        for _ in range(nfilters):
            ftypes.append(pipe[off])
            off += 5 + struct.unpack_from("<I", pipe, off + 1)[0]
        if ftypes not in ([1], []):
            return
        out = bytearray()
        nchunks = struct.unpack_from("<Q", body, 0)[0]
        c = 8
        for _ in range(nchunks):
            _orig, filtered, meta_len = struct.unpack_from("<III", body, c)
            c += 12
            meta = bytes(body[c : c + meta_len])
            chunk = bytes(body[c + meta_len : c + meta_len + filtered])
            c += meta_len + filtered
            if not ftypes:
                out += chunk
                continue
            n_meta, n_data = struct.unpack_from("<II", meta, 0)
            lens = struct.unpack_from("<" + "II" * (n_meta + n_data), meta, 8)
            d = 0
            for i in range(n_meta + n_data):
                clen = lens[2 * i + 1]
                part = zlib.decompress(chunk[d : d + clen])
                d += clen
                if i >= n_meta:
                    out += part
        yield bytes(out[:tile_size])


def _parse_ranges(buf: bytes, pos: int, dims):
    """One MBR (a range per dimension) at ``pos``: the ranges and the position after it."""
    import struct

    out = []
    for d in dims:
        if d.isvar:
            rsize, ssize = struct.unpack_from("<QQ", buf, pos)
            pos += 16
            raw = buf[pos : pos + rsize]
            pos += rsize
            out.append((raw[:ssize].decode("utf-8", "replace"), raw[ssize:].decode("utf-8", "replace")))
        else:
            base = _types_value_dtype(d)
            lo, hi = np.frombuffer(buf, dtype=base, count=2, offset=pos)
            pos += 2 * base.itemsize
            out.append((_py_value(lo, d), _py_value(hi, d)))
    return tuple(out), pos


def _types_value_dtype(d) -> np.dtype:
    from . import _types

    return _types.VALUE_DTYPE.get(d._type, d.dtype)


def _py_value(v, d):
    # tiledb-py gives MBR bounds as numpy scalars, those of datetime dimensions as uint64
    if d.dtype.kind in "Mm":
        return np.uint64(np.asarray(v).view(np.int64).astype(np.uint64))
    return v


def _fragment_mbrs(path: str, dims):
    """The leaf MBRs of a fragment's R-tree (the first generic tile of its metadata file)."""
    import struct

    try:
        with builtins_open(os.path.join(path, "__fragment_metadata.tdb"), "rb") as f:
            data = f.read()
    except OSError:
        return ()
    for payload in _generic_tile_payloads(data):
        _fanout, nlevels = struct.unpack_from("<II", payload, 0)
        pos = 8
        leaves = ()
        for _ in range(nlevels):
            n = struct.unpack_from("<Q", payload, pos)[0]
            pos += 8
            level, pos = _parse_level(payload, pos, n, dims)
            leaves = tuple(level)
        return leaves
    return ()


def _parse_level(buf: bytes, pos: int, n: int, dims):
    """The ``n`` MBRs of an R-tree level at ``pos`` and the position after them: with only
    fixed-size dimensions, one structured read of the whole level (records of a low and a high
    bound per dimension) instead of one parse per MBR."""
    if any(d.isvar for d in dims):
        level = []
        for _ in range(n):
            mbr, pos = _parse_ranges(buf, pos, dims)
            level.append(mbr)
        return level, pos
    record = np.dtype([(f"d{i}", _types_value_dtype(d), (2,)) for i, d in enumerate(dims)])
    if pos + n * record.itemsize > len(buf):
        raise ValueError(f"R-tree level of {n} MBRs at byte {pos} runs past the {len(buf)}-byte tile")
    recs = np.frombuffer(buf, dtype=record, count=n, offset=pos)
    cols = [recs[f"d{i}"] for i in range(len(dims))]
    level = [
        tuple((_py_value(c[k, 0], d), _py_value(c[k, 1], d)) for c, d in zip(cols, dims))
        for k in range(n)
    ]
    return level, pos + n * record.itemsize


def _consolidated_meta_names(array_path: str) -> set:
    """Names of the fragments whose footers a ``__fragment_meta/*.meta`` file holds."""
    import struct

    names: set = set()
    folder = os.path.join(array_path, "__fragment_meta")
    try:
        files = sorted(os.listdir(folder))
    except OSError:
        return names
    for fn in files:
        if not fn.endswith(".meta"):
            continue
        try:
            with builtins_open(os.path.join(folder, fn), "rb") as f:
                data = f.read()
        except OSError:
            continue
        for payload in _generic_tile_payloads(data):
            n = struct.unpack_from("<I", payload, 0)[0]
            pos = 4
            for _ in range(n):
                ln = struct.unpack_from("<Q", payload, pos)[0]
                names.add(payload[pos + 8 : pos + 8 + ln].decode("utf-8", "replace"))
                pos += 16 + ln
            break
    return names


def _to_vacuum(array_path: str) -> list:
    """Relative paths (``__fragments/<name>``) that ``__commits/*.vac`` files list."""
    out: list = []
    folder = os.path.join(array_path, "__commits")
    try:
        files = sorted(os.listdir(folder))
    except OSError:
        return out
    for fn in files:
        if not fn.endswith(".vac"):
            continue
        try:
            with builtins_open(os.path.join(folder, fn), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if not line:
                continue
            if "__fragments" in line:
                rel = line[line.index("__fragments") :]
            else:
                rel = line.rsplit("/", 1)[-1]
            if os.path.exists(os.path.join(array_path, rel)) and rel not in out:
                out.append(rel)
    return out


class FragmentInfoList:
    """The visible fragments of an array, oldest first (``tiledb.array_fragments``): every
    property is a tuple with one item per fragment."""

    def __init__(self, array_uri, include_mbrs=False, ctx=None):
        native = _native_open(str(array_uri))
        schema = ArraySchema._from_json(json.loads(native.schema_json()))
        frags = json.loads(native.fragments_json())
        self.array_uri = array_uri
        uri = str(array_uri)
        local = _local_path(uri)
        if local is not None:
            base = "file://" + os.path.abspath(local)
        else:
            base = uri.rstrip("/")
        dims = list(schema.domain)
        self._num = len(frags)
        self.uri = tuple(f"{base}/{j['dir']}" for j in frags)
        self.version = tuple(j["format_version"] for j in frags)
        self.nonempty_domain = tuple(self._ned(j.get("nonempty_domain"), dims) for j in frags)
        self.cell_num = tuple(j["cell_num"] for j in frags)
        self.timestamp_range = tuple(tuple(j["timestamp_range"]) for j in frags)
        self.sparse = tuple(bool(j["sparse"]) for j in frags)
        consolidated = _consolidated_meta_names(local) if local is not None else set()
        self.has_consolidated_metadata = tuple(j["name"] in consolidated for j in frags)
        self.unconsolidated_metadata_num = sum(1 for h in self.has_consolidated_metadata if not h)
        self.to_vacuum = tuple(f"{base}/{rel}" for rel in (_to_vacuum(local) if local is not None else []))
        if include_mbrs:
            self.mbrs = tuple(
                _fragment_mbrs(os.path.join(local, j["dir"]), dims) if (local is not None and j["sparse"]) else ()
                for j in frags
            )
        self.array_schema_name = tuple(j.get("schema_name") for j in frags)

    @staticmethod
    def _ned(ned, dims):
        if ned is None:
            return None
        out = []
        for d, pair in zip(dims, ned):
            if d.isvar:
                out.append(tuple(v if isinstance(v, str) else bytes(v).decode("utf-8", "replace") for v in pair))
            elif d.dtype.kind in "Mm":
                u = np.datetime_data(d.dtype)[0]
                out.append(tuple(d.dtype.type(int(v), u) for v in pair))
            else:
                out.append(tuple(d.dtype.type(v) for v in pair))
        return tuple(out)

    def __getattr__(self, name):
        if name == "mbrs":
            raise AttributeError(
                "'FragmentInfoList' object has no attribute 'mbrs'. (Hint: retrieving minimum bounding "
                "rectangles is disabled by default to optimize speed and space. Use "
                "tiledb.array_fragments(include_mbrs=True) to enable)"
            )
        raise AttributeError(f"'FragmentInfoList' object has no attribute '{name}'")

    def __len__(self) -> int:
        return self._num

    def __iter__(self):
        return (FragmentInfo(self, i) for i in range(self._num))

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [FragmentInfo(self, i) for i in range(*key.indices(self._num))]
        if isinstance(key, (int, np.integer)):
            if not -self._num <= key < self._num:
                raise IndexError("tuple index out of range")
            return FragmentInfo(self, int(key) % self._num if self._num else int(key))
        raise TypeError("Invalid argument type.")

    def __repr__(self) -> str:
        import pprint

        return pprint.PrettyPrinter().pformat({k: v for k, v in self.__dict__.items() if not k.startswith("_")})


class FragmentInfo:
    """One fragment of an array (an item of a ``FragmentInfoList``)."""

    def __init__(self, fragments: FragmentInfoList, num: int):
        self.num = num
        self.uri = fragments.uri[num]
        self.version = fragments.version[num]
        self.nonempty_domain = fragments.nonempty_domain[num]
        self.cell_num = fragments.cell_num[num]
        self.timestamp_range = fragments.timestamp_range[num]
        self.sparse = fragments.sparse[num]
        self.has_consolidated_metadata = fragments.has_consolidated_metadata[num]
        self.unconsolidated_metadata_num = fragments.unconsolidated_metadata_num
        if "mbrs" in fragments.__dict__:
            self.mbrs = fragments.mbrs[num]
        self.array_schema_name = fragments.array_schema_name[num]

    def __getattr__(self, name):
        if name == "mbrs":
            raise AttributeError(
                "'FragmentInfo' object has no attribute 'mbrs'. (Hint: retrieving minimum bounding "
                "rectangles is disabled by default to optimize speed and space. Use "
                "tiledb.array_fragments(include_mbrs=True) to enable)"
            )
        raise AttributeError(f"'FragmentInfo' object has no attribute '{name}'")

    def __repr__(self) -> str:
        import pprint

        return pprint.PrettyPrinter().pformat({k: v for k, v in self.__dict__.items() if not k.startswith("_")})


def array_fragments(uri, include_mbrs=False, ctx=None) -> FragmentInfoList:
    """The fragments of the array at ``uri`` (``tiledb.array_fragments``)."""
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
                # as tiledb-py's write_direct: the other dimensions start at start_idx (or 0),
                # not at the array's non-empty domain
                for n in range(array.ndim):
                    if n == append_dim:
                        start[n] = start_idx if start_idx is not None else int(ned[n][1]) + 1
                    elif array.shape[n] != int(ned[n][1]) - int(ned[n][0]) + 1:
                        raise ValueError(
                            "The input Numpy array must be of the same shape as the TileDB array, exluding the "
                            f"`append_dim`, but the Numpy array at index {n} has {array.shape[n]} dimension(s) and "
                            f"the TileDB array has {int(ned[n][1]) - int(ned[n][0])}."
                        )
            sel = tuple(slice(start[n], start[n] + array.shape[n]) for n in range(array.ndim))
            A[sel] = data
    return DenseArray(uri, mode="r")


def from_pandas(uri, dataframe, **kwargs):
    """Creates an array from a pandas DataFrame (see tessera.dataframe_)."""
    from .dataframe_ import from_pandas as _fp

    return _fp(uri, dataframe, **kwargs)


def _object_children(uri: str):
    """The TileDB objects (arrays and groups) directly inside the folder ``uri``, sorted, as
    ``(file:// URI, type)`` pairs."""
    path = _local_path(str(uri))
    if path is None:
        raise _tessera.NotSupportedError("listing objects is only supported on local paths")
    path = path.rstrip("/") or "/"
    try:
        names = sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for n in names:
        full = os.path.join(path, n)
        if not os.path.isdir(full):
            continue
        t = _tessera.object_type(full)
        if t is not None:
            out.append(("file://" + os.path.abspath(full), t))
    return out


def ls(uri, func, ctx=None) -> None:
    """Calls ``func(uri, type)`` for every TileDB object directly inside ``uri`` (one level)."""
    for child, t in _object_children(uri):
        func(child, t)


def walk(uri, func, order: str = "preorder", ctx=None) -> None:
    """Calls ``func(uri, type)`` for every TileDB object below ``uri``, depth first, parents
    before (``order='preorder'``) or after (``'postorder'``) their members."""
    if order not in ("preorder", "postorder"):
        raise TileDBError(f"unknown walk order {order}")

    def visit(u):
        for child, t in _object_children(u):
            if order == "preorder":
                func(child, t)
            visit(child)
            if order == "postorder":
                func(child, t)

    visit(uri)
