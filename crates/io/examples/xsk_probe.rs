//! Opens lwt6's AF_XDP port on an interface and counts what arrives: a quick check of what `--io xdp` would get
//! on this machine (program mode, zero-copy or copy, or why AF_XDP is unavailable).
//!
//! ```text
//! cargo run -p lwt6-io --example xsk_probe -- IFNAME [QUEUES] [SECONDS]
//! ```

use std::time::{Duration, Instant};

use lwt6_io::afxdp::{XskOptions, XskPort};
use lwt6_io::port::Port;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(ifname) = args.first() else {
        eprintln!("usage: xsk_probe IFNAME [QUEUES] [SECONDS]");
        std::process::exit(2);
    };
    let queues: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let secs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut ports = Vec::new();
    for q in 0..queues {
        match XskPort::open(ifname, q, XskOptions::default()) {
            Ok(p) => ports.push(p),
            Err(e) => {
                eprintln!("AF_XDP unavailable: {e}");
                std::process::exit(1);
            }
        }
    }
    let a = ports[0].attachment();
    println!(
        "{}: XDP program attached in {:?} mode, zero-copy: {}",
        a.ifname(),
        a.mode(),
        ports[0].is_zero_copy()
    );
    let t = Instant::now();
    let mut bytes = 0u64;
    while t.elapsed() < Duration::from_secs(secs) {
        let mut n = 0;
        for p in &mut ports {
            n += p
                .recv_batch(64, &mut |f| bytes += f.len() as u64)
                .unwrap_or(0);
        }
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    for p in &ports {
        println!(
            "queue {}: {:?}; kernel: {:?}",
            p.queue(),
            p.counters(),
            p.kernel_stats().ok()
        );
    }
    println!("{bytes} bytes in {secs} s");
}
