//! `lwt6 bench` (in progress).

use super::Failure;
use clap::Args;

/// Arguments of `lwt6 bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {}

/// Runs `lwt6 bench`.
pub fn run(_args: BenchArgs) -> Result<(), Failure> {
    Err(super::fail("lwt6 bench: not implemented yet"))
}
