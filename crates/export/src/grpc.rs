//! The IOAM collector protocol of the Linux IOAM implementation's authors (the `ioam-api` of docs/references.md):
//! gRPC service `ioam_api.IOAMService`, method `Report(stream IOAMTrace) returns (google.protobuf.Empty)`.
//!
//! A small client written for this one call rather than a gRPC stack: HTTP/2 over TCP without TLS, with prior
//! knowledge (RFC 9113 §3.3), one client-streaming call per batch of traces, flow control honoured (§6.9), the
//! response's `grpc-status` checked. The messages are encoded by hand (protobuf wire format: varints, fixed32,
//! length-delimited fields); the response headers are decoded with `loona-hpack` (RFC 7541, with its Huffman
//! code). Why not `tonic` + `prost`: they bring an async runtime and an HTTP stack (tokio, hyper, h2, tower) to a
//! tool that has no async code, for one call (docs/ioam.md, *Export*).
//!
//! ```text
//! message IOAMTrace { uint32 NamespaceId = 1; fixed32 BitField = 2; repeated IOAMNode Nodes = 3; }
//! message IOAMNode  { uint32 HopLimit = 1; uint32 Id = 2; uint32 IngressId = 3; uint32 EgressId = 4;
//!                     uint32 TimestampSecs = 5; uint32 TimestampFrac = 6; uint32 TransitDelay = 7;
//!                     uint32 QueueDepth = 8; uint32 CsumComp = 9; uint32 BufferOccupancy = 10;
//!                     uint32 IngressIdWide = 11; uint32 EgressIdWide = 12; uint64 IdWide = 13;
//!                     bytes NamespaceData = 14; bytes NamespaceDataWide = 15; Opaque OSS = 16; }
//! message Opaque    { uint32 SchemaId = 1; bytes Data = 2; }
//! ```
//!
//! Only pre-allocated traces are sent (the only option type the protocol describes); other IOAM options are
//! skipped (JSON lines carry them).

use crate::IoamRecord;
use crate::exporter::{Sink, SinkError};
use crate::ioam_trace::{Trace, option_type};
use lwt6_wire::ioam::DecodedNode;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// The method's path.
pub const PATH: &str = "/ioam_api.IOAMService/Report";

// ---- protobuf (the wire format: https://protobuf.dev/programming-guides/encoding/) ----

pub(crate) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// A varint field (proto3: zero is the default and not written).
fn uint(out: &mut Vec<u8>, field: u32, v: Option<u64>) {
    if let Some(v) = v.filter(|v| *v != 0) {
        tag(out, field, 0);
        varint(out, v);
    }
}

