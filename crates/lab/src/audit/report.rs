//! Results of an audit: per-configuration numbers, the verdict logic, and the text table.

use super::bpftrace::Counters;
use serde::Serialize;
use std::fmt::Write as _;

/// How far the measured reallocations per packet may be from the prediction and still agree. The first packet
/// of a route on each CPU meets a cold route cache (one extra reallocation in some cases), so a burst of N
/// packets can legitimately exceed the steady state by about CPUs/N.
pub const TOLERANCE: f64 = 0.05;

/// Fewest frames (as a share of those sent) that must have been processed in the sender's context for the
/// per-packet figure to mean anything.
pub const MIN_SEEN_SHARE: f64 = 0.5;

/// The verdict for one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Measured equals predicted (within [`TOLERANCE`]) and the overhead matches.
    Agree,
    /// They differ.
    Disagree,
    /// The measurement is unusable (too few packets seen, packets lost, nothing captured).
    Inconclusive,
}

impl Verdict {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Disagree => "disagree",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// What the analyzer predicts for one configuration (the parts the audit compares and reports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Predicted {
    /// Bytes the tunnel adds (the carried Ethernet header of the L2 modes not counted).
    pub overhead_bytes: usize,
    /// Linux before the 2024 fix.
    pub pre_fix: u32,
    /// Linux after the fix, warm route cache: the steady state compared against.
    pub post_fix_warm: u32,
    /// Linux after the fix, first packet of a route.
    pub post_fix_first_packet: u32,
}

/// One measured configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigResult {
    /// How the router's ingress received the frames.
    pub ingress: super::Ingress,
    /// seg6 mode.
    pub mode: String,
    /// Segments in the route.
    pub segments: usize,
    /// The `ip route` arguments used.
    pub route: String,
    /// Frames the sender sent.
    pub sent: u64,
    /// Raw counters of the burst.
    pub counters: Counters,
    /// Bytes the kernel added, from the lengths seen at the router's ingress and egress (for the L2 modes
    /// without the carried Ethernet header, as the analyzer counts).
    pub overhead_measured: Option<u64>,
    /// H0 fed to the analyzer: headroom at the network header at the router's ingress.
    pub rx_headroom: Option<u64>,
    /// `LL_RESERVED_SPACE` of the egress device fed to the analyzer.
    pub ll_reserved: usize,
    /// `pskb_expand_head` calls per packet in this burst.
    pub reallocs_per_packet: f64,
    /// The same minus the baseline's (the sender's own reallocations).
    pub net_per_packet: f64,
    /// The analyzer's prediction (absent when it failed).
    pub predicted: Option<Predicted>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, when not a plain agreement.
    pub note: Option<String>,
}

/// The measured inputs of one verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Frames sent.
    pub sent: u64,
    /// Frames the router received in the sender's context (the denominator).
    pub router_in: u64,
    /// Frames the receiver got in the sender's context.
    pub receiver_in: u64,
    /// Net reallocations per packet (baseline subtracted).
    pub net_per_packet: f64,
    /// Overhead seen on the wire, if measured.
    pub overhead: Option<u64>,
}

/// Decides agree / disagree / inconclusive, with a reason for anything but a clean agreement.
pub fn verdict(obs: &Observation, predicted: Option<&Predicted>) -> (Verdict, Option<String>) {
    if obs.router_in == 0 {
        return (
            Verdict::Inconclusive,
            Some("no frame reached the router in the sender's context".into()),
        );
    }
    if (obs.router_in as f64) < MIN_SEEN_SHARE * obs.sent as f64 {
        return (
            Verdict::Inconclusive,
            Some(format!(
                "only {} of {} frames were processed in the sender's context",
                obs.router_in, obs.sent
            )),
        );
    }
    if obs.receiver_in < obs.router_in {
        return (
            Verdict::Inconclusive,
            Some(format!(
                "{} of {} frames did not reach the receiver",
                obs.router_in - obs.receiver_in,
                obs.router_in
            )),
        );
    }
    let Some(p) = predicted else {
        return (Verdict::Inconclusive, Some("no prediction".into()));
    };
    let mut notes = Vec::new();
    let diff = obs.net_per_packet - f64::from(p.post_fix_warm);
    if diff.abs() > TOLERANCE {
        notes.push(format!(
            "measured {:.3} reallocations per packet, predicted {}",
            obs.net_per_packet, p.post_fix_warm
        ));
    }
    match obs.overhead {
        Some(o) if o != p.overhead_bytes as u64 => notes.push(format!(
            "overhead on the wire {o} bytes, analyzer {}",
            p.overhead_bytes
        )),
        _ => {}
    }
    if notes.is_empty() {
        (Verdict::Agree, None)
    } else {
        (Verdict::Disagree, Some(notes.join("; ")))
    }
}

