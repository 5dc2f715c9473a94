//! `--ioam-export TARGET`: where the IOAM traces removed at a domain's boundary go (docs/ioam.md).

use super::{Failure, fail};
use lwt6_export::exporter::{Exporter, JsonLines};
use std::path::PathBuf;
use std::str::FromStr;

/// Records a worker queues between two hand-overs to the exporter.
pub const QUEUE: usize = 8192;
/// Frames processed between two hand-overs (at most 11 traces each: well within [`QUEUE`]).
pub const BATCH: usize = 256;
/// Batches waiting for the exporter thread.
const DEPTH: usize = 64;

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
    /// Starts an exporter thread for this target.
    pub fn start(&self, dev_names: Vec<String>) -> Result<Exporter, Failure> {
        let sink: Box<dyn lwt6_export::exporter::Sink> = match self {
            Target::Json(None) => Box::new(JsonLines::new(std::io::stdout(), dev_names)),
            Target::Json(Some(p)) => {
                let f = std::fs::File::create(p)
                    .map_err(|e| fail(format!("--ioam-export {}: {e}", p.display())))?;
                Box::new(JsonLines::new(std::io::BufWriter::new(f), dev_names))
            }
            Target::Grpc(addr) => Box::new(lwt6_export::grpc::Client::new(addr)),
        };
        Ok(Exporter::spawn(sink, DEPTH))
    }
}
