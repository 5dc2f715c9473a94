//! An AF_PACKET [`Port`]: a raw packet socket bound to one interface, receiving and sending batches of frames
//! with `recvmmsg(2)` / `sendmmsg(2)` (packet(7)).
//!
//! Several workers share an interface through a fanout group (`PACKET_FANOUT`): the kernel hands each flow's
//! frames to one member, by a hash of the flow (`PACKET_FANOUT_HASH`, so a flow is never reordered across
//! workers) or by the receive queue they arrived on (`PACKET_FANOUT_QM`, one worker per rx queue). The socket
//! ignores the frames it (or anyone) sends (`PACKET_IGNORE_OUTGOING`) and sends past the queueing discipline
//! (`PACKET_QDISC_BYPASS`), as a NIC driver's transmit would.

use crate::port::Port;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Largest frame a port receives whole (an IPv6 jumbo-free frame: 65,535 bytes of payload, its header and an
/// Ethernet header with room to spare). A longer frame (a GSO aggregate) arrives cut to this length, and the
/// dataplane drops it by name (its IPv6 payload length does not fit).
pub const MAX_FRAME: usize = 65_536 + 128;

// packet(7) socket options (linux/if_packet.h).
const PACKET_FANOUT: libc::c_int = 18;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// Fanout by flow hash.
const PACKET_FANOUT_HASH: u32 = 0;
/// Fanout by receive queue.
const PACKET_FANOUT_QM: u32 = 5;
const ETH_P_ALL: u16 = 0x0003;

/// How a fanout group spreads an interface's frames over its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fanout {
    /// By a hash of the flow (addresses, ports): a flow stays with one worker.
    Hash,
    /// By the receive queue the frame arrived on: one worker per rx queue.
    Queue,
}

/// Options of an [`AfPacket`] port.
#[derive(Debug, Clone, Copy)]
pub struct AfPacketOptions {
    /// Frames received per `recvmmsg` call at most.
    pub rx_batch: usize,
    /// Frames queued before a `sendmmsg` call is forced.
    pub tx_batch: usize,
    /// Join fanout group `id` (16 bits, unique per interface in the namespace) in this mode.
    pub fanout: Option<(u16, Fanout)>,
    /// Socket receive buffer in bytes.
    pub rcvbuf: usize,
}

impl Default for AfPacketOptions {
    fn default() -> Self {
        AfPacketOptions {
            rx_batch: 64,
            tx_batch: 64,
            fanout: None,
            rcvbuf: 4 << 20,
        }
    }
}

/// An AF_PACKET socket on one interface (see the module documentation).
#[derive(Debug)]
pub struct AfPacket {
    fd: OwnedFd,
    /// Receive slots, `MAX_FRAME` bytes each, one per frame of a batch.
    rx: Vec<u8>,
    rx_batch: usize,
    /// Queued frames, back to back, and where each ends.
    tx: Vec<u8>,
    tx_ends: Vec<usize>,
    tx_batch: usize,
    /// Frames the kernel dropped for a full receive buffer (`PACKET_STATISTICS` `tp_drops`, which reading
    /// resets), summed.
    rx_drops: u64,
}

