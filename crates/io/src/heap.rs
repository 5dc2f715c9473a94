//! The process heap: giving freed memory back to the system.

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
