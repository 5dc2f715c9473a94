//! Giving freed memory back to the system after a large control request (a batch of route deletions): the
//! allocator keeps freed small blocks for reuse, so without it the router's resident memory stays at its
//! high-water mark.

/// Lines in a request from which the heap is trimmed after it.
pub const LARGE_REQUEST: usize = 10_000;

/// Returns the free memory of the heap to the system.
pub fn release_free_memory() {
    lwt6_io::heap::release_free_memory();
}
