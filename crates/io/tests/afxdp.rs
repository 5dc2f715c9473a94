//! The AF_XDP port against the running kernel: two network namespaces joined by a veth pair (1 or 2 queues), a
//! peer that sends and captures with AF_PACKET, and lwt6's port on the other end. Needs root (namespaces, BPF);
//! these tests FAIL, not skip, without it. Every namespace is named `l6x-<pid>-<test>` and deleted on every exit
//! path (the guard's Drop also runs when a test panics).

#![cfg(target_os = "linux")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lwt6_io::afxdp::{XDP_PACKET_HEADROOM, XdpAttachment, XdpMode, XskError, XskOptions, XskPort};
use lwt6_io::port::Port;

#[path = "../../../tests/support/netns.rs"]
mod netns;
use netns::{NsPair as Net, enter, ip};

/// Namespace `l6x-<pid>-<test>` holding veth `vx` (lwt6's side, `queues` queues) and its `p` peer holding `vp`.
fn veth_pair(test: &str, queues: u32) -> Net {
    netns::require_root("crates/io/tests/afxdp.rs");
    let net = Net::new("x", test);
    let (ns, peer) = (&net.ns, &net.peer);
    let q = queues.to_string();
    #[rustfmt::skip]
    ip(&["-n", ns, "link", "add", "vx", "numtxqueues", &q, "numrxqueues", &q, "type", "veth", "peer", "name", "vp",
         "numtxqueues", &q, "numrxqueues", &q, "netns", peer]);
    ip(&[
        "-n",
        ns,
        "link",
        "set",
        "vx",
        "address",
        "02:00:00:00:00:0a",
        "up",
    ]);
    ip(&[
        "-n",
        peer,
        "link",
        "set",
        "vp",
        "address",
        "02:00:00:00:00:0b",
        "up",
    ]);
    net
}

/// `ip -d link show vx` in lwt6's namespace.
fn link_details(net: &Net) -> String {
    ip(&["-n", &net.ns, "-d", "link", "show", "vx"])
}

/// Clears the calling thread's effective, permitted and inheritable capabilities (`capset(2)`, version 3).
fn drop_capabilities() {
    let mut header: [u32; 2] = [0x2008_0522, 0]; // _LINUX_CAPABILITY_VERSION_3, this thread
    let data = [0u32; 6]; // two __user_cap_data_struct {effective, permitted, inheritable}
    // SAFETY: capset(2) with version 3 reads the 8-byte header (`header`: version, pid) and two 12-byte data
    // structs (`data`: 24 bytes), both live arrays of exactly those sizes; it writes only the header's version,
    // when it does not know the one given, which is why `header` is passed as mutable.
    let r = unsafe { libc::syscall(libc::SYS_capset, header.as_mut_ptr(), data.as_ptr()) };
    assert_eq!(r, 0, "capset");
}

const MAGIC: &[u8; 8] = b"lwt6xskT";
const UDP_PORT: u16 = 47_000;

/// An Ethernet + IPv6 + UDP frame from the peer to lwt6's side carrying MAGIC and `seq`; the source port varies
/// with `seq` so that the flow hash spreads frames over the transmit (and so the veth receive) queues.
fn frame(seq: u32) -> Vec<u8> {
    let payload: Vec<u8> = MAGIC
        .iter()
        .copied()
        .chain(seq.to_be_bytes())
        .chain([0u8; 20])
        .collect();
    let udp_len = 8 + payload.len() as u16;
    let mut f = vec![0x02, 0, 0, 0, 0, 0x0a, 0x02, 0, 0, 0, 0, 0x0b, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0]);
    f.extend(udp_len.to_be_bytes());
    f.extend([17, 64]);
    f.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b]);
    f.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a]);
    f.extend((1024 + (seq % 4000) as u16).to_be_bytes());
    f.extend(UDP_PORT.to_be_bytes());
    f.extend(udp_len.to_be_bytes());
    f.extend([0, 0]); // checksum not checked by anyone here
    f.extend(payload);
    f
}

/// The sequence number of one of our frames, `None` for anything else (router solicitations, MLD reports...).
fn seq_of(f: &[u8]) -> Option<u32> {
    let p = 14 + 40 + 8;
    (f.len() >= p + 12
        && f[12..14] == [0x86, 0xdd]
        && f[20] == 17
        && f[56..58] == UDP_PORT.to_be_bytes()
        && &f[p..p + 8] == MAGIC)
        .then(|| u32::from_be_bytes(f[p + 8..p + 12].try_into().unwrap()))
}

/// An AF_PACKET socket bound to `ifname` in the calling thread's namespace (all protocols).
struct Packet(i32);

