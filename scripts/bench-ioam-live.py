#!/usr/bin/env python3
"""The IOAM paper's experiments (its §3.2, Figs. 8-12) live, on the five-node testbed of scripts/testbed.sh c:

    Alpha [a0] -- [t0] Athos [t1] -- [p0] Porthos [p1] -- [m0] Aramis [m1] -- [b0] Beta

Alpha is the sender (`lwt6 gen`, pinned to CPU 0, one frame of --size bytes of IPv6 packet, --flows source
addresses); Beta is the sink (its b0 counts what arrives; IPv6 is off on b0, so the kernel drops each frame at
once). Athos, Porthos and Aramis are `lwt6 run` or the kernel, all pinned to CPU 1 (lwt6 with taskset, the
kernel's forwarding through Receive Packet Steering on t0), so the chain's rate is set by the sum of what the three
nodes spend per packet on that CPU. For each point the zero-loss rate (at most 0.1 % lost) is found by bisection
below the sender's maximum, as scripts/bench-live.py does.

Experiments (docs/BENCHMARKS.md, "IOAM on the five-node live testbed"):
  registration  Fig. 8: IOAM disabled (no IOAM configuration anywhere), configured but unused (namespaces, domain,
                ioam6_enabled, but Athos inserts nothing), in use (Athos inserts one trace into every packet).
  share         Fig. 9: share of packets carrying a trace (Athos's route with freq K/N).
  options       Fig. 10: 1 to 8 trace options of one namespace (9 or more: every receiving node, the kernel as
                lwt6, drops a Hop-by-Hop header with more than 8 options, Linux's max_hbh_opts_number).
  namespaces    Fig. 11: 1 to 7 namespaces, one trace each.
  roles         Fig. 12: what each role adds per packet, one node at a time: the node under test is lwt6 (or the
                kernel as transit node), the two others kernel forwarders; the frames it receives are those the
                role receives (plain for the encapsulating node, carrying the traces Athos inserts for the transit
                and decapsulating nodes, made by `lwt6 pcap` with Athos's configuration). Added time per packet =
                1/rate(role) - 1/rate(the same node forwarding plain frames), both on CPU 1.

In registration, share, options and namespaces, Athos inserts (lwt6), Porthos fills (the kernel by default,
`--transit lwt6` for lwt6), Aramis fills and removes (lwt6). Traces: type bit 0 (hop limit and node id), 12
bytes of room (one slot per node).

    sudo scripts/bench-ioam-live.py [--lwt6 target/release/lwt6] [--io xdp|packet] [--size 1200]
        [--trial-ms 1000] [--steps 7] [--repeat 1] [--transit kernel|lwt6] [--only registration,share,...]
        [--namespaces 1,4,7] [--out target/bench-ioam-live.json] [--csv FILE] [--plots DIR]

The namespaces are ${LWT6_TESTBED_PREFIX}NODE (default l6tb-iol<pid>-). Prints each point as it is measured, then
Markdown tables (the best of --repeat rounds), and writes JSON with every round's figures and each lwt6 node's
final counters, and a CSV of every round (--csv, default: --out with .csv; docs/plots/ioam-live.csv is one). With
--plots DIR, `lwt6 bench ioam --plot-live CSV --out-dir DIR` then plots it (ioam-live-*.svg, best of the rounds).
"""
import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernel"))

from ktlive import LiveRouter  # noqa: E402
from ktnet import run, sysctl_set  # noqa: E402
from ktpcap import read_pcapng, write_pcap  # noqa: E402
from ktpkt import udp6  # noqa: E402

LOSS = 0.001
SENDER_CPU = "0"
ROUTER_CPU = "1"
ROUTER_MASK = "2"

