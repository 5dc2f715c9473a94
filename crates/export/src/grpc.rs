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
use crate::exporter::Sink;
use crate::trace::{Trace, option_type};
use lwt6_wire::ioam::DecodedNode;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The method's path.
pub const PATH: &str = "/ioam_api.IOAMService/Report";

// ---- protobuf (the wire format: https://protobuf.dev/programming-guides/encoding/) ----

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// A varint field (proto3: zero is the default and not written).
fn uint(out: &mut Vec<u8>, field: u32, v: Option<u64>) {
    if let Some(v) = v.filter(|v| *v != 0) {
        tag(out, field, 0);
        varint(out, v);
    }
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
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

struct Conn {
    sock: TcpStream,
    authority: String,
    next_stream: u32,
    send_window: i64,
    stream_window_init: i64,
    max_frame: usize,
    decoder: loona_hpack::Decoder<'static>,
}

/// What one received frame meant for the call in progress.
enum Event {
    Nothing,
    /// Header block of our stream (decoded), and whether it ended the stream.
    Headers(Vec<(Vec<u8>, Vec<u8>)>, bool),
    /// Stream window increase.
    StreamWindow(i64),
    /// The server reset our stream or closed the connection.
    Closed(String),
}

impl Conn {
    fn open(addr: &str) -> Result<Conn, String> {
        let sa = addr
            .to_socket_addrs()
            .map_err(|e| format!("{addr}: {e}"))?
            .next()
            .ok_or_else(|| format!("{addr}: no address"))?;
        let sock = TcpStream::connect_timeout(&sa, Duration::from_secs(1))
            .map_err(|e| format!("{addr}: {e}"))?;
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .and_then(|_| sock.set_write_timeout(Some(Duration::from_secs(5))))
            .and_then(|_| sock.set_nodelay(true))
            .map_err(|e| e.to_string())?;
        let mut c = Conn {
            sock,
            authority: addr.to_string(),
            next_stream: 1,
            send_window: DEFAULT_WINDOW,
            stream_window_init: DEFAULT_WINDOW,
            max_frame: DEFAULT_MAX_FRAME,
            decoder: loona_hpack::Decoder::new(),
        };
        let mut out = PREFACE.to_vec();
        // SETTINGS_ENABLE_PUSH = 0 (RFC 9113 §6.5.2).
        frame(&mut out, SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 0]);
        c.sock.write_all(&out).map_err(|e| e.to_string())?;
        Ok(c)
    }

    fn read_exact(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let mut b = vec![0; n];
        self.sock
            .read_exact(&mut b)
            .map_err(|e| format!("reading from the collector: {e}"))?;
        Ok(b)
    }

    /// Reads and handles one frame.
    fn read_frame(&mut self, stream: u32) -> Result<Event, String> {
        let h = self.read_exact(9)?;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (ty, flags) = (h[3], h[4]);
        let sid = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        if len > 1 << 20 {
            return Err(format!("collector sent a frame of {len} bytes"));
        }
        let p = self.read_exact(len)?;
        match ty {
            SETTINGS if flags & ACK == 0 => {
                for s in p.chunks_exact(6) {
                    let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        // SETTINGS_INITIAL_WINDOW_SIZE: applies to streams, including the open one (§6.9.2).
                        4 => {
                            let d = i64::from(v) - self.stream_window_init;
                            self.stream_window_init = i64::from(v);
                            if d != 0 {
                                self.ack_settings()?;
                                return Ok(Event::StreamWindow(d));
                            }
                        }
                        5 => self.max_frame = (v as usize).clamp(DEFAULT_MAX_FRAME, 1 << 24),
                        _ => {}
                    }
                }
                self.ack_settings()?;
                Ok(Event::Nothing)
            }
            PING if flags & ACK == 0 => {
                let mut out = Vec::new();
                frame(&mut out, PING, ACK, 0, &p);
                self.sock.write_all(&out).map_err(|e| e.to_string())?;
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
                // The response message (an empty Empty): give the window back (§6.9).
                if !p.is_empty() {
                    let mut out = Vec::new();
                    let inc = (p.len() as u32).to_be_bytes();
                    frame(&mut out, WINDOW_UPDATE, 0, 0, &inc);
                    if flags & END_STREAM == 0 {
                        frame(&mut out, WINDOW_UPDATE, 0, sid, &inc);
                    }
                    self.sock.write_all(&out).map_err(|e| e.to_string())?;
                }
                Ok(Event::Nothing)
            }
            HEADERS => {
                let mut block = p;
                let mut at = 0;
                let mut end = block.len();
                if flags & PADDED != 0 {
                    let pad = usize::from(*block.first().ok_or("empty HEADERS frame")?);
                    at = 1;
                    end = end.checked_sub(pad).ok_or("HEADERS padding too long")?;
                }
                if flags & PRIORITY != 0 {
                    at += 5;
                }
                if at > end {
                    return Err("malformed HEADERS frame".into());
                }
                block = block[at..end].to_vec();
                let mut fl = flags;
                while fl & END_HEADERS == 0 {
                    let h = self.read_exact(9)?;
                    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                    if h[3] != CONTINUATION || len > 1 << 20 {
                        return Err("expected a CONTINUATION frame".into());
                    }
                    fl = h[4];
                    block.extend(self.read_exact(len)?);
                }
                let headers = self
                    .decoder
                    .decode(&block)
                    .map_err(|e| format!("collector's headers: {e:?}"))?;
                if sid == stream {
                    Ok(Event::Headers(headers, flags & END_STREAM != 0))
                } else {
                    Ok(Event::Nothing)
                }
            }
            RST_STREAM if sid == stream => {
                let code = p
                    .get(..4)
                    .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                Ok(Event::Closed(format!(
                    "collector reset the call (error {code})"
                )))
            }
            GOAWAY => {
                let code = p
                    .get(4..8)
                    .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                Ok(Event::Closed(format!(
                    "collector closed the connection (error {code})"
                )))
            }
            _ => Ok(Event::Nothing),
        }
    }

    fn ack_settings(&mut self) -> Result<(), String> {
        let mut out = Vec::new();
        frame(&mut out, SETTINGS, ACK, 0, &[]);
        self.sock.write_all(&out).map_err(|e| e.to_string())
    }

    /// One `Report` call carrying `msgs` (serialized `IOAMTrace`s).
    fn report(&mut self, msgs: &[Vec<u8>]) -> Result<(), String> {
        let stream = self.next_stream;
        self.next_stream += 2;
        let mut out = Vec::new();
        frame(
            &mut out,
            HEADERS,
            END_HEADERS,
            stream,
            &request_headers(&self.authority),
        );
        self.sock.write_all(&out).map_err(|e| e.to_string())?;
        let mut stream_window = self.stream_window_init;
        let mut status: Option<(String, String)> = None;
        let mut ended = false;
        let absorb = |headers: Vec<(Vec<u8>, Vec<u8>)>, status: &mut Option<(String, String)>| {
            for (n, v) in headers {
                match n.as_slice() {
                    b"grpc-status" => {
                        status.get_or_insert_default().0 = String::from_utf8_lossy(&v).into()
                    }
                    b"grpc-message" => {
                        status.get_or_insert_default().1 = String::from_utf8_lossy(&v).into()
                    }
                    _ => {}
                }
            }
        };
        for m in msgs {
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
                    match self.read_frame(stream)? {
                        Event::StreamWindow(d) => stream_window += d,
                        Event::Headers(h, end) => {
                            absorb(h, &mut status);
                            if end {
                                ended = true;
                                break;
                            }
                        }
                        Event::Closed(e) => return Err(e),
                        Event::Nothing => {}
                    }
                    continue;
                }
                let n = (room as usize).min(body.len() - at);
                let mut out = Vec::with_capacity(9 + n);
                frame(&mut out, DATA, 0, stream, &body[at..at + n]);
                self.sock.write_all(&out).map_err(|e| e.to_string())?;
                self.send_window -= n as i64;
                stream_window -= n as i64;
                at += n;
            }
            if ended {
                break;
            }
        }
        if !ended {
            let mut out = Vec::new();
            frame(&mut out, DATA, END_STREAM, stream, &[]);
            self.sock.write_all(&out).map_err(|e| e.to_string())?;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ended {
            if Instant::now() > deadline {
                return Err("collector did not answer".into());
            }
            match self.read_frame(stream)? {
                Event::Headers(h, end) => {
                    absorb(h, &mut status);
                    ended = end;
                }
                Event::Closed(e) => return Err(e),
                Event::StreamWindow(_) | Event::Nothing => {}
            }
        }
        match status {
            Some((s, _)) if s == "0" => Ok(()),
            Some((s, m)) => Err(format!("collector answered grpc-status {s} {m}")),
            None => Err("collector answered without grpc-status".into()),
        }
    }
}

