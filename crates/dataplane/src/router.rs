//! The router as the offline tools use it: one [`SnapshotHandle`] and one [`Worker`] that processes batches on
//! whatever snapshot is published when the batch starts. A live router runs several workers on one handle.
//!
//! With dynamic resolution on ([`Router::set_resolve`]) the router also plays the control thread's part after
//! every batch ([`Router::drive`]): the worker's neighbour events go to a [`NeighTable`], the changes it decides
//! are published in a new snapshot, the table's timers run, and the worker's pending packets are re-processed —
//! the whole loop (packet without neighbour → solicitation out → advertisement in → queued packet forwarded) runs
//! without sockets. (It publishes a copy of the snapshot per change batch; a live control thread would use a
//! [`SnapshotWriter`](crate::snapshot::SnapshotWriter).)

use crate::neigh::NeighTable;
use crate::snapshot::{Change, Snapshot, SnapshotHandle};
use crate::spec::{Config, ConfigError};
use crate::worker::Worker;
use std::sync::Arc;

pub use crate::fib::DevId;
pub use crate::snapshot::{Link, MIN_RX_HEADROOM};

/// A router: the published configuration and one worker.
#[derive(Debug)]
pub struct Router {
    snapshots: Arc<SnapshotHandle>,
    /// The worker that processes every batch (its counters, rx headroom and options are public).
    pub worker: Worker,
    /// Learned neighbours (with dynamic resolution on).
    pub neigh: NeighTable,
}

impl Router {
    /// Builds a router from a parsed configuration. Fails (with the line) on references the parser could not
    /// check: a route `via` that no interface reaches, for example.
    pub fn build(cfg: &Config) -> Result<Router, ConfigError> {
        let snap = Snapshot::build(cfg)?;
        let worker = Worker::new(&snap);
        Ok(Router {
            snapshots: Arc::new(SnapshotHandle::new(snap)),
            worker,
            neigh: NeighTable::default(),
        })
    }

    /// Builds a router from a configuration, consuming it (see [`Snapshot::build_from`]).
    pub fn build_from(cfg: Config) -> Result<Router, ConfigError> {
        let snap = Snapshot::build_from(cfg)?;
        let worker = Worker::new(&snap);
        Ok(Router {
            snapshots: Arc::new(SnapshotHandle::new(snap)),
            worker,
            neigh: NeighTable::default(),
        })
    }

    /// The snapshot batches start on now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshots.load()
    }

    /// The publication point, to share with more workers or a [`SnapshotWriter`](crate::snapshot::SnapshotWriter).
    pub fn handle(&self) -> Arc<SnapshotHandle> {
        Arc::clone(&self.snapshots)
    }

    /// Publishes a new snapshot: the next batch runs on it.
    pub fn publish(&self, snap: Snapshot) {
        self.snapshots.publish(snap);
    }

    /// Processes a batch of received frames `(ingress device, timestamp ns, bytes)`; every frame sent is passed
    /// to `out`. The snapshot is loaded once for the whole batch. (Never inlined: it is the unit profilers and
    /// `scripts/bench-instructions.sh` count.)
    #[inline(never)]
    pub fn process_batch<'a>(
        &mut self,
        frames: impl IntoIterator<Item = (DevId, u64, &'a [u8])>,
        out: &mut dyn FnMut(DevId, u64, &[u8]),
    ) {
        let snap = self.snapshots.load();
        if !self.worker.resolve {
            self.worker.process_batch(&snap, frames, out);
            return;
        }
        let mut now = None;
        let frames = frames.into_iter().inspect(|f| now = Some(f.1));
        self.worker.process_batch(&snap, frames, out);
        drop(snap);
        if let Some(now) = now {
            self.drive(now, out);
        }
    }

    /// Turns dynamic neighbour resolution on or off (off by default: offline runs keep `no_neighbour` drops).
    pub fn set_resolve(&mut self, on: bool) {
        self.worker.resolve = on;
    }

    /// The control thread's part at time `now` (ns): the worker's neighbour events into the table, the table's
    /// timers, the resulting changes published, probes sent through `out`, then the worker's pending queues
    /// serviced on the new snapshot. [`Router::process_batch`] calls it after each batch when resolving; call it
    /// alone to let time pass.
    pub fn drive(&mut self, now: u64, out: &mut dyn FnMut(DevId, u64, &[u8])) {
        let snap = self.snapshots.load();
        let events = self.worker.take_neigh_events();
        let mut changes: Vec<Change> = Vec::new();
        for e in &events {
            self.neigh.learn(&snap, e, now, &mut changes);
        }
        let tick = self.neigh.tick(&snap, now);
        changes.extend(tick.changes);
        for (dev, f) in &tick.frames {
            out(*dev, now, f);
        }
        if !changes.is_empty() {
            let mut next = (*snap).clone();
            for c in &changes {
                // Neighbour changes name devices of this snapshot: they always apply.
                let _ = next.apply(c);
            }
            self.publish(next);
        }
        let snap = self.snapshots.load();
        self.worker.service(&snap, now, out);
    }
}
