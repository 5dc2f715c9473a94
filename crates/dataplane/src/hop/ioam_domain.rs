//! IOAM domains (RFC 9197 §5.4, RFC 9486 §5; the interface roles of the first Linux IOAM implementation,
//! docs/ioam.md): IOAM data of a domain's namespaces enters the node only through the domain's ingress
//! interfaces, leaves it only through its egress interfaces, and is removed — and handed to the exporter — where
//! it would leave the domain: at an interface that is not an egress (inline mode), or at the tunnel endpoint
//! (encap mode: the outer IPv6 header goes, the inner packet is processed again).
//!
//! Without a configured domain nothing here runs and lwt6 behaves as Linux does.

use crate::buffer::PacketBuf;
use crate::fib::DevId;
use crate::spec::{Config, ConfigError, IoamForeign};
use crate::stats::DropReason;
use crate::wire::hbh::{self, Removal};
use crate::wire::{exthdr, ipv6, proto};
use std::collections::HashMap;
use std::net::Ipv6Addr;

/// One domain as the packet path uses it.
#[derive(Debug, Clone)]
pub struct Domain {
    /// Its name.
    pub name: String,
    /// Per device (indexed by [`DevId`]): IOAM of the domain may arrive there.
    pub ingress: Vec<bool>,
    /// Per device: IOAM of the domain may leave there.
    pub egress: Vec<bool>,
    /// IOAM arriving elsewhere: dropped or stripped.
    pub foreign: IoamForeign,
    /// The largest trace data an option of the domain may carry (`maxsize`; `usize::MAX` without one).
    pub max_size: usize,
    /// A larger trace: dropped or stripped.
    pub oversize: IoamForeign,
}

impl Domain {
    /// Whether the IOAM option `opt` (from its type byte) is a trace (pre-allocated or incremental, RFC 9197
    /// §4.4) whose data — the octets after its 8-octet trace header — are more than the domain allows.
    pub fn too_big(&self, opt: &[u8]) -> bool {
        // Type, length, Reserved, IOAM Option-Type, then the trace header (RFC 9486 §3, RFC 9197 §4.4.1).
        const DATA_AT: usize = 4 + crate::wire::ioam::TRACE_HDR_LEN;
        matches!(
            opt.get(3),
            Some(
                &(crate::wire::ioam::OPT_TYPE_PREALLOC_TRACE
                    | crate::wire::ioam::OPT_TYPE_INCREMENTAL_TRACE)
            )
        ) && opt.len().saturating_sub(DATA_AT) > self.max_size
    }
}

/// Every configured domain, by namespace.
#[derive(Debug, Clone, Default)]
pub struct Domains {
    domains: Vec<Domain>,
    by_ns: HashMap<u16, usize, crate::fib::FastBuild>,
}

/// The namespace of an IOAM option given from its type byte: every IOAM option type (RFC 9197 §4.4–§4.6,
/// RFC 9326 §3.2) starts its data with Reserved (8), IOAM Option-Type (8), then the 16-bit Namespace-ID.
pub fn option_namespace(opt: &[u8]) -> Option<u16> {
    (opt.first() == Some(&hbh::OPT_IOAM) && opt.len() >= 6 && opt[1] >= 4)
        .then(|| u16::from_be_bytes([opt[4], opt[5]]))
}

impl Domains {
    /// The domains of `cfg`; `dev` maps a device name to its id.
    pub fn build(
        cfg: &Config,
        n_devs: usize,
        dev: impl Fn(&str) -> Option<DevId>,
    ) -> Result<Domains, ConfigError> {
        let mut out = Domains::default();
        for d in &cfg.ioam_domains {
            let roles = |names: &[String]| -> Result<Vec<bool>, ConfigError> {
                let mut v = vec![false; n_devs];
                for n in names {
                    let id = dev(n).ok_or_else(|| ConfigError {
                        line: d.line,
                        token: n.clone(),
                        reason: "no such device".into(),
                    })?;
                    v[id] = true;
                }
                Ok(v)
            };
            let idx = out.domains.len();
            out.domains.push(Domain {
                name: d.name.clone(),
                ingress: roles(&d.ingress)?,
                egress: roles(&d.egress)?,
                foreign: d.foreign,
                max_size: d.max_size.map_or(usize::MAX, usize::from),
                oversize: d.oversize,
            });
            for ns in &d.namespaces {
                out.by_ns.insert(*ns, idx);
            }
        }
        Ok(out)
    }

    /// Whether no domain is configured (the packet path then skips every domain check).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }

    /// The domain of namespace `ns`.
    pub fn of(&self, ns: u16) -> Option<&Domain> {
        self.by_ns.get(&ns).map(|i| &self.domains[*i])
    }

    /// The domain of the IOAM option `opt` (from its type byte), if it is an IOAM option of a domain.
    pub fn of_option(&self, opt: &[u8]) -> Option<&Domain> {
        option_namespace(opt).and_then(|ns| self.of(ns))
    }
}

/// Why a trace was handed to the exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportEvent {
    /// Removed where the packet leaves the domain by an interface that is not an egress (inline mode).
    Egress,
    /// Removed with the outer header at the tunnel endpoint (encap mode).
    Decap,
    /// Seen (and filled) in transit; only with transit export on.
    Transit,
    /// A Direct Export option (RFC 9326) seen in a namespace this node knows: the node's data goes to the
    /// exporter instead of into the packet.
    DirectExport,
}

