//! lwt6's live router: the runtime behind `lwt6 run` and `lwt6 ctl` (docs/live.md).
//!
//! [`run`] attaches to the interfaces a configuration file names, runs one thread per worker ([`engine`]), and
//! serves the control socket ([`control`]) and signals on the calling thread until SIGINT or SIGTERM; it returns
//! the final counters as a [`RunReport`]. Around it:
//! - [`ctl`]: the client side of the control socket (what `lwt6 ctl` sends and how the reply reads);
//! - [`links`]: the configuration's interfaces checked against the system, and the kernel settings that would
//!   make the kernel do the router's work a second time;
//! - [`kroutes`]: the kernel's main routing table followed over rtnetlink (`--kernel-routes`);
//! - [`log`]: the log lines on standard error, rate-limited per kind;
//! - [`metrics`]: the counters in the Prometheus text format;
//! - [`trace`]: the packet trace the control thread arms and the workers follow;
//! - [`show`]: router state as text and JSON, as the control socket answers `show ...` and `lwt6 show` and
//!   `lwt6 pcap` print it (routes as `ip route` lists them, traced frames).
//!
//! Nothing here parses command lines: `lwt6`'s `cli` turns its arguments into [`RunOptions`] and prints what
//! comes back. Progress and problems the router meets while it runs (a reload refused, a kernel route not
//! applied) are written to standard error, one line each, starting with `lwt6: `.
#![deny(unsafe_code)]

pub mod control;
pub mod ctl;
pub mod engine;
mod error;
pub mod kroutes;
pub mod links;
pub mod log;
pub mod metrics;
mod run;
pub mod show;
pub mod trace;
mod trim;

pub use error::Error;
pub(crate) use error::fail;
pub use run::{DEFAULT_CONTROL, Fanout, Io, RunOptions, RunReport, run};
