//! The fast path: a frame whose route has a precomputed [`Plan`](crate::plan::Plan) and that needs nothing else
//! is sent with a template copy and a few field writes.

use super::{RouteHint, Worker, if_ids, max_frame_len};
use crate::copy::copy_bytes;
use crate::fib::{Best, DevId};
use crate::hop::ioam::{FillContext, NO_IF};
use crate::plan::{FRONT, IoamField, PlanKind, Received, patch_inserting_header};
use crate::snapshot::Snapshot;
use crate::tunnel::{InputTunnel, Ioam6Tunnel, OutputTunnel, Seg6Tunnel, Tunnel, TunnelKind};
use crate::wire::ethernet::{self};
use crate::wire::{ipv6, proto};
use std::net::Ipv6Addr;

/// A receive time as the IOAM timestamp fields hold it (seconds, microseconds: docs/references.md §2.4),
/// converted once for the packets of a batch that share it (`cache`: the last time converted and its parts).
#[inline(always)]
fn ts_parts(cache: &mut (u64, u32, u32), ts: u64) -> (u32, u32) {
    if cache.0 != ts {
        *cache = (
            ts,
            (ts / 1_000_000_000) as u32,
            ((ts % 1_000_000_000) / 1000) as u32,
        );
    }
    (cache.1, cache.2)
}

/// The planned transit fill of the IOAM traces in the packet `ip` (from its IPv6 header on), written after the copy:
/// the number of traces filled, or `None` to send the packet to the general path. Out of line, as
/// `Worker::transit_planned`.
#[cold]
#[inline(never)]
fn transit_fill_planned(
    snap: &Snapshot,
    ip: &mut [u8],
    in_dev: DevId,
    egress: DevId,
    hop_limit: u8,
    ts: u64,
) -> Option<u64> {
    let ing = &snap.links[in_dev].sysctl;
    let ctx = FillContext {
        hop_limit,
        ingress: if_ids(ing),
        egress: if_ids(&snap.links[egress].sysctl),
        ts_ns: ts,
    };
    snap.ioam
        .transit_fill(ip, ing.ioam6_enabled, &ctx)
        .map(u64::from)
}

impl Worker {
    /// Whether a packet with a Hop-by-Hop header (`ip`, trimmed to its payload length) may take the plan: plain
    /// forwarding, no transit export, and IOAM options laid out as inserted (`IoamNode::transit_plannable`).
    /// Out of line: packets without a Hop-by-Hop header never call it, and the fast path stays as small as before.
    #[cold]
    #[inline(never)]
    fn transit_planned(
        &self,
        snap: &Snapshot,
        plan: &crate::plan::Plan,
        ip: &[u8],
        in_dev: DevId,
    ) -> bool {
        plan.kind == PlanKind::Forward
            && !(self.ioam_export.transit && self.ioam_export.enabled())
            && snap.ioam.transit_plannable(ip, in_dev, plan.egress)
    }

