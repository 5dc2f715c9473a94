//! An AF_XDP socket with its own UMEM and four rings, written by hand on `libc` (include/uapi/linux/if_xdp.h;
//! the ring protocol is described in the kernel's Documentation/networking/af_xdp.rst).
//!
//! Each ring is a power-of-two array shared with the kernel plus a producer and a consumer index (free-running
//! `u32`s, masked on access). One side only writes the producer, the other only the consumer: entries are
//! published by a release store of the producer and acquired by the reader's acquire load of it, and handed back
//! the same way through the consumer. We produce on the fill and TX rings and consume the RX and completion rings.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// `struct xdp_desc`: a frame in the UMEM (RX and TX rings).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Desc {
    /// Offset of the frame's first byte in the UMEM.
    pub addr: u64,
    /// Frame length in bytes.
    pub len: u32,
    /// Option bits (`XDP_PKT_CONTD`, `XDP_TX_METADATA`); zero here.
    pub options: u32,
}

/// A memory mapping owned by this process, unmapped on drop.
pub struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mmap {
    /// Anonymous, zeroed, page-aligned memory (the UMEM).
    pub fn anonymous(len: usize) -> io::Result<Mmap> {
        Self::map(
            len,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    }

    /// A ring of socket `fd` at page offset `pgoff` (`XDP_PGOFF_*`).
    fn ring(fd: RawFd, len: usize, pgoff: u64) -> io::Result<Mmap> {
        Self::map(
            len,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd,
            pgoff as libc::off_t,
        )
    }

    fn map(len: usize, flags: i32, fd: RawFd, off: libc::off_t) -> io::Result<Mmap> {
        // SAFETY: a fresh mapping chosen by the kernel; nothing aliases it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap {
            ptr: NonNull::new(p.cast()).expect("mmap returned NULL"),
            len,
        })
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: mappings have at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `map` with this length and is not used after drop.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// One mapped ring: its producer, consumer and flags words and `size` entries of `T`.
pub struct Ring<T> {
    _map: Mmap,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    entries: *mut T,
    mask: u32,
    /// Our copy of the index we own (producer for fill/TX, consumer for RX/completion), published on `commit`.
    local: u32,
    /// Our last view of the other side's index.
    cached: u32,
}

impl<T: Copy> Ring<T> {
    /// Maps ring `pgoff` of `fd`, `size` entries, at the offsets the kernel gave (`off`).
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, size: u32, pgoff: u64) -> io::Result<Ring<T>> {
        let len = off.desc as usize + size as usize * size_of::<T>();
        let map = Mmap::ring(fd, len, pgoff)?;
        let base = map.as_ptr();
        // SAFETY: the kernel's offsets lie inside the mapping it sized for this ring.
        let (producer, consumer, flags, entries) = unsafe {
            (
                base.add(off.producer as usize) as *const AtomicU32,
                base.add(off.consumer as usize) as *const AtomicU32,
                base.add(off.flags as usize) as *const AtomicU32,
                base.add(off.desc as usize) as *mut T,
            )
        };
        Ok(Ring {
            _map: map,
            producer,
            consumer,
            flags,
            entries,
            mask: size - 1,
            local: 0,
            cached: 0,
        })
    }

    fn size(&self) -> u32 {
        self.mask + 1
    }

    /// The ring's flags word (`XDP_RING_NEED_WAKEUP`).
    pub fn needs_wakeup(&self) -> bool {
        // SAFETY: the pointer is inside our live mapping.
        unsafe { (*self.flags).load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0 }
    }

    // --- producer side (fill, TX) ---

    /// How many entries can be written now (refreshing our view of the consumer when needed).
    pub fn free(&mut self, want: u32) -> u32 {
        let free = self.size() - self.local.wrapping_sub(self.cached);
        if free >= want {
            return free;
        }
        // SAFETY: inside our mapping; acquire pairs with the kernel's release of the consumer index.
        self.cached = unsafe { (*self.consumer).load(Ordering::Acquire) };
        self.size() - self.local.wrapping_sub(self.cached)
    }

    /// Writes one entry at the producer position (the caller checked `free`); visible after `commit_producer`.
    pub fn push(&mut self, v: T) {
        // SAFETY: the index is masked into the ring; the slot is ours until the producer is published.
        unsafe { self.entries.add((self.local & self.mask) as usize).write(v) };
        self.local = self.local.wrapping_add(1);
    }

    /// Publishes every entry pushed so far; returns whether there were any since the last publication.
    pub fn commit_producer(&mut self) -> bool {
        // SAFETY: inside our mapping; only we write the producer of this ring.
        let p = unsafe { &*self.producer };
        if p.load(Ordering::Relaxed) == self.local {
            return false;
        }
        p.store(self.local, Ordering::Release);
        true
    }

    /// Entries published but not yet taken by the kernel.
    pub fn outstanding(&self) -> u32 {
        // SAFETY: inside our mapping; acquire pairs with the kernel's release of the consumer index.
        self.local
            .wrapping_sub(unsafe { (*self.consumer).load(Ordering::Acquire) })
    }

    // --- consumer side (RX, completion) ---

    /// How many entries are waiting to be read (up to `max`).
    pub fn available(&mut self, max: u32) -> u32 {
        let mut n = self.cached.wrapping_sub(self.local);
        if n == 0 {
            // SAFETY: inside our mapping; acquire pairs with the kernel's release of the producer index.
            self.cached = unsafe { (*self.producer).load(Ordering::Acquire) };
            n = self.cached.wrapping_sub(self.local);
        }
        n.min(max)
    }

    /// The `i`-th waiting entry (the caller checked `available`).
    pub fn peek(&self, i: u32) -> T {
        // SAFETY: masked index; the kernel does not write entries between our consumer and its producer.
        unsafe {
            self.entries
                .add((self.local.wrapping_add(i) & self.mask) as usize)
                .read()
        }
    }

    /// Hands `n` read entries back to the kernel.
    pub fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        // SAFETY: inside our mapping; only we write the consumer of this ring.
        unsafe { (*self.consumer).store(self.local, Ordering::Release) };
    }
}

