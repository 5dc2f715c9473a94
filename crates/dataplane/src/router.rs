//! The router as the offline tools use it: one [`SnapshotHandle`] and one [`Worker`] that processes batches on
//! whatever snapshot is published when the batch starts. A live router runs several workers on one handle.

use crate::snapshot::{Snapshot, SnapshotHandle};
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
        })
    }

    /// Builds a router from a configuration, consuming it (see [`Snapshot::build_from`]).
    pub fn build_from(cfg: Config) -> Result<Router, ConfigError> {
        let snap = Snapshot::build_from(cfg)?;
        let worker = Worker::new(&snap);
        Ok(Router {
            snapshots: Arc::new(SnapshotHandle::new(snap)),
            worker,
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
        self.worker.process_batch(&snap, frames, out);
    }
}
