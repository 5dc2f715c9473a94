"""`lwt6 run --kernel-routes` against the kernel's own main table: after real `ip route` commands (single ones,
`ip -batch` bursts, flushes, overruns of the notification socket, random sequences), lwt6's mirrored routes are
what `ip -j -6 route show table main` lists, within a settle of 1 s. The oracle is the kernel's table itself;
routes lwt6 cannot forward with as the kernel does (blackhole, unreachable, prohibit, multipath) must be absent
from lwt6's table and counted as skipped (docs/live.md, *Kernel routes*)."""
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from ktlive import LIVE_BASE, live_topo, LiveRouter, LiveTopo
from ktnet import NetnsError, require_root
from ktpkt import udp6, with_marker

SETTLE = 1.0  # seconds: the mirror equals the kernel's table within this after the last command


@pytest.fixture(scope="module")
def live(request):
    return live_topo(request, "km")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kmirror"))


@pytest.fixture
def router(live, workdir, request):
    """lwt6 with --kernel-routes in the router namespace (IPv6 on r0 / r1 so that the kernel holds routes through
    them); the kernel's test routes removed afterwards."""
    live.lwt6_mode()
    for i in ("r0", "r1"):
        live.topo.sysctl(live.r, f"net.ipv6.conf.{i}.disable_ipv6", 0)
    extra = getattr(request, "param", [])
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE + extra) + "\n", workdir,
                   args=["--io", "xdp", "--kernel-routes"], label=f"km{os.getpid()}")
    yield r
    try:
        if r.proc.poll() is None:
            r.final = r.stop()
    finally:
        r.kill()
        for root in ("2001:db8::/32", "fd00:9c::/64", "fd00:9d::/64", "fc00::/16", "fc00:9::/32"):
            ip(live, ["-6", "route", "flush", "root", root], check=False)
        live.lwt6_mode()


def ip(live, words, check=True, stdin=None):
    r = subprocess.run(["ip", "-n", live.rns] + words, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"ip {' '.join(words)}: {r.stderr.strip()}")
    return r


def prefix6(dst):
    """An IPv6 prefix as (canonical text, address as an integer with the host bits cleared, length), or None
    for an IPv4 one. Built on inet_pton/inet_ntop: the polls below parse 10,000 routes each, and `ipaddress`
    takes close to a second for them on a loaded machine, a delay the settle bound would charge to lwt6."""
    addr, _, plen = ("::/0" if dst == "default" else dst).partition("/")
    if ":" not in addr:
        return None
    plen = int(plen or 128)
    n = int.from_bytes(socket.inet_pton(socket.AF_INET6, addr), "big")
    n &= ((1 << 128) - 1) ^ ((1 << (128 - plen)) - 1)
    return f"{socket.inet_ntop(socket.AF_INET6, n.to_bytes(16, 'big'))}/{plen}", n, plen


def net(dst):
    p = prefix6(dst)
    return p[0] if p else str(ipaddress.ip_network(dst, strict=False))


def kernel_table(live, root):
    """The kernel's main-table IPv6 routes under `root`: (what lwt6 must hold: {(dst, metric): (type, gateway, dev,
    encap)} — blackhole / unreachable / prohibit without gateway (on `dev lo`), a multipath route as type
    `multipath` —, keys lwt6 must not hold: several routes of one prefix and metric)."""
    out = ip(live, ["-j", "-6", "route", "show", "table", "main", "root", root]).stdout
    by_key = {}
    for r in json.loads(out or "[]"):
        by_key.setdefault((net(r["dst"]), r.get("metric", 1024)), []).append(r)
    want, skipped = {}, set()
    for k, rs in by_key.items():
        r = rs[0]
        kind = "multipath" if "nexthops" in r else r.get("type", "unicast")
        if len(rs) > 1:
            skipped.add(k)
        elif kind == "unicast":
            want[k] = (kind, r.get("gateway"), r.get("dev"), r.get("encap"))
        elif kind == "multipath":
            want[k] = (kind, None, None, None)
        else:
            # iproute2 shows an IPv6 reject route on `dev lo`; so does lwt6.
            want[k] = (kind, None, r.get("dev"), None)
    return want, skipped


