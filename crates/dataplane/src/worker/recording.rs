//! How the worker records the frames a trace admits (the [`crate::trace`] types): arming a tracer, sending the
//! admitted frames through the general path with their [`FrameTrace`], and resuming the trace of a frame that
//! waited for its next hop.

use super::pending::Queued;
use super::{Cx, RouteHint, Worker};
use crate::stats::Stats;
use crate::trace::{FrameTrace, Tracer};
use std::sync::Arc;

impl Worker {
    /// Starts tracing the frames `tracer` admits (its filter, its shared budget), or stops with `None`. The frames
    /// traced so far stay until [`Worker::take_traces`]. The worker drops the tracer by itself once the budget is
    /// spent.
    pub fn set_tracer(&mut self, tracer: Option<Tracer>) {
        if let Some(t) = &tracer {
            self.trace_budget = Some(Arc::clone(&t.budget));
        }
        self.tracer = tracer.map(Box::new);
    }

    /// Whether a trace is armed on this worker.
    pub fn tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// The frames traced since the last call, in the order they were processed.
    pub fn take_traces(&mut self) -> Vec<FrameTrace> {
        std::mem::take(&mut self.traces)
    }

    /// A batch while a trace is armed: every frame goes to [`Self::process_traced`] (the fast path, when `fast`,
    /// still takes the frames the trace does not); a spent budget ends the trace. (Out of line: only when tracing.)
    #[cold]
    #[inline(never)]
    pub(super) fn begin_traced(&mut self, fast: bool) -> bool {
        if self
            .tracer
            .as_ref()
            .is_some_and(|t| t.budget.remaining() == 0)
        {
            self.tracer = None;
            return fast;
        }
        self.trace_fast = fast;
        false
    }

    /// A frame of a batch while a trace is armed: traced through the general path when the tracer admits it (its
    /// filter matches and the budget has a frame left), otherwise processed as without the trace (the fast path
    /// first when the batch may use it).
    #[cold]
    #[inline(never)]
    pub(super) fn process_traced(
        &mut self,
        cx: &mut Cx<'_, '_>,
        frame: &[u8],
        hint: Option<RouteHint<'_>>,
    ) {
        let admitted = self.tracer.as_ref().and_then(|t| {
            t.admit(cx.in_dev, frame)
                .map(|seq| FrameTrace::start(cx.snap, seq, t.worker, cx.in_dev, cx.ts, frame))
        });
        // The frame goes through `process_slow` again, without the tracer (so that the general path is inlined
        // there only, as without tracing).
        let tracer = self.tracer.take();
        match admitted {
            None => {
                let mut hint = hint;
                let fast = self.trace_fast
                    && match self.fast_forward(cx.snap, cx.in_dev, cx.ts, frame, cx.out) {
                        Ok(()) => true,
                        Err(h) => {
                            hint = h;
                            false
                        }
                    };
                if !fast {
                    self.process_slow(cx, frame, hint);
                }
            }
            Some(t) => {
                let before = self.stats.clone();
                cx.trace = Some(Box::new(t));
                // No route hint: the input stage looks the destination up itself, and records what it found.
                self.process_slow(cx, frame, None);
                if let Some(mut t) = cx.trace.take() {
                    t.finish(&before, &self.stats);
                    self.traces.push(*t);
                }
            }
        }
        self.tracer = tracer;
    }

    /// When `q` was traced and its trace is still this worker's (not cleared or replaced since): a trace of the
    /// same frame number goes on in `cx`, marked resumed; returns the counters to end it against.
    pub(super) fn resume_trace(
        &mut self,
        cx: &mut Cx<'_, '_>,
        q: &Queued,
        now: u64,
    ) -> Option<Stats> {
        let (seq, worker, budget) = q.trace.as_ref()?;
        if !self
            .trace_budget
            .as_ref()
            .is_some_and(|b| Arc::ptr_eq(b, budget))
        {
            return None;
        }
        let mut t = FrameTrace::start(cx.snap, *seq, *worker, q.in_dev, q.ts, &q.frame);
        t.resumed_after_ns = Some(now.saturating_sub(q.ts));
        cx.trace = Some(Box::new(t));
        Some(self.stats.clone())
    }

    /// Ends a trace [`Self::resume_trace`] began.
    pub(super) fn end_resumed_trace(&mut self, cx: &mut Cx<'_, '_>, before: Option<Stats>) {
        if let (Some(before), Some(mut t)) = (before, cx.trace.take()) {
            t.finish(&before, &self.stats);
            self.traces.push(*t);
        }
    }
}
