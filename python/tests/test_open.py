"""tiledb.open and the properties of an open array."""

import time

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb


def make_dense(uri, mod=tiledb):
    dom = mod.Domain(
        mod.Dim("x", domain=(3, 12), tile=5, dtype=np.int32),
        mod.Dim("y", domain=(1, 6), tile=3, dtype=np.int32),
    )
    schema = mod.ArraySchema(
        domain=dom,
        attrs=[mod.Attr("a", dtype=np.int32), mod.Attr("b", dtype=np.float64)],
        sparse=False,
    )
    mod.Array.create(uri, schema)
    for t, v in ((10, 0), (20, 100)):
        with mod.open(uri, "w", timestamp=t) as A:
            A[3:8, 1:5] = {
                "a": np.arange(20, dtype=np.int32).reshape(5, 4) + v,
                "b": np.linspace(0, 1, 20).reshape(5, 4) + v,
            }
    return uri


def make_sparse(uri, mod=tiledb):
    dom = mod.Domain(mod.Dim("x", domain=(1, 10), tile=4, dtype=np.int64))
    schema = mod.ArraySchema(
        domain=dom, attrs=[mod.Attr("a", dtype=np.int32)], sparse=True
    )
    mod.Array.create(uri, schema)
    for t in (10, 20, 30):
        with mod.open(uri, "w", timestamp=t) as A:
            A[[t // 10, t // 10 + 3]] = {"a": np.array([t, t + 1], dtype=np.int32)}
    return uri


@pytest.fixture
def dense_uri(tmp_path):
    return make_dense(str(tmp_path / "dense"))


@pytest.fixture
def sparse_uri(tmp_path):
    return make_sparse(str(tmp_path / "sparse"))


def test_classes(dense_uri, sparse_uri):
    with engine.open(dense_uri) as A:
        assert isinstance(A, engine.DenseArray)
        assert not isinstance(A, engine.SparseArray)
        assert isinstance(A, engine.Array)
    with engine.open(sparse_uri) as A:
        assert isinstance(A, engine.SparseArray)
        assert not isinstance(A, engine.DenseArray)
        assert isinstance(A, engine.Array)


@pytest.mark.parametrize("mode", ["r", "w", "d", "m"])
def test_modes(dense_uri, sparse_uri, mode):
    # opened one after the other: mode 'm' (modify exclusive) cannot be open twice
    for u in (dense_uri, sparse_uri):
        with tiledb.open(u, mode) as R:
            rinfo = (R.mode, R.uri, type(R).__name__, R.isopen)
        with engine.open(u, mode) as E:
            einfo = (E.mode, E.uri, type(E).__name__, E.isopen)
        assert einfo == rinfo
        assert einfo[0] == mode


def test_bad_mode(dense_uri):
    with pytest.raises(ValueError):
        tiledb.open(dense_uri, "x")
    # tiledb-py raises ValueError; the engine may raise TileDBError too
    with pytest.raises((engine.TileDBError, ValueError)):
        engine.open(dense_uri, "x")


def test_properties_dense(dense_uri):
    with tiledb.open(dense_uri) as R, engine.open(dense_uri) as E:
        assert E.uri == R.uri
        assert E.mode == "r"
        assert E.shape == R.shape == (10, 6)
        assert E.ndim == R.ndim == 2
        assert E.nattr == R.nattr == 2
        assert E.schema.sparse is False
        assert E.schema == engine.ArraySchema.load(dense_uri)
        assert repr(E.schema) == repr(R.schema)
        assert_same(E.nonempty_domain(), R.nonempty_domain())
        assert E.nonempty_domain() == ((3, 7), (1, 4))
        assert type(E.nonempty_domain()[0][0]) is type(R.nonempty_domain()[0][0])
        assert E.attr(0).name == "a" and E.attr(1).name == "b"
        assert E.attr("b").dtype == np.float64
        assert repr(E.attr(0)) == repr(R.attr(0))
        assert repr(E.attr("b")) == repr(R.attr("b"))
        assert E.view_attr is None
        assert E.domain.ndim == 2
        # several attributes: no single dtype
        with pytest.raises(NotImplementedError):
            R.dtype
        with pytest.raises(NotImplementedError):
            E.dtype


def test_properties_sparse(sparse_uri):
    with tiledb.open(sparse_uri) as R, engine.open(sparse_uri) as E:
        assert E.shape == R.shape == (10,)
        assert E.ndim == 1
        assert E.nattr == 1
        assert E.dtype == R.dtype == np.dtype("int32")
        assert E.schema.sparse is True
        assert_same(E.nonempty_domain(), R.nonempty_domain())
        assert E.nonempty_domain() == ((1, 6),)
        assert type(E.nonempty_domain()[0][0]) is type(R.nonempty_domain()[0][0])


def test_nonempty_domain_empty_array(tmp_path):
    uri = str(tmp_path / "empty")
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 9), tile=5, dtype=np.int64))
    tiledb.Array.create(
        uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int8)])
    )
    with tiledb.open(uri) as R, engine.open(uri) as E:
        assert R.nonempty_domain() is None
        assert E.nonempty_domain() is None


