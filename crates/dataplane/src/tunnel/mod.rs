//! Lightweight tunnels attached to routes: `seg6`, `ioam6`, `rpl`, and the `seg6local` endpoint behaviours.
//!
//! [`TunnelKind`] is the list of kinds; what the rest of the crate asks a tunnel by kind (its name, the bytes it
//! adds to a packet, its `show` text) is answered here, so that forwarding, counters and traces do not match on
//! the variants.
//!
//! Every tunnel knows its overhead when it is installed ([`Tunnel::overhead`]), so the router reserves the
//! headroom once, before anything is written, and the encapsulation then only writes into that room.

pub mod ioam6;
pub mod rpl;
pub mod seg6;
pub mod seg6local;

pub use ioam6::Ioam6Tunnel;
pub use rpl::RplTunnel;
pub use seg6::Seg6Tunnel;

pub use crate::spec::TunnelKind;

use crate::spec::{Encap, Seg6Mode};
use crate::stats::DropReason;
use crate::wire::{ethernet, ipv6};
use seg6local::Seg6Local;
use std::net::Ipv6Addr;

/// A tunnel as installed on a route: applied before forwarding or after it, as Linux does.
#[derive(Debug, Clone)]
pub enum Tunnel {
    /// Applied on the input path, before `ip6_forward` (seg6, rpl): it may change the destination, and the route
    /// to the new destination decides the way out.
    Input(InputTunnel),
    /// Applied on the output path, after forwarding has decremented the hop limit (ioam6).
    Output(OutputTunnel),
    /// An SRv6 endpoint behaviour (seg6local): the route's prefix is a local SID, the packet is processed by it
    /// instead of being forwarded.
    Local(Box<Seg6Local>),
}

/// A tunnel applied on the input path.
#[derive(Debug, Clone)]
pub enum InputTunnel {
    /// SRv6 encapsulation / insertion.
    Seg6(Seg6Tunnel),
    /// RPL source routing header insertion.
    Rpl(RplTunnel),
}

/// A tunnel applied on the output path.
#[derive(Debug, Clone)]
pub enum OutputTunnel {
    /// IOAM pre-allocated trace insertion.
    Ioam6(Ioam6Tunnel),
}

impl Tunnel {
    /// The tunnel a route's configuration describes.
    pub fn new(spec: &Encap) -> Tunnel {
        match spec {
            Encap::Seg6(s) => Tunnel::Input(InputTunnel::Seg6(Seg6Tunnel::new(s))),
            Encap::Rpl(p) => Tunnel::Input(InputTunnel::Rpl(RplTunnel::new(p))),
            Encap::Ioam6(i) => Tunnel::Output(OutputTunnel::Ioam6(Ioam6Tunnel::new(i))),
            Encap::Seg6Local(l) => Tunnel::Local(Box::new(Seg6Local {
                spec: l.clone(),
                behaviour: seg6local::behaviour(l.action),
                oif: None,
                dev: None,
                policy: None,
            })),
        }
    }

    /// The most bytes this tunnel ever adds in front of / inside a packet.
    pub fn overhead(&self) -> usize {
        match self {
            Tunnel::Input(InputTunnel::Seg6(t)) => t.overhead(),
            Tunnel::Input(InputTunnel::Rpl(t)) => t.max_overhead(),
            Tunnel::Output(OutputTunnel::Ioam6(t)) => t.max_overhead(),
            // The End.B6 policies are tunnels of their own, which count.
            Tunnel::Local(_) => 0,
        }
    }

    /// The headroom Linux reports for this tunnel (`lwtunnel_headroom`), which it subtracts from the route MTU.
    pub fn linux_mtu_headroom(&self) -> usize {
        match self {
            Tunnel::Input(InputTunnel::Seg6(t)) => t.linux_headroom(),
            _ => 0,
        }
    }

    /// The tunnel as `ip -6 route show` prints it after the prefix.
    pub fn iproute2(&self) -> String {
        match self {
            Tunnel::Input(InputTunnel::Seg6(t)) => t.iproute2(),
            Tunnel::Input(InputTunnel::Rpl(t)) => t.iproute2(),
            Tunnel::Output(OutputTunnel::Ioam6(t)) => t.iproute2(),
            Tunnel::Local(l) => l.iproute2(),
        }
    }

    /// The tunnel's kind.
    pub fn kind(&self) -> TunnelKind {
        match self {
            Tunnel::Input(t) => t.kind(),
            Tunnel::Output(OutputTunnel::Ioam6(_)) => TunnelKind::Ioam6,
            Tunnel::Local(_) => TunnelKind::Seg6Local,
        }
    }