pub(crate) fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    tag(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// One `IOAMNode`.
pub fn encode_node(n: &DecodedNode) -> Vec<u8> {
    let mut o = Vec::new();
    let u = |x: Option<u32>| x.map(u64::from);
    uint(&mut o, 1, n.hop_limit.or(n.hop_limit_wide).map(u64::from));
    uint(&mut o, 2, u(n.node_id));
    uint(&mut o, 3, n.ingress_id.map(u64::from));
    uint(&mut o, 4, n.egress_id.map(u64::from));
    uint(&mut o, 5, u(n.ts_sec));
    uint(&mut o, 6, u(n.ts_frac));
    uint(&mut o, 7, u(n.transit_delay));
    uint(&mut o, 8, u(n.queue_depth));
    uint(&mut o, 9, u(n.checksum_complement));
    uint(&mut o, 10, u(n.buffer_occupancy));
    uint(&mut o, 11, u(n.ingress_wide));
    uint(&mut o, 12, u(n.egress_wide));
    uint(&mut o, 13, n.node_id_wide);
    if let Some(d) = n.ns_data {
        bytes(&mut o, 14, &d.to_be_bytes());
    }
    if let Some(d) = n.ns_data_wide {
        bytes(&mut o, 15, &d.to_be_bytes());
    }
    if let Some(oss) = &n.opaque {
        let mut m = Vec::new();
        match oss {
            Some((id, data)) => {
                uint(&mut m, 1, Some(u64::from(*id)));
                if !data.is_empty() {
                    bytes(&mut m, 2, data);
                }
            }
            None => uint(&mut m, 1, Some(u64::from(lwt6_wire::ioam::NO_SCHEMA_ID))),
        }
        bytes(&mut o, 16, &m);
    }
    o
}

/// One `IOAMTrace` for a record, or None when it is not a decodable pre-allocated trace.
pub fn encode_trace(r: &IoamRecord) -> Option<Vec<u8>> {
    let t = Trace::decode(&r.option)?;
    let h = t.header?;
    if t.option_type != option_type::PREALLOC_TRACE || t.error.is_some() {
        return None;
    }
    let mut o = Vec::new();
    uint(&mut o, 1, Some(u64::from(t.namespace)));
    tag(&mut o, 2, 5);
    o.extend_from_slice(&h.trace_type.to_le_bytes());
    for n in &t.nodes {
        bytes(&mut o, 3, &encode_node(n));
    }
    Some(o)
}

// ---- HTTP/2 (RFC 9113) ----

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Largest frame payload a peer must accept (RFC 9113 §4.2).
const DEFAULT_MAX_FRAME: usize = 16_384;
/// Initial flow-control window (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;

/// An HPACK string literal without Huffman coding (RFC 7541 §5.2) and its 7-bit prefixed length (§5.1).
fn hpack_string(out: &mut Vec<u8>, s: &str) {
    hpack_int(out, 0, 7, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// An HPACK integer with an `n`-bit prefix after the pattern bits `first` (RFC 7541 §5.1).
fn hpack_int(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// The request's header block: literals without indexing (RFC 7541 §6.2.2), so that no dynamic table state is
/// shared with the server.
fn request_headers(authority: &str) -> Vec<u8> {
    let mut h = Vec::new();
    // Indexed names from the static table (RFC 7541 Appendix A): 2 :method, 6 :scheme, 4 :path, 1 :authority,
    // 31 content-type.
    for (idx, value) in [
        (2, "POST"),
        (6, "http"),
        (4, PATH),
        (1, authority),
        (31, "application/grpc"),
    ] {
        hpack_int(&mut h, 0x00, 4, idx);
        hpack_string(&mut h, value);
    }
    for (name, value) in [("te", "trailers"), ("grpc-encoding", "identity")] {
        h.push(0x00);
        hpack_string(&mut h, name);
        hpack_string(&mut h, value);
    }
    h
}

/// One frame (RFC 9113 §4.1).
fn frame(out: &mut Vec<u8>, ty: u8, flags: u8, stream: u32, payload: &[u8]) {
    let n = payload.len() as u32;
    out.extend_from_slice(&n.to_be_bytes()[1..]);
    out.push(ty);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
}

/// The name of an HTTP/2 error code (RFC 9113 §7), or its number.
pub fn error_code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("error {code:#x}"), |n| n.to_string())
}

/// What bounds the client: sizes it accepts from a collector, times it waits, how it retries. A collector that
/// breaks a limit fails the call (and its connection) with a message naming the limit; nothing it sends can make
/// the client hold more than these sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame payload accepted: the SETTINGS_MAX_FRAME_SIZE the client leaves at its default (RFC 9113
    /// §4.2, §6.5.2); a larger frame is a FRAME_SIZE_ERROR.
    pub max_frame: usize,
    /// Largest header block (a HEADERS frame and its CONTINUATIONs, still compressed), and the largest decoded
    /// header list (RFC 9113 §6.5.2's size: names, values and 32 bytes per field), advertised as
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list: usize,
    /// CONTINUATION frames accepted after one HEADERS frame (an endless run of empty ones grows nothing but
    /// never ends the block).
    pub max_continuations: usize,
    /// Frames read in one call that neither carry its answer nor give it flow-control room (PINGs, SETTINGS,
    /// other streams' frames, window updates that leave no room).
    pub max_idle_frames: usize,
    /// Waiting for a TCP connection.
    pub connect_timeout: Duration,
    /// One read or write on the socket.
    pub io_timeout: Duration,
    /// One whole call: headers, messages and the answer.
    pub call_timeout: Duration,
    /// Attempts per batch while the collector is up or has been down less than [`give_up_after`](Self::give_up_after).
    pub attempts: u32,
    /// First wait before reconnecting; doubled after each failure, up to [`max_backoff`](Self::max_backoff).
    pub backoff: Duration,
    /// Longest wait between two attempts.
    pub max_backoff: Duration,
    /// After this long without a successful call, batches no longer wait: between two attempts (one per
    /// [`max_backoff`](Self::max_backoff)), a batch is lost at once with the last failure's reason.
    pub give_up_after: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_frame: DEFAULT_MAX_FRAME,
            max_header_list: 16_384,
            max_continuations: 16,
            max_idle_frames: 1024,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
            attempts: 4,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            give_up_after: Duration::from_secs(30),
        }
    }
}

