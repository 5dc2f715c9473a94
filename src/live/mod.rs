//! `lwt6 run`: the live router. Attaches to the interfaces the configuration names, runs one thread per worker
//! ([`engine`]), and serves the control socket ([`control`]) and signals on the main thread: SIGHUP re-reads the
//! configuration file (published only when it is valid), SIGINT / SIGTERM stop the workers, which drain their
//! ports, and the final counters are printed. See docs/live.md.

pub mod control;
pub mod engine;
pub mod generator;
pub mod links;
pub mod metrics;

use crate::cli::{Failure, fail, load_config};
use crate::io::afpacket::{AfPacket, AfPacketOptions, Fanout};
use crate::io::netdev::NetDev;
use crate::io::sys::{self, SignalFd};
use crate::snapshot::{Snapshot, SnapshotHandle};
use clap::{Args, ValueEnum};
use control::Control;
use engine::{WorkerCtx, WorkerReport};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Where `lwt6 run` listens and `lwt6 ctl` connects unless told otherwise.
pub const DEFAULT_CONTROL: &str = "/run/lwt6/lwt6.sock";

/// The packet I/O back end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Io {
    /// AF_XDP when the system and this build support it, AF_PACKET otherwise (the reason is said once).
    Auto,
    /// AF_XDP sockets fed by lwt6's own XDP program.
    Xdp,
    /// AF_PACKET sockets (recvmmsg / sendmmsg batches).
    Packet,
}

/// How several workers share an interface's frames (AF_PACKET fanout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FanoutArg {
    /// By flow hash: a flow stays with one worker, never reordered.
    Hash,
    /// By receive queue: one worker per rx queue (multi-queue veth or NIC).
    Queue,
}

/// `lwt6 run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Router configuration (iproute2 syntax; docs/config.md). Its `link add` lines name the interfaces to
    /// attach to.
    #[arg(short = 'c', long = "config")]
    pub config: PathBuf,
    /// Packet I/O back end.
    #[arg(long = "io", value_enum, default_value_t = Io::Auto)]
    pub io: Io,
    /// Worker threads (each with its own socket on every interface).
    #[arg(long = "workers", default_value_t = 1, value_parser = crate::cli::within::<usize>(1, 64))]
    pub workers: usize,
    /// How several workers share an interface.
    #[arg(long = "fanout", value_enum, default_value_t = FanoutArg::Hash)]
    pub fanout: FanoutArg,
    /// Control socket (`lwt6 ctl`).
    #[arg(long = "control", default_value = DEFAULT_CONTROL)]
    pub control: PathBuf,
    /// Serve Prometheus metrics over HTTP on ADDR (e.g. 127.0.0.1:9106).
    #[arg(long = "metrics", value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Final counters as JSON.
    #[arg(short = 'j', long = "json")]
    pub json: bool,
}

/// `lwt6 ctl`.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The router's control socket.
    #[arg(long = "control", default_value = DEFAULT_CONTROL)]
    pub control: PathBuf,
    /// One request: a configuration line (`route add ...`, `neigh add ...`, `ioam ...`, `sysctl ...`) or
    /// `show routes|stats|neigh [-j]`; the words are joined by spaces.
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true, trailing_var_arg = true)]
    pub line: Vec<String>,
}

/// `lwt6 ctl`: one request, its output on stdout.
pub fn ctl(a: CtlArgs) -> Result<(), Failure> {
    let body = control::client(&a.control, &a.line.join(" "))?;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(body.as_bytes());
    Ok(())
}

/// Opens one AF_PACKET port per (worker, interface).
fn open_af_packet(
    devs: &[NetDev],
    workers: usize,
    fanout: FanoutArg,
) -> Result<Vec<Vec<AfPacket>>, Failure> {
    let pid = std::process::id() as u16;
    let mut all = Vec::new();
    for w in 0..workers {
        let mut ports = Vec::new();
        for d in devs {
            let opts = AfPacketOptions {
                fanout: (workers > 1).then(|| {
                    // Fanout group ids are per namespace: one per interface, distinct from other routers'.
                    let id = pid ^ (d.ifindex as u16).wrapping_mul(0x9e37);
                    let mode = match fanout {
                        FanoutArg::Hash => Fanout::Hash,
                        FanoutArg::Queue => Fanout::Queue,
                    };
                    (id, mode)
                }),
                ..Default::default()
            };
            let p = AfPacket::open(d.ifindex, &opts)
                .map_err(|e| fail(format!("{} (worker {w}): AF_PACKET socket: {e}", d.name)))?;
            ports.push(p);
        }
        all.push(ports);
    }
    Ok(all)
}

/// Why AF_XDP cannot be used; `None` when it can. (The AF_XDP back end is not part of this build yet.)
fn xdp_unavailable() -> Option<String> {
    Some("this build has no AF_XDP back end".into())
}

