//! The cost of forwarding to a next hop learned by NDP against one given by a static `neigh add`: the same routes
//! (plain forwarding and seg6 encap with 3 SIDs through the gateway), the same packets; the learned router resolves
//! the gateway the way a live router does (solicitation, solicited advertisement) before the counted batches.
//! Run it under callgrind (`scripts/bench-learned.sh`) for instructions per packet.
//!
//! `cargo run --release --example learned_neighbour -- static|learned PACKETS`

use lwt6::config;
use lwt6::router::Router;

const BASE: &str = "
link add r0 address 02:00:00:00:01:02
link add r1 address 02:00:00:00:02:01
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
-6 route add fc00::/16 via fd00:2::2 dev r1
-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1
";

/// Ethernet + IPv6 + UDP (16 bytes of payload) from fd00:1::1 to `dst`, arriving on r0.
fn udp6(dst: [u8; 16]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 1, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0, 0, 24, 17, 64]);
    f.extend([0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f.extend(dst);
    f.extend([0x9c, 0x40, 0x0d, 0x05, 0, 24, 0, 0]);
    f.extend(b"lwt6 learned nh!");
    f
}

/// The solicited advertisement (RFC 4861 §4.4) of fd00:2::2 at 02:00:00:00:02:02, to fd00:2::1 on r1, with its
/// ICMPv6 checksum.
fn advertisement() -> Vec<u8> {
    let (src, dst) = (
        [0xfd, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        [0xfd, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    );
    let mut icmp = vec![136, 0, 0, 0, 0x60, 0, 0, 0];
    icmp.extend(src);
    icmp.extend([2, 1, 2, 0, 0, 0, 2, 2]);
    let sum = lwt6::wire::checksum::combine(
        lwt6::wire::checksum::pseudo_header_v6(&src.into(), &dst.into(), icmp.len() as u32, 58),
        lwt6::wire::checksum::sum(&icmp),
    );
    let c = lwt6::wire::checksum::finish(sum);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![2, 0, 0, 0, 2, 1, 2, 0, 0, 0, 2, 2, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0, 0, icmp.len() as u8, 58, 255]);
    f.extend(src);
    f.extend(dst);
    f.extend(icmp);
    f
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let learned = match args.first().map(String::as_str) {
        Some("static") => false,
        Some("learned") => true,
        _ => return Err("usage: learned_neighbour static|learned PACKETS".into()),
    };
    let packets: usize = args.get(1).map_or(Ok(100_000), |s| s.parse())?;
    let conf = if learned {
        BASE.to_string()
    } else {
        format!("{BASE}neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1\n")
    };
    let mut r = Router::build(&config::parse(&conf)?)?;
    r.set_resolve(true);
    let frames = [
        udp6([0xfc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
        udp6([0xfd, 0, 0, 0x91, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
    ];
    let mut sent = 0usize;
    let mut out = |_: usize, _: u64, f: &[u8]| sent += f.len();
    // Resolution first (the learned router solicits, then hears the answer); the same batches for both.
    let ts = 1_000_000_000;
    r.process_batch([(0, ts, frames[0].as_slice())], &mut out);
    let adv = advertisement();
    r.process_batch([(1, ts + 1, adv.as_slice())], &mut out);
    let batch: Vec<(usize, u64, &[u8])> = (0..256)
        .map(|i| (0, ts + 2, frames[i % 2].as_slice()))
        .collect();
    let before = r.worker.stats.fast_path;
    for _ in 0..packets.div_ceil(256) {
        r.process_batch(batch.iter().copied(), &mut out);
    }
    let s = &r.worker.stats;
    println!(
        "{} packets, {} on the fast path, {} bytes out, {} dropped",
        packets.div_ceil(256) * 256,
        s.fast_path - before,
        sent,
        s.dropped()
    );
    Ok(())
}
