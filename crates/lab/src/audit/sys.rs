//! The few raw system calls the audit needs (with `audit::xdp`, the only `unsafe` in the crate): effective uid,
//! thread id, entering a network namespace, an `AF_PACKET` raw socket bound to an interface, signal handling and
//! `kill`.
//!
//! Every function is a thin, checked wrapper: arguments are owned Rust values, errors come back as
//! [`std::io::Error`] from `errno`.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The effective user id of the process.
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) takes no argument, touches no memory of ours and always succeeds.
    unsafe { libc::geteuid() }
}

/// The kernel thread id of the calling thread (what bpftrace's `tid` reports).
pub fn gettid() -> u32 {
    // SAFETY: gettid(2) takes no argument, touches no memory of ours and always succeeds.
    let tid = unsafe { libc::gettid() };
    u32::try_from(tid).unwrap_or(0)
}

/// Moves the calling thread (only it) into the network namespace open at `ns`.
pub fn setns_net(ns: &OwnedFd) -> io::Result<()> {
    // SAFETY: setns(2) takes two integers and touches no memory of ours; `ns` is borrowed, so its descriptor stays
    // open during the call. CLONE_NEWNET moves this thread alone.
    let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An `AF_PACKET`/`SOCK_RAW` socket bound to one interface of the calling thread's network namespace, with
/// `PACKET_QDISC_BYPASS` (frames go straight to the driver, as the reference blaster sends them).
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// Opens the socket on interface `ifname`.
    pub fn bind(ifname: &str) -> io::Result<PacketSocket> {
        let name =
            CString::new(ifname).map_err(|_| io::Error::other("interface name contains NUL"))?;
        // SAFETY: if_nametoindex(3) reads the NUL-terminated string at its argument: `name` is a live CString, and
        // the function keeps no pointer to it.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        // Protocol 0: the socket receives nothing, it only sends.
        // SAFETY: socket(2) takes three integers and touches no memory of ours.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` was just returned by socket(2) (checked non-negative): open, and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        // SAFETY: setsockopt(2) reads `optlen` bytes at `optval`: `one` is a live c_int of exactly that size, and
        // the kernel keeps no pointer to it.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_QDISC_BYPASS,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `sockaddr_ll` is a repr(C) struct of integers and a byte array: all zeroes is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex =
            i32::try_from(ifindex).map_err(|_| io::Error::other("ifindex out of range"))?;
        // SAFETY: bind(2) reads `addrlen` bytes at `addr`: `sll` is a live, initialised sockaddr_ll of exactly that
        // size, and the kernel keeps no pointer to it.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketSocket { fd })
    }

    /// Sends one complete Ethernet frame.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: send(2) reads `len` bytes at `buf`: `frame` is a live slice of exactly that length, and the
        // kernel copies it before returning.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// Set by the SIGINT/SIGTERM/SIGHUP handler installed by [`install_interrupt_handler`].
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catches SIGINT, SIGTERM and SIGHUP: instead of dying, the process records the signal, and the audit loop
/// notices it ([`interrupted`]), stops and cleans up.
pub fn install_interrupt_handler() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `sigaction` is a repr(C) struct of integers, a bit-array mask and a handler stored as an
        // integer: all zeroes is a valid value (SIG_DFL, no flags, empty mask).
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        // SAFETY: sigemptyset only writes `sa.sa_mask`, a live, exclusively borrowed sigset_t.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        // SAFETY: sigaction(2) reads the new action from `sa` (live, initialised; without SA_SIGINFO the handler
        // is called as `fn(c_int)`, `on_signal`'s signature) and writes no old action (null is allowed). The
        // handler only stores to an atomic, which is async-signal-safe whatever it interrupts.
        let r = unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT/SIGTERM/SIGHUP arrived since [`install_interrupt_handler`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Sends SIGTERM to a process this program started.
pub fn terminate(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
    // SAFETY: kill(2) takes two integers and touches no memory of ours. (`pid` is positive for a child's id, so
    // it names one process; an unknown one is an error, not undefined behaviour.)
    let r = unsafe { libc::kill(pid, libc::SIGTERM) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