/// A [`Sink`] reporting to a collector at `HOST:PORT`. The connection is opened on the first batch and kept;
/// after a failure the next attempt waits a second (batches meanwhile are lost, and counted).
pub struct Client {
    addr: String,
    conn: Option<Conn>,
    retry_at: Option<Instant>,
}

impl Client {
    /// A client for the collector at `addr` (`HOST:PORT`); nothing is connected yet.
    pub fn new(addr: &str) -> Client {
        Client {
            addr: addr.to_string(),
            conn: None,
            retry_at: None,
        }
    }
}

impl Sink for Client {
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), String> {
        let msgs: Vec<Vec<u8>> = batch.iter().filter_map(encode_trace).collect();
        if msgs.is_empty() {
            return Ok(());
        }
        if self.conn.is_none() {
            if self.retry_at.is_some_and(|t| Instant::now() < t) {
                return Err(format!("{}: collector unreachable", self.addr));
            }
            match Conn::open(&self.addr) {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    self.retry_at = Some(Instant::now() + Duration::from_secs(1));
                    return Err(e);
                }
            }
        }
        let r = self.conn.as_mut().map_or(Ok(()), |c| c.report(&msgs));
        if r.is_err() {
            self.conn = None;
            self.retry_at = Some(Instant::now() + Duration::from_secs(1));
        }
        r
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
}
