"""Routes that drop (`route add blackhole|unreachable|prohibit PREFIX`, issue 24): what the kernel router does with
frames to them, with hop limit / TTL 64 and 1, with IPv6 forwarding off, from a link-local source, and lwt6 (from
the same configuration) must do the same: nothing on r1, as many ICMP errors back on r0 with the same bytes (the
flow label of the kernel's ICMPv6 errors aside, docs/linux-compat.md), and a named drop for every frame."""
import time

import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktnet import xfer
from ktpkt import compare_frames, udp4, udp6, with_marker

ROUTES = [
    "-6 route add blackhole fc00:b::/64",
    "-6 route add unreachable fc00:c::/64",
    "-6 route add prohibit fc00:d::/64",
    "-4 route add blackhole 10.60.0.0/16",
    "-4 route add unreachable 10.61.0.0/16",
    "-4 route add prohibit 10.62.0.0/16",
]
FWD_OFF = ["sysctl net.ipv6.conf.all.forwarding=0"]

# (id, frame, extra statements, lwt6's drop reason)
CASES = []
for kind, v6, v4, reason in [("blackhole", "fc00:b::1", "10.60.0.1", "blackhole_route"),
                             ("unreachable", "fc00:c::1", "10.61.0.1", "unreachable_route"),
                             ("prohibit", "fc00:d::1", "10.62.0.1", "prohibited_route")]:
    CASES += [
        (f"{kind}-v6", udp6(v6, size=8, tag=7), [], reason),
        (f"{kind}-v6-hlim1", udp6(v6, hlim=1, size=8, tag=7), [], reason),
        (f"{kind}-v6-fwd-off", udp6(v6, size=8, tag=7), FWD_OFF, reason),
        (f"{kind}-v6-src-ll", udp6(v6, src="fe80::1", size=8, tag=7), [], None),
        (f"{kind}-v4", udp4(v4, size=8, tag=7), [], reason),
        (f"{kind}-v4-ttl1", udp4(v4, ttl=1, size=8, tag=7), [], reason),
    ]


def no_icmp_flow_label(f):
    """The kernel gives its ICMPv6 errors a flow label hashed with a per-boot secret (auto_flowlabels); lwt6 sends
    0 (docs/linux-compat.md). Compared without it."""
    f = bytearray(f)
    if len(f) > 54 and f[12:14] == b"\x86\xdd" and f[20] == 58:
        f[15] &= 0xF0
        f[16] = f[17] = 0
    return bytes(f)


def no_ipv4_id(f):
    """The kernel's ICMPv4 errors carry an IP ID from its per-destination generator; compared without it (and
    without the header checksum that covers it)."""
    f = bytearray(f)
    if len(f) > 34 and f[12:14] == b"\x08\x00":
        f[18:20] = b"\0\0"
        f[24:26] = b"\0\0"
    return bytes(f)


def norm(frames):
    return [no_ipv4_id(no_icmp_flow_label(f)) for f in frames]


_kernel = {}


def kernel(topo3, case):
    if case[0] not in _kernel:
        rtr = topo3.rtr
        if "-v4" in case[0]:
            # The kernel rate-limits the ICMPv4 errors of reject routes per source (`ip_error`: a token a
            # second, a burst of 6): one second between the cases leaves each its token.
            time.sleep(1.0)
        try:
            rtr.apply(ROUTES + case[2])
            got = xfer(topo3.s0, [case[1]], [topo3.s0, topo3.d0], timeout=0.3, keep=with_marker)
        finally:
            rtr.undo()
        _kernel[case[0]] = (got[topo3.s0.label], got[topo3.d0.label])
    return _kernel[case[0]]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_lwt6_reject_routes_as_kernel(topo3, lwt6, case):
    back, fwd = kernel(topo3, case)
    assert not fwd, f"{case[0]}: the kernel forwarded a frame to a {case[0].split('-')[0]} route"
    res = lwt6.pcap(render(RTR_BASE + ROUTES + case[2])[1], [case[1]], in_dev="r0", label=f"reject-{case[0]}")
    assert not res.on("r1"), f"{case[0]}: lwt6 forwarded; stats {res.stats}"
    compare_frames(norm(back), norm(res.on("r0")), f"reject {case[0]} (sent back on r0)")
    assert res.drops() == 1, res.stats
    if case[3]:
        assert case[3] in str(res.stats), res.stats


def test_route_get_refused_as_kernel(topo3, tmp_path):
    """`ip route get` to a reject route fails with the route's error ("Invalid argument", "No route to host",
    "Permission denied"); `lwt6 route get` fails naming the same one."""
    import subprocess
    from ktlwt6 import lwt6_bin
    from ktnet import run
    conf = tmp_path / "reject.conf"
    conf.write_text(render(RTR_BASE + ROUTES)[1])
    rtr = topo3.rtr
    try:
        rtr.apply(ROUTES)
        for dst in ["fc00:b::1", "fc00:c::1", "fc00:d::1", "10.60.0.1", "10.61.0.1", "10.62.0.1"]:
            k = run(["ip", "-n", rtr.ns, "route", "get", dst], check=False)
            assert k.returncode != 0 and k.stderr.startswith("RTNETLINK answers: "), (dst, k.stdout, k.stderr)
            why = k.stderr.strip().removeprefix("RTNETLINK answers: ")
            for j in ([], ["-j"]):
                m = subprocess.run([str(lwt6_bin()), "route", "get", "-c", str(conf), dst, *j], capture_output=True,
                                   text=True, timeout=60)
                assert m.returncode != 0 and f"({why})" in m.stderr, (dst, why, m.stdout, m.stderr)
    finally:
        rtr.undo()
