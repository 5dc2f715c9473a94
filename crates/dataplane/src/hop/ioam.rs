//! IOAM transit processing (docs/references.md §2.4): for each IOAM option of a received Hop-by-Hop header,
//! in Linux's order of checks, fill this node's data into the pre-allocated trace.

use crate::stats::DropReason;
use crate::wire::hbh;
use crate::wire::ioam::{self, NodeData, TraceOption};
use std::collections::HashMap;

/// An IOAM namespace as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// 32-bit namespace data.
    pub data: u32,
    /// 64-bit namespace wide data.
    pub wide: u64,
    /// Attached schema: id and data padded to a multiple of 4 bytes.
    pub schema: Option<(u32, Vec<u8>)>,
}

/// This node's IOAM identity.
#[derive(Debug, Clone, Default)]
pub struct IoamNode {
    /// `net.ipv6.ioam6_id`.
    pub node_id: u32,
    /// `net.ipv6.ioam6_id_wide`.
    pub node_id_wide: u64,
    /// Namespaces by id.
    pub namespaces: HashMap<u16, Namespace, crate::fib::FastBuild>,
    /// IOAM domains (interface roles; empty: Linux's behaviour).
    pub domains: super::ioam_domain::Domains,
}

/// Interface identifiers (per-interface `ioam6_id`, `ioam6_id_wide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfIds {
    /// 16-bit id.
    pub id: u16,
    /// 32-bit wide id.
    pub wide: u32,
}

impl IfIds {
    /// An interface's ids, from its sysctls.
    pub fn of(s: &crate::spec::DevSysctls) -> IfIds {
        IfIds {
            id: s.ioam6_id,
            wide: s.ioam6_id_wide,
        }
    }
}

/// The "unavailable" interface ids (no device, or loopback egress).
pub const NO_IF: IfIds = IfIds {
    id: 0xFFFF,
    wide: 0xFFFF_FFFF,
};

/// Everything about the packet and its path that the fill needs.
#[derive(Debug, Clone, Copy)]
pub struct FillContext {
    /// Hop limit to record.
    pub hop_limit: u8,
    /// Ingress interface ids.
    pub ingress: IfIds,
    /// Egress interface ids ([`NO_IF`] for local delivery).
    pub egress: IfIds,
    /// Receive timestamp, nanoseconds since the epoch.
    pub ts_ns: u64,
}

