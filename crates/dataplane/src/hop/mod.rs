//! Per-hop processing: what this router, as one hop of a packet's path, does to packets passing through it or
//! addressed to it, beyond plain forwarding: IOAM transit fill ([`ioam`]) and domains ([`ioam_domain`]: roles,
//! removal, export records), the checks on options headers ([`options`]), RPL source-route processing ([`rpl`]),
//! SRH endpoint processing ([`srh`]; the seg6local behaviours are [`crate::tunnel::seg6local`]), source address
//! selection ([`saddr`]) and ICMP error rate limits ([`icmp_limit`]).
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
