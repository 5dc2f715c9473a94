//! Counters: every received frame ends as exactly one of "sent" (forwarded, or answered: an echo or neighbour
//! reply), "dropped for a named reason", "consumed" (a neighbour advertisement or ARP reply, taken in by the node)
//! or, for as long as it waits for its next hop to be resolved, "pending".
//!
//! Counters are plain integers owned by one worker (no atomics on the packet path); a reader merges them.

use crate::spec::TunnelKind;
use serde::Serialize;
use std::collections::BTreeMap;

macro_rules! drop_reasons {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// Why a frame was dropped. Each reason has a stable snake_case name used in `--stats` output.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DropReason {
            $($(#[$doc])* $variant,)*
        }

        impl DropReason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant,)*];
            /// How many reasons there are.
            pub const COUNT: usize = Self::ALL.len();

            /// The stable name.
            pub fn name(self) -> &'static str {
                match self {
                    $(DropReason::$variant => $name,)*
                }
            }
        }
    };
}

drop_reasons! {
    /// Frame shorter than an Ethernet header.
    EthernetTruncated => "ethernet_truncated",
    /// Destination MAC is neither ours, broadcast nor multicast.
    NotForUs => "not_for_us",
    /// Frame longer than the ingress link's MTU plus an Ethernet header and one VLAN tag: what a Linux NIC or veth
    /// refuses to receive.
    FrameTooLong => "frame_too_long",
    /// A packet that would be forwarded or source-routed arrived in an Ethernet broadcast or multicast frame; Linux
    /// forwards only frames addressed to the interface (`PACKET_HOST`).
    GroupAddressedFrame => "l2_group_addressed",
    /// EtherType other than IPv6 / IPv4.
    UnsupportedEthertype => "unsupported_ethertype",
    /// IPv6 header invalid (length, version, payload length).
    Ipv6Malformed => "ipv6_malformed",
    /// IPv4 header invalid (version, IHL, total length, checksum).
    Ipv4Malformed => "ipv4_malformed",
    /// The extension-header chain is truncated or misordered.
    ExtHeaderMalformed => "exthdr_malformed",
    /// Options header with more than 7 bytes of padding in a row or PadN data that is not zero (RFC 4942
    /// §2.1.9.5; Linux drops these).
    BadPadding => "exthdr_bad_padding",
    /// Options header with more than 8 options that are not padding (Linux's default `max_hbh_opts_number`).
    TooManyOptions => "exthdr_too_many_options",
    /// Loopback source or destination, or unspecified source (RFC 4291 §2.5.2, §2.5.3), dropped on receipt as
    /// Linux does.
    ForbiddenAddress => "forbidden_address",
    /// Multicast destination (lwt6 does not route multicast).
    Multicast => "multicast_destination",
    /// Link-local source or destination cannot be forwarded.
    ScopeViolation => "scope_violation",
    /// Addressed to this router; lwt6 has no host stack to deliver it to.
    LocalDelivery => "local_delivery",
    /// Forwarding disabled on the ingress interface.
    ForwardingDisabled => "forwarding_disabled",
    /// Hop limit (or TTL) expired; an ICMPv6 Time Exceeded was sent.
    HopLimitExceeded => "hop_limit_exceeded",
    /// No route to the destination; an ICMPv6 Destination Unreachable was sent.
    NoRoute => "no_route",
    /// Matched a `blackhole` route (mirrored from the kernel): dropped silently.
    BlackholeRoute => "blackhole_route",
    /// Matched an `unreachable` route; an ICMPv6 Destination Unreachable (code 0) was sent.
    UnreachableRoute => "unreachable_route",
    /// Matched a `prohibit` route; an ICMPv6 Destination Unreachable (code 1, administratively prohibited) was
    /// sent.
    ProhibitedRoute => "prohibited_route",
    /// Matched a kernel multipath route, which lwt6 does not forward over: dropped rather than forwarded
    /// through a shorter route.
    MultipathRoute => "multipath_route",
    /// No static neighbour entry for the next hop (offline mode has no neighbour discovery).
    NoNeighbour => "no_neighbour",
    /// No usable source address for a tunnel's outer header.
    NoSourceAddress => "no_source_address",
    /// Larger than the egress MTU; an ICMPv6 Packet Too Big was sent to the original sender.
    MtuExceeded => "mtu_exceeded",
    /// A route reached after encapsulation carries a tunnel again (loop guard).
    TunnelLoop => "tunnel_loop",
    /// seg6 HMAC text would exceed 255 bytes (more than 14 segments): Linux drops with -EMSGSIZE.
    HmacTooLong => "seg6_hmac_too_long",
    /// seg6 route names an HMAC key id that is not configured.
    HmacKeyMissing => "seg6_hmac_key_missing",
    /// The packet's protocol cannot be carried by this tunnel (e.g. IPv4 into an IPv6-only tunnel).
    TunnelProtoMismatch => "tunnel_protocol_mismatch",
    /// The packet would exceed 65535 bytes of IPv6 payload after encapsulation.
    TooBig => "too_big",
    /// A Hop-by-Hop option whose type says "discard if unrecognised" (action bits 01, 10, 11; RFC 8200 §4.2).
    UnknownOption => "hbh_unknown_option",
    /// IOAM data of a domain arriving on an interface that is not an ingress of the domain (`foreign drop`).
    IoamForeign => "ioam_foreign",
    /// An IOAM trace of a domain larger than the domain's `maxsize` (`oversize drop`).
    IoamOversize => "ioam_oversize",
    /// IOAM option not 4n-aligned or too short for its RemainingLen.
    IoamMalformed => "ioam_malformed",
    /// IOAM NodeLen inconsistent with the trace type (Linux Feb 2026 rule).
    IoamNodeLenMismatch => "ioam_nodelen_mismatch",
    /// RPL source routing disabled on the ingress interface (`rpl_seg_enabled`).
    RplDisabled => "rpl_disabled",
    /// RPL header malformed (address count, lengths).
    RplMalformed => "rpl_malformed",
    /// RPL Segments Left out of range; ICMPv6 Parameter Problem sent.
    RplSegmentsLeft => "rpl_segments_left",
    /// RPL next address is multicast.
    RplMulticast => "rpl_multicast",
    /// RPL loop detected; ICMPv6 Parameter Problem sent.
    RplLoop => "rpl_loop",
    /// SRH to this node but `seg6_enabled` is off on the ingress interface.
    Seg6Disabled => "seg6_disabled",
    /// SRH malformed or Segments Left out of range.
    SrhMalformed => "srh_malformed",
    /// SRH HMAC missing (when required), with an unknown key, or not matching.
    HmacInvalid => "seg6_hmac_invalid",
    /// seg6local: no SRH where the behaviour needs one (or the first routing header is not an SRH), as Linux's
    /// `seg6_get_srh` finds it.
    Seg6LocalNoSrh => "seg6local_no_srh",
    /// seg6local: Segments Left 0 where the behaviour advances the SRH, or not 0 where it decapsulates.
    Seg6LocalSegmentsLeft => "seg6local_segments_left",
    /// seg6local: the inner packet is not the protocol the behaviour decapsulates (End.DX6: 41, End.DX4: 4,
    /// End.DX2: 143, End.DT46: 41 or 4).
    Seg6LocalNextHeader => "seg6local_next_header",
    /// seg6local PSP / USP: the SRH cannot be removed (a Fragment or Authentication header precedes it).
    Seg6LocalPopRefused => "seg6local_pop_refused",
    /// seg6local End.DX2: the inner frame's EtherType is below 0x600, or it does not fit the oif's MTU.
    Seg6LocalL2Frame => "seg6local_l2_frame",
    /// seg6local: the next destination is one of this router's addresses where the behaviour does not deliver
    /// locally (Linux swaps the local route for a blackhole).
    Seg6LocalLocalDst => "seg6local_local_destination",
    /// Routing header of a type lwt6 does not process, addressed to this node.
    UnknownRoutingType => "unknown_routing_type",
    /// The buffer was asked to grow twice for one packet (planning bug; never expected).
    BufferPlanning => "buffer_planning",
    /// A Neighbor Solicitation or Advertisement that fails the checks of RFC 4861 §7.1.1 / §7.1.2 (hop limit 255,
    /// code 0, checksum, length, options, target, source rules).
    NdpInvalid => "ndp_invalid",
    /// A Neighbor Solicitation for an address that is not ours (RFC 4861 §7.2.3: silently discarded).
    NdpOtherTarget => "ndp_other_target",
    /// An ARP packet that is not Ethernet/IPv4 request or reply, or is truncated.
    ArpInvalid => "arp_invalid",
    /// An ARP request for an address that is not ours.
    ArpOtherTarget => "arp_other_target",
    /// An ICMP (v4 or v6) echo request to us with a bad checksum or a truncated header.
    IcmpInvalid => "icmp_invalid",
    /// Dynamic resolution: the next hop's pending queue (or the total of all queues) is full.
    NeighQueueFull => "neigh_queue_full",
    /// Dynamic resolution: the next hop did not answer the last solicitation; an ICMPv6 address unreachable (or
    /// ICMPv4 host unreachable) was sent to the packet's source.
    NeighUnresolved => "neigh_unresolved",
}

