"""Bad input.  tiledb-py raises TileDBError (or a subclass) for most of
these, but IndexError, ValueError, KeyError or TypeError for some; where it
raises something else the engine may raise that class or TileDBError.  Every
case also checks that tiledb itself raises what the table says, and after a
failed write that no fragment was added."""

import os

import numpy as np
import pytest

from _helpers import engine, fragment_count, tiledb

TDB = "TileDBError"  # placeholder: the module's own TileDBError


def _create(root):
    du = os.path.join(root, "dense")
    su = os.path.join(root, "sparse")
    tiledb.Array.create(
        du,
        tiledb.ArraySchema(
            domain=tiledb.Domain(
                tiledb.Dim("x", domain=(3, 12), tile=5, dtype=np.int32),
                tiledb.Dim("y", domain=(1, 6), tile=3, dtype=np.int32),
            ),
            attrs=[tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)],
        ),
    )
    tiledb.Array.create(
        su,
        tiledb.ArraySchema(
            domain=tiledb.Domain(
                tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
                tiledb.Dim("f", domain=(0.0, 1.0), tile=0.5, dtype=np.float64),
            ),
            attrs=[tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str)],
            sparse=True,
        ),
    )
    with tiledb.open(du, "w") as A:
        A[:] = {"a": np.zeros((10, 6), dtype=np.int32), "s": np.full((10, 6), "x", dtype=object)}
    with tiledb.open(su, "w") as A:
        A[[1, 2], [0.5, 0.5]] = {"a": np.array([1, 2], dtype=np.int32), "s": np.array(["a", "b"], dtype=object)}
    return {"dense": du, "sparse": su}


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    return _create(str(tmp_path_factory.mktemp("errors")))


def _w(sel, val):
    def f(A):
        A[sel] = val

    return f


def _s(n):
    return np.full(n, "x", dtype=object)


