//! The lwt6 lab: what explains, measures and shows the dataplane, kept apart from it.
//!
//! - [`analysis`]: the Linux skb headroom arithmetic, NIC rx headroom presets, the double-reallocation predictor,
//!   and the Linux buffer strategies as a [`HeadroomPolicy`](lwt6_dataplane::headroom::HeadroomPolicy) the
//!   router can run under.
//! - [`audit`]: measuring the running kernel's reallocations (network namespaces, bpftrace).
//! - [`bench`](mod@bench): forwarding-rate sweeps of the real pipeline (the paper's Fig. 6) with plots.
//! - [`decode`]: human and JSON decoding of frames (SRH, RPL, IOAM traces).
//! - [`csvfile`]: the one CSV reader and writer of the bench files (errors name the line and the column).
#![deny(unsafe_code)]

pub mod analysis;
pub mod audit;
pub mod bench;
pub mod csvfile;
pub mod decode;
