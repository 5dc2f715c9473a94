//! ARP packets received by the router (RFC 826, Ethernet/IPv4).
//!
//! A request for one of our IPv4 addresses is answered out of the interface it came in on (Linux's default
//! `arp_ignore = 0`: any local address, whatever interface holds it), from that interface's MAC to the requester's;
//! a request or reply with a usable sender becomes a [`NeighEvent`] (a reply confirms reachability). Requests for
//! other addresses, and replies, are taken in without an answer.

use super::Answer;
use crate::fib::DevId;
use crate::neigh::NeighEvent;
use crate::snapshot::Snapshot;
use crate::stats::DropReason;
use crate::wire::arp::{self, ArpRepr};
use crate::wire::ethernet::{self, EthernetRepr};
use std::net::IpAddr;

/// Processes the ARP payload `body` of a frame received on `in_dev`.
pub fn receive(
    snap: &Snapshot,
    in_dev: DevId,
    body: &[u8],
    out: &mut Vec<u8>,
    events: Option<&mut Vec<NeighEvent>>,
) -> Result<Answer, DropReason> {
    let a = ArpRepr::parse(body).map_err(|_| DropReason::ArpInvalid)?;
    let s = a.sender_ip;
    // A sender that cannot be a neighbour (RFC 1122 §3.2.1.3 addresses; a multicast or broadcast MAC).
    if s.is_multicast() || s.is_loopback() || s.is_broadcast() || a.sender_mac[0] & 1 != 0 {
        return Err(DropReason::ArpInvalid);
    }
    let for_us = a.op == arp::OP_REQUEST && snap.is_local4(&a.target_ip);
    if !s.is_unspecified()
        && !snap.is_local4(&s)
        && let Some(ev) = events
    {
        ev.push(NeighEvent::Learned {
            dev: in_dev,
            addr: IpAddr::V4(s),
            mac: Some(a.sender_mac),
            confirmed: a.op == arp::OP_REPLY,
            overrides: true,
        });
    }
    if a.op == arp::OP_REQUEST && !for_us {
        return Err(DropReason::ArpOtherTarget);
    }
    if !for_us {
        return Ok(Answer::Consumed);
    }
    let mac = snap.links[in_dev].mac;
    const E: usize = ethernet::HEADER_LEN;
    out.clear();
    out.resize(E + arp::LEN, 0);
    EthernetRepr {
        dst: a.sender_mac,
        src: mac,
        ethertype: arp::ETHERTYPE_ARP,
    }
    .emit(out);
    ArpRepr {
        op: arp::OP_REPLY,
        sender_mac: mac,
        sender_ip: a.target_ip,
        target_mac: a.sender_mac,
        target_ip: s,
    }
    .emit(&mut out[E..]);
    Ok(Answer::Reply { len: E + arp::LEN })
}
