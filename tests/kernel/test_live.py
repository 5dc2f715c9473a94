"""The live router, `lwt6 run` over AF_PACKET, against the kernel router in the same topology: the receiver (and the
sender, for ICMPv6 errors) must get the same bytes from both. Then what only a live router has: routes changed
through the control socket under a steady stream, several workers on a multi-queue veth, the refusals."""
import ipaddress
import json
import os
import shutil
import signal
import socket
import struct
import tempfile
import subprocess
import threading
import time

import pytest

from ktlive import LIVE_BASE, live_topo, LiveRouter, LiveTopo, read_to_end, run_lwt6
from ktlwt6 import lwt6_bin
from ktnet import NetnsError, in_ns, require_root, sysctl_set, xfer
from ktpkt import MAC_D0, MARKER, compare_frames, ioam_frame, ioam_hbh, rpl_srh, udp4, udp6, udp_over_rh, with_marker

SECRET = "mysecret"

# One router description for every differential case: each case has its own destination prefix.
CASES_CONFIG = [
    f"sr hmac set 42 sha256 secret {SECRET}",
    "-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev r1",
    "-6 route add fd00:92::/64 encap seg6 mode inline segs fc00::1,fc00::2 dev r1",
    "-6 route add fd00:93::/64 encap seg6 mode encap.red segs fc00::1,fc00::2,fc00::3 dev r1",
    "-6 route add fd00:94::/64 encap seg6 mode l2encap segs fc00::1,fc00::2 dev r1",
    "-6 route add fd00:95::/64 encap seg6 mode l2encap.red segs fc00::1,fc00::2 dev r1",
    "-6 route add fd00:96::/64 encap seg6 mode encap segs fc00::1,fc00::2 hmac 42 dev r1",
    "-6 route add fd00:98::/64 encap seg6 mode inline segs fc00::1,fc00::2,fc00::3 hmac 42 dev r1",
    "-6 route add fd00:9a::/64 via fd00:2::2 dev r1 mtu lock 1400",
    # Unlocked: Linux checks it only on output, after the hop limit was decremented (the PTB quotes hop limit - 1).
    "-6 route add fd00:9b::/64 via fd00:2::2 dev r1 mtu 1400",
    "-4 route add 10.99.0.0/24 encap seg6 mode encap segs fc00::1,fc00::2 dev r1",
    "-4 route add 10.98.0.0/24 encap seg6 mode l2encap.red segs fc00::1,fc00::2 dev r1",
    "ioam namespace add 123 data 0xdeadbeef wide 0xcafec0dedeadbeef",
    "sysctl net.ipv6.ioam6_id=0x111111",
    "sysctl net.ipv6.conf.r0.ioam6_enabled=1",
    "sysctl net.ipv6.conf.r0.ioam6_id=0x0a0a",
    "sysctl net.ipv6.conf.r1.ioam6_id=0x0c0c",
    "sysctl net.ipv6.conf.all.rpl_seg_enabled=1",
    "sysctl net.ipv6.conf.r0.rpl_seg_enabled=1",
    f"neigh add fd00:2::5 lladdr {MAC_D0} dev r1",
]


def case_frames():
    """(case id, frame): every seg6 mode, HMAC, IPv4 inner, IOAM transit, RPL intermediate, plain forwarding and
    ICMPv6 errors."""
    f = []
    for pfx, mode in [("91", "encap3"), ("92", "inline2"), ("93", "encap.red3"), ("94", "l2encap2"),
                      ("95", "l2encap.red2"), ("96", "encap2-hmac"), ("98", "inline3-hmac")]:
        f.append((f"seg6-{mode}", udp6(f"fd00:{pfx}::1", fl=0x12345, tc=0xb8, hlim=64, size=40, tag=1)))
        f.append((f"seg6-{mode}-b", udp6(f"fd00:{pfx}::77", fl=0, tc=0, hlim=9, size=300, tag=2)))
    f.append(("seg6-encap-ipv4", udp4("10.99.0.1", tos=0xb8, ttl=64, ident=0x4242, size=20, tag=3)))
    # TTL 1 inside: seg6 encapsulates before IPv4 forwarding would look at the TTL.
    f.append(("seg6-encap-ipv4-ttl1", udp4("10.99.0.2", tos=0, ttl=1, ident=7, df=True, size=60, tag=3)))
    f.append(("seg6-l2encap.red-ipv4-ttl1", udp4("10.98.0.1", tos=3, ttl=1, ident=9, size=100, tag=3)))
    f.append(("plain", udp6("fc00::99", hlim=64, size=100, tag=4)))
    f.append(("ioam-transit", ioam_frame(ioam_hbh(123, 0xC40000, 6), dst="fc00::5", hlim=64, size=16, tag=5)))
    # RPL intermediate node (addressed to fd00:2::1, the router): same-size recompression only, where the
    # kernel is a valid oracle (docs/references.md §3.4)
    for cid, addrs, sl in [("rpl-two-addr-first-hop", ["fd00:2::5", "fd00:2::2"], 2),
                           ("rpl-five-addr", ["fd00:2::5", "fd00:3::1", "fd00:4::1", "fd00:5::1", "fd00:2::2"], 5)]:
        f.append((cid, udp_over_rh("fd00:2::1", rpl_srh(addrs, sl, "fd00:2::1"), addrs[-1], hlim=64, size=40,
                                   tag=10)))
    f.append(("icmp-time-exceeded", udp6("fc00::99", hlim=1, size=32, tag=6)))
    f.append(("icmp-unreachable", udp6("2001:db8::1", hlim=64, size=32, tag=7)))
    f.append(("icmp-packet-too-big", udp6("fd00:9a::5", hlim=64, size=1400, tag=8)))
    f.append(("icmp-packet-too-big-unlocked", udp6("fd00:9b::5", hlim=64, size=1400, tag=8)))
    f.append(("icmp-packet-too-big-tunnel", udp6("fd00:91::5", hlim=64, size=1440, tag=8)))
    return f


def no_icmp_flow_label(frame):
    """The kernel's ICMPv6 errors carry a flow label hashed with a per-boot secret; lwt6 sends 0
    (docs/linux-compat.md). Compared without it."""
    frame = bytearray(frame)
    if len(frame) > 54 and frame[12:14] == b"\x86\xdd" and frame[20] == 58:
        frame[15] &= 0xF0
        frame[16] = frame[17] = 0
    return bytes(frame)


def noise(final):
    """Frames the sender's own kernel sends on its own (MLD reports, router solicitations): multicast, dropped by name."""
    return final["drops"].get("multicast_destination", 0)


@pytest.fixture(scope="module")
def live(request):
    return live_topo(request, "lv")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("live"))


def send_cases(topo):
    """Each case's frame alone (so that every output belongs to one case): {case: (to sender, to receiver)}."""
    got = {}
    for cid, fr in case_frames():
        r = xfer(topo.s0, [fr], [topo.s0, topo.d0], timeout=0.25, keep=with_marker)
        got[cid] = ([no_icmp_flow_label(x) for x in r[topo.s0.label]],
                    [no_icmp_flow_label(x) for x in r[topo.d0.label]])
    return got


@pytest.fixture(scope="module")
def kernel_outputs(live):
    live.kernel_mode(LIVE_BASE + CASES_CONFIG)
    try:
        return send_cases(live)
    finally:
        live.lwt6_mode()


