//! SRv6 endpoint behaviours bound to local SIDs (`encap seg6local`, RFC 8986 §4; Linux `seg6_local.c`,
//! docs/seg6local.md).
//!
//! [`BEHAVIOURS`] is the one table of behaviours: each row says the action's name, Linux's action id, the
//! attributes it requires and accepts and the flavours it allows. The parser validates `encap seg6local` lines
//! against it, `show routes` prints from it, docs/seg6local.md lists it (a test checks that the page lists every
//! row). The worker binds each action to its handler with one exhaustive `match` (in its `seg6local` stage), so
//! adding a behaviour is one row here and one handler there, and an action without a handler does not compile.
//!
//! The rest of this module is what the handlers do to the bytes, as functions over packets that tests can
//! drive directly: finding and validating the SRH, advancing it, popping it (PSP / USP), the NEXT-C-SID shift, and
//! finding the inner packet to decapsulate.

use crate::fib::{DevId, TunnelId};
use crate::spec::{Seg6LocalAction, Seg6LocalSpec, flavor};
use crate::stats::DropReason;
use crate::wire::{exthdr, ipv6, proto, srh};
use std::net::Ipv6Addr;

// Their old home, for the crates that import them from here.
pub use crate::spec::table_name;
pub use crate::stats::LocalCounters;

/// Attribute bits of a behaviour row (`SEG6_LOCAL_*` attributes; `count` and `flavors` included).
pub mod attr {
    /// `nh4 A`.
    pub const NH4: u16 = 1 << 0;
    /// `nh6 A`.
    pub const NH6: u16 = 1 << 1;
    /// `table T`.
    pub const TABLE: u16 = 1 << 2;
    /// `vrftable T`.
    pub const VRFTABLE: u16 = 1 << 3;
    /// `oif DEV`.
    pub const OIF: u16 = 1 << 4;
    /// `srh [hmac K] segs ...`.
    pub const SRH: u16 = 1 << 5;
    /// `count`.
    pub const COUNT: u16 = 1 << 6;
    /// `flavors ...`.
    pub const FLAVORS: u16 = 1 << 7;
    /// Every attribute with its iproute2 keyword, in the order iproute2 prints them.
    pub const NAMES: [(u16, &str); 8] = [
        (SRH, "srh"),
        (TABLE, "table"),
        (VRFTABLE, "vrftable"),
        (NH4, "nh4"),
        (NH6, "nh6"),
        (OIF, "oif"),
        (COUNT, "count"),
        (FLAVORS, "flavors"),
    ];

