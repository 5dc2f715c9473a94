//! Packet tracing on a running router (`lwt6 ctl trace add N [FILTER]`, `show trace [-j]`, `trace stop`,
//! `trace clear`): the control thread arms a trace on the [`TraceBoard`]; each worker looks at the board once per
//! round (one atomic load), arms its own [`Tracer`] when the trace changed, and after the round hands the frames it
//! traced to the board. The workers share one [`Budget`], so N frames are traced in all, whichever worker receives
//! them, and `show trace` lists them in the order they were claimed (their sequence numbers).

use lwt6_dataplane::trace::{Budget, FrameTrace, MAX_FRAMES, TraceFilter, Tracer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The trace the workers follow, and the frames they traced.
#[derive(Debug, Default)]
pub struct TraceBoard {
    /// Changes when a trace is armed or cleared (the workers compare it with the one they saw).
    generation: AtomicU64,
    state: Mutex<Session>,
}

/// One trace.
#[derive(Debug, Default)]
struct Session {
    generation: u64,
    /// The filter and budget; None: no trace armed since the start or the last clear.
    armed: Option<(TraceFilter, Arc<Budget>)>,
    requested: u64,
    stopped: bool,
    frames: Vec<FrameTrace>,
}

impl TraceBoard {
    /// Arms a trace of `frames` frames matching `filter`; the frames of the previous trace are forgotten.
    pub fn arm(&self, filter: TraceFilter, frames: u64) {
        let frames = frames.min(MAX_FRAMES);
        if let Ok(mut s) = self.state.lock() {
            s.generation += 1;
            s.armed = Some((filter, Arc::new(Budget::new(frames))));
            s.requested = frames;
            s.stopped = false;
            s.frames.clear();
            self.generation.store(s.generation, Ordering::Release);
        }
    }

    /// Whether a trace is armed and still has frames to trace (the XDP tier then leaves every frame to the
    /// workers, which trace).
    pub fn active(&self) -> bool {
        self.state
            .lock()
            .is_ok_and(|s| s.armed.as_ref().is_some_and(|(_, b)| b.remaining() > 0))
    }

    /// Stops the trace: no more frames are traced; those recorded stay.
    pub fn stop(&self) {
        if let Ok(mut s) = self.state.lock()
            && let Some((_, b)) = s.armed.clone()
        {
            s.stopped |= b.remaining() > 0;
            b.stop();
        }
    }

    /// Stops the trace and forgets its frames.
    pub fn clear(&self) {
        if let Ok(mut s) = self.state.lock() {
            if let Some((_, b)) = &s.armed {
                b.stop();
            }
            s.generation += 1;
            s.armed = None;
            s.requested = 0;
            s.stopped = false;
            s.frames.clear();
            self.generation.store(s.generation, Ordering::Release);
        }
    }

    /// For worker `worker` at the start of a round, having seen generation `seen`: `Some(tracer)` (None: no trace)
    /// when the trace changed since, and `seen` brought up to date. One atomic load when nothing changed.
    pub fn changed(&self, seen: &mut u64, worker: usize) -> Option<Option<Tracer>> {
        if self.generation.load(Ordering::Acquire) == *seen {
            return None;
        }
        let s = self.state.lock().ok()?;
        *seen = s.generation;
        Some(s.armed.as_ref().and_then(|(f, b)| {
            (b.remaining() > 0).then(|| Tracer::new(f.clone(), Arc::clone(b), worker as u16))
        }))
    }

    /// Frames a worker traced while it followed generation `generation` (dropped if the trace was cleared or
    /// replaced since).
    pub fn deposit(&self, generation: u64, frames: Vec<FrameTrace>) {
        if let Ok(mut s) = self.state.lock()
            && s.generation == generation
        {
            s.frames.extend(frames);
        }
    }

    /// The trace as it stands: its summary and its frames in sequence order.
    pub fn snapshot(&self) -> (crate::show::trace::Summary, Vec<FrameTrace>) {
        let Ok(s) = self.state.lock() else {
            return (off(), Vec::new());
        };
        let Some((filter, budget)) = &s.armed else {
            return (off(), Vec::new());
        };
        let mut frames = s.frames.clone();
        frames.sort_by_key(|t| t.seq);
        let status = if s.stopped {
            "stopped"
        } else if budget.remaining() > 0
            || (crate::show::trace::recorded(&frames) as u64) < s.requested
        {
            // Frames claimed but not yet handed over count as waiting: their round is not over.
            "armed"
        } else {
            "done"
        };
        let sum = crate::show::trace::Summary {
            status,
            requested: s.requested,
            filter: filter.text.clone(),
        };
        (sum, frames)
    }
}

fn off() -> crate::show::trace::Summary {
    crate::show::trace::Summary {
        status: "off",
        requested: 0,
        filter: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_follow_the_board() {
        let b = TraceBoard::default();
        let mut seen = 0;
        assert!(b.changed(&mut seen, 0).is_none(), "nothing armed yet");
        b.arm(TraceFilter::default(), 2);
        let t = b.changed(&mut seen, 1).expect("armed").expect("a tracer");
        assert_eq!((seen, t.worker, t.budget.remaining()), (1, 1, 2));
        assert!(b.changed(&mut seen, 1).is_none(), "no change since");
        assert_eq!(b.snapshot().0.status, "armed");
        b.stop();
        assert_eq!(t.budget.remaining(), 0, "the workers' budget is spent");
        assert_eq!(b.snapshot().0.status, "stopped");
        // A cleared trace: the workers drop their tracer, late frames are not kept.
        b.clear();
        assert!(b.changed(&mut seen, 1).expect("changed").is_none());
        b.deposit(1, Vec::new());
        assert_eq!(b.snapshot().0.status, "off");
    }
}