    /// The fast path: a received frame whose route has a [`Plan`](crate::plan::Plan) and that needs nothing else — no Hop-by-Hop
    /// header but IOAM traces a plain forwarding plan fills in transit, hop limit above 1, unicast non-link-local
    /// addresses, not for us, within the MTU, room in front.
    /// Returns `Err`, having changed nothing, when the packet must take the general path, which would produce
    /// the same bytes (it checks the same things, in more steps); the route found goes with it.
    #[inline(always)]
    pub(super) fn fast_forward<'s>(
        &mut self,
        snap: &'s Snapshot,
        in_dev: DevId,
        ts: u64,
        frame: &[u8],
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) -> Result<(), Option<RouteHint<'s>>> {
        const E: usize = ethernet::HEADER_LEN;
        const H: usize = ipv6::HEADER_LEN;
        if frame.len() < E + H {
            return Err(None);
        }
        let ip = &frame[E..];
        if frame[12..14] != [0x86, 0xdd]
            || frame[..6] != snap.links[in_dev].mac
            || ip[0] >> 4 != 6
            || frame.len() > max_frame_len(&snap.links[in_dev])
        {
            return Err(None);
        }
        let len = H + u16::from_be_bytes([ip[4], ip[5]]) as usize;
        let hlim = ip[7];
        if len > ip.len() || hlim <= 1 {
            return Err(None);
        }
        // Multicast (ff00::/8) or link-local (fe80::/10) source or destination: both start with 0xfe or 0xff,
        // which one test of the first bytes rules out for almost every packet.
        // Also the addresses of ::/8 (loopback, unspecified, IPv4-mapped and compatible): their first byte is 0,
        // which the same test catches as 255 after subtracting one. The general path decides about them.
        if ip[8].wrapping_sub(1) >= 0xfd || ip[24].wrapping_sub(1) >= 0xfd {
            let special = |hi: u16| hi >= 0xff00 || hi & 0xffc0 == 0xfe80 || hi < 0x0100;
            if special(u16::from_be_bytes([ip[8], ip[9]]))
                || special(u16::from_be_bytes([ip[24], ip[25]]))
            {
                return Err(None);
            }
        }
        let dst_octets: [u8; 16] = ip[24..40].try_into().expect("16 bytes");
        let dst = Ipv6Addr::from(dst_octets);
        let fib = snap.fib();
        let best = fib.best_v6(dst);
        // The route found goes to the general path when the packet cannot be planned.
        let hint = |b: Option<&Best>| Some((dst, b.and_then(|b| fib.route(b.route))));
        let Some(plan) = best.and_then(|b| snap.plan(b.plan_or_max())) else {
            return Err(hint(best));
        };
        // A Hop-by-Hop header: only plain forwarding with IOAM transit is planned (`IoamNode::transit_plannable`).
        if ip[6] == proto::HOPOPTS && !self.transit_planned(snap, plan, &ip[..len], in_dev) {
            return Err(hint(best));
        }
        if plan.kind.is_local() {
            return self.fast_local(snap, in_dev, ts, frame, out, plan, hint(best));
        }
        // A sampled ioam6 route (freq K/N, K < N): the packet's place in the count decides whether it takes the
        // plan or leaves untraced along the route (the count advances only once the packet is sure to go here).
        let (mut kind, mut max_len, mut egress, mut growth) =
            (plan.kind, plan.max_len, plan.egress, plan.growth);
        let mut template = snap.template(plan);
        if let Some(s) = &plan.sampled
            && self
                .freq
                .get(s.tunnel as usize)
                .is_some_and(|c| c % u64::from(s.n) >= u64::from(s.k))
        {
            (kind, max_len, egress, growth) =
                (PlanKind::Forward, s.max_len as usize, s.egress as usize, 0);
            template = &s.eth[..];
        }
        let rpl = match kind {
            PlanKind::Rpl => match plan.tunnel.map(|t| &snap.tunnels[t]) {
                Some(Tunnel::Input(InputTunnel::Rpl(p))) => Some(p),
                _ => return Err(hint(best)),
            },
            // `seg6_flowlabel` 1 hashes the flow into the outer flow label: the general path's (the plan is kept,
            // so that the sysctl changes no plan).
            PlanKind::Seg6Encap if snap.seg6_flowlabel > 0 => return Err(hint(best)),
            _ => None,
        };
        if let Some(p) = rpl {
            growth = p.header_len(dst);
        }
        let new_len = len + growth;
        if new_len > max_len
            || self.rx_headroom < growth
            || (plan.contains_local && snap.local6.contains(&dst))
        {
            return Err(hint(best));
        }
        if let Some(s) = &plan.sampled
            && let Some(c) = self.freq.get_mut(s.tunnel as usize)
        {
            *c = c.wrapping_add(1);
        }
        let t = template.len();
        // The outgoing frame starts where the rx headroom minus what the plan adds would put it (checked above not
        // to underflow), rounded down to a cache line: the template's copy then stores whole aligned lines whatever
        // the tunnel's size, so the rate has no 64-byte period against size (docs/BENCHMARKS.md). lwt6 can choose, as it copies every received frame into its own buffer after the
        // lookup; a zero-copy receive could not.
        let start = (self.rx_headroom - growth) & !63;
        let (front, body) = if kind.inserts() {
            // The received IPv6 header is rewritten into the template's slot: only its payload follows.
            (E + H + growth, &ip[H..len])
        } else {
            (t, &ip[..len])
        };
        // The outgoing frame is assembled in place: the received bytes behind the template's.
        let data = self.buf.place(start, front + body.len());
        copy_bytes(&mut data[front..], body);
        // The wide copy costs the same for every further 32 bytes; memcpy steps at its size classes (crate::copy).
        // Templates of at most 64 bytes (gateway routes' Ethernet header, RPL's Ethernet + IPv6 slot; never one
        // that grows with a tunnel's size) go inline, without a call.
        match self.template_copy {
            Some(_) if t <= 64 => copy_bytes(&mut data[..t], template),
            Some(w) => w.copy(&mut data[..t], template),
            None => data[..t].copy_from_slice(template),
        }
        let rx = Received {
            ip,
            dst: &dst_octets,
            payload_len: ((new_len - H) as u16).to_be_bytes(),
            hop_limit: hlim - 1,
        };
        // Every plan's frame starts with an Ethernet and an IPv6 header (the template's, or the template's
        // Ethernet header and the received IPv6 header): one length check, then fixed offsets.
        let Some((hdr, after)) = data.split_first_chunk_mut::<FRONT>() else {
            unreachable!("a planned frame holds an Ethernet and an IPv6 header")
        };
        // The plan's kind names the tunnel whose patch completes the frame; IOAM plans return where the option
        // this node fills starts.
        let mut ioam_at = None;
        match kind {
            PlanKind::Forward => hdr[E + 7] = rx.hop_limit,
            PlanKind::Seg6Encap => {
                Seg6Tunnel::patch_encap(hdr, &rx, snap.seg6_first_word);
                self.encap_pending[TunnelKind::Seg6.index()] += 1;
            }
            PlanKind::Seg6Inline => {
                Seg6Tunnel::patch_inline(hdr, after, &rx);
                self.encap_pending[TunnelKind::Seg6.index()] += 1;
            }
            PlanKind::RplFixed => {
                // The whole routing header is in the template: its next header and the destination's tail.
                patch_inserting_header(hdr, &rx, proto::ROUTING);
                let (at, ce) = (usize::from(plan.rpl_tail.0), usize::from(plan.rpl_tail.1));
                after[0] = rx.ip[6];
                after[at..at + 16 - ce].copy_from_slice(&dst_octets[ce..]);
                self.encap_pending[TunnelKind::Rpl.index()] += 1;
            }
            PlanKind::Rpl => {
                // `rpl` is the plan's tunnel (checked above: the packet took the general path otherwise).
                if let Some(p) = rpl {
                    p.patch(hdr, &mut after[..growth], &rx);
                }
                self.encap_pending[TunnelKind::Rpl.index()] += 1;
            }
            PlanKind::IoamInline => ioam_at = Some(Ioam6Tunnel::patch_inline(hdr, after, &rx)),
            PlanKind::IoamEncap => ioam_at = Some(Ioam6Tunnel::patch_encap(hdr, after, &rx, t)),
            PlanKind::End | PlanKind::EndX | PlanKind::EndDx6 => {
                unreachable!("seg6local plans are handled by fast_local")
            }
        }
        let hl = rx.hop_limit;
        // A transit packet (a plain forwarding plan, checked above): its traces filled after the copy.
        if kind == PlanKind::Forward && ip[6] == proto::HOPOPTS {
            match transit_fill_planned(snap, &mut data[E..], in_dev, egress, hl, ts) {
                Some(n) => self.stats.ioam_transit_filled += n,
                None => return Err(hint(best)),
            }
        }
        if ioam_at.is_some() && plan.ioam.baked {
            // This node's data is in the template: only what depends on the packet is written.
            let ing = &snap.links[in_dev].sysctl;
            let (sec, frac) = if plan.ioam.has_ts {
                ts_parts(&mut self.ts_cache, ts)
            } else {
                (0, 0)
            };
            let n = usize::from(plan.ioam.n);
            for (&at, &what) in plan.ioam.at[..n].iter().zip(&plan.ioam.what[..n]) {
                let at = usize::from(at);
                match what {
                    IoamField::HopLimit => data[at] = hl,
                    IoamField::IngressId => {
                        data[at..at + 2].copy_from_slice(&ing.ioam6_id.to_be_bytes())
                    }
                    IoamField::IngressWide => {
                        data[at..at + 4].copy_from_slice(&ing.ioam6_id_wide.to_be_bytes())
                    }
                    IoamField::TsSec => data[at..at + 4].copy_from_slice(&sec.to_be_bytes()),
                    IoamField::TsFrac => data[at..at + 4].copy_from_slice(&frac.to_be_bytes()),
                }
            }
            self.encap_pending[TunnelKind::Ioam6.index()] += 1;
        } else if let Some(hbh_at) = ioam_at {
            let Some(Tunnel::Output(OutputTunnel::Ioam6(it))) =
                plan.tunnel.map(|t| &snap.tunnels[t])
            else {
                unreachable!("an IOAM plan belongs to an ioam6 tunnel")
            };
            let ctx = FillContext {
                hop_limit: hl,
                ingress: if_ids(&snap.links[in_dev].sysctl),
                egress: plan
                    .route_dev
                    .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl)),
                ts_ns: ts,
            };
            for off in &it.opt_offsets {
                // Everything about the option is read from the template, not from the packet's fresh copy of it.
                let at = hbh_at + off;
                let opt_len = 2 + template[at + 1] as usize;
                if let Err(reason) = snap.ioam.fill_option_from(
                    &template[at..at + opt_len],
                    &mut data[at..at + opt_len],
                    &ctx,
                ) {
                    // As on the general path: dropped, and not counted as an ioam6 insertion.
                    self.stats.rx += 1;
                    self.stats.count_drop(reason);
                    self.capture_drop(in_dev, ts, frame, reason);
                    return Ok(());
                }
            }
            self.encap_pending[TunnelKind::Ioam6.index()] += 1;
        }
        out(egress, ts, data);
        // Received, sent and fast: added to the three counters once per batch (`flush_counters`).
        self.fast_sent += 1;
        Ok(())
    }
}
