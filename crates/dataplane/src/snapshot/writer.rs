//! Publishing snapshots: the handle workers load from, and the control thread's writer that applies changes.

use super::{Change, Snapshot};
use crate::spec::ConfigError;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The most changes the journal keeps for its follower (beyond, it says they are lost: the follower rebuilds).
pub const JOURNAL_MAX: usize = 16_384;

/// The changes published in place since the follower last took them (see [`SnapshotHandle::follow_changes`]).
#[derive(Debug, Default)]
struct Journal {
    /// Kept only once a follower asked.
    on: bool,
    /// The generation the follower took them at.
    from: u64,
    /// The changes published in place since, in order.
    changes: Vec<Change>,
    /// A publication since was not in place (a whole snapshot), or the changes passed [`JOURNAL_MAX`].
    lost: bool,
}

/// The publication point between the control plane and the workers.
#[derive(Debug)]
pub struct SnapshotHandle {
    current: ArcSwap<Snapshot>,
    /// Publications so far (a follower of the snapshot, such as the XDP tier, looks whether it changed).
    generation: AtomicU64,
    journal: Mutex<Journal>,
}

impl SnapshotHandle {
    /// Publishes an initial snapshot.
    pub fn new(snap: Snapshot) -> Self {
        SnapshotHandle {
            current: ArcSwap::from_pointee(snap),
            generation: AtomicU64::new(0),
            journal: Mutex::new(Journal::default()),
        }
    }

    /// Replaces the snapshot; workers see it at their next batch, batches in flight finish on the old one.
    pub fn publish(&self, snap: Snapshot) {
        self.published(None, || self.current.store(Arc::new(snap)));
    }

    /// Runs `store` (the publication) and counts it, with its `changes` in the journal (None: a whole snapshot).
    fn published<T>(&self, changes: Option<&[Change]>, store: impl FnOnce() -> T) -> T {
        let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        let out = store();
        self.generation.fetch_add(1, Ordering::Release);
        if j.on && !j.lost {
            match changes {
                Some(c) if j.changes.len() + c.len() <= JOURNAL_MAX => {
                    j.changes.extend_from_slice(c)
                }
                _ => {
                    j.lost = true;
                    j.changes = Vec::new();
                }
            }
        }
        out
    }

    /// Starts keeping the changes published in place for one follower (the XDP tier), which takes them with
    /// [`changes_since`](Self::changes_since). Without a follower nothing is kept.
    pub fn follow_changes(&self) {
        let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        if !j.on {
            *j = Journal {
                on: true,
                from: self.generation(),
                ..Journal::default()
            };
        }
    }

    /// The generation now and the changes published since generation `since`, in order, taken (the next call
    /// gives the ones after). `None` when the journal does not hold all of them: a whole snapshot was published
    /// meanwhile, more than [`JOURNAL_MAX`] changes came, `since` is not the generation of the last call, or
    /// nobody follows. The snapshot [`load`](Self::load)ed after this call has every change returned.
    pub fn changes_since(&self, since: u64) -> (u64, Option<Vec<Change>>) {
        let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.generation();
        let whole = j.on && !j.lost && j.from == since;
        let changes = std::mem::take(&mut j.changes);
        j.lost = false;
        j.from = now;
        (now, whole.then_some(changes))
    }

    /// How many snapshots were published after the first (it changes with every [`publish`](Self::publish) and
    /// [`swap`](Self::swap); read it before [`load`](Self::load) to know the loaded one is at least that new).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Publishes `snap` and returns the one it replaces.
    pub fn swap(&self, snap: Arc<Snapshot>) -> Arc<Snapshot> {
        self.published(None, || self.current.swap(snap))
    }

    /// The current snapshot, for one batch (one reference-count operation per batch, none per packet).
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }
}

/// Applies changes to the published snapshot without copying it: two snapshots, the published one and a spare.
/// A batch of changes goes into the spare, which is then published; the one it replaces becomes the spare and
/// receives the same batch when the next one comes, as soon as no worker holds it any more (workers hold a
/// snapshot for one batch of packets). Each change is applied twice, the table is never copied (after the one
/// copy made at the start), and a batch in flight finishes on the snapshot it started with.
#[derive(Debug)]
pub struct SnapshotWriter {
    handle: Arc<SnapshotHandle>,
    spare: Arc<Snapshot>,
    /// Changes the published snapshot has and the spare has not yet.
    pending: Vec<Change>,
    /// How many of them the last [`SnapshotWriter::apply`] brought the spare up to date with.
    caught_up: usize,
}

