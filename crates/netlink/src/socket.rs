//! The netlink side: a route dump (`RTM_GETROUTE` with `NLM_F_DUMP`, IPv4 and IPv6 at once) and a socket
//! subscribed to the IPv4 and IPv6 route groups.

use std::os::fd::{AsRawFd, RawFd};

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_sys::protocols::NETLINK_ROUTE;
use netlink_sys::{Socket, SocketAddr};

use crate::{Error, KernelRoute, RouteChange};

/// `RTNLGRP_IPV4_ROUTE`.
const GROUP_IPV4_ROUTE: u32 = 7;
/// `RTNLGRP_IPV6_ROUTE`.
const GROUP_IPV6_ROUTE: u32 = 11;

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

fn open() -> Result<Socket, Error> {
    let mut s = Socket::new(NETLINK_ROUTE).map_err(io("socket(NETLINK_ROUTE)"))?;
    s.bind_auto().map_err(io("bind"))?;
    s.connect(&SocketAddr::new(0, 0)).map_err(io("connect"))?;
    Ok(s)
}

fn change(msg: RouteNetlinkMessage, flags: u16) -> Option<RouteChange> {
    let (m, add): (RouteMessage, bool) = match msg {
        RouteNetlinkMessage::NewRoute(m) => (m, true),
        RouteNetlinkMessage::DelRoute(m) => (m, false),
        _ => return None,
    };
    Some(match KernelRoute::from_message(&m) {
        Ok(r) if add && flags & NLM_F_REPLACE != 0 => RouteChange::Replace(r),
        Ok(r) if add => RouteChange::Add(r),
        Ok(r) => RouteChange::Del(r),
        Err(why) => RouteChange::Unreadable(why),
    })
}

/// Splits one datagram into its messages; `done` becomes true at the end of a dump, `interrupted` when a
/// message of a dump says the table changed while it was being dumped (`NLM_F_DUMP_INTR`).
fn parse(
    buf: &[u8],
    out: &mut Vec<RouteChange>,
    done: &mut bool,
    interrupted: &mut bool,
) -> Result<(), Error> {
    let mut off = 0;
    while off + 16 <= buf.len() {
        let len = u32::from_ne_bytes(buf[off..off + 4].try_into().expect("4 bytes")) as usize;
        if len < 16 || off + len > buf.len() {
            out.push(RouteChange::Unreadable(format!(
                "netlink message of length {len} at offset {off}"
            )));
            return Ok(());
        }
        if u16::from_ne_bytes([buf[off + 6], buf[off + 7]]) & NLM_F_DUMP_INTR != 0 {
            *interrupted = true;
        }
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[off..off + len]) {
            Ok(m) => match m.payload {
                NetlinkPayload::InnerMessage(inner) => out.extend(change(inner, m.header.flags)),
                NetlinkPayload::Done(_) => *done = true,
                NetlinkPayload::Error(e) => {
                    if let Some(code) = e.code {
                        return Err(Error::Refused(std::io::Error::from_raw_os_error(
                            -code.get(),
                        )));
                    }
                }
                NetlinkPayload::Overrun(_) => return Err(Error::Overrun),
                _ => {}
            },
            // A message netlink-packet-route cannot decode (an attribute it rejects): named, not fatal.
            Err(e) => out.push(RouteChange::Unreadable(format!("{e}"))),
        }
        off += (len + 3) & !3;
    }
    Ok(())
}

fn recv(s: &Socket, buf: &mut [u8]) -> Result<usize, Error> {
    match s.recv(&mut &mut buf[..], 0) {
        Ok(n) => Ok(n),
        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Err(Error::Overrun),
        Err(e) => Err(Error::Io {
            what: "recv",
            source: e,
        }),
    }
}

/// How many times a dump the kernel says was interrupted (`NLM_F_DUMP_INTR`: the table changed under it) is
/// taken again before [`Error::Inconsistent`].
const DUMP_TRIES: usize = 8;

/// Every route of every table in the calling thread's network namespace, IPv4 and IPv6, as `Add` changes (and
/// `Unreadable` for routes that could not be read): a consistent view of the tables at one moment. A dump the
/// kernel marks as interrupted (the table changed while it was being read, `NLM_F_DUMP_INTR`) is taken again,
/// up to `DUMP_TRIES` times, then refused ([`Error::Inconsistent`]).
pub fn dump() -> Result<Vec<RouteChange>, Error> {
    for _ in 0..DUMP_TRIES {
        let (routes, interrupted) = dump_once()?;
        if !interrupted {
            return Ok(routes);
        }
    }
    Err(Error::Inconsistent(DUMP_TRIES))
}

