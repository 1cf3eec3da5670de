"""The benchmark arrays, written by libtiledb (tiledb-py) with fixed seeds, and the inputs of
the write workloads.

Each dataset lives in ``<data>/<name>-<key>/array`` where ``key`` hashes the dataset's
parameters and ``GENERATOR_VERSION``: changing either gives a new folder (the old one can be
deleted by hand). A dataset is complete when its ``dataset.json`` exists (written last); an
incomplete folder is deleted and generated again. Nothing here is ever committed: the data
folder is under ``target/``.

The write workloads' inputs (``INPUTS``) live the same way in ``<inputs>/<name>-<key>/``,
complete when ``inputs.json`` exists: raw little-endian files (numpy ``.tofile``), one per
field (``<field>.data``; var-sized fields also ``<field>.offsets``, u64 start offsets, one per
cell), from fixed seeds, with the cell count and the checksum (run_tiledb.checksum) of the
field the workload checks, which both engines' arrays must hold after the write.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import tiledb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_tiledb import checksum  # noqa: E402

# Bump when a generator changes in a way its parameters do not show.
GENERATOR_VERSION = 1
STAMP = "dataset.json"


# The dataset sizes: "full" (the sizes), "quick" (a few seconds each) and "smoke" (tiny:
# CI runs every workload once at this size to check that both drivers still agree).
SIZES = ("full", "quick", "smoke")


def pick(size: str, full, quick, smoke):
    """The parameter value for ``size``."""
    return {"full": full, "quick": quick, "smoke": smoke}[size]


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str
    # params(size) -> the parameters of the arrays to generate (size: SIZES)
    params: Callable[[bool], dict]
    # generate(uri, params) -> extra facts to record in dataset.json
    generate: Callable[[str, dict], dict]


def dataset_dir(data: Path, ds: Dataset, params: dict) -> Path:
    blob = json.dumps({"v": GENERATOR_VERSION, "name": ds.name, "params": params}, sort_keys=True)
    key = hashlib.sha256(blob.encode()).hexdigest()[:10]
    return data / f"{ds.name}-{key}"


def ensure(data: Path, ds: Dataset, size: str, regenerate: bool = False) -> dict:
    """Generate the dataset unless a complete one is there; return its dataset.json."""
    params = ds.params(size)
    folder = dataset_dir(data, ds, params)
    stamp = folder / STAMP
    if stamp.is_file() and not regenerate:
        return json.loads(stamp.read_text())
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    uri = str(folder / "array")
    print(f"bench: generating {ds.name} ({ds.description}; {params}) with libtiledb ...",
          flush=True)
    t0 = time.perf_counter()
    facts = ds.generate(uri, params)
    took = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in Path(uri).rglob("*") if p.is_file())
    info = {
        "name": ds.name,
        "uri": uri,
        "params": params,
        "generator_version": GENERATOR_VERSION,
        "libtiledb": ".".join(map(str, tiledb.libtiledb.version())),
        "bytes_on_disk": size,
        "generate_seconds": round(took, 2),
        **facts,
    }
    stamp.write_text(json.dumps(info, indent=1) + "\n")
    print(f"bench: generated {ds.name} in {took:.1f} s ({size / 2**20:.0f} MiB)", flush=True)
    return info


def _filters(kind: str | None) -> tiledb.FilterList:
    if kind is None:
        return tiledb.FilterList([])
    if kind == "zstd":
        return tiledb.FilterList([tiledb.ZstdFilter(level=3)])
    raise ValueError(kind)


def _describe_filters(schema: tiledb.ArraySchema) -> dict:
    out = {}
    for d in schema.domain:
        out[d.name] = [type(f).__name__ for f in (d.filters or schema.coords_filters)]
    for a in schema:
        out[a.name] = [type(f).__name__ for f in a.filters]
        if a.isvar:
            out[a.name + ".offsets"] = [type(f).__name__ for f in schema.offsets_filters]
    return out


# ---------------------------------------------------------------------------------------------
# Dense 2-D int32 or float64: n x n cells, tiles t x t, values uniform in [-1000, 1000) (int32)
# or those integers / 8 (float64), so zstd has something to compress; row-major tile and cell
# order, written in one fragment.


def dense_params(filt: str | None, dtype: str = "int32"):
    def params(size: str) -> dict:
        n, t = pick(size, (10_000, 1_000), (2_000, 500), (200, 50))
        p = {"n": n, "tile": t, "filter": filt, "seed": 1}
        if dtype != "int32":
            p["dtype"] = dtype
        return p

    return params


def dense_values(rng: np.random.Generator, size, dtype: str) -> np.ndarray:
    """The dense datasets' (and dense write inputs') values of one type."""
    a = rng.integers(-1000, 1000, size=size, dtype=np.int32)
    return a if dtype == "int32" else (a / 8.0).astype(np.float64)


def gen_dense(uri: str, p: dict) -> dict:
    n, t = p["n"], p["tile"]
    dom = tiledb.Domain(
        tiledb.Dim("rows", domain=(0, n - 1), tile=t, dtype=np.int64),
        tiledb.Dim("cols", domain=(0, n - 1), tile=t, dtype=np.int64),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=False,
        attrs=[tiledb.Attr("a", dtype=np.dtype(p.get("dtype", "int32")),
                           filters=_filters(p["filter"]))],
        cell_order="row-major",
        tile_order="row-major",
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(p["seed"])
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[:] = dense_values(rng, (n, n), p.get("dtype", "int32"))
    return {"cells": n * n, "filters": _describe_filters(schema)}


# ---------------------------------------------------------------------------------------------
# Sparse 2-D int64 points, uniform random in [0, d)^2 (duplicates removed), with a float64
# attribute; libtiledb's default filters (coordinates zstd), default capacity.


def sparse_params(size: str) -> dict:
    return {
        "points": pick(size, 10_000_000, 1_000_000, 10_000),
        "domain": 1_000_000,
        "tile": 100_000,
        "capacity": 10_000,
        "seed": 2,
    }


def gen_sparse(uri: str, p: dict) -> dict:
    d = p["domain"]
    dom = tiledb.Domain(
        tiledb.Dim("x", domain=(0, d - 1), tile=p["tile"], dtype=np.int64),
        tiledb.Dim("y", domain=(0, d - 1), tile=p["tile"], dtype=np.int64),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        sparse=True,
        capacity=p["capacity"],
        allows_duplicates=False,
        attrs=[tiledb.Attr("a", dtype=np.float64)],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(p["seed"])
    x = rng.integers(0, d, size=p["points"], dtype=np.int64)
    y = rng.integers(0, d, size=p["points"], dtype=np.int64)
    key, first = np.unique(x * d + y, return_index=True)
    first.sort()
    x, y = x[first], y[first]
    a = rng.random(len(x))
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[x, y] = {"a": a}
    return {"cells": int(len(x)), "filters": _describe_filters(schema)}


# ---------------------------------------------------------------------------------------------
# Var-sized strings: a 1-D dense array of n UTF-8 strings (lowercase ASCII), lengths uniform in
# [0, 32], libtiledb's default filters.


def strings_params(size: str) -> dict:
    return {"n": pick(size, 5_000_000, 500_000, 10_000), "tile": pick(size, 100_000, 100_000, 1_000),
            "max_len": 32, "seed": 3}


def gen_strings(uri: str, p: dict) -> dict:
    n = p["n"]
    dom = tiledb.Domain(tiledb.Dim("i", domain=(0, n - 1), tile=p["tile"], dtype=np.int64))
    schema = tiledb.ArraySchema(
        domain=dom, sparse=False, attrs=[tiledb.Attr("s", dtype=str, var=True)]
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(p["seed"])
    lens = rng.integers(0, p["max_len"] + 1, size=n)
    ends = np.cumsum(lens)
    starts = ends - lens
    chars = rng.integers(ord("a"), ord("z") + 1, size=int(ends[-1]), dtype=np.uint8)
    big = chars.tobytes().decode("ascii")
    values = np.array([big[s:e] for s, e in zip(starts.tolist(), ends.tolist())], dtype=object)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[:] = values
    return {"cells": n, "string_bytes": int(ends[-1]), "filters": _describe_filters(schema)}


# ---------------------------------------------------------------------------------------------
# Many fragments: a 1-D dense int32 array written as `fragments` fragments of `per` cells each
# (fragment i holds cells [i*per, (i+1)*per), timestamp i+1).


def fragments_params(size: str) -> dict:
    return {"fragments": pick(size, 1000, 100, 10), "per": 1000, "seed": 4}


def gen_fragments(uri: str, p: dict) -> dict:
    f, per = p["fragments"], p["per"]
    dom = tiledb.Domain(tiledb.Dim("i", domain=(0, f * per - 1), tile=per, dtype=np.int64))
    schema = tiledb.ArraySchema(
        domain=dom, sparse=False, attrs=[tiledb.Attr("a", dtype=np.int32)]
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(p["seed"])
    ctx = tiledb.Ctx()
    for i in range(f):
        with tiledb.open(uri, "w", timestamp=i + 1, ctx=ctx) as A:
            A[i * per : (i + 1) * per] = rng.integers(-1000, 1000, size=per, dtype=np.int32)
        if (i + 1) % 200 == 0:
            print(f"bench:   {i + 1}/{f} fragments", flush=True)
    return {"cells": f * per, "filters": _describe_filters(schema)}


# ---------------------------------------------------------------------------------------------
# Fragments to consolidate: a 1-D dense int32 array of `fragments` fragments of `per` cells each
# (as above, a bigger `per`), zstd-filtered as users' arrays usually are.


def consolidate_params(size: str) -> dict:
    return {"fragments": pick(size, 100, 100, 10), "per": pick(size, 100_000, 1_000, 100),
            "seed": 6}


def gen_consolidate(uri: str, p: dict) -> dict:
    f, per = p["fragments"], p["per"]
    dom = tiledb.Domain(tiledb.Dim("i", domain=(0, f * per - 1), tile=min(per, 10_000),
                                   dtype=np.int64))
    schema = tiledb.ArraySchema(
        domain=dom, sparse=False, attrs=[tiledb.Attr("a", dtype=np.int32,
                                                     filters=_filters("zstd"))]
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(p["seed"])
    ctx = tiledb.Ctx()
    for i in range(f):
        with tiledb.open(uri, "w", timestamp=i + 1, ctx=ctx) as A:
            A[i * per : (i + 1) * per] = rng.integers(-1000, 1000, size=per, dtype=np.int32)
    return {"cells": f * per, "filters": _describe_filters(schema)}


DATASETS = {
    ds.name: ds
    for ds in [
        Dataset("dense_int32", "dense 2-D int32, unfiltered", dense_params(None), gen_dense),
        Dataset("dense_int32_zstd", "dense 2-D int32, zstd level 3", dense_params("zstd"),
                gen_dense),
        Dataset("dense_float64", "dense 2-D float64, unfiltered",
                dense_params(None, "float64"), gen_dense),
        Dataset("dense_float64_zstd", "dense 2-D float64, zstd level 3",
                dense_params("zstd", "float64"), gen_dense),
        Dataset("sparse_points", "sparse 2-D int64 points, float64 attribute", sparse_params,
                gen_sparse),
        Dataset("strings", "dense 1-D var-sized UTF-8 strings", strings_params, gen_strings),
        Dataset("fragments", "dense 1-D int32 written as many small fragments",
                fragments_params, gen_fragments),
        Dataset("consolidate", "dense 1-D int32, zstd, written as 100 fragments",
                consolidate_params, gen_consolidate),
    ]
}


# ---------------------------------------------------------------------------------------------
# The write workloads' inputs: the cells each engine writes into a fresh array (with the schema
# of the dataset of the same kind), as raw little-endian files.

INPUTS_STAMP = "inputs.json"


@dataclass(frozen=True)
class Inputs:
    name: str
    description: str
    # params(size) -> the parameters of the inputs to generate
    params: Callable[[bool], dict]
    # generate(folder, params) -> {"files": {field: {"data": file, "offsets": file?}},
    #                              "cells": n, "checksum_field": f, "checksum": [...], ...}
    generate: Callable[[Path, dict], dict]


def ensure_inputs(base: Path, inp: Inputs, size: str, regenerate: bool = False) -> dict:
    """Generate the inputs unless complete ones are there; return their inputs.json (file
    names made absolute)."""
    params = inp.params(size)
    blob = json.dumps({"v": GENERATOR_VERSION, "name": inp.name, "params": params},
                      sort_keys=True)
    folder = base / f"{inp.name}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"
    stamp = folder / INPUTS_STAMP
    if stamp.is_file() and not regenerate:
        info = json.loads(stamp.read_text())
    else:
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        print(f"bench: generating the inputs {inp.name} ({inp.description}; {params}) ...",
              flush=True)
        t0 = time.perf_counter()
        facts = inp.generate(folder, params)
        took = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        info = {
            "name": inp.name,
            "folder": str(folder),
            "params": params,
            "generator_version": GENERATOR_VERSION,
            "bytes_on_disk": size,
            "generate_seconds": round(took, 2),
            **facts,
        }
        stamp.write_text(json.dumps(info, indent=1) + "\n")
        print(f"bench: generated {inp.name} in {took:.1f} s ({size / 2**20:.0f} MiB)",
              flush=True)
    info["files"] = {
        f: {k: str(folder / v) for k, v in files.items()} for f, files in info["files"].items()
    }
    return info


def _inputs_facts(files: dict, cells: int, field: str, data: np.ndarray,
                  offsets: np.ndarray | None = None) -> dict:
    cs = checksum(data, offsets, 0 if offsets is not None else data.dtype.itemsize)
    return {"files": files, "cells": int(cells), "checksum_field": field, "checksum": cs}


def dense_inputs_params(dtype: str = "int32"):
    def params(size: str) -> dict:
        # The dense datasets' size, other values (same distribution).
        p = {"n": dense_params(None)(size)["n"], "seed": 11}
        if dtype != "int32":
            p["dtype"] = dtype
        return p

    return params


def gen_dense_inputs(folder: Path, p: dict) -> dict:
    # n x n values in row-major order of the whole domain.
    n = p["n"]
    a = dense_values(np.random.default_rng(p["seed"]), n * n, p.get("dtype", "int32"))
    a.tofile(folder / "a.data")
    return _inputs_facts({"a": {"data": "a.data"}}, n * n, "a", a)


def sparse_inputs_params(size: str) -> dict:
    sp = sparse_params(size)
    return {"points": sp["points"], "domain": sp["domain"], "seed": 12}


def gen_sparse_inputs(folder: Path, p: dict) -> dict:
    # `points` distinct random points of [0, d)^2 in random order (the schema forbids
    # duplicates: a few more are drawn, the repeats dropped, the first `points` kept), and a
    # float64 uniform in [0, 1) for each.
    n, d = p["points"], p["domain"]
    rng = np.random.default_rng(p["seed"])
    extra = n // 1000 + 16
    x = rng.integers(0, d, size=n + extra, dtype=np.int64)
    y = rng.integers(0, d, size=n + extra, dtype=np.int64)
    _, first = np.unique(x * d + y, return_index=True)
    first.sort()
    if len(first) < n:
        raise RuntimeError(f"only {len(first)} distinct points of {n}")
    first = first[:n]
    x, y = x[first], y[first]
    a = rng.random(n)
    x.tofile(folder / "x.data")
    y.tofile(folder / "y.data")
    a.tofile(folder / "a.data")
    files = {"x": {"data": "x.data"}, "y": {"data": "y.data"}, "a": {"data": "a.data"}}
    return _inputs_facts(files, n, "a", a)


def strings_inputs_params(size: str) -> dict:
    sp = strings_params(size)
    return {"n": sp["n"], "max_len": sp["max_len"], "seed": 13}


def gen_strings_inputs(folder: Path, p: dict) -> dict:
    # n lowercase ASCII strings, lengths uniform in [0, max_len], as the strings dataset.
    n = p["n"]
    rng = np.random.default_rng(p["seed"])
    lens = rng.integers(0, p["max_len"] + 1, size=n).astype(np.uint64)
    offsets = (np.cumsum(lens) - lens).astype(np.uint64)
    total = int(lens.sum())
    chars = rng.integers(ord("a"), ord("z") + 1, size=total, dtype=np.uint8)
    chars.tofile(folder / "s.data")
    offsets.tofile(folder / "s.offsets")
    facts = _inputs_facts({"s": {"data": "s.data", "offsets": "s.offsets"}}, n, "s", chars,
                          offsets)
    return {**facts, "string_bytes": total}


INPUTS = {
    inp.name: inp
    for inp in [
        Inputs("dense_int32", "n x n int32 cells, row-major", dense_inputs_params(),
               gen_dense_inputs),
        Inputs("dense_float64", "n x n float64 cells, row-major",
               dense_inputs_params("float64"), gen_dense_inputs),
        Inputs("sparse_points", "distinct random int64 2-D points, unordered, float64 values",
               sparse_inputs_params, gen_sparse_inputs),
        Inputs("strings", "var-sized lowercase ASCII strings, data + u64 offsets",
               strings_inputs_params, gen_strings_inputs),
    ]
}


if __name__ == "__main__":
    # Generate by hand: python datasets.py DATA_DIR [--quick | --smoke] [NAME ...]
    args = sys.argv[1:]
    size = "smoke" if "--smoke" in args else ("quick" if "--quick" in args else "full")
    names = [a for a in args[1:] if not a.startswith("--")] or list(DATASETS)
    for name in names:
        print(json.dumps(ensure(Path(args[0]), DATASETS[name], size), indent=1))
