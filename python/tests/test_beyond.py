"""What the engine offers beyond tiledb-py (tessera_only).

Reads under a memory budget
---------------------------
``A.query(return_incomplete=True, memory_budget=BYTES)[...]`` and
``.multi_index[...]`` return an iterable of partial results.  Each part is an
OrderedDict of 1-D arrays holding the attributes and the dimensions (as
coordinates).  Concatenated in the order they come, the parts equal the full
read with coordinates, flattened:

* dense: ``A.query(coords=True).multi_index[sel]`` (or ``A.query(coords=True)[sel]``
  for ``[...]``) with every array flattened in row-major (C) order;
* sparse: the full read ``A.multi_index[sel]`` / ``A[sel]`` (compared as sets of
  cells for unordered reads, exactly for ``order="G"``).

The order of the keys inside a part is not part of this contract (compared as
sets of keys).  A small budget gives several parts.

Point reads
-----------
``A.read_points({"x": [...], "y": [...]}, attrs=None)`` returns an OrderedDict of
the attributes (all of them, or those of ``attrs``, in schema order) then the
dimensions, 1-D, one entry per point in the order asked (a point asked twice
comes twice).  Dense arrays give the value or the fill value of every point;
sparse arrays leave out points without a cell (and give every cell of a
point).  The values equal per-point reads with tiledb (``A[x, y]``).
"""

import collections

import numpy as np
import pytest

from _helpers import WRITERS, assert_same, engine, tiledb

pytestmark = pytest.mark.tessera_only

BUDGET = 64 * 1024


def _dense(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(1, 200), tile=32, dtype=np.int64),
        mod.Dim("y", domain=(1, 300), tile=64, dtype=np.int64),
    )
    mod.Array.create(
        uri,
        mod.ArraySchema(
            domain=dom,
            attrs=[
                mod.Attr("a", dtype=np.int32),
                mod.Attr("f", dtype=np.float64, nullable=True),
                mod.Attr("s", dtype=str, var=True),
            ],
        ),
    )
    n = 150 * 250
    with mod.open(uri, "w") as A:
        A[1:151, 1:251] = {
            "a": np.arange(n, dtype=np.int32).reshape(150, 250),
            "f": np.where(np.arange(n) % 11 == 0, np.nan, np.arange(n) / 7.0).reshape(150, 250),
            "s": np.array(["s%d" % (i % 97) for i in range(n)], dtype=object).reshape(150, 250),
        }
    return uri


