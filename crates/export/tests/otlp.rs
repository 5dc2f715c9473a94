//! The OTLP exporter's requests, decoded with the upstream OpenTelemetry definitions (`opentelemetry-proto`,
//! compiled by prost from the OTLP `.proto` files), and its HTTP behaviour against a small local receiver.
//! Expected values are worked out by hand from RFC 9197's layouts below, not taken from our output.

use lwt6_dataplane::hop::ioam_domain::{ExportEvent, FlowIds, IoamRecord};
use lwt6_export::exporter::Exporter;
use lwt6_export::grpc::Limits;
use lwt6_export::otlp::{Client, Endpoint, Ids, encode_request};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind};
use prost::Message;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// A pre-allocated trace (RFC 9197 §4.4.1), namespace 7, trace type bits 0, 2, 3, 4, 6 (hop limit and node id,
/// timestamp seconds, timestamp fraction, transit delay, queue depth: 0xBA0000, 20 octets a node, node_len 5),
/// two nodes filled, no room left; inside its Hop-by-Hop option header (type 0x31, length, reserved, IOAM
/// option type 0). The trace holds the newest node first.
fn two_node_trace() -> Vec<u8> {
    let node = |hop: u8, id: u32, sec: u32, frac: u32, delay: u32, qd: u32| {
        let mut n = vec![hop];
        n.extend_from_slice(&id.to_be_bytes()[1..]);
        for v in [sec, frac, delay, qd] {
            n.extend_from_slice(&v.to_be_bytes());
        }
        n
    };
    let mut o = vec![0x31, 0, 0, 0];
    o.extend_from_slice(&7u16.to_be_bytes());
    // NodeLen 5 (5 bits), flags 0 (4 bits), RemainingLen 0 (7 bits).
    o.extend_from_slice(&(5u16 << 11).to_be_bytes());
    o.extend_from_slice(&[0xBA, 0x00, 0x00, 0x00]);
    o.extend(node(62, 2, 1_700_000_000, 250_010, 2_000, 0));
    o.extend(node(63, 1, 1_700_000_000, 250_000, 1_500, 7));
    o[1] = (o.len() - 2) as u8;
    o
}

fn record(option: Vec<u8>) -> IoamRecord {
    IoamRecord {
        ts_ns: 1_700_000_001_000_000_000,
        event: ExportEvent::Egress,
        in_dev: 0,
        out_dev: Some(1),
        flow: Some(FlowIds {
            src: "fd00:1::1".parse().unwrap(),
            dst: "fd00:2::2".parse().unwrap(),
            flow_label: 0x12345,
            proto: 17,
            ports: Some((40000, 3333)),
        }),
        option,
        node: Vec::new(),
    }
}

fn names() -> Vec<String> {
    vec!["r0".into(), "r1".into()]
}

fn get<'a>(s: &'a Span, key: &str) -> Option<&'a any_value::Value> {
    s.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|AnyValue { value }| value.as_ref())
}

fn int(s: &Span, key: &str) -> Option<i64> {
    match get(s, key) {
        Some(any_value::Value::IntValue(i)) => Some(*i),
        _ => None,
    }
}

fn string(s: &Span, key: &str) -> Option<String> {
    match get(s, key) {
        Some(any_value::Value::StringValue(v)) => Some(v.clone()),
        _ => None,
    }
}

fn spans(body: &[u8]) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(body).expect("an ExportTraceServiceRequest");
    assert_eq!(req.resource_spans.len(), 1);
    let rs = &req.resource_spans[0];
    let res = rs.resource.as_ref().expect("a resource");
    assert!(res.attributes.iter().any(|kv| kv.key == "service.name"
        && kv.value.as_ref().and_then(|v| v.value.clone())
            == Some(any_value::Value::StringValue("lwt6".into()))));
    assert_eq!(rs.scope_spans.len(), 1);
    assert_eq!(rs.scope_spans[0].scope.as_ref().unwrap().name, "lwt6-ioam");
    rs.scope_spans[0].spans.clone()
}

