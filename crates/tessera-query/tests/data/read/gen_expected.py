"""Expected results of the subarray, multi-range and layout reads of `tests/read_queries.rs`,
computed once with libtiledb 2.30.0 (tiledb-py 0.36.1, the reference venv):

    target/reference-venv/bin/python crates/tessera-query/tests/data/read/gen_expected.py

writes `expected.jsonl` next to this file: one query per line, `{"id", "array", "at",
"ranges": [[[lo, hi], ...] per dimension], "layout", "attrs", "dims", "expected": [cells]}`,
cells as cells-JSONL objects in libtiledb's order (raw result buffers, never reshaped).

Sparse multi-range queries are not asked in row-/col-major order here: libtiledb returns a
cell once per range it lies in there, where Tessera (docs/cli.md) returns each cell once; they are
checked in Rust against the full read instead.
"""

import json
import os

import numpy as np
import tiledb
import tiledb.libtiledb as lt

HERE = os.path.dirname(os.path.abspath(__file__))
TD = os.path.join(HERE, "../../../../../testdata")
LAYOUT = {
    "row-major": lt.LayoutType.ROW_MAJOR,
    "col-major": lt.LayoutType.COL_MAJOR,
    "global": lt.LayoutType.GLOBAL_ORDER,
    "unordered": lt.LayoutType.UNORDERED,
}

QUERIES = [
    # id, array, at, ranges, layout, attrs (None: all), dims
    ("dense_box_row", "fragments/dense_overwrites", None, [[[5, 12]], [[8, 23]]], "row-major", None, True),
    ("dense_box_col", "fragments/dense_overwrites", None, [[[5, 12]], [[8, 23]]], "col-major", None, True),
    ("dense_box_global", "fragments/dense_overwrites", None, [[[5, 12]], [[8, 23]]], "global", None, True),
    ("dense_edge_global", "fragments/dense_overwrites", None, [[[17, 30]], [[25, 39]]], "global", ["b"], True),
    ("dense_multi_row", "fragments/dense_overwrites", None, [[[29, 30], [2, 3], [29, 29]], [[38, 39], [0, 1]]], "row-major", None, True),
    ("dense_multi_col", "fragments/dense_overwrites", None, [[[29, 30], [2, 3], [29, 29]], [[38, 39], [0, 1]]], "col-major", ["a"], True),
    ("dense_multi_overlap", "fragments/dense_overwrites", 25, [[[1, 30], [4, 9]], [[9, 11], [0, 39], [10, 10]]], "row-major", ["b", "a"], False),
    ("dense_at25_fill", "fragments/dense_overwrites", 25, [[[1, 30]], [[0, 39]]], "row-major", None, True),
    ("dense_old_col", "fragments/dense_old_timestamp", None, [[[1, 14]], [[3, 9]]], "col-major", None, True),
    ("dense_var_row", "fragments/dense_attrs", None, [[[10, 40]]], "row-major", None, True),
    ("dense_var_multi", "fragments/dense_attrs", None, [[[0, 5], [20, 22], [40, 45]]], "row-major", ["ns", "v", "n"], True),
    ("dense_var_global_at15", "fragments/dense_attrs", 15, [[[0, 60]]], "global", None, True),
    ("dense_fmc", "fragments/fragment_meta_consolidated", None, [[[2, 9]], [[1, 10]]], "global", None, True),
    ("sparse_box_global", "fragments/sparse_int64", None, [[[-20, 10]], [[10, 70]]], "global", None, True),
    ("sparse_box_row", "fragments/sparse_int64", None, [[[-20, 10]], [[10, 70]]], "row-major", None, True),
    ("sparse_box_col", "fragments/sparse_int64", None, [[[-20, 10]], [[10, 70]]], "col-major", None, True),
    ("sparse_at15_row", "fragments/sparse_int64", 15, [[[-50, 49]], [[0, 99]]], "row-major", ["v"], True),
    ("sparse_strings", "fragments/sparse_string_float_dims", None, [[["b", "m"]], [[-2.5, 5.0]]], "global", None, True),
    ("sparse_strings_row", "fragments/sparse_string_float_dims", None, [[["", "zzz"]], [[-10.0, 10.0]]], "row-major", None, True),
    ("sparse_hilbert_box", "fragments/sparse_hilbert", None, [[[100, 700]], [[-0.5, 0.5]]], "global", None, True),
    ("sparse_hilbert_row", "fragments/sparse_hilbert", None, [[[0, 999]], [[-1.0, 1.0]]], "row-major", None, True),
    ("sparse_attrs_sub", "fragments/sparse_attrs", None, [[[0, 30]], [[10, 63]]], "global", ["nv", "s", "nu"], False),
    ("sparse_consolidated_at25_col", "fragments/sparse_consolidated", 25, [[[0, 19]], [[0, 19]]], "col-major", None, True),
    ("sparse_cdel_at35_row", "fragments/sparse_consolidated_deletes", 35, [[[0, 19]], [[0, 19]]], "row-major", None, True),
]


