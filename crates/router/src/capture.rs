//! Live capture on a running router (`lwt6 ctl capture start [dev DEV] [rx] [tx] [drop] [count N] [overwrite]
//! FILE`, `capture stop`, `show capture [-j]`): a pcapng file of what the workers receive, send and drop,
//! written by a thread of the router (docs/live.md, *Live capture*).
//!
//! The control thread arms a capture on the [`CaptureBoard`] and starts its writer thread. Each worker looks at
//! the board once per round (one atomic load, as for the trace), and when the capture changed sets or clears its
//! [`CaptureTap`]. During the round the worker copies what the filter admits into the tap (bounded; see
//! `lwt6_dataplane::worker`'s capture module); after the round its frames go to the writer in one message, over
//! a bounded channel, never waiting: when the channel is full, or more than [`MAX_QUEUED_BYTES`] wait for the
//! writer, the round's frames are counted lost instead. The writer writes them as Enhanced Packet Blocks, one
//! interface block per device of the router (interface number = the device's position in the configuration),
//! received and dropped frames inbound, sent frames outbound (`epb_flags`), a dropped frame with its drop reason
//! as its comment (`dropped: no_route`), and returns the emptied buffers to the worker for its next copies.
//!
//! The file: FILE must be an absolute path (`lwt6 ctl` makes a relative one absolute against its own working
//! directory). It is created by the router process with mode 0640, `O_CREAT | O_EXCL | O_NOFOLLOW`: never
//! through a symbolic link at FILE, and never over an existing file, unless `overwrite` is given, when an
//! existing *regular file* (not a link, not anything else) is removed first and the new one created the same
//! exclusive way. Directories along the path are followed as the system does.

use lwt6_dataplane::snapshot::Snapshot;
use lwt6_dataplane::spec::shown_token;
use lwt6_dataplane::worker::{CaptureFilter, CaptureTap, Captured, Direction, Worker};
use lwt6_io::pcap::{EPB_INBOUND, EPB_OUTBOUND, EpbOptions, OutFrame, PcapngWriter};
use serde_json::json;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Frames a worker keeps between two hand-overs to the writer (more in one round are lost).
pub const TAP_LIMIT: usize = 4096;
/// Messages (one worker's round each) waiting for the writer at most.
const QUEUE_MESSAGES: usize = 1024;
/// Bytes of frames waiting for the writer at most (a round that would pass it is lost).
pub const MAX_QUEUED_BYTES: u64 = 64 << 20;
/// The syntax, for errors.
const SYNTAX: &str = "capture start [dev DEV] [rx] [tx] [drop] [count N] [overwrite] FILE";

/// The capture the workers follow, and its writer.
#[derive(Debug, Default)]
pub struct CaptureBoard {
    /// Changes when a capture starts or stops (the workers compare it with the one they saw).
    generation: AtomicU64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    /// The last capture started (running or ended); None: none since the router started.
    session: Option<Session>,
}

/// One capture.
#[derive(Debug)]
struct Session {
    req: Request,
    shared: Arc<Shared>,
    /// Where the workers send (cloned for each); None once stopped.
    to_writer: Option<SyncSender<Msg>>,
    writer: Option<JoinHandle<()>>,
}

/// What the writer and the workers share.
#[derive(Debug, Default)]
struct Shared {
    written: AtomicU64,
    bytes: AtomicU64,
    lost: AtomicU64,
    /// Bytes of frames sent to the writer and not yet written.
    queued: AtomicU64,
    /// The writer has ended (count reached, stopped, or an error): the workers drop their taps.
    ended: AtomicBool,
    stopped: AtomicBool,
    error: Mutex<Option<String>>,
}

/// To the writer: a worker's frames (and where their buffers go back), or the end.
#[derive(Debug)]
enum Msg {
    Frames(Vec<Captured>, Sender<Vec<Captured>>),
    Stop,
}

/// A parsed `capture start` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What is taken.
    pub filter: CaptureFilter,
    /// The device's name, when the filter names one.
    pub dev_name: Option<String>,
    /// Stop after this many frames.
    pub count: Option<u64>,
    /// Replace an existing regular file.
    pub overwrite: bool,
    /// The file (absolute).
    pub file: PathBuf,
}

