"""tessera.dask on a real local Dask cluster (two worker processes, one thread each):
dask arrays read from and written to Tessera arrays, dataframes over sparse arrays, every
result compared with tiledb-py's read of the same array."""

import os
import pickle
import shutil
import time

import numpy as np
import pandas as pd
import pytest

from _helpers import engine, tiledb

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
tdask = pytest.importorskip("tessera.dask")

pytestmark = pytest.mark.tessera_only


@pytest.fixture(scope="module")
def client(s3_env):
    # started after s3_env set the AWS variables: the workers inherit them
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
        dashboard_address=None, silence_logs=40,
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _dense(uri, origin=(10, -5), shape=(40, 20), tile=(8, 6)):
    dom = tiledb.Domain(
        tiledb.Dim("r", domain=(origin[0], origin[0] + shape[0] - 1), tile=tile[0], dtype=np.int64),
        tiledb.Dim("c", domain=(origin[1], origin[1] + shape[1] - 1), tile=tile[1], dtype=np.int64),
    )
    schema = tiledb.ArraySchema(
        domain=dom,
        attrs=[tiledb.Attr("a", dtype=np.float64), tiledb.Attr("b", dtype=np.int32, filters=tiledb.FilterList([tiledb.ZstdFilter()]))],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(7)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[:] = {"a": rng.random(shape), "b": rng.integers(-1000, 1000, shape, dtype=np.int32)}
    return uri


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    return _dense(str(tmp_path_factory.mktemp("dask") / "dense"))


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("dask") / "sparse")
    dom = tiledb.Domain(
        tiledb.Dim("x", domain=(0, 99_999), tile=1000, dtype=np.int64),
        tiledb.Dim("y", domain=(0.0, 1.0), tile=0.25, dtype=np.float64),
    )
    schema = tiledb.ArraySchema(
        domain=dom, sparse=True, capacity=500, allows_duplicates=True,
        attrs=[tiledb.Attr("v", dtype=np.int64), tiledb.Attr("s", dtype=str, var=True), tiledb.Attr("n", dtype=np.float32, nullable=True)],
    )
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(3)
    for frag in range(3):
        n = 6000
        x = rng.integers(0, 100_000, n) if frag != 1 else rng.integers(0, 20_000, n)
        with tiledb.open(uri, "w", timestamp=frag + 1) as A:
            A[x, rng.random(n)] = {
                "v": np.arange(n, dtype=np.int64) + frag * n,
                "s": np.array([f"s{i % 13}" for i in range(n)], dtype=object),
                "n": np.ma.masked_array(rng.random(n).astype(np.float32), mask=rng.random(n) < 0.1),
            }
    return uri


def test_from_tessera_values_and_tile_chunks(client, dense):
    x = tdask.from_tessera(dense, attribute="a", chunks="tiles")
    with tiledb.open(dense) as R:
        want = R[:]["a"]
    # chunks follow the tiles from the domain's origin (10, -5): 40 = 5 x 8, 20 = 6 + 6 + 6 + 2
    assert x.chunks == ((8,) * 5, (6, 6, 6, 2))
    np.testing.assert_array_equal(x.compute(), want)
    np.testing.assert_allclose(x.sum().compute(), want.sum())
    np.testing.assert_allclose(x.mean(axis=0).compute(), want.mean(axis=0))
    # a slice reads only its blocks, and equal reads share their keys
    np.testing.assert_array_equal(x[3:17, 2:9].compute(), want[3:17, 2:9])
    assert tdask.from_tessera(dense, attribute="a", chunks="tiles").name == x.name


def test_from_tessera_default_chunks_group_whole_tiles(client, dense):
    import dask

    with tiledb.open(dense) as R:
        want = R[:]
    # 8 x 6 float64 tiles are 384 bytes: up to 4 tiles per block fill a row of 20 columns
    # (6 + 6 + 6 + 2) first; rows then come in single tiles (40 = 5 x 8)
    with dask.config.set({"array.chunk-size": "1600B"}):
        x = tdask.from_tessera(dense, attribute="a")
    assert x.chunks == ((8,) * 5, (20,))
    # 10 tiles per block: 2 tile rows per block, the 5 rows split as evenly as they go
    with dask.config.set({"array.chunk-size": "4000B"}):
        y = tdask.from_tessera(dense, attribute="a")
    assert y.chunks == ((16, 16, 8), (20,))
    # the default (128 MiB) holds the whole array; two attributes count both their bytes
    z = tdask.from_tessera(dense, attribute=["a", "b"])
    assert z["a"].chunks == ((40,), (20,))
    with dask.config.set({"array.chunk-size": "300B"}):
        w = tdask.from_tessera(dense, attribute=["a", "b"])
    assert w["b"].chunks == ((8,) * 5, (6, 6, 6, 2))  # a tile at least, whatever the limit
    for got in (x, y, z["a"], w["a"]):
        np.testing.assert_array_equal(got.compute(), want["a"])
    np.testing.assert_array_equal(w["b"].compute(), want["b"])


