//! The exporter thread: batches of records handed over through a bounded channel, written to a [`Sink`].
//!
//! [`Exporter::submit`] never waits: when the channel is full (the sink is slower than the traffic) the batch is
//! counted as lost. [`Exporter::submit_wait`] waits for room, for offline use where time does not matter (`lwt6
//! pcap`). What the sink fails to write (an unreachable collector, a full disk) is counted as lost too, record by
//! record: the records a sink reports written whole count as written, the rest of the batch as lost; forwarding
//! never notices. Each failure is counted under its kind ([`ExportReport::failures`]).

use crate::IoamRecord;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Where records go.
pub trait Sink: Send {
    /// Writes a batch. On error, [`SinkError::written`] says how many of its first records were written whole;
    /// the others count as lost.
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), SinkError>;
    /// Called once after the last batch.
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// Failures counted by the sink itself, by kind (a client that retries counts each failed attempt); None
    /// when the exporter should count each failed batch instead.
    fn failures(&self) -> Option<Vec<(String, u64)>> {
        None
    }
}

/// A sink's failure to write (part of) a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkError {
    /// Records of the batch written whole before the failure (the first ones).
    pub written: usize,
    /// A short name for the kind of failure, under which it is counted (`refused`, `timeout`,
    /// `GOAWAY ENHANCE_YOUR_CALM`, `write: No space left on device`, ...).
    pub kind: String,
    /// The whole message.
    pub message: String,
}

impl SinkError {
    /// A failure that wrote nothing of the batch.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> SinkError {
        SinkError {
            written: 0,
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// What an exporter did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Records written by the sink.
    pub written: u64,
    /// Records lost: the channel was full, or the sink failed.
    pub lost: u64,
    /// The sink's last error, if any.
    pub last_error: Option<String>,
    /// The sink's failures by kind ([`SinkError::kind`]) and how many times each happened (failed batches, or
    /// failed attempts for a sink that counts them: [`Sink::failures`]), in order of first occurrence.
    pub failures: Vec<(String, u64)>,
}

impl ExportReport {
    /// The failures as `"; failures: refused 3, timeout 1"`, or nothing.
    pub fn failures_text(&self) -> String {
        if self.failures.is_empty() {
            return String::new();
        }
        let v: Vec<String> = self
            .failures
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!("; failures: {}", v.join(", "))
    }
}

#[derive(Default)]
struct Shared {
    written: AtomicU64,
    lost: AtomicU64,
    /// Records handed over (put in the channel or lost because it was full).
    submitted: AtomicU64,
    /// Set when the owner stops waiting ([`Exporter::finish_by`]): the thread counts the batches still queued as
    /// lost instead of writing them.
    abandon: AtomicBool,
    /// The failures by kind and the last error so far, as the thread last saw them (a slow path: updated after
    /// a failed batch only).
    failures: Mutex<Ended>,
}

/// What the exporter thread hands back when it ends.
type Ended = (Option<String>, Vec<(String, u64)>);

/// A running exporter.
pub struct Exporter {
    tx: Option<SyncSender<Vec<IoamRecord>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Ended>>,
}

impl Exporter {
    /// Starts a thread writing to `sink`; at most `depth` batches wait for it.
    pub fn spawn(mut sink: Box<dyn Sink>, depth: usize) -> Exporter {
        let (tx, rx): (_, Receiver<Vec<IoamRecord>>) = sync_channel(depth.max(1));
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("lwt6-ioam-export".into())
            .spawn(move || {
                let mut last_error = None;
                let mut failures: Vec<(String, u64)> = Vec::new();
                let mut failed = |e: SinkError, last_error: &mut Option<String>| {
                    match failures.iter_mut().find(|(k, _)| *k == e.kind) {
                        Some((_, n)) => *n += 1,
                        None => failures.push((e.kind, 1)),
                    }
                    *last_error = Some(e.message);
                    failures.clone()
                };
                for batch in rx {
                    if s.abandon.load(Ordering::Relaxed) {
                        s.lost.fetch_add(batch.len() as u64, Ordering::Relaxed);
                        continue;
                    }
                    match sink.write(&batch) {
                        Ok(()) => {
                            s.written.fetch_add(batch.len() as u64, Ordering::Relaxed);
                        }
                        Err(e) => {
                            let whole = e.written.min(batch.len());
                            s.written.fetch_add(whole as u64, Ordering::Relaxed);
                            s.lost
                                .fetch_add((batch.len() - whole) as u64, Ordering::Relaxed);
                            let ours = failed(e, &mut last_error);
                            if let Ok(mut f) = s.failures.lock() {
                                *f = (last_error.clone(), sink.failures().unwrap_or(ours));
                            }
                        }
                    };
                }
                if !s.abandon.load(Ordering::Relaxed)
                    && let Err(e) = sink.finish()
                {
                    failed(e, &mut last_error);
                }
                (last_error, sink.failures().unwrap_or(failures))
            })
            .expect("spawn the exporter thread");
        Exporter {
            tx: Some(tx),
            shared,
            thread: Some(thread),
        }
    }

