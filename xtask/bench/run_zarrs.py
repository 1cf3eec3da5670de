"""`python run_zarrs.py SPEC.json`: the zarrs half of `cargo xtask bench` (a third engine,
for the dense full reads and boxes only).

zarrs is the Rust Zarr engine; it runs here as zarr-python's codec pipeline (PyPI ``zarr`` +
``zarrs``, installed by bench.py into a venv of their own, ``target/bench/zarrs-venv``, pinned
in ``ZARRS_PACKAGES`` there: the reference venv and CI do not carry them). It reads a Zarr v3
copy of the workload's dense dataset (same values, chunks of the TileDB tile shape, no codec or
zstd) that ``python run_zarrs.py --generate DATASET_JSON OUT LEVEL`` writes. A read query
(one range per dimension, row-major) is ``array[r0:r1 + 1, c0:c1 + 1]``, timed around that
call only: the result is a numpy array allocated by zarr-python, the chunks decoded by zarrs
on every core. Prints one JSON line with the same fields and checksum as the other drivers.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import checksum, peak_rss_mb  # noqa: E402


def generate(info: dict, out: Path, level: int) -> None:
    """Writes the Zarr v3 copy of the dense dataset ``info`` (its dataset.json) to ``out``:
    the values datasets.gen_dense writes (same seed and draw), chunks of its tile shape, zstd
    at ``level`` when the dataset is zstd-filtered, else no codec."""
    import zarr
    from zarr.codecs import ZstdCodec

    p = info["params"]
    if p.get("dtype", "int32") != "int32":
        sys.exit("run_zarrs.py --generate: only the int32 dense datasets have a Zarr copy")
    n, t = p["n"], p["tile"]
    # datasets.dense_values for int32 (that module needs tiledb, which this venv lacks).
    values = np.random.default_rng(p["seed"]).integers(-1000, 1000, size=(n, n), dtype=np.int32)
    compressors = [ZstdCodec(level=level)] if p["filter"] == "zstd" else None
    z = zarr.create_array(store=str(out), shape=(n, n), chunks=(t, t), dtype="int32",
                          compressors=compressors, zarr_format=3, overwrite=True,
                          fill_value=0)
    z[:, :] = values


def run_read(spec: dict) -> dict:
    import zarr

    zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
    if spec.get("condition") or spec.get("dims") or spec.get("layout") not in (None, "row-major"):
        return {"engine": "zarrs", "workload": spec["workload"],
                "unsupported": "conditions, coordinates and layouts other than row-major"}
    setup_rss = peak_rss_mb()
    timed = 0.0
    t0 = time.perf_counter()
    z = zarr.open_array(spec["zarr"], mode="r")
    if spec.get("open_in_timer"):
        timed += time.perf_counter() - t0
    cells, total = 0, [0, 0, 0]
    for q in spec["queries"]:
        box = dict((dim, r) for dim, r in q["ranges"])
        if any(len(r) != 1 for r in box.values()) or set(box) != {"rows", "cols"}:
            return {"engine": "zarrs", "workload": spec["workload"],
                    "unsupported": "multi-range subarrays"}
        (r0, r1), (c0, c1) = box["rows"][0], box["cols"][0]
        t0 = time.perf_counter()
        data = z[r0:r1 + 1, c0:c1 + 1]
        timed += time.perf_counter() - t0
        cells += data.size
        c = checksum(data, None, data.dtype.itemsize)
        total = [(a + b) % 2**64 for a, b in zip(total, c)]
        del data
    return {
        "engine": "zarrs",
        "workload": spec["workload"],
        "seconds": timed,
        "cells": cells,
        "checksum": total,
        "queries": len(spec["queries"]),
        "setup_peak_rss_mb": setup_rss,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--generate":
        generate(json.loads(Path(sys.argv[2]).read_text()), Path(sys.argv[3]), int(sys.argv[4]))
        return
    if len(sys.argv) != 2:
        sys.exit("usage: run_zarrs.py SPEC.json | run_zarrs.py --generate DATASET_JSON OUT LEVEL")
    spec = json.loads(Path(sys.argv[1]).read_text())
    if spec["op"] == "read":
        out = run_read(spec)
    else:
        out = {"engine": "zarrs", "workload": spec["workload"],
               "unsupported": f"op {spec['op']!r} is not implemented in run_zarrs.py"}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
