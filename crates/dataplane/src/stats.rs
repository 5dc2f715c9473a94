//! Counters: every received frame ends as exactly one of "sent" or "dropped for a named reason".
//!
//! Counters are plain integers owned by one worker (no atomics on the packet path); a reader merges them.

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
    /// EtherType other than IPv6 / IPv4.
    UnsupportedEthertype => "unsupported_ethertype",
    /// IPv6 header invalid (length, version, payload length).
    Ipv6Malformed => "ipv6_malformed",
    /// IPv4 header invalid (version, IHL, total length, checksum).
    Ipv4Malformed => "ipv4_malformed",
    /// The extension-header chain is truncated or misordered.
    ExtHeaderMalformed => "exthdr_malformed",
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
    /// Routing header of a type lwt6 does not process, addressed to this node.
    UnknownRoutingType => "unknown_routing_type",
    /// The buffer was asked to grow twice for one packet (planning bug; never expected).
    BufferPlanning => "buffer_planning",
}

impl Serialize for DropReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Per-worker counters.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Frames received.
    pub rx: u64,
    /// Frames sent (forwarded or encapsulated), not counting ICMP errors.
    pub tx: u64,
    /// ICMPv6 error messages generated (sent in addition to `tx`).
    pub icmp_tx: u64,
    /// Frames dropped, by reason.
    pub drops: BTreeMap<DropReason, u64>,
    /// Packet buffer reallocations.
    pub reallocs: u64,
    /// Packets that had a tunnel applied, by kind ("seg6", "ioam6", "rpl").
    pub encapsulated: BTreeMap<&'static str, u64>,
    /// IOAM traces filled as a transit node.
    pub ioam_transit_filled: u64,
    /// Frames forwarded by a precomputed plan (the fast path); included in `tx`.
    pub fast_path: u64,
}

impl Stats {
    /// Counts one drop.
    pub fn drop(&mut self, reason: DropReason) {
        *self.drops.entry(reason).or_insert(0) += 1;
    }

    /// Total drops.
    pub fn dropped(&self) -> u64 {
        self.drops.values().sum()
    }

    /// Whether rx == tx + dropped.
    pub fn balanced(&self) -> bool {
        self.rx == self.tx + self.dropped()
    }

    /// JSON form used by `--stats -j`.
    pub fn to_json(&self) -> serde_json::Value {
        let drops: BTreeMap<&str, u64> = self.drops.iter().map(|(k, v)| (k.name(), *v)).collect();
        serde_json::json!({
            "rx": self.rx,
            "tx": self.tx,
            "dropped": self.dropped(),
            "icmp_errors_sent": self.icmp_tx,
            "drops": drops,
            "reallocs": self.reallocs,
            "encapsulated": self.encapsulated,
            "ioam_transit_filled": self.ioam_transit_filled,
            "fast_path": self.fast_path,
            "balanced": self.balanced(),
        })
    }
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
        s.drop(DropReason::NoRoute);
        s.drop(DropReason::NoRoute);
        assert!(s.balanced());
        assert_eq!(s.to_json()["drops"]["no_route"], 2);
    }
}
