//! Ways out that the fast path does not plan but a plan executor outside this crate can (the XDP tier): seg6
//! H.Encaps / H.Encaps.Red of the L2 modes (the received Ethernet frame is the inner payload) and of IPv4 packets.
//! The template is written by the tunnel's own general-path code ([`Seg6Tunnel::push_encap`]), so that it is
//! byte-identical to what the worker writes.

use super::Snapshot;
use crate::fib::{DevId, Origin, RouteEntry};
use crate::plan::scratch;
use crate::spec::Seg6Mode;
use crate::tunnel::seg6::{Outer, Seg6Tunnel};
use crate::tunnel::{InputTunnel, Tunnel};
use crate::wire::ethernet::{self, EthernetRepr};
use crate::wire::{ipv6, proto};
use std::net::IpAddr;

/// A seg6 encapsulation whose bytes in front of the received packet (or frame) are the same for every packet of
/// a route, but for the outer Payload Length and, for IPv6 packets, the outer header's first word and hop limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncapWay {
    /// Egress device (of the route to the first SID).
    pub egress: DevId,
    /// Longest outer IPv6 packet (that route's MTU or its device's, capped at 40 + 65,535 bytes).
    pub max_len: usize,
    /// Ethernet header to the next hop, outer IPv6 header (source, destination = first SID, next header; traffic
    /// class, flow label and hop limit 0 for IPv6 packets, set per packet; for IPv4 packets traffic class and
    /// flow label 0 and the hop limit already decremented, as the worker writes them), the SRH (HMAC included).
    pub template: Vec<u8>,
    /// Whether the received Ethernet header is carried (l2encap, l2encap.red): the template goes in front of the
    /// received frame, not of its IPv6 or IPv4 packet.
    pub l2: bool,
}

/// Why a seg6 route has no [`EncapWay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoWay {
    /// Not a seg6 route of these kinds (another tunnel, inline, no tunnel).
    Kind,
    /// Nothing to plan yet or ever: `seg6_flowlabel` 1 (a per-packet hash), no route to the first SID or one
    /// with another tunnel, an unresolved or stale neighbour, no source address, a missing HMAC key.
    NoPlan,
    /// IPv4: the outer hop limit (the egress device's `hop_limit`) is 1 or less, so the worker drops every
    /// packet.
    HopLimit,
}

impl Snapshot {
    /// The [`EncapWay`] of route `r` for packets of its own family: for an IPv6 route, seg6 `l2encap` and
    /// `l2encap.red` (the other encap modes have [`crate::plan::Plan`]s); for an IPv4 route, seg6 `encap`,
    /// `encap.red`, `l2encap` and `l2encap.red`. What the worker does (`Worker::forward` with an input tunnel):
    /// the route to the first SID (no other tunnel there), its next hop's address (a static or not stale
    /// neighbour), the tunnel's source address and HMAC, and for IPv4 packets the outer hop limit: the egress
    /// device's `hop_limit`, less one.
    pub fn seg6_encap_way(&self, r: &RouteEntry) -> Result<EncapWay, NoWay> {
        let Some((tid, Tunnel::Input(InputTunnel::Seg6(s)))) =
            r.tunnel.get().map(|t| (t, &self.tunnels[t]))
        else {
            return Err(NoWay::Kind);
        };
        let v4 = r.prefix.addr().is_ipv4();
        let l2 = s.is_l2();
        match s.mode {
            Seg6Mode::Inline => return Err(NoWay::Kind),
            Seg6Mode::Encap | Seg6Mode::EncapRed if !v4 => return Err(NoWay::Kind),
            _ => {}
        }
        if self.seg6_flowlabel > 0 {
            return Err(NoWay::NoPlan);
        }
        let next = self
            .fib
            .lookup_v6(s.first_sid)
            .filter(|n| n.tunnel.get().is_none_or(|t| t == tid))
            .filter(|n| !matches!(n.origin, Origin::Reject(_)))
            .ok_or(NoWay::NoPlan)?;
        let dev = next.dev.get().ok_or(NoWay::NoPlan)?;
        let nh = match next.via {
            Some(IpAddr::V6(gw)) => gw,
            Some(IpAddr::V4(_)) => return Err(NoWay::NoPlan),
            None => s.first_sid,
        };
        let mac = match self.neighbour(dev, IpAddr::V6(nh)) {
            Some((m, false)) => m,
            _ => return Err(NoWay::NoPlan),
        };
        let link = &self.links[dev];
        let hop_limit = if v4 {
            match link.sysctl.hop_limit {
                h if h <= 1 => return Err(NoWay::HopLimit),
                h => h - 1,
            }
        } else {
            0
        };
        let src = s
            .tunsrc
            .or(self.tunsrc)
            .or_else(|| self.tunnel_source(tid, r.dev.get(), &s.first_sid))
            .ok_or(NoWay::NoPlan)?;
        let hmac = match s.hmac_key {
            Some(k) => Some(self.hmac.get(&k).ok_or(NoWay::NoPlan)?),
            None => None,
        };
        let inner_proto = match (l2, v4) {
            (true, _) => proto::ETHERNET,
            (false, true) => proto::IPV4,
            (false, false) => proto::IPV6,
        };
        let outer = Outer {
            src,
            traffic_class: 0,
            flow_label: 0,
            hop_limit,
            inner_proto,
        };
        let tunnel: &Seg6Tunnel = s;
        let mut b = scratch(None, tunnel.overhead());
        tunnel
            .push_encap(&mut b, &outer, hmac)
            .map_err(|_| NoWay::NoPlan)?;
        let mut template = vec![0u8; ethernet::HEADER_LEN];
        EthernetRepr {
            dst: mac,
            src: link.mac,
            ethertype: ethernet::ETHERTYPE_IPV6,
        }
        .emit(&mut template);
        template.extend_from_slice(b.data());
        let mtu = next.mtu.map_or(link.mtu, |m| m.value.min(link.mtu)) as usize;
        Ok(EncapWay {
            egress: dev,
            max_len: mtu.min(ipv6::HEADER_LEN + u16::MAX as usize),
            template,
            l2,
        })
    }
}
