//! The cost of the live capture (`lwt6 ctl capture start`) to a worker: rounds of 64 frames run as `lwt6 run`'s
//! receive loop runs them (`lwt6_router::engine`: the capture board looked at once per round, the receive tap
//! chosen per port, sent frames tapped as they are staged, the round's frames handed to the writer thread), with
//! the capture off and on (rx, tx and drop, to a file in the temporary directory), against the bare batch the loop
//! ran before the capture existed. Two kinds of frames: forwarded (plain route, the fast path) and dropped (no
//! route: the general path, an ICMPv6 error sent). Run it under callgrind (`scripts/bench-capture.sh`) for
//! instructions per packet of the worker's rounds (`capture_cost::rounds`) or of the whole process (the writer
//! thread included).
//!
//! `cargo run --release --example capture_cost -- forward|drop bare|off|on PACKETS`

use lwt6::config;
use lwt6::live::capture::{self, CaptureBoard, WorkerCapture};
use lwt6::snapshot::Snapshot;
use lwt6::worker::Worker;

const CONFIG: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
sysctl net.ipv6.conf.all.forwarding=1
-6 route add fc00::/16 via fd00:2::2 dev r1
";

/// Frames per round (the engine's `RX_BATCH`).
const ROUND: usize = 64;

/// Ethernet + IPv6 + UDP (64 bytes of payload) from fd00:1::1 to `dst`, arriving on r0.
fn udp6(dst: [u8; 16]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0, 0, 72, 17, 64]);
    f.extend([0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f.extend(dst);
    f.extend([0x9c, 0x40, 0x0d, 0x05, 0, 72, 0, 0]);
    f.extend([0x5a; 64]);
    f
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Bare,
    Off,
    On,
}

/// Frames staged per egress device during a round, as the engine's stages (sent = cleared here).
#[derive(Default)]
struct Stage {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

/// The rounds (kept out of line: callgrind counts this function).
#[inline(never)]
fn rounds(
    mode: Mode,
    worker: &mut Worker,
    snap: &Snapshot,
    board: &CaptureBoard,
    wc: &mut WorkerCapture,
    frames: &[Vec<u8>],
    stages: &mut [Stage],
) {
    let ts = 1_700_000_000_000_000_000;
    for chunk in frames.chunks(ROUND) {
        let mut out = |d: usize, _: u64, f: &[u8]| {
            let s: &mut Stage = &mut stages[d];
            s.bytes.extend_from_slice(f);
            s.ends.push(s.bytes.len());
        };
        if mode == Mode::Bare {
            let mut batch = worker.start_batch(snap);
            for f in chunk {
                batch.process(0, ts, f, &mut out);
            }
        } else {
            wc.follow(board, worker);
            let capturing = worker.capture().is_some();
            let mut batch = worker.start_batch(snap);
            if capturing {
                for f in chunk {
                    batch.capture_rx(0, ts, f);
                    batch.process(0, ts, f, &mut out);
                }
            } else {
                for f in chunk {
                    batch.process(0, ts, f, &mut out);
                }
            }
        }
        for (d, s) in stages.iter_mut().enumerate() {
            if s.ends.is_empty() {
                continue;
            }
            if mode != Mode::Bare
                && let Some(c) = worker.capture()
            {
                let mut start = 0;
                for &e in &s.ends {
                    c.tx(d, ts, &s.bytes[start..e]);
                    start = e;
                }
            }
            std::hint::black_box(&s.bytes);
            s.bytes.clear();
            s.ends.clear();
        }
        if mode != Mode::Bare && worker.capture().is_some() {
            wc.after_round(worker);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: capture_cost forward|drop bare|off|on PACKETS";
    let (kind, mode, n) = match &args[1..] {
        [k, m, n] => (k.as_str(), m.as_str(), n.parse::<usize>().expect(usage)),
        _ => panic!("{usage}"),
    };
    let mode = match mode {
        "bare" => Mode::Bare,
        "off" => Mode::Off,
        "on" => Mode::On,
        _ => panic!("{usage}"),
    };
    let snap = Snapshot::build(&config::parse(CONFIG).unwrap()).unwrap();
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut d = match kind {
                "forward" => [0xfc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                "drop" => [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                _ => panic!("{usage}"),
            };
            d[14..].copy_from_slice(&(i as u16 | 1).to_be_bytes());
            udp6(d)
        })
        .collect();
    let board = CaptureBoard::default();
    let file =
        std::env::temp_dir().join(format!("lwt6-capture-cost-{}.pcapng", std::process::id()));
    if mode == Mode::On {
        let req = capture::parse_start(&[file.to_str().unwrap()], |d| snap.dev_id(d)).unwrap();
        board.start(req, &snap).unwrap();
    }
    let mut worker = Worker::new(&snap);
    let mut wc = WorkerCapture::default();
    let mut stages: Vec<Stage> = (0..snap.links.len()).map(|_| Stage::default()).collect();
    rounds(
        mode,
        &mut worker,
        &snap,
        &board,
        &mut wc,
        &frames,
        &mut stages,
    );
    let s = &worker.stats;
    assert_eq!(s.rx, n as u64);
    let summary = if mode == Mode::On {
        let said = board.stop().unwrap();
        let _ = std::fs::remove_file(&file);
        said
    } else {
        String::new()
    };
    eprintln!(
        "{kind} {}: rx {} tx {} dropped {}; {}",
        args[2],
        s.rx,
        s.tx,
        s.dropped(),
        summary.trim_end()
    );
}