def test_from_tessera_multi_attribute_and_chunks(client, dense):
    got = tdask.from_tessera(dense, attribute=["a", "b"], chunks=(16, 7))
    with tiledb.open(dense) as R:
        want = R[:]
    assert set(got) == {"a", "b"}
    for k in ("a", "b"):
        assert got[k].chunks[0] == (16, 16, 8)
        assert got[k].dtype == want[k].dtype
        np.testing.assert_array_equal(got[k].compute(), want[k])


def test_from_tessera_pins_the_timestamp(client, tmp_path):
    uri = _dense(str(tmp_path / "a"))
    x = tdask.from_tessera(uri, attribute="b")
    before = x.compute()
    with tiledb.open(uri, "w") as A:
        A[:] = {"a": np.zeros((40, 20)), "b": np.zeros((40, 20), np.int32)}
    # the graph was built before the write: it still reads the first version
    np.testing.assert_array_equal(x.compute(), before)
    assert tdask.from_tessera(uri, attribute="b").sum().compute() == 0


def test_from_tessera_huge_domain_reads_nonempty(client, tmp_path):
    uri = str(tmp_path / "huge")
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 2**62), tile=100, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("v", dtype=np.int16)]))
    with tiledb.open(uri, "w") as A:
        A[1000:1250] = np.arange(250, dtype=np.int16)
    x = tdask.from_tessera(uri, chunks="tiles")
    assert x.shape == (250,)
    assert x.chunks == ((100, 100, 50),)
    np.testing.assert_array_equal(x.compute(), np.arange(250, dtype=np.int16))


def test_from_tessera_errors(client, sparse, dense):
    with pytest.raises(engine.TileDBError):
        tdask.from_tessera(sparse)
    with pytest.raises(engine.TileDBError):
        tdask.from_tessera(dense)  # two attributes: one must be named
    with pytest.raises(engine.TileDBError):
        tdask.from_tessera(dense, attribute="zz")


def test_to_tessera_create_read_by_libtiledb(client, tmp_path):
    uri = str(tmp_path / "w")
    src = da.from_array(np.arange(30 * 17, dtype=np.float32).reshape(30, 17), chunks=(8, 5))
    tdask.to_tessera(src, uri, attr="v")
    with tiledb.open(uri) as R:
        np.testing.assert_array_equal(R[:]["v"] if isinstance(R[:], dict) else R[:], src.compute())
        assert R.schema.domain.dim(0).tile == 8 and R.schema.domain.dim(1).tile == 5
    # every block is a fragment of its own, all at one timestamp
    frags = tiledb.array_fragments(uri)
    assert len(frags) == 4 * 4
    assert len({f.timestamp_range for f in frags}) == 1


def test_to_tessera_append_and_consolidate(client, tmp_path):
    uri = str(tmp_path / "w")
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("i", domain=(100, 199), tile=10, dtype=np.int64)),
        attrs=[tiledb.Attr("a", dtype=np.int64)],
    ))
    part1 = da.arange(40, chunks=10, dtype=np.int64)
    part2 = da.arange(60, chunks=15, dtype=np.int64) + 1000
    # two writers at once into one array: neither sees half of the other
    d1 = tdask.to_tessera(part1, uri, attr="a", mode="append", compute=False)
    d2 = tdask.to_tessera(part2, uri, attr="a", mode="append", offset=(140,), compute=False, timestamp=int(time.time() * 1000) + 1)
    client.compute([d1, d2], sync=True)
    with tiledb.open(uri) as R:
        np.testing.assert_array_equal(R[:]["a"], np.concatenate([np.arange(40), np.arange(60) + 1000]))
    # a twin appended to without consolidating, then consolidated by libtiledb: the same
    # fragments must merge (libtiledb merges a dense run only when every prefix of it is
    # consolidatable, so how many remain depends on the order of the chunks' fragments)
    twin = str(tmp_path / "twin")
    shutil.copytree(uri, twin)
    zeros = da.zeros(10, chunks=5, dtype=np.int64)
    ts = int(time.time() * 1000) + 2
    tdask.to_tessera(zeros, uri, attr="a", mode="append", offset=(190,), consolidate=True, timestamp=ts)
    tdask.to_tessera(zeros, twin, attr="a", mode="append", offset=(190,), timestamp=ts)
    tiledb.consolidate(twin)
    with tiledb.open(uri) as R, tiledb.open(twin) as T:
        assert R[190:200]["a"].tolist() == [0] * 10
        np.testing.assert_array_equal(R[:]["a"], T[:]["a"])
    assert [f.timestamp_range for f in tiledb.array_fragments(uri)] == [f.timestamp_range for f in tiledb.array_fragments(twin)]


