"""Dense reads with A[...]: slices in domain coordinates, scalars, steps,
attribute views, fill values and every common attribute type, in both
directions (written by tiledb and read by the engine, written by the engine
and read by tiledb)."""

import numpy as np
import pytest

from _helpers import assert_same, engine, read_both, tiledb


def _create_2d(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(3, 12), tile=5, dtype=np.int32),
        mod.Dim("y", domain=(1, 6), tile=3, dtype=np.int32),
    )
    schema = mod.ArraySchema(
        domain=dom,
        attrs=[
            mod.Attr("a", dtype=np.int32),
            mod.Attr("b", dtype=np.float64),
            mod.Attr("s", dtype=str, var=True),
        ],
    )
    mod.Array.create(uri, schema)
    with mod.open(uri, "w") as A:
        A[3:8, 1:5] = {
            "a": np.arange(20, dtype=np.int32).reshape(5, 4),
            "b": np.arange(20, dtype=np.float64).reshape(5, 4) / 4,
            "s": np.array([str(i) * (i % 3) for i in range(20)], dtype=object).reshape(5, 4),
        }
    return uri


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def dense2d(request, tmp_path_factory):
    from _helpers import WRITERS

    return _create_2d(str(tmp_path_factory.mktemp("dense2d") / "d2"), WRITERS[request.param])


SELECTIONS = [
    np.s_[:],
    np.s_[...],
    np.s_[3:8],
    np.s_[3:8, 1:5],
    np.s_[4:6, 2:6],
    np.s_[10:13, :],
    np.s_[:, 5:7],
    np.s_[5],
    np.s_[5, 2],
    np.s_[5, :],
    np.s_[:, 2],
    np.s_[..., 3],
    np.s_[4, ...],
    np.s_[3:4, 1:2],
    np.s_[-1],
    np.s_[-3, -2],
    np.s_[:, -1],
    np.s_[12, 6],
    np.s_[3:12:2],
    np.s_[::3, ::2],
    np.s_[4:9:2, 1:6:3],
]


@pytest.mark.parametrize("sel", SELECTIONS, ids=[repr(s) for s in SELECTIONS])
def test_selections(dense2d, sel):
    res = read_both(dense2d, lambda A: A[sel])
    assert list(res.keys()) == ["a", "b", "s"]


def test_values(dense2d):
    with engine.open(dense2d) as E:
        full = E[:]
        assert full["a"].shape == (10, 6)
        assert full["a"][0, 0] == 0 and full["a"][4, 3] == 19
        # unwritten cells hold the default fill values
        assert full["a"][5, 0] == np.iinfo(np.int32).min
        assert np.isnan(full["b"][0, 5])
        part = E[4:6, 2:4]
        np.testing.assert_array_equal(part["a"], np.array([[5, 6], [9, 10]], dtype=np.int32))
        assert part["a"].dtype == np.int32
        assert part["b"].dtype == np.float64
        assert part["s"].dtype == object
        scalar = E[5, 2]
        assert scalar["a"].shape == ()
        assert scalar["a"] == 9


def test_results_are_contiguous_and_writable(dense2d):
    with engine.open(dense2d) as E:
        r = E[3:8, 1:5]
        for v in r.values():
            assert v.flags.c_contiguous
        r["a"][0, 0] = 42  # results belong to the caller


def test_attr_view(dense2d):
    for name in ("a", "b", "s"):
        res = read_both(dense2d, lambda A: A[4:7, 1:3], attr=name)
        assert isinstance(res, np.ndarray)
        read_both(dense2d, lambda A: A[5], attr=name)
        read_both(dense2d, lambda A: A[5, 3], attr=name)


def test_subarray_method(dense2d):
    read_both(dense2d, lambda A: A.subarray((slice(4, 6), slice(1, 3))))
    read_both(dense2d, lambda A: A.subarray((slice(4, 6), slice(1, 3)), attrs=["b"]))
    read_both(dense2d, lambda A: A.subarray((slice(4, 6), slice(1, 3)), coords=True))


