//! `lwt6 bench live`: the zero-loss forwarding rate of the kernel router and of `lwt6 run`, in the same network
//! namespaces, with the same sender and receiver (docs/live.md, *Benchmark*; figures in docs/BENCHMARKS.md).
//!
//! ```text
//! sender [s0] ── [r0] router [r1] ── [d0] receiver        veth pairs, QUEUES rx/tx queues each
//! ```
//!
//! - The sender is `lwt6 gen` (by default `--via xdp`: frames made and redirected inside the kernel by XDP live
//!   frames, paced per CPU by lwt6's XDP program; `--sender packet`: AF_PACKET `sendmmsg`), pinned to the
//!   sender CPUs.
//! - The router is the kernel (forwarding on, the case's routes given with `ip`, GRO on r0 so that veth has the
//!   NAPI instance frames redirected into it need) or `lwt6 run` (the same routes in its configuration, the kernel
//!   stepped aside). Its work is pinned to the router CPUs: `lwt6 run` with `taskset`, and r0's receive work
//!   (NAPI, made threaded: `/sys/class/net/r0/threaded`) by pinning its `napi/r0-*` kernel threads.
//! - The receiver counts what arrives (d0's `rx_packets`); IPv6 is disabled on d0, so its stack drops each frame at
//!   once, and Receive Packet Steering hands that work to the sender CPUs, not the router's.
//!
//! A trial offers a rate for `--trial-ms` and counts what arrives 200 ms later; the zero-loss rate (at most
//! `--loss`, 0.1 %, lost) is found by bisection below the rate the sender reaches when unpaced. When even that
//! loses nothing the row is *sender-limited*: the router's own limit is higher.

use crate::cli::{Failure, fail};
use crate::io::livegen::{Verdict, VerdictProgram};
use crate::wire::ethernet::mac_text;
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::net::Ipv6Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MAC_S0: [u8; 6] = [2, 0, 0, 0, 1, 1];
const MAC_R0: [u8; 6] = [2, 0, 0, 0, 1, 2];
const MAC_R1: [u8; 6] = [2, 0, 0, 0, 2, 1];
const MAC_D0: [u8; 6] = [2, 0, 0, 0, 2, 2];

/// The running `lwt6 run` (0: none), for the signal thread to stop.
static ROUTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The sender of `lwt6 bench live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sender {
    /// `lwt6 gen --via xdp`: XDP live frames from inside the kernel (on veth: to the peer's queue of the
    /// sender's CPU).
    Xdp,
    /// `lwt6 gen --via packet`: AF_PACKET `sendmmsg` (on veth: spread over the peer's queues by flow hash).
    Packet,
}

/// The receiver of `lwt6 bench live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Receiver {
    /// An XDP program on d0 drops every frame (counted by d0's `rx_packets`) in d0's NAPI threads, pinned to
    /// `--receiver-cpus` at real-time priority.
    Xdp,
    /// d0's stack drops every frame (IPv6 off), with Receive Packet Steering to `--receiver-cpus`.
    Stack,
}

/// lwt6's back end in `lwt6 bench live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LiveIo {
    /// AF_XDP (copy mode on veth).
    Xdp,
    /// AF_PACKET.
    Packet,
}

/// `lwt6 bench live`.
#[derive(Debug, Args)]
pub struct LiveBenchArgs {
    /// Cases, comma separated: plain, seg6 (encap, 3 SIDs), ioam-inline (lwt6 as IOAM head-end), ioam-transit,
    /// dx6 (seg6local End.DX6).
    #[arg(
        long,
        default_value = "plain,seg6,ioam-inline,ioam-transit,dx6",
        value_delimiter = ','
    )]
    pub cases: Vec<String>,
    /// lwt6 worker counts to measure (each against the same kernel row).
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    pub workers: Vec<usize>,
    /// lwt6's packet I/O.
    #[arg(long, value_enum, default_value_t = LiveIo::Xdp)]
    pub io: LiveIo,
    /// With `--io xdp`: the XDP tier's settings to measure, comma separated, each a sub-case of every worker
    /// count (`on`: plans forwarded in the driver, `off`: AF_XDP alone; `lwt6 run --xdp-tier`). The tier
    /// forwards to d0 only when r1 takes redirected frames: with `--receiver xdp` (d0's XDP program) it does,
    /// with `--receiver stack` (d0 without XDP or GRO) every frame goes to the worker, counted `no_egress`.
    #[arg(long = "xdp-tier", default_value = "on,off", value_delimiter = ',', value_parser = ["on", "off"])]
    pub xdp_tier: Vec<String>,
    /// The sender.
    #[arg(long, value_enum, default_value_t = Sender::Xdp)]
    pub sender: Sender,
    /// CPUs the sender runs on (one thread each with `--sender xdp`), comma separated.
    #[arg(long = "sender-cpus", default_value = "0")]
    pub sender_cpus: String,
    /// CPUs the router runs on (`lwt6 run`, and r0's receive threads), comma separated.
    #[arg(long = "router-cpus", default_value = "1")]
    pub router_cpus: String,
    /// CPUs the receiver's work runs on (d0's NAPI threads, real-time priority), comma separated: never the
    /// router's, so that the router CPU does the router's work only.
    #[arg(long = "receiver-cpus", default_value = "0")]
    pub receiver_cpus: String,
    /// How the receiver takes frames: `xdp` counts and drops them in an XDP program on d0, in d0's own NAPI
    /// threads (on `--receiver-cpus`); `stack` hands them to d0's stack (IPv6 off: dropped at once), on the
    /// router's CPU when the router's transmit runs there (the set-up of the measurements before 2026-11-27).
    #[arg(long, value_enum, default_value_t = Receiver::Xdp)]
    pub receiver: Receiver,
    /// Rounds: every case's routers are measured once per round, interleaved (kernel, lwt6, kernel, ...), and the
    /// table gives each figure's median over the rounds.
    #[arg(long, default_value_t = 3, value_parser = crate::cli::within::<u32>(1, 20))]
    pub rounds: u32,
    /// Length of the trial at overload (the sender unpaced), in ms: the delivered rate and the router CPU's time
    /// per delivered packet are measured over it.
    #[arg(long = "overload-ms", default_value_t = 2500, value_parser = crate::cli::within::<u64>(100, 60_000))]
    pub overload_ms: u64,
    /// Receive and transmit queues of each veth.
    #[arg(long, default_value_t = 2, value_parser = crate::cli::within::<u32>(1, 16))]
    pub queues: u32,
    /// Length of one trial (ms).
    #[arg(long = "trial-ms", default_value_t = 1000, value_parser = crate::cli::within::<u64>(100, 60_000))]
    pub trial_ms: u64,
    /// Bisection steps of the zero-loss search below the rate delivered at overload (0: no zero-loss search).
    #[arg(long, default_value_t = 7, value_parser = crate::cli::within::<u32>(0, 20))]
    pub steps: u32,
    /// Largest loss counted as none.
    #[arg(long, default_value_t = 0.001)]
    pub loss: f64,
    /// Trials per offered rate: the rate counts as loss-free when one of them is (more than 1 on a machine other
    /// work shares, where a trial can lose frames to a scheduling hiccup of a few milliseconds).
    #[arg(long, default_value_t = 2, value_parser = crate::cli::within::<u32>(1, 10))]
    pub tries: u32,
    /// Source addresses the sender cycles through (low 16 bits).
    #[arg(long, default_value_t = 64, value_parser = crate::cli::within::<u32>(1, 65536))]
    pub flows: u32,
    /// Niceness of the sender, the router and r0's receive threads (negative: ahead of other work on a shared
    /// machine; 0: as they come).
    #[arg(long, default_value_t = -10, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: i32,
    /// Niceness of r0's receive (NAPI) threads on the router CPUs. For the kernel router they are the router
    /// (alone on those CPUs, their niceness changes nothing); for lwt6 they only feed its sockets, and at the
    /// default (19, against the router's `--nice` -10) they yield the CPU to lwt6's worker instead of taking
    /// frames from the veth that lwt6's full receive ring then drops (receive livelock: measured on 2026-11-27,
    /// NAPI at nice 0 took 0.9-1.2 µs per delivered packet, at 19 about 0.35). Give it `--nice`'s value to share
    /// the CPU evenly.
    #[arg(long = "napi-nice", default_value_t = 19, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub napi_nice: i32,
    /// Also measure the sender alone, into an XDP program on r0 that drops every frame.
    #[arg(long = "sender-only")]
    pub sender_only: bool,
    /// The lwt6 binary the sender and the router run (default: this one).
    #[arg(long)]
    pub lwt6: Option<PathBuf>,
    /// Write the results as JSON to FILE.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the results as JSON instead of the table.
    #[arg(short = 'j', long)]
    pub json: bool,
}

