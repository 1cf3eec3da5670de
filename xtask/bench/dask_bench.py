"""tessera.dask against dask's own TileDB functions, on a two-worker local Dask cluster.

Rows: ``from_tessera(...).sum()`` and ``.mean(axis=0)`` against ``dask.array.from_tiledb`` on
the 400 MB dense bench arrays (plain and zstd); a ``groupby``/``sum`` over the 10 M-point
sparse array with ``tessera.dask.read_dataframe`` against tiledb-py partitions read by hand
(``dask.delayed`` reads of equal ranges of x); a 400 MB dask array written with
``to_tessera`` against ``dask.array.to_tiledb``. Each row alternates the engines, median of
``--runs``; answers must agree. Each row also gives the workers' CPU time (user + system,
summed over both worker processes) and the 1-minute load average around it: on a shared
machine the CPU time says more than the wall time. Prints a table and writes ``target/bench/dask-summary.json``.

Usage: ``python xtask/bench/dask_bench.py [--size full|quick|smoke] [--runs N]``, in the
reference venv with ``pip install ./python`` done. Not a test: nothing is timed against a
limit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DATA = ROOT / "target" / "bench" / "data"
SCRATCH = ROOT / "target" / "bench" / "dask-scratch"


def _cpu_seconds() -> float:
    """CPU time (user + system) of this process so far: run on each worker."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="full", choices=["full", "quick", "smoke"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--equal-chunks", action="store_true",
                    help="also time both engines at equal chunks (from_tessera's, and one tile each)")
    ap.add_argument("--only", default=None, help="run only the rows whose name contains this")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import distributed
    import tiledb

    import datasets
    import tessera.dask as tdask

    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       host="127.0.0.1", dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    rows = []

    def row(name, tessera_fn, tiledb_fn, same, prepare=None, check=None):
        """Times ``tessera_fn`` against ``tiledb_fn``; ``prepare(engine)`` runs before each
        timed call and ``check(engine)`` after it (untimed), its result being the answer."""
        if args.only and args.only not in name:
            return
        times = {"tessera": [], "tiledb": []}
        cpu = {"tessera": [], "tiledb": []}
        answers = {}
        loads = [os.getloadavg()[0]]
        for run in range(args.runs):
            order = [("tessera", tessera_fn), ("tiledb", tiledb_fn)]
            if run % 2:
                order.reverse()
            for engine, fn in order:
                client.run(lambda: __import__("gc").collect())
                if prepare:
                    prepare(engine)
                c0 = sum(client.run(_cpu_seconds).values())
                t, out = _timed(fn)
                cpu[engine].append(sum(client.run(_cpu_seconds).values()) - c0)
                times[engine].append(t)
                answers[engine] = check(engine) if check else out
            loads.append(os.getloadavg()[0])
        if not same(answers["tessera"], answers["tiledb"]):
            raise SystemExit(f"{name}: the engines disagree: {answers}")
        t, r = statistics.median(times["tessera"]), statistics.median(times["tiledb"])
        ct, cr = statistics.median(cpu["tessera"]), statistics.median(cpu["tiledb"])
        load = (min(loads), max(loads))
        rows.append({"op": name, "tessera_s": t, "tiledb_s": r, "ratio": r / t,
                     "tessera_worker_cpu_s": ct, "tiledb_worker_cpu_s": cr, "load_1min": load,
                     "runs": {"tessera": times["tessera"], "tiledb": times["tiledb"]}})
        print(f"{name:<52} tessera {t:8.3f} s  dask/tiledb-py {r:8.3f} s  ratio {r / t:5.2f}  "
              f"(workers' CPU {ct:6.2f} / {cr:6.2f} s; load {load[0]:.1f}-{load[1]:.1f})", flush=True)

    for ds_name in ("dense_int32", "dense_int32_zstd"):
        uri = str(Path(datasets.ensure(DATA, datasets.DATASETS[ds_name], args.size)["uri"]).resolve())
        with tiledb.open(uri) as A:
            tile = int(A.schema.domain.dim(0).tile)
        close = lambda a, b: np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
        # both at their default chunks: from_tessera's blocks of whole tiles up to dask's
        # array.chunk-size, from_tiledb's one tile per chunk
        row(f"{ds_name}: sum()",
            lambda: tdask.from_tessera(uri, attribute="a").sum().compute(),
            lambda: da.from_tiledb(uri, attribute="a").sum().compute(), close)
        row(f"{ds_name}: mean(axis=0)",
            lambda: tdask.from_tessera(uri, attribute="a").mean(axis=0).compute(),
            lambda: da.from_tiledb(uri, attribute="a").mean(axis=0).compute(), close)
        if ds_name == "dense_int32" and args.equal_chunks:
            # the same chunks on both sides: what the engines' reads differ by
            chunks = tdask.from_tessera(uri, attribute="a").chunks
            row(f"{ds_name}: sum(), from_tiledb at from_tessera's chunks",
                lambda: tdask.from_tessera(uri, attribute="a").sum().compute(),
                lambda: da.from_tiledb(uri, attribute="a", chunks=chunks).sum().compute(), close)
            row(f"{ds_name}: sum(), both at one tile per chunk",
                lambda: tdask.from_tessera(uri, attribute="a", chunks="tiles").sum().compute(),
                lambda: da.from_tiledb(uri, attribute="a").sum().compute(), close)

    sp = str(Path(datasets.ensure(DATA, datasets.DATASETS["sparse_points"], args.size)["uri"]).resolve())
    with tiledb.open(sp) as A:
        hi = int(A.schema.domain.dim(0).domain[1])
    parts = 8
    edges = np.linspace(0, hi + 1, parts + 1).astype(np.int64)

    def tiledb_part(lo, up):
        with tiledb.open(sp) as A:
            return A.query(attrs=["a"], dims=["x"]).df[lo:up - 1, :]

    def by_hand():
        frames = [dask.delayed(tiledb_part)(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
        ddf = dd.from_delayed(frames)
        return ddf.assign(b=ddf.x // 100_000).groupby("b")["a"].sum().compute().sort_index()

    def ours():
        ddf = tdask.read_dataframe(sp, columns=["x", "a"], npartitions=parts)
        return ddf.assign(b=ddf.x // 100_000).groupby("b")["a"].sum().compute().sort_index()

    row("sparse 10 M points: groupby(x // 1e5).a.sum()", ours, by_hand,
        lambda a, b: np.allclose(a.to_numpy(), b.to_numpy()))

    dense = str(Path(datasets.ensure(DATA, datasets.DATASETS["dense_int32"], args.size)["uri"]).resolve())
    with tiledb.open(dense) as A:
        n = A.schema.domain.dim(0).size
        tile = int(A.schema.domain.dim(0).tile)
    src = da.random.default_rng(9).integers(-1000, 1000, size=(n, n), dtype=np.int32, chunks=tile)
    src = src.persist()
    SCRATCH.mkdir(parents=True, exist_ok=True)

    # The write alone is timed: the output folder is removed before, and read back by
    # libtiledb for the answer after, outside the time.
    def clear(engine):
        shutil.rmtree(SCRATCH / engine, ignore_errors=True)

    def read_back(engine):
        with tiledb.open(str(SCRATCH / engine)) as A:
            return int(A.query().agg("sum")[:])

    row("write 400 MB: to_tessera / to_tiledb",
        lambda: tdask.to_tessera(src, str(SCRATCH / "tessera"), attr="a"),
        lambda: da.to_tiledb(src, str(SCRATCH / "tiledb")),
        lambda a, b: a == b, prepare=clear, check=read_back)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    out = ROOT / "target" / "bench" / "dask-summary.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