impl Packet {
    fn open(ifname: &str) -> Packet {
        Packet(netns::packet_socket(ifname))
    }
    fn send(&self, f: &[u8]) {
        // SAFETY: send(2) reads `len` bytes at `buf`: `f` is a live slice of exactly that length.
        let r = unsafe { libc::send(self.0, f.as_ptr().cast(), f.len(), 0) };
        assert_eq!(r, f.len() as isize, "AF_PACKET send");
    }
    /// Our frames' sequence numbers received until `want` arrived or nothing came for a second.
    fn capture(&self, want: usize) -> Vec<u32> {
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        let mut last = Instant::now();
        while got.len() < want && last.elapsed() < Duration::from_secs(1) {
            // SAFETY: recv(2) writes at most `len` bytes at `buf`: `buf` is a live, exclusively borrowed array of
            // exactly that length.
            let r = unsafe {
                libc::recv(
                    self.0,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if r > 0 {
                if let Some(s) = seq_of(&buf[..r as usize]) {
                    got.push(s);
                    last = Instant::now();
                }
            } else {
                thread::sleep(Duration::from_millis(1));
            }
        }
        got
    }
}

impl Drop for Packet {
    fn drop(&mut self) {
        // SAFETY: `self.0` is the descriptor `packet_socket` opened for this `Packet` alone, closed only here.
        unsafe { libc::close(self.0) };
    }
}

/// How many of our frames the receiving side has taken (the peer paces itself on it).
static RECEIVED: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

/// The peer sends frames 0..count from `vp`, never more than 100 ahead of what the receiver (`slot` of
/// [`RECEIVED`]) has taken: well within the 256-entry rings, so a receiver slowed by a loaded machine loses nothing.
fn peer_sends(peer: &str, count: u32, slot: usize) {
    let peer = peer.to_string();
    thread::spawn(move || {
        enter(&peer);
        let s = Packet::open("vp");
        let t = Instant::now();
        for seq in 0..count {
            while seq as usize >= RECEIVED[slot].load(Ordering::Relaxed) + 100
                && t.elapsed() < Duration::from_secs(10)
            {
                thread::sleep(Duration::from_micros(200));
            }
            s.send(&frame(seq));
        }
    })
    .join()
    .expect("peer thread");
}

/// Receives on every port until `want` of our frames arrived or nothing came for two seconds; per port, the sequence
/// numbers and the frame offsets (room in front of the data) seen.
fn receive(ports: &mut [XskPort], want: usize, slot: usize) -> Vec<(Vec<u32>, Vec<usize>)> {
    let mut out = vec![(Vec::new(), Vec::new()); ports.len()];
    let mut total = 0;
    let mut last = Instant::now();
    while total < want && last.elapsed() < Duration::from_secs(2) {
        let mut any = false;
        for (i, p) in ports.iter_mut().enumerate() {
            let mut seen = Vec::new();
            let n = p
                .recv_batch(64, &mut |f| seen.push((seq_of(f), f.as_ptr() as usize)))
                .unwrap();
            any |= n > 0;
            for (s, ptr) in seen {
                // The frame went back to the kernel when the callback returned, which may be writing a new one
                // there: no reference may cover its bytes now. `frame_offset` reads only the address, so an empty
                // slice at it does.
                // SAFETY: a zero-length slice needs only a non-null, aligned pointer (`ptr` came from a slice, and
                // u8 has alignment 1); it covers no byte, so what happens to the frame's bytes does not matter.
                let off = p
                    .frame_offset(unsafe { std::slice::from_raw_parts(ptr as *const u8, 0) })
                    .unwrap();
                if let Some(s) = s {
                    out[i].0.push(s);
                    out[i].1.push(off);
                    total += 1;
                }
            }
        }
        RECEIVED[slot].store(total, Ordering::Relaxed);
        if any {
            last = Instant::now();
        } else {
            thread::sleep(Duration::from_millis(1));
        }
    }
    out
}

fn small(mode: XdpMode, headroom: u32) -> XskOptions {
    XskOptions {
        frame_size: 2048,
        headroom,
        ring_size: 256,
        zero_copy: true,
        mode,
    }
}

#[test]
fn receives_on_one_queue_in_skb_mode_with_headroom_then_detaches() {
    let net = veth_pair("rx1", 1);
    let ns = net.ns.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    // More frames than the fill ring holds: received frames must go back to it.
    const N: u32 = 1000;
    let lwt6 = thread::spawn(move || {
        enter(&ns);
        let mut port = XskPort::open("vx", 0, small(XdpMode::Skb, 192)).expect("open AF_XDP port");
        assert_eq!(port.attachment().mode(), XdpMode::Skb);
        assert_eq!(port.kind(), "af_xdp");
        assert!(!port.is_zero_copy(), "veth has no zero-copy AF_XDP");
        ready_tx.send(()).unwrap();
        let got = receive(std::slice::from_mut(&mut port), N as usize, 0);
        (got, port.counters(), port.kernel_stats().unwrap())
    });
    ready_rx.recv().expect("port opened");
    assert!(
        link_details(&net).contains("xdpgeneric"),
        "program attached in generic mode:\n{}",
        link_details(&net)
    );
    peer_sends(&net.peer, N, 0);
    let (got, counters, kstats) = lwt6.join().expect("lwt6 thread");
    let (seqs, offsets) = &got[0];
    assert_eq!(seqs, &(0..N).collect::<Vec<_>>(), "every frame, in order");
    // Received data starts after the registered headroom and the kernel's own XDP headroom.
    assert!(
        offsets
            .iter()
            .all(|&o| o == 192 + XDP_PACKET_HEADROOM as usize),
        "offsets {offsets:?}"
    );
    assert!(
        counters.rx_frames >= u64::from(N) && counters.rx_invalid == 0,
        "{counters:?}"
    );
    assert_eq!(
        (
            kstats.rx_dropped,
            kstats.rx_ring_full,
            kstats.rx_fill_ring_empty_descs
        ),
        (0, 0, 0),
        "{kstats:?}"
    );
    // The port (and with it the last reference to the attachment) is gone: no XDP program is left on the link.
    let details = link_details(&net);
    assert!(
        !details.contains("xdp"),
        "XDP program still attached after drop:\n{details}"
    );
}

#[test]
fn receives_on_two_queues_in_driver_mode() {
    let net = veth_pair("rx2", 2);
    let ns = net.ns.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let lwt6 = thread::spawn(move || {
        enter(&ns);
        assert_eq!(
            lwt6_io::afxdp::rx_queues("vx").unwrap(),
            2,
            "the veth was made with 2 queues"
        );
        let p0 = XskPort::open("vx", 0, small(XdpMode::Auto, 0)).expect("queue 0");
        let p1 = XskPort::open("vx", 1, small(XdpMode::Auto, 0)).expect("queue 1");
        assert!(
            std::sync::Arc::ptr_eq(p0.attachment(), p1.attachment()),
            "one program per interface"
        );
        assert_eq!(
            p0.attachment().mode(),
            XdpMode::Driver,
            "veth runs XDP natively"
        );
        let mut ports = [p0, p1];
        ready_tx.send(()).unwrap();
        receive(&mut ports, 600, 1)
    });
    ready_rx.recv().expect("ports opened");
    let details = link_details(&net);
    assert!(
        details.contains("xdp ") || details.contains("xdp/id") || details.contains("prog/xdp"),
        "{details}"
    );
    peer_sends(&net.peer, 600, 1);
    let got = lwt6.join().expect("lwt6 thread");
    let mut all: Vec<u32> = got.iter().flat_map(|(s, _)| s.iter().copied()).collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..600).collect::<Vec<_>>(),
        "every frame exactly once over both queues"
    );
    assert!(
        got.iter().all(|(s, _)| !s.is_empty()),
        "both queues received: {} + {}",
        got[0].0.len(),
        got[1].0.len()
    );
    assert!(
        !link_details(&net).contains("xdp"),
        "detached after the ports closed"
    );
}

