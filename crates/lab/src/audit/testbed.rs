//! The throw-away three-namespace testbed (docs/references.md §6), built and torn down with iproute2, and the
//! `AF_PACKET` burst sender (docs/references.md §6).
//!
//! ```text
//! S [l6s0 02:00:00:00:01:01 fd00:1::1] -- [l6r0 02:00:00:00:01:02 fd00:1::2] R
//! R [l6r1 02:00:00:00:02:01 fd00:2::1] -- [l6d0 02:00:00:00:02:02 fd00:2::2] D
//! ```
//! R forwards; the route under test covers `fd00:99::/64`, and every segment (`fc00::N`) is routed towards D,
//! which drops what it receives (it does not forward). Neighbours are static and DAD is off, so no NDP traffic
//! races the burst. The namespaces are called `l6a-PID-s`, `l6a-PID-r`, `l6a-PID-d`; [`Testbed`] deletes
//! them when dropped (normal exit, error, panic unwinding, or after a caught signal).

use super::sys;
use super::xdp::XdpPass;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::process::Command;

/// Sender-side interface.
pub const IF_S0: &str = "l6s0";
/// Router ingress interface (where the rx headroom is measured).
pub const IF_R0: &str = "l6r0";
/// Router egress interface (the route's device).
pub const IF_R1: &str = "l6r1";
/// Receiver interface.
pub const IF_D0: &str = "l6d0";
/// Name the sender threads carry (`comm`), which the bpftrace filters select on. At most 15 bytes.
pub const SENDER_COMM: &str = "l6a-snd";
/// The prefix the routes under test cover.
pub const TEST_PREFIX: &str = "fd00:99::/64";

const MAC_S0: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x01];
const MAC_R0: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x02];

/// Runs `ip ARGS...`, returning its stderr as the error.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The three namespaces; removed on drop unless `keep`.
#[derive(Debug)]
pub struct Testbed {
    /// Sender namespace.
    pub sender: String,
    /// Router namespace (the routes under test live here).
    pub router: String,
    /// Receiver namespace.
    pub receiver: String,
    /// Do not delete the namespaces on drop (`--keep`).
    pub keep: bool,
    created: Vec<String>,
}

impl Testbed {
    /// Namespace names for this process (unique per pid).
    pub fn names(pid: u32) -> [String; 3] {
        ["s", "r", "d"].map(|r| format!("l6a-{pid}-{r}"))
    }

    /// Builds the topology. On error, whatever was created is removed again (by drop).
    pub fn up(keep: bool) -> Result<Testbed, String> {
        let [sender, router, receiver] = Self::names(std::process::id());
        let mut tb = Testbed {
            sender,
            router,
            receiver,
            keep,
            created: Vec::new(),
        };
        let (s, r, d) = (tb.sender.clone(), tb.router.clone(), tb.receiver.clone());
        for ns in [&s, &r, &d] {
            ip(&["netns", "add", ns])?;
            tb.created.push(ns.clone());
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            sysctl(ns, "net.ipv6.conf.all.accept_dad=0")?;
            sysctl(ns, "net.ipv6.conf.default.accept_dad=0")?;
        }
        let mac = |m: [u8; 6]| {
            m.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        };
        let (ms0, mr0) = (mac(MAC_S0), mac(MAC_R0));
        #[rustfmt::skip]
        let steps: Vec<Vec<&str>> = vec![
            vec!["link", "add", IF_S0, "netns", &s, "address", &ms0, "type", "veth",
                 "peer", "name", IF_R0, "netns", &r, "address", &mr0],
            vec!["link", "add", IF_R1, "netns", &r, "address", "02:00:00:00:02:01", "type", "veth",
                 "peer", "name", IF_D0, "netns", &d, "address", "02:00:00:00:02:02"],
            vec!["-n", &s, "addr", "add", "fd00:1::1/64", "dev", IF_S0, "nodad"],
            vec!["-n", &r, "addr", "add", "fd00:1::2/64", "dev", IF_R0, "nodad"],
            vec!["-n", &r, "addr", "add", "fd00:2::1/64", "dev", IF_R1, "nodad"],
            vec!["-n", &d, "addr", "add", "fd00:2::2/64", "dev", IF_D0, "nodad"],
            vec!["-n", &s, "link", "set", IF_S0, "up"],
            vec!["-n", &r, "link", "set", IF_R0, "up"],
            vec!["-n", &r, "link", "set", IF_R1, "up"],
            vec!["-n", &d, "link", "set", IF_D0, "up"],
            vec!["-n", &r, "neigh", "add", "fd00:1::1", "lladdr", "02:00:00:00:01:01", "dev", IF_R0, "nud", "permanent"],
            vec!["-n", &r, "neigh", "add", "fd00:2::2", "lladdr", "02:00:00:00:02:02", "dev", IF_R1, "nud", "permanent"],
            vec!["-n", &d, "neigh", "add", "fd00:2::1", "lladdr", "02:00:00:00:02:01", "dev", IF_D0, "nud", "permanent"],
            vec!["-n", &r, "-6", "route", "add", "fc00::/16", "via", "fd00:2::2", "dev", IF_R1],
        ];
        for step in &steps {
            ip(step)?;
        }
        sysctl(&r, "net.ipv6.conf.all.forwarding=1")?;
        Ok(tb)
    }