    /// Hands a batch over without waiting; a full channel loses it (counted).
    pub fn submit(&self, batch: Vec<IoamRecord>) {
        if let Some(s) = self.submitter() {
            s.submit(batch);
        }
    }

    /// A handle to hand batches over from another thread (a worker) without waiting. The exporter's thread ends
    /// ([`finish`](Self::finish) returns) once every submitter is dropped too.
    pub fn submitter(&self) -> Option<Submitter> {
        self.tx.as_ref().map(|tx| Submitter {
            tx: tx.clone(),
            shared: Arc::clone(&self.shared),
        })
    }

    /// What the exporter did so far: records written and lost, the failures by kind and the last error.
    pub fn progress(&self) -> ExportReport {
        let (last_error, failures) = self
            .shared
            .failures
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default();
        ExportReport {
            written: self.shared.written.load(Ordering::Relaxed),
            lost: self.shared.lost.load(Ordering::Relaxed),
            last_error,
            failures,
        }
    }

    /// Records handed over so far ([`submit`](Self::submit), [`submit_wait`](Self::submit_wait) and every
    /// [`Submitter`]); those neither [`written`](ExportReport::written) nor
    /// [`lost`](ExportReport::lost) are waiting in the channel or being written.
    pub fn submitted(&self) -> u64 {
        self.shared.submitted.load(Ordering::Relaxed)
    }