# (id, array, mode, action, what tiledb raises)
CASES = [
    # ---- writes
    ("dense write str to int", "dense", "w",
     _w(np.s_[3:5, 1:3], {"a": np.array([["a", "b"], ["c", "d"]]), "s": _s((2, 2))}), ValueError),
    ("dense write wrong shape (dict)", "dense", "w",
     _w(np.s_[3:5, 1:3], {"a": np.zeros((3, 2), dtype=np.int32), "s": _s((2, 2))}), TDB),
    ("dense write wrong shape (one attr)", "dense", "w", _w(np.s_[3:5, 1:3], np.zeros((3, 2), dtype=np.int32)), ValueError),
    ("dense write missing attr", "dense", "w", _w(np.s_[3:5, 1:3], {"a": np.zeros((2, 2), dtype=np.int32)}), KeyError),
    ("dense write past the domain", "dense", "w",
     _w(np.s_[10:15, 1:3], {"a": np.zeros((5, 2), dtype=np.int32), "s": _s((5, 2))}), TDB),
    ("dense write below the domain", "dense", "w",
     _w(np.s_[0:4, 1:3], {"a": np.zeros((4, 2), dtype=np.int32), "s": _s((4, 2))}), IndexError),
    ("dense write plain array, two attrs", "dense", "w", _w(np.s_[3:5, 1:3], np.zeros((2, 2), dtype=np.int32)), ValueError),
    ("sparse write str to int", "sparse", "w",
     _w(np.s_[[1, 2], [0.5, 0.5]], {"a": np.array(["a", "b"]), "s": _s(2)}), ValueError),
    ("sparse write value length", "sparse", "w",
     _w(np.s_[[1, 2], [0.5, 0.5]], {"a": np.array([1, 2, 3], dtype=np.int32), "s": _s(2)}), ValueError),
    ("sparse write coordinate length", "sparse", "w",
     _w(np.s_[[1, 2, 3], [0.5, 0.5]], {"a": np.array([1, 2], dtype=np.int32), "s": _s(2)}), IndexError),
    ("sparse write out of domain", "sparse", "w",
     _w(np.s_[[1, 200], [0.5, 0.5]], {"a": np.array([1, 2], dtype=np.int32), "s": _s(2)}), TDB),
    ("sparse write float out of domain", "sparse", "w",
     _w(np.s_[[1, 2], [0.5, 1.5]], {"a": np.array([1, 2], dtype=np.int32), "s": _s(2)}), TDB),
    ("sparse write missing attr", "sparse", "w", _w(np.s_[[1, 2], [0.5, 0.5]], {"a": np.array([1, 2], dtype=np.int32)}), KeyError),
    ("sparse write unknown attr", "sparse", "w",
     _w(np.s_[[1, 2], [0.5, 0.5]], {"a": np.array([1, 2], dtype=np.int32), "s": _s(2), "zz": np.array([1, 2])}), TDB),
    ("sparse write too few coordinates", "sparse", "w", _w(np.s_[[1, 2]], {"a": np.array([1, 2], dtype=np.int32), "s": _s(2)}), IndexError),
    ("sparse write plain array, two attrs", "sparse", "w", _w(np.s_[[1, 2], [0.5, 0.5]], np.array([1, 2], dtype=np.int32)), ValueError),
    ("write in read mode (sparse)", "sparse", "r", _w(np.s_[[1, 2], [0.5, 0.5]], {"a": np.array([1, 2], dtype=np.int32), "s": _s(2)}), TDB),
    ("write in read mode (dense)", "dense", "r", _w(np.s_[3:5, 1:3], {"a": np.zeros((2, 2), dtype=np.int32), "s": _s((2, 2))}), TDB),
    # ---- reads
    ("dense slice start below the domain", "dense", "r", lambda A: A[0:5], IndexError),
    ("dense scalar past the domain", "dense", "r", lambda A: A[13], TDB),
    ("dense scalar below the domain", "dense", "r", lambda A: A[2], IndexError),
    ("dense too many indices", "dense", "r", lambda A: A[3, 1, 1], IndexError),
    ("dense float index", "dense", "r", lambda A: A[3.5], IndexError),
    ("dense str index", "dense", "r", lambda A: A["a"], IndexError),
    ("dense empty slice", "dense", "r", lambda A: A[5:5], TDB),
    ("dense reversed slice", "dense", "r", lambda A: A[7:5], TDB),
    ("dense two ellipses", "dense", "r", lambda A: A[..., ...], IndexError),
    ("dense multi_index below the domain", "dense", "r", lambda A: A.multi_index[0:5], TDB),
    ("dense multi_index past the domain", "dense", "r", lambda A: A.multi_index[5:100], TDB),
    ("sparse slice past the domain", "sparse", "r", lambda A: A[200:300], TDB),
    ("sparse step", "sparse", "r", lambda A: A[0:10:2], IndexError),
    ("sparse multi_index past the domain", "sparse", "r", lambda A: A.multi_index[200:300], TDB),
    ("sparse multi_index negative", "sparse", "r", lambda A: A.multi_index[-5:3], TDB),
    ("sparse multi_index float past the domain", "sparse", "r", lambda A: A.multi_index[:, 0.5:2.0], TDB),
    ("sparse df past the domain", "sparse", "r", lambda A: A.df[200:300], TDB),
    ("sparse empty int range", "sparse", "r", lambda A: A[50:50], TDB),
    ("unknown attribute (sparse query)", "sparse", "r", lambda A: A.query(attrs=["zz"])[:], TDB),
    ("unknown attribute (dense query)", "dense", "r", lambda A: A.query(attrs=["zz"])[:], TDB),
    ("unknown dimension (query dims)", "sparse", "r", lambda A: A.query(dims=["zz"])[:], TDB),
    ("unknown attribute (multi_index)", "sparse", "r", lambda A: A.query(attrs=["zz"]).multi_index[:], TDB),
    ("unknown attribute (df)", "sparse", "r", lambda A: A.query(attrs=["zz"]).df[:], TDB),
    ("A.attr unknown name", "sparse", "r", lambda A: A.attr("zz"), TDB),
    ("A.attr index out of range", "sparse", "r", lambda A: A.attr(5), TDB),
    ("schema.attr unknown", "sparse", "r", lambda A: A.schema.attr("zz"), TDB),
    ("domain.dim unknown", "sparse", "r", lambda A: A.schema.domain.dim("zz"), TDB),
    ("agg unknown attribute", "sparse", "r", lambda A: A.query().agg({"zz": "sum"})[:], TDB),
    ("agg unknown operation", "sparse", "r", lambda A: A.query().agg({"a": "median"})[:], TDB),
    ("enum unknown", "sparse", "r", lambda A: A.enum("zz"), TDB),
    ("read in write mode (sparse)", "sparse", "w", lambda A: A[:], TDB),
    ("read in write mode (dense)", "dense", "w", lambda A: A[:], TDB),
    ("read in delete mode", "sparse", "d", lambda A: A[:], TDB),
    ("metadata read in write mode", "sparse", "w", lambda A: A.meta["x"], TDB),
    ("nonempty_domain in write mode", "sparse", "w", lambda A: A.nonempty_domain(), TDB),
    ("df in write mode", "sparse", "w", lambda A: A.df[:], ValueError),
    ("multi_index in write mode", "sparse", "w", lambda A: A.multi_index[:], ValueError),
    ("query condition not a str", "sparse", "r", lambda A: A.query(cond=5)[:], TypeError),
]

