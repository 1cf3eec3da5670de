"""Encrypted arrays (AES-256-GCM) with ``key=``, both ways with tiledb-py."""

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb

KEY = "0123456789abcdeF0123456789abcdeF"
OTHER = "fedcba9876543210fedcba9876543210"


def _schema(mod, sparse):
    dom = mod.Domain(mod.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    attrs = [mod.Attr("v", dtype=np.float64), mod.Attr("s", dtype=str, var=True), mod.Attr("n", dtype=np.int32, nullable=True)]
    return mod.ArraySchema(domain=dom, attrs=attrs, sparse=sparse)


def _write(mod, uri, sparse):
    mod.Array.create(uri, _schema(mod, sparse), key=KEY)
    for t, lo in ((1, 0), (2, 20)):
        with mod.open(uri, "w", key=KEY, timestamp=t) as A:
            data = {
                "v": np.arange(lo, lo + 20, dtype=np.float64) / 4,
                "s": np.array([f"s{i}" for i in range(lo, lo + 20)], dtype=object),
                "n": np.ma.masked_array(np.arange(lo, lo + 20, dtype=np.int32), mask=np.arange(20) % 3 == 0),
            }
            if sparse:
                A[np.arange(lo, lo + 20)] = data
            else:
                A[lo:lo + 20] = data
            A.meta["written_at"] = t
    return uri


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("writer", ["tiledb", "engine"])
def test_encrypted_both_ways(tmp_path, sparse, writer):
    mod = tiledb if writer == "tiledb" else engine
    uri = _write(mod, str(tmp_path / "a"), sparse)
    with tiledb.open(uri, key=KEY) as R, engine.open(uri, key=KEY) as E:
        assert_same(E[:], R[:])
        assert_same(E.multi_index[5:30], R.multi_index[5:30])
        assert E.meta["written_at"] == R.meta["written_at"] == 2
    # the configuration's key works too
    cfg = {"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY}
    with engine.open(uri, config=cfg) as E:
        assert len(E.multi_index[:]["v"]) == 40
    # (tiledb-py's ArraySchema.load(key=) raises a TypeError: its key goes through the context)
    ref = tiledb.ArraySchema.load(uri, ctx=tiledb.Ctx({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY}))
    assert repr(engine.ArraySchema.load(uri, key=KEY)) == repr(ref)


@pytest.mark.parametrize("writer", ["tiledb", "engine"])
def test_encrypted_consolidate_and_vacuum(tmp_path, writer):
    mod = tiledb if writer == "tiledb" else engine
    uri = _write(mod, str(tmp_path / "a"), True)
    engine.consolidate(uri, key=KEY)
    engine.vacuum(uri, config={"sm.encryption_key": KEY})
    assert len(tiledb.array_fragments(uri, ctx=tiledb.Ctx({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY}))) == 1
    with tiledb.open(uri, key=KEY) as R, engine.open(uri, key=KEY) as E:
        assert_same(E[:], R[:])


def test_wrong_or_missing_key(tmp_path):
    uri = _write(tiledb, str(tmp_path / "a"), True)
    with pytest.raises(engine.TileDBError):
        engine.open(uri)
    with pytest.raises(engine.TileDBError):
        engine.open(uri, key=OTHER)
    with pytest.raises(engine.TileDBError):
        engine.open(uri, key="short")
    plain = str(tmp_path / "plain")
    tiledb.Array.create(plain, _schema(tiledb, True))
    with pytest.raises(engine.TileDBError):
        engine.open(plain, key=KEY)
