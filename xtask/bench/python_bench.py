"""`cargo xtask bench --python`: the Python package `tessera` against tiledb-py, side by side.

Both engines run in the reference venv (tessera installed there by ``pip install ./python``)
on the benchmark arrays of ``cargo xtask bench`` (datasets.py, written by libtiledb), each op
in its own process, alternating (tessera then tiledb-py, then tiledb-py then tessera, ...).
The time is the one the child measured around the operation itself (imports and opening the
array's folder excluded only where both do it outside the timer); the peak RSS is the child's
``ru_maxrss``. Both engines' answers (cell counts and a checksum) must agree.

Usage: ``python xtask/bench/python_bench.py [--size full|quick|smoke] [--runs N] [--only OP]``.
Prints a table and writes ``target/bench/python-summary.json``. Not a test: nothing is timed
against a limit.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DATA = ROOT / "target" / "bench" / "data"
SCRATCH = ROOT / "target" / "bench" / "python-scratch"

# op name -> (dataset, description)
OPS = {
    "dense_int32_full": ("dense_int32", "dense int32 full read to numpy"),
    "dense_float64_full": ("dense_float64", "dense float64 full read to numpy"),
    "dense_int32_zstd_full": ("dense_int32_zstd", "dense int32 zstd full read to numpy"),
    "dense_int32_box": ("dense_int32", "dense int32 1 % box"),
    "sparse_full_dict": ("sparse_points", "sparse 10 M points full read to dict"),
    "sparse_full_df": ("sparse_points", "sparse 10 M points full read to .df"),
    "strings_full": ("strings", "5 M var strings read"),
    "from_numpy": ("dense_int32", "from_numpy write (the int32 array's values)"),
    "sparse_write": ("sparse_points", "sparse write of the 10 M points"),
    "agg_sum": ("dense_int32", ".agg('sum') over the dense int32 array"),
}


def _checksum(values) -> list:
    if isinstance(values, dict):
        values = next(iter(values.values()))
    if values.dtype == object:
        return [int(len(values)), int(sum(len(v) for v in values))]
    v = np.asarray(values).reshape(-1)
    return [int(v.size), float(np.sum(v, dtype=np.float64))]


def child(engine: str, op: str, uri: str, scratch: str) -> dict:
    """Runs one op in this process; returns its time, answer and peak RSS."""
    if engine == "tessera":
        import tessera as tdb
    else:
        import tiledb as tdb
    if op in ("from_numpy", "sparse_write"):
        with tdb.open(uri) as A:
            data = A[:] if op == "from_numpy" else A.query()[:]
        if op == "from_numpy" and isinstance(data, dict):
            data = next(iter(data.values()))
        if Path(scratch).exists():
            shutil.rmtree(scratch)
        t0 = time.perf_counter()
        if op == "from_numpy":
            tdb.from_numpy(scratch, data).close()
        else:
            with tdb.open(uri) as A:
                schema = A.schema
            tdb.Array.create(scratch, schema)
            with tdb.open(scratch, "w", timestamp=1) as W:
                W[data["x"], data["y"]] = {"a": data["a"]}
        seconds = time.perf_counter() - t0
        with tdb.open(scratch) as A:
            back = A[:] if op == "from_numpy" else A.query()[:]["a"]
        answer = _checksum(back)
        shutil.rmtree(scratch)
    else:
        t0 = time.perf_counter()
        with tdb.open(uri) as A:
            if op.endswith("_full") and "dense" in op:
                out = A[:]
            elif op == "dense_int32_box":
                n = A.schema.domain.dim(0).size
                k = n // 10
                out = A[n // 2 : n // 2 + k, n // 2 : n // 2 + k]
            elif op == "sparse_full_dict":
                out = A[:]["a"]
            elif op == "sparse_full_df":
                out = A.df[:]["a"].to_numpy()
            elif op == "strings_full":
                out = A[:]
            elif op == "agg_sum":
                out = np.array([A.query().agg("sum")[:]])
            else:
                raise SystemExit(f"unknown op {op}")
        seconds = time.perf_counter() - t0
        answer = _checksum(out)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "answer": answer, "rss_mb": rss}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="full", choices=["full", "quick", "smoke"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--child", nargs=4, metavar=("ENGINE", "OP", "URI", "SCRATCH"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    sys.path.insert(0, str(HERE))
    import datasets

    ops = [o for o in OPS if not args.only or o in args.only]
    rows = []
    for op in ops:
        ds_name, desc = OPS[op]
        facts = datasets.ensure(DATA, datasets.DATASETS[ds_name], args.size)
        uri = facts["uri"]
        times = {"tessera": [], "tiledb": []}
        rss = {"tessera": 0.0, "tiledb": 0.0}
        answers = {}
        for run in range(args.runs):
            order = ["tessera", "tiledb"] if run % 2 == 0 else ["tiledb", "tessera"]
            for engine in order:
                scratch = str(SCRATCH / f"{op}-{engine}")
                out = subprocess.run(
                    [sys.executable, __file__, "--child", engine, op, uri, scratch],
                    check=True, capture_output=True, text=True,
                )
                res = json.loads(out.stdout.strip().splitlines()[-1])
                times[engine].append(res["seconds"])
                rss[engine] = max(rss[engine], res["rss_mb"])
                answers.setdefault(engine, res["answer"])
        a, b = answers["tessera"], answers["tiledb"]
        if a[0] != b[0] or not np.isclose(a[1], b[1], rtol=1e-9):
            raise SystemExit(f"{op}: the engines disagree: tessera {a}, tiledb-py {b}")
        t, r = statistics.median(times["tessera"]), statistics.median(times["tiledb"])
        rows.append({"op": op, "description": desc, "tessera_s": t, "tiledb_s": r, "ratio": r / t,
                     "tessera_rss_mb": rss["tessera"], "tiledb_rss_mb": rss["tiledb"]})
        print(f"{desc:<48} tessera {t:8.4f} s  tiledb-py {r:8.4f} s  ratio {r / t:5.2f}  "
              f"RSS {rss['tessera']:6.0f} / {rss['tiledb']:6.0f} MB", flush=True)
    out = ROOT / "target" / "bench" / "python-summary.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
