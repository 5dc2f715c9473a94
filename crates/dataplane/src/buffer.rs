//! The packet buffer: one allocation laid out as `headroom | data | tailroom`.
//!
//! Headers are pushed into the headroom in front of the data, the way a NIC driver's buffer is used by the
//! kernel. Growth is explicit ([`PacketBuf::ensure_headroom`]), happens at most once per packet, and is
//! counted. The receive headroom is chosen at configuration time from the largest route overhead, so that in
//! steady state nothing is ever reallocated.
//!
//! Header views borrow the buffer, and growing needs `&mut self`, so a view cannot outlive a growth: the
//! use-after-reallocation bug Linux had in `rpl_do_srh_inline()` is a compile error here.
//!
//! ```compile_fail
//! use lwt6::buffer::PacketBuf;
//! let mut b = PacketBuf::new(2048);
//! b.load(&[0u8; 60], 0);
//! let view = &mut b.data_mut()[..40];       // a header view
//! b.ensure_headroom(128).unwrap();          // growth while the view is alive: rejected by the borrow checker
//! view[0] = 0x60;
//! ```

/// Why the buffer refused an operation. The pipeline turns these into named drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BufError {
    /// A second growth was requested for the same packet: headroom must be planned once, before writing.
    #[error("second buffer growth for one packet")]
    SecondGrowth,
    /// Not enough headroom for a push (the caller did not plan it).
    #[error("headroom exhausted")]
    NoHeadroom,
    /// An offset or length outside the data.
    #[error("range outside the packet data")]
    OutOfRange,
}

/// Largest alignment [`Aligned`] storage gets: a page.
pub const PAGE: usize = 4096;

/// Bytes kept at a fixed alignment in an ordinary `Vec`: the storage starts `base` bytes into the allocation, at
/// the natural alignment of its size (the next power of two, at most a [`PAGE`]), the way the kernel's slab
/// places `kmalloc` objects and NIC drivers place rx buffers on (half) pages. So storage of at most a page never
/// straddles a page boundary, and where data sits relative to pages and cache lines depends only on offsets the
/// program chooses, not on what the allocator happened to hand out: a frame that straddles a page costs split
/// loads and stores on every copy (docs/BENCHMARKS.md has what that costs forwarding).
#[derive(Debug, Default)]
pub struct Aligned {
    mem: Vec<u8>,
    base: usize,
}

impl Aligned {
    /// `len` zero bytes at the natural alignment of `len` (capped at a [`PAGE`]).
    pub fn zeroed(len: usize) -> Self {
        Aligned::zeroed_at(len, len.next_power_of_two().clamp(1, PAGE), 0)
    }

    /// `len` zero bytes starting `offset` bytes past an `align` boundary (`align` a power of two).
    pub fn zeroed_at(len: usize, align: usize, offset: usize) -> Self {
        let mut mem = vec![0u8; len + align - 1 + offset];
        let base = (align - mem.as_ptr() as usize % align) % align + offset;
        mem.truncate(base + len);
        Aligned { mem, base }
    }

    /// A copy of `bytes` in the second half of a page when it fits there (else at its natural alignment):
    /// where header templates live. Packet data sits in the first half of its page (rx buffers are page-aligned
    /// and headrooms are well under 2 KiB), so a template and the packet it is copied into are half a page apart
    /// modulo 4 KiB, and the copy's loads never wait on its own stores to the same 4 KiB offset (4K aliasing).
    pub fn copy_half_page(bytes: &[u8]) -> Self {
        if bytes.len() <= PAGE / 2 {
            Aligned::zeroed_at(bytes.len(), PAGE, PAGE / 2).filled(bytes)
        } else {
            Aligned::copy_of(bytes)
        }
    }

    /// A copy of `bytes` at the natural alignment of its length.
    pub fn copy_of(bytes: &[u8]) -> Self {
        Aligned::zeroed(bytes.len()).filled(bytes)
    }

    /// This storage with `bytes` (of its length) copied in.
    fn filled(mut self, bytes: &[u8]) -> Self {
        self.as_mut_slice().copy_from_slice(bytes);
        self
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.mem.len() - self.base
    }

    /// The underlying vector and where the aligned bytes start in it.
    pub fn into_parts(self) -> (Vec<u8>, usize) {
        (self.mem, self.base)
    }

    /// Whether it holds no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.mem[self.base..]
    }

    /// The bytes, mutable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.mem[self.base..]
    }
}

impl Clone for Aligned {
    /// A copy at its own natural alignment (a plain `Vec` clone would not keep it).
    fn clone(&self) -> Self {
        Aligned::copy_of(self)
    }
}

