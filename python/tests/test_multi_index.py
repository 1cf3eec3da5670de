"""A.multi_index[...]: inclusive ranges, lists of scalars and slices (cross
product), on dense and sparse arrays, in both directions."""

import numpy as np
import pytest

from _helpers import WRITERS, assert_same, engine, read_both, sort_result, tiledb


def _create_dense(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(1, 6), tile=3, dtype=np.int32),
        mod.Dim("y", domain=(1, 4), tile=2, dtype=np.int32),
    )
    mod.Array.create(
        uri,
        mod.ArraySchema(
            domain=dom,
            attrs=[mod.Attr("a", dtype=np.int32), mod.Attr("s", dtype=str, var=True)],
        ),
    )
    with mod.open(uri, "w") as A:
        A[1:5, 1:4] = {
            "a": np.arange(12, dtype=np.int32).reshape(4, 3),
            "s": np.array([str(i) for i in range(12)], dtype=object).reshape(4, 3),
        }
    return uri


def _create_sparse(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(0, 49), tile=8, dtype=np.int64),
        mod.Dim("y", domain=(0.0, 100.0), tile=25.0, dtype=np.float64),
    )
    mod.Array.create(
        uri,
        mod.ArraySchema(
            domain=dom,
            attrs=[mod.Attr("a", dtype=np.uint16), mod.Attr("s", dtype=str, var=True)],
            sparse=True,
        ),
    )
    x = np.array([0, 3, 3, 7, 12, 20, 21, 33, 40, 49], dtype=np.int64)
    y = np.array([0.0, 1.5, 99.0, 50.0, 25.0, 12.5, 75.0, 100.0, 60.0, 0.5])
    with mod.open(uri, "w") as A:
        A[x, y] = {
            "a": np.arange(10, dtype=np.uint16) * 3,
            "s": np.array(["v%d" % i for i in range(10)], dtype=object),
        }
    return uri


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def dense(request, tmp_path_factory):
    return _create_dense(str(tmp_path_factory.mktemp("mi") / "d"), WRITERS[request.param])


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def sparse(request, tmp_path_factory):
    return _create_sparse(str(tmp_path_factory.mktemp("mi") / "s"), WRITERS[request.param])


DENSE_SELECTIONS = [
    np.s_[1:2],
    np.s_[1:1],
    np.s_[2],
    np.s_[2, 3],
    np.s_[:],
    np.s_[:, 2:3],
    np.s_[[1, 3], 2:3],
    np.s_[[1, slice(3, 4)], [1, 2]],
    np.s_[[2, 4]],
    np.s_[[2, 2]],
    np.s_[[slice(1, 2), slice(4, 6)], :],
    np.s_[5:6],
    np.s_[[1, 2, 3], [1, 4]],
]


@pytest.mark.parametrize("sel", DENSE_SELECTIONS, ids=[repr(s) for s in DENSE_SELECTIONS])
def test_dense(dense, sel):
    res = read_both(dense, lambda A: A.multi_index[sel])
    assert list(res.keys()) == ["a", "s"]


def test_dense_values(dense):
    with engine.open(dense) as E:
        r = E.multi_index[[1, 3], 2:3]
        assert r["a"].tolist() == [[1, 2], [7, 8]]
        r = E.multi_index[[1, slice(3, 4)], [1, 2]]
        assert r["a"].tolist() == [[0, 1], [6, 7], [9, 10]]


def test_dense_query_variants(dense):
    read_both(dense, lambda A: A.query(coords=True).multi_index[1:2])
    read_both(dense, lambda A: A.query(dims=["y"]).multi_index[1:2])
    read_both(dense, lambda A: A.query(attrs=["s"], coords=True).multi_index[1:2, 2:4])
    read_both(dense, lambda A: A.query(attrs=["a"]).multi_index[[1, 3], :])
    read_both(dense, lambda A: A.query(order="G").multi_index[1:2, 1:2])
    read_both(dense, lambda A: A.multi_index[1:3], attr="s")


@pytest.mark.tiledb_bug(
    "order='F' multi_index on a dense array reshapes the column-major buffer in "
    "row-major order (the values come out transposed)"
)
def test_dense_multi_index_col_major(dense):
    with engine.open(dense) as E:
        c = E.multi_index[1:2, 1:3]
        f = E.query(order="F").multi_index[1:2, 1:3]
    for k in c:
        np.testing.assert_array_equal(f[k], c[k])


SPARSE_SELECTIONS = [
    np.s_[:],
    np.s_[3],
    np.s_[3:7],
    np.s_[0:0],
    np.s_[[0, 3, 49]],
    np.s_[[slice(0, 3), slice(20, 33)]],
    np.s_[[slice(20, 33), slice(0, 3)]],
    np.s_[:, 0.0:50.0],
    np.s_[:, [0.0, 100.0]],
    np.s_[[3, 12, 21], [slice(0.0, 30.0), 75.0]],
    np.s_[5:6],
    np.s_[49:49, 0.5:0.5],
]


@pytest.mark.parametrize("sel", SPARSE_SELECTIONS, ids=[repr(s) for s in SPARSE_SELECTIONS])
def test_sparse(sparse, sel):
    res = read_both(sparse, lambda A: A.multi_index[sel])
    # multi_index gives the dimensions first, then the attributes
    assert list(res.keys()) == ["x", "y", "a", "s"]


