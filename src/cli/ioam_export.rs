//! `--ioam-export TARGET`: where the IOAM traces removed at a domain's boundary go (docs/ioam.md).

use super::{Failure, fail};
use crate::io::output;
use lwt6_export::exporter::{Cut, Exporter, JsonLines};
use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom};
use std::path::PathBuf;
use std::str::FromStr;

/// Records a worker queues between two hand-overs to the exporter.
pub const QUEUE: usize = 8192;
/// Frames processed between two hand-overs (at most 11 traces each: well within [`QUEUE`]).
pub const BATCH: usize = 256;
/// Batches waiting for the exporter thread.
const DEPTH: usize = 64;
/// Exit status of `lwt6 pcap` when IOAM traces were to be exported and every one was lost (docs/ioam.md,
/// *Export*); the outputs are written and the counters printed as usual.
pub const EXIT_ALL_LOST: u8 = 3;

/// An export target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// JSON lines to a file (`json:FILE`) or stdout (`json:-`).
    Json(Option<PathBuf>),
    /// An IOAM collector over gRPC (`grpc:HOST:PORT`).
    Grpc(String),
}

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            Some(("json", "-")) => Ok(Target::Json(None)),
            Some(("json", f)) if !f.is_empty() => Ok(Target::Json(Some(f.into()))),
            Some(("grpc", a))
                if a.rsplit_once(':')
                    .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
            {
                Ok(Target::Grpc(a.into()))
            }
            _ => Err(format!(
                "'{s}': expected json:FILE, json:- or grpc:HOST:PORT"
            )),
        }
    }
}

impl Target {
    /// Starts an exporter thread for this target. A `json:FILE` is checked first ([`output::check`]) and grows
    /// as traces are exported: a regular or new file is written in place (truncated, keeping its mode and owner;
    /// a record a full disk cuts is removed again), a link is followed, a FIFO or character device is written
    /// through, anything else is refused.
    pub fn start(&self, dev_names: Vec<String>) -> Result<Exporter, Failure> {
        let at = |p: &std::path::Path, e: &dyn std::fmt::Display| {
            fail(format!("--ioam-export {}: {e}", p.display()))
        };
        let sink: Box<dyn lwt6_export::exporter::Sink> = match self {
            Target::Json(None) => Box::new(JsonLines::new(std::io::stdout(), dev_names)),
            Target::Json(Some(p)) => {
                match output::check(p).map_err(|e| fail(format!("--ioam-export {e}")))? {
                    output::Dest::Stdout => Box::new(JsonLines::new(std::io::stdout(), dev_names)),
                    output::Dest::Replace { target, .. } => {
                        let f = OpenOptions::new()
                            .write(true)
                            .create(true)
                            .truncate(true)
                            .open(&target)
                            .map_err(|e| at(p, &e))?;
                        let mut back = f.try_clone().map_err(|e| at(p, &e))?;
                        let cut: Cut = Box::new(move |len| {
                            back.set_len(len)?;
                            back.seek(SeekFrom::Start(len)).map(|_| ())
                        });
                        Box::new(JsonLines::new(f, dev_names).with_cut(0, cut))
                    }
                    output::Dest::Through { target, kind } => {
                        let f = OpenOptions::new()
                            .write(true)
                            .open(&target)
                            .map_err(|e| at(p, &format!("opening the {kind}: {e}")))?;
                        Box::new(JsonLines::new(f, dev_names))
                    }
                }
            }
            Target::Grpc(addr) => Box::new(lwt6_export::grpc::Client::new(addr)),
        };
        Ok(Exporter::spawn(sink, DEPTH))
    }
}