/// A reload cannot read an HMAC secret from standard input (it was read, and consumed, at the start): a file that
/// wants one (`sr hmac set KEYID ALGO` without `secret`) is not reloaded.
fn refuse_stdin_secret(path: &std::path::Path) -> Result<(), Failure> {
    use std::io::BufRead;
    let at = |e: std::io::Error| fail(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(at)?;
    for (i, l) in std::io::BufReader::new(file).lines().enumerate() {
        let l = l.map_err(at)?;
        let l = l.split('#').next().unwrap_or("");
        if l.contains("hmac set") && !l.split_whitespace().any(|t| t == "secret") {
            return Err(fail(format!(
                "line {}: the HMAC secret comes from standard input, which a reload cannot read again: restart the router",
                i + 1
            )));
        }
    }
    Ok(())
}

/// `lwt6 run`.
pub fn run(a: RunArgs) -> Result<(), Failure> {
    if !sys::is_root() {
        return Err(fail(
            "lwt6 run must run as root (raw packet sockets need CAP_NET_RAW and CAP_NET_ADMIN)",
        ));
    }
    let mut cfg = load_config(&a.config)?;
    let devs = links::resolve(&mut cfg, &a.config)?;
    let io = match (a.io, xdp_unavailable()) {
        (Io::Packet, _) => "af_packet",
        (Io::Xdp, Some(why)) => return Err(fail(format!("--io xdp: {why}"))),
        (Io::Auto, Some(why)) => {
            eprintln!("lwt6: AF_XDP not used ({why}): using AF_PACKET");
            "af_packet"
        }
        (_, None) => "af_xdp",
    };
    if io == "af_packet" {
        let conflicts = links::kernel_conflicts(&devs);
        if !conflicts.is_empty() {
            let mut m = String::from(
                "the kernel would also forward or answer on the attached interfaces (AF_PACKET sees copies of the frames the kernel receives):",
            );
            for (what, fix) in &conflicts {
                m += &format!("\n  {what}: {fix}");
            }
            m += "\n(docs/live.md: the namespace setup)";
            return Err(fail(m));
        }
    }
    let snap = Snapshot::build(&cfg).map_err(|e| fail(format!("{}: {e}", a.config.display())))?;
    let handle = Arc::new(SnapshotHandle::new(snap));
    let listener = control::listen(&a.control)?;
    // From here on the socket file exists: every exit path removes it.
    let result = serve(&a, cfg, &devs, handle, listener, io);
    let _ = std::fs::remove_file(&a.control);
    result
}

fn serve(
    a: &RunArgs,
    cfg: crate::spec::Config,
    devs: &[NetDev],
    handle: Arc<SnapshotHandle>,
    listener: std::os::unix::net::UnixListener,
    io: &'static str,
) -> Result<(), Failure> {
    // Signals are blocked before any thread starts (threads inherit the mask) and read from a descriptor here.
    let signals = SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
        .map_err(|e| fail(format!("signalfd: {e}")))?;
    let names: Vec<String> = devs.iter().map(|d| d.name.clone()).collect();
    let ports = open_af_packet(devs, a.workers, a.fanout)?;
    let stop = Arc::new(AtomicBool::new(false));
    let reports: Vec<Arc<Mutex<WorkerReport>>> = (0..a.workers)
        .map(|_| Arc::new(Mutex::new(WorkerReport::default())))
        .collect();
    if let Some(addr) = a.metrics {
        let l = std::net::TcpListener::bind(addr)
            .map_err(|e| fail(format!("--metrics {addr}: {e}")))?;
        let (r, n) = (reports.clone(), names.clone());
        std::thread::Builder::new()
            .name("lwt6-metrics".into())
            .spawn(move || metrics::serve(l, r, n))
            .map_err(|e| fail(format!("metrics thread: {e}")))?;
    }
    let mut threads = Vec::new();
    for (i, p) in ports.into_iter().enumerate() {
        let ctx = WorkerCtx {
            ports: p,
            handle: Arc::clone(&handle),
            stop: Arc::clone(&stop),
            report: Arc::clone(&reports[i]),
            close: |p: &mut AfPacket| p.close_out(200) as u64,
        };
        let t = std::thread::Builder::new()
            .name(format!("lwt6-worker-{i}"))
            .spawn(move || engine::run(ctx))
            .map_err(|e| fail(format!("worker thread: {e}")))?;
        threads.push(t);
    }
    eprintln!(
        "lwt6: running on {} ({io}, {} worker{}), control {}",
        names.join(", "),
        a.workers,
        if a.workers == 1 { "" } else { "s" },
        a.control.display()
    );
    let mut control = Control {
        cfg,
        handle,
        reports: reports.clone(),
        io,
        writer: None,
    };
    let fds = [signals.raw_fd(), std::os::fd::AsRawFd::as_raw_fd(&listener)];
    'main: loop {
        let _ = sys::poll_readable(&fds, 500);
        while let Some(sig) = signals.next() {
            if sig == libc::SIGHUP {
                let r = refuse_stdin_secret(&a.config)
                    .and_then(|()| load_config(&a.config))
                    .and_then(|mut c| {
                        links::resolve(&mut c, &a.config)?;
                        control.replace(c).map_err(fail)
                    });
                match r {
                    Ok(()) => eprintln!("lwt6: SIGHUP: {} reloaded", a.config.display()),
                    Err(e) => eprintln!(
                        "lwt6: SIGHUP: {} not reloaded, the running configuration stays: {}",
                        a.config.display(),
                        e.message
                    ),
                }
            } else {
                break 'main;
            }
        }
        while let Ok((conn, _)) = listener.accept() {
            control.serve(conn);
        }
        if threads.iter().any(|t| t.is_finished()) {
            eprintln!("lwt6: a worker thread ended unexpectedly; stopping");
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut panicked = false;
    for t in threads {
        panicked |= t.join().is_err();
    }
    let (total, each) = control::gather(&reports);
    let mut o = std::io::stdout().lock();
    if a.json {
        let mut v = control::report_json(&total, &names);
        v["io"] = serde_json::json!(io);
        v["workers"] = serde_json::json!(
            each.iter()
                .map(|r| control::report_json(r, &names))
                .collect::<Vec<_>>()
        );
        let _ = writeln!(o, "{v}");
    } else {
        let _ = write!(o, "{}", control::report_text(&total, &names));
    }
    if panicked {
        return Err(fail("internal error: a worker thread panicked"));
    }
    if !total.stats.balanced() {
        return Err(fail(format!(
            "internal error: counters do not balance (rx {} != tx {} + dropped {})",
            total.stats.rx,
            total.stats.tx,
            total.stats.dropped()
        )));
    }
    Ok(())
}
