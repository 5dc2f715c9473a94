//! Standard output and standard error, written with every error checked: a lost write is never a success.
//!
//! * A write to standard output that fails (`> /dev/full`, a full disk, an I/O error) ends the command with a
//!   message naming what was lost and exit status 1; output files not yet committed are removed on the way.
//! * A closed pipe (`lwt6 ... | head`, EPIPE) ends the command quietly with status [`EXIT_PIPE`] (141, 128 +
//!   SIGPIPE: what a shell reports for a command a closed pipe killed), also removing uncommitted output files.
//! * A message to standard error that cannot be written is remembered ([`stderr_lost`]): the command then exits
//!   non-zero even if it otherwise succeeded.

use super::Failure;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit status after standard output was closed under us (EPIPE): 128 + SIGPIPE.
pub const EXIT_PIPE: u8 = 141;

/// Exit status of a command whose every write succeeded but a message to standard error was lost.
pub const EXIT_STDERR_LOST: u8 = 1;

static STDERR_LOST: AtomicBool = AtomicBool::new(false);

/// The quiet failure of a command whose standard output was closed by its reader (EPIPE): [`EXIT_PIPE`].
fn closed_pipe() -> Failure {
    Failure {
        message: String::new(),
        code: EXIT_PIPE,
    }
}

/// The failure for a write to standard output that failed: quiet with [`EXIT_PIPE`] for a closed pipe, else
/// status 1 and a message saying that `what` was lost.
pub fn lost(e: std::io::Error, what: &str) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return closed_pipe();
    }
    super::fail(format!("standard output: {e}: lost {what}"))
}

/// The failure for an output that could not be written: quiet with [`EXIT_PIPE`] when it was standard output and
/// its reader went away, else status 1 and the error.
pub fn output_failure(e: crate::io::output::OutputError) -> Failure {
    if e.closed_pipe {
        return closed_pipe();
    }
    super::fail(e.to_string())
}

/// Writes `bytes` to standard output and flushes it; `what` names them in the error.
pub fn write_stdout(bytes: &[u8], what: &str) -> Result<(), Failure> {
    let mut o = std::io::stdout().lock();
    o.write_all(bytes)
        .and_then(|()| o.flush())
        .map_err(|e| lost(e, what))
}

/// Flushes standard output (what a line-buffered stdout still holds at the end of a command).
pub fn flush_stdout() -> Result<(), Failure> {
    std::io::stdout().flush().map_err(|e| lost(e, "output"))
}

/// Writes `lwt6: MESSAGE` and a newline to standard error; a failure is remembered ([`stderr_lost`]).
pub fn warn(message: &str) {
    let mut e = std::io::stderr().lock();
    if writeln!(e, "lwt6: {message}")
        .and_then(|()| e.flush())
        .is_err()
    {
        STDERR_LOST.store(true, Ordering::Relaxed);
    }
}

/// Whether a message to standard error was lost.
pub fn stderr_lost() -> bool {
    STDERR_LOST.load(Ordering::Relaxed)
}
