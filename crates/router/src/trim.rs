//! Giving freed memory back to the system after a large control request (a batch of route deletions): the
//! allocator keeps freed small blocks for reuse, so without it the router's resident memory stays at its
//! high-water mark.

/// Lines in a request from which the heap is trimmed after it.
pub const LARGE_REQUEST: usize = 10_000;

/// Bytes of a reply from which the heap is trimmed after it is made.
pub const LARGE_REPLY: usize = 1 << 20;

/// After a reply was made: a large one (`show routes` of a large table, megabytes) freed as much in the heap
/// while it was made, given back here rather than kept at the high-water mark.
pub fn after_reply(reply: (bool, String)) -> (bool, String) {
    if reply.1.len() >= LARGE_REPLY {
        release_free_memory();
    }
    reply
}

/// Returns the free memory of the heap to the system.
pub fn release_free_memory() {
    lwt6_io::heap::release_free_memory();
}

/// After a request of `changes` changes was published: a large one (a batch of route deletions) is caught up by
/// the spare snapshot at once and the heap trimmed after it. Left to the next request, the spare's share of the
/// deletions (the route slots and maps the two snapshots hold, freed by whichever lets go last) would be freed
/// after this request's trim, and the next request, however small, would not trim.
pub fn after_request(writer: &mut lwt6_dataplane::snapshot::SnapshotWriter, changes: usize) {
    if changes >= LARGE_REQUEST {
        writer.catch_up();
        release_free_memory();
    }
}

/// After a change published through the writer: when the spare snapshot has just caught up with a large batch
/// (a large deletion is freed there, by the request after it, however small), the heap is trimmed too.
pub fn after_catch_up(writer: &lwt6_dataplane::snapshot::SnapshotWriter) {
    if writer.caught_up() >= LARGE_REQUEST {
        release_free_memory();
    }
}