/// One benchmark case: the frame the sender sends, the kernel's routes and lwt6's for it.
struct Case {
    name: &'static str,
    title: &'static str,
    frame: Vec<u8>,
    /// `ip -n ROUTER ...` argument lists (`sysctl ...` lists run `sysctl -qw` in the namespace); `None`: the kernel
    /// cannot do it, with the reason.
    kernel: Result<Vec<Vec<String>>, &'static str>,
    lwt6: Vec<String>,
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

const S0: Ipv6Addr = Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 1);

/// Ethernet (s0 → r0) + IPv6 header.
fn eth_ip6(plen: usize, nh: u8, src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + 40 + plen);
    f.extend_from_slice(&MAC_R0);
    f.extend_from_slice(&MAC_S0);
    f.extend_from_slice(&[0x86, 0xdd]);
    ip6(&mut f, plen, nh, src, dst);
    f
}

/// An IPv6 header (RFC 8200 §3): version 6, traffic class and flow label 0, hop limit 64.
fn ip6(f: &mut Vec<u8>, plen: usize, nh: u8, src: Ipv6Addr, dst: Ipv6Addr) {
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(plen as u16).to_be_bytes());
    f.extend_from_slice(&[nh, 64]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
}

/// A UDP datagram (RFC 768) from port 40000 to 3333 with 16 bytes of payload and its checksum over `src`, `dst`.
fn udp(src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    use crate::wire::checksum;
    let mut u = Vec::with_capacity(24);
    u.extend_from_slice(&40000u16.to_be_bytes());
    u.extend_from_slice(&3333u16.to_be_bytes());
    u.extend_from_slice(&24u16.to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(b"lwt6 bench live!");
    let s = checksum::combine(
        checksum::pseudo_header_v6(&src, &dst, 24, 17),
        checksum::sum(&u),
    );
    let c = match checksum::finish(s) {
        0 => 0xffff,
        c => c,
    };
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// A UDP/IPv6 frame from fd00:1::1 to `dst`.
fn udp_frame(dst: Ipv6Addr) -> Vec<u8> {
    let u = udp(S0, dst);
    let mut f = eth_ip6(u.len(), 17, S0, dst);
    f.extend_from_slice(&u);
    f
}

/// A UDP/IPv6 frame to `dst` with a Hop-by-Hop header holding an IOAM pre-allocated trace option (RFC 9486
/// §4.4; option type 0x31, RFC 9486 §7.1): namespace 123, trace type 0x800000 (hop limit and node id), room for
/// three nodes, padded to a multiple of 8 bytes.
fn ioam_frame(dst: Ipv6Addr) -> Vec<u8> {
    let u = udp(S0, dst);
    let (nodelen, remlen) = (1u16, 3u16);
    let mut opt = vec![0x31, 2 + 8 + 4 * remlen as u8, 0, 0];
    opt.extend_from_slice(&123u16.to_be_bytes());
    opt.extend_from_slice(&((nodelen << 11) | remlen).to_be_bytes());
    opt.extend_from_slice(&[0x80, 0, 0, 0]);
    opt.extend(std::iter::repeat_n(0u8, 4 * remlen as usize));
    // next header, length, PadN of 0 bytes (so the option starts at 4n+2... as the kernel tests use), the option,
    // then PadN to a multiple of 8.
    let mut hbh = vec![17, 0, 1, 0];
    hbh.extend_from_slice(&opt);
    if !hbh.len().is_multiple_of(8) {
        let pad = 8 - hbh.len() % 8;
        hbh.extend_from_slice(&[1, (pad - 2) as u8]);
        hbh.extend(std::iter::repeat_n(0u8, pad - 2));
    }
    hbh[1] = (hbh.len() / 8 - 1) as u8;
    let mut f = eth_ip6(hbh.len() + u.len(), 0, S0, dst);
    f.extend_from_slice(&hbh);
    f.extend_from_slice(&u);
    f
}

/// An SRv6 frame for End.DX6: IPv6 to `sid` with an SRH (RFC 8754 §2: Segments Left 0, the one segment `sid`)
/// around a UDP/IPv6 packet to `inner`.
fn dx6_frame(sid: Ipv6Addr, inner: Ipv6Addr) -> Vec<u8> {
    let u = udp(S0, inner);
    let mut srh = vec![41, 2, 4, 0, 0, 0, 0, 0];
    srh.extend_from_slice(&sid.octets());
    let mut f = eth_ip6(srh.len() + 40 + u.len(), 43, S0, sid);
    f.extend_from_slice(&srh);
    ip6(&mut f, u.len(), 17, S0, inner);
    f.extend_from_slice(&u);
    f
}

fn cases() -> Vec<Case> {
    let a = |s: &str| s.parse::<Ipv6Addr>().expect("a valid address");
    let k = |v: &[&str]| -> Result<Vec<Vec<String>>, &'static str> {
        Ok(v.iter().map(|s| words(s)).collect())
    };
    vec![
        Case {
            name: "plain",
            title: "plain IPv6",
            frame: udp_frame(a("fc00::99")),
            kernel: k(&[]),
            lwt6: vec![],
        },
        Case {
            name: "seg6",
            title: "seg6 encap, 3 SIDs",
            frame: udp_frame(a("fd00:91::1")),
            kernel: k(&["-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1"]),
            lwt6: vec!["-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1".into()],
        },
        Case {
            name: "ioam-inline",
            title: "IOAM inline (head-end)",
            frame: udp_frame(a("fd00:93::1")),
            kernel: Err("no ioam6 lightweight tunnel in this kernel (CONFIG_IPV6_IOAM6_LWTUNNEL): compare with its plain IPv6 row"),
            lwt6: vec![
                "ioam namespace add 123".into(),
                "-6 route add fd00:93::/64 encap ioam6 mode inline trace prealloc type 0x800000 ns 123 size 12 via fd00:2::2 dev r1".into(),
            ],
        },
        Case {
            name: "ioam-transit",
            title: "IOAM transit (trace filled)",
            frame: ioam_frame(a("fc00::99")),
            kernel: k(&[
                "ioam namespace add 123",
                "sysctl net.ipv6.conf.r0.ioam6_enabled=1",
                "sysctl net.ipv6.ioam6_id=0x111111",
            ]),
            lwt6: vec![
                "ioam namespace add 123".into(),
                "sysctl net.ipv6.conf.r0.ioam6_enabled=1".into(),
                "sysctl net.ipv6.ioam6_id=0x111111".into(),
            ],
        },
        Case {
            name: "dx6",
            title: "End.DX6",
            frame: dx6_frame(a("fc00:d::100"), a("fd00:2::2")),
            kernel: k(&["-6 route add fc00:d::100/128 encap seg6local action End.DX6 nh6 fd00:2::2 dev r1"]),
            lwt6: vec!["-6 route add fc00:d::100/128 encap seg6local action End.DX6 nh6 fd00:2::2 dev r1".into()],
        },
    ]
}

/// Runs a command; its error output is the failure.
fn sh(argv: &[&str]) -> Result<String, Failure> {
    let o = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(format!("{}: {e}", argv[0])))?;
    if !o.status.success() {
        return Err(fail(format!(
            "`{}` failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The three namespaces; deleted when dropped.
struct Topo {
    s: String,
    r: String,
    d: String,
}

impl Drop for Topo {
    fn drop(&mut self) {
        for n in [&self.s, &self.r, &self.d] {
            let _ = sh(&["ip", "netns", "del", n]);
        }
    }
}

impl Topo {
    /// The namespaces and veths; Receive Packet Steering on d0 to `rps_mask` (the receiver's CPUs).
    fn new(queues: u32, rps_mask: &str) -> Result<Topo, Failure> {
        let p = format!("l6bl-{}-", std::process::id());
        let t = Topo {
            s: format!("{p}s"),
            r: format!("{p}r"),
            d: format!("{p}d"),
        };
        for n in [&t.s, &t.r, &t.d] {
            sh(&["ip", "netns", "add", n])?;
        }
        let q = queues.to_string();
        for (a, an, am, b, bn, bm) in [
            ("s0", &t.s, MAC_S0, "r0", &t.r, MAC_R0),
            ("r1", &t.r, MAC_R1, "d0", &t.d, MAC_D0),
        ] {
            let (am, bm) = (mac_text(&am), mac_text(&bm));
            sh(&[
                "ip",
                "link",
                "add",
                a,
                "netns",
                an,
                "address",
                &am,
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "type",
                "veth",
                "peer",
                "name",
                b,
                "netns",
                bn,
                "address",
                &bm,
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
            ])?;
        }
        // No kernel chatter (router solicitations, DAD) from the hosts; the receiver's stack drops every frame at
        // once, on the receiver's CPUs (with `--receiver xdp` its XDP program drops them before the stack).
        t.sysctl(&t.s, "net.ipv6.conf.s0.disable_ipv6=1")?;
        t.sysctl(&t.d, "net.ipv6.conf.d0.disable_ipv6=1")?;
        t.write(&t.d, "/sys/class/net/d0/queues/rx-*/rps_cpus", rps_mask)?;
        sh(&["ip", "-n", &t.s, "link", "set", "s0", "up"])?;
        sh(&["ip", "-n", &t.d, "link", "set", "d0", "up"])?;
        t.lwt6_mode()?;
        Ok(t)
    }

    fn sysctl(&self, ns: &str, kv: &str) -> Result<(), Failure> {
        sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", kv]).map(drop)
    }

    /// Writes `value` to the files `glob` names, in namespace `ns` (its own /sys).
    fn write(&self, ns: &str, glob: &str, value: &str) -> Result<(), Failure> {
        sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sh",
            "-c",
            &format!("for f in {glob}; do echo {value} > $f; done"),
        ])
        .map(drop)
    }

    fn rx_packets(&self) -> Result<u64, Failure> {
        let v = sh(&[
            "ip",
            "netns",
            "exec",
            &self.d,
            "cat",
            "/sys/class/net/d0/statistics/rx_packets",
        ])?;
        v.trim()
            .parse()
            .map_err(|_| fail(format!("d0 rx_packets: not a number: '{}'", v.trim())))
    }

    /// The kernel stepped aside (docs/live.md): no forwarding, IPv6 off on r0 / r1 (which removes their
    /// addresses, routes and neighbours), no GRO, no IOAM namespace.
    fn lwt6_mode(&self) -> Result<(), Failure> {
        self.sysctl(&self.r, "net.ipv6.conf.all.forwarding=0")?;
        for i in ["r0", "r1"] {
            self.sysctl(&self.r, &format!("net.ipv6.conf.{i}.disable_ipv6=1"))?;
            sh(&["ip", "-n", &self.r, "link", "set", i, "up"])?;
        }
        let _ = sh(&[
            "ip", "netns", "exec", &self.r, "ethtool", "-K", "r0", "gro", "off",
        ]);
        let _ = sh(&["ip", "-n", &self.r, "ioam", "namespace", "del", "123"]);
        Ok(())
    }

    /// The kernel routes: addresses, static neighbours, forwarding, the case's statements, GRO on r0.
    fn kernel_mode(&self, stmts: &[Vec<String>]) -> Result<(), Failure> {
        let r = &self.r;
        for i in ["r0", "r1"] {
            self.sysctl(r, &format!("net.ipv6.conf.{i}.disable_ipv6=0"))?;
        }
        self.sysctl(r, "net.ipv6.conf.all.forwarding=1")?;
        let (s0, d0) = (mac_text(&MAC_S0), mac_text(&MAC_D0));
        let base = [
            "addr add fd00:1::2/64 dev r0 nodad".to_string(),
            "addr add fd00:2::1/64 dev r1 nodad".into(),
            format!("neigh replace fd00:1::1 lladdr {s0} dev r0 nud permanent"),
            format!("neigh replace fd00:2::2 lladdr {d0} dev r1 nud permanent"),
            "-6 route add fc00::/16 via fd00:2::2 dev r1".into(),
        ];
        for st in base.iter().map(|s| words(s)).chain(stmts.iter().cloned()) {
            if st[0] == "sysctl" {
                self.sysctl(r, &st[1])?;
            } else {
                let mut argv = vec!["ip", "-n", r];
                argv.extend(st.iter().map(String::as_str));
                sh(&argv)?;
            }
        }
        sh(&["ip", "netns", "exec", r, "ethtool", "-K", "r0", "gro", "on"])?;
        Ok(())
    }
}

/// Process ids of the kernel threads named `napi/r0-*` (any namespace's r0).
fn napi_threads(dev: &str) -> BTreeSet<u32> {
    let prefix = format!("napi/{dev}-");
    let mut out = BTreeSet::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                && c.trim_end().starts_with(&prefix)
            {
                out.insert(pid);
            }
        }
    }
    out
}

/// CPU time (ns) the processes `pids` (all their threads) and kernel threads have had (`schedstat`).
fn cpu_ns(pids: &[u32]) -> u64 {
    let one = |path: &str| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
            .unwrap_or(0)
    };
    let mut total = 0;
    for pid in pids {
        match std::fs::read_dir(format!("/proc/{pid}/task")) {
            Ok(rd) => {
                for t in rd.flatten() {
                    total += one(&format!("{}/schedstat", t.path().display()));
                }
            }
            Err(_) => total += one(&format!("/proc/{pid}/schedstat")),
        }
    }
    total
}

