//! A global allocator for applications that read large arrays: the system allocator, with
//! transparent huge pages asked for on large zeroed blocks.
//!
//! A full read fills a result of hundreds of MB that the kernel hands out one 4 KB page at a
//! time: one page fault per page, and on a two-core machine those faults were a third of an
//! unfiltered read's CPU. Where transparent huge pages are enabled only on request (`madvise`,
//! the default of many distributions), asking for them makes the kernel fault 2 MB at a time.
//! numpy asks for them on its large arrays, so a Python user of libtiledb has this already; in
//! Rust it is the application's choice, made by installing this allocator:
//!
//! ```
//! #[global_allocator]
//! static ALLOC: tessera::HugePageAlloc = tessera::HugePageAlloc;
//! ```
//!
//! The `tessera` CLI does. Only zeroed blocks of [`HUGE_PAGE_THRESHOLD`] bytes and more get the
//! hint: the system allocator maps those fresh (glibc does from 32 MB on, its largest mmap
//! threshold), and a large zeroed block is what a dense read allocates for a result it then
//! fills from end to end. Blocks that grow by reallocation or are filled only in part (tile
//! buffers, sparse results built by appending) are left to 4 KB pages: measured, huge pages
//! made those reads slower, since a touched huge page is zeroed whole. Everywhere but Linux it
//! is exactly the system allocator. The hint is best effort: where huge pages are off or not
//! supported, the kernel refuses it and nothing changes.

// The one module of the workspace with `unsafe`: a `GlobalAlloc` cannot be written without it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

/// Zeroed blocks of this many bytes and more are offered to the kernel for huge pages (see the
/// [module documentation](self) for why only those).
pub const HUGE_PAGE_THRESHOLD: usize = 32 << 20;

/// The system allocator, asking for transparent huge pages on zeroed blocks of at least
/// [`HUGE_PAGE_THRESHOLD`] bytes (see the [module documentation](self)).
#[derive(Debug, Default, Clone, Copy)]
pub struct HugePageAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// contract of `GlobalAlloc` is `System`'s; the `madvise` hint only changes how the kernel backs
// pages of the block just returned, never its address, size or contents.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see above).
        let ptr = unsafe { System.alloc_zeroed(layout) };
        advise(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Asks the kernel to back the whole 2 MB pages inside the block `ptr..ptr + len` with huge
/// pages, when the block is large enough.
#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, len: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    if ptr.is_null() || len < HUGE_PAGE_THRESHOLD {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if start < end {
        // SAFETY: `start..end` lies inside the block the system allocator just returned, and
        // MADV_HUGEPAGE is a hint: it neither moves, frees nor changes the contents of memory.
        // A refusal (huge pages not supported or disabled) leaves the block as it was, so the
        // result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Elsewhere the hint does not exist: the system allocator as it is.
#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `/proc/self/smaps` shows the mapping holding `addr` with the `hg` flag
    /// (MADV_HUGEPAGE); `None` when that cannot be read.
    #[cfg(target_os = "linux")]
    fn advised(addr: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = first.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.split_whitespace().any(|f| f == "hg"));
            }
        }
        None
    }

    /// Whether the kernel takes MADV_HUGEPAGE at all (it refuses it without THP support).
    #[cfg(target_os = "linux")]
    fn thp_supported() -> bool {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").is_ok()
    }

    #[test]
    fn behaves_as_the_system_allocator() {
        let alloc = HugePageAlloc;
        for size in
            [1, 4096, HUGE_PAGE_THRESHOLD - 1, HUGE_PAGE_THRESHOLD, 3 * HUGE_PAGE_THRESHOLD + 5]
        {
            let layout = Layout::from_size_align(size, 64).unwrap();
            // SAFETY: a non-zero size; every block is freed with the layout it was made with.
            unsafe {
                let zeroed = alloc.alloc_zeroed(layout);
                assert!(!zeroed.is_null());
                let block = std::slice::from_raw_parts_mut(zeroed, size);
                assert!(block.iter().all(|&b| b == 0));
                block.fill(7);
                let grown = alloc.realloc(zeroed, layout, size * 2);
                assert!(!grown.is_null());
                assert!(std::slice::from_raw_parts(grown, size).iter().all(|&b| b == 7));
                alloc.dealloc(grown, Layout::from_size_align(size * 2, 64).unwrap());
                let plain = alloc.alloc(layout);
                assert!(!plain.is_null());
                plain.write_bytes(1, size);
                alloc.dealloc(plain, layout);
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn large_zeroed_blocks_are_offered_huge_pages() {
        let alloc = HugePageAlloc;
        let size = 2 * HUGE_PAGE_THRESHOLD;
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: a non-zero size, freed with its layout.
        unsafe {
            let ptr = alloc.alloc_zeroed(layout);
            assert!(!ptr.is_null());
            let middle = ptr as usize + size / 2;
            if thp_supported() {
                assert_eq!(advised(middle), Some(true), "the middle of a large zeroed block");
            }
            alloc.dealloc(ptr, layout);
        }
    }
}
