"""Shared helpers of the tessera test suite.

The engine under test is ``tessera`` unless ``TESSERA_TEST_ENGINE=tiledb``, in
which case it is tiledb-py itself (every test must then pass: that run proves
the tests are right).  The reference is always ``tiledb``.
"""

import collections
import datetime
import os

import numpy as np
import tiledb

ENGINE_NAME = os.environ.get("TESSERA_TEST_ENGINE", "tessera")
if ENGINE_NAME == "tiledb":
    import tiledb as engine
elif ENGINE_NAME == "tessera":
    import tessera as engine
else:  # any other importable module (a development shim, say)
    import importlib

    engine = importlib.import_module(ENGINE_NAME)

IS_REFERENCE = engine is tiledb

__all__ = [
    "engine",
    "tiledb",
    "IS_REFERENCE",
    "ENGINE_NAME",
    "assert_same",
    "read_both",
    "read_many",
    "sort_result",
    "fragment_count",
    "WRITERS",
]

# the two directions: (writer module, reader module)
WRITERS = {"tiledb": tiledb, "engine": engine}


def _is_masked(x):
    return isinstance(x, np.ma.MaskedArray)


def _assert_array(actual, expected, path):
    assert isinstance(actual, np.ndarray), (
        f"{path}: expected ndarray, got {type(actual).__name__}"
    )
    assert _is_masked(actual) == _is_masked(expected), (
        f"{path}: masked array mismatch ({type(actual).__name__} vs {type(expected).__name__})"
    )
    assert actual.dtype == expected.dtype, (
        f"{path}: dtype {actual.dtype!r} != {expected.dtype!r}"
    )
    assert actual.shape == expected.shape, (
        f"{path}: shape {actual.shape} != {expected.shape}"
    )
    if _is_masked(expected):
        am = np.ma.getmaskarray(actual)
        em = np.ma.getmaskarray(expected)
        assert np.array_equal(am, em), f"{path}: mask {am} != {em}"
        a = np.asarray(actual.data)[~am]
        e = np.asarray(expected.data)[~em]
        _assert_values(a, e, path)
    else:
        _assert_values(np.asarray(actual), np.asarray(expected), path)


def _assert_values(a, e, path):
    if e.dtype == object:
        al, el = a.ravel().tolist(), e.ravel().tolist()
        assert len(al) == len(el), f"{path}: length {len(al)} != {len(el)}"
        for i, (x, y) in enumerate(zip(al, el)):
            assert type(x) is type(y), (
                f"{path}[{i}]: element type {type(x).__name__} != {type(y).__name__}"
            )
            if isinstance(y, np.ndarray):
                _assert_array(x, y, f"{path}[{i}]")
            elif isinstance(y, float) and np.isnan(y):
                assert np.isnan(x), f"{path}[{i}]: {x!r} != {y!r}"
            else:
                assert x == y, f"{path}[{i}]: {x!r} != {y!r}"
        return
    if e.dtype.kind in "mM":
        a = a.view(np.int64)
        e = e.view(np.int64)
    if e.dtype.kind == "V" and e.dtype.fields:
        for name in e.dtype.names:
            _assert_values(a[name], e[name], f"{path}.{name}")
        return
    if e.dtype.kind in "fc":
        ok = np.array_equal(a, e, equal_nan=True)
    else:
        ok = np.array_equal(a, e)
    if not ok:
        raise AssertionError(f"{path}: values differ\n actual:   {a!r}\n expected: {e!r}")


def assert_same(actual, expected, path="result"):
    """Assert that ``actual`` (engine) equals ``expected`` (tiledb): type,
    keys and their order, dtypes, shapes and values."""
    import pandas as pd
    import pyarrow as pa

    if isinstance(expected, pd.DataFrame):
        assert isinstance(actual, pd.DataFrame), f"{path}: got {type(actual).__name__}"
        pd.testing.assert_frame_equal(actual, expected, check_exact=True)
        return
    if isinstance(expected, pd.Series):
        pd.testing.assert_series_equal(actual, expected, check_exact=True)
        return
    if isinstance(expected, (pa.Table, pa.RecordBatch)):
        assert isinstance(actual, type(expected)), f"{path}: got {type(actual).__name__}"
        assert actual.schema == expected.schema, (
            f"{path}: arrow schema\n{actual.schema}\n!=\n{expected.schema}"
        )
        assert actual.equals(expected), f"{path}: arrow tables differ\n{actual}\n{expected}"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {type(actual).__name__}"
        if isinstance(expected, collections.OrderedDict):
            assert isinstance(actual, collections.OrderedDict), (
                f"{path}: expected an OrderedDict, got {type(actual).__name__}"
            )
        assert list(actual.keys()) == list(expected.keys()), (
            f"{path}: keys {list(actual.keys())} != {list(expected.keys())}"
        )
        for k in expected:
            assert_same(actual[k], expected[k], f"{path}[{k!r}]")
        return
    if isinstance(expected, np.ndarray):
        _assert_array(actual, expected, path)
        return
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), (
            f"{path}: {type(actual).__name__} != {type(expected).__name__}"
        )
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (x, y) in enumerate(zip(actual, expected)):
            assert_same(x, y, f"{path}[{i}]")
        return
    if isinstance(expected, np.generic):
        assert type(actual) is type(expected), (
            f"{path}: scalar type {type(actual).__name__} != {type(expected).__name__}"
        )
        if isinstance(expected, np.floating) and np.isnan(expected):
            assert np.isnan(actual), f"{path}: {actual!r} != nan"
        elif isinstance(expected, (np.datetime64, np.timedelta64)) and np.isnat(expected):
            assert np.isnat(actual), f"{path}: {actual!r} != NaT"
        else:
            assert actual == expected, f"{path}: {actual!r} != {expected!r}"
        return
    if isinstance(expected, float):
        assert type(actual) is float, f"{path}: {type(actual).__name__} != float"
        if np.isnan(expected):
            assert np.isnan(actual), f"{path}: {actual!r} != nan"
        else:
            assert actual == expected, f"{path}: {actual!r} != {expected!r}"
        return
    if expected is None:
        assert actual is None, f"{path}: {actual!r} is not None"
        return
    assert type(actual) is type(expected), (
        f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    )
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def read_both(uri, fn, **open_kwargs):
    """Open ``uri`` with the engine and with tiledb (same arguments), apply
    ``fn`` to each open array, assert the results are the same and return the
    reference result."""
    with tiledb.open(uri, **open_kwargs) as R:
        expected = fn(R)
    with engine.open(uri, **open_kwargs) as E:
        actual = fn(E)
    assert_same(actual, expected)
    return expected


def read_many(uri, *fns, **open_kwargs):
    """read_both for several functions, opening each array once."""
    out = []
    with tiledb.open(uri, **open_kwargs) as R, engine.open(uri, **open_kwargs) as E:
        for fn in fns:
            expected = fn(R)
            assert_same(fn(E), expected)
            out.append(expected)
    return out


def sort_result(res, keys):
    """Sort every array of an OrderedDict result by the given columns (used to
    compare unordered results as sets)."""
    cols = [np.asarray(res[k]) for k in reversed(keys)]
    order = np.lexsort(cols) if cols else slice(None)
    out = collections.OrderedDict()
    for k, v in res.items():
        out[k] = v[order]
    return out


def fragment_count(uri):
    """Number of fragments, counted by tiledb."""
    return len(tiledb.array_fragments(uri))


def to_date(x):  # pragma: no cover - convenience
    return datetime.datetime.fromtimestamp(x / 1000)
