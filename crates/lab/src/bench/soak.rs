//! `lwt6 bench soak`: a long run of the real pipeline while routes change under it (issue 15).
//!
//! One worker thread forwards batches of frames of every kind the router handles (all seg6 modes, HMAC, RPL,
//! both ioam6 modes, IPv4 into seg6, local SRH and RPL processing, seg6local End / End.DX6 / End.B6.Encaps, IOAM
//! transit, plain forwarding) and of
//! kinds it must drop (truncated, wrong version, hop limit 1, no route, foreign MAC, malformed SRH), on the
//! router of `soak.conf`. Meanwhile a second thread applies route changes through a [`SnapshotWriter`] at a
//! target rate: a window of generated /48s (every tenth seg6 encap) added and removed one by one, and a /65
//! inside a prefix the traffic uses toggled every hundred changes. The main thread offers the batches to the
//! worker through a bounded queue (the input ring of a NIC): without an offered rate it waits for room
//! (nothing is lost); with one, a batch that finds the queue full is counted as `overload` and not processed.
//!
//! Checked at the end, exactly: offered = received + overload, received = sent + dropped (the worker's own
//! counters), every batch accounted for, no thread panicked. Resident memory is sampled as the run goes.

use lwt6_config as config;
use lwt6_dataplane::snapshot::{Change, Snapshot, SnapshotHandle, SnapshotWriter};
use lwt6_dataplane::spec::{Encap, MAIN_TABLE, Route, Seg6Encap, Seg6Mode};
use lwt6_dataplane::stats::Stats;
use lwt6_dataplane::worker::Worker;
use lwt6_wire::{ioam, ipv6::Ipv6Repr, proto, rpl, srh::SrhRepr};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The soak router's configuration (iproute2 syntax).
pub const ROUTER_CONF: &str = include_str!("soak.conf");

/// Frames per batch (the worker loads the snapshot once per batch).
pub const BATCH: usize = 256;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoakOptions {
    /// Packets to offer (rounded up to whole batches).
    pub packets: u64,
    /// Target route changes per second (0: none).
    pub change_rate: u64,
    /// Changes per published batch.
    pub change_batch: usize,
    /// Offered packets per second (`None`: as fast as the worker takes them, nothing lost).
    pub offered_rate: Option<u64>,
    /// Input queue capacity in batches.
    pub queue: usize,
    /// Resident-memory samples over the run.
    pub rss_samples: usize,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            packets: 10_000_000,
            change_rate: 10_000,
            change_batch: 10,
            offered_rate: None,
            queue: 64,
            rss_samples: 20,
        }
    }
}

/// What a soak measured.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// The options.
    pub opts: SoakOptions,
    /// Wall time of the run.
    pub secs: f64,
    /// Packets offered to the input queue.
    pub offered: u64,
    /// Packets refused because the queue was full (counted, not processed).
    pub overload: u64,
    /// The worker's counters.
    pub stats: Stats,
    /// Route changes applied (and published).
    pub changes: u64,
    /// Publications (batches of changes).
    pub publications: u64,
    /// Distinct frames cycled through.
    pub kinds: usize,
    /// `(packets offered so far, resident bytes)` samples.
    pub rss: Vec<(u64, usize)>,
}

impl SoakReport {
    /// Whether every packet is accounted for: offered = received + overload and received = sent + dropped.
    pub fn balanced(&self) -> bool {
        self.offered == self.stats.rx + self.overload && self.stats.balanced()
    }

    /// Route changes per second achieved.
    pub fn changes_per_sec(&self) -> f64 {
        self.changes as f64 / self.secs
    }

    /// Resident memory growth from the first sample after the first tenth of the run to the last (bytes; negative
    /// if it shrank).
    pub fn rss_growth(&self) -> i64 {
        let warm = self.offered / 10;
        let after: Vec<usize> = self
            .rss
            .iter()
            .filter(|(p, _)| *p >= warm)
            .map(|s| s.1)
            .collect();
        match (after.first(), after.last()) {
            (Some(&a), Some(&b)) => b as i64 - a as i64,
            _ => 0,
        }
    }