def xdp_programs(ns, ifnames):
    """The interfaces of ns (among ifnames) that have an XDP program attached (`ip -d link show`)."""
    out = subprocess.run(["ip", "-n", ns, "-d", "link", "show"], capture_output=True, text=True, check=True).stdout
    found, cur = set(), None
    for line in out.splitlines():
        if line[:1].isdigit():
            cur = line.split(":")[1].strip().split("@")[0]
        xdp = {"xdp", "xdpgeneric", "xdpdrv", "xdpmulti", "xdpoffload"}
        if cur in ifnames and ("prog/xdp" in line or xdp & set(line.split())):
            found.add(cur)
    return found


def compare_with_kernel(kernel_outputs, ours):
    """Every case's frames at the receiver and back at the sender: lwt6's against the kernel router's."""
    for cid, _ in case_frames():
        kb, kf = kernel_outputs[cid]
        lb, lf = ours[cid]
        assert kf or cid.startswith("icmp"), f"{cid}: the kernel forwarded nothing: the case tests nothing"
        compare_frames(kf, lf, f"{cid}: frames at the receiver")
        if cid == "icmp-packet-too-big-tunnel":
            # docs/linux-compat.md, difference 1: Linux sends this Packet Too Big to itself (the outer source);
            # lwt6 to the original sender, with the MTU left inside the tunnel (1500 - 40 - 8 - 3 * 16).
            assert kb == [] and len(lb) == 1, (kb, lb)
            assert lb[0][54] == 2 and struct.unpack("!I", lb[0][58:62])[0] == 1500 - 96, lb[0][:70].hex()
            continue
        compare_frames(kb, lb, f"{cid}: frames back at the sender")


def gro(ns, ifname, on):
    """GRO on or off on a veth: with it, its peer takes XDP-redirected frames (the kernel's `ndo_xdp_xmit` on a
    veth needs the peer's NAPI, which GRO or an XDP program enables)."""
    subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "gro", "on" if on else "off"],
                   check=True, capture_output=True)


def router_totals(final):
    """(received, sent, dropped + for the router + waiting) of the whole router: both tiers when the XDP tier
    ran."""
    t = final["xdp"]["total"] if "xdp" in final else dict(final, dropped=sum(final["drops"].values()))
    return t["rx"], t["tx"], t["dropped"] + t["consumed"] + t["pending"]


@pytest.mark.parametrize("io,tier", [("packet", None), ("xdp", "off"), ("xdp", "on")])
def test_live_same_bytes_as_kernel(live, workdir, kernel_outputs, io, tier):
    """For every case the receiver and the sender get from `lwt6 run` (over AF_PACKET, over AF_XDP, and over
    AF_XDP with the XDP tier forwarding in the driver) exactly the bytes the kernel router gave them; the counters
    balance and every frame the kernel did not forward is a named drop. After SIGTERM no XDP program is left on
    the interfaces. With the tier, d0 has GRO on (so that r1 takes redirected frames) and the driver must have
    forwarded the plain and seg6 encap cases itself."""
    assert kernel_outputs["seg6-encap3"][1], "the kernel forwarded nothing: the harness is broken"
    live.lwt6_mode()
    args = ["--io", io] + (["--xdp-tier", tier] if tier else [])
    if tier == "on":
        gro(live.topo.name(live.d), "d0", True)
    try:
        r = LiveRouter(live.rns, "\n".join(LIVE_BASE + CASES_CONFIG) + "\n", workdir, args=args,
                       label=f"diff-{io}-{tier}")
        try:
            if io == "xdp":
                assert xdp_programs(live.rns, {"r0", "r1"}) == {"r0", "r1"}, "no XDP program while running"
            ours = send_cases(live)
        finally:
            final = r.stop()
    finally:
        if tier == "on":
            gro(live.topo.name(live.d), "d0", False)
    assert final["io"] == "af_" + io, final["io"]
    assert xdp_programs(live.rns, {"r0", "r1"}) == set(), "an XDP program was left attached"
    compare_with_kernel(kernel_outputs, ours)
    n = len(case_frames())
    rx, tx, dropped = router_totals(final)
    assert rx - noise(final) == n and final["balanced"] and rx == tx + dropped, final
    assert final["icmp_errors_sent"] == 5, final
    assert set(final["drops"]) - {"multicast_destination"} == {"hop_limit_exceeded", "no_route", "mtu_exceeded"}, \
        final["drops"]
    if tier == "on":
        x = final["xdp"]
        # Per tier: the driver's frames are forwarded or handed on; in all: received = sent + dropped.
        assert x["received"] == x["sent"] + x["to_worker"] and x["dropped"] == 0, x
        # Every frame the driver handed on reached the worker: none vanished between the tiers.
        assert x["to_worker"] == final["rx"], (x, final["rx"])
        assert x["egress"]["r1"]["redirect"], x["egress"]
        # plain (fc00::99), seg6 encap (3 SIDs, 2 with HMAC), encap.red and inline, twice each but one plain.
        assert x["by_kind"].get("forward", 0) >= 1 and x["by_kind"].get("seg6_encap", 0) >= 4, x
        # seg6 l2encap and l2encap.red (twice each), encap of the IPv4 packets, l2encap.red of one.
        assert x["by_kind"].get("seg6_l2encap", 0) == 4 and x["by_kind"].get("seg6_encap_v4", 0) == 2, x
        assert x["by_kind"].get("seg6_l2encap_v4", 0) == 1, x
        assert x["egress"]["r1"]["tx"] == x["sent"], x
    elif io == "xdp":
        assert "xdp" not in final, final.get("xdp")


def wait_until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met within the time"
        time.sleep(0.05)


def test_xdp_tier_without_redirect_capability_delivers_through_the_worker(live, workdir):
    """d0 without GRO and without an XDP program: the kernel would drop frames redirected to r1. The tier says
    so (`show stats`), leaves r1 out of its devmap, and every frame reaches d0 through the worker, counted
    `no_egress`; when GRO comes on at d0 while the router runs, the driver takes over (checked every second).
    While a trace is armed the driver leaves every frame to the worker, which traces it."""
    live.lwt6_mode()
    d = live.topo.name(live.d)
    gro(d, "d0", False)
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "xdp", "--xdp-tier", "on"],
                   label="xdp-noredirect")
    frames = [udp6("fc00::99", hlim=64, size=100, tag=i) for i in range(20)]
    try:
        text = r.ctl("show", "stats")
        assert "xdp egress r1" in text.stdout and "redirect no" in text.stdout, text.stdout
        where = r.ctl("show", "xdp").stdout
        assert "fc00::/16 worker no_egress\n" in where and "egress r1: not from the driver" in where, where
        got = xfer(live.s0, frames, [live.d0], timeout=0.5, keep=with_marker)[live.d0.label]
        assert len(got) == len(frames), f"{len(got)} of {len(frames)} frames arrived"
        s = r.stats()["xdp"]
        assert s["sent"] == 0 and s["to_worker_by_reason"].get("no_egress", 0) == len(frames), s
        assert not s["egress"]["r1"]["redirect"] and s["egress"]["r1"]["why_not"], s["egress"]
        gro(d, "d0", True)
        deadline = time.monotonic() + 5
        while not r.stats()["xdp"]["egress"]["r1"]["redirect"]:
            assert time.monotonic() < deadline, "GRO on d0 was not noticed within 5 s"
            time.sleep(0.1)
        got = xfer(live.s0, frames, [live.d0], timeout=0.5, keep=with_marker)[live.d0.label]
        assert len(got) == len(frames), f"{len(got)} of {len(frames)} frames arrived after GRO on"
        s = r.stats()["xdp"]
        assert s["sent"] == len(frames) and s["by_kind"]["forward"] == len(frames), s
        where = json.loads(r.ctl("show", "xdp", "-j").stdout)
        assert {"dst": "fc00::/16", "driver": True, "kind": "forward", "growth": 0} in where["routes"], where
        # A trace armed: the driver leaves every frame to the worker (counted `traced`), which traces them.
        assert r.ctl("trace", "add", "3").returncode == 0
        wait_until(lambda: {"dst": "fc00::/16", "driver": False, "reason": "traced", "growth": 0}
                   in json.loads(r.ctl("show", "xdp", "-j").stdout)["routes"])
        got = xfer(live.s0, frames[:3], [live.d0], timeout=0.5, keep=with_marker)[live.d0.label]
        assert len(got) == 3
        doc = show_trace(r, 3)
        assert doc["recorded"] == 3 and all(f["outcome"] == "sent" for f in doc["frames"]), doc
        assert r.stats()["xdp"]["to_worker_by_reason"]["traced"] == 3
        # The trace done, the driver takes the routes back.
        wait_until(lambda: {"dst": "fc00::/16", "driver": True, "kind": "forward", "growth": 0}
                   in json.loads(r.ctl("show", "xdp", "-j").stdout)["routes"])
    finally:
        final = r.stop()
        gro(d, "d0", False)
    rx, tx, dropped = router_totals(final)
    assert rx == tx + dropped and tx >= 2 * len(frames), final