@pytest.mark.tiledb_bug("order='F' reshapes the col-major cells as if they were row-major")
def test_subarray_order_f(dense2d):
    # The same cells in either order; 'F' only changes the memory layout.
    with engine.open(dense2d) as E:
        c = E.subarray((slice(4, 6), slice(1, 3)), order="C")
        f = E.subarray((slice(4, 6), slice(1, 3)), order="F")
        for k in ("a", "b", "s"):
            np.testing.assert_array_equal(f[k], c[k])
            assert f[k].flags.f_contiguous


def test_domain_not_at_zero_unsigned(tmp_path, writer):
    uri = str(tmp_path / "u")
    dom = writer.Domain(writer.Dim("r", domain=(100, 199), tile=10, dtype=np.uint64))
    writer.Array.create(
        uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("v", dtype=np.uint16)])
    )
    with writer.open(uri, "w") as A:
        A[110:130] = np.arange(20, dtype=np.uint16)
    for sel in (np.s_[:], np.s_[110:130], np.s_[105:115], np.s_[120], np.s_[190:200]):
        read_both(uri, lambda A: A[sel])
    with tiledb.open(uri) as R:
        assert R[110:112]["v"].tolist() == [0, 1]


def test_anonymous_attribute_returns_ndarray(tmp_path, writer):
    uri = str(tmp_path / "anon")
    dom = writer.Domain(writer.Dim(domain=(0, 9), tile=5, dtype=np.int64))
    writer.Array.create(
        uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr(dtype=np.float32)])
    )
    with writer.open(uri, "w") as A:
        A[:] = np.arange(10, dtype=np.float32)
    res = read_both(uri, lambda A: A[2:5])
    assert isinstance(res, np.ndarray)
    read_both(uri, lambda A: A[:])
    read_both(uri, lambda A: A[7])
    read_both(uri, lambda A: A.schema.attr(0).name)
    read_both(uri, lambda A: A.schema.domain.dim(0).name)


def test_single_named_attribute_returns_ordered_dict(tmp_path):
    # tiledb-py 0.36.1 returns an OrderedDict for a single *named* attribute
    # (its docstring says ndarray; only anonymous attributes give an ndarray)
    uri = str(tmp_path / "one")
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 3), tile=2, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("v", dtype=np.int8)]))
    with tiledb.open(uri, "w") as A:
        A[:] = np.array([1, 2, 3, 4], dtype=np.int8)
    res = read_both(uri, lambda A: A[:])
    assert list(res.keys()) == ["v"]


def test_multi_fragment_overwrite(tmp_path, writer):
    uri = str(tmp_path / "mf")
    dom = writer.Domain(
        writer.Dim("x", domain=(0, 7), tile=4, dtype=np.int32),
        writer.Dim("y", domain=(0, 7), tile=4, dtype=np.int32),
    )
    writer.Array.create(uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("a", dtype=np.int64)]))
    with writer.open(uri, "w", timestamp=1) as A:
        A[:] = np.arange(64, dtype=np.int64).reshape(8, 8)
    with writer.open(uri, "w", timestamp=2) as A:
        A[2:5, 3:7] = -np.ones((3, 4), dtype=np.int64)
    with writer.open(uri, "w", timestamp=3) as A:
        A[4:8, 0:2] = np.full((4, 2), 7, dtype=np.int64)
    for ts in (None, 1, 2, 3, (2, 3)):
        kw = {} if ts is None else {"timestamp": ts}
        read_both(uri, lambda A: A[:], **kw)
        read_both(uri, lambda A: A[1:6, 2:5], **kw)
    with tiledb.open(uri) as R:
        assert R[3, 4]["a"] == -1
        assert R[5, 1]["a"] == 7
        assert R[0, 0]["a"] == 0


# --------------------------------------------------------------------------
# every attribute type

