"""`lwt6 ctl monitor -j` against a live router (docs/live.md, *Monitor*): each change made through `lwt6 ctl`, a
SIGHUP reload (applied and refused) and the kernel's own `ip route` (with --kernel-routes) appears as one JSON
line with the right fields within 1 s of the command that made it returning; a monitor client that never reads
delays nobody (another client's `show stats` within 100 ms) and its lost events are counted; when the router
stops, the monitor client ends.

Expected fields come from the commands the test issues (the prefix, gateway, device and metric it typed), and the
delays are measured from outside."""
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from ktlive import control_request, LIVE_BASE, live_topo, LiveRouter, LiveTopo
from ktlwt6 import lwt6_bin
from ktnet import NetnsError, require_root

WITHIN = 1.0
BOUND = 0.100


@pytest.fixture
def live(request):
    return live_topo(request, "mon")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("monitor"))


class Monitor:
    """`lwt6 ctl monitor -j` as a subprocess; every line it prints kept with the time it came."""

    def __init__(self, sock):
        self.proc = subprocess.Popen([str(lwt6_bin()), "ctl", "--control", sock, "monitor", "-j"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), json.loads(line)))

    def wait(self, since, match, timeout=WITHIN):
        """The first event after index `since` for which match(event) holds, and its delay from now; fails after
        `timeout`."""
        t0 = time.monotonic()
        while True:
            with self.lock:
                for t, e in self.lines[since:]:
                    if match(e):
                        return e, t - t0
            if time.monotonic() - t0 > timeout:
                with self.lock:
                    seen = [e for _, e in self.lines[since:]][-10:]
                raise AssertionError(f"no matching event within {timeout} s; last seen: {seen}")
            time.sleep(0.005)

    def mark(self):
        with self.lock:
            return len(self.lines)




def ok(r):
    assert r.returncode == 0, r.stderr
    return r


