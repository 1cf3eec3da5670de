#!/usr/bin/env python3
"""Fixtures of tessera-fragment: small TileDB arrays written by libtiledb 2.30.0 (tiledb-py 0.36.1)
and what libtiledb reports about their fragments.

Run with the reference venv from the workspace root:

    target/reference-venv/bin/python crates/tessera-fragment/tests/data/generate.py

It deletes and rewrites every array folder next to this script and `expected.json`. Fragment and
schema names contain random uuids (libtiledb does not let us choose them), so a regeneration changes
names; everything else is deterministic.

Arrays (all tiny; filters are empty unless said otherwise, so data tiles are plain chunk framing):

* sparse_nulls: sparse 2-D int64, capacity 3, 9 cells -> 3 tiles. Nullable int32 / fixed char[2] /
  var ascii with an all-null tile; float64 and nullable float32 with NaN; int8 with negatives;
  uint64 whose sum saturates; bool; datetime_ms; char cvn 1; var utf8 (no min/max); blob.
* dense_partial: dense 2-D int32, 2x2 tiles over [1,4]x[1,4] (four attributes: tiledb-py 0.36.1
  segfaults on a dense write of five with a null first var cell). Fragment 1 writes rows 2-3 x col 2
  (two partially written tiles), fragment 2 the whole domain, fragment 3 rows 1-2 with a nullable
  attribute whose first tile is all null.
* sparse_strdim: var ascii dimension plus an int32 dimension, capacity 2.
* hilbert: sparse Hilbert order, int32 x float64 dimensions, capacity 4, 20 cells (2 R-tree levels).
* consolidated: sparse, two fragments (ts 10, 20), deletes at 30 (`a == 15`) and 35
  (`a in [1, 2] or a > 900`), fragment metadata consolidation (`__fragment_meta/*.meta`), fragment
  consolidation (t/dt/dci, processed conditions, `.vac`), then commits consolidation (`.con` with
  the `.del` bytes). Default filters (zstd offsets, rle validity) are kept here.
* ignore: three sparse fragments, commits consolidation, then delete_fragments on the first
  -> a `.ign` file.

expected.json, per array: every file name under __commits and __fragment_meta, and per fragment
what FragmentInfoList reports (name, timestamp range, non-empty domain, cell count, sparse,
version, schema name, MBRs of sparse fragments), plus the cells of every tile as libtiledb reads
them (only for fragments that can be read alone): per field the little-endian bytes of each cell
in hex (var cells: their bytes), a validity list for nullable fields, and for dense fragments the
position of each written cell inside its tile. Null cells carry whatever libtiledb returned for
them and must not be compared. `aggregates` holds libtiledb's sum/min/max/null_count per
fragment for the numeric attributes where tiledb-py supports them.
"""

import json
import os
import shutil

import numpy as np
import tiledb
from tiledb.dense_array import DenseArrayImpl  # noqa: F401  (import check)
from tiledb.sparse_array import _setitem_impl_sparse

HERE = os.path.dirname(os.path.abspath(__file__))
NOFILT = tiledb.FilterList([])


def schema(dims, attrs, sparse, capacity=10000, cell_order="row-major", tile_order="row-major",
           empty_filters=True, allows_duplicates=False):
    kw = {}
    if empty_filters:
        kw = dict(offsets_filters=NOFILT, validity_filters=NOFILT, coords_filters=NOFILT)
    return tiledb.ArraySchema(
        domain=tiledb.Domain(*dims),
        attrs=attrs,
        sparse=sparse,
        capacity=capacity,
        cell_order=cell_order,
        tile_order=tile_order,
        allows_duplicates=allows_duplicates,
        **kw,
    )


def attr(name, dtype, **kw):
    kw.setdefault("filters", NOFILT)
    return tiledb.Attr(name, dtype=dtype, **kw)


def dim(name, domain, tile, dtype, **kw):
    kw.setdefault("filters", NOFILT)
    return tiledb.Dim(name, domain=domain, tile=tile, dtype=dtype, **kw)


# ---------------------------------------------------------------------------------------------
# arrays