def lwt6_table(router, root):
    r = router.ctl("show", "routes", "-j")
    assert r.returncode == 0, r.stderr
    _, top, top_len = prefix6(root)
    mask = ((1 << 128) - 1) ^ ((1 << (128 - top_len)) - 1)
    got = {}
    for x in json.loads(r.stdout):
        if x.get("table", "main") != "main":
            continue
        p = prefix6(x["dst"])
        if p and p[2] >= top_len and p[1] & mask == top:
            got[(p[0], x.get("metric"))] = (x.get("type", "unicast"), x.get("gateway"), x.get("dev"),
                                              x.get("encap"))
    return got


def mirror_equal(live, router, root, settle=SETTLE):
    """Waits until lwt6's routes under `root` are the kernel's (the kernel's table is read once: the commands
    have returned): a `show routes` asked at most `settle` seconds after the call must answer the kernel's
    table. Returns (when the equal table was asked for, when it was answered), the kernel's forwarding routes
    and the keys lwt6 must not hold."""
    t0 = time.monotonic()
    want = None
    while True:
        asked = time.monotonic() - t0
        got = lwt6_table(router, root)
        answered = time.monotonic() - t0
        if want is None:
            want, dropped = kernel_table(live, root)
        if got == want:
            assert asked <= settle, f"lwt6 equalled the kernel's table only {asked:.2f} s after the commands"
            return (round(asked, 3), round(answered, 3)), want, dropped
        if asked > settle:
            missing = {k: v for k, v in want.items() if got.get(k) != v}
            extra = {k: v for k, v in got.items() if k not in want}
            raise AssertionError(f"after {settle} s lwt6 differs from the kernel under {root}: kernel {len(want)} "
                                 f"routes, lwt6 {len(got)}; missing or different {list(missing.items())[:5]} "
                                 f"({len(missing)}), extra {list(extra.items())[:5]} ({len(extra)}); "
                                 f"not to be held {len(dropped)}; "
                                 f"mirror {router.stats().get('kernel_routes')}")
        time.sleep(0.02)


def through(live, dst, tag):
    from ktnet import xfer
    return xfer(live.s0, [udp6(dst, size=16, tag=tag)], live.d0, expect=1, timeout=0.3,
                keep=with_marker)[live.d0.label]


def test_replace_to_blackhole_then_del(live, router):
    """A forwarding route replaced by a blackhole drops at once (`blackhole_route`); `ip route del` of the
    blackhole then leaves nothing in either table; the same through a multipath route (the prefix drops,
    `multipath_route`, said once in the log)."""
    ip(live, ["-6", "route", "add", "fd00:9c::/64", "via", "fd00:2::2", "dev", "r1", "onlink"])
    mirror_equal(live, router, "fd00:9c::/64")
    assert len(through(live, "fd00:9c::1", 1)) == 1
    ip(live, ["-6", "route", "replace", "blackhole", "fd00:9c::/64"])
    _, want, _ = mirror_equal(live, router, "fd00:9c::/64")
    assert want == {("fd00:9c::/64", 1024): ("blackhole", None, "lo", None)}
    assert through(live, "fd00:9c::1", 2) == []
    st = router.stats()
    assert st["kernel_routes"]["dropping"] == 1 and st["kernel_routes"]["skipped"] == 0, st["kernel_routes"]
    assert st["drops"].get("blackhole_route") == 1, st["drops"]
    ip(live, ["-6", "route", "del", "fd00:9c::/64"])
    _, want, _ = mirror_equal(live, router, "fd00:9c::/64")
    assert want == {}
    assert router.stats()["kernel_routes"]["dropping"] == 0
    # multipath: the same, through a replacement
    ip(live, ["-6", "route", "add", "fd00:9c::/64", "via", "fd00:2::2", "dev", "r1", "onlink"])
    mirror_equal(live, router, "fd00:9c::/64")
    ip(live, ["-6", "route", "replace", "fd00:9c::/64", "nexthop", "via", "fd00:2::2", "dev", "r1", "onlink",
              "nexthop", "via", "fd00:2::3", "dev", "r1", "onlink"])
    _, want, _ = mirror_equal(live, router, "fd00:9c::/64")
    assert want == {("fd00:9c::/64", 1024): ("multipath", None, None, None)}
    assert through(live, "fd00:9c::1", 3) == []
    assert router.stats()["drops"].get("multipath_route") == 1
    ip(live, ["-6", "route", "del", "fd00:9c::/64"])
    mirror_equal(live, router, "fd00:9c::/64")
    final = router.stop()
    router.final = final
    lines = [x for x in router.stderr.splitlines() if "fd00:9c::/64" in x]
    assert sum("kernel multipath route fd00:9c::/64" in x for x in lines) == 1, router.stderr
    assert not any("not mirrored" in x or "not applied" in x for x in lines), router.stderr
    assert final["balanced"], final