/// Answers `capture start ...` and `capture stop` (the words after `capture`) on a router running `snap`.
pub fn request(board: &CaptureBoard, snap: &Snapshot, args: &[&str]) -> (bool, String) {
    match args {
        ["start", rest @ ..] => {
            match parse_start(rest, |d| snap.dev_id(d)).and_then(|r| board.start(r, snap)) {
                Ok(()) => (true, String::new()),
                Err(e) => (false, e),
            }
        }
        ["stop"] => match board.stop() {
            Ok(s) => (true, s),
            Err(e) => (false, e),
        },
        ["stop", x, ..] => (
            false,
            format!("'{}': nothing expected after capture stop", shown_token(x)),
        ),
        [w, ..] => (
            false,
            format!("'{}': expected start or stop ({SYNTAX})", shown_token(w)),
        ),
        [] => (false, format!("capture what? ({SYNTAX}, or capture stop)")),
    }
}

/// Parses the words after `capture start` (`dev_id`: a device name to its id).
pub fn parse_start(
    args: &[&str],
    dev_id: impl Fn(&str) -> Option<usize>,
) -> Result<Request, String> {
    let Some((file, opts)) = args.split_last() else {
        return Err(format!("capture start: FILE missing ({SYNTAX})"));
    };
    let mut req = Request {
        filter: CaptureFilter {
            dev: None,
            rx: false,
            tx: false,
            drop: false,
        },
        dev_name: None,
        count: None,
        overwrite: false,
        file: PathBuf::from(file),
    };
    let mut it = opts.iter();
    while let Some(&w) = it.next() {
        match w {
            "rx" => req.filter.rx = true,
            "tx" => req.filter.tx = true,
            "drop" => req.filter.drop = true,
            "overwrite" => req.overwrite = true,
            "dev" => {
                let d = it.next().ok_or_else(|| {
                    format!("'dev': missing value (a device name) before FILE ({SYNTAX})")
                })?;
                let id = dev_id(d)
                    .ok_or_else(|| format!("'{}': not a device of this router", shown_token(d)))?;
                req.filter.dev = Some(id);
                req.dev_name = Some(d.to_string());
            }
            "count" => {
                let n = it.next().ok_or_else(|| {
                    format!("'count': missing value (a number of frames) before FILE ({SYNTAX})")
                })?;
                match n.parse::<u64>() {
                    Ok(n) if n > 0 => req.count = Some(n),
                    _ => {
                        return Err(format!(
                            "'{}': the number of frames to capture (1 or more)",
                            shown_token(n)
                        ));
                    }
                }
            }
            _ => return Err(format!("'{}': expected {SYNTAX}", shown_token(w))),
        }
    }
    if *file == "-" {
        return Err(
            "'-': the router writes the capture itself, not to your standard output: give a FILE"
                .into(),
        );
    }
    if !(req.filter.rx || req.filter.tx || req.filter.drop) {
        (req.filter.rx, req.filter.tx, req.filter.drop) = (true, true, true);
    }
    if !req.file.is_absolute() {
        return Err(format!(
            "'{}': FILE must be an absolute path (the router's working directory is not yours)",
            shown_token(file)
        ));
    }
    Ok(req)
}

/// Creates `path` for writing, as the module says: exclusive, not through a link at `path`; with `overwrite`,
/// an existing regular file is removed first.
pub fn create_file(path: &Path, overwrite: bool) -> Result<File, String> {
    let what = |e: std::io::Error| format!("{}: {e}", path.display());
    if overwrite {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_file() => std::fs::remove_file(path).map_err(what)?,
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{}: is a symbolic link; not followed, not replaced",
                    path.display()
                ));
            }
            Ok(_) => {
                return Err(format!(
                    "{}: exists and is not a regular file; not replaced",
                    path.display()
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(what(e)),
        }
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{}: exists (add 'overwrite' before FILE to replace a regular file)",
                path.display()
            ),
            _ => what(e),
        })
}

impl CaptureBoard {
    /// Frames the last capture started (running or ended) lost; 0 when none was started.
    pub fn lost(&self) -> u64 {
        self.state.lock().map_or(0, |s| {
            s.session
                .as_ref()
                .map_or(0, |x| x.shared.lost.load(Ordering::Acquire))
        })
    }