    /// The keywords of the attributes in `bits`, comma separated.
    pub fn names(bits: u16) -> String {
        NAMES
            .iter()
            .filter(|(b, _)| bits & b != 0)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One behaviour: everything about it but its handler (which the worker binds to [`Behaviour::action`]).
#[derive(Debug)]
pub struct Behaviour {
    /// The action.
    pub action: Seg6LocalAction,
    /// The iproute2 name (`action NAME`).
    pub name: &'static str,
    /// Linux's `SEG6_LOCAL_ACTION_*` id (0: none, the behaviour is lwt6's own).
    pub linux_id: u8,
    /// Attributes that must be given ([`attr`] bits).
    pub required: u16,
    /// Attributes of which exactly one must be given (End.DT6: `table` or `vrftable`).
    pub one_of: u16,
    /// Attributes that may be given.
    pub optional: u16,
    /// Flavours allowed with `flavors` ([`flavor`] bits).
    pub flavours: u32,
    /// What it does, in one line (docs/seg6local.md).
    pub summary: &'static str,
}

const PUS: u32 = flavor::PSP | flavor::USP | flavor::USD;

/// Every behaviour lwt6 implements.
pub const BEHAVIOURS: &[Behaviour] = &[
    Behaviour {
        action: Seg6LocalAction::End,
        name: "End",
        linux_id: 1,
        required: 0,
        one_of: 0,
        optional: attr::COUNT | attr::FLAVORS,
        flavours: PUS | flavor::NEXT_CSID,
        summary: "advance the SRH, look the next SID up in the main table",
    },
    Behaviour {
        action: Seg6LocalAction::EndX,
        name: "End.X",
        linux_id: 2,
        required: attr::NH6,
        one_of: 0,
        optional: attr::OIF | attr::COUNT | attr::FLAVORS,
        flavours: PUS | flavor::NEXT_CSID,
        summary: "advance the SRH, forward to the IPv6 neighbour nh6",
    },
    Behaviour {
        action: Seg6LocalAction::EndT,
        name: "End.T",
        linux_id: 3,
        required: attr::TABLE,
        one_of: 0,
        optional: attr::COUNT | attr::FLAVORS,
        flavours: PUS,
        summary: "advance the SRH, look the next SID up in table T",
    },
    Behaviour {
        action: Seg6LocalAction::EndDx2,
        name: "End.DX2",
        linux_id: 4,
        required: attr::OIF,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "decapsulate the inner Ethernet frame, send it out of oif as it is",
    },
    Behaviour {
        action: Seg6LocalAction::EndDx6,
        name: "End.DX6",
        linux_id: 5,
        required: attr::NH6,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "decapsulate the inner IPv6 packet, forward it to nh6 (or by its destination when nh6 is ::)",
    },
    Behaviour {
        action: Seg6LocalAction::EndDx4,
        name: "End.DX4",
        linux_id: 6,
        required: attr::NH4,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "decapsulate the inner IPv4 packet, forward it to nh4 (or by its destination when nh4 is 0.0.0.0)",
    },
    Behaviour {
        action: Seg6LocalAction::EndDt6,
        name: "End.DT6",
        linux_id: 7,
        required: 0,
        one_of: attr::TABLE | attr::VRFTABLE,
        optional: attr::COUNT,
        flavours: 0,
        summary: "decapsulate the inner IPv6 packet, look it up in table T (or the VRF's table)",
    },
    Behaviour {
        action: Seg6LocalAction::EndDt4,
        name: "End.DT4",
        linux_id: 8,
        required: attr::VRFTABLE,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "decapsulate the inner IPv4 packet, look it up in the VRF's table",
    },
    Behaviour {
        action: Seg6LocalAction::EndB6,
        name: "End.B6",
        linux_id: 9,
        required: attr::SRH,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "insert the configured SRH (the old one is not advanced), look the new destination up",
    },
    Behaviour {
        action: Seg6LocalAction::EndB6Encaps,
        name: "End.B6.Encaps",
        linux_id: 10,
        required: attr::SRH,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "advance the SRH, encapsulate in an outer IPv6 header with the configured SRH",
    },
    Behaviour {
        action: Seg6LocalAction::EndDt46,
        name: "End.DT46",
        linux_id: 16,
        required: attr::VRFTABLE,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "decapsulate the inner IPv6 or IPv4 packet, look it up in the VRF's table",
    },
    Behaviour {
        action: Seg6LocalAction::EndB6EncapsRed,
        name: "End.B6.Encaps.Red",
        linux_id: 0,
        required: attr::SRH,
        one_of: 0,
        optional: attr::COUNT,
        flavours: 0,
        summary: "as End.B6.Encaps, with the reduced SRH (first SID only in the destination; RFC 8986 §4.15)",
    },
];

/// Linux action names lwt6 does not implement, with why (the parser's error message).
pub const UNSUPPORTED: &[(&str, &str)] = &[
    ("End.BM", "not implemented (Linux rejects it too)"),
    ("End.S", "not implemented (Linux rejects it too)"),
    ("End.AS", "not implemented (Linux rejects it too)"),
    ("End.AM", "not implemented (Linux rejects it too)"),
    ("End.BPF", "not supported (lwt6 runs no eBPF programs)"),
];

/// The row of `action`.
pub fn behaviour(action: Seg6LocalAction) -> &'static Behaviour {
    BEHAVIOURS
        .iter()
        .find(|b| b.action == action)
        .expect("every action has a row")
}

/// The row named `name` (iproute2 spelling).
pub fn by_name(name: &str) -> Option<&'static Behaviour> {
    BEHAVIOURS.iter().find(|b| b.name == name)
}

/// The attributes a spec gives ([`attr`] bits).
pub fn given(s: &Seg6LocalSpec) -> u16 {
    let mut b = 0;
    let mut set = |on: bool, bit: u16| {
        if on {
            b |= bit
        }
    };
    set(s.nh4.is_some(), attr::NH4);
    set(s.nh6.is_some(), attr::NH6);
    set(s.table.is_some(), attr::TABLE);
    set(s.vrftable.is_some(), attr::VRFTABLE);
    set(s.oif.is_some(), attr::OIF);
    set(s.srh.is_some(), attr::SRH);
    set(s.count, attr::COUNT);
    set(s.flavors.is_some(), attr::FLAVORS);
    b
}

/// A seg6local route as installed: its spec, its row, and what the snapshot resolved for it.
#[derive(Debug, Clone)]
pub struct Seg6Local {
    /// The configuration.
    pub spec: Seg6LocalSpec,
    /// The behaviour's row.
    pub behaviour: &'static Behaviour,
    /// `oif`, resolved.
    pub oif: Option<DevId>,
    /// The route's device (End.B6.Encaps selects the outer source address on it, as Linux does).
    pub dev: Option<DevId>,
    /// The configured SRH of End.B6 / End.B6.Encaps(.Red), installed as a seg6 tunnel (inline, encap or
    /// encap.red), whose headers the handler applies on the way out.
    pub policy: Option<TunnelId>,
}