impl ExportEvent {
    /// The name used in exported records.
    pub fn name(self) -> &'static str {
        match self {
            ExportEvent::Egress => "egress",
            ExportEvent::Decap => "decap",
            ExportEvent::Transit => "transit",
            ExportEvent::DirectExport => "direct_export",
        }
    }
}

/// The flow a trace travelled with: the (inner) packet's addresses, flow label, upper-layer protocol and ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowIds {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Flow label.
    pub flow_label: u32,
    /// Upper-layer protocol (after the extension headers).
    pub proto: u8,
    /// Source and destination ports (TCP, UDP), else none.
    pub ports: Option<(u16, u16)>,
}

impl FlowIds {
    /// The flow of the IPv6 packet `pkt` (None when it is not one).
    pub fn of(pkt: &[u8]) -> Option<FlowIds> {
        let p = ipv6::Packet::new_checked(pkt).ok()?;
        let (up, off) = exthdr::chain(pkt)
            .map(|c| (c.upper_proto, c.upper_offset))
            .unwrap_or((p.next_header(), ipv6::HEADER_LEN));
        let ports = match up {
            proto::TCP | proto::UDP => pkt.get(off..off + 4).map(|b| {
                (
                    u16::from_be_bytes([b[0], b[1]]),
                    u16::from_be_bytes([b[2], b[3]]),
                )
            }),
            _ => None,
        };
        Some(FlowIds {
            src: p.src_addr(),
            dst: p.dst_addr(),
            flow_label: p.flow_label(),
            proto: up,
            ports,
        })
    }
}

/// One trace for the exporter: the IOAM option as it was (its bytes from the type byte), and where and when.
/// Decoding happens in the exporter, off the packet path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoamRecord {
    /// Receive time of the packet, nanoseconds since the epoch.
    pub ts_ns: u64,
    /// Why it was exported.
    pub event: ExportEvent,
    /// The interface the packet arrived on.
    pub in_dev: DevId,
    /// The interface it leaves by (None at a tunnel endpoint before the inner packet is routed).
    pub out_dev: Option<DevId>,
    /// The flow.
    pub flow: Option<FlowIds>,
    /// The IOAM option bytes, from its type byte.
    pub option: Vec<u8>,
    /// For [`ExportEvent::DirectExport`]: this node's data block, laid out for the option's trace type (RFC 9197
    /// §4.4.2 order); empty otherwise.
    pub node: Vec<u8>,
}

/// A worker's export queue: bounded, never blocking. A record that does not fit is counted as lost.
#[derive(Debug, Clone, Default)]
pub struct ExportQueue {
    /// Most records held before they are taken ([`ExportQueue::take`]); 0 turns export off.
    pub capacity: usize,
    /// Also export every trace this node fills in transit.
    pub transit: bool,
    /// Records waiting to be taken.
    pub records: Vec<IoamRecord>,
    /// Records refused because the queue was full, since the last [`ExportQueue::take`].
    pub lost: u64,
}

impl ExportQueue {
    /// Whether export is on.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Queues a record, or counts it lost when the queue is full.
    pub fn push(&mut self, r: IoamRecord) -> bool {
        if self.records.len() >= self.capacity {
            self.lost += 1;
            return false;
        }
        self.records.push(r);
        true
    }

    /// Takes the queued records (leaving an empty queue of the same capacity).
    pub fn take(&mut self) -> Vec<IoamRecord> {
        let cap = self.records.capacity().max(self.capacity.min(1024));
        std::mem::replace(&mut self.records, Vec::with_capacity(cap))
    }
}

/// Removes the options `remove` selects from the Hop-by-Hop header of the IPv6 packet in `buf` (which starts
/// at its IPv6 header, the Hop-by-Hop header `hbh_len` bytes at offset 40), or the whole header when only
/// padding would stay (its next header then goes into the IPv6 header). The payload length follows.
/// Returns whether anything was removed.
pub fn strip_options(
    buf: &mut PacketBuf,
    hbh_len: usize,
    remove: impl FnMut(&[u8]) -> bool,
) -> Result<bool, DropReason> {
    const H: usize = ipv6::HEADER_LEN;
    let data = buf.data_mut();
    let hdr = data
        .get_mut(H..H + hbh_len)
        .ok_or(DropReason::ExtHeaderMalformed)?;
    let cut = match hbh::remove_options(hdr, remove).map_err(|_| DropReason::ExtHeaderMalformed)? {
        Removal::Unchanged => return Ok(false),
        Removal::Shrunk(n) => {
            // The header now ends at H + n; the bytes up to H + hbh_len go: move what is in front of them.
            data.copy_within(..H + n, hbh_len - n);
            hbh_len - n
        }
        Removal::Empty => {
            let nh = data[H];
            data[6] = nh;
            data.copy_within(..H, hbh_len);
            hbh_len
        }
    };
    buf.pull_front(cut)
        .map_err(|_| DropReason::ExtHeaderMalformed)?;
    let data = buf.data_mut();
    let plen = u16::from_be_bytes([data[4], data[5]]) as usize;
    let plen = plen.checked_sub(cut).ok_or(DropReason::Ipv6Malformed)?;
    data[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
    Ok(true)
}

/// The IOAM options (from their type bytes) of the Hop-by-Hop header `hbh` (its whole length) that `pick`
/// selects, for export.
pub fn options_where<'a>(
    hbh: &'a [u8],
    mut pick: impl FnMut(&[u8]) -> bool + 'a,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    hbh::OptionIter::new(hbh)
        .map_while(|o| o.ok())
        .filter(|o| o.ty == hbh::OPT_IOAM)
        .map(move |o| &hbh[o.offset..o.data_offset() + o.data_len])
        .filter(move |o| pick(o))
}
