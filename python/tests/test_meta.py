"""Array metadata (A.meta): mapping semantics, value types as tiledb-py
stores and returns them, in both directions."""

import copy

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb

VALUES = {
    "int": 5,
    "negative": -(2**40),
    "float": 1.5,
    "str": "hello ünïcode",
    "empty_str": "",
    "bytes": b"\x00\x01\xff",
    "empty_bytes": b"",
    "bool": True,
    "tuple_int": (1, 2, 3),
    "tuple_float": (1.5, -2.5),
    "list_int": [4, 5],
    "empty_tuple": (),
    "np_int16": np.int16(7),
    "np_uint64": np.uint64(2**63),
    "np_float32": np.float32(2.5),
    "np_int8": np.int8(-3),
    "arr_i32": np.arange(4, dtype=np.int32),
    "arr_f32": np.array([1.5, 2.5], dtype=np.float32),
    "arr_u8": np.array([1, 2, 255], dtype=np.uint8),
    "arr_f64_2d": np.arange(6, dtype=np.float64).reshape(2, 3),
    "arr_i64_3d": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    "arr_0d": np.array(5, dtype=np.int64),
    "arr_empty": np.array([], dtype=np.int32),
    "": 1,
    "key with spaces/and:symbols": "x",
}


def _snapshot(meta):
    """The metadata as a plain dict, copying numpy arrays (tiledb-py returns
    views of memory that is freed with the array)."""
    return {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in meta.items()}


@pytest.fixture
def empty_array(tmp_path):
    def make(mod, name="a"):
        uri = str(tmp_path / name)
        mod.from_numpy(uri, np.arange(3)).close()
        return uri

    return make


@pytest.mark.parametrize("direction", ["tiledb->engine", "engine->tiledb"])
def test_values_roundtrip(empty_array, direction):
    wmod, rmod = (tiledb, engine) if direction == "tiledb->engine" else (engine, tiledb)
    uri = empty_array(wmod)
    ref_uri = empty_array(tiledb, "ref")
    for mod, u in ((wmod, uri), (tiledb, ref_uri)):
        with mod.open(u, "w") as A:
            for k, v in VALUES.items():
                A.meta[k] = v
    with tiledb.open(ref_uri) as R:
        expected = _snapshot(R.meta)
        expected_keys = list(R.meta.keys())
        expected_len = len(R.meta)
    with rmod.open(uri) as A:
        got = _snapshot(A.meta)
        assert list(A.meta.keys()) == expected_keys
        assert list(A.meta) == expected_keys
        assert len(A.meta) == expected_len == len(VALUES)
    assert_same(got, expected)
    # a few of the conversions tiledb-py makes
    assert type(expected["int"]) is np.int64
    assert type(expected["float"]) is np.float64
    assert expected["list_int"] == (4, 5)
    assert type(expected["bool"]) is np.int64
    assert expected["arr_f64_2d"].shape == (2, 3)
    assert expected["arr_0d"].shape == ()


def test_engine_reads_engine(empty_array):
    uri = empty_array(engine)
    with engine.open(uri, "w") as A:
        for k, v in VALUES.items():
            A.meta[k] = v
    ref_uri = empty_array(tiledb, "ref")
    with tiledb.open(ref_uri, "w") as A:
        for k, v in VALUES.items():
            A.meta[k] = v
    with tiledb.open(ref_uri) as R:
        expected = _snapshot(R.meta)
    with engine.open(uri) as E:
        assert_same(_snapshot(E.meta), expected)


def test_mapping_semantics(empty_array):
    for i, mod in enumerate((tiledb, engine)):
        uri = empty_array(mod, "m_%d" % i)
        with mod.open(uri, "w") as A:
            A.meta["a"] = 1
            A.meta["b"] = np.arange(3)
            A.meta["c"] = "x"
        with mod.open(uri) as A:
            m = A.meta
            assert "a" in m and "b" in m and "zz" not in m
            assert m.get("zz") is None
            assert m.get("zz", 3) == 3
            assert m.get("a") == 1
            with pytest.raises(KeyError):
                m["zz"]
            assert sorted(m.keys()) == ["a", "b", "c"]
            assert len(m.items()) == 3
            assert dict(m)["c"] == "x"
            assert len(list(m.values())) == 3
            # non-str keys: TypeError in tiledb-py (TileDBError accepted too)
            errors = TypeError if mod is tiledb else (engine.TileDBError, TypeError)
            with pytest.raises(errors):
                m[5]
            with pytest.raises(errors):
                5 in m


