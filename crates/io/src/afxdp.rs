//! The AF_XDP port: frames move between an interface queue and a UMEM shared with the kernel, through four rings,
//! without a system call per frame.
//!
//! Two pieces:
//! - [`XdpAttachment`]: one per interface (and network namespace). It owns an XSKMAP, lwt6's own six-instruction
//!   redirect program ([`bpf::redirect_program`], assembled here: no clang, libbpf or ELF file) and the BPF link
//!   that attaches it, native (driver) mode first, generic (SKB) mode as the fallback. Dropping the last reference
//!   closes the link, which detaches the program; a process that dies detaches it the same way.
//! - [`XskPort`]: one per interface queue and worker. It owns an AF_XDP socket, its UMEM and its fill, completion,
//!   RX and TX rings ([`xsk`]), and puts itself in the interface's XSKMAP at its queue's index. Frames of queues
//!   without a socket go on to the kernel's stack.
//!
//! Half of a port's UMEM frames serve reception (they cycle fill ring → RX ring → back to the fill ring after the
//! callback), the other half transmission (free list → TX ring → completion ring → free list). Every received
//! frame has [`XskOptions::headroom`] free bytes in front of it (plus the kernel's own `XDP_PACKET_HEADROOM`),
//! so a worker that builds its headers in place has the room its routes need.

pub mod bpf;
pub mod xsk;

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, Weak};

use crate::port::Port;
use xsk::{Desc, Geometry, KernelStats, Socket, StepError};

/// The kernel's own headroom in front of every XDP frame (`XDP_PACKET_HEADROOM`): received data starts this many
/// bytes after the registered UMEM headroom in its frame.
pub const XDP_PACKET_HEADROOM: u32 = 256;

/// Where the XDP program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// Native first, generic if the driver refuses.
    Auto,
    /// Native (driver) mode only.
    Driver,
    /// Generic (SKB) mode only: every interface has it, at the cost of a socket buffer per frame.
    Skb,
}

impl XdpMode {
    /// The mode as `ip link` names it: `native` (driver), `generic` (skb), `auto` (native, else generic).
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Auto => "auto",
            XdpMode::Driver => "native",
            XdpMode::Skb => "generic",
        }
    }
}

/// How a port is built.
#[derive(Clone, Copy, Debug)]
pub struct XskOptions {
    /// Bytes per UMEM frame: a power of two from 2048 to the page size (4096).
    pub frame_size: u32,
    /// Free bytes the kernel leaves in front of every received frame, for the headers the routes add.
    pub headroom: u32,
    /// Entries per ring, a power of two; the UMEM holds twice as many frames.
    pub ring_size: u32,
    /// Let the kernel bind in zero-copy mode where the driver offers it (it falls back to copy mode by itself);
    /// `false` asks for copy mode.
    pub zero_copy: bool,
    /// Where the XDP program runs (used when this port attaches it first).
    pub mode: XdpMode,
}

impl Default for XskOptions {
    fn default() -> Self {
        XskOptions {
            frame_size: 4096,
            headroom: 0,
            ring_size: 1024,
            zero_copy: true,
            mode: XdpMode::Auto,
        }
    }
}

