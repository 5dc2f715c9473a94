"""Addresses RFC 4291 forbids on the wire (loopback, unspecified, IPv4-mapped): what the kernel router does with
them, with a default route in place, and lwt6 must do the same (frames forwarded on r1, ICMPv6 errors on r0)."""
import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktnet import xfer
from ktpkt import compare_frames, udp6, with_marker

DEFAULT = ["-6 route add default via fd00:2::2 dev r1"]

# (id, source, destination, hop limit)
CASES = [
    ("dst-loopback", "fd00:1::1", "::1", 64),
    ("dst-unspecified", "fd00:1::1", "::", 64),
    ("dst-v4mapped", "fd00:1::1", "::ffff:10.2.0.2", 64),
    ("src-loopback", "::1", "2001:db8::1", 64),
    ("src-loopback-hlim1", "::1", "2001:db8::1", 1),
    ("src-unspecified", "::", "2001:db8::1", 64),
    ("src-unspecified-hlim1", "::", "2001:db8::1", 1),
    ("src-v4mapped", "::ffff:10.1.0.1", "2001:db8::1", 64),
    ("src-v4mapped-hlim1", "::ffff:10.1.0.1", "2001:db8::1", 1),
    ("src-v4compat", "::10.1.0.1", "2001:db8::1", 64),
    ("dst-v4compat", "fd00:1::1", "::10.2.0.2", 64),
    ("control-ok", "fd00:1::1", "2001:db8::1", 64),
    ("control-hlim1", "fd00:1::1", "2001:db8::1", 1),
]

_kernel = {}


def no_icmp_flow_label(f):
    """The kernel gives the ICMPv6 errors it sends a flow label hashed with a per-boot secret (auto_flowlabels);
    lwt6 sends 0 (docs/linux-compat.md). Compared without it."""
    f = bytearray(f)
    if len(f) > 54 and f[12:14] == b"\x86\xdd" and f[20] == 58:
        f[15] &= 0xF0
        f[16] = f[17] = 0
    return bytes(f)


def frame(case):
    _, src, dst, hlim = case
    return udp6(dst, src=src, hlim=hlim, size=8, tag=7)


def kernel(topo3, case):
    if case[0] not in _kernel:
        rtr = topo3.rtr
        try:
            rtr.apply(DEFAULT)
            got = xfer(topo3.s0, [frame(case)], [topo3.s0, topo3.d0], timeout=0.3, keep=with_marker)
        finally:
            rtr.undo()
        _kernel[case[0]] = (got[topo3.s0.label], got[topo3.d0.label])
    return _kernel[case[0]]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_lwt6_forbidden_addresses(topo3, lwt6, case):
    """lwt6 forwards, answers and drops exactly as the kernel: the same frames on r1, as many ICMPv6 errors on r0
    (none when the kernel sends none), and a named drop for every frame it does not forward."""
    back, fwd = kernel(topo3, case)
    res = lwt6.pcap(render(RTR_BASE + DEFAULT)[1], [frame(case)], in_dev="r0", label=f"forbidden-{case[0]}")
    compare_frames([no_icmp_flow_label(f) for f in fwd], [no_icmp_flow_label(f) for f in res.on("r1")],
                   f"forbidden {case[0]} (sent on r1)")
    assert len(res.on("r0")) == len(back), \
        f"{case[0]}: kernel sent {len(back)} ICMPv6 error(s) back, lwt6 {len(res.on('r0'))}; stats {res.stats}"
    if not fwd:
        assert res.drops() == 1, res.stats


def test_kernel_control_cases_forward(topo3):
    """The harness itself: the valid frame is forwarded, the hop-limit-1 one answered."""
    assert len(kernel(topo3, CASES[-2])[1]) == 1
    assert len(kernel(topo3, CASES[-1])[0]) == 1
