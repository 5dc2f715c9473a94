//! The bpftrace side of the audit: the script, the process, and the parsing of its `-f json` output.
//!
//! kprobes and fentry are unavailable on the target kernels (docs/references.md §5.3), so `pskb_expand_head` is counted
//! through its own allocation, seen by tracepoints:
//! - `kmem:kmalloc` (and `kmem:kmalloc_node` on kernels that still have it) whose `call_site` symbolises to
//!   `pskb_expand_head`: `kmalloc_reserve` allocates with `kmalloc_node_track_caller`, which reports its
//!   caller's caller, i.e. `pskb_expand_head`;
//! - `kmem:kmem_cache_alloc` from the `skbuff_small_head` cache: there the call site is `kmalloc_reserve`
//!   itself (shared with `__alloc_skb`), so these are keyed by a 4-frame kernel stack and only the stacks that
//!   pass through `pskb_expand_head` count.
//!
//! Every probe is filtered on `comm ==` [`SENDER_COMM`] and keyed by `tid`: on veth the whole receive →
//! forward → encapsulate → transmit path runs in the sender's softirq context, so each burst (one thread)
//! gets its own counters, and other activity on the machine is excluded. The same context also sees
//! `net:netif_receive_skb` on the router's ingress (headroom, `mac_len`, length) and on the receiver
//! (packets that made it), and `net:net_dev_start_xmit` on the router's egress (length and headroom after
//! encapsulation, and the device's `hard_header_len`/`needed_headroom` for `LL_RESERVED_SPACE`).

use super::testbed::{IF_D0, IF_R0, IF_R1, SENDER_COMM, burst_frame};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counters for one burst (one sender thread), as read back from bpftrace.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// `pskb_expand_head` allocations through `kmalloc` (call site `pskb_expand_head`).
    pub expand_kmalloc: u64,
    /// `pskb_expand_head` allocations from the small-head cache (stack through `pskb_expand_head`).
    pub expand_small_head: u64,
    /// Frames the router received on its ingress.
    pub router_in: u64,
    /// Frames the receiver got (after the router and the tunnel).
    pub receiver_in: u64,
    /// Smallest `skb->data − skb->head` at the router's ingress, at the network header.
    pub rx_headroom_min: Option<u64>,
    /// Largest such headroom.
    pub rx_headroom_max: Option<u64>,
    /// `skb->mac_len` at the router's ingress (headroom minus the MAC header offset).
    pub mac_len: Option<u64>,
    /// Largest IPv6 packet length at the router's ingress (`skb->len` at the network header).
    pub rx_len: Option<u64>,
    /// Largest frame length leaving the router's egress (Ethernet header included).
    pub tx_len: Option<u64>,
    /// Smallest headroom in front of the Ethernet header on the router's egress.
    pub tx_headroom_min: Option<u64>,
    /// Largest such headroom.
    pub tx_headroom_max: Option<u64>,
    /// Egress device `hard_header_len`.
    pub hard_header_len: Option<u64>,
    /// Egress device `needed_headroom`.
    pub needed_headroom: Option<u64>,
}

impl Counters {
    /// All `pskb_expand_head` reallocations.
    pub fn reallocations(&self) -> u64 {
        self.expand_kmalloc + self.expand_small_head
    }
}

/// The probes whose first event prints `live NAME` (the `live` helper below); the audit waits for all of them.
pub const LIVE_PROBES: &[&str] = &[
    "kmalloc",
    "kmem_cache_alloc",
    "netif_receive_skb",
    "net_dev_start_xmit",
];

/// bpftrace reports its probes before they are all enabled, so each probe prints `live NAME` on its first
/// event; warm-up bursts are sent until every probe has spoken.
fn live(name: &str) -> String {
    format!("if (@live_{name} == 0) {{ @live_{name} = 1; printf(\"live {name}\\n\"); }}")
}