/// Why AF_XDP is unavailable, for a caller that falls back to another back end and says why.
#[derive(Debug, thiserror::Error)]
pub enum XskError {
    /// The kernel has no AF_XDP sockets or no `bpf()` (built without `CONFIG_XDP_SOCKETS` / `CONFIG_BPF_SYSCALL`).
    #[error("the kernel has no AF_XDP support ({step}: {source})")]
    Unsupported {
        /// The refused step.
        step: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
    /// Missing privileges (AF_XDP and BPF need CAP_NET_ADMIN, CAP_BPF or root).
    #[error("not permitted: {step} needs root or CAP_NET_ADMIN + CAP_BPF ({source})")]
    NotPermitted {
        /// The refused step.
        step: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
    /// No interface of that name in this network namespace.
    #[error("no interface named {ifname:?}")]
    NoInterface {
        /// The name asked for.
        ifname: String,
    },
    /// The program could not be attached (another XDP program is attached, or the device refuses XDP).
    #[error("cannot attach the XDP program to {ifname} in {} mode: {source}", .mode.name())]
    Attach {
        /// The interface.
        ifname: String,
        /// The last mode tried.
        mode: XdpMode,
        /// The kernel's error.
        source: io::Error,
    },
    /// The socket could not be bound to the queue (no such queue, queue busy, device down).
    #[error("cannot bind an AF_XDP socket to {ifname} queue {queue}: {source}")]
    Bind {
        /// The interface.
        ifname: String,
        /// The queue.
        queue: u32,
        /// The kernel's error.
        source: io::Error,
    },
    /// The UMEM could not be locked in memory (RLIMIT_MEMLOCK without CAP_IPC_LOCK).
    #[error(
        "cannot register the UMEM ({bytes} bytes): over the locked-memory limit (RLIMIT_MEMLOCK); grant CAP_IPC_LOCK or raise the limit (systemd: LimitMEMLOCK=): {source}"
    )]
    Memory {
        /// UMEM size.
        bytes: usize,
        /// The kernel's error.
        source: io::Error,
    },
    /// Options the kernel would refuse.
    #[error("invalid AF_XDP options: {0}")]
    Options(String),
    /// Any other failed step.
    #[error("AF_XDP setup failed at {step}: {source}")]
    Setup {
        /// The failed step.
        step: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
}

impl XskError {
    fn classify(step: &'static str, source: io::Error) -> XskError {
        match source.raw_os_error() {
            Some(libc::EAFNOSUPPORT | libc::ENOSYS | libc::EPROTONOSUPPORT) => {
                XskError::Unsupported { step, source }
            }
            Some(libc::EPERM | libc::EACCES) => XskError::NotPermitted { step, source },
            _ => XskError::Setup { step, source },
        }
    }
}

impl From<StepError> for XskError {
    fn from(e: StepError) -> Self {
        XskError::classify(e.step, e.source)
    }
}

impl From<XskError> for io::Error {
    fn from(e: XskError) -> Self {
        let kind = match &e {
            XskError::Unsupported { .. } => io::ErrorKind::Unsupported,
            XskError::NotPermitted { .. } => io::ErrorKind::PermissionDenied,
            XskError::NoInterface { .. } => io::ErrorKind::NotFound,
            XskError::Options(_) => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

/// Index of `ifname` in the calling thread's network namespace.
fn ifindex(ifname: &str) -> Result<u32, XskError> {
    let c = CString::new(ifname).map_err(|_| XskError::NoInterface {
        ifname: ifname.into(),
    })?;
    // SAFETY: if_nametoindex(3) reads the NUL-terminated string at its argument: `c` is a live CString (no
    // interior NUL, checked by `CString::new`) and the function keeps no pointer to it.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(XskError::NoInterface {
            ifname: ifname.into(),
        }),
        i => Ok(i),
    }
}

/// How many receive queues `ifname` has in use (its channel counts, `ETHTOOL_GCHANNELS`): the number of ports
/// (and workers) that cover all of its traffic. A device that does not report channels has one queue.
pub fn rx_queues(ifname: &str) -> Result<u32, XskError> {
    ifindex(ifname)?;
    // struct ethtool_channels: cmd, max_rx, max_tx, max_other, max_combined, rx_count, tx_count, other_count,
    // combined_count (include/uapi/linux/ethtool.h).
    let mut ch = [0u32; 9];
    ch[0] = 0x3c; // ETHTOOL_GCHANNELS
    // struct ifreq: the name (16 bytes) then, for SIOCETHTOOL, a pointer to the command's structure.
    let mut ifr = [0u8; 40];
    ifr[..ifname.len().min(15)].copy_from_slice(&ifname.as_bytes()[..ifname.len().min(15)]);
    ifr[16..24].copy_from_slice(&(ch.as_mut_ptr() as u64).to_ne_bytes());
    // SAFETY: socket(2) takes three integers and touches no memory of ours.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(XskError::classify(
            "socket for SIOCETHTOOL",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: SIOCETHTOOL reads a 40-byte `struct ifreq` at its argument (`ifr`: 40 live bytes, copied by the
    // kernel, so their alignment does not matter), then through its data pointer reads the command and writes
    // the rest of a 36-byte `struct ethtool_channels`: that pointer is `ch`, nine live u32 (36 bytes) not
    // otherwise touched until the call returns. Its address went through `as u64`, which exposes it, so the
    // compiler knows the opaque call may write `ch`.
    let r = unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, ifr.as_mut_ptr()) };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` came from socket(2) above (checked non-negative), nothing else has it, and it is closed once.
    unsafe { libc::close(fd) };
    if r < 0 {
        return match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => Ok(1),
            _ => Err(XskError::classify("ETHTOOL_GCHANNELS", err)),
        };
    }
    Ok((ch[5] + ch[8]).max(1))
}

/// The calling thread's network namespace (device and inode of its nsfs file), so that interfaces of the same
/// index in different namespaces do not share an attachment.
fn netns_id() -> (u64, u64) {
    // SAFETY: `struct stat` is a repr(C) struct of integers: all zeroes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: stat(2) reads the NUL-terminated path (a `c""` literal, 'static) and writes one `struct stat` into
    // `st`, a live, exclusively borrowed value of that type.
    let r = unsafe { libc::stat(c"/proc/thread-self/ns/net".as_ptr(), &mut st) };
    if r == 0 {
        (st.st_dev, st.st_ino)
    } else {
        (0, 0)
    }
}

/// Most queues an interface's XSKMAP can serve.
pub const MAX_QUEUES: u32 = 256;

/// lwt6's XDP program attached to one interface, with the XSKMAP its ports register in. Shared by the ports of
/// that interface; dropping the last reference detaches the program.
#[derive(Debug)]
pub struct XdpAttachment {
    ifname: String,
    ifindex: u32,
    mode: XdpMode,
    map: XskMapRef,
    _prog: OwnedFd,
    _link: OwnedFd,
}

/// The XSKMAP an attachment's ports register in: its own, or another program's from slot `base` on.
#[derive(Debug)]
enum XskMapRef {
    Own(bpf::Map),
    External { fd: OwnedFd, base: u32 },
}

impl XskMapRef {
    /// Puts socket `sock` in the slot of queue `queue`.
    fn register(&self, queue: u32, sock: RawFd) -> io::Result<()> {
        match self {
            XskMapRef::Own(m) => bpf::map_update(m, queue, sock as u32),
            XskMapRef::External { fd, base } => {
                bpf::xskmap_update(fd.as_fd(), base + queue, sock as u32)
            }
        }
    }

    /// Empties the slot of queue `queue`.
    fn unregister(&self, queue: u32) -> io::Result<()> {
        match self {
            XskMapRef::Own(m) => bpf::map_delete(m, queue),
            XskMapRef::External { fd, base } => bpf::xskmap_delete(fd.as_fd(), base + queue),
        }
    }
}

/// The live attachments, by (network namespace, interface index).
type Attachments = HashMap<((u64, u64), u32), Weak<XdpAttachment>>;
static ATTACHED: Mutex<Option<Attachments>> = Mutex::new(None);

impl XdpAttachment {
    /// Loads the redirect program and attaches it to `ifname` (in the calling thread's network namespace).
    /// `Auto` tries native mode, then generic mode.
    pub fn attach(ifname: &str, mode: XdpMode) -> Result<XdpAttachment, XskError> {
        let map = bpf::create_xskmap(MAX_QUEUES, "lwt6_xsks")
            .map_err(|e| XskError::classify("BPF_MAP_CREATE", e))?;
        let prog = bpf::load_redirect_program(&map, "lwt6_xsk")
            .map_err(|e| XskError::classify("BPF_PROG_LOAD", e))?;
        XdpAttachment::link(ifname, mode, prog, XskMapRef::Own(map))
    }

    /// Attaches another, already loaded XDP program `prog` to `ifname` (in the calling thread's network
    /// namespace; `Auto`: native mode, then generic mode). Its ports register their sockets in `xskmap` (an
    /// XSKMAP the program redirects to) at slot `base + queue`; the program must send queue `q`'s frames to that
    /// slot. The descriptors are duplicated: the attachment holds its own. Not shared ([`XdpAttachment::shared`]
    /// finds only lwt6's own redirect program).
    pub fn with_program(
        ifname: &str,
        mode: XdpMode,
        prog: BorrowedFd<'_>,
        xskmap: BorrowedFd<'_>,
        base: u32,
    ) -> Result<XdpAttachment, XskError> {
        let dup = |fd: BorrowedFd<'_>| {
            fd.try_clone_to_owned()
                .map_err(|e| XskError::classify("dup", e))
        };
        let map = XskMapRef::External {
            fd: dup(xskmap)?,
            base,
        };
        XdpAttachment::link(ifname, mode, dup(prog)?, map)
    }

    /// Attaches `prog` to `ifname` in `mode` (`Auto`: native, then generic).
    fn link(
        ifname: &str,
        mode: XdpMode,
        prog: OwnedFd,
        map: XskMapRef,
    ) -> Result<XdpAttachment, XskError> {
        let ifindex = ifindex(ifname)?;
        let tries: &[XdpMode] = match mode {
            XdpMode::Auto => &[XdpMode::Driver, XdpMode::Skb],
            XdpMode::Driver => &[XdpMode::Driver],
            XdpMode::Skb => &[XdpMode::Skb],
        };
        let mut last = None;
        for &m in tries {
            let flags = if m == XdpMode::Driver {
                bpf::XDP_FLAGS_DRV_MODE
            } else {
                bpf::XDP_FLAGS_SKB_MODE
            };
            match bpf::link_create(&prog, ifindex, flags) {
                Ok(link) => {
                    return Ok(XdpAttachment {
                        ifname: ifname.into(),
                        ifindex,
                        mode: m,
                        map,
                        _prog: prog,
                        _link: link,
                    });
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                    return Err(XskError::NotPermitted {
                        step: "BPF_LINK_CREATE",
                        source: e,
                    });
                }
                Err(e) => last = Some((m, e)),
            }
        }
        let (mode, source) = last.expect("at least one mode tried");
        Err(XskError::Attach {
            ifname: ifname.into(),
            mode,
            source,
        })
    }

    /// The attachment of `ifname` in the calling thread's namespace: the existing one while any port holds it,
    /// otherwise a new one attached in `mode`.
    pub fn shared(ifname: &str, mode: XdpMode) -> Result<Arc<XdpAttachment>, XskError> {
        let key = (netns_id(), ifindex(ifname)?);
        let mut reg = ATTACHED.lock().unwrap_or_else(|p| p.into_inner());
        let reg = reg.get_or_insert_with(HashMap::new);
        reg.retain(|_, w| w.strong_count() > 0);
        if let Some(a) = reg.get(&key).and_then(Weak::upgrade) {
            return Ok(a);
        }
        let a = Arc::new(XdpAttachment::attach(ifname, mode)?);
        reg.insert(key, Arc::downgrade(&a));
        Ok(a)
    }

    /// The interface name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface index.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The mode the program runs in (`Driver` or `Skb`).
    pub fn mode(&self) -> XdpMode {
        self.mode
    }
}

/// What a port counted itself (the kernel's own counters are [`XskPort::kernel_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XskCounters {
    /// Frames handed to the receive callback.
    pub rx_frames: u64,
    /// Receive descriptors pointing outside the UMEM (never expected; the frame is skipped and counted).
    pub rx_invalid: u64,
    /// Frames queued for transmission.
    pub tx_frames: u64,
    /// Frames refused because every transmit frame was in flight.
    pub tx_ring_full: u64,
    /// Frames refused because they are longer than a UMEM frame.
    pub tx_oversize: u64,
}

/// One AF_XDP socket bound to one interface queue, with its own UMEM and rings: a [`Port`] for one worker.
pub struct XskPort {
    sock: Socket,
    attachment: Arc<XdpAttachment>,
    queue: u32,
    zero_copy: bool,
    /// UMEM frames free for transmission.
    tx_free: Vec<u64>,
    counters: XskCounters,
}

// SAFETY: `XskPort` is not `Send` by itself only because of the raw pointers into its UMEM and ring mappings
// (`Mmap`, `Ring`). The port owns those mappings exclusively: no copy of the pointers leaves it, and no slice into
// them outlives a method call. The kernel side of the rings does not care which thread uses them. So moving a port
// to another thread moves everything that touches that memory with it. It stays `!Sync`: `&XskPort` from two
// threads is never needed.
unsafe impl Send for XskPort {}

impl XskPort {
    /// Opens queue `queue` of `ifname` (in the calling thread's network namespace), attaching lwt6's XDP program
    /// to the interface unless another port of it already did.
    pub fn open(ifname: &str, queue: u32, opts: XskOptions) -> Result<XskPort, XskError> {
        check(&opts)?;
        let attachment = XdpAttachment::shared(ifname, opts.mode)?;
        XskPort::open_on(attachment, queue, opts)
    }

