//! What a router does with packets passing through it or addressed to it, beyond plain forwarding:
//! IOAM transit fill ([`ioam`]) and domains ([`ioam_domain`]: roles, removal, export records), the checks on
//! options headers ([`options`]), RPL source-route processing ([`rpl`]), SRH endpoint processing ([`srh`]), SRv6
//! endpoint behaviours of local SIDs ([`seg6local`]) and source address selection ([`saddr`]).

pub mod ioam;
pub mod ioam_domain;
pub mod options;
pub mod rpl;
pub mod saddr;
pub mod seg6local;
pub mod srh;
