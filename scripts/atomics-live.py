#!/usr/bin/env python3
"""Atomic operations per packet on lwt6's live path, counted: `lwt6 run` under callgrind forwards a stream of
frames in the live topology (sender - router - receiver namespaces), and every executed instruction that is
atomic on x86-64 (a `lock`-prefixed one, or `xchg` with a memory operand, which is locked implicitly) is counted
from callgrind's per-instruction counts matched against `objdump -d` of the object it belongs to.

Runs of the same length: one idle, one per offered rate. For each traffic run: the worker's rounds (one snapshot
load each: a round receives up to a batch from every port, processes, sends), atomics per round, and atomics per
packet = (atomics with traffic - atomics idle) / frames forwarded (what the idle run has -- start, stop, timers,
idle polling -- is not the packets' doing). Atomics that come per round and not per packet make the per-packet
figure fall as the rate (and so the batch) grows. Each site (function, instruction) is listed with its counts. User space only: the kernel's own
atomics in the system calls (AF_PACKET socket queues, AF_XDP rings' producers) are not seen by callgrind.

    sudo scripts/atomics-live.py [--lwt6 target/release/lwt6] [--io packet|xdp] [--rates 1000,4000] [--seconds 4]
                                 [--out target/atomics-live.json]
"""
import argparse
import bisect
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "kernel"))

from ktlive import LIVE_BASE, LiveTopo  # noqa: E402
from ktpkt import udp6  # noqa: E402

