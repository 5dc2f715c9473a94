//! `lwt6 ctl monitor [-j]`: route, neighbour and configuration events, streamed to the connected clients as they
//! happen (as `ip monitor` does; docs/live.md, *Monitor*).
//!
//! The control thread records events in one place per source: [`Events::applied`] for configuration lines
//! (`lwt6 ctl` lines and batches: the routes they added, deleted or replaced, their neighbour lines, their other
//! lines), [`Events::changes`] for what is published in place outside a request (neighbours learned, changed or
//! forgotten; routes mirrored from the kernel), [`Events::reloaded`] for a SIGHUP reload (applied, with the routes
//! it changed, or refused). Nothing is recorded while no client is watching. The connection machinery
//! ([`crate::clients`]) hands each recorded event to every monitor connection's [`Outbox`]: a bounded buffer
//! written as fast as the client takes it; when it is full, events are dropped, counted, and one line saying how
//! many takes their place as soon as there is room.

use lwt6_dataplane::snapshot::Change;
use lwt6_dataplane::spec::{Encap, MAIN_TABLE, Route};
use lwt6_wire::ethernet::mac_text;
use serde_json::{Value, json};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of events waiting for one monitor client before further events are dropped.
pub const BUFFER: usize = 1 << 20;

/// Whether the request line `first` is a `monitor` request.
pub fn is_request(first: &str) -> bool {
    first.split_whitespace().next() == Some("monitor")
}

/// Whether a `monitor` request asks for JSON lines (`-j`), or why it is not one.
pub fn parse_request(first: &str) -> Result<bool, String> {
    match first.split_whitespace().collect::<Vec<_>>()[..] {
        ["monitor"] => Ok(false),
        ["monitor", "-j" | "--json"] => Ok(true),
        _ => Err(format!(
            "'{}': monitor takes no argument but -j (usage: monitor [-j])",
            lwt6_dataplane::spec::shown_token(first.trim())
        )),
    }
}

/// One event, in both forms: text as `ip monitor` prints it and one JSON object (with an `"event"` field).
#[derive(Debug, Clone)]
pub struct Event {
    text: String,
    json: String,
}

impl Event {
    fn new(text: String, json: Value) -> Event {
        Event {
            text: text + "\n",
            json: json.to_string() + "\n",
        }
    }

    /// The event's line (with its newline), as text or JSON.
    pub fn line(&self, json: bool) -> &str {
        if json { &self.json } else { &self.text }
    }
}

/// The events recorded since the connection machinery last took them.
#[derive(Debug, Default)]
pub struct Events {
    /// How many monitor connections are open (set by [`crate::clients`]): nothing is recorded when none.
    pub watching: usize,
    pending: Vec<Event>,
    bytes: usize,
    /// Events not recorded because more than [`BUFFER`] bytes were waiting already (every client would have
    /// dropped them).
    overflow: u64,
}

impl Events {
    /// Whether a client is watching (events are worth recording).
    pub fn active(&self) -> bool {
        self.watching > 0
    }

    /// An empty record, watched as this one is: filled while a request is applied, joined to this one when it
    /// was ([`Events::join`]), dropped when it was not.
    pub fn fork(&self) -> Events {
        Events {
            watching: self.watching,
            ..Default::default()
        }
    }

    /// Appends what `other` recorded.
    pub fn join(&mut self, other: Events) {
        self.overflow += other.overflow;
        for e in other.pending {
            self.push(e);
        }
    }

    /// Counts one event lost, without making it, when [`BUFFER`] bytes wait already (a large batch: making
    /// each event would cost time for nothing). True then.
    fn full(&mut self) -> bool {
        if self.bytes >= BUFFER {
            self.overflow += 1;
            return true;
        }
        false
    }

    fn push(&mut self, e: Event) {
        if !self.active() {
            return;
        }
        if self.bytes >= BUFFER {
            self.overflow += 1;
            return;
        }
        self.bytes += e.text.len().max(e.json.len());
        self.pending.push(e);
    }

