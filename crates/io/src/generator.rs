//! A traffic generator for live benchmarks: frames (typically a capture's) sent out of an interface in a loop at
//! a chosen rate, over any transmitting port — an AF_XDP [`XskPort`](crate::afxdp::XskPort) or the AF_PACKET
//! [`PacketTx`] here (`sendmmsg`, one system call per batch) — counting what was sent.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::port::Port;

/// What the generator needs of a port: queue a frame, hand the queue to the kernel.
pub trait Transmit {
    /// Queues one frame; `Ok(false)` when the port has no room for it now.
    fn send(&mut self, frame: &[u8]) -> io::Result<bool>;
    /// Hands every queued frame to the kernel.
    fn flush(&mut self) -> io::Result<()>;
}

impl<P: Port + ?Sized> Transmit for P {
    fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        Port::send(self, frame)
    }
    fn flush(&mut self) -> io::Result<()> {
        Port::flush(self)
    }
}

/// How much to send, and how fast.
#[derive(Clone, Copy, Debug)]
pub struct GenOptions {
    /// Frames to send in all (the input frames are repeated in order).
    pub count: u64,
    /// Frames per second; `None`: as fast as the port takes them.
    pub rate: Option<u64>,
    /// Frames queued between two flushes.
    pub batch: usize,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            count: 1,
            rate: None,
            batch: 64,
        }
    }
}

/// What the generator did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenReport {
    /// Frames the port accepted (every one of `count` unless an error stopped the run).
    pub sent: u64,
    /// Times the port was full and the generator flushed and waited before sending the frame again.
    pub waits: u64,
    /// Time from the first frame to the last flush.
    pub elapsed: Duration,
}

impl GenReport {
    /// Frames per second achieved.
    pub fn rate(&self) -> f64 {
        self.sent as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Sends `opts.count` frames, cycling through `frames`, paced to `opts.rate` (checked once per batch: the
/// batch leaves at the time its first frame is due). A full port is flushed and retried, never skipped.
pub fn generate(
    port: &mut dyn Transmit,
    frames: &[Vec<u8>],
    opts: GenOptions,
) -> io::Result<GenReport> {
    if frames.is_empty() || opts.count == 0 {
        return Ok(GenReport::default());
    }
    let batch = opts.batch.max(1) as u64;
    let start = Instant::now();
    let mut r = GenReport::default();
    let mut next = 0;
    while r.sent < opts.count {
        if let Some(rate) = opts.rate.filter(|&r| r > 0) {
            let due = start + Duration::from_secs_f64(r.sent as f64 / rate as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let end = (r.sent + batch).min(opts.count);
        while r.sent < end {
            if port.send(&frames[next])? {
                r.sent += 1;
                next = (next + 1) % frames.len();
            } else {
                r.waits += 1;
                port.flush()?;
                std::thread::yield_now();
            }
        }
        port.flush()?;
    }
    r.elapsed = start.elapsed();
    Ok(r)
}

/// Most frames per `sendmmsg` call.
const MMSG_BATCH: usize = 64;

/// A transmit-only AF_PACKET socket bound to one interface: frames are copied into a batch and sent with one
/// `sendmmsg` per flush (the qdisc is bypassed, as a generator wants).
pub struct PacketTx {
    fd: OwnedFd,
    frames: Vec<Vec<u8>>,
    queued: usize,
}

impl PacketTx {
    /// Opens a socket on `ifname` in the calling thread's network namespace.
    pub fn open(ifname: &str) -> io::Result<PacketTx> {
        let name = CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
        // SAFETY: if_nametoindex(3) reads the NUL-terminated string at its argument: `name` is a live CString, and
        // the function keeps no pointer to it.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface named {ifname:?}"),
            ));
        }
        // Protocol 0: this socket receives nothing.
        // SAFETY: socket(2) takes three integers and touches no memory of ours.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by socket(2) (checked non-negative): open, and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `sockaddr_ll` is a repr(C) struct of integers and a byte array: all zeroes is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: bind(2) reads `addrlen` bytes at `addr`: `sll` is a live, initialised sockaddr_ll of exactly that
        // size, and the kernel keeps no pointer to it.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let one: i32 = 1;
        // Failure only means frames go through the qdisc.
        // SAFETY: setsockopt(2) reads `optlen` (4) bytes at `optval`: `one` is a live i32, and the kernel keeps no
        // pointer to it.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                (&one as *const i32).cast(),
                4,
            )
        };
        Ok(PacketTx {
            fd,
            frames: (0..MMSG_BATCH).map(|_| Vec::with_capacity(2048)).collect(),
            queued: 0,
        })
    }
}

impl Transmit for PacketTx {
    fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        if self.queued == MMSG_BATCH {
            return Ok(false);
        }
        let f = &mut self.frames[self.queued];
        f.clear();
        f.extend_from_slice(frame);
        self.queued += 1;
        Ok(true)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut iov: Vec<libc::iovec> = self.frames[..self.queued]
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: `mmsghdr` is a repr(C) struct of integers and raw pointers, for which all zeroes
                // (null) is a valid value: no name, no control data, no iovec until set below.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        let mut done = 0;
        while done < msgs.len() {
            // SAFETY: sendmmsg(2) reads `vlen` headers at `msgvec` and, through each, its iovec and bytes; it writes
            // only each header's `msg_len`. `msgs[done..]` is a live, exclusively borrowed slice of that many
            // headers; each points at its own element of `iov` (a Vec neither moved nor resized since), which
            // points at the whole of one queued frame of `self.frames`, not changed until `flush` returns. The
            // kernel keeps no pointer after the call.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    msgs[done..].as_mut_ptr(),
                    (msgs.len() - done) as u32,
                    0,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) => std::thread::yield_now(),
                    _ => return Err(e),
                }
            } else {
                done += r as usize;
            }
        }
        self.queued = 0;
        Ok(())
    }
}