impl Seg6Local {
    /// The route's encap as `ip -6 route show` prints it.
    pub fn iproute2(&self) -> String {
        self.iproute2_stats(None)
    }

    /// The route's encap as `ip -s -6 route show` prints it: with `counters` (when the route has `count`).
    pub fn iproute2_stats(&self, counters: Option<&LocalCounters>) -> String {
        let s = &self.spec;
        let mut x = format!("encap seg6local action {}", self.behaviour.name);
        if let Some(srh) = &s.srh {
            let segs: Vec<String> = srh.segs.iter().map(|a| a.to_string()).collect();
            // iproute2 prints the SRH as stored: End.B6's has the slot for the original destination.
            let extra = usize::from(self.behaviour.action == Seg6LocalAction::EndB6);
            let mut shown = segs.join(" ");
            if extra == 1 {
                shown.push_str(" ::");
            }
            x += &format!(" segs {} [ {} ]", segs.len() + extra, shown);
            if let Some(k) = srh.hmac {
                x += &format!(" hmac {k:X}");
            }
        }
        if let Some(t) = s.table {
            x += &format!(" table {}", table_name(t));
        }
        if let Some(t) = s.vrftable {
            x += &format!(" vrftable {}", table_name(t));
        }
        if let Some(a) = s.nh4 {
            x += &format!(" nh4 {a}");
        }
        if let Some(a) = s.nh6 {
            x += &format!(" nh6 {a}");
        }
        if let Some(o) = &s.oif {
            x += &format!(" oif {o}");
        }
        if s.count
            && let Some(c) = counters
        {
            x += &format!(
                " packets {} bytes {} errors {}",
                c.packets, c.bytes, c.errors
            );
        }
        if let Some(f) = s.flavors {
            x += &format!(" {}", flavors_text(f.ops, f.lblen, f.nflen));
        }
        x
    }
}

/// `flavors psp,next-csid lblen 32 nflen 16`, as iproute2 prints it (block and function lengths with next-csid).
pub fn flavors_text(ops: u32, lblen: u8, nflen: u8) -> String {
    let names: Vec<&str> = flavor::NAMES
        .iter()
        .filter(|(b, _)| ops & b != 0)
        .map(|(_, n)| *n)
        .collect();
    let mut x = format!("flavors {}", names.join(","));
    if ops & flavor::NEXT_CSID != 0 {
        x += &format!(" lblen {lblen} nflen {nflen}");
    }
    x
}

// ---- what the handlers do to the bytes ----

/// Finds the packet's SRH as Linux's `seg6_get_srh` does: the first Routing header (with `skip_sl0`, the first
/// whose Segments Left is not 0), which must be of type 4 and well formed ([`srh::validate`], Segments Left up to
/// Last Entry + 1). Returns its offset
/// and length.
pub fn find_srh(pkt: &[u8], skip_sl0: bool) -> Result<(usize, usize), DropReason> {
    for h in exthdr::Walker::new(pkt) {
        let h = h.map_err(|_| DropReason::ExtHeaderMalformed)?;
        if h.kind != proto::ROUTING {
            continue;
        }
        if skip_sl0 && pkt[h.offset + 3] == 0 {
            continue;
        }
        if pkt[h.offset + 2] != srh::ROUTING_TYPE {
            return Err(DropReason::Seg6LocalNoSrh);
        }
        // Linux validates with `reduced` set here: Segments Left may be Last Entry + 1 (RFC 8754 §4.3.1.1 allows
        // it too; the segment then read is Segment List[Last Entry]).
        srh::validate(&pkt[h.offset..h.offset + h.len], true)
            .map_err(|_| DropReason::SrhMalformed)?;
        return Ok((h.offset, h.len));
    }
    Err(DropReason::Seg6LocalNoSrh)
}

/// SL−−, DA := Segment List\[SL\] (RFC 8986 §4.1 S15–S16). Segments Left must be above 0 (checked by the caller).
pub fn advance(pkt: &mut [u8], rh: usize) {
    let sl = pkt[rh + 3] - 1;
    pkt[rh + 3] = sl;
    let at = rh + 8 + 16 * usize::from(sl);
    let (hdr, rest) = pkt.split_at_mut(rh);
    hdr[24..40].copy_from_slice(&rest[at - rh..at - rh + 16]);
}

