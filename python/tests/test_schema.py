"""Schema objects: the same schema built with the engine and with tiledb must
print the same (repr), compare the same, create arrays that tiledb loads as
the same schema, and load the same from arrays tiledb created."""

import numpy as np
import pytest

from _helpers import assert_same, engine, tiledb


def dense_basic(m):
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("rows", domain=(1, 1000), tile=100, dtype=np.int32),
            m.Dim("cols", domain=(1, 1000), tile=100, dtype=np.int32),
        ),
        attrs=[m.Attr("a", dtype=np.float64)],
    )


def dense_types(m):
    rec = np.dtype([("", "i2")] * 3)
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("x", domain=(0, 99), tile=10, dtype=np.uint64),
            m.Dim("y", domain=(0, 49), tile=25, dtype=np.uint64),
        ),
        attrs=[
            m.Attr("i8", dtype=np.int8),
            m.Attr("i16", dtype=np.int16, fill=-1),
            m.Attr("i32", dtype=np.int32),
            m.Attr("i64", dtype=np.int64, fill=123),
            m.Attr("u8", dtype=np.uint8),
            m.Attr("u16", dtype=np.uint16),
            m.Attr("u32", dtype=np.uint32),
            m.Attr("u64", dtype=np.uint64),
            m.Attr("f32", dtype=np.float32, fill=0.5),
            m.Attr("f64", dtype=np.float64),
            m.Attr("c64", dtype=np.complex64),
            m.Attr("c128", dtype=np.complex128),
            m.Attr("b", dtype=np.bool_),
            m.Attr("dns", dtype="datetime64[ns]"),
            m.Attr("dms", dtype="datetime64[ms]"),
            m.Attr("dd", dtype="datetime64[D]"),
            m.Attr("s", dtype=str),
            m.Attr("s_var", dtype=str, var=True),
            m.Attr("u3", dtype="U3"),
            m.Attr("by", dtype=bytes),
            m.Attr("by_var", dtype=bytes, var=True),
            m.Attr("asc", dtype="ascii"),
            m.Attr("S4", dtype="S4"),
            m.Attr("S1", dtype="S1", fill=b"z"),
            m.Attr("rec", dtype=rec),
            m.Attr("n32", dtype=np.int32, nullable=True),
            m.Attr("nstr", dtype=str, nullable=True),
            m.Attr("blob", dtype="blob"),
        ],
        cell_order="col-major",
        tile_order="col-major",
    )


def sparse_mixed(m):
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("i", domain=(-100, 100), tile=50, dtype=np.int64),
            m.Dim("f", domain=(-1.0, 1.0), tile=0.25, dtype=np.float64),
            m.Dim("f32", domain=(0.0, 10.0), tile=2.5, dtype=np.float32),
            m.Dim("s", domain=(None, None), tile=None, dtype="ascii"),
            m.Dim("t", domain=(np.datetime64(0, "s"), np.datetime64(10**6, "s")), tile=np.timedelta64(3600, "s"), dtype="datetime64[s]"),
            m.Dim("u8", domain=(0, 200), tile=20, dtype=np.uint8),
            m.Dim("i16", domain=(-5, 5), tile=None, dtype=np.int16),
        ),
        attrs=[m.Attr("v", dtype=np.float32), m.Attr("w", dtype=str, nullable=True)],
        sparse=True,
        capacity=123,
        allows_duplicates=True,
        offsets_filters=m.FilterList([m.DoubleDeltaFilter(), m.ZstdFilter(level=3)]),
        validity_filters=m.FilterList([m.GzipFilter(level=5)]),
    )


def sparse_coords_filters(m):
    return m.ArraySchema(
        domain=m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32, filters=[m.LZ4Filter()])),
        attrs=[m.Attr("a", dtype=np.int8, filters=m.FilterList([m.ZstdFilter(level=-1)]))],
        sparse=True,
        coords_filters=m.FilterList([m.Bzip2Filter()]),
    )


