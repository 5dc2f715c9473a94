"""The outer source of a seg6 encapsulation without `sr tunsrc`, when several of the router's addresses tie:
`lwt6 run` against the kernel router, in the live topology, byte for byte on the source the receiver sees.

The kernel (net/ipv6/addrconf.c, `ipv6_dev_get_saddr`) walks the devices in their order in the namespace and,
on each, its address list, which keeps the addresses of one scope newest first (`ipv6_link_dev_addr` inserts a
new address before the first one of a scope no larger than its own); a candidate replaces the best so far only
when it scores strictly higher on a rule, so on a full tie the first one met wins: the newest address of the
first device. Rule 8 (longest matching prefix) counts the bits in common with the destination up to the
address's prefix length. The cases below hold addresses that tie on every rule (global scope, label 13 of
fc00::/7 like the segments, 7 bits in common with them, none deprecated), added in different orders, on the
route's device or, for a route whose device has no global address, on two other devices; and two addresses of
one device that rule 8 tells apart only through their prefix lengths. Each case is run with the addresses in the
configuration and again with them added by `lwt6 ctl addr add` after the router started (the kernel: `ip addr
add` after the route). The expected source is what the kernel router put in the frames, never a value of
lwt6's."""
import pytest

from ktlive import LIVE_BASE, live_topo, LiveRouter
from ktnet import run, sysctl_set, xfer
from ktpkt import ip6str, udp6, with_marker

# A third interface of the router (peer in the receiver's namespace) with no address of its own: a route through it
# selects its source among the other devices' addresses.
R2 = "r2"

# (name, addresses in the order they are added, the seg6 encap route). fd00:1::2 (r0) and fd00:2::1 (r1) are
# LIVE_BASE's, added before the case's.
CASES = [
    ("oif-newest-a", ["addr add fd00:2::9/64 dev r1", "addr add fd00:2::5/64 dev r1"],
     "-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a dev r1"),
    ("oif-newest-b", ["addr add fd00:2::5/64 dev r1", "addr add fd00:2::9/64 dev r1"],
     "-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a dev r1"),
    ("oif-other-prefix", ["addr add fd00:2::5/64 dev r1", "addr add fd00:7::1/64 dev r1",
                          "addr add fd00:2::9/64 dev r1"],
     "-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a dev r1"),
    # Not on the route's device: the first device (r0) wins whatever was added later on r1.
    ("first-device", ["addr add fd00:2::5/64 dev r1"],
     f"-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a dev {R2}"),
    ("first-device-newest", ["addr add fd00:1::7/64 dev r0", "addr add fd00:2::5/64 dev r1",
                             "addr add fd00:1::3/64 dev r0"],
     f"-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a dev {R2}"),
    # Rule 8 up to the prefix length: 2001:db8::1/32 shares 63 bits with the segment but counts 32; 2001:db8:ff::1/48
    # shares 40 and counts 40.
    ("prefix-length", ["addr add 2001:db8::1/32 dev r1", "addr add 2001:db8:ff::1/48 dev r1"],
     "-6 route add fd00:99::/64 encap seg6 mode encap segs 2001:db8:0:1::5 dev r1"),
]
# Every segment is routed through r1 to the receiver.
ROUTES = ["-6 route add 2001:db8:0:1::/64 via fd00:2::2 dev r1"]
FRAMES = [udp6("fd00:99::1", tag=1), udp6("fd00:99::2", size=100, tag=2)]


@pytest.fixture(scope="module")
def topo(request):
    t = live_topo(request, "sa")
    run(["ip", "link", "add", R2, "netns", t.rns, "type", "veth", "peer", "name", "x2", "netns", t.topo.name(t.d)])
    t.topo.ip(t.d, "link set x2 up")
    t.topo.ip(t.r, f"link set {R2} up")
    return t


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("saddr"))


def base():
    return LIVE_BASE[:2] + [f"link add {R2}"] + LIVE_BASE[2:] + ROUTES


def sources(topo):
    """The outer sources of FRAMES as they reach the receiver (one per frame, or the test fails)."""
    got = xfer(topo.s0, FRAMES, topo.d0, expect=len(FRAMES), timeout=2.0, keep=with_marker)[topo.d0.label]
    assert len(got) == len(FRAMES), f"{len(got)} of {len(FRAMES)} frames reached the receiver"
    return [ip6str(f[14 + 8:14 + 24]) for f in got]


def kernel_source(topo, addrs, route, runtime):
    """The source the kernel router puts in the outer header, the addresses added before the route (from the
    configuration) or after it (at run time)."""
    sysctl_set(topo.rns, f"net.ipv6.conf.{R2}.disable_ipv6", 0)
    st = base() + (addrs + [route] if not runtime else [route] + addrs)
    try:
        topo.kernel_mode(st)
        src = sources(topo)
    finally:
        topo.lwt6_mode()
        sysctl_set(topo.rns, f"net.ipv6.conf.{R2}.disable_ipv6", 1)
    assert len(set(src)) == 1, src
    return src[0]


@pytest.mark.parametrize("runtime", [False, True], ids=["config", "ctl"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_tied_sources_are_the_kernels(topo, workdir, case, runtime):
    name, addrs, route = case
    want = kernel_source(topo, addrs, route, runtime)
    conf = base() + (addrs if not runtime else []) + [route]
    r = LiveRouter(topo.rns, "\n".join(conf) + "\n", workdir, args=["--io", "packet"],
                   label=f"sa-{name}-{int(runtime)}")
    try:
        if runtime:
            for a in addrs:
                out = r.ctl(*a.split())
                assert out.returncode == 0, (a, out.stdout, out.stderr)
        got = sources(topo)
        if runtime:
            # lwt6 has no `addr del` (the kernel's would take the address out of the selection): refused by name,
            # nothing changed.
            a = addrs[-1].split()
            out = r.ctl("addr", "del", *a[2:])
            assert out.returncode != 0 and "'del': unsupported command" in out.stdout + out.stderr, out
            assert sources(topo) == got
    finally:
        final = r.stop()
    assert got == [want] * len(FRAMES), f"{name}: the kernel used {want}, lwt6 {got}"
    assert final["balanced"] and final["tx"] >= len(FRAMES), final