def test_nonempty_domain_float_and_string_dims(tmp_path):
    uri = str(tmp_path / "fs")
    dom = tiledb.Domain(
        tiledb.Dim("f", domain=(-1.5, 7.5), tile=2.0, dtype=np.float32),
        tiledb.Dim("s", domain=(None, None), tile=None, dtype="ascii"),
    )
    tiledb.Array.create(
        uri,
        tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int8)], sparse=True),
    )
    with tiledb.open(uri, "w") as A:
        A[np.array([0.25, 3.5], dtype=np.float32), np.array(["bb", "a"], dtype="S")] = {
            "a": np.array([1, 2], dtype=np.int8)
        }
    ned = read_ned = None
    with tiledb.open(uri) as R, engine.open(uri) as E:
        read_ned = R.nonempty_domain()
        ned = E.nonempty_domain()
    assert_same(ned, read_ned)


def test_context_manager_and_close(dense_uri):
    with engine.open(dense_uri) as A:
        assert A.isopen
    assert not A.isopen
    A = engine.open(dense_uri)
    assert A.isopen
    A.close()
    assert not A.isopen
    with pytest.raises(engine.TileDBError):
        A[:]


def test_reopen(tmp_path):
    uri = make_sparse(str(tmp_path / "s"))
    with engine.open(uri) as E:
        before = E[:]
        with tiledb.open(uri, "w", timestamp=int(time.time() * 1000) + 10) as W:
            W[[9]] = {"a": np.array([99], dtype=np.int32)}
        assert_same(E[:], before)
        time.sleep(0.02)
        E.reopen()
        after = E[:]
    with tiledb.open(uri) as R:
        assert_same(after, R[:])
    assert 9 in after["x"]


def test_reopen_keeps_array_usable_at_timestamp(sparse_uri):
    # tiledb-py's reopen() of an array opened at a timestamp moves it to "now"
    # (the timestamp is not kept).  Compare with tiledb itself.
    with tiledb.open(sparse_uri, timestamp=20) as R, engine.open(sparse_uri, timestamp=20) as E:
        assert_same(E[:], R[:])
        R.reopen()
        E.reopen()
        assert_same(E[:], R[:])
        assert E.timestamp_range[0] == R.timestamp_range[0]


def test_timestamp_int(sparse_uri):
    for t in (5, 10, 20, 25, 30):
        with tiledb.open(sparse_uri, timestamp=t) as R, engine.open(sparse_uri, timestamp=t) as E:
            assert E.timestamp_range == R.timestamp_range == (0, t)
            assert_same(E[:], R[:])


def test_timestamp_tuple(sparse_uri):
    for ts in ((15, 25), (10, 10), (0, 30), (21, 29), (None, 25)):
        with tiledb.open(sparse_uri, timestamp=ts) as R, engine.open(sparse_uri, timestamp=ts) as E:
            assert E.timestamp_range == R.timestamp_range
            assert_same(E[:], R[:])


def test_timestamp_range_default_is_now(sparse_uri):
    before = int(time.time() * 1000)
    with engine.open(sparse_uri) as E:
        t0, t1 = E.timestamp_range
    after = int(time.time() * 1000)
    assert t0 == 0
    assert before - 5 <= t1 <= after + 5
    assert isinstance(t1, int)


def test_write_mode_timestamp_range(sparse_uri):
    with tiledb.open(sparse_uri, "w", timestamp=40) as R, engine.open(sparse_uri, "w", timestamp=40) as E:
        assert E.timestamp_range == R.timestamp_range == (0, 40)