# The testbed's links (scripts/testbed.sh c): per router, (ingress, egress) interfaces with their MACs and
# addresses, the previous and next hop (address, MAC).
NODES = {
    "athos": dict(ifs=("t0", "t1"), macs=("02:00:00:00:01:02", "02:00:00:00:12:01"),
                  addrs=("fd00:1::2/64", "fd00:12::1/64"),
                  prev=("fd00:1::1", "02:00:00:00:01:01"), next=("fd00:12::2", "02:00:00:00:12:02"), id=0x0A0A0A),
    "porthos": dict(ifs=("p0", "p1"), macs=("02:00:00:00:12:02", "02:00:00:00:23:01"),
                    addrs=("fd00:12::2/64", "fd00:23::1/64"),
                    prev=("fd00:12::1", "02:00:00:00:12:01"), next=("fd00:23::2", "02:00:00:00:23:02"), id=0x0B0B0B),
    "aramis": dict(ifs=("m0", "m1"), macs=("02:00:00:00:23:02", "02:00:00:00:02:01"),
                   addrs=("fd00:23::2/64", "fd00:2::1/64"),
                   prev=("fd00:23::1", "02:00:00:00:23:01"), next=("fd00:2::2", "02:00:00:00:02:02"), id=0x0C0C0C),
}
ORDER = ["athos", "porthos", "aramis"]
MAC_A0, MAC_T0 = "02:00:00:00:01:01", "02:00:00:00:01:02"
DST = "fd00:2::2"
FIRST_NS = 123
TRACE = "trace prealloc type 0x800000 ns {ns} size 12"
SHARES = [("0%", None), ("0.01%", (1, 10000)), ("0.1%", (1, 1000)), ("1%", (1, 100)), ("2%", (1, 50)),
          ("10%", (1, 10)), ("25%", (1, 4)), ("50%", (1, 2)), ("100%", (1, 1))]


class Node:
    """What one router does at one point: `impl` lwt6 or kernel; `ns` the namespaces it registers (empty: no IOAM
    configuration); `encap` the ioam6 encapsulation of Athos's route (None: plain)."""

    def __init__(self, impl, ns=(), encap=None):
        self.impl, self.ns, self.encap = impl, list(ns), encap

    def key(self):
        return (self.impl, tuple(self.ns), self.encap)


def namespaces(n):
    return list(range(FIRST_NS, FIRST_NS + n))


def traces(n_opts, n_ns):
    return " ".join(TRACE.format(ns=FIRST_NS + i % n_ns) for i in range(n_opts))


def lwt6_conf(name, node):
    d = NODES[name]
    (i0, i1), (m0, m1), (a0, a1) = d["ifs"], d["macs"], d["addrs"]
    lines = [f"link add {i0} address {m0}", f"link add {i1} address {m1}",
             f"addr add {a0} dev {i0}", f"addr add {a1} dev {i1}",
             f"neigh add {d['prev'][0]} lladdr {d['prev'][1]} dev {i0}",
             f"neigh add {d['next'][0]} lladdr {d['next'][1]} dev {i1}",
             "sysctl net.ipv6.conf.all.forwarding=1"]
    if node.ns:
        lines += [f"sysctl net.ipv6.ioam6_id=0x{d['id']:06x}", f"sysctl net.ipv6.conf.{i0}.ioam6_enabled=1"]
        lines += [f"ioam namespace add {x}" for x in node.ns]
        # The domain's roles as in testbed c: Athos's traces leave by t1, Porthos passes them on, Aramis removes
        # them where they would leave towards Beta (m1 is not an egress).
        ing, eg = {"athos": ("t1", "t1"), "porthos": ("p0", "p1"), "aramis": ("m0", "m0")}[name]
        lines.append(f"ioam domain add paper namespace {','.join(map(str, node.ns))} ingress {ing} egress {eg}")
    if name != "aramis":
        enc = f"encap ioam6 mode inline {node.encap} " if node.encap else ""
        lines.append(f"-6 route add fd00:2::/64 {enc}via {d['next'][0]} dev {i1}")
    return "\n".join(lines) + "\n"


