"""libtiledb 2.30.0's aggregates of dimensions over the fixture arrays, for the `LIBTILEDB`
table of `tests/read_dimension_aggregates.rs`:

    target/reference-venv/bin/python crates/tessera-query/tests/data/read/gen_dimension_aggregates.py

prints one JSON line per case. tiledb-py 0.36.1's `query().agg()` refuses dimensions, so
this calls libtiledb's C API through ctypes on the library inside the tiledb-py wheel
(`tiledb_create_unary_aggregate` on the query's default channel) and decodes the output
bytes as libtiledb types them (sums of integers as int64/uint64, of floats as float64, means
as float64, mins and maxs in the field's type). With no cell, libtiledb leaves mins and maxs
of non-nullable fields undefined (zero bytes) and means NaN: the cases avoid that (Tessera
gives null there).
"""

import ctypes as C
import glob
import json
import math
import os
import struct

import numpy as np
import tiledb

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.normpath(os.path.join(HERE, "../../../../../testdata"))
lib = C.CDLL(glob.glob(os.path.join(os.path.dirname(tiledb.__file__), "..", "tiledb.libs", "libtiledb-*.so.2.30"))[0])
vp = C.c_void_p
OPS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}


def chk(rc, ctx):
    if rc != 0:
        err = vp()
        lib.tiledb_ctx_get_last_error(ctx, C.byref(err))
        msg = C.c_char_p()
        lib.tiledb_error_message(err, C.byref(msg))
        raise RuntimeError(msg.value.decode() if msg.value else f"rc={rc}")


def field(schema, name):
    return schema.domain.dim(name) if schema.domain.has_dim(name) else schema.attr(name)


def condition(ctx, schema, cond, keep):
    name, op, value = cond
    dt = np.dtype(field(schema, name).dtype)
    a = np.array([value], dtype=dt)
    keep.append(a)
    c = vp()
    chk(lib.tiledb_query_condition_alloc(ctx, C.byref(c)), ctx)
    chk(lib.tiledb_query_condition_init(ctx, c, name.encode(), C.c_void_p(a.ctypes.data), C.c_uint64(dt.itemsize), OPS[op]), ctx)
    return c


def aggregate(uri, aggs, ranges, cond, at):
    """{key: raw output bytes (None: null)} of `aggs` [(op, field or None)]; `ranges`
    {dim index: [(lo, hi)]}; `cond` (field, op, value) or None."""
    with tiledb.open(uri, timestamp=at) as arr:
        schema = arr.schema
    ctx = vp()
    lib.tiledb_ctx_alloc(None, C.byref(ctx))
    array = vp()
    chk(lib.tiledb_array_alloc(ctx, uri.encode(), C.byref(array)), ctx)
    if at is not None:
        chk(lib.tiledb_array_set_open_timestamp_end(ctx, array, C.c_uint64(at)), ctx)
    chk(lib.tiledb_array_open(ctx, array, 0), ctx)
    q = vp()
    chk(lib.tiledb_query_alloc(ctx, array, 0, C.byref(q)), ctx)
    chk(lib.tiledb_query_set_layout(ctx, q, 3 if schema.sparse else 0), ctx)  # unordered / row-major
    keep = []
    if ranges:
        sub = vp()
        chk(lib.tiledb_subarray_alloc(ctx, array, C.byref(sub)), ctx)
        for i, rs in ranges.items():
            dt = np.dtype(schema.domain.dim(i).dtype)
            for lo, hi in rs:
                a = np.array([lo, hi], dtype=dt)
                keep.append(a)
                p = a.ctypes.data
                chk(lib.tiledb_subarray_add_range(ctx, sub, C.c_uint32(i), C.c_void_p(p), C.c_void_p(p + dt.itemsize), None), ctx)
        chk(lib.tiledb_query_set_subarray_t(ctx, q, sub), ctx)
    if cond is not None:
        chk(lib.tiledb_query_set_condition(ctx, q, condition(ctx, schema, cond, keep)), ctx)
    channel = vp()
    chk(lib.tiledb_query_get_default_channel(ctx, q, C.byref(channel)), ctx)
    outs = []
    for op, name in aggs:
        key = f"{op}({name})" if name else "count"
        operation = vp()
        if op == "count":
            chk(lib.tiledb_aggregate_count_get(ctx, C.byref(operation)), ctx)
        else:
            operator = vp()
            chk(getattr(lib, f"tiledb_channel_operator_{op}_get")(ctx, C.byref(operator)), ctx)
            chk(lib.tiledb_create_unary_aggregate(ctx, q, operator, name.encode(), C.byref(operation)), ctx)
        chk(lib.tiledb_channel_apply_aggregate(ctx, channel, key.encode(), operation), ctx)
        var = op in ("min", "max") and field(schema, name).isvar
        if op in ("min", "max") and not var:
            f = field(schema, name)
            size = np.dtype(f.dtype).itemsize * getattr(f, "ncells", 1)
        else:
            size = 4096 if var else 8
        buf, n = C.create_string_buffer(size), C.c_uint64(size)
        chk(lib.tiledb_query_set_data_buffer(ctx, q, key.encode(), buf, C.byref(n)), ctx)
        if var:
            offs, on = C.create_string_buffer(8), C.c_uint64(8)
            keep.append((offs, on))
            chk(lib.tiledb_query_set_offsets_buffer(ctx, q, key.encode(), offs, C.byref(on)), ctx)
        outs.append((key, buf, n))
    chk(lib.tiledb_query_submit(ctx, q), ctx)
    return schema, {key: buf.raw[: n.value] for key, buf, n in outs}