    /// Plain-text report.
    pub fn text(&self) -> String {
        let s = &self.stats;
        let mut t = format!(
            "soak: {} packets offered in {:.1} s ({:.2} Mpps), {} kinds of frame, batches of {BATCH}\n\
             received {}, sent {}, dropped {}, icmp errors {}, overload {} -> {}\n\
             route changes: {} ({:.0}/s, target {}/s) in {} publications\n",
            self.offered,
            self.secs,
            self.offered as f64 / self.secs / 1e6,
            self.kinds,
            s.rx,
            s.tx,
            s.dropped(),
            s.icmp_tx,
            self.overload,
            if self.balanced() {
                "balanced"
            } else {
                "NOT BALANCED"
            },
            self.changes,
            self.changes_per_sec(),
            self.opts.change_rate,
            self.publications,
        );
        for (k, v) in &s.encapsulated {
            t += &format!("  encapsulated {k}: {v}\n");
        }
        for (r, n) in &s.drops {
            t += &format!("  drop {:<28} {n}\n", r.name());
        }
        let rss: Vec<String> = self
            .rss
            .iter()
            .map(|(p, b)| format!("{:.0}M:{:.1}", *p as f64 / 1e6, *b as f64 / 1048576.0))
            .collect();
        t += &format!(
            "resident MiB at packets offered: {}\nresident growth after the first tenth: {:+.2} MiB\n",
            rss.join(" "),
            self.rss_growth() as f64 / 1048576.0
        );
        t
    }

    /// JSON report.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "packets_offered": self.offered,
            "secs": self.secs,
            "overload": self.overload,
            "balanced": self.balanced(),
            "stats": self.stats.to_json(),
            "changes": self.changes,
            "changes_per_sec": self.changes_per_sec(),
            "change_rate_target": self.opts.change_rate,
            "publications": self.publications,
            "kinds": self.kinds,
            "rss": self.rss.iter().map(|(p, b)| serde_json::json!([p, b])).collect::<Vec<_>>(),
            "rss_growth_bytes": self.rss_growth(),
        })
    }
}

fn a6(s: &str) -> Ipv6Addr {
    s.parse().expect("address literal")
}

/// An Ethernet frame to the router's r0 (02:00:00:00:01:02) from fd00:1::1 carrying `ext` (extension headers
/// already chained to UDP) and a small UDP datagram; `nh` is the first next header.
fn frame(dst: Ipv6Addr, hop_limit: u8, nh: u8, ext: &[u8], flow: u32) -> Vec<u8> {
    let udp_len = 8 + 16;
    let mut f = vec![0u8; 14 + 40 + ext.len() + udp_len];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 1, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 1, 1]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    Ipv6Repr {
        traffic_class: 0,
        flow_label: flow,
        payload_len: (ext.len() + udp_len) as u16,
        next_header: nh,
        hop_limit,
        src: a6("fd00:1::1"),
        dst,
    }
    .emit(&mut f[14..]);
    f[54..54 + ext.len()].copy_from_slice(ext);
    let udp = &mut f[54 + ext.len()..];
    udp[0..2].copy_from_slice(&(1000 + flow as u16).to_be_bytes());
    udp[2..4].copy_from_slice(&9u16.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    f
}

