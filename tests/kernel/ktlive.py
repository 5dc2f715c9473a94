"""The live router (`lwt6 run`) in network namespaces: a sender - router - receiver topology whose router
namespace is switched between the kernel router and lwt6, and a handle on a running `lwt6 run`.

The router namespace in lwt6 mode is set up as docs/live.md says: kernel forwarding off, IPv6 disabled and
IPv4 addresses flushed on the attached interfaces (lwt6 owns them), the interfaces up.
"""
import json
import os
import signal
import socket
import subprocess
import time

from ktconf import KernelRouter
from ktlwt6 import lwt6_bin
from ktnet import NetnsError, Topo, require_root, run, sysctl_set
from ktpkt import MAC_D0, MAC_R0, MAC_R1, MAC_S0

# The router of the live topology: the interfaces' MACs and MTUs are not given, lwt6 reads them from the system.
LIVE_BASE = [
    "link add r0",
    "link add r1",
    "addr add fd00:1::2/64 dev r0",
    "addr add fd00:2::1/64 dev r1",
    "addr add 10.1.0.2/24 dev r0",
    "addr add 10.2.0.1/24 dev r1",
    f"neigh add fd00:1::1 lladdr {MAC_S0} dev r0",
    f"neigh add fd00:2::2 lladdr {MAC_D0} dev r1",
    f"neigh add 10.1.0.1 lladdr {MAC_S0} dev r0",
    f"neigh add 10.2.0.2 lladdr {MAC_D0} dev r1",
    "sysctl net.ipv6.conf.all.forwarding=1",
    "-6 route add fc00::/16 via fd00:2::2 dev r1",
]


class LiveTopo:
    """sndr[s0] -- [r0]rtr[r1] -- [d0]rcvr (the MACs and addresses of kttopo.Topo3), own namespaces.
    `queues`: rx/tx queues of the router's veths (several workers, one per queue)."""

    def __init__(self, tag="live", queues=1):
        t = self.topo = Topo([f"{tag}s", f"{tag}r", f"{tag}d"])
        self.s, self.r, self.d = f"{tag}s", f"{tag}r", f"{tag}d"
        try:
            q = ["numtxqueues", str(queues), "numrxqueues", str(queues)]
            run(["ip", "link", "add", "s0", "netns", t.name(self.s), "address", MAC_S0] + q +
                ["type", "veth", "peer", "name", "r0", "netns", t.name(self.r), "address", MAC_R0] + q)
            run(["ip", "link", "add", "r1", "netns", t.name(self.r), "address", MAC_R1] + q +
                ["type", "veth", "peer", "name", "d0", "netns", t.name(self.d), "address", MAC_D0] + q)
            t.batch(self.s, ["link set s0 up", "addr add fd00:1::1/64 dev s0 nodad", "addr add 10.1.0.1/24 dev s0",
                             f"neigh add fd00:1::2 lladdr {MAC_R0} dev s0 nud permanent",
                             "route add default via fd00:1::2 dev s0"])
            t.batch(self.d, ["link set d0 up", "addr add fd00:2::2/64 dev d0 nodad", "addr add 10.2.0.2/24 dev d0",
                             f"neigh add fd00:2::1 lladdr {MAC_R1} dev d0 nud permanent",
                             "route add default via fd00:2::1 dev d0"])
            t.batch(self.r, ["link set r0 up", "link set r1 up"])
            # The kernel's ICMPv6 errors are rate limited per destination; the comparison needs every one.
            t.sysctl(self.r, "net.ipv6.icmp.ratelimit", 0)
            self.kernel = KernelRouter(t, self.r)
            self.s0 = t.port(self.s, "s0")
            self.d0 = t.port(self.d, "d0")
        except BaseException:
            t.destroy()
            raise

    @property
    def rns(self):
        return self.topo.name(self.r)

    def kernel_mode(self, statements):
        """The kernel routes: IPv6 on, the statements applied (undone by lwt6_mode)."""
        for i in ("r0", "r1"):
            sysctl_set(self.rns, f"net.ipv6.conf.{i}.disable_ipv6", 0)
        sysctl_set(self.rns, "net.ipv4.ip_forward", 1)
        self.kernel.apply(statements)

    def lwt6_mode(self):
        """The kernel steps aside: no forwarding, no addresses on r0 / r1 (docs/live.md)."""
        self.kernel.undo()
        sysctl_set(self.rns, "net.ipv6.conf.all.forwarding", 0)
        sysctl_set(self.rns, "net.ipv4.ip_forward", 0)
        for i in ("r0", "r1"):
            sysctl_set(self.rns, f"net.ipv6.conf.{i}.disable_ipv6", 1)
            self.topo.ip(self.r, f"-4 addr flush dev {i}")
            self.topo.ip(self.r, f"link set {i} up")

    def destroy(self):
        self.topo.destroy()