LOCKED = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(lock\s+\S+.*|xchg\w*\s+.*\(.*)$")


def atomic_sites(path):
    """{file vaddr: instruction text} of the atomic instructions in an ELF object (objdump -d)."""
    out = subprocess.run(["objdump", "-d", "-w", path], capture_output=True,
                         text=True).stdout
    sites = {}
    for line in out.splitlines():
        m = LOCKED.match(line)
        if m:
            sites[int(m.group(1), 16)] = " ".join(m.group(2).split())
    return sites


def parse_callgrind(path):
    """{(object, address): self Ir} and {(object, address): function} from a callgrind file written with
    --dump-instr=yes (positions: instr [line])."""
    names = {"ob": {}, "fn": {}}
    cost, func, calls = {}, {}, {}
    ob = fn = cfn = None
    npos = 1
    last = [0, 0]
    skip_next = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("positions:"):
                npos = len(line.split()[1:])
                continue
            c = line[0]
            if c.isdigit() or c in "+-*" or line.startswith("0x"):
                parts = line.split()
                pos = []
                for i in range(npos):
                    p = parts[i] if i < len(parts) else "*"
                    if p == "*":
                        v = last[i]
                    elif p[0] in "+-":
                        v = last[i] + int(p, 0)
                    else:
                        v = int(p, 0)
                    pos.append(v)
                last[:npos] = pos
                if skip_next:  # the inclusive cost of a call: not this instruction's own
                    skip_next = False
                    continue
                ir = int(parts[npos]) if len(parts) > npos else 0
                key = (ob, pos[0])
                cost[key] = cost.get(key, 0) + ir
                func.setdefault(key, fn)
                continue
            m = re.match(r"^(ob|fn|cob|cfn|fl|fi|fe|cfi|cfl)=(?:\((\d+)\))?\s*(.*)$", line)
            if m:
                kind, ident, name = m.groups()
                table = names.get({"cob": "ob", "cfn": "fn"}.get(kind, kind))
                if table is not None:
                    if ident and name:
                        table[ident] = name
                    value = table.get(ident, name) if ident else name
                    if kind == "ob":
                        ob = value
                    elif kind == "fn":
                        fn = value
                    elif kind == "cfn":
                        cfn = value
                continue
            if line.startswith("calls="):
                skip_next = True
                calls[(fn, cfn)] = calls.get((fn, cfn), 0) + int(line.split()[0][6:])
    return cost, func, calls


def count_atomics(cg, cache):
    """Executed atomic instructions, total and per site. Callgrind gives each instruction's address as the
    object's own (file) virtual address, which is what objdump prints."""
    cost, func, calls = parse_callgrind(cg)
    # A worker's round starts with one snapshot load (engine::run is inlined into its thread's closure); the main
    # thread's loads (lwt6_router::run::serve, the control socket) are not rounds.
    rounds = sum(n for (f, c), n in calls.items()
                 if f and c and c.endswith("SnapshotHandle::load") and "run::serve" not in f
                 and "control" not in f)
    total, sites = 0, {}
    for (ob, addr), ir in cost.items():
        if not ob or not ob.startswith("/") or not os.path.exists(ob) or not ir:
            continue
        if ob not in cache:
            cache[ob] = atomic_sites(ob)
        text = cache[ob].get(addr)
        if text is None:
            continue
        total += ir
        k = f"{func.get((ob, addr))} [{os.path.basename(ob)}+{addr:#x}: {text}]"
        sites[k] = sites.get(k, 0) + ir
    return total, sites, rounds


def fit_rounds_packets(points):
    """Least squares for atomics = c + r * rounds + p * packets over (rounds, packets, atomics) points; None when
    the points do not determine it."""
    if len(points) < 3:
        return None
    # Normal equations A^T A x = A^T y, solved by Gaussian elimination.
    rows = [(1.0, float(r), float(p)) for r, p, _ in points]
    ys = [float(y) for _, _, y in points]
    m = [[sum(a[i] * a[j] for a in rows) for j in range(3)] + [sum(a[i] * y for a, y in zip(rows, ys))]
         for i in range(3)]
    for c in range(3):
        piv = max(range(c, 3), key=lambda r: abs(m[r][c]))
        if abs(m[piv][c]) < 1e-9:
            return None
        m[c], m[piv] = m[piv], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return tuple(m[i][3] / m[i][i] for i in range(3))


def run_once(topo, lwt6, io, frame_hex, rate, seconds, outdir, label):
    conf = os.path.join(outdir, f"{label}.conf")
    sock = os.path.join(outdir, f"{label}.sock")
    cg = os.path.join(outdir, f"callgrind.{label}.out")
    with open(conf, "w") as f:
        f.write("\n".join(LIVE_BASE) + "\n")
    argv = ["ip", "netns", "exec", topo.rns, "valgrind", "--tool=callgrind", "--dump-instr=yes",
            f"--callgrind-out-file={cg}", lwt6, "run", "-c", conf, "--control", sock, "-j", "--io", io]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(sock) or subprocess.run([lwt6, "ctl", "--control", sock, "show", "stats"],
                                                         capture_output=True).returncode != 0:
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"lwt6 run under valgrind did not start: {p.communicate()[1][-2000:]}")
            time.sleep(0.2)
        if rate:
            g = subprocess.run(["ip", "netns", "exec", topo.topo.name(topo.s), lwt6, "gen", "--dev", "s0", "--frame",
                                frame_hex, "--rate", str(rate), "--duration-ms", str(int(seconds * 1000)),
                                "--flows", "64"], capture_output=True, text=True, check=True)
            sent = json.loads(g.stdout)["sent"]
        else:
            time.sleep(seconds)
            sent = 0
        time.sleep(1.0)
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    final = json.loads(out)
    return cg, final, sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lwt6", default=os.path.join(ROOT, "target", "release", "lwt6"))
    ap.add_argument("--io", default="packet", choices=["packet", "xdp"])
    ap.add_argument("--rates", default="1000,4000", help="offered frames per second, one traffic run each")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "atomics-live.json"))
    a = ap.parse_args()
    lwt6 = os.path.abspath(a.lwt6)
    os.environ["LWT6_BIN"] = lwt6
    outdir = os.path.join(os.path.dirname(os.path.abspath(a.out)), "atomics-live")
    os.makedirs(outdir, exist_ok=True)
    topo = LiveTopo("at")
    cache = {}
    runs = {}
    try:
        topo.lwt6_mode()
        frame_hex = udp6("fc00::99", size=16).hex()
        for rate in [0] + [int(r) for r in a.rates.split(",")]:
            label = "idle" if rate == 0 else f"rate-{rate}"
            cg, final, sent = run_once(topo, lwt6, a.io, frame_hex, rate, a.seconds, outdir, label)
            total, sites, rounds = count_atomics(cg, cache)
            runs[label] = dict(rate=rate, atomics=total, rounds=rounds, sites=sites, rx=final["rx"], tx=final["tx"],
                               sent=sent, reallocs=final["reallocs"], io=final.get("io"))
            print(f"{label:10} atomics {total:8d}  worker rounds {rounds:6d}  frames in {final['rx']}, forwarded "
                  f"{final['tx']}, reallocations {final['reallocs']}", flush=True)
    finally:
        topo.destroy()
    idle = runs["idle"]
    print(f"\n{'run':10} {'packets':>8} {'rounds':>7} {'pkts/round':>10} {'atomics/round':>13} "
          f"{'atomics/packet (marginal)':>26}")
    summary = []
    for label, r in runs.items():
        if label == "idle":
            continue
        d_at, d_rounds, fwd = r["atomics"] - idle["atomics"], r["rounds"] - idle["rounds"], max(1, r["tx"])
        per_round = r["atomics"] / max(1, r["rounds"])
        per_packet = d_at / fwd
        summary.append(dict(run=label, forwarded=r["tx"], rounds=r["rounds"], packets_per_round=r["tx"] / max(
            1, r["rounds"]), atomics_per_round=per_round, atomics_per_packet=per_packet,
            extra_rounds=d_rounds, reallocs_per_packet=r["reallocs"] / max(1, r["rx"])))
        print(f"{label:10} {r['tx']:8d} {r['rounds']:7d} {r['tx'] / max(1, r['rounds']):10.1f} {per_round:13.2f} "
              f"{per_packet:26.4f}")
    print(f"{'idle':10} {0:8d} {idle['rounds']:7d} {0:10.1f} {idle['atomics'] / max(1, idle['rounds']):13.2f}")
    fit = fit_rounds_packets([(r["rounds"], r["tx"], r["atomics"]) for r in runs.values()])
    if fit:
        # Idle rounds are not busy ones (an idle round also polls and publishes its counters): a rough split.
        print(f"\nleast-squares fit over the runs: atomics = {fit[0]:.1f} + {fit[1]:.3f} x rounds + "
              f"{fit[2]:.4f} x packets")
    with open(a.out, "w") as f:
        json.dump(dict(io=a.io, seconds=a.seconds, summary=summary, fit=dict(
            constant=fit[0], per_round=fit[1], per_packet=fit[2]) if fit else None, runs=runs), f, indent=1)
    last = list(runs)[-1]
    lr = runs[last]
    print("\nsites: count in each run (" + " / ".join(runs) + f"), then per round and per packet in {last}:")
    keys = set().union(*(r["sites"] for r in runs.values()))
    for k in sorted(keys, key=lambda k: -lr["sites"].get(k, 0)):
        n = lr["sites"].get(k, 0)
        print("  " + " ".join(f"{r['sites'].get(k, 0):7d}" for r in runs.values())
              + f"  {n / max(1, lr['rounds']):6.2f}/round {n / max(1, lr['tx']):7.4f}/pkt  {k}")


if __name__ == "__main__":
    main()