def filters_everywhere(m):
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("x", domain=(0, 999), tile=100, dtype=np.int64, filters=m.FilterList([m.PositiveDeltaFilter(), m.BitWidthReductionFilter(), m.ZstdFilter(level=7)])),
            m.Dim("y", domain=(0, 999), tile=100, dtype=np.int64, filters=[m.DoubleDeltaFilter(), m.LZ4Filter(level=2)]),
        ),
        attrs=[
            m.Attr("a", dtype=np.int32, filters=m.FilterList([m.ByteShuffleFilter(), m.GzipFilter(level=9)], chunksize=4096)),
            m.Attr("b", dtype=np.float64, filters=m.FilterList([m.XORFilter(), m.BitShuffleFilter(), m.Bzip2Filter(level=5)])),
            m.Attr("c", dtype=np.float64, filters=m.FilterList([m.FloatScaleFilter(0.5, 1.0, 4), m.ChecksumMD5Filter()])),
            m.Attr("d", dtype=str, filters=m.FilterList([m.RleFilter(), m.ZstdFilter(), m.ChecksumSHA256Filter()])),
            m.Attr("d2", dtype=str, filters=m.FilterList([m.DictionaryFilter(), m.GzipFilter()])),
            m.Attr("e", dtype=np.uint16, filters=m.FilterList([m.DeltaFilter(), m.NoOpFilter()])),
            m.Attr("f", dtype=np.int64, filters=m.FilterList([m.DeltaFilter(reinterp_dtype=np.int32), m.DoubleDeltaFilter(reinterp_dtype=np.uint16)])),
            m.Attr("g", dtype=np.uint8, filters=[m.BitWidthReductionFilter(window=64), m.PositiveDeltaFilter(window=32)]),
            m.Attr("h", dtype=str, var=True, nullable=True, filters=[m.ZstdFilter(level=-3)]),
        ],
        sparse=True,
    )


def enums(m):
    return m.ArraySchema(
        domain=m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32)),
        attrs=[
            m.Attr("c", dtype=np.uint8, enum_label="colors"),
            m.Attr("n", dtype=np.int16, enum_label="nums", nullable=True),
            m.Attr("plain", dtype=np.int64),
        ],
        enums=[
            m.Enumeration("colors", True, ["red", "green", "blue"]),
            m.Enumeration("nums", False, np.array([1.5, 2.5, -3.0], dtype=np.float64)),
            m.Enumeration("unused", False, np.array([1, 2], dtype=np.int8)),
        ],
    )


def anonymous(m):
    return m.ArraySchema(
        domain=m.Domain(m.Dim(domain=(0, 9), tile=10, dtype=np.int64), m.Dim(domain=(0, 4), tile=5, dtype=np.int64)),
        attrs=[m.Attr(dtype=np.float32)],
    )


def dense_datetime(m):
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("t", domain=(np.datetime64("2020-01-01"), np.datetime64("2020-12-31")), tile=np.timedelta64(7, "D"), dtype="datetime64[D]")
        ),
        attrs=[m.Attr("v", dtype=np.int8)],
        tile_order="col-major",
    )


def sparse_hilbert(m):
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("x", domain=(0.0, 1.0), tile=0.1, dtype=np.float64),
            m.Dim("y", domain=(0.0, 1.0), tile=0.1, dtype=np.float64),
        ),
        attrs=[m.Attr("v", dtype=np.uint32)],
        sparse=True,
        cell_order="hilbert",
        capacity=2,
    )


def sparse_small_int_dims(m):
    return m.ArraySchema(
        domain=m.Domain(
            m.Dim("a", domain=(-100, 100), tile=16, dtype=np.int8),
            m.Dim("b", domain=(0, 60000), tile=1024, dtype=np.uint16),
            m.Dim("c", domain=(0, 2**31), tile=2**20, dtype=np.uint32),
        ),
        attrs=[m.Attr("v", dtype=np.int8)],
        sparse=True,
        cell_order="col-major",
        tile_order="row-major",
    )


BUILDERS = [
    dense_basic,
    dense_types,
    sparse_mixed,
    sparse_coords_filters,
    filters_everywhere,
    enums,
    anonymous,
    dense_datetime,
    sparse_hilbert,
    sparse_small_int_dims,
]


def _get(obj, name, *args):
    """The value of a property, or the exception's class name."""
    try:
        v = getattr(obj, name)
        return v(*args) if callable(v) else v
    except Exception as exc:  # noqa: BLE001
        return ("raises", type(exc).__name__)


def dim_props(d):
    out = {}
    for k in ("name", "dtype", "domain", "tile", "isvar", "isanon", "shape", "size"):
        out[k] = _get(d, k)
    out["filters"] = repr(d.filters)
    out["repr"] = repr(d)
    return out


def attr_props(a):
    out = {}
    for k in ("name", "dtype", "isnullable", "isvar", "isascii", "isanon", "ncells", "enum_label", "fill"):
        out[k] = _get(a, k)
    out["filters"] = repr(a.filters)
    out["nfilters"] = len(a.filters)
    out["repr"] = repr(a)
    return out


