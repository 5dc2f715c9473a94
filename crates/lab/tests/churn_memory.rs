//! Route churn leaves the heap flat: the soak's route changes (`lwt6 bench soak`) applied through a
//! [`SnapshotWriter`] (both of its snapshots) under an allocator that counts the bytes allocated and not freed.
//!
//! Before the trie folded its emptied nodes (docs/fuzzing.md, *The soak*) the heap grew by about 4.5 bytes per
//! change in steps of the node vector's doubling; the run below is long enough that such growth must cross a
//! doubling whatever the starting point.

use lwt6_dataplane::snapshot::{Snapshot, SnapshotHandle, SnapshotWriter};
use lwt6_lab::bench::soak;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method hands its arguments unchanged to the system allocator, which upholds `GlobalAlloc`'s
// contract, and returns its result unchanged; the only other work is an atomic update of a static, which neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: our caller upholds `alloc`'s contract (a non-zero size), which is what `System.alloc` needs.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: our caller passes a block this allocator returned with this layout, i.e. one `System` returned
        // (every method forwards to it), which is what `System.dealloc` needs.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: as for `dealloc` (a block `System` returned, with this layout), and our caller's valid non-zero
        // `new` size, which is what `System.realloc` needs.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The soak's window of 1000 /48s reaches its widest shape (spanning two nodes at every level below the root)
/// when its addresses first carry into bits 24..32, after 2^16 additions (about 131,000 changes); from then on
/// the heap must not grow, however many changes follow. (It wavers by a few dozen bytes with the state of the
/// batch in flight; a kilobyte of slack allows that and nothing else: the growth this catches is a node
/// vector's doubling, hundreds of kilobytes.)
#[test]
fn soak_route_churn_keeps_the_heap_flat() {
    let cfg = lwt6_config::parse(soak::ROUTER_CONF).unwrap();
    let handle = Arc::new(SnapshotHandle::new(Snapshot::build(&cfg).unwrap()));
    let mut writer = SnapshotWriter::new(Arc::clone(&handle));
    let mut changes = soak::Changes::default();
    let mut buf = Vec::with_capacity(10);
    let mut apply = |n: usize| {
        for _ in 0..n / 10 {
            buf.clear();
            buf.extend(changes.by_ref().take(10));
            writer.apply(&buf).unwrap();
        }
    };
    let live = || LIVE.load(Ordering::Relaxed);
    apply(140_000);
    let plateau = live();
    // Sampled without allocating (a growing vector of samples would be growth of its own).
    let mut samples = [0isize; 12];
    for s in samples.iter_mut() {
        apply(25_000);
        *s = live();
    }
    let routes = handle.load().fib().len();
    assert!(
        samples.iter().all(|s| s - plateau <= 1024),
        "the heap grew under route churn: {plateau} bytes after 140,000 changes, then every 25,000: {samples:?} \
         ({routes} routes)"
    );
}
