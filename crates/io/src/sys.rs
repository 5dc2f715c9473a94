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
    // SAFETY: poll(2) reads and writes `nfds` pollfd structures at `fds`: `p` is a live, exclusively borrowed Vec of
    // exactly `p.len()` initialised `pollfd`s (repr(C), the kernel's layout), not touched again until the call
    // returns. The descriptors themselves need not be valid: poll reports a bad one in `revents` (POLLNVAL).
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

/// poll(2) over `fds`, each with the events the caller set; their `revents` are filled in. Waits at most
/// `timeout_ms` (-1: no limit); returns how many descriptors have events (0 on timeout or when a signal
/// interrupted the wait).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: poll(2) reads and writes `nfds` pollfd structures at `fds`: the slice is exclusively borrowed for
    // the call and holds exactly `fds.len()` initialised `pollfd`s (repr(C), the kernel's layout). A bad
    // descriptor is reported in its `revents` (POLLNVAL), not undefined behaviour.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
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

/// Raises the soft limit of open descriptors (RLIMIT_NOFILE) to `want`, or to the hard limit when that is lower
/// (never lowers it); returns the soft limit in force afterwards.
pub fn raise_nofile(want: u64) -> io::Result<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes one rlimit structure at the pointer given: `r` is a live, exclusively borrowed
    // local of that type.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let target = want.min(r.rlim_max);
    if target <= r.rlim_cur {
        return Ok(r.rlim_cur);
    }
    let new = libc::rlimit {
        rlim_cur: target,
        rlim_max: r.rlim_max,
    };
    // SAFETY: setrlimit(2) reads one rlimit structure at the pointer given: `new` is a live local of that type.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(target)
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
        // SAFETY: `sigset_t` is a plain bit array (no pointers, no invariants): all zeroes is a valid value, and
        // sigemptyset below makes it the empty set whatever its layout.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live, exclusively borrowed sigset_t, the only memory sigemptyset writes.
        unsafe { libc::sigemptyset(&mut set) };
        for &s in signals {
            // SAFETY: as for sigemptyset; an out-of-range signal number is refused with EINVAL, never written.
            unsafe { libc::sigaddset(&mut set, s) };
        }
        // SAFETY: pthread_sigmask only reads `set` (a live sigset_t) and writes no old mask (null is allowed).
        // Blocking signals has no memory effect; the caller's contract (no threads yet) is about their delivery.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if r != 0 {
            // pthread_sigmask returns its error number instead of setting errno.
            return Err(io::Error::from_raw_os_error(r));
        }
        // SAFETY: signalfd with fd -1 only reads `set` (a live sigset_t) and creates a new descriptor.
        let raw = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor signalfd just created for us (checked non-negative): open, and owned by
        // nothing else, so the OwnedFd is its only owner and closes it once.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(SignalFd { fd })
    }

    /// The next pending signal, if any (never blocks).
    pub fn next(&self) -> Option<libc::c_int> {
        // SAFETY: `signalfd_siginfo` is a repr(C) struct of integers and padding: all zeroes is a valid value.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        // SAFETY: read(2) writes at most `count` bytes at `buf`: `info` is a live, exclusively borrowed
        // signalfd_siginfo and `count` is its size. A signalfd only ever writes whole signalfd_siginfo records.
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

/// The current `CLOCK_MONOTONIC` in microseconds (what systemd's `MONOTONIC_USEC=` carries).
pub fn monotonic_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) writes one timespec at the pointer, which points to a live local of that type;
    // CLOCK_MONOTONIC always exists on Linux.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// Whether the process runs with effective user id 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no argument, touches no memory of ours and always succeeds.
    unsafe { libc::geteuid() == 0 }
}

/// Moves the calling thread into the network namespace `ns` refers to (a `/run/netns/NAME` file, say).
pub fn enter_netns(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: setns(2) takes two integers and touches no memory of ours; `ns` is borrowed, so its descriptor stays
    // open during the call (a wrong kind of file is refused with EINVAL). It moves this thread alone.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends signal `sig` to process `pid`.
pub fn kill(pid: u32, sig: libc::c_int) -> io::Result<()> {
    // 0 and values above i32::MAX (negative once cast) would signal a process group or every process we may signal.
    let pid = libc::pid_t::try_from(pid)
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("pid {pid}")))?;
    // SAFETY: kill(2) takes two integers and touches no memory of ours; the pid is a single process (checked
    // positive above), and an unknown pid or signal number is an error, not undefined behaviour.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The credentials of the process at the other end of a connected Unix socket, as the kernel recorded them when
/// it connected (`SO_PEERCRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    /// Its process id (0 when it is not visible from this pid namespace).
    pub pid: u32,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
}

/// Reads the peer credentials (`SO_PEERCRED`) of the connected Unix socket `sock`.
pub fn peer_cred(sock: &impl AsRawFd) -> io::Result<PeerCred> {
    let mut c = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `len` bytes at the pointer: `c` is a live, exclusively borrowed `ucred`
    // (repr(C), the kernel's layout) of exactly `len` bytes, and `len` a live socklen_t it updates. `sock` is
    // borrowed, so its descriptor stays open during the call; a descriptor of another kind is an error.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut c as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred {
        pid: c.pid.max(0) as u32,
        uid: c.uid,
        gid: c.gid,
    })
}

/// The real user id of the process.
pub fn uid() -> u32 {
    // SAFETY: getuid(2) takes no argument, touches no memory of ours and always succeeds.
    unsafe { libc::getuid() }
}

/// The real group id of the process (its user's primary group, unless changed).
pub fn gid() -> u32 {
    // SAFETY: getgid(2) takes no argument, touches no memory of ours and always succeeds.
    unsafe { libc::getgid() }
}

/// Sets the process's file mode creation mask; returns the previous one. The mask is the whole process's.
pub fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask(2) takes an integer, touches no memory of ours and always succeeds.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// The group id of the group named `name` (the system's group database, NSS included); `None` when there is
/// no such group.
pub fn group_id(name: &str) -> io::Result<Option<u32>> {
    let cname = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a group name"))?;
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `group` is plain data (integers and pointers, for which null is valid): all zeroes is a valid
        // value, which getgrnam_r overwrites.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: getgrnam_r reads the NUL-terminated `cname` and writes `grp`, at most `buf.len()` bytes at
        // `buf` (the strings `grp` then points to) and `found`: all live and exclusively borrowed for the call.
        // Only `gr_gid` is read afterwards, a plain integer; the pointers into `buf` are not kept.
        let r = unsafe {
            libc::getgrnam_r(
                cname.as_ptr(),
                &mut grp,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if r == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        return Ok((!found.is_null()).then_some(grp.gr_gid));
    }
}
