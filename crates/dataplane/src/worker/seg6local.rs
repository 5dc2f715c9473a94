//! The handlers of the seg6local behaviours (the rows of [`crate::tunnel::seg6local::BEHAVIOURS`]), on the general
//! path, bound to their actions by [`handler`]: each checks what Linux's `seg6_local.c` checks, changes the packet
//! (the byte work is in [`crate::tunnel::seg6local`]), then hands it to a lookup (main table, table T), to a neighbour (nh6, nh4), out of
//! an interface (End.DX2), or back into the pipeline. Every failure is a named [`DropReason`].

use super::{Cx, L3, MAX_PASSES, RouteHint, Verdict, Worker};
use crate::buffer::PacketBuf;
use crate::copy::copy_bytes;
use crate::fib::DevId;
use crate::fib::{OptId, Origin, RouteEntry, TunnelId};
use crate::hop::srh as hop_srh;
use crate::plan::{Plan, PlanKind};
use crate::snapshot::Snapshot;
use crate::spec::Seg6LocalAction;
use crate::spec::{MAIN_TABLE, flavor};
use crate::stats::DropReason;
use crate::trace::Step;
use crate::tunnel::Tunnel;
use crate::tunnel::seg6local::{self as s6l, Seg6Local};
use crate::wire::icmpv6::IcmpError;
use crate::wire::{exthdr, ipv4, ipv6, proto};
use ipnet::{IpNet, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where an End-family behaviour sends the packet after the SRH work.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// Look the new destination up in this table (End: main, End.T: T).
    Table(u32),
    /// To this IPv6 neighbour (End.X).
    Nh6(Ipv6Addr),
}

/// A route towards a fixed IPv6 next hop, with no tunnel: the way End.X and End.DX6 forward (Linux looks `nh` up
/// with `FLOWI_FLAG_KNOWN_NH`, so `nh` is the neighbour even on a connected route).
fn towards(base: &RouteEntry, nh: IpAddr) -> RouteEntry {
    RouteEntry {
        via: Some(base.via.unwrap_or(nh)),
        tunnel: OptId::NONE,
        plan: None,
        ..base.clone()
    }
}

/// The trace's step for an SRH advanced from Segments Left `sl` (the packet's destination is the next segment).
fn advanced(sl: u8, pkt: &[u8]) -> Step {
    Step::SrhAdvance {
        segments_left: sl,
        dst: s6l::dst_of(pkt),
    }
}

/// Whether an address is one the fast path leaves to the general path: multicast, link-local, or in ::/8.
#[inline(always)]
fn special(a: &[u8]) -> bool {
    let hi = u16::from_be_bytes([a[0], a[1]]);
    hi >= 0xff00 || hi & 0xffc0 == 0xfe80 || hi < 0x0100
}

/// The way out's template: an Ethernet header (the plans of End.X, End.DX6 and plain forwarding) as one
/// fixed-size move, without a call.
#[inline(always)]
fn copy_template(dst: &mut [u8], template: &[u8]) {
    const E: usize = 14;
    match (dst.first_chunk_mut::<E>(), template.first_chunk::<E>()) {
        (Some(d), Some(t)) if template.len() == E => *d = *t,
        _ => copy_bytes(dst, template),
    }
}

