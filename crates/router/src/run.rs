//! The run loop: attaches to the interfaces the configuration names, runs one thread per worker
//! ([`crate::engine`]), and serves the control socket ([`crate::control`]) and signals on the calling thread:
//! SIGHUP re-reads the configuration file (published only when it is valid), SIGINT / SIGTERM stop the workers,
//! which drain their ports, and the final counters are returned. See docs/live.md.

use crate::control::{self, Control};
use crate::engine::{self, WorkerCtx, WorkerReport};
use crate::show::interfaces::PortInfo;
use crate::xdp_tier::{TierMode, XdpTier};
use crate::{Error, clients, fail, kroutes, links, metrics, neighq, privilege, trace};
use lwt6_dataplane::snapshot::{Snapshot, SnapshotHandle};
use lwt6_io::afpacket::{self, AfPacket, AfPacketOptions};
use lwt6_io::afxdp::{self, XdpAttachment, XdpMode, XskOptions, XskPort};
use lwt6_io::netdev::NetDev;
use lwt6_io::sys::{self, SignalFd};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How often at most systemd's `STATUS=` is refreshed after the table changed (`lwt6 ctl`, kernel routes).
const STATUS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// How often the control thread looks at what the workers learned and runs the neighbour timers (ms).
const NEIGH_TICK_MS: i32 = 50;

/// Where `lwt6 run` listens and `lwt6 ctl` connects unless told otherwise.
pub const DEFAULT_CONTROL: &str = "/run/lwt6/lwt6.sock";

/// The packet I/O back end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// AF_XDP when the system and this build support it, AF_PACKET otherwise (the reason is said once, on
    /// standard error).
    Auto,
    /// AF_XDP sockets fed by lwt6's own XDP program; an error when they cannot be opened.
    Xdp,
    /// AF_PACKET sockets (recvmmsg / sendmmsg batches).
    Packet,
}

/// How several workers share an interface's frames with AF_PACKET (fanout). AF_XDP always serves a receive queue
/// by one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fanout {
    /// By flow hash: a flow stays with one worker, never reordered.
    Hash,
    /// By receive queue: one worker per rx queue (multi-queue veth or NIC).
    Queue,
}

/// What to run: the `lwt6 run` options.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The configuration file (iproute2 syntax; docs/config.md). Its `link add` lines name the interfaces to
    /// attach to; SIGHUP reads it again.
    pub config: PathBuf,
    /// The packet I/O back end.
    pub io: Io,
    /// Worker threads (at least 1; each with its own socket on every interface).
    pub workers: usize,
    /// How several workers share an interface (AF_PACKET).
    pub fanout: Fanout,
    /// Where the control socket is made.
    pub control: PathBuf,
    /// The group whose members may use the control socket (`--control-group`; besides root and the router's
    /// user). `None`: the router's primary group.
    pub control_group: Option<u32>,
    /// Serve OpenMetrics (Prometheus) metrics over HTTP at `/metrics` on this address.
    pub metrics: Option<std::net::SocketAddr>,
    /// Follow the kernel's main routing table (rtnetlink).
    pub kernel_routes: bool,
    /// The XDP tier with AF_XDP (`--xdp-tier`; docs/xdp.md).
    pub xdp_tier: TierMode,
    /// IOAM export targets to start with (`--ioam-export`; more over the control socket).
    pub ioam_export: Vec<String>,
    /// Also export every IOAM trace the workers fill in transit (`--ioam-export-transit`).
    pub ioam_export_transit: bool,
}

/// The final counters of a run, and how the run ended.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Every worker's counters added up.
    pub total: WorkerReport,
    /// Each worker's counters, in worker order.
    pub workers: Vec<WorkerReport>,
    /// The attached interfaces, in the order of the per-interface counters.
    pub links: Vec<String>,
    /// The I/O back end used: `af_xdp` or `af_packet`.
    pub io: &'static str,
    /// Whether a worker thread panicked (its counters are those it last published).
    pub worker_panicked: bool,
    /// The XDP tier's final counters and state (text, JSON) and whether the router's totals balance, when it ran.
    pub xdp: Option<(String, serde_json::Value, bool)>,
    /// Every IOAM exporter's final counters.
    pub ioam_export: Vec<crate::export::ExporterStats>,
}

