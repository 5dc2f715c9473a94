#!/usr/bin/env python3
"""Memory per route and the cost of control lines on a running `lwt6 run` (docs/BENCHMARKS.md, *Memory per route
and in-place control lines*).

    sudo scripts/bench-route-memory.py [--lwt6 BIN] [--routes 300000] [--lines-at 1000000] [--rounds 5] [--planned]

1. Memory: `lwt6 run --io packet` on --routes routes from a file (the configuration of scripts/bench-ctl.py:
   /48s, one in ten seg6 encap); VmRSS after start; then over the control socket, in one batch each, 100,000
   random /64s of 2001:db8::/32 and 20,000 random /128s of 2001:db8::/32, each batch deleted again: VmRSS after
   every step, and bytes per route (the growth over the routes the batch added).
2. Lines: on a router with --lines-at routes, each kind of control line sent straight over the socket --rounds
   times (its undo after each): `route add`, `neigh add`, `addr add` (on r1, the tunnels' device: it takes
   every selected source over; on r0: none), `sysctl`, `ioam namespace add`, `ioam schema add`,
   `ioam namespace set`, `sr tunsrc set`, `sr hmac set`, `sysctl net.ipv6.seg6_flowlabel` (-1 and 1 in turn);
   the median round trip. With --planned, a route to the seg6 routes' first segments first, so that every seg6
   encap route has a plan.

Reuses the namespace and request helpers of scripts/bench-ctl.py. Needs root, `ip`. The namespace is removed on
every exit path.
"""
import argparse
import importlib.util
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_ctl", os.path.join(HERE, "bench-ctl.py"))
bc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bc)


def batch(sock, lines):
    """One batch request over the socket; seconds until the whole reply."""
    body = ("batch\n" + "\n".join(lines) + "\n").encode()
    t0 = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(300)
        s.connect(sock)
        s.sendall(body)
        s.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    if not reply.startswith(b"ok\n"):
        raise RuntimeError(f"batch: {reply[:300]!r}")
    return time.perf_counter() - t0


IO = "packet"


def start(binary, ns, conf, sock):
    proc = subprocess.Popen(["ip", "netns", "exec", ns.name, binary, "run", "-c", conf, "--io", IO,
                             "--control", sock], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"lwt6 run exited: {proc.stderr.read().strip()}")
        if os.path.exists(sock):
            try:
                bc.request(sock, "show stats")
                break
            except (OSError, RuntimeError):
                pass
        time.sleep(0.05)
    with open(f"/proc/{proc.pid}/comm") as f:
        comm = f.read().strip()
    if not comm.startswith("lwt6"):
        # Not left running: the caller has no process to stop yet.
        proc.terminate()
        proc.wait()
        raise RuntimeError(f"the process measured is {comm!r}, not lwt6 (its memory is read by that name): "
                           "name the binary lwt6")
    return proc


def random_prefixes(rng, count, length):
    seen = set()
    out = []
    while len(out) < count:
        bits = (0x20010db8 << 96) | rng.getrandbits(96)
        bits &= ~((1 << (128 - length)) - 1)
        if bits not in seen:
            seen.add(bits)
            words = [(bits >> (112 - 16 * i)) & 0xffff for i in range(8)]
            out.append(":".join(f"{w:x}" for w in words) + f"/{length}")
    return out


def smaps_top(pid, count=6):
    """The mappings holding the most resident memory (LWT6_SMAPS=1: where the memory left after deletes is)."""
    maps, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                cur = [line.strip()[:100], 0]
                maps.append(cur)
            elif head[0] == "Rss:":
                cur[1] = int(head[1])
    for name, kb in sorted(maps, key=lambda m: -m[1])[:count]:
        print(f"  {kb / 1024:8.1f} MiB  {name}")