impl PartialEq for Aligned {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Aligned {}

impl std::ops::Deref for Aligned {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// A packet buffer with headroom accounting.
#[derive(Debug)]
pub struct PacketBuf {
    mem: Vec<u8>,
    /// Where the storage starts in `mem` (see [`Aligned`]); `start` and `end` index `mem`, the headroom is
    /// `start - base`.
    base: usize,
    start: usize,
    end: usize,
    grown: bool,
    reallocs: u64,
    /// The rx-sized storage set aside when a packet had to be reallocated: the next [`load`](Self::load) goes
    /// back to it (and frees the grown copy), as a driver refills its ring with an rx-sized buffer, instead of
    /// keeping a buffer that would grow with every reallocating packet.
    spare: Aligned,
}

impl PacketBuf {
    /// Creates an empty buffer with `capacity` bytes of storage at the natural alignment of `capacity` (a page
    /// for the usual 4096: like a driver's rx buffer, never straddling a page boundary).
    pub fn new(capacity: usize) -> Self {
        PacketBuf::from_storage(Aligned::zeroed(capacity))
    }

    /// Creates an empty buffer whose storage starts `offset` bytes past a page boundary: for measuring what
    /// placement costs (`examples/placement.rs`), not for forwarding.
    pub fn at_page_offset(capacity: usize, offset: usize) -> Self {
        PacketBuf::from_storage(Aligned::zeroed_at(capacity, PAGE, offset))
    }

    fn from_storage(Aligned { mem, base }: Aligned) -> Self {
        PacketBuf {
            mem,
            base,
            start: base,
            end: base,
            grown: false,
            reallocs: 0,
            spare: Aligned::default(),
        }
    }

    /// Loads a received frame with `headroom` free bytes in front of it, like a driver filling an rx buffer.
    /// Reuses the storage; it is enlarged only when the frame plus headroom does not fit (not counted as a
    /// packet reallocation: it is the rx buffer pool being sized, once). Resets the per-packet growth flag.
    #[inline(always)]
    pub fn load(&mut self, frame: &[u8], headroom: usize) {
        crate::copy::copy_bytes(self.place(headroom, frame.len()), frame);
    }

    /// Makes the data the `len` bytes starting `headroom` bytes into the storage, with whatever they hold, and
    /// returns them for writing: [`load`](Self::load) without the copy, for a caller that writes every byte
    /// itself (the fast path assembles template and received bytes in place).
    #[inline(always)]
    pub fn place(&mut self, headroom: usize, len: usize) -> &mut [u8] {
        if !self.spare.mem.is_empty() {
            self.restore_spare();
        }
        let start = self.base + headroom;
        self.start = start;
        self.end = start + len;
        self.grown = false;
        if start + len > self.mem.len() {
            // Sized once for the largest frame seen; then placed again in the new storage.
            self.enlarge(headroom + len);
            return self.place(headroom, len);
        }
        &mut self.mem[start..start + len]
    }

    /// Goes back to the rx storage set aside by a reallocating packet (freeing the grown one).
    #[cold]
    fn restore_spare(&mut self) {
        let Aligned { mem, base } = std::mem::take(&mut self.spare);
        (self.mem, self.base) = (mem, base);
    }

    /// Sizes the storage for a larger frame (rare: the rx buffer pool growing once).
    #[cold]
    fn enlarge(&mut self, need: usize) {
        let Aligned { mem, base } = Aligned::zeroed(need.next_power_of_two());
        (self.mem, self.base) = (mem, base);
    }

    /// Free bytes in front of the data.
    #[inline]
    pub fn headroom(&self) -> usize {
        self.start - self.base
    }

    /// Free bytes after the data.
    #[inline]
    pub fn tailroom(&self) -> usize {
        self.mem.len() - self.end
    }

    /// Length of the data.
    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the data is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The data.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.mem[self.start..self.end]
    }

    /// The data, mutable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.mem[self.start..self.end]
    }

    /// Total reallocations performed by [`ensure_headroom`](Self::ensure_headroom) over the buffer's life.
    #[inline]
    pub fn reallocs(&self) -> u64 {
        self.reallocs
    }

    /// Whether the current packet has already been grown once.
    #[inline]
    pub fn grown(&self) -> bool {
        self.grown
    }

    /// Makes sure at least `need` bytes of headroom exist. Returns `Ok(true)` if it had to reallocate (copying the
    /// data into a new allocation with exactly the missing headroom added, rounded up to 64 bytes), `Ok(false)`
    /// if the headroom was already there. A second growth for the same packet is refused.
    pub fn ensure_headroom(&mut self, need: usize) -> Result<bool, BufError> {
        if need <= self.headroom() {
            return Ok(false);
        }
        if self.grown {
            return Err(BufError::SecondGrowth);
        }
        self.grow_front((need - self.headroom()).div_ceil(64) * 64);
        Ok(true)
    }