BAD_CONDITIONS = [
    "a >",
    "zz > 1",
    "a > 'x'",
    "s > 1",
    "a > 0 & s == 'b'",
    "a",
    "1",
    "a = 1",
    "a is None",
    "foo(a) > 1",
    "attr('zz') > 1",
    "dim('a') > 1",
    "a in 5",
    "a in []",
    "f == 'x'",
    "a > 1 and",
    "x > 'a'",
    "a.b > 1",
    "a > b",
]


def _expected(mod, cls):
    return mod.TileDBError if cls == TDB else cls


def _check(uri, mode, action, cls):
    before = fragment_count(uri)
    with pytest.raises(_expected(tiledb, cls)):
        with tiledb.open(uri, mode) as A:
            action(A)
    allowed = engine.TileDBError if cls == TDB else (engine.TileDBError, cls)
    with pytest.raises(allowed):
        with engine.open(uri, mode) as A:
            action(A)
    assert fragment_count(uri) == before, "a failed operation left a fragment"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(arrays, case):
    _, which, mode, action, cls = case
    _check(arrays[which], mode, action, cls)


@pytest.mark.parametrize("cond", BAD_CONDITIONS)
def test_bad_condition(arrays, cond):
    _check(arrays["sparse"], "r", lambda A: A.query(cond=cond)[:], TDB)
    _check(arrays["sparse"], "r", lambda A: A.query(cond=cond).multi_index[:], TDB)


def test_condition_on_dense_dimension(arrays):
    _check(arrays["dense"], "r", lambda A: A.query(cond="x > 3")[:], TDB)


def test_not_an_array(tmp_path, arrays):
    g = str(tmp_path / "g")
    tiledb.Group.create(g)
    f = str(tmp_path / "file.txt")
    with open(f, "w") as fh:
        fh.write("hello")
    for p in (str(tmp_path / "nope"), str(tmp_path), f, g):
        with pytest.raises(tiledb.TileDBError):
            tiledb.open(p)
        with pytest.raises(engine.TileDBError):
            engine.open(p)
        with pytest.raises(engine.TileDBError):
            engine.ArraySchema.load(p)
        with pytest.raises(engine.TileDBError):
            engine.DenseArray(p)


def test_wrong_array_class(arrays):
    # tiledb-py raises ValueError here
    with pytest.raises(ValueError):
        tiledb.DenseArray(arrays["sparse"])
    with pytest.raises((engine.TileDBError, ValueError)):
        engine.DenseArray(arrays["sparse"])
    with pytest.raises((engine.TileDBError, ValueError)):
        engine.SparseArray(arrays["dense"])