fn last_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt(2) reads `optlen` bytes at `optval`: `v` is a live c_int of exactly that size, and the
    // kernel keeps no pointer to it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl AfPacket {
    /// Opens a socket on interface `ifindex` (of the calling thread's network namespace). Needs CAP_NET_RAW.
    pub fn open(ifindex: u32, opts: &AfPacketOptions) -> io::Result<AfPacket> {
        // Protocol 0 at creation: the socket receives nothing until it is bound to its interface, so no frame of
        // another interface slips in between.
        // SAFETY: socket(2) takes three integers and touches no memory of ours.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(last_error("socket(AF_PACKET)"));
        }
        // SAFETY: `raw` was just returned by socket(2) (checked non-negative): open, and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let raw = fd.as_raw_fd();
        setsockopt_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            .map_err(|e| io::Error::new(e.kind(), format!("PACKET_IGNORE_OUTGOING: {e}")))?;
        setsockopt_int(raw, libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1)
            .map_err(|e| io::Error::new(e.kind(), format!("PACKET_QDISC_BYPASS: {e}")))?;
        let rcvbuf = opts.rcvbuf.min(i32::MAX as usize) as libc::c_int;
        // SO_RCVBUFFORCE passes the system limit (CAP_NET_ADMIN); without it, whatever SO_RCVBUF allows.
        if setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, rcvbuf).is_err() {
            let _ = setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, rcvbuf);
        }
        // SAFETY: `sockaddr_ll` is a repr(C) struct of integers and a byte array: all zeroes is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: bind(2) reads `addrlen` bytes at `addr`: `sll` is a live, initialised sockaddr_ll of exactly that
        // size, and the kernel keeps no pointer to it.
        let r = unsafe {
            libc::bind(
                raw,
                (&sll as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(last_error("bind(AF_PACKET)"));
        }
        if let Some((id, mode)) = opts.fanout {
            let mode = match mode {
                Fanout::Hash => PACKET_FANOUT_HASH,
                Fanout::Queue => PACKET_FANOUT_QM,
            };
            setsockopt_int(
                raw,
                libc::SOL_PACKET,
                PACKET_FANOUT,
                (u32::from(id) | (mode << 16)) as i32,
            )
            .map_err(|e| io::Error::new(e.kind(), format!("PACKET_FANOUT: {e}")))?;
        }
        let rx_batch = opts.rx_batch.max(1);
        let tx_batch = opts.tx_batch.max(1);
        Ok(AfPacket {
            fd,
            // Zeroed pages are mapped lazily: only the bytes frames really use are ever touched.
            rx: vec![0; rx_batch * MAX_FRAME],
            rx_batch,
            tx: Vec::with_capacity(tx_batch * 2048),
            tx_ends: Vec::with_capacity(tx_batch),
            tx_batch,
            rx_drops: 0,
        })
    }

    /// Frames queued and not yet handed to the kernel.
    pub fn queued(&self) -> usize {
        self.tx_ends.len()
    }

    /// One `sendmmsg` of the queued frames; returns how many the kernel took.
    fn send_queued(&mut self) -> io::Result<usize> {
        let mut iov: [libc::iovec; 64] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; 64];
        // SAFETY: `mmsghdr` is a repr(C) struct of integers and raw pointers, for which all zeroes (null) is a
        // valid value: no name, no control data, no iovec until set below.
        let mut msgs: [libc::mmsghdr; 64] = unsafe { std::mem::zeroed() };
        let n = self.tx_ends.len().min(64);
        let mut start = 0;
        for i in 0..n {
            let end = self.tx_ends[i];
            iov[i].iov_base = self.tx[start..end].as_ptr() as *mut libc::c_void;
            iov[i].iov_len = end - start;
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            start = end;
        }
        // SAFETY: sendmmsg(2) reads `vlen` headers at `msgvec` and, through each, its iovecs and their bytes; it
        // writes only each header's `msg_len`. `msgs` is a live local array of 64 >= n headers, exclusively
        // borrowed; header i points at `iov[i]` (a live local, one iovec), which points at the queued frame
        // `self.tx[start..end]`, in bounds since the ends are increasing offsets into `self.tx`. Nothing moves or
        // changes `self.tx`, `iov` or `msgs` until the call returns, and the kernel keeps no pointer after it.
        let r = unsafe {
            libc::sendmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as u32,
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => Ok(0),
                _ => Err(e),
            };
        }
        let sent = r as usize;
        if sent > 0 {
            let cut = self.tx_ends[sent - 1];
            self.tx.drain(..cut);
            self.tx_ends.drain(..sent);
            for e in &mut self.tx_ends {
                *e -= cut;
            }
        }
        Ok(sent)
    }

    /// Hands queued frames to the kernel, retrying for a while (up to `patience` attempts that make no progress)
    /// when its queue is full.
    fn push_out(&mut self, patience: u32) -> io::Result<()> {
        let mut stuck = 0;
        while !self.tx_ends.is_empty() {
            if self.send_queued()? == 0 {
                stuck += 1;
                if stuck >= patience {
                    break;
                }
                std::thread::yield_now();
            } else {
                stuck = 0;
            }
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` for the kernel to take every queued frame; returns how many it never took
    /// (what a router stopping counts as lost).
    pub fn close_out(&mut self, timeout_ms: u64) -> usize {
        let end = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
        while !self.tx_ends.is_empty() && std::time::Instant::now() < end {
            if self.push_out(1000).is_err() {
                break;
            }
        }
        self.tx_ends.len()
    }
}

impl Port for AfPacket {
    fn recv_batch(&mut self, max: usize, f: &mut dyn FnMut(&[u8])) -> io::Result<usize> {
        let n = max.min(self.rx_batch).min(64);
        if n == 0 {
            return Ok(0);
        }
        let mut iov: [libc::iovec; 64] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; 64];
        // SAFETY: `mmsghdr` is a repr(C) struct of integers and raw pointers, for which all zeroes (null) is a
        // valid value: no name, no control data, no iovec until set below.
        let mut msgs: [libc::mmsghdr; 64] = unsafe { std::mem::zeroed() };
        let base = self.rx.as_mut_ptr();
        for i in 0..n {
            // SAFETY: `self.rx` has `rx_batch * MAX_FRAME` bytes and `i < n <= rx_batch`, so slot i starts inside
            // it (and ends at most at its end).
            iov[i].iov_base = unsafe { base.add(i * MAX_FRAME) }.cast();
            iov[i].iov_len = MAX_FRAME;
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: recvmmsg(2) reads `vlen` headers at `msgvec`, writes into the buffers of their iovecs at most
        // `iov_len` bytes each, and writes each header's `msg_len` and flags; with a null timeout it reads no
        // timespec. `msgs` is a live local array of 64 >= n headers, exclusively borrowed; header i points at
        // `iov[i]` (a live local), which points at slot i of `self.rx`: MAX_FRAME bytes inside it (above), disjoint
        // from the other slots. `self.rx` is borrowed by no reference until the call returns (`base` is its only
        // use), and the kernel keeps no pointer after it.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        let got = r as usize;
        for (i, m) in msgs.iter().enumerate().take(got) {
            let len = (m.msg_len as usize).min(MAX_FRAME);
            f(&self.rx[i * MAX_FRAME..i * MAX_FRAME + len]);
        }
        Ok(got)
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        if self.tx_ends.len() >= self.tx_batch {
            self.push_out(64)?;
            if self.tx_ends.len() >= self.tx_batch {
                return Ok(false);
            }
        }
        self.tx.extend_from_slice(frame);
        self.tx_ends.push(self.tx.len());
        Ok(true)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.push_out(64)
    }

    fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn kind(&self) -> &'static str {
        "af_packet"
    }

    /// `PACKET_STATISTICS` `tp_drops`: frames the socket's full receive buffer refused.
    fn kernel_rx_drops(&mut self) -> u64 {
        // SAFETY: `tpacket_stats` is a repr(C) struct of two integers: all zeroes is a valid value.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: getsockopt(2) writes at most `*optlen` bytes at `optval` and the length into `optlen`: `st` is a
        // live, exclusively borrowed tpacket_stats of `len` bytes, `len` a live socklen_t.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if r == 0 {
            // The kernel resets its counters at every read.
            self.rx_drops += u64::from(st.tp_drops);
        }
        self.rx_drops
    }
}
