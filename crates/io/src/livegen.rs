//! An in-kernel traffic generator: the XDP live-frames mode of `BPF_PROG_TEST_RUN` (Linux 5.18, the mechanism of
//! xdp-tools' `xdp-trafficgen`) runs a small XDP program of lwt6's own ([`bpf::pacer_program`]) over a template
//! frame again and again inside one system call, and transmits every frame the program redirects. No socket
//! buffer, no copy from user space, no system call per frame or batch: on a veth the frame goes straight into the
//! peer's XDP receive ring (`ndo_xdp_xmit`), which needs the peer to have a NAPI instance (an XDP program, or
//! GRO, on the peer).
//!
//! Pacing is done by the program itself, per CPU: a frame goes when it is due, otherwise the run is wasted
//! (`XDP_DROP`, a few tens of nanoseconds), so the offered rate is smooth to within about that, without bursts a
//! user-space pacer checking the clock per system call would make. One sender thread per CPU in `cpus`, each
//! pinned to its CPU, each with its own slot of the program's map (no counter shared between CPUs).
//!
//! Each sender thread makes one long `BPF_PROG_TEST_RUN` call (a call sets up a page pool and can wait for an RCU
//! grace period when it ends, milliseconds on a busy machine); at the end of the duration a signal (`SIGUSR1`,
//! with a handler that does nothing, installed by [`LiveGen::run`]) interrupts it. The rate is measured between
//! the first and the last frame sent, by the program's own clock.
//!
//! On a veth, `ndo_xdp_xmit` puts the frame on the peer's receive queue numbered by the sending CPU (modulo the
//! peer's queue count), not by a hash of the frame: a sender on two CPUs fills two receive queues.
//!
//! [`VerdictProgram`] attaches a one-instruction XDP program (`XDP_PASS` or `XDP_DROP`) to an interface: `Pass`
//! gives a veth that NAPI instance and changes nothing else, `Drop` makes it a sink.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::afxdp::bpf;

/// Runs between two flushes of the redirect queues (the kernel's default is 64; at most 256).
const BATCH: u32 = 64;
/// Slots of the pacer map: CPUs 0..MAX_CPUS can send.
const MAX_CPUS: u32 = 256;

/// Why the generator cannot run.
#[derive(Debug, thiserror::Error)]
pub enum LiveGenError {
    /// No interface of that name in this network namespace.
    #[error("no interface named {0:?}")]
    NoInterface(String),
    /// A `bpf()` step failed (not root, or the kernel lacks BPF or live frames).
    #[error("{step}: {source}")]
    Bpf {
        /// The step.
        step: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
    /// The options cannot work.
    #[error("{0}")]
    Options(String),
}

fn bpf_err(step: &'static str) -> impl FnOnce(io::Error) -> LiveGenError {
    move |source| LiveGenError::Bpf { step, source }
}

fn ifindex(ifname: &str) -> Result<u32, LiveGenError> {
    let c = CString::new(ifname).map_err(|_| LiveGenError::NoInterface(ifname.into()))?;
    // SAFETY: if_nametoindex(3) reads the NUL-terminated string at its argument: `c` is a live CString, and the
    // function keeps no pointer to it.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err(LiveGenError::NoInterface(ifname.into())),
        i => Ok(i),
    }
}

/// What one run sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveReport {
    /// Frames redirected to the interface, all CPUs (a frame the interface then refuses, its peer's ring being
    /// full, is counted here: the loss is the receiver's).
    pub sent: u64,
    /// Frames sent per CPU of the run, in the order of `cpus`.
    pub per_cpu: Vec<u64>,
    /// Time from the first frame sent to the last, over all CPUs.
    pub elapsed: Duration,
}

impl LiveReport {
    /// Frames per second between the first and the last frame.
    pub fn rate(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 { self.sent as f64 / s } else { 0.0 }
    }
}

/// The generator: the template, the pacer map and the program (redirecting to one interface).
#[derive(Debug)]
pub struct LiveGen {
    frame: Vec<u8>,
    flows: u32,
    map: bpf::Map,
    prog: OwnedFd,
}