/// The bpftrace program. `kmalloc_node` adds the probe for kernels that still have `kmem:kmalloc_node`.
///
/// The router's ingress counts only frames of the burst's length (the IPv6 packet of [`burst_frame`]): a
/// stray frame of the sender namespace's own (an MLD report sent from a timer, say) can be processed from the
/// backlog in a burst thread's softirq, and must not count as a burst frame.
pub fn script(kmalloc_node: bool) -> String {
    let c = SENDER_COMM;
    let rx_len = burst_frame().len() - 14;
    let mut s = String::new();
    s.push_str(&format!(
        "tracepoint:kmem:kmalloc /comm == \"{c}\"/ {{ @kmalloc[tid, ksym(args->call_site)] = count(); {} }}\n",
        live("kmalloc")
    ));
    if kmalloc_node {
        s.push_str(&format!(
            "tracepoint:kmem:kmalloc_node /comm == \"{c}\"/ {{ @kmalloc[tid, ksym(args->call_site)] = count(); }}\n"
        ));
    }
    s.push_str(&format!(
        "tracepoint:kmem:kmem_cache_alloc /comm == \"{c}\" && str(args->name) == \"skbuff_small_head\"/ \
         {{ @small[tid, kstack(4)] = count(); {} }}\n",
        live("kmem_cache_alloc")
    ));
    s.push_str(&format!(
        "tracepoint:net:netif_receive_skb /comm == \"{c}\"/ {{\n\
         \x20 {}\n\
         \x20 $s = (struct sk_buff *)args->skbaddr;\n\
         \x20 $dev = str(args->name);\n\
         \x20 if ($dev == \"{IF_R0}\" && args->len == {rx_len}) {{\n\
         \x20   $hr = (uint64)$s->data - (uint64)$s->head;\n\
         \x20   @router_in[tid] = count(); @rx_hr_min[tid] = min($hr); @rx_hr_max[tid] = max($hr);\n\
         \x20   @mac_len[tid] = max($hr - $s->mac_header); @rx_len[tid] = max(args->len);\n\
         \x20 }}\n\
         \x20 if ($dev == \"{IF_D0}\") {{ @receiver_in[tid] = count(); }}\n\
         }}\n",
        live("netif_receive_skb")
    ));
    s.push_str(&format!(
        "tracepoint:net:net_dev_start_xmit /comm == \"{c}\" && str(args->name) == \"{IF_R1}\"/ {{\n\
         \x20 {}\n\
         \x20 $s = (struct sk_buff *)args->skbaddr;\n\
         \x20 $hr = (uint64)$s->data - (uint64)$s->head;\n\
         \x20 @tx_len[tid] = max(args->len); @tx_hr_min[tid] = min($hr); @tx_hr_max[tid] = max($hr);\n\
         \x20 @hard_header_len[tid] = max($s->dev->hard_header_len);\n\
         \x20 @needed_headroom[tid] = max($s->dev->needed_headroom);\n\
         }}\n",
        live("net_dev_start_xmit")
    ));
    s
}

/// Parses bpftrace `-f json` output (one JSON object per line; other lines are ignored) into counters per tid.
///
/// Map keys are bpftrace's rendering of the key tuple: `"TID"` or `"TID,REST"`, where REST is a symbol
/// (`ksym`) or a multi-line kernel stack (`kstack`).
pub fn parse_output(text: &str) -> Result<BTreeMap<u32, Counters>, String> {
    let mut out: BTreeMap<u32, Counters> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v.get("type").and_then(|t| t.as_str()) != Some("map") {
            continue;
        }
        let Some(data) = v.get("data").and_then(|d| d.as_object()) else {
            continue;
        };
        for (map, entries) in data {
            let Some(entries) = entries.as_object() else {
                continue;
            };
            for (key, value) in entries {
                let (tid, rest) = match key.split_once(',') {
                    Some((t, r)) => (t, Some(r)),
                    None => (key.as_str(), None),
                };
                let tid: u32 = tid
                    .trim()
                    .parse()
                    .map_err(|_| format!("bpftrace map {map}: unexpected key {key:?}"))?;
                let n = value
                    .as_u64()
                    .ok_or_else(|| format!("bpftrace map {map}: value {value} is not a count"))?;
                let c = out.entry(tid).or_default();
                match map.as_str() {
                    "@kmalloc" if rest.map(str::trim) == Some("pskb_expand_head") => {
                        c.expand_kmalloc += n;
                    }
                    "@small" if rest.is_some_and(stack_has_expand_head) => {
                        c.expand_small_head += n;
                    }
                    "@router_in" => c.router_in += n,
                    "@receiver_in" => c.receiver_in += n,
                    "@rx_hr_min" => c.rx_headroom_min = Some(n),
                    "@rx_hr_max" => c.rx_headroom_max = Some(n),
                    "@mac_len" => c.mac_len = Some(n),
                    "@rx_len" => c.rx_len = Some(n),
                    "@tx_len" => c.tx_len = Some(n),
                    "@tx_hr_min" => c.tx_headroom_min = Some(n),
                    "@tx_hr_max" => c.tx_headroom_max = Some(n),
                    "@hard_header_len" => c.hard_header_len = Some(n),
                    "@needed_headroom" => c.needed_headroom = Some(n),
                    _ => {}
                }
            }
        }
    }
    Ok(out)
}

