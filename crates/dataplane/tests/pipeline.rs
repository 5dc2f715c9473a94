//! Whole-pipeline properties: hostile frames never panic, every frame is either sent or dropped for a named
//! reason (rx == tx + dropped), and with the default rx headroom nothing is ever reallocated.

use lwt6_config as config;
use lwt6_dataplane::router::Router;
use proptest::prelude::*;

fn router(example: &str) -> Router {
    let text = std::fs::read_to_string(format!(
        "{}/../../examples/{example}/router.conf",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    Router::build(&config::parse(&text).unwrap()).unwrap()
}

fn example_frames(example: &str) -> Vec<Vec<u8>> {
    let path = format!(
        "{}/../../examples/{example}/input.pcap",
        env!("CARGO_MANIFEST_DIR")
    );
    lwt6_io::pcap::read_file(std::path::Path::new(&path))
        .unwrap()
        .into_iter()
        .map(|f| f.data)
        .collect()
}

/// Mutations of real frames reach deep into the pipeline, unlike uniformly random bytes.
fn mutated(base: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (
        0..base.len(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(move |(i, flips, cut, do_cut)| {
            let mut f = base[i].clone();
            for (at, v) in flips {
                let n = f.len();
                f[at.index(n)] = v;
            }
            if do_cut {
                let n = f.len();
                f.truncate(cut.index(n + 1));
            }
            f
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_frames_never_panic_and_balance(frames in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..8)) {
        for ex in ["seg6", "ioam6", "rpl"] {
            let mut r = router(ex);
            r.process_batch(frames.iter().map(|f| (0usize, 0u64, f.as_slice())), &mut |_, _, _| {});
            prop_assert!(r.worker.stats.balanced());
            prop_assert_eq!(r.worker.stats.rx, frames.len() as u64);
        }
    }

    #[test]
    fn mutated_real_frames_never_panic_and_balance(
        s in mutated(example_frames("seg6")),
        i in mutated(example_frames("ioam6")),
        p in mutated(example_frames("rpl")),
    ) {
        for (ex, f) in [("seg6", s), ("ioam6", i), ("rpl", p)] {
            let mut r = router(ex);
            let mut sent = 0u64;
            r.process_batch([(0usize, 0u64, f.as_slice())], &mut |_, _, _| sent += 1);
            prop_assert!(r.worker.stats.balanced());
            prop_assert!(sent <= 1 + r.worker.stats.icmp_tx);
            prop_assert_eq!(r.worker.stats.reallocs, 0, "default headroom covers every route");
        }
    }
}

#[test]
fn examples_forward_what_they_should() {
    // Hand-checked expectations for the example inputs (see examples/gen_inputs.py for what each frame is).
    for (ex, tx, dropped, icmp) in [("seg6", 6, 3, 2), ("ioam6", 5, 1, 0), ("rpl", 3, 1, 0)] {
        let mut r = router(ex);
        let frames = example_frames(ex);
        r.process_batch(
            frames.iter().map(|f| (0usize, 0u64, f.as_slice())),
            &mut |_, _, _| {},
        );
        assert_eq!(
            (
                r.worker.stats.tx,
                r.worker.stats.dropped(),
                r.worker.stats.icmp_tx
            ),
            (tx, dropped, icmp),
            "{ex}: {:?}",
            r.worker.stats.drops
        );
        assert_eq!(r.worker.stats.reallocs, 0);
    }
}
