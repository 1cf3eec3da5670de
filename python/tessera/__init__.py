"""Tessera: a pure-Rust engine for TileDB arrays, with tiledb-py's Python API.

``import tessera as tiledb`` runs typical tiledb-py code unchanged: `open`, `DenseArray`,
`SparseArray`, `ArraySchema`, `Dim`, `Attr`, filters, `from_numpy`, `from_pandas`,
`consolidate`, `vacuum`, `Group`, ... Reads and writes run in Rust with the GIL released.
"""

from ._tessera import NotSupportedError, TileDBError, __engine_version__
from .array import AggregationProxy, Array, DenseArray, MultiRangeIndexer, DataFrameIndexer, Query, SparseArray, open
from .cond import QueryCondition
from .ctx import Config, Ctx, default_ctx
from .filter import (
    BitShuffleFilter,
    BitWidthReductionFilter,
    ByteShuffleFilter,
    Bzip2Filter,
    ChecksumMD5Filter,
    ChecksumSHA256Filter,
    DeltaFilter,
    DictionaryFilter,
    DoubleDeltaFilter,
    Filter,
    FilterList,
    FloatScaleFilter,
    GzipFilter,
    LZ4Filter,
    NoOpFilter,
    PositiveDeltaFilter,
    RleFilter,
    WebpFilter,
    XORFilter,
    ZstdFilter,
)
from .group import Group, Object
from .highlevel import (
    FragmentInfo,
    FragmentInfoList,
    array_exists,
    array_fragments,
    consolidate,
    empty_like,
    from_numpy,
    from_pandas,
    ls,
    object_type,
    schema_like,
    vacuum,
    walk,
)
from .dataframe_ import open_dataframe
from .metadata import Metadata
from .schema import ArraySchema, Attr, Dim, Domain, Enumeration
from .current_domain import CurrentDomain, CurrentDomainType, NDRectangle
from .schema_evolution import ArraySchemaEvolution

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
