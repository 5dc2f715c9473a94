//! Forwarding on the general path: the plan (tunnels, hop limit, MTU, next hop) decided before anything is
//! written, then the write (headroom reserved once, tunnels applied, Ethernet header).

use super::{Cx, L3, Verdict, Worker, if_ids};
use crate::buffer::PacketBuf;
use crate::fib::{DevId, Fib, RouteEntry, TunnelId};
use crate::hop::ioam::{FillContext, NO_IF};
use crate::hop::ioam_domain::FlowIds;
use crate::snapshot::Snapshot;
use crate::spec::{IoamMode, MAIN_TABLE, Seg6Mode};
use crate::stats::DropReason;
use crate::trace::{self, FrameTrace, Step};
use crate::tunnel::seg6::Outer;
use crate::tunnel::{InputTunnel, Ioam6Tunnel, OutputTunnel, Tunnel, TunnelKind};
use crate::wire::ethernet::{self, EthernetRepr, Mac};
use crate::wire::icmpv4::Icmpv4Error;
use crate::wire::icmpv6::IcmpError;
use crate::wire::{exthdr, ipv4, ipv6, proto};
use std::net::{IpAddr, Ipv6Addr};

/// A tunnel as forwarding planned it: what it will do to the packet, decided before anything is written. `T` is the tunnel applied:
/// an [`InputTunnel`] before forwarding, an [`Ioam6Tunnel`] after it.
#[derive(Debug, Clone, Copy)]
struct PlannedTunnel<T> {
    /// The tunnel, and its index (for the per-tunnel source address cache).
    tunnel: T,
    id: TunnelId,
    /// Bytes added.
    growth: usize,
    /// New destination (seg6 first SID, rpl first segment, ioam tundst) when it changes the routing.
    new_dst: Option<Ipv6Addr>,
    /// Device of the route that carries the tunnel (Linux picks the outer source address on it).
    route_dev: Option<DevId>,
}

/// What forwarding will do to a packet, decided before anything is written.
#[derive(Debug, Clone, Copy)]
struct Forwarding<'s> {
    /// The input tunnel (seg6, rpl) applied before forwarding.
    input: Option<PlannedTunnel<&'s InputTunnel>>,
    /// The output tunnel (ioam6) applied after it.
    output: Option<PlannedTunnel<&'s Ioam6Tunnel>>,
    /// Whether the whole Ethernet frame is encapsulated (seg6 l2encap modes).
    l2_frame: bool,
    /// The protocol the packet entered with.
    l3: L3,
    /// Hop limit of an outer IPv6 header put around an IPv4 packet (the egress device's `hop_limit`).
    out_hlim_v4: u8,
    /// Bytes the stages add in all.
    growth: usize,
    /// Egress device.
    egress: DevId,
    /// Next hop's MAC address.
    dst_mac: Mac,
}

/// The tunnels of a forwarding plan, for the trace, each with the lookup of the destination it sends the packet
/// to (looked up again here, in the same snapshot: the packet path keeps its own lookups as they are).
fn plan_steps(
    t: &mut FrameTrace,
    snap: &Snapshot,
    input: Option<PlannedTunnel<&InputTunnel>>,
    output: Option<PlannedTunnel<&Ioam6Tunnel>>,
) {
    let lookup = |t: &mut FrameTrace, dst: Option<Ipv6Addr>| {
        if let Some(d) = dst {
            let r = snap.fib().lookup_v6(d);
            t.push(Step::route(
                snap,
                "tunnel destination",
                MAIN_TABLE,
                d.into(),
                r,
            ));
        }
    };
    if let Some(s) = input {
        t.push(Step::input_tunnel(s.tunnel, s.growth, s.new_dst));
        lookup(t, s.new_dst);
    }
    if let Some(s) = output {
        t.push(Step::output_tunnel(s.tunnel, s.growth, s.new_dst));
        lookup(t, s.new_dst);
    }
}