def test_read_dataframe_partitions_cover_every_cell_once(client, sparse):
    ddf = tdask.read_dataframe(sparse, npartitions=5)
    assert ddf.npartitions == 5
    got = ddf.compute()
    with tiledb.open(sparse) as R:
        want = R.df[:]
    key = ["x", "y", "v"]
    got = got.sort_values(key).reset_index(drop=True)
    want = want.sort_values(key).reset_index(drop=True)[list(got.columns)]
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    # partitions are disjoint ranges of x holding similar numbers of cells
    sizes = ddf.map_partitions(len).compute().tolist()
    assert sum(sizes) == len(want) and min(sizes) > 0
    assert max(sizes) < 3 * len(want) / 5


def test_read_dataframe_columns_and_cond(client, sparse):
    ddf = tdask.read_dataframe(sparse, columns=["x", "v", "s"], cond="v > 9000 and s == 's3'")
    got = ddf.compute().sort_values(["x", "v"]).reset_index(drop=True)
    with tiledb.open(sparse) as R:
        want = R.query(attrs=["v", "s"], dims=["x"], cond="v > 9000 and s == 's3'").df[:]
    want = want.sort_values(["x", "v"]).reset_index(drop=True)[["x", "v", "s"]]
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    # a groupby over the whole array
    g = tdask.read_dataframe(sparse).groupby("s")["v"].sum().compute().sort_index()
    with tiledb.open(sparse) as R:
        w = R.df[:].groupby("s")["v"].sum().sort_index()
    # (dask turns object strings into pyarrow strings)
    pd.testing.assert_series_equal(g, w, check_dtype=False, check_names=False, check_index_type=False)


def test_read_dataframe_dense(client, dense):
    got = tdask.read_dataframe(dense, npartitions=3).compute()
    with tiledb.open(dense) as R:
        want = R.df[:]
    pd.testing.assert_frame_equal(
        got.sort_values(["r", "c"]).reset_index(drop=True),
        want.sort_values(["r", "c"]).reset_index(drop=True)[list(got.columns)],
        check_dtype=False,
    )


def test_query_objects_pickle(dense):
    with engine.open(dense) as E:
        q = E.query(attrs=["a"], cond="b > 0")
        q2 = pickle.loads(pickle.dumps(q))
        np.testing.assert_array_equal(q2[:]["a"], q[:]["a"])
        q2.array.close()


def _kill_worker_soon(client, delay):
    import threading

    def kill():
        time.sleep(delay)
        workers = list(client.scheduler_info()["workers"])
        if workers:
            client.run(os._exit, 1, workers=[workers[0]], wait=False)

    t = threading.Thread(target=kill, daemon=True)
    t.start()
    return t


def test_worker_killed_mid_sum(client, tmp_path):
    uri = str(tmp_path / "big")
    n = 600
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("r", domain=(0, n - 1), tile=20, dtype=np.int64),
                             tiledb.Dim("c", domain=(0, n - 1), tile=20, dtype=np.int64)),
        attrs=[tiledb.Attr("v", dtype=np.int64)],
    ))
    values = np.arange(n * n, dtype=np.int64).reshape(n, n)
    with tiledb.open(uri, "w") as A:
        A[:] = values
    x = tdask.from_tessera(uri, chunks="tiles")

    def slow(block):
        time.sleep(0.01)
        return block

    total = x.map_blocks(slow, dtype=x.dtype).sum()
    killer = _kill_worker_soon(client, 0.3)
    assert int(total.compute()) == int(values.sum())
    killer.join()
    client.wait_for_workers(2, timeout=60)