#[test]
fn transmits_frames_the_peer_receives() {
    const N: u32 = 1000; // several times the ring: frames are reclaimed from the completion ring and reused
    let net = veth_pair("tx", 1);
    let peer = net.peer.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let capture = thread::spawn(move || {
        enter(&peer);
        let s = Packet::open("vp");
        ready_tx.send(()).unwrap();
        s.capture(N as usize)
    });
    ready_rx.recv().unwrap();
    let ns = net.ns.clone();
    let (sent, refused, counters) = thread::spawn(move || {
        enter(&ns);
        let mut port = XskPort::open("vx", 0, small(XdpMode::Auto, 0)).expect("open");
        // One flush hands the kernel a whole batch, even though copy mode sends a bounded number per system call.
        for seq in 0..200 {
            assert!(port.send(&frame(seq)).unwrap());
        }
        port.flush().unwrap();
        thread::sleep(Duration::from_millis(100));
        assert_eq!(port.tx_pending(), 0, "one flush sent the whole batch");
        let (mut sent, mut refused) = (200u32, 0u32);
        let mut seq = 200;
        let start = Instant::now();
        while seq < N && start.elapsed() < Duration::from_secs(5) {
            // The peer's frames reversed in direction do not matter here: the peer captures whatever arrives.
            if port.send(&frame(seq)).unwrap() {
                sent += 1;
                seq += 1;
                if seq % 64 == 0 {
                    port.flush().unwrap();
                }
            } else {
                refused += 1;
                port.flush().unwrap();
                thread::sleep(Duration::from_micros(100));
            }
        }
        port.flush().unwrap();
        // Let the last frames complete before the socket closes.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(300) {
            port.flush().unwrap();
            thread::sleep(Duration::from_millis(5));
        }
        (sent, refused, port.counters())
    })
    .join()
    .expect("lwt6 thread");
    let got = capture.join().expect("capture thread");
    assert_eq!(sent, N);
    assert_eq!(counters.tx_frames, u64::from(N));
    assert_eq!(
        counters.tx_ring_full,
        u64::from(refused),
        "every refusal counted"
    );
    assert_eq!(
        got,
        (0..N).collect::<Vec<_>>(),
        "the peer received every frame once, in order"
    );
}

