//! `lwt6 gen`: a traffic generator for live benchmarks. Sends one template frame (the first of a capture, or given in
//! hex) at a given rate or as fast as it can, varying the low 16 bits of the IPv6 source address over `--flows`
//! values so that a fanout spreads the frames over several workers, or, with `--all-frames`, every frame of the
//! capture in turn: over an AF_PACKET socket in `sendmmsg` batches (`--via packet`), or from inside the kernel
//! with XDP live frames (`--via xdp`, [`crate::io::livegen`]: no system call per frame or batch, one sender thread
//! per `--cpus` CPU).

use crate::cli::{Failure, fail};
use crate::io::afpacket::{AfPacket, AfPacketOptions};
use crate::io::netdev;
use crate::io::pcap;
use crate::io::port::Port;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How `lwt6 gen` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// An AF_PACKET socket, `sendmmsg` batches of 32, qdisc bypassed.
    Packet,
    /// XDP live frames (`BPF_PROG_TEST_RUN`, Linux 5.18): the frames are made and redirected to the interface
    /// inside the kernel, paced per CPU by lwt6's XDP program. On a veth the peer needs an XDP program or GRO.
    Xdp,
}

/// `lwt6 gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Interface to send on.
    #[arg(long = "dev")]
    pub dev: String,
    /// The frame to send: the first frame of this capture (Ethernet).
    #[arg(
        long = "template",
        conflicts_with = "frame",
        required_unless_present = "frame"
    )]
    pub template: Option<PathBuf>,
    /// The frame to send, in hex.
    #[arg(long = "frame")]
    pub frame: Option<String>,
    /// Frames per second (0: as fast as the kernel takes them).
    #[arg(long = "rate", default_value_t = 0, value_parser = crate::cli::within::<u64>(0, 100_000_000))]
    pub rate: u64,
    /// How long to send, in milliseconds.
    #[arg(long = "duration-ms", default_value_t = 1000, value_parser = crate::cli::within::<u64>(1, 3_600_000))]
    pub duration_ms: u64,
    /// Distinct IPv6 source addresses (low 16 bits varied), 1 to 65536.
    #[arg(long = "flows", default_value_t = 1, value_parser = crate::cli::within::<u32>(1, 65536))]
    pub flows: u32,
    /// Stop after this many frames (0: no limit; --duration-ms still ends the run).
    #[arg(long = "count", default_value_t = 0)]
    pub count: u64,
    /// Send every frame of the --template capture in turn, not only the first (traffic of many kinds: the live
    /// soak's, `lwt6 bench soak --frames-out`).
    #[arg(long = "all-frames", requires = "template", conflicts_with = "flows")]
    pub all_frames: bool,
    /// How to send.
    #[arg(long = "via", value_enum, default_value_t = Via::Packet)]
    pub via: Via,
    /// `--via xdp`: the CPUs to send from, one thread each (comma-separated numbers; the rate is split evenly).
    /// On a veth each CPU's frames land on the peer's receive queue of that number (modulo its queue count).
    #[arg(long = "cpus", default_value = "0", value_delimiter = ',')]
    pub cpus: Vec<usize>,
}

fn hex(s: &str) -> Result<Vec<u8>, Failure> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if !s.len().is_multiple_of(2) {
        return Err(fail("--frame: an odd number of hex digits"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| fail(format!("--frame: '{}' is not a hex byte", &s[i..i + 2])))
        })
        .collect()
}

