//! The Hop-by-Hop stage: options checks, IOAM transit fill, and the IOAM domains' ingress, egress and removal
//! with their export records.

use super::{Cx, Verdict, Worker, if_ids};
use crate::buffer::PacketBuf;
use crate::fib::{DevId, RouteEntry};
use crate::hop::ioam::{FillContext, NO_IF};
use crate::hop::ioam_domain::{self, ExportEvent, FlowIds, IoamRecord};
use crate::hop::options as hop_options;
use crate::spec::IoamForeign;
use crate::stats::DropReason;
use crate::trace::{self, Step};
use crate::wire::icmpv6::IcmpError;
use crate::wire::{exthdr, ipv6, proto};

impl Worker {
    /// IOAM transit on a received Hop-by-Hop header.
    pub(super) fn hop_by_hop_in(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        h: exthdr::ExtHeader,
        route: Option<&RouteEntry>,
        hlim: u8,
    ) -> Verdict {
        let (snap, in_dev, ts) = (cx.snap, cx.in_dev, cx.ts);
        let ingress = &snap.links[in_dev];
        let egress = route
            .and_then(|r| r.dev.get())
            .map_or(NO_IF, |d| if_ids(&snap.links[d].sysctl));
        let ctx = FillContext {
            hop_limit: hlim.wrapping_sub(1),
            ingress: if_ids(&ingress.sysctl),
            egress,
            ts_ns: ts,
        };
        let enabled = ingress.sysctl.ioam6_enabled;
        self.check_options(cx, buf, h)?;
        let before = cx
            .traced()
            .then(|| buf.data()[h.offset..h.offset + h.len].to_vec());
        let hbh = &mut buf.data_mut()[h.offset..h.offset + h.len];
        let filled = snap.ioam.transit(hbh, h.offset, enabled, &ctx)?;
        note!(cx, b = &*buf, |t| {
            let after = &b.data()[h.offset..h.offset + h.len];
            t.push(Step::HopByHop {
                len: h.len,
                ioam_enabled: enabled,
                ioam: trace::ioam_fills(before.as_deref(), after),
            })
        });
        self.stats.ioam_transit_filled += filled as u64;
        if enabled && self.ioam_export.enabled() {
            self.direct_export(cx, buf, h, route.and_then(|r| r.dev.get()), &ctx);
        }
        if filled > 0 && self.ioam_export.transit && self.ioam_export.enabled() {
            let out_dev = route.and_then(|r| r.dev.get());
            let hbh = &buf.data()[h.offset..h.offset + h.len];
            let known = |o: &[u8]| {
                ioam_domain::option_namespace(o)
                    .is_some_and(|ns| snap.ioam.namespaces.contains_key(&ns))
            };
            let n: Vec<&[u8]> = ioam_domain::options_where(hbh, known).collect();
            let flow = FlowIds::of(buf.data());
            for o in n {
                self.export(cx, ExportEvent::Transit, out_dev, flow, o);
            }
        }
        Ok(())
    }

    /// Direct Export (RFC 9326 §3): for every DEX option of the Hop-by-Hop header `h` in a namespace this node
    /// knows, this node's data for the option's trace type goes to the exporter; the packet is not changed.
    fn direct_export(
        &mut self,
        cx: &Cx<'_, '_>,
        buf: &PacketBuf,
        h: exthdr::ExtHeader,
        out_dev: Option<DevId>,
        ctx: &FillContext,
    ) {
        let hbh = &buf.data()[h.offset..h.offset + h.len];
        let is_dex = |o: &[u8]| o.len() >= 12 && o[3] == crate::wire::ioam::OPT_TYPE_DEX;
        let mut flow = None;
        for o in ioam_domain::options_where(hbh, is_dex) {
            let f = *flow.get_or_insert_with(|| FlowIds::of(buf.data()));
            self.export_dex(cx, o, f, out_dev, ctx);
        }
    }

