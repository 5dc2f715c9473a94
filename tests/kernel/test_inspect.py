"""Inspecting a running `lwt6 run` (docs/live.md, *Inspecting a running router*): `ctl route get` against the
kernel's `ip -6 route get` for the same routes in the same namespace; `ctl show interfaces` over AF_PACKET and
AF_XDP against what the system says of the interfaces; `ctl clear stats` keeps the counters balanced."""
import json
import subprocess

import pytest

from ktlive import LIVE_BASE, LiveRouter, LiveTopo
from ktnet import NetnsError, require_root, xfer
from ktpkt import MAC_R0, MAC_R1, udp6

ROUTES = [
    "-6 route add fd00:55::/64 via fd00:2::2 dev r1",
    "-6 route add fd00:56::/64 encap seg6 mode encap segs fc00::1 dev r1",
    "-6 route add fd00:57::/64 encap seg6 mode inline segs fc00::1,fc00::2 dev r1",
    "-6 route add fd00:58::/64 via fd00:2::2 dev r1 metric 5 mtu 1400",
    "-6 route add fd00:59::/64 via fd00:2::2 dev r1 mtu lock 1300",
    "-6 route add fc00:1::100/128 encap seg6local action End dev r1",
    "-4 route add 10.99.0.0/24 via 10.2.0.2 dev r1",
    "-4 route add 10.98.0.0/24 via 10.2.0.2 dev r1 metric 7 mtu 1400",
]

# (destination, extra words): route get requests whose answers are compared.
QUERIES = [
    ("fd00:55::1", []),
    ("fd00:56::1", []),
    ("fd00:57::9", []),
    ("fd00:58::1", []),
    ("fd00:59::1", []),
    ("fc00::99", []),
    ("fc00:1::100", []),
    ("fd00:2::9", []),
    ("fd00:1::1", []),
    ("fd00:2::1", []),
    ("fd00:55::1", ["from", "fd00:1::1"]),
    ("fd00:55::1", ["from", "fd00:1::1", "iif", "r0"]),
    ("fd00:58::1", ["from", "fd00:1::1", "iif", "r0"]),
    ("fd00:56::1", ["from", "fd00:1::1", "iif", "r0"]),
    ("10.99.0.1", []),
    ("10.98.0.1", []),
    ("10.2.0.9", []),
    ("10.2.0.1", []),
    ("10.99.0.1", ["from", "10.1.0.1", "iif", "r0"]),
    ("10.99.0.1", ["from", "10.2.0.1"]),
    ("10.2.0.1", ["from", "10.1.0.1", "iif", "r0"]),
]


@pytest.fixture(scope="module")
def topo(request):
    try:
        require_root()
        t = LiveTopo("insp")
    except NetnsError as e:
        pytest.fail(f"cannot build the live topology: {e}", pytrace=False)
    request.addfinalizer(t.destroy)
    t.lwt6_mode()
    return t


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("inspect"))


def kernel_route_get(ns, dst, extra, as_json=False):
    """`ip route get`'s answer: IPv6, its line; IPv4, its two lines (the route, the cache entry), without the
    requester's uid (lwt6 leaves it out) and trailing spaces."""
    v6 = ":" in dst
    argv = ["ip", "-n", ns] + (["-j"] if as_json else []) + ["-6" if v6 else "-4", "route", "get", dst] + extra
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, f"{argv}: {r.stderr}"
    if as_json:
        obj = json.loads(r.stdout)[0]
        obj.pop("uid", None)
        return obj
    lines = [l.replace(" uid 0", "").rstrip() for l in r.stdout.splitlines()]
    return "\n".join(lines[:1 if v6 else 2])


@pytest.fixture(scope="module")
def kernel_answers(topo):
    topo.kernel_mode(LIVE_BASE + ROUTES)
    try:
        return {(d, tuple(e)): (kernel_route_get(topo.rns, d, e), kernel_route_get(topo.rns, d, e, True))
                for d, e in QUERIES}
    finally:
        topo.lwt6_mode()


def test_route_get_is_the_kernels(topo, workdir, kernel_answers):
    r = LiveRouter(topo.rns, "\n".join(LIVE_BASE + ROUTES) + "\n", workdir, ["--io", "packet"], label="rg")
    try:
        for (dst, extra), (line, obj) in kernel_answers.items():
            got = r.ctl("route", "get", dst, *extra)
            assert got.returncode == 0, got.stderr
            n = 1 if ":" in dst else 2
            assert "\n".join(got.stdout.splitlines()[:n]) == line, (dst, extra)
            got = r.ctl("route", "get", dst, *extra, "-j")
            assert got.returncode == 0, got.stderr
            ours = json.loads(got.stdout)[0]
            # The kernel's keys and values; lwt6's own fields are under "lwt6".
            assert {k: ours.get(k) for k in obj} == obj, (dst, extra, ours)
            assert list(k for k in ours if k in obj) == list(obj), (dst, extra, "key order")
        # The kernel: "RTNETLINK answers: Network is unreachable".
        bad = r.ctl("route", "get", "2001:db8::1")
        assert bad.returncode != 0 and "Network is unreachable" in bad.stderr, bad.stderr
        # lwt6's part: the tunnel route's plan and next hop (fc00::1 by fc00::/16 via fd00:2::2, a static
        # neighbour).
        v = json.loads(r.ctl("route", "get", "fd00:56::1", "-j").stdout)[0]["lwt6"]
        assert v["tunnel"]["routes_to"] == "fc00::1" and v["next_hop"]["addr"] == "fd00:2::2"
        assert v["next_hop"]["state"] == "PERMANENT" and v["plan"]["kind"] == "seg6_encap"
        # RFC 8754: 40 (outer IPv6) + 8 + 16 (SRH, one segment).
        assert v["tunnel"]["added"] == 64 and v["effective_mtu"] == 1500 - 64
    finally:
        r.stop()