/// `lwt6 gen`: prints `{"sent": N, "seconds": S, "rate": R}`.
pub fn run(a: GenArgs) -> Result<(), Failure> {
    let mut all = match (&a.template, &a.frame) {
        (Some(p), _) => {
            let frames = pcap::read_file(p).map_err(|e| fail(format!("{}: {e}", p.display())))?;
            if frames.is_empty() {
                return Err(fail(format!("{}: no frame", p.display())));
            }
            frames.into_iter().map(|f| f.data).collect::<Vec<_>>()
        }
        (None, Some(h)) => vec![hex(h)?],
        (None, None) => return Err(fail("--template or --frame is needed")),
    };
    if !a.all_frames {
        all.truncate(1);
    }
    for (i, f) in all.iter().enumerate() {
        if f.len() < 14 || f.len() > 9216 {
            return Err(fail(format!(
                "frame {} has {} bytes (14 to 9216)",
                i + 1,
                f.len()
            )));
        }
    }
    let frame = all[0].clone();
    let ipv6 = frame.len() >= 54 && frame[12..14] == [0x86, 0xdd];
    if a.flows > 1 && !ipv6 {
        return Err(fail(
            "--flows needs an IPv6 frame (its source address is varied)",
        ));
    }
    if a.via == Via::Xdp {
        if a.count > 0 || a.all_frames {
            return Err(fail(
                "--via xdp sends one template frame for --duration-ms (--count and --all-frames need --via packet)",
            ));
        }
        let g = crate::io::livegen::LiveGen::new(&a.dev, &frame, a.flows)
            .map_err(|e| fail(format!("--via xdp: {e}")))?;
        let r = g
            .run(&a.cpus, a.rate, Duration::from_millis(a.duration_ms))
            .map_err(|e| fail(format!("--via xdp: {e}")))?;
        let v = json!({"sent": r.sent, "seconds": r.elapsed.as_secs_f64(), "rate": r.rate(), "per_cpu": r.per_cpu});
        return super::stdio::write_stdout(format!("{v}\n").as_bytes(), "what was sent");
    }
    let dev = netdev::lookup(&a.dev).map_err(|e| fail(format!("--dev {}: {e}", a.dev)))?;
    let mut port = AfPacket::open(
        dev.ifindex,
        &AfPacketOptions {
            rx_batch: 1,
            rcvbuf: 0,
            ..Default::default()
        },
    )
    .map_err(|e| fail(format!("--dev {}: {e}", a.dev)))?;
    let mut frames: Vec<Vec<u8>> = if a.all_frames { all } else { Vec::new() };
    for i in 0..if a.all_frames { 0 } else { a.flows } {
        let mut f = frame.clone();
        if a.flows > 1 {
            // Source address bytes 14..16 of the IPv6 header (frame offset 14 + 8 + 14).
            let at = 14 + 8 + 14;
            let v = u16::from_be_bytes([f[at], f[at + 1]]).wrapping_add(i as u16);
            f[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
        frames.push(f);
    }
    let start = Instant::now();
    let end = start + Duration::from_millis(a.duration_ms);
    let mut sent: u64 = 0;
    let mut next = 0usize;
    const BATCH: u64 = 32;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if a.rate > 0 {
            let due = (now - start).as_secs_f64() * a.rate as f64;
            if (sent as f64) >= due {
                let ahead = (sent as f64 - due) / a.rate as f64;
                if ahead > 0.0005 {
                    std::thread::sleep(Duration::from_secs_f64(ahead.min(0.01)));
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
        }
        let room = if a.count > 0 {
            a.count - sent - port.queued() as u64
        } else {
            BATCH
        };
        if room == 0 && port.queued() == 0 {
            break;
        }
        for _ in 0..BATCH.min(room) {
            match port.send(&frames[next]) {
                Ok(true) => next = (next + 1) % frames.len(),
                Ok(false) => break,
                Err(e) => return Err(fail(format!("--dev {}: {e}", a.dev))),
            }
        }
        let before = port.queued() as u64;
        port.flush()
            .map_err(|e| fail(format!("--dev {}: {e}", a.dev)))?;
        sent += before - port.queued() as u64;
    }
    // Frames still queued: the kernel gets a moment to take them; those it never takes are not counted.
    let before = port.queued() as u64;
    let unsent = port.close_out(100) as u64;
    sent += before - unsent;
    let secs = start.elapsed().as_secs_f64();
    let v = json!({"sent": sent, "seconds": secs, "rate": sent as f64 / secs});
    super::stdio::write_stdout(format!("{v}\n").as_bytes(), "what was sent")
}
