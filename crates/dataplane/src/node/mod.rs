//! What a router does with packets passing through it or addressed to it, beyond plain forwarding:
//! IOAM transit fill ([`ioam`]) and domains ([`ioam_domain`]: roles, removal, export records), the checks on
//! options headers ([`options`]), RPL source-route processing ([`rpl`]), SRH endpoint processing ([`srh`]), SRv6
//! endpoint behaviours of local SIDs ([`seg6local`]) and source address selection ([`saddr`]); ICMP error rate
//! limits ([`icmp_limit`]).
//!
//! A leaf: these modules work on packets and their own state, and import neither the worker, nor the snapshot,
//! nor the tracer (`crates/dataplane/tests/layers.rs` checks). What needs the snapshot (ARP, neighbour discovery,
//! echo replies) is the worker's local-delivery stage.

pub mod icmp_limit;
pub mod ioam;
pub mod ioam_domain;
pub mod options;
pub mod rpl;
pub mod saddr;
pub mod srh;

/// The seg6local behaviour table and byte work, [`crate::tunnel::seg6local`] (this path stays for the crates that
/// import it from here).
pub use crate::tunnel::seg6local;

/// The control thread's neighbour table, [`crate::neigh`] (this path stays for the crates that import it from here;
/// a re-export, not a dependency: nothing in this module uses it).
#[doc(hidden)]
pub use crate::neigh;
