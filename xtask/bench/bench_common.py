"""What every engine's bench driver shares (and needs nothing but numpy): the peak RSS and the
order-independent checksum of a result, so that the libtiledb driver (run_tiledb.py) and the
zarrs one (run_zarrs.py, run in a venv of its own without tiledb) compute them alike."""

from __future__ import annotations

import numpy as np


def peak_rss_mb() -> float | None:
    """This process's peak RSS so far (VmHWM: unlike getrusage, it does not count the parent
    the process was forked from)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def checksum(data: np.ndarray, offsets: np.ndarray | None, cell_size: int) -> list[int]:
    """[sum, bytes, len_sq], as the Tessera driver computes it (wrapping at 2^64)."""
    data = np.ascontiguousarray(data).view(np.uint8)
    nbytes = data.nbytes
    with np.errstate(over="ignore"):
        if offsets is not None:
            s = int(data.sum(dtype=np.uint64))
            if len(offsets):
                ends = np.empty(len(offsets), dtype=np.uint64)
                ends[:-1] = offsets[1:]
                ends[-1] = nbytes
                lens = ends - offsets.astype(np.uint64)
                len_sq = int((lens * lens).sum(dtype=np.uint64))
            else:
                len_sq = 0
        else:
            if cell_size == 8:
                s = int(data.view("<u8").sum(dtype=np.uint64))
            elif cell_size == 4:
                s = int(data.view("<u4").sum(dtype=np.uint64))
            else:
                s = int(data.sum(dtype=np.uint64))
            len_sq = 0
    m = 2**64
    return [s % m, nbytes % m, len_sq % m]
