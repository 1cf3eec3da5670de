"""CurrentDomain and NDRectangle (tiledb-py 0.36's classes): schemas created with a current
domain, current domains expanded by ArraySchemaEvolution (what tiledbsoma's resize does),
each done by the engine and by tiledb-py on twins and read by both."""

import os
import shutil

import numpy as np
import pytest

from _helpers import engine, tiledb


def _domain(mod):
    return mod.Domain(
        mod.Dim("x", domain=(0, 999), tile=10, dtype=np.int64),
        mod.Dim("s", dtype="ascii"),
    )


def _current(mod, dom, x, s):
    nd = mod.NDRectangle(mod.default_ctx() if hasattr(mod, "default_ctx") else None, dom)
    nd.set_range("x", *x)
    nd.set_range(1, *s)
    cd = mod.CurrentDomain(mod.default_ctx() if hasattr(mod, "default_ctx") else None)
    cd.set_ndrectangle(nd)
    return cd


def _create(mod, uri):
    dom = _domain(mod)
    schema = mod.ArraySchema(domain=dom, sparse=True, attrs=[mod.Attr("a", dtype=np.int32)])
    assert schema.current_domain.is_empty
    schema.set_current_domain(_current(mod, dom, (0, 9), ("a", "m")))
    mod.Array.create(uri, schema)
    return uri


def _ranges(mod, uri):
    cd = mod.ArraySchema.load(uri).current_domain
    nd = cd.ndrectangle
    return cd.is_empty, int(cd.type), nd.range("x"), nd.range("s"), nd.range(0)


def test_ndrectangle_and_current_domain_objects():
    dom = _domain(engine)
    cd = engine.CurrentDomain(engine.default_ctx())
    assert cd.is_empty
    with pytest.raises(engine.TileDBError):
        cd.ndrectangle
    with pytest.raises(engine.TileDBError):
        cd.type
    nd = engine.NDRectangle(engine.default_ctx(), dom)
    nd.set_range("x", 0, 9)
    nd.set_range(1, "a", "z")
    assert nd.range(0) == (0, 9) and nd.range("s") == ("a", "z")
    with pytest.raises(engine.TileDBError):
        nd.set_range("x", 9, 2)
    with pytest.raises(engine.TileDBError):
        nd.set_range("nope", 0, 1)
    with pytest.raises(engine.TileDBError):
        nd.set_range(5, 0, 1)
    cd.set_ndrectangle(nd)
    assert not cd.is_empty
    assert int(cd.type) == 0
    assert cd.ndrectangle.range("x") == (0, 9)


@pytest.mark.parametrize("creator", ["engine", "tiledb"])
def test_created_current_domain_reads_in_both(tmp_path, creator):
    mod = engine if creator == "engine" else tiledb
    uri = _create(mod, str(tmp_path / "a"))
    assert _ranges(engine, uri) == _ranges(tiledb, uri) == (False, 0, (0, 9), ("a", "m"), (0, 9))


def test_expand_current_domain_as_libtiledb(tmp_path):
    ours = _create(tiledb, str(tmp_path / "ours"))
    theirs = str(tmp_path / "theirs")
    shutil.copytree(ours, theirs)
    for uri, mod in ((ours, engine), (theirs, tiledb)):
        se = mod.ArraySchemaEvolution()
        se.expand_current_domain(_current(mod, _domain(mod), (0, 99), ("a", "zz")))
        se.array_evolve(uri)
    assert _ranges(tiledb, ours) == _ranges(tiledb, theirs) == (False, 0, (0, 99), ("a", "zz"), (0, 99))
    assert _ranges(engine, ours) == _ranges(engine, theirs)
    assert len(os.listdir(os.path.join(ours, "__schema"))) == len(os.listdir(os.path.join(theirs, "__schema")))
    # the grown current domain takes writes that the old one refused, in both engines' reads
    with engine.open(ours, "w") as W:
        W[np.array([50]), np.array(["q"])] = {"a": np.array([7], dtype=np.int32)}
    with tiledb.open(ours) as R:
        assert R[:]["a"].tolist() == [7]


def test_shrinking_the_current_domain_is_refused(tmp_path):
    uri = _create(tiledb, str(tmp_path / "a"))
    before = sorted(os.listdir(os.path.join(uri, "__schema")))
    for x, s in (((0, 5), ("a", "m")), ((0, 9), ("b", "m")), ((0, 5000), ("a", "m"))):
        se = engine.ArraySchemaEvolution()
        se.expand_current_domain(_current(engine, _domain(engine), x, s))
        with pytest.raises(engine.TileDBError):
            se.array_evolve(uri)
    assert sorted(os.listdir(os.path.join(uri, "__schema"))) == before
    assert _ranges(engine, uri)[2] == (0, 9)


def test_a_current_domain_outside_the_domain_is_refused(tmp_path):
    # libtiledb refuses it when the array is created; the engine may refuse it earlier, when
    # it is set on the schema
    dom = _domain(engine)
    schema = engine.ArraySchema(domain=dom, sparse=True, attrs=[engine.Attr("a", dtype=np.int32)])
    with pytest.raises(engine.TileDBError):
        schema.set_current_domain(_current(engine, dom, (0, 5000), ("a", "b")))
        engine.Array.create(str(tmp_path / "a"), schema)
    assert not os.path.exists(tmp_path / "a" / "__schema") or not os.listdir(tmp_path / "a" / "__schema")
