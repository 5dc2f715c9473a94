//! `lwt6 pcap --ioam-export grpc:HOST:PORT` against collectors that misbehave, written here from RFC 9113
//! (docs/hostile.md, *Hostile files, streams and peers*): endless CONTINUATION frames, GOAWAY, RST_STREAM, a
//! refused connection, and one that drops its first connection and then works (backoff, not a lost capture).
//! Every trace lost is exit status 3 (docs/ioam.md, *Export*); the real reason is reported and counted.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[path = "support/tmpdir.rs"]
mod tmpdir;

/// The binary under test: `LWT6_BIN` when set, else this one's.
fn lwt6() -> Command {
    Command::new(
        std::env::var("LWT6_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_lwt6").to_string()),
    )
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// Frame types, flags and error codes of RFC 9113 §6 and §7.
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const REFUSED_STREAM: u32 = 0x7;
const ENHANCE_YOUR_CALM: u32 = 0xb;

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[ty, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Reads one frame: type, flags, stream, payload.
fn read_frame(s: &mut TcpStream) -> std::io::Result<(u8, u8, u32, Vec<u8>)> {
    let mut h = [0u8; 9];
    s.read_exact(&mut h)?;
    let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
    let mut p = vec![0; len];
    s.read_exact(&mut p)?;
    Ok((
        h[3],
        h[4],
        u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        p,
    ))
}

/// Reads the client's connection preface (RFC 9113 §3.4) and sends an empty SETTINGS frame.
fn handshake(s: &mut TcpStream) -> std::io::Result<()> {
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface)?;
    assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    s.write_all(&frame(SETTINGS, 0, 0, &[]))
}

/// Waits for the first HEADERS frame of a call (acknowledging SETTINGS on the way); its stream.
fn first_call(s: &mut TcpStream) -> std::io::Result<u32> {
    loop {
        let (ty, flags, sid, _) = read_frame(s)?;
        match ty {
            SETTINGS if flags & 1 == 0 => s.write_all(&frame(SETTINGS, 1, 0, &[]))?,
            HEADERS => return Ok(sid),
            _ => {}
        }
    }
}

/// Serves calls as a working collector: window given back for every DATA frame, `IOAMTrace` messages counted,
/// each call answered `:status 200` and `grpc-status: 0` (RFC 7541: `:status 200` is static index 8; the
/// trailer a literal without indexing, new name).
fn serve(mut s: TcpStream, traces: &AtomicU64) -> std::io::Result<()> {
    handshake(&mut s)?;
    let mut body: Vec<u8> = Vec::new();
    loop {
        let (ty, flags, sid, p) = read_frame(&mut s)?;
        match ty {
            SETTINGS if flags & 1 == 0 => s.write_all(&frame(SETTINGS, 1, 0, &[]))?,
            DATA => {
                if !p.is_empty() {
                    let inc = (p.len() as u32).to_be_bytes();
                    s.write_all(&frame(WINDOW_UPDATE, 0, 0, &inc))?;
                    s.write_all(&frame(WINDOW_UPDATE, 0, sid, &inc))?;
                }
                body.extend_from_slice(&p);
                // gRPC length-prefixed messages: flag byte, 4-byte length.
                while body.len() >= 5 {
                    let n = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
                    if body.len() < 5 + n {
                        break;
                    }
                    body.drain(..5 + n);
                    traces.fetch_add(1, Ordering::Relaxed);
                }
                if flags & END_STREAM != 0 {
                    s.write_all(&frame(HEADERS, END_HEADERS, sid, &[0x88]))?;
                    let mut t = vec![0x00, 11];
                    t.extend_from_slice(b"grpc-status");
                    t.extend_from_slice(&[1, b'0']);
                    s.write_all(&frame(HEADERS, END_HEADERS | END_STREAM, sid, &t))?;
                }
            }
            _ => {}
        }
    }
}

/// How a test collector behaves.
#[derive(Clone, Copy)]
enum Collector {
    /// Answers the call's HEADERS with a HEADERS frame without END_HEADERS, then CONTINUATION frames of 16 KiB
    /// without end (until 64 MiB or the client leaves).
    Continuations,
    /// GOAWAY ENHANCE_YOUR_CALM (last stream 0, debug data) and close.
    Goaway,
    /// RST_STREAM REFUSED_STREAM on every call.
    Reset,
    /// Closes its first connection at the first call, then works.
    FailsOnce,
}