class LiveRouter:
    """`lwt6 run` in a namespace; `stop()` sends SIGTERM and returns the final counters (JSON)."""

    def __init__(self, ns, conf_text, workdir, args=(), label="live", cpus=None, wrap=()):
        self.ns = ns
        self.dir = workdir
        self.conf = os.path.join(workdir, f"{label}.conf")
        with open(self.conf, "w") as f:
            f.write(conf_text)
        self.sock = os.path.join(workdir, f"{label}.sock")
        pin = ["taskset", "-c", cpus] if cpus else []
        # `wrap`: a command that runs the rest (as `unshare --mount ... sh -c '...; exec "$@"'`).
        self.argv = list(wrap) + ["ip", "netns", "exec", ns] + pin + [str(lwt6_bin()), "run", "-c", self.conf, "--control", self.sock,
                     "-j"] + list(args)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"lwt6 run exited with {self.proc.returncode}: {err.strip()}")
            if os.path.exists(self.sock) and self.ctl("show", "stats").returncode == 0:
                break
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("lwt6 run did not answer on its control socket within 10 s")
            time.sleep(0.02)

    def ctl(self, *words):
        return subprocess.run([str(lwt6_bin()), "ctl", "--control", self.sock] + list(words),
                              capture_output=True, text=True)

    def stats(self):
        r = self.ctl("show", "stats", "-j")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def wait_rx(self, n, timeout=5.0):
        """Wait until the router has received n frames (counters are published every few ms)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stats()["rx"] >= n:
                return
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("lwt6 run did not stop within 10 s of SIGTERM")
        self.stderr = err
        assert self.proc.returncode == 0, f"lwt6 run exited with {self.proc.returncode}: {err.strip()}"
        assert not os.path.exists(self.sock), "the control socket was left behind"
        return json.loads(out)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if os.path.exists(self.sock):
            os.unlink(self.sock)


def run_lwt6(ns, args, timeout=10):
    """`lwt6 ARGS` in namespace ns (for the refusals: expected to exit at once)."""
    return subprocess.run(["ip", "netns", "exec", ns, str(lwt6_bin())] + list(args), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


__all__ = ["LIVE_BASE", "LiveTopo", "LiveRouter", "run_lwt6"]


def live_topo(request, tag, **kw):
    """A `LiveTopo` named by `tag` (unique per test file), destroyed when the pytest `request` ends; the test
    fails with the reason when it cannot be built (not root, `ip netns add` refused)."""
    import pytest

    try:
        require_root()
        t = LiveTopo(tag, **kw)
    except NetnsError as e:
        pytest.fail(f"cannot build the live topology: {e}", pytrace=False)
    request.addfinalizer(t.destroy)
    return t


def read_to_end(s):
    """Everything `s` (a connected socket) sends until it closes, as text."""
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    return out.decode()


def control_request(path, line, timeout=5.0):
    """One request over the control socket at `path`, as `lwt6 ctl` sends it: (seconds from connect to the end of
    the reply, reply)."""
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        reply = read_to_end(s)
    finally:
        s.close()
    return time.monotonic() - t0, reply
