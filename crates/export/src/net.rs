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

/// The CA bundle used when a TLS target names none (Debian's and most distributions' system bundle).
pub const DEFAULT_CA: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A connection to a collector: in the clear, or TLS (rustls) over TCP.
#[derive(Debug)]
pub enum Stream {
    /// TCP in the clear.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    /// The TCP socket (timeouts, options).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl std::io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl std::io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A TLS client configuration trusting the certificates of the PEM file `ca` (TLS 1.2 and 1.3, ring's
/// algorithms), offering the ALPN protocols `alpn` (`h2` for gRPC). An error names the file and what is wrong.
pub fn tls_config(
    ca: &std::path::Path,
    alpn: &[&[u8]],
) -> Result<std::sync::Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", ca.display());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).map_err(|e| at(&e))? {
        roots.add(c.map_err(|e| at(&e))?).map_err(|e| at(&e))?;
    }
    if roots.is_empty() {
        return Err(at(&"no certificate in it"));
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| at(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(std::sync::Arc::new(cfg))
}

/// [`connect`], then TLS with `tls` when given: the server's certificate must name the host of `addr` (a name or
/// an address; the handshake itself happens at the first read or write).
pub fn connect_stream(
    addr: &str,
    timeout: Duration,
    tls: Option<&std::sync::Arc<rustls::ClientConfig>>,
) -> Result<Stream, ConnectError> {
    let (tcp, _) = connect(addr, timeout)?;
    let Some(cfg) = tls else {
        return Ok(Stream::Plain(tcp));
    };
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| ConnectError::Resolve(format!("{host}: not a TLS server name: {e}")))?;
    let conn = rustls::ClientConnection::new(std::sync::Arc::clone(cfg), name)
        .map_err(|e| ConnectError::Connect(std::io::Error::other(format!("{addr}: TLS: {e}"))))?;
    Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
}