/// Makes r0's NAPI threaded and pins its receive threads that did not exist in `before` to the router CPUs
/// with the bench's niceness; returns their ids.
fn pin_napi(t: &Topo, before: &BTreeSet<u32>, cpus: &str, nice: i32) -> Result<Vec<u32>, Failure> {
    pin_threads(
        t,
        &t.r,
        "r0",
        before,
        cpus,
        &["renice", "-n", &nice.to_string(), "-p"],
    )
}

/// Makes `dev`'s NAPI (in namespace `ns`) threaded and pins its threads that did not exist in `before` to `cpus`,
/// each also given to the command `how` (followed by its id); returns their ids.
fn pin_threads(
    t: &Topo,
    ns: &str,
    dev: &str,
    before: &BTreeSet<u32>,
    cpus: &str,
    how: &[&str],
) -> Result<Vec<u32>, Failure> {
    t.write(ns, &format!("/sys/class/net/{dev}/threaded"), "1")?;
    let mut pinned = Vec::new();
    for _ in 0..50 {
        let new: Vec<u32> = napi_threads(dev).difference(before).copied().collect();
        if !new.is_empty() {
            for pid in &new {
                let p = pid.to_string();
                sh(&["taskset", "-pc", cpus, &p])?;
                let mut argv = how.to_vec();
                argv.push(&p);
                sh(&argv)?;
            }
            pinned = new;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(pinned)
}

/// The receiver of `--receiver xdp`: an XDP program on d0 dropping every frame (d0's `rx_packets` still counts
/// each), d0's NAPI threaded and its threads pinned to `cpus` at real-time priority (`SCHED_FIFO` 50), so that
/// the receiver's work never runs on, or waits for, the router's CPU.
fn receiver_sink(t: &Topo, cpus: &str) -> Result<(VerdictProgram, Vec<u32>), Failure> {
    let before = napi_threads("d0");
    let sink = in_netns(&t.d, || {
        VerdictProgram::attach("d0", Verdict::Drop)
            .map_err(|e| fail(format!("XDP sink on d0: {e}")))
    })?;
    let threads = pin_threads(t, &t.d, "d0", &before, cpus, &["chrt", "-f", "-p", "50"])?;
    if threads.is_empty() {
        return Err(fail(
            "d0's NAPI threads did not appear (/sys/class/net/d0/threaded)",
        ));
    }
    Ok((sink, threads))
}

/// One trial's outcome.
#[derive(Clone, Copy, Debug)]
struct Trial {
    sent: u64,
    got: u64,
    rate: f64,
}

impl Trial {
    fn loss(&self) -> f64 {
        if self.sent == 0 {
            1.0
        } else {
            self.sent.saturating_sub(self.got) as f64 / self.sent as f64
        }
    }
}

struct Bench<'a> {
    a: &'a LiveBenchArgs,
    bin: PathBuf,
    /// The receiver's XDP program (`--receiver xdp`), attached while the bench runs, and d0's NAPI threads.
    receiver: Option<(VerdictProgram, Vec<u32>)>,
    /// `--router-cpus` as CPU numbers (whose busy time is the router's).
    router_cpus: Vec<u32>,
    topo: Topo,
}

impl Bench<'_> {
    fn trial(&self, frame_hex: &str, rate: u64, ms: u64) -> Result<Trial, Failure> {
        let before = self.topo.rx_packets()?;
        let a = self.a;
        let (rate_s, ms, flows, nice) = (
            rate.to_string(),
            ms.to_string(),
            a.flows.to_string(),
            a.nice.to_string(),
        );
        let bin = self.bin.to_string_lossy();
        let mut argv: Vec<&str> = vec!["ip", "netns", "exec", &self.topo.s, "nice", "-n", &nice];
        if a.sender == Sender::Packet {
            argv.extend(["taskset", "-c", &a.sender_cpus]);
        }
        argv.extend([
            &*bin,
            "gen",
            "--dev",
            "s0",
            "--frame",
            frame_hex,
            "--rate",
            &rate_s,
            "--duration-ms",
            &ms,
            "--flows",
            &flows,
        ]);
        match a.sender {
            Sender::Xdp => argv.extend(["--via", "xdp", "--cpus", &a.sender_cpus]),
            Sender::Packet => argv.extend(["--via", "packet"]),
        }
        let out = sh(&argv)?;
        std::thread::sleep(Duration::from_millis(200));
        let got = self.topo.rx_packets()? - before;
        let v: Value =
            serde_json::from_str(&out).map_err(|e| fail(format!("lwt6 gen: {e}: {out}")))?;
        Ok(Trial {
            sent: v["sent"].as_u64().unwrap_or(0),
            got,
            rate: v["rate"].as_f64().unwrap_or(0.0),
        })
    }

    /// One router measured on one case: first at overload (the sender unpaced for `--overload-ms`): the rate
    /// delivered, and the router's CPU time per delivered packet by two independent methods — the router CPUs'
    /// busy time from `/proc/stat` (everything that ran there), and the CPU time of the router's own threads
    /// (`lwt6 run`'s, `router`, and r0's NAPI threads, `napi`) from `schedstat`; then, unless `--steps 0`, the
    /// zero-loss rate by bisection below the sender's unpaced rate.
    fn measure(&self, frame: &[u8], router: &[u32], napi: &[u32]) -> Result<Value, Failure> {
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        let cpus = &self.router_cpus;
        let (b0, r0, n0) = (busy_ns(cpus), cpu_ns(router), cpu_ns(napi));
        let max = self.trial(&hex, 0, self.a.overload_ms)?;
        let (b1, r1, n1) = (busy_ns(cpus), cpu_ns(router), cpu_ns(napi));
        let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / max.got.max(1) as f64;
        let cpu = json!({"router_cpu_ns_per_packet": per(b0, b1), "process_ns_per_packet": per(r0, r1),
                         "napi_ns_per_packet": per(n0, n1), "napi_threads": napi.len()});
        let delivered = max.got as f64 * max.rate / max.sent.max(1) as f64;
        let mut v = json!({"sender_max": max.rate, "sent_at_max": max.sent, "delivered_at_max": delivered,
                           "loss_at_max": max.loss(), "cpu_at_max": cpu, "trials": 1});
        if max.loss() <= self.a.loss {
            v["zero_loss"] = json!(max.rate);
            v["sender_limited"] = json!(true);
            return Ok(v);
        }
        v["sender_limited"] = json!(false);
        if self.a.steps == 0 {
            return Ok(v);
        }
        let (mut lo, mut hi) = (0.0f64, max.rate);
        let mut trials = 1;
        for _ in 0..self.a.steps {
            let mid = (lo + hi) / 2.0;
            let mut ok = None;
            for _ in 0..self.a.tries {
                let t = self.trial(&hex, mid as u64, self.a.trial_ms)?;
                trials += 1;
                if t.loss() <= self.a.loss {
                    ok = Some(t);
                    break;
                }
            }
            match ok {
                Some(t) => lo = lo.max(t.rate.min(mid)),
                None => hi = mid,
            }
        }
        v["zero_loss"] = json!(lo);
        v["trials"] = json!(trials);
        Ok(v)
    }

    fn kernel(&self, c: &Case) -> Result<Value, Failure> {
        let stmts = match &c.kernel {
            Ok(s) => s,
            Err(why) => return Ok(json!({"case": c.name, "router": "kernel", "unavailable": why})),
        };
        let before = napi_threads("r0");
        self.topo.kernel_mode(stmts)?;
        let r = pin_napi(&self.topo, &before, &self.a.router_cpus, self.a.napi_nice)
            .and_then(|napi| self.measure(&c.frame, &[], &napi));
        self.topo.lwt6_mode()?;
        let mut v = r?;
        v["case"] = json!(c.name);
        v["router"] = json!("kernel");
        Ok(v)
    }

    fn lwt6(&self, c: &Case, workers: usize, tier: &str) -> Result<Value, Failure> {
        let dir = std::env::temp_dir();
        let tag = format!("lwt6-bench-live-{}", std::process::id());
        let conf = dir.join(format!("{tag}.conf"));
        let sock = dir.join(format!("{tag}.sock"));
        let (s0, d0) = (mac_text(&MAC_S0), mac_text(&MAC_D0));
        let mut text = format!(
            "link add r0\nlink add r1\naddr add fd00:1::2/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
             neigh add fd00:1::1 lladdr {s0} dev r0\nneigh add fd00:2::2 lladdr {d0} dev r1\n\
             sysctl net.ipv6.conf.all.forwarding=1\n-6 route add fc00::/16 via fd00:2::2 dev r1\n"
        );
        for l in &c.lwt6 {
            text += l;
            text.push('\n');
        }
        std::fs::write(&conf, text).map_err(|e| fail(format!("{}: {e}", conf.display())))?;
        let before = napi_threads("r0");
        let io = match self.a.io {
            LiveIo::Xdp => "xdp",
            LiveIo::Packet => "packet",
        };
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.topo.r,
                "nice",
                "-n",
                &self.a.nice.to_string(),
                "taskset",
                "-c",
            ])
            .arg(&self.a.router_cpus)
            .arg(&self.bin)
            .args(["run", "-j", "--io", io, "--workers", &workers.to_string()])
            .args(match self.a.io {
                LiveIo::Xdp => vec!["--xdp-tier", tier],
                LiveIo::Packet => vec![],
            })
            .arg("-c")
            .arg(&conf)
            .arg("--control")
            .arg(&sock)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("lwt6 run: {e}")))?;
        ROUTER.store(child.id(), std::sync::atomic::Ordering::Relaxed);
        let r = self
            .wait_ready(&mut child, &sock)
            .and_then(|()| pin_napi(&self.topo, &before, &self.a.router_cpus, self.a.napi_nice))
            .and_then(|napi| self.measure(&c.frame, &[child.id()], &napi));
        let fin = stop(child);
        ROUTER.store(0, std::sync::atomic::Ordering::Relaxed);
        let _ = std::fs::remove_file(&conf);
        let mut v = r?;
        let fin = fin?;
        // With the XDP tier, the router's frames are the driver's and the workers' (docs/xdp.md).
        let rx = fin["xdp"]["total"]["rx"]
            .as_u64()
            .or(fin["rx"].as_u64())
            .unwrap_or(0);
        let reallocs = fin["reallocs"].as_u64().unwrap_or(0);
        v["case"] = json!(c.name);
        v["router"] = json!("lwt6");
        v["io"] = json!(io);
        v["workers"] = json!(workers);
        v["xdp_tier"] = json!(tier);
        v["xdp_forwarded"] = fin["xdp"]["sent"].clone();
        v["rx"] = json!(rx);
        v["reallocs"] = json!(reallocs);
        v["reallocs_per_packet"] = json!(if rx > 0 {
            reallocs as f64 / rx as f64
        } else {
            0.0
        });
        v["fast_path"] = fin["fast_path"].clone();
        Ok(v)
    }

    fn wait_ready(&self, child: &mut Child, sock: &Path) -> Result<(), Failure> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(fail(format!("lwt6 run exited ({st}): {}", err.trim())));
            }
            let ok = Command::new(&self.bin)
                .args(["ctl", "--control"])
                .arg(sock)
                .args(["show", "stats"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(fail(
                    "lwt6 run did not answer on its control socket within 10 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The sender into a sink: an XDP program on r0 dropping every frame (r0's receive threads pinned as for a
    /// router).
    fn sender_only(&self, c: &Case) -> Result<Value, Failure> {
        let before_threads = napi_threads("r0");
        let ns = self.topo.r.clone();
        let sink = in_netns(&ns, || {
            VerdictProgram::attach("r0", Verdict::Drop)
                .map_err(|e| fail(format!("XDP sink on r0: {e}")))
        })?;
        let rx0 = || -> Result<u64, Failure> {
            let v = sh(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "cat",
                "/sys/class/net/r0/statistics/rx_packets",
            ])?;
            v.trim().parse().map_err(|_| fail("r0 rx_packets"))
        };
        let r = (|| {
            pin_napi(
                &self.topo,
                &before_threads,
                &self.a.router_cpus,
                self.a.napi_nice,
            )?;
            let before = rx0()?;
            let hex: String = c.frame.iter().map(|b| format!("{b:02x}")).collect();
            let t = self.trial(&hex, 0, self.a.overload_ms)?;
            let got = rx0()? - before;
            Ok(
                json!({"case": c.name, "router": "sink", "sender_max": t.rate, "sent": t.sent, "sink_rx": got}),
            )
        })();
        drop(sink);
        r
    }
}

/// Runs `f` on a thread that has entered network namespace `ns` (`/run/netns/NS`).
fn in_netns<T: Send>(
    ns: &str,
    f: impl FnOnce() -> Result<T, Failure> + Send,
) -> Result<T, Failure> {
    let path = format!("/run/netns/{ns}");
    let file = std::fs::File::open(&path).map_err(|e| fail(format!("{path}: {e}")))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::io::sys::enter_netns(&file).map_err(|e| fail(format!("setns {path}: {e}")))?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(fail("namespace thread panicked")))
    })
}

