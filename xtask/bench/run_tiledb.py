"""`python run_tiledb.py SPEC.json`: the libtiledb half of `cargo xtask bench`.

Runs one workload spec (the format is documented in bench/src/main.rs, the Tessera half) with
libtiledb. Reads go through tiledb-py's low-level query (``tiledb.main.PyQuery``: the object
tiledb-py's own ``array[...]`` uses, which estimates the result size, allocates numpy buffers,
submits and resubmits on incomplete results), timed around ``submit()`` only, so that no
Python object building is timed: results stay raw numpy buffers (values, and offsets for
var-sized fields). Writes go through the query tiledb-py's own ``A[...] = values`` submits
(``tiledb.libtiledb.Query``, ``QueryType.WRITE``), given the input files as numpy buffers
(values, and u64 offsets for var-sized fields, so no Python strings are built or converted),
timed around ``tiledb.open(uri, "w", timestamp=...)``, ``submit()``, ``finalize()`` and
closing the array. Prints one JSON line: the same fields as the Tessera driver, with the same
order-independent checksum.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import tiledb
import tiledb.libtiledb as lt
from tiledb.main import PyQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import checksum, peak_rss_mb  # noqa: E402,F401 (datasets.py imports checksum from here)

LAYOUTS = {
    "row-major": lt.LayoutType.ROW_MAJOR,
    "col-major": lt.LayoutType.COL_MAJOR,
    "global": lt.LayoutType.GLOBAL_ORDER,
    "unordered": lt.LayoutType.UNORDERED,
}


def field_info(schema: tiledb.ArraySchema, name: str) -> tuple[bool, int]:
    """(var-sized, bytes per cell of a fixed-size field)."""
    if schema.has_attr(name):
        f = schema.attr(name)
        ncells = f.ncells if not f.isvar else 1
    else:
        f = schema.domain.dim(name)
        ncells = 1
    if f.isvar:
        return True, 0
    return False, np.dtype(f.dtype).itemsize * ncells


def run_read(spec: dict) -> dict:
    from tiledb.query_condition import QueryCondition

    ctx = tiledb.Ctx()
    layout = LAYOUTS[spec["layout"]] if spec.get("layout") else None
    setup_rss = peak_rss_mb()
    timed = 0.0
    t0 = time.perf_counter()
    A = tiledb.open(spec["array"], mode="r", ctx=ctx)
    if spec.get("open_in_timer"):
        timed += time.perf_counter() - t0
    schema = A.schema
    dim_index = {schema.domain.dim(i).name: i for i in range(schema.domain.ndim)}
    if layout is None:
        layout = lt.LayoutType.GLOBAL_ORDER if schema.sparse else lt.LayoutType.ROW_MAJOR
    field = spec["checksum_field"]
    is_var, cell_size = field_info(schema, field)
    cells = 0
    total = [0, 0, 0]
    attrs = tuple(spec.get("attrs", []))
    dims = tuple(spec.get("dims", []))
    for q in spec["queries"]:
        pyq = PyQuery(ctx, A, attrs, dims, layout, False)
        sub = tiledb.Subarray(A, ctx=ctx)
        for dim, ranges in q.get("ranges", []):
            for lo, hi in ranges:
                sub.add_dim_range(dim_index[dim], (lo, hi))
        pyq.set_subarray(sub)
        if spec.get("condition"):
            pyq.set_cond(QueryCondition(spec["condition"]))
        t0 = time.perf_counter()
        pyq.submit()
        timed += time.perf_counter() - t0
        results = pyq.results()
        data, offsets = results[field][0], results[field][1]
        if is_var:
            n = len(offsets)
            c = checksum(data, offsets, 0)
        else:
            n = data.nbytes // cell_size
            c = checksum(data, None, cell_size)
        cells += n
        total = [(a + b) % 2**64 for a, b in zip(total, c)]
        del results, data, offsets, pyq
    A.close()
    return {
        "engine": "libtiledb",
        "workload": spec["workload"],
        "seconds": timed,
        "cells": cells,
        "checksum": total,
        "queries": len(spec["queries"]),
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": peak_rss_mb(),
    }


def load_column(schema: tiledb.ArraySchema, col: dict) -> tuple:
    """(data, offsets or None) of one input column, as numpy arrays of the field's type."""
    name = col["name"]
    is_var, _ = field_info(schema, name)
    if is_var:
        return (np.fromfile(col["data"], dtype=np.uint8),
                np.fromfile(col["offsets"], dtype="<u8"))
    f = schema.attr(name) if schema.has_attr(name) else schema.domain.dim(name)
    if schema.has_attr(name) and f.ncells != 1:
        raise SystemExit(f"run_tiledb.py: {name!r}: only one value per cell is supported")
    return np.fromfile(col["data"], dtype=np.dtype(f.dtype).newbyteorder("<")), None


