//! The neighbour stage: next-hop link-layer addresses, and the packets waiting for one (queued, solicited for,
//! re-processed once resolved, or dropped with an ICMP error when the neighbour never answers).

use super::pending::{Enqueued, Queued};
use super::{Cx, MAX_EVENTS, Worker};
use crate::fib::DevId;
use crate::neigh::{self, NeighEvent};
use crate::snapshot::Snapshot;
use crate::stats::DropReason;
use crate::wire::ethernet::Mac;
use std::net::IpAddr;
use std::sync::Arc;

impl Worker {
    /// Queues a received frame until its next hop `key` is resolved (the first one for a neighbour sends the
    /// first solicitation); counted as pending, or dropped as `neigh_queue_full`.
    pub(super) fn enqueue(&mut self, cx: &mut Cx<'_, '_>, key: (DevId, IpAddr), frame: &[u8]) {
        let q = Queued {
            in_dev: cx.in_dev,
            ts: cx.ts,
            frame: frame.to_vec(),
            trace: match (&cx.trace, &self.trace_budget) {
                (Some(t), Some(b)) => Some((t.seq, t.worker, Arc::clone(b))),
                _ => None,
            },
        };
        match self.pending.push(key, q, cx.ts) {
            Enqueued::Full => {
                self.stats.count_drop(DropReason::NeighQueueFull);
                self.capture_drop(cx.in_dev, cx.ts, frame, DropReason::NeighQueueFull);
            }
            Enqueued::Queued => self.stats.pending += 1,
            Enqueued::First => {
                self.stats.pending += 1;
                self.solicit(cx, key, None);
            }
        }
    }

    /// Sends a solicitation (ARP request) for `key`'s address out of its device, unless another worker sharing
    /// the [`SolicitGate`] sent the multicast one of this retransmission interval (which then counts for this
    /// worker's retries too).
    fn solicit(&mut self, cx: &mut Cx<'_, '_>, key: (DevId, IpAddr), unicast: Option<Mac>) {
        if unicast.is_none()
            && let Some(g) = &self.solicit_gate
            && !g.claim(key, cx.ts)
        {
            return;
        }
        if neigh::solicitation(cx.snap, key.0, key.1, unicast, &mut self.reply) {
            cx.send(key.0, &self.reply);
            self.stats.solicit_tx += 1;
        }
    }

    /// What this worker learned about neighbours since the last call (solicitations' and advertisements' link-layer
    /// addresses, ARP senders, STALE entries used), for the control thread's
    /// [`NeighTable`](crate::neigh::NeighTable). Empty unless [`Worker::resolve`] is on.
    pub fn take_neigh_events(&mut self) -> Vec<NeighEvent> {
        self.stale_seen.clear();
        std::mem::take(&mut self.events)
    }

    /// How many packets wait for a next hop, and for how many next hops.
    pub fn pending_len(&self) -> (usize, usize) {
        (self.pending.total, self.pending.map.len())
    }

    /// The dynamic-resolution timers and re-processing, at time `now` (ns) on `snap` (call it after each batch, or
    /// at least every few hundred milliseconds): packets whose neighbour `snap` knows are processed again in
    /// arrival order; next hops whose solicitation timed out get another ([`neigh::MAX_MULTICAST_SOLICIT`] in all,
    /// [`neigh::RETRANS_TIMER_NS`] apart); after the last, their packets are dropped as `neigh_unresolved` with an
    /// ICMPv6 address unreachable (ICMPv4 host unreachable) to each packet's source.
    pub fn service(&mut self, snap: &Snapshot, now: u64, out: &mut dyn FnMut(DevId, u64, &[u8])) {
        if self.pending.map.is_empty() {
            return;
        }
        self.begin(snap);
        let keys: Vec<(DevId, IpAddr)> = self.pending.map.keys().copied().collect();
        for key in keys {
            let mut cx = Cx {
                snap,
                in_dev: key.0,
                ts: now,
                out,
                group: false,
                trace: None,
            };
            if snap.neighbour(key.0, key.1).is_some() {
                for q in self.pending.take(&key) {
                    self.stats.pending -= 1;
                    cx.in_dev = q.in_dev;
                    cx.ts = q.ts;
                    let before = self.resume_trace(&mut cx, &q, now);
                    self.general(&mut cx, &q.frame, None);
                    self.end_resumed_trace(&mut cx, before);
                }
                continue;
            }
            let Some(p) = self.pending.map.get_mut(&key) else {
                continue;
            };
            if now < p.next_at {
                continue;
            }
            if p.probes < neigh::MAX_MULTICAST_SOLICIT {
                p.probes += 1;
                p.next_at = now.saturating_add(neigh::RETRANS_TIMER_NS);
                self.solicit(&mut cx, key, None);
                continue;
            }
            for q in self.pending.take(&key) {
                self.stats.pending -= 1;
                cx.in_dev = q.in_dev;
                let before = self.resume_trace(&mut cx, &q, now);
                self.stats.count_drop(DropReason::NeighUnresolved);
                self.capture_drop(q.in_dev, now, &q.frame, DropReason::NeighUnresolved);
                self.unreachable_about(&mut cx, &q.frame);
                self.end_resumed_trace(&mut cx, before);
            }
        }
        self.flush_counters();
    }

    /// The link-layer address of next hop `nh` on `dev`: a static or learned entry (a STALE one is reported once
    /// to the control thread when resolving). Unknown: `no_neighbour`, with the next hop noted for the pending
    /// queue when resolving.
    #[inline(always)]
    pub(super) fn neighbour_mac(
        &mut self,
        snap: &Snapshot,
        dev: DevId,
        nh: IpAddr,
    ) -> Result<Mac, DropReason> {
        match snap.neighbour(dev, nh) {
            Some((mac, false)) => Ok(mac),
            other => self.neighbour_unsure(dev, nh, other),
        }
    }

    /// [`Self::neighbour_mac`] for a STALE or unknown neighbour (out of line: the rare case).
    #[inline(never)]
    fn neighbour_unsure(
        &mut self,
        dev: DevId,
        nh: IpAddr,
        found: Option<(Mac, bool)>,
    ) -> Result<Mac, DropReason> {
        match found {
            Some((mac, _)) => {
                if self.resolve
                    && self.events.len() < MAX_EVENTS
                    && self.stale_seen.insert((dev, nh))
                {
                    self.events.push(NeighEvent::UsedStale { dev, addr: nh });
                }
                Ok(mac)
            }
            None => {
                if self.resolve {
                    self.miss = Some((dev, nh));
                }
                Err(DropReason::NoNeighbour)
            }
        }
    }

    /// Where neighbour events go: the worker's list when resolving and not full.
    pub(super) fn event_sink(&mut self) -> Option<&mut Vec<NeighEvent>> {
        (self.resolve && self.events.len() < MAX_EVENTS).then_some(&mut self.events)
    }
}
