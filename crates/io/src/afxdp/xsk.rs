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
        // SAFETY: with a null address hint (and no MAP_FIXED) mmap(2) picks fresh addresses, so no existing
        // memory, Rust's or anyone's, is replaced or aliased; it reads no memory of ours. A bad length, descriptor
        // or offset is an error (MAP_FAILED, checked below).
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
        // SAFETY: `ptr` and `len` are exactly what `map` got from mmap and nothing else unmaps them (`Mmap` is not
        // Clone). Every pointer derived from the mapping lives in the struct that owns this `Mmap` (a `Ring` or the
        // `Socket`'s UMEM), which is being dropped too, and no slice handed out borrows past the call that made it.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// One mapped ring: its producer, consumer and flags words and `size` entries of `T`.
pub struct Ring<T> {
    _map: Mmap,
    // The three index words and the entries, inside `_map` and aligned (checked by `map`). The kernel reads and
    // writes the words concurrently, always atomically, so they are only ever accessed as `AtomicU32`.
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
    ///
    /// Every other method relies on what this checks: the three index words and the `size` entries (a power of
    /// two) lie inside the mapping, aligned for their types. The kernel lays its rings out that way (the words on
    /// their own cache lines in front of the entries); a layout that is not is refused rather than trusted.
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, size: u32, pgoff: u64) -> io::Result<Ring<T>> {
        let word = |o: u64| o.is_multiple_of(4) && o + 4 <= off.desc;
        if !size.is_power_of_two()
            || !word(off.producer)
            || !word(off.consumer)
            || !word(off.flags)
            || !off.desc.is_multiple_of(align_of::<T>() as u64)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "unexpected AF_XDP ring layout: {size} entries, producer at {}, consumer at {}, flags at {}, \
                     entries at {}",
                    off.producer, off.consumer, off.flags, off.desc
                ),
            ));
        }
        let len = off.desc as usize + size as usize * size_of::<T>();
        // The kernel refuses (EINVAL) a ring mapping longer than the ring it allocated, so on success all `len`
        // bytes are the ring's.
        let map = Mmap::ring(fd, len, pgoff)?;
        let base = map.as_ptr();
        // SAFETY: each offset is below `off.desc <= len` (checked above; the same holds for the next three), so
        // the result stays inside the `len`-byte mapping `base` starts; the mapping is page-aligned, so the
        // checked offsets keep the alignment of `AtomicU32` and `T`.
        let producer = unsafe { base.add(off.producer as usize) }.cast::<AtomicU32>();
        // SAFETY: as above.
        let consumer = unsafe { base.add(off.consumer as usize) }.cast::<AtomicU32>();
        // SAFETY: as above.
        let flags = unsafe { base.add(off.flags as usize) }.cast::<AtomicU32>();
        // SAFETY: as above; `size` entries of `T` follow, up to exactly `len`.
        let entries = unsafe { base.add(off.desc as usize) }.cast::<T>();
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
        // SAFETY: `flags` points at an aligned u32 inside `_map`, which lives as long as `self`; the kernel only
        // accesses it atomically, so a shared `AtomicU32` view of it is sound.
        unsafe { (*self.flags).load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0 }
    }

    // --- producer side (fill, TX) ---

    /// How many entries can be written now (refreshing our view of the consumer when needed).
    pub fn free(&mut self, want: u32) -> u32 {
        let free = self.size() - self.local.wrapping_sub(self.cached);
        if free >= want {
            return free;
        }
        // SAFETY: `consumer` points at an aligned u32 inside `_map` (alive as long as `self`) that the kernel only
        // accesses atomically. Acquire pairs with the kernel's release: the entries it consumed are free again.
        self.cached = unsafe { (*self.consumer).load(Ordering::Acquire) };
        self.size() - self.local.wrapping_sub(self.cached)
    }

    /// Writes one entry at the producer position (the caller checked `free`); visible after `commit_producer`.
    pub fn push(&mut self, v: T) {
        let slot = (self.local & self.mask) as usize;
        // SAFETY: `slot <= mask < size`, and `map` checked that `size` aligned entries lie inside `_map`, which
        // lives as long as `self`.
        let p = unsafe { self.entries.add(slot) };
        // SAFETY: `p` is in bounds and aligned (above), and `T` is `Copy` (no destructor to skip for the value
        // overwritten). Nothing in Rust borrows the entries (only `peek` reads them, by value). Whether the kernel
        // still reads that slot is the ring protocol's business, which callers keep by pushing only as many
        // entries as `free` allowed: the kernel does not read past the producer we publish.
        unsafe { p.write(v) };
        self.local = self.local.wrapping_add(1);
    }

    /// Publishes every entry pushed so far; returns whether there were any since the last publication.
    pub fn commit_producer(&mut self) -> bool {
        // SAFETY: `producer` points at an aligned u32 inside `_map` (alive as long as `self`, which bounds the
        // reference's lifetime); the kernel only reads it, atomically, and only this ring writes it.
        let p = unsafe { &*self.producer };
        if p.load(Ordering::Relaxed) == self.local {
            return false;
        }
        p.store(self.local, Ordering::Release);
        true
    }

    /// Entries published but not yet taken by the kernel.
    pub fn outstanding(&self) -> u32 {
        // SAFETY: as in `free`: an aligned u32 inside the live mapping, accessed atomically by both sides.
        self.local
            .wrapping_sub(unsafe { (*self.consumer).load(Ordering::Acquire) })
    }

    // --- consumer side (RX, completion) ---

    /// How many entries are waiting to be read (up to `max`).
    pub fn available(&mut self, max: u32) -> u32 {
        let mut n = self.cached.wrapping_sub(self.local);
        if n == 0 {
            // SAFETY: `producer` points at an aligned u32 inside `_map` (alive as long as `self`) that the kernel
            // only accesses atomically. Acquire pairs with the kernel's release: the entries before it are written.
            self.cached = unsafe { (*self.producer).load(Ordering::Acquire) };
            n = self.cached.wrapping_sub(self.local);
        }
        n.min(max)
    }

    /// The `i`-th waiting entry (the caller checked `available`).
    pub fn peek(&self, i: u32) -> T {
        let slot = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: `slot <= mask < size`, and `map` checked that `size` aligned entries lie inside `_map`, which
        // lives as long as `self`.
        let p = unsafe { self.entries.add(slot) };
        // SAFETY: `p` is in bounds and aligned (above). `T` is `u64` or `Desc`, integers for which every bit pattern
        // is a value (`map` is private and only called with those), and a by-value copy outlives no borrow. The
        // entry is complete: callers read only below what `available` returned, i.e. before the producer index
        // the kernel published (with release) after writing them, and it does not touch them again until we
        // `release` them.
        unsafe { p.read() }
    }

    /// Hands `n` read entries back to the kernel.
    pub fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        // SAFETY: `consumer` points at an aligned u32 inside `_map` (alive as long as `self`); the kernel only reads
        // it, atomically. Release orders our reads of the entries before the kernel may reuse them.
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
    // SAFETY: setsockopt(2) reads `optlen` bytes at `optval`: `v` is a live, initialised `T` of exactly that size.
    // The kernel copies the value and keeps no pointer to it; what it means (for XDP_UMEM_REG, the UMEM's address)
    // is the caller's concern, see `Socket::new`.
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
        // SAFETY: socket(2) takes three integers and touches no memory of ours.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(StepError {
                step: "socket(AF_XDP)",
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: `fd` was just returned by socket(2) (checked non-negative): open, and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        let frames = 2 * g.ring_size as usize;
        let umem = step(
            "UMEM memory",
            Mmap::anonymous(frames * g.frame_size as usize),
        )?;
        // The kernel pins the UMEM's pages and writes received frames into them until the socket is closed.
        // `Socket` drops `fd` before `umem`, and even after our munmap the pinned pages stay the kernel's until
        // it lets them go, so no memory is reused while the kernel may still write it.
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
        // SAFETY: `xdp_mmap_offsets` is a repr(C) struct of integers: all zeroes is a valid value.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: getsockopt(2) writes at most `*optlen` bytes at `optval` and the length back into `optlen`: `off`
        // is a live, exclusively borrowed value of `len` bytes, `len` a live socklen_t.
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
        // SAFETY: bind(2) reads `addrlen` bytes at `addr`: `sa` is a live, initialised sockaddr_xdp of exactly that
        // size, and the kernel keeps no pointer to it.
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
        // SAFETY: getsockopt(2) writes at most `*optlen` bytes at `optval`: `o` is a live, exclusively borrowed
        // xdp_options of `len` bytes, `len` a live socklen_t.
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
        // SAFETY: `xdp_statistics` is a repr(C) struct of integers: all zeroes is a valid value.
        let mut s: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: getsockopt(2) writes at most `*optlen` bytes at `optval`: `s` is a live, exclusively borrowed
        // xdp_statistics of `len` bytes, `len` a live socklen_t. (An older kernel writes fewer: the rest stays 0.)
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
        // SAFETY: with a zero length and no address sendto(2) reads no memory (null pointers are allowed with
        // length 0); on an AF_XDP socket it only makes the kernel take descriptors from the TX ring, frames whose
        // UMEM bytes the caller no longer writes (see `XskPort::send`).
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
        // SAFETY: with a zero length and null address pointers recvfrom(2) writes no memory; on an AF_XDP socket it
        // only makes the kernel refill from the fill ring, whose frames are no longer ours.
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