def test_configured_route_wins(live, router):
    """The configuration's `fc00::/16 via fd00:2::2` (metric 1024) and a kernel route of the same prefix and
    metric via fd00:2::3: the configured one is used; the kernel's delete never removes it; when the configured
    one goes (`ctl route del`), the kernel's is installed; `ctl route add` takes the prefix back."""
    def fc00():
        return lwt6_table(router, "fc00::/16").get(("fc00::/16", 1024))

    assert fc00() == ("unicast", "fd00:2::2", "r1", None)
    ip(live, ["-6", "route", "add", "fc00::/16", "via", "fd00:2::3", "dev", "r1", "onlink"])
    time.sleep(0.3)
    assert fc00() == ("unicast", "fd00:2::2", "r1", None)
    assert router.stats()["kernel_routes"]["shadowed"] == 1
    ip(live, ["-6", "route", "del", "fc00::/16"])
    time.sleep(0.3)
    assert fc00() == ("unicast", "fd00:2::2", "r1", None), "a kernel delete removed the configured route"
    assert router.stats()["kernel_routes"]["shadowed"] == 0
    ip(live, ["-6", "route", "add", "fc00::/16", "via", "fd00:2::3", "dev", "r1", "onlink"])
    time.sleep(0.3)
    r = router.ctl("route", "del", "fc00::/16")
    assert r.returncode == 0, r.stdout + r.stderr
    assert fc00() == ("unicast", "fd00:2::3", "r1", None), "the kernel's route was not restored"
    r = router.ctl("route", "add", "fc00::/16", "via", "fd00:2::2", "dev", "r1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert fc00() == ("unicast", "fd00:2::2", "r1", None)
    r = router.ctl("route", "replace", "fc00::/16", "via", "fd00:2::2", "dev", "r1", "mtu", "1400")
    assert r.returncode == 0, r.stdout + r.stderr
    ip(live, ["-6", "route", "del", "fc00::/16"])
    time.sleep(0.3)
    assert fc00() == ("unicast", "fd00:2::2", "r1", None)
    r = router.ctl("route", "del", "fc00::/16")
    assert r.returncode == 0, r.stdout + r.stderr
    assert fc00() is None


def test_ctl_reject_routes(live, router):
    """`ctl route add|replace|del` with a route type (issue 24): the configured blackhole becomes an unreachable
    route and goes, shown as `ip -j route show` shows such a route (`"type"`, `dev lo`, no gateway)."""
    def at():
        return lwt6_table(router, "fd00:9e::/64").get(("fd00:9e::/64", 1024))

    r = router.ctl("route", "add", "blackhole", "fd00:9e::/64")
    assert r.returncode == 0, r.stdout + r.stderr
    assert at() == ("blackhole", None, "lo", None)
    r = router.ctl("route", "replace", "unreachable", "fd00:9e::/64")
    assert r.returncode == 0, r.stdout + r.stderr
    assert at() == ("unreachable", None, "lo", None)
    r = router.ctl("route", "add", "throw", "fd00:9f::/64")
    assert r.returncode != 0 and "throw" in r.stdout + r.stderr, r.stdout + r.stderr
    r = router.ctl("route", "del", "fd00:9e::/64")
    assert r.returncode == 0, r.stdout + r.stderr
    assert at() is None


def batch_adds(n, start=0):
    return "".join(f"route add 2001:db8:{i:x}::/48 dev r1\n" for i in range(start, start + n))


def test_batches_flushes_and_overruns(live, router):
    """Three rounds of 10,000 adds in one `ip -batch` and a flush, then 10,000 adds, while a stream goes to an
    unchanged kernel route (fd00:9d::/64): the mirror equals the kernel's table after each step, every frame of the
    stream is delivered (no `no_route` during the re-dumps), and a burst while lwt6's control thread is stopped
    (SIGSTOP: the notification socket overflows for certain) is recovered by a re-dump."""
    ip(live, ["-6", "route", "add", "fd00:9d::/64", "via", "fd00:2::2", "dev", "r1", "onlink"])
    mirror_equal(live, router, "fd00:9d::/64")
    before = router.stats()
    stop = threading.Event()
    sent = [0]

    def stream():
        frame = udp6("fd00:9d::1", size=16, tag=9)
        while not stop.is_set():
            live.s0.send(frame)
            sent[0] += 1
            time.sleep(0.002)
    live.d0.drain()
    received = [0]

    def receive():
        import select
        quiet_until = None
        while True:
            if stop.is_set() and quiet_until is None:
                quiet_until = time.monotonic() + 0.3
            if quiet_until is not None and time.monotonic() > quiet_until:
                return
            if not select.select([live.d0.sock], [], [], 0.05)[0]:
                continue
            try:
                while True:
                    f, addr = live.d0.sock.recvfrom(65535)
                    if addr[2] != 4 and with_marker(f) and len(f) > 54 and f[38:40] == b"\xfd\x00":
                        received[0] += 1
            except BlockingIOError:
                pass
    threads = [threading.Thread(target=stream), threading.Thread(target=receive)]
    for t in threads:
        t.start()
    settles = []
    try:
        for _ in range(3):
            ip(live, ["-batch", "-"], stdin=batch_adds(10000))
            settles.append(mirror_equal(live, router, "2001:db8::/32")[0])
            ip(live, ["-6", "route", "flush", "root", "2001:db8::/32"])
            settles.append(mirror_equal(live, router, "2001:db8::/32")[0])
        ip(live, ["-batch", "-"], stdin=batch_adds(10000))
        took, want, _ = mirror_equal(live, router, "2001:db8::/32")
        settles.append(took)
        assert len(want) == 10000
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
    after = router.stats()
    assert after["drops"].get("no_route", 0) == before["drops"].get("no_route", 0), after["drops"]
    assert sent[0] > 100 and received[0] == sent[0], (sent[0], received[0], after["drops"])
    # A burst while the router's process is stopped: the socket's queue overflows.
    pid = router.proc.pid  # `ip netns exec` executes lwt6 in its own process
    os.kill(pid, signal.SIGSTOP)
    try:
        ip(live, ["-6", "route", "flush", "root", "2001:db8::/32"])
        ip(live, ["-batch", "-"], stdin=batch_adds(5000, 20000))
    finally:
        os.kill(pid, signal.SIGCONT)
    took, want, _ = mirror_equal(live, router, "2001:db8::/32")
    settles.append(took)
    assert len(want) == 5000
    k = router.stats()["kernel_routes"]
    assert k["overruns"] >= 1 and k["dumps"] >= 2, k
    print(f"settle (asked, answered) in s: {settles}; mirror {k}; stream {sent[0]} frames")


def test_blackhole_not_bypassed_through_a_shorter_route(live, router):
    """A kernel blackhole inside the configured fc00::/16: the kernel drops fc00:9::1; lwt6 must not forward it
    through fc00::/16 (fc00:8::1, outside the blackhole, still goes)."""
    ip(live, ["-6", "route", "add", "blackhole", "fc00:9::/32"])
    mirror_equal(live, router, "fc00:9::/32")
    assert through(live, "fc00:9::1", 5) == []
    assert len(through(live, "fc00:8::1", 6)) == 1


@pytest.mark.parametrize("kind", ["blackhole", "unreachable", "prohibit"])
def test_reject_routes_answer_as_the_kernel(live, workdir, kind):
    """A kernel `KIND fc00:9::/32` route inside the configured fc00::/16, a packet to fc00:9::1 with hop limit 64
    and one with hop limit 1: what the sender gets back from the kernel router (nothing for a blackhole, an
    ICMPv6 Destination Unreachable code 0 for unreachable, code 1 for prohibit, whatever the hop limit) is what it
    gets from lwt6 with the route mirrored, byte for byte (the flow label of the kernel's errors aside); the
    receiver gets nothing from either."""
    from test_live import no_icmp_flow_label
    from ktnet import xfer
    frames = [udp6("fc00:9::1", hlim=64, size=32, tag=11), udp6("fc00:9::1", hlim=1, size=32, tag=12)]

    def send():
        out = []
        for f in frames:
            r = xfer(live.s0, [f], [live.s0, live.d0], timeout=0.25, keep=with_marker)
            out.append(([no_icmp_flow_label(x) for x in r[live.s0.label]], r[live.d0.label]))
        return out
    live.kernel_mode(LIVE_BASE)
    try:
        ip(live, ["-6", "route", "add", kind, "fc00:9::/32"])
        kernel = send()
    finally:
        ip(live, ["-6", "route", "del", "fc00:9::/32"], check=False)
        live.lwt6_mode()
    for i in ("r0", "r1"):
        live.topo.sysctl(live.r, f"net.ipv6.conf.{i}.disable_ipv6", 0)
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "xdp", "--kernel-routes"],
                   label=f"kmr{os.getpid()}")
    try:
        ip(live, ["-6", "route", "add", kind, "fc00:9::/32"])
        mirror_equal(live, r, "fc00:9::/32")
        ours = send()
    finally:
        final = r.stop()
        r.kill()
        ip(live, ["-6", "route", "del", "fc00:9::/32"], check=False)
        live.lwt6_mode()
    code = {"blackhole": None, "unreachable": 0, "prohibit": 1}[kind]
    for to_sender, to_receiver in kernel:
        assert to_receiver == []
        if code is None:
            assert to_sender == [], [x.hex() for x in to_sender]
        else:
            # ICMPv6 (58) type 1 with the code
            assert len(to_sender) == 1 and to_sender[0][20] == 58 and to_sender[0][54:56] == bytes([1, code]), \
                [x.hex() for x in to_sender]
    assert ours == kernel, ([[x.hex() for x in s] for s, _ in ours], [[x.hex() for x in s] for s, _ in kernel])
    reason = {"blackhole": "blackhole_route", "unreachable": "unreachable_route", "prohibit": "prohibited_route"}
    assert final["drops"].get(reason[kind]) == 2 and final["balanced"], final