/// The frames of the soak: every kind the router forwards, and kinds it must drop, 8 flows each.
pub fn frames() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let us = a6("fd00:1::2");
    // SRHs with Segments Left 1 whose next segment is fd00:90::5: addressed to us (the endpoint moves on), and to
    // the seg6local SIDs (End, End.B6.Encaps). End.DX6 takes an inner IPv6 packet (no SRH: next header 41).
    let sid_srh = |sid: &str| {
        let mut h = vec![0u8; 8 + 32];
        SrhRepr {
            next_header: proto::UDP,
            segments_left: 1,
            last_entry: 1,
            flags: 0,
            tag: 0,
            segments: vec![a6("fd00:90::5"), a6(sid)],
            tlvs: Vec::new(),
        }
        .emit(&mut h);
        h
    };
    let srh = sid_srh("fd00:1::2");
    // The same with Segments Left above Last Entry: dropped.
    let mut bad_srh = srh.clone();
    bad_srh[3] = 5;
    // A compressed RPL header addressed to us: the next hop is fd00:90::7.
    let mut rplh = vec![0u8; rpl::compressed_len(&[a6("fd00:90::7")], &us)];
    rpl::emit_compressed(&mut rplh, proto::UDP, 1, &[a6("fd00:90::7")], &us);
    // A Hop-by-Hop IOAM trace with room for two nodes, filled in transit on r0.
    let hdr = ioam::TraceHeader {
        namespace: 123,
        node_len: 0,
        flags: 0,
        remaining_len: 6,
        trace_type: 0xc4_0000,
    };
    let mut hbh = vec![0u8; ioam::lwt_hbh_len(hdr.remaining_len)];
    ioam::emit_lwt_hbh(&mut hbh, proto::UDP, &hdr);
    let (end_srh, b6_srh) = (sid_srh("fc00:1::e"), sid_srh("fc00:1::b6"));
    for flow in 0..8u32 {
        for (i, dst) in [
            "fd00:91::1",
            "fd00:92::1",
            "fd00:93::1",
            "fd00:94::1",
            "fd00:95::1",
            "fd00:9a::1",
            "fd00:96::1",
            "fd00:97::1",
            "fd00:98::1",
            "fd00:99::1",
            "fd00:90::1",
            "fd00:90::8000:0:0:1",
            "fd00:2::2",
        ]
        .iter()
        .enumerate()
        {
            out.push(frame(a6(dst), 64, proto::UDP, &[], flow * 16 + i as u32));
        }
        out.push(frame(us, 64, proto::ROUTING, &srh, flow));
        out.push(frame(us, 64, proto::ROUTING, &rplh, flow));
        out.push(frame(a6("fd00:90::1"), 64, proto::HOPOPTS, &hbh, flow));
        out.push(frame(a6("fc00:1::e"), 64, proto::ROUTING, &end_srh, flow));
        out.push(frame(a6("fc00:1::b6"), 64, proto::ROUTING, &b6_srh, flow));
        // End.DX6: the inner packet (an IPv6 header and UDP) is the outer packet's payload.
        let inner = frame(a6("fd00:2::9"), 64, proto::UDP, &[], flow);
        let dx6 = frame(a6("fc00:1::d6"), 64, proto::IPV6, &inner[14..54], flow);
        out.push(dx6);
        // IPv4 into seg6 (10.99.0.0/24): Ethernet, a 20-byte header with its checksum, 8 bytes of UDP.
        let mut v4 = vec![0u8; 14 + 28];
        v4[0..6].copy_from_slice(&[2, 0, 0, 0, 1, 2]);
        v4[6..12].copy_from_slice(&[2, 0, 0, 0, 1, 1]);
        v4[12..14].copy_from_slice(&[0x08, 0x00]);
        lwt6_wire::ipv4::Ipv4Repr {
            tos: 0,
            total_len: 28,
            ident: flow as u16,
            flags_frag: 0,
            ttl: 64,
            protocol: proto::UDP,
            src: [10, 1, 0, 1].into(),
            dst: [10, 99, 0, 1].into(),
        }
        .emit(&mut v4[14..]);
        out.push(v4);
        // Dropped (each for its own named reason) or answered with an ICMP error.
        out.push(frame(us, 64, proto::ROUTING, &bad_srh, flow));
        out.push(frame(a6("2001:db8::1"), 64, proto::UDP, &[], flow));
        out.push(frame(a6("fd00:90::1"), 1, proto::UDP, &[], flow));
        let mut foreign = frame(a6("fd00:90::1"), 64, proto::UDP, &[], flow);
        foreign[0..6].copy_from_slice(&[2, 0, 0, 0, 9, 9]);
        out.push(foreign);
        let mut v5 = frame(a6("fd00:90::1"), 64, proto::UDP, &[], flow);
        v5[14] = 0x50;
        out.push(v5);
        let mut cut = frame(a6("fd00:92::1"), 64, proto::UDP, &[], flow);
        cut.truncate(14 + 30);
        out.push(cut);
    }
    out
}

/// The route changes, in order: a window of `WINDOW` generated /48s via r1 (every tenth seg6 encap) added, then
/// one removed and one added alternately; every hundredth change adds or removes fd00:90::8000:0:0:0/65 (more
/// specific than a route the traffic uses) via r2. An endless iterator; every change applies to the soak
/// router's configuration after the ones before it.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    n: u64,
    added: u64,
    removed: u64,
    toggle_on: bool,
}

impl Iterator for Changes {
    type Item = Change;

    fn next(&mut self) -> Option<Change> {
        Some(self.change())
    }
}

/// Generated /48s present at once.
pub const WINDOW: u64 = 1000;

