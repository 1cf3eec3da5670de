"""Filters and filter lists, as tiledb-py names them; each converts to and from the engine's
schema JSON (``{"type": "zstd", "level": 3}``)."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from . import _types


class Filter:
    """A filter of a pipeline. Subclasses hold their options as attributes."""

    _type = ""
    _options: tuple = ()

    def __init__(self, ctx=None):
        self._ctx = ctx

    def _attrs_(self) -> dict:
        return {k: getattr(self, k) for k in self._options}

    def __repr__(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self._attrs_().items())
        return f"{type(self).__name__}({opts})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._attrs_() == other._attrs_()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self._attrs_().items())))

    def _to_json(self) -> dict:
        return {"type": self._type}


class _CompressionFilter(Filter):
    _options = ("level",)

    def __init__(self, level: int = -1, ctx=None):
        super().__init__(ctx)
        self.level = int(level)

    def _to_json(self) -> dict:
        return {"type": self._type, "level": self.level}


class NoOpFilter(Filter):
    """A filter that does nothing."""

    _type = "none"


class GzipFilter(_CompressionFilter):
    """Gzip compression."""

    _type = "gzip"


class ZstdFilter(_CompressionFilter):
    """Zstandard compression."""

    _type = "zstd"


class LZ4Filter(_CompressionFilter):
    """LZ4 compression."""

    _type = "lz4"


class Bzip2Filter(_CompressionFilter):
    """Bzip2 compression."""

    _type = "bzip2"


class RleFilter(_CompressionFilter):
    """Run-length encoding."""

    _type = "rle"

    def __repr__(self) -> str:
        return "RleFilter()"


class DictionaryFilter(_CompressionFilter):
    """Dictionary encoding of strings."""

    _type = "dictionary"

    def __repr__(self) -> str:
        return "DictionaryFilter()"


class _DeltaLike(Filter):
    _options = ("reinterp_dtype",)

    def __init__(self, level: int = -1, reinterp_dtype=None, ctx=None):
        super().__init__(ctx)
        self.level = int(level)
        self.reinterp_dtype = None if reinterp_dtype is None else np.dtype(reinterp_dtype)

    def _to_json(self) -> dict:
        j = {"type": self._type, "level": self.level}
        if self.reinterp_dtype is not None:
            j["reinterpret_type"] = _types.from_numpy(self.reinterp_dtype)[1]
        return j


class DoubleDeltaFilter(_DeltaLike):
    """Double-delta encoding."""

    _type = "double_delta"


class DeltaFilter(_DeltaLike):
    """Delta encoding."""

    _type = "delta"


class BitWidthReductionFilter(Filter):
    """Bit width reduction in windows of ``window`` values."""

    _type = "bit_width_reduction"
    _options = ("window",)

    def __init__(self, window: int = 256, ctx=None):
        super().__init__(ctx)
        self.window = int(window)

    def _to_json(self) -> dict:
        return {"type": self._type, "max_window": self.window}


class PositiveDeltaFilter(BitWidthReductionFilter):
    """Positive delta encoding in windows of ``window`` values."""

    _type = "positive_delta"

    def __init__(self, window: int = 1024, ctx=None):
        super().__init__(window, ctx)


class BitShuffleFilter(Filter):
    """Bit shuffling."""

    _type = "bitshuffle"


class ByteShuffleFilter(Filter):
    """Byte shuffling."""

    _type = "byteshuffle"


class ChecksumMD5Filter(Filter):
    """MD5 checksums of each chunk."""

    _type = "checksum_md5"


class ChecksumSHA256Filter(Filter):
    """SHA-256 checksums of each chunk."""

    _type = "checksum_sha256"


class XORFilter(Filter):
    """XOR of consecutive values."""

    _type = "xor"


class FloatScaleFilter(Filter):
    """Floats stored as scaled integers of ``bytewidth`` bytes."""

    _type = "scale_float"
    _options = ("factor", "offset", "bytewidth")

    def __init__(self, factor: float = 1.0, offset: float = 0.0, bytewidth: int = 8, ctx=None):
        super().__init__(ctx)
        self.factor = float(factor)
        self.offset = float(offset)
        self.bytewidth = int(bytewidth)

    def _to_json(self) -> dict:
        return {"type": self._type, "factor": self.factor, "offset": self.offset, "byte_width": self.bytewidth}


class WebpFilter(Filter):
    """WebP image compression of pixel tiles."""

    _type = "webp"
    _options = ("quality", "input_format", "lossless")
    _FORMATS = {"none": 0, "rgb": 1, "bgr": 2, "rgba": 3, "bgra": 4}

    def __init__(self, quality: float = 100.0, input_format="none", lossless: bool = False, ctx=None):
        super().__init__(ctx)
        self.quality = float(quality)
        if isinstance(input_format, int):
            input_format = {v: k for k, v in self._FORMATS.items()}.get(input_format, "none")
        self.input_format = str(input_format).lower()
        self.lossless = bool(lossless)
        self._extents = [0, 0]

    def _to_json(self) -> dict:
        return {
            "type": self._type,
            "quality": self.quality,
            "format": self.input_format,
            "lossless": self.lossless,
            "extents": list(self._extents),
        }


_BY_TYPE = {
    cls._type: cls
    for cls in (
        NoOpFilter, GzipFilter, ZstdFilter, LZ4Filter, Bzip2Filter, RleFilter, DictionaryFilter,
        DoubleDeltaFilter, DeltaFilter, BitWidthReductionFilter, PositiveDeltaFilter,
        BitShuffleFilter, ByteShuffleFilter, ChecksumMD5Filter, ChecksumSHA256Filter, XORFilter,
        FloatScaleFilter, WebpFilter,
    )
}


def _filter_from_json(j: dict) -> Filter:
    t = j["type"]
    cls = _BY_TYPE.get(t)
    if cls is None:
        from ._tessera import NotSupportedError

        raise NotSupportedError(f"filter {t!r} has no Python class")
    if issubclass(cls, _DeltaLike):
        rt = j.get("reinterpret_type")
        dt = None if rt in (None, "any") else _types.to_numpy(rt, 1)
        return cls(level=j.get("level", -1), reinterp_dtype=dt)
    if issubclass(cls, _CompressionFilter):
        return cls(level=j.get("level", -1))
    if issubclass(cls, BitWidthReductionFilter):
        return cls(window=j.get("max_window", 256 if cls is BitWidthReductionFilter else 1024))
    if cls is FloatScaleFilter:
        return cls(j.get("factor", 1.0), j.get("offset", 0.0), j.get("byte_width", 8))
    if cls is WebpFilter:
        f = cls(j.get("quality", 100.0), j.get("format", "none"), j.get("lossless", False))
        f._extents = list(j.get("extents", [0, 0]))
        return f
    return cls()


class FilterList:
    """An ordered list of filters (a pipeline)."""

    def __init__(self, filters: Iterable[Filter] | None = None, chunksize: int | None = None, ctx=None):
        filters = list(filters or [])
        for f in filters:
            if not isinstance(f, Filter):
                raise ValueError(f"{f!r} is not a tiledb Filter")
        self._filters = filters
        # libtiledb's default maximum chunk size
        self.chunksize = 65536 if chunksize is None else int(chunksize)

    def __len__(self) -> int:
        return len(self._filters)

    def __iter__(self):
        return iter(self._filters)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self._filters[i])
        return self._filters[i]

    def __contains__(self, f) -> bool:
        return f in self._filters

    def __eq__(self, other) -> bool:
        if other is None:
            return False
        if isinstance(other, FilterList):
            return self._filters == other._filters
        try:
            return self._filters == list(other)
        except TypeError:
            return False

    def __bool__(self) -> bool:
        return bool(self._filters)

    def append(self, f: Filter) -> None:
        if not isinstance(f, Filter):
            raise ValueError(f"{f!r} is not a tiledb Filter")
        self._filters.append(f)

    def __repr__(self) -> str:
        return "FilterList([{}])".format(",\n       ".join(repr(f) for f in self._filters))

    def _to_json(self) -> list:
        return [f._to_json() for f in self._filters]

    @classmethod
    def _from_json(cls, js: Sequence[dict]) -> "FilterList":
        return cls([_filter_from_json(j) for j in js])


def _as_filter_list(filters) -> FilterList:
    if filters is None:
        return FilterList()
    if isinstance(filters, FilterList):
        return filters
    if isinstance(filters, Filter):
        return FilterList([filters])
    return FilterList(filters)