/// The flow key hash for `seg6_flowlabel = 1` (see [`crate::tunnel::seg6::flow_hash`]).
fn flow_key_hash(pkt: &[u8], l3: L3) -> u32 {
    use crate::tunnel::seg6::flow_hash;
    match l3 {
        L3::V6 if pkt.len() >= ipv6::HEADER_LEN => {
            let p = ipv6::Packet::new_unchecked(pkt);
            let fl = p.flow_label();
            if fl != 0 {
                flow_hash(&[&pkt[8..40], &fl.to_be_bytes()])
            } else {
                let (up, off) = exthdr::chain(pkt)
                    .map(|c| (c.upper_proto, c.upper_offset))
                    .unwrap_or((p.next_header(), 40));
                let ports = pkt.get(off..off + 4).unwrap_or(&[]);
                flow_hash(&[&pkt[8..40], &[up], ports])
            }
        }
        L3::V4 if pkt.len() >= ipv4::MIN_HEADER_LEN => {
            let ihl = ((pkt[0] & 0xf) as usize) * 4;
            let ports = pkt.get(ihl..ihl + 4).unwrap_or(&[]);
            flow_hash(&[&pkt[12..20], &[pkt[9]], ports])
        }
        _ => flow_hash(&[&pkt[..pkt.len().min(64)]]),
    }
}

impl Worker {
    /// The route to `dst`, the new destination of tunnel `tid`, through the per-tunnel cache.
    fn tunnel_route(&mut self, fib: &Fib, tid: TunnelId, dst: Ipv6Addr) -> Option<RouteEntry> {
        let generation = self.nh_gen;
        match self.nh_cache.get_mut(tid) {
            Some(c) if c.0 == generation && c.1 == dst => c.2.clone(),
            Some(c) => {
                let r = fib.lookup_v6(dst).cloned();
                *c = (generation, dst, r.clone());
                r
            }
            None => fib.lookup_v6(dst).cloned(),
        }
    }

    /// Forwards the packet in `buf` (which starts at its L3 header) along `route`, applying the route's tunnel
    /// and, after a destination change, the next route's output tunnel: planned first, then written.
    pub(super) fn forward(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        route: &RouteEntry,
        l3: L3,
    ) -> Verdict {
        let plan = self.plan_forwarding(cx, buf, route, l3)?;
        self.write_forwarding(cx, buf, &plan)
    }

