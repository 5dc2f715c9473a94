//! Smoke test of the sweep harness: a tiny sweep through the real pipeline, checking reallocation counts only
//! (never timings). Expected values are the closed form of docs/references.md §5.2 worked by hand:
//! - seg6 encap, n SIDs: O = 48 + 16n. i40e: H0 = 192 + 14 = 206, m = 14, L = 16, P = 64.
//!   n = 13: O = 256, d = O + m − H0 = 64 > 0 and (−64) mod 64 = 0 < L − m = 2 → two reallocations.
//!   n = 12: O = 240, d = 48, (−48) mod 64 = 16 ≥ 2 → one reallocation.
//! - lwt6 reserves its computed headroom once: none at its default rx headroom; with rx headroom 0, one.
use lwt6::bench::{self, Family, Options, Seg6ModeKey, Strategy, Sweep};

fn tiny() -> Options {
    Options {
        packets: 512,
        runs: 1,
        ..Options::default()
    }
}

fn point(points: &[bench::Point], size: usize, s: Strategy) -> f64 {
    points
        .iter()
        .find(|p| p.size == size && p.strategy == s)
        .unwrap_or_else(|| panic!("no point {size} {}", s.name()))
        .reallocs_per_packet
}

#[test]
fn reallocations_per_packet() {
    let enc = Family::Seg6(Seg6ModeKey::Encap);
    let req = Sweep {
        lines: vec![(Family::Plain, vec![0]), (enc, vec![2, 12, 13])],
        strategies: vec![
            Strategy::PreFix,
            Strategy::PostFix,
            Strategy::Lwt6,
            Strategy::Lwt6Tiny,
            Strategy::Lwt6Memcpy,
        ],
        opts: tiny(),
        jobs: 1,
        progress: false,
    };
    let pts = bench::sweep(&req).unwrap();
    let seg: Vec<_> = pts.iter().filter(|p| p.family == enc).cloned().collect();
    assert_eq!(point(&seg, 13, Strategy::PreFix), 2.0);
    assert_eq!(point(&seg, 12, Strategy::PreFix), 1.0);
    // After the fix (warm cache): one iff O + L > H0: 256 + 16 > 206 and 240 + 16 > 206.
    assert_eq!(point(&seg, 13, Strategy::PostFix), 1.0);
    assert_eq!(point(&seg, 12, Strategy::PostFix), 1.0);
    // n = 2: O = 80, 80 + 16 <= 206: none.
    assert_eq!(point(&seg, 2, Strategy::PostFix), 0.0);
    for n in [2, 12, 13] {
        for s in [Strategy::Lwt6, Strategy::Lwt6Memcpy] {
            assert_eq!(
                point(&seg, n, s),
                0.0,
                "{} default headroom, {n} SIDs",
                s.name()
            );
        }
        let t = point(&seg, n, Strategy::Lwt6Tiny);
        assert!(t <= 1.0, "lwt6 with rx headroom 0, {n} SIDs: {t}");
    }
    // The baseline never grows.
    for s in [Strategy::PreFix, Strategy::PostFix, Strategy::Lwt6] {
        let p = pts
            .iter()
            .find(|p| p.family == Family::Plain && p.strategy == s)
            .unwrap();
        assert_eq!(p.reallocs_per_packet, 0.0);
        assert_eq!(p.added, 0);
    }
    // The pipeline's measured growth is the protocol overhead (O), and rates are positive numbers.
    for p in &seg {
        assert_eq!(Some(p.added), enc.overhead(p.size));
        assert!(p.rate.median > 0.0 && p.rate.min <= p.rate.median && p.rate.median <= p.rate.max);
    }
    // The CSV round-trips and the summary finds the dip where §5.2 predicts it.
    let back = bench::from_csv(&bench::to_csv(&pts, &req.opts)).unwrap();
    assert_eq!(back.len(), pts.len());
    let summary = bench::summary(&pts, &req.opts);
    assert!(
        summary.contains("| seg6-encap | 3 | 13 | 13 | yes |"),
        "{summary}"
    );
}

#[test]
fn closed_form_matches_the_spec_table() {
    // Behaviour spec §5.2, P = 64, H0 = 206: seg6 encap n ≡ 1 mod 4, n ≥ 13; encap.red 14, 18, 22 ...;
    // inline never; IOAM inline t = 236, 240; IOAM encap t = 196, 200.
    let two = |f: Family, sizes: std::ops::RangeInclusive<usize>, step: usize| -> Vec<usize> {
        sizes
            .step_by(step)
            .filter(|&s| bench::predicted_prefix_reallocs(f, s, 192, 64) == Some(2))
            .collect()
    };
    assert_eq!(
        two(Family::Seg6(Seg6ModeKey::Encap), 1..=40, 1),
        vec![13, 17, 21, 25, 29, 33, 37]
    );
    assert_eq!(
        two(Family::Seg6(Seg6ModeKey::EncapRed), 1..=40, 1),
        vec![14, 18, 22, 26, 30, 34, 38]
    );
    assert!(two(Family::Seg6(Seg6ModeKey::Inline), 1..=40, 1).is_empty());
    assert_eq!(two(Family::IoamInline, 4..=244, 4), vec![236, 240]);
    assert_eq!(two(Family::IoamEncap, 4..=244, 4), vec![196, 200]);
    // The closed form and the analyzer's simulation of the kernel calls agree everywhere in the sweep range.
    for f in bench::Family::all() {
        for s in f.default_sizes() {
            if let Some(a) = bench::analyzer_prefix_reallocs(f, s, 192, 64) {
                assert_eq!(
                    Some(a),
                    bench::predicted_prefix_reallocs(f, s, 192, 64),
                    "{} {s}",
                    f.name()
                );
            }
        }
    }
}

#[test]
fn floor_runs() {
    let r = bench::floor(Family::Seg6(Seg6ModeKey::Encap), 2, &tiny()).unwrap();
    // Ethernet 14 + outer IPv6 40 + SRH with 2 SIDs (8 + 32) = 94 bytes of template.
    assert_eq!(r.template_len, 94);
    assert!(r.lwt6.median > 0.0 && r.floor.median > 0.0 && r.floor_rx.median > 0.0);
}

#[test]
fn trace_cost_runs() {
    let r = bench::trace::run(Family::Seg6(Seg6ModeKey::Encap), 2, &tiny()).unwrap();
    assert!(r.off.median > 0.0 && r.armed.median > 0.0 && r.traced.median > 0.0);
    assert!(r.traced_packets <= lwt6::trace::MAX_FRAMES as usize);
    assert!(r.table().contains("every frame traced"));
}