impl LiveGen {
    /// Loads the program sending `frame` out of `ifname` (of the caller's network namespace), cycling the low 16
    /// bits of its IPv6 source address over `flows` values (1: the frame as it is).
    pub fn new(ifname: &str, frame: &[u8], flows: u32) -> Result<LiveGen, LiveGenError> {
        let ifi = ifindex(ifname)?;
        if frame.len() < 14 || frame.len() > 3000 {
            return Err(LiveGenError::Options(format!(
                "the frame has {} bytes (14 to 3000 for a live-frames run)",
                frame.len()
            )));
        }
        if flows > 1 && !(frame.len() >= 54 && frame[12..14] == [0x86, 0xdd]) {
            return Err(LiveGenError::Options(
                "several flows need an IPv6 frame (its source address is varied)".into(),
            ));
        }
        let map = bpf::create_array(bpf::PACER_SLOT as u32, MAX_CPUS, "lwt6_pacer")
            .map_err(bpf_err("creating the pacer map"))?;
        let prog = bpf::load_pacer_program(&map, ifi, frame, "lwt6_gen")
            .map_err(bpf_err("loading the generator program"))?;
        Ok(LiveGen {
            frame: frame.to_vec(),
            flows,
            map,
            prog,
        })
    }

    /// Sends for `duration` from one thread per CPU of `cpus`, `rate` frames per second in all (split evenly;
    /// 0: as fast as each CPU can).
    pub fn run(
        &self,
        cpus: &[usize],
        rate: u64,
        duration: Duration,
    ) -> Result<LiveReport, LiveGenError> {
        if cpus.is_empty() || cpus.iter().any(|&c| c >= MAX_CPUS as usize) {
            return Err(LiveGenError::Options(format!(
                "sender CPUs must be 1 to {MAX_CPUS} CPU numbers below {MAX_CPUS}"
            )));
        }
        // 0 (no rate): every run sends.
        let interval = (1_000_000_000u64 * cpus.len() as u64)
            .checked_div(rate)
            .unwrap_or(0);
        let base = if self.frame.len() >= 38 {
            u16::from_be_bytes([self.frame[36], self.frame[37]]) as u64
        } else {
            0
        };
        for &c in cpus {
            let mut slot = [0u8; bpf::PACER_SLOT];
            slot[bpf::PACER_INTERVAL..][..8].copy_from_slice(&interval.to_ne_bytes());
            slot[bpf::PACER_FLOWS..][..8].copy_from_slice(&(self.flows as u64).to_ne_bytes());
            slot[bpf::PACER_BASE..][..8].copy_from_slice(&base.to_ne_bytes());
            bpf::map_set(&self.map, c as u32, &slot).map_err(bpf_err("setting the pacer"))?;
        }
        install_stop_handler()?;
        let stop = AtomicBool::new(false);
        let done: Vec<AtomicBool> = cpus.iter().map(|_| AtomicBool::new(false)).collect();
        let tids: Mutex<Vec<Option<libc::pthread_t>>> = Mutex::new(vec![None; cpus.len()]);
        let results: Vec<io::Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = cpus
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let (stop, done, tids) = (&stop, &done[i], &tids);
                    s.spawn(move || -> io::Result<()> {
                        if let Ok(mut t) = tids.lock() {
                            // SAFETY: pthread_self(3) takes no argument, touches no memory of ours and always
                            // succeeds.
                            t[i] = Some(unsafe { libc::pthread_self() });
                        }
                        let r = pin_to(c).and_then(|()| {
                            while !stop.load(Ordering::Relaxed) {
                                match bpf::test_run_live(&self.prog, &self.frame, u32::MAX, BATCH) {
                                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                                    r => r?,
                                }
                            }
                            Ok(())
                        });
                        done.store(true, Ordering::Release);
                        r
                    })
                })
                .collect();
            std::thread::sleep(duration);
            stop.store(true, Ordering::Relaxed);
            // A signal that arrives between two calls is lost: send until every thread has seen the flag.
            while !done.iter().all(|d| d.load(Ordering::Acquire)) {
                if let Ok(t) = tids.lock() {
                    for (i, tid) in t.iter().enumerate() {
                        if let (Some(tid), false) = (tid, done[i].load(Ordering::Acquire)) {
                            // SAFETY: pthread_kill(3) needs a thread ID that is still valid: one of a thread not
                            // yet joined or detached (even if it has returned). This one's `ScopedJoinHandle` is
                            // in `hs`, which is joined only after this loop, so the ID stays valid; `SIGUSR1` has
                            // the do-nothing handler `install_stop_handler` put in place before any sender
                            // started, so delivering it cannot kill the process.
                            unsafe { libc::pthread_kill(*tid, libc::SIGUSR1) };
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(io::Error::other("sender thread panicked")))
                })
                .collect()
        });
        for r in results {
            r.map_err(bpf_err(
                "BPF_PROG_TEST_RUN in live-frames mode (Linux 5.18 or later)",
            ))?;
        }
        let mut per_cpu = Vec::new();
        let (mut first, mut last) = (u64::MAX, 0u64);
        for &c in cpus {
            let mut slot = [0u8; bpf::PACER_SLOT];
            bpf::map_get(&self.map, c as u32, &mut slot).map_err(bpf_err("reading the pacer"))?;
            let field =
                |off: usize| u64::from_ne_bytes(slot[off..][..8].try_into().expect("8 bytes"));
            let sent = field(bpf::PACER_SENT);
            if sent > 0 {
                first = first.min(field(bpf::PACER_FIRST));
                last = last.max(field(bpf::PACER_LAST));
            }
            per_cpu.push(sent);
        }
        Ok(LiveReport {
            sent: per_cpu.iter().sum(),
            per_cpu,
            elapsed: Duration::from_nanos(last.saturating_sub(first)),
        })
    }

    /// The program's descriptor (its id shows in `bpftool prog`).
    pub fn prog_fd(&self) -> i32 {
        self.prog.as_raw_fd()
    }
}

