//! systemd's service notifications (sd_notify(3)): `READY=1` once the ports are attached and the control socket
//! listens, `RELOADING=1` and `READY=1` around a SIGHUP reload, `STATUS=` lines, `STOPPING=1` on the way out.
//!
//! A datagram to the socket named by `NOTIFY_SOCKET` (a path, or `@NAME` for an abstract address), which systemd
//! sets for a `Type=notify` service. Written here over the standard library's Unix datagram socket rather than
//! with a crate: the protocol is one `sendto(2)` of `KEY=VALUE` lines, and the one thing a crate would add,
//! `MONOTONIC_USEC=` for `RELOADING=1`, needs the monotonic clock, which `lwt6_io::sys` already reads. Without
//! `NOTIFY_SOCKET` every call does nothing; a notification that cannot be sent is logged, never fatal.

use lwt6_dataplane::snapshot::Snapshot;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Where notifications go: nowhere when the router was not started by systemd (no `NOTIFY_SOCKET`).
#[derive(Debug)]
pub struct Notifier {
    to: Option<(UnixDatagram, SocketAddr)>,
}

/// The address `NOTIFY_SOCKET`'s value names: a path (`/run/systemd/notify`), or an abstract address (`@NAME`,
/// the `@` standing for the leading NUL byte).
pub fn address(value: &str) -> Result<SocketAddr, String> {
    if let Some(name) = value.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt as _;
        SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| e.to_string())
    } else if value.starts_with('/') {
        SocketAddr::from_pathname(value).map_err(|e| e.to_string())
    } else {
        Err("neither an absolute path nor an @abstract name".into())
    }
}

impl Notifier {
    /// The notifier `NOTIFY_SOCKET` asks for (one that does nothing when it is unset, or, said in the log, when
    /// it is unusable).
    pub fn from_env() -> Notifier {
        let Some(v) = std::env::var_os("NOTIFY_SOCKET") else {
            return Notifier { to: None };
        };
        let v = v.to_string_lossy();
        let to =
            address(&v).and_then(|a| Ok((UnixDatagram::unbound().map_err(|e| e.to_string())?, a)));
        match to {
            Ok(to) => Notifier { to: Some(to) },
            Err(e) => {
                log::warn!("NOTIFY_SOCKET={v}: {e}: systemd is not notified");
                Notifier { to: None }
            }
        }
    }

    /// Whether systemd listens (`NOTIFY_SOCKET` was set and usable).
    pub fn enabled(&self) -> bool {
        self.to.is_some()
    }

    /// Sends `lines` (`KEY=VALUE`, one per line) as one notification.
    pub fn send(&self, lines: &str) {
        let Some((sock, addr)) = &self.to else {
            return;
        };
        if let Err(e) = sock.send_to_addr(lines.as_bytes(), addr) {
            log::warn!(target: "notify", "systemd notification not sent ({e}): {lines:?}");
        }
    }

    /// The router serves: ports attached, control socket listening (also the end of a reload).
    pub fn ready(&self, status: &str) {
        self.send(&format!("READY=1\nSTATUS={status}"));
    }

    /// A reload starts (`MONOTONIC_USEC=` as systemd 253's `Type=notify-reload` asks).
    pub fn reloading(&self) {
        self.send(&format!(
            "RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=reloading the configuration",
            lwt6_io::sys::monotonic_us()
        ));
    }

    /// The router stops.
    pub fn stopping(&self) {
        self.send("STOPPING=1\nSTATUS=stopping: draining the workers");
    }
}

/// The status line while the router serves: `forwarding on r0, r1 (af_xdp); 3 routes; 2 workers`.
pub fn status(links: &[String], io: &str, snap: &Snapshot, workers: usize) -> String {
    let routes: usize = snap.tables().into_iter().map(|(_, f)| f.len()).sum();
    format!(
        "forwarding on {} ({io}); {routes} route{}; {workers} worker{}",
        links.join(", "),
        if routes == 1 { "" } else { "s" },
        if workers == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_socket_values() {
        use std::os::linux::net::SocketAddrExt as _;
        let a = address("@lwt6-test/notify").unwrap();
        assert_eq!(a.as_abstract_name(), Some(&b"lwt6-test/notify"[..]));
        let p = address("/run/systemd/notify").unwrap();
        assert_eq!(
            p.as_pathname(),
            Some(std::path::Path::new("/run/systemd/notify"))
        );
        assert!(address("relative/path").is_err());
        assert!(address("").is_err());
    }

    #[test]
    fn a_notification_arrives_as_one_datagram_on_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt as _;
        let name = format!("lwt6-notify-test-{}", std::process::id());
        let rx = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
        let n = Notifier {
            to: Some((
                UnixDatagram::unbound().unwrap(),
                address(&format!("@{name}")).unwrap(),
            )),
        };
        n.reloading();
        let mut buf = [0u8; 512];
        let len = rx.recv(&mut buf).unwrap();
        let text = std::str::from_utf8(&buf[..len]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "RELOADING=1");
        let us: u64 = lines[1]
            .strip_prefix("MONOTONIC_USEC=")
            .unwrap()
            .parse()
            .unwrap();
        // Within a second of CLOCK_MONOTONIC read independently (the uptime clock, /proc/uptime, is close to it
        // on a machine that never suspended; here only the unit and magnitude matter: microseconds, not ns).
        let up: f64 = std::fs::read_to_string("/proc/uptime")
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let up_us = (up * 1e6) as u64;
        assert!(us <= up_us + 1_000_000, "{us} vs uptime {up_us}");
        assert!(us > 0);
    }
}
