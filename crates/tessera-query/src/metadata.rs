//! Array metadata (being written).
