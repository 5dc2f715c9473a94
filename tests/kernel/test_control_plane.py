"""The control plane of `lwt6 run` under hostile clients and neighbours (docs/live.md, *Bounds and time limits*;
docs/hostile.md): a slow client, an idle client and 1,000 idle connections never delay a ping through the
router, a SIGHUP or another client's request by more than 100 ms; a flood of spoofed neighbour solicitations
cannot keep the router from resolving its next hop; SIGTERM ends the router within 2 s whatever is in progress.

Every delay is measured from outside (the ping's round trip, the time from the signal until the reloaded route is
shown, a request's round trip over the socket) and bounded by the figure the issue states (100 ms), not by
anything lwt6 reports."""
import json
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from ktlive import control_request, LIVE_BASE, live_topo, LiveRouter, LiveTopo, read_to_end
from ktnet import NetnsError, require_root

BOUND = 0.100


@pytest.fixture
def live(request):
    return live_topo(request, "cp")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("ctlplane"))




class Pest:
    """Clients that hold connections to the control socket until stopped, reconnecting when the router closes
    theirs: `slow` sends one byte every 0.8 s, `idle` sends nothing, `idle1000` opens 1,000 connections that send
    nothing. In a process of their own (the measurements are not slowed by them)."""

    def __init__(self, path, kind):
        self.path, self.kind = path, kind
        self.stop = multiprocessing.Event()
        self.results, child = multiprocessing.Pipe(duplex=False)
        self.proc = multiprocessing.Process(target=self.run, args=(child,), daemon=True)
        self.proc.start()
        # Let the connections be made (and accepted) before anything is measured.
        time.sleep(0.5 if kind != "idle1000" else 1.0)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        s.setblocking(False)
        return s

    def closed(self, s, replies):
        """Whether the router closed s (keeping what it said)."""
        try:
            b = s.recv(4096)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if b:
            replies.append(b.decode(errors="replace"))
        return True

    def run(self, out):
        n = 1000 if self.kind == "idle1000" else 1
        socks = [self.connect() for _ in range(n)]
        closed, replies = 0, []
        text = b"show stats\n"
        sent = [0] * n
        last = time.monotonic()
        while not self.stop.is_set():
            for i, s in enumerate(socks):
                if self.closed(s, replies):
                    closed += 1
                    s.close()
                    socks[i] = self.connect()
                    sent[i] = 0
            if self.kind == "slow" and time.monotonic() - last >= 0.8:
                last = time.monotonic()
                try:
                    socks[0].send(text[sent[0] % len(text):][:1])
                    sent[0] += 1
                except OSError:
                    pass
            time.sleep(0.02)
        for s in socks:
            s.close()
        out.send((closed, replies[:50]))

    def end(self):
        self.stop.set()
        self.closed_by_router, self.replies = self.results.recv() if self.results.poll(10) else (0, [])
        self.proc.join(timeout=10)


def ping_rtt_max(ns, addr, count=5):
    p = subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", str(count), "-i", "0.2", "-W", "1", addr],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and " 0% packet loss" in p.stdout, p.stdout + p.stderr
    m = re.search(r"= [\d.]+/[\d.]+/([\d.]+)/", p.stdout)
    return float(m.group(1)) / 1000


def sighup_delay(r, n):
    """Adds a route to the file, sends SIGHUP and returns how long until the route is shown."""
    prefix = f"fd00:7{n:x}::/64"
    with open(r.conf, "a") as f:
        f.write(f"-6 route add {prefix} via fd00:2::2 dev r1\n")
    t0 = time.monotonic()
    r.proc.send_signal(signal.SIGHUP)
    while time.monotonic() - t0 < 5:
        _, reply = control_request(r.sock, "show routes")
        if prefix in reply:
            return time.monotonic() - t0
        time.sleep(0.002)
    raise AssertionError("the SIGHUP reload was not applied within 5 s")