def random_ops(rng, n):
    """n random `ip -6 route` commands over a small prefix space (batch syntax, without the leading `ip`)."""
    prefixes = [f"2001:db8:1:{i}::/64" for i in range(6)] + ["2001:db8:1::/48", "2001:db8:1::5/128"]
    nexthops = ["via fd00:2::2 dev r1 onlink", "via fd00:2::3 dev r1 onlink", "dev r1", "dev r0",
                "encap seg6 mode encap segs fc00::1,fc00::2 dev r1"]
    ops = []
    for _ in range(n):
        p = rng.choice(prefixes)
        metric = rng.choice(["", " metric 2048"])
        kind = rng.random()
        if kind < 0.12:
            what = f"{rng.choice(['blackhole', 'unreachable', 'prohibit'])} {p}{metric}"
        elif kind < 0.2:
            a, b = rng.sample(nexthops[:2], 2)
            what = f"{p}{metric} nexthop {a} nexthop {b}"
        else:
            what = f"{p}{metric} {rng.choice(nexthops)}"
        verb = rng.choices(["add", "replace", "change", "append", "del", "delp", "flush"],
                           [30, 25, 8, 5, 20, 8, 2])[0]
        if verb == "del":
            ops.append(f"route del {p}{metric}")
        elif verb == "delp":
            ops.append(f"route del {what}")
        elif verb == "flush":
            ops.append("route flush root 2001:db8:1::/48")
        elif verb == "append" and kind >= 0.12:
            ops.append(f"route append {p}{metric} {rng.choice(nexthops[:2])}")
        else:
            ops.append(f"route {verb if verb != 'append' else 'add'} {what}")
    return ops


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("KM_SEEDS", "24,2026").split(",")])
def test_random_sequences_equal_the_kernel(live, router, seed):
    """A seeded random sequence of 400 kernel route operations (add, replace, change, append, del, flush over 8
    prefixes and 2 metrics, with drop types, multipath and seg6 routes), in bursts through `ip -batch -force` and
    one by one; after each burst lwt6's table equals the kernel's within the settle."""
    rng = random.Random(seed)
    ops = random_ops(rng, 400)
    i = 0
    checks = 0
    while i < len(ops):
        n = rng.choice([1, 1, 5, 40, 80])
        chunk = ops[i:i + n]
        i += n
        if n == 1:
            ip(live, chunk[0].split(), check=False)
        else:
            ip(live, ["-force", "-batch", "-"], stdin="\n".join(chunk) + "\n", check=False)
        if n > 1 or rng.random() < 0.3 or i >= len(ops):
            mirror_equal(live, router, "2001:db8:1::/48")
            checks += 1
    k = router.stats()["kernel_routes"]
    _, want, skipped = mirror_equal(live, router, "2001:db8:1::/48")
    dropping = sum(v[0] != "unicast" for v in want.values())
    print(f"seed {seed}: {checks} comparisons; at the end the kernel holds {len(want) - dropping} forwarding, "
          f"{dropping} dropping routes and {len(skipped)} prefixes with several routes; mirror {k}")
    assert checks >= 10