DTYPE_CASES = [
    ("int8", dict(dtype=np.int8), np.array([-128, 2, 3, 127], dtype=np.int8)),
    ("int16", dict(dtype=np.int16), np.array([-5, 2, 3, 32767], dtype=np.int16)),
    ("int32", dict(dtype=np.int32), np.array([-5, 2, 3, 2**31 - 1], dtype=np.int32)),
    ("int64", dict(dtype=np.int64), np.array([-5, 2, 3, 2**62], dtype=np.int64)),
    ("uint8", dict(dtype=np.uint8), np.array([0, 2, 3, 255], dtype=np.uint8)),
    ("uint16", dict(dtype=np.uint16), np.array([0, 2, 3, 65535], dtype=np.uint16)),
    ("uint32", dict(dtype=np.uint32), np.array([0, 2, 3, 2**32 - 1], dtype=np.uint32)),
    ("uint64", dict(dtype=np.uint64), np.array([0, 2, 3, 2**64 - 1], dtype=np.uint64)),
    ("float32", dict(dtype=np.float32), np.array([-1.5, np.inf, 0.0, 3.25], dtype=np.float32)),
    ("float64", dict(dtype=np.float64), np.array([-1.5, -np.inf, np.nan, 1e300])),
    ("complex64", dict(dtype=np.complex64), np.array([1 + 2j, 0, -1j, 3], dtype=np.complex64)),
    ("complex128", dict(dtype=np.complex128), np.array([1 + 2j, 0, -1j, 3], dtype=np.complex128)),
    ("datetime_ns", dict(dtype="datetime64[ns]"), np.array([0, 1, 10**18, -5], dtype="datetime64[ns]")),
    ("datetime_ms", dict(dtype="datetime64[ms]"), np.array(["2020-01-01T00:00:00.001", "1969-12-31", "2038-01-19", "2000-02-29"], dtype="datetime64[ms]")),
    ("datetime_D", dict(dtype="datetime64[D]"), np.array(["2020-01-01", "1969-12-31", "2038-01-19", "2000-02-29"], dtype="datetime64[D]")),
    ("datetime_s", dict(dtype="datetime64[s]"), np.array([0, 1, 2, 3], dtype="datetime64[s]")),
    ("bool", dict(dtype=np.bool_), np.array([True, False, True, True])),
    ("S1", dict(dtype="S1"), np.array([b"a", b"b", b"\x00", b"d"], dtype="S1")),
    ("S3", dict(dtype="S3"), np.array([b"abc", b"b", b"", b"xyz"], dtype="S3")),
    # 'U' dtypes become var-sized UTF-8 strings in tiledb-py
    ("U3", dict(dtype="U3"), np.array(["abc", "b", "", "é"], dtype=object)),
    ("str", dict(dtype=str, var=True), np.array(["abc", "", "a longer string", "éü€𝄞"], dtype=object)),
    ("str_default_var", dict(dtype=str), np.array(["abc", "", "x", "y"], dtype=object)),
    ("ascii", dict(dtype="ascii", var=True), np.array([b"abc", b"", b"x", b"yy"], dtype=object)),
    ("bytes", dict(dtype=bytes, var=True), np.array([b"abc", b"", b"\x00\xff", b"yy"], dtype=object)),
    ("record_2i4", dict(dtype=np.dtype([("", "i4")] * 2)),
     np.array([(1, 2), (3, 4), (-5, 6), (7, 8)], dtype=np.dtype([("", "i4")] * 2))),
    ("record_3f8", dict(dtype=np.dtype([("", "f8")] * 3)),
     np.array([(1, 2, 3), (3, 4, 5), (-5, 6, 0.5), (7, 8, 9)], dtype=np.dtype([("", "f8")] * 3))),
    ("fill_int", dict(dtype=np.int32, fill=-7), np.array([1, 2, 3, 4], dtype=np.int32)),
    ("fill_float", dict(dtype=np.float64, fill=0.5), np.array([1, 2, 3, 4], dtype=np.float64)),
    ("fill_S2", dict(dtype="S2", fill=b"zz"), np.array([b"ab", b"c", b"de", b"f"], dtype="S2")),
]