impl Worker {
    /// The fast path of the seg6local plans ([`PlanKind::End`], [`PlanKind::EndX`], [`PlanKind::EndDx6`]): the
    /// packet is checked as the general path checks it (anything it would treat otherwise — TLVs, an HMAC
    /// requirement, a hop limit running out, a next SID that is not a plain route — goes to the general path, with
    /// nothing changed), then copied once behind the way out's Ethernet template and patched. `frame` passed the
    /// fast path's common checks (our MAC, IPv6, no Hop-by-Hop, hop limit above 1, ordinary addresses).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn fast_local<'s>(
        &mut self,
        snap: &'s Snapshot,
        in_dev: DevId,
        ts: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
        plan: &Plan,
        hint: Option<RouteHint<'s>>,
    ) -> Result<(), Option<RouteHint<'s>>> {
        const E: usize = 14;
        const H: usize = ipv6::HEADER_LEN;
        let ip = &frame[E..];
        let len = H + u16::from_be_bytes([ip[4], ip[5]]) as usize;
        if plan.contains_local && snap.local6.contains(&s6l::dst_of(ip)) {
            return Err(hint);
        }
        // An HMAC the interface requires is checked on the general path.
        if snap.links[in_dev].sysctl.seg6_require_hmac > 0 || len < H + 8 {
            return Err(hint);
        }
        // An SRH right after the IPv6 header, without TLVs (then Linux's validation reduces to these checks).
        let srh_len = (usize::from(ip[H + 1]) + 1) * 8;
        let (sl, le) = (usize::from(ip[H + 3]), usize::from(ip[H + 4]));
        let plain_srh = ip[6] == proto::ROUTING
            && ip[H + 2] == 4
            && srh_len == 8 + 16 * (le + 1)
            && H + srh_len <= len;
        let start = self.rx_headroom & !63;
        match plan.kind {
            PlanKind::End | PlanKind::EndX => {
                if !plain_srh || sl == 0 || sl > le + 1 {
                    return Err(hint);
                }
                let seg = H + 8 + 16 * (sl - 1);
                let next = &ip[seg..seg + 16];
                let way = if plan.kind == PlanKind::EndX {
                    plan
                } else {
                    // The next SID must lead to plain forwarding (not to another SID or tunnel), by a route with
                    // none of our addresses inside (so it is not ours either, with no hash lookup).
                    if special(next) {
                        return Err(hint);
                    }
                    let nd = Ipv6Addr::from(<[u8; 16]>::try_from(next).expect("16 bytes"));
                    match snap
                        .fib()
                        .best_v6(nd)
                        .and_then(|b| snap.plan(b.plan_or_max()))
                    {
                        Some(p) if p.kind == PlanKind::Forward && !p.contains_local => p,
                        _ => return Err(hint),
                    }
                };
                if len > way.max_len {
                    return Err(hint);
                }
                let template = snap.template(way);
                let t = template.len();
                let data = self.buf.place(start, t + len);
                copy_bytes(&mut data[t..], &ip[..len]);
                copy_template(&mut data[..t], template);
                data[t + 7] = ip[7] - 1;
                data[t + 24..t + 40].copy_from_slice(next);
                data[t + H + 3] = (sl - 1) as u8;
                out(way.egress, ts, data);
            }
            PlanKind::EndDx6 => {
                let at = match ip[6] {
                    proto::IPV6 => H,
                    proto::ROUTING if plain_srh && sl == 0 && ip[H] == proto::IPV6 => H + srh_len,
                    _ => return Err(hint),
                };
                let inner = &ip[at..len];
                if inner.len() < H || inner[0] >> 4 != 6 || inner[7] <= 1 {
                    return Err(hint);
                }
                let ilen = H + u16::from_be_bytes([inner[4], inner[5]]) as usize;
                if ilen > inner.len() || ilen > plan.max_len {
                    return Err(hint);
                }
                let template = snap.template(plan);
                let t = template.len();
                let data = self.buf.place(start, t + ilen);
                copy_bytes(&mut data[t..], &inner[..ilen]);
                copy_template(&mut data[..t], template);
                data[t + 7] = inner[7] - 1;
                out(plan.egress, ts, data);
            }
            _ => return Err(hint),
        }
        self.fast_sent += 1;
        Ok(())
    }

    /// A packet whose route carries the seg6local behaviour `tid`: runs its handler and counts the result in the
    /// route's counters when it has `count` (packets and bytes, as received, for packets processed correctly;
    /// errors for the others).
    pub(super) fn seg6local_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        tid: TunnelId,
        pass: usize,
    ) -> Verdict {
        if pass >= MAX_PASSES {
            return Err(DropReason::TunnelLoop);
        }
        let snap = cx.snap;
        let Some(Tunnel::Local(l)) = snap.tunnels.get(tid) else {
            return Err(DropReason::NoRoute);
        };
        let len = buf.len() as u64;
        note!(cx, |t| {
            t.push(Step::Seg6Local {
                behaviour: l.behaviour.name,
                action: l.iproute2(),
            })
        });
        self.unreachable_sent = false;
        let verdict = handler(l.behaviour.action)(self, cx, buf, l, pass);
        // An IPv6 lookup that found no route answered with an ICMPv6 Destination Unreachable: Linux's behaviour
        // succeeded (the null route's input discards), and counts a packet.
        let processed = verdict.is_ok() || std::mem::take(&mut self.unreachable_sent);
        if l.spec.count {
            if self.stats.seg6local.len() <= tid {
                self.stats
                    .seg6local
                    .resize(snap.tunnels.len().max(tid + 1), Default::default());
            }
            let c = &mut self.stats.seg6local[tid];
            if processed {
                c.packets += 1;
                c.bytes += len;
            } else {
                c.errors += 1;
            }
        }
        verdict
    }

    /// The SRH check of the ingress interface's `seg6_require_hmac` on the SRH at `rh`.
    fn local_hmac(&self, cx: &Cx<'_, '_>, buf: &PacketBuf, rh: usize) -> Verdict {
        let require = cx.snap.links[cx.in_dev].sysctl.seg6_require_hmac;
        hop_srh::check_hmac(buf.data(), rh, require, &cx.snap.hmac)
    }

    /// The SRH of a behaviour that advances it (Linux `get_and_validate_srh`): the first one with Segments Left
    /// above 0, well formed, its HMAC valid as the ingress interface requires.
    fn active_srh(&self, cx: &Cx<'_, '_>, buf: &PacketBuf) -> Result<(usize, usize), DropReason> {
        let (rh, len) = match s6l::find_srh(buf.data(), true) {
            Ok(x) => x,
            // Linux skips an SRH whose Segments Left is 0 and finds none: named for what it is.
            Err(DropReason::Seg6LocalNoSrh)
                if s6l::find_srh(buf.data(), false)
                    .is_ok_and(|(rh, _)| buf.data()[rh + 3] == 0) =>
            {
                return Err(DropReason::Seg6LocalSegmentsLeft);
            }
            Err(e) => return Err(e),
        };
        self.local_hmac(cx, buf, rh)?;
        Ok((rh, len))
    }

    /// Decapsulation (Linux `decap_and_validate`): an SRH, if any, must have Segments Left 0 and a valid HMAC;
    /// the inner packet of protocol `inner` is then all that remains in `buf`.
    fn decap(&self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, inner: u8) -> Verdict {
        if let Ok((rh, _)) = s6l::find_srh(buf.data(), false)
            && buf.data()[rh + 3] == 0
        {
            self.local_hmac(cx, buf, rh)?;
        }
        let off = s6l::inner_offset(buf.data(), inner)?;
        buf.pull_front(off)
            .map_err(|_| DropReason::BufferPlanning)?;
        note!(cx, |t| {
            t.push(Step::Decap {
                inner: match inner {
                    proto::IPV6 => "ipv6",
                    proto::IPV4 => "ipv4",
                    _ => "ethernet",
                },
                removed: off,
            })
        });
        match inner {
            proto::IPV6 => {
                let p =
                    ipv6::Packet::new_checked(buf.data()).map_err(|_| DropReason::Ipv6Malformed)?;
                let total = ipv6::HEADER_LEN + p.payload_len() as usize;
                buf.truncate(total);
            }
            proto::IPV4 => {
                let p =
                    ipv4::Packet::new_checked(buf.data()).map_err(|_| DropReason::Ipv4Malformed)?;
                let total = p.total_len() as usize;
                buf.truncate(total);
            }
            _ => {}
        }
        Ok(())
    }

    /// The IPv6 packet in `buf` looked up in `table` (Linux `seg6_lookup_nexthop` with a table): a local SID
    /// there runs its behaviour; one of our addresses is delivered (another pass) only when `allow_local`
    /// (End.DT6), dropped otherwise as Linux's blackhole does; no route is an ICMPv6 Destination Unreachable.
    fn lookup_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        table: u32,
        pass: usize,
        allow_local: bool,
    ) -> Verdict {
        let snap = cx.snap;
        let dst = s6l::dst_of(buf.data());
        if snap.local6.contains(&dst) {
            if allow_local {
                return self.ipv6_in(cx, buf, pass + 1, None);
            }
            return Err(DropReason::Seg6LocalLocalDst);
        }
        if dst.is_multicast() {
            return Err(DropReason::Multicast);
        }
        let route = snap.table(table).and_then(|f| f.lookup_v6(dst));
        note!(cx, |t| t.push(Step::route(
            snap,
            "destination",
            table,
            dst.into(),
            route
        )));
        let Some(route) = route else {
            self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code: 0 });
            self.unreachable_sent = true;
            return Err(DropReason::NoRoute);
        };
        if let Some(t) = route.tunnel.get()
            && let Tunnel::Local(_) = &snap.tunnels[t]
        {
            return self.seg6local_in(cx, buf, t, pass + 1);
        }
        if let crate::fib::Origin::Reject(kind) = route.origin {
            return self.reject(cx, buf, kind, L3::V6);
        }
        self.forward(cx, buf, route, L3::V6)
    }

    /// The IPv4 packet in `buf` looked up in `table`.
    fn lookup_v4_in(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, table: u32) -> Verdict {
        let snap = cx.snap;
        let dst = ipv4::Packet::new_checked(buf.data())
            .map_err(|_| DropReason::Ipv4Malformed)?
            .dst_addr();
        if snap.local4.contains(&dst) {
            return Err(DropReason::LocalDelivery);
        }
        if dst.is_multicast() || dst.is_broadcast() {
            return Err(DropReason::Multicast);
        }
        let route = snap.table(table).and_then(|f| f.lookup_v4(dst));
        note!(cx, |t| t.push(Step::route(
            snap,
            "destination",
            table,
            dst.into(),
            route
        )));
        let route = route.ok_or(DropReason::NoRoute)?;
        if let crate::fib::Origin::Reject(kind) = route.origin {
            return self.reject(cx, buf, kind, L3::V4);
        }
        self.forward(cx, buf, route, L3::V4)
    }

    /// The IPv6 packet in `buf` to the neighbour `nh` (End.X, End.DX6): the route to `nh` (or `oif`) decides the
    /// interface, the next hop is `nh` itself unless that route has a gateway.
    fn send_to_nh6(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        l: &Seg6Local,
        nh: Ipv6Addr,
    ) -> Verdict {
        let snap = cx.snap;
        let nh_route = match l.oif {
            Some(_) => None,
            None => snap.fib().lookup_v6(nh),
        };
        note!(cx, |t| {
            if l.oif.is_none() {
                t.push(Step::route(snap, "nh6", MAIN_TABLE, nh.into(), nh_route))
            }
        });
        let route = match l.oif {
            Some(d) => RouteEntry {
                prefix: IpNet::V6(Ipv6Net::new(nh, 128).expect("/128")),
                via: Some(IpAddr::V6(nh)),
                dev: OptId::new(Some(d)),
                metric: 0,
                mtu: None,
                tunnel: OptId::NONE,
                origin: Origin::Static,
                line: 0,
                plan: None,
            },
            None => match nh_route {
                Some(r) => towards(r, IpAddr::V6(nh)),
                None => {
                    self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code: 0 });
                    self.unreachable_sent = true;
                    return Err(DropReason::NoRoute);
                }
            },
        };
        self.forward(cx, buf, &route, L3::V6)
    }

    fn go(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        l: &Seg6Local,
        next: Next,
        pass: usize,
    ) -> Verdict {
        match next {
            Next::Table(t) => self.lookup_in(cx, buf, t, pass, false),
            Next::Nh6(nh) => self.send_to_nh6(cx, buf, l, nh),
        }
    }

    /// USD at the last segment (RFC 8986 §4.16.3): an inner IPv6 or IPv4 packet is decapsulated and sent on as
    /// the behaviour sends (End: main table, End.T: table T, End.X: to nh6 for IPv6); anything else is for this
    /// node, which has no host stack.
    fn usd(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        l: &Seg6Local,
        next: Next,
        pass: usize,
    ) -> Verdict {
        let c = exthdr::chain(buf.data()).map_err(|_| DropReason::ExtHeaderMalformed)?;
        match c.upper_proto {
            proto::IPV6 => {
                self.decap(cx, buf, proto::IPV6)?;
                self.go(cx, buf, l, next, pass)
            }
            proto::IPV4 => {
                self.decap(cx, buf, proto::IPV4)?;
                let table = match next {
                    Next::Table(t) => t,
                    Next::Nh6(_) => MAIN_TABLE,
                };
                self.lookup_v4_in(cx, buf, table)
            }
            _ => Err(DropReason::LocalDelivery),
        }
    }

    /// End, End.X and End.T with their flavours: NEXT-C-SID first (RFC 9800 §4.1.1), then the SRH (RFC 8986
    /// §4.1, §4.2, §4.3), with PSP at the penultimate segment and USP / USD at the last (§4.16).
    fn end_family(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        l: &Seg6Local,
        next: Next,
        pass: usize,
    ) -> Verdict {
        let (ops, lblen, nflen) = l
            .spec
            .flavors
            .map_or((0, 0, 0), |f| (f.ops, f.lblen, f.nflen));
        if ops & flavor::NEXT_CSID != 0 {
            let mut d: [u8; 16] = buf.data()[24..40].try_into().expect("16 bytes");
            if s6l::next_csid_shift(&mut d, lblen, nflen) {
                buf.data_mut()[24..40].copy_from_slice(&d);
                note!(cx, |t| t.push(Step::NextCsid { dst: d.into() }));
                return self.go(cx, buf, l, next, pass);
            }
        }
        let ultimate = ops & (flavor::USP | flavor::USD) != 0;
        if !ultimate {
            let (rh, len) = self.active_srh(cx, buf)?;
            let sl = buf.data()[rh + 3];
            s6l::advance(buf.data_mut(), rh);
            note!(cx, b = &*buf, |t| t.push(advanced(sl, b.data())));
            if sl == 1 && ops & flavor::PSP != 0 {
                s6l::pop_srh(buf, rh, len)?;
                note!(cx, |t| t.push(Step::SrhPop { removed: len }));
            }
            return self.go(cx, buf, l, next, pass);
        }
        let (rh, len) = match s6l::find_srh(buf.data(), false) {
            Ok(x) => x,
            Err(DropReason::Seg6LocalNoSrh) if ops & flavor::USD != 0 => {
                return self.usd(cx, buf, l, next, pass);
            }
            Err(e) => return Err(e),
        };
        self.local_hmac(cx, buf, rh)?;
        let sl = buf.data()[rh + 3];
        if sl == 0 {
            if ops & flavor::USP != 0 {
                s6l::pop_srh(buf, rh, len)?;
                note!(cx, |t| t.push(Step::SrhPop { removed: len }));
            }
            if ops & flavor::USD != 0 {
                return self.usd(cx, buf, l, next, pass);
            }
            // USP alone: the next header is for this node.
            return Err(DropReason::LocalDelivery);
        }
        s6l::advance(buf.data_mut(), rh);
        note!(cx, b = &*buf, |t| t.push(advanced(sl, b.data())));
        if sl == 1 && ops & flavor::PSP != 0 {
            s6l::pop_srh(buf, rh, len)?;
            note!(cx, |t| t.push(Step::SrhPop { removed: len }));
        }
        self.go(cx, buf, l, next, pass)
    }

    /// Forwards the packet through the behaviour's SRH policy (End.B6: inserted; End.B6.Encaps(.Red): an outer
    /// header with it), as a seg6 tunnel on the route's device.
    fn via_policy(&mut self, cx: &mut Cx<'_, '_>, buf: &mut PacketBuf, l: &Seg6Local) -> Verdict {
        let tid = l.policy.ok_or(DropReason::NoRoute)?;
        let route = RouteEntry {
            prefix: IpNet::V6(Ipv6Net::default()),
            via: None,
            dev: OptId::new(l.dev),
            metric: 0,
            mtu: None,
            tunnel: OptId::new(Some(tid)),
            origin: Origin::Static,
            line: 0,
            plan: None,
        };
        self.forward(cx, buf, &route, L3::V6)
    }
}