def test_route_added_under_traffic_takes_effect_without_loss(live, workdir):
    """A steady stream to fd00:97::/64 goes out plainly (default route); `lwt6 ctl route add` an encap route for
    it in the middle: every frame arrives, in order, plain up to one point and encapsulated from there on."""
    live.lwt6_mode()
    conf = LIVE_BASE + ["-6 route add default via fd00:2::2 dev r1"]
    r = LiveRouter(live.rns, "\n".join(conf) + "\n", workdir, label="swap")
    total, added = 4000, {}
    try:
        for p in (live.s0, live.d0):
            p.drain()
        received = []
        done = threading.Event()

        def receive():
            import select
            while not done.is_set() or select.select([live.d0.sock], [], [], 0.3)[0]:
                if not select.select([live.d0.sock], [], [], 0.05)[0]:
                    continue
                while True:
                    try:
                        data, addr = live.d0.sock.recvfrom(65535)
                    except BlockingIOError:
                        break
                    if with_marker(data):
                        received.append(data)
        th = threading.Thread(target=receive)
        th.start()
        template = udp6("fd00:97::1", hlim=64, size=16, tag=0)
        at = template.index(MARKER) + len(MARKER)
        for i in range(total):
            # The sequence number in the tag bytes after the marker (the UDP checksum is not the router's concern).
            fr = bytearray(template)
            fr[at:at + 2] = struct.pack("<H", i)
            live.s0.send(bytes(fr))
            if i == total // 2:
                res = r.ctl("route", "add", "fd00:97::/64", "encap", "seg6", "mode", "encap", "segs",
                            "fc00::1", "dev", "r1")
                added["rc"], added["err"] = res.returncode, res.stderr
            if i % 40 == 39:
                time.sleep(0.002)
        r.wait_rx(total)
        time.sleep(0.3)
        done.set()
        th.join()
    finally:
        final = r.stop()
    assert added["rc"] == 0, added["err"]
    assert final["rx"] - noise(final) == total and final["tx"] == total and final["balanced"], final
    assert len(received) == total, f"{total - len(received)} frames lost ({final})"
    encapsulated = [fr[20] == 43 for fr in received]   # outer next header: routing header (SRH)
    assert True in encapsulated, "the added route never took effect"
    switch = encapsulated.index(True)
    assert 0 < switch and all(encapsulated[switch:]), "a frame went out on the old route after the new one"
    seqs = [struct.unpack("<H", fr[fr.index(MARKER) + len(MARKER):][:2])[0] for fr in received]
    assert seqs == list(range(total)), "frames lost, duplicated or reordered"


def test_bad_control_line_is_rejected_and_changes_nothing(live, workdir):
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, label="badline")
    try:
        before = r.ctl("show", "routes").stdout
        bad = r.ctl("route", "add", "fd00:55::/64", "encap", "seg6", "mode", "encapz", "segs", "fc00::1", "dev", "r1")
        assert bad.returncode == 1 and "'encapz'" in bad.stderr, bad.stderr
        bad = r.ctl("route", "add", "fd00:55::/64", "dev", "nosuch0")
        assert bad.returncode == 1 and "'nosuch0'" in bad.stderr, bad.stderr
        bad = r.ctl("link", "add", "r9")
        assert bad.returncode == 1 and "restart" in bad.stderr, bad.stderr
        assert r.ctl("show", "routes").stdout == before
        ok = r.ctl("route", "add", "fd00:55::/64", "via", "fd00:2::2", "dev", "r1")
        assert ok.returncode == 0, ok.stderr
        assert "fd00:55::/64 via fd00:2::2 dev r1" in r.ctl("show", "routes").stdout
        neigh = r.ctl("show", "neigh")
        assert "fd00:2::2 dev r1 lladdr 02:00:00:00:02:02 PERMANENT" in neigh.stdout, neigh.stdout
        # the router still forwards
        got = xfer(live.s0, [udp6("fc00::1", size=8, tag=9)], live.d0, expect=1, timeout=1.0, keep=with_marker)
        assert len(got[live.d0.label]) == 1
    finally:
        r.stop()


def show_trace(r, want, timeout=3.0):
    """`show trace -j` once `want` frames are recorded (workers hand theirs over at the end of a round)."""
    deadline = time.monotonic() + timeout
    while True:
        res = r.ctl("show", "trace", "-j")
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        if doc["recorded"] >= want or time.monotonic() > deadline:
            return doc
        time.sleep(0.02)


