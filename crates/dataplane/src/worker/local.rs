//! Packets addressed to this node: local routing headers (RPL, SRH) and seg6local SIDs, then delivery — neighbour
//! discovery, ARP, echo requests — for what is left.

mod arp;
pub(super) mod echo;
mod nd;

use super::{Cx, L3, Outcome, Verdict, Worker, is_link_local};
use crate::buffer::PacketBuf;
use crate::hop::rpl::RplAction;
use crate::hop::srh::SrhAction;
use crate::hop::{rpl as hop_rpl, srh as hop_srh};
use crate::spec::MAIN_TABLE;
use crate::stats::DropReason;
use crate::trace::Step;
use crate::tunnel::Tunnel;
use crate::wire::ethernet::{self, EthernetRepr};
use crate::wire::icmpv6::{self, IcmpError};
use crate::wire::{exthdr, ipv4, ipv6, ndp, proto, rpl, srh};
use std::net::{IpAddr, Ipv4Addr};

/// What a neighbour-protocol message addressed to this node (an NDP solicitation or advertisement, an ARP packet) led
/// to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A reply to send out of the ingress interface: the first `len` bytes of the output buffer, a whole Ethernet
    /// frame.
    Reply {
        /// Frame length.
        len: usize,
    },
    /// Taken in (what it taught is a neighbour event), nothing to send.
    Consumed,
}

/// A routing header processed here, as the trace shows it: Segments Left, the destination and the header's length
/// after processing (`len`: before).
fn routing_step(
    kind: &'static str,
    action: &'static str,
    pkt: &[u8],
    rh: usize,
    len: usize,
) -> Step {
    Step::RoutingHeader {
        kind,
        action,
        segments_left: pkt.get(rh + 3).copied().unwrap_or(0),
        dst: ipv6::Packet::new_unchecked(pkt).dst_addr(),
        len_before: len,
        len_after: pkt.get(rh + 1).map_or(0, |l| (usize::from(*l) + 1) * 8),
    }
}

impl Worker {
    /// The extension headers of a packet addressed to us, as Linux reads them: up to the first routing header
    /// (what follows it is for the next segment), Destination Options in front of it checked
    /// ([`Self::check_options`]), a Hop-by-Hop header anywhere but first answered with Parameter Problem code 1
    /// pointing at the Next Header field that names it (RFC 8200 §4.1).
    pub(super) fn local_chain(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &PacketBuf,
    ) -> Result<exthdr::Chain, DropReason> {
        let mut chain = exthdr::Chain::default();
        let mut next_header_at = 6;
        let mut walk = exthdr::Walker::new(buf.data());
        for h in walk.by_ref() {
            let Ok(h) = h else {
                if next_header_at != 6 && buf.data()[next_header_at] == proto::HOPOPTS {
                    let pointer = next_header_at as u32;
                    let err = IcmpError::ParamProblem { code: 1, pointer };
                    self.icmp_error(cx, buf.data(), err);
                }
                return Err(DropReason::ExtHeaderMalformed);
            };
            next_header_at = h.offset;
            match h.kind {
                proto::HOPOPTS => chain.hop_by_hop = Some(h),
                proto::DSTOPTS => self.check_options(cx, buf, h)?,
                proto::FRAGMENT => chain.fragment = true,
                proto::ROUTING => {
                    chain.routing = Some(h);
                    chain.routing_type = Some(buf.data()[h.offset + 2]);
                    return Ok(chain);
                }
                _ => {}
            }
        }
        (chain.upper_proto, chain.upper_offset) = walk.upper_layer();
        Ok(chain)
    }

