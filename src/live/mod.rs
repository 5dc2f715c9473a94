//! `lwt6 run`: the live router. Attaches to the interfaces the configuration names, runs one thread per worker
//! ([`engine`]), and serves the control socket ([`control`]) and signals on the main thread: SIGHUP re-reads the
//! configuration file (published only when it is valid), SIGINT / SIGTERM stop the workers, which drain their
//! ports, and the final counters are printed. See docs/live.md.

pub mod control;
pub mod engine;
pub mod kroutes;
pub mod links;
pub mod metrics;
pub mod trace;

use crate::cli::{Failure, fail, load_config};
use crate::io::afpacket::{AfPacket, AfPacketOptions, Fanout};
use crate::io::afxdp::{self, XdpAttachment, XdpMode, XskOptions, XskPort};
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

/// How often the control thread looks at what the workers learned and runs the neighbour timers (ms).
const NEIGH_TICK_MS: i32 = 50;

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
    /// Follow the kernel's main routing table (rtnetlink): its routes are added to the configuration's and
    /// changes made with `ip route` take effect at once.
    #[arg(long = "kernel-routes")]
    pub kernel_routes: bool,
}

/// `lwt6 ctl`.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The router's control socket.
    #[arg(long = "control", default_value = DEFAULT_CONTROL)]
    pub control: PathBuf,
    /// Configuration lines from FILE (`-`: standard input), applied in order as one atomic step: all of them, or
    /// none when one fails (the error names the line). Routes only added, removed or replaced change the table in
    /// place.
    #[arg(long = "batch", value_name = "FILE", conflicts_with = "line")]
    pub batch: Option<PathBuf>,
    /// One request: a configuration line (`route add ...`, `neigh add ...`, `ioam ...`, `sysctl ...`),
    /// `show routes|stats|neigh|trace [-j]`, or `trace add N [dev IF] [src PREFIX] [dst PREFIX] [proto P]`,
    /// `trace stop`, `trace clear` (docs/live.md, *Packet tracing*); the words are joined by spaces.
    #[arg(required_unless_present = "batch", num_args = 1.., allow_hyphen_values = true, trailing_var_arg = true)]
    pub line: Vec<String>,
}

/// `lwt6 ctl`: one request, its output on stdout.
pub fn ctl(a: CtlArgs) -> Result<(), Failure> {
    let request = match &a.batch {
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                let mut t = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                    .map(|_| t)
                    .map_err(|e| fail(format!("--batch -: {e}")))?
            } else {
                std::fs::read_to_string(path)
                    .map_err(|e| fail(format!("--batch {}: {e}", path.display())))?
            };
            let mut r = String::from("batch\n");
            r += &text;
            if !r.ends_with('\n') {
                r.push('\n');
            }
            r
        }
        None => a.line.join(" "),
    };
    let body = control::client(&a.control, &request)?;
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

/// The ports of the AF_XDP back end: per worker, its ports and the device id of each; and the XDP programs,
/// one per interface, held for the router's life (dropping the last reference detaches a program).
struct XdpPorts {
    ports: Vec<Vec<XskPort>>,
    port_dev: Vec<Vec<usize>>,
    attachments: Vec<Arc<XdpAttachment>>,
}

/// Opens the AF_XDP back end: lwt6's XDP program on every interface, one socket per receive queue, queue `q`
/// served by worker `q % workers`. Every worker needs a socket on every interface to send from, so an interface
/// needs at least as many queues as there are workers. On any error what was attached is detached (dropped).
fn open_af_xdp(devs: &[NetDev], workers: usize, headroom: usize) -> Result<XdpPorts, String> {
    let mut x = XdpPorts {
        ports: (0..workers).map(|_| Vec::new()).collect(),
        port_dev: vec![Vec::new(); workers],
        attachments: Vec::new(),
    };
    // What the UMEM frame leaves after the kernel's own headroom and a 1500-byte frame (4096-byte frames).
    let opts = XskOptions {
        headroom: headroom.min(4096 - 256 - 1500) as u32,
        ..Default::default()
    };
    for (id, d) in devs.iter().enumerate() {
        let queues = afxdp::rx_queues(&d.name).map_err(|e| e.to_string())?;
        if (queues as usize) < workers {
            return Err(format!(
                "{} has {queues} receive queue{} and AF_XDP needs one per worker ({workers}): use --workers {queues} or an interface with more queues",
                d.name,
                if queues == 1 { "" } else { "s" }
            ));
        }
        let att = XdpAttachment::shared(&d.name, XdpMode::Auto).map_err(|e| e.to_string())?;
        for q in 0..queues {
            let w = q as usize % workers;
            let p = XskPort::open_on(Arc::clone(&att), q, opts).map_err(|e| e.to_string())?;
            x.ports[w].push(p);
            x.port_dev[w].push(id);
        }
        x.attachments.push(att);
    }
    Ok(x)
}

/// The ports a router runs on.
enum Ports {
    Packet(Vec<Vec<AfPacket>>),
    Xdp(XdpPorts),
}