class Bed:
    """Testbed c with this process's own prefix; torn down on every exit path."""

    def __init__(self, workdir):
        self.prefix = os.environ.get("LWT6_TESTBED_PREFIX") or f"l6tb-iol{os.getpid()}-"
        self.dir = os.path.join(workdir, "testbed-c")
        self.env = dict(os.environ, LWT6_TESTBED_PREFIX=self.prefix, LWT6_TESTBED_DIR=self.dir)
        atexit.register(self.down)
        up = subprocess.run([os.path.join(ROOT, "scripts", "testbed.sh"), "c", "up"], env=self.env,
                            capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError(f"testbed c up: {up.stderr}")
        self.kernel_state = {n: None for n in ORDER}
        self.routers = {}
        # The sender's frames reach Athos's t0; its receive work (and the kernel nodes' forwarding after it) runs on
        # the routers' CPU, not in the sender's system call.
        self.sh("athos", f"for f in /sys/class/net/t0/queues/rx-*/rps_cpus; do echo {ROUTER_MASK} > $f; done")
        # The sink drops at once: no IPv6 on b0 (its rx_packets still counts every frame).
        sysctl_set(self.ns("beta"), "net.ipv6.conf.b0.disable_ipv6", 1)

    def ns(self, node):
        return self.prefix + node

    def sh(self, node, cmd):
        run(["ip", "netns", "exec", self.ns(node), "sh", "-c", cmd])

    def ip(self, node, *args):
        run(["ip", "-n", self.ns(node)] + list(args))

    def down(self):
        for r in list(self.routers.values()):
            r.kill()
        self.routers.clear()
        subprocess.run([os.path.join(ROOT, "scripts", "testbed.sh"), "c", "down"], env=self.env,
                       capture_output=True, text=True)

    def kernel_up(self, name, node):
        """The kernel forwards on this node (as testbed b's kernel nodes), with IOAM namespaces if any."""
        if self.kernel_state[name] == node.key():
            return
        self.kernel_down(name)
        d, ns = NODES[name], self.ns(name)
        for i in d["ifs"]:
            sysctl_set(ns, f"net.ipv6.conf.{i}.disable_ipv6", 0)
        for i, a in zip(d["ifs"], d["addrs"]):
            self.ip(name, "addr", "add", a, "dev", i, "nodad")
        self.ip(name, "neigh", "replace", d["prev"][0], "lladdr", d["prev"][1], "dev", d["ifs"][0], "nud",
                "permanent")
        self.ip(name, "neigh", "replace", d["next"][0], "lladdr", d["next"][1], "dev", d["ifs"][1], "nud",
                "permanent")
        if name != "aramis":
            self.ip(name, "-6", "route", "add", "fd00:2::/64", "via", d["next"][0], "dev", d["ifs"][1])
        for x in node.ns:
            self.ip(name, "ioam", "namespace", "add", str(x))
        if node.ns:
            sysctl_set(ns, "net.ipv6.ioam6_id", d["id"])
            sysctl_set(ns, f"net.ipv6.conf.{d['ifs'][0]}.ioam6_enabled", 1)
        sysctl_set(ns, "net.ipv6.conf.all.forwarding", 1)
        self.kernel_state[name] = node.key()

    def kernel_down(self, name):
        """The kernel steps aside again (docs/live.md): no forwarding, no IPv6, no IOAM namespaces."""
        if self.kernel_state[name] is None:
            return
        d, ns = NODES[name], self.ns(name)
        sysctl_set(ns, "net.ipv6.conf.all.forwarding", 0)
        for x in self.kernel_state[name][1]:
            self.ip(name, "ioam", "namespace", "del", str(x))
        sysctl_set(ns, f"net.ipv6.conf.{d['ifs'][0]}.ioam6_enabled", 0)
        for i in d["ifs"]:
            self.ip(name, "addr", "flush", "dev", i)
            sysctl_set(ns, f"net.ipv6.conf.{i}.disable_ipv6", 1)
        self.kernel_state[name] = None

    def start(self, nodes, lwt6, io):
        """Applies a point's three nodes: kernel ones configured, lwt6 ones started (pinned to the router CPU)."""
        for name in ORDER:
            node = nodes[name]
            if node.impl == "kernel":
                self.kernel_up(name, node)
            else:
                self.kernel_down(name)
                self.routers[name] = LiveRouter(self.ns(name), lwt6_conf(name, node), self.dir,
                                                args=["--io", io], label=f"iol-{name}", cpus=ROUTER_CPU)

    def stop(self):
        """Stops the lwt6 nodes; returns their final counters."""
        out = {}
        for name, r in list(self.routers.items()):
            out[name] = r.stop()
        self.routers.clear()
        return out

    def rx(self):
        o = subprocess.run(["ip", "-n", self.ns("beta"), "-s", "-j", "link", "show", "b0"], capture_output=True,
                           text=True, check=True).stdout
        return json.loads(o)[0]["stats64"]["rx"]["packets"]

    def trial(self, lwt6, frame_hex, rate, ms, flows):
        before = self.rx()
        g = subprocess.run(["ip", "netns", "exec", self.ns("alpha"), "taskset", "-c", SENDER_CPU, lwt6, "gen",
                            "--dev", "a0", "--frame", frame_hex, "--rate", str(rate), "--duration-ms", str(ms),
                            "--flows", str(flows)], capture_output=True, text=True)
        if g.returncode != 0:
            raise RuntimeError(g.stderr)
        sent = json.loads(g.stdout)
        time.sleep(0.2)
        return sent["sent"], self.rx() - before, sent["rate"]

    def cpu_ns(self, name):
        """CPU time the lwt6 node `name` has used (every thread's, from /proc/PID/task/*/schedstat, in ns)."""
        pid = self.routers[name].proc.pid
        total = 0
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        return total

    def cpu_per_packet(self, lwt6, frame_hex, rate, ms, flows):
        """CPU time each lwt6 node spends per packet at a fixed offered `rate` (below every node's capacity):
        {node: (ns per packet, packets)}. A measure of each node's own work, which the other processes on the
        machine disturb far less than they disturb a zero-loss rate."""
        names = list(self.routers)
        before = {n: (self.routers[n].stats()["rx"], self.cpu_ns(n)) for n in names}
        self.trial(lwt6, frame_hex, rate, ms, flows)
        out = {}
        for n in names:
            rx, cpu = self.routers[n].stats()["rx"], self.cpu_ns(n)
            pk = rx - before[n][0]
            out[n] = ((cpu - before[n][1]) / max(1, pk), pk)
        return out

    def zero_loss(self, lwt6, frame_hex, ms, flows, steps):
        """(zero-loss rate, the sender's maximum, whether the sender was the limit)"""
        sent, got, gmax = self.trial(lwt6, frame_hex, 0, ms, flows)
        if sent and (sent - got) / sent <= LOSS:
            return gmax, gmax, True
        lo, hi = 0.0, gmax
        for _ in range(steps):
            mid = (lo + hi) / 2
            s, g, r = self.trial(lwt6, frame_hex, int(mid), ms, flows)
            if s and (s - g) / s <= LOSS:
                lo = max(lo, r)
            else:
                hi = mid
        return lo, gmax, False


def plain_frame(size):
    """Alpha's frame: UDP from fd00:1::1 to Beta, `size` bytes of IPv6 packet, to Athos's t0."""
    return udp6(DST, src="fd00:1::1", size=size - 48, smac=MAC_A0, dmac=MAC_T0)


def carried_frame(lwt6, workdir, size, n_ns):
    """The frame Athos sends when it inserts `n_ns` traces (one per namespace) into Alpha's frame, readdressed
    from Alpha to Athos's t0: what the transit and decapsulating roles receive."""
    conf = os.path.join(workdir, "carry.conf")
    with open(conf, "w") as f:
        f.write(lwt6_conf("athos", Node("lwt6", namespaces(n_ns), traces(n_ns, n_ns))))
    inp, out = os.path.join(workdir, "carry-in.pcap"), os.path.join(workdir, "carry-out.pcapng")
    write_pcap(inp, [plain_frame(size)])
    subprocess.run([lwt6, "pcap", "-c", conf, "--in-dev", "t0", inp, out], check=True, capture_output=True)
    frames = [f for dev, f in read_pcapng(out) if dev == "t1"]
    assert len(frames) == 1 and frames[0][14 + 6] == 0, "Athos's configuration must insert the traces"
    f = bytes.fromhex(MAC_T0.replace(":", "")) + bytes.fromhex(MAC_A0.replace(":", "")) + frames[0][12:]
    return f


def points(exps, transit, ns_list):
    """(experiment, label, x, {node: Node}, frame kind) for every point, frame kind 'plain' or ('carried', n)."""
    out = []
    reg = namespaces(1)

    def chain(encap, ns=reg, porthos=transit):
        return {"athos": Node("lwt6", ns, encap), "porthos": Node(porthos, ns), "aramis": Node("lwt6", ns)}

    if "registration" in exps:
        out.append(("registration", "disabled", 0,
                    {"athos": Node("lwt6"), "porthos": Node(transit), "aramis": Node("lwt6")}, "plain"))
        out.append(("registration", "configured-unused", 1, chain(None), "plain"))
        out.append(("registration", "in-use", 2, chain(traces(1, 1)), "plain"))
    if "share" in exps:
        for label, freq in SHARES:
            enc = None if freq is None else f"freq {freq[0]}/{freq[1]} {traces(1, 1)}"
            out.append(("share", label, float(label.rstrip("%")), chain(enc), "plain"))
    if "options" in exps:
        for n in range(1, 9):
            out.append(("options", str(n), n, chain(traces(n, 1)), "plain"))
    if "namespaces" in exps:
        for n in range(1, 8):
            out.append(("namespaces", str(n), n, chain(traces(n, n), namespaces(n)), "plain"))
    if "roles" in exps:
        k = Node("kernel")
        # Each role's node forwarding plain frames, the others kernel forwarders: the baselines.
        out.append(("roles", "base-athos", 0, {"athos": Node("lwt6"), "porthos": k, "aramis": k}, "plain"))
        out.append(("roles", "base-porthos", 0, {"athos": k, "porthos": Node("lwt6"), "aramis": k}, "plain"))
        out.append(("roles", "base-kernel", 0, {"athos": k, "porthos": k, "aramis": k}, "plain"))
        out.append(("roles", "base-aramis", 0, {"athos": k, "porthos": k, "aramis": Node("lwt6")}, "plain"))
        for n in ns_list:
            ns = namespaces(n)
            out.append(("roles", f"encap-{n}", n,
                        {"athos": Node("lwt6", ns, traces(n, n)), "porthos": k, "aramis": k}, "plain"))
            out.append(("roles", f"transit-{n}", n,
                        {"athos": k, "porthos": Node("lwt6", ns), "aramis": k}, ("carried", n)))
            out.append(("roles", f"kernel-transit-{n}", n,
                        {"athos": k, "porthos": Node("kernel", ns), "aramis": k}, ("carried", n)))
            out.append(("roles", f"decap-{n}", n,
                        {"athos": k, "porthos": k, "aramis": Node("lwt6", ns)}, ("carried", n)))
            # The kernel's own cost of forwarding the traces it does not know, twice (the two other nodes of the
            # transit and decapsulating points): all three kernel, none registered.
            out.append(("roles", f"kernel-carry-{n}", n, {"athos": k, "porthos": k, "aramis": k}, ("carried", n)))
    return out


def tables(best, cpu, transit):
    """Markdown tables: the best zero-loss rate of every point (kpps) with the ratio the paper plots, and the least
    CPU time per packet of Athos and Aramis (lwt6) at the fixed rate."""
    def r(e, label):
        return best.get((e, label))

    lines = []

    def table(e, title, labels, ref, head):
        rows = [(lab, r(e, lab)) for lab in labels if r(e, lab)]
        if not rows:
            return
        base = r(e, ref)
        lines.append(f"\n{title}\n\n| {head} | kpps | / {ref} | Athos CPU ns/packet | Aramis CPU ns/packet |\n"
                     "|---|---|---|---|---|")
        for lab, p in rows:
            ratio = f"{p['zero_loss'] / base['zero_loss']:.2f}" if base and base["zero_loss"] else "-"
            lim = " (sender-limited)" if p["sender_limited"] else ""
            c = [f"{cpu[(e, lab, n)]:.0f}" if (e, lab, n) in cpu else "-" for n in ("athos", "aramis")]
            lines.append(f"| {lab} | {p['zero_loss'] / 1e3:.1f}{lim} | {ratio} | {c[0]} | {c[1]} |")

    table("registration", f"Fig. 8 (transit node: {transit})", ["disabled", "configured-unused", "in-use"],
          "disabled", "case")
    table("share", "Fig. 9", [s for s, _ in SHARES], "0%", "share")
    table("options", "Fig. 10", [str(n) for n in range(1, 9)], "1", "options")
    table("namespaces", "Fig. 11", [str(n) for n in range(1, 8)], "1", "namespaces")
    role_rows = sorted({int(lab.rsplit("-", 1)[1]) for (e, lab) in best if e == "roles" and lab[0] != "b"})
    if role_rows:
        def ns_per_pkt(label):
            p = r("roles", label)
            return 1e9 / p["zero_loss"] if p and p["zero_loss"] else None

        def added(label, base):
            a, b = ns_per_pkt(label), ns_per_pkt(base)
            return f"{a - b:.0f}" if a is not None and b is not None else "-"
        lines.append("\nFig. 12, time added per packet on the routers' CPU (ns: 1/rate(role) - 1/rate(the same node "
                     "forwarding plain frames))\n\n| namespaces | encapsulating (lwt6) | transit (lwt6) | "
                     "transit (kernel) | decapsulating (lwt6) | the kernel carrying the traces (3 nodes) |\n"
                     "|---|---|---|---|---|---|")
        for n in role_rows:
            lines.append(f"| {n} | {added(f'encap-{n}', 'base-athos')} | {added(f'transit-{n}', 'base-porthos')} | "
                         f"{added(f'kernel-transit-{n}', 'base-kernel')} | {added(f'decap-{n}', 'base-aramis')} | "
                         f"{added(f'kernel-carry-{n}', 'base-kernel')} |")
        bl = [f"{lab} {ns_per_pkt(lab):.0f} ns" for lab in ("base-athos", "base-porthos", "base-aramis", "base-kernel")
              if ns_per_pkt(lab)]
        lines.append("\nBaselines (1/rate, three nodes): " + ", ".join(bl))
        lines.append(cpu_table({lab: v for (e, lab, n), v in cpu.items() if e == "roles"}))
    return "\n".join(lines)


def cpu_table(cpu):
    """Fig. 12 from the CPU time of the lwt6 node under test (the least of the rounds), against the same node
    forwarding plain frames."""
    rows = sorted({int(lab.rsplit("-", 1)[1]) for lab in cpu if not lab.startswith("base")})
    out = ["\nFig. 12 from the node's own CPU time per packet (ns; the least of the rounds) and what IOAM adds to it\n",
           "| namespaces | encapsulating | added | transit | added | decapsulating | added |", "|---|---|---|---|---|---|---|"]
    for n in rows:
        cells = []
        for role, base in (("encap", "base-athos"), ("transit", "base-porthos"), ("decap", "base-aramis")):
            v, b = cpu.get(f"{role}-{n}"), cpu.get(base)
            cells += [f"{v:.0f}" if v else "-", f"{v - b:.0f}" if v and b else "-"]
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    out.append("\nPlain frames: " + ", ".join(f"{k} {v:.0f} ns" for k, v in sorted(cpu.items()) if k.startswith("base")))
    return "\n".join(out)


CSV_COLUMNS = ["round", "experiment", "label", "zero_loss_pps", "sender_max_pps", "sender_limited"] + ORDER + [
    f"{n}_cpu_ns" for n in ORDER]


def write_csv(path, results):
    """Every round of every point, as `lwt6 bench ioam --plot-live` reads it (CPU time: lwt6 nodes only)."""
    with open(path, "w") as f:
        f.write(",".join(CSV_COLUMNS) + "\n")
        for r in results:
            cpu = r["cpu"] or {}
            row = [r["round"], r["experiment"], r["label"], round(r["zero_loss"]), round(r["sender_max"]),
                   int(bool(r["sender_limited"]))] + [r["nodes"][n] for n in ORDER] + [
                f"{cpu[n][0]:.0f}" if n in cpu else "" for n in ORDER]
            f.write(",".join(map(str, row)) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lwt6", default=os.path.join(ROOT, "target", "release", "lwt6"))
    ap.add_argument("--io", default="xdp", choices=["xdp", "packet"])
    ap.add_argument("--size", type=int, default=1200, help="IPv6 packet size (the paper: 1,200 bytes)")
    ap.add_argument("--trial-ms", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--flows", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every point; tables show the best")
    ap.add_argument("--transit", default="kernel", choices=["kernel", "lwt6"],
                    help="Porthos in Figs. 8-11 (the kernel can be an IOAM transit node)")
    ap.add_argument("--only", default="registration,share,options,namespaces,roles")
    ap.add_argument("--cpu-rate", type=int, default=20000,
                    help="roles: the offered rate at which the node under test's CPU time per packet is read")
    ap.add_argument("--namespaces", default="1,2,3,4,5,6,7", help="namespace counts of the roles experiment")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench-ioam-live.json"))
    ap.add_argument("--csv", help="every round as CSV (default: --out with .csv)")
    ap.add_argument("--plots", metavar="DIR", help="then plot the CSV into DIR (lwt6 bench ioam --plot-live)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-ioam-live: must run as root (network namespaces)")
    os.environ["LWT6_BIN"] = a.lwt6
    exps = set(a.only.split(","))
    unknown = exps - {"registration", "share", "options", "namespaces", "roles"}
    if unknown:
        sys.exit(f"bench-ioam-live: unknown experiment(s) {sorted(unknown)}")
    ns_list = [int(x) for x in a.namespaces.split(",")]
    pts = points(exps, a.transit, ns_list)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    work = tempfile.mkdtemp(prefix="bench-ioam-live-")
    try:
        frames = {"plain": plain_frame(a.size).hex()}
        for _, _, _, _, kind in pts:
            if kind != "plain" and kind not in frames:
                frames[kind] = carried_frame(a.lwt6, work, a.size, kind[1]).hex()
        bed = Bed(work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    results = []
    try:
        for rnd in range(a.repeat):
            for e, label, x, nodes, kind in pts:
                bed.start(nodes, a.lwt6, a.io)
                cpu = None
                try:
                    zl, gmax, lim = bed.zero_loss(a.lwt6, frames[kind], a.trial_ms, a.flows, a.steps)
                    cpu = bed.cpu_per_packet(a.lwt6, frames[kind], a.cpu_rate, a.trial_ms, a.flows)
                finally:
                    final = bed.stop()
                res = dict(round=rnd, experiment=e, label=label, x=x, zero_loss=zl, sender_max=gmax,
                           sender_limited=lim, cpu=cpu,
                           nodes={n: nodes[n].impl for n in ORDER},
                           counters={n: {k: c.get(k) for k in ("rx", "tx", "dropped", "drops", "reallocs",
                                                                  "encapsulated", "ioam", "ioam_transit_filled")}
                                     for n, c in final.items()})
                results.append(res)
                print(f"round {rnd} {e:12} {label:18} {zl:10.0f} /s (sender max {gmax:.0f}"
                      f"{', sender-limited' if lim else ''}); CPU per packet: "
                      + ", ".join(f"{n} {v[0]:.0f} ns" for n, v in cpu.items()), flush=True)
    finally:
        bed.down()
        shutil.rmtree(work, ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump(dict(args=vars(a), load=os.getloadavg(), results=results), f, indent=1)
    csv = a.csv or os.path.splitext(a.out)[0] + ".csv"
    write_csv(csv, results)
    if a.plots:
        # Paths relative to the repository when inside it: the plots' footers name the CSV.
        rel = os.path.relpath(os.path.abspath(csv), ROOT)
        arg = rel if not rel.startswith("..") else os.path.abspath(csv)
        subprocess.run([a.lwt6, "bench", "ioam", "--plot-live", arg, "--out-dir", os.path.abspath(a.plots)],
                       cwd=ROOT, check=True)
    best, cpu = {}, {}
    for res in results:
        k = (res["experiment"], res["label"])
        if k not in best or res["zero_loss"] > best[k]["zero_loss"]:
            best[k] = res
        for n, (v, _) in (res["cpu"] or {}).items():
            cpu[k + (n,)] = min(cpu.get(k + (n,), float("inf")), v)
    print(tables(best, cpu, a.transit))


if __name__ == "__main__":
    main()
