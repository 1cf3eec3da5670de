"""A.df[...] (pandas) and A.query(...).df[...]: compared with
pandas.testing.assert_frame_equal (index, column order, dtypes, values)."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from _helpers import WRITERS, assert_same, engine, read_both, tiledb


def _create_sparse(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
        mod.Dim("t", domain=(np.datetime64(0, "s"), np.datetime64(10**9, "s")), tile=np.timedelta64(3600, "s"), dtype="datetime64[s]"),
    )
    schema = mod.ArraySchema(
        domain=dom,
        attrs=[
            mod.Attr("i8", dtype=np.int8),
            mod.Attr("u64", dtype=np.uint64),
            mod.Attr("f32", dtype=np.float32),
            mod.Attr("f64", dtype=np.float64, nullable=True),
            mod.Attr("n32", dtype=np.int32, nullable=True),
            mod.Attr("s", dtype=str, var=True),
            mod.Attr("ns", dtype=str, var=True, nullable=True),
            mod.Attr("by", dtype=bytes, var=True),
            mod.Attr("asc", dtype="ascii", var=True),
            mod.Attr("fixed", dtype="S2"),
            mod.Attr("b", dtype=np.bool_),
            mod.Attr("dt", dtype="datetime64[ns]"),
        ],
        sparse=True,
    )
    mod.Array.create(uri, schema)
    n = 8
    x = np.array([5, 1, 9, 33, 33, 70, 71, 99], dtype=np.int64)
    t = np.array([0, 7200, 10, 3600, 3601, 10**9, 5, 99999], dtype="datetime64[s]")
    with mod.open(uri, "w") as A:
        A[x, t] = {
            "i8": np.arange(n, dtype=np.int8) - 4,
            "u64": np.arange(n, dtype=np.uint64) * 2**60,
            "f32": np.linspace(-1, 1, n).astype(np.float32),
            "f64": np.array([1.0, np.nan, 3.0, 4.0, np.nan, 6.0, 7.0, 8.0]),
            "n32": np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=np.int32),
            "s": np.array(["a", "", "ccc", "é", "x", "yy", "z", "0"], dtype=object),
            "ns": np.array(["a", None, "ccc", None, "", "yy", "z", "0"], dtype=object),
            "by": np.array([b"a", b"", b"\x00\x01", b"b", b"x", b"yy", b"z", b"0"], dtype=object),
            "asc": np.array([b"q", b"rr", b"", b"a", b"b", b"c", b"d", b"e"], dtype=object),
            "fixed": np.array([b"ab", b"c", b"", b"zz", b"a", b"b", b"c", b"d"], dtype="S2"),
            "b": np.array([True, False] * 4),
            "dt": np.arange(n).astype("datetime64[ns]"),
        }
    return uri


def _create_dense(uri, mod):
    dom = mod.Domain(
        mod.Dim("r", domain=(1, 4), tile=2, dtype=np.uint32),
        mod.Dim("c", domain=(1, 3), tile=3, dtype=np.uint32),
    )
    schema = mod.ArraySchema(
        domain=dom,
        attrs=[
            mod.Attr("v", dtype=np.float64),
            mod.Attr("n", dtype=np.int16, nullable=True),
            mod.Attr("s", dtype=str, var=True),
        ],
    )
    mod.Array.create(uri, schema)
    with mod.open(uri, "w") as A:
        A[1:4, 1:4] = {
            "v": np.arange(9, dtype=np.float64).reshape(3, 3),
            "n": np.ma.masked_array(np.arange(9, dtype=np.int16).reshape(3, 3), mask=np.eye(3, dtype=bool)),
            "s": np.array(list("abcdefghi"), dtype=object).reshape(3, 3),
        }
    return uri


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def sparse(request, tmp_path_factory):
    return _create_sparse(str(tmp_path_factory.mktemp("df") / "s"), WRITERS[request.param])


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def dense(request, tmp_path_factory):
    return _create_dense(str(tmp_path_factory.mktemp("df") / "d"), WRITERS[request.param])


SPARSE_SELECTIONS = [np.s_[:], np.s_[0:33], np.s_[33], np.s_[[1, 99], :], np.s_[50:60]]


@pytest.mark.parametrize("sel", SPARSE_SELECTIONS, ids=[repr(s) for s in SPARSE_SELECTIONS])
def test_sparse_df(sparse, sel):
    df = read_both(sparse, lambda A: A.df[sel])
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns)[:2] == ["x", "t"]


def test_sparse_df_dtypes(sparse):
    with engine.open(sparse) as E:
        df = E.df[:]
    with tiledb.open(sparse) as R:
        ref = R.df[:]
    assert df.dtypes.to_dict() == ref.dtypes.to_dict()
    assert df.index.equals(ref.index)
    assert isinstance(df.index, pd.RangeIndex)
    # nullable integers come as pandas extension types, float nulls as NaN,
    # string nulls as None
    assert str(df["n32"].dtype) == "Int32"
    assert df["ns"].isna().tolist() == ref["ns"].isna().tolist()


def test_plain_numeric_df_is_tiledb_pys_frame_without_arrow_copy(sparse):
    # only one-value numeric columns without validity: built from the engine's buffers
    # directly; the frame must be what tiledb-py's Arrow path gives, and usable in place
    sel = lambda A: A.query(attrs=["i8", "u64", "f32"], dims=["x"]).df[:]  # noqa: E731
    df = read_both(sparse, sel)
    assert isinstance(df.index, pd.RangeIndex)
    with engine.open(sparse) as E:
        got = sel(E)
    got["f32"] += 1
    got.loc[0, "i8"] = 7
    assert got.loc[0, "i8"] == 7


def test_sparse_df_query(sparse):
    read_both(sparse, lambda A: A.query(attrs=["s", "f32"]).df[:])
    read_both(sparse, lambda A: A.query(attrs=["s"], dims=["t"]).df[:])
    read_both(sparse, lambda A: A.query(dims=[]).df[0:40])
    read_both(sparse, lambda A: A.query(attrs=["i8"], coords=False).df[:])
    read_both(sparse, lambda A: A.query(attrs=["n32", "f64"], use_arrow=False).df[:])
    read_both(sparse, lambda A: A.query(attrs=["i8", "s"], order="C").df[:])
    read_both(sparse, lambda A: A.query(attrs=["i8", "s"], order="F").df[:])
    read_both(sparse, lambda A: A.query(attrs=["i8", "s"], order="G").df[:])
    read_both(sparse, lambda A: A.query(cond="i8 > 0").df[:])
    read_both(sparse, lambda A: A.df[:], attr="f32")


def test_sparse_df_unordered(sparse):
    with tiledb.open(sparse) as R, engine.open(sparse) as E:
        ref = R.query(order="U").df[:].sort_values(["x", "t"]).reset_index(drop=True)
        got = E.query(order="U").df[:].sort_values(["x", "t"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)


def test_use_arrow_false(sparse):
    read_both(sparse, lambda A: A.query(use_arrow=False).df[:])
    read_both(sparse, lambda A: A.query(use_arrow=False, attrs=["s", "ns", "b"]).df[0:50])


def test_return_arrow(sparse):
    tbl = read_both(sparse, lambda A: A.query(return_arrow=True).df[:])
    assert isinstance(tbl, pa.Table)
    read_both(sparse, lambda A: A.query(return_arrow=True, attrs=["s", "ns", "n32"]).df[0:40])
    read_both(sparse, lambda A: A.query(return_arrow=True, dims=["t"], attrs=["f64"]).df[[1, 99], :])
    with engine.open(sparse) as E:
        t = E.query(return_arrow=True).df[:]
    # the Arrow C stream interface: pyarrow accepts the table as is
    assert pa.table(t).equals(t)
    if hasattr(t, "__arrow_c_stream__"):
        assert pa.RecordBatchReader.from_stream(t).read_all().equals(t)


@pytest.mark.parametrize("sel", [np.s_[:], np.s_[2:3], np.s_[2, 1:2], np.s_[[1, 4], :]], ids=repr)
def test_dense_df(dense, sel):
    df = read_both(dense, lambda A: A.df[sel])
    # dense df includes the dimensions as columns
    assert list(df.columns) == ["r", "c", "v", "n", "s"]


def test_dense_df_query(dense):
    read_both(dense, lambda A: A.query(attrs=["s"]).df[:])
    read_both(dense, lambda A: A.query(attrs=["n"], dims=["c"]).df[1:2])
    read_both(dense, lambda A: A.query(use_arrow=False).df[:])
    read_both(dense, lambda A: A.query(order="F").df[:])
    read_both(dense, lambda A: A.query(order="G").df[:])
    # return_arrow on a dense array gives the attributes only (tiledb-py)
    read_both(dense, lambda A: A.query(return_arrow=True).df[:])
    read_both(dense, lambda A: A.query(return_arrow=True, coords=True).df[1:2])


def test_enumeration_df(tmp_path, writer):
    uri = str(tmp_path / "enum")
    dom = writer.Domain(writer.Dim("x", domain=(0, 9), tile=5, dtype=np.int64))
    writer.Array.create(
        uri,
        writer.ArraySchema(
            domain=dom,
            attrs=[
                writer.Attr("c", dtype=np.uint8, enum_label="colors"),
                writer.Attr("n", dtype=np.int32, enum_label="nums", nullable=True),
            ],
            enums=[
                writer.Enumeration("colors", True, ["red", "green", "blue"]),
                writer.Enumeration("nums", False, np.array([1.5, 2.5], dtype=np.float64)),
            ],
            sparse=True,
        ),
    )
    with writer.open(uri, "w") as A:
        A[np.array([3, 1, 2], dtype=np.int64)] = {
            "c": np.array([2, 0, 1], dtype=np.uint8),
            "n": np.array([1, 0, 1], dtype=np.int32),
        }
    df = read_both(uri, lambda A: A.df[:])
    assert str(df["c"].dtype) == "category"
    # tiledb-py does not carry the enumeration's "ordered" flag into pandas
    assert not df["c"].cat.ordered
    read_both(uri, lambda A: A.query(attrs=["c"]).df[1:2])
    read_both(uri, lambda A: A.query(return_arrow=True).df[:])
    read_both(uri, lambda A: A[:])
    read_both(uri, lambda A: A.multi_index[:])


def test_empty_result_df(sparse, dense):
    read_both(sparse, lambda A: A.df[50:60])
    read_both(sparse, lambda A: A.query(cond="i8 > 100").df[:])
    read_both(sparse, lambda A: A.query(return_arrow=True).df[50:60])


# --------------------------------------------------------------------------
# the Arrow C stream protocol (Tessera's arrays and queries; tiledb-py has none)


def _values(table, name):
    col = table.column(name)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    # the stream has tessera-arrow's types: char cells are strings, bools are bools
    return [v.decode() if isinstance(v, bytes) and name != "fixed" else v for v in col.to_pylist()]


@pytest.mark.tessera_only
def test_arrow_c_stream_sparse(sparse):
    with engine.open(sparse) as E:
        want = E.query(return_arrow=True).df[:]
        got = pa.table(E)
        assert got.column_names == want.column_names
        for name in want.column_names:
            a, b = _values(got, name), _values(want, name)
            if name == "s":
                assert a == b
            else:
                assert [x != x and y != y or x == y for x, y in zip(a, b)] == [True] * len(a), name
        q = E.query(attrs=["s", "n32"], dims=["x"], cond="n32 > 3")
        t = pa.table(q)
        assert t.column_names == ["x", "n32", "s"]
        assert sorted(_values(t, "n32")) == [4, 5, 6, 7, 8]


@pytest.mark.tessera_only
def test_arrow_c_stream_batches_and_errors(dense):
    with engine.open(dense) as E:
        full = pa.table(E.query(coords=True))
        reader = pa.RecordBatchReader.from_stream(E.query(coords=True, memory_budget=64))
        batches = list(reader)
        assert len(batches) > 1
        assert pa.Table.from_batches(batches).equals(full)
        # a dense array streams its non-empty domain
        assert full.num_rows == 9
        with pytest.raises(engine.TileDBError):
            E.query(cond="nope > 1").__arrow_c_stream__()
    with engine.open(dense, "w") as W, pytest.raises(engine.TileDBError):
        W.__arrow_c_stream__()
