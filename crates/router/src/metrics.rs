//! `--metrics ADDR`: the counters in the Prometheus text exposition format (version 0.0.4), served over HTTP by
//! one small thread. Per worker (`lwt6_worker_*`, label `worker`) and for the whole router (`lwt6_*`).

use crate::engine::WorkerReport;
use lwt6_dataplane::stats::DropReason;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The exposition text of the reports.
pub fn render(each: &[WorkerReport], links: &[String]) -> String {
    let mut total = WorkerReport::default();
    for r in each {
        total.merge(r);
    }
    let mut s = String::new();
    type Get = fn(&WorkerReport) -> u64;
    let families: [(&str, &str, Get); 7] = [
        ("rx_frames", "Frames received.", |r| r.stats.rx),
        (
            "tx_frames",
            "Frames forwarded (not counting ICMP errors).",
            |r| r.stats.tx,
        ),
        ("dropped_frames", "Frames dropped, all reasons.", |r| {
            r.stats.dropped()
        }),
        ("icmp_errors_sent", "ICMP errors generated.", |r| {
            r.stats.icmp_tx
        }),
        (
            "fast_path_frames",
            "Frames forwarded by a precomputed plan.",
            |r| r.stats.fast_path,
        ),
        (
            "tx_refused_frames",
            "Frames a full transmit queue refused.",
            |r| r.tx_refused,
        ),
        (
            "overload_frames",
            "Frames the kernel dropped before lwt6 received them (socket ring or buffer full).",
            |r| r.overload_by_dev.iter().sum(),
        ),
    ];
    for (name, help, get) in families {
        let _ = writeln!(
            s,
            "# HELP lwt6_{name}_total {help}\n# TYPE lwt6_{name}_total counter"
        );
        let _ = writeln!(s, "lwt6_{name}_total {}", get(&total));
        let _ = writeln!(
            s,
            "# HELP lwt6_worker_{name}_total {help} Per worker.\n# TYPE lwt6_worker_{name}_total counter"
        );
        for (i, r) in each.iter().enumerate() {
            let _ = writeln!(s, "lwt6_worker_{name}_total{{worker=\"{i}\"}} {}", get(r));
        }
    }
    let _ = writeln!(
        s,
        "# HELP lwt6_drops_total Frames dropped, by reason.\n# TYPE lwt6_drops_total counter"
    );
    for reason in DropReason::ALL {
        let n = total.stats.drops.get(reason).copied().unwrap_or(0);
        let _ = writeln!(s, "lwt6_drops_total{{reason=\"{}\"}} {n}", reason.name());
    }
    let _ = writeln!(
        s,
        "# HELP lwt6_worker_drops_total Frames dropped, by reason. Per worker.\n# TYPE lwt6_worker_drops_total counter"
    );
    for (i, r) in each.iter().enumerate() {
        for (reason, n) in &r.stats.drops {
            let _ = writeln!(
                s,
                "lwt6_worker_drops_total{{worker=\"{i}\",reason=\"{}\"}} {n}",
                reason.name()
            );
        }
    }
    for (dir, help) in [
        ("rx", "received"),
        ("tx", "sent"),
        (
            "overload",
            "dropped by the kernel before lwt6 received them (overload)",
        ),
    ] {
        let _ = writeln!(
            s,
            "# HELP lwt6_link_{dir}_frames_total Frames {help}, per interface.\n# TYPE lwt6_link_{dir}_frames_total counter"
        );
        for (i, l) in links.iter().enumerate() {
            let v = match dir {
                "rx" => &total.rx_by_dev,
                "tx" => &total.tx_by_dev,
                _ => &total.overload_by_dev,
            };
            let _ = writeln!(
                s,
                "lwt6_link_{dir}_frames_total{{link=\"{l}\"}} {}",
                v.get(i).copied().unwrap_or(0)
            );
        }
    }
    s
}

/// Serves the metrics on `listener` until the process ends.
pub fn serve(listener: TcpListener, reports: Vec<Arc<Mutex<WorkerReport>>>, links: Vec<String>) {
    for conn in listener.incoming() {
        let Ok(mut c) = conn else { continue };
        let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = c.set_write_timeout(Some(Duration::from_secs(2)));
        // The request itself does not matter: every path answers with the metrics.
        let mut buf = [0u8; 2048];
        let _ = c.read(&mut buf);
        let each: Vec<WorkerReport> = reports
            .iter()
            .map(|r| r.lock().map(|r| r.clone()).unwrap_or_default())
            .collect();
        let body = render(&each, &links);
        let _ = write!(
            c,
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_the_sum_of_the_workers() {
        let mut a = WorkerReport::default();
        a.stats.rx = 3;
        a.stats.tx = 2;
        a.stats.count_drop(DropReason::NoRoute);
        a.overload_by_dev = vec![7];
        let mut b = a.clone();
        b.stats.rx = 5;
        b.stats.tx = 4;
        b.overload_by_dev = vec![10];
        let text = render(&[a, b], &["r0".into()]);
        assert!(text.contains("\nlwt6_overload_frames_total 17\n"), "{text}");
        assert!(text.contains("lwt6_worker_overload_frames_total{worker=\"0\"} 7\n"));
        assert!(text.contains("lwt6_link_overload_frames_total{link=\"r0\"} 17\n"));
        assert!(text.contains("\nlwt6_rx_frames_total 8\n"), "{text}");
        assert!(text.contains("lwt6_worker_rx_frames_total{worker=\"1\"} 5\n"));
        assert!(text.contains("lwt6_drops_total{reason=\"no_route\"} 2\n"));
        assert!(text.contains("lwt6_worker_drops_total{worker=\"0\",reason=\"no_route\"} 1\n"));
        assert!(text.contains("lwt6_link_rx_frames_total{link=\"r0\"} 0\n"));
    }
}