    /// Reallocates with `delta` more bytes of headroom, copying the data; counted.
    fn grow_front(&mut self, delta: usize) {
        let (start, end) = (self.headroom() + delta, self.end - self.base + delta);
        let mut mem = vec![0u8; self.mem.len() - self.base + delta];
        mem[start..end].copy_from_slice(&self.mem[self.start..self.end]);
        self.replace_mem(mem);
        self.start = start;
        self.end = end;
        self.grown = true;
        self.reallocs += 1;
    }

    /// Makes the headroom at least `need` bytes the way Linux's `skb_cow_head` does, for headroom policies that model
    /// another system: when `need` exceeds the headroom, reallocates (a new allocation, the data copied) with the
    /// headroom grown by the shortfall rounded up to a multiple of `align`. Counted like any growth but, unlike
    /// [`ensure_headroom`](Self::ensure_headroom), allowed more than once per packet: that is the behaviour being
    /// modelled. Returns whether it reallocated.
    pub fn cow_head(&mut self, need: usize, align: usize) -> bool {
        let headroom = self.headroom();
        if need <= headroom {
            return false;
        }
        self.expand_head((need - headroom).div_ceil(align) * align);
        true
    }

    /// Always reallocates, growing the headroom by exactly `nhead` (Linux's `pskb_expand_head(skb, nhead, 0)`, which
    /// its l2encap modes call unconditionally with `nhead = mac_len`). Counted.
    pub fn expand_head(&mut self, nhead: usize) {
        self.grow_front(nhead);
    }

    /// Installs a reallocated storage; the first one replaced since the last load is kept as the rx buffer.
    /// (A grown storage is a plain allocation, placed by the allocator: `base` 0.)
    fn replace_mem(&mut self, mem: Vec<u8>) {
        let old = std::mem::replace(&mut self.mem, mem);
        let base = std::mem::replace(&mut self.base, 0);
        if self.spare.mem.is_empty() {
            self.spare = Aligned { mem: old, base };
        }
    }

    /// Moves the data start `n` bytes back and returns the new front bytes (uninitialised content: overwrite it).
    #[inline(always)]
    pub fn push_front(&mut self, n: usize) -> Result<&mut [u8], BufError> {
        if n > self.headroom() {
            return Err(BufError::NoHeadroom);
        }
        self.start -= n;
        Ok(&mut self.mem[self.start..self.start + n])
    }

    /// Drops `n` bytes from the front of the data.
    #[inline]
    pub fn pull_front(&mut self, n: usize) -> Result<(), BufError> {
        if n > self.len() {
            return Err(BufError::OutOfRange);
        }
        self.start += n;
        Ok(())
    }

    /// Opens an `n`-byte gap at `offset` inside the data by moving the first `offset` bytes `n` bytes towards the
    /// headroom (as Linux moves the IPv6 header forward to insert an extension header). Returns the gap.
    pub fn insert_gap(&mut self, offset: usize, n: usize) -> Result<&mut [u8], BufError> {
        if offset > self.len() {
            return Err(BufError::OutOfRange);
        }
        if n > self.headroom() {
            return Err(BufError::NoHeadroom);
        }
        let s = self.start;
        self.mem.copy_within(s..s + offset, s - n);
        self.start -= n;
        Ok(&mut self.mem[self.start + offset..self.start + offset + n])
    }

    /// Removes `n` bytes at `offset` by moving the first `offset` bytes `n` bytes forward.
    pub fn remove_range(&mut self, offset: usize, n: usize) -> Result<(), BufError> {
        if offset.checked_add(n).is_none_or(|e| e > self.len()) {
            return Err(BufError::OutOfRange);
        }
        let s = self.start;
        self.mem.copy_within(s..s + offset, s + n);
        self.start += n;
        Ok(())
    }

