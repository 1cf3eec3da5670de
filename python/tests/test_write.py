"""Writes: the same writes done by the engine and by tiledb into two arrays
of the same schema; tiledb reads both and the results must be the same."""

import numpy as np
import pytest

from _helpers import assert_same, engine, fragment_count, tiledb


def write_both(tmp_path, make_schema, write, reads=(lambda A: A[:],), **open_kwargs):
    """Create the array with ``make_schema(mod)`` and run ``write(mod, uri)``
    once with tiledb and once with the engine; tiledb reads both arrays with
    every function of ``reads`` and the results must be the same.  Returns the
    reference results."""
    ref_uri = str(tmp_path / "by_tiledb")
    eng_uri = str(tmp_path / "by_engine")
    tiledb.Array.create(ref_uri, make_schema(tiledb))
    engine.Array.create(eng_uri, make_schema(engine))
    write(tiledb, ref_uri)
    write(engine, eng_uri)
    out = []
    for fn in reads:
        with tiledb.open(ref_uri, **open_kwargs) as R:
            expected = fn(R)
        with tiledb.open(eng_uri, **open_kwargs) as R:
            got = fn(R)
        assert_same(got, expected)
        # and the engine reads its own array the same way
        with engine.open(eng_uri, **open_kwargs) as E:
            assert_same(fn(E), expected)
        out.append(expected)
    assert fragment_count(eng_uri) == fragment_count(ref_uri)
    return out if len(out) > 1 else out[0]


def dense_2d(mod, attrs=None, **kw):
    dom = mod.Domain(
        mod.Dim("x", domain=(1, 8), tile=4, dtype=np.int64),
        mod.Dim("y", domain=(1, 6), tile=3, dtype=np.int64),
    )
    if attrs is None:
        attrs = [mod.Attr("a", dtype=np.int32), mod.Attr("f", dtype=np.float64)]
    return mod.ArraySchema(domain=dom, attrs=attrs(mod) if callable(attrs) else attrs, **kw)


def test_dense_dict(tmp_path):
    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[2:5, 1:4] = {
                "a": np.arange(9, dtype=np.int32).reshape(3, 3),
                "f": np.arange(9, dtype=np.float64).reshape(3, 3) * 1.5,
            }

    res = write_both(tmp_path, dense_2d, write)
    assert res["a"][1, 0] == 0


def test_dense_full_and_partial(tmp_path):
    def write(mod, uri):
        with mod.open(uri, "w", timestamp=1) as A:
            A[:] = {"a": np.ones((8, 6), dtype=np.int32), "f": np.zeros((8, 6))}
        with mod.open(uri, "w", timestamp=2) as A:
            A[8, 6] = {"a": np.array([[5]], dtype=np.int32), "f": np.array([[2.5]])}
        with mod.open(uri, "w", timestamp=3) as A:
            A[1:9, 3:4] = {"a": np.arange(8, dtype=np.int32).reshape(8, 1), "f": np.ones((8, 1))}

    write_both(tmp_path, dense_2d, write)
    for ts in (1, 2, (2, 3)):
        write_both(tmp_path / str(ts), dense_2d, write, timestamp=ts)


def test_dense_single_anonymous_attr(tmp_path):
    def schema(mod):
        dom = mod.Domain(mod.Dim(domain=(0, 9), tile=5, dtype=np.uint16))
        return mod.ArraySchema(domain=dom, attrs=[mod.Attr(dtype=np.float32)])

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[2:7] = np.arange(5, dtype=np.float32)
            A[8:10] = np.array([1, 2], dtype=np.int64)  # converted to the attribute type

    write_both(tmp_path, schema, write)


def test_dense_scalar_broadcast(tmp_path):
    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[1:3, 1:3] = 7

    write_both(tmp_path, dense_2d, write)


def test_dense_var_and_fixed_strings(tmp_path):
    def schema(mod):
        return dense_2d(
            mod,
            attrs=[
                mod.Attr("s", dtype=str, var=True),
                mod.Attr("b", dtype=bytes, var=True),
                mod.Attr("fx", dtype="S3"),
            ],
        )

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[1:3, 1:4] = {
                "s": np.array([["a", "", "ccc"], ["é", "日本", "x" * 100]], dtype=object),
                # (no value ending in NUL: tiledb-py's writes drop trailing NULs of bytes,
                # see test_trailing_nul_bytes_kept)
                "b": np.array([[b"a", b"", b"\x00z"], [b"\xff", b"zz", b"q" * 50]], dtype=object),
                "fx": np.array([[b"abc", b"d", b""], [b"xyz", b"12", b"3"]], dtype="S3"),
            }

    write_both(tmp_path, schema, write, reads=(lambda A: A[:], lambda A: A.multi_index[1:2, 2:3]))