    /// Decides everything about forwarding the packet before a byte is written: the tunnel stages and the bytes
    /// they add, the hop limit, the egress device and MTU (an ICMPv6 error when it does not fit), the next hop.
    fn plan_forwarding<'s>(
        &mut self,
        cx: &mut Cx<'s, '_>,
        buf: &PacketBuf,
        route: &RouteEntry,
        l3: L3,
    ) -> Result<Forwarding<'s>, DropReason> {
        let snap = cx.snap;
        let mut input: Option<PlannedTunnel<&InputTunnel>> = None;
        let mut output: Option<PlannedTunnel<&Ioam6Tunnel>> = None;
        let next0: RouteEntry;
        let next1: RouteEntry;
        let mut route = route;
        let mut l2_frame = false;
        if let Some((tid, Tunnel::Input(tunnel))) =
            route.tunnel.get().map(|t| (t, &snap.tunnels[t]))
        {
            let (growth, new_dst, l2) = tunnel.growth(buf.data(), l3 == L3::V4)?;
            l2_frame = l2;
            input = Some(PlannedTunnel {
                tunnel,
                id: tid,
                growth,
                new_dst: Some(new_dst),
                route_dev: route.dev.get(),
            });
            next0 = match self.tunnel_route(snap.fib(), tid, new_dst) {
                Some(r) => r,
                None => {
                    note!(cx, |t| plan_steps(t, snap, input, None));
                    return Err(DropReason::NoRoute);
                }
            };
            match next0.tunnel.get().map(|t| (t, &snap.tunnels[t])) {
                Some((t, Tunnel::Input(_))) if t != tid => return Err(DropReason::TunnelLoop),
                _ => {}
            }
            route = &next0;
        } else if l3 == L3::V4 && route.tunnel.get().is_some() {
            return Err(DropReason::TunnelProtoMismatch);
        }
        // The hop limit check happens on the packet as received: Linux copies the inner hop limit to the outer
        // header and checks it after encapsulation, sending the Time Exceeded to itself; lwt6 tells the sender.
        let out_hlim_v4 = route
            .dev
            .get()
            .map_or(64, |d| snap.links[d].sysctl.hop_limit);
        match l3 {
            L3::V6 => {
                if buf.data()[7] <= 1 {
                    note!(cx, |t| plan_steps(t, snap, input, None));
                    self.icmp_error(cx, buf.data(), IcmpError::TimeExceeded { code: 0 });
                    return Err(DropReason::HopLimitExceeded);
                }
            }
            L3::V4 => {
                let ttl_or_outer = if input.is_some() {
                    out_hlim_v4
                } else {
                    buf.data()[8]
                };
                if ttl_or_outer <= 1 {
                    note!(cx, |t| plan_steps(t, snap, input, None));
                    if input.is_none() {
                        self.icmp4_error(cx, buf.data(), Icmpv4Error::TimeExceeded { code: 0 });
                    }
                    return Err(DropReason::HopLimitExceeded);
                }
            }
        }
        if let Some((tid, Tunnel::Output(OutputTunnel::Ioam6(t)))) =
            route.tunnel.get().map(|t| (t, &snap.tunnels[t]))
        {
            let carries_v6 = l3 == L3::V6 || input.is_some();
            if carries_v6 && t.should_insert(&mut self.freq[tid]) {
                match t.effective_mode() {
                    IoamMode::Inline => {
                        // Behind an input tunnel the packet is not written yet: the most it can take.
                        let growth = if input.is_some() {
                            Some(t.hbh_len)
                        } else {
                            t.inline_growth(buf.data())
                        };
                        match growth {
                            Some(growth) => {
                                output = Some(PlannedTunnel {
                                    tunnel: t,
                                    id: tid,
                                    growth,
                                    new_dst: None,
                                    route_dev: route.dev.get(),
                                })
                            }
                            None => self.stats.ioam.not_inserted += 1,
                        }
                    }
                    _ => {
                        let growth = ipv6::HEADER_LEN + t.hbh_len;
                        output = Some(PlannedTunnel {
                            tunnel: t,
                            id: tid,
                            growth,
                            new_dst: t.tundst,
                            route_dev: route.dev.get(),
                        });
                        let tundst = t.tundst.ok_or(DropReason::NoRoute)?;
                        next1 = match self.tunnel_route(snap.fib(), tid, tundst) {
                            Some(r) => r,
                            None => {
                                note!(cx, |n| plan_steps(n, snap, input, output));
                                return Err(DropReason::NoRoute);
                            }
                        };
                        if next1.tunnel.get().is_some_and(|n| n != tid) {
                            return Err(DropReason::TunnelLoop);
                        }
                        route = &next1;
                    }
                }
            }
        }
        let growth = input.map_or(0, |s| s.growth) + output.map_or(0, |s| s.growth);
        let egress = route.dev.get().ok_or(DropReason::NoRoute)?;
        let link_mtu = snap.links[egress].mtu;
        let mtu = route.mtu.map_or(link_mtu, |m| m.value.min(link_mtu)) as usize;
        // The IPv6 packet as it will leave: `buf` holds the received packet from its L3 header on, and `growth`
        // every byte the stages put in front of it, the Ethernet header an l2 mode keeps included (Linux checks
        // the outer packet, which carries it: tests/kernel/test_mtu.py).
        let final_len = buf.len() + growth;
        if final_len > mtu {
            note!(cx, |t| {
                plan_steps(t, snap, input, output);
                t.push(Step::Mtu {
                    len: final_len,
                    mtu,
                    fits: false,
                })
            });
            if l3 == L3::V6 {
                let reported = mtu.saturating_sub(growth).max(ipv6::MIN_MTU) as u32;
                // Linux checks an unlocked route MTU of a forwarded packet only on output, after the hop limit
                // was decremented (ip6_fragment): a plain forward over the device's MTU but not the route's
                // quotes the packet with hop limit − 1.
                let late = input.is_none()
                    && output.is_none()
                    && final_len <= link_mtu as usize
                    && route.mtu.is_some_and(|m| !m.locked);
                if late {
                    let mut quoted = buf.data().to_vec();
                    quoted[7] = quoted[7].saturating_sub(1);
                    self.icmp_error(cx, &quoted, IcmpError::PacketTooBig { mtu: reported });
                } else {
                    self.icmp_error(cx, buf.data(), IcmpError::PacketTooBig { mtu: reported });
                }
            } else if input.is_none()
                && output.is_none()
                && ipv4::Packet::new_unchecked(buf.data()).flags_frag() & 0x4000 != 0
            {
                // DF set: fragmentation needed, with the next-hop MTU (RFC 1191 §4). Without DF Linux would
                // fragment; lwt6 does not fragment and drops (docs/linux-compat.md).
                let mtu = mtu.min(u16::MAX as usize) as u16;
                self.icmp4_error(cx, buf.data(), Icmpv4Error::FragNeeded { mtu });
            }
            return Err(DropReason::MtuExceeded);
        }
        // Next hop: the gateway, or the final destination on a connected route.
        let final_dst = output
            .and_then(|s| s.new_dst)
            .or(input.and_then(|s| s.new_dst));
        let nh = match (route.via, final_dst, l3) {
            (Some(IpAddr::V6(gw)), _, _) => IpAddr::V6(gw),
            (Some(IpAddr::V4(gw)), None, L3::V4) => IpAddr::V4(gw),
            (None, Some(d), _) => IpAddr::V6(d),
            (None, None, L3::V6) => IpAddr::V6(ipv6::Packet::new_unchecked(buf.data()).dst_addr()),
            (None, None, L3::V4) => IpAddr::V4(
                ipv4::Packet::new_checked(buf.data())
                    .map_err(|_| DropReason::Ipv4Malformed)?
                    .dst_addr(),
            ),
            (Some(IpAddr::V4(_)), _, _) => return Err(DropReason::NoNeighbour),
        };
        let dst_mac = self.neighbour_mac(snap, egress, nh);
        note!(cx, b = buf, |t| {
            plan_steps(t, snap, input, output);
            let received = match l3 {
                L3::V6 => b.data()[7],
                L3::V4 if input.is_some() => out_hlim_v4,
                L3::V4 => b.data()[8],
            };
            t.push(Step::HopLimit { received });
            t.push(Step::Mtu {
                len: final_len,
                mtu,
                fits: true,
            });
            t.push(Step::neighbour(snap, egress, nh));
        });
        let dst_mac = dst_mac?;
        Ok(Forwarding {
            input,
            output,
            l2_frame,
            l3,
            out_hlim_v4,
            growth,
            egress,
            dst_mac,
        })
    }

    /// Carries out a [`Forwarding`]: one headroom reservation (or the headroom policy's steps), the tunnel stages,
    /// the hop limit decrement, the Ethernet header, and the frame out.
    fn write_forwarding(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        f: &Forwarding<'_>,
    ) -> Verdict {
        let snap = cx.snap;
        let Forwarding {
            input,
            output,
            l2_frame,
            l3,
            out_hlim_v4,
            growth,
            egress,
            dst_mac,
        } = *f;
        if l2_frame {
            // The received Ethernet header is still in the headroom, untouched: take it back as payload.
            buf.push_front(ethernet::HEADER_LEN)
                .map_err(|_| DropReason::BufferPlanning)?;
        }
        // One reservation for the whole plan, unless a headroom policy handles each stage.
        let policy = self.headroom_policy.as_deref();
        if policy.is_none() {
            let reserve =
                growth - if l2_frame { ethernet::HEADER_LEN } else { 0 } + ethernet::HEADER_LEN;
            buf.ensure_headroom(reserve)
                .map_err(|_| DropReason::BufferPlanning)?;
        }
        if let Some(s) = input {
            if let Some(p) = &policy {
                p.before_stage(buf, s.growth, l2_frame);
            }
            self.apply_input_tunnel(snap, s, buf, l3, out_hlim_v4)?;
            if let Some(p) = &policy {
                p.after_stage(buf);
            }
        }
        // ip6_forward: decrement the (outer) hop limit; plain IPv4 forwarding: TTL.
        if l3 == L3::V6 || input.is_some() {
            buf.data_mut()[7] -= 1;
        } else {
            let mut p =
                ipv4::Packet::new_checked(buf.data_mut()).map_err(|_| DropReason::Ipv4Malformed)?;
            p.decrement_ttl();
        }
        if let Some(s) = output {
            if let Some(p) = &policy {
                p.before_stage(buf, s.growth, false);
            }
            let merging = buf.data()[6] == proto::HOPOPTS;
            let at = self.apply_ioam(cx, s, buf)?;
            match at {
                Some(_) if merging => self.stats.ioam.merged += 1,
                Some(_) => {}
                None => self.stats.ioam.not_inserted += 1,
            }
            if at.is_some() {
                note!(cx, b = &*buf, |t| {
                    t.push(Step::IoamInsert {
                        mode: match s.tunnel.effective_mode() {
                            IoamMode::Inline => "inline",
                            _ => "encap",
                        },
                        ioam: trace::ioam_inserted(b.data(), ipv6::HEADER_LEN),
                    })
                });
            }
            if let Some(p) = &policy {
                p.after_stage(buf);
            }
            // A Direct Export option just inserted: the encapsulating node exports its own data too (RFC 9326 §3).
            if let (Some(hbh_at), Some(dex_at)) = (at, s.tunnel.dex_at)
                && self.ioam_export.enabled()
            {
                let ctx = Self::inserting_node(cx, &s, buf);
                let o = &buf.data()[hbh_at + dex_at..];
                let flow = FlowIds::of(buf.data());
                self.export_dex(cx, o, flow, s.route_dev, &ctx);
            }
        }
        let ethertype = if l3 == L3::V4 && input.is_none() {
            ethernet::ETHERTYPE_IPV4
        } else {
            ethernet::ETHERTYPE_IPV6
        };
        let hdr = buf
            .push_front(ethernet::HEADER_LEN)
            .map_err(|_| DropReason::BufferPlanning)?;
        EthernetRepr {
            dst: dst_mac,
            src: snap.links[egress].mac,
            ethertype,
        }
        .emit(hdr);
        if let Some(s) = input {
            self.encap_pending[s.tunnel.kind().index()] += 1;
        }
        if output.is_some() {
            self.encap_pending[TunnelKind::Ioam6.index()] += 1;
        }
        cx.send(egress, buf.data());
        Ok(())
    }

    /// seg6 / rpl on the input path. `buf` starts at the L3 header (at the Ethernet header for L2 modes).
    fn apply_input_tunnel(
        &self,
        snap: &Snapshot,
        stage: PlannedTunnel<&InputTunnel>,
        buf: &mut PacketBuf,
        l3: L3,
        v4_hlim: u8,
    ) -> Verdict {
        match stage.tunnel {
            InputTunnel::Rpl(r) => r.insert(buf).map(|_| ()),
            InputTunnel::Seg6(s) => {
                let hmac = s
                    .hmac_key
                    .map(|k| snap.hmac.get(&k).ok_or(DropReason::HmacKeyMissing))
                    .transpose()?;
                if s.mode == Seg6Mode::Inline {
                    return s.insert_inline(buf, hmac);
                }
                let l3_at = if s.is_l2() { ethernet::HEADER_LEN } else { 0 };
                let pkt = &buf.data()[l3_at..];
                let (tc, inner_fl, hlim) = match l3 {
                    L3::V6 => {
                        let p = ipv6::Packet::new_unchecked(pkt);
                        (p.traffic_class(), p.flow_label(), p.hop_limit())
                    }
                    L3::V4 => (0, 0, v4_hlim),
                };
                let flow_label = match snap.seg6_flowlabel {
                    x if x < 0 => 0,
                    0 => inner_fl,
                    _ => flow_key_hash(pkt, l3),
                };
                let inner_proto = if s.is_l2() {
                    proto::ETHERNET
                } else if l3 == L3::V6 {
                    proto::IPV6
                } else {
                    proto::IPV4
                };
                let src = s
                    .tunsrc
                    .or(snap.tunsrc)
                    .or_else(|| snap.tunnel_source(stage.id, stage.route_dev, &s.first_sid))
                    .ok_or(DropReason::NoSourceAddress)?;
                let outer = Outer {
                    src,
                    traffic_class: tc,
                    flow_label,
                    hop_limit: hlim,
                    inner_proto,
                };
                s.push_encap(buf, &outer, hmac)
            }
        }
    }

    /// ioam6 on the output path (after the hop limit decrement), then this node fills its own data.
    /// Returns the offset from the IPv6 header at which the options are found at [`Ioam6Tunnel::opt_offsets`], or
    /// None when nothing was inserted (inline mode may find a Hop-by-Hop header it does not merge into).
    fn apply_ioam(
        &self,
        cx: &Cx<'_, '_>,
        stage: PlannedTunnel<&Ioam6Tunnel>,
        buf: &mut PacketBuf,
    ) -> Result<Option<usize>, DropReason> {
        let (snap, t) = (cx.snap, stage.tunnel);
        let opt_at = match t.effective_mode() {
            IoamMode::Inline => t.insert_inline(buf)?,
            _ => {
                let dst = t.tundst.ok_or(DropReason::NoRoute)?;
                let src = t
                    .tunsrc
                    .or_else(|| snap.tunnel_source(stage.id, stage.route_dev, &dst))
                    .ok_or(DropReason::NoSourceAddress)?;
                Some(t.push_encap(buf, src)?)
            }
        };
        if let Some(hbh_at) = opt_at {
            let ctx = Self::inserting_node(cx, &stage, buf);
            let pkt = buf.data_mut();
            for off in &t.opt_offsets {
                let at = hbh_at + off;
                let opt_len = 2 + pkt[at + 1] as usize;
                snap.ioam.fill_option(&mut pkt[at..at + opt_len], &ctx)?;
            }
            if let Some(at) = t.dex_seq_at {
                // The frequency count has counted this packet already (`plan_forwarding`).
                let seq = t.dex_sequence(self.freq[stage.id]);
                pkt[hbh_at + at..hbh_at + at + 4].copy_from_slice(&seq.to_be_bytes());
            }
        }
        Ok(opt_at)
    }

    /// What the node inserting IOAM into `buf` (after the hop limit decrement) records about itself.
    fn inserting_node(
        cx: &Cx<'_, '_>,
        stage: &PlannedTunnel<&Ioam6Tunnel>,
        buf: &PacketBuf,
    ) -> FillContext {
        let snap = cx.snap;
        // The inserting node records the hop limit as is (Linux: is_input = false) and the ingress interface of
        // the packet; lwt6 reports its ingress as unavailable only when there is none.
        FillContext {
            hop_limit: buf.data()[7],
            ingress: if_ids(&snap.links[cx.in_dev].sysctl),
            egress: stage
                .route_dev
                .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl)),
            ts_ns: cx.ts,
        }
    }
}
