//! A small pool of decoded-tile buffers, so that a read decoding tile after tile reuses
//! memory that is already mapped instead of asking the allocator for fresh pages each time:
//! on large tiles, the kernel's page faults (zeroing every new page) cost as much as the
//! decompression itself.
//!
//! Buffers come back when the last [`Bytes`] holding a tile is dropped. The pool keeps at
//! most [`MAX_BUFFERS`] buffers and [`MAX_BYTES`] bytes, only buffers of at least
//! [`MIN_CAPACITY`] bytes (smaller ones are cheap for the allocator), and is emptied by
//! [`release`] when a read ends, so that nothing stays held between queries. A read under a
//! memory budget lowers the byte cap to a share of it ([`limit`]) until then.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

/// Buffers smaller than this are not pooled.
const MIN_CAPACITY: usize = 256 << 10;
/// At most this many buffers are kept.
const MAX_BUFFERS: usize = 16;
/// At most this many bytes (of capacity) are kept.
const MAX_BYTES: usize = 256 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// The most bytes the pool keeps now: [`MAX_BYTES`], or less while a read under a memory
/// budget runs (see [`limit`]).
static LIMIT: AtomicUsize = AtomicUsize::new(MAX_BYTES);

/// Keeps at most `bytes` pooled until the next [`release`] (a read under a memory budget:
/// the pool is part of what it holds). Buffers already pooled beyond it are freed.
pub(crate) fn limit(bytes: u64) {
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    LIMIT.fetch_min(bytes, Ordering::Relaxed);
    if let Ok(mut pool) = POOL.lock() {
        let mut held = 0usize;
        pool.retain(|b| {
            held += b.capacity();
            held <= bytes
        });
    }
}

/// An empty buffer for about `len` bytes: a pooled one of enough capacity when there is
/// one (the smallest that fits), else a new one (its capacity reserved by the decoder).
pub(crate) fn take(len: usize) -> Vec<u8> {
    if len < MIN_CAPACITY {
        return Vec::new();
    }
    let Ok(mut pool) = POOL.lock() else { return Vec::new() };
    let best = pool
        .iter()
        .enumerate()
        .filter(|(_, b)| b.capacity() >= len)
        .min_by_key(|(_, b)| b.capacity())
        .map(|(i, _)| i);
    match best {
        Some(i) => pool.swap_remove(i),
        None => Vec::new(),
    }
}

/// `buf` as shared bytes that return it to the pool when the last holder drops them.
pub(crate) fn share(buf: Vec<u8>) -> Bytes {
    if buf.capacity() < MIN_CAPACITY { Bytes::from(buf) } else { Bytes::from_owner(Pooled(buf)) }
}

/// Empties the pool (the end of a read).
pub(crate) fn release() {
    if let Ok(mut pool) = POOL.lock() {
        *pool = Vec::new();
    }
    LIMIT.store(MAX_BYTES, Ordering::Relaxed);
}

/// A pooled buffer's owner inside a [`Bytes`].
struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        buf.clear();
        let Ok(mut pool) = POOL.lock() else { return };
        let held: usize = pool.iter().map(Vec::capacity).sum();
        if pool.len() < MAX_BUFFERS && held + buf.capacity() <= LIMIT.load(Ordering::Relaxed) {
            pool.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_are_reused() {
        release();
        let mut buf = take(1 << 20);
        buf.extend_from_slice(&vec![7u8; 1 << 20]);
        let ptr = buf.as_ptr();
        let bytes = share(buf);
        let clone = bytes.clone();
        drop(bytes);
        assert_eq!(clone[0], 7);
        drop(clone);
        let again = take(1 << 19);
        assert_eq!(again.as_ptr(), ptr, "the buffer came back");
        assert!(again.is_empty());
        release();
        assert!(take(1 << 19).capacity() == 0);
        // Small buffers are not pooled.
        assert_eq!(take(16).capacity(), 0);
    }
}