@pytest.mark.parametrize("kind", ["slow", "idle", "idle1000"])
def test_a_hostile_client_delays_nothing(live, workdir, kind):
    """During a slow client, an idle client, 1,000 idle connections: a ping through the router, a SIGHUP reload
    and another client's `show stats` and `route add` are each served within 100 ms, and the router counts what
    it refused."""
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, label=f"pest-{kind}")
    pest = None
    try:
        pest = Pest(r.sock, kind)
        sender = live.topo.name(live.s)
        worst = {}
        for n in range(3):
            took, reply = control_request(r.sock, "show stats")
            assert reply.startswith("ok\n"), reply
            worst["show stats"] = max(worst.get("show stats", 0), took)
            took, reply = control_request(r.sock, f"-6 route add fd00:6{n:x}::/64 via fd00:2::2 dev r1")
            assert reply == "ok\n", reply
            worst["route add"] = max(worst.get("route add", 0), took)
            worst["sighup"] = max(worst.get("sighup", 0), sighup_delay(r, n))
        t0 = time.monotonic()
        ctl = r.ctl("show", "stats")
        assert ctl.returncode == 0, ctl.stderr
        worst["lwt6 ctl show stats (with its start)"] = time.monotonic() - t0
        worst["ping rtt"] = ping_rtt_max(sender, "fd00:2::2")
        # Keep the pest past the 2 s a request line may take, so that the router has refused some of it.
        while time.monotonic() - t0 < 2.5:
            time.sleep(0.1)
        stats = r.stats()
    finally:
        if pest:
            pest.end()
        final = r.stop()
    print(kind, {k: f"{v * 1000:.1f} ms" for k, v in worst.items()})
    for what, took in worst.items():
        assert took <= BOUND, f"{kind}: {what} took {took * 1000:.0f} ms"
    assert stats["control_timed_out"] >= 1, stats
    assert pest.closed_by_router >= 1
    assert any(x.startswith("error: timed out") for x in pest.replies), pest.replies[:3]
    if kind == "idle1000":
        # All held (1,024 at most) until their 2 s were up.
        assert stats["control_timed_out"] >= 1000, stats
    assert final["balanced"], final


def test_a_slow_request_is_refused_and_not_applied(live, workdir):
    """A route addition sent one byte every 0.8 s: refused at 2 s with the reason, and not applied."""
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, label="slowadd")
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(r.sock)
        t0 = time.monotonic()
        line = b"-6 route add fd00:66::/64 via fd00:2::2 dev r1\n"
        reply = b""
        s.settimeout(0.8)
        for ch in line:
            try:
                s.send(bytes([ch]))
                reply = s.recv(4096)
                break
            except socket.timeout:
                pass
            except OSError:
                break
        took = time.monotonic() - t0
        s.close()
        routes = r.ctl("show", "routes").stdout
    finally:
        r.stop()
    assert reply.decode().startswith("error: timed out: the request was not complete within 2 s"), reply
    assert 2.0 <= took < 2.9, took
    assert "fd00:66::" not in routes


def spoofed_ns(i):
    """A Neighbor Solicitation for the router's fd00:2::1 from a made-up on-link source (its own link-layer
    address in the source option and the frame), as one host can send them by the thousand."""
    from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6
    from scapy.layers.l2 import Ether
    mac = f"02:66:00:00:{(i >> 8) & 0xff:02x}:{i & 0xff:02x}"
    return bytes(Ether(src=mac, dst="33:33:ff:00:00:01") /
                 IPv6(src=f"fd00:2::66:{i:x}", dst="ff02::1:ff00:1", hlim=255) /
                 ICMPv6ND_NS(tgt="fd00:2::1") / ICMPv6NDOptSrcLLAddr(lladdr=mac))


def learned(r):
    """How many neighbours the router learned (`show neigh -j`, the static ones left out)."""
    res = r.ctl("show", "neigh", "-j")
    assert res.returncode == 0, res.stderr
    return sum(1 for n in json.loads(res.stdout) if n["state"] != ["PERMANENT"])