    /// The events recorded, and how many were not (too many at once).
    pub fn take(&mut self) -> (Vec<Event>, u64) {
        self.bytes = 0;
        (
            std::mem::take(&mut self.pending),
            std::mem::take(&mut self.overflow),
        )
    }

    /// Configuration lines applied from `source` (`ctl`): the routes they removed and added (one removed and one
    /// added of the same table, prefix and metric: replaced), their neighbour lines, and their other lines.
    pub fn applied(&mut self, source: &str, lines: &[&str], removed: &[Route], added: &[Route]) {
        if !self.active() {
            return;
        }
        self.routes(source, removed, added);
        for line in lines {
            let toks: Vec<&str> = line.split_whitespace().collect();
            match toks.first().copied() {
                Some("route") | None => {}
                Some("neigh") => self.push(neigh_line(source, &toks)),
                Some(_) => self.push(Event::new(
                    format!("config {}", toks.join(" ")),
                    json!({"event": "config", "source": source, "line": toks.join(" ")}),
                )),
            }
        }
    }

    fn routes(&mut self, source: &str, removed: &[Route], added: &[Route]) {
        let key = |r: &Route| (r.table, r.prefix, r.metric);
        let added_keys: std::collections::HashSet<_> = added.iter().map(key).collect();
        let replaced: std::collections::HashSet<_> = removed
            .iter()
            .map(key)
            .filter(|k| added_keys.contains(k))
            .collect();
        for r in removed.iter().filter(|r| !replaced.contains(&key(r))) {
            if self.full() {
                continue;
            }
            self.push(route_event("del", source, r));
        }
        for r in added {
            if self.full() {
                continue;
            }
            let action = if replaced.contains(&key(r)) {
                "replace"
            } else {
                "add"
            };
            self.push(route_event(action, source, r));
        }
    }

    /// A `trace` or `capture` request (`toks`) that started or stopped one (`ok`: it was applied).
    pub fn request(&mut self, toks: &[&str], ok: bool) {
        let (Some(&kind), Some(&what)) = (toks.first(), toks.get(1)) else {
            return;
        };
        let action = match (kind, what) {
            ("trace", "add") | ("capture", "start") => "started",
            ("trace", "stop" | "clear") | ("capture", "stop") => "stopped",
            _ => return,
        };
        if ok {
            self.push(Event::new(
                format!("{kind} {action}: {}", toks.join(" ")),
                json!({"event": kind, "action": action, "line": toks.join(" ")}),
            ));
        }
    }

    /// A reloaded configuration (SIGHUP): refused with its reason, or applied with the routes that changed
    /// between `old` and `new`.
    pub fn reloaded(&mut self, result: Result<(&[Route], &[Route]), &str>) {
        if !self.active() {
            return;
        }
        match result {
            Err(why) => self.push(Event::new(
                format!("reload refused: {why}"),
                json!({"event": "reload", "ok": false, "error": why}),
            )),
            Ok((old, new)) => {
                let key = |r: &Route| (r.table, r.prefix, r.metric);
                let same = |a: &Route, b: &Route| {
                    Route {
                        line: 0,
                        ..a.clone()
                    } == Route {
                        line: 0,
                        ..b.clone()
                    }
                };
                let olds: std::collections::HashMap<_, &Route> =
                    old.iter().map(|r| (key(r), r)).collect();
                let news: std::collections::HashMap<_, &Route> =
                    new.iter().map(|r| (key(r), r)).collect();
                let removed: Vec<Route> = old
                    .iter()
                    .filter(|r| news.get(&key(r)).is_none_or(|n| !same(r, n)))
                    .cloned()
                    .collect();
                let added: Vec<Route> = new
                    .iter()
                    .filter(|r| olds.get(&key(r)).is_none_or(|o| !same(r, o)))
                    .cloned()
                    .collect();
                self.routes("reload", &removed, &added);
                self.push(Event::new(
                    "reload applied".into(),
                    json!({"event": "reload", "ok": true}),
                ));
            }
        }
    }

