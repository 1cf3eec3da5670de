#!/usr/bin/env python3
"""Array metadata fixtures of tessera-query: small TileDB arrays whose `__meta/` files were
written by libtiledb 2.30.0 (through tiledb-py 0.36.1 and its C API), and what libtiledb reads
back from them at several open timestamp ranges.

Run with the reference venv from the workspace root:

    target/reference-venv/bin/python crates/tessera-query/tests/data/metadata/generate.py

It deletes and rewrites every array folder next to this script and `expected.json`. Metadata file
names contain random uuids (libtiledb does not let us choose them) and the schema file name holds
the creation time, so a regeneration changes names; everything else is deterministic. Empty
folders are removed (git keeps none; libtiledb needs only `__schema/` to open an array).

Metadata is written through the C API (`tiledb_array_put_metadata` /
`tiledb_array_delete_metadata` on an array opened for writing at an explicit timestamp), so each
file holds exactly the entries given here, without tiledb-py's `__np_*` bookkeeping keys.

Arrays (each a 1-D sparse int64 array with one int32 attribute and no fragments):

* types: one session at 10 with a value of every datatype but ANY (which put rejects), several
  values per key, NaN / -0.0 / infinities, empty values (num 0 for utf8, int32 and blob), a
  string_utf8 value that is not UTF-8, a non-UTF-8 key (bytes ff fe), a 70000-byte blob (the file
  payload is over 64 KiB, so its generic tile has two chunks), a key with a newline.
* deletes: sessions at 10 (put a, b, c, gone), 20 (delete b, put c again with another type,
  delete never_existed), 30 (put b again, delete a), 40 (delete gone twice in one session is one
  entry; put z). Read at 5, 10, 15, 20, 25, 35, 45, and (15, 35), (20, 20), (21, 29).
* consolidated: sessions at 10, 20 (deletes k1 from 10), 30, then `sm.consolidation.mode =
  array_meta` (writes `__10_30_<uuid>` holding the live keys, and `__10_30_<uuid>.vac` listing the
  three inputs), then a session at 40. Reads at several times and ranges (the `.vac` applies only
  when its own range is inside the open range).
* vacuumed: the same, then `sm.vacuum.mode = array_meta` (the inputs and the `.vac` go).

expected.json:

    {"<array>": {"files": [every file name under __meta],
                 "reads": [{"start": s, "end": e,
                            "entries": [[key hex, datatype id, value_num, value hex], ...]}]}}

`entries` is libtiledb's view (`tiledb_array_get_metadata_num` and `..._from_index` on the array
opened for reading at [start, end]), in libtiledb's order (sorted by key bytes); value_num is what
the file holds (libtiledb reports 1 with a null value for a stored 0; this script stores 0 then).
Values over 1024 bytes are given as `sha256:<hex digest>`. `json` is the text `tessera meta
list --json` must print for that view (rules in `meta_json`), without the values over 1024 bytes.
"""

import ctypes
import hashlib
import json
import math
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "xtask", "fixtures"))

import numpy as np  # noqa: E402
import tiledb  # noqa: E402

import schemalib as sl  # noqa: E402

TILEDB_READ, TILEDB_WRITE = 0, 1

# datatype ids (tiledb_datatype_t)
DT = {
    "int32": 0, "int64": 1, "float32": 2, "float64": 3, "char": 4, "int8": 5, "uint8": 6,
    "int16": 7, "uint16": 8, "uint32": 9, "uint64": 10, "string_ascii": 11, "string_utf8": 12,
    "string_utf16": 13, "string_utf32": 14, "string_ucs2": 15, "string_ucs4": 16, "any": 17,
    "datetime_year": 18, "datetime_month": 19, "datetime_week": 20, "datetime_day": 21,
    "datetime_hr": 22, "datetime_min": 23, "datetime_sec": 24, "datetime_ms": 25,
    "datetime_us": 26, "datetime_ns": 27, "datetime_ps": 28, "datetime_fs": 29,
    "datetime_as": 30, "time_hr": 31, "time_min": 32, "time_sec": 33, "time_ms": 34,
    "time_us": 35, "time_ns": 36, "time_ps": 37, "time_fs": 38, "time_as": 39, "blob": 40,
    "bool": 41, "geom_wkb": 42, "geom_wkt": 43,
}  # fmt: skip
SIZE = {name: 8 if name.startswith(("datetime_", "time_")) else None for name in DT}
SIZE.update(
    int32=4, int64=8, float32=4, float64=8, char=1, int8=1, uint8=1, int16=2, uint16=2,
    uint32=4, uint64=8, string_ascii=1, string_utf8=1, string_utf16=2, string_utf32=4,
    string_ucs2=2, string_ucs4=4, any=1, blob=1, bool=1, geom_wkb=1, geom_wkt=1,
)  # fmt: skip


