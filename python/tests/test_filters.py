"""Every filter class: objects (repr, options, equality), and data written
through each filter by one library and read by the other."""

import numpy as np
import pytest

from _helpers import assert_same, engine, read_both, tiledb

# (id, filter factory, attribute dtype, data)
N = 200
_rng = np.random.default_rng(11)
INTS = np.cumsum(_rng.integers(0, 5, N)).astype(np.int64)
INC = np.cumsum(_rng.integers(1, 5, N)).astype(np.int64)  # strictly increasing
FLOATS = np.round(np.cumsum(_rng.random(N)), 3)
STRS = np.array(["v%d" % (i % 7) * (i % 3) for i in range(N)], dtype=object)

CASES = [
    ("zstd", lambda m: m.ZstdFilter(level=5), np.int64, INTS),
    ("zstd_default", lambda m: m.ZstdFilter(), np.float64, FLOATS),
    ("zstd_negative", lambda m: m.ZstdFilter(level=-5), str, STRS),
    ("gzip", lambda m: m.GzipFilter(), np.int64, INTS),
    ("gzip9", lambda m: m.GzipFilter(level=9), str, STRS),
    ("lz4", lambda m: m.LZ4Filter(), np.float64, FLOATS),
    ("lz4_level", lambda m: m.LZ4Filter(level=3), np.int64, INTS),
    ("bzip2", lambda m: m.Bzip2Filter(), np.int64, INTS),
    ("bzip2_level", lambda m: m.Bzip2Filter(level=2), str, STRS),
    ("rle", lambda m: m.RleFilter(), np.int64, INTS // 10),
    ("rle_str", lambda m: m.RleFilter(), str, STRS),
    ("double_delta", lambda m: m.DoubleDeltaFilter(), np.int64, INTS),
    ("double_delta_reinterp", lambda m: m.DoubleDeltaFilter(reinterp_dtype=np.int32), np.float32, FLOATS.astype(np.float32)),
    ("delta", lambda m: m.DeltaFilter(), np.int64, INTS),
    ("delta_reinterp", lambda m: m.DeltaFilter(reinterp_dtype=np.uint64), np.float64, FLOATS),
    ("bit_width_reduction", lambda m: m.BitWidthReductionFilter(), np.int64, INTS),
    ("bit_width_reduction_window", lambda m: m.BitWidthReductionFilter(window=64), np.uint32, INTS.astype(np.uint32)),
    ("bitshuffle", lambda m: m.BitShuffleFilter(), np.float64, FLOATS),
    ("byteshuffle", lambda m: m.ByteShuffleFilter(), np.int32, INTS.astype(np.int32)),
    ("positive_delta", lambda m: m.PositiveDeltaFilter(), np.int64, INC),
    ("positive_delta_window", lambda m: m.PositiveDeltaFilter(window=16), np.uint16, INC.astype(np.uint16)),
    ("md5", lambda m: m.ChecksumMD5Filter(), np.float64, FLOATS),
    ("sha256", lambda m: m.ChecksumSHA256Filter(), str, STRS),
    ("dictionary", lambda m: m.DictionaryFilter(), str, STRS),
    ("float_scale", lambda m: m.FloatScaleFilter(0.001, 0.0, 4), np.float64, FLOATS),
    ("float_scale_8", lambda m: m.FloatScaleFilter(factor=0.5, offset=1.0, bytewidth=8), np.float32, FLOATS.astype(np.float32)),
    ("xor", lambda m: m.XORFilter(), np.float64, FLOATS),
    ("xor_int", lambda m: m.XORFilter(), np.int16, INTS.astype(np.int16)),
    ("noop", lambda m: m.NoOpFilter(), np.int64, INTS),
]

PIPELINES = [
    ("shuffle_zstd", lambda m: [m.ByteShuffleFilter(), m.ZstdFilter(level=9)], np.float64, FLOATS),
    ("delta_bwr_lz4", lambda m: [m.DeltaFilter(), m.BitWidthReductionFilter(), m.LZ4Filter()], np.int64, INTS),
    ("scale_xor_gzip", lambda m: [m.FloatScaleFilter(0.001, 0.0, 8), m.XORFilter(), m.GzipFilter()], np.float64, FLOATS),
    ("dict_zstd_md5", lambda m: [m.DictionaryFilter(), m.ZstdFilter(), m.ChecksumMD5Filter()], str, STRS),
    ("rle_bzip2_sha", lambda m: [m.RleFilter(), m.Bzip2Filter(), m.ChecksumSHA256Filter()], str, STRS),
    ("positive_delta_bwr_noop", lambda m: [m.PositiveDeltaFilter(), m.BitWidthReductionFilter(), m.NoOpFilter()], np.int64, INC),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_filter_object(case):
    _, mk, _, _ = case
    e, r = mk(engine), mk(tiledb)
    assert repr(e) == repr(r)
    assert type(e).__name__ == type(r).__name__
    assert e == mk(engine)
    for opt in ("level", "window", "reinterp_dtype", "factor", "offset", "bytewidth"):
        if hasattr(r, opt):
            assert_same(getattr(e, opt), getattr(r, opt))
    assert isinstance(e, engine.Filter)


def test_filter_inequality():
    assert engine.ZstdFilter(level=5) != engine.ZstdFilter(level=4)
    assert engine.ZstdFilter() != engine.GzipFilter()
    assert engine.BitWidthReductionFilter(window=64) != engine.BitWidthReductionFilter()


def test_filter_list():
    def mk(m):
        return m.FilterList([m.ZstdFilter(level=2), m.GzipFilter()])

    e, r = mk(engine), mk(tiledb)
    assert repr(e) == repr(r)
    assert len(e) == 2
    assert repr(e[0]) == repr(r[0]) and repr(e[1]) == repr(r[1])
    assert [repr(f) for f in e] == [repr(f) for f in r]
    assert e == mk(engine)
    assert e != engine.FilterList([engine.ZstdFilter(level=2)])
    e.append(engine.LZ4Filter())
    r.append(tiledb.LZ4Filter())
    assert repr(e) == repr(r)
    assert len(e) == 3
    assert repr(engine.FilterList()) == repr(tiledb.FilterList()) == "FilterList([])"
    assert engine.FilterList([]) == engine.FilterList()
    assert engine.FilterList(chunksize=1024).chunksize == tiledb.FilterList(chunksize=1024).chunksize
    assert engine.FilterList().chunksize == tiledb.FilterList().chunksize
    # tiledb-py: IndexError and ValueError; the engine may raise TileDBError too
    with pytest.raises((engine.TileDBError, IndexError)):
        e[5]
    with pytest.raises((engine.TileDBError, ValueError)):
        engine.FilterList([1])


def _roundtrip(tmp_path, writer, filters, dtype, data, sparse):
    uri = str(tmp_path / ("s" if sparse else "d"))
    if sparse:
        dom = writer.Domain(writer.Dim("x", domain=(0, 10 * N), tile=64, dtype=np.int64))
    else:
        # tiles that divide the domain: no fill values in the tiles (positive delta)
        dom = writer.Domain(writer.Dim("x", domain=(0, N - 1), tile=50, dtype=np.int64))
    fl = writer.FilterList(filters, chunksize=256)
    writer.Array.create(
        uri,
        writer.ArraySchema(domain=dom, attrs=[writer.Attr("a", dtype=dtype, filters=fl)], sparse=sparse),
    )
    values = data if dtype is str else data.astype(dtype)
    with writer.open(uri, "w") as A:
        if sparse:
            A[np.arange(N, dtype=np.int64) * 3] = {"a": values}
        else:
            A[:] = {"a": values}
    res = read_both(uri, lambda A: A[:])
    read_both(uri, lambda A: A[10:100])
    assert repr(engine.ArraySchema.load(uri).attr("a").filters) == repr(tiledb.ArraySchema.load(uri).attr("a").filters)
    return res["a"], values


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("case", CASES + PIPELINES, ids=[c[0] for c in CASES + PIPELINES])
def test_filter_roundtrip(tmp_path, writer, case, sparse):
    name, mk, dtype, data = case
    filters = mk(writer)
    if not isinstance(filters, list):
        filters = [filters]
    got, values = _roundtrip(tmp_path, writer, filters, dtype, data, sparse)
    if "scale" in name:
        # lossy: within the scale factor
        np.testing.assert_allclose(got.astype(np.float64), values.astype(np.float64), atol=0.5 + 1e-9)
    elif dtype is str:
        assert got.tolist() == list(values)
    else:
        np.testing.assert_array_equal(got, values)


def test_dim_filters_roundtrip(tmp_path, writer):
    uri = str(tmp_path / "dims")
    dom = writer.Domain(
        writer.Dim("x", domain=(0, 10**6), tile=1000, dtype=np.int64, filters=[writer.DoubleDeltaFilter(), writer.ZstdFilter(level=3)]),
        writer.Dim("y", domain=(0.0, 1.0), tile=0.5, dtype=np.float64, filters=[writer.ByteShuffleFilter(), writer.LZ4Filter()]),
        writer.Dim("s", domain=(None, None), tile=None, dtype="ascii", filters=[writer.RleFilter(), writer.GzipFilter()]),
    )
    writer.Array.create(
        uri,
        writer.ArraySchema(
            domain=dom,
            attrs=[writer.Attr("a", dtype=np.int32)],
            sparse=True,
            offsets_filters=[writer.PositiveDeltaFilter(), writer.ZstdFilter()],
        ),
    )
    with writer.open(uri, "w") as A:
        A[INTS * 7, FLOATS / FLOATS.max(), np.array([s.encode() for s in STRS], dtype=object)] = {
            "a": np.arange(N, dtype=np.int32)
        }
    read_both(uri, lambda A: A[:])
    read_both(uri, lambda A: A.multi_index[100:2000, :, :])
