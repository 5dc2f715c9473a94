"""Network-namespace plumbing for the kernel differential tests.

* `Topo`: creates uniquely named namespaces (`l6t-<pid>-<short>`) and veth pairs, and always
  deletes them again (explicit `destroy()`, plus an atexit hook for crashes / Ctrl-C).
* `sysctl_set/get`: write /proc/sys from inside a namespace (setns), no subprocess per knob.
* `Port`: an AF_PACKET socket bound to an interface inside a namespace (a socket keeps the
  namespace it was created in), used to inject raw Ethernet frames and to capture them.
* `xfer`: send a batch of frames and collect what arrives on some ports, ignoring our own
  outgoing frames and ND / MLD / ARP noise.
"""
import atexit
import ctypes
import os
import select
import socket
import subprocess
import time

PREFIX = f"l6t-{os.getpid()}-"
CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003

_libc = ctypes.CDLL(None, use_errno=True)
_home_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
_live_namespaces = set()


class NetnsError(RuntimeError):
    """Raised when the namespace plumbing itself fails (not root, `ip netns add` fails...)."""


def run(argv, stdin=None, check=True):
    """Run a command; raise NetnsError with its stderr when it fails and check is set."""
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetnsError(f"command failed (rc={r.returncode}): {' '.join(argv)}\n{r.stderr.strip()}")
    return r


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(f"setns failed: {os.strerror(err)}")


def in_ns(ns, fn):
    """Call fn() with this thread switched into namespace ns, then switch back."""
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        _setns(fd)
        return fn()
    finally:
        os.close(fd)
        _setns(_home_fd)


def _sysctl_path(key):
    return "/proc/sys/" + key.replace(".", "/")


def sysctl_set(ns, key, value):
    """Write a sysctl inside ns (like `ip netns exec ns sysctl -w key=value`)."""
    def w():
        with open(_sysctl_path(key), "w") as f:
            f.write(f"{value}\n")
    try:
        in_ns(ns, w)
    except OSError as e:
        raise NetnsError(f"sysctl {key}={value} in {ns}: {e}") from e


def sysctl_get(ns, key):
    """Read a sysctl inside ns (stripped string)."""
    def r():
        with open(_sysctl_path(key)) as f:
            return f.read().strip()
    return in_ns(ns, r)


def delete_ns(name):
    run(["ip", "netns", "del", name], check=False)
    _live_namespaces.discard(name)


@atexit.register
def _cleanup_all():
    for n in list(_live_namespaces):
        delete_ns(n)


def require_root():
    """Raise NetnsError unless we are root (namespaces and AF_PACKET need it)."""
    if os.geteuid() != 0:
        raise NetnsError("the kernel differential tests must run as root (network namespaces, AF_PACKET)")


