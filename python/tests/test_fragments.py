"""array_fragments(uri): the fragment list of arrays written by either
library, as tiledb and the engine list it."""

import os

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb

LIST_PROPS = [
    "uri",
    "timestamp_range",
    "nonempty_domain",
    "cell_num",
    "sparse",
    "version",
    "has_consolidated_metadata",
    "to_vacuum",
    "unconsolidated_metadata_num",
    "array_schema_name",
]
ITEM_PROPS = [
    "uri",
    "num",
    "timestamp_range",
    "nonempty_domain",
    "cell_num",
    "sparse",
    "version",
    "has_consolidated_metadata",
    "unconsolidated_metadata_num",
    "array_schema_name",
]


def _fragments_same(uri, include_mbrs=False):
    kw = {"include_mbrs": True} if include_mbrs else {}
    ref = tiledb.array_fragments(uri, **kw)
    got = engine.array_fragments(uri, **kw)
    assert len(got) == len(ref)
    for p in LIST_PROPS + (["mbrs"] if include_mbrs else []):
        assert_same(getattr(got, p), getattr(ref, p))
    for i in range(len(ref)):
        for p in ITEM_PROPS + (["mbrs"] if include_mbrs else []):
            assert_same(getattr(got[i], p), getattr(ref[i], p))
    assert [f.uri for f in got] == [f.uri for f in ref]
    return ref


def _sparse(uri, mod):
    dom = mod.Domain(
        mod.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
        mod.Dim("y", domain=(-1.0, 1.0), tile=0.5, dtype=np.float64),
        mod.Dim("s", domain=(None, None), tile=None, dtype="ascii"),
    )
    mod.Array.create(uri, mod.ArraySchema(domain=dom, attrs=[mod.Attr("a", dtype=np.int32)], sparse=True, capacity=2))
    for t, (xs, ys, ss) in enumerate(
        (([1, 5, 9], [0.5, -0.5, 0.0], ["b", "a", "zz"]), ([50, 60], [1.0, -1.0], ["", "q"]), ([7], [0.25], ["m"])),
        start=1,
    ):
        with mod.open(uri, "w", timestamp=t * 10) as A:
            A[np.array(xs), np.array(ys), np.array(ss, dtype=object)] = np.arange(len(xs), dtype=np.int32)
    return uri


def _dense(uri, mod):
    dom = mod.Domain(
        mod.Dim("r", domain=(1, 20), tile=5, dtype=np.uint32),
        mod.Dim("c", domain=(1, 8), tile=4, dtype=np.uint32),
    )
    mod.Array.create(uri, mod.ArraySchema(domain=dom, attrs=[mod.Attr("a", dtype=np.float32)]))
    with mod.open(uri, "w", timestamp=5) as A:
        A[1:6, 1:5] = np.ones((5, 4), dtype=np.float32)
    with mod.open(uri, "w", timestamp=6) as A:
        A[3:12, 2:9] = np.zeros((9, 7), dtype=np.float32)
    return uri


def test_sparse_fragments(tmp_path, writer):
    uri = _sparse(str(tmp_path / "s"), writer)
    ref = _fragments_same(uri)
    assert len(ref) == 3
    assert ref.timestamp_range == ((10, 10), (20, 20), (30, 30))
    assert ref.cell_num == (3, 2, 1)
    # (str here, where A.nonempty_domain() gives bytes for the same dimension)
    assert ref.nonempty_domain[0] == ((1, 9), (-0.5, 0.5), ("a", "zz"))
    _fragments_same(uri, include_mbrs=True)
    names = [os.path.basename(f.uri) for f in engine.array_fragments(uri)]
    assert names == sorted(os.listdir(os.path.join(uri, "__fragments")))
    assert all(n.startswith("__%d_%d_" % (t, t)) and n.endswith("_22") for n, t in zip(names, (10, 20, 30)))


def test_dense_fragments(tmp_path, writer):
    uri = _dense(str(tmp_path / "d"), writer)
    ref = _fragments_same(uri)
    assert ref.sparse == (False, False)
    assert ref.nonempty_domain == (((1, 5), (1, 4)), ((3, 11), (2, 8)))


def test_after_consolidation_and_vacuum(tmp_path, writer):
    uri = _sparse(str(tmp_path / "s"), writer)
    tiledb.consolidate(uri)
    ref = _fragments_same(uri)
    assert len(ref.to_vacuum) == 3
    tiledb.vacuum(uri)
    ref = _fragments_same(uri)
    assert ref.timestamp_range == ((10, 30),)
    uri2 = _dense(str(tmp_path / "d"), writer)
    tiledb.consolidate(uri2, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    _fragments_same(uri2)


def test_with_deletes_and_metadata(tmp_path, writer):
    uri = _sparse(str(tmp_path / "s"), writer)
    with writer.open(uri, "d", timestamp=40) as A:
        A.query(cond="a == 0").submit()
    with writer.open(uri, "w", timestamp=50) as A:
        A.meta["k"] = 1
    ref = _fragments_same(uri)
    assert len(ref) == 3


def test_empty_array(tmp_path):
    uri = str(tmp_path / "e")
    tiledb.from_numpy(uri, np.arange(3), mode="schema_only").close()
    ref = _fragments_same(uri)
    assert len(ref) == 0


def test_fragment_info_iteration(tmp_path):
    uri = _sparse(str(tmp_path / "s"), tiledb)
    got = engine.array_fragments(uri)
    items = list(got)
    assert len(items) == 3
    assert [f.num for f in items] == [0, 1, 2]
    assert items[1].timestamp_range == (20, 20)
    with pytest.raises(IndexError):
        got[3]


def test_not_an_array(tmp_path):
    with pytest.raises(tiledb.TileDBError):
        tiledb.array_fragments(str(tmp_path / "nothing"))
    with pytest.raises(engine.TileDBError):
        engine.array_fragments(str(tmp_path / "nothing"))


def test_mbrs_of_fixed_size_dimensions(tmp_path, writer):
    # only fixed-size dimensions (integers, floats, datetimes): the R-tree levels are read as
    # whole records; many tiles, so that the tree has levels above its leaves
    uri = str(tmp_path / "m")
    dom = writer.Domain(
        writer.Dim("x", domain=(-1000, 1000), tile=100, dtype=np.int64),
        writer.Dim("f", domain=(0.0, 1.0), tile=0.5, dtype=np.float64),
        writer.Dim("t", domain=(np.datetime64(0, "s"), np.datetime64(10**6, "s")), tile=np.timedelta64(1000, "s"), dtype="datetime64[s]"),
    )
    schema = writer.ArraySchema(domain=dom, attrs=[writer.Attr("a", dtype=np.int32)], sparse=True, capacity=4)
    writer.Array.create(uri, schema)
    rng = np.random.default_rng(3)
    n = 300
    with writer.open(uri, "w", timestamp=7) as A:
        A[rng.integers(-1000, 1000, n), rng.random(n), rng.integers(0, 10**6, n).astype("datetime64[s]")] = {
            "a": np.arange(n, dtype=np.int32)
        }
    ref = _fragments_same(uri, include_mbrs=True)
    assert len(ref.mbrs[0]) >= 70
