//! `lwt6 run` and `lwt6 ctl`: their arguments, and what they print. The router itself is `lwt6-router`.

use super::{Failure, fail};
use clap::{Args, ValueEnum};
use lwt6_router::{DEFAULT_CONTROL, RunOptions, ctl as control};
use std::path::PathBuf;

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
    /// The group whose members may use the control socket (a name or a numeric gid), besides root and the
    /// router's user; default: the router's primary group. The socket is made mode 0660 with this group.
    #[arg(long = "control-group", value_name = "GROUP")]
    pub control_group: Option<String>,
    /// Serve OpenMetrics (Prometheus) metrics over HTTP at http://ADDR/metrics (e.g. 127.0.0.1:9106).
    #[arg(long = "metrics", value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Final counters as JSON.
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// Follow the kernel's main routing table (rtnetlink): its routes are added to the configuration's and
    /// changes made with `ip route` take effect at once.
    #[arg(long = "kernel-routes")]
    pub kernel_routes: bool,
    /// The least severe log lines written to standard error: error, warn, info, debug, trace or off (with
    /// time stamps, or with journald's priority prefixes under systemd).
    #[arg(long = "log-level", value_name = "LEVEL", default_value = "info")]
    pub log_level: lwt6_router::log::LevelFilter,
    /// With AF_XDP: run the routes' forwarding plans in the driver (lwt6's XDP program; docs/xdp.md), handing
    /// every other frame to the workers. Default: on when this build has the tier and it loads (else said once
    /// and off); `on` fails when it cannot; `off` attaches the plain redirect program.
    #[arg(long = "xdp-tier", value_enum)]
    pub xdp_tier: Option<OnOff>,
    /// Export the IOAM traces the router removes at its domains' boundaries (repeatable; docs/ioam.md,
    /// *Export*): `json:FILE`, `json:-`, `grpc:HOST:PORT`, `grpcs:HOST:PORT[,ca=FILE]` (TLS) or
    /// `otlp:http[s]://HOST:PORT[/PATH][,ca=FILE]`. Workers never wait
    /// for an exporter: what its queue cannot hold, or its collector refuses, is counted lost per exporter
    /// (`lwt6 ctl show ioam export`). Changed at run time with `lwt6 ctl ioam export add|del TARGET`.
    #[arg(long = "ioam-export", value_name = "TARGET", value_parser = parse_export_target)]
    pub ioam_export: Vec<String>,
    /// Also export every IOAM trace this router fills in transit.
    #[arg(long = "ioam-export-transit")]
    pub ioam_export_transit: bool,
}

/// `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// Checks an export target when the arguments are read (the router starts it later).
fn parse_export_target(s: &str) -> Result<String, String> {
    s.parse::<lwt6_export::target::Target>()
        .map(|_| s.to_string())
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
    /// `show routes|stats|neigh|trace|capture|sr|ioam|interfaces [-j]`, `route get ADDR [from SRC] [iif DEV]
    /// [table T] [-j]`, `clear stats`, `ioam export add|del TARGET`, `show ioam export [-j]`, `trace add N [dev IF]
    /// [src PREFIX] [dst PREFIX] [proto P]`, `trace stop`, `trace clear` (docs/live.md, *Inspecting a running
    /// router*, *Packet tracing*, *IOAM export*), or `capture start [dev IF] [rx] [tx] [drop] [count N] [overwrite]
    /// FILE`, `capture stop` (a pcapng file the router writes; a relative FILE is taken from this directory;
    /// docs/live.md, *Live capture*), or `monitor [-j]` (route, neighbour and configuration events printed as
    /// they happen, one a line, until the router stops or SIGINT; docs/live.md, *Monitor*); the words are joined
    /// by spaces.
    #[arg(required_unless_present = "batch", num_args = 1.., allow_hyphen_values = true, trailing_var_arg = true)]
    pub line: Vec<String>,
}

impl From<lwt6_router::Error> for Failure {
    fn from(e: lwt6_router::Error) -> Self {
        Failure {
            code: if e.is_lasting() { 4 } else { 1 },
            message: e.to_string(),
        }
    }
}

/// `lwt6 run`: the router until SIGINT or SIGTERM, then its final counters on stdout (text, or JSON with -j).
pub fn run(a: RunArgs) -> Result<(), Failure> {
    lwt6_router::log::init(a.log_level);
    let opts = RunOptions {
        config: a.config,
        io: match a.io {
            Io::Auto => lwt6_router::Io::Auto,
            Io::Xdp => lwt6_router::Io::Xdp,
            Io::Packet => lwt6_router::Io::Packet,
        },
        workers: a.workers,
        fanout: match a.fanout {
            FanoutArg::Hash => lwt6_router::Fanout::Hash,
            FanoutArg::Queue => lwt6_router::Fanout::Queue,
        },
        control: a.control,
        control_group: a
            .control_group
            .as_deref()
            .map(lwt6_router::control::group_id)
            .transpose()?,
        metrics: a.metrics,
        kernel_routes: a.kernel_routes,
        xdp_tier: match a.xdp_tier {
            None => lwt6_router::xdp_tier::TierMode::Default,
            Some(OnOff::On) => lwt6_router::xdp_tier::TierMode::On,
            Some(OnOff::Off) => lwt6_router::xdp_tier::TierMode::Off,
        },
        ioam_export: a.ioam_export,
        ioam_export_transit: a.ioam_export_transit,
    };
    let report = lwt6_router::run(&opts)?;
    let text = if a.json {
        format!("{}\n", report.json())
    } else {
        report.text()
    };
    // The counters are printed before the check, so that unbalanced counters or a panicked worker still show
    // them; a lost report is itself a failure.
    let printed = super::stdio::write_stdout(text.as_bytes(), "the final counters");
    report.check()?;
    let lost = lwt6_router::log::lost();
    if lost > 0 {
        return Err(fail(format!(
            "{lost} log line{} could not be written to standard error",
            if lost == 1 { "" } else { "s" }
        )));
    }
    printed
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
            control::batch(&text)
        }
        None => control::line(&a.line),
    };
    if a.batch.is_none() && lwt6_router::monitor::is_request(&request) {
        return Ok(control::monitor(&a.control, &request, std::io::stdout())?);
    }
    let body = control::request(&a.control, &request)?;
    super::stdio::write_stdout(body.as_bytes(), "the router's answer")
}
