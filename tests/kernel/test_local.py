"""Traffic to the router itself, ICMPv4 errors and unresolved next hops: the kernel router and lwt6 answer the same
frames.

Neighbor Solicitations (multicast, unicast, duplicate address detection), ICMPv6 and ICMPv4 echo requests and ARP
requests go to the router's addresses; IPv4 datagrams that cannot be forwarded (TTL 1, no route, too big with DF)
go through it. lwt6 (`lwt6 pcap`, offline: no dynamic resolution, static neighbours as in RTR_BASE) must send the
same frames back on r0. Masked, because the kernel chooses them from per-boot secrets or global counters: the flow
label of the ICMPv6 echo reply (auto_flowlabels) and the IPv4 identification (with the header checksum that covers
it) of the ICMPv4 messages. Nothing else is masked.

Unresolved next hops (`lwt6 pcap --resolve`, nobody answering): the kernel and lwt6 send the same three multicast
Neighbor Solicitations and ARP requests on r1 and, after the last, the same ICMPv6 address unreachable and ICMPv4
host unreachable on r0, quoting the packets with their hop limit / TTL already decremented. The solicitations come
from r1's link-local address, which the kernel made itself and lwt6 is given in its configuration.
"""
import pytest
from scapy.layers.inet import ICMP, IP
from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import raw

from kttopo import RTR_BASE
from ktconf import render
from ktnet import xfer
from ktpkt import MAC_R0, MAC_S0, compare_frames, udp4, udp6

# Routes the IPv4 error cases need (the kernel and lwt6 get the same).
EXTRA = ["route add 10.9.0.0/16 via 10.2.0.2 dev r1 mtu 100"]


def ns(target, src="fd00:1::1", dst=None, sll=True, hlim=255):
    dst = dst or "ff02::1:ff" + target.split(":")[-1].rjust(6, "0")[-6:-4] + ":" + target.split(":")[-1].rjust(4, "0")
    dmac = MAC_R0 if not dst.startswith("ff") else "33:33:" + ":".join(
        f"{b:02x}" for b in __import__("ipaddress").IPv6Address(dst).packed[12:])
    p = Ether(src=MAC_S0, dst=dmac) / IPv6(src=src, dst=dst, hlim=hlim) / ICMPv6ND_NS(tgt=target)
    if sll:
        p = p / ICMPv6NDOptSrcLLAddr(lladdr=MAC_S0)
    return raw(p)


def echo6(dst, tc=0):
    return raw(Ether(src=MAC_S0, dst=MAC_R0) / IPv6(src="fd00:1::1", dst=dst, tc=tc, hlim=64)
               / ICMPv6EchoRequest(id=0x1234, seq=7, data=b"L6T!ping"))


def echo4(dst, tos=0):
    return raw(Ether(src=MAC_S0, dst=MAC_R0) / IP(src="10.1.0.1", dst=dst, tos=tos, id=0x4242, flags="DF")
               / ICMP(type=8, id=0x1234, seq=7) / b"L6T!ping")


def arp_req(target):
    return raw(Ether(src=MAC_S0, dst="ff:ff:ff:ff:ff:ff")
               / ARP(op=1, hwsrc=MAC_S0, psrc="10.1.0.1", hwdst="00:00:00:00:00:00", pdst=target))


def is_na(f):
    return len(f) > 54 and f[12:14] == b"\x86\xdd" and f[20] == 58 and f[54] == 136


def is_echo6_reply(f):
    return len(f) > 54 and f[12:14] == b"\x86\xdd" and f[20] == 58 and f[54] == 129


def is_arp_reply(f):
    return f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02"


def is_icmp4(f):
    return f[12:14] == b"\x08\x00" and f[23] == 1


# (id, frame, what an answer looks like, how many the kernel sends: 0 where it stays silent)
CASES = [
    ("ns-multicast", ns("fd00:1::2"), is_na, 1),
    ("ns-unicast-no-sll", ns("fd00:1::2", dst="fd00:1::2", sll=False), is_na, 1),
    ("ns-dad", ns("fd00:1::2", src="::", sll=False), is_na, 1),
    # The target is the router's, but on r1: a solicitation on r0 is not answered.
    ("ns-other-interface-address", ns("fd00:2::1"), is_na, 0),
    ("ns-hop-limit-64", ns("fd00:1::2", hlim=64), is_na, 0),
    ("echo6", echo6("fd00:1::2", tc=0x28), is_echo6_reply, 1),
    ("echo6-other-interface-address", echo6("fd00:2::1"), is_echo6_reply, 1),
    ("arp", arp_req("10.1.0.2"), is_arp_reply, 1),
    # arp_ignore = 0: any local address is answered, whatever interface holds it.
    ("arp-other-interface-address", arp_req("10.2.0.1"), is_arp_reply, 1),
    ("arp-not-ours", arp_req("10.1.0.77"), is_arp_reply, 0),
    ("echo4", echo4("10.1.0.2", tos=0x10), is_icmp4, 1),
    ("echo4-other-interface-address", echo4("10.2.0.1"), is_icmp4, 1),
    ("ttl1", udp4("10.2.0.2", ttl=1, tos=0x08, size=24), is_icmp4, 1),
    ("no-route", udp4("10.77.0.1", size=24), is_icmp4, 1),
    ("frag-needed", udp4("10.9.0.1", df=True, size=200), is_icmp4, 1),
    # Without DF the kernel fragments (lwt6 drops, docs/linux-compat.md): no ICMPv4 from either.
    ("too-big-no-df", udp4("10.9.0.1", df=False, size=200), is_icmp4, 0),
]

