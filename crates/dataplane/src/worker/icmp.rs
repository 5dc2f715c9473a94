//! ICMPv6 and ICMPv4 errors about a packet, within the rate limits.

use super::local::echo;
use super::{Cx, Worker};
use crate::trace::Step;
use crate::wire::ethernet::{self, EthernetRepr};
use crate::wire::icmpv4::{self, Icmpv4Error};
use crate::wire::icmpv6::{self, IcmpError};
use crate::wire::{exthdr, ipv4, ipv6, proto};
use std::net::{IpAddr, Ipv4Addr};

impl Worker {
    /// The ICMP error for a queued frame whose next hop never answered: address unreachable (ICMPv6 code 3,
    /// RFC 4443 §3.1) or host unreachable (ICMPv4 code 1). Linux quotes the packet as it was about to leave: the
    /// quoted hop limit (TTL, with its checksum) is one less than received. (Tunnel headers added on the way are
    /// not in the quote: docs/linux-compat.md.)
    pub(super) fn unreachable_about(&mut self, cx: &mut Cx<'_, '_>, frame: &[u8]) {
        let Ok(eth) = ethernet::Frame::new_checked(frame) else {
            return;
        };
        let mut ip = frame[ethernet::HEADER_LEN..].to_vec();
        match eth.ethertype() {
            ethernet::ETHERTYPE_IPV6 if ipv6::Packet::new_checked(&ip[..]).is_ok() => {
                let len =
                    ipv6::HEADER_LEN + ipv6::Packet::new_unchecked(&ip[..]).payload_len() as usize;
                ip[7] = ip[7].saturating_sub(1);
                self.icmp_error(cx, &ip[..len], IcmpError::DestUnreachable { code: 3 });
            }
            ethernet::ETHERTYPE_IPV4 => {
                if let Ok(mut p) = ipv4::Packet::new_checked(&mut ip[..]) {
                    let len = p.total_len() as usize;
                    p.decrement_ttl();
                    self.icmp4_error(cx, &ip[..len], Icmpv4Error::DestUnreachable { code: 1 });
                }
            }
            _ => {}
        }
    }

    /// Whether the rate limits (if any) let an ICMP error go to `to` at `now`; counts the refusals.
    fn icmp_allowed(&mut self, to: IpAddr, now: u64) -> bool {
        let allowed = self.icmp_limiter.as_mut().is_none_or(|l| l.allow(to, now));
        if !allowed {
            self.stats.icmp_limited += 1;
        }
        allowed
    }

    /// Sends an ICMPv4 error about `invoking` (an IPv4 datagram as received) to its source, unless RFC 1812
    /// §4.3.2.7 forbids it: about an ICMP error, a non-initial fragment, or a source that is not a unicast
    /// host address (unspecified, loopback, multicast, broadcast, class E). Source address: the egress interface's
    /// address on the sender's subnet, else its first (Linux selects it from the route back, its default
    /// `icmp_errors_use_inbound_ifaddr = 0`); type of service: the invoking one's with precedence internetwork
    /// control; TTL 64; DF clear. Not rate limited (as the ICMPv6 errors; docs/linux-compat.md).
    #[inline(never)]
    pub(super) fn icmp4_error(&mut self, cx: &mut Cx<'_, '_>, invoking: &[u8], err: Icmpv4Error) {
        let snap = cx.snap;
        let p = ipv4::Packet::new_unchecked(invoking);
        let to = p.src_addr();
        note!(cx, |t| { t.push(Step::icmp4(&err, to.into())) });
        let o = to.octets();
        if to.is_unspecified()
            || to.is_loopback()
            || to.is_multicast()
            || to.is_broadcast()
            || o[0] >= 240
            || snap.local4.contains(&to)
            || p.flags_frag() & 0x1fff != 0
        {
            return;
        }
        if p.protocol() == icmpv4::PROTO_ICMP
            && p.payload()
                .first()
                .is_some_and(|t| icmpv4::is_error_type(*t))
        {
            return;
        }
        let Some(route) = snap.fib().lookup_v4(to) else {
            return;
        };
        let Some(dev) = route.dev.get() else { return };
        if !self.icmp_allowed(IpAddr::V4(to), cx.ts) {
            return;
        }
        let in_subnet = |(a, len): &(Ipv4Addr, u8)| {
            let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
            u32::from(*a) & mask == u32::from(to) & mask
        };
        let addrs = &snap.links[dev].addrs4;
        let Some(&(src, _)) = addrs.iter().find(|a| in_subnet(a)).or(addrs.first()) else {
            return;
        };
        let ip = icmpv4::IpFields {
            tos: icmpv4::TOS_INTERNETWORK_CONTROL | (p.tos() & 0x1e),
            ident: self.ip_ident,
            ttl: echo::IPV4_TTL,
        };
        let mut buf = std::mem::take(&mut self.icmp_big);
        buf.resize(icmpv4::error_len(invoking.len()), 0);
        let len = icmpv4::emit_error(&mut buf, src, to, ip, err, invoking);
        let miss = self.miss;
        if self.send_originated4(cx, to, &buf[..len]).is_ok() {
            self.ip_ident = self.ip_ident.wrapping_add(1);
            self.stats.icmp_tx += 1;
        }
        // A next hop the error could not reach is not the packet's own.
        self.miss = miss;
        self.icmp_big = buf;
    }

