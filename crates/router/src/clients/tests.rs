use super::*;
use crate::control::tests::control;

/// A control socket in a fresh directory.
fn socket(name: &str) -> (ControlSocket, std::path::PathBuf) {
    let d = std::env::temp_dir().join(format!("lwt6-clients-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("s.sock");
    (
        crate::control::listen(&path, lwt6_io::sys::gid()).unwrap(),
        path,
    )
}

/// The control thread's loop (as run.rs turns it) until `done` says so or `limit` passes; how long it took.
fn drive(
    clients: &mut Clients,
    sock: &ControlSocket,
    c: &mut Control,
    limit: Duration,
    mut done: impl FnMut(&Clients) -> bool,
) -> Duration {
    let t = Instant::now();
    let l = sock.listener.as_raw_fd();
    while !done(clients) && t.elapsed() < limit {
        clients.wait(&[l], l, 50);
        if !clients.accept(sock, c) {
            clients.serve(c);
        }
    }
    t.elapsed()
}

/// Reads a reply on a non-blocking client as far as it came.
fn reply_so_far(s: &UnixStream, got: &mut Vec<u8>) -> bool {
    let mut b = [0u8; 4096];
    let mut r = s;
    loop {
        match r.read(&mut b) {
            Ok(0) => return true,
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(_) => return false,
        }
    }
}

fn ask(path: &std::path::Path, request: &str) -> UnixStream {
    let mut s = UnixStream::connect(path).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    s.set_nonblocking(true).unwrap();
    s
}

#[test]
fn a_slow_and_an_idle_client_do_not_hold_another_request() {
    let (sock, path) = socket("slow");
    let mut c = control();
    let mut clients = Clients::default();
    // A slow client: one byte of its request now, the rest never (within the test); an idle one: nothing.
    let slow = ask(&path, "s");
    let idle = UnixStream::connect(&path).unwrap();
    drive(
        &mut clients,
        &sock,
        &mut c,
        Duration::from_millis(60),
        |_| false,
    );
    assert_eq!(clients.len(), 2);
    let fast = ask(&path, "-6 route add fd00:55::/64 via fd00:2::2 dev r1\n");
    let mut got = Vec::new();
    let took = drive(&mut clients, &sock, &mut c, Duration::from_secs(1), |_| {
        reply_so_far(&fast, &mut got)
    });
    assert_eq!(String::from_utf8_lossy(&got), "ok\n");
    assert!(took < Duration::from_millis(100), "{took:?}");
    assert_eq!(c.cfg().routes.len(), 1);
    // The two others are told they were too slow once their line's time is up, and closed.
    let mut a = Vec::new();
    let mut b = Vec::new();
    idle.set_nonblocking(true).unwrap();
    let took = drive(&mut clients, &sock, &mut c, Duration::from_secs(4), |_| {
        reply_so_far(&slow, &mut a) & reply_so_far(&idle, &mut b)
    });
    for r in [&a, &b] {
        let r = String::from_utf8_lossy(r);
        assert!(
            r.starts_with("error: timed out: the request was not complete within 2 s"),
            "{r}"
        );
    }
    assert!(
        took < LINE_DEADLINE + Duration::from_millis(300),
        "{took:?}"
    );
    assert_eq!(c.counters.timed_out.load(Ordering::Relaxed), 2);
    sock.remove();
}

#[test]
fn past_the_limit_the_longest_silent_connection_makes_room() {
    let (sock, path) = socket("limit");
    let mut c = control();
    let mut clients = Clients::with_limit(4);
    let idle: Vec<UnixStream> = (0..4)
        .map(|_| {
            let s = UnixStream::connect(&path).unwrap();
            std::thread::sleep(Duration::from_millis(2));
            s
        })
        .collect();
    drive(
        &mut clients,
        &sock,
        &mut c,
        Duration::from_millis(60),
        |_| false,
    );
    assert_eq!(clients.len(), 4);
    let fast = ask(&path, "show stats\n");
    let mut got = Vec::new();
    drive(&mut clients, &sock, &mut c, Duration::from_secs(1), |_| {
        reply_so_far(&fast, &mut got)
    });
    assert!(
        got.starts_with(b"ok\nio test"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // The first idle connection (silent longest) was closed with the reason.
    let mut first = Vec::new();
    idle[0].set_nonblocking(true).unwrap();
    assert!(reply_so_far(&idle[0], &mut first));
    let first = String::from_utf8_lossy(&first);
    assert!(
        first.starts_with("error: too many control connections (4)"),
        "{first}"
    );
    assert_eq!(c.counters.refused_too_many.load(Ordering::Relaxed), 1);
    sock.remove();
}

#[test]
fn too_long_a_line_is_refused_and_counted() {
    let (sock, path) = socket("long");
    let mut c = control();
    let mut clients = Clients::default();
    let s = UnixStream::connect(&path).unwrap();
    s.set_nonblocking(true).unwrap();
    let junk = vec![b'x'; MAX_REQUEST + 10];
    let mut sent = 0;
    let mut got = Vec::new();
    drive(&mut clients, &sock, &mut c, Duration::from_secs(2), |_| {
        if sent < junk.len()
            && let Ok(n) = (&s).write(&junk[sent..])
        {
            sent += n;
        }
        reply_so_far(&s, &mut got) || !got.is_empty()
    });
    let got = String::from_utf8_lossy(&got);
    assert!(
        got.starts_with("error: request longer than 65536 bytes"),
        "{got}"
    );
    assert_eq!(c.counters.too_large.load(Ordering::Relaxed), 1);
    sock.remove();
}

#[test]
fn a_reply_the_client_does_not_take_is_given_up() {
    let (sock, path) = socket("untaken");
    let mut c = control();
    let lines: Vec<String> = (0..40_000)
        .map(|i| {
            format!(
                "-6 route add fd00:{:x}::/48 via fd00:2::2 dev r1",
                0x1000 + i
            )
        })
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert!(c.handle_batch(&lines).0);
    let mut clients = Clients::default();
    // The table shown is megabytes: more than the socket buffers hold; the client never reads.
    let _s = ask(&path, "show routes\n");
    drive(&mut clients, &sock, &mut c, Duration::from_secs(5), |cl| {
        cl.conns
            .iter()
            .any(|c| matches!(c.phase, Phase::Writing { .. }))
    });
    let other = ask(&path, "show stats\n");
    let mut got = Vec::new();
    let took = drive(&mut clients, &sock, &mut c, Duration::from_secs(1), |_| {
        reply_so_far(&other, &mut got)
    });
    assert!(
        took < Duration::from_millis(500),
        "another client waited {took:?}"
    );
    let took = drive(&mut clients, &sock, &mut c, Duration::from_secs(5), |cl| {
        cl.is_empty()
    });
    assert!(
        // Counted from the last byte the client took, shortly before this wait started.
        took >= REPLY_IDLE - Duration::from_millis(300)
            && took < REPLY_IDLE + Duration::from_millis(500),
        "{took:?}"
    );
    assert_eq!(c.counters.reply_untaken.load(Ordering::Relaxed), 1);
    sock.remove();
}

#[test]
fn a_request_past_its_deadline_is_undone_and_says_so() {
    let mut c = control();
    let lines: Vec<String> = (0..10_000)
        .map(|i| {
            format!(
                "-6 route add fd00:{:x}::/48 via fd00:2::2 dev r1",
                0x1000 + i
            )
        })
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let before = crate::show::routes_text(&c.handle.load(), false, None);
    c.deadline = Some(Instant::now());
    let (ok, e) = c.handle_batch(&lines);
    c.deadline = None;
    assert!(!ok);
    assert!(
        e.starts_with("timed out: 4096 lines applied") && e.ends_with("nothing of it was applied"),
        "{e}"
    );
    assert_eq!(c.cfg().routes.len(), 0);
    assert_eq!(
        crate::show::routes_text(&c.handle.load(), false, None),
        before
    );
}

#[test]
fn a_monitor_sees_the_routes_another_client_changes_and_a_stalled_one_holds_nobody() {
    let (sock, path) = socket("monitor");
    let mut c = control();
    let mut clients = Clients::default();
    let watcher = ask(&path, "monitor -j\n");
    // A monitor that never reads: its socket buffer and then its outbox fill.
    let stalled = ask(&path, "monitor\n");
    let monitors = |cl: &Clients| {
        cl.conns
            .iter()
            .filter(|k| matches!(k.phase, Phase::Monitor { .. }))
            .count()
    };
    drive(&mut clients, &sock, &mut c, Duration::from_secs(2), |cl| {
        monitors(cl) == 2
    });
    assert_eq!(c.monitor.watching, 2);
    let adder = ask(
        &path,
        "route add fd00:9::/64 via fd00:2::2 dev r1 metric 7\n",
    );
    let mut got = Vec::new();
    let mut reply = Vec::new();
    drive(&mut clients, &sock, &mut c, Duration::from_secs(2), |_| {
        reply_so_far(&adder, &mut reply);
        reply_so_far(&watcher, &mut got);
        got.iter().filter(|&&b| b == b'\n').count() >= 2
    });
    assert_eq!(reply, b"ok\n");
    let text = String::from_utf8(got.clone()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("ok"));
    let e: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(e["event"], "route");
    assert_eq!(e["action"], "add");
    assert_eq!(e["dst"], "fd00:9::/64");
    assert_eq!(e["gateway"], "fd00:2::2");
    assert_eq!(e["dev"], "r1");
    assert_eq!(e["metric"], 7);
    // 40,000 routes at once: far more than the 1 MiB outbox of the client that does not read.
    let mut batch = String::from("batch\n");
    for i in 0..40_000u32 {
        batch += &format!("route add fd10:{:x}:{:x}::/64 dev r1\n", i >> 8, i & 0xff);
    }
    // Written from another thread: the request is larger than the socket's buffer.
    let b = UnixStream::connect(&path).unwrap();
    let mut w = b.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        w.write_all(batch.as_bytes()).unwrap();
        w.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut reply = Vec::new();
    drive(&mut clients, &sock, &mut c, Duration::from_secs(20), |_| {
        // (The writer's clone shares the socket's blocking mode: non-blocking only once it is done.)
        if writer.is_finished() {
            b.set_nonblocking(true).unwrap();
            reply_so_far(&b, &mut reply);
        }
        reply_so_far(&watcher, &mut got);
        reply == b"ok\n"
    });
    writer.join().unwrap();
    assert_eq!(reply, b"ok\n");
    assert!(c.counters.monitor_dropped.load(Ordering::Relaxed) > 0);
    // Another request is answered at once however full the stalled monitor is.
    let s = ask(&path, "show stats -j\n");
    let mut reply = Vec::new();
    let took = drive(&mut clients, &sock, &mut c, Duration::from_secs(2), |_| {
        reply_so_far(&s, &mut reply)
    });
    assert!(took < Duration::from_millis(500), "{took:?}");
    let body = String::from_utf8(reply).unwrap();
    let stats: serde_json::Value =
        serde_json::from_str(body.strip_prefix("ok\n").unwrap()).unwrap();
    assert!(
        stats["monitor_events_dropped"].as_u64().unwrap() > 0,
        "{stats}"
    );
    // The monitors gone, their connections close.
    drop(stalled);
    drop(watcher);
    drive(&mut clients, &sock, &mut c, Duration::from_secs(2), |cl| {
        cl.is_empty()
    });
    assert!(clients.is_empty());
    assert_eq!(c.monitor.watching, 0);
}