_kernel = {}


def mask(f):
    """The fields the kernel draws from secrets or counters (see the module doc)."""
    f = bytearray(f)
    if f[12:14] == b"\x86\xdd" and len(f) > 54 and f[20] == 58 and f[54] == 129:
        f[15] &= 0xF0
        f[16] = f[17] = 0
    if f[12:14] == b"\x08\x00" and len(f) >= 34 and f[23] == 1:
        f[18:20] = b"\0\0"
        f[24:26] = b"\0\0"
    return bytes(f)


def kernel(topo3, case):
    if case[0] not in _kernel:
        rtr = topo3.rtr
        try:
            rtr.apply(EXTRA)
            got = xfer(topo3.s0, [case[1]], [topo3.s0, topo3.d0], timeout=0.4, keep=case[2], noise=True)
        finally:
            rtr.undo()
        _kernel[case[0]] = (got[topo3.s0.label], got[topo3.d0.label])
    return _kernel[case[0]]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_lwt6_answers_like_the_kernel(topo3, lwt6, case):
    """The same answers on r0, byte for byte (masks above), nothing on r1; every frame accounted for."""
    back, _ = kernel(topo3, case)
    assert len(back) == case[3], f"{case[0]}: the kernel sent {len(back)} answers, expected {case[3]}"
    res = lwt6.pcap(render(RTR_BASE + EXTRA)[1], [case[1]], in_dev="r0", label=f"local-{case[0]}")
    compare_frames([mask(f) for f in back], [mask(f) for f in res.on("r0") if case[2](f)],
                   f"local {case[0]} (sent back on r0)")
    assert res.on("r1") == [], res.stats
    assert res.stats["balanced"], res.stats
    if case[3] == 0:
        assert res.drops() == 1, res.stats


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_kernel_answers(topo3, case):
    """The kernel half alone: it answers (or not) as the table says."""
    assert len(kernel(topo3, case)[0]) == case[3], case[0]


# Gateways nobody answers for (prefixes outside RTR_BASE's, so undoing them leaves it intact).
UNRESOLVED = [
    "addr add fe80::ff:fe00:201/64 dev r1",
    "-6 route add fd99::/16 via fd00:2::99 dev r1",
    "route add 10.99.0.0/16 via 10.2.0.99 dev r1",
]
UNRESOLVED_FRAMES = [udp6("fd99::1", size=16, tag=3), udp4("10.99.0.1", size=16)]


def is_solicitation(f):
    return (f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x01") or \
        (f[12:14] == b"\x86\xdd" and len(f) > 54 and f[20] == 58 and f[54] == 135)


def is_unreachable(f):
    return (f[12:14] == b"\x86\xdd" and len(f) > 54 and f[20] == 58 and f[54] == 1) or \
        (f[12:14] == b"\x08\x00" and f[23] == 1 and f[34] == 3)


def mask_unreachable(f):
    f = bytearray(f)
    if f[12:14] == b"\x86\xdd":
        f[15] &= 0xF0
        f[16] = f[17] = 0
    else:
        f[18:20] = b"\0\0"
        f[24:26] = b"\0\0"
    return bytes(f)


_unresolved = {}


def kernel_unresolved(topo3):
    if not _unresolved:
        rtr = topo3.rtr
        try:
            rtr.apply(UNRESOLVED)
            got = xfer(topo3.s0, UNRESOLVED_FRAMES, [topo3.s0, topo3.d0], timeout=4.5, noise=True)
        finally:
            rtr.undo()
        _unresolved["r0"] = [f for f in got[topo3.s0.label] if is_unreachable(f)]
        _unresolved["r1"] = [f for f in got[topo3.d0.label] if is_solicitation(f)]
    return _unresolved


def test_kernel_gives_up_on_unanswered_next_hops(topo3):
    """The kernel half: three solicitations of each kind on r1, one ICMPv6 and one ICMPv4 error on r0."""
    k = kernel_unresolved(topo3)
    assert len(k["r1"]) == 6 and len(k["r0"]) == 2, k


def test_lwt6_gives_up_like_the_kernel(topo3, lwt6):
    """lwt6 --resolve with nobody answering: the kernel's solicitations and errors, byte for byte (masks above)."""
    k = kernel_unresolved(topo3)
    res = lwt6.pcap(render(RTR_BASE + UNRESOLVED)[1], UNRESOLVED_FRAMES, in_dev="r0", label="unresolved",
                    extra=["--resolve"])
    for v4 in (False, True):
        def sol(f):
            return (f[12:14] == b"\x08\x06") == v4

        def err(f):
            return (f[12:14] == b"\x08\x00") == v4

        fam = "IPv4" if v4 else "IPv6"
        compare_frames([f for f in k["r1"] if sol(f)], [f for f in res.on("r1") if sol(f)],
                       f"unresolved {fam}: solicitations on r1")
        compare_frames([mask_unreachable(f) for f in k["r0"] if err(f)],
                       [mask_unreachable(f) for f in res.on("r0") if err(f)],
                       f"unresolved {fam}: errors on r0")
    assert res.stats["drops"] == {"neigh_unresolved": 2}, res.stats
    assert res.stats["balanced"] and res.stats["pending"] == 0, res.stats