/// Kernel's per-socket counters (`XDP_STATISTICS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Frames dropped for reasons other than a full RX ring or an empty fill ring.
    pub rx_dropped: u64,
    /// Invalid descriptors on the fill ring.
    pub rx_invalid_descs: u64,
    /// Invalid descriptors on the TX ring.
    pub tx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Frames dropped because the fill ring had no frame for them.
    pub rx_fill_ring_empty_descs: u64,
    /// Transmit attempts that found the TX ring empty.
    pub tx_ring_empty_descs: u64,
}

/// Ring and UMEM sizes of one socket.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// Bytes per UMEM frame (a power of two, 2048 or 4096).
    pub frame_size: u32,
    /// Bytes the kernel leaves free in front of every received frame (beyond its own `XDP_PACKET_HEADROOM`).
    pub headroom: u32,
    /// Entries per ring (a power of two); the UMEM has `2 * ring_size` frames, one half for receiving, one for
    /// transmitting.
    pub ring_size: u32,
}

/// An AF_XDP socket with its UMEM and rings, not yet bound.
pub struct Socket {
    pub(crate) fd: OwnedFd,
    /// The packet memory: `2 * ring_size` frames of `frame_size` bytes.
    pub(crate) umem: Mmap,
    pub(crate) fill: Ring<u64>,
    pub(crate) comp: Ring<u64>,
    pub(crate) rx: Ring<Desc>,
    pub(crate) tx: Ring<Desc>,
    pub(crate) geometry: Geometry,
}