def test_seg6local_and_seg6_routes_mirrored(live, router):
    """A kernel `seg6local` End.X route and a `seg6` encap route are installed as such (same prefix, metric,
    device, encap type as the kernel lists them), and their removal too."""
    ip(live, ["-6", "route", "add", "2001:db8:e::/64", "encap", "seg6local", "action", "End.X", "nh6", "fd00:2::2",
              "dev", "r1"])
    ip(live, ["-6", "route", "add", "2001:db8:f::/64", "encap", "seg6", "mode", "encap", "segs", "fc00::1", "dev",
              "r1"])
    _, want, dropped = mirror_equal(live, router, "2001:db8::/32")
    assert {v[3] for v in want.values()} == {"seg6local", "seg6"} and not dropped, want
    ip(live, ["-6", "route", "del", "2001:db8:e::/64"])
    ip(live, ["-6", "route", "del", "2001:db8:f::/64"])
    _, want, _ = mirror_equal(live, router, "2001:db8::/32")
    assert want == {}
    assert router.stats()["kernel_routes"]["skipped_total"] == 0


def test_reload_keeps_the_rule(live, router):
    """SIGHUP with a configuration that gains a route on a mirrored prefix and metric: the configured one is used,
    the kernel's shadowed; reloaded without it: the kernel's is back."""
    ip(live, ["-6", "route", "add", "2001:db8:a::/64", "via", "fd00:2::3", "dev", "r1", "onlink"])
    mirror_equal(live, router, "2001:db8::/32")

    def reload(extra):
        with open(router.conf, "w") as f:
            f.write("\n".join(LIVE_BASE + extra) + "\n")
        router.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 3
        want = ("unicast", "fd00:2::2", "r1", None) if extra else ("unicast", "fd00:2::3", "r1", None)
        while lwt6_table(router, "2001:db8::/32").get(("2001:db8:a::/64", 1024)) != want:
            assert time.monotonic() < deadline, lwt6_table(router, "2001:db8::/32")
            time.sleep(0.05)
        return router.stats()["kernel_routes"]

    k = reload(["-6 route add 2001:db8:a::/64 via fd00:2::2 dev r1"])
    assert k["shadowed"] == 1 and k["installed"] == 0, k
    k = reload([])
    assert k["shadowed"] == 0 and k["installed"] == 1, k
    mirror_equal(live, router, "2001:db8::/32")


