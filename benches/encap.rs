//! Criterion benchmarks of the forwarding pipeline (the same setup as `lwt6 bench sweep`, see `lwt6::bench`):
//! lwt6 native H.Encaps with 2 SIDs, the physical floor loop beside it, plain IPv6 forwarding, and Linux pre-fix
//! at 13 SIDs (two reallocations per packet, docs/references.md §5.2) against 12 (one).
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lwt6::bench::{self, Family, Options, Seg6ModeKey, Strategy};
use std::hint::black_box;

fn batch(c: &mut Criterion, name: &str, family: Family, size: usize, strategy: Strategy) {
    let frames = bench::frames(bench::DEFAULT_FRAME_LEN);
    let mut r = bench::router(family, size, strategy, &Options::default()).expect("router");
    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut sink = 0usize;
            r.process_batch(
                frames.iter().map(|f| (0usize, 0u64, f.as_slice())),
                &mut |_, _, out| sink += out.len(),
            );
            black_box(sink)
        })
    });
    g.finish();
}

fn pipeline(c: &mut Criterion) {
    let enc = Family::Seg6(Seg6ModeKey::Encap);
    batch(c, "lwt6_encap_2sids", enc, 2, Strategy::Lwt6);
    batch(c, "ipv6_forward", Family::Plain, 0, Strategy::Lwt6);
    batch(c, "prefix_encap_12sids", enc, 12, Strategy::PreFix);
    batch(c, "prefix_encap_13sids", enc, 13, Strategy::PreFix);
    batch(c, "postfix_encap_13sids", enc, 13, Strategy::PostFix);
}

fn floor(c: &mut Criterion) {
    // The header template lwt6 writes for 2 SIDs: Ethernet + outer IPv6 + SRH (94 bytes), taken from its output.
    let frames = bench::frames(bench::DEFAULT_FRAME_LEN);
    let mut r = bench::router(
        Family::Seg6(Seg6ModeKey::Encap),
        2,
        Strategy::Lwt6,
        &Options::default(),
    )
    .expect("router");
    let mut first = Vec::new();
    r.process_batch([(0usize, 0u64, frames[0].as_slice())], &mut |_, _, b| {
        first = b.to_vec()
    });
    let template = first[..first.len() - (frames[0].len() - 14)].to_vec();
    let mut g = c.benchmark_group("floor");
    g.throughput(Throughput::Elements(frames.len() as u64));
    let mut l = bench::FloorLoop::new(&frames, &template);
    g.bench_function("template_copy", |b| b.iter(|| black_box(l.pass(false))));
    g.bench_function("rx_and_template_copy", |b| {
        b.iter(|| black_box(l.pass(true)))
    });
    g.finish();
}

criterion_group!(benches, pipeline, floor);
criterion_main!(benches);
