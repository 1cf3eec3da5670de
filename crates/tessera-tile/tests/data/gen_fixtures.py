"""Regenerates the fixtures of tessera-tile's tests with the reference library.

Run with a Python that has tiledb==0.36.1 (libtiledb 2.30.0):
    python gen_fixtures.py            # writes the *.tdb files next to this script

Files written (every one is a verbatim copy of a file libtiledb wrote):
  a1_schema.tdb        schema of the golden array `a1` of docs/format/schema.md, "A worked example" (one generic tile)
  m1_meta.tdb          array metadata with a 70000-byte value: a generic tile of two chunks
  srle_offsets.tdb     var ascii attribute with [RLE]: offsets tile (8 zero bytes) ...
  srle_var.tdb         ... and data tile (offset-free string path)
  sdict_offsets.tdb    same cells with [DICTIONARY]
  sdict_var.tdb
  vz_offsets.tdb       three empty blob cells, no filters anywhere: offsets tile ...
  vz_var.tdb           ... and the one-chunk, zero-length data tile
  i32_gzip.tdb         dense int32 attribute, 40000 cells `i % 100`, [GZIP(-1)]: 3 chunks
  vgzip_offsets.tdb    blob cells: 100 × 1000 bytes, one of 70000, 99 × 1000, cell i filled
  vgzip_var.tdb        with b"a" + i % 26; attribute and offsets filters [GZIP(-1)]
The schema and metadata file names carry timestamps, so their bytes change only there.
"""
import glob
import os
import shutil
import tempfile

import numpy as np
import tiledb

HERE = os.path.dirname(os.path.abspath(__file__))


def copy(src, name):
    shutil.copyfile(src, os.path.join(HERE, name))


def var_array(root, name, cells, dtype, filters, offsets_filters=()):
    p = os.path.join(root, name)
    n = len(cells)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, n - 1), tile=n, dtype=np.int64))
    attr = tiledb.Attr("a", dtype=dtype, var=True, filters=tiledb.FilterList(filters))
    schema = tiledb.ArraySchema(
        domain=dom, attrs=[attr], sparse=False, offsets_filters=tiledb.FilterList(list(offsets_filters))
    )
    tiledb.Array.create(p, schema)
    with tiledb.open(p, "w") as a:
        a[0:n] = np.array(cells, dtype=object)
    (frag,) = glob.glob(p + "/__fragments/*")
    return frag


def main():
    root = tempfile.mkdtemp()
    dom = tiledb.Domain(tiledb.Dim("d", domain=(1, 4), tile=4, dtype=np.int32))
    schema = tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int32)], sparse=False)
    tiledb.Array.create(root + "/a1", schema)
    (s,) = glob.glob(root + "/a1/__schema/__*_*")
    copy(s, "a1_schema.tdb")

    tiledb.Array.create(root + "/m1", schema)
    with tiledb.open(root + "/m1", "w") as a:
        a.meta["big"] = "".join(chr(97 + (i * 7919 % 26)) for i in range(70000))
        a.meta["x"] = 1
    (m,) = glob.glob(root + "/m1/__meta/__*")
    copy(m, "m1_meta.tdb")

    cells = ["aa", "aa", "aa", "bcd", "bcd", "", "e" * 300, "aa"]
    for name, flt in [("srle", tiledb.RleFilter()), ("sdict", tiledb.DictionaryFilter())]:
        f = var_array(root, name, cells, "ascii", [flt])
        copy(f + "/a0.tdb", name + "_offsets.tdb")
        copy(f + "/a0_var.tdb", name + "_var.tdb")

    f = var_array(root, "vz", [b"", b"", b""], bytes, [])
    copy(f + "/a0.tdb", "vz_offsets.tdb")
    copy(f + "/a0_var.tdb", "vz_var.tdb")

    p = root + "/i32_gzip"
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 39999), tile=40000, dtype=np.int64))
    attr = tiledb.Attr("a", dtype=np.int32, filters=tiledb.FilterList([tiledb.GzipFilter()]))
    tiledb.Array.create(p, tiledb.ArraySchema(domain=dom, attrs=[attr]))
    with tiledb.open(p, "w") as a:
        a[0:40000] = (np.arange(40000) % 100).astype(np.int32)
    (frag,) = glob.glob(p + "/__fragments/*")
    copy(frag + "/a0.tdb", "i32_gzip.tdb")

    lens = [1000] * 100 + [70000] + [1000] * 99
    cells = [bytes([97 + i % 26]) * n for i, n in enumerate(lens)]
    gz = [tiledb.GzipFilter()]
    f = var_array(root, "vgzip", cells, bytes, gz, gz)
    copy(f + "/a0.tdb", "vgzip_offsets.tdb")
    copy(f + "/a0_var.tdb", "vgzip_var.tdb")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