impl Serialize for DropReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Frames dropped, by reason: one counter per [`DropReason`], indexed by it (no allocation, no map per packet;
/// merged across workers by adding arrays).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DropCounts([u64; DropReason::COUNT]);

impl Default for DropCounts {
    fn default() -> Self {
        DropCounts([0; DropReason::COUNT])
    }
}

impl DropCounts {
    /// Counts one drop.
    #[inline]
    pub fn add(&mut self, reason: DropReason, n: u64) {
        self.0[reason as usize] += n;
    }

    /// The count of `reason`, `None` when it is zero (as a map of the reasons seen would answer).
    pub fn get(&self, reason: &DropReason) -> Option<&u64> {
        Some(&self.0[*reason as usize]).filter(|n| **n > 0)
    }

    /// The reasons seen, with their counts, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|r| (*r, self.0[*r as usize]))
            .filter(|(_, n)| *n > 0)
    }

    /// Drops of every reason added up.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl<'a> IntoIterator for &'a DropCounts {
    type Item = (DropReason, u64);
    type IntoIter = Box<dyn Iterator<Item = (DropReason, u64)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl std::fmt::Debug for DropCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(r, n)| (r.name(), n)))
            .finish()
    }
}

/// Packets that had a tunnel applied, by kind (indexed by [`TunnelKind::index`]).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct TunnelCounts(pub [u64; TunnelKind::COUNT]);

