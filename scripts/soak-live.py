#!/usr/bin/env python3
"""The live soak (issue 15; docs/fuzzing.md, *The live soak*): `lwt6 run` on the soak router between network
namespaces, traffic of every kind from `lwt6 gen`, route changes at a target rate through the control socket,
lwt6 stopped now and then (SIGSTOP) to overload it, resident memory sampled; at the end every frame is accounted for
by lwt6's counters and the kernel's, exactly, or the script fails.

    snd [s0] --- [r0] rtr (lwt6 run, soak.conf) [r1] --- [d0] rcv
                                                [r2] --- [e0] rc2   (MTU 1280)

IPv6 is disabled on every interface of every namespace: no kernel sends anything, so every frame on a link is
the generator's or lwt6's. Checked at the end (each a line of the report, and the exit status):

- offered: the frames the generator's kernel took = lwt6's rx on r0 + lwt6's overload on r0 (the kernel's
  counters of its sockets: AF_XDP rx_dropped + rx_ring_full, AF_PACKET tp_drops) + what the veth itself dropped
  before lwt6's socket (s0's tx_dropped); over AF_XDP, lwt6's overload also equals r0's rx_dropped (the veth's
  count of frames its XDP program could not deliver);
- lwt6: rx = tx + dropped + consumed + pending;
- delivered: lwt6's tx on each link = what the host on the other end counted (its rx_packets) + what the veth
  dropped on the way (the link's tx_dropped);
- the route changes: every batch accepted, the rate reached (within 5 %);
- no panic, exit status 0; resident memory after the first tenth grows by less than --max-growth-kib.

Usage (root): scripts/soak-live.py [--packets N] [--rate PPS] [--change-rate N] [--batch N] [--io xdp|packet]
                                   [--pause-every S --pause-ms MS] [--json] [--bin PATH]
Namespaces are named l6soak-<pid>-NODE (--prefix) and deleted on every exit path.
"""
import argparse
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOAK_CONF = os.path.join(ROOT, "crates", "lab", "src", "bench", "soak.conf")
WINDOW = 1000  # generated /48s present at once (as `lwt6 bench soak`)


def sh(*argv, check=True):
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
    return r.stdout


class Net:
    """The namespaces and veths; destroy() deletes them (idempotent)."""

    NODES = ("snd", "rtr", "rcv", "rc2")
    # (node, dev, mac, peer node, peer dev, peer mac, mtu)
    LINKS = [
        ("snd", "s0", "02:00:00:00:01:01", "rtr", "r0", "02:00:00:00:01:02", 1500),
        ("rtr", "r1", "02:00:00:00:02:01", "rcv", "d0", "02:00:00:00:02:02", 1500),
        ("rtr", "r2", "02:00:00:00:03:01", "rc2", "e0", "02:00:00:00:03:02", 1280),
    ]

    def __init__(self, prefix):
        self.prefix = prefix
        self.made = []
        for n in self.NODES:
            ns = self.ns(n)
            sh("ip", "netns", "del", ns, check=False)
            sh("ip", "netns", "add", ns)
            self.made.append(ns)
            # No kernel traffic at all: IPv6 off for every interface made here from now on.
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        for a, da, ma, b, db, mb, mtu in self.LINKS:
            sh("ip", "link", "add", da, "netns", self.ns(a), "address", ma, "mtu", str(mtu), "type", "veth",
               "peer", "name", db, "netns", self.ns(b), "address", mb, "mtu", str(mtu))
            sh("ip", "-n", self.ns(a), "link", "set", da, "up")
            sh("ip", "-n", self.ns(b), "link", "set", db, "up")

    def ns(self, node):
        return f"{self.prefix}{node}"

    def counters(self):
        """{(node, dev): {rx_packets, tx_packets, rx_dropped, tx_dropped}} from `ip -s -j link`."""
        out = {}
        for a, da, _, b, db, _, _ in self.LINKS:
            for node, dev in ((a, da), (b, db)):
                j = json.loads(sh("ip", "-n", self.ns(node), "-s", "-j", "link", "show", dev))[0]["stats64"]
                out[(node, dev)] = {"rx_packets": j["rx"]["packets"], "tx_packets": j["tx"]["packets"],
                                    "rx_dropped": j["rx"]["dropped"], "tx_dropped": j["tx"]["dropped"]}
        return out

    def destroy(self):
        while self.made:
            sh("ip", "netns", "del", self.made.pop(), check=False)


def route(k):
    """Change k of the window (as soak::Changes): the /48 number k, every tenth seg6 encap."""
    p = f"2001:{0xdb8 + ((k >> 16) & 0xff):x}:{k & 0xffff:x}::/48"
    if k % 10 == 0:
        sid = ipaddress.IPv6Address((0xfc00 << 112) | k)
        return f"-6 route add {p} encap seg6 mode encap segs fc00::a,{sid} dev r1", f"-6 route del {p}"
    return f"-6 route add {p} via fd00:2::2 dev r1", f"-6 route del {p}"