fn dump_once() -> Result<(Vec<RouteChange>, bool), Error> {
    let s = open()?;
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    // AF_UNSPEC in the request: both families.
    let mut req = NetlinkMessage::new(
        hdr,
        NetlinkPayload::from(RouteNetlinkMessage::GetRoute(RouteMessage::default())),
    );
    req.finalize();
    let mut out = vec![0; req.buffer_len()];
    req.serialize(&mut out);
    s.send(&out, 0).map_err(io("send"))?;
    let mut buf = vec![0u8; 1 << 16];
    let mut routes = Vec::new();
    let mut done = false;
    let mut interrupted = false;
    while !done {
        let n = recv(&s, &mut buf)?;
        parse(&buf[..n], &mut routes, &mut done, &mut interrupted)?;
    }
    Ok((routes, interrupted))
}

/// A socket subscribed to route changes (IPv4 and IPv6), iterated for them: each `next` blocks until the
/// kernel reports a change. `raw_fd` polls readable when one is waiting.
pub struct RouteMonitor {
    socket: Socket,
    buf: Vec<u8>,
    pending: std::collections::VecDeque<RouteChange>,
}

impl RouteMonitor {
    /// Subscribes (in the calling thread's network namespace). Subscribe before dumping, so that a change made
    /// between the two is seen (possibly twice, which applying it again absorbs).
    pub fn new() -> Result<RouteMonitor, Error> {
        let mut socket = Socket::new(NETLINK_ROUTE).map_err(io("socket(NETLINK_ROUTE)"))?;
        socket.bind_auto().map_err(io("bind"))?;
        // Room for bursts (a `ip route flush` of a large table) before the kernel drops notifications.
        let _ = socket.set_rx_buf_sz(4usize << 20);
        for g in [GROUP_IPV4_ROUTE, GROUP_IPV6_ROUTE] {
            socket.add_membership(g).map_err(io("add_membership"))?;
        }
        Ok(RouteMonitor {
            socket,
            buf: vec![0; 1 << 16],
            pending: Default::default(),
        })
    }

    /// The changes already received, without blocking (empty when none is waiting).
    pub fn poll(&mut self) -> Result<Vec<RouteChange>, Error> {
        self.socket
            .set_non_blocking(true)
            .map_err(io("non-blocking"))?;
        let mut out: Vec<RouteChange> = self.pending.drain(..).collect();
        loop {
            match self.socket.recv(&mut &mut self.buf[..], 0) {
                Ok(n) => parse(&self.buf[..n], &mut out, &mut false, &mut false)?,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => return Err(Error::Overrun),
                Err(e) => {
                    return Err(Error::Io {
                        what: "recv",
                        source: e,
                    });
                }
            }
        }
        self.socket
            .set_non_blocking(false)
            .map_err(io("blocking"))?;
        Ok(out)
    }

    /// Discards every notification waiting on the socket, without blocking, and returns how many datagrams
    /// were dropped. After an overrun ([`Error::Overrun`]) the queue holds notifications from before the ones the
    /// kernel dropped: replayed after a fresh [`dump`] they would undo changes the dump already shows. Drain,
    /// then dump: what arrives after the drain is a run of changes the dump may or may not show already, which
    /// applying in order absorbs. An overrun reported while draining is drained too.
    pub fn drain(&mut self) -> Result<usize, Error> {
        self.pending.clear();
        self.socket
            .set_non_blocking(true)
            .map_err(io("non-blocking"))?;
        let mut n = 0;
        let r = loop {
            match self.socket.recv(&mut &mut self.buf[..], 0) {
                Ok(_) => n += 1,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break Ok(n),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => n += 1,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    break Err(Error::Io {
                        what: "recv",
                        source: e,
                    });
                }
            }
        };
        self.socket
            .set_non_blocking(false)
            .map_err(io("blocking"))?;
        r
    }

    /// The socket's descriptor, for `poll`.
    pub fn raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

impl Iterator for RouteMonitor {
    type Item = Result<RouteChange, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(c) = self.pending.pop_front() {
                return Some(Ok(c));
            }
            let n = match recv(&self.socket, &mut self.buf) {
                Ok(n) => n,
                Err(e) => return Some(Err(e)),
            };
            let mut out = Vec::new();
            if let Err(e) = parse(&self.buf[..n], &mut out, &mut false, &mut false) {
                return Some(Err(e));
            }
            self.pending.extend(out);
        }
    }
}
