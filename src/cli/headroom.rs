//! `lwt6 headroom` (in progress).

use super::Failure;
use clap::Args;

/// Arguments of `lwt6 headroom`.
#[derive(Debug, Args)]
pub struct HeadroomArgs {}

/// Runs `lwt6 headroom`.
pub fn run(_args: HeadroomArgs) -> Result<(), Failure> {
    Err(super::fail("lwt6 headroom: not implemented yet"))
}