/// Formats an optional number, `-` when absent.
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The per-configuration table.
pub fn table(results: &[ConfigResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<7} {:<12} {:>4} {:>8} {:>6} {:>9} {:>8} {:>8} {:>7}  verdict",
        "ingress", "mode", "segs", "overhead", "rx_hr", "measured", "post-fix", "pre-fix", "tx_hr"
    );
    for r in results {
        let (warm, pre) = r.predicted.as_ref().map_or(("-".into(), "-".into()), |p| {
            (p.post_fix_warm.to_string(), p.pre_fix.to_string())
        });
        let _ = writeln!(
            s,
            "{:<7} {:<12} {:>4} {:>8} {:>6} {:>9.3} {:>8} {:>8} {:>7}  {}{}",
            r.ingress.name(),
            r.mode,
            r.segments,
            opt(r.overhead_measured),
            opt(r.rx_headroom),
            r.net_per_packet,
            warm,
            pre,
            opt(r.counters.tx_headroom_min),
            r.verdict.name(),
            r.note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(warm: u32, overhead: usize) -> Predicted {
        Predicted {
            overhead_bytes: overhead,
            pre_fix: warm,
            post_fix_warm: warm,
            post_fix_first_packet: warm,
        }
    }

    fn obs(net: f64) -> Observation {
        Observation {
            sent: 1000,
            router_in: 1000,
            receiver_in: 1000,
            net_per_packet: net,
            overhead: Some(96),
        }
    }

    #[test]
    fn agreement_within_tolerance() {
        // docs/references.md §5.3: seg6 encap with 3 segments reallocates once per packet (O = 40 + 8 + 48 = 96).
        assert_eq!(verdict(&obs(1.0), Some(&p(1, 96))).0, Verdict::Agree);
        // Two CPUs' cold first packets in a burst of 1000: 1.002 still agrees.
        assert_eq!(verdict(&obs(1.002), Some(&p(1, 96))).0, Verdict::Agree);
        assert_eq!(verdict(&obs(0.0), Some(&p(0, 96))).0, Verdict::Agree);
    }

    #[test]
    fn disagreement() {
        let (v, note) = verdict(&obs(2.0), Some(&p(1, 96)));
        assert_eq!(v, Verdict::Disagree);
        assert!(note.unwrap().contains("predicted 1"));
        assert_eq!(verdict(&obs(1.1), Some(&p(1, 96))).0, Verdict::Disagree);
        // Right count, wrong overhead: the model's input is wrong, so it does not agree.
        let (v, note) = verdict(&obs(1.0), Some(&p(1, 104)));
        assert_eq!(v, Verdict::Disagree);
        assert!(note.unwrap().contains("overhead"));
    }

    #[test]
    fn inconclusive_measurements() {
        let mut o = obs(1.0);
        o.router_in = 0;
        assert_eq!(verdict(&o, Some(&p(1, 96))).0, Verdict::Inconclusive);
        o.router_in = 400;
        o.receiver_in = 400;
        assert_eq!(verdict(&o, Some(&p(1, 96))).0, Verdict::Inconclusive);
        let mut o = obs(1.0);
        o.receiver_in = 990;
        assert_eq!(verdict(&o, Some(&p(1, 96))).0, Verdict::Inconclusive);
        assert_eq!(verdict(&obs(1.0), None).0, Verdict::Inconclusive);
    }

    #[test]
    fn table_has_one_row_per_config() {
        let r = ConfigResult {
            ingress: crate::audit::Ingress::Plain,
            mode: "encap".into(),
            segments: 3,
            route: String::new(),
            sent: 10,
            counters: Counters::default(),
            overhead_measured: Some(96),
            rx_headroom: Some(16),
            ll_reserved: 16,
            reallocs_per_packet: 1.0,
            net_per_packet: 1.0,
            predicted: Some(p(1, 96)),
            verdict: Verdict::Agree,
            note: None,
        };
        let t = table(&[r.clone(), r]);
        assert_eq!(t.lines().count(), 3);
        assert!(t.lines().nth(1).unwrap().contains("agree"));
    }
}