    /// Starts capture `req` on a router whose devices are `snap`'s links: creates the file, writes its header
    /// and starts the writer thread. Refused while a capture runs.
    pub fn start(&self, req: Request, snap: &Snapshot) -> Result<(), String> {
        let mut s = self.state.lock().map_err(|_| "capture state poisoned")?;
        if let Some(sess) = &s.session
            && sess.to_writer.is_some()
            && !sess.shared.ended.load(Ordering::Acquire)
        {
            return Err(format!(
                "a capture is running (to {}): capture stop first",
                sess.req.file.display()
            ));
        }
        let names: Vec<&str> = snap.links.iter().map(|l| l.name.as_str()).collect();
        let file = create_file(&req.file, req.overwrite)?;
        let w = PcapngWriter::new(BufWriter::new(file), &names)
            .and_then(|mut w| {
                // The header is on disk at once: the file is a valid (empty) capture from the start.
                w.get_mut().flush()?;
                Ok(w)
            })
            .map_err(|e| format!("{}: {e}", req.file.display()))?;
        let shared = Arc::new(Shared::default());
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_MESSAGES);
        let writer = {
            let shared = Arc::clone(&shared);
            let count = req.count;
            std::thread::Builder::new()
                .name("lwt6-capture".into())
                .spawn(move || write_loop(w, rx, count, &shared))
                .map_err(|e| format!("capture thread: {e}"))?
        };
        s.generation += 1;
        s.session = Some(Session {
            req,
            shared,
            to_writer: Some(tx),
            writer: Some(writer),
        });
        self.generation.store(s.generation, Ordering::Release);
        Ok(())
    }

    /// Stops the running capture: the workers drop their taps, the writer writes what was sent to it and closes
    /// the file. Returns the summary line; an error when no capture runs.
    pub fn stop(&self) -> Result<String, String> {
        let (tx, writer, shared, file) = {
            let mut s = self.state.lock().map_err(|_| "capture state poisoned")?;
            let Some(sess) = s.session.as_mut() else {
                return Err("no capture running".into());
            };
            let Some(tx) = sess.to_writer.take() else {
                return Err("no capture running".into());
            };
            let out = (
                tx,
                sess.writer.take(),
                Arc::clone(&sess.shared),
                sess.req.file.clone(),
            );
            s.generation += 1;
            self.generation.store(s.generation, Ordering::Release);
            out
        };
        if !shared.ended.load(Ordering::Acquire) {
            shared.stopped.store(true, Ordering::Release);
        }
        // The writer may have ended already (count reached, an error): then nobody reads.
        let _ = tx.send(Msg::Stop);
        drop(tx);
        if let Some(w) = writer {
            let _ = w.join();
        }
        Ok(format!(
            "capture stopped: {} frames written to {}{}\n",
            shared.written.load(Ordering::Acquire),
            file.display(),
            lost_note(shared.lost.load(Ordering::Acquire))
        ))
    }

    /// For a worker at the start of a round, having seen generation `seen`: `Some(link)` (None: no capture) when
    /// the capture changed since, and `seen` brought up to date. One atomic load when nothing changed.
    fn changed(&self, seen: &mut u64) -> Option<Option<WorkerLink>> {
        if self.generation.load(Ordering::Acquire) == *seen {
            return None;
        }
        let s = self.state.lock().ok()?;
        *seen = s.generation;
        Some(s.session.as_ref().and_then(|sess| {
            let tx = sess.to_writer.clone()?;
            let (back_tx, back_rx) = std::sync::mpsc::channel();
            Some(WorkerLink {
                filter: sess.req.filter,
                tx,
                back_tx,
                back_rx,
                shared: Arc::clone(&sess.shared),
            })
        }))
    }

    /// `show capture` as text.
    pub fn text(&self) -> String {
        let v = self.json();
        let status = v["status"].as_str().unwrap_or("off");
        if status == "off" {
            return "capture off\n".into();
        }
        let mut s = format!(
            "capture {status}: {} frames written ({} bytes) to {}",
            v["written"],
            v["bytes"],
            v["file"].as_str().unwrap_or("")
        );
        s += &format!("\n  filter: {}", v["filter"].as_str().unwrap_or(""));
        if let Some(n) = v["count"].as_u64() {
            s += &format!(", count {n}");
        }
        s += &format!("\n  lost: {}", v["lost"]);
        if let Some(e) = v["error"].as_str() {
            s += &format!("\n  error: {e}");
        }
        s + "\n"
    }

    /// `show capture -j`: `status` (off, running, done: its count reached, stopped, failed), `file`, `filter`,
    /// `count`, `written` (frames), `bytes` (of frames), `lost` (frames not written: the workers' bounds), `error`.
    pub fn json(&self) -> serde_json::Value {
        let Ok(s) = self.state.lock() else {
            return json!({"status": "off"});
        };
        let Some(sess) = &s.session else {
            return json!({"status": "off"});
        };
        let sh = &sess.shared;
        let error = sh.error.lock().ok().and_then(|e| e.clone());
        let status = if error.is_some() {
            "failed"
        } else if sh.stopped.load(Ordering::Acquire) {
            "stopped"
        } else if sh.ended.load(Ordering::Acquire) {
            "done"
        } else {
            "running"
        };
        json!({
            "status": status,
            "file": sess.req.file.display().to_string(),
            "filter": filter_text(&sess.req),
            "count": sess.req.count,
            "written": sh.written.load(Ordering::Acquire),
            "bytes": sh.bytes.load(Ordering::Acquire),
            "lost": sh.lost.load(Ordering::Acquire),
            "error": error,
        })
    }
}