impl TunnelCounts {
    /// The kinds applied at least once, with their counts, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        TunnelKind::ALL
            .iter()
            .zip(self.0)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.name(), n))
    }
}

impl<'a> IntoIterator for &'a TunnelCounts {
    type Item = (&'static str, u64);
    type IntoIter = Box<dyn Iterator<Item = (&'static str, u64)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl std::fmt::Debug for TunnelCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Per-worker counters: plain integers owned by one worker, merged by a reader ([`Stats::merge`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames received.
    pub rx: u64,
    /// Frames sent (forwarded or encapsulated) and frames answered (echo replies, neighbour advertisements, ARP
    /// replies), not counting ICMP errors.
    pub tx: u64,
    /// ICMPv6 and ICMPv4 error messages generated (sent in addition to `tx`).
    pub icmp_tx: u64,
    /// Frames the node took in without answering: neighbour advertisements, ARP replies, solicitations answered
    /// by nobody (none of these are forwarded or dropped).
    pub consumed: u64,
    /// Frames waiting now in a next hop's pending queue (dynamic resolution): a level, not a count; each leaves it
    /// as sent or dropped.
    pub pending: u64,
    /// Neighbour solicitations and ARP requests this worker sent to resolve next hops (in addition to `tx`).
    pub solicit_tx: u64,
    /// ICMP errors not sent because of the rate limits (`hop::icmp_limit`; the invoking packets are counted in
    /// their drop reasons as usual).
    pub icmp_limited: u64,
    /// Frames dropped, by reason.
    pub drops: DropCounts,
    /// Packet buffer reallocations.
    pub reallocs: u64,
    /// Packets that had a tunnel applied, by kind.
    pub encapsulated: TunnelCounts,
    /// IOAM traces filled as a transit node.
    pub ioam_transit_filled: u64,
    /// Frames forwarded by a precomputed plan (the fast path); included in `tx`.
    pub fast_path: u64,
    /// Counters of seg6local routes with `count`, indexed by the route's tunnel id (others stay zero).
    pub seg6local: Vec<LocalCounters>,
    /// IOAM domain counters.
    pub ioam: IoamCounts,
}

/// What the IOAM domains did (docs/ioam.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoamCounts {
    /// IOAM options removed because they arrived on an interface that is not an ingress of their domain.
    pub foreign_stripped: u64,
    /// IOAM traces removed because they were larger than their domain's `maxsize` (`oversize strip`).
    pub oversize_stripped: u64,
    /// IOAM options removed where the packet leaves the domain (inline mode).
    pub removed: u64,
    /// Packets decapsulated at the IOAM tunnel endpoint (encap mode).
    pub decapsulated: u64,
    /// Traces queued for export (a front end subtracts those its exporter then lost, and adds them to
    /// `export_lost`).
    pub exported: u64,
    /// Traces not exported: the worker's queue or the exporter's was full, or the collector failed.
    pub export_lost: u64,
    /// Packets whose route inserts IOAM inline into which the options were merged into the Hop-by-Hop header they
    /// already had (`hbh merge`).
    pub merged: u64,
    /// Packets whose route inserts IOAM inline that already had a Hop-by-Hop header and got no IOAM: the route
    /// does not merge (Linux's behaviour), or the merged header would have held too many options or octets.
    pub not_inserted: u64,
}

impl IoamCounts {
    fn merge(&mut self, o: &IoamCounts) {
        self.foreign_stripped += o.foreign_stripped;
        self.oversize_stripped += o.oversize_stripped;
        self.removed += o.removed;
        self.decapsulated += o.decapsulated;
        self.exported += o.exported;
        self.export_lost += o.export_lost;
        self.merged += o.merged;
        self.not_inserted += o.not_inserted;
    }
}

impl Stats {
    /// Counts one drop. (Out of line: drops are the rare case, and the fast path's loop keeps its registers.)
    #[inline(never)]
    pub fn count_drop(&mut self, reason: DropReason) {
        self.drops.add(reason, 1);
    }