fn setsockopt<T>(fd: RawFd, opt: i32, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a valid value of the option's type, its size passed along.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            opt,
            v as *const T as *const libc::c_void,
            size_of::<T>() as u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Why a step of socket creation failed.
#[derive(Debug)]
pub struct StepError {
    /// The step (`socket(AF_XDP)`, `XDP_UMEM_REG`, ...).
    pub step: &'static str,
    /// The kernel's error.
    pub source: io::Error,
}

fn step<T>(step: &'static str, r: io::Result<T>) -> Result<T, StepError> {
    r.map_err(|source| StepError { step, source })
}

impl Socket {
    /// Creates the socket, registers a fresh UMEM and maps its four rings.
    pub fn new(g: Geometry) -> Result<Socket, StepError> {
        // SAFETY: plain socket creation.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(StepError {
                step: "socket(AF_XDP)",
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        let frames = 2 * g.ring_size as usize;
        let umem = step(
            "UMEM memory",
            Mmap::anonymous(frames * g.frame_size as usize),
        )?;
        let reg = libc::xdp_umem_reg {
            addr: umem.as_ptr() as u64,
            len: umem.len() as u64,
            chunk_size: g.frame_size,
            headroom: g.headroom,
            flags: 0,
            tx_metadata_len: 0,
        };
        step("XDP_UMEM_REG", setsockopt(raw, libc::XDP_UMEM_REG, &reg))?;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            step("ring size", setsockopt(raw, opt, &g.ring_size))?;
        }
        // SAFETY: all-zero is a valid xdp_mmap_offsets.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: `off` is writable and `len` is its size.
        let r = unsafe {
            libc::getsockopt(
                raw,
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(StepError {
                step: "XDP_MMAP_OFFSETS",
                source: io::Error::last_os_error(),
            });
        }
        let fill = step(
            "mmap fill ring",
            Ring::map(raw, &off.fr, g.ring_size, libc::XDP_UMEM_PGOFF_FILL_RING),
        )?;
        let comp = step(
            "mmap completion ring",
            Ring::map(
                raw,
                &off.cr,
                g.ring_size,
                libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            ),
        )?;
        let rx = step(
            "mmap rx ring",
            Ring::map(raw, &off.rx, g.ring_size, libc::XDP_PGOFF_RX_RING as u64),
        )?;
        let tx = step(
            "mmap tx ring",
            Ring::map(raw, &off.tx, g.ring_size, libc::XDP_PGOFF_TX_RING as u64),
        )?;
        Ok(Socket {
            fd,
            umem,
            fill,
            comp,
            rx,
            tx,
            geometry: g,
        })
    }

    /// Binds to `queue` of interface `ifindex` with `XDP_COPY` or `XDP_ZEROCOPY` in `flags`.
    pub fn bind(&self, ifindex: u32, queue: u32, flags: u16) -> io::Result<()> {
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags | libc::XDP_USE_NEED_WAKEUP,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `sa` is a valid sockaddr_xdp of the size passed.
        let r = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_xdp).cast(),
                size_of::<libc::sockaddr_xdp>() as u32,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Whether the kernel bound the socket in zero-copy mode (`XDP_OPTIONS`).
    pub fn is_zero_copy(&self) -> bool {
        let mut o = libc::xdp_options { flags: 0 };
        let mut len = size_of::<libc::xdp_options>() as libc::socklen_t;
        // SAFETY: `o` is writable and `len` is its size.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_OPTIONS,
                (&mut o as *mut libc::xdp_options).cast(),
                &mut len,
            )
        };
        r == 0 && o.flags & libc::XDP_OPTIONS_ZEROCOPY != 0
    }

    /// The kernel's counters for this socket.
    pub fn kernel_stats(&self) -> io::Result<KernelStats> {
        // SAFETY: all-zero is a valid xdp_statistics.
        let mut s: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: `s` is writable and `len` is its size.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&mut s as *mut libc::xdp_statistics).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(KernelStats {
            rx_dropped: s.rx_dropped,
            rx_invalid_descs: s.rx_invalid_descs,
            tx_invalid_descs: s.tx_invalid_descs,
            rx_ring_full: s.rx_ring_full,
            rx_fill_ring_empty_descs: s.rx_fill_ring_empty_descs,
            tx_ring_empty_descs: s.tx_ring_empty_descs,
        })
    }

    /// Asks the kernel to transmit what the TX ring holds (copy mode always needs this; zero-copy drivers when the
    /// ring says so). A busy or full device is not an error: the frames stay queued for the next kick.
    pub fn kick_tx(&self) -> io::Result<()> {
        // SAFETY: a zero-length send on our socket.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => Ok(()),
            _ => Err(e),
        }
    }

    /// Wakes the kernel to refill from the fill ring (needed when it set `XDP_RING_NEED_WAKEUP` there).
    pub fn kick_rx(&self) -> io::Result<()> {
        // SAFETY: a zero-length, non-blocking receive on our socket.
        let r = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => Ok(()),
            _ => Err(e),
        }
    }
}
