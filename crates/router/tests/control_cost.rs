//! What a control request (`lwt6 ctl LINE`, `lwt6 ctl --batch`) costs on a running router, and what it leaves.
//!
//! Cost: a route request must not grow with the routing table. Counted structurally first: the bytes allocated
//! while a request is served (a copy of the configuration or of the table, or a map over all routes, allocates in
//! proportion to the table), at 5,000 and at 100,000 routes; then, with a wide margin for a loaded machine, the
//! time it takes (median of many requests).
//!
//! Result: requests that add, delete, replace routes and fail half-way give the configuration and the table a
//! router started from the equivalent file has.

use lwt6_config::parse;
use lwt6_dataplane::snapshot::{Snapshot, SnapshotHandle};
use lwt6_router::control::Control;
use lwt6_router::show::routes_text;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The global allocator, counting the bytes each thread asks for (allocations and reallocations' new sizes).
struct Counting;

thread_local! {
    static ASKED: Cell<u64> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    let _ = ASKED.try_with(|a| a.set(a.get() + bytes as u64));
}

// SAFETY: every method hands its arguments unchanged to the system allocator, which upholds `GlobalAlloc`'s
// contract, and returns its result unchanged. Counting touches a const-initialised thread-local `Cell` with no
// destructor, through `try_with`: it neither allocates (no reentry) nor panics, even during thread teardown.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size());
        // SAFETY: our caller upholds `alloc`'s contract (a non-zero size), which is what `System.alloc` needs.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: our caller passes a block this allocator returned with this layout, i.e. one `System` returned
        // (every method forwards to it), which is what `System.dealloc` needs.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count(l.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new);
        // SAFETY: as for `dealloc` (a block `System` returned, with this layout), and our caller's valid non-zero
        // `new` size, which is what `System.realloc` needs.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes this thread has asked the allocator for so far.
fn asked() -> u64 {
    ASKED.with(Cell::get)
}

const HEAD: &str = "link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
";

/// A configuration of `n` routes: gateway routes, one in ten a seg6 tunnel.
fn table(n: usize) -> String {
    let mut s = String::from(HEAD);
    for i in 0..n {
        let (hi, lo) = (i >> 16, i & 0xffff);
        if i % 10 == 0 {
            s += &format!(
                "-6 route add fd10:{hi:x}:{lo:x}::/48 encap seg6 mode encap segs fc00::{lo:x} dev r1\n"
            );
        } else {
            s += &format!("-6 route add fd10:{hi:x}:{lo:x}::/48 via fd00:2::2 dev r1\n");
        }
    }
    s
}

/// A running router's control thread over `text`.
fn control(text: &str) -> Control {
    let cfg = parse(text).expect("the configuration parses");
    let snap = Snapshot::build(&cfg).expect("the configuration builds");
    Control::new(
        cfg,
        Arc::new(SnapshotHandle::new(snap)),
        vec![Arc::default()],
        "test",
    )
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

/// Serves `lines` (one line, or a batch) and returns (bytes asked, time taken); the request must pass.
fn serve(c: &mut Control, lines: &[&str]) -> (u64, Duration) {
    let (a0, t0) = (asked(), Instant::now());
    let (ok, msg) = if lines.len() == 1 {
        c.handle_line(lines[0])
    } else {
        c.handle_batch(lines)
    };
    let cost = (asked() - a0, t0.elapsed());
    assert!(ok, "{lines:?}: {msg}");
    cost
}

/// The median bytes and time of route requests (an add, a replace, a change, a delete, and a batch of ten
/// lines) on a router of `n` routes, after a first change made the writer's spare.
fn route_request_cost(n: usize) -> (u64, Duration) {
    let mut c = control(&table(n));
    serve(&mut c, &["-6 route add fd20::/48 via fd00:2::2 dev r1"]);
    assert!(c.writer.is_some(), "route lines change the table in place");
    let (mut bytes, mut times) = (Vec::new(), Vec::new());
    for k in 0..40 {
        let p = format!("fd21:{k:x}::/48");
        let requests: Vec<Vec<String>> = vec![
            vec![format!("-6 route add {p} via fd00:2::2 dev r1")],
            vec![format!(
                "-6 route replace {p} encap seg6 mode encap segs fc00::{k:x} dev r1"
            )],
            vec![format!("-6 route change {p} via fd00:1::1 dev r0")],
            vec![format!("-6 route del {p}")],
            (0..10)
                .map(|j| format!("-6 route add fd22:{k:x}:{j:x}::/48 via fd00:2::2 dev r1"))
                .collect(),
        ];
        for r in &requests {
            let lines: Vec<&str> = r.iter().map(String::as_str).collect();
            let (b, t) = serve(&mut c, &lines);
            bytes.push(b);
            times.push(t);
        }
    }
    assert_eq!(c.cfg().routes.len(), n + 1 + 400);
    (median(bytes), median(times))
}

/// A route request allocates and takes the same at 5,000 routes as at 100,000: no copy of the configuration or
/// of the table, no pass over the routes.
#[test]
fn a_route_request_does_not_grow_with_the_table() {
    let (small_bytes, small_time) = route_request_cost(5_000);
    let (big_bytes, big_time) = route_request_cost(100_000);
    eprintln!(
        "route request, median: 5,000 routes {small_bytes} B {small_time:?}; 100,000 routes {big_bytes} B {big_time:?}"
    );
    // A copy of 100,000 routes alone asks for megabytes; the request itself, a few kilobytes.
    assert!(
        big_bytes <= 2 * small_bytes + 4096,
        "bytes per request grow with the table: {small_bytes} at 5,000 routes, {big_bytes} at 100,000"
    );
    assert!(
        big_bytes < 64 * 1024,
        "{big_bytes} bytes per request at 100,000 routes"
    );
    // Twenty times the routes; a pass over them would take about twenty times as long. Allow four (a loaded
    // machine, caches) plus a millisecond.
    assert!(
        big_time <= small_time * 4 + Duration::from_millis(1),
        "time per request grows with the table: {small_time:?} at 5,000 routes, {big_time:?} at 100,000"
    );
}

/// Batches that add, delete, replace and change routes, one that fails half-way, and single lines: the router's
/// configuration and table are those of a router started from the file of the routes that remain.
#[test]
fn route_requests_leave_what_the_equivalent_file_gives() {
    let start = format!(
        "{HEAD}-6 route add fd10:1::/48 via fd00:2::2 dev r1
-6 route add fd10:2::/48 encap seg6 mode encap segs fc00::2 dev r1
-6 route add fd10:3::/48 via fd00:2::2 dev r1 metric 10
-6 route add fd10:3::/48 via fd00:1::1 dev r0 metric 20
-6 route add fd10:4::/48 via fd00:2::2 dev r1
-6 route add fd10:5::/48 dev r1 table 100
"
    );
    let mut c = control(&start);
    let before = (c.cfg().clone(), routes_text(&c.handle.load(), false, None));
    // Fails on its last line: nothing of it stays.
    let (ok, msg) = c.handle_batch(&[
        "-6 route add fd10:9::/48 via fd00:2::2 dev r1",
        "-6 route del fd10:1::/48",
        "-6 route replace fd10:2::/48 via fd00:1::1 dev r0",
        "-6 route del fd10:3::/48",
        "-6 route add fd10:4::/48 via fd00:2::2 dev r1",
    ]);
    assert!(
        !ok && msg.starts_with("line 5: 'fd10:4::/48': route already exists"),
        "{msg}"
    );
    assert_eq!(
        (c.cfg().clone(), routes_text(&c.handle.load(), false, None)),
        before
    );
    for req in [
        vec![
            "-6 route add fd10:9::/48 via fd00:2::2 dev r1",
            "-6 route del fd10:1::/48",
            "-6 route replace fd10:2::/48 via fd00:1::1 dev r0",
            // The lowest metric goes.
            "-6 route del fd10:3::/48",
            "-6 route change fd10:4::/48 encap seg6 mode inline segs fc00::4 dev r1",
            "-6 route add fd10:a::/48 via fd00:2::2 dev r1",
            "-6 route del fd10:a::/48",
        ],
        vec!["-6 route add fd10:b::/48 via fd00:1::1 dev r0 table 100"],
        vec!["-6 route del fd10:5::/48 table 100"],
    ] {
        let (ok, msg) = if req.len() == 1 {
            c.handle_line(req[0])
        } else {
            c.handle_batch(&req)
        };
        assert!(ok, "{req:?}: {msg}");
        assert!(c.writer.is_some(), "route lines change the table in place");
    }
    let equivalent = format!(
        "{HEAD}-6 route add fd10:2::/48 via fd00:1::1 dev r0
-6 route add fd10:3::/48 via fd00:1::1 dev r0 metric 20
-6 route add fd10:4::/48 encap seg6 mode inline segs fc00::4 dev r1
-6 route add fd10:9::/48 via fd00:2::2 dev r1
-6 route add fd10:b::/48 via fd00:1::1 dev r0 table 100
"
    );
    let fresh = control(&equivalent);
    assert_eq!(
        routes_text(&c.handle.load(), false, None),
        routes_text(&fresh.handle.load(), false, None)
    );
    let shapes = |c: &Control| {
        let mut v: Vec<String> = c
            .cfg()
            .routes
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.line = 0;
                format!("{r:?}")
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(shapes(&c), shapes(&fresh));
    let strip = |cfg: &lwt6_dataplane::spec::Config| {
        let mut cfg = cfg.clone();
        cfg.routes.clear();
        cfg
    };
    assert_eq!(strip(c.cfg()), strip(fresh.cfg()));
}
