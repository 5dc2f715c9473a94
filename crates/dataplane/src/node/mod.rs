//! What a router does with packets passing through it or addressed to it, beyond plain forwarding:
//! IOAM transit fill ([`ioam`]) and domains ([`ioam_domain`]: roles, removal, export records), RPL source-route processing ([`rpl`]), SRH endpoint processing ([`srh`]),
//! and source address selection ([`saddr`]).

pub mod ioam;
pub mod ioam_domain;
pub mod rpl;
pub mod saddr;
pub mod srh;
