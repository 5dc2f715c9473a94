//! The few system calls a live router's threads wait on, outside the ports: `poll(2)` over descriptors and a
//! `signalfd(2)` for the signals the control thread handles.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Waits until one of `fds` is readable or `timeout_ms` passes (-1: no limit); returns how many are readable
/// (0 on timeout or when a signal interrupted the wait).
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<usize> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of `p.len()` pollfd structures for the call.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::EINTR) {
            Ok(0)
        } else {
            Err(e)
        };
    }
    Ok(r as usize)
}

/// Signals delivered through a descriptor instead of handlers. [`SignalFd::new`] blocks them in the calling
/// thread, which must be the main thread before any other is started (threads inherit the mask), so that no
/// thread is ever interrupted by them and the descriptor alone receives them.
#[derive(Debug)]
pub struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Blocks `signals` and opens a non-blocking descriptor that receives them.
    pub fn new(signals: &[libc::c_int]) -> io::Result<SignalFd> {
        // SAFETY: the set is initialised by sigemptyset before use; the calls only read and write it.
        let raw = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor nothing else owns.
        Ok(SignalFd {
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
        })
    }

    /// The next pending signal, if any (never blocks).
    pub fn next(&self) -> Option<libc::c_int> {
        // SAFETY: an all-zero signalfd_siginfo is valid; read writes at most its size into it.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size_of::<libc::signalfd_siginfo>(),
            )
        };
        (n == size_of::<libc::signalfd_siginfo>() as isize).then_some(info.ssi_signo as libc::c_int)
    }

    /// The descriptor (readable when a signal is pending).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// The current `CLOCK_REALTIME` in nanoseconds (what IOAM timestamps carry).
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Whether the process runs with effective user id 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Moves the calling thread into the network namespace `ns` refers to (a `/run/netns/NAME` file, say).
pub fn enter_netns(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: setns only reads the descriptor; it changes this thread's network namespace alone.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends signal `sig` to process `pid`.
pub fn kill(pid: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill has no memory effects in this process.
    if unsafe { libc::kill(pid as libc::pid_t, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
