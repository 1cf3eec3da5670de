"""Groups: create, add/remove members (named, relative), iterate, [], len,
in, metadata, object_type, ls/walk; in both directions."""

import os

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb


def _members(G):
    # libtiledb keeps group members in a hash map: their order is not defined
    # (it changes with the uris); compare them sorted
    return sorted(((m.uri, m.type.__name__, m.name) for m in G), key=repr)


def _describe(uri):
    """What tiledb sees in a group."""
    with tiledb.Group(uri) as G:
        return {
            "len": len(G),
            "members": _members(G),
            "repr": sorted(repr(G).splitlines()),
            "meta": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in G.meta.items()},
        }


def _build(mod, root):
    g = os.path.join(root, "g")
    mod.Group.create(g)
    mod.from_numpy(os.path.join(g, "a1"), np.arange(3)).close()
    mod.from_numpy(os.path.join(root, "a2"), np.arange(4.0)).close()
    mod.Group.create(os.path.join(g, "sub"))
    mod.from_numpy(os.path.join(g, "sub", "deep"), np.arange(2)).close()
    with mod.Group(os.path.join(g, "sub"), "w") as S:
        S.add("deep", name="deep", relative=True)
    with mod.Group(g, "w") as G:
        G.add("a1", name="first", relative=True)
        G.add(os.path.join(root, "a2"), name="second")
        G.add(os.path.join(g, "sub"), name="sub")
        G.add(os.path.join(root, "a2"))
        G.meta["k"] = 1
        G.meta["s"] = "text"
        G.meta["arr"] = np.arange(3, dtype=np.int16)
    return g


@pytest.mark.parametrize("direction", ["tiledb->engine", "engine->tiledb"])
def test_group_contents(tmp_path, direction):
    wmod, rmod = (tiledb, engine) if direction == "tiledb->engine" else (engine, tiledb)
    os.makedirs(tmp_path / "ref")
    os.makedirs(tmp_path / "got")
    ref = _build(tiledb, str(tmp_path / "ref"))
    g = _build(wmod, str(tmp_path / "got"))
    want = _describe(ref)
    got = _describe(g)
    # the uris differ by the folder; compare relative to it
    strip = lambda d, root: {**d, "members": [(u.replace(root, "ROOT"), t, n) for u, t, n in d["members"]], "repr": d["repr"]}
    assert_same(strip(got, str(tmp_path / "got")), strip(want, str(tmp_path / "ref")))
    with rmod.Group(g) as G, tiledb.Group(g) as R:
        assert len(G) == len(R) == 4
        assert _members(G) == _members(R)
        assert sorted(m.type.__name__ for m in G) == ["Array", "Array", "Array", "Group"]
        assert G.uri == R.uri
        assert G.isopen
        assert "first" in G and "sub" in G and "zz" not in G
        assert G["first"].uri == R["first"].uri
        assert G["first"].name == "first"
        assert sorted((G[i].uri, repr(G[i].name)) for i in range(4)) == sorted((R[i].uri, repr(R[i].name)) for i in range(4))
        assert G.is_relative("first") and not G.is_relative("second")
        assert sorted(repr(G).splitlines()) == sorted(repr(R).splitlines())
        assert G["sub"].type is rmod.Group
        assert G["first"].type is rmod.Array
        assert_same(
            {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in G.meta.items()},
            {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in R.meta.items()},
        )
        with pytest.raises(rmod.TileDBError):
            G["zz"]
        with pytest.raises(rmod.TileDBError):
            G[10]
    assert not G.isopen


def test_remove_members(tmp_path):
    outs = []
    for i, mod in enumerate((tiledb, engine)):
        root = str(tmp_path / str(i))
        os.makedirs(root)
        g = _build(mod, root)
        with mod.Group(g, "w") as G:
            G.remove("first")  # by name
            G.remove(os.path.join(root, "a2"))  # by uri: the unnamed member
        d = _describe(g)
        outs.append(sorted([(u.replace(root, "ROOT"), t, n) for u, t, n in d["members"]], key=repr))
        with mod.Group(g, "w") as G:
            G.remove("sub")
        assert len(_describe(g)["members"]) == 1
    assert outs[1] == outs[0]
    assert sorted(n for _, _, n in outs[0]) == ["second", "sub"]


def test_object_type_and_exists(tmp_path):
    g = _build(tiledb, str(tmp_path))
    for p in (g, os.path.join(g, "a1"), os.path.join(g, "sub"), str(tmp_path / "nothing"), str(tmp_path)):
        assert engine.object_type(p) == tiledb.object_type(p)
    assert engine.object_type(g) == "group"
    assert engine.array_exists(os.path.join(g, "a1"))
    assert not engine.array_exists(g)


def test_ls_and_walk(tmp_path):
    g = _build(tiledb, str(tmp_path))

    ref, got = [], []
    tiledb.ls(g, lambda p, t: ref.append((p.rstrip("/"), t)))
    engine.ls(g, lambda p, t: got.append((p.rstrip("/"), t)))
    assert sorted(got) == sorted(ref)
    ref, got = [], []
    tiledb.walk(str(tmp_path), lambda p, t: ref.append((p.rstrip("/"), t)))
    engine.walk(str(tmp_path), lambda p, t: got.append((p.rstrip("/"), t)))
    assert sorted(got) == sorted(ref)


def test_group_meta_modes(tmp_path):
    g = _build(engine, str(tmp_path))
    with engine.Group(g, "w") as G:
        del G.meta["k"]
        G.meta["new"] = (1.5, 2.5)
    with tiledb.Group(g) as R:
        assert sorted(R.meta.keys()) == ["arr", "new", "s"]
        assert R.meta["new"] == (1.5, 2.5)
    with engine.Group(g) as G:
        assert sorted(G.meta.keys()) == ["arr", "new", "s"]
        assert "k" not in G.meta
        with pytest.raises(engine.TileDBError):
            G.meta["x"] = 1


def test_group_errors(tmp_path):
    g = _build(tiledb, str(tmp_path))
    with pytest.raises(tiledb.TileDBError):
        tiledb.Group.create(g)
    with pytest.raises(engine.TileDBError):
        engine.Group.create(g)
    with pytest.raises(tiledb.TileDBError):
        tiledb.Group(str(tmp_path / "nope"))
    with pytest.raises(engine.TileDBError):
        engine.Group(str(tmp_path / "nope"))
    # (adding a uri where nothing exists is accepted by tiledb-py)
