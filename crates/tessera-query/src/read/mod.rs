//! Reads (being written).
