//! What the tests of control lines applied in place share (`control_lines.rs`, `settings_lines.rs`): a test
//! frame, what a snapshot does with frames, and a transaction of lines applied as the control socket applies it.

use lwt6_config::Builder;
use lwt6_dataplane::snapshot::{Change, Snapshot, changes_between};
use lwt6_dataplane::worker::Worker;
use std::net::Ipv6Addr;

/// A UDP frame from fd00:1::1 to `dst`, received on r0.
pub fn frame(dst: Ipv6Addr) -> Vec<u8> {
    let mut f = vec![
        2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd, 0x60, 0, 0, 0, 0, 16, 17, 64,
    ];
    f.extend("fd00:1::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.octets());
    f.extend([0x9c, 0x40, 0x0d, 0x05, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    f
}

/// What `snap` does with `frames` (the fast path on or off): frames out (device, bytes) and the counters, which
/// must balance.
pub fn run(snap: &Snapshot, frames: &[Vec<u8>], fast: bool) -> (Vec<(usize, Vec<u8>)>, String) {
    let mut w = Worker::new(snap);
    w.fast_path = fast;
    let mut out = Vec::new();
    w.process_batch(
        snap,
        frames.iter().map(|f| (0usize, 5u64, f.as_slice())),
        &mut |d, _, b| out.push((d, b.to_vec())),
    );
    let s = &w.stats;
    assert!(s.balanced());
    (out, format!("{:?}", s))
}

/// Whether `snap` does with `frames` (fast path on or off) what `fresh`, built anew from the same configuration,
/// does: the same frames out and the same counters; else what differs first (the frame's index, both frames,
/// both counters).
pub fn same_as_rebuild(
    snap: &Snapshot,
    fresh: &Snapshot,
    frames: &[Vec<u8>],
    fast: bool,
) -> Result<(), String> {
    let (a, b) = (run(snap, frames, fast), run(fresh, frames, fast));
    if a == b {
        return Ok(());
    }
    let first = (0..a.0.len().max(b.0.len())).find(|i| a.0.get(*i) != b.0.get(*i));
    Err(format!(
        "fast path {fast}: first different frame {first:?} of {}: in place {:?}, rebuilt {:?}; counters {} / {}",
        frames.len(),
        first.and_then(|i| a.0.get(i)),
        first.and_then(|i| b.0.get(i)),
        a.1,
        b.1
    ))
}

/// Applies `lines` as one transaction, as the control socket does: in place when `changes_between` says the
/// snapshot can follow, else by a rebuild. `None` when a line is refused (nothing changes then); else whether
/// it was in place.
pub fn apply(b: &mut Builder<'_>, snap: &mut Snapshot, lines: &[String]) -> Option<bool> {
    let mut tx = b.transaction();
    for (i, l) in lines.iter().enumerate() {
        tx.line(i + 1, l).ok()?;
    }
    let delta = tx.check().ok()?;
    let mut changes = Vec::new();
    if delta.other_lines {
        let before = tx.rest_before().expect("other lines save the rest");
        match changes_between(before, tx.config(), snap) {
            Some(c) => changes = c,
            None => {
                let fresh = Snapshot::build(tx.config()).ok()?;
                *snap = fresh;
                tx.commit();
                return Some(false);
            }
        }
    }
    changes.extend(delta.removed.iter().map(|r| Change::DelRoute {
        prefix: r.prefix,
        metric: r.metric,
        table: r.table,
        line: r.line as usize,
    }));
    changes.extend(delta.added.into_iter().map(Change::AddRoute));
    let mut next = snap.clone();
    for c in &changes {
        next.apply(c).ok()?;
    }
    *snap = next;
    tx.commit();
    Some(true)
}