/// A failed call: the kind it is counted under and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CallError {
    kind: String,
    message: String,
}

fn call_error(kind: impl Into<String>, message: impl Into<String>) -> CallError {
    CallError {
        kind: kind.into(),
        message: message.into(),
    }
}

/// An I/O error on the collector's socket, as a call error (`timeout`, `refused`, `closed`, or the error's kind).
fn io_error(addr: &str, doing: &str, e: &std::io::Error) -> CallError {
    use std::io::ErrorKind as K;
    let kind = match e.kind() {
        K::WouldBlock | K::TimedOut => "timeout",
        K::ConnectionRefused => "refused",
        K::UnexpectedEof | K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => "closed",
        // rustls reports a failed handshake or a bad record so.
        K::InvalidData => "tls",
        _ => "io",
    };
    let what = if kind == "timeout" {
        "timed out".to_string()
    } else {
        e.to_string()
    };
    call_error(kind, format!("{addr}: {doing}: {what}"))
}

/// Up to 200 printable characters of what a collector sent (GOAWAY debug data, grpc-message).
fn shown(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

struct Conn {
    sock: crate::net::Stream,
    authority: String,
    limits: Limits,
    next_stream: u32,
    send_window: i64,
    stream_window_init: i64,
    max_frame: usize,
    decoder: loona_hpack::Decoder<'static>,
    /// The collector sent GOAWAY (graceful, after our stream): no new call on this connection.
    going_away: bool,
}

/// What one received frame meant for the call in progress.
enum Event {
    Nothing,
    /// `grpc-status` and `grpc-message` of our stream's header block, if present, and whether it ended the stream.
    Headers(Option<String>, Option<String>, bool),
    /// Stream window increase.
    StreamWindow(i64),
}

impl Conn {
    fn open(
        addr: &str,
        limits: &Limits,
        tls: Option<&std::sync::Arc<rustls::ClientConfig>>,
    ) -> Result<Conn, CallError> {
        let sock =
            crate::net::connect_stream(addr, limits.connect_timeout, tls).map_err(|e| match e {
                crate::net::ConnectError::Resolve(m) => call_error("resolve", m),
                crate::net::ConnectError::Connect(e) => io_error(addr, "connecting", &e),
            })?;
        let tcp = sock.tcp();
        tcp.set_read_timeout(Some(limits.io_timeout))
            .and_then(|_| tcp.set_write_timeout(Some(limits.io_timeout)))
            .and_then(|_| tcp.set_nodelay(true))
            .map_err(|e| io_error(addr, "connecting", &e))?;
        let mut decoder = loona_hpack::Decoder::new();
        // The dynamic table the collector may use: SETTINGS_HEADER_TABLE_SIZE's default, 4096 (RFC 9113 §6.5.2).
        decoder.set_max_allowed_table_size(4096);
        let mut c = Conn {
            sock,
            authority: addr.to_string(),
            limits: limits.clone(),
            next_stream: 1,
            send_window: DEFAULT_WINDOW,
            stream_window_init: DEFAULT_WINDOW,
            max_frame: DEFAULT_MAX_FRAME,
            decoder,
            going_away: false,
        };
        let mut out = PREFACE.to_vec();
        // SETTINGS_ENABLE_PUSH = 0, SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 §6.5.2).
        let mut settings = vec![0, 2, 0, 0, 0, 0, 0, 6];
        settings.extend_from_slice(&(limits.max_header_list as u32).to_be_bytes());
        frame(&mut out, SETTINGS, 0, 0, &settings);
        c.send(&out, "sending the connection preface")?;
        Ok(c)
    }

    fn send(&mut self, bytes: &[u8], doing: &str) -> Result<(), CallError> {
        self.sock
            .write_all(bytes)
            .map_err(|e| io_error(&self.authority, doing, &e))
    }

    fn read_exact(&mut self, n: usize) -> Result<Vec<u8>, CallError> {
        let mut b = vec![0; n];
        self.sock
            .read_exact(&mut b)
            .map_err(|e| io_error(&self.authority, "reading", &e))?;
        Ok(b)
    }

    /// Reads a frame header and its payload (at most the frame size limit): type, flags, stream, payload.
    fn read_raw(&mut self) -> Result<(u8, u8, u32, Vec<u8>), CallError> {
        let h = self.read_exact(9)?;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let sid = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        if len > self.limits.max_frame {
            return Err(call_error(
                "FRAME_SIZE_ERROR",
                format!(
                    "{}: collector sent a frame of {len} bytes (type {}), more than the {} accepted",
                    self.authority, h[3], self.limits.max_frame
                ),
            ));
        }
        let p = self.read_exact(len)?;
        Ok((h[3], h[4], sid, p))
    }

    /// Reads the rest of a header block (CONTINUATION frames) after the HEADERS frame's fragment, within the
    /// limits, and decodes it, keeping `grpc-status` and `grpc-message` only.
    fn header_block(
        &mut self,
        mut block: Vec<u8>,
        mut flags: u8,
        sid: u32,
    ) -> Result<(Option<String>, Option<String>), CallError> {
        let too_big = |what: String| call_error("header block too large", what);
        let mut continuations = 0;
        while flags & END_HEADERS == 0 {
            let (ty, fl, csid, p) = self.read_raw()?;
            if ty != CONTINUATION || csid != sid {
                return Err(call_error(
                    "PROTOCOL_ERROR",
                    format!(
                        "{}: expected a CONTINUATION frame of stream {sid}, got type {ty} on stream {csid}",
                        self.authority
                    ),
                ));
            }
            continuations += 1;
            if continuations > self.limits.max_continuations {
                return Err(too_big(format!(
                    "{}: collector sent more than {} CONTINUATION frames for one header block",
                    self.authority, self.limits.max_continuations
                )));
            }
            if block.len() + p.len() > self.limits.max_header_list {
                return Err(too_big(format!(
                    "{}: collector's header block is over {} bytes",
                    self.authority, self.limits.max_header_list
                )));
            }
            block.extend_from_slice(&p);
            flags = fl;
        }
        let (mut status, mut message, mut size) = (None, None, 0usize);
        let limit = self.limits.max_header_list;
        self.decoder
            .decode_with_cb(&block, |n, v| {
                size += n.len() + v.len() + 32;
                if size > limit {
                    return;
                }
                match n.as_ref() {
                    b"grpc-status" => status = Some(shown(&v)),
                    b"grpc-message" => message = Some(shown(&v)),
                    _ => {}
                }
            })
            .map_err(|e| {
                call_error(
                    "COMPRESSION_ERROR",
                    format!("{}: collector's headers: {e:?}", self.authority),
                )
            })?;
        if size > limit {
            return Err(too_big(format!(
                "{}: collector's header list is {size} bytes, over the {limit} advertised",
                self.authority
            )));
        }
        Ok((status, message))
    }

    /// Reads and handles one frame.
    fn read_frame(&mut self, stream: u32) -> Result<Event, CallError> {
        let (ty, flags, sid, p) = self.read_raw()?;
        match ty {
            SETTINGS if flags & ACK == 0 => {
                let mut window = 0;
                for s in p.chunks_exact(6) {
                    let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        // SETTINGS_INITIAL_WINDOW_SIZE: applies to streams, including the open one (§6.9.2).
                        4 => {
                            window += i64::from(v) - self.stream_window_init;
                            self.stream_window_init = i64::from(v);
                        }
                        5 => self.max_frame = (v as usize).clamp(DEFAULT_MAX_FRAME, 1 << 24),
                        _ => {}
                    }
                }
                let mut out = Vec::new();
                frame(&mut out, SETTINGS, ACK, 0, &[]);
                self.send(&out, "acknowledging SETTINGS")?;
                Ok(if window != 0 {
                    Event::StreamWindow(window)
                } else {
                    Event::Nothing
                })
            }
            PING if flags & ACK == 0 => {
                let mut out = Vec::new();
                frame(&mut out, PING, ACK, 0, &p);
                self.send(&out, "answering PING")?;
                Ok(Event::Nothing)
            }
            WINDOW_UPDATE if p.len() == 4 => {
                let inc = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
                if sid == 0 {
                    self.send_window += inc;
                    Ok(Event::Nothing)
                } else if sid == stream {
                    Ok(Event::StreamWindow(inc))
                } else {
                    Ok(Event::Nothing)
                }
            }
            DATA => {
                // The response message (an empty Empty): give the window back (§6.9). Nothing is kept.
                if !p.is_empty() {
                    let mut out = Vec::new();
                    let inc = (p.len() as u32).to_be_bytes();
                    frame(&mut out, WINDOW_UPDATE, 0, 0, &inc);
                    if flags & END_STREAM == 0 {
                        frame(&mut out, WINDOW_UPDATE, 0, sid, &inc);
                    }
                    self.send(&out, "returning flow-control window")?;
                }
                Ok(Event::Nothing)
            }
            HEADERS => {
                let mut at = 0;
                let mut end = p.len();
                if flags & PADDED != 0 {
                    let pad = usize::from(*p.first().ok_or_else(|| {
                        call_error("PROTOCOL_ERROR", "empty padded HEADERS frame")
                    })?);
                    at = 1;
                    end = end.checked_sub(pad).ok_or_else(|| {
                        call_error("PROTOCOL_ERROR", "HEADERS padding longer than the frame")
                    })?;
                }
                if flags & PRIORITY != 0 {
                    at += 5;
                }
                if at > end {
                    return Err(call_error("PROTOCOL_ERROR", "malformed HEADERS frame"));
                }
                let (status, message) = self.header_block(p[at..end].to_vec(), flags, sid)?;
                if sid == stream {
                    Ok(Event::Headers(status, message, flags & END_STREAM != 0))
                } else {
                    Ok(Event::Nothing)
                }
            }
            CONTINUATION => Err(call_error(
                "PROTOCOL_ERROR",
                format!(
                    "{}: collector sent a CONTINUATION frame outside a header block",
                    self.authority
                ),
            )),
            RST_STREAM if sid == stream => {
                let code = p
                    .get(..4)
                    .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                let name = error_code_name(code);
                Err(call_error(
                    format!("RST_STREAM {name}"),
                    format!(
                        "{}: collector reset the call: RST_STREAM {name}",
                        self.authority
                    ),
                ))
            }
            GOAWAY if p.len() >= 8 => {
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                self.going_away = true;
                if code == 0 && last >= stream {
                    // A graceful shutdown that still processes our call: finish it, then reconnect.
                    return Ok(Event::Nothing);
                }
                let name = error_code_name(code);
                let debug = shown(&p[8..]);
                let debug = if debug.is_empty() {
                    String::new()
                } else {
                    format!(" ({debug})")
                };
                Err(call_error(
                    format!("GOAWAY {name}"),
                    format!(
                        "{}: collector closed the connection: GOAWAY {name}{debug}, last stream {last}",
                        self.authority
                    ),
                ))
            }
            GOAWAY => Err(call_error(
                "PROTOCOL_ERROR",
                "GOAWAY frame shorter than 8 bytes",
            )),
            _ => Ok(Event::Nothing),
        }
    }

    /// After a failed read or write: the GOAWAY or RST_STREAM the collector sent before closing, if it is still
    /// to be read (a short wait, a bounded number of frames).
    fn closing_reason(&mut self) -> Option<CallError> {
        let stream = self.next_stream.checked_sub(2)?;
        self.sock
            .tcp()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .ok()?;
        for _ in 0..64 {
            match self.read_frame(stream) {
                Err(e) if e.kind.starts_with("GOAWAY") || e.kind.starts_with("RST_STREAM") => {
                    return Some(e);
                }
                Err(_) => return None,
                Ok(_) => {}
            }
        }
        None
    }

    /// One `Report` call carrying `msgs` (serialized `IOAMTrace`s).
    fn report(&mut self, msgs: &[Vec<u8>]) -> Result<(), CallError> {
        let stream = self.next_stream;
        self.next_stream += 2;
        let deadline = Instant::now() + self.limits.call_timeout;
        let mut idle = 0usize;
        let mut out = Vec::new();
        frame(
            &mut out,
            HEADERS,
            END_HEADERS,
            stream,
            &request_headers(&self.authority),
        );
        self.send(&out, "sending the call's headers")?;
        let mut stream_window = self.stream_window_init;
        let mut status: (Option<String>, Option<String>) = (None, None);
        let mut ended = false;
        // Reads one frame of the call; false when it changed nothing (counted against the idle limit).
        let mut step = |c: &mut Conn,
                        stream_window: &mut i64,
                        status: &mut (Option<String>, Option<String>),
                        ended: &mut bool|
         -> Result<(), CallError> {
            if Instant::now() > deadline {
                return Err(call_error(
                    "timeout",
                    format!(
                        "{}: the call took longer than {} ms",
                        c.authority,
                        c.limits.call_timeout.as_millis()
                    ),
                ));
            }
            match c.read_frame(stream)? {
                Event::StreamWindow(d) => *stream_window += d,
                Event::Headers(s, m, end) => {
                    if s.is_some() {
                        status.0 = s;
                    }
                    if m.is_some() {
                        status.1 = m;
                    }
                    *ended |= end;
                }
                Event::Nothing => {
                    idle += 1;
                    if idle > c.limits.max_idle_frames {
                        return Err(call_error(
                            "stalled",
                            format!(
                                "{}: {} frames without progress in one call",
                                c.authority, c.limits.max_idle_frames
                            ),
                        ));
                    }
                }
            }
            Ok(())
        };
        'msgs: for m in msgs {
            // Length-prefixed message (gRPC over HTTP/2: compressed flag 0, 4-byte length).
            let mut body = Vec::with_capacity(5 + m.len());
            body.push(0);
            body.extend_from_slice(&(m.len() as u32).to_be_bytes());
            body.extend_from_slice(m);
            let mut at = 0;
            while at < body.len() {
                let room = self
                    .send_window
                    .min(stream_window)
                    .min(self.max_frame as i64);
                if room <= 0 {
                    step(self, &mut stream_window, &mut status, &mut ended)?;
                    if ended {
                        break 'msgs;
                    }
                    continue;
                }
                let n = (room as usize).min(body.len() - at);
                let mut out = Vec::with_capacity(9 + n);
                frame(&mut out, DATA, 0, stream, &body[at..at + n]);
                self.send(&out, "sending traces")?;
                self.send_window -= n as i64;
                stream_window -= n as i64;
                at += n;
            }
        }
        if !ended {
            let mut out = Vec::new();
            frame(&mut out, DATA, END_STREAM, stream, &[]);
            self.send(&out, "ending the call")?;
        }
        while !ended {
            step(self, &mut stream_window, &mut status, &mut ended)?;
        }
        match status {
            (Some(s), _) if s == "0" => Ok(()),
            (Some(s), m) => Err(call_error(
                format!("grpc-status {s}"),
                format!(
                    "{}: collector answered grpc-status {s} {}",
                    self.authority,
                    m.unwrap_or_default()
                ),
            )),
            (None, _) => Err(call_error(
                "no grpc-status",
                format!("{}: collector answered without grpc-status", self.authority),
            )),
        }
    }
}

