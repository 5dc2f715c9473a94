//! Lightweight tunnels attached to routes: `seg6`, `ioam6`, `rpl`.
//!
//! Every tunnel knows its overhead when it is installed ([`Tunnel::overhead`]), so the router reserves the
//! headroom once, before anything is written, and the encapsulation then only writes into that room.

pub mod ioam6;
pub mod rpl;
pub mod seg6;

pub use ioam6::Ioam6Tunnel;
pub use rpl::RplTunnel;
pub use seg6::Seg6Tunnel;

/// A tunnel as installed on a route.
#[derive(Debug, Clone)]
pub enum Tunnel {
    /// SRv6 encapsulation / insertion.
    Seg6(Seg6Tunnel),
    /// IOAM pre-allocated trace insertion.
    Ioam6(Ioam6Tunnel),
    /// RPL source routing header insertion.
    Rpl(RplTunnel),
}

impl Tunnel {
    /// The most bytes this tunnel ever adds in front of / inside a packet.
    pub fn overhead(&self) -> usize {
        match self {
            Tunnel::Seg6(t) => t.overhead(),
            Tunnel::Ioam6(t) => t.max_overhead(),
            Tunnel::Rpl(t) => t.max_overhead(),
        }
    }

    /// The headroom Linux reports for this tunnel (`lwtunnel_headroom`), which it subtracts from the route MTU.
    pub fn linux_mtu_headroom(&self) -> usize {
        match self {
            Tunnel::Seg6(t) => t.linux_headroom(),
            Tunnel::Ioam6(_) | Tunnel::Rpl(_) => 0,
        }
    }

    /// Short kind name ("seg6", "ioam6", "rpl").
    pub fn kind(&self) -> &'static str {
        match self {
            Tunnel::Seg6(_) => "seg6",
            Tunnel::Ioam6(_) => "ioam6",
            Tunnel::Rpl(_) => "rpl",
        }
    }

    /// Whether Linux applies it on the input path, before `ip6_forward` (seg6, rpl), rather than on output
    /// after forwarding (ioam6).
    pub fn on_input(&self) -> bool {
        !matches!(self, Tunnel::Ioam6(_))
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
