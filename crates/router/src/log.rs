//! The router's log: the `log` crate's macros (`log::warn!` and the others) written to standard error by
//! [`Logger`], one line per record, rate-limited per kind.
//!
//! - **Levels:** records below the level given to [`init`] (`lwt6 run --log-level`, default `info`) are dropped.
//! - **Format:** on a terminal or a file, `2026-11-27T15:48:52.123Z WARN lwt6: MESSAGE` (UTC). Under journald
//!   (standard error is the stream named by `JOURNAL_STREAM`, as systemd sets it for a service), `<4>lwt6: MESSAGE`:
//!   the syslog priority prefix journald reads (sd-daemon(3)), and no time stamp, which the journal adds itself.
//! - **Rate limit:** at most [`PER_SECOND`] lines of one kind (the record's target: a `target: "kind"` given to
//!   the macro, or else the module) a second; the lines past that are counted and said in one summary line
//!   (`... suppressed K similar lines`) when the kind next logs or at the next [`flush`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

pub use ::log::LevelFilter;
use ::log::{Level, Log, Metadata, Record};

/// Most lines of one kind written in a second.
pub const PER_SECOND: u32 = 10;

struct Kind {
    window: Instant,
    written: u32,
    suppressed: u64,
}

static KINDS: Mutex<Option<HashMap<String, Kind>>> = Mutex::new(None);

/// Lines that could not be written to standard error.
static LOST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A warning of kind `kind`: the kind is the record's target, so repeated lines are rate-limited per kind.
pub fn line(kind: &'static str, msg: &str) {
    log::warn!(target: kind, "{msg}");
}

/// How many log lines could not be written (standard error closed, full or failing): `lwt6 run` fails at exit
/// when any were, since nothing else could say so.
pub fn lost() -> u64 {
    LOST.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes `line` and a newline to standard error in one call, counting it [`lost`] when that fails.
fn emit(out: &mut impl std::io::Write, line: &str) {
    if writeln!(out, "{line}").is_err() {
        LOST.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn summary(kind: &str, n: u64) -> String {
    format!(
        "... suppressed {n} similar line{} ({kind})",
        if n == 1 { "" } else { "s" }
    )
}

/// What to write for a line of `kind` at `now`: the summary of the lines suppressed before it, if any, and the
/// line itself unless it is suppressed.
fn admit(kinds: &mut HashMap<String, Kind>, kind: &str, now: Instant) -> (Option<u64>, bool) {
    if !kinds.contains_key(kind) {
        kinds.insert(
            kind.to_string(),
            Kind {
                window: now,
                written: 0,
                suppressed: 0,
            },
        );
    }
    let Some(k) = kinds.get_mut(kind) else {
        return (None, true);
    };
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

/// How lines are written: with a time stamp and a level word, or with journald's priority prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `TIME LEVEL lwt6: MESSAGE`.
    Plain,
    /// `<PRIORITY>lwt6: MESSAGE`.
    Journal,
}

/// Whether standard error is journald's stream: `journal_stream` (the `JOURNAL_STREAM` variable, `DEV:INODE` in
/// decimal) names the device and inode standard error has (systemd.exec(5)). A child that inherited the variable
/// but writes elsewhere (a pipe, a file) has another inode, and gets [`Format::Plain`].
pub fn format_for(journal_stream: Option<&str>, stderr_dev_ino: Option<(u64, u64)>) -> Format {
    let named = journal_stream.and_then(|v| {
        let (d, i) = v.split_once(':')?;
        Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?))
    });
    match (named, stderr_dev_ino) {
        (Some(n), Some(s)) if n == s => Format::Journal,
        _ => Format::Plain,
    }
}

/// The device and inode of standard error.
fn stderr_dev_ino() -> Option<(u64, u64)> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::MetadataExt as _;
    let fd = std::io::stderr().as_fd().try_clone_to_owned().ok()?;
    let m = std::fs::File::from(fd).metadata().ok()?;
    Some((m.dev(), m.ino()))
}

/// The syslog priority journald files a record of `level` under (sd-daemon(3): 3 error, 4 warning, 6 info,
/// 7 debug).
pub fn priority(level: Level) -> u8 {
    match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}

/// `t` as an RFC 3339 UTC time stamp with milliseconds (`2026-11-27T15:48:52.123Z`).
pub fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), in eras of 400 years from 0000-03-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// One line as [`Logger`] writes it (without the newline).
pub fn render(format: Format, level: Level, now: SystemTime, msg: &str) -> String {
    match format {
        Format::Journal => format!("<{}>lwt6: {msg}", priority(level)),
        Format::Plain => format!("{} {level:<5} lwt6: {msg}", timestamp(now)),
    }
}

