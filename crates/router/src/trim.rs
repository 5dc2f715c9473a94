//! Giving freed memory back to the system after a large control request (a batch of route deletions): the
//! allocator keeps freed small blocks for reuse, so without it the router's resident memory stays at its
//! high-water mark.

/// Lines in a request from which the heap is trimmed after it.
pub const LARGE_REQUEST: usize = 10_000;

/// Returns the free memory of the heap to the system.
pub fn release_free_memory() {
    lwt6_io::heap::release_free_memory();
}

/// After a change published through the writer: when the spare snapshot has just caught up with a large batch
/// (a large deletion is freed there, by the request after it, however small), the heap is trimmed too.
pub fn after_catch_up(writer: &lwt6_dataplane::snapshot::SnapshotWriter) {
    if writer.caught_up() >= LARGE_REQUEST {
        release_free_memory();
    }
}