    /// Opens queue `queue` of the interface `attachment` serves.
    pub fn open_on(
        attachment: Arc<XdpAttachment>,
        queue: u32,
        opts: XskOptions,
    ) -> Result<XskPort, XskError> {
        check(&opts)?;
        if queue >= MAX_QUEUES {
            return Err(XskError::Options(format!(
                "queue {queue} (at most {})",
                MAX_QUEUES - 1
            )));
        }
        let g = Geometry {
            frame_size: opts.frame_size,
            headroom: opts.headroom,
            ring_size: opts.ring_size,
        };
        let mut sock = Socket::new(g).map_err(|e| match e.step {
            // The kernel says ENOBUFS when the UMEM's pages exceed RLIMIT_MEMLOCK (without CAP_IPC_LOCK).
            "XDP_UMEM_REG"
                if matches!(e.source.raw_os_error(), Some(libc::ENOMEM | libc::ENOBUFS)) =>
            {
                XskError::Memory {
                    bytes: 2 * (g.ring_size * g.frame_size) as usize,
                    source: e.source,
                }
            }
            _ => e.into(),
        })?;
        // Flags 0 lets the kernel choose zero-copy where the driver supports it and copy mode otherwise.
        let flags = if opts.zero_copy { 0 } else { libc::XDP_COPY };
        sock.bind(attachment.ifindex, queue, flags)
            .map_err(|source| match source.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => XskError::NotPermitted {
                    step: "bind",
                    source,
                },
                _ => XskError::Bind {
                    ifname: attachment.ifname.clone(),
                    queue,
                    source,
                },
            })?;
        let zero_copy = sock.is_zero_copy();
        // The first half of the UMEM waits in the fill ring for received frames; the second half is for sending.
        let fs = u64::from(g.frame_size);
        let n = g.ring_size;
        let free = sock.fill.free(n);
        debug_assert_eq!(free, n);
        for i in 0..u64::from(n) {
            sock.fill.push(i * fs);
        }
        sock.fill.commit_producer();
        let tx_free = (u64::from(n)..2 * u64::from(n))
            .map(|i| i * fs)
            .rev()
            .collect();
        attachment
            .map
            .register(queue, sock.fd.as_raw_fd())
            .map_err(|e| XskError::classify("XSKMAP update", e))?;
        Ok(XskPort {
            sock,
            attachment,
            queue,
            zero_copy,
            tx_free,
            counters: XskCounters::default(),
        })
    }