/// Removes the SRH at `rh` (`len` bytes): the header before it takes its Next Header, the payload length shrinks
/// (RFC 8986 §4.16.1 S14.2–S14.4). Refused, as Linux refuses, when a Fragment or Authentication header precedes
/// the SRH (their contents would no longer describe the packet).
pub fn pop_srh(
    buf: &mut crate::buffer::PacketBuf,
    rh: usize,
    len: usize,
) -> Result<(), DropReason> {
    let pkt = buf.data_mut();
    // The Next Header field pointing at the SRH: the IPv6 header's, or the last extension header's before it.
    let mut nh_at = 6;
    for h in exthdr::Walker::new(pkt) {
        let h = h.map_err(|_| DropReason::ExtHeaderMalformed)?;
        if h.offset >= rh {
            break;
        }
        if h.kind == proto::FRAGMENT || h.kind == proto::AH {
            return Err(DropReason::Seg6LocalPopRefused);
        }
        nh_at = h.offset;
    }
    pkt[nh_at] = pkt[rh];
    let plen = u16::from_be_bytes([pkt[4], pkt[5]]) as usize - len;
    pkt[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
    buf.remove_range(rh, len)
        .map_err(|_| DropReason::BufferPlanning)?;
    // remove_range moved the headers before the SRH forward; nothing else changes.
    Ok(())
}

/// The NEXT-C-SID shift (RFC 9800 §4.1.1, Linux semantics): with a locator block of `lblen` bits and a function
/// of `nflen` bits, when the argument (the bits after both) is not all zero, the argument moves left by `nflen`
/// bits into the function's place and the last `nflen` bits become 0. Returns whether it shifted (false: the
/// argument is zero, the behaviour runs as without the flavour).
pub fn next_csid_shift(dst: &mut [u8; 16], lblen: u8, nflen: u8) -> bool {
    let (b, f) = (usize::from(lblen / 8), usize::from(nflen / 8));
    if dst[b + f..].iter().all(|x| *x == 0) {
        return false;
    }
    dst.copy_within(b + f.., b);
    dst[16 - f..].fill(0);
    true
}

/// Where the inner packet of protocol `inner` (41 IPv6, 4 IPv4, 143 Ethernet) starts, for the decapsulating
/// behaviours (Linux `decap_and_validate`): an SRH, if any, must have Segments Left 0 (its HMAC is checked by the
/// caller), and `inner` must be the upper-layer protocol of the chain.
pub fn inner_offset(pkt: &[u8], inner: u8) -> Result<usize, DropReason> {
    let c = exthdr::chain(pkt).map_err(|_| DropReason::ExtHeaderMalformed)?;
    if c.routing_type == Some(srh::ROUTING_TYPE)
        && let Some(rh) = c.routing
        && pkt[rh.offset + 3] != 0
    {
        return Err(DropReason::Seg6LocalSegmentsLeft);
    }
    if c.upper_proto != inner || c.upper_offset > pkt.len() {
        return Err(DropReason::Seg6LocalNextHeader);
    }
    Ok(c.upper_offset)
}

/// The destination address of an IPv6 packet.
pub fn dst_of(pkt: &[u8]) -> Ipv6Addr {
    ipv6::Packet::new_unchecked(pkt).dst_addr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_csid_shifts_the_argument_as_linux_does() {
        // Observed on Linux 6.18.44 (docs/seg6local.md): lblen 32, nflen 16, fc00:1:100:200:300:: -> fc00:1:200:300::.
        let mut d: [u8; 16] = "fc00:1:100:200:300::".parse::<Ipv6Addr>().unwrap().octets();
        assert!(next_csid_shift(&mut d, 32, 16));
        assert_eq!(
            Ipv6Addr::from(d),
            "fc00:1:200:300::".parse::<Ipv6Addr>().unwrap()
        );
        // The last C-SID: the argument is zero, nothing shifts.
        let mut d: [u8; 16] = "fc00:1:300::".parse::<Ipv6Addr>().unwrap().octets();
        assert!(!next_csid_shift(&mut d, 32, 16));
        // A 48-bit block with 16-bit functions (RFC 9800 §4.1 example shape): 2001:db8:0:e000:e001:e002::.
        let mut d: [u8; 16] = "2001:db8:0:e000:e001:e002::"
            .parse::<Ipv6Addr>()
            .unwrap()
            .octets();
        assert!(next_csid_shift(&mut d, 48, 16));
        assert_eq!(
            Ipv6Addr::from(d),
            "2001:db8:0:e001:e002::".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn every_row_is_consistent() {
        for b in BEHAVIOURS {
            assert_eq!(b.required & b.optional, 0, "{}", b.name);
            assert_eq!(by_name(b.name).map(|x| x.action), Some(b.action));
            if b.flavours != 0 {
                assert_ne!(b.optional & attr::FLAVORS, 0, "{}", b.name);
            }
        }
    }
}
