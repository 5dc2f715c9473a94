//! How large a batch request the machine can afford: a batch is refused, with the reason, as soon as what has
//! been read of it would need more memory to apply than the system has available, before the rest is read.
//!
//! The rule (docs/live.md, *Bounds and time limits*): while a batch is read, its text so far plus
//! [`PEAK_PER_LINE`] bytes for each of its lines so far must stay within half of the system's `MemAvailable`
//! (`/proc/meminfo`) as it was when the batch began; the fixed limits ([`crate::clients::MAX_BATCH`] bytes,
//! [`crate::clients::MAX_BATCH_LINES`] lines) still apply above it. Without `/proc/meminfo` only the fixed
//! limits apply.

/// Bytes of memory one line of a batch may take at most while the batch is applied, its text aside: for a route
/// line, the parsed route in the configuration and the transaction's log, the route as the change published and
/// its entries in the writer's two snapshots, each held at once at some point of the request. Measured as the
/// growth of the router's peak resident memory (`VmHWM`) over a batch of 100,000 random /64 routes on a table of
/// 300,000, 0.99 KiB a line (docs/BENCHMARKS.md, *Memory per route and in-place control lines*), and rounded up.
pub const PEAK_PER_LINE: u64 = 2048;

/// The system's available memory (`MemAvailable` of `/proc/meminfo`), in bytes; `None` when it cannot be read.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn parse_mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// What a batch being read has cost so far, checked against the memory the system had when it began.
#[derive(Debug, Default)]
pub struct Meter {
    /// Half of `MemAvailable` when the batch began (read at the first check); `None` before it, or when it
    /// cannot be read (then only the fixed limits apply).
    allowed: Option<Option<u64>>,
    /// Lines counted so far (newlines in the text).
    lines: u64,
    /// How much of the text is counted.
    counted: usize,
}

impl Meter {
    /// A meter for a batch on a system with `available` bytes of memory (`None`: unknown, no limit but the
    /// fixed ones).
    pub fn with_available(available: Option<u64>) -> Meter {
        Meter {
            allowed: Some(available.map(|a| a / 2)),
            ..Meter::default()
        }
    }

    /// Counts what `text` (the batch so far, growing between calls) added since the last call, and refuses the
    /// batch once it would need more than it is allowed: the reason, for the client.
    pub fn check(&mut self, text: &[u8]) -> Option<String> {
        let allowed = *self
            .allowed
            .get_or_insert_with(|| mem_available().map(|a| a / 2));
        let new = text.get(self.counted..).unwrap_or_default();
        self.lines += new.iter().filter(|&&b| b == b'\n').count() as u64;
        self.counted = text.len();
        let allowed = allowed?;
        let need = (text.len() as u64).saturating_add(self.lines.saturating_mul(PEAK_PER_LINE));
        (need > allowed).then(|| {
            format!(
                "batch refused after {} lines ({} bytes read): applying them would need about {} MiB ({PEAK_PER_LINE} bytes a line and the text), more than the {} MiB a batch may take, half of the {} MiB this system had available (MemAvailable) when the batch began; send smaller batches",
                self.lines,
                text.len(),
                need.div_ceil(1 << 20),
                allowed >> 20,
                (allowed * 2) >> 20,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24684312 kB\nMemFree:         7838988 kB\nMemAvailable:   21945428 kB\n";
        assert_eq!(parse_mem_available(text), Some(21_945_428 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: x kB\n"), None);
    }

    /// With 64 MiB available a batch may need 32 MiB: 16,384 lines of 2 KiB, text aside. Lines of 20 bytes: at
    /// 15,000 lines (300,000 bytes + 15,000 × 2 KiB = 31,020,000 bytes) it is still read; at 16,384 lines
    /// (327,680 + 33,554,432 bytes) it is refused, before the rest arrives.
    #[test]
    fn a_batch_is_refused_once_it_would_need_more_than_half_of_what_is_available() {
        let line = b"route del 2001::/64\n";
        assert_eq!(line.len(), 20);
        let mut m = Meter::with_available(Some(64 << 20));
        let mut text = Vec::new();
        for _ in 0..15_000 {
            text.extend_from_slice(line);
        }
        assert_eq!(m.check(&text), None);
        for _ in 15_000..16_384 {
            text.extend_from_slice(line);
        }
        let why = m.check(&text).expect("refused");
        assert!(
            why.contains("after 16384 lines (327680 bytes read)"),
            "{why}"
        );
        assert!(why.contains("would need about 33 MiB"), "{why}");
        assert!(
            why.contains("more than the 32 MiB a batch may take"),
            "{why}"
        );
        assert!(
            why.contains("half of the 64 MiB this system had available"),
            "{why}"
        );
    }

    /// Counted in pieces as the text arrives, the lines are counted once.
    #[test]
    fn pieces_are_counted_once() {
        let mut m = Meter::with_available(Some(u64::MAX));
        let mut text = b"batch\nroute add".to_vec();
        assert_eq!(m.check(&text), None);
        text.extend_from_slice(b" ::/0 dev a\nroute del ::/0\n");
        assert_eq!(m.check(&text), None);
        assert_eq!(m.lines, 3);
    }

    /// Unknown available memory: nothing but the fixed limits.
    #[test]
    fn without_meminfo_only_the_fixed_limits_apply() {
        let mut m = Meter::with_available(None);
        assert_eq!(m.check(&vec![b'\n'; 1 << 20]), None);
    }
}