def test_dense_nullable_dict(tmp_path):
    def schema(mod):
        dom = mod.Domain(mod.Dim("x", domain=(1, 8), tile=4, dtype=np.int64))
        return mod.ArraySchema(
            domain=dom,
            attrs=[
                mod.Attr("i", dtype=np.int32, nullable=True),
                mod.Attr("f", dtype=np.float32, nullable=True),
                mod.Attr("s", dtype=str, var=True, nullable=True),
            ],
        )

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[1:5] = {
                "i": np.ma.masked_array(np.array([1, 2, 3, 4], dtype=np.int32), mask=[0, 1, 0, 0]),
                "f": np.array([np.nan, 1.0, 2.0, 3.0], dtype=np.float32),
                "s": np.array(["a", None, None, ""], dtype=object),
            }

    res = write_both(tmp_path, schema, write)
    assert res["i"].mask.tolist()[:4] == [False, True, False, False]
    assert res["f"].mask.tolist()[:4] == [True, False, False, False]
    assert res["s"].mask.tolist()[:4] == [False, True, True, False]


@pytest.mark.tiledb_bug(
    "a 2-D object array holding None for a nullable var-sized attribute of a "
    "dense array fails ('Unexpected object type in string conversion'): the "
    "validity is computed over the rows, not the cells"
)
def test_dense_nullable_2d_strings(tmp_path):
    uri = str(tmp_path / "a")
    engine.Array.create(
        uri, dense_2d(engine, attrs=[engine.Attr("s", dtype=str, var=True, nullable=True)])
    )
    with engine.open(uri, "w") as A:
        A[1:3, 1:3] = {"s": np.array([["a", None], [None, ""]], dtype=object)}
    with tiledb.open(uri) as R:
        r = R[1:3, 1:3]["s"]
    assert r.mask.tolist() == [[False, True], [True, False]]
    assert r[0, 0] == "a" and r[1, 1] == ""


def _single_nullable(mod, dtype, var=False):
    dom = mod.Domain(mod.Dim("x", domain=(0, 3), tile=2, dtype=np.int64))
    return mod.ArraySchema(domain=dom, attrs=[mod.Attr("a", dtype=dtype, var=var, nullable=True)])


@pytest.mark.tiledb_bug(
    "a single nullable attribute written from a plain masked array (no dict) "
    "loses its mask: np.ascontiguousarray runs before the validity is taken"
)
def test_dense_single_nullable_masked_plain(tmp_path):
    uri = str(tmp_path / "a")
    engine.Array.create(uri, _single_nullable(engine, np.int32))
    with engine.open(uri, "w") as A:
        A[:] = np.ma.masked_array(np.arange(4, dtype=np.int32), mask=[0, 1, 0, 1])
    with tiledb.open(uri) as R:
        assert R[:]["a"].mask.tolist() == [False, True, False, True]


@pytest.mark.tiledb_bug(
    "a single nullable var-sized attribute written from a plain object array "
    "(no dict) gets an inverted validity: int(v is None) instead of is not None"
)
def test_dense_single_nullable_var_plain(tmp_path):
    uri = str(tmp_path / "a")
    engine.Array.create(uri, _single_nullable(engine, str, var=True))
    with engine.open(uri, "w") as A:
        A[:] = np.array(["a", None, "c", ""], dtype=object)
    with tiledb.open(uri) as R:
        r = R[:]["a"]
        assert r.mask.tolist() == [False, True, False, False]
        assert r[0] == "a" and r[3] == ""


def test_dense_enumeration_codes(tmp_path):
    def schema(mod):
        return mod.ArraySchema(
            domain=dense_2d(mod).domain,
            attrs=[mod.Attr("c", dtype=np.int8, enum_label="e")],
            enums=[mod.Enumeration("e", False, ["lo", "mid", "hi"])],
        )

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[:] = {"c": (np.arange(48, dtype=np.int8) % 3).reshape(8, 6)}

    write_both(tmp_path, schema, write, reads=(lambda A: A[:], lambda A: A.query(attrs=["c"])[2:4, 2:4]))


def test_dense_datetime_and_bool(tmp_path):
    def schema(mod):
        return dense_2d(
            mod,
            attrs=[mod.Attr("t", dtype="datetime64[ms]"), mod.Attr("b", dtype=np.bool_)],
        )

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[1:2, 1:7] = {
                "t": np.array([0, 1, 2, -1, 10**12, 5], dtype="datetime64[ms]").reshape(1, 6),
                "b": np.array([[True, False, True, True, False, False]]),
            }

    write_both(tmp_path, schema, write)


