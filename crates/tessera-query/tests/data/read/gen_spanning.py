"""A sparse array whose data tiles each span (nearly) the whole domain along the slowest
dimension of a col-major read, for the memory-bounded sorted reads of
`tests/read_sparse_partitions.rs`, and libtiledb 2.30.0's reads of it:

    target/reference-venv/bin/python crates/tessera-query/tests/data/read/gen_spanning.py

writes `orders/sparse_spanning` and `spanning.jsonl` (the form of `orders.jsonl`).

One space tile (tile extents = the domain), row-major cells, capacity 50: each data tile
holds 50 consecutive cells in row-major order, about 25 rows of random columns, so in a
col-major read (columns slowest) every tile meets nearly every stretch of the order. Three
writes, the second overwriting a third of the first's cells (deduplication), then a delete
of the cells with `a < 150`. Attributes: a fixed-size `int32`, a var-sized string and a
nullable `float64`.
"""

import json
import os
import shutil
import sys

import numpy as np
import tiledb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_expected as g  # noqa: E402

rng = np.random.default_rng(2030)
URI = os.path.join(HERE, "orders", "sparse_spanning")


def create():
    shutil.rmtree(URI, ignore_errors=True)
    dom = tiledb.Domain(
        tiledb.Dim("x", domain=(0, 999), tile=1000, dtype=np.int32),
        tiledb.Dim("y", domain=(0, 999), tile=1000, dtype=np.int32),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=True,
        capacity=50,
        attrs=[
            tiledb.Attr("a", dtype=np.int32),
            tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.ZstdFilter(1)]),
            tiledb.Attr("f", dtype=np.float64, nullable=True),
        ],
    )
    tiledb.Array.create(URI, schema)


def write(ts, coords):
    x = np.array([c[0] for c in coords], dtype=np.int32)
    y = np.array([c[1] for c in coords], dtype=np.int32)
    k = len(coords)
    with tiledb.open(URI, "w", timestamp=ts) as arr:
        arr[x, y] = {
            "a": rng.integers(0, 2000, k).astype(np.int32),
            "s": np.array(["s%d" % v + "." * int(v % 7) for v in rng.integers(0, 10**6, k)], dtype=object),
            "f": np.ma.masked_array(rng.random(k) * 100 - 50, mask=rng.random(k) < 0.2),
        }


def main():
    create()
    first = set()
    while len(first) < 600:
        first.add((int(rng.integers(0, 1000)), int(rng.integers(0, 1000))))
    first = sorted(first)
    write(1, first)
    second = set(first[::3])
    while len(second) < 300:
        second.add((int(rng.integers(0, 1000)), int(rng.integers(0, 1000))))
    write(2, sorted(second))
    third = set()
    while len(third) < 150:
        third.add((int(rng.integers(0, 1000)), int(rng.integers(0, 1000))))
    write(3, sorted(third))
    with tiledb.open(URI, "d", timestamp=4) as arr:
        arr.query(cond="a < 150").submit()
    for d in ("__meta", "__fragment_meta", "__labels", "__schema/__enumerations"):
        p = os.path.join(URI, d)
        if os.path.isdir(p) and not os.listdir(p):
            os.rmdir(p)
    rel = "orders/sparse_spanning"
    full = [[[0, 999]], [[0, 999]]]
    sub = [[[100, 800], [850, 900]], [[200, 900]]]
    queries = [
        ("spanning_col-major", rel, None, full, "col-major", None, True),
        ("spanning_sub_row-major", rel, None, sub, "row-major", ["s", "f"], True),
        ("spanning_at2_col-major", rel, 2, full, "col-major", None, True),
    ]
    g.TD = HERE
    with open(os.path.join(HERE, "spanning.jsonl"), "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(g.run(q), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