    /// The queue this port serves.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// Whether the kernel bound the socket in zero-copy mode.
    pub fn is_zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The port's ring and UMEM sizes.
    pub fn geometry(&self) -> Geometry {
        self.sock.geometry
    }

    /// The interface's XDP attachment.
    pub fn attachment(&self) -> &Arc<XdpAttachment> {
        &self.attachment
    }

    /// The port's own counters.
    pub fn counters(&self) -> XskCounters {
        self.counters
    }

    /// The kernel's counters for this socket (`XDP_STATISTICS`).
    pub fn kernel_stats(&self) -> io::Result<KernelStats> {
        self.sock.kernel_stats()
    }

    /// Where `data` (a slice handed to the receive callback) starts inside its UMEM frame: the free room in
    /// front of it. `None` for bytes outside this port's UMEM.
    pub fn frame_offset(&self, data: &[u8]) -> Option<usize> {
        let base = self.sock.umem.as_ptr() as usize;
        let p = data.as_ptr() as usize;
        (p >= base && p < base + self.sock.umem.len())
            .then(|| (p - base) % self.sock.geometry.frame_size as usize)
    }

    /// Frames queued for transmission that the kernel has not completed yet (after taking back the completed ones).
    pub fn tx_pending(&mut self) -> usize {
        self.reclaim();
        self.sock.geometry.ring_size as usize - self.tx_free.len()
    }

