//! `lwt6 route get -c FILE ADDR [from SRC] [iif DEV] [table T] [-j]`: what `lwt6 ctl route get` answers, over a
//! configuration file instead of a running router (its static neighbours only).

use super::{Failure, fail, stdio};
use clap::{Args, Subcommand};
use lwt6_router::show::route_get;
use std::path::PathBuf;

/// `lwt6 route`.
#[derive(Debug, Args)]
pub struct RouteArgs {
    /// What to do.
    #[command(subcommand)]
    pub what: RouteWhat,
}

/// `lwt6 route` subcommands.
#[derive(Debug, Subcommand)]
pub enum RouteWhat {
    /// The route ADDR takes, as `ip -6 route get` prints it, then its tunnel, plan, next hop, effective MTU and
    /// XDP placement (docs/live.md, *Inspecting a running router*).
    Get {
        /// Router configuration.
        #[arg(short = 'c', long = "config")]
        config: PathBuf,
        /// JSON output (as `ip -j route get`, with lwt6's fields under "lwt6").
        #[arg(short = 'j', long = "json")]
        json: bool,
        /// `ADDR [from SRC] [iif DEV] [table main|N]`.
        #[arg(required = true, num_args = 1.., allow_hyphen_values = true)]
        words: Vec<String>,
    },
}

/// Runs `lwt6 route get`.
pub fn run(a: RouteArgs) -> Result<(), Failure> {
    let RouteWhat::Get {
        config,
        json,
        words,
    } = a.what;
    let snap = lwt6_dataplane::snapshot::Snapshot::build_from(super::load_config(&config)?)
        .map_err(|e| fail(format!("{}: {e}", config.display())))?;
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let mut q = route_get::parse(&words).map_err(fail)?;
    q.json |= json;
    let text = route_get::answer(&snap, &q, &|_, _| None).map_err(fail)?;
    stdio::write_stdout(text.as_bytes(), "the route")
}