def _create_typed(uri, mod, attr_kwargs, data, nd=1):
    dom = mod.Domain(mod.Dim("x", domain=(0, 5), tile=3, dtype=np.int64))
    mod.Array.create(uri, mod.ArraySchema(domain=dom, attrs=[mod.Attr("a", **attr_kwargs)]))
    with mod.open(uri, "w") as A:
        A[0:4] = {"a": data}
    return uri


@pytest.mark.parametrize("case", DTYPE_CASES, ids=[c[0] for c in DTYPE_CASES])
def test_dtypes(tmp_path, writer, case):
    name, kw, data = case
    uri = _create_typed(str(tmp_path / name), writer, kw, data)
    full = read_both(uri, lambda A: A[:])
    read_both(uri, lambda A: A[1:3])
    read_both(uri, lambda A: A[2])
    read_both(uri, lambda A: A[4:6])
    read_both(uri, lambda A: A.dtype)
    read_both(uri, lambda A: A.multi_index[1:4])
    read_both(uri, lambda A: A.query(attrs=["a"])[0:5])
    # the written cells come back as written
    got = full["a"][:4]
    if data.dtype == object:
        assert got.tolist() == data.tolist()
    elif data.dtype.kind in "fc":
        np.testing.assert_array_equal(got, data)
    else:
        assert got.tobytes() == data.astype(got.dtype).tobytes()


@pytest.mark.parametrize("case", DTYPE_CASES, ids=[c[0] for c in DTYPE_CASES])
def test_dtypes_plain_array_write(tmp_path, writer, case):
    # a single attribute can be written from a plain array (no dict)
    name, kw, data = case
    uri = str(tmp_path / name)
    dom = writer.Domain(writer.Dim("x", domain=(0, 3), tile=2, dtype=np.int64))
    writer.Array.create(uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("a", **kw)]))
    with writer.open(uri, "w") as A:
        A[:] = data
    read_both(uri, lambda A: A[:])


def test_nullable(tmp_path, writer):
    uri = str(tmp_path / "nullable")
    dom = writer.Domain(writer.Dim("x", domain=(0, 5), tile=3, dtype=np.int64))
    schema = writer.ArraySchema(
        domain=dom,
        attrs=[
            writer.Attr("n", dtype=np.int32, nullable=True),
            writer.Attr("f", dtype=np.float64, nullable=True),
            writer.Attr("s", dtype=str, var=True, nullable=True),
            writer.Attr("u", dtype=np.uint8, nullable=True),
        ],
    )
    writer.Array.create(uri, schema)
    with writer.open(uri, "w") as A:
        A[0:4] = {
            "n": np.ma.masked_array(np.array([0, 2, 1, 0], dtype=np.int32), mask=[0, 0, 1, 0]),
            # NaN marks a null for float attributes
            "f": np.array([1.0, np.nan, 2.0, 3.0]),
            "s": np.array(["a", None, "", "d"], dtype=object),
            "u": np.ma.masked_array(np.array([1, 2, 3, 4], dtype=np.uint8), mask=[1, 0, 0, 0]),
        }
    res = read_both(uri, lambda A: A[:])
    assert isinstance(res["n"], np.ma.MaskedArray)
    assert res["n"].mask.tolist() == [False, False, True, False, True, True]
    assert res["f"].mask.tolist() == [False, True, False, False, True, True]
    assert res["s"].mask.tolist() == [False, True, False, False, True, True]
    assert res["u"].mask.tolist() == [True, False, False, False, True, True]
    read_both(uri, lambda A: A[1:3])
    read_both(uri, lambda A: A[2])
    read_both(uri, lambda A: A[:], attr="s")
    read_both(uri, lambda A: A.query(attrs=["n", "s"])[0:4])
    # multi_index on a dense array returns the nullable attributes unmasked
    # (the stored value under a null: what tiledb-py does)
    read_both(uri, lambda A: A.multi_index[0:3])


