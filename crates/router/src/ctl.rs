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

/// The request of `lwt6 ctl WORDS...`: the words joined by spaces, except that the FILE of `capture start ...
/// FILE` (its last word), when relative, is made absolute against this process's working directory (the router
/// writes it, from its own); `-` is left as it is (the router refuses it).
pub fn line(words: &[String]) -> String {
    let joined = words.join(" ");
    let w: Vec<&str> = joined.split_whitespace().collect();
    if let ["capture", "start", opts @ .., file] = &w[..]
        && *file != "-"
        && Path::new(file).is_relative()
        && let Ok(cwd) = std::env::current_dir()
    {
        let mut out = vec!["capture".to_string(), "start".to_string()];
        out.extend(opts.iter().map(|s| s.to_string()));
        out.push(cwd.join(file).display().to_string());
        return out.join(" ");
    }
    joined
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
            "control socket {}: unexpected reply '{}'",
            path.display(),
            lwt6_dataplane::spec::shown_token(&reply.chars().take(80).collect::<String>())
        ))),
    }
}

/// `lwt6 ctl monitor [-j]`: sends the request `line` and copies the events the router streams to `out`, a line
/// at a time, until the router closes the connection (it stops) or `out` fails (its reader went away). No time
/// limit: events come when they happen. Fails with the router's error when it refuses the request.
pub fn monitor(path: &Path, line: &str, mut out: impl Write) -> Result<(), Error> {
    use std::io::BufRead;
    let mut s = UnixStream::connect(path).map_err(|e| {
        fail(format!(
            "control socket {}: {e} (is `lwt6 run` running? see --control)",
            path.display()
        ))
    })?;
    s.write_all(format!("{}\n", line.trim_end()).as_bytes())
        .map_err(|e| fail(format!("control socket {}: {e}", path.display())))?;
    let mut r = std::io::BufReader::new(s);
    let mut head = String::new();
    r.read_line(&mut head)
        .map_err(|e| fail(format!("control socket {}: {e}", path.display())))?;
    match head.trim_end() {
        "ok" => {}
        h if h.starts_with("error: ") => return Err(fail(h["error: ".len()..].to_string())),
        h => {
            return Err(fail(format!(
                "control socket {}: unexpected reply '{}'",
                path.display(),
                lwt6_dataplane::spec::shown_token(h)
            )));
        }
    }
    let mut event = Vec::new();
    loop {
        event.clear();
        match r.read_until(b'\n', &mut event) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                if out.write_all(&event).and_then(|_| out.flush()).is_err() {
                    // Whoever reads the events went away (`| head`): done.
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(fail(format!("control socket {}: {e}", path.display()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_relative_capture_file_is_made_absolute_and_nothing_else_changes() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            line(&words("capture start dev r0 x.pcapng")),
            format!("capture start dev r0 {}", cwd.join("x.pcapng").display())
        );
        for same in [
            "capture start /abs/x.pcapng",
            "capture start -",
            "capture stop",
            "show capture -j",
            "route add fd00::/64 dev r1",
        ] {
            assert_eq!(line(&words(same)), same);
        }
        // Any other request is the words joined as they are.
        assert_eq!(line(&["show".into(), "stats  -j".into()]), "show stats  -j");
    }
}
