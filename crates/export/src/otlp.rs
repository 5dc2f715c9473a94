//! OpenTelemetry export: traces as OTLP/HTTP with protobuf (`POST /v1/traces`, `Content-Type:
//! application/x-protobuf`; the OTLP specification's *OTLP/HTTP*), to an OpenTelemetry Collector's `otlp`
//! receiver.
//!
//! One OTLP trace per exported IOAM option: a root span for the option (named for the export event: `ioam
//! egress`, `ioam decap`, `ioam transit`, `ioam direct_export`) with the option's and the flow's fields as
//! attributes, and under it one span per node record, in path order (`ioam node N`), with the node's fields as
//! attributes (`ioam.node.*`, only those its trace type has). A node span runs from the node's timestamp
//! (seconds and fraction, the fraction in microseconds as Linux writes it: RFC 9197's POSIX format) for its
//! transit delay (nanoseconds) when the node recorded them; otherwise it sits at the time the record was made.
//! The root span runs from its earliest node's start to the record's time.
//!
//! The messages (`ExportTraceServiceRequest` and what it holds, from opentelemetry-proto's `trace.proto`,
//! `common.proto`, `resource.proto`) are encoded by hand, as the gRPC client's are; the tests decode them with
//! the upstream definitions (the `opentelemetry-proto` crate).

use crate::IoamRecord;
use crate::exporter::{Sink, SinkError};
use crate::grpc::{Limits, bytes, tag, varint};
use crate::ioam_trace::{Trace, option_type_name};
use crate::net::Stream;
use lwt6_wire::ioam::{DecodedNode, OtherOption};
use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

/// The default path of the traces endpoint (OTLP/HTTP).
pub const DEFAULT_PATH: &str = "/v1/traces";

/// Where the collector's OTLP/HTTP receiver listens: `http://HOST:PORT[/PATH]` or `https://HOST:PORT[/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `HOST:PORT` (a bracketed IPv6 address as in a URL).
    pub authority: String,
    /// The request path (`/v1/traces` unless given).
    pub path: String,
    /// `https`: the CA bundle (PEM) the collector's certificate must chain to.
    pub tls: Option<std::path::PathBuf>,
}

impl Endpoint {
    /// Parses `http://HOST:PORT[/PATH]` or `https://HOST:PORT[/PATH]` (TLS, trusting the CAs of `ca`, or of
    /// [`crate::net::DEFAULT_CA`] when `ca` is None). A `ca` with `http` is refused.
    pub fn parse_with_ca(url: &str, ca: Option<std::path::PathBuf>) -> Result<Endpoint, String> {
        let (rest, tls) = match url.split_once("://") {
            Some(("http", _)) if ca.is_some() => {
                return Err("ca= is for https only".into());
            }
            Some(("http", r)) => (r, None),
            Some(("https", r)) => (r, Some(ca.unwrap_or_else(|| crate::net::DEFAULT_CA.into()))),
            _ => return Err("an http:// or https:// URL is expected".into()),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, DEFAULT_PATH),
        };
        let ok = authority
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !ok {
            return Err(format!("'{authority}': HOST:PORT expected"));
        }
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("the path holds a space or a control character".into());
        }
        Ok(Endpoint {
            authority: authority.to_string(),
            path: path.to_string(),
            tls,
        })
    }

    /// [`parse_with_ca`](Self::parse_with_ca) without a CA file.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        Endpoint::parse_with_ca(url, None)
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tls {
            None => write!(f, "http://{}{}", self.authority, self.path),
            Some(ca) if ca.as_os_str() == crate::net::DEFAULT_CA => {
                write!(f, "https://{}{}", self.authority, self.path)
            }
            Some(ca) => write!(
                f,
                "https://{}{},ca={}",
                self.authority,
                self.path,
                ca.display()
            ),
        }
    }
}