/// Does nothing: its only use is to interrupt a sender's system call.
extern "C" fn on_stop(_: libc::c_int) {}

/// Installs [`on_stop`] for `SIGUSR1`, without `SA_RESTART` (the interrupted call returns `EINTR`).
fn install_stop_handler() -> Result<(), LiveGenError> {
    // SAFETY: `sigaction` is a repr(C) struct of integers, a bit-array mask and a handler stored as an integer:
    // all zeroes is a valid value (SIG_DFL, no flags, empty mask).
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    // Without SA_SIGINFO the kernel calls it as `fn(c_int)`, which is `on_stop`'s signature.
    sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: sigemptyset only writes `sa.sa_mask`, a live, exclusively borrowed sigset_t.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: sigaction(2) reads the new action from `sa` (live, initialised) and writes no old action (null is
    // allowed). The handler it installs does nothing, which is async-signal-safe whatever it interrupts.
    let r = unsafe { libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()) };
    if r != 0 {
        return Err(LiveGenError::Options(format!(
            "sigaction(SIGUSR1): {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Pins the calling thread to CPU `cpu`.
fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: `cpu_set_t` is a bit array: all zeroes is a valid value, the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit of `set`, a live, exclusively borrowed cpu_set_t, indexing its array with
    // bounds checks (a CPU beyond the set panics; ours are below MAX_CPUS = 256, well inside its 1024 bits).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: sched_setaffinity(2) reads `cpusetsize` bytes at `mask`: `set` is a live cpu_set_t of exactly that
    // size. pid 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What a [`VerdictProgram`] does with every frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `XDP_PASS`: on to the kernel's stack, as without a program (but a veth now has its NAPI instance).
    Pass,
    /// `XDP_DROP`: a sink.
    Drop,
}

/// A one-instruction XDP program attached (native mode) to an interface while the value lives.
#[derive(Debug)]
pub struct VerdictProgram {
    _prog: OwnedFd,
    _link: OwnedFd,
}

impl VerdictProgram {
    /// Attaches `verdict` to `ifname` in native (driver) mode.
    pub fn attach(ifname: &str, verdict: Verdict) -> Result<VerdictProgram, LiveGenError> {
        let ifi = ifindex(ifname)?;
        let insns = match verdict {
            Verdict::Pass => bpf::pass_program(),
            Verdict::Drop => bpf::drop_program(),
        };
        let prog = bpf::load_verdict_program(&insns, "lwt6_verdict")
            .map_err(bpf_err("loading the XDP program"))?;
        let link = bpf::link_create(&prog, ifi, bpf::XDP_FLAGS_DRV_MODE)
            .map_err(bpf_err("attaching the XDP program"))?;
        Ok(VerdictProgram {
            _prog: prog,
            _link: link,
        })
    }
}