    /// Exports this node's data for the Direct Export option `o` (from its type byte), if its namespace is known
    /// here: the fields of the option's trace type, written as into a trace.
    pub(super) fn export_dex(
        &mut self,
        cx: &Cx<'_, '_>,
        o: &[u8],
        flow: Option<FlowIds>,
        out_dev: Option<DevId>,
        ctx: &FillContext,
    ) {
        let Some(o) = o
            .get(1)
            .and_then(|&l| o.get(..2 + usize::from(l)))
            .filter(|o| o.len() >= 12)
        else {
            return;
        };
        let ns = u16::from_be_bytes([o[4], o[5]]);
        let Some(node) = cx.snap.ioam.node_data(ns, ctx) else {
            return;
        };
        let ty = u32::from_be_bytes([0, o[8], o[9], o[10]]);
        let words = crate::wire::ioam::block_words(ty, node.schema.map(|(_, d)| d.len()));
        let mut block = vec![0; 4 * words];
        crate::wire::ioam::write_node(&mut block, ty, &node);
        let r = IoamRecord {
            ts_ns: cx.ts,
            event: ExportEvent::DirectExport,
            in_dev: cx.in_dev,
            out_dev,
            flow,
            option: o.to_vec(),
            node: block,
        };
        if self.ioam_export.push(r) {
            self.stats.ioam.exported += 1;
        } else {
            self.stats.ioam.export_lost += 1;
        }
    }

    /// Queues one trace for export (counted as exported, or lost when the queue is full).
    pub(super) fn export(
        &mut self,
        cx: &Cx<'_, '_>,
        event: ExportEvent,
        out_dev: Option<DevId>,
        flow: Option<FlowIds>,
        option: &[u8],
    ) {
        if !self.ioam_export.enabled() {
            return;
        }
        let r = IoamRecord {
            ts_ns: cx.ts,
            event,
            in_dev: cx.in_dev,
            out_dev,
            flow,
            option: option.to_vec(),
            node: Vec::new(),
        };
        if self.ioam_export.push(r) {
            self.stats.ioam.exported += 1;
        } else {
            self.stats.ioam.export_lost += 1;
        }
    }

    /// IOAM domain ingress roles: IOAM of a domain arriving on an interface that is not one of the domain's
    /// ingresses is dropped (`foreign drop`) or removed (`foreign strip`); so is a trace larger than its domain's
    /// `maxsize` (`oversize drop|strip`). Returns the Hop-by-Hop header as it now is, or None when it went
    /// entirely (the packet is then processed again from its IPv6 header).
    pub(super) fn ioam_ingress(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        h: exthdr::ExtHeader,
    ) -> Result<Option<exthdr::ExtHeader>, DropReason> {
        let (domains, in_dev) = (&cx.snap.ioam.domains, cx.in_dev);
        let refused = |o: &[u8]| {
            domains
                .of_option(o)
                .is_some_and(|d| !d.ingress[in_dev] || d.too_big(o))
        };
        let hbh = &buf.data()[h.offset..h.offset + h.len];
        let (mut foreign, mut oversize) = (0, 0);
        for o in ioam_domain::options_where(hbh, refused) {
            let Some(d) = domains.of_option(o) else {
                continue;
            };
            let (action, reason, n) = if !d.ingress[in_dev] {
                (d.foreign, DropReason::IoamForeign, &mut foreign)
            } else {
                (d.oversize, DropReason::IoamOversize, &mut oversize)
            };
            if action == IoamForeign::Drop {
                return Err(reason);
            }
            *n += 1;
        }
        if foreign + oversize == 0 {
            return Ok(Some(h));
        }
        let len = buf.len();
        ioam_domain::strip_options(buf, h.len, refused)?;
        self.stats.ioam.foreign_stripped += foreign;
        self.stats.ioam.oversize_stripped += oversize;
        note!(cx, b = &*buf, |t| {
            t.push(Step::IoamDomain {
                action: if oversize == 0 {
                    "foreign_stripped"
                } else if foreign == 0 {
                    "oversize_stripped"
                } else {
                    "stripped"
                },
                options: (foreign + oversize) as usize,
                removed: len - b.len(),
            })
        });
        if buf.data()[6] != proto::HOPOPTS {
            return Ok(None);
        }
        exthdr::Walker::new(buf.data())
            .next()
            .and_then(|h| h.ok())
            .map(Some)
            .ok_or(DropReason::ExtHeaderMalformed)
    }

