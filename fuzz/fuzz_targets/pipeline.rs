//! The whole pipeline, frame bytes to output frames, on a router with every tunnel kind and local SRH / RPL
//! processing. The input is several frames (see `lwt6_fuzz::split_frames`), processed one batch each, then all
//! in one batch. Checked: counters balance (received = sent + dropped) after every frame; every output frame is
//! a valid Ethernet + IPv6 / IPv4 frame with consistent lengths; at most one buffer growth per frame and never a
//! refused second one (`buffer_planning`); the fast path and the general path send the same frames; one batch
//! or one frame at a time, the same frames.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::stats::DropReason;
use lwt6_dataplane::worker::Worker;
use lwt6_fuzz::{check_output_frame, router_config, split_frames};
use std::sync::OnceLock;

/// The snapshot is built once (building it is most of the cost of a run); each run gets fresh workers.
fn snapshot() -> &'static Snapshot {
    static SNAP: OnceLock<Snapshot> = OnceLock::new();
    SNAP.get_or_init(|| Snapshot::build(&router_config()).expect("the fuzzing router builds"))
}

type Sent = Vec<(usize, Vec<u8>)>;

fuzz_target!(|data: &[u8]| {
    let snap = snapshot();
    let frames = split_frames(data);
    let mut fast = Worker::new(snap);
    let mut slow = Worker::new(snap);
    slow.fast_path = false;
    let mut out_fast: Sent = Vec::new();
    let mut out_slow: Sent = Vec::new();
    for (i, &(dev, f)) in frames.iter().enumerate() {
        let reallocs = fast.stats.reallocs;
        fast.process_batch(snap, [(dev, i as u64, f)], &mut |d, _, o| {
            check_output_frame(o);
            out_fast.push((d, o.to_vec()));
        });
        slow.process_batch(snap, [(dev, i as u64, f)], &mut |d, _, o| {
            out_slow.push((d, o.to_vec()))
        });
        let s = &fast.stats;
        assert!(s.balanced(), "rx = tx + dropped after frame {i}: {s:?}");
        assert_eq!(s.rx, i as u64 + 1);
        assert!(s.reallocs <= reallocs + 1, "at most one growth per frame");
        assert_eq!(
            s.drops
                .get(&DropReason::BufferPlanning)
                .copied()
                .unwrap_or(0),
            0
        );
    }
    assert_eq!(
        out_fast, out_slow,
        "the fast path and the general path send the same frames"
    );
    assert_eq!(fast.stats.tx, slow.stats.tx);
    assert_eq!(fast.stats.drops, slow.stats.drops);
    let mut batch = Worker::new(snap);
    let mut out_batch: Sent = Vec::new();
    batch.process_batch(
        snap,
        frames
            .iter()
            .enumerate()
            .map(|(i, &(d, f))| (d, i as u64, f)),
        &mut |d, _, o| out_batch.push((d, o.to_vec())),
    );
    assert!(batch.stats.balanced());
    assert_eq!(
        out_batch, out_fast,
        "one batch or one frame at a time: same output"
    );
});
