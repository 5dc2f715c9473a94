//! Neighbor Solicitations and Advertisements received by the router (RFC 4861 §7.1, §7.2.3–§7.2.5).
//!
//! A valid solicitation for an address of the interface it arrived on is answered at once with an advertisement
//! out of that interface, as Linux answers it: from the target address, hop limit 255, the Router flag when
//! forwarding is on; solicited (S) and unicast to the soliciting node, or to all nodes (ff02::1) without S when
//! the solicitation came from the unspecified address (duplicate address detection); Override (O) and the target
//! link-layer option only when the solicitation was multicast (Linux omits both in answers to unicast probes,
//! which RFC 4861 §7.2.4 allows). The Ethernet destination is the solicitation's source link-layer option, else
//! the frame's source address. Its source link-layer option, and every valid advertisement, become
//! [`NeighEvent`]s. Anything else (checks of §7.1.1 / §7.1.2 failing) is a named drop.

use super::Answer;
use crate::fib::DevId;
use crate::neigh::NeighEvent;
use crate::snapshot::Snapshot;
use crate::stats::DropReason;
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::ipv6;
use crate::wire::ndp::{self, Kind, NdRepr};
use std::net::{IpAddr, Ipv6Addr};

/// Processes an NS or NA. `ip` is the IPv6 packet (trimmed to its payload length), `icmp_at` where the ICMPv6
/// message starts in it, `eth_src` the frame's source address. A reply is written into `out` (grown as needed);
/// what was learned is pushed to `events` when given.
pub fn receive(
    snap: &Snapshot,
    in_dev: DevId,
    eth_src: Mac,
    ip: &[u8],
    icmp_at: usize,
    out: &mut Vec<u8>,
    events: Option<&mut Vec<NeighEvent>>,
) -> Result<Answer, DropReason> {
    let p = ipv6::Packet::new_unchecked(ip);
    let (src, dst) = (p.src_addr(), p.dst_addr());
    // §7.1.1 / §7.1.2: hop limit 255 (the message cannot have been forwarded).
    if p.hop_limit() != ndp::HOP_LIMIT {
        return Err(DropReason::NdpInvalid);
    }
    let nd = NdRepr::parse(&src, &dst, &ip[icmp_at..]).map_err(|_| DropReason::NdpInvalid)?;
    match nd.kind {
        Kind::Solicit => solicit(snap, in_dev, eth_src, src, dst, &nd, out, events),
        Kind::Advert => {
            // §7.1.2: a multicast advertisement must not claim to be solicited.
            if dst.is_multicast() && nd.flags & ndp::FLAG_SOLICITED != 0 {
                return Err(DropReason::NdpInvalid);
            }
            if snap.is_local6(&nd.target) {
                // Someone advertises one of our addresses: nothing to learn.
                return Ok(Answer::Consumed);
            }
            if let Some(ev) = events {
                ev.push(NeighEvent::Learned {
                    dev: in_dev,
                    addr: IpAddr::V6(nd.target),
                    mac: nd.lladdr,
                    confirmed: nd.flags & ndp::FLAG_SOLICITED != 0,
                    overrides: nd.flags & ndp::FLAG_OVERRIDE != 0,
                });
            }
            Ok(Answer::Consumed)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn solicit(
    snap: &Snapshot,
    in_dev: DevId,
    eth_src: Mac,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    nd: &NdRepr,
    out: &mut Vec<u8>,
    events: Option<&mut Vec<NeighEvent>>,
) -> Result<Answer, DropReason> {
    let dad = src.is_unspecified();
    // §7.1.1: from the unspecified address, only to a solicited-node group and without a source link-layer
    // option. A multicast solicitation goes to a solicited-node group.
    if (dad && (!ndp::is_solicited_node(&dst) || nd.lladdr.is_some()))
        || (dst.is_multicast() && !ndp::is_solicited_node(&dst))
    {
        return Err(DropReason::NdpInvalid);
    }
    let link = &snap.links[in_dev];
    if !link.addrs6.iter().any(|(a, _)| *a == nd.target) {
        return Err(DropReason::NdpOtherTarget);
    }
    if !dad && let (Some(mac), Some(ev)) = (nd.lladdr, events) {
        ev.push(NeighEvent::Learned {
            dev: in_dev,
            addr: IpAddr::V6(src),
            mac: Some(mac),
            confirmed: false,
            overrides: true,
        });
    }
    let multicast = dst.is_multicast();
    let router = if snap.all.forwarding {
        ndp::FLAG_ROUTER
    } else {
        0
    };
    let (to, to_mac, flags) = if dad {
        let all = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
        (all, ndp::multicast_mac(&all), router | ndp::FLAG_OVERRIDE)
    } else {
        let o = if multicast { ndp::FLAG_OVERRIDE } else { 0 };
        (
            src,
            nd.lladdr.unwrap_or(eth_src),
            router | ndp::FLAG_SOLICITED | o,
        )
    };
    let na = NdRepr {
        kind: Kind::Advert,
        flags,
        target: nd.target,
        lladdr: (dad || multicast).then_some(link.mac),
    };
    const E: usize = ethernet::HEADER_LEN;
    out.clear();
    out.resize(E + ipv6::HEADER_LEN + na.icmp_len(), 0);
    EthernetRepr {
        dst: to_mac,
        src: link.mac,
        ethertype: ethernet::ETHERTYPE_IPV6,
    }
    .emit(out);
    let len = E + na.emit(&mut out[E..], nd.target, to);
    Ok(Answer::Reply { len })
}
