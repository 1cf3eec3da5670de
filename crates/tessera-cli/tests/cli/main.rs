//! The integration tests of the `tessera` command, one module per former test binary, linked
//! into one executable. `crash` (the crash harness `cargo xtask crash` runs) and `s3` (the
//! S3 emulator tests, `#[ignore]`d) stay binaries of their own.

#[path = "../support/mod.rs"]
mod support;

mod bad_files;
mod closed_pipe;
mod concurrency;
mod consolidate;
mod encryption;
mod fragments;
mod groups;
mod lifecycle;
mod memory_budget;
mod meta;
mod pictures;
mod points;
mod queries;
mod schema;
mod sql;
mod verify;
mod writes;
