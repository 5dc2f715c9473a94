//! A worker's pending queues: the frames waiting for their next hop's link-layer address, per (egress device,
//! next hop), bounded (the limits and timers are in [`crate::neigh`]).

use crate::fib::DevId;
use crate::neigh::{MAX_PENDING_NEIGHS, QUEUE_PER_NEIGH, QUEUE_TOTAL, RETRANS_TIMER_NS};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// A received frame waiting for its next hop.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub in_dev: DevId,
    pub ts: u64,
    pub frame: Vec<u8>,
    /// When the frame was traced: its trace's sequence number and worker, and the trace's budget (the frame's
    /// trace goes on when it leaves the queue, if that trace is still the worker's).
    pub trace: Option<(u64, u16, std::sync::Arc<crate::trace::Budget>)>,
}

/// One unresolved neighbour: its queue and its solicitations.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub frames: VecDeque<Queued>,
    /// Solicitations sent so far.
    pub probes: u8,
    /// When the next one is due (or, after the last, when the neighbour is given up).
    pub next_at: u64,
}

/// A worker's pending queues, keyed by (egress device, next hop); bounded by [`QUEUE_PER_NEIGH`],
/// [`QUEUE_TOTAL`] and [`MAX_PENDING_NEIGHS`].
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingQueues {
    pub map: HashMap<(DevId, IpAddr), Pending>,
    pub total: usize,
}

/// Where a frame offered to the pending queues went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enqueued {
    /// Queued behind others for the same neighbour.
    Queued,
    /// Queued for a neighbour not yet being resolved: send the first solicitation now.
    First,
    /// No room.
    Full,
}

impl PendingQueues {
    /// Queues `frame` for `key` (first solicitation due at `now`).
    pub fn push(&mut self, key: (DevId, IpAddr), q: Queued, now: u64) -> Enqueued {
        if self.total >= QUEUE_TOTAL {
            return Enqueued::Full;
        }
        if let Some(p) = self.map.get_mut(&key) {
            if p.frames.len() >= QUEUE_PER_NEIGH {
                return Enqueued::Full;
            }
            p.frames.push_back(q);
            self.total += 1;
            return Enqueued::Queued;
        }
        if self.map.len() >= MAX_PENDING_NEIGHS {
            return Enqueued::Full;
        }
        self.map.insert(
            key,
            Pending {
                frames: VecDeque::from([q]),
                probes: 1,
                next_at: now.saturating_add(RETRANS_TIMER_NS),
            },
        );
        self.total += 1;
        Enqueued::First
    }

    /// Removes `key`'s queue, returning its frames in arrival order.
    pub fn take(&mut self, key: &(DevId, IpAddr)) -> VecDeque<Queued> {
        let frames = self.map.remove(key).map(|p| p.frames).unwrap_or_default();
        self.total -= frames.len();
        frames
    }
}