// ---- protobuf ----

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// An attribute value (`AnyValue`).
enum Value<'a> {
    Str(&'a str),
    Int(i64),
    Bool(bool),
    Bytes(&'a [u8]),
}

/// One `KeyValue` as field `field` of `out`.
fn attr(out: &mut Vec<u8>, field: u32, key: &str, v: Value<'_>) {
    let mut any = Vec::new();
    match v {
        Value::Str(s) => string(&mut any, 1, s),
        Value::Bool(b) => {
            tag(&mut any, 2, 0);
            varint(&mut any, u64::from(b));
        }
        Value::Int(i) => {
            tag(&mut any, 3, 0);
            varint(&mut any, i as u64);
        }
        Value::Bytes(b) => bytes(&mut any, 7, b),
    }
    let mut kv = Vec::new();
    string(&mut kv, 1, key);
    bytes(&mut kv, 2, &any);
    bytes(out, field, &kv);
}

/// Span kind INTERNAL (`Span.SpanKind`).
const SPAN_KIND_INTERNAL: u64 = 1;

/// Field numbers of `Span`.
mod span {
    pub const TRACE_ID: u32 = 1;
    pub const SPAN_ID: u32 = 2;
    pub const PARENT_SPAN_ID: u32 = 4;
    pub const NAME: u32 = 5;
    pub const KIND: u32 = 6;
    pub const START: u32 = 7;
    pub const END: u32 = 8;
    pub const ATTRIBUTES: u32 = 9;
}

/// A span's times: a node's timestamp (seconds, microseconds) and transit delay (ns), when it has them.
fn node_times(n: &DecodedNode) -> Option<(u64, u64)> {
    let sec = u64::from(n.ts_sec?);
    let start = sec * 1_000_000_000 + u64::from(n.ts_frac.unwrap_or(0)).min(999_999) * 1000;
    let end = start + u64::from(n.transit_delay.unwrap_or(0) & 0x7fff_ffff);
    Some((start, end))
}

/// The attributes of a node record: each field its trace type has.
fn node_attrs(s: &mut Vec<u8>, n: &DecodedNode) {
    let a = span::ATTRIBUTES;
    let int = |s: &mut Vec<u8>, k: &str, v: Option<u64>| {
        if let Some(v) = v {
            attr(s, a, k, Value::Int(v as i64));
        }
    };
    int(s, "ioam.node.hop_limit", n.hop_limit.map(u64::from));
    int(s, "ioam.node.id", n.node_id.map(u64::from));
    int(s, "ioam.node.ingress_if_id", n.ingress_id.map(u64::from));
    int(s, "ioam.node.egress_if_id", n.egress_id.map(u64::from));
    int(s, "ioam.node.timestamp_sec", n.ts_sec.map(u64::from));
    int(s, "ioam.node.timestamp_frac", n.ts_frac.map(u64::from));
    int(s, "ioam.node.transit_delay", n.transit_delay.map(u64::from));
    int(s, "ioam.node.queue_depth", n.queue_depth.map(u64::from));
    int(
        s,
        "ioam.node.checksum_complement",
        n.checksum_complement.map(u64::from),
    );
    int(
        s,
        "ioam.node.hop_limit_wide",
        n.hop_limit_wide.map(u64::from),
    );
    int(s, "ioam.node.id_wide", n.node_id_wide);
    int(
        s,
        "ioam.node.ingress_if_id_wide",
        n.ingress_wide.map(u64::from),
    );
    int(
        s,
        "ioam.node.egress_if_id_wide",
        n.egress_wide.map(u64::from),
    );
    int(
        s,
        "ioam.node.buffer_occupancy",
        n.buffer_occupancy.map(u64::from),
    );
    if let Some(d) = n.ns_data {
        attr(
            s,
            a,
            "ioam.node.namespace_data",
            Value::Bytes(&d.to_be_bytes()),
        );
    }
    if let Some(d) = n.ns_data_wide {
        attr(
            s,
            a,
            "ioam.node.namespace_data_wide",
            Value::Bytes(&d.to_be_bytes()),
        );
    }
    match &n.opaque {
        Some(Some((id, data))) => {
            int(s, "ioam.node.opaque_schema_id", Some(u64::from(*id)));
            attr(s, a, "ioam.node.opaque_data", Value::Bytes(data));
        }
        Some(None) => attr(s, a, "ioam.node.opaque_schema_id", Value::Str("none")),
        None => {}
    }
}

/// Makes trace and span ids: a trace id is a per-exporter random-looking half and a counter (never zero), a span
/// id the trace's counter and the span's number (from 1).
#[derive(Debug, Clone)]
pub struct Ids {
    seed: u64,
    next: u64,
}

impl Ids {
    /// Ids starting from `seed` (any value; the exporter takes the time and the process id).
    pub fn new(seed: u64) -> Ids {
        Ids { seed, next: 1 }
    }

    fn trace(&mut self) -> ([u8; 16], u64) {
        let n = self.next;
        self.next = self.next.wrapping_add(1).max(1);
        let mut id = [0; 16];
        id[..8].copy_from_slice(&self.seed.to_be_bytes());
        id[8..].copy_from_slice(&n.to_be_bytes());
        (id, n)
    }

    fn span(trace: u64, i: usize) -> [u8; 8] {
        ((trace << 16) ^ (i as u64 + 1)).max(1).to_be_bytes()
    }
}

/// The spans of one record (the root span first), appended to `out` as `ScopeSpans.spans` fields (2).
pub fn encode_record(out: &mut Vec<u8>, r: &IoamRecord, dev_names: &[String], ids: &mut Ids) {
    let decoded = if r.node.is_empty() {
        Trace::decode(&r.option)
    } else {
        Trace::decode_dex(&r.option, &r.node)
    };
    let (trace_id, n) = ids.trace();
    let root_id = Ids::span(n, 0);
    let name = |d: usize| dev_names.get(d).cloned().unwrap_or_else(|| d.to_string());
    let mut nodes = Vec::new();
    let mut start = r.ts_ns;
    if let Some(t) = &decoded {
        for (i, node) in t.nodes.iter().enumerate() {
            let mut s = Vec::new();
            bytes(&mut s, span::TRACE_ID, &trace_id);
            bytes(&mut s, span::SPAN_ID, &Ids::span(n, i + 1));
            bytes(&mut s, span::PARENT_SPAN_ID, &root_id);
            let label = node
                .node_id
                .map(u64::from)
                .or(node.node_id_wide)
                .map_or_else(
                    || format!("ioam node #{}", i + 1),
                    |id| format!("ioam node {id}"),
                );
            string(&mut s, span::NAME, &label);
            tag(&mut s, span::KIND, 0);
            varint(&mut s, SPAN_KIND_INTERNAL);
            let (b, e) = node_times(node).unwrap_or((r.ts_ns, r.ts_ns));
            start = start.min(b);
            fixed64(&mut s, span::START, b);
            fixed64(&mut s, span::END, e);
            attr(
                &mut s,
                span::ATTRIBUTES,
                "ioam.node.index",
                Value::Int(i as i64),
            );
            node_attrs(&mut s, node);
            nodes.push(s);
        }
    }
    let mut s = Vec::new();
    bytes(&mut s, span::TRACE_ID, &trace_id);
    bytes(&mut s, span::SPAN_ID, &root_id);
    string(&mut s, span::NAME, &format!("ioam {}", r.event.name()));
    tag(&mut s, span::KIND, 0);
    varint(&mut s, SPAN_KIND_INTERNAL);
    fixed64(&mut s, span::START, start);
    fixed64(&mut s, span::END, r.ts_ns.max(start));
    let a = span::ATTRIBUTES;
    attr(&mut s, a, "ioam.event", Value::Str(r.event.name()));
    attr(&mut s, a, "ioam.in_dev", Value::Str(&name(r.in_dev)));
    if let Some(o) = r.out_dev {
        attr(&mut s, a, "ioam.out_dev", Value::Str(&name(o)));
    }
    if let Some(f) = &r.flow {
        attr(&mut s, a, "ioam.flow.src", Value::Str(&f.src.to_string()));
        attr(&mut s, a, "ioam.flow.dst", Value::Str(&f.dst.to_string()));
        attr(
            &mut s,
            a,
            "ioam.flow.label",
            Value::Int(i64::from(f.flow_label)),
        );
        attr(&mut s, a, "ioam.flow.proto", Value::Int(i64::from(f.proto)));
        if let Some((sp, dp)) = f.ports {
            attr(&mut s, a, "ioam.flow.sport", Value::Int(i64::from(sp)));
            attr(&mut s, a, "ioam.flow.dport", Value::Int(i64::from(dp)));
        }
    }
    match &decoded {
        None => {
            attr(&mut s, a, "ioam.error", Value::Str("option too short"));
            attr(&mut s, a, "ioam.raw", Value::Bytes(&r.option));
        }
        Some(t) => {
            attr(
                &mut s,
                a,
                "ioam.option_type",
                Value::Str(option_type_name(t.option_type)),
            );
            attr(
                &mut s,
                a,
                "ioam.namespace_id",
                Value::Int(i64::from(t.namespace)),
            );
            if let Some(h) = t.header {
                attr(
                    &mut s,
                    a,
                    "ioam.trace_type",
                    Value::Int(i64::from(h.trace_type)),
                );
                attr(
                    &mut s,
                    a,
                    "ioam.node_len",
                    Value::Int(i64::from(h.node_len)),
                );
                attr(&mut s, a, "ioam.flags", Value::Int(i64::from(h.flags)));
                attr(
                    &mut s,
                    a,
                    "ioam.overflow",
                    Value::Bool(h.flags & lwt6_wire::ioam::FLAG_OVERFLOW != 0),
                );
                attr(
                    &mut s,
                    a,
                    "ioam.remaining_len",
                    Value::Int(i64::from(h.remaining_len)),
                );
            }
            match &t.other {
                Some(OtherOption::Pot {
                    pot_type,
                    flags,
                    data,
                    ..
                }) => {
                    attr(&mut s, a, "ioam.pot.type", Value::Int(i64::from(*pot_type)));
                    attr(&mut s, a, "ioam.pot.flags", Value::Int(i64::from(*flags)));
                    attr(&mut s, a, "ioam.pot.data", Value::Bytes(data));
                }
                Some(OtherOption::E2e { e2e_type, data, .. }) => {
                    attr(&mut s, a, "ioam.e2e.type", Value::Int(i64::from(*e2e_type)));
                    attr(&mut s, a, "ioam.e2e.data", Value::Bytes(data));
                }
                Some(OtherOption::Dex {
                    flags,
                    ext_flags,
                    trace_type,
                    flow_id,
                    seq,
                    ..
                }) => {
                    attr(&mut s, a, "ioam.dex.flags", Value::Int(i64::from(*flags)));
                    attr(
                        &mut s,
                        a,
                        "ioam.dex.ext_flags",
                        Value::Int(i64::from(*ext_flags)),
                    );
                    attr(
                        &mut s,
                        a,
                        "ioam.trace_type",
                        Value::Int(i64::from(*trace_type)),
                    );
                    if let Some(f) = flow_id {
                        attr(&mut s, a, "ioam.dex.flow_id", Value::Int(i64::from(*f)));
                    }
                    if let Some(q) = seq {
                        attr(&mut s, a, "ioam.dex.seq", Value::Int(i64::from(*q)));
                    }
                }
                None => {}
            }
            if let Some(e) = &t.error {
                attr(&mut s, a, "ioam.error", Value::Str(e));
                attr(&mut s, a, "ioam.raw", Value::Bytes(&r.option));
            }
        }
    }
    bytes(out, 2, &s);
    for n in &nodes {
        bytes(out, 2, n);
    }
}

/// The `ExportTraceServiceRequest` for a batch: one `ResourceSpans` (resource `service.name` = `lwt6`) with one
/// `ScopeSpans` (scope `lwt6-ioam`, this version) holding every record's spans.
pub fn encode_request(batch: &[IoamRecord], dev_names: &[String], ids: &mut Ids) -> Vec<u8> {
    let mut resource = Vec::new();
    attr(&mut resource, 1, "service.name", Value::Str("lwt6"));
    let mut scope = Vec::new();
    string(&mut scope, 1, "lwt6-ioam");
    string(&mut scope, 2, env!("CARGO_PKG_VERSION"));
    let mut scope_spans = Vec::new();
    bytes(&mut scope_spans, 1, &scope);
    for r in batch {
        encode_record(&mut scope_spans, r, dev_names, ids);
    }
    let mut rs = Vec::new();
    bytes(&mut rs, 1, &resource);
    bytes(&mut rs, 2, &scope_spans);
    let mut req = Vec::new();
    bytes(&mut req, 1, &rs);
    req
}

// ---- HTTP/1.1 ----

/// Largest response head (status line and headers) and body read from a collector.
const MAX_RESPONSE: usize = 64 * 1024;

/// A failed request: the kind it is counted under, the message, and whether trying again may help (OTLP/HTTP:
/// 429, 502, 503, 504 and connection failures are retryable, other answers are not).
#[derive(Debug, Clone)]
struct Failed {
    kind: String,
    message: String,
    retry: bool,
}

fn failed(kind: &str, message: String, retry: bool) -> Failed {
    Failed {
        kind: kind.into(),
        message,
        retry,
    }
}

fn io_failed(ep: &Endpoint, doing: &str, e: &std::io::Error) -> Failed {
    use std::io::ErrorKind as K;
    let kind = match e.kind() {
        K::WouldBlock | K::TimedOut => "timeout",
        K::ConnectionRefused => "refused",
        K::UnexpectedEof | K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => "closed",
        // rustls reports a failed handshake or a bad record so.
        K::InvalidData => "tls",
        _ => "io",
    };
    failed(kind, format!("{}: {doing}: {e}", ep.authority), true)
}

/// POSTs `body` on `sock` and reads the answer: Ok when the collector answered 2xx.
fn post(sock: &mut BufReader<Stream>, ep: &Endpoint, body: &[u8]) -> Result<bool, Failed> {
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nUser-Agent: lwt6/{}\r\n\r\n",
        ep.path,
        ep.authority,
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    let w = sock.get_mut();
    w.write_all(head.as_bytes())
        .and_then(|_| w.write_all(body))
        .and_then(|_| w.flush())
        .map_err(|e| io_failed(ep, "sending", &e))?;
    let mut line = String::new();
    let read_line = |sock: &mut BufReader<Stream>, line: &mut String| {
        line.clear();
        let mut lim = sock.by_ref().take(MAX_RESPONSE as u64);
        match lim.read_line(line) {
            Ok(0) => Err(failed(
                "closed",
                format!("{}: the collector closed the connection", ep.authority),
                true,
            )),
            Ok(_) if !line.ends_with('\n') => Err(failed(
                "response",
                format!(
                    "{}: a response line longer than {MAX_RESPONSE} bytes",
                    ep.authority
                ),
                false,
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(io_failed(ep, "reading the response", &e)),
        }
    };
    read_line(sock, &mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .filter(|_| line.starts_with("HTTP/1."))
        .ok_or_else(|| {
            failed(
                "response",
                format!(
                    "{}: not an HTTP/1.x status line: {:?}",
                    ep.authority,
                    line.trim_end()
                ),
                false,
            )
        })?;
    let reason = line
        .splitn(3, ' ')
        .nth(2)
        .unwrap_or("")
        .trim_end()
        .to_string();
    let mut length = None;
    let mut close = false;
    let mut chunked = false;
    let mut headers = 0;
    loop {
        read_line(sock, &mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        headers += 1;
        if headers > 100 {
            return Err(failed(
                "response",
                format!("{}: more than 100 response headers", ep.authority),
                false,
            ));
        }
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("content-length") {
                length = v.parse::<usize>().ok();
            } else if k.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close") {
                close = true;
            } else if k.eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
            {
                chunked = true;
            }
        }
    }
    // The body (an ExportTraceServiceResponse or a Status) is read and not looked at; without a length the
    // connection ends with it.
    if chunked {
        loop {
            read_line(sock, &mut line)?;
            let size = usize::from_str_radix(line.trim_end().split(';').next().unwrap_or(""), 16)
                .map_err(|_| {
                failed(
                    "response",
                    format!("{}: a bad chunk size", ep.authority),
                    false,
                )
            })?;
            if size > MAX_RESPONSE {
                return Err(failed(
                    "response",
                    format!(
                        "{}: a response body chunk over {MAX_RESPONSE} bytes",
                        ep.authority
                    ),
                    false,
                ));
            }
            let mut skip = vec![0; size + 2];
            sock.read_exact(&mut skip)
                .map_err(|e| io_failed(ep, "reading the response", &e))?;
            if size == 0 {
                break;
            }
        }
    } else if let Some(n) = length {
        if n > MAX_RESPONSE {
            return Err(failed(
                "response",
                format!("{}: a response body of {n} bytes", ep.authority),
                false,
            ));
        }
        let mut skip = vec![0; n];
        sock.read_exact(&mut skip)
            .map_err(|e| io_failed(ep, "reading the response", &e))?;
    } else {
        close = true;
    }
    match status {
        200..=299 => Ok(!close),
        429 | 502 | 503 | 504 => Err(failed(
            &format!("http {status}"),
            format!("{}: HTTP {status} {reason}", ep.authority),
            true,
        )),
        _ => Err(failed(
            &format!("http {status}"),
            format!("{}: HTTP {status} {reason}", ep.authority),
            false,
        )),
    }
}

/// A [`Sink`] sending each batch as one OTLP/HTTP request, within the gRPC client's [`Limits`] (connect and
/// I/O timeouts, attempts per batch, backoff doubling up to a maximum, giving up waiting after a while). The
/// connection is kept between batches (HTTP/1.1 keep-alive) and opened again after a failure; every address
/// of the host is tried ([`crate::net::connect`]). An answer that says trying again will not help (a 400, say)
/// loses the batch at once.
pub struct Client {
    ep: Endpoint,
    limits: Limits,
    dev_names: Vec<String>,
    ids: Ids,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    conn: Option<BufReader<Stream>>,
    backoff: Duration,
    retry_at: Option<Instant>,
    down_since: Option<Instant>,
    last: Option<Failed>,
    failures: Vec<(String, u64)>,
}

impl Client {
    /// A client for `ep` with the default [`Limits`], naming devices by `dev_names`.
    pub fn new(ep: Endpoint, dev_names: Vec<String>) -> Client {
        Client::with_limits(ep, dev_names, Limits::default())
    }

    /// A client for `ep` within `limits`.
    pub fn with_limits(ep: Endpoint, dev_names: Vec<String>, limits: Limits) -> Client {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = now ^ (u64::from(std::process::id()) << 40) ^ 0x9e37_79b9_7f4a_7c15;
        Client {
            ep,
            backoff: limits.backoff,
            limits,
            dev_names,
            ids: Ids::new(seed),
            tls: None,
            conn: None,
            retry_at: None,
            down_since: None,
            last: None,
            failures: Vec::new(),
        }
    }

    /// Over TLS with `cfg` ([`crate::net::tls_config`], ALPN `http/1.1`).
    pub fn with_tls(self, cfg: std::sync::Arc<rustls::ClientConfig>) -> Client {
        Client {
            tls: Some(cfg),
            ..self
        }
    }

    fn attempt(&mut self, body: &[u8]) -> Result<(), Failed> {
        if self.conn.is_none() {
            let stream = crate::net::connect_stream(
                &self.ep.authority,
                self.limits.connect_timeout,
                self.tls.as_ref(),
            )
            .map_err(|e| match e {
                crate::net::ConnectError::Resolve(m) => failed("resolve", m, true),
                crate::net::ConnectError::Connect(e) => io_failed(&self.ep, "connecting", &e),
            })?;
            let s = stream.tcp();
            s.set_read_timeout(Some(self.limits.io_timeout))
                .and_then(|_| s.set_write_timeout(Some(self.limits.io_timeout)))
                .and_then(|_| s.set_nodelay(true))
                .map_err(|e| io_failed(&self.ep, "connecting", &e))?;
            self.conn = Some(BufReader::new(stream));
        }
        let c = self.conn.as_mut().expect("connected above");
        let r = post(c, &self.ep, body);
        if !matches!(r, Ok(true)) {
            self.conn = None;
        }
        r.map(|_| ())
    }
}

impl Sink for Client {
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), SinkError> {
        if batch.is_empty() {
            return Ok(());
        }
        let body = encode_request(batch, &self.dev_names, &mut self.ids);
        for _ in 0..self.limits.attempts.max(1) {
            if let Some(t) = self.retry_at {
                let now = Instant::now();
                if now < t {
                    let given_up = self
                        .down_since
                        .is_some_and(|d| now.duration_since(d) >= self.limits.give_up_after);
                    if given_up {
                        let last = self
                            .last
                            .clone()
                            .unwrap_or_else(|| failed("down", String::new(), true));
                        return Err(SinkError::new(
                            last.kind,
                            format!(
                                "{} (collector failing for {} s)",
                                last.message,
                                self.limits.give_up_after.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(t - now);
                }
            }
            match self.attempt(&body) {
                Ok(()) => {
                    self.backoff = self.limits.backoff;
                    self.retry_at = None;
                    self.down_since = None;
                    self.last = None;
                    return Ok(());
                }
                Err(e) => {
                    match self.failures.iter_mut().find(|(k, _)| *k == e.kind) {
                        Some((_, n)) => *n += 1,
                        None => self.failures.push((e.kind.clone(), 1)),
                    }
                    let now = Instant::now();
                    let retry = e.retry;
                    self.last = Some(e);
                    if !retry {
                        break;
                    }
                    self.down_since.get_or_insert(now);
                    self.retry_at = Some(now + self.backoff);
                    self.backoff = (self.backoff * 2).min(self.limits.max_backoff);
                    if self
                        .down_since
                        .is_some_and(|d| now.duration_since(d) >= self.limits.give_up_after)
                    {
                        break;
                    }
                }
            }
        }
        let last = self
            .last
            .clone()
            .unwrap_or_else(|| failed("down", String::new(), true));
        Err(SinkError::new(last.kind, last.message))
    }

    fn failures(&self) -> Option<Vec<(String, u64)>> {
        Some(self.failures.clone())
    }
}