def test_dense_record_and_complex(tmp_path):
    rec = np.dtype([("", "u2")] * 3)

    def schema(mod):
        return dense_2d(mod, attrs=[mod.Attr("r", dtype=rec), mod.Attr("c", dtype=np.complex128)])

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[1:2, 1:4] = {
                "r": np.array([[(1, 2, 3), (4, 5, 6), (7, 8, 9)]], dtype=rec),
                "c": np.array([[1 + 1j, -2j, 3]], dtype=np.complex128),
            }

    write_both(tmp_path, schema, write)


def test_dense_timestamps(tmp_path):
    def write(mod, uri):
        for t in (10, 20):
            with mod.open(uri, "w", timestamp=t) as A:
                A[1:3, 1:3] = {"a": np.full((2, 2), t, dtype=np.int32), "f": np.full((2, 2), t / 10)}

    write_both(tmp_path, dense_2d, write)
    uri = str(tmp_path / "by_engine")
    frags = tiledb.array_fragments(uri)
    assert [f.timestamp_range for f in frags] == [(10, 10), (20, 20)]
    with tiledb.open(uri, timestamp=15) as R:
        assert R[1, 1]["a"] == 10


# --------------------------------------------------------------------------
# sparse


def sparse_schema(mod, attrs=None, dims=None, **kw):
    if dims is None:
        dims = [
            mod.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
            mod.Dim("y", domain=(0, 99), tile=10, dtype=np.int64),
        ]
    if attrs is None:
        attrs = [mod.Attr("a", dtype=np.int32), mod.Attr("s", dtype=str, var=True)]
    return mod.ArraySchema(domain=mod.Domain(*dims), attrs=attrs, sparse=True, **kw)


def test_sparse_dict(tmp_path):
    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[np.array([5, 1, 9, 1]), np.array([3, 3, 0, 2])] = {
                "a": np.array([1, 2, 3, 4], dtype=np.int32),
                "s": np.array(["five", "one", "", "ü"], dtype=object),
            }

    res = write_both(tmp_path, sparse_schema, write)
    # cells come back sorted (global order)
    assert res["x"].tolist() == [1, 1, 5, 9]


def test_sparse_lists(tmp_path):
    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[[5, 1], [3, 3]] = {"a": [7, 8], "s": ["p", "q"]}

    write_both(tmp_path, sparse_schema, write)


def test_sparse_single_attr_plain(tmp_path):
    def schema(mod):
        return sparse_schema(mod, attrs=[mod.Attr("v", dtype=np.float64)])

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[np.array([0, 99]), np.array([99, 0])] = np.array([1.5, -2.5])

    write_both(tmp_path, schema, write)


def test_sparse_nullable(tmp_path):
    def schema(mod):
        return sparse_schema(
            mod,
            attrs=[
                mod.Attr("s", dtype=str, var=True, nullable=True),
                mod.Attr("f", dtype=np.float64, nullable=True),
                mod.Attr("b", dtype=bytes, var=True, nullable=True),
            ],
        )

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[np.array([1, 2, 3]), np.array([1, 2, 3])] = {
                "s": np.array(["x", None, ""], dtype=object),
                "f": np.array([np.nan, 1.0, 2.0]),
                "b": np.array([None, b"", b"\x00z"], dtype=object),
            }

    res = write_both(tmp_path, schema, write)
    assert res["s"].mask.tolist() == [False, True, False]
    assert res["f"].mask.tolist() == [True, False, False]
    assert res["b"].mask.tolist() == [True, False, False]


@pytest.mark.tiledb_bug(
    "sparse writes drop the mask of masked arrays (np.asarray runs first), so "
    "nullable integer attributes cannot get nulls"
)
@pytest.mark.tiledb_bug("writes of var-sized bytes drop their trailing NULs (b'a\\x00\\x00' is written as b'a')")
def test_trailing_nul_bytes_kept(tmp_path):
    uri = str(tmp_path / "a")
    engine.Array.create(uri, sparse_schema(engine, attrs=[engine.Attr("b", dtype=bytes, var=True)]))
    values = [b"\x00", b"a\x00\x00", b"\x00b"]
    with engine.open(uri, "w") as A:
        A[np.array([1, 2, 3]), np.array([1, 2, 3])] = {"b": np.array(values, dtype=object)}
    # both read what the engine wrote (a lone NUL byte, the default fill of var-sized
    # bytes, reads as b"" in tiledb-py, and so in Tessera)
    for mod in (engine, tiledb):
        with mod.open(uri) as R:
            assert R[:]["b"].tolist() == [b""] + values[1:]


