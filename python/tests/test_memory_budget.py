"""A memory budget bounds what a batched read holds (tessera_only).

``A.query(return_incomplete=True, memory_budget=B)[...]`` (numpy batches) and the Arrow C
stream of ``A.query(memory_budget=B)`` (``pyarrow.RecordBatchReader.from_stream``) are
read to the end in a child process, which reports its peak resident memory (Linux's
``VmHWM``): it stays within the budget plus the fixed overhead ``docs/cli.md`` states,
measured from the same program reading next to nothing, while reading the whole array at
once holds far more.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from _helpers import engine

pytestmark = [
    pytest.mark.tessera_only,
    pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak memory is read from /proc"),
]

MB = 1 << 20
# What docs/cli.md promises besides the budget (the arrays being converted, the allocator).
OVERHEAD = 32 * MB
SIDE = 4000

CHILD = textwrap.dedent(
    """
    import sys
    import pyarrow
    import tessera

    uri, mode, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cells = 0
    with tessera.open(uri) as A:
        if mode == "base":
            cells = A[0:1, 0:1]["a"].size
        elif mode == "whole":
            cells = A[:]["a"].size
        elif mode == "batches":
            for part in A.query(return_incomplete=True, memory_budget=budget)[:]:
                cells += part["a"].size
        elif mode == "arrow":
            reader = pyarrow.RecordBatchReader.from_stream(A.query(memory_budget=budget))
            for batch in reader:
                cells += batch.num_rows
    with open("/proc/self/status") as f:
        hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    print(cells, hwm * 1024)
    """
)


def _peak(uri, mode, budget=0):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, uri, mode, str(budget)], capture_output=True, text=True, check=True
    )
    cells, peak = map(int, out.stdout.split())
    print(f"{mode} budget {budget >> 20} MB: peak RSS {peak >> 20} MB")
    return cells, peak


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """A 4000 x 4000 int32 dense array (64 MB) in 1000 x 1000 zstd tiles."""
    uri = str(tmp_path_factory.mktemp("budget") / "grid")
    dom = engine.Domain(
        engine.Dim("r", domain=(0, SIDE - 1), tile=1000, dtype=np.int64),
        engine.Dim("c", domain=(0, SIDE - 1), tile=1000, dtype=np.int64),
    )
    attr = engine.Attr("a", dtype=np.int32, filters=engine.FilterList([engine.ZstdFilter(1)]))
    engine.Array.create(uri, engine.ArraySchema(domain=dom, attrs=[attr]))
    with engine.open(uri, "w") as A:
        A[:] = {"a": (np.arange(SIDE * SIDE, dtype=np.int64) % 65521).astype(np.int32).reshape(SIDE, SIDE)}
    return uri


def test_batches_hold_no_more_than_the_budget(grid):
    _, base = _peak(grid, "base")
    cells, whole = _peak(grid, "whole")
    assert cells == SIDE * SIDE
    assert whole > base + 48 * MB, f"an unbounded read holds the result: {whole >> 20} vs {base >> 20} MB"
    for mode in ["batches", "arrow"]:
        for budget in [8 * MB, 32 * MB]:
            cells, peak = _peak(grid, mode, budget)
            assert cells == SIDE * SIDE
            assert peak <= base + budget + OVERHEAD, (
                f"{mode}, memory_budget {budget >> 20} MB: peak RSS {peak >> 20} MB (reading nothing: {base >> 20} MB)"
            )