class Changes:
    """The soak's route changes as control lines: a window of WINDOW /48s added, then one removed and one added
    alternately; every hundredth change adds or removes fd00:90::8000:0:0:0/65 via r2."""

    def __init__(self):
        self.n = self.added = self.removed = 0
        self.toggle = False

    def next(self):
        self.n += 1
        if self.n % 100 == 0:
            self.toggle = not self.toggle
            p = "fd00:90::8000:0:0:0/65"
            return f"-6 route add {p} via fd00:3::2 dev r2" if self.toggle else f"-6 route del {p}"
        if self.added < WINDOW or self.added == self.removed + WINDOW - 1:
            self.added += 1
            return route(self.added - 1)[0]
        self.removed += 1
        return route(self.removed - 1)[1]


def control(path, request, timeout=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(request.encode())
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            c = s.recv(65536)
            if not c:
                break
            chunks.append(c)
    finally:
        s.close()
    return b"".join(chunks).decode()


class Changer(threading.Thread):
    """Sends the changes in batches at `rate` lines per second; records each request's latency."""

    def __init__(self, sock, rate, batch):
        super().__init__(daemon=True)
        self.sock, self.rate, self.batch = sock, rate, batch
        self.stop = threading.Event()
        self.applied = 0
        self.requests = 0
        self.latencies = []
        self.error = None
        self.secs = 0.0

    def run(self):
        seq = Changes()
        t0 = time.monotonic()
        try:
            while not self.stop.is_set():
                due = t0 + self.applied / self.rate
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(min(wait, 0.01))
                    continue
                lines = [seq.next() for _ in range(self.batch)]
                t = time.monotonic()
                reply = control(self.sock, "batch\n" + "\n".join(lines) + "\n")
                self.latencies.append(time.monotonic() - t)
                if reply != "ok\n":
                    self.error = f"batch {self.requests}: {reply.strip()}"
                    return
                self.applied += len(lines)
                self.requests += 1
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            self.error = f"control socket: {e}"
        finally:
            self.secs = time.monotonic() - t0


class Sampler(threading.Thread):
    """Samples a process's resident memory (VmRSS) every `every` seconds: [(seconds, bytes)]."""

    def __init__(self, pid, every):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.stop = threading.Event()
        self.samples = []

    def rss(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def run(self):
        t0 = time.monotonic()
        while not self.stop.is_set():
            r = self.rss()
            if r is not None:
                self.samples.append((round(time.monotonic() - t0, 2), r))
            self.stop.wait(self.every)


class Pauser(threading.Thread):
    """Stops the router (SIGSTOP) for `ms` every `every` seconds: the kernel's rings fill meanwhile (overload)."""

    def __init__(self, pid, every, ms):
        super().__init__(daemon=True)
        self.pid, self.every, self.ms = pid, every, ms
        self.stop = threading.Event()
        self.pauses = 0

    def run(self):
        while not self.stop.wait(self.every):
            os.kill(self.pid, signal.SIGSTOP)
            time.sleep(self.ms / 1000)
            os.kill(self.pid, signal.SIGCONT)
            self.pauses += 1


def soak(args, workdir):
    net = Net(args.prefix or f"l6soak-{os.getpid()}-")
    router = None
    threads = []
    try:
        frames = os.path.join(workdir, "frames.pcap")
        sh(args.bin, "bench", "soak", "--frames-out", frames)
        conf = os.path.join(workdir, "soak.conf")
        with open(SOAK_CONF) as src, open(conf, "w") as dst:
            dst.write(src.read())
        sock = os.path.join(workdir, "lwt6.sock")
        router = subprocess.Popen(
            ["ip", "netns", "exec", net.ns("rtr"), args.bin, "run", "-c", conf, "--io", args.io,
             "--control", sock, "-j"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        deadline = time.monotonic() + 10
        while True:
            if router.poll() is not None:
                raise RuntimeError(f"lwt6 run exited with {router.returncode}: {router.stderr.read().strip()}")
            if os.path.exists(sock):
                try:
                    if control(sock, "show stats\n").startswith("ok"):
                        break
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError("lwt6 run did not answer on its control socket within 10 s")
            time.sleep(0.02)
        before = net.counters()
        sampler = Sampler(router.pid, args.rss_every)
        changer = Changer(sock, args.change_rate, args.batch) if args.change_rate > 0 else None
        pauser = Pauser(router.pid, args.pause_every, args.pause_ms) if args.pause_ms > 0 else None
        threads = [t for t in (sampler, changer, pauser) if t]
        for t in threads:
            t.start()
        # The generator stops at --packets; the duration is only a cap (a sender slower than the rate sends them
        # all, later).
        duration_ms = min(3_600_000, round(args.packets / args.rate * 2000) + 30_000)
        t0 = time.monotonic()
        gen = subprocess.run(
            ["ip", "netns", "exec", net.ns("snd"), args.bin, "gen", "--dev", "s0", "--template", frames,
             "--all-frames", "--count", str(args.packets), "--rate", str(args.rate), "--duration-ms",
             str(duration_ms)],
            capture_output=True, text=True)
        secs = time.monotonic() - t0
        if pauser:
            pauser.stop.set()
            pauser.join()
        if gen.returncode != 0:
            raise RuntimeError(f"lwt6 gen: {gen.stderr.strip()}")
        sent = json.loads(gen.stdout)["sent"]
        # lwt6 drains what its rings hold; then the changes stop and the counters are read.
        last, still = None, 0
        while still < 5:
            st = json.loads(control(sock, "show stats -j\n").split("\n", 1)[1])
            now = (st["rx"], st["overload"])
            still = still + 1 if now == last else 0
            last = now
            time.sleep(0.1)
        if changer:
            changer.stop.set()
            changer.join()
        sampler.stop.set()
        sampler.join()
        router.send_signal(signal.SIGTERM)
        out, err = router.communicate(timeout=30)
        after = net.counters()
        final = json.loads(out) if out.strip() else {}
        return report(args, sent, secs, final, router.returncode, err, before, after, changer, sampler, pauser)
    finally:
        for t in threads:
            t.stop.set()
        if router is not None and router.poll() is None:
            try:
                os.kill(router.pid, signal.SIGCONT)
            except OSError:
                pass
            router.kill()
            router.wait()
        net.destroy()


def report(args, sent, secs, final, code, err, before, after, changer, sampler, pauser):
    d = {k: {f: after[k][f] - before[k][f] for f in after[k]} for k in after}
    links = final.get("links", {})
    lk = lambda dev, f: links.get(dev, {}).get(f, 0)  # noqa: E731
    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    veth_lost = d[("snd", "s0")]["tx_dropped"]
    check("offered = received + overload + lost in the veth",
          sent == lk("r0", "rx") + lk("r0", "overload") + veth_lost,
          f"sent {sent} = r0 rx {lk('r0', 'rx')} + overload {lk('r0', 'overload')} + s0 tx_dropped {veth_lost}")
    if args.io == "xdp":
        # The veth counts the frames its XDP program could not hand to lwt6's socket as its own rx_dropped: a
        # second, independent count of the overload.
        check("overload = the veth's count of frames XDP could not deliver",
              lk("r0", "overload") == d[("rtr", "r0")]["rx_dropped"],
              f"{lk('r0', 'overload')} = r0 rx_dropped {d[('rtr', 'r0')]['rx_dropped']}")
    for dev in ("r1", "r2"):
        check(f"nothing received on {dev}", lk(dev, "rx") == 0 and lk(dev, "overload") == 0,
              f"rx {lk(dev, 'rx')}, overload {lk(dev, 'overload')}")
    rx, tx, dropped = final.get("rx", -1), final.get("tx", 0), final.get("dropped", 0)
    consumed, pending = final.get("consumed", 0), final.get("pending", 0)
    check("rx = tx + dropped + consumed + pending", rx == tx + dropped + consumed + pending,
          f"{rx} = {tx} + {dropped} + {consumed} + {pending}")
    for dev, node, peer in (("r0", "snd", "s0"), ("r1", "rcv", "d0"), ("r2", "rc2", "e0")):
        got, lost = d[(node, peer)]["rx_packets"], d[("rtr", dev)]["tx_dropped"]
        check(f"sent on {dev} = counted by {peer} + dropped in the veth", lk(dev, "tx") == got + lost,
              f"{lk(dev, 'tx')} = {got} + {lost}")
    check("nothing refused or left on transmit", final.get("tx_refused", 0) + final.get("tx_unsent_at_stop", 0) == 0,
          f"tx_refused {final.get('tx_refused')}, tx_unsent_at_stop {final.get('tx_unsent_at_stop')}")
    check("no port error", final.get("port_errors", 0) == 0, f"{final.get('port_errors')} {final.get('last_port_error')}")
    check("lwt6 run exited 0, no panic", code == 0 and "panicked" not in err, f"exit {code}: {err.strip()[-300:]}")
    if pauser is not None and pauser.pauses > 0:
        check("overload counted", lk("r0", "overload") > 0,
              f"{lk('r0', 'overload')} frames in {pauser.pauses} pauses of {args.pause_ms} ms")
    ch = None
    if changer is not None:
        lat = sorted(changer.latencies) or [0.0]
        rate = changer.applied / changer.secs if changer.secs else 0.0
        ch = {"applied": changer.applied, "requests": changer.requests, "secs": round(changer.secs, 2),
              "rate": round(rate), "latency_ms": {"p50": round(lat[len(lat) // 2] * 1e3, 2),
                                                   "p99": round(lat[int(len(lat) * 0.99)] * 1e3, 2),
                                                   "max": round(lat[-1] * 1e3, 2)}}
        check("route changes accepted", changer.error is None, changer.error or f"{changer.applied} lines")
        check("route change rate reached", rate >= 0.95 * args.change_rate,
              f"{rate:.0f}/s for a target of {args.change_rate}/s")
    rss = sampler.samples
    warm = [b for t, b in rss if t >= secs / 10] or [b for _, b in rss]
    growth = (warm[-1] - warm[0]) if warm else 0
    check("resident memory flat after the first tenth", growth <= args.max_growth_kib * 1024,
          f"{growth / 1024:+.0f} KiB (limit {args.max_growth_kib} KiB)")
    mib = lambda b: round(b / 1048576, 2)  # noqa: E731
    return {
        "io": args.io, "packets_sent": sent, "seconds": round(secs, 2), "rate": round(sent / secs) if secs else 0,
        "lwt6": final, "kernel": {f"{n}:{dev}": v for (n, dev), v in d.items()},
        "changes": ch, "pauses": pauser.pauses if pauser else 0,
        "rss_mib": {"start": mib(rss[0][1]) if rss else None, "after_first_tenth": mib(warm[0]) if warm else None,
                    "max": mib(max(b for _, b in rss)) if rss else None, "end": mib(rss[-1][1]) if rss else None,
                    "samples": [(t, mib(b)) for t, b in rss]},
        "checks": checks, "ok": all(c["ok"] for c in checks),
    }


def text(r):
    s = [f"live soak over {r['io']}: {r['packets_sent']} frames sent in {r['seconds']} s ({r['rate']} frames/s), "
         f"{r['pauses']} pauses"]
    f = r["lwt6"]
    s.append(f"lwt6: rx {f.get('rx')}, tx {f.get('tx')}, dropped {f.get('dropped')}, icmp errors "
             f"{f.get('icmp_errors_sent')}, overload {f.get('overload')}")
    for k, v in sorted(f.get("drops", {}).items()):
        s.append(f"  drop {k:<28} {v}")
    for k, v in sorted(f.get("encapsulated", {}).items()):
        s.append(f"  encapsulated {k}: {v}")
    if r["changes"]:
        c = r["changes"]
        s.append(f"route changes: {c['applied']} in {c['requests']} batches over {c['secs']} s ({c['rate']}/s); "
                 f"request latency ms p50 {c['latency_ms']['p50']} p99 {c['latency_ms']['p99']} "
                 f"max {c['latency_ms']['max']}")
    m = r["rss_mib"]
    s.append(f"resident MiB: start {m['start']}, after the first tenth {m['after_first_tenth']}, max {m['max']}, "
             f"end {m['end']}")
    for c in r["checks"]:
        s.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}")
    s.append("all checks passed" if r["ok"] else "SOME CHECKS FAILED")
    return "\n".join(s)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--packets", type=int, default=10_000_000, help="frames to send (default 10^7)")
    p.add_argument("--rate", type=int, default=200_000, help="frames per second sent (default 200000)")
    p.add_argument("--change-rate", type=int, default=10_000, help="route changes per second (0: none)")
    p.add_argument("--batch", type=int, default=100, help="route changes per control request")
    p.add_argument("--io", choices=("xdp", "packet"), default="xdp")
    p.add_argument("--pause-every", type=float, default=5.0, help="seconds between SIGSTOPs of the router")
    p.add_argument("--pause-ms", type=int, default=200, help="length of each stop (0: none)")
    p.add_argument("--rss-every", type=float, default=1.0, help="seconds between resident-memory samples")
    p.add_argument("--max-growth-kib", type=int, default=1024,
                   help="resident memory growth allowed after the first tenth of the run")
    p.add_argument("--bin", default=os.environ.get("LWT6_BIN", os.path.join(ROOT, "target", "release", "lwt6")))
    p.add_argument("--prefix", help="namespace name prefix (default l6soak-PID-)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("scripts/soak-live.py: must run as root (network namespaces, AF_XDP)")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"scripts/soak-live.py: no lwt6 binary at {args.bin} (cargo build --release, or --bin)")
    # SIGTERM / SIGHUP end the run through the same clean-up as Ctrl-C.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with tempfile.TemporaryDirectory(prefix="lwt6-soak-") as workdir:
        r = soak(args, workdir)
    print(json.dumps(r) if args.json else text(r))
    sys.exit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
