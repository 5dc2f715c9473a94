//! The kernel's routing tables as lwt6 routes: an rtnetlink dump of the calling thread's network namespace and
//! a subscription to its route changes, so that operators keep configuring with `ip route` (`lwt6 run
//! --kernel-routes`).
//!
//! Messages are decoded with `netlink-packet-route` over a synchronous `netlink-sys` socket; each route becomes a
//! [`KernelRoute`] (table, type, and the fields of a [`lwt6_dataplane::spec::Route`], with the `seg6`, `ioam6`
//! and `rpl` tunnels as the dataplane's own `Encap` specs and `seg6local` as a [`Seg6Local`]). The intended use:
//!
//! ```no_run
//! let mut monitor = lwt6_netlink::RouteMonitor::new()?; // subscribe first: no change is missed ...
//! let table = lwt6_netlink::dump()?;                     // ... between the dump and the first change
//! # let _ = table;
//! for change in monitor.by_ref() {
//!     let change = change?; // Error::Overrun: the kernel dropped changes: drain(), then dump again
//! #   let _ = change;
//! }
//! # Ok::<(), lwt6_netlink::Error>(())
//! ```

mod route;
mod socket;

use lwt6_dataplane::snapshot::Change;

pub use route::{KernelEncap, KernelRoute, RouteKind, Seg6Local};
pub use socket::{RouteMonitor, dump};

/// One route appearing or disappearing.
#[derive(Debug, Clone, PartialEq)]
pub enum RouteChange {
    /// `RTM_NEWROUTE`: a route added.
    Add(KernelRoute),
    /// `RTM_NEWROUTE` with `NLM_F_REPLACE` (`ip route replace` / `change`): the new state of a route of the same
    /// prefix and metric.
    Replace(KernelRoute),
    /// `RTM_DELROUTE`: a route removed.
    Del(KernelRoute),
    /// A route message that could not be read (the reason names what was wrong); the route is not known to lwt6.
    Unreadable(String),
}

impl RouteChange {
    /// The change as the dataplane applies it ([`Snapshot::apply`](lwt6_dataplane::snapshot::Snapshot::apply) /
    /// `SnapshotWriter::apply`), for routes lwt6 forwards with ([`KernelRoute::is_forwarding`]); empty for the
    /// others. A replacement is a removal then an addition; its removal is refused ("no such route") when the
    /// replaced route was not one lwt6 held, which a caller may ignore.
    pub fn to_changes(&self) -> Vec<Change> {
        match self {
            RouteChange::Add(r) => r.to_spec().map(Change::AddRoute).into_iter().collect(),
            RouteChange::Replace(r) => match r.to_spec() {
                Some(s) => vec![
                    Change::DelRoute {
                        prefix: s.prefix,
                        metric: s.metric,
                        table: s.table,
                        line: 0,
                    },
                    Change::AddRoute(s),
                ],
                None => Vec::new(),
            },
            RouteChange::Del(r) if r.is_forwarding() => {
                vec![Change::DelRoute {
                    prefix: r.prefix,
                    metric: r.metric,
                    table: r.table,
                    line: 0,
                }]
            }
            RouteChange::Del(_) | RouteChange::Unreadable(_) => Vec::new(),
        }
    }
}

/// What went wrong talking to the kernel.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The netlink socket could not be opened, bound, sent to or read.
    #[error("rtnetlink: {what}: {source}")]
    Io {
        /// The failed step.
        what: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// The kernel answered the dump request with an error.
    #[error("rtnetlink: the kernel refused the route dump: {0}")]
    Refused(std::io::Error),
    /// Every dump the kernel gave was marked interrupted (`NLM_F_DUMP_INTR`: the table kept changing while it
    /// was read), this many times in a row.
    #[error(
        "rtnetlink: the route table kept changing during the dump ({0} tries); dump again later"
    )]
    Inconsistent(usize),
    /// The kernel dropped route notifications (the socket's buffer overflowed): dump again to resynchronise.
    #[error(
        "rtnetlink: route notifications were lost (receive buffer overrun); the table must be dumped again"
    )]
    Overrun,
}
