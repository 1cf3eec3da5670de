//! Accounting of the decoded tile bytes a read holds: each holder of decoded tiles takes a
//! [`Held`] guard for their bytes, released when it is dropped, and the [`TileMeter`] keeps
//! the largest total seen, so tests and benchmarks can check that a memory budget bounds
//! what a read keeps in memory (not only what each batch returns).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The decoded tile bytes held by a read now, and at most so far.
#[derive(Debug, Default)]
pub(crate) struct TileMeter {
    now: AtomicU64,
    peak: AtomicU64,
}

impl TileMeter {
    /// A meter holding nothing.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(TileMeter::default())
    }

    /// Counts `bytes` as held until the guard is dropped.
    pub(crate) fn hold(self: &Arc<Self>, bytes: u64) -> Held {
        let now = self.now.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        Held { meter: self.clone(), bytes }
    }

    /// The most bytes held at once so far.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// Bytes counted as held by a [`TileMeter`] while this guard lives.
#[derive(Debug)]
pub(crate) struct Held {
    meter: Arc<TileMeter>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.meter.now.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_is_the_largest_total_held_at_once() {
        let m = TileMeter::new();
        let a = m.hold(10);
        let b = m.hold(5);
        drop(a);
        let c = m.hold(7);
        assert_eq!(m.peak(), 15);
        drop((b, c));
        let _d = m.hold(20);
        assert_eq!(m.peak(), 20);
    }
}