/// A [`Sink`] reporting to a collector at `HOST:PORT`, within [`Limits`]. The connection is opened on the first
/// batch and kept. A failed call closes it; the batch is tried again after a wait that starts at
/// [`Limits::backoff`] and doubles after each failure up to [`Limits::max_backoff`] ([`Limits::attempts`] tries
/// per batch). Once the collector has failed for [`Limits::give_up_after`], batches stop waiting: one attempt is
/// made when the wait is over, and batches meanwhile are lost at once (counted, with the last failure's reason).
pub struct Client {
    addr: String,
    limits: Limits,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    conn: Option<Conn>,
    /// Next wait before reconnecting, after a failure.
    backoff: Duration,
    /// When the next attempt may be made.
    retry_at: Option<Instant>,
    /// Since when every call failed.
    down_since: Option<Instant>,
    last: Option<CallError>,
    /// Failed attempts by kind.
    failures: Vec<(String, u64)>,
}

impl Client {
    /// A client for the collector at `addr` (`HOST:PORT`) with the default [`Limits`]; nothing is connected yet.
    pub fn new(addr: &str) -> Client {
        Client::with_limits(addr, Limits::default())
    }

    /// A client for the collector at `addr` within `limits`.
    pub fn with_limits(addr: &str, limits: Limits) -> Client {
        Client {
            addr: addr.to_string(),
            tls: None,
            backoff: limits.backoff,
            limits,
            conn: None,
            retry_at: None,
            down_since: None,
            last: None,
            failures: Vec::new(),
        }
    }

