//! The router's log lines on standard error (`lwt6: ...`), rate-limited per kind: at most [`PER_SECOND`] lines of
//! one kind a second; the lines past that are counted and said in one summary line (`... suppressed K similar
//! lines`) when the kind next logs or at the next [`flush`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most lines of one kind written in a second.
pub const PER_SECOND: u32 = 10;

struct Kind {
    window: Instant,
    written: u32,
    suppressed: u64,
}

static KINDS: Mutex<Option<HashMap<&'static str, Kind>>> = Mutex::new(None);

fn summary(kind: &str, n: u64) -> String {
    format!(
        "lwt6: ... suppressed {n} similar line{} ({kind})",
        if n == 1 { "" } else { "s" }
    )
}

/// What to write for a line of `kind` at `now`: the summary of the lines suppressed before it, if any, and the
/// line itself unless it is suppressed.
fn admit(
    kinds: &mut HashMap<&'static str, Kind>,
    kind: &'static str,
    now: Instant,
) -> (Option<u64>, bool) {
    let k = kinds.entry(kind).or_insert(Kind {
        window: now,
        written: 0,
        suppressed: 0,
    });
    let mut before = None;
    if now.duration_since(k.window) >= Duration::from_secs(1) {
        if k.suppressed > 0 {
            before = Some(k.suppressed);
        }
        *k = Kind {
            window: now,
            written: 0,
            suppressed: 0,
        };
    }
    if k.written < PER_SECOND {
        k.written += 1;
        (before, true)
    } else {
        k.suppressed += 1;
        (before, false)
    }
}

/// Writes `msg` (prefixed `lwt6: `) to standard error unless [`PER_SECOND`] lines of `kind` were written in the
/// last second.
pub fn line(kind: &'static str, msg: &str) {
    let Ok(mut g) = KINDS.lock() else {
        return;
    };
    let (before, write) = admit(g.get_or_insert_with(HashMap::new), kind, Instant::now());
    drop(g);
    if let Some(n) = before {
        eprintln!("{}", summary(kind, n));
    }
    if write {
        eprintln!("lwt6: {msg}");
    }
}

/// Writes the summary of every kind whose second has ended with lines suppressed.
pub fn flush() {
    let Ok(mut g) = KINDS.lock() else {
        return;
    };
    let now = Instant::now();
    for (kind, k) in g.get_or_insert_with(HashMap::new).iter_mut() {
        if k.suppressed > 0 && now.duration_since(k.window) >= Duration::from_secs(1) {
            eprintln!("{}", summary(kind, k.suppressed));
            k.suppressed = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_writes_per_second_lines_then_one_summary() {
        let mut kinds = HashMap::new();
        let t0 = Instant::now();
        let written = (0..1000).filter(|_| admit(&mut kinds, "k", t0).1).count();
        assert_eq!(written, PER_SECOND as usize);
        let (before, w) = admit(&mut kinds, "k", t0 + Duration::from_millis(1500));
        assert_eq!(before, Some(1000 - PER_SECOND as u64));
        assert!(w);
        // Another kind has its own budget.
        assert!(admit(&mut kinds, "other", t0).1);
    }
}
