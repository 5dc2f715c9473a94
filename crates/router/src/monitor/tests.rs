use super::*;

fn ev(text: &str) -> Event {
    Event::new(text.to_string(), json!({"event": "x", "t": text}))
}

/// A client that takes nothing (its socket buffer is full).
struct Full;
impl Write for Full {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::WouldBlock.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_outbox_drops_counts_and_says_so_once_there_is_room() {
    let dropped = AtomicU64::new(0);
    // 3 bytes of "ok\n", then lines of 10 bytes ("event NNN\n"): 64 bytes hold 6 of them (63 bytes).
    let mut o = Outbox::new(b"ok\n", 64, false);
    let mut queued = 0;
    for i in 0..10 {
        if o.offer(&ev(&format!("event {i:03}")), &dropped) {
            queued += 1;
        }
    }
    assert_eq!(queued, 6);
    assert_eq!(dropped.load(Ordering::Relaxed), 4);
    // The client takes nothing: nothing is lost from what was queued, nothing more fits.
    o.write_to(Full).unwrap();
    assert!(!o.offer(&ev("event 010"), &dropped));
    assert_eq!(dropped.load(Ordering::Relaxed), 5);
    // The client reads: the queued lines, then the line saying how many were dropped, then what comes after.
    let mut got = Vec::new();
    o.write_to(&mut got).unwrap();
    assert!(o.offer(&ev("event 011"), &dropped));
    o.write_to(&mut got).unwrap();
    let text = String::from_utf8(got).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "ok",
            "event 000",
            "event 001",
            "event 002",
            "event 003",
            "event 004",
            "event 005",
            "dropped 5 events (the client did not read them in time)",
            "event 011"
        ]
    );
    assert!(!o.pending());
}

#[test]
fn an_event_never_jumps_ahead_of_the_drop_notice() {
    let dropped = AtomicU64::new(0);
    // Room for "ok\n" and one 10-byte line; the notice (JSON) is longer than what frees up at first.
    let mut o = Outbox::new(b"ok\n", 20, true);
    // {"event":"x","t":"a"} and its newline: 22 bytes, more than the 17 free.
    assert!(!o.offer(&ev("a"), &dropped));
    assert_eq!(dropped.load(Ordering::Relaxed), 1);
    let mut got = Vec::new();
    o.write_to(&mut got).unwrap();
    assert_eq!(got, b"ok\n");
    // The JSON notice is longer than 20 bytes: it never fits, so an event that would fit (2 bytes) is dropped
    // too rather than sent before it.
    let before = dropped.load(Ordering::Relaxed);
    assert!(!o.offer(&Event::new("b".into(), json!(1)), &dropped));
    assert_eq!(dropped.load(Ordering::Relaxed), before + 1);
}

#[test]
fn json_lines_are_one_object_each_with_an_event_field() {
    let dropped = AtomicU64::new(0);
    let mut o = Outbox::new(b"", 1 << 20, true);
    let mut e = Events {
        watching: 1,
        ..Default::default()
    };
    e.applied(
        "ctl",
        &[
            "neigh add 2001:db8::9 lladdr 02:00:00:00:00:09 dev r0",
            "sysctl net.ipv6.conf.all.seg6_enabled=1",
        ],
        &[],
        &[],
    );
    let (evs, over) = e.take();
    assert_eq!(over, 0);
    for x in &evs {
        o.offer(x, &dropped);
    }
    let mut got = Vec::new();
    o.write_to(&mut got).unwrap();
    let v: Vec<Value> = String::from_utf8(got)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(v[0]["event"], "neigh");
    assert_eq!(v[0]["action"], "add");
    assert_eq!(v[0]["dst"], "2001:db8::9");
    assert_eq!(v[0]["dev"], "r0");
    assert_eq!(v[0]["lladdr"], "02:00:00:00:00:09");
    assert_eq!(v[1]["event"], "config");
    assert_eq!(v.len(), 2);
}

#[test]
fn nothing_is_recorded_while_nobody_watches_and_too_much_at_once_is_counted() {
    let mut e = Events::default();
    e.reloaded(Err("bad"));
    assert!(e.take().0.is_empty());
    e.watching = 1;
    // Each event is at least 20 bytes: BUFFER / 20 of them fill the pending list.
    let n = BUFFER / 20 + 10;
    for _ in 0..n {
        e.reloaded(Err("some reason that is long enough"));
    }
    let (evs, over) = e.take();
    assert!(!evs.is_empty());
    assert_eq!(evs.len() as u64 + over, n as u64);
    assert!(over > 0);
}

#[test]
fn trace_and_capture_requests_that_start_or_stop_are_events_and_refused_ones_are_not() {
    let mut e = Events {
        watching: 1,
        ..Default::default()
    };
    e.request(&["capture", "start", "/tmp/x.pcapng"], true);
    e.request(&["trace", "stop"], true);
    e.request(&["capture", "start", "-"], false);
    e.request(&["trace", "show"], true);
    let (evs, _) = e.take();
    let lines: Vec<&str> = evs.iter().map(|x| x.line(false)).collect();
    assert_eq!(
        lines,
        [
            "capture started: capture start /tmp/x.pcapng\n",
            "trace stopped: trace stop\n"
        ]
    );
}
