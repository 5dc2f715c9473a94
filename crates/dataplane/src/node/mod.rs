//! What a router does with packets passing through it or addressed to it, beyond plain forwarding:
//! IOAM transit fill ([`ioam`]) and domains ([`ioam_domain`]: roles, removal, export records), the checks on
//! options headers ([`options`]), RPL source-route processing ([`rpl`]), SRH endpoint processing ([`srh`]), SRv6
//! endpoint behaviours of local SIDs ([`seg6local`]) and source address selection ([`saddr`]); for its own
//! addresses and its neighbours: neighbour discovery ([`ndp`]), ARP ([`arp`]), echo replies ([`echo`]) and dynamic
//! neighbours ([`neigh`]); ICMP error rate limits ([`icmp_limit`]).

pub mod arp;
pub mod echo;
pub mod icmp_limit;
pub mod ioam;
pub mod ioam_domain;
pub mod ndp;
pub mod neigh;
pub mod options;
pub mod rpl;
pub mod saddr;
pub mod srh;

/// The seg6local behaviour table and byte work, now [`crate::tunnel::seg6local`] (the path the other crates import).
pub use crate::tunnel::seg6local;

/// What a neighbour-protocol message addressed to this node (an NDP solicitation or advertisement, an ARP packet) led
/// to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A reply to send out of the ingress interface: the first `len` bytes of the output buffer, a whole Ethernet
    /// frame.
    Reply {
        /// Frame length.
        len: usize,
    },
    /// Taken in (what it taught is a neighbour event), nothing to send.
    Consumed,
}