def test_sparse_values(sparse):
    with engine.open(sparse) as E:
        r = E.multi_index[3:7]
        assert sorted(r["x"].tolist()) == [3, 3, 7]
        r = E.multi_index[[3, 12, 21], [slice(0.0, 30.0), 75.0]]
        assert sorted(zip(r["x"].tolist(), r["y"].tolist())) == [(3, 1.5), (12, 25.0), (21, 75.0)]


@pytest.mark.parametrize("order", ["C", "F", "G"])
def test_sparse_orders(sparse, order):
    read_both(sparse, lambda A: A.query(order=order).multi_index[:])
    read_both(sparse, lambda A: A.query(order=order).multi_index[10:40, 20.0:80.0])
    if order == "G":
        # libtiledb: "Multi-range reads are not supported on a global order query"
        with tiledb.open(sparse) as R, pytest.raises(tiledb.TileDBError):
            R.query(order=order).multi_index[[slice(20, 33), slice(0, 3)]]
        with engine.open(sparse) as E, pytest.raises(engine.TileDBError):
            E.query(order=order).multi_index[[slice(20, 33), slice(0, 3)]]
    else:
        read_both(sparse, lambda A: A.query(order=order).multi_index[[slice(20, 33), slice(0, 3)]])


def test_sparse_unordered_as_sets(sparse):
    with tiledb.open(sparse) as R, engine.open(sparse) as E:
        for sel in (np.s_[:], np.s_[[slice(20, 33), slice(0, 3)]]):
            assert_same(
                sort_result(E.query(order="U").multi_index[sel], ["x", "y"]),
                sort_result(R.query(order="U").multi_index[sel], ["x", "y"]),
            )


def test_sparse_query_variants(sparse):
    read_both(sparse, lambda A: A.query(attrs=["s"]).multi_index[0:20])
    read_both(sparse, lambda A: A.query(attrs=["s"], dims=["y"]).multi_index[0:20])
    read_both(sparse, lambda A: A.query(dims=[]).multi_index[0:20])
    read_both(sparse, lambda A: A.query(attrs=[], dims=["x"]).multi_index[0:20])
    read_both(sparse, lambda A: A.query(coords=False).multi_index[0:20])
    read_both(sparse, lambda A: A.query(attrs=["a"], coords=True).multi_index[0:20])
    read_both(sparse, lambda A: A.multi_index[0:20], attr="a")


def test_string_dim(tmp_path, writer):
    uri = str(tmp_path / "str")
    dom = writer.Domain(writer.Dim("k", domain=(None, None), tile=None, dtype="ascii"))
    writer.Array.create(
        uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("v", dtype=np.int32)], sparse=True)
    )
    with writer.open(uri, "w") as A:
        A[np.array(["apple", "b", "banana", "cherry", "d"], dtype=object)] = np.arange(5, dtype=np.int32)
    read_both(uri, lambda A: A.multi_index[:])
    read_both(uri, lambda A: A.multi_index["b":"c"])
    read_both(uri, lambda A: A.multi_index[["apple", "d"]])
    read_both(uri, lambda A: A.multi_index[[slice("a", "b"), "cherry"]])
    read_both(uri, lambda A: A.multi_index[b"banana"])


def test_datetime_dim(tmp_path, writer):
    uri = str(tmp_path / "dt")
    dom = writer.Domain(
        writer.Dim(
            "t",
            domain=(np.datetime64("2000-01-01"), np.datetime64("2030-01-01")),
            tile=np.timedelta64(365, "D"),
            dtype="datetime64[D]",
        )
    )
    writer.Array.create(
        uri, writer.ArraySchema(domain=dom, attrs=[writer.Attr("v", dtype=np.int32)], sparse=True)
    )
    t = np.array(["2001-05-01", "2010-01-01", "2010-01-02", "2029-12-31"], dtype="datetime64[D]")
    with writer.open(uri, "w") as A:
        A[t] = np.arange(4, dtype=np.int32)
    read_both(uri, lambda A: A.multi_index[:])
    read_both(uri, lambda A: A.multi_index[np.datetime64("2010-01-01"):np.datetime64("2010-01-02")])
    read_both(uri, lambda A: A.multi_index[[np.datetime64("2001-05-01"), np.datetime64("2029-12-31")]])


# Dense ranges out of order: tiledb-py 0.36.1 corrupts memory on them
# (A.multi_index[[4, 2]] or [2, [3, 1]] abort with "realloc(): invalid old size"
# or a segmentation fault), so these run against the engine only, with the
# result built from single-range tiledb reads: the ranges come in the order
# asked.
OUT_OF_ORDER = [
    (np.s_[[4, 2]], [np.s_[4]], [np.s_[2]], 0),
    (np.s_[2, [3, 1]], [np.s_[2, 3]], [np.s_[2, 1]], 1),
    (np.s_[[slice(3, 4), 1], 2:3], [np.s_[3:4, 2:3]], [np.s_[1, 2:3]], 0),
]


@pytest.mark.tessera_only
@pytest.mark.parametrize("case", OUT_OF_ORDER, ids=[repr(c[0]) for c in OUT_OF_ORDER])
def test_dense_ranges_out_of_order(dense, case):
    sel, first, second, axis = case
    with tiledb.open(dense) as R:
        a = R.multi_index[first[0]]
        b = R.multi_index[second[0]]
        expected = {k: np.concatenate([a[k], b[k]], axis=axis) for k in a}
    with engine.open(dense) as E:
        got = E.multi_index[sel]
    assert list(got.keys()) == list(expected.keys())
    for k in expected:
        assert_same(got[k], expected[k])