def make_sparse_nulls(uri):
    tiledb.Array.create(
        uri,
        schema(
            [dim("x", (0, 99), 10, np.int64), dim("y", (0, 99), 10, np.int64)],
            [
                attr("a", np.int32, nullable=True),
                attr("c", "S2", nullable=True),
                attr("s", "ascii", var=True, nullable=True),
                attr("f", np.float64),
                attr("g", np.float32, nullable=True),
                attr("i8", np.int8),
                attr("u64", np.uint64),
                attr("b", np.bool_),
                attr("dt", "datetime64[ms]"),
                attr("ch", "S1"),
                attr("u", str, var=True),
                attr("blob", "blob", var=True),
            ],
            sparse=True,
            capacity=3,
        ),
    )
    # global order: (1,1) (1,2) (5,5) | (7,2) (3,90) (22,40) | (50,3) (60,1) (60,2)
    x = np.array([5, 1, 50, 1, 22, 7, 3, 60, 60], dtype=np.int64)
    y = np.array([5, 2, 3, 1, 40, 2, 90, 1, 2], dtype=np.int64)
    valid_a = np.array([1, 0, 1, 0, 0, 0, 0, 1, 1], dtype=np.uint8)  # tile 1 all null
    a = np.array([1, 2, 3, 4, 5, 6, 7, -8, 9], dtype=np.int32)
    c = np.array([b"ab", b"cd", b"\x80z", b"gh", b"ij", b"kl", b"mn", b"a\x00", b"a"], dtype="S2")
    s = np.array(["e", None, "", "bb", None, None, None, "ddd", "dd"], dtype=object)
    f = np.array([1.5, np.nan, -2.0, 4.0, np.nan, 3.0, 0.5, -1e300, -1e300], dtype=np.float64)
    g = np.array([np.nan, 2.5, 1.0, 7.0, -3.0, 0.0, 1.0, np.nan, 2.0], dtype=np.float32)
    valid_g = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1], dtype=np.uint8)
    i8 = np.array([-128, 5, 127, -1, -2, 3, 100, 100, -100], dtype=np.int8)
    big = np.iinfo(np.uint64).max
    u64 = np.array([big, 1, 2, 3, 4, 5, big - 1, 2, 3], dtype=np.uint64)
    b = np.array([True, False, True, False, False, False, True, True, False])
    dt = np.array([10, -20, 30, 40, 50, 60, 70, 80, 90], dtype="datetime64[ms]")
    ch = np.array([b"a", b"\xff", b"c", b"d", b"\x00", b"f", b"g", b"h", b"i"], dtype="S1")
    u = np.array(["z", "\u00e9", "y", "x", "w", "v", "u", "t", "s"], dtype=object)
    blob = np.array([b"\x01", b"\x02\x03", b"", b"\x04", b"\x05", b"\x06", b"\x07", b"\x08", b"\x09"],
                    dtype=object)
    with tiledb.open(uri, "w", timestamp=1) as A:
        _setitem_impl_sparse(
            A,
            (x, y),
            {"a": a, "c": c, "s": s, "f": f, "g": g, "i8": i8, "u64": u64, "b": b, "dt": dt,
             "ch": ch, "u": u, "blob": blob},
            {"a": valid_a, "c": valid_a.copy(), "g": valid_g},
        )


