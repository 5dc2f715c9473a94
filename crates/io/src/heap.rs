//! The process heap: where large blocks live, and giving freed memory back to the system.

/// Size from which glibc's allocator maps a block on its own (`M_MMAP_THRESHOLD`): its default, 128 KiB.
pub const MAP_FROM: usize = 128 * 1024;

/// Keeps every block of at least [`MAP_FROM`] in a mapping of its own (glibc's `mallopt(M_MMAP_THRESHOLD)`;
/// nothing with other C libraries), for the whole process.
///
/// glibc starts at 128 KiB but raises the threshold to the size of each mapped block freed, up to 32 MiB: after
/// the first large vectors of a router are freed (the configuration's, a snapshot's tables when it is rebuilt or
/// caught up), blocks of many megabytes go into the heap instead, among small ones. There, a freed table can be
/// given back only page by page around what is still in use, and a table that grows is copied instead of
/// remapped (`mremap`), so that both copies are resident for a while and the old one's pages stay scattered.
/// Setting the threshold once turns the raising off. On 300,000 routes (docs/BENCHMARKS.md, *Memory per
/// route*): 542 → 483 bytes per /64 added over the socket, and +18.2 % → +11.6 % of memory kept after deleting
/// them.
pub fn map_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes no pointer; it sets a parameter of the allocator under its lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_FROM as libc::c_int);
    }
}

/// Returns the free memory of the heap to the system (glibc's `malloc_trim`; nothing with other C libraries):
/// the allocator keeps freed small blocks for reuse, so that without it a process's resident memory stays at
/// its high-water mark after it frees much (a router after a large batch of route deletions).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