    /// Sends an ICMPv6 error about `invoking` (an IPv6 packet) back to its source, if that is possible and allowed
    /// (RFC 4443 §2.4 (e): never about an ICMPv6 error, a multicast or unspecified source, or our own packets).
    pub(super) fn icmp_error(&mut self, cx: &mut Cx<'_, '_>, invoking: &[u8], err: IcmpError) {
        let snap = cx.snap;
        let p = ipv6::Packet::new_unchecked(invoking);
        let to = p.src_addr();
        note!(cx, |t| { t.push(Step::icmp6(&err, to.into())) });
        if to.is_unspecified() || to.is_multicast() || snap.local6.contains(&to) {
            return;
        }
        if let Ok(c) = exthdr::chain(invoking)
            && c.upper_proto == proto::ICMPV6
            && invoking.get(c.upper_offset).is_some_and(|t| *t < 128)
        {
            return;
        }
        let Some(route) = snap.fib().lookup_v6(to) else {
            return;
        };
        let Some(dev) = route.dev.get() else { return };
        // RFC 4443 §2.2 (a), as Linux does: an error about a packet sent to one of our unicast addresses comes
        // from that address (after a routing header, the destination it holds now: tests/hostile,
        // `*-next-local-hlim-1`). Otherwise Linux selects the source as if the error left by the interface the
        // invoking packet came in on (it usually does): tests/kernel/test_forbidden.py has a case where the two
        // differ.
        let dst = p.dst_addr();
        let src = if snap.local6.contains(&dst) {
            dst
        } else {
            let Some(src) = snap.source_for(Some(cx.in_dev), &to) else {
                return;
            };
            src
        };
        let nh = match route.via {
            Some(IpAddr::V6(gw)) => gw,
            _ => to,
        };
        if !self.icmp_allowed(IpAddr::V6(to), cx.ts) {
            return;
        }
        let miss = self.miss;
        let mac = self.neighbour_mac(snap, dev, IpAddr::V6(nh));
        // A next hop the error could not reach is not the packet's own.
        self.miss = miss;
        let Ok(mac) = mac else {
            return;
        };
        let hl = snap.links[dev].sysctl.hop_limit;
        let len = icmpv6::emit(
            &mut self.icmp[ethernet::HEADER_LEN..],
            src,
            to,
            hl,
            err,
            invoking,
        );
        EthernetRepr {
            dst: mac,
            src: snap.links[dev].mac,
            ethertype: ethernet::ETHERTYPE_IPV6,
        }
        .emit(&mut self.icmp[..ethernet::HEADER_LEN]);
        cx.send(dev, &self.icmp[..ethernet::HEADER_LEN + len]);
        self.stats.icmp_tx += 1;
    }
}