class C:
    """The C API of tiledb-py's libtiledb, for metadata calls with exact control."""

    lib = sl.CApi.lib()
    ctx = ctypes.c_void_p()

    @classmethod
    def init(cls):
        if not cls.ctx.value:
            cls.call("tiledb_ctx_alloc", None, ctypes.byref(cls.ctx))

    @classmethod
    def call(cls, name, *args):
        rc = getattr(cls.lib, name)(*args)
        if rc != 0:
            raise RuntimeError(f"{name} returned {rc}")

    @classmethod
    def open(cls, uri, mode, start, end):
        cls.init()
        arr = ctypes.c_void_p()
        cls.call("tiledb_array_alloc", cls.ctx, uri.encode(), ctypes.byref(arr))
        cls.call("tiledb_array_set_open_timestamp_start", cls.ctx, arr, ctypes.c_uint64(start))
        cls.call("tiledb_array_set_open_timestamp_end", cls.ctx, arr, ctypes.c_uint64(end))
        cls.call("tiledb_array_open", cls.ctx, arr, ctypes.c_int(mode))
        return arr

    @classmethod
    def close(cls, arr):
        cls.call("tiledb_array_close", cls.ctx, arr)
        cls.lib.tiledb_array_free(ctypes.byref(arr))

    @classmethod
    def session(cls, uri, t, ops):
        """One write session at timestamp t: ops are ("put", key bytes, type, num, value bytes)
        and ("del", key bytes)."""
        arr = cls.open(uri, TILEDB_WRITE, 0, t)
        try:
            for op in ops:
                if op[0] == "del":
                    cls.call("tiledb_array_delete_metadata", cls.ctx, arr, op[1])
                else:
                    _, key, dtype, num, value = op
                    buf = ctypes.create_string_buffer(value, max(len(value), 1))
                    cls.call(
                        "tiledb_array_put_metadata",
                        cls.ctx,
                        arr,
                        key,
                        ctypes.c_int(DT[dtype]),
                        ctypes.c_uint32(num),
                        buf if num else None,
                    )
        finally:
            cls.close(arr)

    @classmethod
    def read(cls, uri, start, end):
        """libtiledb's metadata at [start, end] as [key hex, type id, num, value hex] rows."""
        arr = cls.open(uri, TILEDB_READ, start, end)
        try:
            n = ctypes.c_uint64()
            cls.call("tiledb_array_get_metadata_num", cls.ctx, arr, ctypes.byref(n))
            rows = []
            for i in range(n.value):
                key, key_len = ctypes.c_void_p(), ctypes.c_uint32()
                dtype, num, value = ctypes.c_int(), ctypes.c_uint32(), ctypes.c_void_p()
                cls.call(
                    "tiledb_array_get_metadata_from_index",
                    cls.ctx,
                    arr,
                    ctypes.c_uint64(i),
                    ctypes.byref(key),
                    ctypes.byref(key_len),
                    ctypes.byref(dtype),
                    ctypes.byref(num),
                    ctypes.byref(value),
                )
                k = ctypes.string_at(key, key_len.value)
                name = next(nm for nm, v in DT.items() if v == dtype.value)
                if value.value is None:  # stored with num 0: libtiledb reports num 1, null
                    rows.append([k.hex(), dtype.value, 0, ""])
                else:
                    raw = ctypes.string_at(value, num.value * SIZE[name])
                    rows.append([k.hex(), dtype.value, num.value, value_text(raw)])
            return rows
        finally:
            cls.close(arr)


