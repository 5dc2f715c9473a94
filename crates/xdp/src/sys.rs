//! Two `bpf(2)` uses aya has no call for: waiting until every BPF program that may be running has finished, and
//! `BPF_PROG_TEST_RUN` on a descriptor of its own (from another thread than the one that owns the [`Tier`]).
//!
//! [`Tier`]: crate::Tier
//!
//! The kernel waits for running programs (`synchronize_rcu`) before it returns from an update of a map-in-map
//! element, so that userspace knows no program still uses the inner map it replaced. The tier keeps a one-slot
//! `BPF_MAP_TYPE_ARRAY_OF_MAPS` that no program reads and updates it when it must know that no packet still holds
//! a plan slot it is about to reuse.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `BPF_MAP_CREATE`.
const MAP_CREATE: libc::c_long = 0;
/// `BPF_MAP_UPDATE_ELEM`.
const MAP_UPDATE_ELEM: libc::c_long = 2;
/// `BPF_MAP_DELETE_ELEM`.
const MAP_DELETE_ELEM: libc::c_long = 3;
/// `BPF_PROG_TEST_RUN`.
const PROG_TEST_RUN: libc::c_long = 10;
/// `BPF_MAP_TYPE_ARRAY`.
const ARRAY: u32 = 2;
/// `BPF_MAP_TYPE_ARRAY_OF_MAPS`.
const ARRAY_OF_MAPS: u32 = 12;

/// `union bpf_attr`, zeroed, large enough for the two commands used.
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Attr([0; 128])
    }
    fn u32(mut self, off: usize, v: u32) -> Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(mut self, off: usize, v: u64) -> Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn call(mut self, cmd: libc::c_long) -> io::Result<i64> {
        self.call_mut(cmd)
    }
    fn call_mut(&mut self, cmd: libc::c_long) -> io::Result<i64> {
        // SAFETY: the attribute block is a valid, writable buffer of its size; the pointers stored in it point to
        // memory that outlives the call.
        let r =
            unsafe { libc::syscall(libc::SYS_bpf, cmd, self.0.as_mut_ptr(), self.0.len() as u32) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
    fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.0[off..off + 4].try_into().expect("4 bytes"))
    }
}

/// Creates a one-entry array of `u32` (key 4, value 4) or, with `inner`, a one-slot array of such maps.
fn create(kind: u32, inner: Option<&OwnedFd>) -> io::Result<OwnedFd> {
    // map_type @0, key_size @4, value_size @8, max_entries @12, map_flags @16, inner_map_fd @20
    let fd = Attr::new()
        .u32(0, kind)
        .u32(4, 4)
        .u32(8, 4)
        .u32(12, 1)
        .u32(20, inner.map_or(0, |f| f.as_raw_fd() as u32))
        .call(MAP_CREATE)?;
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The maps behind [`Barrier::wait`].
#[derive(Debug)]
pub struct Barrier {
    outer: OwnedFd,
    inner: OwnedFd,
}

impl Barrier {
    /// Creates the two maps.
    pub fn new() -> io::Result<Barrier> {
        let inner = create(ARRAY, None)?;
        let outer = create(ARRAY_OF_MAPS, Some(&inner))?;
        Ok(Barrier { outer, inner })
    }

    /// Returns once every BPF program that was running when it was called has finished.
    pub fn wait(&self) -> io::Result<()> {
        let key = 0u32;
        let value = self.inner.as_raw_fd() as u32;
        // map_fd @0, key @8, value @16, flags @24 (BPF_ANY)
        Attr::new()
            .u32(0, self.outer.as_raw_fd() as u32)
            .u64(8, &key as *const u32 as u64)
            .u64(16, &value as *const u32 as u64)
            .call(MAP_UPDATE_ELEM)
            .map(drop)
    }
}

/// Deletes element `key` (a `u32`) of map `map` (aya's `DevMap` has no call for it).
pub fn map_delete(map: std::os::fd::BorrowedFd<'_>, key: u32) -> io::Result<()> {
    // map_fd @0, key @8
    Attr::new()
        .u32(0, map.as_raw_fd() as u32)
        .u64(8, &key as *const u32 as u64)
        .call(MAP_DELETE_ELEM)
        .map(drop)
}

/// Runs program `prog` `repeat` times on `data` (`BPF_PROG_TEST_RUN`); returns the action, the frame as the last
/// run left it (in `out`, truncated to its length) and the mean time of one run in nanoseconds. (The runs share
/// one buffer, not reset between them: a program that changes the frame sees its own output from the second run
/// on, so `repeat` above 1 does not time it.)
pub fn test_run(
    prog: &OwnedFd,
    data: &[u8],
    out: &mut Vec<u8>,
    repeat: u32,
) -> io::Result<(u32, u32)> {
    out.clear();
    out.resize(data.len() + 512, 0);
    // prog_fd @0, retval @4, data_size_in @8, data_size_out @12, data_in @16, data_out @24, repeat @32,
    // duration @36
    let mut a = Attr::new()
        .u32(0, prog.as_raw_fd() as u32)
        .u32(8, data.len() as u32)
        .u32(12, out.len() as u32)
        .u64(16, data.as_ptr() as u64)
        .u64(24, out.as_mut_ptr() as u64)
        .u32(32, repeat);
    a.call_mut(PROG_TEST_RUN)?;
    out.truncate(a.get_u32(12) as usize);
    Ok((a.get_u32(4), a.get_u32(36)))
}
