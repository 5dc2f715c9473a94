//! lwt6's live router: the runtime behind `lwt6 run` and `lwt6 ctl` (docs/live.md).
//!
//! [`run`] attaches to the interfaces a configuration file names, runs one thread per worker ([`engine`]), and
//! serves the control socket ([`control`]) and signals on the calling thread until SIGINT or SIGTERM; it returns
//! the final counters as a [`RunReport`]. Around it:
//! - [`ctl`]: the client side of the control socket (what `lwt6 ctl` sends and how the reply reads);
//! - [`clients`]: the control socket's connections, served from the control thread's poll loop with deadlines
//!   and limits (no client can hold the router); [`neighq`]: the neighbour events from the workers, coalesced;
//! - [`links`]: the configuration's interfaces checked against the system, and the kernel settings that would
//!   make the kernel do the router's work a second time;
//! - [`kroutes`]: the kernel's main routing table followed over rtnetlink (`--kernel-routes`);
//! - [`log`]: the log lines on standard error (the `log` crate's macros): levels, time stamps or journald
//!   priorities, rate-limited per kind;
//! - [`notify`]: systemd's service notifications (`READY=1`, `RELOADING=1`, `STATUS=`, `STOPPING=1`);
//! - [`privilege`]: the capabilities `lwt6 run` needs, checked before it starts;
//! - [`metrics`]: the counters in the Prometheus text format;
//! - [`capture`]: the live capture (a pcapng file of what the workers receive, send and drop);
//! - [`xdp_tier`]: the XDP tier (`--io xdp`): lwt6's plans executed in the driver, its maps following the
//!   snapshot;
//! - [`trace`]: the packet trace the control thread arms and the workers follow;
//! - [`show`]: router state as text and JSON, as the control socket answers `show ...` and `lwt6 show` and
//!   `lwt6 pcap` print it (routes as `ip route` lists them, traced frames).
//!
//! Nothing here parses command lines: `lwt6`'s `cli` turns its arguments into [`RunOptions`] and prints what
//! comes back. Progress and problems the router meets while it runs (a reload refused, a kernel route not
//! applied) are logged to standard error, one line each, with `lwt6: ` before the message.
#![deny(unsafe_code)]

pub mod budget;
pub mod capture;
pub mod clients;
pub mod control;
pub mod ctl;
pub mod engine;
mod error;
pub mod export;
pub mod kroutes;
pub mod links;
pub mod log;
pub mod metrics;
pub mod monitor;
pub mod neighq;
pub mod notify;
pub mod privilege;
mod run;
pub mod show;
pub mod trace;
mod trim;
pub mod xdp_tier;

pub use error::Error;
pub(crate) use error::fail;
pub use run::{DEFAULT_CONTROL, Fanout, Io, RunOptions, RunReport, run};
