//! The exporter thread: batches of records handed over through a bounded channel, written to a [`Sink`].
//!
//! [`Exporter::submit`] never waits: when the channel is full (the sink is slower than the traffic) the batch is
//! counted as lost. [`Exporter::submit_wait`] waits for room, for offline use where time does not matter (`lwt6
//! pcap`). A batch the sink fails to write (an unreachable collector) is counted as lost too; forwarding never
//! notices.

use crate::IoamRecord;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

/// Where records go.
pub trait Sink: Send {
    /// Writes a batch. On error the whole batch counts as lost.
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), String>;
    /// Called once after the last batch.
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
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
}

#[derive(Default)]
struct Shared {
    written: AtomicU64,
    lost: AtomicU64,
}

/// A running exporter.
pub struct Exporter {
    tx: Option<SyncSender<Vec<IoamRecord>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Option<String>>>,
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
                for batch in rx {
                    match sink.write(&batch) {
                        Ok(()) => s.written.fetch_add(batch.len() as u64, Ordering::Relaxed),
                        Err(e) => {
                            last_error = Some(e);
                            s.lost.fetch_add(batch.len() as u64, Ordering::Relaxed)
                        }
                    };
                }
                if let Err(e) = sink.finish() {
                    last_error = Some(e);
                }
                last_error
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
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        if let Some(tx) = &self.tx {
            match tx.try_send(batch) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.shared.lost.fetch_add(n, Ordering::Relaxed);
                }
            }
        }
    }

    /// Hands a batch over, waiting for room (offline use).
    pub fn submit_wait(&self, batch: Vec<IoamRecord>) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
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
        let last_error = self
            .thread
            .take()
            .and_then(|t| t.join().unwrap_or(Some("exporter thread panicked".into())));
        ExportReport {
            written: self.shared.written.load(Ordering::Relaxed),
            lost: self.shared.lost.load(Ordering::Relaxed),
            last_error,
        }
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

/// JSON lines to any writer (a file, stdout).
pub struct JsonLines<W: std::io::Write + Send> {
    out: W,
    dev_names: Vec<String>,
}

impl<W: std::io::Write + Send> JsonLines<W> {
    /// A sink writing to `out`, naming devices by `dev_names`.
    pub fn new(out: W, dev_names: Vec<String>) -> Self {
        JsonLines { out, dev_names }
    }
}

impl<W: std::io::Write + Send> Sink for JsonLines<W> {
    fn write(&mut self, batch: &[IoamRecord]) -> Result<(), String> {
        let mut text = String::new();
        for r in batch {
            text += &crate::json::line(r, &self.dev_names);
            text.push('\n');
        }
        self.out
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string())
    }

    fn finish(&mut self) -> Result<(), String> {
        self.out.flush().map_err(|e| e.to_string())
    }
}