def memory_run(binary, n, work):
    ns = bc.Namespace(f"lwt6mem-{os.getpid()}")
    proc = None
    try:
        conf = os.path.join(work, f"r{n}.conf")
        bc.write_config(conf, n)
        sock = os.path.join(work, "mem.sock")
        proc = start(binary, ns, conf, sock)
        rss = lambda: bc.memory(proc.pid)[0]
        r0 = rss()
        print(f"file: {n} routes, VmRSS {r0:.1f} MiB = {r0 * 2**20 / n:.0f} B/route")
        # The first change makes the writer's spare copy of the table: part of the table's cost, not a batch's.
        bc.request(sock, "-6 route add fd3f::/48 via fd00:2::2 dev r1")
        bc.request(sock, "-6 route del fd3f::/48")
        print(f"with the writer's spare copy: VmRSS {rss():.1f} MiB = {rss() * 2**20 / n:.0f} B/route")
        rng = random.Random(7)
        for count, length in ((100_000, 64), (20_000, 128)):
            before = rss()
            ps = random_prefixes(rng, count, length)
            batch(sock, [f"-6 route add {p} via fd00:2::2 dev r1" for p in ps])
            # One more change: the writer's spare takes the batch too (both snapshots hold it).
            bc.request(sock, "-6 route add fd3f::/48 via fd00:2::2 dev r1")
            bc.request(sock, "-6 route del fd3f::/48")
            added = rss()
            batch(sock, [f"-6 route del {p}" for p in ps])
            # One more change: the writer's spare applies the deletions too.
            bc.request(sock, "-6 route add fd3f::/48 via fd00:2::2 dev r1")
            bc.request(sock, "-6 route del fd3f::/48")
            after = rss()
            if os.environ.get("LWT6_SMAPS"):
                smaps_top(proc.pid)
            print(f"{count} /{length} over the socket: VmRSS {before:.1f} -> {added:.1f} MiB "
                  f"({(added - before) * 2**20 / count:.0f} B per added route), after deleting them {after:.1f} MiB "
                  f"({100 * (after - before) / before:+.1f} %)")
        print(f"peak VmHWM {bc.memory(proc.pid)[1]:.1f} MiB")
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        ns.delete()


LINES = [
    ("route", "-6 route add fd3e::/48 via fd00:2::2 dev r1", "-6 route del fd3e::/48"),
    ("neigh", "neigh add fd00:2::{k} lladdr 02:00:00:00:02:03 dev r1", None),
    ("addr", "addr add fd00:3:{k:x}::1/64 dev r1", None),
    # On the other device: rule 5 keeps r1's source for every tunnel (the one above takes every tunnel's over).
    ("addr r0", "addr add fd00:9:{k:x}::1/64 dev r0", None),
    ("sysctl", "sysctl net.ipv6.ioam6_id={k}", None),
    ("ioam", "ioam namespace add {k}", None),
    ("ioam schema", "ioam schema add {k} s{k}", None),
    ("ioam namespace set", "ioam namespace set {k} schema {k}", None),
    ("sr", "sr tunsrc set fd00:2::{k}", None),
    ("sr hmac", "sr hmac set {k} sha256 secret s{k}", None),
    ("seg6_flowlabel", "sysctl net.ipv6.seg6_flowlabel={f}", None),
]


def lines_run(binary, n, rounds, work, planned=False):
    ns = bc.Namespace(f"lwt6mln-{os.getpid()}")
    proc = None
    try:
        conf = os.path.join(work, f"r{n}.conf")
        bc.write_config(conf, n)
        sock = os.path.join(work, "lines.sock")
        proc = start(binary, ns, conf, sock)
        # The writer's one copy of the table, paid by the first change, is not a line's cost.
        bc.request(sock, "-6 route add fd3d::/48 via fd00:2::2 dev r1")
        if planned:
            # A route to the seg6 routes' first segments: every seg6 encap route gets a plan (whose template holds
            # the outer source).
            bc.request(sock, "-6 route add fc00::/16 via fd00:2::2 dev r1")
        for kind, line, undo in LINES:
            times = []
            for k in range(rounds):
                times.append(bc.request(sock, line.format(k=k + 16, f=(k % 2) * 2 - 1)))
                if undo:
                    bc.request(sock, undo)
            print(f"{n} routes{', seg6 planned' if planned else ''}, {kind}: median {statistics.median(times) * 1e3:.3f} ms "
                  f"(min {min(times) * 1e3:.3f}, max {max(times) * 1e3:.3f}, {rounds} lines)")
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        ns.delete()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lwt6", default=os.path.join(HERE, "..", "target", "release", "lwt6"))
    ap.add_argument("--routes", type=int, default=300_000)
    ap.add_argument("--lines-at", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--io", default="packet", choices=["packet", "xdp"],
                    help="the router's I/O back end (default packet; xdp adds the driver tier's installation)")
    ap.add_argument("--planned", action="store_true",
                    help="lines part: first a route to the seg6 routes' first segments, so that every seg6 encap "
                         "route has a plan")
    args = ap.parse_args()
    global IO
    IO = args.io
    binary = os.path.abspath(args.lwt6)
    with tempfile.TemporaryDirectory(prefix="lwt6-mem-") as work:
        os.chmod(work, 0o755)
        if args.routes:
            memory_run(binary, args.routes, work)
        if args.lines_at:
            lines_run(binary, args.lines_at, args.rounds, work, args.planned)


if __name__ == "__main__":
    sys.exit(main())