    /// Over TLS with `cfg` (its ALPN should offer `h2`: [`crate::net::tls_config`]).
    pub fn with_tls(self, cfg: std::sync::Arc<rustls::ClientConfig>) -> Client {
        Client {
            tls: Some(cfg),
            ..self
        }
    }

    fn attempt(&mut self, msgs: &[Vec<u8>]) -> Result<(), CallError> {
        let r = self.call(msgs);
        if let Err(e) = &r {
            match self.failures.iter_mut().find(|(k, _)| *k == e.kind) {
                Some((_, n)) => *n += 1,
                None => self.failures.push((e.kind.clone(), 1)),
            }
        }
        r
    }

    fn call(&mut self, msgs: &[Vec<u8>]) -> Result<(), CallError> {
        if self.conn.is_none() {
            self.conn = Some(Conn::open(&self.addr, &self.limits, self.tls.as_ref())?);
        }
        let c = self.conn.as_mut().expect("connected above");
        let mut r = c.report(msgs);
        // A collector that closes the connection usually said why first (GOAWAY, RST_STREAM): a write that fails
        // on the closed socket is not the reason.
        if let Err(e) = &r
            && (e.kind == "closed" || e.kind == "io")
            && let Some(why) = c.closing_reason()
        {
            r = Err(why);
        }
        // A failed call leaves the connection in an unknown state; a GOAWAY or a spent stream id space ends it.
        if r.is_err() || c.going_away || c.next_stream > 0x7fff_fff0 {
            self.conn = None;
        }
        r
    }
}