impl IoamNode {
    /// The node data to write for namespace `ns` (None when the namespace is not configured).
    pub fn node_data<'a>(&'a self, ns: u16, ctx: &FillContext) -> Option<NodeData<'a>> {
        let n = self.namespaces.get(&ns)?;
        Some(NodeData {
            hop_limit: ctx.hop_limit,
            node_id: self.node_id,
            ingress_id: ctx.ingress.id,
            egress_id: ctx.egress.id,
            ts_sec: (ctx.ts_ns / 1_000_000_000) as u32,
            ts_frac: ((ctx.ts_ns % 1_000_000_000) / 1000) as u32,
            ns_data: n.data,
            // lwt6 has no qdisc: the backlog is 0 bytes, as Linux reports on a noqueue device.
            queue_depth: 0,
            node_id_wide: self.node_id_wide,
            ingress_wide: ctx.ingress.wide,
            egress_wide: ctx.egress.wide,
            ns_data_wide: n.wide,
            schema: n.schema.as_ref().map(|(id, d)| (*id, d.as_slice())),
        })
    }

    /// Fills this node's data into the IOAM option that starts at `opt` (its type byte), if the namespace is
    /// known. Returns whether anything was written or flagged.
    pub fn fill_option(&self, opt: &mut [u8], ctx: &FillContext) -> Result<bool, DropReason> {
        let mut view = TraceOption::new_checked(opt).map_err(|_| DropReason::IoamMalformed)?;
        let Some(node) = self.node_for(&view, ctx)? else {
            return Ok(false);
        };
        ioam::fill(&mut view, &node).map_err(|_| DropReason::IoamMalformed)?;
        Ok(true)
    }

    /// This node's data for the namespace of the trace `view` (None if the namespace is unknown here).
    fn node_for<T: AsRef<[u8]>>(
        &self,
        view: &TraceOption<T>,
        ctx: &FillContext,
    ) -> Result<Option<NodeData<'_>>, DropReason> {
        let hdr = view.header().map_err(|_| DropReason::IoamMalformed)?;
        Ok(self.node_data(hdr.namespace, ctx))
    }

    /// [`fill_option`](Self::fill_option) for an option just copied from a header template: reads the template's
    /// copy (`template`, from its type byte) and only writes the packet's (`opt`), see
    /// [`ioam::fill_from_template`].
    pub fn fill_option_from(
        &self,
        template: &[u8],
        opt: &mut [u8],
        ctx: &FillContext,
    ) -> Result<bool, DropReason> {
        let view = TraceOption::new_checked(template).map_err(|_| DropReason::IoamMalformed)?;
        let Some(node) = self.node_for(&view, ctx)? else {
            return Ok(false);
        };
        ioam::fill_from_template(&view, opt, &node).map_err(|_| DropReason::IoamMalformed)?;
        Ok(true)
    }

    /// Fills this node's data, as the inserting node, into every trace of `hbh` (a Hop-by-Hop header an ioam6
    /// plan's template holds; its options at `opt_offsets`), with the egress ids of the plan's device and
    /// placeholders where values that change per packet go (hop limit, ingress ids, timestamp). Returns those
    /// places (offsets from the header's start), or None when a trace cannot be filled this way (then the header
    /// may be half written: bake a copy).
    pub fn bake(
        &self,
        hbh: &mut [u8],
        opt_offsets: &[usize],
        egress: IfIds,
    ) -> Option<Vec<(usize, crate::plan::IoamField)>> {
        use crate::plan::IoamField;
        let ctx = FillContext {
            hop_limit: 0,
            ingress: IfIds { id: 0, wide: 0 },
            egress,
            ts_ns: 0,
        };
        let mut ops = Vec::new();
        for &off in opt_offsets {
            let opt = hbh.get_mut(off..)?;
            let len = 2 + usize::from(*opt.get(1)?);
            let opt = opt.get_mut(..len)?;
            let before = ioam::TraceHeader::parse(opt.get(4..12)?).ok()?;
            self.fill_option(opt, &ctx).ok()?;
            let after = ioam::TraceHeader::parse(&opt[4..12]).ok()?;
            if after.remaining_len >= before.remaining_len {
                // Unknown namespace or no room (Overflow set): the same for every packet, nothing to patch.
                continue;
            }
            // The node block starts at the new end of the free space (RFC 9197 §4.4.1).
            let block = off + 12 + 4 * usize::from(after.remaining_len);
            let f = ioam::node_field_offsets(before.trace_type);
            for at in f.hop_limit.into_iter().flatten() {
                ops.push((block + at, IoamField::HopLimit));
            }
            for (at, what) in [
                (f.ingress_id, IoamField::IngressId),
                (f.ingress_wide, IoamField::IngressWide),
                (f.ts_sec, IoamField::TsSec),
                (f.ts_frac, IoamField::TsFrac),
            ] {
                if let Some(at) = at {
                    ops.push((block + at, what));
                }
            }
        }
        Some(ops)
    }

    /// Checks 3 to 8 of Linux's transit processing for one IOAM option `bytes` (from its type byte, exactly
    /// `2 + Opt Data Len` bytes) that is 4n-aligned and arrived on an interface with `ioam6_enabled`: fills this
    /// node's data into a pre-allocated trace of a namespace it knows. Returns whether it filled the trace.
    fn transit_option(&self, bytes: &mut [u8], ctx: &FillContext) -> Result<bool, DropReason> {
        let data_len = bytes.len() - 2;
        // 3. opt_len < 2.
        if data_len < 2 {
            return Err(DropReason::IoamMalformed);
        }
        // 4. Only the pre-allocated trace is processed.
        if bytes[3] != ioam::OPT_TYPE_PREALLOC_TRACE {
            return Ok(false);
        }
        // 5. Long enough for the trace header and the announced free space.
        if data_len < 10 {
            return Err(DropReason::IoamMalformed);
        }
        let h = ioam::TraceHeader::parse(&bytes[4..12]).map_err(|_| DropReason::IoamMalformed)?;
        if data_len < 10 + 4 * h.remaining_len as usize {
            return Err(DropReason::IoamMalformed);
        }
        // 6. NodeLen must match the trace type (Linux, Feb 2026).
        if h.node_len != ioam::node_len_for_type(h.trace_type) {
            return Err(DropReason::IoamNodeLenMismatch);
        }
        // 7.-8. Unknown namespace: ignored; otherwise fill.
        self.fill_option(bytes, ctx)
    }

    /// Whether a received packet `ip` (from its IPv6 header, `in_dev` to `out_dev`) can take planned transit (the
    /// fast path; docs/ioam.md, *Performance*): its Hop-by-Hop header is laid out as lwt6 and Linux insert traces
    /// — PadN(0), then pre-allocated traces one after the other (each a multiple of 4 octets), then PadN(2) or
    /// nothing —, holds no more options than Linux accepts, and every trace of a domain may come in by `in_dev`,
    /// leave by `out_dev` and is not larger than the domain allows. Anything else is the general path's to decide.
    /// Reads only; [`Self::transit_fill`] then fills the copy being sent.
    pub fn transit_plannable(&self, ip: &[u8], in_dev: usize, out_dev: usize) -> bool {
        let domains = !self.domains.is_empty();
        Self::planned_traces(ip, |opt| {
            !domains
                || self
                    .domains
                    .of_option(opt)
                    .is_none_or(|d| d.ingress[in_dev] && d.egress[out_dev] && !d.too_big(opt))
        })
        .is_some()
    }

    /// Planned transit's fill, on the copy `ip` of a packet [`Self::transit_plannable`] accepted: every trace
    /// filled as [`Self::transit`] would (`enabled`: the ingress interface's `ioam6_enabled`). Returns the number
    /// of traces filled, or None when a check fails (the general path then drops the packet with its reason).
    pub fn transit_fill(&self, ip: &mut [u8], enabled: bool, ctx: &FillContext) -> Option<u32> {
        if !enabled {
            return Some(0);
        }
        const H: usize = 40;
        let len = (usize::from(ip[H + 1]) + 1) * 8;
        let hbh = &mut ip[H..H + len];
        let (mut at, mut filled) = (4, 0);
        while at < len && hbh[at] == hbh::OPT_IOAM {
            let end = at + 2 + usize::from(hbh[at + 1]);
            filled += u32::from(self.transit_option(&mut hbh[at..end], ctx).ok()?);
            at = end;
        }
        Some(filled)
    }

    /// Walks the planned layout of the Hop-by-Hop header of `ip` (see [`Self::transit_plannable`]), asking `each`
    /// about each trace option (from its type byte); None when the header is laid out otherwise or `each` refuses
    /// an option.
    fn planned_traces(ip: &[u8], mut each: impl FnMut(&[u8]) -> bool) -> Option<()> {
        const H: usize = 40;
        let len = (usize::from(*ip.get(H + 1)?) + 1) * 8;
        let hbh = ip.get(H..H + len)?;
        if hbh[2..4] != [hbh::OPT_PADN, 0] {
            return None;
        }
        let (mut at, mut options) = (4, 0);
        while at < len {
            if len - at == 4 && hbh[at..] == [hbh::OPT_PADN, 2, 0, 0] {
                break;
            }
            if hbh[at] != hbh::OPT_IOAM
                || len - at < 12
                || hbh[at + 3] != ioam::OPT_TYPE_PREALLOC_TRACE
            {
                return None;
            }
            let end = at + 2 + usize::from(hbh[at + 1]);
            options += 1;
            if end > len || !end.is_multiple_of(4) || options > super::options::MAX_OPTIONS {
                return None;
            }
            if !each(&hbh[at..end]) {
                return None;
            }
            at = end;
        }
        Some(())
    }

    /// Transit processing of one received Hop-by-Hop header `hbh` (exactly its length), which sits at
    /// `hbh_offset` from the start of the IPv6 header. `enabled` is the ingress interface's `ioam6_enabled`.
    /// Returns the number of traces filled.
    pub fn transit(
        &self,
        hbh: &mut [u8],
        hbh_offset: usize,
        enabled: bool,
        ctx: &FillContext,
    ) -> Result<u32, DropReason> {
        let mut filled = 0;
        let mut at = 2;
        while at < hbh.len() {
            // Walk the options by hand (RFC 8200 §4.2 TLV encoding) so the header can be written while walking.
            let opt = if hbh[at] == hbh::OPT_PAD1 {
                hbh::OptionRef {
                    ty: hbh::OPT_PAD1,
                    offset: at,
                    data_len: 0,
                }
            } else {
                let Some(&len) = hbh.get(at + 1) else {
                    return Err(DropReason::ExtHeaderMalformed);
                };
                if at + 2 + len as usize > hbh.len() {
                    return Err(DropReason::ExtHeaderMalformed);
                }
                hbh::OptionRef {
                    ty: hbh[at],
                    offset: at,
                    data_len: len as usize,
                }
            };
            at = opt.data_offset() + opt.data_len;
            match opt.ty {
                hbh::OPT_PAD1 | hbh::OPT_PADN => {}
                hbh::OPT_IOAM => {
                    // 1. The option must start 4n-aligned from the IPv6 header.
                    if !(hbh_offset + opt.offset).is_multiple_of(4) {
                        return Err(DropReason::IoamMalformed);
                    }
                    // 2. Ignored unless enabled on the ingress interface.
                    if !enabled {
                        continue;
                    }
                    let bytes = &mut hbh[opt.offset..opt.offset + 2 + opt.data_len];
                    if self.transit_option(bytes, ctx)? {
                        filled += 1;
                    }
                }
                ty => {
                    // RFC 8200 §4.2: the two high-order bits say what to do with an unrecognised option.
                    if ty >> 6 != 0 {
                        return Err(DropReason::UnknownOption);
                    }
                }
            }
        }
        Ok(filled)
    }
}