def test_trace_live(live, workdir):
    """`lwt6 ctl trace add 3 dst fd00:92::/64 proto udp` on a running router: of ten frames, the first three to that
    prefix are traced (the others are not, and every frame is forwarded); `show trace -j` lists them in order with
    the route they matched, the seg6 tunnel and the bytes it added (40 + 8 + 2 * 16), the neighbour and the frame
    sent; `trace clear` forgets them. A bad filter is refused naming its token."""
    live.lwt6_mode()
    conf = LIVE_BASE + ["-6 route add fd00:92::/64 encap seg6 mode encap segs fc00::1,fc00::2 dev r1"]
    r = LiveRouter(live.rns, "\n".join(conf) + "\n", workdir, label="trace")
    try:
        bad = r.ctl("trace", "add", "3", "dst", "banana")
        assert bad.returncode == 1 and "'banana'" in bad.stderr, bad.stderr
        ok = r.ctl("trace", "add", "3", "dst", "fd00:92::/64", "proto", "udp")
        assert ok.returncode == 0, ok.stderr
        frames = []
        for i in range(5):
            frames.append(udp6("fc00::99", size=16, tag=i))
            frames.append(udp6(f"fd00:92::{i + 1:x}", size=16, tag=10 + i))
        got = xfer(live.s0, frames, live.d0, expect=len(frames), timeout=2.0, keep=with_marker)
        assert len(got[live.d0.label]) == len(frames)
        doc = show_trace(r, 3)
        assert (doc["status"], doc["requested"], doc["recorded"]) == ("done", 3, 3), doc
        assert doc["filter"] == "dst fd00:92::/64 proto udp"
        for i, fr in enumerate(doc["frames"]):
            sent_frame = frames[2 * i + 1]
            assert (fr["seq"], fr["worker"], fr["in_dev"], fr["len"]) == (i + 1, 0, "r0", len(sent_frame)), fr
            assert fr["headers"][1]["dst"] == f"fd00:92::{i + 1:x}", fr["headers"]
            steps = {s["step"]: s for s in fr["steps"]}
            routes = [s for s in fr["steps"] if s["step"] == "route"]
            assert [(x["purpose"], x["table"], x["prefix"]) for x in routes] == [
                ("destination", "main", "fd00:92::/64"), ("tunnel destination", "main", "fc00::/16")], routes
            assert steps["tunnel"]["kind"] == "seg6" and steps["tunnel"]["added"] == 80, steps
            assert steps["tunnel"]["new_dst"] == "fc00::1"
            assert steps["neighbour"] == {"step": "neighbour", "dev": "r1", "addr": "fd00:2::2",
                                          "state": "reachable", "mac": MAC_D0}, steps
            assert steps["sent"]["dev"] == "r1" and steps["sent"]["len"] == len(sent_frame) + 80
            srh = [h for h in steps["sent"]["headers"] if h["layer"] == "srh"]
            assert srh and srh[0]["segments"] == ["fc00::2", "fc00::1"], steps["sent"]["headers"]
            assert fr["outcome"] == "sent" and fr["drop_reason"] is None
        text = r.ctl("show", "trace").stdout
        assert text.startswith("trace done: 3 of 3 frames recorded, filter: dst fd00:92::/64 proto udp"), text
        assert "tunnel     seg6 +80 bytes" in text and "=> sent" in text, text
        assert r.ctl("trace", "clear").returncode == 0
        assert show_trace(r, 0)["status"] == "off"
    finally:
        final = r.stop()
    assert final["tx"] == len(frames) and final["balanced"], final


def test_trace_two_workers(workdir):
    """Two workers share one trace: eight frames traced in all, whichever worker received them, merged by
    sequence number; each ends as sent by the worker that recorded it."""
    try:
        t = LiveTopo("ltr", queues=2)
    except NetnsError as e:
        pytest.fail(f"cannot build the two-queue topology: {e}", pytrace=False)
    try:
        t.lwt6_mode()
        r = LiveRouter(t.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--workers", "2", "--io", "packet"],
                       label="trace-mq")
        try:
            assert r.ctl("trace", "add", "8", "dst", "fc00::/16").returncode == 0
            frames = [udp6(f"fc00::{i:x}", src=f"fd00:1::{(i * 7) % 200 + 1:x}", size=16, tag=i % 256)
                      for i in range(1, 61)]
            got = xfer(t.s0, frames, t.d0, expect=len(frames), timeout=3.0, keep=with_marker)
            assert len(got[t.d0.label]) == len(frames)
            doc = show_trace(r, 8)
        finally:
            final = r.stop()
        assert (doc["status"], doc["recorded"]) == ("done", 8), doc
        assert [f["seq"] for f in doc["frames"]] == list(range(1, 9))
        assert {f["worker"] for f in doc["frames"]} <= {0, 1}
        for f in doc["frames"]:
            assert f["outcome"] == "sent" and f["steps"][-1]["step"] == "sent", f
            assert f["headers"][1]["dst"].startswith("fc00::")
        assert final["tx"] == len(frames) and final["balanced"], final
    finally:
        t.destroy()


def http(port, request, timeout=5):
    """The whole answer to one raw HTTP request on 127.0.0.1:port (run it in the router's namespace)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    c.sendall(request)
    data = read_to_end(c)
    c.close()
    return data


def test_metrics(live, workdir):
    """--metrics serves OpenMetrics text at /metrics only, as prometheus_client's OpenMetrics parser reads it: totals,
    per worker, drops by reason, an interface named with a quote and a backslash (its label value round-trips),
    build info, the result of a failed reload; 404 on another path, 405 for another method; a client that sends
    nothing and one that sends a byte at a time do not delay a scrape, and the silent one is closed after 2 s."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    live.lwt6_mode()
    odd = 'a"b\\c'
    subprocess.run(["ip", "-n", live.rns, "link", "add", odd, "type", "veth", "peer", "name", "m0"], check=True)
    subprocess.run(["ip", "-n", live.rns, "link", "set", "m0", "up"], check=True)
    # lwt6 owns the interface: IPv6 off on it (docs/live.md).
    sysctl_set(live.rns, f"net.ipv6.conf.{odd}.disable_ipv6", 1)
    subprocess.run(["ip", "-n", live.rns, "link", "set", odd, "up"], check=True)
    conf = "\n".join(LIVE_BASE + [f"link add '{odd}'"]) + "\n"
    r = None
    try:
        r = LiveRouter(live.rns, conf, workdir, args=["--metrics", "127.0.0.1:9106"], label="metrics")
        xfer(live.s0, [udp6("fc00::1", size=8, tag=1), udp6("2001:db8::1", size=8, tag=2)], live.d0, expect=1,
             timeout=1.0, keep=with_marker)
        r.wait_rx(2)
        with open(r.conf, "a") as f:
            f.write("this is not a statement\n")
        r.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)

        def scrape():
            answers = {
                "metrics": http(9106, b"GET /metrics HTTP/1.1\r\nHost: rtr\r\n\r\n"),
                "head": http(9106, b"HEAD /metrics HTTP/1.0\r\n\r\n"),
                "other": http(9106, b"GET / HTTP/1.0\r\n\r\n"),
                "post": http(9106, b"POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n"),
            }
            silent = socket.create_connection(("127.0.0.1", 9106))
            dribble = socket.create_connection(("127.0.0.1", 9106))
            stop = threading.Event()

            def one_byte_at_a_time():
                for b in b"GET /metrics HTTP/1.0\r\n\r\n":
                    if stop.wait(0.25):
                        break
                    try:
                        dribble.send(bytes([b]))
                    except OSError:
                        break
            t = threading.Thread(target=one_byte_at_a_time)
            t.start()
            time.sleep(0.3)
            t0 = time.monotonic()
            answers["while_slow"] = http(9106, b"GET /metrics HTTP/1.0\r\n\r\n")
            answers["slow_elapsed"] = time.monotonic() - t0
            silent.settimeout(5)
            t0 = time.monotonic()
            answers["silent_eof"] = silent.recv(16)
            answers["silent_closed_after"] = time.monotonic() - t0 + 0.3
            stop.set()
            t.join()
            silent.close()
            dribble.close()
            return answers
        got = in_ns(live.rns, scrape)
    finally:
        final = r.stop() if r else None
        subprocess.run(["ip", "-n", live.rns, "link", "del", odd], check=False)
    text = got["metrics"]
    head, body = text.split("\r\n\r\n", 1)
    assert head.startswith("HTTP/1.1 200 OK"), head
    assert "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8" in head, head
    fams = {f.name: f for f in text_string_to_metric_families(body)}
    types = {n: f.type for n, f in fams.items()}
    for name in ("lwt6_rx_frames", "lwt6_tx_frames", "lwt6_dropped_frames", "lwt6_drops", "lwt6_worker_rx_frames",
                 "lwt6_worker_drops", "lwt6_link_rx_frames", "lwt6_link_tx_frames", "lwt6_link_overload_frames",
                 "lwt6_ioam_packets", "lwt6_ioam_exported_traces", "lwt6_ioam_export_lost_traces",
                 "lwt6_config_reloads"):
        assert types.get(name) == "counter", (name, types)
    assert types["lwt6_build"] == "info" and types["lwt6_config_reload_success"] == "gauge", types

    def samples(name):
        return {tuple(sorted(s.labels.items())): s.value for s in fams[name].samples if s.name == name + "_total"}
    assert samples("lwt6_tx_frames")[()] == final["tx"], fams["lwt6_tx_frames"]
    assert samples("lwt6_drops")[(("reason", "no_route"),)] == 1
    assert (("worker", "0"),) in samples("lwt6_worker_rx_frames")
    links = samples("lwt6_link_rx_frames")
    assert set(links) == {(("link", "r0"),), (("link", "r1"),), (("link", odd),)}, links
    assert links[(("link", "r0"),)] >= 2, links
    info = fams["lwt6_build"].samples[0]
    assert info.name == "lwt6_build_info" and info.value == 1 and info.labels["version"], info
    assert info.labels["rustc"].startswith("rustc ") and info.labels["profile"] in ("debug", "release"), info
    assert fams["lwt6_config_reload_success"].samples[0].value == 0
    assert samples("lwt6_config_reloads") == {(("result", "failure"),): 1, (("result", "success"),): 0}
    # The XDP tier (on by default over AF_XDP): its families in the same exposition, the odd name round-trips, and
    # the router's totals over both tiers balance (d0 has no GRO: r1 takes no redirected frame, all via the worker).
    assert final["io"] == "af_xdp" and "xdp" in final, final.get("io")
    redirect = {k: v for k, v in ((tuple(sorted(s.labels.items())), s.value)
                                  for s in fams["lwt6_xdp_egress_redirect"].samples)}
    assert set(redirect) == {(("link", "r0"),), (("link", "r1"),), (("link", odd),)}, redirect
    assert redirect[(("link", "r1"),)] == 0, redirect
    to_worker = samples("lwt6_xdp_to_worker_frames")
    assert to_worker[(("reason", "no_egress"),)] >= 1 and to_worker[(("reason", "no_route"),)] == 1, to_worker
    assert samples("lwt6_router_rx_frames")[()] == samples("lwt6_rx_frames")[()], "nothing forwarded in the driver"
    assert got["head"].startswith("HTTP/1.0 200 OK") or got["head"].startswith("HTTP/1.1 200 OK"), got["head"]
    assert got["head"].endswith("\r\n\r\n"), got["head"]
    assert got["other"].startswith("HTTP/1.1 404 "), got["other"]
    assert got["post"].startswith("HTTP/1.1 405 ") and "Allow: GET, HEAD" in got["post"], got["post"]
    # The bound docs/live.md states: other clients (fewer than 8 at once) add nothing to a scrape's time.
    assert got["while_slow"].startswith("HTTP/1.1 200 OK") and got["slow_elapsed"] < 0.5, got["slow_elapsed"]
    assert got["silent_eof"] == b"" and got["silent_closed_after"] < 2.6, got["silent_closed_after"]