@pytest.mark.tiledb_bug("a masked integer array is written without its mask (every cell valid)")
def test_sparse_nullable_int_masked(tmp_path):
    uri = str(tmp_path / "a")
    engine.Array.create(uri, sparse_schema(engine, attrs=[engine.Attr("i", dtype=np.int16, nullable=True)]))
    with engine.open(uri, "w") as A:
        A[np.array([1, 2, 3]), np.array([1, 2, 3])] = {
            "i": np.ma.masked_array(np.array([1, 2, 3], dtype=np.int16), mask=[0, 1, 0])
        }
    with tiledb.open(uri) as R:
        assert R[:]["i"].mask.tolist() == [False, True, False]


def test_sparse_float_string_datetime_dims(tmp_path):
    def schema(mod):
        return sparse_schema(
            mod,
            dims=[
                mod.Dim("f", domain=(-1.0, 1.0), tile=0.5, dtype=np.float32),
                mod.Dim("s", domain=(None, None), tile=None, dtype="ascii"),
                mod.Dim("t", domain=(np.datetime64(0, "D"), np.datetime64(20000, "D")), tile=np.timedelta64(100, "D"), dtype="datetime64[D]"),
            ],
            attrs=[mod.Attr("v", dtype=np.uint64)],
        )

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[
                np.array([0.5, -0.25, 0.5, 1.0], dtype=np.float32),
                np.array(["b", "a", "abc", ""], dtype=object),
                np.array([5, 19999, 0, 100], dtype="datetime64[D]"),
            ] = np.array([1, 2, 3, 2**63], dtype=np.uint64)

    write_both(
        tmp_path,
        schema,
        write,
        reads=(lambda A: A[:], lambda A: A.nonempty_domain(), lambda A: A.df[:]),
    )


def test_sparse_duplicates(tmp_path):
    def schema(mod):
        return sparse_schema(mod, allows_duplicates=True)

    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[np.array([1, 1, 1]), np.array([2, 2, 2])] = {
                "a": np.array([1, 2, 3], dtype=np.int32),
                "s": np.array(["a", "b", "c"], dtype=object),
            }

    res = write_both(tmp_path, schema, write, reads=(lambda A: sorted(A[:]["a"].tolist()),))
    assert res == [1, 2, 3]


def test_sparse_many_fragments_and_timestamps(tmp_path):
    def write(mod, uri):
        for t in range(1, 6):
            with mod.open(uri, "w", timestamp=t * 100) as A:
                A[np.array([t, t + 1]), np.array([t, t])] = {
                    "a": np.array([t, -t], dtype=np.int32),
                    "s": np.array([str(t), "-" + str(t)], dtype=object),
                }

    write_both(tmp_path, sparse_schema, write)
    write_both(tmp_path / "t", sparse_schema, write, timestamp=(200, 400))
    frags = tiledb.array_fragments(str(tmp_path / "by_engine"))
    assert [f.timestamp_range for f in frags] == [(t * 100, t * 100) for t in range(1, 6)]


def test_sparse_delete(tmp_path):
    def write(mod, uri):
        with mod.open(uri, "w", timestamp=1) as A:
            A[np.arange(10), np.arange(10)] = {
                "a": np.arange(10, dtype=np.int32),
                "s": np.array(list("abcdefghij"), dtype=object),
            }
        with mod.open(uri, "d", timestamp=2) as A:
            A.query(cond="a > 6 or s == 'b'").submit()
        with mod.open(uri, "w", timestamp=3) as A:
            A[np.array([1]), np.array([1])] = {"a": np.array([100], dtype=np.int32), "s": np.array(["new"], dtype=object)}

    res = write_both(tmp_path, sparse_schema, write)
    assert res["a"].tolist() == [0, 100, 2, 3, 4, 5, 6]
    write_both(tmp_path / "t1", sparse_schema, write, timestamp=1)
    write_both(tmp_path / "t2", sparse_schema, write, timestamp=2)


def test_dense_delete_mode_query_raises(tmp_path):
    uri = str(tmp_path / "d")
    tiledb.Array.create(uri, dense_2d(tiledb))
    with tiledb.open(uri, "d") as A, pytest.raises(tiledb.TileDBError):
        A.query(cond="a > 1")
    with engine.open(uri, "d") as A, pytest.raises(engine.TileDBError):
        A.query(cond="a > 1")


def test_write_then_read_same_session_types(tmp_path):
    # values of another numeric type are converted to the attribute type
    def write(mod, uri):
        with mod.open(uri, "w") as A:
            A[1:3, 1:3] = {"a": np.array([[1.9, 2.1], [3.0, -4.7]]), "f": np.array([[1, 2], [3, 4]], dtype=np.int8)}

    write_both(tmp_path, dense_2d, write)