class Topo:
    """A set of namespaces joined by veth pairs. Always call destroy() (fixtures do)."""

    def __init__(self, shorts):
        require_root()
        self.ns = {}
        self.ports = []
        try:
            for s in shorts:
                name = PREFIX + s
                run(["ip", "netns", "del", name], check=False)  # stale leftover of a crashed run
                r = run(["ip", "netns", "add", name], check=False)
                if r.returncode != 0:
                    raise NetnsError(f"`ip netns add {name}` failed: {r.stderr.strip()}")
                _live_namespaces.add(name)
                self.ns[s] = name
                self.ip(s, "link set lo up")
                sysctl_set(name, "net.ipv6.conf.all.accept_dad", 0)
                sysctl_set(name, "net.ipv6.conf.default.accept_dad", 0)
                # No router solicitations / autoconf noise on the wire.
                sysctl_set(name, "net.ipv6.conf.default.router_solicitations", 0)
                sysctl_set(name, "net.ipv6.conf.default.accept_ra", 0)
        except BaseException:
            self.destroy()
            raise

    def name(self, short):
        return self.ns[short]

    def ip(self, short, cmd, stdin=None, check=True):
        """`ip -n NS <cmd>` (cmd: a string or an argv list)."""
        args = cmd.split() if isinstance(cmd, str) else list(cmd)
        return run(["ip", "-n", self.ns[short]] + args, stdin=stdin, check=check)

    def batch(self, short, lines):
        """Run many `ip` commands in one process (`ip -n NS -batch -`)."""
        if lines:
            run(["ip", "-n", self.ns[short], "-batch", "-"], stdin="\n".join(lines) + "\n")

    def veth(self, a, ifa, maca, b, ifb, macb):
        """Create veth ifa (in a) <-> ifb (in b) with fixed MACs, both down (callers bring them up)."""
        run(["ip", "link", "add", ifa, "netns", self.ns[a], "address", maca, "type", "veth",
             "peer", "name", ifb, "netns", self.ns[b], "address", macb])

    def sysctl(self, short, key, value):
        sysctl_set(self.ns[short], key, value)

    def port(self, short, ifname):
        p = Port(self.ns[short], ifname, label=f"{short}/{ifname}")
        self.ports.append(p)
        return p

    def destroy(self):
        for p in self.ports:
            p.close()
        self.ports = []
        for n in list(self.ns.values()):
            delete_ns(n)
        self.ns = {}


class Port:
    """AF_PACKET raw socket on one interface of one namespace."""

    def __init__(self, ns, ifname, label=None):
        self.label = label or f"{ns}/{ifname}"

        def mk():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((ifname, ETH_P_ALL))
            s.setblocking(False)
            return s
        self.sock = in_ns(ns, mk)

    def send(self, frame):
        self.sock.send(frame)

    def drain(self):
        try:
            while True:
                self.sock.recv(65535)
        except BlockingIOError:
            pass

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


# ICMPv6 types that are neighbour discovery / MLD housekeeping, never test traffic.
_NOISE_ICMP6 = {130, 131, 132, 133, 134, 135, 136, 137, 143}


def is_noise(frame):
    """True for ARP, ND, RS/RA, redirects and MLD frames."""
    if len(frame) < 14:
        return True
    et = int.from_bytes(frame[12:14], "big")
    if et == 0x0806:
        return True
    if et != 0x86DD or len(frame) < 54:
        return False
    nh, off = frame[20], 54
    while nh in (0, 60) and off + 2 <= len(frame):  # HbH / DestOpts (MLD carries a router alert)
        nh, off = frame[off], off + (frame[off + 1] + 1) * 8
    return nh == 58 and off < len(frame) and frame[off] in _NOISE_ICMP6


def xfer(tx, frames, rx, expect=None, timeout=0.4, keep=None, settle=0.03, noise=False):
    """Send frames (list of bytes) on Port tx; return {port.label: [frames]} seen on the rx Ports.

    Only incoming frames are kept (our own outgoing copies are ignored), noise is dropped (unless
    noise=True: the neighbour discovery and ARP tests want it) and keep(frame) may filter further. With expect=N the wait ends `settle` seconds after N frames
    arrived in total (to catch extras); otherwise, or if fewer arrive, after `timeout` seconds.
    """
    if not isinstance(rx, (list, tuple)):
        rx = [rx]
    for p in rx:
        p.drain()
    for f in frames:
        tx.send(bytes(f))
    got = {p.label: [] for p in rx}
    total = 0
    deadline = time.monotonic() + timeout
    socks = {p.sock: p for p in rx}
    while True:
        now = time.monotonic()
        if expect and total >= expect:
            deadline = min(deadline, now + settle)
            expect = None  # only shorten once
        left = deadline - now
        if left <= 0:
            break
        ready, _, _ = select.select(list(socks), [], [], left)
        for s in ready:
            while True:
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING or (not noise and is_noise(data)):
                    continue
                if keep is not None and not keep(data):
                    continue
                got[socks[s].label].append(data)
                total += 1
    return got