#[test]
fn errors_name_the_problem() {
    let net = veth_pair("err", 1);
    let ns = net.ns.clone();
    thread::spawn(move || {
        enter(&ns);
        assert_eq!(lwt6_io::afxdp::rx_queues("vx").unwrap(), 1);
        assert!(matches!(
            lwt6_io::afxdp::rx_queues("nosuch0"),
            Err(XskError::NoInterface { .. })
        ));
        match XskPort::open("nosuch0", 0, XskOptions::default()) {
            Err(XskError::NoInterface { ifname }) => assert_eq!(ifname, "nosuch0"),
            other => panic!("missing interface: {:?}", other.err()),
        }
        match XskPort::open(
            "vx",
            0,
            XskOptions {
                frame_size: 3000,
                ..XskOptions::default()
            },
        ) {
            Err(XskError::Options(m)) => assert!(m.contains("frame size 3000"), "{m}"),
            other => panic!("bad frame size: {:?}", other.err()),
        }
        // veth vx has one queue: queue 3 does not exist.
        match XskPort::open("vx", 3, small(XdpMode::Auto, 0)) {
            Err(XskError::Bind {
                ifname, queue: 3, ..
            }) => assert_eq!(ifname, "vx"),
            other => panic!("missing queue: {:?}", other.err()),
        }
        // One program per interface: a second attachment is refused while the first holds the link.
        let first = XdpAttachment::attach("vx", XdpMode::Driver).expect("first attach");
        match XdpAttachment::attach("vx", XdpMode::Auto) {
            Err(e @ XskError::Attach { .. }) => assert!(e.to_string().contains("vx"), "{e}"),
            other => panic!("second attach: {:?}", other.err()),
        }
        drop(first);
        XdpAttachment::attach("vx", XdpMode::Driver).expect("attach again once the first is gone");
    })
    .join()
    .expect("lwt6 thread");
    // Without privileges (this thread drops every capability: they are per thread), the refusal is named.
    let ns = net.ns.clone();
    thread::spawn(move || {
        enter(&ns);
        drop_capabilities();
        match XskPort::open("vx", 0, small(XdpMode::Auto, 0)) {
            Err(e @ XskError::NotPermitted { .. }) => {
                assert!(e.to_string().contains("root"), "{e}")
            }
            other => panic!("without capabilities: {:?}", other.err()),
        }
    })
    .join()
    .expect("unprivileged thread");
}

#[test]
fn generator_paces_and_counts_over_af_xdp_and_af_packet() {
    use lwt6_io::generator::{GenOptions, PacketTx, generate};
    let net = veth_pair("gen", 1);
    let peer = net.peer.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let capture = thread::spawn(move || {
        enter(&peer);
        let s = Packet::open("vp");
        ready_tx.send(()).unwrap();
        s.capture(1500)
    });
    ready_rx.recv().unwrap();
    let ns = net.ns.clone();
    let (xdp, packet) = thread::spawn(move || {
        enter(&ns);
        let frames: Vec<Vec<u8>> = (0..10).map(frame).collect();
        let mut port = XskPort::open("vx", 0, small(XdpMode::Auto, 0)).expect("open");
        // 1000 frames at 10 000 frames/s: the last batch of 32 is due at 96.8 ms.
        let xdp = generate(
            &mut port,
            &frames,
            GenOptions {
                count: 1000,
                rate: Some(10_000),
                batch: 32,
            },
        )
        .unwrap();
        let t = Instant::now();
        while port.tx_pending() > 0 && t.elapsed() < Duration::from_secs(1) {
            Port::flush(&mut port).unwrap();
        }
        drop(port);
        let mut tx = PacketTx::open("vx").expect("AF_PACKET");
        let packet = generate(
            &mut tx,
            &frames,
            GenOptions {
                count: 500,
                rate: None,
                batch: 64,
            },
        )
        .unwrap();
        (xdp, packet)
    })
    .join()
    .expect("lwt6 thread");
    let got = capture.join().expect("capture thread");
    assert_eq!((xdp.sent, packet.sent), (1000, 500));
    assert!(
        xdp.elapsed >= Duration::from_micros(96_800),
        "paced: {:?}",
        xdp.elapsed
    );
    assert_eq!(got.len(), 1500, "the peer received every frame");
    for seq in 0..10 {
        assert_eq!(
            got.iter().filter(|&&s| s == seq).count(),
            150,
            "frame {seq}: the input cycled in order"
        );
    }
}