fn lost_note(lost: u64) -> String {
    if lost == 0 {
        String::new()
    } else {
        format!(" ({lost} lost: the writer did not keep up)")
    }
}

fn filter_text(r: &Request) -> String {
    let mut w = Vec::new();
    if let Some(d) = &r.dev_name {
        w.push(format!("dev {d}"));
    }
    for (on, name) in [
        (r.filter.rx, "rx"),
        (r.filter.tx, "tx"),
        (r.filter.drop, "drop"),
    ] {
        if on {
            w.push(name.to_string());
        }
    }
    w.join(" ")
}

/// The writer thread: frames as they come, until `Stop`, `count` frames, or an error.
fn write_loop(
    mut w: PcapngWriter<BufWriter<File>>,
    rx: Receiver<Msg>,
    count: Option<u64>,
    sh: &Shared,
) {
    let limit = count.unwrap_or(u64::MAX);
    let mut written = 0u64;
    let mut result = Ok(());
    'msgs: while let Ok(msg) = rx.recv() {
        let Msg::Frames(frames, back) = msg else {
            break;
        };
        let size: u64 = frames.iter().map(|c| c.bytes.len() as u64).sum();
        for c in &frames {
            if written == limit {
                break;
            }
            let comment = c.reason.map(|r| format!("dropped: {}", r.name()));
            let opts = EpbOptions {
                flags: Some(match c.direction {
                    Direction::Rx | Direction::Drop => EPB_INBOUND,
                    Direction::Tx => EPB_OUTBOUND,
                }),
                comment: comment.as_deref(),
            };
            let f = OutFrame {
                iface: c.dev,
                ts_ns: c.ts_ns,
                data: &c.bytes,
            };
            if let Err(e) = w.write_with(&f, &opts) {
                result = Err(e);
                break 'msgs;
            }
            written += 1;
            sh.written.store(written, Ordering::Release);
            sh.bytes.fetch_add(c.bytes.len() as u64, Ordering::AcqRel);
        }
        sh.queued.fetch_sub(size, Ordering::AcqRel);
        if let Err(e) = w.get_mut().flush() {
            result = Err(e);
            break;
        }
        let _ = back.send(frames);
        if written == limit {
            break;
        }
    }
    let result = result.and_then(|()| {
        let f = w.into_inner().into_inner().map_err(|e| e.into_error())?;
        f.sync_all()
    });
    if let Err(e) = result
        && let Ok(mut err) = sh.error.lock()
    {
        *err = Some(format!("writing: {e}"));
    }
    sh.ended.store(true, Ordering::Release);
}

/// A worker's end of the running capture.
#[derive(Debug)]
struct WorkerLink {
    filter: CaptureFilter,
    tx: SyncSender<Msg>,
    back_tx: Sender<Vec<Captured>>,
    back_rx: Receiver<Vec<Captured>>,
    shared: Arc<Shared>,
}

