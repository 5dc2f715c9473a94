//! The worker threads of a live router: each owns a [`Worker`], one port per attached interface and a staging
//! queue per egress interface. Per round: load the snapshot once, receive a batch from every port (each frame
//! processed as it is handed over), send what was staged, flush. No lock and no atomic per packet: the counters
//! are the worker's own and are copied to the control thread every few milliseconds.

use lwt6_dataplane::hop::icmp_limit::IcmpLimiter;
use lwt6_dataplane::snapshot::SnapshotHandle;
use lwt6_dataplane::stats::Stats;
use lwt6_dataplane::worker::Worker;
use lwt6_io::port::Port;
use lwt6_io::sys;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Frames received from one port per round at most.
const RX_BATCH: usize = 64;
/// How often a busy worker publishes its counters.
const PUBLISH_EVERY: Duration = Duration::from_millis(5);
/// How long an idle worker waits for frames before looking at the stop flag again.
const IDLE_WAIT_MS: i32 = 20;
/// Rounds a stopping worker still runs to drain what the kernel has queued for it.
const DRAIN_ROUNDS: usize = 256;

/// What a worker reports to the control thread: the dataplane's counters and the live path's own.
#[derive(Debug, Clone, Default)]
pub struct WorkerReport {
    /// The dataplane's counters (received = sent + dropped by reason).
    pub stats: Stats,
    /// Frames received, per interface (index = device id).
    pub rx_by_dev: Vec<u64>,
    /// Frames handed to the ports, per interface (forwarded frames and ICMP errors).
    pub tx_by_dev: Vec<u64>,
    /// Overload, per interface: frames the kernel dropped before this worker received them because it was not
    /// keeping up (AF_XDP: RX ring full or no fill-ring frame; AF_PACKET: receive buffer full), as the kernel
    /// counts them ([`Port::kernel_rx_drops`]). Never received, so not in `stats`.
    pub overload_by_dev: Vec<u64>,
    /// Frames the dataplane sent that a port refused (its transmit queue stayed full): lost on the way out.
    pub tx_refused: u64,
    /// Frames still queued in a port when the worker stopped, that the kernel never took.
    pub tx_unsent_at_stop: u64,
    /// Port errors (receive or send system calls failing for a reason other than "try again").
    pub port_errors: u64,
    /// The last port error.
    pub last_error: Option<String>,
}

impl WorkerReport {
    /// Adds another worker's report to this one.
    pub fn merge(&mut self, o: &WorkerReport) {
        self.stats.merge(&o.stats);
        for (v, w) in [
            (&mut self.rx_by_dev, &o.rx_by_dev),
            (&mut self.tx_by_dev, &o.tx_by_dev),
            (&mut self.overload_by_dev, &o.overload_by_dev),
        ] {
            if v.len() < w.len() {
                v.resize(w.len(), 0);
            }
            for (a, b) in v.iter_mut().zip(w) {
                *a += b;
            }
        }
        self.tx_refused += o.tx_refused;
        self.tx_unsent_at_stop += o.tx_unsent_at_stop;
        self.port_errors += o.port_errors;
        if o.last_error.is_some() {
            self.last_error.clone_from(&o.last_error);
        }
    }
}

/// The kernel's overload counts of every port, summed per device into `out` (a system call per port).
fn read_overload<P: Port>(ports: &mut [P], port_dev: &[usize], out: &mut [u64]) {
    out.fill(0);
    for (p, &d) in ports.iter_mut().zip(port_dev) {
        out[d] += p.kernel_rx_drops();
    }
}

/// Frames staged for one egress interface during a round, back to back.
#[derive(Debug, Default)]
struct Stage {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Stage {
    fn push(&mut self, frame: &[u8]) {
        self.bytes.extend_from_slice(frame);
        self.ends.push(self.bytes.len());
    }

    fn frames(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&e| {
            let f = &self.bytes[start..e];
            start = e;
            f
        })
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// Frames the control thread hands to a worker to send, `(device id, frame)`.
#[derive(Debug, Default)]
pub struct Outbox {
    frames: Mutex<Vec<(usize, Vec<u8>)>>,
    waiting: std::sync::atomic::AtomicBool,
}

impl Outbox {
    /// Queues frames for the worker to send at its next round.
    pub fn push(&self, frames: Vec<(usize, Vec<u8>)>) {
        if frames.is_empty() {
            return;
        }
        if let Ok(mut f) = self.frames.lock() {
            f.extend(frames);
            self.waiting.store(true, Ordering::Release);
        }
    }