impl RunReport {
    /// The counters as text, one a line (what `lwt6 run` prints at the end).
    pub fn text(&self) -> String {
        let mut s = control::report_text(&self.total, &self.links);
        if let Some((t, _, _)) = &self.xdp {
            s += t;
        }
        for e in &self.ioam_export {
            s += &format!("  ioam export {}\n", e.text());
        }
        s
    }

    /// The counters as JSON (`lwt6 run -j`): the total, the I/O back end, and each worker's under `workers`.
    pub fn json(&self) -> serde_json::Value {
        let mut v = control::report_json(&self.total, &self.links);
        v["io"] = serde_json::json!(self.io);
        if let Some((_, x, _)) = &self.xdp {
            v["xdp"] = x.clone();
        }
        v["ioam_export"] = serde_json::json!(
            self.ioam_export
                .iter()
                .map(|e| e.json())
                .collect::<Vec<_>>()
        );
        v["workers"] = serde_json::json!(
            self.workers
                .iter()
                .map(|r| control::report_json(r, &self.links))
                .collect::<Vec<_>>()
        );
        v
    }

    /// Whether the run ended well: an error when a worker panicked or the counters do not balance (every frame
    /// received is sent, dropped for a named reason, consumed or pending), both internal errors.
    pub fn check(&self) -> Result<(), Error> {
        if self.worker_panicked {
            return Err(fail("internal error: a worker thread panicked"));
        }
        let st = &self.total.stats;
        if !st.balanced() {
            return Err(fail(format!(
                "internal error: counters do not balance (rx {} != tx {} + dropped {})",
                st.rx,
                st.tx,
                st.dropped()
            )));
        }
        if let Some((_, x, false)) = &self.xdp {
            return Err(fail(format!(
                "internal error: the XDP tier's and the workers' counters do not balance ({})",
                x["total"]
            )));
        }
        Ok(())
    }
}

/// Opens one AF_PACKET port per (worker, interface).
fn open_af_packet(
    devs: &[NetDev],
    workers: usize,
    fanout: Fanout,
) -> Result<Vec<Vec<AfPacket>>, Error> {
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
                        Fanout::Hash => afpacket::Fanout::Hash,
                        Fanout::Queue => afpacket::Fanout::Queue,
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
    /// The XDP tier attached instead of the plain redirect program.
    tier: Option<Box<XdpTier>>,
}