    /// Changes published in place outside a request (neighbours learned, changed or forgotten; routes mirrored
    /// from the kernel), on the links named `links`.
    pub fn changes(&mut self, changes: &[Change], links: &[String]) {
        if !self.active() {
            return;
        }
        let dev = |d: usize| links.get(d).map_or("?", String::as_str).to_string();
        for c in changes {
            if self.full() {
                continue;
            }
            let e = match c {
                Change::AddRoute(r) => route_event("add", "kernel", r),
                Change::ReplaceRoute(r) => route_event("replace", "kernel", r),
                Change::DelRoute {
                    prefix,
                    metric,
                    table,
                    ..
                } => {
                    let mut j = json!({"event": "route", "action": "del", "source": "kernel",
                        "dst": prefix.to_string(), "metric": metric, "table": table});
                    let mut t = format!("Deleted {prefix}");
                    if *table != MAIN_TABLE {
                        t += &format!(" table {table}");
                    }
                    t += &format!(" metric {metric} proto kernel");
                    j["table"] = json!(table);
                    Event::new(t, j)
                }
                Change::AddReject {
                    prefix,
                    metric,
                    kind,
                } => Event::new(
                    format!("{} {prefix} metric {metric} proto kernel", kind.name()),
                    json!({"event": "route", "action": "add", "source": "kernel",
                        "dst": prefix.to_string(), "metric": metric, "table": MAIN_TABLE,
                        "type": kind.name()}),
                ),
                Change::NeighSet {
                    dev: d,
                    addr,
                    mac,
                    stale,
                } => {
                    let state = if *stale { "STALE" } else { "REACHABLE" };
                    let (d, mac) = (dev(*d), mac_text(mac));
                    Event::new(
                        format!("{addr} dev {d} lladdr {mac} {state}"),
                        json!({"event": "neigh", "action": "set", "source": "learned",
                            "dst": addr.to_string(), "dev": d, "lladdr": mac, "state": state}),
                    )
                }
                Change::NeighDel { dev: d, addr } => {
                    let d = dev(*d);
                    Event::new(
                        format!("Deleted {addr} dev {d}"),
                        json!({"event": "neigh", "action": "del", "source": "learned",
                            "dst": addr.to_string(), "dev": d}),
                    )
                }
                // Static entries, addresses and settings change only through requests, whose lines are events of
                // their own.
                Change::StaticNeighSet { .. }
                | Change::StaticNeighDel { .. }
                | Change::AddrAdd { .. }
                | Change::Settings(_) => continue,
            };
            self.push(e);
        }
    }
}

fn route_event(action: &str, source: &str, r: &Route) -> Event {
    let mut t = String::new();
    if action == "del" {
        t += "Deleted ";
    }
    t += &r.prefix.to_string();
    let mut j = json!({"event": "route", "action": action, "source": source,
        "dst": r.prefix.to_string(), "metric": r.metric, "table": r.table});
    if let Some(e) = r.encap.as_deref() {
        let kind = match e {
            Encap::Seg6(_) => "seg6",
            Encap::Ioam6(_) => "ioam6",
            Encap::Rpl(_) => "rpl",
            Encap::Seg6Local(_) => "seg6local",
        };
        t += &format!(" encap {kind}");
        j["encap"] = json!(kind);
    }
    if let Some(v) = r.via {
        t += &format!(" via {v}");
        j["gateway"] = json!(v.to_string());
    }
    if let Some(d) = &r.dev {
        t += &format!(" dev {d}");
        j["dev"] = json!(&**d);
    }
    if r.table != MAIN_TABLE {
        t += &format!(" table {}", r.table);
    }
    t += &format!(" metric {}", r.metric);
    if source == "kernel" {
        t += " proto kernel";
    }
    if action == "replace" {
        t = format!("Replaced {t}");
    }
    Event::new(t, j)
}

