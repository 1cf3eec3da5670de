"""Schema evolution and the array lifecycle from Python (tiledb-py's ArraySchemaEvolution,
Array.delete_array, Array.delete_fragments, consolidate(fragment_uris=),
Array.upgrade_version, Group.delete_group): each done by the engine on one copy and by
tiledb-py on a twin, then both read by both."""

import os
import shutil
import time

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb

pytestmark = pytest.mark.tessera_only

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "..", "..", "testdata", "old", "tiledb-0.19.1", "dense")


def _create(uri):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    colors = tiledb.Enumeration("colors", False, ["red", "green"])
    schema = tiledb.ArraySchema(
        domain=dom, sparse=True, enums=[colors],
        attrs=[tiledb.Attr("v", dtype=np.float64), tiledb.Attr("c", dtype=np.int8, enum_label="colors"), tiledb.Attr("old", dtype=np.int32)],
    )
    tiledb.Array.create(uri, schema)
    for t in (1, 2, 3):
        with tiledb.open(uri, "w", timestamp=t) as A:
            x = np.arange(t * 10, t * 10 + 5)
            A[x] = {"v": x / 2.0, "c": np.array([0, 1, 0, 1, 0], dtype=np.int8), "old": x.astype(np.int32)}
    return uri


def _twins(tmp_path):
    a = _create(str(tmp_path / "engine"))
    b = str(tmp_path / "tiledb")
    shutil.copytree(a, b)
    return a, b


def _reads(uri):
    with tiledb.open(uri) as R, engine.open(uri) as E:
        assert_same(E[:], R[:])
        return R[:], repr(R.schema)


def _evolve(mod, uri, ts):
    se = mod.ArraySchemaEvolution()
    se.add_attribute(mod.Attr("new", dtype=np.float32, fill=1.5))
    se.drop_attribute("old")
    with mod.open(uri) as A:
        extended = A.enum("colors").extend(["blue"])
    se.extend_enumeration(extended)
    se.add_enumeration(mod.Enumeration("sizes", True, np.array([1, 5, 10], dtype=np.int32)))
    se.timestamp(ts)
    se.array_evolve(uri)


def test_schema_evolution_as_libtiledb(tmp_path):
    ours, theirs = _twins(tmp_path)
    # after the schema's creation (which has the time it was created at)
    ts = int(time.time() * 1000) + 1
    _evolve(engine, ours, ts)
    _evolve(tiledb, theirs, ts)
    got, got_schema = _reads(ours)
    want, want_schema = _reads(theirs)
    assert got_schema == want_schema
    assert_same(got, want)
    # old fragments lack the new attribute: its fill value
    assert got["new"].tolist() == [1.5] * 15
    with tiledb.open(ours) as R:
        assert list(R.enum("colors").values()) == ["red", "green", "blue"]
    # the write after the evolution uses the new schema, in both engines' reads
    with engine.open(ours, "w", timestamp=ts + 1) as W:
        W[np.array([90])] = {"v": np.array([9.0]), "c": np.array([2], dtype=np.int8), "new": np.array([7.0], dtype=np.float32)}
    with tiledb.open(ours) as R:
        assert R[90:91]["c"].tolist() == ["blue"]


def test_bad_evolutions_leave_the_array_unchanged(tmp_path):
    uri = _create(str(tmp_path / "a"))
    before = sorted(os.listdir(os.path.join(uri, "__schema")))
    for change in (
        lambda se: se.drop_attribute("nope"),
        lambda se: se.add_attribute(engine.Attr("v", dtype=np.int8)),
        lambda se: se.drop_attribute("x"),
        lambda se: se.drop_enumeration("colors"),  # still used by c
    ):
        se = engine.ArraySchemaEvolution()
        change(se)
        with pytest.raises(engine.TileDBError):
            se.array_evolve(uri)
    assert sorted(os.listdir(os.path.join(uri, "__schema"))) == before


def test_delete_fragments_by_range_and_by_name(tmp_path):
    ours, theirs = _twins(tmp_path)
    engine.Array.delete_fragments(ours, 2, 2)
    tiledb.Array.delete_fragments(theirs, 2, 2)
    assert len(tiledb.array_fragments(ours)) == len(tiledb.array_fragments(theirs)) == 2
    assert_same(_reads(ours)[0], _reads(theirs)[0])
    first = tiledb.array_fragments(ours)[0].uri
    engine.Array.delete_fragments(ours, [os.path.basename(first)])
    assert len(tiledb.array_fragments(ours)) == 1
    assert _reads(ours)[0]["x"].tolist() == list(range(30, 35))


def test_consolidate_fragment_list(tmp_path):
    ours, theirs = _twins(tmp_path)
    names = [os.path.basename(f.uri) for f in tiledb.array_fragments(ours)][:2]
    engine.consolidate(ours, fragment_uris=names)
    tiledb.consolidate(theirs, fragment_uris=names)
    assert len(tiledb.array_fragments(ours)) == len(tiledb.array_fragments(theirs))
    assert_same(_reads(ours)[0], _reads(theirs)[0])


def test_delete_array(tmp_path):
    uri = _create(str(tmp_path / "a"))
    engine.Array.delete_array(uri)
    assert tiledb.object_type(uri) is None
    with pytest.raises(engine.TileDBError):
        engine.Array.delete_array(uri)


@pytest.mark.skipif(not os.path.isdir(OLD), reason="the old-format fixtures are not there")
def test_upgrade_version(tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(OLD, ours)
    shutil.copytree(OLD, theirs)
    with engine.open(ours) as E:
        E.upgrade_version()
    with tiledb.open(theirs) as R:
        R.upgrade_version()
    assert tiledb.ArraySchema.load(ours).version == tiledb.ArraySchema.load(theirs).version
    assert_same(_reads(ours)[0], _reads(theirs)[0])


def test_delete_group(tmp_path):
    g = str(tmp_path / "g")
    tiledb.Group.create(g)
    a = _create(os.path.join(g, "a"))
    with tiledb.Group(g, "w") as G:
        G.add("a", name="a", relative=True)
    engine.Group.delete_group(g, recursive=True)
    assert tiledb.object_type(g) is None and tiledb.object_type(a) is None