def make_dense_partial(uri):
    tiledb.Array.create(
        uri,
        schema(
            [dim("r", (1, 4), 2, np.int32), dim("c", (1, 4), 2, np.int32)],
            [
                attr("a", np.int32, nullable=True),
                attr("s", "ascii", var=True, nullable=True),
                attr("f", np.float64),
                attr("k", "S3"),
            ],
            sparse=False,
        ),
    )
    with tiledb.open(uri, "w", timestamp=1) as A:
        A._setitem_impl(
            (slice(2, 4), slice(2, 3)),
            {
                "a": np.array([[100], [101]], dtype=np.int32),
                "s": np.array([["x"], ["yy"]], dtype=object),
                "f": np.array([[0.25], [-0.5]]),
                "k": np.array([[b"abc"], [b"ab"]], dtype="S3"),
            },
            {"a": np.array([1, 1], dtype=np.uint8), "s": np.array([1, 0], dtype=np.uint8)},
        )
    n = 16
    with tiledb.open(uri, "w", timestamp=2) as A:
        words = np.array(["w%d" % (i % 5) * (i % 3) for i in range(n)], dtype=object)
        A._setitem_impl(
            (slice(1, 5), slice(1, 5)),
            {
                "a": np.arange(n, dtype=np.int32).reshape(4, 4) * 3 - 20,
                "s": words.reshape(4, 4),
                "f": np.linspace(-1, 1, n).reshape(4, 4),
                "k": np.array([b"k%02d" % i for i in range(n)], dtype="S3").reshape(4, 4),
            },
            {"a": np.array([i % 4 != 1 for i in range(n)], dtype=np.uint8),
             "s": np.array([i % 5 != 0 for i in range(n)], dtype=np.uint8)},
        )
    with tiledb.open(uri, "w", timestamp=3) as A:
        n = 8
        A._setitem_impl(
            (slice(1, 3), slice(1, 5)),
            {
                "a": np.arange(n, dtype=np.int32).reshape(2, 4),
                "s": np.array(["t%d" % i for i in range(n)], dtype=object).reshape(2, 4),
                "f": np.arange(n, dtype=np.float64).reshape(2, 4),
                "k": np.array([b"m%02d" % i for i in range(n)], dtype="S3").reshape(2, 4),
            },
            # cells of the first tile (rows 1-2, cols 1-2) are all null in "a"
            {"a": np.array([0, 0, 1, 1, 0, 0, 1, 1], dtype=np.uint8),
             "s": np.ones(n, dtype=np.uint8)},
        )


def make_sparse_strdim(uri):
    tiledb.Array.create(
        uri,
        schema(
            [dim("k", None, None, "ascii"), dim("x", (0, 9), 5, np.int32)],
            [attr("v", np.int64)],
            sparse=True,
            capacity=2,
        ),
    )
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[np.array([b"bb", b"a", b"ccc", b"b", b"a"], dtype=object),
          np.array([1, 7, 3, 2, 2], dtype=np.int32)] = np.array([5, -6, 7, 8, 9], dtype=np.int64)


def make_hilbert(uri):
    tiledb.Array.create(
        uri,
        schema(
            [dim("i", (0, 999), 100, np.int32), dim("w", (0.0, 1.0), 0.5, np.float64)],
            [attr("a", np.uint16)],
            sparse=True,
            capacity=4,
            cell_order="hilbert",
        ),
    )
    rng = np.random.default_rng(2030)
    n = 20
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[rng.choice(1000, n, replace=False).astype(np.int32), rng.random(n)] = (
            rng.integers(0, 65535, n).astype(np.uint16)
        )


def make_consolidated(uri):
    tiledb.Array.create(
        uri,
        schema(
            [dim("x", (1, 100), 10, np.int32), dim("y", (1, 100), 10, np.int32)],
            [tiledb.Attr("a", dtype=np.int32)],
            sparse=True,
            capacity=3,
            empty_filters=False,
        ),
    )
    with tiledb.open(uri, "w", timestamp=10) as A:
        A[np.array([1, 1, 2, 7], dtype=np.int32), np.array([1, 2, 2, 2], dtype=np.int32)] = (
            np.array([10, 11, 12, 15], dtype=np.int32)
        )
    with tiledb.open(uri, "w", timestamp=20) as A:
        A[np.array([1, 3, 50], dtype=np.int32), np.array([2, 90, 3], dtype=np.int32)] = (
            np.array([999, 1, 2], dtype=np.int32)
        )
    with tiledb.open(uri, "d", timestamp=30) as A:
        A.query(cond="a == 15").submit()
    with tiledb.open(uri, "d", timestamp=35) as A:
        A.query(cond="a in [1, 2] or a > 900").submit()


def finish_consolidated(uri):
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    tiledb.consolidate(uri)
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))


