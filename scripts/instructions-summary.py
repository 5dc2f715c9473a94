#!/usr/bin/env python3
"""Summarise scripts/bench-instructions.sh output (instructions per packet) per family, as docs/BENCHMARKS.md shows it.

Usage: scripts/instructions-summary.py [docs/plots/instructions.csv] [docs/plots/sweep.csv]

For every family: lwt6's and post-fix's range; the smoothness check (the worst lwt6 point below the straight line
through its two neighbours, on the rate 1/instructions; the same for lwt6-memcpy where counted); and the ordering check, lwt6 <= post-fix in instructions at
every common size, split by whether post-fix reallocates there (as the wall-clock sweep's pipeline counted it,
column reallocs_per_packet of sweep.csv).
"""
import csv
import sys
from collections import defaultdict


def worst_below_line(counts):
    """(shortfall, size): the point whose rate (1 / instructions) lies furthest below the line through its two
    neighbours, as a fraction of that line."""
    sizes = sorted(counts)
    worst = (0.0, None)
    for a, b, c in zip(sizes, sizes[1:], sizes[2:]):
        ra, rb, rc = 1 / counts[a], 1 / counts[b], 1 / counts[c]
        line = ra + (rc - ra) * (b - a) / (c - a)
        short = (line - rb) / line
        if short > worst[0]:
            worst = (short, b)
    return worst


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "docs/plots/instructions.csv"
    sweep = sys.argv[2] if len(sys.argv) > 2 else "docs/plots/sweep.csv"
    reallocs = {}  # (proto, mode, size) -> post-fix reallocations per packet
    with open(sweep, newline="") as f:
        for row in csv.DictReader(f):
            if row["strategy"] == "post-fix":
                reallocs[(row["proto"], row["mode"], int(row["size"]))] = float(row["reallocs_per_packet"])
    ir = defaultdict(dict)  # (proto, mode, strategy) -> {size: instructions}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            ir[(row["proto"], row["mode"], row["strategy"])][int(row["size"])] = int(row["instructions_per_packet"])
    families = sorted({(p, m) for (p, m, _) in ir})
    print("| family | lwt6 instructions/packet (min–max) | post-fix (min–max) | lwt6 worst point below the line "
          "through its neighbours (rate) | lwt6-memcpy, the same | lwt6 − post-fix where post-fix reallocates | "
          "lwt6 − post-fix where it does not | lwt6 ≤ post-fix at every point |")
    print("|---|---|---|---|---|---|---|---|")
    for proto, mode in families:
        ours = ir.get((proto, mode, "lwt6"), {})
        post = ir.get((proto, mode, "post-fix"), {})
        if not ours:
            continue
        sizes = sorted(ours)
        worst = worst_below_line(ours)
        memcpy = ir.get((proto, mode, "lwt6-memcpy"), {})
        worst_m = "-"
        if memcpy:
            short, size = worst_below_line(memcpy)
            worst_m = f"{short * 100:.2f}% at {size}"
        common = sorted(set(sizes) & set(post))
        realloc = {s: reallocs.get((proto, mode, s), 0.0) for s in common}
        diff_r = [ours[s] - post[s] for s in common if realloc.get(s, 0) > 0]
        diff_n = [ours[s] - post[s] for s in common if realloc.get(s, 0) == 0]
        rng = lambda d: f"{min(d):+d} … {max(d):+d} ({len(d)} points)" if d else "- (0 points)"
        mm = lambda d: f"{min(d.values())}–{max(d.values())}" if d else "-"
        ok = all(ours[s] <= post[s] for s in common)
        print(f"| {proto} {mode} | {mm(ours)} | {mm(post)} | "
              f"{worst[0] * 100:.2f}% at {worst[1]} | {worst_m} | {rng(diff_r)} | {rng(diff_n)} | "
              f"{'yes' if ok and common else 'no' if common else '-'} ({len(common)} points) |")


if __name__ == "__main__":
    main()