impl Changes {
    fn route(k: u64) -> Route {
        let p = Ipv6Addr::new(
            0x2001,
            0x0db8 + ((k >> 16) & 0xff) as u16,
            (k & 0xffff) as u16,
            0,
            0,
            0,
            0,
            0,
        );
        let seg6 = k.is_multiple_of(10);
        Route {
            reject: None,
            prefix: ipnet::Ipv6Net::new(p, 48).expect("prefix").into(),
            via: (!seg6).then(|| IpAddr::V6(a6("fd00:2::2"))),
            dev: Some("r1".into()),
            metric: 1024,
            table: MAIN_TABLE,
            mtu: None,
            encap: seg6
                .then(|| {
                    Encap::Seg6(Seg6Encap {
                        mode: Seg6Mode::Encap,
                        segs: vec![
                            a6("fc00::a"),
                            Ipv6Addr::from(0xfc00_u128 << 112 | u128::from(k)),
                        ],
                        hmac: None,
                        tunsrc: None,
                    })
                })
                .map(Box::new),
            line: 0,
        }
    }

    fn change(&mut self) -> Change {
        self.n += 1;
        if self.n.is_multiple_of(100) {
            self.toggle_on = !self.toggle_on;
            let prefix = "fd00:90::8000:0:0:0/65".parse().expect("prefix");
            return if self.toggle_on {
                Change::AddRoute(Route {
                    reject: None,
                    prefix,
                    via: Some(IpAddr::V6(a6("fd00:3::2"))),
                    dev: Some("r2".into()),
                    metric: 1024,
                    table: MAIN_TABLE,
                    mtu: None,
                    encap: None,
                    line: 0,
                })
            } else {
                Change::DelRoute {
                    prefix,
                    metric: 1024,
                    table: MAIN_TABLE,
                    line: 0,
                }
            };
        }
        if self.added < WINDOW || self.added == self.removed + WINDOW - 1 {
            self.added += 1;
            Change::AddRoute(Self::route(self.added - 1))
        } else {
            self.removed += 1;
            let r = Self::route(self.removed - 1);
            Change::DelRoute {
                prefix: r.prefix,
                metric: r.metric,
                table: r.table,
                line: 0,
            }
        }
    }
}

fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Runs the soak.
pub fn run(opts: SoakOptions) -> Result<SoakReport, String> {
    if opts.queue == 0 || opts.change_batch == 0 {
        return Err("queue and change batch must be at least 1".into());
    }
    let cfg = config::parse(ROUTER_CONF).map_err(|e| format!("soak.conf: {e}"))?;
    let snap = Snapshot::build(&cfg).map_err(|e| format!("soak.conf: {e}"))?;
    let handle = Arc::new(SnapshotHandle::new(snap));
    let frames = Arc::new(frames());
    let kinds = frames.len();
    let stop = Arc::new(AtomicBool::new(false));

    // The worker: batches of frame indices from the queue.
    let (tx, rx) = mpsc::sync_channel::<u64>(opts.queue);
    let worker = {
        let (handle, frames) = (Arc::clone(&handle), Arc::clone(&frames));
        std::thread::spawn(move || {
            let mut w = Worker::new(&handle.load());
            let n = frames.len() as u64;
            for b in rx {
                let snap = handle.load();
                let start = b * BATCH as u64;
                w.process_batch(
                    &snap,
                    (0..BATCH as u64).map(|i| {
                        let f = &frames[((start + i) % n) as usize];
                        (0usize, start + i, f.as_slice())
                    }),
                    &mut |_, _, _| {},
                );
            }
            w.stats
        })
    };

    // The route changes, at the target rate.
    let changer = {
        let (handle, stop) = (Arc::clone(&handle), Arc::clone(&stop));
        let (rate, batch) = (opts.change_rate, opts.change_batch);
        std::thread::spawn(move || -> Result<(u64, u64), String> {
            if rate == 0 {
                return Ok((0, 0));
            }
            let mut writer = SnapshotWriter::new(handle);
            let mut seq = Changes::default();
            let t0 = Instant::now();
            let (mut applied, mut publications) = (0u64, 0u64);
            let mut buf = Vec::with_capacity(batch);
            while !stop.load(Ordering::Relaxed) {
                // Batch k is due at k * batch / rate seconds.
                let due = Duration::from_secs_f64(applied as f64 / rate as f64);
                if let Some(wait) = due.checked_sub(t0.elapsed()) {
                    std::thread::sleep(wait.min(Duration::from_millis(10)));
                    continue;
                }
                buf.clear();
                buf.extend(seq.by_ref().take(batch));
                writer
                    .apply(&buf)
                    .map_err(|(i, e)| format!("route change {}: {e}", applied + i as u64))?;
                applied += batch as u64;
                publications += 1;
            }
            Ok((applied, publications))
        })
    };

    // The input: offer batches, waiting for room or counting the overload.
    let batches = opts.packets.div_ceil(BATCH as u64).max(1);
    let every = (batches / opts.rss_samples.max(1) as u64).max(1);
    let mut rss = vec![(0, rss_bytes())];
    let mut overload = 0u64;
    let t0 = Instant::now();
    for b in 0..batches {
        if let Some(rate) = opts.offered_rate {
            let due = Duration::from_secs_f64((b * BATCH as u64) as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(t0.elapsed()) {
                std::thread::sleep(wait);
            }
            match tx.try_send(b) {
                Ok(()) => {}
                Err(mpsc::TrySendError::Full(_)) => overload += BATCH as u64,
                Err(mpsc::TrySendError::Disconnected(_)) => break,
            }
        } else if tx.send(b).is_err() {
            break;
        }
        if (b + 1) % every == 0 {
            rss.push(((b + 1) * BATCH as u64, rss_bytes()));
        }
    }
    drop(tx);
    let stats = worker
        .join()
        .map_err(|_| "the worker thread panicked".to_string())?;
    let secs = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (changes, publications) = changer
        .join()
        .map_err(|_| "the route-change thread panicked".to_string())??;
    Ok(SoakReport {
        opts,
        secs,
        offered: batches * BATCH as u64,
        overload,
        stats,
        changes,
        publications,
        kinds,
        rss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lwt6_dataplane::stats::DropReason;

    #[test]
    fn short_soak_balances_and_reaches_every_kind() {
        let r = run(SoakOptions {
            packets: 200_000,
            change_rate: 10_000,
            ..SoakOptions::default()
        })
        .unwrap();
        assert!(r.balanced(), "{}", r.text());
        assert_eq!(r.overload, 0, "without an offered rate nothing is refused");
        assert_eq!(r.stats.rx, r.offered);
        assert!(r.changes > 0, "{}", r.text());
        let s = &r.stats;
        for kind in ["seg6", "rpl", "ioam6"] {
            assert!(
                s.encapsulated.iter().any(|(k, v)| k == kind && v > 0),
                "{kind}: {}",
                r.text()
            );
        }
        assert!(s.ioam_transit_filled > 0 && s.icmp_tx > 0, "{}", r.text());
        // The three seg6local SIDs each processed packets, and dropped none.
        let local: Vec<_> = s.seg6local.iter().filter(|c| c.packets > 0).collect();
        assert_eq!(local.len(), 3, "{:?}", s.seg6local);
        assert!(local.iter().all(|c| c.errors == 0), "{:?}", s.seg6local);
        for reason in [DropReason::NoRoute, DropReason::NotForUs] {
            assert!(
                s.drops.get(&reason).copied().unwrap_or(0) > 0,
                "{reason:?}: {}",
                r.text()
            );
        }
        // A third of the frames are for drops; the rest are sent.
        assert!(s.tx > s.dropped(), "{}", r.text());
    }

    #[test]
    fn overload_is_counted_and_nothing_else_lost() {
        // Offered far faster than one worker forwards, through a queue of 2 batches.
        let r = run(SoakOptions {
            packets: 400_000,
            change_rate: 0,
            offered_rate: Some(2_000_000_000),
            queue: 2,
            ..SoakOptions::default()
        })
        .unwrap();
        assert!(r.overload > 0, "{}", r.text());
        assert!(r.balanced(), "{}", r.text());
        assert_eq!(r.offered, r.stats.rx + r.overload);
    }

    #[test]
    fn changes_keep_a_bounded_window() {
        let mut c = Changes::default();
        let cfg = config::parse(ROUTER_CONF).unwrap();
        let mut snap = Snapshot::build(&cfg).unwrap();
        let base = snap.fib().routes_v6().count();
        for _ in 0..5000 {
            snap.apply(&c.change()).unwrap();
        }
        let n = snap.fib().routes_v6().count() - base;
        assert!(
            (WINDOW as usize - 1..=WINDOW as usize + 1).contains(&n),
            "{n}"
        );
    }
}