/// Opens the AF_XDP back end: lwt6's XDP program on every interface, one socket per receive queue, queue `q`
/// served by worker `q % workers`. Every worker needs a socket on every interface to send from, so an interface
/// needs at least as many queues as there are workers. On any error what was attached is detached (dropped).
fn open_af_xdp(
    devs: &[NetDev],
    workers: usize,
    headroom: usize,
    tier: Option<Box<XdpTier>>,
) -> Result<XdpPorts, String> {
    let mut x = XdpPorts {
        ports: (0..workers).map(|_| Vec::new()).collect(),
        port_dev: vec![Vec::new(); workers],
        attachments: Vec::new(),
        tier,
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
        let att = match &x.tier {
            // The tier's program, its XSKMAP holding every interface's sockets from the device's first slot on.
            Some(t) => {
                let (map, base) = t.xsk_map(id)?;
                Arc::new(
                    XdpAttachment::with_program(&d.name, XdpMode::Auto, t.program_fd()?, map, base)
                        .map_err(|e| e.to_string())?,
                )
            }
            None => XdpAttachment::shared(&d.name, XdpMode::Auto).map_err(|e| e.to_string())?,
        };
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
        let _ = lwt6_io::port::Port::flush(p);
        let left = p.tx_pending();
        if left == 0 || std::time::Instant::now() >= deadline {
            return left as u64;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Runs the router `a` describes until SIGINT or SIGTERM: checks that it holds the capabilities it needs
/// ([`crate::privilege`]; an error saying which it lacks), loads the configuration
/// and checks its interfaces against the system, opens the ports, the control socket (removed again on every
/// exit) and the metrics listener, then serves. SIGINT, SIGTERM and SIGHUP are blocked in the calling thread
/// (and so in the threads it starts) and read from a descriptor; they stay blocked when `run` returns. Returns the
/// final counters, to be looked at with [`RunReport::check`]; an error when the router could not start.
pub fn run(a: &RunOptions) -> Result<RunReport, Error> {
    let held = privilege::check(a.io == Io::Xdp)?;
    let mut cfg = lwt6_config::load_file(&a.config, lwt6_config::StdinSecret::Read)?;
    let devs = links::resolve(&mut cfg, &a.config)?;
    let snap = Snapshot::build(&cfg)
        .map_err(|e| Error::lasting(format!("{}: {e}", a.config.display())))?;
    let xdp = match a.io {
        Io::Packet if a.xdp_tier == TierMode::On => {
            return Err(fail("--xdp-tier on needs AF_XDP (--io xdp or auto)"));
        }
        Io::Packet => None,
        Io::Xdp => Some(
            crate::xdp_tier::open(&devs, &snap, a.xdp_tier, |t| {
                open_af_xdp(&devs, a.workers, snap.rx_headroom, t)
            })
            .map_err(|why| fail(format!("--io xdp: {why}")))?,
        ),
        Io::Auto => match privilege::xdp_allowed(&held).and_then(|()| {
            crate::xdp_tier::open(&devs, &snap, a.xdp_tier, |t| {
                open_af_xdp(&devs, a.workers, snap.rx_headroom, t)
            })
        }) {
            Ok(x) => Some(x),
            Err(why) if a.xdp_tier == TierMode::On => {
                return Err(fail(format!("--xdp-tier on: {why}")));
            }
            Err(why) => {
                log::warn!("AF_XDP not used ({why}): using AF_PACKET");
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
    let sock = control::listen(&a.control, a.control_group.unwrap_or_else(sys::gid))?;
    // From here on the socket file exists: every exit path removes it (while it is still ours).
    let result = serve(a, cfg, &devs, handle, &sock, ports, io);
    sock.remove();
    result
}

fn serve(
    a: &RunOptions,
    cfg: lwt6_dataplane::spec::Config,
    devs: &[NetDev],
    handle: Arc<SnapshotHandle>,
    sock: &control::ControlSocket,
    ports: Ports,
    io: &'static str,
) -> Result<RunReport, Error> {
    // Signals are blocked before any thread starts (threads inherit the mask) and read from a descriptor here.
    let signals = Rc::new(
        SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
            .map_err(|e| fail(format!("signalfd: {e}")))?,
    );
    // Signals read from the descriptor and not handled yet: a long control request reads them too, to give up
    // when the router is told to stop.
    let pending: Rc<RefCell<Vec<libc::c_int>>> = Rc::default();
    let names: Vec<String> = devs.iter().map(|d| d.name.clone()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let reports: Vec<Arc<Mutex<WorkerReport>>> = (0..a.workers)
        .map(|_| Arc::new(Mutex::new(WorkerReport::default())))
        .collect();
    let reload = Arc::new(metrics::ReloadStatus::default());
    // The XDP tier, for the metrics thread once the workers run.
    let metrics_tier: Option<crate::xdp_tier::Shared> = a.metrics.map(|_| Default::default());
    let export = Arc::new(crate::export::ExportHub::new(
        names.clone(),
        a.ioam_export_transit,
    ));
    for spec in &a.ioam_export {
        export
            .add(spec)
            .map_err(|e| fail(format!("--ioam-export {e}")))?;
    }
    let counters = Arc::new(clients::ControlCounters::default());
    if let Some(addr) = a.metrics {
        let l = std::net::TcpListener::bind(addr)
            .map_err(|e| fail(format!("--metrics {addr}: {e}")))?;
        let sources = metrics::Sources {
            reports: reports.clone(),
            links: names.clone(),
            snapshot: Some(handle.clone()),
            reload: reload.clone(),
            xdp: metrics_tier.clone().unwrap_or_default(),
            export: Some(export.clone()),
            control: Some(Arc::clone(&counters)),
        };
        std::thread::Builder::new()
            .name("lwt6-metrics".into())
            .spawn(move || metrics::serve(l, sources))
            .map_err(|e| fail(format!("metrics thread: {e}")))?;
    }
    let neigh_inbox = Arc::new(neighq::NeighInbox::default());
    let outbox = Arc::new(engine::Outbox::default());
    let trace = Arc::new(trace::TraceBoard::default());
    let capture = Arc::new(crate::capture::CaptureBoard::default());
    let gate = Arc::new(lwt6_dataplane::neigh::SolicitGate::default());
    let mut threads = Vec::new();
    let spawn = |i: usize, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(format!("lwt6-worker-{i}"))
            .spawn(f)
            .map_err(|e| fail(format!("worker thread: {e}")))
    };
    // Held until the workers have stopped: the XDP programs stay attached for the router's life.
    let mut _attachments = Vec::new();
    let mut port_info = Vec::new();
    let mut tier = None;
    match ports {
        Ports::Packet(ports) => {
            for (i, p) in ports.into_iter().enumerate() {
                let fanout = (a.workers > 1).then_some(match a.fanout {
                    Fanout::Hash => "hash",
                    Fanout::Queue => "queue",
                });
                port_info.extend((0..p.len()).map(|d| PortInfo::packet(d, i, fanout)));
                let ctx = WorkerCtx {
                    port_dev: (0..p.len()).collect(),
                    ports: p,
                    handle: Arc::clone(&handle),
                    stop: Arc::clone(&stop),
                    report: Arc::clone(&reports[i]),
                    neigh_tx: Arc::clone(&neigh_inbox),
                    outbox: (i == 0).then(|| Arc::clone(&outbox)),
                    solicit_gate: Arc::clone(&gate),
                    close: |p: &mut AfPacket| p.close_out(200) as u64,
                    index: i,
                    trace: Arc::clone(&trace),
                    capture: Arc::clone(&capture),
                    export: Arc::clone(&export),
                };
                threads.push(spawn(i, Box::new(move || engine::run(ctx)))?);
            }
        }
        Ports::Xdp(x) => {
            _attachments = x.attachments;
            tier = x.tier.map(|t| Arc::new(Mutex::new(*t)));
            for (i, (p, d)) in x.ports.into_iter().zip(x.port_dev).enumerate() {
                port_info.extend(p.iter().zip(&d).map(|(p, d)| PortInfo::xsk(*d, i, p)));
                let ctx = WorkerCtx {
                    ports: p,
                    port_dev: d,
                    handle: Arc::clone(&handle),
                    stop: Arc::clone(&stop),
                    report: Arc::clone(&reports[i]),
                    neigh_tx: Arc::clone(&neigh_inbox),
                    outbox: (i == 0).then(|| Arc::clone(&outbox)),
                    solicit_gate: Arc::clone(&gate),
                    close: close_xsk,
                    index: i,
                    trace: Arc::clone(&trace),
                    capture: Arc::clone(&capture),
                    export: Arc::clone(&export),
                };
                threads.push(spawn(i, Box::new(move || engine::run(ctx)))?);
            }
        }
    }
    log::info!(
        "running on {} ({io}{}, {} worker{}), control {}",
        names.join(", "),
        if tier.is_some() {
            " with the XDP tier"
        } else {
            ""
        },
        a.workers,
        if a.workers == 1 { "" } else { "s" },
        a.control.display()
    );
    if let Some(t) = &tier {
        crate::xdp_tier::sync(t, &handle, &trace);
        if let Some(m) = &metrics_tier {
            let _ = m.set(Arc::clone(t));
        }
    }
    let stopping = {
        let (signals, pending) = (Rc::clone(&signals), Rc::clone(&pending));
        move || {
            let mut p = pending.borrow_mut();
            while let Some(sig) = signals.next() {
                p.push(sig);
            }
            p.iter().any(|&s| s != libc::SIGHUP)
        }
    };
    let mut control = Control {
        counters: Arc::clone(&counters),
        outbox,
        trace,
        capture,
        xdp: tier.clone(),
        export: Arc::clone(&export),
        stopping: Some(Box::new(stopping)),
        ports: port_info,
        ..Control::new(cfg, handle, reports.clone(), io)
    };
    control.neigh.solicited = Some(Arc::clone(&gate));
    let mut monitor = if a.kernel_routes {
        Some(kroutes::start(&mut control)?)
    } else {
        None
    };
    let listener = std::os::fd::AsRawFd::as_raw_fd(&sock.listener);
    let mut fds = vec![signals.raw_fd(), listener];
    if let Some(m) = &monitor {
        fds.push(m.raw_fd());
    }
    // What loading left free in the heap (the file's text and lines, the index its parser built, the snapshot's
    // build) is given back before serving: otherwise it stays resident until a large request trims the heap, or
    // is reused piecemeal by what comes next.
    crate::trim::release_free_memory();
    let notify = crate::notify::Notifier::from_env();
    let status = |c: &Control| crate::notify::status(&names, io, &c.handle.load(), a.workers);
    notify.ready(&status(&control));
    // STATUS= follows the table: resent after a publication, at most every STATUS_EVERY.
    let mut status_sent = (control.handle.generation(), std::time::Instant::now());
    // The control socket's connections: never waited on, served in this loop (crate::clients).
    let mut clients = clients::Clients::for_descriptors();
    'main: loop {
        // The XDP tier may have a publication to install or an egress check due sooner.
        let wait = tier.as_ref().map_or(NEIGH_TICK_MS, |t| {
            crate::xdp_tier::due_ms(t, &control.handle, &control.trace).min(NEIGH_TICK_MS)
        });
        clients.wait(&fds, listener, wait);
        let now = sys::realtime_ns();
        control.learn(&neigh_inbox.take(&control.counters), now);
        control.tick(now);
        if let Some(m) = &mut monitor {
            kroutes::follow(m, &mut control);
        }
        crate::log::flush();
        while let Some(sig) = signals.next() {
            pending.borrow_mut().push(sig);
        }
        let sigs = std::mem::take(&mut *pending.borrow_mut());
        for sig in sigs {
            if sig == libc::SIGHUP {
                notify.reloading();
                let r = lwt6_config::load_file(&a.config, lwt6_config::StdinSecret::Refuse)
                    .map_err(Error::from)
                    .and_then(|mut c| {
                        links::resolve(&mut c, &a.config)?;
                        control.replace(c).map_err(fail)
                    });
                reload.record(r.is_ok());
                if let Err(e) = &r {
                    control.monitor.reloaded(Err(&e.to_string()));
                }
                match &r {
                    Ok(()) => log::info!("SIGHUP: {} reloaded", a.config.display()),
                    Err(e) => log::error!(
                        "SIGHUP: {} not reloaded, the running configuration stays: {}",
                        a.config.display(),
                        e
                    ),
                }
                let kept = if r.is_ok() {
                    ""
                } else {
                    " (reload refused: the running configuration stays)"
                };
                notify.ready(&format!("{}{kept}", status(&control)));
                status_sent = (control.handle.generation(), std::time::Instant::now());
            } else {
                break 'main;
            }
        }
        if clients.accept(sock, &mut control) || clients.serve(&mut control) {
            // A request saw the stop signal: stop now rather than serve the next connection.
            break 'main;
        }
        if let Some(t) = &tier {
            crate::xdp_tier::sync(t, &control.handle, &control.trace);
        }
        // Answered and in the driver: now the spare snapshot takes the request's changes too.
        control.catch_up_spare();
        if notify.enabled()
            && control.handle.generation() != status_sent.0
            && status_sent.1.elapsed() >= STATUS_EVERY
        {
            status_sent = (control.handle.generation(), std::time::Instant::now());
            notify.send(&format!("STATUS={}", status(&control)));
        }
        if threads.iter().any(|t| t.is_finished()) {
            log::error!("a worker thread ended unexpectedly; stopping");
            break;
        }
    }
    notify.stopping();
    clients.close_all();
    stop.store(true, Ordering::Relaxed);
    let mut panicked = false;
    for t in threads {
        panicked |= t.join().is_err();
    }
    // A capture still running gets what the workers sent it, and its file is closed.
    let _ = control.capture.stop();
    let (total, workers) = control::gather(&reports);
    let xdp = tier
        .as_ref()
        .map(|t| crate::xdp_tier::report(t, &total.stats));
    let ioam_export = export.finish();
    // The process ends: freeing the configuration and the tables (hundreds of megabytes with a million routes)
    // would only delay the exit past the 2 s a stop signal allows.
    std::mem::forget(control);
    Ok(RunReport {
        total,
        workers,
        links: names,
        io,
        worker_panicked: panicked,
        xdp,
        ioam_export,
    })
}