/// Whether a bpftrace `kstack` rendering has a `pskb_expand_head` frame (`pskb_expand_head+OFFSET`).
fn stack_has_expand_head(stack: &str) -> bool {
    stack
        .lines()
        .map(str::trim)
        .any(|f| f.split('+').next() == Some("pskb_expand_head"))
}

/// A running bpftrace; killed on drop.
#[derive(Debug)]
pub struct Tracer {
    child: Option<Child>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Tracer {
    /// Starts bpftrace with `script` in its own process group (a Ctrl-C at the terminal reaches only us; we
    /// stop it) and waits until its probes are attached. `interrupted` is polled while waiting.
    pub fn start(script: &str, interrupted: &dyn Fn() -> bool) -> Result<Tracer, String> {
        let mut child = Command::new("bpftrace")
            .args(["-f", "json", "-e", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run bpftrace: {e}"))?;
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(o) = child.stdout.take() {
            pump(o, Arc::clone(&stdout));
        }
        if let Some(e) = child.stderr.take() {
            pump(e, Arc::clone(&stderr));
        }
        let mut t = Tracer {
            child: Some(child),
            stdout,
            stderr,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if t.text(&t.stdout).contains("\"attached_probes\"") {
                // Reported as attached; the caller still waits for every probe to fire (`all_live`).
                return Ok(t);
            }
            if let Some(ch) = t.child.as_mut()
                && let Ok(Some(status)) = ch.try_wait()
            {
                std::thread::sleep(Duration::from_millis(100));
                return Err(format!(
                    "bpftrace could not attach its tracepoints ({status}): {}",
                    relevant_stderr(&t.text(&t.stderr))
                ));
            }
            if interrupted() {
                return Err("interrupted".into());
            }
            if Instant::now() > deadline {
                return Err("bpftrace did not attach its probes within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether every probe of [`LIVE_PROBES`] has printed its `live` line.
    pub fn all_live(&self) -> bool {
        let out = self.text(&self.stdout);
        LIVE_PROBES
            .iter()
            .all(|p| out.contains(&format!("live {p}\\n")) || out.contains(&format!("live {p}\n")))
    }

    fn text(&self, buf: &Arc<Mutex<String>>) -> String {
        buf.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Stops bpftrace (SIGTERM: it prints its maps and exits) and returns its standard output.
    pub fn stop(mut self) -> Result<String, String> {
        let mut child = self.child.take().ok_or("bpftrace already stopped")?;
        let _ = super::sys::terminate(child.id());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err("bpftrace did not stop within 30 s".into());
                }
            }
        }
        // Let the pipe readers drain what is left.
        std::thread::sleep(Duration::from_millis(100));
        let out = self.text(&self.stdout);
        if !out.contains("\"type\": \"map\"") && !out.contains("\"type\":\"map\"") {
            return Err(format!(
                "bpftrace printed no maps: {}",
                relevant_stderr(&self.text(&self.stderr))
            ));
        }
        Ok(out)
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn pump(mut r: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(&mut r);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if let Ok(mut s) = into.lock() {
                s.push_str(&line);
            }
            line.clear();
        }
    });
}

/// bpftrace's stderr without the harmless RLIMIT_MEMLOCK complaint (modern kernels account BPF memory to
/// the memory cgroup and do not need the limit).
pub fn relevant_stderr(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("RLIMIT_MEMLOCK") && !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        "(no message)".into()
    } else {
        lines.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real bpftrace 0.17 `-f json` output of [`script`] on kernel 6.18.44 (Python AF_PACKET sender thread named
    /// `l6a-snd`, 100 frames each): tid 22025 = plain forward, tid 22067 = seg6 l2encap with 2 segments.
    const SAMPLE: &str = r#"{"type": "attached_probes", "data": {"probes": 4}}


{"type": "map", "data": {"@hard_header_len": {"22067": 14, "22025": 14}}}
{"type": "map", "data": {"@kmalloc": {"22067,sk_prot_alloc": 1, "22025,sk_prot_alloc": 1, "22067,pskb_expand_head": 200}}}
{"type": "map", "data": {"@mac_len": {"22067": 14, "22025": 14}}}
{"type": "map", "data": {"@needed_headroom": {"22067": 0, "22025": 0}}}
{"type": "map", "data": {"@receiver_in": {"22067": 100, "22025": 100}}}
{"type": "map", "data": {"@router_in": {"22067": 100, "22025": 100}}}
{"type": "map", "data": {"@rx_hr_max": {"22067": 16, "22025": 16}}}
{"type": "map", "data": {"@rx_hr_min": {"22067": 16, "22025": 16}}}
{"type": "map", "data": {"@rx_len": {"22025": 66, "22067": 66}}}
{"type": "map", "data": {"@small": {"22025,\n    kmem_cache_alloc_node_noprof+504\n    kmalloc_reserve+158\n    __alloc_skb+128\n    alloc_skb_with_frags+84\n": 100, "22067,\n    kmem_cache_alloc_node_noprof+504\n    kmalloc_reserve+158\n    __alloc_skb+128\n    alloc_skb_with_frags+84\n": 106}}}
{"type": "map", "data": {"@tx_hr_max": {"22025": 2, "22067": 50}}}
{"type": "map", "data": {"@tx_hr_min": {"22025": 2, "22067": 50}}}
{"type": "map", "data": {"@tx_len": {"22025": 80, "22067": 174}}}
"#;

    #[test]
    fn parses_bpftrace_json() {
        let m = parse_output(SAMPLE).unwrap();
        let (base, l2) = (&m[&22025], &m[&22067]);
        // docs/references.md §5.3: no reallocation for plain forwarding, two per packet for l2encap.
        assert_eq!(base.reallocations(), 0);
        assert_eq!(l2.expand_kmalloc, 200);
        // The small-head allocations are the sender's own __alloc_skb: they must not count.
        assert_eq!(l2.expand_small_head, 0);
        assert_eq!((l2.router_in, l2.receiver_in), (100, 100));
        assert_eq!(
            (l2.rx_headroom_min, l2.rx_headroom_max, l2.mac_len),
            (Some(16), Some(16), Some(14))
        );
        // 174 = 14 (Ethernet) + 40 (outer IPv6) + 8 + 2*16 (SRH) + 14 (carried Ethernet) + 66 (the packet).
        assert_eq!((l2.rx_len, l2.tx_len), (Some(66), Some(174)));
        assert_eq!(
            (l2.tx_headroom_min, l2.hard_header_len, l2.needed_headroom),
            (Some(50), Some(14), Some(0))
        );
        assert_eq!(base.tx_len, Some(80));
    }

    #[test]
    fn small_head_stack_through_expand_head_counts() {
        // Hand-made from the real rendering above, with the third frame replaced by pskb_expand_head (the path a
        // small-head reallocation would take: kmalloc_reserve is called by both __alloc_skb and pskb_expand_head).
        let text = r#"{"type": "map", "data": {"@small": {"7,\n    kmem_cache_alloc_node_noprof+504\n    kmalloc_reserve+158\n    pskb_expand_head+171\n    seg6_do_srh_encap+90\n": 5}}}"#;
        let m = parse_output(text).unwrap();
        assert_eq!(m[&7].expand_small_head, 5);
        assert_eq!(m[&7].reallocations(), 5);
    }

    #[test]
    fn ignores_noise_and_rejects_bad_keys() {
        let m = parse_output(
            "Attaching 4 probes...\nnot json {\n{\"type\": \"printf\", \"data\": \"x\"}\n",
        )
        .unwrap();
        assert!(m.is_empty());
        // A prefix of the symbol is not the symbol.
        let m = parse_output(
            r#"{"type": "map", "data": {"@kmalloc": {"3,pskb_expand_head_frags": 9}}}"#,
        )
        .unwrap();
        assert_eq!(m[&3].reallocations(), 0);
        assert!(
            parse_output(r#"{"type": "map", "data": {"@kmalloc": {"x,pskb_expand_head": 9}}}"#)
                .is_err()
        );
        assert!(
            parse_output(
                r#"{"type": "map", "data": {"@kmalloc": {"3,pskb_expand_head": "nine"}}}"#
            )
            .is_err()
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_output_never_panics(text in ".{0,400}") {
            let _ = parse_output(&text);
        }

        #[test]
        fn arbitrary_map_keys_never_panic(key in ".{0,40}", n in 0u64..1_000_000) {
            let line = serde_json::json!({"type": "map", "data": {"@kmalloc": {key: n}}}).to_string();
            let _ = parse_output(&line);
        }
    }

    #[test]
    fn stderr_filter() {
        let e = "ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace. If your program is not loading...\n";
        assert_eq!(relevant_stderr(e), "(no message)");
        assert_eq!(
            relevant_stderr("ERROR: tracepoint not found: kmem:foo\n"),
            "ERROR: tracepoint not found: kmem:foo"
        );
    }

    #[test]
    fn script_filters_on_the_sender() {
        let s = script(false);
        assert!(s.contains("comm == \"l6a-snd\""));
        assert!(!s.contains("kmalloc_node"));
        assert!(script(true).contains("tracepoint:kmem:kmalloc_node"));
        // The burst frame is 80 bytes (testbed::burst_frame doc): 66 from the IPv6 header on.
        assert!(s.contains("\"l6r0\" && args->len == 66)"));
    }
}