def test_bad_open_arguments(arrays):
    # tiledb-py: TypeError for a bad timestamp, KeyError for an unknown attr=
    with pytest.raises(TypeError):
        tiledb.open(arrays["dense"], timestamp="x")
    with pytest.raises((engine.TileDBError, TypeError)):
        engine.open(arrays["dense"], timestamp="x")
    with pytest.raises(KeyError):
        tiledb.open(arrays["dense"], attr="zz")
    with pytest.raises((engine.TileDBError, KeyError)):
        engine.open(arrays["dense"], attr="zz")


def test_closed_array(arrays):
    A = engine.open(arrays["sparse"])
    A.close()
    for fn in (lambda: A[:], lambda: A.multi_index[:], lambda: A.df[:], lambda: A.query()[:]):
        with pytest.raises(engine.TileDBError):
            fn()


def test_bad_schemas():
    cases = [
        # dense arrays need integer or datetime dimensions of one type
        lambda m: m.ArraySchema(domain=m.Domain(m.Dim("x", domain=(0.0, 1.0), tile=0.5, dtype=np.float64)), attrs=[m.Attr("a", dtype=np.int8)]),
        lambda m: m.ArraySchema(
            domain=m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32), m.Dim("y", domain=(0, 9), tile=5, dtype=np.int64)),
            attrs=[m.Attr("a", dtype=np.int8)],
        ),
        # duplicate names
        lambda m: m.ArraySchema(domain=m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32)), attrs=[m.Attr("a", dtype=np.int8), m.Attr("a", dtype=np.int8)]),
        lambda m: m.ArraySchema(domain=m.Domain(m.Dim("a", domain=(0, 9), tile=5, dtype=np.int32)), attrs=[m.Attr("a", dtype=np.int8)]),
        # tile larger than the domain, reversed domain
        lambda m: m.Dim("x", domain=(0, 9), tile=20, dtype=np.int32),
        lambda m: m.Dim("x", domain=(9, 0), tile=2, dtype=np.int32),
        # allows_duplicates on a dense array
        lambda m: m.ArraySchema(domain=m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32)), attrs=[m.Attr("a", dtype=np.int8)], allows_duplicates=True),
        # an attribute referring to an unknown enumeration
        lambda m: m.ArraySchema(domain=m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32)), attrs=[m.Attr("a", dtype=np.int8, enum_label="nope")]),
    ]
    for mk in cases:
        with pytest.raises(tiledb.TileDBError):
            mk(tiledb)
        with pytest.raises(engine.TileDBError):
            mk(engine)


def test_unsupported_dtypes():
    # tiledb-py raises TypeError for dtypes it cannot map
    for dt in (np.float16, np.dtype("2i4"), np.dtype([("a", "i4"), ("b", "f8")])):
        with pytest.raises(TypeError):
            tiledb.Attr("a", dtype=dt)
        with pytest.raises((engine.TileDBError, TypeError)):
            engine.Attr("a", dtype=dt)
    with pytest.raises(TypeError):
        tiledb.Dim("s", domain=(None, None), tile=None, dtype=str)
    with pytest.raises((engine.TileDBError, TypeError)):
        engine.Dim("s", domain=(None, None), tile=None, dtype=str)


def test_partial_write_leaves_no_fragment(tmp_path):
    """A write that fails in the middle (second attribute cannot be converted)
    adds nothing."""
    uri = str(tmp_path / "p")
    tiledb.Array.create(
        uri,
        tiledb.ArraySchema(
            domain=tiledb.Domain(tiledb.Dim("x", domain=(0, 9), tile=5, dtype=np.int64)),
            attrs=[tiledb.Attr("a", dtype=np.int32), tiledb.Attr("b", dtype=np.float64)],
            sparse=True,
        ),
    )
    with engine.open(uri, "w") as A:
        with pytest.raises((engine.TileDBError, ValueError)):
            A[np.array([1, 2])] = {"a": np.array([1, 2], dtype=np.int32), "b": np.array(["x", "y"])}
    assert fragment_count(uri) == 0
    with tiledb.open(uri) as R:
        assert len(R[:]["a"]) == 0
