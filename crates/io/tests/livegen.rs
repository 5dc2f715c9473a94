//! The XDP live-frames generator against the running kernel: a veth pair between two network namespaces, the
//! generator on one side, an AF_XDP port (lwt6's own, which gives the veth the NAPI instance redirected frames
//! need) capturing on the other. Needs root; FAILS, not skips, without it. Namespaces are `l6g-<pid>-<test>`,
//! deleted on every exit path.

#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use lwt6_io::afxdp::{XskOptions, XskPort};
use lwt6_io::livegen::{LiveGen, LiveGenError, Verdict, VerdictProgram};
use lwt6_io::port::Port;

#[path = "../../../tests/support/netns.rs"]
mod netns;
use netns::{NsPair as Net, enter, ip};

/// Sender namespace `l6g-<pid>-<test>` with `gx`, receiver namespace (the same name with `p`) with its peer `gp`
/// (one queue each); deleted on drop.
fn veth_pair(test: &str) -> Net {
    netns::require_root("crates/io/tests/livegen.rs");
    let n = Net::new("g", test);
    #[rustfmt::skip]
    ip(&["-n", &n.ns, "link", "add", "gx", "type", "veth", "peer", "name", "gp", "netns", &n.peer]);
    // No router solicitations or MLD reports from the sender's kernel among the frames.
    netns::sysctl(&n.ns, "net.ipv6.conf.gx.disable_ipv6=1");
    ip(&["-n", &n.ns, "link", "set", "gx", "up"]);
    #[rustfmt::skip]
    ip(&["-n", &n.peer, "link", "set", "gp", "address", "02:00:00:00:00:0a", "up"]);
    n
}

/// An Ethernet + IPv6 + UDP frame to 02:00:00:00:00:0a, source address fd00::1:0 (low 16 bits 0x0000 + flow).
fn template() -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x0a, 0x02, 0, 0, 0, 0, 0x0b, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0, 0, 24, 17, 64]);
    f.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x12, 0x00]);
    f.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a]);
    f.extend([0x9c, 0x40, 0x0d, 0x05, 0, 24, 0, 0]);
    f.extend(b"lwt6 live frames");
    f.push(0x77); // an odd length: the last byte is restored by a byte store
    f
}

/// Frames sent = frames captured, each the template but for the source address's low 16 bits, which cycle through
/// `base + i % flows`; a paced run never goes faster than asked.
#[test]
fn sends_paced_frames_with_varied_sources() {
    let n = veth_pair("paced");
    let t = template();
    let (rate, ms, flows) = (20_000u64, 300u64, 5u32);
    let rx_ns = n.peer.clone();
    // The capture port first (its XDP program gives gp its NAPI instance), then the sender.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let capture = std::thread::spawn(move || {
        enter(&rx_ns);
        let mut p = XskPort::open("gp", 0, XskOptions::default()).expect("AF_XDP port on gp");
        ready_tx.send(()).unwrap();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut quiet_since: Option<Instant> = None;
        loop {
            let n = p
                .recv_batch(64, &mut |f| got.push(f.to_vec()))
                .expect("receive");
            if n == 0 {
                if done_rx.try_recv().is_ok() || quiet_since.is_some() {
                    let q = *quiet_since.get_or_insert_with(Instant::now);
                    if q.elapsed() > Duration::from_millis(300) {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            } else if quiet_since.is_some() {
                quiet_since = Some(Instant::now());
            }
        }
        got
    });
    ready_rx.recv().unwrap();
    enter(&n.ns);
    let g = LiveGen::new("gx", &t, flows).expect("generator");
    let r = g
        .run(&[0], rate, Duration::from_millis(ms))
        .expect("live-frames run");
    done_tx.send(()).unwrap();
    let got = capture.join().unwrap();
    assert!(r.sent > 0, "nothing sent");
    assert_eq!(r.per_cpu, vec![r.sent]);
    // The pacer sends the first frame at once and one per interval after it.
    let most = rate * ms / 1000 * 105 / 100 + 2;
    assert!(
        r.sent <= most,
        "sent {} frames in {ms} ms at {rate}/s (at most {most})",
        r.sent
    );
    assert_eq!(
        got.len() as u64,
        r.sent,
        "captured {} of {} frames",
        got.len(),
        r.sent
    );
    for (i, f) in got.iter().enumerate() {
        let mut want = t.clone();
        // The program counts before it writes: frame i carries base + (i + 1) % flows.
        let low = ((i as u32 + 1) % flows) as u16 + 0x1200;
        want[36..38].copy_from_slice(&low.to_be_bytes());
        assert_eq!(f, &want, "frame {i}");
    }
}

/// Unpaced, into an XDP program that drops every frame: the receiver counts what the sender sent (the sink keeps
/// up, or the veth counts the rest as dropped at its ring); errors are named.
#[test]
fn unpaced_into_a_sink_and_named_errors() {
    let n = veth_pair("sink");
    let rx_ns = n.peer.clone();
    let sink = std::thread::spawn(move || {
        enter(&rx_ns);
        VerdictProgram::attach("gp", Verdict::Drop).expect("XDP sink on gp")
    })
    .join()
    .unwrap();
    enter(&n.ns);
    let t = template();
    let g = LiveGen::new("gx", &t, 1).expect("generator");
    // Unpaced, the sender goes as fast as its CPU lets it; on a loaded machine (cargo runs test binaries side
    // by side) one 200 ms run may get little CPU, so runs are repeated until 1,000 frames have gone, for 10 s
    // at most. What is tested is that frames go and are counted, not a rate (docs/BENCHMARKS.md has those).
    let (mut sent, mut runs, mut best_rate) = (0u64, 0, 0.0f64);
    let start = std::time::Instant::now();
    while sent <= 1000 && start.elapsed() < Duration::from_secs(10) {
        let r = g
            .run(&[0], 0, Duration::from_millis(200))
            .expect("live-frames run");
        sent += r.sent;
        runs += 1;
        best_rate = best_rate.max(r.rate());
    }
    assert!(sent > 1000, "only {sent} frames in {runs} runs of 200 ms");
    assert!(best_rate > 0.0);
    drop(sink);
    assert!(matches!(
        LiveGen::new("nosuch9", &t, 1),
        Err(LiveGenError::NoInterface(_))
    ));
    assert!(matches!(
        LiveGen::new("gx", &t[..20], 4),
        Err(LiveGenError::Options(_))
    ));
    assert!(matches!(
        g.run(&[], 0, Duration::from_millis(1)),
        Err(LiveGenError::Options(_))
    ));
}

/// The pacer's map refuses values of any size but its own: the kernel would read or write its value size through
/// the buffer whatever its length.
#[test]
fn map_values_of_the_wrong_size_are_refused() {
    use lwt6_io::afxdp::bpf;
    netns::require_root("crates/io/tests/livegen.rs");
    let map = bpf::create_array(bpf::PACER_SLOT as u32, 4, "l6t_sizes").expect("BPF_MAP_CREATE");
    let slot: Vec<u8> = (1..=bpf::PACER_SLOT as u8).collect();
    for short in [0, 8, bpf::PACER_SLOT - 1] {
        let e = bpf::map_set(&map, 1, &slot[..short]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{short} bytes");
        let e = bpf::map_get(&map, 1, &mut vec![0; short]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{short} bytes");
    }
    let e = bpf::map_get(&map, 1, &mut [0; bpf::PACER_SLOT + 1]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    bpf::map_set(&map, 1, &slot).unwrap();
    let mut back = [0; bpf::PACER_SLOT];
    bpf::map_get(&map, 1, &mut back).unwrap();
    assert_eq!(back[..], slot[..]);
}
