//! The control socket's connections, served from the control thread's `poll(2)` loop without ever waiting on a
//! client (docs/live.md, *Bounds and time limits*).
//!
//! Every connection is non-blocking and goes through three phases: **reading** its request (the bytes taken as
//! they come, never waited for), **writing** its reply (as fast as the client takes it), **draining** (what the
//! client still sends after its reply is discarded for a moment, so that closing does not reset the connection
//! before the client has read the reply). A request is applied as soon as it is complete, on the control thread,
//! one at a time (requests are atomic and ordered). So the thread that learns neighbours, handles signals and
//! publishes snapshots never waits for a client: it waits in `poll` on all of them at once, with its other
//! descriptors and timers.
//!
//! Why a poll loop rather than a reader thread per client feeding the control thread: the requests must be
//! applied by that thread anyway (it owns the configuration and the snapshot writer), a thread per connection
//! would make 1,000 idle connections cost 1,000 threads, and the limits (time, size, count) are easier to state
//! and to test on one state machine per connection.
//!
//! Limits: a one-line request must be complete within [`LINE_DEADLINE`] of its connection being accepted; a
//! batch must keep coming (no gap of [`IDLE_LIMIT`]) and be complete, applied and published within
//! [`REQUEST_DEADLINE`] of it (a batch still being applied then is given up, undone, and answered so); sizes
//! as [`MAX_REQUEST`], [`MAX_BATCH`], [`MAX_BATCH_LINES`]; at most [`MAX_CONNECTIONS`] connections (past that
//! the idlest connection still sending its request is closed with a reason to make room, or the new one is
//! refused when none is). A reply the client does not take for [`REPLY_IDLE`] is given up. Every refusal is
//! answered `error: REASON` and counted ([`ControlCounters`]).

