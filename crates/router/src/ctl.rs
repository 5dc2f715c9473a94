//! The client side of the control socket (`lwt6 ctl`): a request is one line, or a batch (a first line `batch`,
//! then configuration lines); the reply's first line is `ok` or `error: MESSAGE`, and what follows is the output
//! ([`crate::control`] has the server side).

use crate::{Error, fail};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The request applying `lines` (configuration lines, one a line) in order as one atomic step.
pub fn batch(lines: &str) -> String {
    let mut r = String::from("batch\n");
    r += lines;
    if !r.ends_with('\n') {
        r.push('\n');
    }
    r
}

/// Sends one request (a line, or a [`batch`]) to the router whose control socket is `path` and returns the
/// reply's output; fails with the router's error message, or with what went wrong with the socket.
pub fn request(path: &Path, line: &str) -> Result<String, Error> {
    let mut s = UnixStream::connect(path).map_err(|e| {
        fail(format!(
            "control socket {}: {e} (is `lwt6 run` running? see --control)",
            path.display()
        ))
    })?;
    // Longer than the router takes at most to apply or give up a request (crate::clients::CLIENT_TIMEOUT): when
    // this client reports no reply, the router did not apply the request.
    let _ = s.set_read_timeout(Some(crate::clients::CLIENT_TIMEOUT));
    let _ = s.set_write_timeout(Some(crate::clients::CLIENT_TIMEOUT));
    let request = if line.ends_with('\n') {
        line.to_string()
    } else {
        format!("{line}\n")
    };
    let sent = s
        .write_all(request.as_bytes())
        .and_then(|_| s.shutdown(std::net::Shutdown::Write));
    let mut reply = String::new();
    let read = s.read_to_string(&mut reply);
    // A router that refuses a request before reading all of it (not allowed, too long) answers why: the
    // answer says more than the write's error.
    if reply.is_empty() {
        sent.and(read).map_err(|e| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                fail(format!(
                    "control socket {}: no reply within {} s (the router gives up a request it has not applied within {} s of accepting it: this one was not applied)",
                    path.display(),
                    crate::clients::CLIENT_TIMEOUT.as_secs(),
                    crate::clients::REQUEST_DEADLINE.as_secs()
                ))
            } else {
                fail(format!("control socket {}: {e}", path.display()))
            }
        })?;
    }
    match reply.split_once('\n') {
        Some(("ok", body)) => Ok(body.to_string()),
        Some((head, _)) if head.starts_with("error: ") => {
            Err(fail(head["error: ".len()..].to_string()))
        }
        _ => Err(fail(format!(
            "control socket {}: unexpected reply {:?}",
            path.display(),
            reply.chars().take(80).collect::<String>()
        ))),
    }
}
