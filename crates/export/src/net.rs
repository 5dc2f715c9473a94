//! Reaching a collector: every address `HOST:PORT` resolves to, tried in turn.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Connects to `addr` (`HOST:PORT`): each address it resolves to is tried in the resolver's order, each within
/// `timeout`, until one accepts (`localhost` may resolve to `::1` first while the collector listens on
/// `127.0.0.1` only). On failure, the error of the last address tried, with every address and why it failed in
/// its message.
pub fn connect(addr: &str, timeout: Duration) -> Result<(TcpStream, SocketAddr), ConnectError> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| ConnectError::Resolve(format!("{addr}: {e}")))?
        .collect();
    let mut tried = Vec::new();
    let mut last = None;
    for sa in &addrs {
        match TcpStream::connect_timeout(sa, timeout) {
            Ok(s) => return Ok((s, *sa)),
            Err(e) => {
                tried.push(format!("{sa}: {e}"));
                last = Some(e.kind());
            }
        }
    }
    match last {
        None => Err(ConnectError::Resolve(format!("{addr}: no address"))),
        Some(kind) => Err(ConnectError::Connect(std::io::Error::new(
            kind,
            tried.join("; "),
        ))),
    }
}

/// Why no connection was made.
#[derive(Debug)]
pub enum ConnectError {
    /// The name did not resolve (or to no address).
    Resolve(String),
    /// Every address refused or timed out: the last one's kind, every address and its error in the message.
    Connect(std::io::Error),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Resolve(m) => write!(f, "resolving {m}"),
            ConnectError::Connect(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn every_address_is_tried_in_turn() {
        // A listener on 127.0.0.1 only; "localhost" resolves to ::1 and/or 127.0.0.1 (in some order).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (_, sa) = connect(&format!("localhost:{port}"), Duration::from_secs(1)).unwrap();
        assert_eq!(sa, l.local_addr().unwrap());
    }

    #[test]
    fn a_refused_address_names_itself() {
        // A port that was just free: nothing listens on it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let Err(ConnectError::Connect(e)) =
            connect(&format!("127.0.0.1:{port}"), Duration::from_secs(1))
        else {
            panic!("connected to a port nothing listens on");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    }
}
