"""The live testbeds of scripts/testbed.sh (docs/live.md) built, run and torn down: (b) an lwt6 SRv6 head-end whose
tunnel carries an IOAM trace through the kernel's End, an IOAM transit node and End.DX6; (c) the IOAM paper's five
nodes with lwt6 on Athos, Porthos and Aramis. The expected bytes follow from the configurations (node ids, SIDs,
hop counts) and the RFCs, not from lwt6's output."""
import ipaddress
import os
import socket
import struct
import subprocess

import pytest

from ktlive import LiveRouter
from ktnet import in_ns, require_root

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "testbed.sh")
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    require_root()
    return str(tmp_path_factory.mktemp("testbeds"))


class Bed:
    """scripts/testbed.sh BED with this process's own prefix; `down` (checked) on every exit path."""

    def __init__(self, bed, workdir):
        self.bed = bed
        self.prefix = f"l6t-{os.getpid()}-tb{bed}-"
        self.dir = os.path.join(workdir, f"testbed-{bed}")
        self.env = dict(os.environ, LWT6_TESTBED_PREFIX=self.prefix, LWT6_TESTBED_DIR=self.dir)

    def __enter__(self):
        up = subprocess.run([SCRIPT, self.bed, "up"], env=self.env, capture_output=True, text=True)
        if up.returncode != 0:
            self.down()
            raise AssertionError(f"testbed {self.bed} up: {up.stderr}")
        return self

    def __exit__(self, *exc):
        down = self.down()
        assert down.returncode == 0, down.stderr
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert self.prefix not in left, left

    def down(self):
        return subprocess.run([SCRIPT, self.bed, "down"], env=self.env, capture_output=True, text=True)

    def ns(self, node):
        return self.prefix + node

    def router(self, node, args=()):
        with open(os.path.join(self.dir, f"{node}.conf")) as f:
            return LiveRouter(self.ns(node), f.read(), self.dir, args=args, label=f"run-{node}")

    def ping(self, src, dst, count=3):
        return subprocess.run(["ip", "netns", "exec", self.ns(src), "ping", "-c", str(count), "-i", "0.2", "-W", "2",
                               dst], capture_output=True, text=True, timeout=20)


def sniffer(ns, ifname):
    """An AF_PACKET socket on ns's ifname (opened before the traffic, read after)."""
    def open_():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((ifname, 0))
        s.setblocking(False)
        return s
    return in_ns(ns, open_)


def received(s):
    """The frames s received (not those it saw leave), oldest first."""
    out = []
    while True:
        try:
            data, addr = s.recvfrom(65535)
        except BlockingIOError:
            break
        if addr[2] != PACKET_OUTGOING:
            out.append(data)
    s.close()
    return out


def ip6(frame):
    """(next header, hop limit, src, dst, payload) of an Ethernet frame carrying IPv6, else None."""
    if len(frame) < 54 or frame[12:14] != b"\x86\xdd":
        return None
    nh, hlim = frame[20], frame[21]
    return nh, hlim, str(ipaddress.IPv6Address(frame[22:38])), str(ipaddress.IPv6Address(frame[38:54])), frame[54:]


def ioam_trace(hbh):
    """The IOAM pre-allocated trace option in a Hop-by-Hop header (RFC 9486 §3, RFC 9197 §4.4): (namespace,
    node length, remaining length, trace type, data)."""
    end = (hbh[1] + 1) * 8
    i = 2
    while i < end:
        t = hbh[i]
        if t == 0:
            i += 1
            continue
        ln = hbh[i + 1]
        if t == 0x31 and hbh[i + 3] == 0:           # IOAM, option type 0: pre-allocated trace
            o = hbh[i + 4:i + 2 + ln]
            ns, w, ttype = struct.unpack("!HH", o[0:4]) + (int.from_bytes(o[4:7], "big"),)
            return ns, w >> 11, w & 0x7F, ttype, o[8:]
        i += 2 + ln
    return None


def node_ids(data):
    """Trace type 0x800000 (bit 0: hop limit + 24-bit node id): the node ids slot by slot, as in the packet."""
    return [int.from_bytes(data[k + 1:k + 4], "big") for k in range(0, len(data), 4)]


def to_receiver(frames):
    """The IPv6 frames for the receiver (fd00:2::2): the echo requests of the ping."""
    return [f for f in frames if ip6(f) and ip6(f)[3] == "fd00:2::2"]