def decode(dtype, cvn, raw):
    """One cell's bytes as a cells-JSONL value (docs/cli.md)."""
    if dtype.kind in "US" or dtype == np.dtype("S1"):
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return {"hex": raw.hex()}
    base = dtype.base if dtype.subdtype else dtype
    if base.kind == "M" or base.kind == "m":
        base = np.dtype(np.int64)
    values = np.frombuffer(raw, dtype=base)
    out = []
    for v in values:
        if base.kind == "f":
            if np.isnan(v):
                out.append("NaN")
            else:
                out.append(float(repr(v)) if base == np.float32 else float(v))
        elif base.kind == "b":
            out.append(bool(v))
        else:
            out.append(int(v))
    return out[0] if cvn == 1 else out


def field_info(sch, name):
    """(numpy dtype, cell_val_num or None for var, nullable)."""
    if sch.domain.has_dim(name):
        d = sch.domain.dim(name)
        return d.dtype, None if d.isvar else 1, False
    a = sch.attr(name)
    cvn = None if a.isvar else a.ncells
    return a.dtype, cvn, a.isnullable


def run(q):
    from tiledb.main import PyQuery

    qid, rel, at, ranges, layout, attrs, dims = q
    with tiledb.open(os.path.join(TD, rel), timestamp=at) as arr:
        sch = arr.schema
        names = attrs if attrs is not None else [sch.attr(i).name for i in range(sch.nattr)]
        dnames = [sch.domain.dim(i).name for i in range(sch.domain.ndim)]
        sub = tiledb.Subarray(arr)
        for i, rs in enumerate(ranges):
            dt = sch.domain.dim(i).dtype
            for lo, hi in rs:
                if dt.kind == "M":
                    unit = np.datetime_data(dt)[0]
                    lo, hi = np.datetime64(lo, unit), np.datetime64(hi, unit)
                sub.add_dim_range(i, (lo, hi))
        pq = PyQuery(arr.ctx, arr, tuple(names), tuple(dnames), LAYOUT[layout], False)
        pq.set_subarray(sub)
        pq.submit()
        results = pq.results()
        cols = {}
        n = None
        for name in dnames + names:
            data, offsets, validity = results[name]
            dtype, cvn, nullable = field_info(sch, name)
            data = bytes(np.ascontiguousarray(data).view(np.uint8))
            if cvn is None:
                offs = [int(o) for o in offsets]
                ends = offs[1:] + [len(data)]
                cells = [data[o:e] for o, e in zip(offs, ends)]
            else:
                size = (dtype.itemsize if not dtype.subdtype else dtype.base.itemsize) * cvn
                if dtype.kind in "US":
                    size = cvn
                cells = [data[i * size : (i + 1) * size] for i in range(len(data) // size)]
            valid = [bool(v) for v in np.asarray(validity)] if nullable else [True] * len(cells)
            cols[name] = [decode(dtype, 1 if cvn == 1 else 0, c) if ok else None for c, ok in zip(cells, valid)]
            n = len(cells)
        keys = (dnames if dims else []) + names
        out = [{k: cols[k][i] for k in keys} for i in range(n or 0)]
    return {
        "id": qid,
        "array": rel,
        "at": at,
        "ranges": ranges,
        "layout": layout,
        "attrs": attrs,
        "dims": dims,
        "expected": out,
    }


if __name__ == "__main__":
    with open(os.path.join(HERE, "expected.jsonl"), "w", encoding="utf-8") as f:
        for q in QUERIES:
            f.write(json.dumps(run(q), ensure_ascii=False) + "\n")