/// `neigh add|del|replace|change ADDR [lladdr MAC] dev DEV ...` as applied.
fn neigh_line(source: &str, toks: &[&str]) -> Event {
    let action = toks.get(1).copied().unwrap_or("");
    let after = |k: &str| toks.windows(2).find(|w| w[0] == k).map(|w| w[1]);
    let addr = toks
        .iter()
        .skip(2)
        .find(|t| t.parse::<std::net::IpAddr>().is_ok())
        .copied()
        .unwrap_or("");
    let mut t = String::new();
    if action == "del" {
        t += "Deleted ";
    }
    t += addr;
    let mut j = json!({"event": "neigh", "action": action, "source": source, "dst": addr});
    if let Some(d) = after("dev") {
        t += &format!(" dev {d}");
        j["dev"] = json!(d);
    }
    if let Some(m) = after("lladdr") {
        t += &format!(" lladdr {m}");
        j["lladdr"] = json!(m);
    }
    if action != "del" {
        t += " PERMANENT";
        j["state"] = json!("PERMANENT");
    }
    Event::new(t, j)
}

/// One monitor client's events not yet written: at most `cap` bytes; past that, events are dropped and counted,
/// and a line saying how many takes their place once there is room.
#[derive(Debug)]
pub struct Outbox {
    buf: Vec<u8>,
    at: usize,
    cap: usize,
    /// Events dropped since the last line saying so.
    dropped: u64,
    /// JSON lines (`monitor -j`) or text.
    pub json: bool,
}

impl Outbox {
    /// An empty outbox of `cap` bytes, starting with `first` (the reply's `ok` line).
    pub fn new(first: &[u8], cap: usize, json: bool) -> Outbox {
        Outbox {
            buf: first.to_vec(),
            at: 0,
            cap,
            dropped: 0,
            json,
        }
    }

    fn room(&self) -> usize {
        self.cap.saturating_sub(self.buf.len() - self.at)
    }

    fn notice(&self) -> String {
        if self.json {
            format!(
                "{}\n",
                json!({"event": "dropped", "count": self.dropped,
                    "reason": "the client did not read the events in time"})
            )
        } else {
            format!(
                "dropped {} events (the client did not read them in time)\n",
                self.dropped
            )
        }
    }

    /// Writes the line saying how many were dropped, if some were and it fits now.
    fn settle(&mut self) {
        if self.dropped > 0 {
            let n = self.notice();
            if n.len() <= self.room() {
                self.buf.extend_from_slice(n.as_bytes());
                self.dropped = 0;
            }
        }
    }

    /// Queues `e` when it fits (after the line saying how many were dropped before it, which must fit too), or
    /// drops it, counted in `dropped` too. Returns whether it was queued.
    pub fn offer(&mut self, e: &Event, dropped: &AtomicU64) -> bool {
        self.settle();
        let line = e.line(self.json);
        if self.dropped > 0 || line.len() > self.room() {
            self.drop_some(1, dropped);
            return false;
        }
        self.buf.extend_from_slice(line.as_bytes());
        true
    }

    /// Counts `n` events dropped (not even recorded: too many at once).
    pub fn drop_some(&mut self, n: u64, dropped: &AtomicU64) {
        self.dropped += n;
        dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether bytes wait to be written.
    pub fn pending(&self) -> bool {
        self.at < self.buf.len() || self.dropped > 0
    }

    /// Writes as much as `w` takes without waiting. `Err`: the client went away.
    pub fn write_to(&mut self, mut w: impl Write) -> std::io::Result<()> {
        loop {
            self.settle();
            if self.at == self.buf.len() {
                self.buf.clear();
                self.at = 0;
                return Ok(());
            }
            match w.write(&self.buf[self.at..]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => self.at += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if self.at > self.cap / 2 {
                        self.buf.drain(..self.at);
                        self.at = 0;
                    }
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests;
