#!/usr/bin/env python3
"""Control requests and the size of the table: `lwt6 ctl` latency and `lwt6 ctl --batch` throughput on a running
`lwt6 run` holding N routes (docs/BENCHMARKS.md, *Control requests and the size of the table*).

    sudo scripts/bench-ctl.py [--lwt6 [LABEL=]BIN ...] [--routes 1000,100000,1000000] [--requests 40]
                              [--batch 10000] [--budget 60]

For every table size, and every binary in turn (several `--lwt6` compare builds in one run), the script makes a
network namespace with a veth pair, writes a configuration of N routes (gateway routes, one in ten a seg6 encap
tunnel), starts `lwt6 run --io packet` on it and measures:

- start: from the start of `lwt6 run` to its first answer on the control socket (parse, build, attach);
- first: the first `lwt6 ctl route add` (it may pay once for the copy of the table the in-place writer keeps);
- line: the median and 90th percentile of single-line requests (`route add P ...`, then `route del P`, alternated),
  each a `lwt6 ctl` process as a user runs it (the process's start included), at most --requests of them and no
  more than --budget seconds; the same requests again straight over the socket (the router's own time, no
  process started);
- batch: `lwt6 ctl --batch` of --batch route additions, then one of their deletions (last added first): lines
  per second (`nan` when the request failed, e.g. past the client's 30 s timeout);
- one `neigh add` over the socket (not a route line: a new snapshot is built from the whole configuration);
- resident memory (VmRSS) after start and after the requests, and the peak (VmHWM).

The namespace is removed on every exit path. Needs root, `ip`.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HEAD = """link add r0
link add r1
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:01:01 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:02:02 dev r1
"""


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def prefix(i):
    return f"fd10:{i >> 16:x}:{i & 0xffff:x}::/48"


def write_config(path, n):
    with open(path, "w") as f:
        f.write(HEAD)
        for i in range(n):
            if i % 10 == 0:
                f.write(f"-6 route add {prefix(i)} encap seg6 mode encap segs fc00::{i % 65535 + 1:x} dev r1\n")
            else:
                f.write(f"-6 route add {prefix(i)} via fd00:2::2 dev r1\n")


class Namespace:
    """A namespace with veth r0 <-> r1, both up, IPv6 off on them, forwarding off: what `lwt6 run` asks for."""

    def __init__(self, name):
        self.name = name
        sh("ip", "netns", "add", name)
        self.ip("link", "add", "r0", "type", "veth", "peer", "name", "r1")
        for dev in ("r0", "r1"):
            self.run("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")
            self.ip("link", "set", dev, "up")
        self.run("sysctl", "-qw", "net.ipv6.conf.all.forwarding=0", "net.ipv4.ip_forward=0")

    def run(self, *args, **kw):
        return sh("ip", "netns", "exec", self.name, *args, **kw)

    def ip(self, *args):
        return self.run("ip", *args)

    def delete(self):
        sh("ip", "netns", "del", self.name, check=False)


def memory(pid):
    """(VmRSS, VmHWM) of `pid` in MiB."""
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                vals[k] = int(v.split()[0]) / 1024
    return vals.get("VmRSS", 0.0), vals.get("VmHWM", 0.0)


def ctl(ns, binary, sock, *words, batch=None):
    args = [binary, "ctl", "--control", sock]
    args += ["--batch", batch] if batch else list(words)
    t0 = time.perf_counter()
    r = ns.run(*args, check=False)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"lwt6 ctl {' '.join(words) or batch}: {r.stderr.strip()}")
    return dt


def request(sock, line):
    """One request straight over the control socket (no `lwt6 ctl` process): seconds until the whole reply."""
    t0 = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(sock)
        s.sendall(line.encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    dt = time.perf_counter() - t0
    if not reply.startswith(b"ok\n"):
        raise RuntimeError(f"{line}: {reply[:200]!r}")
    return dt


def measure(binary, n, args, work, tag):
    ns = Namespace(f"lwt6bctl-{os.getpid()}-{tag}")
    proc = None
    try:
        conf = os.path.join(work, f"r{n}.conf")
        if not os.path.exists(conf):
            write_config(conf, n)
        sock = os.path.join(work, f"{tag}.sock")
        t0 = time.perf_counter()
        proc = subprocess.Popen(["ip", "netns", "exec", ns.name, binary, "run", "-c", conf, "--io", "packet",
                                 "--control", sock], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"lwt6 run exited: {proc.stderr.read().strip()}")
            if os.path.exists(sock) and ns.run(binary, "ctl", "--control", sock, "show", "stats",
                                               check=False).returncode == 0:
                break
            time.sleep(0.05)
        start = time.perf_counter() - t0
        pid = proc.pid  # `ip netns exec` execs the command: the same process
        with open(f"/proc/{pid}/comm") as f:
            assert f.read().startswith("lwt6"), "the process measured is not lwt6"
        rss_start, _ = memory(pid)
        first = ctl(ns, binary, sock, "-6", "route", "add", "fd30::/48", "via", "fd00:2::2", "dev", "r1")
        lines = []
        deadline = time.monotonic() + args.budget
        for k in range(args.requests):
            p = f"fd31:{k:x}::/48"
            lines.append(ctl(ns, binary, sock, "-6", "route", "add", p, "via", "fd00:2::2", "dev", "r1"))
            lines.append(ctl(ns, binary, sock, "-6", "route", "del", p))
            if time.monotonic() > deadline:
                break
        raw = []
        deadline = time.monotonic() + args.budget
        for k in range(args.requests):
            p = f"fd33:{k:x}::/48"
            raw.append(request(sock, f"-6 route add {p} via fd00:2::2 dev r1"))
            raw.append(request(sock, f"-6 route del {p}"))
            if time.monotonic() > deadline:
                break
        adds = os.path.join(work, "adds.batch")
        dels = os.path.join(work, "dels.batch")
        with open(adds, "w") as a, open(dels, "w") as d:
            for j in range(args.batch):
                a.write(f"-6 route add fd32:{j >> 16:x}:{j & 0xffff:x}::/48 via fd00:2::2 dev r1\n")
            # Deleted last added first.
            for j in reversed(range(args.batch)):
                d.write(f"-6 route del fd32:{j >> 16:x}:{j & 0xffff:x}::/48\n")
        t_add = ctl(ns, binary, sock, batch=adds)
        try:
            t_del = ctl(ns, binary, sock, batch=dels)
        except RuntimeError as e:
            print(f"# {tag}: the deletion batch failed: {e}", file=sys.stderr)
            t_del = float("nan")
        # (After a failed request the router may still be at it: one request at a time, so this waits for it.)
        request(sock, "show stats")
        # A line that is not a route line: the snapshot is built anew from the whole configuration.
        neigh = request(sock, "neigh add fd00:2::9 lladdr 02:00:00:00:02:09 dev r1")
        rss_end, hwm = memory(pid)
        lines.sort()
        raw.sort()
        return {
            "start_s": start,
            "first_ms": first * 1e3,
            "line_ms": statistics.median(lines) * 1e3,
            "line_p90_ms": lines[int(len(lines) * 0.9)] * 1e3,
            "requests": len(lines),
            "socket_ms": statistics.median(raw) * 1e3,
            "socket_p90_ms": raw[int(len(raw) * 0.9)] * 1e3,
            "batch_add_lps": args.batch / t_add,
            "batch_del_lps": args.batch / t_del,
            "neigh_ms": neigh * 1e3,
            "rss_start_mib": rss_start,
            "rss_end_mib": rss_end,
            "hwm_mib": hwm,
        }
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        ns.delete()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lwt6", action="append", default=[],
                    help="[LABEL=]BIN; repeat to compare builds (default target/release/lwt6)")
    ap.add_argument("--routes", default="1000,100000,1000000", help="table sizes, comma separated")
    ap.add_argument("--requests", type=int, default=40, help="route add/del pairs per size (at most)")
    ap.add_argument("--batch", type=int, default=10000, help="lines per batch request")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of single-line requests per size at most")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-ctl.py: needs root (network namespaces)")
    builds = []
    for spec in args.lwt6 or [os.path.join(ROOT, "target", "release", "lwt6")]:
        label, _, path = spec.rpartition("=")
        builds.append((label or os.path.basename(path), os.path.abspath(path)))
    sizes = [int(s) for s in args.routes.split(",")]
    work = tempfile.mkdtemp(prefix="lwt6-bench-ctl-")
    cols = ("routes", "build", "start s", "first ms", "line ms (median)", "line ms (p90)", "requests",
            "socket ms (median)", "socket ms (p90)",
            "batch add lines/s", "batch del lines/s", "neigh add ms", "RSS start MiB", "RSS end MiB", "peak MiB")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    try:
        for n in sizes:
            for i, (label, path) in enumerate(builds):
                r = measure(path, n, args, work, f"{n}-{i}")
                print(f"| {n:,} | {label} | {r['start_s']:.2f} | {r['first_ms']:.1f} | {r['line_ms']:.2f} | "
                      f"{r['line_p90_ms']:.2f} | {r['requests']} | {r['socket_ms']:.3f} | "
                      f"{r['socket_p90_ms']:.3f} | {r['batch_add_lps']:,.0f} | "
                      f"{r['batch_del_lps']:,.0f} | {r['neigh_ms']:.1f} | {r['rss_start_mib']:.0f} | {r['rss_end_mib']:.0f} | "
                      f"{r['hwm_mib']:.0f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