def test_dense_timestamps(dense_uri):
    for t in (10, 15, 20, None):
        kw = {} if t is None else {"timestamp": t}
        with tiledb.open(dense_uri, **kw) as R, engine.open(dense_uri, **kw) as E:
            assert_same(E[:], R[:])
    with tiledb.open(dense_uri, timestamp=10) as R:
        assert R[3, 1]["a"] == 0
    with engine.open(dense_uri, timestamp=(11, 20)) as E, tiledb.open(dense_uri, timestamp=(11, 20)) as R:
        assert_same(E[:], R[:])


def test_attr_view(dense_uri):
    with tiledb.open(dense_uri, attr="b") as R, engine.open(dense_uri, attr="b") as E:
        assert E.view_attr == R.view_attr == "b"
        assert_same(E[3:6, 2:4], R[3:6, 2:4])
        assert isinstance(E[:], np.ndarray)
        assert_same(E[:], R[:])
        assert_same(E[4], R[4])


def test_config_and_ctx(dense_uri):
    cfg = {"sm.memory_budget": "1000000", "sm.tile_cache_size": "0"}
    with tiledb.open(dense_uri) as R:
        expected = R[:]
    with engine.open(dense_uri, config=cfg) as E:
        assert_same(E[:], expected)
    with engine.open(dense_uri, ctx=engine.Ctx(cfg)) as E:
        assert_same(E[:], expected)
    with engine.open(dense_uri, ctx=engine.Ctx(engine.Config(cfg))) as E:
        assert_same(E[:], expected)
    with engine.open(dense_uri, ctx=engine.Ctx()) as E:
        assert_same(E[:], expected)


def test_config_object():
    cfg = engine.Config({"sm.memory_budget": "12345"})
    assert cfg["sm.memory_budget"] == "12345"
    cfg["sm.tile_cache_size"] = "7"
    assert cfg["sm.tile_cache_size"] == "7"
    assert "sm.memory_budget" in dict(cfg.items())
    ctx = engine.Ctx(cfg)
    assert ctx.config()["sm.memory_budget"] == "12345"
    ref = tiledb.Config({"sm.memory_budget": "12345"})
    assert ref["sm.memory_budget"] == cfg["sm.memory_budget"]


def test_array_constructors(dense_uri, sparse_uri):
    with engine.DenseArray(dense_uri) as E, tiledb.DenseArray(dense_uri) as R:
        assert_same(E[:], R[:])
    with engine.SparseArray(sparse_uri) as E, tiledb.SparseArray(sparse_uri) as R:
        assert_same(E[:], R[:])


def test_open_missing_array(tmp_path):
    with pytest.raises(tiledb.TileDBError):
        tiledb.open(str(tmp_path / "nope"))
    with pytest.raises(engine.TileDBError):
        engine.open(str(tmp_path / "nope"))


def test_repr(dense_uri, sparse_uri):
    with tiledb.open(dense_uri) as R, engine.open(dense_uri) as E:
        assert repr(E) == repr(R)
    with tiledb.open(sparse_uri) as R, engine.open(sparse_uri) as E:
        assert repr(E) == repr(R)


def test_array_exists_and_object_type(dense_uri, sparse_uri, tmp_path):
    assert engine.array_exists(dense_uri)
    assert engine.array_exists(sparse_uri)
    assert engine.array_exists(dense_uri, isdense=True)
    assert not engine.array_exists(dense_uri, issparse=True)
    assert engine.array_exists(sparse_uri, issparse=True)
    assert not engine.array_exists(str(tmp_path / "nothing"))
    assert engine.object_type(dense_uri) == tiledb.object_type(dense_uri) == "array"
    assert engine.object_type(str(tmp_path / "nothing")) is None
    assert tiledb.object_type(str(tmp_path / "nothing")) is None


@pytest.mark.tiledb_bug(
    "repr of a closed SparseArray is the literal 'SparseArray(uri={self.uri}, "
    "mode=closed)' (the f-string prefix is missing)"
)
def test_repr_closed(sparse_uri, dense_uri):
    for u in (sparse_uri, dense_uri):
        A = engine.open(u)
        A.close()
        assert u in repr(A) and "closed" in repr(A)