def make_ignore(uri):
    tiledb.Array.create(
        uri,
        schema([dim("x", (1, 10), 5, np.int32)], [attr("a", np.int32)], sparse=True),
    )
    for t in (1, 2, 3):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[np.array([t, t + 3], dtype=np.int32)] = np.array([t, -t], dtype=np.int32)


def finish_ignore(uri):
    tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    tiledb.Array.delete_fragments(uri, 1, 1)


# ---------------------------------------------------------------------------------------------
# expectations


def cell_hex(attr_or_dim, v):
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, str):
        return v.encode("utf-8").hex()
    return np.asarray(v, dtype=attr_or_dim.dtype).tobytes().hex()


def field_cells(sch, name, values):
    """Hex of every cell and the validity list (None when not nullable)."""
    field = sch.attr(name) if sch.has_attr(name) else sch.domain.dim(name)
    nullable = sch.has_attr(name) and field.isnullable
    data = np.ma.getdata(values)
    mask = np.ma.getmaskarray(values) if nullable else None
    cells = []
    for i, v in enumerate(data.ravel() if data.dtype != object else data):
        if field.dtype == np.dtype("S") or field.isvar or data.dtype.kind in "SUO":
            if v is None:
                v = b""
            if isinstance(v, str):
                v = v.encode("utf-8")
            if not field.isvar:
                v = bytes(v).ljust(field.dtype.itemsize if field.dtype.itemsize else 1, b"\x00")
            cells.append(bytes(v).hex())
        else:
            cells.append(cell_hex(field, v))
    validity = None if mask is None else [int(not m) for m in mask.ravel()]
    return cells, validity


def names(sch):
    return [sch.attr(i).name for i in range(sch.nattr)] + [
        sch.domain.dim(i).name for i in range(sch.domain.ndim)
    ]


def sparse_tiles(uri, t, sch):
    with tiledb.open(uri, timestamp=t) as A:
        res = A.query(order="G")[:]
    n = len(res[sch.domain.dim(0).name])
    cap = sch.capacity
    tiles = []
    for start in range(0, n, cap):
        end = min(n, start + cap)
        fields = {}
        for name in names(sch):
            vals = res[name]
            cells, validity = field_cells(sch, name, vals[start:end])
            fields[name] = {"cells": cells}
            if validity is not None:
                fields[name]["validity"] = validity
        tiles.append({"fields": fields})
    return tiles


