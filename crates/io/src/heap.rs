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
/// its high-water mark after it frees much (a router after a large batch of route deletions). The calling
/// thread's cache of freed small blocks goes back to the heap first ([`flush_thread_cache`]).
pub fn release_free_memory() {
    flush_thread_cache();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Blocks of each small size that glibc's per-thread cache may hold: 7 unless set otherwise
/// (`glibc.malloc.tcache_count`); taking a few more costs nothing.
const CACHED_PER_SIZE: usize = 16;

/// The small sizes glibc's per-thread cache holds, unless set otherwise (`glibc.malloc.tcache_max`): 64, from 24
/// to 1,032 bytes in steps of 16.
const CACHED_SIZES: usize = 64;

/// Hands the calling thread's cache of freed small blocks back to the heap (glibc; nothing with other C
/// libraries).
///
/// glibc keeps the last few blocks a thread freed of each small size (up to 1 KiB) in a cache of that thread's
/// own (tcache), for its next allocations of that size. To the heap they are in use, and `malloc_trim` leaves the
/// pages they are on. After a large request they are the last of many blocks freed all over the heap, one or two
/// per page: on a router of 20,000 routes that added and deleted 100,000, about 0.5 MiB of pages
/// (docs/BENCHMARKS.md, *Memory per route*). Nothing in glibc empties a live thread's cache; a thread's cache
/// goes back to the heap when the thread ends. So the cache's blocks are taken here (allocations of each of its
/// sizes, which it serves first) and freed by a thread that ends at once.
pub fn flush_thread_cache() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut taken: Vec<usize> = Vec::with_capacity(CACHED_SIZES * CACHED_PER_SIZE);
        for class in 0..CACHED_SIZES {
            for _ in 0..CACHED_PER_SIZE {
                // SAFETY: malloc takes a size and returns a block or null; the block is freed below, once.
                let p = unsafe { libc::malloc(24 + 16 * class) };
                if !p.is_null() {
                    taken.push(p as usize);
                }
            }
        }
        let free_all = |blocks: &[usize]| {
            for p in blocks {
                // SAFETY: each address is a block malloc returned above, freed once.
                unsafe { libc::free(*p as *mut libc::c_void) };
            }
        };
        let freed_there = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("lwt6-heap".into())
                .spawn_scoped(s, || free_all(&taken))
                .is_ok()
        });
        if !freed_there {
            // No thread (the system refused one): freed here, back into this thread's cache, as they were.
            free_all(&taken);
        }
    }
}