    /// A packet addressed to one of our addresses: routing headers are processed, the rest cannot be delivered.
    pub(super) fn local_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        chain: exthdr::Chain,
        pass: usize,
    ) -> Verdict {
        let (snap, in_dev) = (cx.snap, cx.in_dev);
        let Some(rh) = chain.routing else {
            return self.local_deliver6(cx, buf, chain, pass);
        };
        if cx.group {
            return Err(DropReason::GroupAddressedFrame);
        }
        let dev = snap.links[in_dev].sysctl;
        match chain.routing_type {
            Some(rpl::ROUTING_TYPE) => {
                if !(snap.all.rpl_seg_enabled && dev.rpl_seg_enabled) {
                    return Err(DropReason::RplDisabled);
                }
                let local6 = &snap.local6;
                let action = hop_rpl::process(buf, rh.offset, &|a| local6.contains(a))?;
                note!(cx, b = &*buf, |t| {
                    let what = match action {
                        RplAction::Deliver => "deliver",
                        RplAction::Decap { .. } => "decap",
                        RplAction::ParamProblem { .. } => "param_problem",
                        RplAction::Forward => "forward",
                    };
                    t.push(routing_step("rpl", what, b.data(), rh.offset, rh.len))
                });
                match action {
                    RplAction::Deliver => Err(DropReason::LocalDelivery),
                    RplAction::Decap { inner_offset } => {
                        buf.pull_front(inner_offset)
                            .map_err(|_| DropReason::RplMalformed)?;
                        self.ipv6_in(cx, buf, pass + 1, None)
                    }
                    RplAction::ParamProblem { pointer, reason } => {
                        self.icmp_error(
                            cx,
                            buf.data(),
                            IcmpError::ParamProblem { code: 0, pointer },
                        );
                        Err(reason)
                    }
                    RplAction::Forward => self.after_local_rh(cx, buf, pass),
                }
            }
            Some(srh::ROUTING_TYPE) => {
                if !(snap.all.seg6_enabled && dev.seg6_enabled) {
                    return Err(DropReason::Seg6Disabled);
                }
                hop_srh::check_hmac(buf.data(), rh.offset, dev.seg6_require_hmac, &snap.hmac)?;
                let action = hop_srh::process(buf, rh.offset)?;
                note!(cx, b = &*buf, |t| {
                    let what = match action {
                        SrhAction::Deliver => "deliver",
                        SrhAction::Decap { .. } => "decap",
                        SrhAction::ParamProblem { .. } => "param_problem",
                        SrhAction::Forward => "forward",
                    };
                    t.push(routing_step("srh", what, b.data(), rh.offset, rh.len))
                });
                match action {
                    SrhAction::Deliver => Err(DropReason::LocalDelivery),
                    SrhAction::Decap {
                        inner_offset,
                        proto: p,
                    } => {
                        buf.pull_front(inner_offset)
                            .map_err(|_| DropReason::SrhMalformed)?;
                        if p == proto::IPV6 {
                            self.ipv6_in(cx, buf, pass + 1, None)
                        } else {
                            self.ipv4_in(cx, buf)
                        }
                    }
                    SrhAction::ParamProblem { pointer } => {
                        self.icmp_error(
                            cx,
                            buf.data(),
                            IcmpError::ParamProblem { code: 0, pointer },
                        );
                        Err(DropReason::SrhMalformed)
                    }
                    SrhAction::Forward => self.after_local_rh(cx, buf, pass),
                }
            }
            // RFC 8200 §4.4: an unrecognised Routing Type with Segments Left 0 is ignored (what follows is for
            // us: no host stack); otherwise Parameter Problem code 0 pointing at the Routing Type, as Linux does.
            _ if buf.data()[rh.offset + 3] == 0 => Err(DropReason::LocalDelivery),
            _ => {
                let pointer = (rh.offset + 2) as u32;
                let err = IcmpError::ParamProblem { code: 0, pointer };
                self.icmp_error(cx, buf.data(), err);
                Err(DropReason::UnknownRoutingType)
            }
        }
    }

    /// After a routing header advanced the destination: local again → hop limit check, decrement and process
    /// again; otherwise forward.
    fn after_local_rh(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, pass: usize) -> Verdict {
        let snap = cx.snap;
        let p = ipv6::Packet::new_unchecked(buf.data());
        let dst = p.dst_addr();
        if snap.local6.contains(&dst) {
            if p.hop_limit() <= 1 {
                self.icmp_error(cx, buf.data(), IcmpError::TimeExceeded { code: 0 });
                return Err(DropReason::HopLimitExceeded);
            }
            buf.data_mut()[7] -= 1;
            let chain = self.local_chain(cx, buf)?;
            return self.local_in(cx, buf, chain, pass + 1);
        }
        // Linux routes the new destination as a received packet: multicast is delivered to the (absent)
        // listeners, a link-local one goes back out the link it came from; neither is forwarded.
        if dst.is_multicast() {
            return Err(DropReason::Multicast);
        }
        if is_link_local(&dst) {
            return Err(DropReason::ScopeViolation);
        }
        let route = snap.fib().lookup_v6(dst);
        note!(cx, |t| t.push(Step::route(
            snap,
            "next segment",
            MAIN_TABLE,
            dst.into(),
            route
        )));
        let Some(route) = route else {
            self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code: 0 });
            return Err(DropReason::NoRoute);
        };
        if let Some(tid) = route.tunnel.get()
            && let Tunnel::Local(_) = &snap.tunnels[tid]
        {
            return self.seg6local_in(cx, buf, tid, pass + 1);
        }
        self.forward(cx, buf, route, L3::V6)
    }

    /// An ARP packet: answered when it asks for one of our addresses, learned from when resolving.
    #[inline(never)]
    pub(super) fn arp_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf) -> Verdict {
        let mut reply = std::mem::take(&mut self.reply);
        let events = self.event_sink();
        let r = arp::receive(cx.snap, cx.in_dev, buf.data(), &mut reply, events);
        self.answer(cx, reply, r)
    }

    /// Carries out what an NDP or ARP message led to: its reply (in `reply`, the worker's reply buffer, given
    /// back) out of the ingress interface, or the packet counted as consumed.
    fn answer(
        &mut self,
        cx: &mut Cx<'_, '_>,
        reply: Vec<u8>,
        r: Result<Answer, DropReason>,
    ) -> Verdict {
        let r = match r {
            Ok(Answer::Reply { len }) => {
                cx.send(cx.in_dev, &reply[..len]);
                Ok(())
            }
            Ok(Answer::Consumed) => {
                self.outcome = Outcome::Consumed;
                Ok(())
            }
            Err(e) => Err(e),
        };
        self.reply = reply;
        r
    }

    /// A Neighbor Solicitation or Advertisement (its ICMPv6 message at `icmp_at`).
    #[inline(never)]
    pub(super) fn ndp_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        icmp_at: usize,
    ) -> Verdict {
        let mut reply = std::mem::take(&mut self.reply);
        let eth_src = self.eth_src;
        let events = self.event_sink();
        let r = nd::receive(
            cx.snap,
            cx.in_dev,
            eth_src,
            buf.data(),
            icmp_at,
            &mut reply,
            events,
        );
        self.answer(cx, reply, r)
    }

    /// A packet for one of our IPv6 addresses without a routing header: neighbour discovery and echo requests are
    /// answered; there is no host stack for the rest.
    #[inline(never)]
    fn local_deliver6(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        chain: exthdr::Chain,
        pass: usize,
    ) -> Verdict {
        if chain.upper_proto != proto::ICMPV6 || pass > 0 {
            return Err(DropReason::LocalDelivery);
        }
        let at = chain.upper_offset;
        match buf.data().get(at).copied() {
            Some(ndp::TYPE_NEIGHBOR_SOLICIT | ndp::TYPE_NEIGHBOR_ADVERT) => {
                self.ndp_in(cx, buf, at)
            }
            Some(icmpv6::TYPE_ECHO_REQUEST) => self.echo6_in(cx, buf, at),
            _ => Err(DropReason::LocalDelivery),
        }
    }

    /// An ICMPv6 echo request to us: the reply goes back along the route to its source.
    #[inline(never)]
    fn echo6_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, at: usize) -> Verdict {
        let snap = cx.snap;
        debug_assert!(echo::is_request6(buf.data(), at));
        let to = ipv6::Packet::new_unchecked(buf.data()).src_addr();
        let route = snap.fib().lookup_v6(to).ok_or(DropReason::NoRoute)?;
        let dev = route.dev.get().ok_or(DropReason::NoRoute)?;
        let nh = match route.via {
            Some(IpAddr::V6(gw)) => gw,
            _ => to,
        };
        let mac = self.neighbour_mac(snap, dev, IpAddr::V6(nh))?;
        let mut reply = std::mem::take(&mut self.reply);
        reply.resize(ethernet::HEADER_LEN, 0);
        let mut ip = std::mem::take(&mut self.icmp_big);
        let r = echo::reply6(buf.data(), at, snap.links[dev].sysctl.hop_limit, &mut ip);
        if let Ok(len) = r {
            EthernetRepr {
                dst: mac,
                src: snap.links[dev].mac,
                ethertype: ethernet::ETHERTYPE_IPV6,
            }
            .emit(&mut reply);
            reply.extend_from_slice(&ip[..len]);
            cx.send(dev, &reply);
        }
        self.reply = reply;
        self.icmp_big = ip;
        r.map(|_| ())
    }

    /// An ICMP message to one of our IPv4 addresses: echo requests are answered along the route to the source.
    #[inline(never)]
    pub(super) fn echo4_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf) -> Verdict {
        let to = ipv4::Packet::new_unchecked(buf.data()).src_addr();
        let mut ip = std::mem::take(&mut self.icmp_big);
        let ident = self.ip_ident;
        let r = echo::reply4(buf.data(), ident, &mut ip);
        let len = match r {
            Ok(Some(len)) => len,
            Ok(None) => {
                self.icmp_big = ip;
                return Err(DropReason::LocalDelivery);
            }
            Err(e) => {
                self.icmp_big = ip;
                return Err(e);
            }
        };
        let r = self.send_originated4(cx, to, &ip[..len]);
        self.icmp_big = ip;
        if r.is_ok() {
            self.ip_ident = self.ip_ident.wrapping_add(1);
        }
        r
    }

    /// Sends an IPv4 datagram this node originates along the route to `to`.
    pub(super) fn send_originated4(
        &mut self,
        cx: &mut Cx<'_, '_>,
        to: Ipv4Addr,
        dgram: &[u8],
    ) -> Verdict {
        let snap = cx.snap;
        let route = snap.fib().lookup_v4(to).ok_or(DropReason::NoRoute)?;
        let dev = route.dev.get().ok_or(DropReason::NoRoute)?;
        let nh = match route.via {
            Some(IpAddr::V4(gw)) => gw,
            _ => to,
        };
        let mac = self.neighbour_mac(snap, dev, IpAddr::V4(nh))?;
        let mut reply = std::mem::take(&mut self.reply);
        reply.resize(ethernet::HEADER_LEN, 0);
        EthernetRepr {
            dst: mac,
            src: snap.links[dev].mac,
            ethertype: ethernet::ETHERTYPE_IPV4,
        }
        .emit(&mut reply);
        reply.extend_from_slice(dgram);
        cx.send(dev, &reply);
        self.reply = reply;
        Ok(())
    }
}