#[test]
fn one_trace_per_option_one_span_per_node_decoded_by_the_upstream_definitions() {
    let mut ids = Ids::new(0x1122_3344_5566_7788);
    let body = encode_request(
        &[record(two_node_trace()), record(two_node_trace())],
        &names(),
        &mut ids,
    );
    let spans = spans(&body);
    // Two records: a root span and two node spans each.
    assert_eq!(spans.len(), 6);
    let (a, b) = spans.split_at(3);
    assert_ne!(a[0].trace_id, b[0].trace_id, "one trace per option");
    for trace in [a, b] {
        let root = &trace[0];
        assert_eq!(root.trace_id.len(), 16);
        assert!(root.trace_id.iter().any(|&x| x != 0));
        assert_eq!(root.span_id.len(), 8);
        assert!(root.parent_span_id.is_empty());
        assert_eq!(root.name, "ioam egress");
        assert_eq!(root.kind, SpanKind::Internal as i32);
        assert_eq!(int(root, "ioam.namespace_id"), Some(7));
        assert_eq!(int(root, "ioam.trace_type"), Some(0xBA0000));
        assert_eq!(int(root, "ioam.node_len"), Some(5));
        assert_eq!(int(root, "ioam.remaining_len"), Some(0));
        assert_eq!(
            string(root, "ioam.option_type").as_deref(),
            Some("prealloc_trace")
        );
        assert_eq!(string(root, "ioam.in_dev").as_deref(), Some("r0"));
        assert_eq!(string(root, "ioam.out_dev").as_deref(), Some("r1"));
        assert_eq!(string(root, "ioam.flow.src").as_deref(), Some("fd00:1::1"));
        assert_eq!(int(root, "ioam.flow.label"), Some(0x12345));
        assert_eq!(int(root, "ioam.flow.dport"), Some(3333));
        // From the first node's timestamp to the record's time.
        assert_eq!(root.start_time_unix_nano, 1_700_000_000_250_000_000);
        assert_eq!(root.end_time_unix_nano, 1_700_000_001_000_000_000);
        let mut seen = std::collections::HashSet::new();
        seen.insert(root.span_id.clone());
        // Path order: the first node met (id 1) first.
        for (n, (id, hop, frac, delay, qd)) in trace[1..]
            .iter()
            .zip([(1, 63, 250_000u64, 1_500u64, 7), (2, 62, 250_010, 2_000, 0)])
        {
            assert_eq!(n.trace_id, root.trace_id);
            assert_eq!(n.parent_span_id, root.span_id);
            assert!(seen.insert(n.span_id.clone()), "span ids differ");
            assert_eq!(n.name, format!("ioam node {id}"));
            assert_eq!(int(n, "ioam.node.id"), Some(id));
            assert_eq!(int(n, "ioam.node.hop_limit"), Some(hop));
            assert_eq!(int(n, "ioam.node.timestamp_sec"), Some(1_700_000_000));
            assert_eq!(int(n, "ioam.node.timestamp_frac"), Some(frac as i64));
            assert_eq!(int(n, "ioam.node.transit_delay"), Some(delay as i64));
            assert_eq!(int(n, "ioam.node.queue_depth"), Some(qd));
            // Fields the trace type does not have are absent.
            assert_eq!(get(n, "ioam.node.ingress_if_id"), None);
            assert_eq!(get(n, "ioam.node.namespace_data"), None);
            // Seconds and microseconds; the transit delay in nanoseconds.
            let start = 1_700_000_000 * 1_000_000_000 + frac * 1000;
            assert_eq!(n.start_time_unix_nano, start);
            assert_eq!(n.end_time_unix_nano, start + delay);
        }
    }
}

#[test]
fn a_short_option_is_a_span_with_its_error_and_bytes() {
    let mut ids = Ids::new(1);
    let body = encode_request(&[record(vec![0x31, 2, 0, 0])], &names(), &mut ids);
    let s = spans(&body);
    assert_eq!(s.len(), 1);
    assert_eq!(
        string(&s[0], "ioam.error").as_deref(),
        Some("option too short")
    );
    assert_eq!(
        get(&s[0], "ioam.raw"),
        Some(&any_value::Value::BytesValue(vec![0x31, 2, 0, 0]))
    );
}

#[test]
fn endpoints() {
    let e = Endpoint::parse("http://127.0.0.1:4318").unwrap();
    assert_eq!(
        (e.authority.as_str(), e.path.as_str()),
        ("127.0.0.1:4318", "/v1/traces")
    );
    let e = Endpoint::parse("http://[::1]:4318/custom/traces").unwrap();
    assert_eq!(
        (e.authority.as_str(), e.path.as_str()),
        ("[::1]:4318", "/custom/traces")
    );
    assert_eq!(e.tls, None);
    let e = Endpoint::parse("https://h:1").unwrap();
    assert_eq!(e.tls, Some(lwt6_export::net::DEFAULT_CA.into()));
    for bad in [
        "127.0.0.1:4318",
        "ftp://h:1",
        "http://h",
        "http://:1",
        "http://h:99999",
    ] {
        assert!(Endpoint::parse(bad).is_err(), "{bad}");
    }
}