    /// Takes the completion ring's frames back into the transmit free list.
    fn reclaim(&mut self) {
        let n = self.sock.comp.available(self.sock.geometry.ring_size);
        let fs = u64::from(self.sock.geometry.frame_size);
        let tx_half = u64::from(self.sock.geometry.ring_size) * fs..self.sock.umem.len() as u64;
        for i in 0..n {
            let addr = self.sock.comp.peek(i);
            // `send` writes a whole frame at every address of the free list. The kernel only completes the
            // addresses we gave it, all frame starts in the transmit half; anything else (never expected) is
            // left out rather than written to.
            if tx_half.contains(&addr) && addr.is_multiple_of(fs) {
                self.tx_free.push(addr);
            }
        }
        if n > 0 {
            self.sock.comp.release(n);
        }
    }
}

/// Checks what the kernel would refuse with a bare EINVAL, to name the problem instead.
fn check(o: &XskOptions) -> Result<(), XskError> {
    if !o.frame_size.is_power_of_two() || !(2048..=4096).contains(&o.frame_size) {
        return Err(XskError::Options(format!(
            "frame size {} (a power of two, 2048 or 4096)",
            o.frame_size
        )));
    }
    if o.headroom + XDP_PACKET_HEADROOM + 1500 > o.frame_size {
        return Err(XskError::Options(format!(
            "headroom {} leaves less than a 1500-byte frame in a {}-byte UMEM frame (the kernel keeps {} more)",
            o.headroom, o.frame_size, XDP_PACKET_HEADROOM
        )));
    }
    if !o.ring_size.is_power_of_two() || !(64..=16384).contains(&o.ring_size) {
        return Err(XskError::Options(format!(
            "ring size {} (a power of two, 64 to 16384)",
            o.ring_size
        )));
    }
    Ok(())
}

