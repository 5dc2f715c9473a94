//! lwt6's pipeline over AF_XDP: frames a peer sends into one veth are received by an AF_XDP port, forwarded by a
//! `Router` (seg6 encapsulation) and transmitted by the AF_XDP port of a second veth, where the peer captures
//! them. The captured bytes must be exactly what the same router produces offline for the same frames (the
//! offline path is the one checked byte for byte against the kernel in tests/kernel), so the live I/O neither
//! loses, reorders nor alters a frame. Needs root; FAILS, not skips, without it. Namespaces `l6x-<pid>-fwd[p]`
//! are deleted on every exit path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use lwt6::config;
use lwt6::io::afxdp::{XdpMode, XskOptions, XskPort};
use lwt6::io::port::Port;
use lwt6::router::Router;

const CONF: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::a,fc00::b dev r1
";

#[path = "support/netns.rs"]
mod netns;
use netns::{enter, ip, packet_socket};

/// Frame `i`: from the peer (fd00:1::1) to fd00:92::<i>, UDP, the index in the payload.
fn frame(i: u16) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0x01, 0x02, 0x02, 0, 0, 0, 0x01, 0x01, 0x86, 0xdd,
    ];
    f.extend([0x60, 0, 0, 0, 0, 16, 17, 64]);
    f.extend([0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let [hi, lo] = i.to_be_bytes();
    f.extend([0xfd, 0, 0, 0x92, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, hi, lo]);
    f.extend([0x30, 0x39, 0x30, 0x39, 0, 16, 0, 0]);
    f.extend(b"lwt6fwd!");
    f
}

#[test]
fn forwards_over_af_xdp_exactly_as_offline() {
    netns::require_root("tests/afxdp_forward.rs");
    const N: u16 = 300;
    let net = netns::NsPair::new("x", "fwd");
    // No IPv6 on the test links: no router solicitations or MLD reports mixed into the test's frames.
    for n in [&net.ns, &net.peer] {
        netns::sysctl(n, "net.ipv6.conf.default.disable_ipv6=1");
    }
    for (r, p, rmac, pmac) in [
        ("r0", "p0", "02:00:00:00:01:02", "02:00:00:00:01:01"),
        ("r1", "p1", "02:00:00:00:02:01", "02:00:00:00:02:02"),
    ] {
        #[rustfmt::skip]
        ip(&["-n", &net.ns, "link", "add", r, "numtxqueues", "1", "numrxqueues", "1", "type", "veth", "peer", "name", p,
             "numtxqueues", "1", "numrxqueues", "1", "netns", &net.peer]);
        ip(&["-n", &net.ns, "link", "set", r, "address", rmac, "up"]);
        ip(&["-n", &net.peer, "link", "set", p, "address", pmac, "up"]);
    }

    // What the router sends for these frames, offline.
    let cfg = config::parse(CONF).expect("config");
    let frames: Vec<Vec<u8>> = (0..N).map(frame).collect();
    let mut offline = Router::build(&cfg).unwrap();
    let (r0, r1) = (
        offline.snapshot().dev_id("r0").unwrap(),
        offline.snapshot().dev_id("r1").unwrap(),
    );
    let mut expected = Vec::new();
    offline.process_batch(
        frames.iter().map(|f| (r0, 0, f.as_slice())),
        &mut |dev, _, f| {
            assert_eq!(dev, r1);
            expected.push(f.to_vec())
        },
    );
    assert_eq!(
        expected.len(),
        N as usize,
        "every frame is forwarded offline"
    );

    // The peer captures on p1 what comes out of r1.
    let peer = net.peer.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let capture = thread::spawn(move || {
        enter(&peer);
        let fd = packet_socket("p1");
        ready_tx.send(()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        let mut last = Instant::now();
        while got.len() < N as usize && last.elapsed() < Duration::from_secs(3) {
            // SAFETY: recv(2) writes at most `len` bytes at `buf`: `buf` is a live, exclusively borrowed array of
            // exactly that length.
            let r =
                unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if r > 0 {
                let f = &buf[..r as usize];
                // Only the router's output: from r1's MAC (the peer's own frames are outgoing from p1).
                if f.len() > 14 && f[6..12] == [0x02, 0, 0, 0, 0x02, 0x01] {
                    got.push(f.to_vec());
                    last = Instant::now();
                }
            } else {
                thread::sleep(Duration::from_millis(1));
            }
        }
        // SAFETY: `fd` is the descriptor `packet_socket` opened for this thread alone, closed only here.
        unsafe { libc::close(fd) };
        got
    });
    ready_rx.recv().unwrap();

    // lwt6: AF_XDP in on r0, the router, AF_XDP out on r1.
    let forwarded = Arc::new(AtomicUsize::new(0));
    let (fwd, lwt6_ns) = (forwarded.clone(), net.ns.clone());
    let (up_tx, up_rx) = mpsc::channel();
    let lwt6 = thread::spawn(move || {
        enter(&lwt6_ns);
        let opts = XskOptions {
            frame_size: 2048,
            headroom: 0,
            ring_size: 256,
            zero_copy: true,
            mode: XdpMode::Auto,
        };
        let mut rx = XskPort::open("r0", 0, opts).expect("AF_XDP on r0");
        let mut tx = XskPort::open("r1", 0, opts).expect("AF_XDP on r1");
        let mut router = Router::build(&cfg).unwrap();
        up_tx.send(()).unwrap();
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let (mut sent, mut refused) = (0usize, 0usize);
        let mut last = Instant::now();
        while sent < N as usize && last.elapsed() < Duration::from_secs(3) {
            batch.clear();
            rx.recv_batch(64, &mut |f| batch.push(f.to_vec())).unwrap();
            if batch.is_empty() {
                thread::sleep(Duration::from_micros(200));
                continue;
            }
            last = Instant::now();
            router.process_batch(
                batch.iter().map(|f| (r0, 0, f.as_slice())),
                &mut |dev, _, f| {
                    if dev == r1 {
                        if tx.send(f).unwrap() {
                            sent += 1
                        } else {
                            refused += 1
                        }
                    }
                },
            );
            tx.flush().unwrap();
            fwd.store(sent, Ordering::Relaxed);
        }
        let t = Instant::now();
        while tx.tx_pending() > 0 && t.elapsed() < Duration::from_secs(1) {
            tx.flush().unwrap();
        }
        (sent, refused)
    });
    up_rx.recv().expect("ports opened");

    // The peer sends from p0, never more than 100 frames ahead of what lwt6 has forwarded.
    let peer = net.peer.clone();
    thread::spawn(move || {
        enter(&peer);
        let fd = packet_socket("p0");
        let t = Instant::now();
        for (i, f) in frames.iter().enumerate() {
            while i >= forwarded.load(Ordering::Relaxed) + 100
                && t.elapsed() < Duration::from_secs(10)
            {
                thread::sleep(Duration::from_micros(200));
            }
            // SAFETY: send(2) reads `len` bytes at `buf`: `f` is a live Vec of exactly that length.
            let r = unsafe { libc::send(fd, f.as_ptr().cast(), f.len(), 0) };
            assert_eq!(r, f.len() as isize);
        }
        // SAFETY: `fd` is the descriptor `packet_socket` opened for this thread alone, closed only here.
        unsafe { libc::close(fd) };
    })
    .join()
    .expect("sender");

    let (sent, refused) = lwt6.join().expect("lwt6 thread");
    let got = capture.join().expect("capture thread");
    assert_eq!((sent, refused), (N as usize, 0));
    assert_eq!(
        got.len(),
        expected.len(),
        "every forwarded frame reached the peer"
    );
    assert!(
        got == expected,
        "the peer received exactly the offline output, in order"
    );
}
