//! What the place of the rx buffer in memory costs: forwards the sweep's frames (seg6 H.Encaps by default)
//! through routers whose rx buffer starts at different offsets past a page boundary, all in one process, runs
//! interleaved, and prints the rate per offset and whether the packet as sent (new headers in front)
//! straddles a page.
//!
//! `cargo run --release --example placement -- [family] [size] [step]`, e.g. `-- seg6-encap 2 64`.
//! Output: `offset median_mpps best_mpps straddles` per line.

use lwt6::bench::{self, Family, Options, Strategy};
use lwt6::buffer::{PAGE, PacketBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let family = args.first().map_or("seg6-encap", String::as_str);
    let family = Family::from_name(family).ok_or_else(|| format!("unknown family {family}"))?;
    let size: usize = args.get(1).map_or(Ok(2), |s| s.parse())?;
    let step: usize = args.get(2).map_or(Ok(64), |s| s.parse())?;
    if step == 0 || step > PAGE {
        return Err(format!("step must be 1..={PAGE}").into());
    }
    let opts = Options::default();
    let frames = bench::frames(opts.frame_len);
    let offsets: Vec<usize> = (0..PAGE).step_by(step).collect();
    let mut routers = Vec::new();
    for &off in &offsets {
        let mut r = bench::router(family, size, Strategy::Lwt6, &opts)?;
        r.worker.set_rx_buffer(PacketBuf::at_page_offset(PAGE, off));
        bench::run_once(&mut r, &frames, frames.len() * 10);
        // Where the packet as sent lies: straddling a page boundary or not.
        let mut straddles = false;
        r.process_batch([(0, 0, frames[0].as_slice())], &mut |_, _, b| {
            let first = b.as_ptr() as usize;
            straddles = first / PAGE != (first + b.len() - 1) / PAGE;
        });
        routers.push((r, straddles));
    }
    let mut rates = vec![Vec::new(); offsets.len()];
    for _ in 0..31 {
        for (k, (r, _)) in routers.iter_mut().enumerate() {
            rates[k].push(bench::run_once(r, &frames, frames.len() * 8).0 / 1e6);
        }
    }
    for (k, &off) in offsets.iter().enumerate() {
        let v = &mut rates[k];
        v.sort_by(f64::total_cmp);
        println!(
            "{off} {:.2} {:.2} {}",
            v[v.len() / 2],
            v[v.len() - 1],
            routers[k].1
        );
    }
    Ok(())
}
