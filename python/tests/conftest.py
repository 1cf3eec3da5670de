"""pytest configuration of the tessera suite.

Engine selection: ``import tessera as engine`` by default, ``tiledb`` when
``TESSERA_TEST_ENGINE=tiledb``.  The reference is always ``tiledb``.

Markers:

* ``tessera_only``: a test of something tiledb-py cannot do (pickling arrays,
  parallel reads without the GIL, reads under a memory budget, point reads);
  skipped when the engine is tiledb.
* ``tiledb_bug(reason)``: tiledb-py 0.36.1 gets this wrong and the test asserts
  the correct behaviour; when the engine is tiledb the test is an xfail
  (strict, so the test is shown to catch tiledb-py's behaviour).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from _helpers import ENGINE_NAME, IS_REFERENCE  # noqa: E402
import _helpers  # noqa: E402


def _fast_tiledb_default_ctx():
    # libtiledb allocates (and zeroes) tens of MB of buffers per field for a
    # consolidation by default, which makes consolidating a tiny array take
    # seconds; smaller buffers change nothing else.
    import tiledb

    tiledb.default_ctx({"sm.consolidation.buffer_size": "1000000"})


_fast_tiledb_default_ctx()


_SHM_BASETEMP = None


def _use_shm_basetemp(config):
    """Arrays under /dev/shm (tmpfs) unless --basetemp is given or
    TESSERA_TEST_NO_SHM is set: the suite creates and removes thousands of
    small files, which on a busy disk costs more than all the reads."""
    global _SHM_BASETEMP
    if config.option.basetemp or os.environ.get("TESSERA_TEST_NO_SHM"):
        return
    if not (os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)):
        return
    import tempfile

    _SHM_BASETEMP = tempfile.mkdtemp(prefix="tessera-tests-", dir="/dev/shm")
    config.option.basetemp = os.path.join(_SHM_BASETEMP, "t")


def pytest_unconfigure(config):
    if _SHM_BASETEMP:
        import shutil

        shutil.rmtree(_SHM_BASETEMP, ignore_errors=True)


def pytest_configure(config):
    _use_shm_basetemp(config)
    config.addinivalue_line(
        "markers", "tessera_only: engine-only feature, skipped when the engine is tiledb"
    )
    config.addinivalue_line(
        "markers",
        "tiledb_bug(reason): tiledb-py 0.36.1 is wrong here; the test asserts the "
        "correct behaviour (xfail when the engine is tiledb)",
    )


def pytest_report_header(config):
    return f"engine under test: {ENGINE_NAME} ({_helpers.engine.__name__})"


# What the engine does not match yet (each one is named in the closing note); these
# run as non-strict xfails for tessera, so that a fix shows up as XPASS. Keys are node-id
# test functions, relative to python/tests (every case of the function).
KNOWN_GAPS = {
}


def _known_gap(nodeid: str):
    rel = nodeid.rsplit("tests/", 1)[-1]
    return KNOWN_GAPS.get(rel.split("[", 1)[0])


def pytest_collection_modifyitems(config, items):
    if not IS_REFERENCE:
        # TESSERA_TEST_NO_GAPS=1 runs the known gaps as plain tests, to see how they fail
        if os.environ.get("TESSERA_TEST_NO_GAPS"):
            return
        for item in items:
            reason = _known_gap(item.nodeid)
            if reason:
                item.add_marker(pytest.mark.xfail(reason=f"known gap: {reason}", strict=False))
        return
    # TESSERA_TEST_RUN_ALL=1 runs the tessera_only tests against tiledb too
    # (to see how tiledb-py fares; most of them fail there)
    run_all = bool(os.environ.get("TESSERA_TEST_RUN_ALL"))
    skip = pytest.mark.skip(reason="tessera_only: tiledb-py cannot do this")
    for item in items:
        if item.get_closest_marker("tessera_only") and not run_all:
            item.add_marker(skip)
        bug = item.get_closest_marker("tiledb_bug")
        if bug:
            reason = bug.args[0] if bug.args else bug.kwargs.get("reason", "")
            item.add_marker(pytest.mark.xfail(reason=f"tiledb-py bug: {reason}", strict=True))


@pytest.fixture(scope="session")
def engine():
    return _helpers.engine


@pytest.fixture(scope="session")
def tdb():
    import tiledb

    return tiledb


@pytest.fixture(params=["tiledb", "engine"])
def writer(request):
    """The module that writes the array; the other one (or both) read it."""
    return _helpers.WRITERS[request.param]


@pytest.fixture
def uri(tmp_path):
    return str(tmp_path / "array")