@pytest.mark.parametrize("kind", ["blackhole", "unreachable", "prohibit"])
def test_ipv4_reject_routes_answer_as_the_kernel(live, workdir, kind):
    """The same for IPv4 (`KIND 10.99.0.0/24`): the kernel router's ICMP type and code at the sender (nothing for
    a blackhole; host unreachable, 1; communication administratively prohibited, 13) are lwt6's, nothing is
    delivered, and lwt6 counts the drop by name."""
    from ktnet import sysctl_set, xfer
    from ktpkt import udp4
    frame = udp4("10.99.0.1", ttl=64, size=32, tag=13)

    def send():
        r = xfer(live.s0, [frame], [live.s0, live.d0], timeout=0.25, keep=with_marker)
        # (ICMP type, code) of each frame to the sender (IPv4 header without options), frames to the receiver
        return [(f[34], f[35]) for f in r[live.s0.label] if f[23] == 1], r[live.d0.label]
    live.kernel_mode(LIVE_BASE)
    sysctl_set(live.rns, "net.ipv4.icmp_ratelimit", 0)
    try:
        ip(live, ["-4", "route", "add", kind, "10.99.0.0/24"])
        kernel = send()
    finally:
        ip(live, ["-4", "route", "del", "10.99.0.0/24"], check=False)
        live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "xdp", "--kernel-routes"],
                   label=f"kmr4{os.getpid()}")
    try:
        ip(live, ["-4", "route", "add", kind, "10.99.0.0/24"])
        deadline = time.monotonic() + SETTLE
        while not any(x.get("type") == kind for x in json.loads(r.ctl("show", "routes", "-j").stdout)):
            assert time.monotonic() < deadline, "the IPv4 route was not mirrored"
            time.sleep(0.02)
        ours = send()
    finally:
        final = r.stop()
        r.kill()
        ip(live, ["-4", "route", "del", "10.99.0.0/24"], check=False)
        live.lwt6_mode()
    want = {"blackhole": [], "unreachable": [(3, 1)], "prohibit": [(3, 13)]}[kind]
    assert kernel == (want, []), kernel
    assert ours == kernel, ours
    reason = {"blackhole": "blackhole_route", "unreachable": "unreachable_route", "prohibit": "prohibited_route"}
    assert final["drops"].get(reason[kind]) == 1 and final["balanced"], final