def test_malformed_frames_are_named_drops(live, workdir):
    """Frames that are not for the router or not well formed are dropped by name, the counters balance, and the
    router goes on forwarding; SIGINT stops it as SIGTERM does."""
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, label="malformed")
    good = udp6("fc00::1", size=8, tag=1)
    other_mac = bytes.fromhex("020000000999") + good[6:]
    bad_type = good[:12] + b"\x12\x34" + good[14:]
    bad_version = good[:14] + bytes([0x40 | (good[14] & 0x0F)]) + good[15:]
    long_payload = good[:18] + (len(good) - 14 - 40 + 100).to_bytes(2, "big") + good[20:]
    try:
        got = xfer(live.s0, [other_mac, bad_type, bad_version, long_payload, good], live.d0, expect=1, timeout=1.0,
                   keep=with_marker)
        r.wait_rx(5)
    finally:
        final = r.stop(signal.SIGINT)
    assert len(got[live.d0.label]) == 1, got
    drops = final["drops"]
    assert drops.get("not_for_us") == 1 and drops.get("unsupported_ethertype") == 1, drops
    assert drops.get("ipv6_malformed") == 2, drops
    assert final["tx"] == 1 and final["balanced"], final


def test_sighup_reloads_only_a_valid_file(live, workdir):
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, label="hup")
    try:
        with open(r.conf, "a") as f:
            f.write("-6 route add fd00:56::/64 via fd00:2::2 dev r1\n")
        r.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while "fd00:56::/64" not in r.ctl("show", "routes").stdout and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "fd00:56::/64" in r.ctl("show", "routes").stdout
        with open(r.conf, "a") as f:
            f.write("-6 route add fd00:57::/64 via fd00:2::2 dev r1 bogus\n")
        r.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        routes = r.ctl("show", "routes").stdout
        assert "fd00:56::/64" in routes and "fd00:57::" not in routes
    finally:
        r.stop()
    assert "not reloaded" in r.stderr and "'bogus'" in r.stderr, r.stderr


@pytest.mark.parametrize("fanout,io", [("hash", "packet"), ("queue", "packet"), ("queue", "xdp")])
def test_two_workers_share_a_two_queue_veth(workdir, fanout, io):
    """Two workers on two-queue veths, sharing by flow hash or by receive queue (veth delivers a frame on the
    receive queue of the transmit queue the sender's kernel chose by flow; AF_XDP: one socket per queue): both get
    frames, every frame is forwarded once, and the counters balance per worker and in total."""
    try:
        t = LiveTopo("lq" + fanout[0] + io[0], queues=2)
    except NetnsError as e:
        pytest.fail(f"cannot build the two-queue topology: {e}", pytrace=False)
    try:
        t.lwt6_mode()
        r = LiveRouter(t.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--workers", "2", "--fanout", fanout, "--io", io],
                       label=f"mq-{fanout}-{io}")
        try:
            frames = [udp6(f"fc00::{i:x}", src=f"fd00:1::{(i * 7) % 200 + 1:x}", size=16, tag=i % 256)
                      for i in range(1, 401)]
            got = xfer(t.s0, frames, t.d0, expect=len(frames), timeout=3.0, keep=with_marker)
        finally:
            final = r.stop()
        assert len(got[t.d0.label]) == len(frames)
        assert final["tx"] == len(frames) and final["balanced"], final
        assert final["rx"] - noise(final) == len(frames), final
        assert len(final["workers"]) == 2 and final["io"] == "af_" + io
        for w in final["workers"]:
            assert w["tx"] > 0 and w["balanced"], final["workers"]
        assert sum(w["rx"] for w in final["workers"]) == final["rx"]
    finally:
        t.destroy()