    /// Frames dropped, whatever the reason (the `dropped` of `rx == tx + consumed + pending + dropped`).
    pub fn dropped(&self) -> u64 {
        self.drops.total()
    }

    /// Whether rx == tx + dropped + consumed + pending: every frame received is accounted for once.
    pub fn balanced(&self) -> bool {
        self.rx == self.tx + self.dropped() + self.consumed + self.pending
    }

    /// Adds another worker's counters to these.
    pub fn merge(&mut self, other: &Stats) {
        self.rx += other.rx;
        self.tx += other.tx;
        self.icmp_tx += other.icmp_tx;
        self.consumed += other.consumed;
        self.pending += other.pending;
        self.solicit_tx += other.solicit_tx;
        self.icmp_limited += other.icmp_limited;
        for (a, b) in self.drops.0.iter_mut().zip(other.drops.0) {
            *a += b;
        }
        self.reallocs += other.reallocs;
        for (a, b) in self.encapsulated.0.iter_mut().zip(other.encapsulated.0) {
            *a += b;
        }
        self.ioam_transit_filled += other.ioam_transit_filled;
        self.fast_path += other.fast_path;
        if self.seg6local.len() < other.seg6local.len() {
            self.seg6local
                .resize(other.seg6local.len(), Default::default());
        }
        for (a, b) in self.seg6local.iter_mut().zip(&other.seg6local) {
            a.packets += b.packets;
            a.bytes += b.bytes;
            a.errors += b.errors;
        }
        self.ioam.merge(&other.ioam);
    }

