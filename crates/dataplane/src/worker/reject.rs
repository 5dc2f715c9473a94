//! Routes that drop what they match ([`Origin::Reject`](crate::fib::Origin::Reject)): the kernel's `blackhole`,
//! `unreachable` and `prohibit` routes (Linux `dst_discard`, `ip6_pkt_discard`, `ip6_pkt_prohibit`; IPv4
//! `ip_error`) as configured (`route add blackhole PREFIX`) or as `lwt6 run --kernel-routes` mirrors them, and
//! kernel multipath routes lwt6 does not forward over. The route's own error is sent whatever the hop limit and
//! the IPv6 forwarding switch (the kernel's route input decides before forwarding would check either).

use super::{Cx, L3, Verdict, Worker};
use crate::buffer::PacketBuf;
use crate::fib::RejectKind;
use crate::stats::DropReason;
use crate::wire::icmpv4::Icmpv4Error;
use crate::wire::icmpv6::IcmpError;

impl Worker {
    /// Drops a packet that matched a reject route, with the ICMP error its kind sends.
    pub(super) fn reject(
        &mut self,
        cx: &mut Cx<'_, '_>,
        buf: &PacketBuf,
        kind: RejectKind,
        l3: L3,
    ) -> Verdict {
        // (ICMPv6 code, ICMPv4 code) of Destination Unreachable: no route / host unreachable, administratively
        // prohibited / communication administratively prohibited.
        let (reason, codes) = match kind {
            RejectKind::Blackhole => (DropReason::BlackholeRoute, None),
            RejectKind::Unreachable => (DropReason::UnreachableRoute, Some((0, 1))),
            RejectKind::Prohibit => (DropReason::ProhibitedRoute, Some((1, 13))),
            RejectKind::Multipath => (DropReason::MultipathRoute, None),
        };
        match (codes, l3) {
            (Some((code, _)), L3::V6) => {
                self.icmp_error(cx, buf.data(), IcmpError::DestUnreachable { code });
            }
            (Some((_, code)), L3::V4) => {
                self.icmp4_error(cx, buf.data(), Icmpv4Error::DestUnreachable { code });
            }
            (None, _) => {}
        }
        Err(reason)
    }
}
