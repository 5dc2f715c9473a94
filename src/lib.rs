//! lwt6: IPv6 lightweight tunnels (SRv6, IOAM, RPL) done in userspace.
//!
//! This crate is the `lwt6` command ([`cli`]) and a facade over the workspace, whose crates read as the path of a
//! packet (see `docs/architecture.md`):
//! - [`wire`] (`lwt6-wire`): pure codecs (checked views over bytes plus `Repr`s), no allocation, no I/O.
//! - `lwt6-dataplane`: [`spec`] (what a router is made of), [`snapshot`] (all of it, immutable, with the [`fib`] and
//!   its [`plan`]s), [`worker`] (the pipeline, per thread), [`buffer`], [`copy`], [`tunnel`], [`hop`], [`neigh`],
//!   [`router`] (one snapshot handle and one worker), [`headroom`] (how room is made for added headers), [`stats`],
//!   [`trace`] (the per-packet tracer).
//! - [`config`] (`lwt6-config`): iproute2 syntax into [`spec`] types.
//! - [`io`] (`lwt6-io`): pcap / pcapng files, AF_PACKET ports, interface queries.
//! - [`live`] (`lwt6-router`): the live router behind `lwt6 run` and `lwt6 ctl` (workers, control socket, kernel
//!   routes, metrics).
//! - `lwt6-lab`: [`analysis`], [`audit`], [`bench`](mod@bench), [`decode`].
#![deny(unsafe_code)]

pub use lwt6_config as config;
pub use lwt6_dataplane::{
    buffer, copy, fib, headroom, hop, neigh, plan, router, snapshot, spec, stats, trace, tunnel,
    worker,
};
pub use lwt6_io as io;
pub use lwt6_lab::{analysis, audit, bench, decode};
pub use lwt6_router as live;
pub use lwt6_wire as wire;

pub mod cli;