def schema_props(s):
    out = {}
    for k in ("sparse", "cell_order", "tile_order", "capacity", "allows_duplicates", "ndim", "nattr", "shape"):
        out[k] = _get(s, k)
    for k in ("coords_filters", "offsets_filters", "validity_filters"):
        out[k] = repr(getattr(s, k))
    out["domain"] = repr(s.domain)
    out["domain_ndim"] = s.domain.ndim
    out["domain_dtype"] = _get(s.domain, "dtype")
    out["domain_homogeneous"] = _get(s.domain, "homogeneous")
    out["dims"] = [dim_props(s.domain.dim(i)) for i in range(s.domain.ndim)]
    out["attrs"] = [attr_props(s.attr(i)) for i in range(s.nattr)]
    out["attr_names"] = [s.attr(i).name for i in range(s.nattr)]
    out["len"] = len(s)
    out["iter"] = [a.name for a in s]
    return out


@pytest.mark.parametrize("build", BUILDERS, ids=[b.__name__ for b in BUILDERS])
def test_built_schema(build):
    e, r = build(engine), build(tiledb)
    assert repr(e) == repr(r)
    assert_same(schema_props(e), schema_props(r))
    assert e == build(engine)
    assert not (e != build(engine))
    e.check()


@pytest.mark.parametrize("build", BUILDERS, ids=[b.__name__ for b in BUILDERS])
def test_created_by_engine_loaded_by_tiledb(tmp_path, build):
    ref_uri, eng_uri = str(tmp_path / "r"), str(tmp_path / "e")
    tiledb.Array.create(ref_uri, build(tiledb))
    engine.Array.create(eng_uri, build(engine))
    ref = tiledb.ArraySchema.load(ref_uri)
    got = tiledb.ArraySchema.load(eng_uri)
    assert repr(got) == repr(ref)
    assert_same(schema_props(got), schema_props(ref))
    assert got == ref
    assert _get(got, "version") == _get(ref, "version")
    # the engine loads its own array as tiledb does
    eng_loaded = engine.ArraySchema.load(eng_uri)
    assert repr(eng_loaded) == repr(ref)
    assert_same(schema_props(eng_loaded), schema_props(ref))
    assert eng_loaded == engine.ArraySchema.load(eng_uri)
    # built == loaded gives what tiledb gives (the loaded dimensions carry the
    # coordinate filters, so they can differ)
    assert (build(engine) == eng_loaded) == (build(tiledb) == ref)


@pytest.mark.parametrize("build", BUILDERS, ids=[b.__name__ for b in BUILDERS])
def test_created_by_tiledb_loaded_by_engine(tmp_path, build):
    uri = str(tmp_path / "r")
    tiledb.Array.create(uri, build(tiledb))
    ref = tiledb.ArraySchema.load(uri)
    got = engine.ArraySchema.load(uri)
    assert repr(got) == repr(ref)
    assert_same(schema_props(got), schema_props(ref))
    with engine.open(uri) as E, tiledb.open(uri) as R:
        assert repr(E.schema) == repr(R.schema)
        assert E.schema == got


def test_enumerations_loaded(tmp_path):
    for i, mod in enumerate((tiledb, engine)):
        uri = str(tmp_path / str(i))
        mod.Array.create(uri, enums(mod))
        with tiledb.open(uri) as R, engine.open(uri) as E:
            for name in ("colors", "nums", "unused"):
                for k in ("name", "ordered", "cell_val_num", "dtype"):
                    assert_same(getattr(E.enum(name), k), getattr(R.enum(name), k))
                assert_same(E.enum(name).values(), R.enum(name).values())
                assert repr(E.enum(name)) == repr(R.enum(name))


def test_enumeration_objects():
    for args in (("e", True, ["a", "bb", ""]), ("n", False, np.array([1, 2, 3], dtype=np.uint32)), ("f", False, [1.5, 2.5])):
        e, r = engine.Enumeration(*args), tiledb.Enumeration(*args)
        assert repr(e) == repr(r)
        assert_same(e.values(), r.values())
        assert e.name == r.name and e.ordered == r.ordered
        assert e.dtype == r.dtype
        assert e.cell_val_num == r.cell_val_num
    e = engine.Enumeration("e", False, ["a"]).extend(["b", "c"])
    r = tiledb.Enumeration("e", False, ["a"]).extend(["b", "c"])
    assert repr(e) == repr(r)