/// A seg6local behaviour's handler: the packet in `buf` starts at its IPv6 header; `pass` counts the
/// decapsulations and local passes so far.
type LocalHandler = fn(&mut Worker, &mut Cx<'_, '_>, &mut PacketBuf, &Seg6Local, usize) -> Verdict;

/// The handler of each action: one exhaustive match, so that an action added to [`Seg6LocalAction`] (and its row
/// to the behaviour table) does not compile until it has a handler here.
fn handler(action: Seg6LocalAction) -> LocalHandler {
    use Seg6LocalAction as A;
    match action {
        A::End => end,
        A::EndX => end_x,
        A::EndT => end_t,
        A::EndDx2 => end_dx2,
        A::EndDx6 => end_dx6,
        A::EndDx4 => end_dx4,
        A::EndDt6 => end_dt6,
        A::EndDt4 => end_dt4,
        A::EndDt46 => end_dt46,
        A::EndB6 => end_b6,
        A::EndB6Encaps | A::EndB6EncapsRed => end_b6_encaps,
    }
}

/// End (RFC 8986 §4.1).
fn end(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    pass: usize,
) -> Verdict {
    w.end_family(cx, buf, l, Next::Table(MAIN_TABLE), pass)
}

/// End.X (RFC 8986 §4.2).
fn end_x(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    pass: usize,
) -> Verdict {
    let nh = l.spec.nh6.ok_or(DropReason::NoRoute)?;
    w.end_family(cx, buf, l, Next::Nh6(nh), pass)
}

