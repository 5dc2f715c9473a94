//! Where traces go (`--ioam-export TARGET`, `lwt6 ctl ioam export add TARGET`): the target's text and the
//! exporter it starts (docs/ioam.md, *Export*).

use crate::exporter::{Cut, Exporter, JsonLines, Sink};
use lwt6_io::output;
use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom};
use std::path::PathBuf;
use std::str::FromStr;

/// Batches waiting for an exporter thread.
pub const DEPTH: usize = 64;

/// An export target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// JSON lines to a file (`json:FILE`) or stdout (`json:-`).
    Json(Option<PathBuf>),
    /// An IOAM collector over gRPC (`grpc:HOST:PORT`).
    Grpc(String),
    /// An IOAM collector over gRPC in TLS (`grpcs:HOST:PORT[,ca=FILE]`): the collector's certificate must chain
    /// to a CA of FILE (PEM; default [`crate::net::DEFAULT_CA`]) and name HOST.
    Grpcs(String, PathBuf),
    /// An OpenTelemetry collector over OTLP/HTTP with protobuf (`otlp:http://HOST:PORT[/PATH]`, or
    /// `otlp:https://HOST:PORT[/PATH][,ca=FILE]`; the path defaults to `/v1/traces`).
    Otlp(crate::otlp::Endpoint),
}

const EXPECTED: &str = "expected json:FILE, json:-, grpc:HOST:PORT, grpcs:HOST:PORT[,ca=FILE] or otlp:http[s]://HOST:PORT[/PATH][,ca=FILE]";

/// `HOST:PORT` with a non-empty host and a port.
fn host_port(a: &str) -> bool {
    a.rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
}

/// `X,ca=FILE` as (X, Some(FILE)), else (X, None).
fn with_ca(s: &str) -> (&str, Option<PathBuf>) {
    match s.rsplit_once(",ca=") {
        Some((x, f)) if !f.is_empty() => (x, Some(f.into())),
        _ => (s, None),
    }
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
            Some(("grpcs", a)) => match with_ca(a) {
                (a, ca) if host_port(a) => Ok(Target::Grpcs(
                    a.into(),
                    ca.unwrap_or_else(|| crate::net::DEFAULT_CA.into()),
                )),
                _ => Err(format!("'{s}': {EXPECTED}")),
            },
            Some(("otlp", u)) => {
                let (u, ca) = with_ca(u);
                crate::otlp::Endpoint::parse_with_ca(u, ca)
                    .map(Target::Otlp)
                    .map_err(|why| format!("'{s}': {why} ({EXPECTED})"))
            }
            _ => Err(format!("'{s}': {EXPECTED}")),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Json(None) => f.write_str("json:-"),
            Target::Json(Some(p)) => write!(f, "json:{}", p.display()),
            Target::Grpc(a) => write!(f, "grpc:{a}"),
            Target::Grpcs(a, ca) if ca.as_os_str() == crate::net::DEFAULT_CA => {
                write!(f, "grpcs:{a}")
            }
            Target::Grpcs(a, ca) => write!(f, "grpcs:{a},ca={}", ca.display()),
            Target::Otlp(e) => write!(f, "otlp:{e}"),
        }
    }
}

impl Target {
    /// Starts an exporter thread for this target, at most `depth` batches waiting for it. A `json:FILE` is
    /// checked first ([`output::check`]) and grows as traces are exported: a regular or new file is written in
    /// place (truncated, keeping its mode and owner; a record a full disk cuts is removed again), a link is
    /// followed, a FIFO or character device is written through, anything else is refused. A collector is not
    /// reached yet: the first batch connects.
    pub fn start(&self, dev_names: Vec<String>, depth: usize) -> Result<Exporter, String> {
        let at = |p: &std::path::Path, e: &dyn std::fmt::Display| format!("{}: {e}", p.display());
        let sink: Box<dyn Sink> = match self {
            Target::Json(None) => Box::new(JsonLines::new(std::io::stdout(), dev_names)),
            Target::Json(Some(p)) => match output::check(p).map_err(|e| e.to_string())? {
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
            },
            Target::Grpc(addr) => Box::new(crate::grpc::Client::new(addr)),
            Target::Grpcs(addr, ca) => Box::new(
                crate::grpc::Client::new(addr).with_tls(crate::net::tls_config(ca, &[b"h2"])?),
            ),
            Target::Otlp(e) => {
                let c = crate::otlp::Client::new(e.clone(), dev_names);
                match &e.tls {
                    None => Box::new(c),
                    Some(ca) => Box::new(c.with_tls(crate::net::tls_config(ca, &[b"http/1.1"])?)),
                }
            }
        };
        Ok(Exporter::spawn(sink, depth))
    }
}
