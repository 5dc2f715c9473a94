"""10,000 route changes while about 1 Mpps flows through the router with the XDP tier on (docs/xdp.md, *Route
changes*), against the kernel router in the same topology with the same traffic and the same changes.

Two senders (`lwt6 gen --via xdp`, 500 kpps each, 64 flows each) send to two routes that never change: a plain
route and a seg6 encap route whose SID routes through the prefix the changes happen under. The changes add,
replace and remove 4,000 routes next to them (fc00:0:1:N::/64, under the same fc00::/16), in batches of 500
lines over the control socket (for the kernel: `ip -batch`). Then:

- nothing the kernel router forwards is lost by lwt6: the router drops none of the flows' frames, every frame it
  received it sent, and the receiver lost no larger share of what was sent than with the kernel router;
- the counters balance per tier (the driver: received = forwarded + to the worker; the worker and the router's
  total: received = sent + dropped + for the router + waiting), from `ctl show stats -j` and the final report;
- the driver followed the changes from the changes (not from whole installations);
- the routes changed took effect in the driver: probes to a replaced, a replaced-back and a removed route leave
  byte for byte as the kernel router sends them, forwarded by the driver.

Run it under `flock /tmp/lwt6-netns.lock` when other namespace tests may run.
"""
import json
import subprocess
import threading
import time

import pytest

from ktlive import LIVE_BASE, LiveRouter, control_request, live_topo
from ktlwt6 import lwt6_bin
from ktpkt import compare_frames, udp6, with_marker
from ktnet import sysctl_set, xfer

# Both senders unpaced on CPU 0 (as `lwt6 bench live` places its sender), the router's NAPI and threads where
# the scheduler puts them: about 1 Mpps offered on an idle 2-vCPU machine, 0.6 Mpps on a busy one; a sender on
# each CPU would take the router's CPU and measure the scheduler instead.
RATE = 0
SECONDS = 8             # of traffic per router
BATCH = 500
N_ADD, N_REPLACE, N_DEL = 4000, 3000, 3000     # 10,000 changes
SID = "fc00::2"
STEADY = [
    "-6 route add fc00:0:0:1::/64 via fd00:2::2 dev r1",
    f"-6 route add 2001:db8:a::/48 encap seg6 mode encap segs {SID} dev r1",
]
FLOWS = ["fc00:0:0:1::1", "2001:db8:a::1"]


def net(i):
    return f"fc00:0:1:{i:x}::/64"


def encap(i):
    return f"{net(i)} encap seg6 mode encap segs {SID} dev r1"


def plain(i):
    return f"{net(i)} via fd00:2::2 dev r1"


def changes():
    """The 10,000 changes as `route ...` lines (without `-6`), in batches: added (even N encap, odd N plain),
    the first 3,000 replaced by the other kind, the last 3,000 removed."""
    lines = [f"route add {encap(i) if i % 2 == 0 else plain(i)}" for i in range(N_ADD)]
    lines += [f"route replace {plain(i) if i % 2 == 0 else encap(i)}" for i in range(N_REPLACE)]
    lines += [f"route del {net(i)}" for i in range(N_ADD - N_DEL, N_ADD)]
    assert len(lines) == 10_000
    return [lines[i:i + BATCH] for i in range(0, len(lines), BATCH)]


# Probes after the changes: fc00:0:1:0:: (added encap, replaced plain), fc00:0:1:1:: (added plain, replaced
# encap), fc00:0:1:bb8:: (N 3000: added encap, removed: the covering fc00::/16), and the two steady routes.
PROBES = ["fc00:0:1:0::7", "fc00:0:1:1::7", f"fc00:0:1:{3000:x}::7"] + FLOWS


@pytest.fixture(scope="module")
def topo(request):
    t = live_topo(request, "xch")
    d = t.topo.name(t.d)
    # The receiver's stack drops every frame at once (IPv6 off); GRO on d0 lets r1 take XDP-redirected frames,
    # GRO on r0 lets the sender's XDP frames in while the kernel routes (lwt6 attaches its program there).
    sysctl_set(d, "net.ipv6.conf.d0.disable_ipv6", 1)
    for ns, i in ((d, "d0"), (t.rns, "r0")):
        subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", i, "gro", "on"], check=True, capture_output=True)
    return t


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("xchurn"))