def test_dim_and_attr_objects():
    for mk in (
        lambda m: m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32),
        lambda m: m.Dim("x", domain=(0, 9), dtype=np.int64),
        lambda m: m.Dim("x", domain=(1.5, 9.5), tile=2.0, dtype=np.float32),
        lambda m: m.Dim("s", dtype="ascii"),
        lambda m: m.Dim("s", domain=(None, None), tile=None, dtype=np.bytes_),
        lambda m: m.Dim("t", domain=(np.datetime64(0, "ns"), np.datetime64(1000, "ns")), tile=np.timedelta64(10, "ns"), dtype="datetime64[ns]"),
        lambda m: m.Dim(domain=(0, 3)),
        lambda m: m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32, filters=[m.ZstdFilter(level=1)]),
    ):
        e, r = mk(engine), mk(tiledb)
        assert repr(e) == repr(r)
        assert_same(dim_props(e), dim_props(r))
        assert e == mk(engine)
    for mk in (
        lambda m: m.Attr("a", dtype=np.int32),
        lambda m: m.Attr(dtype=np.float64),
        lambda m: m.Attr("a"),
        lambda m: m.Attr("a", dtype=np.int32, fill=7),
        lambda m: m.Attr("a", dtype=str, fill="x"),
        lambda m: m.Attr("a", dtype=np.int32, nullable=True),
        lambda m: m.Attr("a", dtype=np.dtype([("", "f4")] * 2)),
        lambda m: m.Attr("a", dtype=np.complex64),
        lambda m: m.Attr("a", dtype="S7", fill=b"abcdefg"),
        lambda m: m.Attr("a", dtype="ascii"),
        lambda m: m.Attr("a", dtype=np.uint8, enum_label="e"),
        lambda m: m.Attr("a", dtype=np.float32, filters=[m.ZstdFilter(level=2), m.ChecksumMD5Filter()]),
    ):
        e, r = mk(engine), mk(tiledb)
        assert repr(e) == repr(r)
        assert_same(attr_props(e), attr_props(r))
        assert e == mk(engine)
    assert engine.Attr("a", dtype=np.int32) != engine.Attr("b", dtype=np.int32)
    assert engine.Attr("a", dtype=np.int32) != engine.Attr("a", dtype=np.int64)


def test_domain_objects():
    def mk(m):
        return m.Domain(m.Dim("x", domain=(0, 9), tile=5, dtype=np.int32), m.Dim("y", domain=(1, 4), tile=2, dtype=np.int32))

    e, r = mk(engine), mk(tiledb)
    assert repr(e) == repr(r)
    assert e.ndim == 2 and e.shape == r.shape
    assert e.dim("y").name == "y" and e.dim(1).name == "y"
    assert e.has_dim("x") and not e.has_dim("z")
    assert [d.name for d in e] == ["x", "y"]
    assert e == mk(engine)


@pytest.mark.tiledb_bug("Domain.size raises AttributeError (uses self.integer for np.integer)")
def test_domain_size():
    d = engine.Domain(engine.Dim("x", domain=(0, 9), tile=5, dtype=np.int32), engine.Dim("y", domain=(1, 4), tile=2, dtype=np.int32))
    assert d.size == 40


def test_schema_accessors(tmp_path):
    uri = str(tmp_path / "a")
    tiledb.Array.create(uri, filters_everywhere(tiledb))
    r, e = tiledb.ArraySchema.load(uri), engine.ArraySchema.load(uri)
    for name in ("a", "h"):
        assert e.has_attr(name) == r.has_attr(name)
        assert e.attr_or_dim_dtype(name) == r.attr_or_dim_dtype(name)
        assert repr(e.attr(name)) == repr(r.attr(name))
    assert e.attr_or_dim_dtype("x") == r.attr_or_dim_dtype("x")
    assert not e.has_attr("zz")
    assert e.domain.dim("x").name == "x"
    assert e.attr(1).name == "b"


def test_array_create_existing_raises(tmp_path):
    uri = str(tmp_path / "a")
    engine.Array.create(uri, dense_basic(engine))
    with pytest.raises(tiledb.TileDBError):
        tiledb.Array.create(uri, dense_basic(tiledb))
    with pytest.raises(engine.TileDBError):
        engine.Array.create(uri, dense_basic(engine))


def test_dense_and_sparse_create_classmethods(tmp_path):
    engine.DenseArray.create(str(tmp_path / "d"), dense_basic(engine))
    engine.SparseArray.create(str(tmp_path / "s"), sparse_hilbert(engine))
    assert tiledb.ArraySchema.load(str(tmp_path / "d")).sparse is False
    assert tiledb.ArraySchema.load(str(tmp_path / "s")).sparse is True