    /// JSON form used by `--stats -j`.
    pub fn to_json(&self) -> serde_json::Value {
        let drops: BTreeMap<&str, u64> = self.drops.iter().map(|(k, v)| (k.name(), v)).collect();
        let encapsulated: BTreeMap<&str, u64> = self.encapsulated.iter().collect();
        serde_json::json!({
            "rx": self.rx,
            "tx": self.tx,
            "dropped": self.dropped(),
            "icmp_errors_sent": self.icmp_tx,
            "consumed": self.consumed,
            "pending": self.pending,
            "solicitations_sent": self.solicit_tx,
            "icmp_errors_rate_limited": self.icmp_limited,
            "drops": drops,
            "reallocs": self.reallocs,
            "encapsulated": encapsulated,
            "ioam_transit_filled": self.ioam_transit_filled,
            "fast_path": self.fast_path,
            "ioam": self.ioam,
            "balanced": self.balanced(),
        })
    }
}

/// A seg6local route's counters (`count`): packets and bytes processed correctly, and errors (Linux
/// `seg6_local_counters`). Bytes are the IPv6 packet's length as received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LocalCounters {
    /// Packets the behaviour processed correctly.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Packets the behaviour dropped.
    pub errors: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for r in DropReason::ALL {
            assert!(seen.insert(r.name()), "duplicate {}", r.name());
            assert!(
                r.name()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            );
        }
    }

    #[test]
    fn balance() {
        let mut s = Stats {
            rx: 3,
            tx: 1,
            ..Default::default()
        };
        assert!(!s.balanced());
        s.count_drop(DropReason::NoRoute);
        s.count_drop(DropReason::NoRoute);
        assert!(s.balanced());
        s.rx += 2;
        s.consumed += 1;
        assert!(!s.balanced());
        s.pending += 1;
        assert!(s.balanced());
        s.rx -= 2;
        s.consumed -= 1;
        s.pending -= 1;
        assert_eq!(s.to_json()["drops"]["no_route"], 2);
        assert_eq!(s.drops.get(&DropReason::NoRoute), Some(&2));
        assert_eq!(s.drops.get(&DropReason::MtuExceeded), None);
    }

    #[test]
    fn merge_adds_every_counter() {
        let mut a = Stats {
            rx: 5,
            tx: 3,
            ..Default::default()
        };
        a.count_drop(DropReason::NoRoute);
        a.count_drop(DropReason::MtuExceeded);
        a.encapsulated.0[TunnelKind::Seg6.index()] = 3;
        let mut b = a.clone();
        b.count_drop(DropReason::NoRoute);
        b.rx += 1;
        b.encapsulated.0[TunnelKind::Rpl.index()] = 1;
        a.merge(&b);
        assert_eq!((a.rx, a.tx), (11, 6));
        assert_eq!(a.drops.get(&DropReason::NoRoute), Some(&3));
        assert_eq!(a.drops.get(&DropReason::MtuExceeded), Some(&2));
        assert_eq!(a.encapsulated.0, [0, 1, 6, 0]);
        assert_eq!(
            a.encapsulated.iter().collect::<Vec<_>>(),
            [("rpl", 1), ("seg6", 6)]
        );
        assert!(a.balanced());
        assert_eq!(
            format!("{:?}", a.drops),
            r#"{"no_route": 3, "mtu_exceeded": 2}"#
        );
    }
}