    /// Hands a batch over, waiting for room (offline use).
    pub fn submit_wait(&self, batch: Vec<IoamRecord>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        self.shared.submitted.fetch_add(n, Ordering::Relaxed);
        if let Some(tx) = &self.tx
            && tx.send(batch).is_err()
        {
            self.shared.lost.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Records lost so far.
    pub fn lost(&self) -> u64 {
        self.shared.lost.load(Ordering::Relaxed)
    }

    /// Closes the channel, waits for the thread to write what it holds, and reports.
    pub fn finish(mut self) -> ExportReport {
        self.tx = None;
        let (last_error, failures) = match self.thread.take().map(|t| t.join()) {
            Some(Ok(ended)) => ended,
            Some(Err(_)) => (Some("exporter thread panicked".into()), Vec::new()),
            None => (None, Vec::new()),
        };
        ExportReport {
            written: self.shared.written.load(Ordering::Relaxed),
            lost: self.shared.lost.load(Ordering::Relaxed),
            last_error,
            failures,
        }
    }
}

impl Exporter {
    /// As [`finish`](Self::finish), but waits only until `deadline` (a router stopping: a collector that is down
    /// must not hold the exit for its sink's whole give-up time). The records still queued or being written then
    /// count as lost (failure kind `stopped`) and the thread is left to end by itself: it writes nothing more once
    /// its current attempt returns.
    pub fn finish_by(mut self, deadline: std::time::Instant) -> ExportReport {
        self.tx = None;
        let Some(t) = self.thread.take() else {
            return self.progress();
        };
        while !t.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if t.is_finished() {
            let (last_error, failures) = t
                .join()
                .unwrap_or_else(|_| (Some("exporter thread panicked".into()), Vec::new()));
            return ExportReport {
                written: self.shared.written.load(Ordering::Relaxed),
                lost: self.shared.lost.load(Ordering::Relaxed),
                last_error,
                failures,
            };
        }
        self.shared.abandon.store(true, Ordering::Relaxed);
        let mut rep = self.progress();
        let pending = self
            .submitted()
            .saturating_sub(rep.written.saturating_add(rep.lost));
        rep.lost += pending;
        rep.failures.push(("stopped".into(), 1));
        rep.last_error = Some(format!(
            "stopped before the sink finished: {pending} records not written{}",
            rep.last_error
                .as_deref()
                .map(|e| format!(" (last error: {e})"))
                .unwrap_or_default()
        ));
        rep
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Hands batches to an [`Exporter`] from another thread, never waiting: a full channel loses the batch, counted
/// in the exporter's [`lost`](ExportReport::lost). Cloned once per worker; one bounded channel
/// ([`std::sync::mpsc::sync_channel`]) behind them all, so a worker costs the exporter nothing until it has
/// records, and a batch costs one `try_send`.
#[derive(Clone)]
pub struct Submitter {
    tx: SyncSender<Vec<IoamRecord>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Submitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Submitter")
    }
}

impl Submitter {
    /// Hands a batch over without waiting; a full channel (or an exporter that ended) loses it, counted.
    pub fn submit(&self, batch: Vec<IoamRecord>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        self.shared.submitted.fetch_add(n, Ordering::Relaxed);
        match self.tx.try_send(batch) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.shared.lost.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

/// Takes a stream back to a length (a regular file's `set_len` and `seek`): how a cut record is removed.
pub type Cut = Box<dyn FnMut(u64) -> std::io::Result<()> + Send>;

/// JSON lines to any writer (a file, stdout), a batch at a time, never leaving a cut line where it can be taken
/// back: when a write fails part-way (a full disk), the records written whole count as written, the one cut is
/// removed with the [`Cut`] given ([`with_cut`](Self::with_cut): a regular file), and the rest of the batch
/// counts as lost. Without a cut (a pipe, a terminal, a device) a partly written line cannot be taken back; the
/// error says so. The writer should be unbuffered: each batch is written and flushed as one piece.
pub struct JsonLines<W: std::io::Write + Send> {
    out: W,
    dev_names: Vec<String>,
    /// Bytes of whole records written so far (the length the stream is cut back to).
    len: u64,
    cut: Option<Cut>,
}

impl<W: std::io::Write + Send> JsonLines<W> {
    /// A sink writing to `out`, naming devices by `dev_names`.
    pub fn new(out: W, dev_names: Vec<String>) -> Self {
        JsonLines {
            out,
            dev_names,
            len: 0,
            cut: None,
        }
    }

    /// Removes cut records with `cut`, the stream being `start` bytes long before the first record.
    pub fn with_cut(self, start: u64, cut: Cut) -> Self {
        JsonLines {
            len: start,
            cut: Some(cut),
            ..self
        }
    }

    /// The writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }
}

impl<W: std::io::Write + Send> Sink for JsonLines<W> {
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), SinkError> {
        let mut text = Vec::new();
        let mut ends = Vec::with_capacity(batch.len());
        for r in batch {
            text.extend_from_slice(crate::json::line(r, &self.dev_names).as_bytes());
            text.push(b'\n');
            ends.push(text.len());
        }
        let mut done = 0;
        let err = loop {
            if done == text.len() {
                match self.out.flush() {
                    Ok(()) => {
                        self.len += done as u64;
                        return Ok(());
                    }
                    Err(e) => break e,
                }
            }
            match self.out.write(&text[done..]) {
                Ok(0) => break std::io::Error::from(std::io::ErrorKind::WriteZero),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break e,
            }
        };
        let whole = ends.iter().take_while(|&&e| e <= done).count();
        let keep = if whole == 0 { 0 } else { ends[whole - 1] };
        let mut message = format!("writing: {err}");
        if done > keep {
            match self.cut.as_mut() {
                Some(cut) => match cut(self.len + keep as u64) {
                    Ok(()) => message += "; the record it cut was removed",
                    Err(c) => message += &format!("; the record it cut could not be removed: {c}"),
                },
                None => message += "; a cut record remains in the stream (it cannot be taken back)",
            }
        }
        self.len += keep as u64;
        Err(SinkError {
            written: whole,
            kind: format!("write: {}", std::io::Error::from(err.kind())),
            message,
        })
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(|e| {
            SinkError::new(
                format!("write: {}", std::io::Error::from(e.kind())),
                format!("writing: {e}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExportEvent;
    use std::sync::Mutex;

    fn record(i: u64) -> IoamRecord {
        IoamRecord {
            ts_ns: i,
            event: ExportEvent::Transit,
            in_dev: 0,
            out_dev: Some(1),
            flow: None,
            option: vec![0, 1, 2, 3],
            node: Vec::new(),
        }
    }

    /// A file of `room` bytes: writes beyond it are short, then fail with ENOSPC (write(2)).
    struct Disk {
        data: Arc<Mutex<Vec<u8>>>,
        room: usize,
    }

    impl std::io::Write for Disk {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let mut d = self.data.lock().unwrap();
            let free = self.room.saturating_sub(d.len());
            if free == 0 {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            let n = free.min(b.len());
            d.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_leaves_whole_records_and_counts_them() {
        let data = Arc::new(Mutex::new(Vec::new()));
        let names = vec!["r0".to_string(), "r1".to_string()];
        let one = crate::json::line(&record(0), &names).len() + 1;
        let back = Arc::clone(&data);
        let cut: Cut = Box::new(move |len| {
            back.lock().unwrap().truncate(len as usize);
            Ok(())
        });
        let disk = Disk {
            data: Arc::clone(&data),
            // Room for 2.5 records.
            room: one * 5 / 2,
        };
        let e = Exporter::spawn(Box::new(JsonLines::new(disk, names).with_cut(0, cut)), 4);
        e.submit_wait((0..2).map(record).collect());
        e.submit_wait((2..4).map(record).collect());
        e.submit_wait((4..6).map(record).collect());
        let r = e.finish();
        let file = data.lock().unwrap().clone();
        assert!(file.ends_with(b"\n"));
        assert_eq!(file.iter().filter(|&&b| b == b'\n').count(), 2);
        assert_eq!(file.len(), 2 * one, "the cut third record was taken back");
        assert_eq!((r.written, r.lost), (2, 4));
        assert!(r.last_error.unwrap().contains("os error 28"));
    }

    /// A sink that says when it starts writing and waits to be let go.
    struct Stuck {
        started: std::sync::mpsc::Sender<()>,
        go: Arc<std::sync::Barrier>,
    }

    impl Sink for Stuck {
        fn write(&mut self, _: &[IoamRecord]) -> Result<(), SinkError> {
            let _ = self.started.send(());
            self.go.wait();
            Ok(())
        }
    }

    /// An exporter with a channel `capacity` batches deep to a [`Stuck`] sink; the receiver hears each batch it
    /// starts writing, the barrier lets it finish.
    fn stuck(
        capacity: usize,
    ) -> (
        Exporter,
        std::sync::mpsc::Receiver<()>,
        Arc<std::sync::Barrier>,
    ) {
        let (started, seen) = std::sync::mpsc::channel();
        let go = Arc::new(std::sync::Barrier::new(2));
        let e = Exporter::spawn(
            Box::new(Stuck {
                started,
                go: Arc::clone(&go),
            }),
            capacity,
        );
        (e, seen, go)
    }

    #[test]
    fn a_stuck_sink_never_holds_a_submitter_and_what_does_not_fit_is_counted() {
        let (e, seen, go) = stuck(1);
        let s = e.submitter().unwrap();
        s.submit(vec![record(0), record(1)]);
        seen.recv().unwrap();
        // The sink holds the first batch; the channel has room for one more; the rest is lost at once.
        let t = std::time::Instant::now();
        for i in 1..10 {
            s.submit(vec![record(i); 3]);
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(e.submitted(), 2 + 9 * 3);
        assert_eq!(e.progress().lost, 8 * 3);
        go.wait();
        seen.recv().unwrap();
        go.wait();
        drop(s);
        let r = e.finish();
        assert_eq!((r.written, r.lost), (2 + 3, 8 * 3));
    }

    #[test]
    fn finish_by_stops_waiting_for_a_stuck_sink_and_counts_what_it_held() {
        let (e, seen, go) = stuck(4);
        e.submit(vec![record(0), record(1)]);
        seen.recv().unwrap();
        e.submit(vec![record(2); 3]);
        e.submit(vec![record(3); 4]);
        let t = std::time::Instant::now();
        let r = e.finish_by(t + std::time::Duration::from_millis(200));
        let waited = t.elapsed();
        assert!(
            waited >= std::time::Duration::from_millis(200),
            "{waited:?}"
        );
        assert!(waited < std::time::Duration::from_secs(2), "{waited:?}");
        // Nothing was written: the first batch is still in the sink, the two others queued.
        assert_eq!((r.written, r.lost), (0, 2 + 3 + 4));
        assert!(r.failures.contains(&("stopped".to_string(), 1)), "{r:?}");
        assert!(r.last_error.unwrap().contains("9 records not written"));
        // Let the sink go: the thread drops the queued batches (it writes nothing more) and ends.
        go.wait();
    }

    #[test]
    fn finish_by_writes_everything_when_the_sink_keeps_up() {
        let data = Arc::new(Mutex::new(Vec::new()));
        let disk = Disk {
            data: Arc::clone(&data),
            room: 1 << 20,
        };
        let e = Exporter::spawn(Box::new(JsonLines::new(disk, vec!["r0".into()])), 4);
        e.submit_wait((0..5).map(record).collect());
        let r = e.finish_by(std::time::Instant::now() + std::time::Duration::from_secs(5));
        assert_eq!((r.written, r.lost), (5, 0));
        assert!(r.failures.is_empty() && r.last_error.is_none(), "{r:?}");
        assert_eq!(
            data.lock().unwrap().iter().filter(|&&b| b == b'\n').count(),
            5
        );
    }
}
