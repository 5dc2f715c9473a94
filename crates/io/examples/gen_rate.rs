//! Sends frames out of an interface as fast as the port takes them (or at a given rate) with lwt6's generator,
//! over AF_XDP or AF_PACKET, and prints the rate achieved.
//!
//! ```text
//! cargo run --release -p lwt6-io --example gen_rate -- IFNAME xdp|packet COUNT [RATE]
//! ```

use lwt6_io::afxdp::{XskOptions, XskPort};
use lwt6_io::generator::{GenOptions, PacketTx, Transmit, generate};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: gen_rate IFNAME xdp|packet COUNT [RATE]");
        std::process::exit(2);
    }
    let count: u64 = args[2].parse().expect("COUNT");
    let rate: Option<u64> = args.get(3).map(|s| s.parse().expect("RATE"));
    // A 64-byte IPv6/UDP frame (Ethernet header, IPv6 header, UDP header, 2 bytes of payload).
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x86, 0xdd, 0x60, 0, 0, 0, 0, 10, 17, 64,
    ];
    f.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a]);
    f.extend([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b]);
    f.extend([0x04, 0x00, 0xb7, 0x98, 0, 10, 0, 0, 0, 0]);
    let frames = vec![f];
    let mut port: Box<dyn Transmit> = match args[1].as_str() {
        "xdp" => Box::new(
            XskPort::open(&args[0], 0, XskOptions::default()).unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(1)
            }),
        ),
        "packet" => Box::new(PacketTx::open(&args[0]).expect("AF_PACKET socket")),
        other => panic!("unknown back end {other}"),
    };
    let r = generate(
        port.as_mut(),
        &frames,
        GenOptions {
            count,
            rate,
            batch: 64,
        },
    )
    .expect("generate");
    println!(
        "{} {}: {} frames in {:.3} s = {:.0} frames/s ({} waits for a full port)",
        args[0],
        args[1],
        r.sent,
        r.elapsed.as_secs_f64(),
        r.rate(),
        r.waits
    );
}