# ------------------------------------------------------------------------------------------
# object-store URIs from the workers


_S3_SECRET = "tessera-dask-secret-6d1f0c"
_S3_KEY_ID = "tessera-dask-key-id-93ab"


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_env():
    """moto's S3 server on loopback, a bucket, and the standard AWS variables pointing at it
    (set in this process, so that worker processes started afterwards inherit them)."""
    import subprocess
    import sys
    import urllib.request

    try:
        import moto  # noqa: F401
    except ImportError:
        yield None  # the object-store test skips; the others run
        return
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"moto's server exited with {proc.returncode}")
            try:
                urllib.request.urlopen(urllib.request.Request(f"{url}/dask-bucket", method="PUT", data=b""), timeout=5)
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("moto's server did not start within 60 s")
                time.sleep(0.2)
        env = {
            "AWS_ACCESS_KEY_ID": _S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": _S3_SECRET, "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": url, "AWS_ALLOW_HTTP": "true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield port
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _graph_bytes(collection) -> bytes:
    import cloudpickle

    return cloudpickle.dumps(dict(collection.__dask_graph__()))


def test_object_store_uris_from_the_workers(client, s3_env):
    # the workers were started after the variables were set: each finds its credentials in
    # its own environment, and none travels in a graph
    if s3_env is None:
        pytest.skip("needs moto's S3 server")
    c = client
    assert set(c.run(lambda: os.environ.get("AWS_SECRET_ACCESS_KEY")).values()) == {_S3_SECRET}
    # a secret in the configuration is dropped too
    leaky = {"vfs.s3.aws_secret_access_key": _S3_SECRET, "vfs.s3.aws_access_key_id": _S3_KEY_ID}
    dense = "s3://dask-bucket/dense"
    values = np.arange(48 * 30, dtype=np.int32).reshape(48, 30)
    src = da.from_array(values, chunks=(16, 10))
    write = tdask.to_tessera(src, dense, attr="v", config=leaky, compute=False)
    g = _graph_bytes(write)
    assert _S3_SECRET.encode() not in g and _S3_KEY_ID.encode() not in g
    c.compute(write, sync=True)
    x = tdask.from_tessera(dense, config=leaky, chunks="tiles")
    g = _graph_bytes(x)
    assert _S3_SECRET.encode() not in g and _S3_KEY_ID.encode() not in g
    assert x.npartitions == 9
    np.testing.assert_array_equal(x.compute(), values)
    assert int(tdask.from_tessera(dense).sum().compute()) == int(values.sum())
    # libtiledb reads what the workers wrote
    ctx = tiledb.Ctx({
        "vfs.s3.endpoint_override": f"127.0.0.1:{s3_env}", "vfs.s3.scheme": "http",
        "vfs.s3.use_virtual_addressing": "false", "vfs.s3.region": "us-east-1",
        "vfs.s3.aws_access_key_id": _S3_KEY_ID, "vfs.s3.aws_secret_access_key": _S3_SECRET,
    })
    with tiledb.open(dense, ctx=ctx) as R:
        np.testing.assert_array_equal(R[:]["v"] if isinstance(R[:], dict) else R[:], values)
    assert len(tiledb.array_fragments(dense, ctx=ctx)) == 9

    # a sparse array as a dataframe, read by the workers
    sparse = "s3://dask-bucket/sparse"
    schema = engine.ArraySchema(
        domain=engine.Domain(engine.Dim("x", domain=(0, 9999), tile=100, dtype=np.int64)),
        attrs=[engine.Attr("v", dtype=np.float64)], sparse=True, capacity=64,
    )
    engine.Array.create(sparse, schema)
    rng = np.random.default_rng(5)
    xs = rng.choice(10_000, 2000, replace=False)
    vs = rng.random(2000)
    with engine.open(sparse, "w") as A:
        A[xs] = {"v": vs}
    ddf = tdask.read_dataframe(sparse, config=leaky, npartitions=4)
    g = _graph_bytes(ddf)
    assert _S3_SECRET.encode() not in g and _S3_KEY_ID.encode() not in g
    got = ddf.compute().sort_values(["x", "v"]).reset_index(drop=True)
    want = pd.DataFrame({"x": xs, "v": vs}).sort_values(["x", "v"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
