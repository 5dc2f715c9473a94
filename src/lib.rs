//! lwt6: IPv6 lightweight tunnels (SRv6, IOAM, RPL) done in userspace.
//!
//! The layout tells the story of a packet:
//! - [`wire`]: pure codecs (checked views over bytes plus `Repr`s), no allocation, no I/O.
//! - [`buffer`]: the packet buffer with explicit, counted headroom growth.
//! - [`fib`]: the routing table (longest-prefix match, immutable snapshots).
//! - [`tunnel`]: the `seg6`, `ioam6` and `rpl` encapsulations, byte for byte as Linux.
//! - [`node`]: what a router does with packets addressed to it or passing through (IOAM transit, RPL/SRH).
//! - [`router`]: the forwarding pipeline that ties them together, with named drop reasons.
//! - [`config`]: iproute2-syntax configuration.
//! - [`io`]: pcap / pcapng files.
//! - [`decode`]: human / JSON decoding of frames; [`cli`]: the `lwt6` command.
#![deny(unsafe_code)]

pub mod analysis;
pub mod audit;
pub mod bench;
pub mod buffer;
pub mod cli;
pub mod config;
pub mod copy;
pub mod decode;
pub mod fib;
pub mod io;
pub mod node;
pub mod router;
pub mod stats;
pub mod tunnel;
pub mod wire;