def test_enumerations(tmp_path, writer):
    uri = str(tmp_path / "enum")
    dom = writer.Domain(writer.Dim("x", domain=(0, 5), tile=3, dtype=np.int64))
    enums = [
        writer.Enumeration("colors", True, ["red", "green", "blue"]),
        writer.Enumeration("nums", False, np.array([10, 20, 30], dtype=np.int16)),
    ]
    schema = writer.ArraySchema(
        domain=dom,
        attrs=[
            writer.Attr("c", dtype=np.uint8, enum_label="colors"),
            writer.Attr("n", dtype=np.int8, enum_label="nums", nullable=True),
            writer.Attr("p", dtype=np.int32),
        ],
        enums=enums,
    )
    writer.Array.create(uri, schema)
    with writer.open(uri, "w") as A:
        A[0:6] = {
            "c": np.array([0, 1, 2, 1, 0, 0], dtype=np.uint8),
            "n": np.ma.masked_array(np.array([0, 2, 1, 0, 1, 1], dtype=np.int8), mask=[0, 0, 1, 0, 0, 0]),
            "p": np.arange(6, dtype=np.int32),
        }
    # A[...] maps the codes to the enumeration values
    res = read_both(uri, lambda A: A[:])
    assert res["c"].tolist() == ["red", "green", "blue", "green", "red", "red"]
    read_both(uri, lambda A: A[1:4])
    # query(...)[...] returns the codes (tiledb-py does not map them there)
    read_both(uri, lambda A: A.query(attrs=["c", "p"])[1:4])
    read_both(uri, lambda A: A.multi_index[0:3])
    read_both(uri, lambda A: A.df[0:3])
    read_both(uri, lambda A: A.enum("colors").values())
    read_both(uri, lambda A: A.enum("nums").values())
    read_both(uri, lambda A: A.enum("colors").name)
    read_both(uri, lambda A: A.enum("colors").ordered)
    read_both(uri, lambda A: A.attr("c").enum_label)


def test_datetime_dimension(tmp_path, writer):
    uri = str(tmp_path / "dtdim")
    dom = writer.Domain(
        writer.Dim(
            "t",
            domain=(np.datetime64("2020-01-01"), np.datetime64("2020-01-20")),
            tile=np.timedelta64(5, "D"),
            dtype="datetime64[D]",
        )
    )
    writer.Array.create(uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("v", dtype=np.float32)]))
    with writer.open(uri, "w") as A:
        # datetime slices are inclusive in tiledb-py, for writes too: 6 cells
        A[np.datetime64("2020-01-03"):np.datetime64("2020-01-08")] = np.arange(6, dtype=np.float32)
    read_both(uri, lambda A: A[:])
    read_both(uri, lambda A: A.nonempty_domain())
    # datetime slices on a dense array are inclusive of the stop in tiledb-py
    r = read_both(uri, lambda A: A[np.datetime64("2020-01-02"):np.datetime64("2020-01-05")])
    read_both(uri, lambda A: A[np.datetime64("2020-01-04")])
    read_both(uri, lambda A: A.multi_index[np.datetime64("2020-01-04"):np.datetime64("2020-01-06")])
    read_both(uri, lambda A: A.df[np.datetime64("2020-01-04"):np.datetime64("2020-01-06")])
    read_both(uri, lambda A: A.schema.domain.dim(0).domain)
    read_both(uri, lambda A: A.schema.domain.dim(0).tile)
    assert r["v"].dtype == np.float32