def test_spoofed_solicitations_cannot_keep_the_next_hop_unresolved(live, workdir):
    """No static neighbour for the next hop fd00:2::2: 1,100 solicitations from made-up sources on its link fill
    the learned table (1,024); a ping through the router to an address behind that next hop then succeeds at
    once (the answer to the router's own solicitation takes the place of an unused entry), and the refusals and
    the eviction are counted in `show stats` and the metrics."""
    live.lwt6_mode()
    live.topo.ip(live.d, "-6 addr add fc00::2/128 dev d0 nodad")
    conf = [ln for ln in LIVE_BASE if not ln.startswith("neigh add fd00:2::2")]
    r = LiveRouter(live.rns, "\n".join(conf) + "\n", workdir, args=["--metrics", "[::1]:9377"], label="nsflood")
    try:
        frames = [spoofed_ns(i) for i in range(1100)]
        for f in frames:
            live.d0.send(f)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and learned(r) < 1024:
            time.sleep(0.05)
        full = learned(r)
        before = r.stats()
        t0 = time.monotonic()
        p = subprocess.run(["ip", "netns", "exec", live.topo.name(live.s), "ping", "-c", "3", "-i", "0.2", "-W", "1",
                            "fc00::2"], capture_output=True, text=True, timeout=20)
        took = time.monotonic() - t0
        after = r.stats()
        metrics = subprocess.run(["ip", "netns", "exec", live.rns, "curl", "-s", "http://[::1]:9377/metrics"],
                                 capture_output=True, text=True).stdout
    finally:
        r.stop()
    assert full == 1024, full
    assert p.returncode == 0 and " 0% packet loss" in p.stdout, p.stdout + p.stderr
    assert before["neigh_learned"] == 1024, before
    assert before["neigh_refused"] >= 1100 - 1024, before
    assert took < 1.5, took
    assert after["neigh_evicted"] >= 1, after
    assert re.search(r"^lwt6_neigh_refused_total (\d+)$", metrics, re.M), metrics[-2000:]
    assert int(re.search(r"^lwt6_neigh_evicted_total (\d+)$", metrics, re.M).group(1)) >= 1


def big_batch(sock, lines, reply):
    """Sends `batch` and `lines` on a new connection; `reply` gets when it was sent and the reply's text."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(b"batch\n" + lines)
    s.shutdown(socket.SHUT_WR)
    reply["sent"] = time.monotonic()
    reply["text"] = read_to_end(s)
    reply["done"] = time.monotonic()


def test_sigterm_late_in_a_large_batch_exits_within_2s(live, workdir):
    """SIGTERM late in a batch of 800,000 route additions, when its lines are applied and its routes are being
    published into the table (or about to be): the router exits within 2 s. The batch is first applied whole once,
    to learn how long it takes on this machine; the signal then comes at 80 % of that time on a fresh router (the
    reply says whether the publication had begun)."""
    live.lwt6_mode()
    lines = "".join(f"-6 route add fd10:{i >> 16:x}:{i & 0xffff:x}::/48 via fd00:2::2 dev r1\n"
                    for i in range(800_000)).encode()
    rt = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "packet"], label="pubterm1")
    whole = {}
    try:
        big_batch(rt.sock, lines, whole)
    finally:
        rt.stop()
    assert whole["text"] == "ok\n", whole["text"]
    length = whole["done"] - whole["sent"]
    # The machine's speed varies (other work on it): when the batch is through before the signal, its time is
    # this run's and the signal comes at 80 % of it on another fresh router, three times at most.
    for attempt in range(3):
        rt = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", "packet"],
                        label=f"pubterm{attempt + 2}")
        reply = {}
        t = threading.Thread(target=big_batch, args=(rt.sock, lines, reply))
        t.start()
        took = None
        try:
            while "sent" not in reply and t.is_alive():
                time.sleep(0.01)
            time.sleep(length * 0.8)
            if "text" in reply:
                t.join(timeout=20)
                length = reply["done"] - reply["sent"]
                continue
            t0 = time.monotonic()
            rt.proc.send_signal(signal.SIGTERM)
            rt.proc.wait(timeout=20)
            took = time.monotonic() - t0
        finally:
            t.join(timeout=20)
            rt.kill()
        if reply.get("text") == "ok\n" and attempt < 2:
            # The batch was through when the signal was seen (this run was quicker than the first by more than a
            # fifth): it still exited in time; again, at 80 % of this run's time.
            assert took < 2.0, f"lwt6 run took {took:.1f} s to exit after SIGTERM"
            length = reply["done"] - reply["sent"]
            continue
        break
    assert took is not None, "the batch was applied before the signal three times: the test tests nothing"
    print(f"batch {length:.1f} s; exit {took:.2f} s after SIGTERM; reply {reply.get('text')!r}")
    assert took < 2.0, f"lwt6 run took {took:.1f} s to exit after SIGTERM"
    assert reply.get("text", "").startswith("error: interrupted: the router is stopping"), reply.get("text")
