//! `--ioam-export TARGET`: where the IOAM traces removed at a domain's boundary go (docs/ioam.md); the targets
//! themselves are `lwt6_export::target` (shared with `lwt6 run`).

use super::{Failure, fail};
use lwt6_export::exporter::Exporter;
pub use lwt6_export::target::Target;

/// Records a worker queues between two hand-overs to the exporter.
pub const QUEUE: usize = 8192;
/// Frames processed between two hand-overs (at most 11 traces each: well within [`QUEUE`]).
pub const BATCH: usize = 256;
/// Exit status of `lwt6 pcap` when IOAM traces were to be exported and every one was lost (docs/ioam.md,
/// *Export*); the outputs are written and the counters printed as usual.
pub const EXIT_ALL_LOST: u8 = 3;

/// Starts an exporter thread for `target` (see [`Target::start`]).
pub fn start(target: &Target, dev_names: Vec<String>) -> Result<Exporter, Failure> {
    target
        .start(dev_names, lwt6_export::target::DEPTH)
        .map_err(|e| fail(format!("--ioam-export {e}")))
}