def dense_tiles(uri, t, sch, ned):
    (r0, r1), (c0, c1) = ned
    with tiledb.open(uri, timestamp=t) as A:
        res = A.query(order="C")[r0 : r1 + 1, c0 : c1 + 1]
    d0, d1 = sch.domain.dim(0), sch.domain.dim(1)
    e0, e1 = int(d0.tile), int(d1.tile)
    lo0, lo1 = int(d0.domain[0]), int(d1.domain[0])
    t0 = [(r0 - lo0) // e0, (r1 - lo0) // e0]
    t1 = [(c0 - lo1) // e1, (c1 - lo1) // e1]
    tiles = []
    for tr in range(t0[0], t0[1] + 1):
        for tc in range(t1[0], t1[1] + 1):
            positions = []
            fields = {n: {"cells": []} for n in names(sch) if sch.has_attr(n)}
            for pr in range(e0):
                for pc in range(e1):
                    r = lo0 + tr * e0 + pr
                    c = lo1 + tc * e1 + pc
                    if not (r0 <= r <= r1 and c0 <= c <= c1):
                        continue
                    positions.append(pr * e1 + pc)
                    for n in fields:
                        vals = res[n]
                        v = vals[r - r0, c - c0]
                        cells, validity = field_cells(sch, n, np.ma.array([v]) if not isinstance(v, np.ma.core.MaskedConstant) else np.ma.masked_array([0], mask=[True], dtype=vals.dtype))
                        fields[n]["cells"] += cells
                        if validity is not None:
                            fields[n].setdefault("validity", []).extend(validity)
            tiles.append({"positions": positions, "fields": fields})
    return tiles


def jsonable(v):
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, np.generic):
        return v.item()
    return v


def aggregates(uri, t, sch):
    out = {}
    for i in range(sch.nattr):
        a = sch.attr(i)
        if a.isvar or a.dtype.kind not in "iufb" or a.dtype.itemsize == 0:
            continue
        ops = ["sum", "min", "max"] + (["null_count"] if a.isnullable else [])
        try:
            with tiledb.open(uri, timestamp=t) as A:
                r = A.query().agg({a.name: ops})[:]
        except Exception as e:  # noqa: BLE001
            out[a.name] = {"error": str(e)}
            continue
        vals = {}
        for op in ops:
            v = r[op] if not isinstance(r.get(op, None), type(None)) else None
            v = np.asarray(v)
            vals[op] = v.tobytes().hex()
        out[a.name] = vals
    return out


def describe(uri, readable):
    sch = tiledb.ArraySchema.load(uri)
    fi = tiledb.FragmentInfoList(uri, include_mbrs=sch.sparse)
    frags = []
    for i in range(len(fi)):
        name = os.path.basename(fi.uri[i].rstrip("/"))
        t = tuple(fi.timestamp_range[i])
        entry = {
            "name": name,
            "timestamp_range": list(t),
            "nonempty_domain": jsonable(fi.nonempty_domain[i]),
            "cell_num": int(fi.cell_num[i]),
            "sparse": bool(fi.sparse[i]),
            "version": int(fi.version[i]),
            "schema_name": fi.array_schema_name[i],
            "has_consolidated_metadata": bool(fi.has_consolidated_metadata[i]),
        }
        if sch.sparse:
            entry["mbrs"] = jsonable(fi.mbrs[i])
        if readable:
            if sch.sparse:
                entry["tiles"] = sparse_tiles(uri, t, sch)
            else:
                entry["tiles"] = dense_tiles(uri, t, sch, fi.nonempty_domain[i])
            entry["aggregates"] = aggregates(uri, t, sch)
        frags.append(entry)
    listing = {}
    for sub in ("__commits", "__fragment_meta", "__fragments"):
        p = os.path.join(uri, sub)
        listing[sub] = sorted(os.listdir(p)) if os.path.isdir(p) else []
    return {"fragments": frags, "listing": listing}


def prune(uri):
    for sub in ("__meta", "__labels", os.path.join("__schema", "__enumerations")):
        p = os.path.join(uri, sub)
        if os.path.isdir(p) and not os.listdir(p):
            os.rmdir(p)
    p = os.path.join(uri, "__fragment_meta")
    if os.path.isdir(p) and not os.listdir(p):
        os.rmdir(p)


def main():
    arrays = [
        ("sparse_nulls", make_sparse_nulls, None),
        ("dense_partial", make_dense_partial, None),
        ("sparse_strdim", make_sparse_strdim, None),
        ("hilbert", make_hilbert, None),
        ("consolidated", make_consolidated, finish_consolidated),
        ("ignore", make_ignore, finish_ignore),
    ]
    expected = {"libtiledb": ".".join(map(str, tiledb.libtiledb.version())), "arrays": {}}
    for name, make, finish in arrays:
        uri = os.path.join(HERE, name)
        shutil.rmtree(uri, ignore_errors=True)
        make(uri)
        before = describe(uri, readable=True)
        if finish is not None:
            finish(uri)
            after = describe(uri, readable=False)
            # keep the per-tile cells of the fragments read before consolidation
            by_name = {f["name"]: f for f in before["fragments"]}
            for f in after["fragments"]:
                old = by_name.get(f["name"])
                if old is not None:
                    f["tiles"] = old["tiles"]
                    f["aggregates"] = old["aggregates"]
            after["before"] = [
                {k: v for k, v in f.items() if k not in ("tiles",)} for f in before["fragments"]
            ]
            for f in after["before"]:
                f["tiles"] = by_name[f["name"]]["tiles"]
            before = after
        prune(uri)
        expected["arrays"][name] = before
    with open(os.path.join(HERE, "expected.json"), "w") as fh:
        json.dump(expected, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