/// End.T (RFC 8986 §4.3).
fn end_t(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    pass: usize,
) -> Verdict {
    let t = l.spec.table.unwrap_or(MAIN_TABLE);
    w.end_family(cx, buf, l, Next::Table(t), pass)
}

/// End.DX2 (RFC 8986 §4.9): the inner Ethernet frame goes out of `oif` as it is.
fn end_dx2(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    _pass: usize,
) -> Verdict {
    w.decap(cx, buf, proto::ETHERNET)?;
    let oif = l.oif.ok_or(DropReason::NoRoute)?;
    let f = buf.data();
    // Linux: an 802.3 EtherType (at least 0x600), and the frame without its header within the oif's MTU.
    if f.len() < 14
        || u16::from_be_bytes([f[12], f[13]]) < 0x600
        || f.len() - 14 > cx.snap.links[oif].mtu as usize
    {
        return Err(DropReason::Seg6LocalL2Frame);
    }
    cx.send(oif, buf.data());
    Ok(())
}

/// End.DX6 (RFC 8986 §4.5).
fn end_dx6(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    pass: usize,
) -> Verdict {
    w.decap(cx, buf, proto::IPV6)?;
    match l.spec.nh6.filter(|a| !a.is_unspecified()) {
        Some(nh) => w.send_to_nh6(cx, buf, l, nh),
        None => w.lookup_in(cx, buf, MAIN_TABLE, pass, false),
    }
}