    /// Takes what is queued (one atomic load when nothing is).
    fn take(&self) -> Vec<(usize, Vec<u8>)> {
        if !self.waiting.swap(false, Ordering::Acquire) {
            return Vec::new();
        }
        self.frames
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }
}

/// One worker thread's ports and shared state.
pub struct WorkerCtx<P> {
    /// Ports: one per attached interface (AF_PACKET), or one per interface queue this worker serves (AF_XDP).
    pub ports: Vec<P>,
    /// The device id of each port; every device has at least one port, and its first one sends.
    pub port_dev: Vec<usize>,
    /// Where snapshots are published.
    pub handle: Arc<SnapshotHandle>,
    /// Set by the control thread to stop the worker (read once per round).
    pub stop: Arc<AtomicBool>,
    /// Where the worker publishes its counters.
    pub report: Arc<Mutex<WorkerReport>>,
    /// Where the worker sends what it learned about neighbours (the control thread's table decides).
    pub neigh_tx: Arc<crate::neighq::NeighInbox>,
    /// Frames the control thread wants sent (its neighbour probes); the worker that holds `Some` sends them.
    pub outbox: Option<Arc<Outbox>>,
    /// Shared by all the workers: one multicast solicitation per next hop and retransmission between them.
    pub solicit_gate: Arc<lwt6_dataplane::neigh::SolicitGate>,
    /// Called for each port once it is drained at stop: how many frames it still holds that the kernel never
    /// took (AF_PACKET: after waiting a while for it to take them).
    pub close: fn(&mut P) -> u64,
    /// This worker's number (0, 1, ...).
    pub index: usize,
    /// The packet trace the control thread arms (`lwt6 ctl trace add`), looked at once per round.
    pub trace: Arc<crate::trace::TraceBoard>,
    /// The live capture the control thread starts (`lwt6 ctl capture start`), looked at once per round.
    pub capture: Arc<crate::capture::CaptureBoard>,
    /// The IOAM exporters, looked at once per round ([`crate::export`]).
    pub export: Arc<crate::export::ExportHub>,
}

impl<P> std::fmt::Debug for WorkerCtx<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerCtx")
            .field("ports", &self.ports.len())
            .finish()
    }
}

