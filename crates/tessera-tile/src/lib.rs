//! Tile framing (being written).