    /// The IOAM tunnel endpoint: a packet addressed to us whose Hop-by-Hop header (of `hbh_len` bytes) carries
    /// IOAM of a domain and is followed by an IPv6 packet loses its outer header and Hop-by-Hop header; every
    /// trace of a domain is exported. Returns whether it was decapsulated.
    pub(super) fn ioam_decap(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        hbh_len: usize,
    ) -> Result<bool, DropReason> {
        let domains = &cx.snap.ioam.domains;
        let at = ipv6::HEADER_LEN;
        let in_domain = |o: &[u8]| domains.of_option(o).is_some();
        let hbh = &buf.data()[at..at + hbh_len];
        if ioam_domain::options_where(hbh, in_domain).next().is_none() {
            return Ok(false);
        }
        let traced = if cx.traced() {
            ioam_domain::options_where(hbh, in_domain).count()
        } else {
            0
        };
        if self.ioam_export.enabled() {
            let flow = FlowIds::of(&buf.data()[at + hbh_len..]);
            let opts: Vec<Vec<u8>> = ioam_domain::options_where(hbh, in_domain)
                .map(|o| o.to_vec())
                .collect();
            for o in &opts {
                self.export(cx, ExportEvent::Decap, None, flow, o);
            }
        }
        buf.pull_front(at + hbh_len)
            .map_err(|_| DropReason::ExtHeaderMalformed)?;
        self.stats.ioam.decapsulated += 1;
        note!(cx, |t| {
            t.push(Step::IoamDomain {
                action: "decapsulated",
                options: traced,
                removed: at + hbh_len,
            })
        });
        Ok(true)
    }

    /// IOAM domain egress roles: IOAM of a domain about to leave by `dev`, which is not an egress of the domain,
    /// is removed (the whole Hop-by-Hop header when nothing else is in it) and exported.
    pub(super) fn ioam_egress(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &mut PacketBuf,
        hbh_len: usize,
        dev: DevId,
    ) -> Verdict {
        let domains = &cx.snap.ioam.domains;
        let leaving = |o: &[u8]| domains.of_option(o).is_some_and(|d| !d.egress[dev]);
        let at = ipv6::HEADER_LEN;
        let hbh = &buf.data()[at..at + hbh_len];
        let opts: Vec<Vec<u8>> = ioam_domain::options_where(hbh, leaving)
            .map(|o| o.to_vec())
            .collect();
        if opts.is_empty() {
            return Ok(());
        }
        let len = buf.len();
        ioam_domain::strip_options(buf, hbh_len, leaving)?;
        self.stats.ioam.removed += opts.len() as u64;
        note!(cx, b = &*buf, n_opts = opts.len(), |t| {
            t.push(Step::IoamDomain {
                action: "removed",
                options: n_opts,
                removed: len - b.len(),
            })
        });
        let flow = FlowIds::of(buf.data());
        for o in &opts {
            self.export(cx, ExportEvent::Egress, Some(dev), flow, o);
        }
        Ok(())
    }

    /// The option checks of an options header `h` ([`hop_options::check`]), with the ICMPv6 Parameter Problem
    /// (code 2, pointing at the option) an unrecognised option's action asks for.
    pub(super) fn check_options(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &PacketBuf,
        h: exthdr::ExtHeader,
    ) -> Verdict {
        let Err(p) = hop_options::check(&buf.data()[h.offset..h.offset + h.len]) else {
            return Ok(());
        };
        if let Some(at) = p.param_problem
            && !cx.group
        {
            let pointer = (h.offset + at) as u32;
            let err = IcmpError::ParamProblem { code: 2, pointer };
            self.icmp_error(cx, buf.data(), err);
        }
        Err(p.reason)
    }
}