/// End.DX4 (RFC 8986 §4.6).
fn end_dx4(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    _pass: usize,
) -> Verdict {
    w.decap(cx, buf, proto::IPV4)?;
    let nh = l.spec.nh4.unwrap_or(Ipv4Addr::UNSPECIFIED);
    if nh.is_unspecified() {
        return w.lookup_v4_in(cx, buf, MAIN_TABLE);
    }
    // Linux routes the packet as if its destination were nh4 (`ip_route_input`), then forwards it to that
    // route's gateway, or, on a connected route, to the packet's own destination.
    let found = cx.snap.fib().lookup_v4(nh);
    let snap = cx.snap;
    note!(cx, |t| t.push(Step::route(
        snap,
        "nh4",
        MAIN_TABLE,
        nh.into(),
        found
    )));
    let route = found
        .map(|r| RouteEntry {
            tunnel: OptId::NONE,
            plan: None,
            ..r.clone()
        })
        .ok_or(DropReason::NoRoute)?;
    w.forward(cx, buf, &route, L3::V4)
}

/// End.DT6 (RFC 8986 §4.8): table T, or the VRF's table (lwt6: the table id is the VRF).
fn end_dt6(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    pass: usize,
) -> Verdict {
    w.decap(cx, buf, proto::IPV6)?;
    let t = l.spec.table.or(l.spec.vrftable).unwrap_or(MAIN_TABLE);
    w.lookup_in(cx, buf, t, pass, true)
}