impl Port for XskPort {
    /// `XDP_STATISTICS`: frames dropped for want of a fill-ring frame (`rx_dropped`, which also counts a frame
    /// too long for a UMEM frame) and for a full RX ring (`rx_ring_full`). `rx_fill_ring_empty_descs` counts the
    /// same allocations failing as `rx_dropped` and is not added.
    fn kernel_rx_drops(&mut self) -> u64 {
        self.kernel_stats()
            .map_or(0, |k| k.rx_dropped + k.rx_ring_full)
    }

    fn recv_batch(&mut self, max: usize, f: &mut dyn FnMut(&[u8])) -> io::Result<usize> {
        let max = max.min(self.sock.geometry.ring_size as usize) as u32;
        let n = self.sock.rx.available(max);
        if n == 0 {
            if self.sock.fill.needs_wakeup() {
                self.sock.kick_rx()?;
            }
            return Ok(0);
        }
        let umem = self.sock.umem.as_ptr();
        let umem_len = self.sock.umem.len() as u64;
        let mask = !(u64::from(self.sock.geometry.frame_size) - 1);
        // The fill ring always has room: the frames it can hold are exactly the receive half of the UMEM.
        self.sock.fill.free(n);
        let mut delivered = 0;
        for i in 0..n {
            let Desc { addr, len, .. } = self.sock.rx.peek(i);
            if addr
                .checked_add(u64::from(len))
                .is_none_or(|end| end > umem_len)
            {
                self.counters.rx_invalid += 1;
            } else {
                // SAFETY: `addr < addr + len <= umem_len` (checked above), so the result lies inside the UMEM
                // mapping `umem` starts, which `self.sock` keeps alive.
                let start = unsafe { umem.add(addr as usize) };
                // SAFETY: the `len` bytes at `start` are inside the UMEM (above): initialised (the mapping came
                // zeroed and holds only bytes) and u8-aligned. Nothing writes them while the slice lives: the
                // kernel (or the NIC) writes a receive frame only while it sits in the fill ring, and this one left
                // it when the kernel put it on the RX ring; we hand it back (`fill.push` below) only after `f`
                // returned, and the slice's lifetime ends with `f`'s call (the callback is higher-ranked over
                // it). We write only transmit frames, the other half of the UMEM, and not during this call.
                let data = unsafe { std::slice::from_raw_parts(start, len as usize) };
                f(data);
                delivered += 1;
            }
            self.sock.fill.push(addr & mask);
        }
        self.sock.rx.release(n);
        self.sock.fill.commit_producer();
        if self.sock.fill.needs_wakeup() {
            self.sock.kick_rx()?;
        }
        self.counters.rx_frames += delivered;
        Ok(delivered as usize)
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        if frame.len() > self.sock.geometry.frame_size as usize {
            self.counters.tx_oversize += 1;
            return Ok(false);
        }
        if self.tx_free.is_empty() {
            self.reclaim();
        }
        if self.tx_free.is_empty() || self.sock.tx.free(1) == 0 {
            self.counters.tx_ring_full += 1;
            return Ok(false);
        }
        let addr = self.tx_free.pop().expect("checked non-empty");
        // SAFETY: every address in `tx_free` is the start of a frame of the transmit half (built so in `open_on`,
        // checked in `reclaim`), so `addr + frame_size <= umem.len()` and the result is inside the UMEM mapping,
        // which `self.sock` keeps alive.
        let dst = unsafe { self.sock.umem.as_ptr().add(addr as usize) };
        // SAFETY: `dst` is valid for `frame.len() <= frame_size` bytes of writes (above). The frame is ours: it is in
        // the free list, so in no ring, and neither the kernel nor the NIC touches it until we push it on the TX
        // ring below. No Rust reference points into the transmit half (only receive frames are lent out, to
        // `recv_batch`'s callback), so `frame` cannot overlap it.
        unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), dst, frame.len()) };
        self.sock.tx.push(Desc {
            addr,
            len: frame.len() as u32,
            options: 0,
        });
        self.counters.tx_frames += 1;
        Ok(true)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sock.tx.commit_producer();
        let in_flight = self.sock.geometry.ring_size as usize - self.tx_free.len();
        if in_flight > 0 && (!self.zero_copy || self.sock.tx.needs_wakeup()) {
            // Copy mode sends a bounded batch per system call: kick until the kernel has taken every descriptor
            // or stops making progress (device busy; the next flush goes on).
            let mut left = self.sock.tx.outstanding();
            while left > 0 {
                self.sock.kick_tx()?;
                let now = self.sock.tx.outstanding();
                if now >= left {
                    break;
                }
                left = now;
            }
        }
        self.reclaim();
        Ok(())
    }

    fn raw_fd(&self) -> RawFd {
        self.sock.fd.as_raw_fd()
    }

    fn kind(&self) -> &'static str {
        "af_xdp"
    }
}

impl Drop for XskPort {
    fn drop(&mut self) {
        // Take the socket out of the map before it closes (the kernel would also drop the entry on close).
        let _ = self.attachment.map.unregister(self.queue);
    }
}