def link(ns, ifname):
    out = subprocess.run(["ip", "-n", ns, "-j", "-d", "link", "show", "dev", ifname], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)[0]


@pytest.mark.parametrize("io", ["packet", "xdp"])
def test_show_interfaces(topo, workdir, io):
    r = LiveRouter(topo.rns, "\n".join(LIVE_BASE) + "\n", workdir, ["--io", io], label=f"if{io}")
    try:
        got = r.ctl("show", "interfaces", "-j")
        assert got.returncode == 0, got.stderr
        shown = {i["ifname"]: i for i in json.loads(got.stdout)}
        text = r.ctl("show", "interfaces").stdout
        kernel = {n: link(topo.rns, n) for n in ("r0", "r1")}
    finally:
        r.stop()
    assert set(shown) == {"r0", "r1"}
    for name, mac in (("r0", MAC_R0), ("r1", MAC_R1)):
        i, k = shown[name], kernel[name]
        assert i["address"] == k["address"] == mac.lower()
        assert i["mtu"] == k["mtu"]
        assert i["io"] == f"af_{io}"
        assert len(i["ports"]) == 1 and i["ports"][0]["worker"] == 0, i
        p = i["ports"][0]
        if io == "xdp":
            # The kernel's view of the program lwt6 attached: `xdp` (native) or `xdpgeneric` mode.
            mode = k.get("xdp", {}).get("mode")
            assert mode in (1, 2), k.get("xdp")  # XDP_ATTACHED_DRV 1, XDP_ATTACHED_SKB 2
            assert p["xdp_mode"] == {1: "native", 2: "generic"}[mode]
            assert p["queue"] == 0
            # veth has no AF_XDP zero-copy support: the kernel binds in copy mode.
            assert p["zero_copy"] is False
            assert f"queue 0: worker 0, af_xdp, xdp {p['xdp_mode']}, copy" in text
        else:
            assert p["io"] == "af_packet" and p["fanout"] is None
            assert "socket: worker 0, af_packet, fanout none" in text


def test_clear_stats_zeroes_and_keeps_the_balance(topo, workdir):
    r = LiveRouter(topo.rns, "\n".join(LIVE_BASE) + "\n", workdir, ["--io", "packet"], label="clr")
    try:
        before, after = 20, 30
        xfer(topo.s0, [udp6("fc00::99", hlim=64, size=64, tag=i) for i in range(before)], [topo.d0],
             expect=before, timeout=2.0)
        r.wait_rx(before)
        assert r.stats()["tx"] >= before
        assert r.ctl("clear", "stats").returncode == 0
        s = r.stats()
        assert s["tx"] == 0 and s["balanced"] and s["rx"] == s["tx"] + s["dropped"] + s["consumed"] + s["pending"]
        assert s["cleared_at"] is not None
        xfer(topo.s0, [udp6("fc00::99", hlim=64, size=64, tag=i) for i in range(after)], [topo.d0],
             expect=after, timeout=2.0)
        r.wait_rx(after)
        s = r.stats()
        assert s["tx"] == after, s
        assert s["balanced"] and all(w["balanced"] for w in s["workers"]), s
        assert s["links"]["r1"]["tx"] == after
        bad = r.ctl("clear", "everything")
        assert bad.returncode != 0 and "'everything'" in bad.stderr
    finally:
        final = r.stop()
    # The final counters are since the start: not cleared.
    assert final["tx"] == before + after, final


@pytest.fixture(scope="module")
def topo2(request):
    try:
        require_root()
        t = LiveTopo("insq", queues=2)
    except NetnsError as e:
        pytest.fail(f"cannot build the two-queue topology: {e}", pytrace=False)
    request.addfinalizer(t.destroy)
    t.lwt6_mode()
    return t


def rx_queues(ns, ifname):
    """The receive queues the kernel gives the interface (/sys/class/net/IF/queues/rx-N)."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ls", f"/sys/class/net/{ifname}/queues"], capture_output=True,
                         text=True, check=True).stdout.split()
    return sorted(int(q[3:]) for q in out if q.startswith("rx-"))


@pytest.mark.parametrize("io", ["packet", "xdp"])
def test_show_interfaces_two_workers(topo2, workdir, io):
    r = LiveRouter(topo2.rns, "\n".join(LIVE_BASE) + "\n", workdir, ["--io", io, "--workers", "2"], label=f"q{io}")
    try:
        got = r.ctl("show", "interfaces", "-j")
        assert got.returncode == 0, got.stderr
        shown = {i["ifname"]: i for i in json.loads(got.stdout)}
    finally:
        r.stop()
    for name in ("r0", "r1"):
        ports = shown[name]["ports"]
        if io == "xdp":
            # One socket per receive queue the kernel has, queue q served by worker q % 2.
            queues = rx_queues(topo2.rns, name)
            assert queues == [0, 1]
            assert sorted((p["queue"], p["worker"]) for p in ports) == [(q, q % 2) for q in queues]
        else:
            # One socket per worker, in one fanout group (hash: the default).
            assert sorted(p["worker"] for p in ports) == [0, 1]
            assert all(p["fanout"] == "hash" for p in ports)