/// The worker thread's loop; returns when the stop flag is set and the ports are drained.
pub fn run<P: Port>(mut ctx: WorkerCtx<P>) {
    let ndev = ctx.port_dev.iter().max().map_or(0, |m| m + 1);
    // The port each device's frames leave by: its first.
    let tx_port: Vec<usize> = (0..ndev)
        .map(|d| ctx.port_dev.iter().position(|&x| x == d).unwrap_or(0))
        .collect();
    let mut worker = Worker::new(&ctx.handle.load());
    // A live router resolves its next hops and answers solicitations, ARP and pings itself, and limits its ICMP
    // errors as Linux does.
    worker.resolve = true;
    worker.icmp_limiter = Some(IcmpLimiter::default());
    worker.solicit_gate = Some(Arc::clone(&ctx.solicit_gate));
    let mut rep = WorkerReport {
        rx_by_dev: vec![0; ndev],
        tx_by_dev: vec![0; ndev],
        overload_by_dev: vec![0; ndev],
        ..Default::default()
    };
    let mut stages: Vec<Stage> = (0..ndev).map(|_| Stage::default()).collect();
    let fds: Vec<RawFd> = ctx.ports.iter().map(|p| p.raw_fd()).collect();
    let mut last_publish = Instant::now();
    let mut draining = None;
    let mut trace_seen = 0;
    let mut capture = crate::capture::WorkerCapture::default();
    let mut export = crate::export::WorkerExport::default();
    loop {
        if draining.is_none() && ctx.stop.load(Ordering::Relaxed) {
            draining = Some(0usize);
        }
        if let Some(t) = ctx.trace.changed(&mut trace_seen, ctx.index) {
            worker.set_tracer(t);
        }
        capture.follow(&ctx.capture, &mut worker);
        let capturing = worker.capture().is_some();
        let snap = ctx.handle.load();
        // A route added at run time may need more room in front of received frames than the start did.
        worker.rx_headroom = worker.rx_headroom.max(snap.rx_headroom);
        let ts = sys::realtime_ns();
        let mut got = 0;
        let errors_before = rep.port_errors;
        {
            let mut batch = worker.start_batch(&snap);
            for (pi, port) in ctx.ports.iter_mut().enumerate() {
                let dev = ctx.port_dev[pi];
                let mut out = |odev: usize, _ts: u64, frame: &[u8]| stages[odev].push(frame);
                // The capture's tap is chosen here, once per port and round: without it, nothing per frame.
                let r = if capturing {
                    port.recv_batch(RX_BATCH, &mut |frame| {
                        batch.capture_rx(dev, ts, frame);
                        batch.process(dev, ts, frame, &mut out);
                    })
                } else {
                    port.recv_batch(RX_BATCH, &mut |frame| {
                        batch.process(dev, ts, frame, &mut out);
                    })
                };
                match r {
                    Ok(n) => {
                        rep.rx_by_dev[dev] += n as u64;
                        got += n;
                    }
                    Err(e) => {
                        rep.port_errors += 1;
                        rep.last_error = Some(format!("receive: {e}"));
                    }
                }
            }
        }
        // Timers of the next hops being resolved, and the packets a newer snapshot's neighbours release.
        worker.service(&snap, ts, &mut |odev, _ts, frame| stages[odev].push(frame));
        drop(snap);
        export.round(&ctx.export, &mut worker);
        let traced = worker.take_traces();
        if !traced.is_empty() {
            ctx.trace.deposit(trace_seen, traced);
        }
        let events = worker.take_neigh_events();
        if !events.is_empty() {
            ctx.neigh_tx.deposit(&events);
        }
        if let Some(ob) = &ctx.outbox {
            for (dev, frame) in ob.take() {
                if let Some(st) = stages.get_mut(dev) {
                    st.push(&frame);
                }
            }
        }
        for (dev, stage) in stages.iter_mut().enumerate() {
            let port = &mut ctx.ports[tx_port[dev]];
            if stage.ends.is_empty() {
                continue;
            }
            if let Some(c) = worker.capture() {
                stage.frames().for_each(|f| c.tx(dev, ts, f));
            }
            for frame in stage.frames() {
                match port.send(frame) {
                    Ok(true) => rep.tx_by_dev[dev] += 1,
                    Ok(false) => rep.tx_refused += 1,
                    Err(e) => {
                        rep.tx_refused += 1;
                        rep.port_errors += 1;
                        rep.last_error = Some(format!("send: {e}"));
                    }
                }
            }
            if let Err(e) = port.flush() {
                rep.port_errors += 1;
                rep.last_error = Some(format!("send: {e}"));
            }
            stage.clear();
        }
        if capturing {
            capture.after_round(&mut worker);
        }
        let idle = got == 0;
        if let Some(rounds) = &mut draining {
            *rounds += 1;
            if idle || *rounds >= DRAIN_ROUNDS {
                break;
            }
        }
        if idle || last_publish.elapsed() >= PUBLISH_EVERY {
            read_overload(&mut ctx.ports, &ctx.port_dev, &mut rep.overload_by_dev);
            rep.stats.clone_from(&worker.stats);
            if let Ok(mut r) = ctx.report.lock() {
                r.clone_from(&rep);
            }
            last_publish = Instant::now();
        }
        if rep.port_errors > errors_before {
            // A port in error (its interface went down, say) is readable at once: do not spin on it.
            std::thread::sleep(Duration::from_millis(IDLE_WAIT_MS as u64));
        } else if idle && sys::poll_readable(&fds, IDLE_WAIT_MS).is_err() {
            std::thread::sleep(Duration::from_millis(IDLE_WAIT_MS as u64));
        }
    }
    for p in &mut ctx.ports {
        rep.tx_unsent_at_stop += (ctx.close)(p);
    }
    read_overload(&mut ctx.ports, &ctx.port_dev, &mut rep.overload_by_dev);
    rep.stats.clone_from(&worker.stats);
    if let Ok(mut r) = ctx.report.lock() {
        r.clone_from(&rep);
    }
}