def test_col_major_array(tmp_path, writer):
    uri = str(tmp_path / "colmajor")
    dom = writer.Domain(
        writer.Dim("x", domain=(0, 5), tile=2, dtype=np.int32),
        writer.Dim("y", domain=(0, 3), tile=3, dtype=np.int32),
    )
    writer.Array.create(
        uri,
        writer.ArraySchema(
            domain=dom,
            attrs=[writer.Attr("a", dtype=np.int16)],
            cell_order="col-major",
            tile_order="col-major",
        ),
    )
    with writer.open(uri, "w") as A:
        A[1:5, 0:3] = np.arange(12, dtype=np.int16).reshape(4, 3)
    # tiledb-py reads col-major arrays right (row-major results); the values
    # are checked here too, not only compared
    full = read_both(uri, lambda A: A[:])
    assert full["a"][1:5, 0:3].tolist() == np.arange(12).reshape(4, 3).tolist()
    part = read_both(uri, lambda A: A[2:4, 1:4])
    fill = np.iinfo(np.int16).min
    assert part["a"].tolist() == [[4, 5, fill], [7, 8, fill]]
    read_both(uri, lambda A: A.multi_index[1:4, 0:2])
    read_both(uri, lambda A: A.df[1:4, 0:2])
    # (order="F" on dense reads: see test_subarray_order_f and test_query.py)
    read_both(uri, lambda A: A.query(order="G")[:, :]["a"].shape)


def test_three_dimensions(tmp_path, writer):
    uri = str(tmp_path / "3d")
    dom = writer.Domain(
        writer.Dim("x", domain=(0, 3), tile=2, dtype=np.int16),
        writer.Dim("y", domain=(0, 4), tile=3, dtype=np.int16),
        writer.Dim("z", domain=(1, 3), tile=1, dtype=np.int16),
    )
    writer.Array.create(uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("v", dtype=np.float64)]))
    data = np.arange(60, dtype=np.float64).reshape(4, 5, 3)
    with writer.open(uri, "w") as A:
        A[:] = data
    full = read_both(uri, lambda A: A[:])
    np.testing.assert_array_equal(full["v"], data)
    read_both(uri, lambda A: A[1:3, ..., 2])
    read_both(uri, lambda A: A[2, 3])
    read_both(uri, lambda A: A[:, 1:4:2, 1:3])


@pytest.mark.parametrize(
    "dtype", ["int8", "uint16", "int32", "int64", "uint64", "float32", "float64", "datetime64[ms]"]
)
def test_single_attribute_reads_into_numpy(tmp_path, writer, dtype):
    # One fixed-size attribute of a box (the engine fills a numpy array in place): values,
    # fill values, a condition, scalars and steps, as tiledb-py gives them.
    uri = str(tmp_path / "one")
    dom = writer.Domain(
        writer.Dim("r", domain=(0, 19), tile=7, dtype=np.int64),
        writer.Dim("c", domain=(1, 9), tile=4, dtype=np.int64),
    )
    writer.Array.create(uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("v", dtype=dtype)]))
    values = (np.arange(15 * 6) % 100).astype(np.int64).astype(dtype).reshape(15, 6)
    with writer.open(uri, "w") as A:
        A[2:17, 3:9] = values
    for sel in (np.s_[:], np.s_[1:18, 2:8], np.s_[5], np.s_[4, 2:7], np.s_[0:20:3, ::2]):
        res = read_both(uri, lambda A: A[sel])["v"]
        assert isinstance(res, np.ndarray) and res.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind != "M":
        read_both(uri, lambda A: A.query(cond="v >= 40", attrs=["v"])[1:18, 2:8])


@pytest.mark.tessera_only
def test_single_attribute_reads_fill_the_numpy_buffer(tmp_path):
    # The result is numpy's own array, written by the engine: no column list is built.
    uri = str(tmp_path / "into")
    engine.from_numpy(uri, np.arange(48, dtype=np.float32).reshape(6, 8)).close()
    with engine.open(uri) as E:
        native = E._native

        class NoColumns:
            def __getattr__(self, name):
                if name == "read":
                    raise AssertionError("the column read was used")
                return getattr(native, name)

        E._native = NoColumns()
        try:
            got = E[1:5, 2:7]
            f = E.query(order="F")[1:5, 2:7]
        finally:
            E._native = native
    want = np.arange(48, dtype=np.float32).reshape(6, 8)[1:5, 2:7]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(f, want)
    assert got.flags.c_contiguous and got.flags.writeable
    assert f.flags.f_contiguous
