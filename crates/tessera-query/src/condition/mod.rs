//! Query conditions (being written).
