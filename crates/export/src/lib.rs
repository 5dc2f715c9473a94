//! IOAM export (docs/ioam.md, *Export*): the traces a worker queued ([`IoamRecord`]s, taken from
//! `Worker::ioam_export`) are decoded ([`ioam_trace`]) and written by an [`exporter::Exporter`] thread to a sink:
//! JSON lines ([`json`]) or the IOAM collector protocol over gRPC ([`grpc`]). The packet path never waits for a
//! sink: the hand-over is bounded, and what does not fit is counted as lost.
#![deny(unsafe_code)]

pub mod exporter;
pub mod grpc;
pub mod ioam_trace;
pub mod json;
pub mod net;
pub mod otlp;
pub mod target;

pub use lwt6_dataplane::hop::ioam_domain::{ExportEvent, FlowIds, IoamRecord};