/// A receiver answering each request with the next status of `answers` (a new connection after each answer
/// when `close`); hands back the bodies it accepted (after checking method, path and content type).
fn receiver(answers: Vec<u16>) -> (u16, std::thread::JoinHandle<Vec<Vec<u8>>>) {
    receiver_on(TcpListener::bind("127.0.0.1:0").unwrap(), answers)
}

fn receiver_on(l: TcpListener, answers: Vec<u16>) -> (u16, std::thread::JoinHandle<Vec<Vec<u8>>>) {
    let port = l.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        let mut answers = answers.into_iter().peekable();
        while answers.peek().is_some() {
            let (c, _) = l.accept().unwrap();
            let mut r = BufReader::new(c);
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let Some(status) = answers.next() else {
                    break;
                };
                assert_eq!(line, "POST /v1/traces HTTP/1.1\r\n");
                let mut len = 0;
                let mut ctype = String::new();
                loop {
                    line.clear();
                    r.read_line(&mut line).unwrap();
                    let l = line.trim_end().to_ascii_lowercase();
                    if l.is_empty() {
                        break;
                    }
                    if let Some(v) = l.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if let Some(v) = l.strip_prefix("content-type:") {
                        ctype = v.trim().to_string();
                    }
                }
                assert_eq!(ctype, "application/x-protobuf");
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                if status == 200 {
                    bodies.push(body);
                }
                let reply = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
                r.get_mut().write_all(reply.as_bytes()).unwrap();
                if answers.peek().is_none() {
                    break;
                }
            }
        }
        bodies
    });
    (port, t)
}

fn quick() -> Limits {
    Limits {
        connect_timeout: Duration::from_millis(500),
        io_timeout: Duration::from_secs(2),
        backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        give_up_after: Duration::from_secs(5),
        ..Limits::default()
    }
}

#[test]
fn posts_batches_keeps_the_connection_and_retries_a_busy_collector() {
    // 200, then 503 (retryable: the same batch again) and 200.
    let (port, t) = receiver(vec![200, 503, 200]);
    let ep = Endpoint::parse(&format!("http://localhost:{port}")).unwrap();
    let e = Exporter::spawn(Box::new(Client::with_limits(ep, names(), quick())), 4);
    e.submit_wait(vec![record(two_node_trace())]);
    e.submit_wait(vec![record(two_node_trace()), record(two_node_trace())]);
    let r = e.finish();
    assert_eq!((r.written, r.lost), (3, 0), "{r:?}");
    assert_eq!(r.failures, vec![("http 503".to_string(), 1)]);
    let bodies = t.join().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(spans(&bodies[0]).len(), 3);
    assert_eq!(spans(&bodies[1]).len(), 6);
}

#[test]
fn a_rejected_batch_is_lost_at_once_and_a_missing_collector_counts_every_trace() {
    // 400: not retried, the batch is lost; the next batch goes through.
    let (port, t) = receiver(vec![400, 200]);
    let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let e = Exporter::spawn(Box::new(Client::with_limits(ep, names(), quick())), 4);
    e.submit_wait(vec![record(two_node_trace()), record(two_node_trace())]);
    e.submit_wait(vec![record(two_node_trace())]);
    let r = e.finish();
    assert_eq!((r.written, r.lost), (1, 2), "{r:?}");
    assert_eq!(r.failures, vec![("http 400".to_string(), 1)]);
    assert_eq!(t.join().unwrap().len(), 1);

    // Nothing listens: every attempt refused, every trace lost.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let limits = Limits {
        attempts: 2,
        ..quick()
    };
    let e = Exporter::spawn(Box::new(Client::with_limits(ep, names(), limits)), 4);
    e.submit_wait(vec![record(two_node_trace()); 3]);
    let r = e.finish();
    assert_eq!((r.written, r.lost), (0, 3));
    assert_eq!(r.failures, vec![("refused".to_string(), 2)]);
}

#[test]
fn a_collector_that_comes_back_is_reconnected() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let limits = Limits {
        attempts: 1,
        ..quick()
    };
    let e = Exporter::spawn(Box::new(Client::with_limits(ep, names(), limits)), 4);
    // Down: the batch is lost.
    e.submit_wait(vec![record(two_node_trace()); 2]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while e.progress().lost < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(e.progress().lost, 2);
    // Back on the same port: after the backoff the next batch connects again.
    let (_, t) = receiver_on(TcpListener::bind(("127.0.0.1", port)).unwrap(), vec![200]);
    std::thread::sleep(Duration::from_millis(50));
    e.submit_wait(vec![record(two_node_trace())]);
    let r = e.finish();
    assert_eq!((r.written, r.lost), (1, 2), "{r:?}");
    assert_eq!(t.join().unwrap().len(), 1);
}