    /// The destination whose route decides where the tunnel's packets go (seg6's first SID, rpl's first segment,
    /// ioam6's `tundst` in encap modes): a tunnel's plan depends on the route to it.
    pub fn routed_destination(&self) -> Option<Ipv6Addr> {
        match self {
            Tunnel::Input(InputTunnel::Seg6(s)) => Some(s.first_sid),
            Tunnel::Input(InputTunnel::Rpl(r)) => r.segs.first().copied(),
            Tunnel::Output(OutputTunnel::Ioam6(i)) => i.tundst,
            // End.X and End.DX6 plans go to nh6: they depend on the route to it.
            Tunnel::Local(l) => l.spec.nh6.filter(|a| !a.is_unspecified()),
        }
    }

    /// The destination the tunnel sends packets to, when it is fixed (seg6's first SID, ioam6's `tundst`): the
    /// one the outer source address is selected for.
    pub fn fixed_destination(&self) -> Option<Ipv6Addr> {
        match self {
            Tunnel::Input(InputTunnel::Seg6(s)) => Some(s.first_sid),
            Tunnel::Input(InputTunnel::Rpl(_)) => None,
            Tunnel::Output(OutputTunnel::Ioam6(i)) => i.tundst,
            Tunnel::Local(_) => None,
        }
    }
}

impl InputTunnel {
    /// The tunnel's kind.
    pub fn kind(&self) -> TunnelKind {
        match self {
            InputTunnel::Seg6(_) => TunnelKind::Seg6,
            InputTunnel::Rpl(_) => TunnelKind::Rpl,
        }
    }

    /// The tunnel as `ip -6 route show` prints it after the prefix.
    pub fn iproute2(&self) -> String {
        match self {
            InputTunnel::Seg6(t) => t.iproute2(),
            InputTunnel::Rpl(t) => t.iproute2(),
        }
    }

    /// What applying the tunnel to `pkt` (from its L3 header on; `v4`: an IPv4 packet) will add, in bytes, the
    /// destination it then goes to, and whether it carries the whole Ethernet frame (seg6 l2encap modes);
    /// `TunnelProtoMismatch` when the tunnel does not carry the packet's protocol.
    pub fn growth(&self, pkt: &[u8], v4: bool) -> Result<(usize, Ipv6Addr, bool), DropReason> {
        match self {
            InputTunnel::Seg6(s) => {
                if v4 && s.mode == Seg6Mode::Inline {
                    return Err(DropReason::TunnelProtoMismatch);
                }
                let l2_frame = s.is_l2();
                let frame = if l2_frame { ethernet::HEADER_LEN } else { 0 };
                Ok((s.overhead() + frame, s.first_sid, l2_frame))
            }
            InputTunnel::Rpl(r) => {
                if v4 {
                    return Err(DropReason::TunnelProtoMismatch);
                }
                let orig = ipv6::Packet::new_unchecked(pkt).dst_addr();
                Ok((r.header_len(orig), r.segs[0], false))
            }
        }
    }
}

impl OutputTunnel {
    /// The tunnel's kind.
    pub fn kind(&self) -> TunnelKind {
        match self {
            OutputTunnel::Ioam6(_) => TunnelKind::Ioam6,
        }
    }
}

/// Offset of the first byte after the IPv6 header and, if present, the Hop-by-Hop header: where lwt6 inserts
/// routing headers. (Linux inserts right after the IPv6 header even before a Hop-by-Hop header, which RFC 8200
/// §4.1 forbids; lwt6 keeps Hop-by-Hop first. Documented in docs/linux-compat.md.)
pub fn insertion_offset(packet: &[u8]) -> usize {
    use crate::wire::{ipv6, proto};
    if packet.len() > ipv6::HEADER_LEN + 1 && packet[6] == proto::HOPOPTS {
        let len = (packet[ipv6::HEADER_LEN + 1] as usize + 1) * 8;
        if ipv6::HEADER_LEN + len <= packet.len() {
            return ipv6::HEADER_LEN + len;
        }
    }
    ipv6::HEADER_LEN
}

/// Sets the Next Header field of whatever header precedes `offset` (the IPv6 header when `offset` is 40,
/// otherwise the Hop-by-Hop header at 40), returning the old value.
pub fn replace_next_header_before(packet: &mut [u8], offset: usize, nh: u8) -> u8 {
    let at = if offset == crate::wire::ipv6::HEADER_LEN {
        6
    } else {
        crate::wire::ipv6::HEADER_LEN
    };
    std::mem::replace(&mut packet[at], nh)
}

/// Adds `n` to the IPv6 payload length (bytes 4-5), failing if it would exceed 65535.
pub fn grow_payload_len(packet: &mut [u8], n: usize) -> Result<(), crate::stats::DropReason> {
    let old = u16::from_be_bytes([packet[4], packet[5]]) as usize;
    let new = old + n;
    if new > u16::MAX as usize {
        return Err(crate::stats::DropReason::TooBig);
    }
    packet[4..6].copy_from_slice(&(new as u16).to_be_bytes());
    Ok(())
}