impl Sink for Client {
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), SinkError> {
        let msgs: Vec<Vec<u8>> = batch.iter().filter_map(encode_trace).collect();
        if msgs.is_empty() {
            return Ok(());
        }
        self.send(&msgs)
    }

    fn failures(&self) -> Option<Vec<(String, u64)>> {
        Some(self.failures.clone())
    }
}

impl Client {
    /// Sends one batch's messages: the attempts and waits of [`Client`].
    fn send(&mut self, msgs: &[Vec<u8>]) -> Result<(), SinkError> {
        for _ in 0..self.limits.attempts.max(1) {
            if let Some(t) = self.retry_at {
                let now = Instant::now();
                let given_up = self
                    .down_since
                    .is_some_and(|d| now.duration_since(d) >= self.limits.give_up_after);
                if now < t {
                    if given_up {
                        let last = self.last.clone().unwrap_or_else(|| call_error("down", ""));
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
            match self.attempt(msgs) {
                Ok(()) => {
                    self.backoff = self.limits.backoff;
                    self.retry_at = None;
                    self.down_since = None;
                    self.last = None;
                    return Ok(());
                }
                Err(e) => {
                    let now = Instant::now();
                    self.down_since.get_or_insert(now);
                    self.retry_at = Some(now + self.backoff);
                    self.backoff = (self.backoff * 2).min(self.limits.max_backoff);
                    self.last = Some(e);
                    if self
                        .down_since
                        .is_some_and(|d| now.duration_since(d) >= self.limits.give_up_after)
                    {
                        break;
                    }
                }
            }
        }
        let last = self.last.clone().unwrap_or_else(|| call_error("down", ""));
        Err(SinkError::new(last.kind, last.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields() {
        // https://protobuf.dev/programming-guides/encoding/: 150 is 96 01; field 1 varint 150 is 08 96 01.
        let mut o = Vec::new();
        uint(&mut o, 1, Some(150));
        assert_eq!(o, [0x08, 0x96, 0x01]);
        let mut o = Vec::new();
        uint(&mut o, 1, Some(0));
        assert!(o.is_empty(), "proto3 leaves zero out");
        let mut o = Vec::new();
        bytes(&mut o, 16, b"ab");
        // Field 16, wire type 2: (16 << 3) | 2 = 130 = 82 01.
        assert_eq!(o, [0x82, 0x01, 2, b'a', b'b']);
    }

    #[test]
    fn hpack_integers() {
        // RFC 7541 C.1.1: 10 with a 5-bit prefix is 0a; C.1.2: 1337 with a 5-bit prefix is 1f 9a 0a.
        let mut o = Vec::new();
        hpack_int(&mut o, 0, 5, 10);
        assert_eq!(o, [0x0a]);
        let mut o = Vec::new();
        hpack_int(&mut o, 0, 5, 1337);
        assert_eq!(o, [0x1f, 0x9a, 0x0a]);
    }

    #[test]
    fn request_headers_decode_back() {
        let h = request_headers("[::1]:50051");
        let d = loona_hpack::Decoder::new().decode(&h).unwrap();
        let d: Vec<(String, String)> = d
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let want = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", PATH),
            (":authority", "[::1]:50051"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-encoding", "identity"),
        ];
        assert_eq!(
            d,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
    }
    /// Small limits for tests: short waits.
    fn quick() -> Limits {
        Limits {
            connect_timeout: Duration::from_millis(500),
            io_timeout: Duration::from_millis(200),
            call_timeout: Duration::from_secs(2),
            attempts: 3,
            backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
            give_up_after: Duration::from_millis(600),
            ..Limits::default()
        }
    }

    #[test]
    fn a_silent_collector_is_a_timeout() {
        // Accepts the connection, reads nothing, sends nothing.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let keep = std::thread::spawn(move || {
            let held: Vec<_> = l.incoming().take(3).collect();
            std::thread::sleep(Duration::from_secs(3));
            drop(held);
        });
        let mut c = Client::with_limits(&addr, quick());
        let e = c.send(&[vec![1, 2, 3]]).unwrap_err();
        assert_eq!(e.kind, "timeout", "{e:?}");
        assert!(e.message.contains("timed out"), "{e:?}");
        assert_eq!(c.failures, vec![("timeout".to_string(), 3)]);
        drop(keep);
    }

    #[test]
    fn backoff_doubles_then_batches_stop_waiting() {
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let mut c = Client::with_limits(&addr, quick());
        let t0 = Instant::now();
        let e = c.send(&[vec![1]]).unwrap_err();
        // 3 attempts, waits of 20 and 40 ms between them.
        assert!(
            t0.elapsed() >= Duration::from_millis(60),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(e.kind, "refused");
        assert_eq!(
            c.backoff,
            Duration::from_millis(160),
            "doubled after each failure"
        );
        // Still within give_up_after: the next batch waits and tries again.
        let _ = c.send(&[vec![1]]);
        let n = c.failures[0].1;
        assert!(n >= 4, "{:?}", c.failures);
        // Past give_up_after: a batch inside the wait is lost at once, without an attempt.
        std::thread::sleep(Duration::from_millis(650));
        c.retry_at = Some(Instant::now() + Duration::from_secs(60));
        let t1 = Instant::now();
        let e = c.send(&[vec![1]]).unwrap_err();
        assert!(t1.elapsed() < Duration::from_millis(50));
        assert!(e.message.contains("failing for"), "{e:?}");
        assert_eq!(c.failures[0].1, n, "no attempt made");
    }

    #[test]
    fn error_codes_have_their_names() {
        // RFC 9113 §7.
        assert_eq!(error_code_name(0), "NO_ERROR");
        assert_eq!(error_code_name(0x7), "REFUSED_STREAM");
        assert_eq!(error_code_name(0xb), "ENHANCE_YOUR_CALM");
        assert_eq!(error_code_name(0xd), "HTTP_1_1_REQUIRED");
        assert_eq!(error_code_name(0x42), "error 0x42");
    }
}
