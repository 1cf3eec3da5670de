"""Arrays whose schema evolved after a first write (an attribute added, one dropped), and
libtiledb 2.30.0's full reads of them, for `tests/read_evolution.rs`:

    target/reference-venv/bin/python crates/tessera-query/tests/data/read/gen_evolved.py

writes `evolved_dense/`, `evolved_sparse/` (a fragment, the evolution, a fragment, each at the
current time, a few milliseconds apart) and `evolved.jsonl`: `{"array", "at", "expected":
[cells]}` per read (latest, and at the first fragment's timestamp, which opens the schema in
force then). Timestamps are real times: libtiledb picks the schema by file name order, which
is time order only while timestamps have the same number of digits.
"""

import json
import os
import shutil
import sys
import time

import numpy as np
import tiledb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_expected as g  # noqa: E402


def make(name, sparse):
    uri = os.path.join(HERE, name)
    shutil.rmtree(uri, ignore_errors=True)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 19), tile=4, dtype=np.int32))
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=sparse,
        attrs=[
            tiledb.Attr("a", dtype=np.int32),
            tiledb.Attr("old", dtype=np.float64),
        ],
        offsets_filters=[],
    )
    tiledb.Array.create(uri, schema)
    ctx = tiledb.default_ctx()
    time.sleep(0.01)
    with tiledb.open(uri, "w") as arr:
        if sparse:
            arr[[1, 3, 5, 7]] = {"a": np.array([1, 3, 5, 7], dtype=np.int32), "old": np.arange(4.0)}
        else:
            arr[0:8] = {"a": np.arange(8, dtype=np.int32), "old": np.arange(8.0)}
    se = tiledb.ArraySchemaEvolution(ctx)
    b = tiledb.Attr("b", dtype=np.int64, fill=42)
    se.add_attribute(b)
    se.add_attribute(tiledb.Attr("s", dtype=str, var=True, nullable=True))
    se.drop_attribute("old")
    time.sleep(0.01)
    se.array_evolve(uri)
    time.sleep(0.01)
    with tiledb.open(uri, "w") as arr:
        if sparse:
            arr[[3, 9]] = {
                "a": np.array([30, 90], dtype=np.int32),
                "b": np.array([-3, -9], dtype=np.int64),
                "s": np.array(["x", None], dtype=object),
            }
        else:
            arr[6:10] = {
                "a": np.arange(60, 64, dtype=np.int32),
                "b": np.arange(4, dtype=np.int64),
                "s": np.array(["p", None, "", "qq"], dtype=object),
            }
    for d in ("__meta", "__fragment_meta", "__labels", "__schema/__enumerations"):
        p = os.path.join(uri, d)
        if os.path.isdir(p) and not os.listdir(p):
            os.rmdir(p)
    first = sorted(os.listdir(os.path.join(uri, "__fragments")))[0]
    return int(first.split("_")[2])


def full(rel, at):
    with tiledb.open(os.path.join(HERE, rel), timestamp=at) as arr:
        ned = arr.nonempty_domain()
        sch = arr.schema
        names = [sch.attr(i).name for i in range(sch.nattr)]
        layout = "global" if sch.sparse else "row-major"
    q = (rel, rel, at, [[list(ned[0])]], layout, names, True)
    return q


if __name__ == "__main__":
    g.TD = HERE
    out = []
    for name, sparse in (("evolved_dense", False), ("evolved_sparse", True)):
        t_first = make(name, sparse)
        for at in (None, t_first):
            r = g.run(full(name, at))
            out.append({"array": name, "at": at, "expected": r["expected"]})
    with open(os.path.join(HERE, "evolved.jsonl"), "w", encoding="utf-8") as f:
        for o in out:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
