#!/usr/bin/env python3
"""Zero-loss forwarding rate of the kernel router and of `lwt6 run` (AF_XDP or AF_PACKET: --io) in the same
namespaces.

sender [s0] -- [r0] router [r1] -- [d0] receiver (tests/kernel/ktlive.py's topology). The sender is `lwt6 gen`
(one template frame, sendmmsg batches, --flows source addresses); the receiver's count is d0's rx_packets. For each
case and router, a trial offers a rate for --trial-ms and counts what arrives; the zero-loss rate (at most 0.1 %
lost) is found by bisection below the sender's own maximum. Prints a Markdown table and writes JSON.

    sudo scripts/bench-live.py [--lwt6 target/release/lwt6] [--io xdp|packet] [--trial-ms 1000]
                               [--out target/bench-live.json]
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "kernel"))

from ktlive import LIVE_BASE, LiveRouter, LiveTopo  # noqa: E402
from ktpkt import udp6  # noqa: E402

LOSS = 0.001
SENDER_CPU = "0"
CASES = {
    "plain IPv6": ([], "fc00::99"),
    "seg6 encap, 3 SIDs": (["-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1"],
                           "fd00:91::1"),
}


def rx_packets(topo):
    out = subprocess.run(["ip", "-n", topo.topo.name(topo.d), "-s", "-j", "link", "show", "d0"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"]


def steer(topo, cpus):
    """Receive Packet Steering on the router's r0: the router's receive work (the kernel's forwarding, or the
    delivery to lwt6's sockets) runs on `cpus` (a hex mask), not in the sender's context."""
    q = subprocess.run(["ip", "netns", "exec", topo.rns, "sh", "-c",
                        f"for f in /sys/class/net/r0/queues/rx-*/rps_cpus; do echo {cpus} > $f; done"],
                       capture_output=True, text=True)
    if q.returncode != 0:
        raise RuntimeError(q.stderr)


def trial(topo, lwt6, frame_hex, rate, ms, flows):
    before = rx_packets(topo)
    g = subprocess.run(["ip", "netns", "exec", topo.topo.name(topo.s), "taskset", "-c", SENDER_CPU, lwt6, "gen", "--dev", "s0", "--frame",
                        frame_hex, "--rate", str(rate), "--duration-ms", str(ms), "--flows", str(flows)],
                       capture_output=True, text=True)
    if g.returncode != 0:
        raise RuntimeError(g.stderr)
    sent = json.loads(g.stdout)
    time.sleep(0.2)
    got = rx_packets(topo) - before
    return sent["sent"], got, sent["rate"]


def zero_loss(topo, lwt6, frame_hex, ms, flows, steps):
    """(zero-loss rate, sender maximum, limited by sender?)"""
    sent, got, gmax = trial(topo, lwt6, frame_hex, 0, ms, flows)
    if sent and (sent - got) / sent <= LOSS:
        return gmax, gmax, True
    lo, hi = 0.0, gmax
    for _ in range(steps):
        mid = (lo + hi) / 2
        s, g, r = trial(topo, lwt6, frame_hex, int(mid), ms, flows)
        if s and (s - g) / s <= LOSS:
            lo = max(lo, r)
        else:
            hi = mid
    return lo, gmax, False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lwt6", default=os.path.join(ROOT, "target", "release", "lwt6"))
    ap.add_argument("--trial-ms", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--flows", type=int, default=64)
    ap.add_argument("--router-cpus", default="1", help="CPUs lwt6 run is pinned to (taskset -c; empty: none)")
    ap.add_argument("--rps", default="2", help="r0's rps_cpus mask (the router's CPUs; empty: no steering)")
    ap.add_argument("--io", default="xdp", choices=["xdp", "packet"], help="lwt6's packet I/O back end")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench-live.json"))
    a = ap.parse_args()
    os.environ["LWT6_BIN"] = a.lwt6
    topo = LiveTopo("bl", queues=2)
    results = []
    try:
        if a.rps:
            steer(topo, a.rps)
        for name, (routes, dst) in CASES.items():
            frame_hex = udp6(dst, size=16).hex()
            topo.kernel_mode(LIVE_BASE + routes)
            try:
                zl, gmax, lim = zero_loss(topo, a.lwt6, frame_hex, a.trial_ms, a.flows, a.steps)
            finally:
                topo.lwt6_mode()
            results.append(dict(case=name, router="kernel", workers=None, zero_loss=zl, sender_max=gmax,
                                sender_limited=lim))
            print(f"{name:24} kernel      {zl:12.0f} /s (sender max {gmax:.0f}{', sender-limited' if lim else ''})",
                  flush=True)
            for workers in (1, 2):
                r = LiveRouter(topo.rns, "\n".join(LIVE_BASE + routes) + "\n", "/tmp" if not os.path.isdir(
                    os.path.join(ROOT, "target")) else os.path.join(ROOT, "target"),
                    args=["--workers", str(workers), "--io", a.io], label=f"bench-live-{workers}", cpus=a.router_cpus)
                try:
                    zl, gmax, lim = zero_loss(topo, a.lwt6, frame_hex, a.trial_ms, a.flows, a.steps)
                finally:
                    final = r.stop()
                results.append(dict(case=name, router="lwt6", io=a.io, workers=workers, zero_loss=zl, sender_max=gmax,
                                    sender_limited=lim, reallocs=final["reallocs"], rx=final["rx"]))
                print(f"{name:24} lwt6 {a.io} {workers}w {zl:12.0f} /s (sender max {gmax:.0f}"
                      f"{', sender-limited' if lim else ''}; reallocations {final['reallocs']} for {final['rx']} "
                      f"frames)", flush=True)
    finally:
        topo.destroy()
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print("\n| case | kernel | lwt6, 1 worker | lwt6, 2 workers |\n|---|---|---|---|")
    for name in CASES:
        row = [r for r in results if r["case"] == name]
        cells = [f"{r['zero_loss'] / 1e3:.0f} kpps" + (" (sender-limited)" if r["sender_limited"] else "")
                 for r in row]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
