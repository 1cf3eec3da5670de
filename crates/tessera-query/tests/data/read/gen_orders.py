"""Small arrays with the orders and types the fragments fixtures lack (col-major tile and
cell orders, 3-D, negative and small-integer domains, datetimes, overlapping fragments), and
libtiledb 2.30.0's reads of them in every layout, for `tests/read_queries.rs`:

    target/reference-venv/bin/python crates/tessera-query/tests/data/read/gen_orders.py

writes the arrays under `orders/` and `orders.jsonl` (the form of `expected.jsonl`, with
`array` relative to this folder).
"""

import json
import os
import shutil
import sys

import numpy as np
import tiledb
import tiledb.libtiledb as lt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_expected as g  # noqa: E402

rng = np.random.default_rng(7)


def create(uri, schema):
    shutil.rmtree(uri, ignore_errors=True)
    tiledb.Array.create(uri, schema)


def prune(uri):
    for d in ("__meta", "__fragment_meta", "__labels", "__schema/__enumerations"):
        p = os.path.join(uri, d)
        if os.path.isdir(p) and not os.listdir(p):
            os.rmdir(p)


def dense_3d(name, tile_order, cell_order):
    uri = os.path.join(HERE, "orders", name)
    dom = tiledb.Domain(
        tiledb.Dim("x", domain=(-3, 6), tile=4, dtype=np.int16),
        tiledb.Dim("y", domain=(0, 4), tile=2, dtype=np.int16),
        tiledb.Dim("z", domain=(10, 15), tile=3, dtype=np.int16),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=False,
        tile_order=tile_order,
        cell_order=cell_order,
        attrs=[
            tiledb.Attr("a", dtype=np.int32),
            tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.ZstdFilter(1)]),
        ],
    )
    create(uri, schema)
    def write(ts, region, a, strings):
        # Our own buffers (tiledb-py miscounts var cells of multi-dimensional dense writes).
        with tiledb.open(uri, "w", timestamp=ts) as arr:
            q = lt.Query(lt.Context(arr.ctx), arr.array, lt.QueryType.WRITE)
            q.layout = lt.LayoutType.ROW_MAJOR
            sub = tiledb.Subarray(arr, arr.ctx)
            sub.add_ranges([[r] for r in region])
            q.set_subarray(sub)
            data = np.frombuffer(b"".join(x.encode() for x in strings), dtype=np.uint8).copy()
            offs = np.cumsum([0] + [len(x.encode()) for x in strings[:-1]]).astype(np.uint64)
            a = np.ascontiguousarray(a, dtype=np.int32)
            q.set_data_buffer("a", a, np.uint64(a.size))
            q.set_data_buffer("s", data, np.uint64(data.size))
            q.set_offsets_buffer("s", offs, offs.size)
            q._submit()
            q.finalize()

    n = 8 * 4 * 5
    write(1, [(-3, 4), (0, 3), (10, 14)], np.arange(n), ["v%d" % i for i in range(n)])
    n = 4 * 3 * 2
    write(2, [(2, 5), (1, 3), (13, 14)], -np.arange(n), ["w" * (i % 4 + 1) for i in range(n)])
    prune(uri)
    return uri


def sparse_small(name, tile_order, cell_order):
    uri = os.path.join(HERE, "orders", name)
    dom = tiledb.Domain(
        tiledb.Dim("i", domain=(-100, 100), tile=16, dtype=np.int8),
        tiledb.Dim("u", domain=(0, 60000), tile=1000, dtype=np.uint16),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=True,
        capacity=5,
        tile_order=tile_order,
        cell_order=cell_order,
        attrs=[tiledb.Attr("f", dtype=np.float32), tiledb.Attr("n", dtype=np.int64, nullable=True)],
    )
    create(uri, schema)
    for ts in (1, 2, 3):
        with tiledb.open(uri, "w", timestamp=ts) as arr:
            k = 40
            coords = set()
            while len(coords) < k:
                coords.add((int(rng.integers(-100, 101)), int(rng.integers(0, 4)) * 19000 + int(rng.integers(0, 3))))
            i, u = zip(*sorted(coords))
            arr[np.array(i, dtype=np.int8), np.array(u, dtype=np.uint16)] = {
                "f": rng.random(k).astype(np.float32) + ts,
                "n": np.ma.masked_array(rng.integers(-9, 9, k), mask=rng.random(k) < 0.3),
            }
    prune(uri)
    return uri


def sparse_datetime(name):
    uri = os.path.join(HERE, "orders", name)
    dom = tiledb.Domain(
        tiledb.Dim("t", domain=(np.datetime64("2000-01-01"), np.datetime64("2030-01-01")), tile=np.timedelta64(400, "D"), dtype="datetime64[D]"),
        tiledb.Dim("k", dtype="ascii"),
    )
    schema = tiledb.ArraySchema(domain=dom, sparse=True, capacity=3, allows_duplicates=True, attrs=[tiledb.Attr("a", dtype=np.uint8)])
    create(uri, schema)
    for ts in (1, 2):
        with tiledb.open(uri, "w", timestamp=ts) as arr:
            days = np.array(["2001-03-04", "2020-05-06", "2001-03-04", "2029-12-31", "2012-02-29"], dtype="datetime64[D]")
            keys = np.array(["b", "a", "b", "zz", ""], dtype=object)
            arr[days, keys] = {"a": np.arange(5, dtype=np.uint8) + 10 * ts}
    prune(uri)
    return uri


