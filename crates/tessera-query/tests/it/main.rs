//! The integration tests of tessera-query, one module per former test binary, linked into one
//! executable (one link instead of one per file). Helpers shared by several modules:
//! `common` and `consolidate_common` (in `tests/`, so a new top-level test file can still
//! use them with `mod common;`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../consolidate_common/mod.rs"]
mod consolidate_common;

mod array;
mod concurrency;
mod condition;
mod consolidate_commits;
mod consolidate_fragments;
mod consolidate_meta;
mod delete;
mod encrypted;
mod evolve;
mod groups;
mod lifecycle;
mod metadata;
mod old_formats;
mod read_aggregates;
mod read_api;
mod read_budget_bounded;
mod read_conditions;
mod read_dimension_aggregates;
mod read_evolution;
mod read_fixtures;
mod read_into;
mod read_partial_tiles;
mod read_points;
mod read_queries;
mod read_query_family;
mod read_sparse_partial;
mod read_sparse_partitions;
mod typed_results;
mod verify;
mod webp;
mod write_atomicity;
mod write_basic;
mod write_roundtrip;