/// What a worker thread keeps of the capture between rounds ([`crate::engine`]).
#[derive(Debug, Default)]
pub struct WorkerCapture {
    seen: u64,
    link: Option<WorkerLink>,
}

impl WorkerCapture {
    /// At the start of a round: when the board's capture changed, sets or clears `worker`'s tap. One atomic load
    /// when nothing changed.
    #[inline]
    pub fn follow(&mut self, board: &CaptureBoard, worker: &mut Worker) {
        if let Some(link) = board.changed(&mut self.seen) {
            self.switch(link, worker);
        }
    }

    #[cold]
    #[inline(never)]
    fn switch(&mut self, link: Option<WorkerLink>, worker: &mut Worker) {
        worker.set_capture(link.as_ref().map(|l| CaptureTap::new(l.filter, TAP_LIMIT)));
        self.link = link;
    }

    /// After a round with a tap: hands the round's frames to the writer (or counts them lost), takes back the
    /// buffers the writer is done with, and drops the tap once the capture has ended.
    #[inline(never)]
    pub fn after_round(&mut self, worker: &mut Worker) {
        let Some(l) = &self.link else {
            return;
        };
        let Some(tap) = worker.capture() else {
            return;
        };
        while let Ok(v) = l.back_rx.try_recv() {
            tap.recycle(v);
        }
        let (frames, lost) = tap.take();
        let mut lost = lost;
        if !frames.is_empty() {
            let size: u64 = frames.iter().map(|c| c.bytes.len() as u64).sum();
            let n = frames.len() as u64;
            if l.shared.queued.load(Ordering::Acquire) + size > MAX_QUEUED_BYTES {
                lost += n;
                tap.recycle(frames);
            } else {
                l.shared.queued.fetch_add(size, Ordering::AcqRel);
                match l.tx.try_send(Msg::Frames(frames, l.back_tx.clone())) {
                    Ok(()) => {}
                    Err(TrySendError::Full(m) | TrySendError::Disconnected(m)) => {
                        l.shared.queued.fetch_sub(size, Ordering::AcqRel);
                        if !l.shared.ended.load(Ordering::Acquire) {
                            lost += n;
                        }
                        if let Msg::Frames(f, _) = m {
                            tap.recycle(f);
                        }
                    }
                }
            }
        }
        if lost > 0 {
            l.shared.lost.fetch_add(lost, Ordering::AcqRel);
        }
        if l.shared.ended.load(Ordering::Acquire) {
            worker.set_capture(None);
            self.link = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(n: &str) -> Option<usize> {
        ["r0", "r1"].iter().position(|d| *d == n)
    }

    #[test]
    fn start_requests() {
        let r = parse_start(&["dev", "r1", "drop", "count", "5", "/tmp/x.pcapng"], dev).unwrap();
        assert_eq!(
            r.filter,
            CaptureFilter {
                dev: Some(1),
                rx: false,
                tx: false,
                drop: true
            }
        );
        assert_eq!((r.count, r.overwrite), (Some(5), false));
        assert_eq!(r.file, Path::new("/tmp/x.pcapng"));
        // No direction named: all three.
        let r = parse_start(&["overwrite", "/f"], dev).unwrap();
        assert!(r.filter.rx && r.filter.tx && r.filter.drop && r.overwrite);
        for (args, token) in [
            (&[][..], "FILE missing"),
            (&["rx"][..], "'rx': FILE must be an absolute path"),
            (&["dev", "nosuch", "/f"][..], "'nosuch': not a device"),
            (&["dev", "/f"][..], "'dev': missing value"),
            (&["count", "0", "/f"][..], "'0': the number"),
            (&["count", "many", "/f"][..], "'many': the number"),
            (&["banana", "/f"][..], "'banana': expected capture start"),
            (
                &["f.pcapng"][..],
                "'f.pcapng': FILE must be an absolute path",
            ),
            (
                &["rx", "-"][..],
                "'-': the router writes the capture itself",
            ),
        ] {
            let e = parse_start(args, dev).unwrap_err();
            assert!(e.contains(token), "{args:?}: {e}");
        }
    }

    const R0: [u8; 6] = [2, 0, 0, 0, 1, 2];
    const S0: [u8; 6] = [2, 0, 0, 0, 1, 1];

    /// An Ethernet + IPv6 + 8-byte UDP-like frame from fd00:1::1 (S0) to `dst` (R0) with hop limit `hl`.
    fn udp6(dst: &str, hl: u8) -> Vec<u8> {
        let mut f = R0.to_vec();
        f.extend(S0);
        f.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 8, 17, hl]);
        f.extend("fd00:1::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        f.extend(dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
        f.extend([0x9c, 0x40, 0x0d, 0x05, 0, 8, 0, 0]);
        f
    }

    /// One Enhanced Packet Block: (interface, data, epb_flags, opt_comment).
    type Epb = (u32, Vec<u8>, Option<u32>, Option<String>);

    /// The Enhanced Packet Blocks of a little-endian pcapng file, read by hand from the draft's layout (§3.1,
    /// §4.3, §3.5).
    fn epbs(b: &[u8]) -> Vec<Epb> {
        let u32at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u16at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap()) as usize;
        let mut out = Vec::new();
        let mut at = 0;
        while at < b.len() {
            let (ty, len) = (u32at(at), u32at(at + 4) as usize);
            assert_eq!(u32at(at + len - 4) as usize, len, "trailing length");
            if ty == 6 {
                let caplen = u32at(at + 20) as usize;
                let data = b[at + 28..at + 28 + caplen].to_vec();
                let (mut flags, mut comment) = (None, None);
                let mut o = at + 28 + caplen.div_ceil(4) * 4;
                while o < at + len - 4 {
                    let (code, olen) = (u16at(o), u16at(o + 2));
                    let v = &b[o + 4..o + 4 + olen];
                    match code {
                        0 => break,
                        1 => comment = Some(String::from_utf8(v.to_vec()).unwrap()),
                        2 => flags = Some(u32::from_le_bytes(v.try_into().unwrap())),
                        _ => panic!("unexpected option {code}"),
                    }
                    o += 4 + olen.div_ceil(4) * 4;
                }
                out.push((u32at(at + 8), data, flags, comment));
            }
            at += len;
        }
        out
    }