/// At stop: sends what an AF_XDP port still holds, waiting up to 200 ms; returns what the kernel never took.
fn close_xsk(p: &mut XskPort) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    loop {
        let _ = crate::io::port::Port::flush(p);
        let left = p.tx_pending();
        if left == 0 || std::time::Instant::now() >= deadline {
            return left as u64;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
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
    let snap = Snapshot::build(&cfg).map_err(|e| fail(format!("{}: {e}", a.config.display())))?;
    let xdp = match a.io {
        Io::Packet => None,
        Io::Xdp => Some(
            open_af_xdp(&devs, a.workers, snap.rx_headroom)
                .map_err(|why| fail(format!("--io xdp: {why}")))?,
        ),
        Io::Auto => match open_af_xdp(&devs, a.workers, snap.rx_headroom) {
            Ok(x) => Some(x),
            Err(why) => {
                eprintln!("lwt6: AF_XDP not used ({why}): using AF_PACKET");
                None
            }
        },
    };
    let io = if xdp.is_some() { "af_xdp" } else { "af_packet" };
    if xdp.is_none() {
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
    let ports = match xdp {
        Some(x) => Ports::Xdp(x),
        None => Ports::Packet(open_af_packet(&devs, a.workers, a.fanout)?),
    };
    let handle = Arc::new(SnapshotHandle::new(snap));
    let listener = control::listen(&a.control)?;
    // From here on the socket file exists: every exit path removes it.
    let result = serve(&a, cfg, &devs, handle, listener, ports, io);
    let _ = std::fs::remove_file(&a.control);
    result
}

fn serve(
    a: &RunArgs,
    cfg: crate::spec::Config,
    devs: &[NetDev],
    handle: Arc<SnapshotHandle>,
    listener: std::os::unix::net::UnixListener,
    ports: Ports,
    io: &'static str,
) -> Result<(), Failure> {
    // Signals are blocked before any thread starts (threads inherit the mask) and read from a descriptor here.
    let signals = SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
        .map_err(|e| fail(format!("signalfd: {e}")))?;
    let names: Vec<String> = devs.iter().map(|d| d.name.clone()).collect();
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
    let (neigh_tx, neigh_rx) = std::sync::mpsc::channel();
    let outbox = Arc::new(engine::Outbox::default());
    let trace = Arc::new(trace::TraceBoard::default());
    let gate = Arc::new(crate::node::neigh::SolicitGate::default());
    let mut threads = Vec::new();
    let spawn = |i: usize, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(format!("lwt6-worker-{i}"))
            .spawn(f)
            .map_err(|e| fail(format!("worker thread: {e}")))
    };
    // Held until the workers have stopped: the XDP programs stay attached for the router's life.
    let mut _attachments = Vec::new();
    match ports {
        Ports::Packet(ports) => {
            for (i, p) in ports.into_iter().enumerate() {
                let ctx = WorkerCtx {
                    port_dev: (0..p.len()).collect(),
                    ports: p,
                    handle: Arc::clone(&handle),
                    stop: Arc::clone(&stop),
                    report: Arc::clone(&reports[i]),
                    neigh_tx: neigh_tx.clone(),
                    outbox: (i == 0).then(|| Arc::clone(&outbox)),
                    solicit_gate: Arc::clone(&gate),
                    close: |p: &mut AfPacket| p.close_out(200) as u64,
                    index: i,
                    trace: Arc::clone(&trace),
                };
                threads.push(spawn(i, Box::new(move || engine::run(ctx)))?);
            }
        }
        Ports::Xdp(x) => {
            _attachments = x.attachments;
            for (i, (p, d)) in x.ports.into_iter().zip(x.port_dev).enumerate() {
                let ctx = WorkerCtx {
                    ports: p,
                    port_dev: d,
                    handle: Arc::clone(&handle),
                    stop: Arc::clone(&stop),
                    report: Arc::clone(&reports[i]),
                    neigh_tx: neigh_tx.clone(),
                    outbox: (i == 0).then(|| Arc::clone(&outbox)),
                    solicit_gate: Arc::clone(&gate),
                    close: close_xsk,
                    index: i,
                    trace: Arc::clone(&trace),
                };
                threads.push(spawn(i, Box::new(move || engine::run(ctx)))?);
            }
        }
    }
    eprintln!(
        "lwt6: running on {} ({io}, {} worker{}), control {}",
        names.join(", "),
        a.workers,
        if a.workers == 1 { "" } else { "s" },
        a.control.display()
    );
    let mut control = Control {
        outbox,
        trace,
        ..Control::new(cfg, handle, reports.clone(), io)
    };
    let mut monitor = if a.kernel_routes {
        Some(kroutes::start(&mut control)?)
    } else {
        None
    };
    let mut fds = vec![signals.raw_fd(), std::os::fd::AsRawFd::as_raw_fd(&listener)];
    if let Some(m) = &monitor {
        fds.push(m.raw_fd());
    }
    'main: loop {
        let _ = sys::poll_readable(&fds, NEIGH_TICK_MS);
        let now = sys::realtime_ns();
        while let Ok(events) = neigh_rx.try_recv() {
            control.learn(&events, now);
        }
        control.tick(now);
        if let Some(m) = &mut monitor {
            kroutes::follow(m, &mut control);
        }
        while let Some(sig) = signals.next() {
            if sig == libc::SIGHUP {
                let r = crate::config::load_file(&a.config, crate::config::StdinSecret::Refuse)
                    .map_err(|e| fail(e.to_string()))
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
