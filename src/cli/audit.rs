//! `lwt6 audit` (in progress).

use super::Failure;
use clap::Args;

/// Arguments of `lwt6 audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {}

/// Runs `lwt6 audit`.
pub fn run(_args: AuditArgs) -> Result<(), Failure> {
    Err(super::fail("lwt6 audit: not implemented yet"))
}