def test_refusals(live, workdir):
    """Not root, unknown interface, a MAC that contradicts the system, kernel forwarding on, kernel addresses on an
    attached interface, a control socket in use: each refused with what to do."""
    live.lwt6_mode()
    sock = os.path.join(workdir, "refuse.sock")
    conf = os.path.join(workdir, "refuse.conf")

    def start(lines, *extra):
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return run_lwt6(live.rns, ["run", "-c", conf, "--control", sock, "--io", "packet"] + list(extra))

    # Not root: a copy of the binary where any user may run it (the build tree may be in a private directory).
    pub = tempfile.mkdtemp(prefix="lwt6-live-")
    try:
        os.chmod(pub, 0o755)
        shutil.copy(lwt6_bin(), pub)
        r = subprocess.run(["ip", "netns", "exec", live.rns, "setpriv", "--reuid=65534", "--regid=65534",
                            "--clear-groups", os.path.join(pub, "lwt6"), "run", "-c", conf, "--control", sock],
                           capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(pub)
    # No capability at all: refused before anything is opened, naming the one AF_PACKET needs; status 4 (lasting).
    assert r.returncode == 4 and "CAP_NET_RAW" in r.stderr and "lacks" in r.stderr, r.stderr
    r = start(["link add r0", "link add nosuch0"])
    assert r.returncode == 1 and "line 2" in r.stderr and "'nosuch0'" in r.stderr, r.stderr
    r = start(["link add r0 address 02:00:00:00:99:99"])
    assert r.returncode == 1 and "line 1" in r.stderr and "'02:00:00:00:99:99'" in r.stderr, r.stderr
    r = start(["link add r0 mtu 9000"])
    assert r.returncode == 1 and "'9000'" in r.stderr and "mtu 1500" in r.stderr, r.stderr
    with open(conf, "w") as f:
        f.write("link add r0\n")
    # AF_XDP needs a queue per worker: refused with --io xdp (nothing left attached), AF_PACKET with --io auto.
    r = run_lwt6(live.rns, ["run", "-c", conf, "--io", "xdp", "--workers", "2", "--control", sock])
    assert r.returncode == 1 and "--io xdp" in r.stderr and "r0 has 1 receive queue" in r.stderr, r.stderr
    assert xdp_programs(live.rns, {"r0", "r1"}) == set(), "an XDP program was left attached after a refusal"
    auto = LiveRouter(live.rns, "link add r0\n", workdir, args=["--workers", "2"], label="auto")
    final = auto.stop()
    assert final["io"] == "af_packet" and auto.stderr.count("AF_XDP not used (r0 has 1 receive queue") == 1, \
        auto.stderr
    live.topo.sysctl(live.r, "net.ipv6.conf.all.forwarding", 1)
    live.topo.sysctl(live.r, "net.ipv6.conf.r0.disable_ipv6", 0)
    try:
        r = start(["link add r0"])
        assert r.returncode == 1, r.stderr
        assert "sysctl -w net.ipv6.conf.all.forwarding=0" in r.stderr, r.stderr
        assert "sysctl -w net.ipv6.conf.r0.disable_ipv6=1" in r.stderr, r.stderr
    finally:
        live.lwt6_mode()
    assert not os.path.exists(sock)
    first = LiveRouter(live.rns, "link add r0\n", workdir, label="refuse")
    try:
        r = run_lwt6(live.rns, ["run", "-c", first.conf, "--control", first.sock])
        assert r.returncode == 1 and "in use" in r.stderr, r.stderr
        assert first.ctl("show", "stats").returncode == 0, "the running router was disturbed"
    finally:
        first.stop()


def test_testbed_a_ping_through_lwt6(workdir):
    """scripts/testbed.sh a: up, `lwt6 run` on its router, ping from the sender to the receiver through it (both
    ways through lwt6), SIGTERM, down: no namespace left."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    prefix = f"l6t-{os.getpid()}-tba-"
    env = dict(os.environ, LWT6_TESTBED_PREFIX=prefix, LWT6_TESTBED_DIR=os.path.join(workdir, "testbed-a"))
    script = os.path.join(root, "scripts", "testbed.sh")
    try:
        up = subprocess.run([script, "a", "up"], env=env, capture_output=True, text=True)
        assert up.returncode == 0, up.stderr
        conf = os.path.join(workdir, "testbed-a", "router.conf")
        with open(conf) as f:
            r = LiveRouter(prefix + "rtr", f.read(), workdir, label="testbed-a")
        try:
            ping = subprocess.run(["ip", "netns", "exec", prefix + "snd", "ping", "-c", "3", "-i", "0.2", "-W", "2",
                                   "fd00:2::2"], capture_output=True, text=True)
        finally:
            final = r.stop()
        assert ping.returncode == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
        assert final["tx"] >= 6 and final["balanced"], final
    finally:
        down = subprocess.run([script, "a", "down"], env=env, capture_output=True, text=True)
    assert down.returncode == 0, down.stderr
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in left, left


# The router without static neighbours (the differential cases' made-up fd00:2::5 keeps its line: nobody answers
# for it).
NO_NEIGH_BASE = [line for line in LIVE_BASE if not line.startswith("neigh add")]


def neigh_rows(r):
    res = r.ctl("show", "neigh", "-j")
    assert res.returncode == 0, res.stderr
    return {(n["dst"], n["dev"]): (n["lladdr"], n["state"][0]) for n in json.loads(res.stdout)}


def ping(ns, addr):
    return subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", addr],
                          capture_output=True, text=True, timeout=15)


def test_neighbours_resolved_live(live, workdir, kernel_outputs):
    """No static neighbour on the router: it answers pings (IPv6 and IPv4, resolving the sender by NDP and ARP),
    resolves both next hops of the differential cases by NDP and their output is byte-identical to the kernel
    router's; `show neigh` lists the learned entries beside the static one."""
    from ktpkt import MAC_S0 as s0mac
    live.lwt6_mode()
    for host, dev in ((live.s, "s0"), (live.d, "d0")):
        live.topo.ip(host, f"neigh flush dev {dev}")
    conf = [line for line in NO_NEIGH_BASE + CASES_CONFIG]
    r = LiveRouter(live.rns, "\n".join(conf) + "\n", workdir, args=["--io", "xdp"], label="neigh")
    try:
        assert neigh_rows(r) == {("fd00:2::5", "r1"): (MAC_D0, "PERMANENT")}
        p6 = ping(live.topo.name(live.s), "fd00:1::2")
        assert p6.returncode == 0, p6.stdout + p6.stderr
        p4 = ping(live.topo.name(live.s), "10.1.0.2")
        assert p4.returncode == 0, p4.stdout + p4.stderr
        ours = send_cases(live)
        rows = neigh_rows(r)
    finally:
        final = r.stop()
    compare_with_kernel(kernel_outputs, ours)
    assert rows[("fd00:1::1", "r0")][0] == s0mac and rows[("10.1.0.1", "r0")][0] == s0mac, rows
    assert rows[("fd00:2::2", "r1")] == (MAC_D0, "REACHABLE"), rows
    assert rows[("fd00:2::5", "r1")] == (MAC_D0, "PERMANENT"), rows
    assert final["solicitations_sent"] >= 2 and final["pending"] == 0 and final["balanced"], final


def ns_for(target):
    """A filter: multicast Neighbor Solicitations for `target` (RFC 4861 §4.3: ICMPv6 type 135, target at 8)."""
    t = ipaddress.IPv6Address(target).packed

    def keep(f):
        return len(f) >= 78 and f[12:14] == b"\x86\xdd" and f[20] == 58 and f[54] == 135 and f[62:78] == t \
            and f[0:2] == b"\x33\x33"
    return keep


def test_two_workers_send_one_solicitation_per_retransmission(workdir):
    """A next hop nobody answers, packets for it arriving on both receive queues (two flows' worth of frames, then
    more 0.4 s later): the kernel router sends three multicast solicitations, one a second; lwt6 with two workers
    (one per queue, both holding packets for it) sends the same three, not three per worker."""
    try:
        t = LiveTopo("lns", queues=2)
    except NetnsError as e:
        pytest.fail(f"cannot build the two-queue topology: {e}", pytrace=False)
    route = "-6 route add fd00:77::/64 via fd00:2::77 dev r1"
    keep = ns_for("fd00:2::77")
    frames = [udp6(f"fd00:77::{i:x}", src=f"fd00:1::{(i * 7) % 200 + 1:x}", size=16, tag=i) for i in range(1, 41)]

    def stimulus():
        a = xfer(t.s0, frames[:20], t.d0, timeout=0.4, keep=keep, noise=True)[t.d0.label]
        b = xfer(t.s0, frames[20:], t.d0, timeout=4.0, keep=keep, noise=True)[t.d0.label]
        return a + b
    try:
        t.kernel_mode(LIVE_BASE + [route])
        try:
            kernel = stimulus()
        finally:
            t.lwt6_mode()
        r = LiveRouter(t.rns, "\n".join(LIVE_BASE + [route]) + "\n", workdir,
                       args=["--workers", "2", "--io", "xdp"], label="ns-gate")
        try:
            ours = stimulus()
        finally:
            final = r.stop()
    finally:
        t.destroy()
    assert len(kernel) == 3, f"the kernel sent {len(kernel)} solicitations"
    assert all(w["rx"] - noise(w) > 0 for w in final["workers"]), "one worker got no frames: the test tests nothing"
    assert len(ours) == len(kernel), f"lwt6 with two workers sent {len(ours)} solicitations"
    assert final["solicitations_sent"] == 3 and final["balanced"], final
    # Each worker holds at most 16 packets for one next hop (the rest: neigh_queue_full).
    d = final["drops"]
    assert d.get("neigh_unresolved", 0) + d.get("neigh_queue_full", 0) == len(frames), d


def test_unresolvable_next_hops_keep_the_queue_bounded(live, workdir):
    """600 frames to 600 on-link addresses nobody answers for: the router solicits each, holds at most
    MAX_PENDING_NEIGHS (256) next hops' packets and drops the rest by name (`neigh_queue_full`); after the three
    solicitations (3 s) the held ones are dropped as `neigh_unresolved`. The counters balance (pending included)
    at every step."""
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(NO_NEIGH_BASE) + "\n", workdir, args=["--io", "xdp"], label="flood")
    try:
        frames = [udp6(f"fd00:2::1:{i:x}", size=16, tag=i % 256) for i in range(600)]
        xfer(live.s0, frames, live.d0, timeout=0.5, keep=with_marker)
        r.wait_rx(600)
        mid = r.stats()
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and r.stats()["pending"]:
            time.sleep(0.2)
    finally:
        final = r.stop()
    assert mid["balanced"] and 0 < mid["pending"] <= 256, mid
    assert mid["drops"].get("neigh_queue_full", 0) == 600 - mid["pending"], mid["drops"]
    assert final["pending"] == 0 and final["balanced"], final
    assert final["drops"].get("neigh_unresolved") == mid["pending"], final["drops"]
    assert final["solicitations_sent"] >= 3 * mid["pending"], final