def decode(schema, op, name, b):
    if op == "count":
        return struct.unpack("<Q", b)[0]
    if op == "mean":
        v = struct.unpack("<d", b)[0]
        return None if math.isnan(v) else v
    dt = np.dtype(field(schema, name).dtype)
    if op == "sum":
        return struct.unpack("<d" if dt.kind == "f" else "<Q" if dt.kind == "u" else "<q", b)[0]
    if field(schema, name).isvar:
        return b.decode()
    return np.frombuffer(b, dtype=dt)[0].item()


def num(*dims):
    return [(op, d) for d in dims for op in ("sum", "min", "max", "mean")]


COUNT = [("count", None)]
# (array, at, {dim: [(lo, hi)]}, condition for libtiledb, the same as `--where` text, aggregates)
CASES = [
    ("sparse_int64", None, {}, None, None, COUNT + num("x", "y")),
    ("sparse_int64", None, {"x": [(-20, 5), (30, 40)], "y": [(10, 70)]}, ("v", ">", 0.0), "v > 0.0", COUNT + num("x", "y")),
    ("sparse_int64", 15, {"y": [(0, 49)]}, None, None, COUNT + num("x", "y")),
    ("sparse_int64_dups", None, {}, ("y", ">=", 40), "y >= 40", COUNT + num("x", "y")),
    ("sparse_string_float_dims", None, {}, None, None, COUNT + num("x") + [("min", "k"), ("max", "k")]),
    ("sparse_string_float_dims", None, {"x": [(-2.5, 7.25)]}, ("a", ">", 0), "a > 0", COUNT + num("x") + [("min", "k"), ("max", "k")]),
    ("sparse_hilbert", None, {"x": [(100, 700)]}, None, None, COUNT + num("x", "y")),
    ("sparse_deletes", None, {}, None, None, COUNT + num("r", "c")),
    ("sparse_deletes", 35, {"r": [(2, 15)]}, None, None, COUNT + num("r", "c")),
    ("sparse_consolidated_deletes", None, {}, None, None, COUNT + num("r", "c")),
    ("sparse_consolidated", 25, {"c": [(3, 17)]}, ("v", ">", 0.0), "v > 0.0", COUNT + num("r", "c")),
    ("dense_consolidated", None, {}, None, None, COUNT + num("r", "c")),
    ("dense_consolidated", None, {"r": [(3, 7), (5, 9)], "c": [(2, 4), (30, 31)]}, None, None, COUNT + num("r", "c")),
    # libtiledb's dense count ignores the condition: only the dimensions' aggregates
    ("dense_consolidated", None, {"r": [(2, 20)], "c": [(5, 35)]}, ("a", ">", 0), "a > 0", num("r", "c")),
    ("dense_consolidated", None, {"r": [(2, 20), (4, 6)], "c": [(5, 35)]}, ("c", "<", 17), "c < 17", num("r", "c")),
    ("dense_overwrites", None, {"r": [(1, 16)]}, None, None, COUNT + num("r", "c")),
    ("dense_overwrites", 40, {"r": [(20, 30)], "c": [(30, 39)]}, None, None, COUNT + num("r", "c")),
    ("dense_attrs", None, {}, None, None, COUNT + num("d")),
]


def main():
    for name, at, ranges, cond, text, aggs in CASES:
        uri = os.path.join(TESTDATA, "fragments", name)
        with tiledb.open(uri, timestamp=at) as arr:
            schema, ned = arr.schema, arr.nonempty_domain()
        dims = [schema.domain.dim(i).name for i in range(schema.domain.ndim)]
        by_index = {}
        for i, d in enumerate(dims):
            if d in ranges:
                by_index[i] = ranges[d]
            elif not schema.sparse:  # dense: the non-empty domain, as Tessera's default
                by_index[i] = [tuple(int(v) for v in ned[i])]
        schema, raw = aggregate(uri, aggs, by_index, cond, at)
        expected = {key: decode(schema, op, f, raw[key]) for (op, f), key in zip(aggs, raw)}
        rs = [f"{d}={lo}:{hi}" for d in dims if d in ranges for lo, hi in ranges[d]]
        print(json.dumps({"array": f"fragments/{name}", "at": at, "ranges": rs, "where": text, "expected": expected}))


if __name__ == "__main__":
    main()