def read_back(spec: dict, target: Path, ctx: tiledb.Ctx) -> dict:
    """Reads the array at ``target`` whole (its non-empty domain: dense reads need a subarray),
    ``checksum_field`` only, for the cell count and checksum of a write or a consolidation."""
    with tiledb.open(str(target), mode="r", ctx=ctx) as A:
        ned = A.nonempty_domain()
        names = [A.schema.domain.dim(i).name for i in range(A.schema.domain.ndim)]
    return run_read({
        "workload": spec["workload"],
        "array": str(target),
        "layout": None,
        "dims": [],
        "attrs": [spec["checksum_field"]],
        "checksum_field": spec["checksum_field"],
        "queries": [{"ranges": [[n, [[lo, hi]]] for n, (lo, hi) in zip(names, ned)]}],
    })


def run_write(spec: dict) -> dict:
    """Creates a fresh array with the schema of spec["array"] at <scratch>/libtiledb, writes
    the input files into it as one fragment (timed: open, submit, finalize, close), reads it
    back for the cell count and checksum, and deletes it."""
    target = Path(spec["scratch"]) / "libtiledb"
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    ctx = tiledb.Ctx()
    schema = tiledb.ArraySchema.load(spec["array"], ctx=ctx)
    tiledb.Array.create(str(target), schema, ctx=ctx)
    columns = {c["name"]: load_column(schema, c) for c in spec["columns"]}
    layout = LAYOUTS[spec["layout"]] if spec.get("layout") else (
        lt.LayoutType.UNORDERED if schema.sparse else lt.LayoutType.ROW_MAJOR)
    dim_index = {schema.domain.dim(i).name: i for i in range(schema.domain.ndim)}
    setup_rss = peak_rss_mb()

    t0 = time.perf_counter()
    with tiledb.open(str(target), mode="w", timestamp=spec.get("timestamp"), ctx=ctx) as A:
        q = lt.Query(lt.Context(A.ctx), A.array, lt.QueryType.WRITE)
        q.layout = layout
        if not schema.sparse:
            sub = tiledb.Subarray(A, ctx=ctx)
            for dim, ranges in spec.get("ranges", []):
                for lo, hi in ranges:
                    sub.add_dim_range(dim_index[dim], (lo, hi))
            q.set_subarray(sub)
        for name, (data, offsets) in columns.items():
            q.set_data_buffer(name, data, data.size)
            if offsets is not None:
                q.set_offsets_buffer(name, offsets, offsets.size)
        q._submit()
        q.finalize()
        del q
    seconds = time.perf_counter() - t0
    write_rss = peak_rss_mb()
    del columns

    # Read back what was written (not timed).
    t0 = time.perf_counter()
    check = read_back(spec, target, ctx)
    verify_seconds = time.perf_counter() - t0
    shutil.rmtree(target)
    return {
        "engine": "libtiledb",
        "workload": spec["workload"],
        "seconds": seconds,
        "cells": check["cells"],
        "checksum": check["checksum"],
        "verify_seconds": verify_seconds,
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": write_rss,
        "process_peak_rss_mb": peak_rss_mb(),
    }


