//! Traced frames for people and for scripts (`lwt6 pcap --trace N`, `lwt6 ctl show trace [-j]`): one block of
//! text per frame, or one JSON document (docs/live.md, *Packet tracing*, has the schema). The dataplane records
//! the steps ([`lwt6_dataplane::trace`]); the headers of the frame received and of every frame sent are decoded here
//! ([`lwt6_lab::decode`]).

use lwt6_dataplane::trace::{FrameTrace, Outcome, Step};
use lwt6_lab::decode;
use serde_json::{Value, json};

/// What a trace document says about the trace as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// `armed` (waiting for more frames), `done` (every frame asked for recorded), `stopped` (`trace stop`),
    /// `incomplete` (the capture ended first), `off` (no trace).
    pub status: &'static str,
    /// Frames asked for.
    pub requested: u64,
    /// The filter as given (empty: every frame).
    pub filter: String,
}

/// A time in ns since the epoch as `seconds.nanoseconds`.
fn time_text(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// One frame as a block of text: a heading, the headers received, the steps, the outcome.
pub fn frame_text(t: &FrameTrace) -> String {
    let mut s = format!(
        "frame {}: worker {}, received on {}, {} bytes, at {}\n",
        t.seq,
        t.worker,
        t.in_dev,
        t.len,
        time_text(t.ts_ns)
    );
    if let Some(waited) = t.resumed_after_ns {
        s += &format!(
            "  resumed    after {}.{:06} ms in the pending queue of its next hop\n",
            waited / 1_000_000,
            waited % 1_000_000
        );
    }
    s += &format!(
        "  received   {}\n",
        decode::summary(&decode::frame(&t.frame))
    );
    for step in &t.steps {
        s += &format!("  {step}");
        if let Step::Sent { frame, .. } = step {
            s += &format!(": {}", decode::summary(&decode::frame(frame)));
        }
        s.push('\n');
    }
    match (t.outcome, t.drop_reason) {
        (Outcome::Dropped, Some(r)) => s += &format!("  => dropped: {}\n", r.name()),
        (o, _) => s += &format!("  => {o}\n"),
    }
    if t.reallocs > 0 {
        s += &format!("  (buffer reallocations: {})\n", t.reallocs);
    }
    s
}

/// How many frames the trace recorded: a frame that waited for its next hop has two traces (the second resumed),
/// and counts once.
pub fn recorded(frames: &[FrameTrace]) -> usize {
    frames
        .iter()
        .filter(|t| t.resumed_after_ns.is_none())
        .count()
}

/// Every frame as text, in sequence order, after a line about the trace.
pub fn text(sum: &Summary, frames: &[FrameTrace]) -> String {
    let mut s = format!(
        "trace {}: {} of {} frames recorded{}\n",
        sum.status,
        recorded(frames),
        sum.requested,
        if sum.filter.is_empty() {
            String::new()
        } else {
            format!(", filter: {}", sum.filter)
        }
    );
    for t in frames {
        s.push('\n');
        s += &frame_text(t);
    }
    s
}

/// One frame as JSON: its fields, the headers received, and the decoded headers of each frame sent.
pub fn frame_json(t: &FrameTrace) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or_default();
    v["headers"] = json!(decode::frame(&t.frame));
    if let Some(steps) = v["steps"].as_array_mut() {
        for (j, step) in steps.iter_mut().zip(&t.steps) {
            if let Step::Sent { frame, .. } = step {
                j["headers"] = json!(decode::frame(frame));
            }
        }
    }
    v
}

/// The whole trace as one JSON document.
pub fn json(sum: &Summary, frames: &[FrameTrace]) -> Value {
    json!({
        "status": sum.status,
        "requested": sum.requested,
        "recorded": recorded(frames),
        "filter": sum.filter,
        "frames": frames.iter().map(frame_json).collect::<Vec<_>>(),
    })
}