    /// Installs (replacing any previous) the route under test: `fd00:99::/64 ROUTE_ARGS dev l6r1`, where
    /// `route_args` is e.g. `["encap", "seg6", "mode", "encap", "segs", "fc00::1"]` or the plain forward
    /// `["via", "fd00:2::2"]`.
    pub fn set_route(&self, route_args: &[String]) -> Result<(), String> {
        let mut args: Vec<&str> = vec!["-n", &self.router, "-6", "route", "replace", TEST_PREFIX];
        args.extend(route_args.iter().map(String::as_str));
        args.extend(["dev", IF_R1]);
        ip(&args)
    }

    /// Attaches a native `XDP_PASS` program to the router's ingress [`IF_R0`] (see [`super::xdp`]): from then
    /// on, veth re-homes every frame the sender sends with `XDP_PACKET_HEADROOM` in front of it. Detached when
    /// the returned value is dropped.
    pub fn attach_xdp_pass(&self) -> Result<XdpPass, String> {
        let ns = self.open_ns(&self.router)?;
        std::thread::Builder::new()
            .name("l6a-xdp".to_string())
            .spawn(move || -> Result<XdpPass, String> {
                // The thread enters the router namespace (interface indices are per namespace) and ends there;
                // the descriptors it returns belong to the process.
                sys::setns_net(&ns).map_err(|e| format!("setns into the router namespace: {e}"))?;
                XdpPass::attach(IF_R0)
                    .map_err(|e| format!("attaching a native XDP program to {IF_R0}: {e}"))
            })
            .map_err(|e| format!("cannot start the XDP thread: {e}"))?
            .join()
            .map_err(|_| "the XDP thread panicked".to_string())?
    }

    fn open_ns(&self, name: &str) -> Result<OwnedFd, String> {
        Ok(File::open(format!("/run/netns/{name}"))
            .map_err(|e| format!("cannot open namespace {name}: {e}"))?
            .into())
    }