def run_aggregate(spec: dict) -> dict:
    """Each query computes the spec's aggregate of ``checksum_field`` through tiledb-py's
    ``PyAgg`` (the object behind ``A.query().agg()``), timed around ``get_aggregate()``."""
    from tiledb.main import PyAgg
    from tiledb.query_condition import QueryCondition

    ctx = tiledb.Ctx()
    setup_rss = peak_rss_mb()
    timed = 0.0
    t0 = time.perf_counter()
    A = tiledb.open(spec["array"], mode="r", ctx=ctx)
    if spec.get("open_in_timer"):
        timed += time.perf_counter() - t0
    schema = A.schema
    dim_index = {schema.domain.dim(i).name: i for i in range(schema.domain.ndim)}
    layout = lt.LayoutType.UNORDERED if schema.sparse else lt.LayoutType.ROW_MAJOR
    field, op = spec["checksum_field"], spec["aggregate"]
    total = 0
    for q in spec["queries"]:
        agg = PyAgg(A.ctx, A, layout, {field: [op]})
        sub = tiledb.Subarray(A, ctx=ctx)
        ranges = dict(q.get("ranges", []))
        ned = A.nonempty_domain()
        for i in range(schema.domain.ndim):
            name = schema.domain.dim(i).name
            for lo, hi in ranges.get(name, [list(ned[i])]):
                sub.add_dim_range(i, (lo, hi))
        agg.set_subarray(sub)
        if spec.get("condition"):
            agg.set_cond(QueryCondition(spec["condition"]))
        t0 = time.perf_counter()
        value = agg.get_aggregate()[field][op]
        timed += time.perf_counter() - t0
        if isinstance(value, (float, np.floating)):
            if op in ("sum", "mean"):
                # added in another order than Tessera's: compared to 12 significant digits
                value = float(f"{float(value):.11e}")
            bits = int(np.array(value, dtype=np.float64).view(np.uint64))
        elif value is None:
            bits = 0
        else:
            bits = int(value) % 2**64
        total = (total + bits) % 2**64
    A.close()
    return {
        "engine": "libtiledb",
        "workload": spec["workload"],
        "seconds": timed,
        "cells": len(spec["queries"]),
        "checksum": [total, 0, 0],
        "queries": len(spec["queries"]),
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": peak_rss_mb(),
    }


def run_consolidate(spec: dict) -> dict:
    """Copies the array to <scratch>/libtiledb, consolidates its fragments with libtiledb's
    default settings (timed: ``tiledb.consolidate``), reads the copy back whole for the
    checksum and deletes it."""
    target = Path(spec["scratch"]) / "libtiledb"
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(spec["array"], target)
    ctx = tiledb.Ctx()
    setup_rss = peak_rss_mb()
    config = tiledb.Config({"sm.consolidation.mode": "fragments"})
    t0 = time.perf_counter()
    tiledb.consolidate(str(target), config=config, ctx=ctx)
    seconds = time.perf_counter() - t0
    work_rss = peak_rss_mb()
    t0 = time.perf_counter()
    check = read_back(spec, target, ctx)
    verify_seconds = time.perf_counter() - t0
    shutil.rmtree(target)
    return {
        "engine": "libtiledb",
        "workload": spec["workload"],
        "seconds": seconds,
        "cells": check["cells"],
        "checksum": check["checksum"],
        "verify_seconds": verify_seconds,
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": work_rss,
        "process_peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: run_tiledb.py SPEC.json")
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    op = spec["op"]
    if op == "read":
        out = run_read(spec)
    elif op == "write":
        out = run_write(spec)
    elif op == "aggregate":
        out = run_aggregate(spec)
    elif op == "consolidate":
        out = run_consolidate(spec)
    else:
        out = {
            "engine": "libtiledb",
            "workload": spec["workload"],
            "unsupported": f"op {op!r} is not implemented in run_tiledb.py yet",
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
