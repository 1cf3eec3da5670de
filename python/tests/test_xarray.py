"""The xarray backend (engine="tessera") and tessera.xarray.to_tessera: Datasets written by
TileDB-CF read back as written, Tessera's writes read by libtiledb, lazy tile-aligned reads."""

import numpy as np
import pytest

from _helpers import tiledb

xr = pytest.importorskip("xarray")
cf = pytest.importorskip("tiledb.cf")
txr = pytest.importorskip("tessera.xarray")

pytestmark = pytest.mark.tessera_only


def _dataset():
    rng = np.random.default_rng(5)
    return xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), rng.random((6, 5, 8)), {"units": "K", "long_name": "temperature"}),
            "count": (("time",), np.arange(6, dtype=np.int32), {"note": "per step"}),
            "mask": (("lat", "lon"), (rng.random((5, 8)) > 0.5).astype(np.uint8)),
        },
        coords={
            "time": ("time", np.arange(6, dtype=np.int64) * 3600, {"units": "s"}),
            "lat": ("lat", np.linspace(-60.0, 60.0, 5)),
            "lon": ("lon", np.arange(8, dtype=np.float32) * 45),
        },
        attrs={"title": "test", "version": 3},
    )


def _open(uri, **kw):
    return xr.open_dataset(uri, engine="tessera", **kw)


def test_reads_what_tiledb_cf_wrote(tmp_path):
    ds = _dataset()
    uri = str(tmp_path / "cf")
    cf.from_xarray(ds, uri)
    got = _open(uri)
    xr.testing.assert_equal(got, ds)
    assert got.attrs["title"] == "test"
    assert got["temp"].attrs["units"] == "K"
    assert got["count"].attrs["note"] == "per step"


def test_round_trip_and_libtiledb_reads(tmp_path):
    ds = _dataset()
    uri = str(tmp_path / "ours")
    txr.to_tessera(ds, uri)
    got = _open(uri)
    xr.testing.assert_identical(got[["temp", "count", "mask"]].drop_attrs(deep=False), ds.drop_attrs(deep=False))
    assert got.attrs == {"title": "test", "version": 3}
    # libtiledb reads the arrays of the group: TileDB-CF's layout
    with tiledb.open(f"{uri}/temp") as A:
        np.testing.assert_array_equal(A[:]["temp"] if isinstance(A[:], dict) else A[:], ds["temp"].values)
        assert A.meta["__tiledb_attr.temp.units"] == "K"
    with tiledb.open(f"{uri}/lat") as A:
        np.testing.assert_array_equal(A[:]["lat_"] if isinstance(A[:], dict) else A[:], ds["lat"].values)
    with tiledb.Group(uri) as G:
        assert {m.name for m in G} == {"temp", "count", "mask", "time", "lat", "lon"}
        assert G.meta["title"] == "test"
    # the accessor writes the same
    ds.tessera.to_tessera(str(tmp_path / "acc"))
    xr.testing.assert_equal(_open(str(tmp_path / "acc")), ds)


def test_lazy_tile_aligned_reads(tmp_path):
    uri = str(tmp_path / "arr")
    dom = tiledb.Domain(
        tiledb.Dim("y", domain=(100, 139), tile=16, dtype=np.int64),
        tiledb.Dim("x", domain=(0, 29), tile=10, dtype=np.int64),
    )
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("v", dtype=np.float32), tiledb.Attr("w", dtype=np.int16)]))
    v = np.arange(40 * 30, dtype=np.float32).reshape(40, 30)
    with tiledb.open(uri, "w") as A:
        A[:] = {"v": v, "w": (v % 7).astype(np.int16)}
        A.meta["source"] = "unit test"
    ds = _open(uri)
    assert ds.attrs["source"] == "unit test"
    assert ds["v"].encoding["preferred_chunks"] == {"y": 16, "x": 10}
    np.testing.assert_array_equal(ds["y"].values, np.arange(100, 140))
    # indexing reads only the box asked for
    np.testing.assert_array_equal(ds["v"].isel(y=slice(3, 20, 2), x=7).values, v[3:20:2, 7])
    np.testing.assert_array_equal(ds["w"].sel(y=120).values, (v[20] % 7).astype(np.int16))
    chunked = _open(uri, chunks={})
    assert chunked["v"].chunks == ((16, 16, 8), (10, 10, 10))
    np.testing.assert_array_equal(chunked["v"].sum().compute(), v.sum())
