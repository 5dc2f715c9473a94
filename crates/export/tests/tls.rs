//! TLS towards a collector (`otlp:https://`, `grpcs:`): a certificate authority and a server certificate made
//! with the `openssl` command for the test, a rustls server; the client must check the chain and the name, and
//! offer `h2` to a gRPC collector.

use lwt6_dataplane::hop::ioam_domain::{ExportEvent, IoamRecord};
use lwt6_export::target::Target;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command (the test makes its certificates with it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`{name}-ca.pem`) and a server certificate for localhost and 127.0.0.1 it signed (`{name}-srv.pem`,
/// `{name}-srv.key`), in a fresh directory.
fn pki(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lwt6-tls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509"];
    a.extend(ec);
    a.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=lwt6 test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ]);
    openssl(&d, &a);
    let mut a = vec!["req"];
    a.extend(ec);
    a.extend([
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=localhost",
    ]);
    openssl(&d, &a);
    std::fs::write(
        d.join("ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &d,
        &[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    );
    d
}

/// The server's thread: the ALPN protocol agreed and what it served.
type Served<T> = std::thread::JoinHandle<(Option<Vec<u8>>, T)>;

/// A TLS server on a free port offering `alpn`, serving one connection with `serve`; hands back what `serve`
/// returned and the ALPN protocol agreed.
fn server<T: Send + 'static>(
    d: &Path,
    alpn: &[u8],
    serve: impl FnOnce(&mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>) -> T
    + Send
    + 'static,
) -> (u16, Served<T>) {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(d.join("srv.pem"))
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(d.join("srv.key")).unwrap();
    let mut cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    let cfg = Arc::new(cfg);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (c, _) = l.accept().unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let conn = rustls::ServerConnection::new(cfg).unwrap();
        let mut s = rustls::StreamOwned::new(conn, c);
        let r = serve(&mut s);
        (s.conn.alpn_protocol().map(|p| p.to_vec()), r)
    });
    (port, t)
}

fn record() -> IoamRecord {
    IoamRecord {
        ts_ns: 1,
        event: ExportEvent::Egress,
        in_dev: 0,
        out_dev: Some(1),
        flow: None,
        // A pre-allocated trace (RFC 9197 §4.4.1), namespace 7, type 0x800000 (hop limit and node id), one node.
        option: vec![0x31, 14, 0, 0, 0, 7, 1 << 3, 0, 0x80, 0, 0, 0, 63, 0, 0, 1],
        node: Vec::new(),
    }
}

#[test]
fn otlp_over_tls_checks_the_chain() {
    let d = pki("otlp");
    let (port, t) = server(&d, b"http/1.1", |s| {
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let mut len = 0;
        loop {
            let mut h = String::new();
            r.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        let s = r.into_inner();
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        s.flush().unwrap();
        (line, body.len())
    });
    let spec = format!(
        "otlp:https://localhost:{port},ca={}",
        d.join("ca.pem").display()
    );
    let target: Target = spec.parse().unwrap();
    assert_eq!(
        target.to_string(),
        spec.replace(",ca=", "/v1/traces,ca="),
        "the default path shown"
    );
    let e = target.start(vec!["r0".into(), "r1".into()], 4).unwrap();
    e.submit_wait(vec![record()]);
    let r = e.finish();
    assert_eq!((r.written, r.lost), (1, 0), "{r:?}");
    let (alpn, (line, body)) = t.join().unwrap();
    assert_eq!(line, "POST /v1/traces HTTP/1.1\r\n");
    assert!(body > 0);
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
}

#[test]
fn a_collector_whose_certificate_another_ca_signed_is_refused() {
    let d = pki("wrong");
    let other = pki("other");
    let (port, t) = server(&d, b"http/1.1", |s| {
        let mut b = [0u8; 1];
        s.read(&mut b).is_err()
    });
    let spec = format!(
        "otlp:https://localhost:{port},ca={}",
        other.join("ca.pem").display()
    );
    let target: Target = spec.parse().unwrap();
    let e = target.start(vec![], 4).unwrap();
    e.submit_wait(vec![record(), record()]);
    let r = e.finish();
    assert_eq!((r.written, r.lost), (0, 2), "{r:?}");
    assert_eq!(
        r.failures.first().map(|f| f.0.as_str()),
        Some("tls"),
        "{r:?}"
    );
    let (_, handshake_failed) = t.join().unwrap();
    assert!(handshake_failed);
}

#[test]
fn grpcs_offers_h2_and_speaks_http2_inside_tls() {
    let d = pki("grpcs");
    let (port, t) = server(&d, b"h2", |s| {
        // RFC 9113 §3.4: the client connection preface.
        let mut preface = [0u8; 24];
        s.read_exact(&mut preface).unwrap();
        preface.to_vec()
    });
    let spec = format!("grpcs:localhost:{port},ca={}", d.join("ca.pem").display());
    let target: Target = spec.parse().unwrap();
    assert_eq!(target.to_string(), spec);
    let e = target.start(vec![], 4).unwrap();
    e.submit(vec![record()]);
    let (alpn, preface) = t.join().unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    drop(e);
}

#[test]
fn tls_targets_are_parsed_and_a_bad_ca_file_is_refused() {
    let t: Target = "grpcs:collector.example:7123".parse().unwrap();
    assert_eq!(
        t,
        Target::Grpcs(
            "collector.example:7123".into(),
            lwt6_export::net::DEFAULT_CA.into()
        )
    );
    assert!("otlp:http://h:1,ca=/x".parse::<Target>().is_err());
    let e = "grpcs:h:1,ca=/nonexistent/ca.pem"
        .parse::<Target>()
        .unwrap()
        .start(vec![], 1);
    assert!(e.err().unwrap().contains("/nonexistent/ca.pem"));
}