/// Starts a collector on a free port; returns its address and the traces it received whole.
fn start(how: Collector) -> (String, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let traces = Arc::new(AtomicU64::new(0));
    let t = Arc::clone(&traces);
    std::thread::spawn(move || {
        for (n, s) in l.incoming().enumerate() {
            let Ok(mut s) = s else { continue };
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                let _ = (|| -> std::io::Result<()> {
                    match how {
                        Collector::Continuations => {
                            handshake(&mut s)?;
                            let sid = first_call(&mut s)?;
                            s.write_all(&frame(HEADERS, 0, sid, &[0x88]))?;
                            let chunk = frame(CONTINUATION, 0, sid, &[0x40; 16_384]);
                            for _ in 0..4096 {
                                s.write_all(&chunk)?;
                            }
                            Ok(())
                        }
                        Collector::Goaway => {
                            handshake(&mut s)?;
                            first_call(&mut s)?;
                            let mut p = 0u32.to_be_bytes().to_vec();
                            p.extend_from_slice(&ENHANCE_YOUR_CALM.to_be_bytes());
                            p.extend_from_slice(b"too many calls");
                            s.write_all(&frame(GOAWAY, 0, 0, &p))?;
                            // Then what the client still sends is read until it leaves (closing with unread
                            // data would reset the connection before the client reads the GOAWAY).
                            s.set_read_timeout(Some(Duration::from_secs(5)))?;
                            while s.read(&mut [0u8; 4096])? > 0 {}
                            Ok(())
                        }
                        Collector::Reset => {
                            handshake(&mut s)?;
                            loop {
                                let sid = first_call(&mut s)?;
                                s.write_all(&frame(
                                    RST_STREAM,
                                    0,
                                    sid,
                                    &REFUSED_STREAM.to_be_bytes(),
                                ))?;
                            }
                        }
                        Collector::FailsOnce if n == 0 => {
                            handshake(&mut s)?;
                            first_call(&mut s)?;
                            Ok(())
                        }
                        Collector::FailsOnce => serve(s, &t),
                    }
                })();
            });
        }
    });
    (addr, traces)
}

/// `lwt6 pcap` of `copies` copies of the ioam6 example (2 traces filled in transit per copy) exporting to
/// `addr`, with `--stats -j`.
fn export_to(addr: &str, copies: usize) -> (Output, serde_json::Value) {
    let d = tmpdir::TmpDir::new("grpc", &addr.replace([':', '.'], "-"));
    let b = std::fs::read(example("ioam6/input.pcap")).unwrap();
    let mut cap = b[..24].to_vec();
    for _ in 0..copies {
        cap.extend_from_slice(&b[24..]);
    }
    let input = d.join("in.pcap");
    std::fs::write(&input, cap).unwrap();
    let o = lwt6()
        .args(["pcap", "-c"])
        .arg(example("ioam6/router.conf"))
        .args(["--in-dev", "r0", "--stats", "-j", "--ioam-export-transit"])
        .arg("--ioam-export")
        .arg(format!("grpc:{addr}"))
        .arg(&input)
        .arg(d.join("out.pcapng"))
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_default();
    (o, v)
}

#[test]
fn endless_continuation_frames_are_cut_off_at_the_header_block_limit() {
    let (addr, _) = start(Collector::Continuations);
    let t0 = Instant::now();
    let (o, v) = export_to(&addr, 1);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "every trace lost: {err}");
    assert!(
        err.contains("CONTINUATION") || err.contains("header block"),
        "{err}"
    );
    assert!(
        err.contains("header block too large"),
        "counted by kind: {err}"
    );
    assert_eq!(v["ioam"]["export_lost"], 2, "{v}");
    // 4 attempts within the backoff (0.1 + 0.2 + 0.4 s), each ended at the limit, not at the flood's end.
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}

#[test]
fn goaway_is_reported_with_its_error_code() {
    let (addr, _) = start(Collector::Goaway);
    let (o, v) = export_to(&addr, 1);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("GOAWAY ENHANCE_YOUR_CALM"), "{err}");
    assert!(err.contains("too many calls"), "the debug data: {err}");
    assert_eq!(v["ioam"]["export_lost"], 2, "{v}");
}

#[test]
fn rst_stream_is_reported_with_its_error_code() {
    let (addr, _) = start(Collector::Reset);
    let (o, v) = export_to(&addr, 1);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("RST_STREAM REFUSED_STREAM"), "{err}");
    assert_eq!(v["ioam"]["export_lost"], 2, "{v}");
}

#[test]
fn a_refused_connection_is_reported_and_counted() {
    // A port nobody listens on: bound, then closed.
    let addr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (o, v) = export_to(&addr, 1);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(
        !err.contains("unreachable"),
        "the real reason, not a stand-in: {err}"
    );
    assert_eq!(v["ioam"]["export_lost"], 2, "{v}");
}

#[test]
fn a_collector_that_drops_one_connection_loses_nothing() {
    // 1000 copies: 2000 traces in about 8 batches, all sent within the old fixed 1 s retry window.
    let (addr, got) = start(Collector::FailsOnce);
    let (o, v) = export_to(&addr, 1000);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(v["ioam"]["export_lost"], 0, "{v} {err}");
    assert_eq!(v["ioam"]["exported"], 2000, "{v}");
    assert_eq!(got.load(Ordering::Relaxed), 2000);
}