/// End.DT4 (RFC 8986 §4.7).
fn end_dt4(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    _pass: usize,
) -> Verdict {
    w.decap(cx, buf, proto::IPV4)?;
    w.lookup_v4_in(cx, buf, l.spec.vrftable.unwrap_or(MAIN_TABLE))
}

/// End.DT46 (RFC 8986 §4.8a): End.DT6 or End.DT4 by the inner protocol.
fn end_dt46(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    pass: usize,
) -> Verdict {
    let c = exthdr::chain(buf.data()).map_err(|_| DropReason::ExtHeaderMalformed)?;
    match c.upper_proto {
        proto::IPV6 => end_dt6(w, cx, buf, l, pass),
        proto::IPV4 => end_dt4(w, cx, buf, l, pass),
        _ => Err(DropReason::Seg6LocalNextHeader),
    }
}

/// End.B6 (RFC 8986 §4.13 as Linux does it: the new SRH is inserted and the received one is not advanced).
fn end_b6(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    _pass: usize,
) -> Verdict {
    w.active_srh(cx, buf)?;
    w.via_policy(cx, buf, l)
}

/// End.B6.Encaps (RFC 8986 §4.14) and End.B6.Encaps.Red (§4.15): the received SRH is advanced, then the packet is
/// encapsulated with the policy's SRH (reduced for .Red).
fn end_b6_encaps(
    w: &mut Worker,
    cx: &mut Cx<'_, '_>,
    buf: &mut PacketBuf,
    l: &Seg6Local,
    _pass: usize,
) -> Verdict {
    let (rh, _) = w.active_srh(cx, buf)?;
    let sl = buf.data()[rh + 3];
    s6l::advance(buf.data_mut(), rh);
    note!(cx, b = &*buf, |t| t.push(advanced(sl, b.data())));
    w.via_policy(cx, buf, l)
}