def _sparse(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(0, 9999), tile=100, dtype=np.int64),
        mod.Dim("k", domain=(None, None), tile=None, dtype="ascii"),
    )
    mod.Array.create(
        uri,
        mod.ArraySchema(
            domain=dom,
            attrs=[mod.Attr("v", dtype=np.float32), mod.Attr("t", dtype=str, nullable=True)],
            sparse=True,
            capacity=500,
        ),
    )
    rng = np.random.default_rng(5)
    n = 20000
    flat = rng.choice(10000 * 13, n, replace=False)  # distinct cells
    x = flat // 13
    k = np.array(["k%d" % (i % 13) for i in flat], dtype=object)
    with mod.open(uri, "w", timestamp=1) as A:
        A[x[: n // 2], k[: n // 2]] = {
            "v": rng.random(n // 2).astype(np.float32),
            "t": np.array([None if i % 9 == 0 else "t%d" % i for i in range(n // 2)], dtype=object),
        }
    with mod.open(uri, "w", timestamp=2) as A:
        A[x[n // 2 :], k[n // 2 :]] = {
            "v": rng.random(n - n // 2).astype(np.float32),
            "t": np.array(["u%d" % i for i in range(n - n // 2)], dtype=object),
        }
    return uri


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def dense(request, tmp_path_factory):
    return _dense(str(tmp_path_factory.mktemp("beyond") / "d"), WRITERS[request.param])


@pytest.fixture(scope="module", params=["tiledb", "engine"])
def sparse(request, tmp_path_factory):
    return _sparse(str(tmp_path_factory.mktemp("beyond") / "s"), WRITERS[request.param])


def _flatten(res):
    return collections.OrderedDict((k, v.ravel(order="C")) for k, v in res.items())


def _concat(parts):
    assert len(parts) >= 1
    keys = set(parts[0].keys())
    out = {}
    for p in parts:
        assert isinstance(p, collections.OrderedDict)
        assert set(p.keys()) == keys
        for v in p.values():
            assert isinstance(v, np.ndarray) and v.ndim == 1
    for k in parts[0]:
        vals = [p[k] for p in parts]
        if any(isinstance(v, np.ma.MaskedArray) for v in vals):
            out[k] = np.ma.concatenate(vals)
        else:
            out[k] = np.concatenate(vals)
    return out


def _by_key(res):
    return {k: res[k] for k in sorted(res)}


def _as_set(res, keys):
    order = np.lexsort([np.asarray(res[k]) for k in reversed(keys)])
    return {k: res[k][order] for k in sorted(res)}


DENSE_SELECTIONS = [np.s_[:, :], np.s_[10:120, 5:260], np.s_[[slice(1, 20), slice(100, 140)], 30:90], np.s_[150, :]]


@pytest.mark.parametrize("sel", DENSE_SELECTIONS, ids=repr)
def test_dense_budget_multi_index(dense, sel):
    with tiledb.open(dense) as R:
        expected = _flatten(R.query(coords=True).multi_index[sel])
    with engine.open(dense) as E:
        parts = list(E.query(return_incomplete=True, memory_budget=BUDGET).multi_index[sel])
    got = _concat(parts)
    if len(expected["a"]) > 20000:
        assert len(parts) > 1, "a small memory budget should give several parts"
    assert_same(_by_key(got), _by_key(expected))


@pytest.mark.parametrize("sel", [np.s_[:], np.s_[10:120, 5:260], np.s_[150]], ids=repr)
def test_dense_budget_getitem(dense, sel):
    with tiledb.open(dense) as R:
        expected = _flatten(R.query(coords=True)[sel])
    with engine.open(dense) as E:
        parts = list(E.query(return_incomplete=True, memory_budget=BUDGET)[sel])
    assert_same(_by_key(_concat(parts)), _by_key(expected))


def test_dense_budget_attrs_and_cond(dense):
    with tiledb.open(dense) as R:
        expected = _flatten(R.query(attrs=["s"], coords=True, cond="a > 1000").multi_index[20:80, :])
    with engine.open(dense) as E:
        parts = list(
            E.query(attrs=["s"], cond="a > 1000", return_incomplete=True, memory_budget=BUDGET).multi_index[20:80, :]
        )
    assert len(parts) > 1
    assert_same(_by_key(_concat(parts)), _by_key(expected))


@pytest.mark.parametrize("sel", [np.s_[:], np.s_[1000:5000], np.s_[[slice(0, 100), slice(9000, 9999)], "k1":"k5"]], ids=repr)
def test_sparse_budget(sparse, sel):
    with tiledb.open(sparse) as R:
        expected = R.multi_index[sel]
        expected_g = R.query(order="G").multi_index[sel] if not isinstance(sel[0] if isinstance(sel, tuple) else sel, list) else None
    with engine.open(sparse) as E:
        parts = list(E.query(return_incomplete=True, memory_budget=BUDGET).multi_index[sel])
        got = _concat(parts)
        if len(expected["v"]) > 5000:
            assert len(parts) > 1
        assert_same(_as_set(got, ["x", "k", "v"]), _as_set(expected, ["x", "k", "v"]))
        if expected_g is not None:
            parts = list(E.query(order="G", return_incomplete=True, memory_budget=BUDGET).multi_index[sel])
            assert_same(_by_key(_concat(parts)), _by_key(expected_g))


def test_sparse_budget_getitem(sparse):
    with tiledb.open(sparse) as R:
        expected = R[2000:7000]
    with engine.open(sparse) as E:
        parts = list(E.query(return_incomplete=True, memory_budget=BUDGET)[2000:7000])
    assert len(parts) > 1
    assert_same(_as_set(_concat(parts), ["x", "k", "v"]), _as_set(expected, ["x", "k", "v"]))


def test_budget_time_travel(sparse):
    with tiledb.open(sparse, timestamp=1) as R:
        expected = R.multi_index[:]
    with engine.open(sparse, timestamp=1) as E:
        parts = list(E.query(return_incomplete=True, memory_budget=BUDGET).multi_index[:])
    assert_same(_as_set(_concat(parts), ["x", "k", "v"]), _as_set(expected, ["x", "k", "v"]))


# --------------------------------------------------------------------------
# point reads


def _expected_points(uri, coords, attrs, dense):
    """Per-point reads with tiledb, concatenated (for sparse arrays the empty
    results of absent points too: when no point is found the arrays have the
    types of tiledb's empty results)."""
    names = list(coords)
    n = len(coords[names[0]])
    cols = collections.defaultdict(list)
    with tiledb.open(uri) as R:
        sch = R.schema
        attr_names = attrs if attrs is not None else [sch.attr(i).name for i in range(sch.nattr)]
        for i in range(n):
            pt = tuple(coords[d][i] for d in names)
            if dense:
                r = R.query(attrs=attr_names)[pt]
                for a in attr_names:
                    v = r[a]
                    cols[a].append(np.ma.atleast_1d(v) if isinstance(v, np.ma.MaskedArray) else np.atleast_1d(v))
                for d in names:
                    cols[d].append(np.array([coords[d][i]], dtype=sch.domain.dim(d).dtype))
            else:
                sel = tuple(slice(v, v + 1) if isinstance(v, (int, np.integer)) else v for v in pt)
                r = R.query(attrs=attr_names, coords=True)[sel]
                for k in attr_names + names:
                    cols[k].append(r[k])
    out = collections.OrderedDict()
    for k in attr_names + names:
        vals = cols[k]
        out[k] = np.ma.concatenate(vals) if any(isinstance(v, np.ma.MaskedArray) for v in vals) else np.concatenate(vals)
    return out


def test_dense_points(dense):
    coords = {"x": [1, 150, 7, 7, 200, 3], "y": [1, 250, 9, 9, 300, 120]}
    expected = _expected_points(dense, coords, None, dense=True)
    with engine.open(dense) as E:
        got = E.read_points(coords)
    assert list(got.keys()) == ["a", "f", "s", "x", "y"]
    assert_same(got, expected)
    # (200, 300) was never written: fill values
    assert got["a"][4] == np.iinfo(np.int32).min
    assert got["x"].tolist() == coords["x"]


def test_dense_points_attrs(dense):
    coords = {"x": np.array([5, 6, 5]), "y": np.array([10, 11, 10])}
    expected = _expected_points(dense, coords, ["s"], dense=True)
    with engine.open(dense) as E:
        got = E.read_points(coords, attrs=["s"])
    assert list(got.keys()) == ["s", "x", "y"]
    assert_same(got, expected)


def test_sparse_points(sparse):
    with tiledb.open(sparse) as R:
        full = R[:]
    present = [(int(full["x"][i]), full["k"][i].decode()) for i in (0, 5, 100, len(full["x"]) - 1)]
    pts = present[:2] + [(3, "nope"), present[2], present[0], (9999, "k0") if (9999, b"k0") not in set(zip(full["x"].tolist(), full["k"].tolist())) else (0, "zz"), present[3]]
    coords = {"x": [p[0] for p in pts], "k": [p[1] for p in pts]}
    expected = _expected_points(sparse, coords, None, dense=False)
    with engine.open(sparse) as E:
        got = E.read_points(coords)
    assert list(got.keys()) == ["v", "t", "x", "k"]
    assert_same(got, expected)
    assert len(got["v"]) == 5  # the two absent points are left out
    with engine.open(sparse) as E:
        got = E.read_points(coords, attrs=["t"])
    assert_same(got, _expected_points(sparse, coords, ["t"], dense=False))


def test_points_time_travel(sparse):
    with tiledb.open(sparse, timestamp=1) as R:
        r = R[:]
    coords = {"x": [int(r["x"][0]), int(r["x"][1])], "k": [r["k"][0].decode(), r["k"][1].decode()]}
    with engine.open(sparse, timestamp=1) as E:
        got = E.read_points(coords)
    assert got["x"].tolist() == coords["x"]
    assert got["v"].tolist() == r["v"][:2].tolist()


def test_sparse_points_none_found(sparse):
    coords = {"x": [1, 2], "k": ["absent", "missing"]}
    expected = _expected_points(sparse, coords, None, dense=False)
    with engine.open(sparse) as E:
        got = E.read_points(coords)
    assert_same(got, expected)
    assert all(len(v) == 0 for v in got.values())