impl SnapshotWriter {
    /// A writer for `handle` (copies its current snapshot once, as the spare).
    pub fn new(handle: Arc<SnapshotHandle>) -> Self {
        let spare = Arc::new((*handle.load()).clone());
        SnapshotWriter {
            handle,
            spare,
            pending: Vec::new(),
            caught_up: 0,
        }
    }

    /// Applies `changes` in order and publishes the result. A change that cannot apply stops the batch: the
    /// ones before it are published, it and the ones after are not, and its index comes back with the error.
    /// The spare first catches up with the batch before, unless [`catch_up`](Self::catch_up) or
    /// [`try_catch_up`](Self::try_catch_up) did already.
    pub fn apply(&mut self, changes: &[Change]) -> Result<(), (usize, ConfigError)> {
        self.catch_up();
        // Caught up, and not published: no worker can take it meanwhile.
        let spare = Arc::get_mut(&mut self.spare).expect("no worker holds the spare");
        let mut done = 0;
        let mut failed = None;
        for (i, c) in changes.iter().enumerate() {
            match spare.apply(c) {
                Ok(()) => done += 1,
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if done > 0 {
            let spare = Arc::clone(&self.spare);
            let old = self
                .handle
                .published(Some(&changes[..done]), || self.handle.current.swap(spare));
            self.spare = old;
            self.pending = changes[..done].to_vec();
        }
        failed.map_or(Ok(()), Err)
    }

    /// Brings the spare up to date with the published snapshot now, waiting for the workers to drop it, rather
    /// than at the next [`apply`](Self::apply): after a large batch, so that what the spare frees (the slots and
    /// maps of deleted routes, which the two snapshots share) is freed before the caller gives memory back to the
    /// system, not after.
    pub fn catch_up(&mut self) {
        self.caught_up = 0;
        let spare = free_spare(&mut self.spare);
        bring_up(spare, &mut self.pending, &mut self.caught_up, &self.handle);
    }

    /// Brings the spare up to date with the published snapshot now if no worker holds it (without waiting for
    /// one): what the next [`apply`](Self::apply) would do first, done by the control thread once it has
    /// answered a request, so that a request waits for one application of its changes, not two. True when it
    /// applied something ([`caught_up`](Self::caught_up) says how much).
    pub fn try_catch_up(&mut self) -> bool {
        self.caught_up = 0;
        if self.pending.is_empty() {
            return false;
        }
        let Some(spare) = Arc::get_mut(&mut self.spare) else {
            return false;
        };
        bring_up(spare, &mut self.pending, &mut self.caught_up, &self.handle);
        true
    }

    /// How many changes of the batch before the last [`apply`](Self::apply), [`catch_up`](Self::catch_up) or
    /// [`try_catch_up`](Self::try_catch_up) were applied to the spare by it (the spare catches up before it takes
    /// the new batch): a large number means the spare freed or grew as much as that batch did, during this call
    /// (the caller may give freed memory back to the system then).
    pub fn caught_up(&self) -> usize {
        self.caught_up
    }

    /// The handle this writer publishes to.
    pub fn handle(&self) -> &Arc<SnapshotHandle> {
        &self.handle
    }
}

/// The spare, once no worker holds it: workers drop the snapshot they loaded at the end of their batch.
fn free_spare(spare: &mut Arc<Snapshot>) -> &mut Snapshot {
    while Arc::get_mut(spare).is_none() {
        std::thread::yield_now();
    }
    Arc::get_mut(spare).expect("no worker holds the spare")
}

/// Applies to `spare` the changes the published snapshot has and it has not (`pending`, taken), counted in
/// `caught_up`; then the two share their route slots again.
fn bring_up(
    spare: &mut Snapshot,
    pending: &mut Vec<Change>,
    caught_up: &mut usize,
    handle: &SnapshotHandle,
) {
    if pending.is_empty() {
        return;
    }
    *caught_up = pending.len();
    // Taken, not drained: a large batch's log is freed here rather than kept as the vector's capacity.
    for c in std::mem::take(pending) {
        // Applied to the published copy already, from the same state: it applies here too.
        spare
            .apply(&c)
            .expect("a change that applied to the published snapshot applies to the spare");
    }
    // The spare now holds what the published snapshot holds: their route slots are shared again, so the two keep
    // one copy of the routes but for the chunks the next batch writes (fib/slots.rs).
    spare.share_routes_from(&handle.load());
}