def test_delete_and_overwrite(empty_array):
    results = []
    for mod in (tiledb, engine):
        uri = empty_array(mod, "d_" + str(len(results)))
        with mod.open(uri, "w", timestamp=1) as A:
            A.meta["keep"] = 1
            A.meta["drop"] = 2
            A.meta["arr"] = np.arange(4).reshape(2, 2)
            A.meta["replace"] = np.arange(3)
        with mod.open(uri, "w", timestamp=2) as A:
            del A.meta["drop"]
            del A.meta["arr"]
            del A.meta["never_there"]  # no error
            A.meta["replace"] = "now a string"
            A.meta["keep"] = 10
        with tiledb.open(uri) as R:
            results.append((_snapshot(R.meta), len(R.meta)))
        with mod.open(uri, timestamp=1) as A:
            assert sorted(A.meta.keys()) == ["arr", "drop", "keep", "replace"]
    assert_same(results[1], results[0])
    assert sorted(results[0][0].keys()) == ["keep", "replace"]
    assert results[0][0]["replace"] == "now a string"


def test_read_mode_write_raises(empty_array):
    uri = empty_array(tiledb)
    with tiledb.open(uri) as R, pytest.raises(tiledb.TileDBError):
        R.meta["x"] = 1
    with engine.open(uri) as E, pytest.raises(engine.TileDBError):
        E.meta["x"] = 1
    with engine.open(uri) as E, pytest.raises(engine.TileDBError):
        del E.meta["x"]


def test_unsupported_values(empty_array):
    uri = empty_array(tiledb)
    # tiledb-py raises TypeError; the engine may raise TileDBError too
    for mod in (tiledb, engine):
        errors = TypeError if mod is tiledb else (engine.TileDBError, TypeError)
        with mod.open(uri, "w") as A:
            for bad in ({"a": 1}, None, (1, 2.5), ["a", "b"], object()):
                with pytest.raises(errors):
                    A.meta["bad"] = bad
            with pytest.raises(errors):
                A.meta[5] = 1
    with tiledb.open(uri) as R:
        assert len(R.meta) == 0


def test_metadata_with_timestamps(empty_array):
    out = []
    for mod in (tiledb, engine):
        uri = empty_array(mod, "t_%d" % len(out))
        for t in (10, 20, 30):
            with mod.open(uri, "w", timestamp=t) as A:
                A.meta["v"] = t
                A.meta["at_%d" % t] = t
        snaps = []
        for ts in (10, 25, (15, 30), None):
            kw = {} if ts is None else {"timestamp": ts}
            with tiledb.open(uri, **kw) as R:
                snaps.append(_snapshot(R.meta))
            with mod.open(uri, **kw) as A:
                assert_same(_snapshot(A.meta), snaps[-1])
        out.append(snaps)
    assert_same(out[1], out[0])


@pytest.mark.tiledb_bug(
    "numpy arrays read from metadata are views of memory freed with the array: "
    "their values change after the array is closed"
)
def test_numpy_metadata_outlives_array(empty_array):
    uri = empty_array(engine)
    with engine.open(uri, "w") as A:
        A.meta["big"] = np.arange(100000, dtype=np.int64)
        A.meta["small"] = np.arange(4, dtype=np.int32)
    with engine.open(uri) as A:
        big = A.meta["big"]
        small = A.meta["small"]
    junk = [np.full(100000, 7, dtype=np.int64) for _ in range(20)]  # reuse freed memory
    assert np.array_equal(big, np.arange(100000))
    assert np.array_equal(small, np.arange(4))
    assert big.dtype == np.int64 and small.dtype == np.int32
    del junk


def test_metadata_consolidate(empty_array):
    uri = empty_array(engine)
    for t in (1, 2, 3):
        with engine.open(uri, "w", timestamp=t) as A:
            A.meta["k%d" % t] = t
    with engine.open(uri) as A:
        A.meta.consolidate()
    with tiledb.open(uri) as R:
        assert sorted(R.meta.keys()) == ["k1", "k2", "k3"]
    with engine.open(uri) as E:
        assert sorted(E.meta.keys()) == ["k1", "k2", "k3"]