def rx_packets(t):
    out = subprocess.run(["ip", "netns", "exec", t.topo.name(t.d), "cat", "/sys/class/net/d0/statistics/rx_packets"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def flood(t, apply_batch):
    """Both senders for SECONDS while the batches are applied with `apply_batch` (from 1 s in, spread over the
    next 5 s): (sent, received by d0)."""
    gens = []
    for dst in FLOWS:
        frame = udp6(dst, hlim=64, size=16).hex()
        gens.append(subprocess.Popen(
            ["ip", "netns", "exec", t.topo.name(t.s), str(lwt6_bin()), "gen", "--dev", "s0", "--frame", frame,
             "--rate", str(RATE), "--duration-ms", str(SECONDS * 1000), "--flows", "64", "--via", "xdp",
             "--cpus", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    before = rx_packets(t)
    try:
        time.sleep(1)
        batches = changes()
        for b in batches:
            apply_batch(b)
            time.sleep(5 / len(batches))
        sent = 0
        for g in gens:
            out, err = g.communicate(timeout=SECONDS + 20)
            assert g.returncode == 0, err
            sent += json.loads(out)["sent"]
    finally:
        for g in gens:
            if g.poll() is None:
                g.kill()
                g.wait()
    time.sleep(0.3)
    return sent, rx_packets(t) - before


def probe(t):
    """Each probe alone; the frames d0 got for it."""
    out = []
    for i, dst in enumerate(PROBES):
        got = xfer(t.s0, [udp6(dst, hlim=64, size=40, tag=i)], [t.d0], timeout=0.5, keep=with_marker)
        out.append(got[t.d0.label])
    return out


def test_route_changes_under_1mpps_with_the_xdp_tier(topo, workdir):
    t = topo
    # The kernel router: the same routes, traffic and changes.
    t.kernel_mode(LIVE_BASE + STEADY)
    try:
        def kernel_batch(lines):
            t.topo.batch(t.r, lines)
        k_sent, k_got = flood(t, kernel_batch)
        kernel = probe(t)
    finally:
        t.lwt6_mode()
    assert k_sent > 0 and all(len(p) == 1 for p in kernel), (k_sent, kernel)

    r = LiveRouter(t.rns, "\n".join(LIVE_BASE + STEADY) + "\n", workdir,
                   args=["--io", "xdp", "--xdp-tier", "on"], label="xchurn")
    replies = []
    try:
        def lwt6_batch(lines):
            _, reply = control_request(r.sock, "batch\n" + "\n".join("-6 " + x for x in lines), timeout=30)
            replies.append(reply.split("\n", 1)[0])
        l_sent, l_got = flood(t, lwt6_batch)
        quiet = r.stats()
        before = quiet["xdp"]
        ours = probe(t)
        after = r.stats()["xdp"]
    finally:
        final = r.stop()
    assert replies == ["ok"] * len(changes()), replies

    # The routes changed took effect, in the driver: the kernel's bytes, forwarded by the driver.
    for dst, k, o in zip(PROBES, kernel, ours):
        compare_frames(k, o, f"probe to {dst} after the changes")
    assert after["sent"] - before["sent"] == len(PROBES), (before, after)
    kinds = {k: after["by_kind"].get(k, 0) - before["by_kind"].get(k, 0) for k in ("forward", "seg6_encap")}
    assert kinds == {"forward": 3, "seg6_encap": 2}, kinds

    # The driver followed the changes from the changes.
    inst = quiet["xdp"]["last_install"]
    assert inst["installs_from_changes"] >= len(changes()) // 2 and inst["error"] is None, inst

    # Counters balance, per tier and in total (ctl show stats -j while quiet, and the final report).
    for doc in (quiet, final):
        x = doc["xdp"]
        assert x["received"] == x["sent"] + x["to_worker"], x
        tot = x["total"]
        assert tot["rx"] == tot["tx"] + tot["dropped"] + tot["consumed"] + tot["pending"] and tot["balanced"], tot
        assert doc["balanced"], doc
    # Nothing of the flows dropped by the router (the kernel router forwards every one of them): its only drops
    # are the sender's kernel's own multicast (MLD, router solicitations).
    drops = {k: v for k, v in final["drops"].items() if k != "multicast_destination"}
    assert drops == {}, drops
    tot = quiet["xdp"]["total"]
    assert tot["rx"] - tot["consumed"] - tot["pending"] - tot["dropped"] == tot["tx"], tot
    # The driver forwarded the flows (the worker only the odd frame: noise, a frame during a trace).
    assert quiet["xdp"]["sent"] >= 0.9 * quiet["xdp"]["received"], quiet["xdp"]
    # End to end, with the kernel router as the reference: lwt6 lost no larger share of what was sent.
    k_loss = 1 - k_got / k_sent
    l_loss = 1 - l_got / max(l_sent, 1)
    assert l_loss <= k_loss + 0.01, (f"lwt6 lost {l_loss:.2%} of {l_sent} frames, the kernel router "
                                     f"{k_loss:.2%} of {k_sent}")
    print(f"kernel router: sent {k_sent}, delivered {k_got} ({k_loss:.2%} lost); lwt6 with the XDP tier: sent "
          f"{l_sent}, delivered {l_got} ({l_loss:.2%} lost); driver forwarded {quiet['xdp']['sent']}, to the "
          f"worker {quiet['xdp']['to_worker']}; installs from changes {inst['installs_from_changes']}, whole "
          f"{inst['installs_whole']}")
