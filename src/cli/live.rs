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
    /// `show routes|stats|neigh|trace [-j]`, or `trace add N [dev IF] [src PREFIX] [dst PREFIX] [proto P]`,
    /// `trace stop`, `trace clear` (docs/live.md, *Packet tracing*), `ioam export add|del TARGET`, `show ioam
    /// export [-j]` (docs/live.md, *IOAM export*); the words are joined by spaces.
    #[arg(required_unless_present = "batch", num_args = 1.., allow_hyphen_values = true, trailing_var_arg = true)]
    pub line: Vec<String>,
}

impl From<lwt6_router::Error> for Failure {
    fn from(e: lwt6_router::Error) -> Self {
        fail(e.to_string())
    }
}

/// `lwt6 run`: the router until SIGINT or SIGTERM, then its final counters on stdout (text, or JSON with -j).
pub fn run(a: RunArgs) -> Result<(), Failure> {
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
        None => a.line.join(" "),
    };
    let body = control::request(&a.control, &request)?;
    super::stdio::write_stdout(body.as_bytes(), "the router's answer")
}