def test_kernel_routes_followed_live(live, workdir):
    """`lwt6 run --kernel-routes` (AF_XDP; the kernel needs IPv6 on the interfaces to hold routes through them, and
    sees none of the frames XDP redirects): a seg6 route present at start (the dump) is used; a plain and a seg6
    `encap` route added with `ip route` take effect while it runs, and their removal too (`no_route`)."""
    live.lwt6_mode()
    rns = live.rns

    def ip6(*words):
        subprocess.run(["ip", "-n", rns, "-6", "route"] + list(words), check=True, capture_output=True)

    def through(dst, tag):
        return xfer(live.s0, [udp6(dst, size=16, tag=tag)], live.d0, expect=1, timeout=0.3,
                    keep=with_marker)[live.d0.label]

    def wait_for(dst, tag, want):
        deadline = time.monotonic() + 3
        while True:
            got = through(dst, tag)
            if bool(got) == want or time.monotonic() > deadline:
                return got

    try:
        for i in ("r0", "r1"):
            live.topo.sysctl(live.r, f"net.ipv6.conf.{i}.disable_ipv6", 0)
        ip6("add", "fd00:97::/64", "encap", "seg6", "mode", "inline", "segs", "fc00::1", "dev", "r1")
        r = LiveRouter(rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "xdp", "--kernel-routes"],
                       label="kroutes")
        try:
            got = through("fd00:97::1", 1)
            # inline: the SRH (43) carries the UDP datagram itself (17)
            assert len(got) == 1 and got[0][20] == 43 and got[0][54] == 17 and \
                socket.inet_ntop(socket.AF_INET6, got[0][38:54]) == "fc00::1", [g.hex() for g in got]
            assert through("fd00:99::1", 2) == [] and through("fd00:98::1", 3) == []
            ip6("add", "fd00:99::/64", "encap", "seg6", "mode", "encap", "segs", "fc00::1,fc00::2", "dev", "r1")
            ip6("add", "fd00:98::/64", "via", "fd00:2::2", "dev", "r1", "onlink")
            got = wait_for("fd00:99::1", 4, True)
            # encap: an outer header to the first segment, the SRH carrying the original packet (41)
            assert len(got) == 1 and got[0][20] == 43 and got[0][54] == 41 and \
                socket.inet_ntop(socket.AF_INET6, got[0][38:54]) == "fc00::1", [g.hex() for g in got]
            got = wait_for("fd00:98::1", 5, True)
            assert len(got) == 1 and got[0][20] == 17 and got[0][21] == 63 and \
                socket.inet_ntop(socket.AF_INET6, got[0][38:54]) == "fd00:98::1", [g.hex() for g in got]
            ip6("del", "fd00:99::/64")
            ip6("del", "fd00:98::/64")
            assert wait_for("fd00:99::1", 6, False) == [] and wait_for("fd00:98::1", 7, False) == []
        finally:
            final = r.stop()
        assert final["balanced"] and final["drops"].get("no_route", 0) >= 4, final
        assert "kernel route" in r.stderr, r.stderr
    finally:
        live.lwt6_mode()