# The XDP tier's plan kinds that apply a tunnel, by the name the workers count it under.
TIER_TUNNELS = {"seg6_encap": "seg6", "seg6_inline": "seg6", "rpl_fixed": "rpl", "ioam_inline": "ioam6",
                "ioam_encap": "ioam6"}


def encapsulated(final):
    """Tunnels applied by the router, by kind: the workers' and, when the XDP tier ran (an lwt6 neighbour has an
    XDP program, so the egress takes redirected frames), the driver's (docs/xdp.md)."""
    out = dict(final["encapsulated"])
    for kind, n in final.get("xdp", {}).get("by_kind", {}).items():
        if kind in TIER_TUNNELS:
            out[TIER_TUNNELS[kind]] = out.get(TIER_TUNNELS[kind], 0) + n
    return out


def test_testbed_b_lwt6_headend_kernel_srv6_ioam_chain(workdir):
    """Testbed (b): ping from the sender to the receiver; lwt6 encapsulates into seg6 (End fc00:e::100, End.DX6
    fc00:d::600) and adds an IOAM trace to the tunnel; the kernel's End advances it, the kernel's IOAM node fills it,
    the kernel's End.DX6 decapsulates. Checked on the wire before End.DX6 and at the receiver."""
    with Bed("b", workdir) as tb:
        head = tb.router("head")
        try:
            at_dx6 = sniffer(tb.ns("dx6"), "x0")
            at_rcv = sniffer(tb.ns("rcv"), "d0")
            ping = tb.ping("snd", "fd00:2::2")
        finally:
            final = head.stop()
        assert ping.returncode == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
        assert final["balanced"] and encapsulated(final) == {"seg6": 3, "ioam6": 3}, final

        tunnel = [f for f in received(at_dx6) if ip6(f) and ip6(f)[3] == "fc00:d::600"]
        assert len(tunnel) == 3, tunnel
        for f in tunnel:
            nh, hlim, src, dst, pl = ip6(f)
            assert nh == 0 and src == "fd00:12::1", (nh, src)   # Hop-by-Hop first; the tunnel source: h1's address
            ns, nodelen, remaining, ttype, data = ioam_trace(pl)
            # 3 slots of one word: lwt6 wrote the last (the inserting node), the kernel's IOAM node the one before,
            # the kernel's End (IOAM not enabled there) nothing; one word remains
            assert (ns, nodelen, remaining, ttype) == (123, 1, 1, 0x800000)
            assert node_ids(data) == [0, 0x222222, 0x111111], data.hex()
            srh = pl[(pl[1] + 1) * 8:]
            assert pl[0] == 43 and srh[2] == 4 and srh[3] == 0, srh[:8].hex()   # SRH, the End done: Segments Left 0
            segs = [str(ipaddress.IPv6Address(srh[8 + 16 * k:24 + 16 * k])) for k in range(srh[1] // 2)]
            assert segs == ["fc00:d::600", "fc00:e::100"], segs              # RFC 8754 §2: last segment first
            inner = srh[(srh[1] + 1) * 8:]
            assert srh[0] == 41 and ip6(f[:14] + inner)[3] == "fd00:2::2"

        got = to_receiver(received(at_rcv))
        assert len(got) == 3, got
        for f in got:
            nh, hlim, src, dst, _ = ip6(f)
            # the inner packet alone (no HbH, no SRH). seg6 encap is an input tunnel (it acts before forwarding:
            # only the outer header's hop limit is decremented at the head-end); End.DX6 forwards the inner: 64 - 1
            assert (nh, hlim, src, dst) == (58, 63, "fd00:1::1", "fd00:2::2")


def test_testbed_c_ioam_paper_five_nodes(workdir):
    """Testbed (c): Alpha pings Beta through three lwt6 routers. Athos inserts and fills the trace, Porthos fills
    it, Aramis (over AF_PACKET here, so that a socket beside it sees what it receives) fills and removes it: Beta
    gets the bare packet."""
    with Bed("c", workdir) as tb:
        routers = []
        try:
            for node, args in [("athos", ()), ("porthos", ()), ("aramis", ("--io", "packet"))]:
                routers.append((node, tb.router(node, args)))
            at_aramis = sniffer(tb.ns("aramis"), "m0")
            at_beta = sniffer(tb.ns("beta"), "b0")
            ping = tb.ping("alpha", "fd00:2::2")
        finally:
            finals = {node: r.stop() for node, r in routers}
        assert ping.returncode == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
        assert all(f["balanced"] for f in finals.values()), finals
        assert encapsulated(finals["athos"]) == {"ioam6": 3}, finals["athos"]
        assert finals["porthos"]["ioam_transit_filled"] == 3, finals["porthos"]
        assert finals["aramis"]["ioam_transit_filled"] == 3, finals["aramis"]
        assert finals["aramis"]["ioam"]["removed"] == 3, finals["aramis"]

        got = to_receiver(received(at_aramis))
        assert len(got) == 3, got
        for f in got:
            nh, hlim, src, dst, pl = ip6(f)
            assert (nh, hlim, dst) == (0, 62, "fd00:2::2")      # forwarded by Athos and Porthos
            ns, nodelen, remaining, ttype, data = ioam_trace(pl)
            assert (ns, nodelen, remaining, ttype) == (123, 1, 1, 0x800000)
            assert node_ids(data) == [0, 0x0b0b0b, 0x0a0a0a], data.hex()   # Porthos, then Athos (newest first)

        got = to_receiver(received(at_beta))
        assert len(got) == 3, got
        for f in got:
            nh, hlim, src, dst, _ = ip6(f)
            assert (nh, hlim, src, dst) == (58, 61, "fd00:1::1", "fd00:2::2")   # no Hop-by-Hop left


def test_ioam_live_benchmark_script_runs_on_testbed_c(workdir):
    """scripts/bench-ioam-live.py (docs/BENCHMARKS.md) on its shortest setting: the three Fig. 8 points, one 100 ms
    trial each. The rates are not checked (they are the benchmark's business), what each node did is: nothing
    traced when IOAM is disabled or unused; in use, every frame Athos forwards carries a trace the kernel's Porthos
    passes on and Aramis removes; nothing dropped but the kernel's own noise; namespaces gone afterwards. Its CSV
    holds the JSON's rounds and `--plots` plots it (`lwt6 bench ioam --plot-live`)."""
    from ktlwt6 import lwt6_bin
    out = os.path.join(workdir, "bench-ioam-live.json")
    script = os.path.join(ROOT, "scripts", "bench-ioam-live.py")
    prefix = f"l6t-{os.getpid()}-iol-"
    r = subprocess.run([script, "--lwt6", str(lwt6_bin()), "--only", "registration", "--trial-ms", "100",
                        "--steps", "0", "--out", out, "--plots", os.path.join(workdir, "plots")],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, LWT6_TESTBED_PREFIX=prefix))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| in-use |" in r.stdout, r.stdout
    import json
    res = {x["label"]: x for x in json.load(open(out))["results"]}
    assert set(res) == {"disabled", "configured-unused", "in-use"}
    for label, x in res.items():
        athos, aramis = x["counters"]["athos"], x["counters"]["aramis"]
        assert x["nodes"] == {"athos": "lwt6", "porthos": "kernel", "aramis": "lwt6"}
        assert athos["rx"] > 0 and aramis["rx"] > 0, x
        traced = athos["encapsulated"].get("ioam6", 0)
        if label == "in-use":
            # Every frame Athos sent was traced; every frame Aramis forwarded lost its trace (what it received besides
            # is the kernel's own traffic, dropped: checked below).
            assert traced == athos["tx"] and aramis["ioam"]["removed"] == aramis["tx"] > 0, x
        else:
            assert traced == 0 and aramis["ioam"]["removed"] == 0, x
        # Only what the kernel's Porthos sends of its own (router solicitations, MLD reports) is dropped.
        assert set(athos["drops"]) | set(aramis["drops"]) <= {"multicast_destination"}, x
    rows = [line.split(",") for line in open(os.path.join(workdir, "bench-ioam-live.csv")).read().splitlines()]
    assert rows[0] == ["round", "experiment", "label", "zero_loss_pps", "sender_max_pps", "sender_limited", "athos",
                       "porthos", "aramis", "athos_cpu_ns", "porthos_cpu_ns", "aramis_cpu_ns"], rows[0]
    assert sorted(r[2] for r in rows[1:]) == sorted(res), rows
    for r in rows[1:]:
        x = res[r[2]]
        assert r[:2] == ["0", "registration"] and int(r[3]) == round(x["zero_loss"]), (r, x)
        assert r[6:9] == ["lwt6", "kernel", "lwt6"] and r[10] == "" and float(r[9]) > 0 and float(r[11]) > 0, r
    svg = open(os.path.join(workdir, "plots", "ioam-live-registration.svg")).read()
    assert svg.startswith("<svg") and "configured-unused" in svg and "best of 1 round)" in svg
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in left, left