def value_text(raw):
    """A value's bytes in hex, or `sha256:<hex digest>` when over 1024 bytes."""
    if len(raw) > 1024:
        return "sha256:" + hashlib.sha256(raw).hexdigest()
    return raw.hex()


def meta_json(rows):
    """`tessera meta list --json` (docs/cli.md) of libtiledb's rows, as compact text: numbers as a
    list (bool as true/false, floats as the shortest text of their width, NaN and infinities as
    strings), text types as one string (UTF-16/32 decoded; `{"hex"}` when not decodable),
    blob / any / geom_wkb as `{"hex"}`; keys decoded as UTF-8 with U+FFFD for invalid bytes.
    Values over 1024 bytes (given by their digest) are left out."""
    out = {}
    for key, dtype_id, _num, value in rows:
        if value.startswith("sha256:"):
            continue
        name = next(nm for nm, v in DT.items() if v == dtype_id)
        raw = bytes.fromhex(value)
        if name in sl.TEXT_CODECS:
            v = sl.text_json(name, raw)
        elif name in ("blob", "any", "geom_wkb"):
            v = {"hex": raw.hex()}
        else:
            v = sl.scalars(name, raw)
        out[bytes.fromhex(key).decode("utf-8", "replace")] = {"type": name, "value": v}
    return render_compact(out)