    /// Sends `count` copies of `frame` from the sender namespace on a fresh thread named [`SENDER_COMM`];
    /// returns that thread's kernel tid (which keys its events in the trace) and the frames sent.
    pub fn burst(&self, frame: &[u8], count: u64) -> Result<(u32, u64), String> {
        let ns = self.open_ns(&self.sender)?;
        let frame = frame.to_vec();
        let handle = std::thread::Builder::new()
            .name(SENDER_COMM.to_string())
            .spawn(move || -> Result<(u32, u64), String> {
                sys::setns_net(&ns).map_err(|e| format!("setns into the sender namespace: {e}"))?;
                let sock = sys::PacketSocket::bind(IF_S0)
                    .map_err(|e| format!("AF_PACKET socket on {IF_S0}: {e}"))?;
                let tid = sys::gettid();
                let mut sent = 0;
                for _ in 0..count {
                    if sock.send(&frame).is_ok() {
                        sent += 1;
                    }
                }
                Ok((tid, sent))
            })
            .map_err(|e| format!("cannot start the sender thread: {e}"))?;
        handle
            .join()
            .map_err(|_| "the sender thread panicked".to_string())?
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for ns in self.created.drain(..) {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

/// Deletes namespaces named `l6a-PID-*` whose process PID no longer exists (left over after a SIGKILL).
pub fn remove_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("l6a-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

fn sysctl(ns: &str, setting: &str) -> Result<(), String> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sysctl", "-qw", setting])
        .output()
        .map_err(|e| format!("cannot run sysctl in {ns}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "sysctl {setting} in {ns} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The burst frame: Ethernet (to R's `l6r0`) / IPv6 `fd00:1::1 → fd00:99::1`, hop limit 64 / UDP 1111 → 3333 /
/// 18 bytes of `X` (80 bytes, the reference blaster's frame), with a correct UDP checksum.
pub fn burst_frame() -> Vec<u8> {
    let src: [u8; 16] = [0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let dst: [u8; 16] = [0xfd, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let payload = [b'X'; 18];
    let udp_len = 8 + payload.len();
    let mut udp = Vec::with_capacity(udp_len);
    udp.extend_from_slice(&1111u16.to_be_bytes());
    udp.extend_from_slice(&3333u16.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&payload);
    // RFC 8200 §8.1 pseudo-header: src, dst, upper-layer length (32 bits), 3 zero bytes, next header.
    let mut sum: u32 = 0;
    let mut add = |bytes: &[u8]| {
        for pair in bytes.chunks(2) {
            let hi = u32::from(pair[0]) << 8;
            let lo = pair.get(1).copied().map_or(0, u32::from);
            sum += hi | lo;
        }
    };
    add(&src);
    add(&dst);
    add(&(udp_len as u32).to_be_bytes());
    add(&[0, 0, 0, 17]);
    add(&udp);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let mut ck = !(sum as u16);
    if ck == 0 {
        ck = 0xffff; // RFC 768: a computed zero is sent as all ones.
    }
    udp[6..8].copy_from_slice(&ck.to_be_bytes());

    let mut f = Vec::with_capacity(14 + 40 + udp_len);
    f.extend_from_slice(&MAC_R0);
    f.extend_from_slice(&MAC_S0);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&udp);
    f
}

/// The iproute2 arguments of a seg6 route with `segments` SIDs `fc00::1`, `fc00::2`, ... in `mode`.
pub fn seg6_route(mode: &str, segments: usize) -> Vec<String> {
    let segs = (1..=segments)
        .map(|i| format!("fc00::{i:x}"))
        .collect::<Vec<_>>()
        .join(",");
    ["encap", "seg6", "mode", mode, "segs", &segs]
        .map(String::from)
        .to_vec()
}

/// The iproute2 arguments of the baseline route: plain forwarding towards the receiver, no tunnel.
pub fn plain_route() -> Vec<String> {
    vec!["via".into(), "fd00:2::2".into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_layout_and_checksum() {
        let f = burst_frame();
        assert_eq!(f.len(), 80);
        assert_eq!(&f[12..14], &[0x86, 0xdd]);
        // Payload length 26 = 8 (UDP) + 18.
        assert_eq!(&f[18..20], &[0, 26]);
        // Verifying the checksum (RFC 1071): the one's complement sum over pseudo-header and UDP is 0xffff.
        let udp = &f[54..];
        let mut sum: u32 = 0;
        let mut words = |b: &[u8]| {
            for p in b.chunks(2) {
                sum += (u32::from(p[0]) << 8) | u32::from(*p.get(1).unwrap_or(&0));
            }
        };
        words(&f[22..38]);
        words(&f[38..54]);
        words(&[0, 0, 0, 26, 0, 0, 0, 17]);
        words(udp);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }

    #[test]
    fn route_arguments() {
        assert_eq!(
            seg6_route("encap.red", 3).join(" "),
            "encap seg6 mode encap.red segs fc00::1,fc00::2,fc00::3"
        );
        assert_eq!(
            seg6_route("inline", 11)[5],
            "fc00::1,fc00::2,fc00::3,fc00::4,fc00::5,fc00::6,fc00::7,fc00::8,fc00::9,fc00::a,fc00::b"
        );
        assert_eq!(Testbed::names(42), ["l6a-42-s", "l6a-42-r", "l6a-42-d"]);
    }
}