    /// Shortens the data to `len` bytes (no-op if already shorter).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.end = self.start + len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn place_sets_the_data_and_grows_the_storage_when_needed() {
        let mut b = PacketBuf::new(256);
        b.load(&[7u8; 30], 10);
        // Within the storage: the data is the placed bytes, which still hold what was there.
        assert_eq!(b.place(10, 20), &[7u8; 20][..]);
        assert_eq!((b.headroom(), b.len(), b.grown()), (10, 20, false));
        // Beyond it: enlarged (to a power of two), then placed at the same headroom.
        let d = b.place(300, 100);
        assert_eq!(d.len(), 100);
        d.fill(1);
        assert_eq!((b.headroom(), b.len()), (300, 100));
        assert_eq!(b.data(), &[1u8; 100][..]);
        assert!(b.headroom() + b.len() + b.tailroom() >= 400);
    }

    #[test]
    fn aligned_storage_sits_at_the_natural_alignment_of_its_size() {
        // (length, expected alignment): the next power of two, capped at a page.
        for (len, align) in [
            (1, 1),
            (94, 128),
            (128, 128),
            (129, 256),
            (4096, 4096),
            (5000, 4096),
        ] {
            for _ in 0..8 {
                let a = Aligned::zeroed(len);
                assert_eq!(a.len(), len);
                assert_eq!(a.as_ptr() as usize % align, 0, "length {len}");
                // Allocations in between move the allocator's next address around.
                let _noise = vec![0u8; 24 + len % 40];
            }
        }
        // Templates: half a page past a page boundary when they fit there.
        for len in [14, 94, 2048] {
            let t = Aligned::copy_half_page(&vec![7u8; len]);
            assert_eq!(t.as_ptr() as usize % PAGE, PAGE / 2, "length {len}");
            assert_eq!(&*t, &vec![7u8; len][..]);
        }
        assert_eq!(
            Aligned::copy_half_page(&[1; 2049]).as_ptr() as usize % PAGE,
            0
        );
        let c = Aligned::copy_of(&[1, 2, 3]);
        assert_eq!(&*c.clone(), &[1, 2, 3]);
        assert_eq!(c.clone().as_ptr() as usize % 4, 0);
    }

    #[test]
    fn rx_storage_is_page_aligned_so_a_frame_never_straddles_a_page() {
        let mut keep = Vec::new();
        for k in 0..16 {
            let mut b = PacketBuf::new(4096);
            b.load(&[0x60; 78], 128);
            let first = b.data().as_ptr() as usize;
            assert_eq!((first - 128) % 4096, 0);
            assert_eq!(first / 4096, (first + 77) / 4096);
            // The storage goes back to the aligned rx buffer after a reallocating packet.
            assert!(b.cow_head(200 + k, 64));
            b.load(&[0x60; 78], 128);
            assert_eq!((b.data().as_ptr() as usize - 128) % 4096, 0);
            assert_eq!(b.headroom(), 128);
            assert_eq!(b.tailroom(), 4096 - 128 - 78);
            keep.push(b);
        }
    }

    #[test]
    fn load_push_pull() {
        let mut b = PacketBuf::new(256);
        b.load(&[1, 2, 3, 4], 100);
        assert_eq!(b.headroom(), 100);
        assert_eq!(b.data(), &[1, 2, 3, 4]);
        b.push_front(2).unwrap().copy_from_slice(&[9, 8]);
        assert_eq!(b.data(), &[9, 8, 1, 2, 3, 4]);
        b.pull_front(3).unwrap();
        assert_eq!(b.data(), &[2, 3, 4]);
        assert_eq!(b.reallocs(), 0);
    }

    #[test]
    fn growth_is_counted_and_happens_once() {
        let mut b = PacketBuf::new(64);
        b.load(&[7; 10], 8);
        assert_eq!(b.ensure_headroom(8), Ok(false));
        assert_eq!(b.ensure_headroom(20), Ok(true));
        assert!(b.headroom() >= 20);
        assert_eq!(b.headroom(), 8 + 64, "delta rounded up to 64");
        assert_eq!(b.data(), &[7; 10]);
        assert_eq!(b.ensure_headroom(200), Err(BufError::SecondGrowth));
        assert_eq!(b.reallocs(), 1);
        // the next packet may grow again
        b.load(&[1; 4], 0);
        assert_eq!(b.ensure_headroom(1), Ok(true));
        assert_eq!(b.reallocs(), 2);
    }

    #[test]
    fn reallocating_packets_do_not_grow_the_rx_buffer() {
        // Every packet reallocates twice (as pre-fix Linux at its dips); the storage the next packet is loaded
        // into stays the rx-sized one instead of growing by 128 bytes per packet.
        let mut b = PacketBuf::new(256);
        for _ in 0..1000 {
            b.load(&[5; 64], 32);
            assert!(b.cow_head(100, 64));
            assert!(b.cow_head(200, 64));
            assert_eq!(b.data(), &[5; 64]);
        }
        assert_eq!(b.reallocs(), 2000);
        b.load(&[1; 8], 32);
        assert_eq!(b.tailroom(), 256 - 40);
    }

    #[test]
    fn insert_and_remove_gap() {
        let mut b = PacketBuf::new(64);
        b.load(&[1, 2, 3, 4, 5], 10);
        b.insert_gap(2, 3)
            .unwrap()
            .copy_from_slice(&[0xa, 0xb, 0xc]);
        assert_eq!(b.data(), &[1, 2, 0xa, 0xb, 0xc, 3, 4, 5]);
        b.remove_range(2, 3).unwrap();
        assert_eq!(b.data(), &[1, 2, 3, 4, 5]);
        assert_eq!(b.insert_gap(9, 1).err(), Some(BufError::OutOfRange));
        assert_eq!(b.push_front(11).err(), Some(BufError::NoHeadroom));
        assert_eq!(b.remove_range(4, 2).err(), Some(BufError::OutOfRange));
    }
}