use crate::control::{Control, ControlSocket};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Connections served at once (fewer when the process may not open that many descriptors: see
/// [`Clients::for_descriptors`]).
pub const MAX_CONNECTIONS: usize = 1024;
/// Descriptors left for everything else (ports, the listener, netlink, the metrics server) when the connection
/// limit is derived from the process's descriptor limit.
const OTHER_DESCRIPTORS: u64 = 128;
/// Longest request line accepted (bytes).
pub const MAX_REQUEST: usize = 64 * 1024;
/// Largest batch request accepted (bytes, the `batch` line included).
pub const MAX_BATCH: usize = 64 * 1024 * 1024;
/// Most lines in one batch request.
pub const MAX_BATCH_LINES: usize = 1_000_000;
/// A request's first line (the whole request unless it is a batch) must be complete this long after the
/// connection was accepted.
pub const LINE_DEADLINE: Duration = Duration::from_secs(2);
/// Longest gap between two pieces of a batch.
pub const IDLE_LIMIT: Duration = Duration::from_secs(2);
/// From its connection's accept, a request is read, applied and published within this, or given up (nothing
/// of it applied). Only the publication of a batch whose lines were all applied in time may end after it (its
/// routes are copied into the published table: at most a few seconds for a million routes).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(20);
/// How long the client may leave its reply untaken (no byte of it accepted by the socket) before it is given up.
pub const REPLY_IDLE: Duration = Duration::from_secs(2);
/// How long what a client sends after its reply is read and discarded before the connection is closed.
const DRAIN: Duration = Duration::from_millis(200);
/// How long `lwt6 ctl` waits for a reply. It must exceed the longest a request can take to be applied from the
/// client's connect: one [`REQUEST_DEADLINE`] for the request before it (a connection is accepted at the next
/// turn of the loop) and one for the request itself, plus their publications. So a client that gives up has not
/// had its request applied; the router gave it up first.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections accepted per turn of the loop (each is read as it is accepted).
const ACCEPT_PER_TURN: usize = 256;
/// Bytes read from one connection per turn of the loop (the others are served in between).
const READ_PER_TURN: usize = 4 * 1024 * 1024;
/// The answer to a request given up because the router stops.
pub const INTERRUPTED: &str =
    "interrupted: the router is stopping; nothing of this request was applied";

/// What the control thread counts about its clients and neighbours, shared with the metrics server.
#[derive(Debug, Default)]
pub struct ControlCounters {
    /// Connections refused by their peer's credentials.
    pub refused_credentials: AtomicU64,
    /// Connections closed (or refused) because [`MAX_CONNECTIONS`] were open.
    pub refused_too_many: AtomicU64,
    /// Requests not complete in time ([`LINE_DEADLINE`], [`IDLE_LIMIT`], [`REQUEST_DEADLINE`]).
    pub timed_out: AtomicU64,
    /// Requests over a size limit ([`MAX_REQUEST`], [`MAX_BATCH`], [`MAX_BATCH_LINES`]).
    pub too_large: AtomicU64,
    /// Replies given up because the client did not take them ([`REPLY_IDLE`]).
    pub reply_untaken: AtomicU64,
    /// New learned neighbours refused because the table was full of entries it keeps.
    pub neigh_refused: AtomicU64,
    /// Unconfirmed, unused learned neighbours evicted to make room for an answer to the router's solicitation.
    pub neigh_evicted: AtomicU64,
    /// Neighbour events dropped on their way from the workers (too many different neighbours in one interval).
    pub neigh_events_dropped: AtomicU64,
    /// Events not given to a `monitor` client because it did not read them in time ([`crate::monitor`]).
    pub monitor_dropped: AtomicU64,
    /// Frames the last live capture lost (the workers' bounds: `show capture`'s `lost`), copied by the control
    /// thread.
    pub capture_lost: AtomicU64,
    /// The kernel-route mirror's routes left out, in all; its full dumps; its netlink overruns (copied by the
    /// control thread from [`crate::kroutes`]).
    pub kernel_routes_skipped: AtomicU64,
    /// See [`ControlCounters::kernel_routes_skipped`].
    pub kernel_routes_dumps: AtomicU64,
    /// See [`ControlCounters::kernel_routes_skipped`].
    pub kernel_routes_overruns: AtomicU64,
}

impl ControlCounters {
    /// The counters, named as `show stats -j` and the metrics name them.
    pub fn pairs(&self) -> [(&'static str, u64); 13] {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("control_refused", g(&self.refused_credentials)),
            ("control_refused_too_many", g(&self.refused_too_many)),
            ("control_timed_out", g(&self.timed_out)),
            ("control_too_large", g(&self.too_large)),
            ("control_reply_untaken", g(&self.reply_untaken)),
            ("neigh_refused", g(&self.neigh_refused)),
            ("neigh_evicted", g(&self.neigh_evicted)),
            ("neigh_events_dropped", g(&self.neigh_events_dropped)),
            ("monitor_events_dropped", g(&self.monitor_dropped)),
            ("capture_lost", g(&self.capture_lost)),
            (
                "kernel_routes_skipped_total",
                g(&self.kernel_routes_skipped),
            ),
            ("kernel_routes_dumps", g(&self.kernel_routes_dumps)),
            ("kernel_routes_overruns", g(&self.kernel_routes_overruns)),
        ]
    }
}

/// The counters that are not zero, one a line, as `show stats` prints them.
pub fn counters_text(c: &ControlCounters) -> String {
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut s = String::new();
    for (what, n) in [
        (
            "control connections closed: too many open",
            g(&c.refused_too_many),
        ),
        ("control requests timed out", g(&c.timed_out)),
        ("control requests too large", g(&c.too_large)),
        (
            "control replies not taken by their client",
            g(&c.reply_untaken),
        ),
        ("neighbours refused: table full", g(&c.neigh_refused)),
        (
            "neighbours evicted (unconfirmed, unused) for a solicited answer",
            g(&c.neigh_evicted),
        ),
        (
            "neighbour events dropped (too many neighbours at once)",
            g(&c.neigh_events_dropped),
        ),
        (
            "monitor events dropped (a client did not read them in time)",
            g(&c.monitor_dropped),
        ),
    ] {
        if n > 0 {
            s += &format!("  {what} {n}\n");
        }
    }
    s
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// Where a connection is.
#[derive(Debug)]
enum Phase {
    /// Taking the request: what came, where its first line ends, whether it is a batch.
    Reading {
        buf: Vec<u8>,
        first_end: Option<usize>,
        batch: bool,
        /// A batch's cost so far against the memory the system has (crate::budget).
        meter: crate::budget::Meter,
    },
    /// Giving the reply: the bytes, how many the client took.
    Writing { out: Vec<u8>, at: usize },
    /// Reply given: discarding what the client still sends, until the time given.
    Draining { until: Instant },
    /// `monitor [-j]`: events written as they come, until the client goes away or the router stops; what the
    /// client sends is discarded (`eof`: it sent all it will).
    Monitor {
        out: crate::monitor::Outbox,
        eof: bool,
    },
    /// To be closed.
    Done,
}

#[derive(Debug)]
struct Conn {
    stream: UnixStream,
    accepted: Instant,
    /// The last progress: bytes read or written.
    last: Instant,
    phase: Phase,
    /// poll said it has something (or it was just accepted).
    ready: bool,
    /// Served once at least (what it sent when accepted was read): only then may it be closed to make room.
    served: bool,
    /// The peer hung up or the connection failed (poll's `POLLHUP`/`POLLERR`).
    hung_up: bool,
}

impl Conn {
    fn new(stream: UnixStream, now: Instant) -> Conn {
        Conn {
            stream,
            accepted: now,
            last: now,
            phase: Phase::Reading {
                buf: Vec::new(),
                first_end: None,
                batch: false,
                meter: Default::default(),
            },
            ready: true,
            served: false,
            hung_up: false,
        }
    }

    /// Puts the reply in place: `ok` and the output, or `error: MESSAGE`.
    fn answer(&mut self, ok: bool, body: &str, now: Instant) {
        let out = if ok {
            let mut o = Vec::with_capacity(3 + body.len());
            o.extend_from_slice(b"ok\n");
            o.extend_from_slice(body.as_bytes());
            o
        } else {
            format!("error: {}\n", body.trim_end_matches('\n')).into_bytes()
        };
        self.last = now;
        self.ready = true;
        self.phase = Phase::Writing { out, at: 0 };
    }

    /// Writes `error: MESSAGE` once, as far as the socket takes it without waiting, and closes (after reading
    /// what already came, without waiting: closing with it unread would reset the connection, and the client
    /// could lose the message).
    fn refuse_now(mut self, why: &str) {
        let _ = (&self.stream).write(format!("error: {why}\n").as_bytes());
        let mut sink = [0u8; 16 * 1024];
        for _ in 0..4 {
            match (&self.stream).read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        self.phase = Phase::Done;
    }

    /// What poll is to wait for on it.
    fn poll_events(&self) -> i16 {
        match &self.phase {
            Phase::Reading { .. } | Phase::Draining { .. } => libc::POLLIN,
            Phase::Monitor { out, eof } => {
                (if *eof { 0 } else { libc::POLLIN })
                    | (if out.pending() { libc::POLLOUT } else { 0 })
            }
            Phase::Writing { .. } | Phase::Done => libc::POLLOUT,
        }
    }
}

/// What one read of a connection's request gave.
enum Read_ {
    /// Not complete yet.
    More,
    /// Complete: the first line and, for a batch, the rest.
    Request(String, Option<String>),
    /// Refused, with the reason and the counter (none: the client broke the connection).
    Refused(String, Option<fn(&ControlCounters) -> &AtomicU64>),
}

/// The control socket's open connections and their state machines.
#[derive(Debug)]
pub struct Clients {
    conns: Vec<Conn>,
    max: usize,
    /// Accepting is paused until then (the process ran out of descriptors).
    accept_paused: Option<Instant>,
}

impl Default for Clients {
    fn default() -> Self {
        Clients::with_limit(MAX_CONNECTIONS)
    }
}

impl Clients {
    /// As many connections as [`MAX_CONNECTIONS`] and the process's descriptor limit allow: the soft limit is
    /// raised to make room (up to the hard one).
    pub fn for_descriptors() -> Clients {
        let want = MAX_CONNECTIONS as u64 + OTHER_DESCRIPTORS;
        let have = lwt6_io::sys::raise_nofile(want).unwrap_or(1024);
        Clients::with_limit(
            (have.saturating_sub(OTHER_DESCRIPTORS) as usize).clamp(16, MAX_CONNECTIONS),
        )
    }

    /// At most `max` connections at once.
    pub fn with_limit(max: usize) -> Clients {
        Clients {
            conns: Vec::new(),
            max: max.max(1),
            accept_paused: None,
        }
    }

    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The next time a connection's time limit falls, if any.
    fn next_deadline(&self) -> Option<Instant> {
        self.conns
            .iter()
            .filter_map(|c| match &c.phase {
                Phase::Reading { batch, .. } => Some(if *batch {
                    (c.last + IDLE_LIMIT).min(c.accepted + REQUEST_DEADLINE)
                } else {
                    c.accepted + LINE_DEADLINE
                }),
                Phase::Writing { .. } => Some(c.last + REPLY_IDLE),
                Phase::Draining { until } => Some(*until),
                Phase::Monitor { .. } | Phase::Done => None,
            })
            .min()
    }

    /// Waits until one of `base` (the control thread's own descriptors: signals, the listener, ...) is readable,
    /// a connection can go on, a connection's time limit falls, or `timeout_ms` passes. The listener, when it is
    /// among `base`, is left out while accepting is paused.
    pub fn wait(&mut self, base: &[RawFd], listener: RawFd, timeout_ms: i32) {
        let now = Instant::now();
        if self.accept_paused.is_some_and(|t| now >= t) {
            self.accept_paused = None;
        }
        let mut fds: Vec<libc::pollfd> = base
            .iter()
            .filter(|&&fd| fd != listener || self.accept_paused.is_none())
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let n = fds.len();
        fds.extend(self.conns.iter().map(|c| libc::pollfd {
            fd: c.stream.as_raw_fd(),
            events: c.poll_events(),
            revents: 0,
        }));
        let mut timeout = timeout_ms;
        let soonest = self
            .next_deadline()
            .into_iter()
            .chain(self.accept_paused)
            .min();
        if let Some(d) = soonest {
            let ms = d.saturating_duration_since(now).as_millis() as i32 + 1;
            timeout = if timeout < 0 { ms } else { timeout.min(ms) };
        }
        if lwt6_io::sys::poll(&mut fds, timeout).is_err() {
            // Never spin: wait the time out (poll failing is not expected).
            std::thread::sleep(Duration::from_millis(timeout.clamp(0, 50) as u64));
        }
        for (c, p) in self.conns.iter_mut().zip(&fds[n..]) {
            c.ready |= p.revents != 0;
            c.hung_up |= p.revents & (libc::POLLHUP | libc::POLLERR) != 0;
        }
    }

    /// Accepts the waiting connections (without waiting): each is checked against the socket's peer rule
    /// ([`ControlSocket::admits`]; refused ones are answered why and counted), and past [`MAX_CONNECTIONS`] room is
    /// made by closing the connection that has been silent longest while sending its request. Each is read as
    /// it is accepted, and its request applied when it came whole. Returns true when the router is stopping (a
    /// request saw SIGINT or SIGTERM).
    pub fn accept(&mut self, sock: &ControlSocket, control: &mut Control) -> bool {
        if self.accept_paused.is_some() {
            return false;
        }
        // The rest wait for the next turn (the listener stays readable: no wait): signals and neighbours are
        // looked at in between.
        for _ in 0..ACCEPT_PER_TURN {
            let stream = match sock.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors (EMFILE, ENFILE) or memory: the connection stays in the backlog; look
                    // again a little later rather than spin on a listener that stays readable.
                    crate::log::line(
                        "control-accept",
                        &format!("control socket: accept: {e}; accepting again in 100 ms"),
                    );
                    self.accept_paused = Some(Instant::now() + Duration::from_millis(100));
                    return false;
                }
            };
            let now = Instant::now();
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let mut c = Conn::new(stream, now);
            if let Err(why) = sock.admits(&c.stream) {
                control.refused += 1;
                bump(&control.counters.refused_credentials);
                crate::log::line(
                    "control-refused",
                    &format!("control socket: refused: {why}"),
                );
                c.answer(false, &why, now);
            }
            if self.conns.len() >= self.max && !self.make_room(&control.counters) {
                bump(&control.counters.refused_too_many);
                c.refuse_now(&format!(
                    "too many control connections ({} open, all busy): try again",
                    self.conns.len()
                ));
                continue;
            }
            self.conns.push(c);
            // Read what it sent with its connect, and answer it if that is a whole request: a burst of
            // connections after it cannot make it the longest silent before it was read.
            let i = self.conns.len() - 1;
            let stopping = self.step(i, control);
            if matches!(self.conns[i].phase, Phase::Done) {
                self.conns.swap_remove(i);
            }
            if stopping {
                return true;
            }
        }
        false
    }

    /// Closes one connection to make room for a new one: one being drained, else the one silent longest while
    /// sending its request (answered why). False when every connection is applying or taking its reply.
    fn make_room(&mut self, counters: &ControlCounters) -> bool {
        if let Some(i) = self
            .conns
            .iter()
            .position(|c| matches!(c.phase, Phase::Draining { .. } | Phase::Done))
        {
            self.conns.swap_remove(i);
            return true;
        }
        let Some(i) = self
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.served && matches!(c.phase, Phase::Reading { .. }))
            .min_by_key(|(_, c)| c.last)
            .map(|(i, _)| i)
        else {
            return false;
        };
        bump(&counters.refused_too_many);
        self.conns.swap_remove(i).refuse_now(&format!(
            "too many control connections ({}): this one, the longest silent, was closed",
            self.max
        ));
        true
    }

    /// Serves every connection as far as it can go without waiting: reads what came, applies the requests that
    /// are complete (one at a time, in `control`), writes replies, enforces the time limits, closes what is done.
    /// Returns true when the router is stopping (a request saw SIGINT or SIGTERM): the caller stops then.
    pub fn serve(&mut self, control: &mut Control) -> bool {
        self.deliver(control);
        let mut i = 0;
        let mut stopping = false;
        while i < self.conns.len() {
            if !stopping {
                stopping = self.step(i, control);
            }
            if matches!(self.conns[i].phase, Phase::Done) {
                self.conns.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.deliver(control);
        stopping
    }

    /// Hands the events the control thread recorded to every monitor connection (written at its next turn, or
    /// now as far as its socket takes them), and tells the control thread how many connections watch.
    fn deliver(&mut self, control: &mut Control) {
        let (events, overflow) = control.monitor.take();
        let dropped = &control.counters.monitor_dropped;
        let mut watching = 0;
        for c in &mut self.conns {
            if let Phase::Monitor { out, .. } = &mut c.phase {
                watching += 1;
                if overflow > 0 {
                    out.drop_some(overflow, dropped);
                }
                for e in &events {
                    out.offer(e, dropped);
                }
                if !events.is_empty() || overflow > 0 {
                    c.ready = true;
                    if out.write_to(&c.stream).is_err() {
                        c.phase = Phase::Done;
                    }
                }
            }
        }
        control.monitor.watching = watching;
        let c = &control.counters;
        c.capture_lost
            .store(control.capture.lost(), Ordering::Relaxed);
        control.kernel_routes.publish_counters(c);
    }

    /// One connection as far as it goes; true when the router is stopping.
    fn step(&mut self, i: usize, control: &mut Control) -> bool {
        let c = &mut self.conns[i];
        c.served = true;
        let ready = std::mem::take(&mut c.ready);
        let mut stopping = false;
        if matches!(c.phase, Phase::Reading { .. }) {
            let got = if ready { read_some(c) } else { Read_::More };
            let now = Instant::now();
            match got {
                Read_::Refused(why, counter) => {
                    if let Some(counter) = counter {
                        bump(counter(&control.counters));
                    }
                    c.answer(false, &why, now);
                }
                Read_::Request(first, None) if crate::monitor::is_request(&first) => {
                    match crate::monitor::parse_request(&first) {
                        Ok(json) => {
                            c.last = now;
                            c.ready = true;
                            c.phase = Phase::Monitor {
                                out: crate::monitor::Outbox::new(
                                    b"ok\n",
                                    crate::monitor::BUFFER,
                                    json,
                                ),
                                eof: false,
                            };
                            control.monitor.watching += 1;
                        }
                        Err(why) => c.answer(false, &why, now),
                    }
                }
                Read_::Request(first, rest) => {
                    control.deadline = Some(c.accepted + REQUEST_DEADLINE);
                    let mut large = false;
                    let (ok, body) = match rest {
                        Some(rest) => {
                            let lines: Vec<&str> = rest.lines().collect();
                            if lines.len() > MAX_BATCH_LINES {
                                bump(&control.counters.too_large);
                                (false, format!("batch of more than {MAX_BATCH_LINES} lines"))
                            } else {
                                large = lines.len() >= crate::trim::LARGE_REQUEST;
                                control.handle_batch(&lines)
                            }
                        }
                        None => control.handle_line(first.trim_end_matches(['\n', '\r'])),
                    };
                    if large {
                        // A large batch (a deletion of many routes) is given back once its text and lines are
                        // freed too: they may sit in the heap among what the request freed.
                        crate::trim::release_free_memory();
                    }
                    control.deadline = None;
                    if !ok && body.starts_with(crate::control::TIMED_OUT) {
                        bump(&control.counters.timed_out);
                    }
                    stopping = control.interrupted();
                    c.answer(ok, &body, Instant::now());
                }
                Read_::More => {
                    if let Phase::Reading { batch, .. } = c.phase {
                        let late = if batch {
                            if now >= c.accepted + REQUEST_DEADLINE {
                                Some(format!(
                                    "timed out: the batch was not complete within {} s",
                                    REQUEST_DEADLINE.as_secs()
                                ))
                            } else if now >= c.last + IDLE_LIMIT {
                                Some(format!(
                                    "timed out: nothing of the batch came for {} s",
                                    IDLE_LIMIT.as_secs()
                                ))
                            } else {
                                None
                            }
                        } else if now >= c.accepted + LINE_DEADLINE {
                            Some(format!(
                                "timed out: the request was not complete within {} s (one line, ending in a newline or the end of the stream)",
                                LINE_DEADLINE.as_secs()
                            ))
                        } else {
                            None
                        };
                        if let Some(why) = late {
                            bump(&control.counters.timed_out);
                            c.answer(false, &why, now);
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        match &mut c.phase {
            Phase::Writing { out, at } => {
                let mut s = &c.stream;
                loop {
                    if *at == out.len() {
                        let _ = c.stream.shutdown(std::net::Shutdown::Write);
                        c.phase = Phase::Draining { until: now + DRAIN };
                        break;
                    }
                    match s.write(&out[*at..]) {
                        Ok(0) => {
                            c.phase = Phase::Done;
                            break;
                        }
                        Ok(n) => {
                            *at += n;
                            c.last = now;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            if now >= c.last + REPLY_IDLE {
                                bump(&control.counters.reply_untaken);
                                c.phase = Phase::Done;
                            }
                            break;
                        }
                        // The client went away: nothing more to give it.
                        Err(_) => {
                            c.phase = Phase::Done;
                            break;
                        }
                    }
                }
            }
            Phase::Draining { until } => {
                let until = *until;
                let mut sink = [0u8; 16 * 1024];
                let mut s = &c.stream;
                let mut taken = 0;
                loop {
                    match s.read(&mut sink) {
                        Ok(0) => {
                            c.phase = Phase::Done;
                            break;
                        }
                        Ok(n) => {
                            taken += n;
                            if taken >= READ_PER_TURN {
                                break;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            c.phase = Phase::Done;
                            break;
                        }
                    }
                }
                if now >= until {
                    c.phase = Phase::Done;
                }
            }
            Phase::Monitor { out, eof } => {
                if ready && !*eof {
                    // Discard what the client sends; the end of its stream only says it sends no more.
                    let mut sink = [0u8; 4096];
                    let mut s = &c.stream;
                    loop {
                        match s.read(&mut sink) {
                            Ok(0) => {
                                *eof = true;
                                break;
                            }
                            Ok(_) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                            Err(_) => {
                                c.hung_up = true;
                                break;
                            }
                        }
                    }
                }
                if c.hung_up || (ready && out.write_to(&c.stream).is_err()) {
                    c.phase = Phase::Done;
                }
            }
            Phase::Reading { .. } | Phase::Done => {}
        }
        stopping
    }

    /// At stop: every connection still sending its request is told the router stops (as far as its socket takes
    /// it without waiting), every reply not yet given is written as far as the socket takes it, and all are
    /// closed.
    pub fn close_all(&mut self) {
        for mut c in self.conns.drain(..) {
            match &mut c.phase {
                Phase::Reading { .. } => c.refuse_now(INTERRUPTED),
                Phase::Writing { out, at } => {
                    let _ = (&c.stream).write(&out[*at..]);
                    c.phase = Phase::Done;
                }
                Phase::Monitor { out, .. } => {
                    let _ = out.write_to(&c.stream);
                    let _ = c.stream.shutdown(std::net::Shutdown::Both);
                }
                Phase::Draining { .. } | Phase::Done => {}
            }
        }
    }
}

/// Reads what `c` has sent without waiting (at most [`READ_PER_TURN`]): the request when it is complete, a
/// refusal when it breaks a size limit or the stream fails.
fn read_some(c: &mut Conn) -> Read_ {
    let Phase::Reading {
        buf,
        first_end,
        batch,
        meter,
    } = &mut c.phase
    else {
        return Read_::More;
    };
    let mut s = &c.stream;
    let mut taken = 0;
    let mut eof = false;
    loop {
        let room = 64 * 1024;
        let len = buf.len();
        buf.resize(len + room, 0);
        let r = s.read(&mut buf[len..]);
        let n = match &r {
            Ok(n) => *n,
            Err(_) => 0,
        };
        buf.truncate(len + n);
        match r {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => {
                taken += n;
                c.last = Instant::now();
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Read_::Refused(format!("reading the request: {e}"), None),
        }
        if first_end.is_none() {
            if let Some(i) = buf.iter().position(|&b| b == b'\n') {
                *first_end = Some(i);
                *batch = String::from_utf8_lossy(&buf[..i]).trim() == "batch";
                if !*batch {
                    break;
                }
            } else if buf.len() >= MAX_REQUEST {
                return Read_::Refused(
                    format!("request longer than {MAX_REQUEST} bytes"),
                    Some(|k| &k.too_large),
                );
            }
        }
        if *batch && let Some(why) = meter.check(buf) {
            return Read_::Refused(why, Some(|k| &k.too_large));
        }
        if buf.len() >= MAX_BATCH {
            return Read_::Refused(
                format!("batch longer than {MAX_BATCH} bytes"),
                Some(|k| &k.too_large),
            );
        }
        if taken >= READ_PER_TURN {
            break;
        }
    }
    let complete = eof || (first_end.is_some() && !*batch);
    if !complete {
        // More to come: poll says when (the deadlines are the caller's).
        c.ready = false;
        return Read_::More;
    }
    let text = match String::from_utf8(std::mem::take(buf)) {
        Ok(t) => t,
        Err(_) => {
            return Read_::Refused(
                "reading the request: stream did not contain valid UTF-8".into(),
                None,
            );
        }
    };
    match *first_end {
        Some(i) if *batch => Read_::Request(text[..i].to_string(), Some(text[i + 1..].to_string())),
        Some(i) => Read_::Request(text[..i].to_string(), None),
        None => Read_::Request(text, None),
    }
}

/// Serves one connection to the end on the calling thread (reads, applies, writes, waiting on it alone): for
/// tests, and for tools that drive a [`Control`] without a poll loop.
pub fn serve_one(control: &mut Control, stream: UnixStream) {
    let _ = stream.set_nonblocking(true);
    let mut clients = Clients::default();
    clients.conns.push(Conn::new(stream, Instant::now()));
    while !clients.is_empty() {
        if clients.serve(control) || control.interrupted() {
            clients.close_all();
            return;
        }
        clients.wait(&[], -1, 50);
    }
}

#[cfg(test)]
mod tests;