def test_monitor_streams_route_neighbour_reload_and_kernel_events(live, workdir):
    live.lwt6_mode()
    for i in ("r0", "r1"):
        live.topo.sysctl(live.r, f"net.ipv6.conf.{i}.disable_ipv6", 0)
    base = "\n".join(LIVE_BASE) + "\n"
    r = LiveRouter(live.rns, base, workdir, args=["--kernel-routes"], label=f"mon{os.getpid()}")
    mon = stalled = None
    try:
        mon = Monitor(r.sock)
        # The monitor connects and is served within the next turn of the router's loop.
        time.sleep(0.5)

        at = mon.mark()
        ok(r.ctl("route", "add", "fd00:77::/64", "via", "fd00:2::2", "dev", "r1", "metric", "100"))
        e, dt = mon.wait(at, lambda e: e["event"] == "route" and e["dst"] == "fd00:77::/64")
        assert (e["action"], e["gateway"], e["dev"], e["metric"], e["source"]) == \
            ("add", "fd00:2::2", "r1", 100, "ctl"), e
        assert dt < WITHIN

        at = mon.mark()
        ok(r.ctl("route", "replace", "fd00:77::/64", "via", "fd00:2::3", "dev", "r1", "metric", "100"))
        e, _ = mon.wait(at, lambda e: e["event"] == "route" and e["dst"] == "fd00:77::/64")
        assert (e["action"], e["gateway"]) == ("replace", "fd00:2::3"), e

        at = mon.mark()
        ok(r.ctl("route", "del", "fd00:77::/64", "metric", "100"))
        e, _ = mon.wait(at, lambda e: e["event"] == "route" and e["dst"] == "fd00:77::/64")
        assert (e["action"], e["metric"]) == ("del", 100), e

        at = mon.mark()
        ok(r.ctl("neigh", "add", "fd00:2::77", "lladdr", "02:00:00:00:00:77", "dev", "r1"))
        e, _ = mon.wait(at, lambda e: e["event"] == "neigh")
        assert (e["action"], e["dst"], e["lladdr"], e["dev"]) == \
            ("add", "fd00:2::77", "02:00:00:00:00:77", "r1"), e

        # A reload that gains a route: the route, then the reload.
        with open(r.conf, "a") as f:
            f.write("route add fd00:78::/64 via fd00:2::2 dev r1\n")
        at = mon.mark()
        r.proc.send_signal(signal.SIGHUP)
        e, _ = mon.wait(at, lambda e: e["event"] == "route" and e["dst"] == "fd00:78::/64")
        assert (e["action"], e["source"], e["metric"]) == ("add", "reload", 1024), e
        e, _ = mon.wait(at, lambda e: e["event"] == "reload")
        assert e["ok"] is True, e

        # A reload refused: the reason is in the event.
        with open(r.conf, "a") as f:
            f.write("route add fd00:79::/64 dev nosuchdev\n")
        at = mon.mark()
        r.proc.send_signal(signal.SIGHUP)
        e, _ = mon.wait(at, lambda e: e["event"] == "reload")
        assert e["ok"] is False and "nosuchdev" in e["error"], e
        with open(r.conf, "w") as f:
            f.write(base)

        # The kernel's own route, mirrored.
        at = mon.mark()
        subprocess.run(["ip", "-n", live.rns, "-6", "route", "add", "fd00:7a::/64", "via", "fd00:2::2", "dev", "r1",
                        "onlink", "metric", "33"], check=True)
        e, _ = mon.wait(at, lambda e: e["event"] == "route" and e["dst"] == "fd00:7a::/64")
        assert (e["action"], e["source"], e["metric"], e["gateway"], e["dev"]) == \
            ("add", "kernel", 33, "fd00:2::2", "r1"), e
        at = mon.mark()
        subprocess.run(["ip", "-n", live.rns, "-6", "route", "del", "fd00:7a::/64", "metric", "33"], check=True)
        e, _ = mon.wait(at, lambda e: e["event"] == "route" and e["dst"] == "fd00:7a::/64")
        assert (e["action"], e["source"]) == ("del", "kernel"), e

        # A monitor that never reads, then far more events than its 1 MiB: another client is answered at once,
        # the lost events are counted.
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.connect(r.sock)
        stalled.sendall(b"monitor\n")
        time.sleep(0.2)
        n = 40_000
        batch = "".join(f"route add fd10:{i >> 8:x}:{i & 0xff:x}::/64 dev r1\n" for i in range(n))
        at = mon.mark()
        rb = subprocess.run([str(lwt6_bin()), "ctl", "--control", r.sock, "--batch", "-"], input=batch,
                            capture_output=True, text=True)
        assert rb.returncode == 0, rb.stderr
        # The first request after the batch waits for what the batch left to do (its routes handed to the kernel
        # route mirror, its events to the monitors): not what is measured here.
        first, _ = control_request(r.sock, "show stats -j")
        print(f"first request after the batch: {first * 1000:.2f} ms")
        worst = 0.0
        for _ in range(10):
            dt, reply = control_request(r.sock, "show stats -j")
            assert reply.startswith("ok\n"), reply
            worst = max(worst, dt)
        stats = json.loads(reply[3:])
        assert worst < BOUND, f"show stats took {worst * 1000:.1f} ms beside a monitor that does not read"
        assert stats["monitor_events_dropped"] > 0, stats
        # The kernel-route mirror dumped the kernel's table once at least (at start); no capture ran: none lost.
        assert stats["kernel_routes_dumps"] >= 1 and stats["kernel_routes_overruns"] >= 0, stats
        assert stats["kernel_routes_skipped_total"] >= 0 and stats["capture_lost"] == 0, stats
        print(f"show stats beside a stalled monitor: worst of 10 {worst * 1000:.2f} ms; "
              f"monitor_events_dropped {stats['monitor_events_dropped']}")
        # What the reading monitor got of the batch: every route either shown or counted in a "dropped" line.
        def tally():
            with mon.lock:
                evs = [e for _, e in mon.lines[at:]]
            shown = sum(1 for e in evs if e["event"] == "route" and e["dst"].startswith("fd10:"))
            dropped = sum(e["count"] for e in evs if e["event"] == "dropped")
            return shown, dropped
        deadline = time.monotonic() + 5
        while sum(tally()) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(tally()) == n, tally()
        print(f"reading monitor: {tally()[0]} of {n} route events shown, {tally()[1]} counted as dropped")
    finally:
        if stalled is not None:
            stalled.close()
        if r.proc.poll() is None:
            r.stop()
        r.kill()
        if mon is not None:
            # The router stopped: the monitor client ends by itself (the connection closed), status 0.
            try:
                rc = mon.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                mon.proc.kill()
                mon.proc.wait()
                rc = None
        subprocess.run(["ip", "-n", live.rns, "-6", "route", "flush", "root", "fd00:7a::/64"], capture_output=True)
    assert rc == 0, mon.proc.stderr.read()