def render_compact(value):
    """One-line JSON with `", "` and `": "` separators, as the fragments family renders it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, sl.Float):
        return value.text()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = [
            f"{json.dumps(k, ensure_ascii=False)}: {render_compact(v)}" for k, v in value.items()
        ]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(render_compact(v) for v in value) + "]"
    raise TypeError(f"cannot render {type(value)}")


def put(key, dtype, values):
    """A put op: key (str or bytes) and values (a bytes object, or a list packed as dtype)."""
    key = key.encode() if isinstance(key, str) else key
    if isinstance(values, (bytes, bytearray)):
        raw = bytes(values)
    else:
        code = {
            "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
            "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d",
            "bool": "B",
        }.get(dtype, "q")  # fmt: skip
        raw = struct.pack(f"<{len(values)}{code}", *values)
    size = SIZE[dtype]
    if len(raw) % size:
        raise ValueError(f"{key}: {len(raw)} bytes of {dtype}")
    return ("put", key, dtype, len(raw) // size, raw)


def delete(key):
    return ("del", key.encode() if isinstance(key, str) else key)


def create(uri):
    if os.path.exists(uri):
        shutil.rmtree(uri)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64))
    schema = tiledb.ArraySchema(
        domain=dom, sparse=True, attrs=[tiledb.Attr("a", dtype=np.int32)]
    )
    tiledb.Array.create(uri, schema)


def prune_empty_dirs(uri):
    for dirpath, _dirs, _files in sorted(os.walk(uri), key=lambda w: -len(w[0])):
        if not os.listdir(dirpath):
            os.rmdir(dirpath)


def types_ops():
    nan32 = struct.unpack("<f", struct.pack("<I", 0x7FC00000))[0]
    ops = [
        put("i8", "int8", [-128, -1, 0, 127]),
        put("u8", "uint8", [0, 255]),
        put("i16", "int16", [-32768, 32767]),
        put("u16", "uint16", [65535]),
        put("i32", "int32", [-(2**31), 2**31 - 1]),
        put("u32", "uint32", [2**32 - 1, 7]),
        put("i64", "int64", [-(2**63), 2**63 - 1, 42]),
        put("u64", "uint64", [2**64 - 1, 0]),
        put("f32", "float32", [0.1, -0.0, 1e-7, 3.4e38, float("inf"), nan32]),
        put("f64", "float64", [0.1, -0.0, 1e300, float("-inf"), math.nan, 1e16, 2.5]),
        put("char", "char", b"ab\x80"),
        put("ascii", "string_ascii", b"plain ascii"),
        put("utf8", "string_utf8", "東京 🙂 \"quoted\" \\ \t".encode()),
        put("utf8_bad", "string_utf8", b"ok\xff\xfe"),
        put("utf16", "string_utf16", "hé🙂".encode("utf-16-le")),
        put("utf32", "string_utf32", "hé🙂".encode("utf-32-le")),
        put("ucs2", "string_ucs2", "ab".encode("utf-16-le")),
        put("ucs4", "string_ucs4", "ab".encode("utf-32-le")),
        put("blob", "blob", b"\x00\x01\xfe\xff"),
        put("bool", "bool", [1, 0, 1]),
        put("wkb", "geom_wkb", bytes.fromhex("0101000000000000000000f03f0000000000000040")),
        put("wkt", "geom_wkt", b"POINT (1 2)"),
        put("empty_str", "string_utf8", b""),
        put("empty_i32", "int32", b""),
        put("empty_blob", "blob", b""),
        put(b"\xff\xfe", "int64", [1]),
        put("new\nline", "int32", [5]),
        put("big", "blob", bytes((i * 7 + i // 251) % 256 for i in range(70000))),
    ]
    for name in DT:
        if name.startswith(("datetime_", "time_")):
            ops.append(put(name, name, [-1, 0, 1_700_000_000_000]))
    return ops


def gen_types(uri):
    create(uri)
    C.session(uri, 10, types_ops())
    return [(0, 10), (0, 9), (10, 10)]


def gen_deletes(uri):
    create(uri)
    C.session(
        uri,
        10,
        [put("a", "int64", [1]), put("b", "string_utf8", b"bee"), put("c", "float64", [0.5]),
         put("gone", "int32", [9])],
    )  # fmt: skip
    C.session(
        uri,
        20,
        [delete("b"), put("c", "int16", [3, 4]), delete("never_existed")],
    )
    C.session(uri, 30, [put("b", "string_utf8", b"again"), delete("a")])
    C.session(uri, 40, [delete("gone"), put("z", "uint8", [1]), delete("gone")])
    return [(0, 5), (0, 10), (0, 15), (0, 20), (0, 25), (0, 35), (0, 45), (15, 35), (20, 20),
            (21, 29)]  # fmt: skip


def gen_consolidated(uri, vacuum):
    create(uri)
    C.session(uri, 10, [put("k1", "int64", [1]), put("k2", "string_utf8", b"two")])
    C.session(uri, 20, [delete("k1"), put("k3", "float32", [1.5])])
    C.session(uri, 30, [put("k2", "string_utf8", b"two again"), put("k4", "blob", b"\x04")])
    cfg = tiledb.Config({"sm.consolidation.mode": "array_meta"})
    tiledb.consolidate(uri, config=cfg)
    if vacuum:
        tiledb.vacuum(uri, config=tiledb.Config({"sm.vacuum.mode": "array_meta"}))
    C.session(uri, 40, [put("k1", "int64", [2]), delete("k3")])
    return [(0, 5), (0, 10), (0, 25), (0, 30), (0, 35), (0, 45), (15, 35), (10, 30), (20, 45),
            (31, 45)]  # fmt: skip


def main():
    arrays = {
        "types": gen_types,
        "deletes": gen_deletes,
        "consolidated": lambda u: gen_consolidated(u, False),
        "vacuumed": lambda u: gen_consolidated(u, True),
    }
    expected = {}
    for name, gen in arrays.items():
        uri = os.path.join(HERE, name)
        ranges = gen(uri)
        prune_empty_dirs(uri)
        expected[name] = {
            "files": sorted(os.listdir(os.path.join(uri, "__meta"))),
            "reads": [
                {"start": s, "end": e, "entries": C.read(uri, s, e)} for s, e in ranges
            ],
        }
    # one line per entry
    lines = ["{"]
    for i, (name, e) in enumerate(expected.items()):
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'    "files": {json.dumps(e["files"])},')
        lines.append('    "reads": [')
        for j, r in enumerate(e["reads"]):
            rows = ",\n".join(f"        {json.dumps(row)}" for row in r["entries"])
            body = f"[\n{rows}\n      ]" if rows else "[]"
            comma = "," if j + 1 < len(e["reads"]) else ""
            text = json.dumps(meta_json(r["entries"]), ensure_ascii=False)
            lines.append(f'      {{"start": {r["start"]}, "end": {r["end"]}, "entries": {body},')
            lines.append(f'       "json": {text}}}{comma}')
        lines.append("    ]")
        lines.append("  }" + ("," if i + 1 < len(expected) else ""))
    lines.append("}")
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
