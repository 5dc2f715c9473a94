//! The lwt6 packet path: everything a frame meets between its arrival and its departure.
//!
//! - [`spec`]: the typed description of a router (links, addresses, routes with their tunnels, sysctls) that a
//!   configuration front end (`lwt6-config`) produces and [`snapshot::Snapshot::build`] consumes.
//! - [`buffer`]: the packet buffer with explicit, counted headroom growth; [`copy`]: the fast path's byte copies.
//! - [`fib`]: the routing table (longest-prefix match, immutable snapshots, forwarding plans); [`fib::lpm`]: the
//!   multibit trie behind its lookups.
//! - [`tunnel`]: the `seg6`, `ioam6` and `rpl` encapsulations and the `seg6local` behaviour table, byte for byte
//!   as Linux.
//! - [`hop`]: what a router does, as one hop, with packets addressed to it or passing through (IOAM transit,
//!   RPL/SRH).
//! - [`neigh`]: dynamic neighbours: the events workers report and the control thread's table.
//! - [`snapshot`]: everything configured, immutable once published, with the FIB and its forwarding [`plan`]s.
//! - [`worker`]: one thread's pipeline, buffers, caches and counters, borrowing a snapshot per batch;
//!   [`headroom`]: how it makes room for added headers (its own plan, or a policy plugged in from outside, such as
//!   the lab's models of the Linux kernel); [`router`]: one snapshot handle and one worker, for offline use.
//! - [`stats`]: counters, every drop named; [`trace`]: the per-packet tracer (every stage a chosen frame passed, and
//!   what it decided), which costs nothing while it is off.
//!
//! `hop` and `tunnel` are leaves: they import neither the worker, nor the snapshot, nor the tracer, and the
//! crate's modules import each other without a cycle (`tests/layers.rs` checks both).
//!
//! This crate knows neither the configuration syntax nor the lab: dependencies point from them to it.
#![deny(unsafe_code)]

/// The wire formats this crate is built on (the `lwt6-wire` crate).
pub use lwt6_wire as wire;

pub mod buffer;
pub mod copy;
pub mod fib;
pub mod headroom;
pub mod hop;
pub mod neigh;
pub mod plan;
pub mod router;
pub mod snapshot;
pub mod spec;
pub mod stats;
pub mod trace;
pub mod tunnel;
pub mod worker;