def sparse_hilbert(name):
    uri = os.path.join(HERE, "orders", name)
    if name == "sparse_hilbert_str":
        dom = tiledb.Domain(
            tiledb.Dim("k", dtype="ascii"),
            tiledb.Dim("i", domain=(-1000, 1000), dtype=np.int64),
        )
    else:
        dom = tiledb.Domain(
            tiledb.Dim("a", domain=(-300, 300), dtype=np.int16),
            tiledb.Dim("b", domain=(-1.0, 1.0), dtype=np.float32),
            tiledb.Dim("c", domain=(0, 2**40), dtype=np.uint64),
        )
    schema = tiledb.ArraySchema(
        domain=dom, sparse=True, capacity=4, cell_order="hilbert", attrs=[tiledb.Attr("v", dtype=np.int32)]
    )
    create(uri, schema)
    words = ["", "a", "ab", "abc", "b", "zz", "hello", "hellp", "Q", "~", "abcdefghij", "abcdefghik", "0", "9z"]
    for ts in (1, 2):
        with tiledb.open(uri, "w", timestamp=ts) as arr:
            k = 30
            if name == "sparse_hilbert_str":
                coords = set()
                while len(coords) < k:
                    coords.add((words[int(rng.integers(0, len(words)))], int(rng.integers(-1000, 1001))))
                ks, i = zip(*coords)
                arr[np.array(ks, dtype=object), np.array(i, dtype=np.int64)] = {"v": np.arange(k, dtype=np.int32) + 100 * ts}
            else:
                a = rng.integers(-300, 301, k).astype(np.int16)
                b = (rng.random(k) * 2 - 1).astype(np.float32)
                c = rng.integers(0, 2**40, k).astype(np.uint64)
                arr[a, b, c] = {"v": np.arange(k, dtype=np.int32) + 100 * ts}
    prune(uri)


def queries():
    out = []
    for name, to, co in (("dense_cc", "col-major", "col-major"), ("dense_rc", "row-major", "col-major"), ("dense_cr", "col-major", "row-major")):
        dense_3d(name, to, co)
        rel = "orders/" + name
        full = [[[-3, 5]], [[0, 4]], [[10, 14]]]
        for layout in ("row-major", "col-major", "global"):
            out.append((f"{name}_{layout}", rel, None, full, layout, None, True))
        out.append((f"{name}_sub_global", rel, None, [[[0, 4]], [[1, 3]], [[11, 15]]], "global", ["s"], True))
        out.append((f"{name}_multi_col", rel, None, [[[4, 5], [-3, -2]], [[3, 3], [0, 1]], [[14, 14], [11, 12]]], "col-major", ["a"], True))
        out.append((f"{name}_at1", rel, 1, full, "row-major", None, True))
    for name, to, co in (("sparse_cr", "col-major", "row-major"), ("sparse_cc", "col-major", "col-major"), ("sparse_rc", "row-major", "col-major")):
        sparse_small(name, to, co)
        rel = "orders/" + name
        full = [[[-100, 100]], [[0, 60000]]]
        for layout in ("row-major", "col-major", "global"):
            out.append((f"{name}_{layout}", rel, None, full, layout, None, True))
        out.append((f"{name}_sub", rel, None, [[[-50, 20]], [[1, 40001]]], "global", ["n"], True))
        out.append((f"{name}_at2", rel, 2, full, "global", None, True))
    for name in ("sparse_hilbert_str", "sparse_hilbert3"):
        sparse_hilbert(name)
        rel = "orders/" + name
        if name == "sparse_hilbert_str":
            full, sub = [[["", "~"]], [[-1000, 1000]]], [[["a", "hello"]], [[-500, 900]]]
        else:
            full = [[[-300, 300]], [[-1.0, 1.0]], [[0, 2**40]]]
            sub = [[[-100, 250]], [[-0.5, 1.0]], [[2**20, 2**39]]]
        out.append((f"{name}_global", rel, None, full, "global", None, True))
        out.append((f"{name}_sub", rel, None, sub, "global", None, True))
        out.append((f"{name}_row", rel, None, full, "row-major", None, True))
    sparse_datetime("sparse_dt")
    for layout in ("row-major", "col-major"):
        out.append((f"sparse_dt_{layout}", "orders/sparse_dt", None, [[[10957, 21915]], [["", "zz"]]], layout, None, True))
    return out


if __name__ == "__main__":
    g.TD = HERE
    with open(os.path.join(HERE, "orders.jsonl"), "w", encoding="utf-8") as f:
        for q in queries():
            f.write(json.dumps(g.run(q), ensure_ascii=False) + "\n")