def test_bench_live_measures_the_router_cpu(workdir):
    """`lwt6 bench live`, two short interleaved rounds: the receiver's XDP sink has NAPI threads of its own (off
    the router's CPU), every router (the kernel, lwt6 with the XDP tier on and off) delivered frames at overload,
    the router CPU's time per packet is measured, and with the tier on the driver forwarded frames itself."""
    require_root()
    out = subprocess.run([lwt6_bin(), "bench", "live", "--cases", "plain", "--workers", "1", "--rounds", "2",
                          "--steps", "0", "--overload-ms", "300", "-j"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["settings"]["receiver"] == "xdp"
    assert doc["settings"]["receiver_threads"] >= 1
    rows = doc["results"]
    assert sorted((r["router"], r["round"], r.get("xdp_tier", "")) for r in rows) == [
        ("kernel", 1, ""), ("kernel", 2, ""), ("lwt6", 1, "off"), ("lwt6", 1, "on"), ("lwt6", 2, "off"),
        ("lwt6", 2, "on")]
    for r in rows:
        if r.get("xdp_tier") == "on":
            assert r["xdp_forwarded"] > 0, r
        elif r["router"] == "lwt6":
            assert r["xdp_forwarded"] is None, r
        assert r["delivered_at_max"] > 0, r
        assert r["cpu_at_max"]["router_cpu_ns_per_packet"] > 0, r
    overlap = subprocess.run([lwt6_bin(), "bench", "live", "--receiver-cpus", "1", "--router-cpus", "1"],
                             capture_output=True, text=True, timeout=60)
    assert overlap.returncode != 0 and "overlap" in overlap.stderr


def stat_mode(path):
    st = os.lstat(path)
    return st.st_mode & 0o7777, st.st_gid


def test_control_path_is_replaced_only_when_a_stale_socket(live, workdir):
    """`--control` naming a regular file (or a directory, a symbolic link) is refused and left intact; a socket
    nobody listens on (a router that died) is replaced; the socket is made 0660 with the router's group under
    umask 000 and 022."""
    live.lwt6_mode()
    conf = os.path.join(workdir, "ctlpath.conf")
    with open(conf, "w") as f:
        f.write("link add r0\n")
    victim = os.path.join(workdir, "victim.sock")
    with open(victim, "w") as f:
        f.write("precious\n")
    r = run_lwt6(live.rns, ["run", "-c", conf, "--control", victim, "--io", "packet"])
    assert r.returncode == 1 and "a regular file" in r.stderr and victim in r.stderr, r.stderr
    with open(victim) as f:
        assert f.read() == "precious\n", "the regular file at --control was changed"
    d = os.path.join(workdir, "adir.sock")
    os.mkdir(d)
    r = run_lwt6(live.rns, ["run", "-c", conf, "--control", d, "--io", "packet"])
    assert r.returncode == 1 and "a directory" in r.stderr and os.path.isdir(d), r.stderr
    # A stale socket: bound, then closed (its file stays).
    stale = os.path.join(workdir, "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(stale)
    s.close()
    link = os.path.join(workdir, "link.sock")
    os.symlink(stale, link)
    r = run_lwt6(live.rns, ["run", "-c", conf, "--control", link, "--io", "packet"])
    assert r.returncode == 1 and "a symbolic link" in r.stderr and os.path.islink(link), r.stderr
    old = os.umask(0o000)
    try:
        rt = LiveRouter(live.rns, "link add r0\n", workdir, label="stale")
    finally:
        os.umask(old)
    try:
        assert rt.sock == stale
        assert stat_mode(rt.sock) == (0o660, os.getgid()), oct(stat_mode(rt.sock)[0])
    finally:
        rt.stop()
    old = os.umask(0o022)
    try:
        rt = LiveRouter(live.rns, "link add r0\n", workdir, label="umask022")
    finally:
        os.umask(old)
    try:
        assert stat_mode(rt.sock) == (0o660, os.getgid()), oct(stat_mode(rt.sock)[0])
    finally:
        rt.stop()


UNPRIV_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"show stats\\n")
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
"""


def test_control_socket_checks_peer_credentials(live, workdir):
    """`--control-group G`: the socket's group is G; uid 65534 with G among its groups is served, without it
    refused in one line and the refusal counted. The file is opened to all (0666) for the test, so that the
    peer-credential check alone stands between the client and the router."""
    live.lwt6_mode()
    group = f"lwt6t{os.getpid() % 100000}"
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    pub = tempfile.mkdtemp(prefix="lwt6-ctl-")
    try:
        os.chmod(pub, 0o755)
        gid = int(subprocess.run(["getent", "group", group], capture_output=True, text=True,
                                 check=True).stdout.split(":")[2])
        rt = LiveRouter(live.rns, "link add r0\n", pub, args=["--control-group", group], label="creds")
        try:
            assert stat_mode(rt.sock) == (0o660, gid), stat_mode(rt.sock)
            # Open the file itself to anyone: the credentials check must still refuse.
            os.chmod(rt.sock, 0o666)

            def client(*groups):
                g = ["--groups", ",".join(map(str, groups))] if groups else ["--clear-groups"]
                return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534"] + g +
                                      ["python3", "-c", UNPRIV_CLIENT, rt.sock],
                                      capture_output=True, text=True, timeout=10)
            out = client()
            assert out.stdout.startswith("error: permission denied") and out.stdout.count("\n") == 1, out
            out = client(gid)
            assert out.stdout.startswith("ok\n"), out
            st = rt.stats()
            assert st["control_refused"] == 1, st.get("control_refused")
        finally:
            rt.stop()
        assert "control socket: refused" in rt.stderr, rt.stderr
    finally:
        shutil.rmtree(pub, ignore_errors=True)
        subprocess.run(["groupdel", group], capture_output=True)


def test_sigterm_during_a_large_batch_exits_within_2s(live, workdir):
    """SIGTERM while an 800,000-line batch is applied: the router exits within 2 s, the client is answered
    `interrupted` (the batch was not applied: a transaction undone)."""
    live.lwt6_mode()
    rt = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "packet"], label="bigbatch")
    lines = "".join(f"-6 route add fd10:{i >> 16:x}:{i & 0xffff:x}::/48 via fd00:2::2 dev r1\n"
                    for i in range(800_000))
    reply = {}

    def send():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(rt.sock)
        s.sendall(b"batch\n" + lines.encode())
        s.shutdown(socket.SHUT_WR)
        reply["sent"] = time.monotonic()
        reply["text"] = read_to_end(s)
    t = threading.Thread(target=send)
    t.start()
    try:
        while "sent" not in reply and t.is_alive():
            time.sleep(0.01)
        time.sleep(0.5)
        assert "text" not in reply, "the batch was applied before the signal: the test tests nothing"
        t0 = time.monotonic()
        rt.proc.send_signal(signal.SIGTERM)
        rt.proc.wait(timeout=10)
        took = time.monotonic() - t0
    finally:
        t.join(timeout=10)
        rt.kill()
    assert took < 2.0, f"lwt6 run took {took:.1f} s to exit after SIGTERM"
    assert reply.get("text", "").startswith("error: interrupted"), reply.get("text")


def test_kernel_multipath_delete_logs_del(live, workdir):
    """`--kernel-routes`: a route made multipath (`ip route append`), which lwt6 does not take, then deleted
    next hop by next hop: the multipath route (which drops: `multipath_route`) is said once; no line says a
    removal was an addition, nor that a removal failed (tests/kernel/test_kernel_mirror.py compares the tables themselves)."""
    live.lwt6_mode()
    rns = live.rns

    def ip6(*words):
        subprocess.run(["ip", "-n", rns, "-6", "route"] + list(words), check=True, capture_output=True)
    try:
        for i in ("r0", "r1"):
            live.topo.sysctl(live.r, f"net.ipv6.conf.{i}.disable_ipv6", 0)
        r = LiveRouter(rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "xdp", "--kernel-routes"],
                       label="kmp")
        try:
            ip6("add", "fd00:9c::/64", "via", "fd00:2::2", "dev", "r1", "onlink")
            time.sleep(0.3)
            ip6("append", "fd00:9c::/64", "via", "fd00:2::3", "dev", "r1", "onlink")
            time.sleep(0.3)
            ip6("del", "fd00:9c::/64", "via", "fd00:2::3", "dev", "r1")
            time.sleep(0.3)
            ip6("del", "fd00:9c::/64")
            time.sleep(0.3)
        finally:
            r.stop()
        lines = [x for x in r.stderr.splitlines() if "fd00:9c::/64" in x]
        assert sum("kernel multipath route fd00:9c::/64" in x for x in lines) == 1, r.stderr
        assert not any("no such route" in x or "not applied" in x for x in lines), r.stderr
    finally:
        live.lwt6_mode()