/// Stops `lwt6 run` (SIGTERM) and returns its final counters.
fn stop(child: Child) -> Result<Value, Failure> {
    // `ip netns exec`, `nice` and `taskset` exec into lwt6: the child's pid is lwt6's.
    let _ = crate::io::sys::kill(child.id(), libc::SIGTERM);
    let o = child
        .wait_with_output()
        .map_err(|e| fail(format!("lwt6 run: {e}")))?;
    if !o.status.success() {
        return Err(fail(format!(
            "lwt6 run exited with {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    serde_json::from_slice(&o.stdout).map_err(|e| fail(format!("lwt6 run -j: {e}")))
}

/// A CPU list (`0,2-3`) as CPU numbers.
fn cpu_list(list: &str) -> Result<Vec<u32>, Failure> {
    let mut out = BTreeSet::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (
            a.trim()
                .parse()
                .map_err(|_| fail(format!("'{part}': not a CPU list")))?,
            b.trim()
                .parse()
                .map_err(|_| fail(format!("'{part}': not a CPU list")))?,
        );
        if a > b || b >= 128 {
            return Err(fail(format!("'{part}': not a CPU list (0 to 127)")));
        }
        out.extend(a..=b);
    }
    Ok(out.into_iter().collect())
}

/// A CPU list (`0,2-3`) as an `rps_cpus` hex mask.
fn cpu_mask(list: &str) -> Result<String, Failure> {
    let m = cpu_list(list)?.iter().fold(0u128, |m, c| m | 1 << c);
    Ok(format!("{m:x}"))
}

/// Time (ns) the CPUs `cpus` have been busy since boot, from `/proc/stat`: user, nice, system, irq and softirq
/// time (not idle, I/O wait or steal), in USER_HZ ticks (100 per second: the fixed unit of `/proc/stat`).
fn busy_ns(cpus: &[u32]) -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let mut ticks = 0u64;
    for line in stat.lines() {
        let mut f = line.split_whitespace();
        let Some(cpu) = f
            .next()
            .and_then(|n| n.strip_prefix("cpu"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !cpus.contains(&cpu) {
            continue;
        }
        let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
        // user nice system idle iowait irq softirq steal ...
        for i in [0, 1, 2, 5, 6] {
            ticks += v.get(i).copied().unwrap_or(0);
        }
    }
    ticks * 10_000_000
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// `lwt6 bench live`.
pub fn run(a: LiveBenchArgs) -> Result<(), Failure> {
    if !crate::io::sys::is_root() {
        return Err(fail(
            "lwt6 bench live must run as root (network namespaces, XDP)",
        ));
    }
    let all = cases();
    for c in &a.cases {
        if !all.iter().any(|k| k.name == c) {
            return Err(fail(format!(
                "--cases: '{c}': unknown case (expected: plain, seg6, ioam-inline, ioam-transit, dx6)"
            )));
        }
    }
    if a.workers.iter().any(|&w| w == 0 || w > a.queues as usize) {
        return Err(fail(format!(
            "--workers: 1 to --queues ({}) each",
            a.queues
        )));
    }
    let bin = match &a.lwt6 {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| fail(format!("this binary: {e}")))?,
    };
    let mask = cpu_mask(&a.receiver_cpus)?;
    let router_cpus = cpu_list(&a.router_cpus)?;
    if cpu_list(&a.receiver_cpus)?
        .iter()
        .any(|c| router_cpus.contains(c))
    {
        return Err(fail(
            "--receiver-cpus and --router-cpus overlap: the receiver's work would be counted as the router's",
        ));
    }
    // SIGINT / SIGTERM end the process without running destructors: a thread removes the namespaces first. (The
    // signals are blocked in this thread before any other starts; children get an empty mask from `Command`.)
    let signals = crate::io::sys::SignalFd::new(&[libc::SIGINT, libc::SIGTERM])
        .map_err(|e| fail(format!("signalfd: {e}")))?;
    let prefix = format!("l6bl-{}-", std::process::id());
    std::thread::spawn(move || {
        loop {
            let _ = crate::io::sys::poll_readable(&[signals.raw_fd()], -1);
            if signals.next().is_some() {
                let pid = ROUTER.load(std::sync::atomic::Ordering::Relaxed);
                if pid != 0 {
                    let _ = crate::io::sys::kill(pid, libc::SIGTERM);
                    for _ in 0..100 {
                        if !Path::new(&format!("/proc/{pid}")).exists() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                for n in ["s", "r", "d"] {
                    let _ = sh(&["ip", "netns", "del", &format!("{prefix}{n}")]);
                }
                let tag = format!("lwt6-bench-live-{}", std::process::id());
                for ext in ["conf", "sock"] {
                    let _ = std::fs::remove_file(std::env::temp_dir().join(format!("{tag}.{ext}")));
                }
                eprintln!("lwt6 bench live: interrupted; its namespaces are removed");
                std::process::exit(130);
            }
        }
    });
    let topo = Topo::new(a.queues, &mask)?;
    let receiver = match a.receiver {
        Receiver::Xdp => Some(receiver_sink(&topo, &a.receiver_cpus)?),
        Receiver::Stack => None,
    };
    let b = Bench {
        a: &a,
        bin,
        receiver,
        router_cpus,
        topo,
    };
    let mut results = Vec::new();
    let started = load();
    let say = |v: &Value| {
        if !a.json {
            eprintln!("lwt6 bench live: {v}");
        }
    };
    // Rounds interleave the routers (kernel, lwt6 ..., kernel, lwt6 ...), so that a slow spell of the machine
    // falls on all of them and the medians compare like with like.
    for round in 1..=a.rounds {
        for c in all.iter().filter(|c| a.cases.iter().any(|n| n == c.name)) {
            let mut vs = Vec::new();
            if a.sender_only && round == 1 {
                vs.push(b.sender_only(c)?);
            }
            vs.push(b.kernel(c)?);
            for &w in &a.workers {
                for t in tiers(&a) {
                    vs.push(b.lwt6(c, w, t)?);
                }
            }
            for mut v in vs {
                v["round"] = json!(round);
                say(&v);
                results.push(v);
            }
        }
    }
    let receiver_threads = b.receiver.as_ref().map_or(0, |r| r.1.len());
    drop(b);
    let doc = json!({
        "machine": {"load_before": started, "load_after": load(), "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "settings": {"io": value_name(&a.io), "xdp_tier": tiers(&a), "sender": value_name(&a.sender),
                     "receiver": value_name(&a.receiver), "receiver_threads": receiver_threads,
                     "sender_cpus": a.sender_cpus, "router_cpus": a.router_cpus, "receiver_cpus": a.receiver_cpus,
                     "queues": a.queues, "rounds": a.rounds, "overload_ms": a.overload_ms,
                     "trial_ms": a.trial_ms, "steps": a.steps, "tries": a.tries, "loss": a.loss, "flows": a.flows, "nice": a.nice, "napi_nice": a.napi_nice},
        "results": results,
    });
    if let Some(p) = &a.out {
        crate::io::output::write_file(
            p,
            serde_json::to_string_pretty(&doc)
                .unwrap_or_default()
                .as_bytes(),
        )
        .map_err(|e| fail(e.to_string()))?;
    }
    let text = if a.json {
        format!("{doc}\n")
    } else {
        table(&doc, &a, &all)
    };
    super::stdio::write_stdout(text.as_bytes(), "the results")
}

/// The tier settings measured: `--xdp-tier`'s with AF_XDP, `off` (none) with AF_PACKET.
fn tiers(a: &LiveBenchArgs) -> Vec<&str> {
    match a.io {
        LiveIo::Xdp => a.xdp_tier.iter().map(String::as_str).collect(),
        LiveIo::Packet => vec!["off"],
    }
}

/// The median of `xs` (the mean of the middle two for an even count); `None` when empty.
fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// One router's figures on one case, medians over the rounds.
#[derive(Default)]
struct Summary {
    unavailable: Option<String>,
    delivered: Option<f64>,
    cpu_us: Option<f64>,
    threads_us: Option<f64>,
    zero_loss: Option<f64>,
    sender_limited: bool,
    reallocs: Option<f64>,
}

fn summary(rows: &[&Value]) -> Summary {
    if let Some(why) = rows.iter().find_map(|v| v["unavailable"].as_str()) {
        return Summary {
            unavailable: Some(why.to_string()),
            ..Summary::default()
        };
    }
    let f = |g: &dyn Fn(&Value) -> Option<f64>| median(rows.iter().filter_map(|v| g(v)).collect());
    Summary {
        unavailable: None,
        delivered: f(&|v| v["delivered_at_max"].as_f64()),
        cpu_us: f(&|v| {
            v["cpu_at_max"]["router_cpu_ns_per_packet"]
                .as_f64()
                .map(|n| n / 1e3)
        }),
        threads_us: f(&|v| {
            let c = &v["cpu_at_max"];
            Some((c["napi_ns_per_packet"].as_f64()? + c["process_ns_per_packet"].as_f64()?) / 1e3)
        }),
        zero_loss: f(&|v| v["zero_loss"].as_f64()),
        sender_limited: rows
            .iter()
            .any(|v| v["sender_limited"].as_bool() == Some(true)),
        reallocs: f(&|v| v["reallocs_per_packet"].as_f64()),
    }
}

/// The results as a Markdown table: one row per case; for the kernel and each worker count the medians over the
/// rounds of the rate delivered at overload, the router CPU's time per delivered packet (`/proc/stat`; in
/// brackets the router's threads', `schedstat`), and the zero-loss rate; then lwt6 against the kernel.
fn table(doc: &Value, a: &LiveBenchArgs, all: &[Case]) -> String {
    let rows = doc["results"].as_array().cloned().unwrap_or_default();
    let cell = |s: &Summary| -> String {
        if let Some(why) = &s.unavailable {
            return format!("n/a ({why})");
        }
        let mut out = match (s.delivered, s.cpu_us) {
            (Some(d), Some(c)) => format!("{:.0} kpps, {c:.2} µs", d / 1e3),
            _ => String::from("?"),
        };
        if let Some(t) = s.threads_us {
            out += &format!(" ({t:.2})");
        }
        if let Some(z) = s.zero_loss {
            let bound = if s.sender_limited { "≥ " } else { "" };
            out += &format!("; zero-loss {bound}{:.0} kpps", z / 1e3);
        }
        if let Some(r) = s.reallocs {
            out += &format!("; {r} reallocs/pkt");
        }
        out
    };
    let mut head = String::from("| case |");
    let mut sep = String::from("|---|");
    if a.sender_only {
        head += " sender alone (XDP sink) |";
        sep += "---|";
    }
    head += " kernel |";
    sep += "---|";
    for w in &a.workers {
        for t in tiers(a) {
            head += &format!(
                " lwt6 {w} worker{}{} |",
                if *w == 1 { "" } else { "s" },
                match (a.io, t) {
                    (LiveIo::Xdp, "on") => ", XDP tier",
                    (LiveIo::Xdp, _) => ", tier off",
                    _ => "",
                }
            );
            sep += "---|";
        }
    }
    let mut out = format!(
        "load {} → {}; sender {} on CPUs {}, router on CPUs {}, receiver {} on CPUs {}; medians of {} round{}\n\
         each cell: delivered at overload, router-CPU time per delivered packet (router threads'); zero-loss rate\n\n\
         {head} lwt6 / kernel: delivered, CPU per packet |\n{sep}---|\n",
        doc["machine"]["load_before"].as_str().unwrap_or(""),
        doc["machine"]["load_after"].as_str().unwrap_or(""),
        value_name(&a.sender),
        a.sender_cpus,
        a.router_cpus,
        value_name(&a.receiver),
        a.receiver_cpus,
        a.rounds,
        if a.rounds == 1 { "" } else { "s" }
    );
    for c in all.iter().filter(|c| a.cases.iter().any(|n| n == c.name)) {
        let of = |router: &str, w: Option<(usize, &str)>| -> Vec<&Value> {
            rows.iter()
                .filter(|v| {
                    v["case"] == c.name
                        && v["router"] == router
                        && w.is_none_or(|(w, t)| v["workers"] == json!(w) && v["xdp_tier"] == t)
                })
                .collect()
        };
        let mut line = format!("| {} |", c.title);
        if a.sender_only {
            let m = median(
                of("sink", None)
                    .iter()
                    .filter_map(|v| v["sender_max"].as_f64())
                    .collect(),
            );
            line += &format!(" {:.0} kpps |", m.unwrap_or(0.0) / 1e3);
        }
        let k = summary(&of("kernel", None));
        line += &format!(" {} |", cell(&k));
        let mut ratios = Vec::new();
        for &w in &a.workers {
            for t in tiers(a) {
                let l = summary(&of("lwt6", Some((w, t))));
                line += &format!(" {} |", cell(&l));
                if let (Some(kd), Some(ld), Some(kc), Some(lc)) =
                    (k.delivered, l.delivered, k.cpu_us, l.cpu_us)
                    && kd > 0.0
                    && kc > 0.0
                {
                    let tier = if a.io == LiveIo::Xdp && t == "on" {
                        ", tier"
                    } else {
                        ""
                    };
                    ratios.push(format!("{:.2}x, {:.2}x ({w}w{tier})", ld / kd, lc / kc));
                }
            }
        }
        line += &format!(" {} |\n", ratios.join("; "));
        out += &line;
    }
    out
}

/// A command-line value as the user types it (`xdp`, `packet`, `stack`).
fn value_name<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn cpu_lists_and_masks() {
        assert_eq!(cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert_eq!(cpu_list("3,1-2,2").unwrap(), vec![1, 2, 3]);
        assert_eq!(cpu_mask("0,2-3").unwrap(), "d");
        assert!(cpu_list("2-1").is_err());
        assert!(cpu_list("x").is_err());
        assert!(cpu_list("128").is_err());
    }
}