    #[test]
    fn a_worker_captures_what_it_receives_sends_and_drops() {
        let cfg = lwt6_config::parse(
            "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n\
             addr add fd00:1::2/64 dev r0\naddr add fd00:2::1/64 dev r1\n\
             neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0\n\
             neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n\
             sysctl net.ipv6.conf.all.forwarding=1\n-6 route add fc00::/16 via fd00:2::2 dev r1\n",
        )
        .unwrap();
        let snap = Snapshot::build(&cfg).unwrap();
        let dir = std::env::temp_dir().join(format!("lwt6-capture-w-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("c.pcapng");
        let board = CaptureBoard::default();
        assert_eq!(board.json()["status"], "off");
        let line = format!("start {}", file.display());
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(request(&board, &snap, &words), (true, String::new()));
        let again = request(&board, &snap, &words);
        assert!(!again.0 && again.1.contains("a capture is running"));
        assert_eq!(board.json()["status"], "running");

        let mut worker = Worker::new(&snap);
        let mut wc = WorkerCapture::default();
        wc.follow(&board, &mut worker);
        assert!(worker.capture().is_some());
        let (fwd, expired, unrouted) = (
            udp6("fc00::1", 64),
            udp6("fc00::2", 1),
            udp6("fd00:99::1", 64),
        );
        let mut sent: Vec<(usize, Vec<u8>)> = Vec::new();
        {
            let mut batch = worker.start_batch(&snap);
            for f in [&fwd, &expired, &unrouted] {
                batch.capture_rx(0, 7, f);
                batch.process(0, 7, f, &mut |d, _, b| sent.push((d, b.to_vec())));
            }
        }
        for (d, b) in &sent {
            worker.capture().unwrap().tx(*d, 7, b);
        }
        wc.after_round(&mut worker);
        let (ok, said) = request(&board, &snap, &["stop"]);
        assert!(
            ok && said.starts_with("capture stopped: 8 frames written to"),
            "{said}"
        );
        assert_eq!(board.json()["status"], "stopped");
        assert_eq!(board.json()["written"], 8);
        assert!(!request(&board, &snap, &["stop"]).0, "nothing to stop");

        let bytes = std::fs::read(&file).unwrap();
        let got = epbs(&bytes);
        let inb = |dev: u32, f: &Vec<u8>, c: Option<&str>| {
            (dev, f.clone(), Some(EPB_INBOUND), c.map(str::to_string))
        };
        // Sent: the forwarded frame out of r1, and two ICMPv6 errors back out of r0 (their bytes are the
        // dataplane's, checked against the kernel elsewhere; here: where they went).
        assert_eq!(sent.len(), 3);
        let out = |d: usize, f: &Vec<u8>| (d as u32, f.clone(), Some(EPB_OUTBOUND), None);
        let mut want = vec![
            inb(0, &fwd, None),
            inb(0, &expired, None),
            inb(0, &expired, Some("dropped: hop_limit_exceeded")),
            inb(0, &unrouted, None),
            inb(0, &unrouted, Some("dropped: no_route")),
        ];
        want.extend(sent.iter().map(|(d, f)| out(*d, f)));
        assert_eq!(got, want);
        assert_eq!(sent.iter().filter(|(d, _)| *d == 1).count(), 1);
        // The file reads back, one interface block per device.
        let back = lwt6_io::pcap::read_capture(&bytes).unwrap();
        assert_eq!(back.len(), 8);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn count_ends_the_capture_and_a_dev_filter_takes_one_device() {
        let cfg = lwt6_config::parse(
            "link add r0 address 02:00:00:00:01:02\nlink add r1 address 02:00:00:00:02:01\n",
        )
        .unwrap();
        let snap = Snapshot::build(&cfg).unwrap();
        let dir = std::env::temp_dir().join(format!("lwt6-capture-n-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("c.pcapng");
        let line = format!("start dev r1 rx count 2 {}", file.display());
        let words: Vec<&str> = line.split(' ').collect();
        let board = CaptureBoard::default();
        assert!(request(&board, &snap, &words).0);
        let mut worker = Worker::new(&snap);
        let mut wc = WorkerCapture::default();
        wc.follow(&board, &mut worker);
        let tap = worker.capture().unwrap();
        for (dev, b) in [(0, 1u8), (1, 2), (1, 3), (1, 4)] {
            tap.rx(dev, 1, &[b]);
            tap.tx(1, 1, &[b]);
        }
        wc.after_round(&mut worker);
        for _ in 0..200 {
            if board.json()["status"] == "done" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(board.json()["status"], "done");
        wc.after_round(&mut worker);
        assert!(worker.capture().is_none(), "the worker let go of its tap");
        let got: Vec<Vec<u8>> = epbs(&std::fs::read(&file).unwrap())
            .into_iter()
            .map(|e| e.1)
            .collect();
        assert_eq!(got, vec![vec![2], vec![3]]);
        // A new capture may start over the same file only with 'overwrite'.
        let e = request(&board, &snap, &words);
        assert!(!e.0 && e.1.contains("exists"), "{e:?}");
        let line = format!("start overwrite {}", file.display());
        let words: Vec<&str> = line.split(' ').collect();
        assert!(request(&board, &snap, &words).0);
        assert!(
            board
                .stop()
                .unwrap()
                .starts_with("capture stopped: 0 frames")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_file_is_created_exclusively_and_never_through_a_link() {
        let dir = std::env::temp_dir().join(format!("lwt6-capture-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let f = dir.join("c.pcapng");
        create_file(&f, false).unwrap();
        assert!(create_file(&f, false).unwrap_err().contains("exists"));
        std::fs::write(&f, b"old").unwrap();
        create_file(&f, true).unwrap();
        assert_eq!(
            std::fs::read(&f).unwrap(),
            b"",
            "replaced by a new, empty file"
        );
        let target = dir.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_file(&link, false).unwrap_err().contains("exists"));
        assert!(
            create_file(&link, true)
                .unwrap_err()
                .contains("symbolic link")
        );
        // A dangling link is not followed either.
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        assert!(create_file(&dangling, false).is_err());
        assert!(!dir.join("nowhere").exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