/// Writes records to standard error (see the module's documentation).
#[derive(Debug)]
pub struct Logger {
    format: Format,
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        m.level() <= ::log::max_level()
    }

    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let (before, write) = match KINDS.lock() {
            Ok(mut g) => admit(
                g.get_or_insert_with(HashMap::new),
                r.target(),
                Instant::now(),
            ),
            Err(_) => (None, true),
        };
        let now = SystemTime::now();
        let mut out = std::io::stderr().lock();
        if let Some(n) = before {
            emit(
                &mut out,
                &render(self.format, r.level(), now, &summary(r.target(), n)),
            );
        }
        if write {
            emit(
                &mut out,
                &render(self.format, r.level(), now, &r.args().to_string()),
            );
        }
    }

    fn flush(&self) {}
}

static LOGGER: std::sync::OnceLock<Logger> = std::sync::OnceLock::new();

/// Installs [`Logger`] for the process (once; a second call only changes the level), writing records at `level`
/// and above; the format follows from `JOURNAL_STREAM` ([`format_for`]).
pub fn init(level: LevelFilter) {
    let logger = LOGGER.get_or_init(|| Logger {
        format: format_for(
            std::env::var("JOURNAL_STREAM").ok().as_deref(),
            stderr_dev_ino(),
        ),
    });
    let _ = ::log::set_logger(logger);
    ::log::set_max_level(level);
}

/// Writes the summary of every kind whose second has ended with lines suppressed (at warning level).
pub fn flush() {
    let Ok(mut g) = KINDS.lock() else {
        return;
    };
    let now = Instant::now();
    let mut due = Vec::new();
    for (kind, k) in g.get_or_insert_with(HashMap::new).iter_mut() {
        if k.suppressed > 0 && now.duration_since(k.window) >= Duration::from_secs(1) {
            due.push(summary(kind, k.suppressed));
            k.suppressed = 0;
        }
    }
    drop(g);
    if let Some(logger) = LOGGER.get()
        && Level::Warn <= ::log::max_level()
    {
        let mut out = std::io::stderr().lock();
        for s in due {
            emit(
                &mut out,
                &render(logger.format, Level::Warn, SystemTime::now(), &s),
            );
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

    #[test]
    fn journald_is_detected_only_when_stderr_is_the_named_stream() {
        // systemd.exec(5): JOURNAL_STREAM=DEV:INODE of the stream connected to standard output/error.
        assert_eq!(
            format_for(Some("64769:123456"), Some((64769, 123456))),
            Format::Journal
        );
        // Inherited by a process whose standard error was redirected: another inode.
        assert_eq!(
            format_for(Some("64769:123456"), Some((64769, 999))),
            Format::Plain
        );
        assert_eq!(
            format_for(Some("1:123456"), Some((64769, 123456))),
            Format::Plain
        );
        assert_eq!(format_for(None, Some((64769, 123456))), Format::Plain);
        assert_eq!(
            format_for(Some("garbage"), Some((64769, 123456))),
            Format::Plain
        );
        assert_eq!(format_for(Some("64769:123456"), None), Format::Plain);
    }

    #[test]
    fn journald_lines_carry_syslog_priorities() {
        // sd-daemon(3): <3> SD_ERR, <4> SD_WARNING, <6> SD_INFO, <7> SD_DEBUG.
        let t = SystemTime::UNIX_EPOCH;
        assert_eq!(render(Format::Journal, Level::Error, t, "x"), "<3>lwt6: x");
        assert_eq!(render(Format::Journal, Level::Warn, t, "x"), "<4>lwt6: x");
        assert_eq!(render(Format::Journal, Level::Info, t, "x"), "<6>lwt6: x");
        assert_eq!(render(Format::Journal, Level::Debug, t, "x"), "<7>lwt6: x");
    }

    #[test]
    fn plain_lines_carry_utc_time_stamps() {
        // `date -u -d @1795794532.123 +%FT%T.%3NZ` = 2026-11-27T15:48:52.123Z; 951782400 = 2000-02-29 (leap day).
        let t = |s: u64, ms: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(s * 1000 + ms);
        assert_eq!(timestamp(t(1795794532, 123)), "2026-11-27T15:48:52.123Z");
        assert_eq!(timestamp(t(951782400, 0)), "2000-02-29T00:00:00.000Z");
        assert_eq!(timestamp(t(0, 5)), "1970-01-01T00:00:00.005Z");
        assert_eq!(
            render(Format::Plain, Level::Warn, t(0, 0), "x"),
            "1970-01-01T00:00:00.000Z WARN  lwt6: x"
        );
    }
}