/// Sends frames 0..count from the peer's `vp` as fast as one socket goes (nobody paces it), then returns.
fn peer_blasts(peer: &str, count: u32) {
    let peer = peer.to_string();
    thread::spawn(move || {
        enter(&peer);
        let s = Packet::open("vp");
        for seq in 0..count {
            s.send(&frame(seq));
        }
    })
    .join()
    .expect("peer thread");
}

/// Our frames a port receives until nothing came for half a second.
fn drain(port: &mut dyn Port) -> usize {
    let mut got = 0;
    let mut last = Instant::now();
    while last.elapsed() < Duration::from_millis(500) {
        let mut n = 0;
        port.recv_batch(64, &mut |f| {
            if seq_of(f).is_some() {
                n += 1;
            }
        })
        .unwrap();
        if n > 0 {
            got += n;
            last = Instant::now();
        } else {
            thread::sleep(Duration::from_millis(1));
        }
    }
    got
}

/// Frames the peer's veth dropped on the way (its `tx_dropped`: the receiving side's ring or backlog full, before
/// any socket saw them).
fn veth_dropped(peer: &str) -> u64 {
    // `ip netns exec` mounts the namespace's own /sys.
    let out = ip(&[
        "netns",
        "exec",
        peer,
        "cat",
        "/sys/class/net/vp/statistics/tx_dropped",
    ]);
    out.trim().parse().expect("a count")
}

/// Overload is what the kernel counts: a port that does not read while 1000 frames arrive gets what its rings
/// (AF_XDP, 256 entries) or its receive buffer (AF_PACKET, the smallest the kernel allows) held, and
/// `kernel_rx_drops` is the rest, exactly (with what the veth itself dropped before the socket, if the machine
/// was too busy to drain it: counted apart). IPv6 is off on both ends, so that no frame but ours travels.
#[test]
fn overload_is_counted_by_the_kernel_exactly() {
    let net = veth_pair("over", 1);
    for (ns, dev) in [(&net.ns, "vx"), (&net.peer, "vp")] {
        netns::sysctl(ns, &format!("net.ipv6.conf.{dev}.disable_ipv6=1"));
    }
    const N: u32 = 1000;
    for xdp in [true, false] {
        let ns = net.ns.clone();
        let (ready_tx, ready_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let lwt6 = thread::spawn(move || {
            enter(&ns);
            let ifindex = lwt6_io::netdev::lookup("vx").unwrap().ifindex;
            let mut port: Box<dyn Port> = if xdp {
                Box::new(XskPort::open("vx", 0, small(XdpMode::Auto, 0)).expect("AF_XDP port"))
            } else {
                let opts = lwt6_io::afpacket::AfPacketOptions {
                    rcvbuf: 0,
                    ..Default::default()
                };
                Box::new(lwt6_io::afpacket::AfPacket::open(ifindex, &opts).expect("AF_PACKET"))
            };
            assert_eq!(port.kernel_rx_drops(), 0, "{}", port.kind());
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            let got = drain(port.as_mut());
            (port.kind(), got, port.kernel_rx_drops())
        });
        ready_rx.recv().unwrap();
        let veth_before = veth_dropped(&net.peer);
        peer_blasts(&net.peer, N);
        go_tx.send(()).unwrap();
        let (kind, got, drops) = lwt6.join().expect("receiving thread");
        let veth = veth_dropped(&net.peer) - veth_before;
        assert!(drops > 0, "{kind}: nothing dropped, {got} received");
        assert_eq!(
            got as u64 + drops + veth,
            u64::from(N),
            "{kind}: received {got} + overload {drops} + dropped by the veth {veth}"
        );
    }
}
