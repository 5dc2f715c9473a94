"""The egress MTU at its boundary: Linux vs lwt6 for every seg6 mode, End.B6, End.B6.Encaps and End.DX2.

Every case sends packets whose size after the tunnel is exactly the egress MTU (1500), one byte over, and 14 bytes
over (the Ethernet header an l2 mode keeps: a check that forgot it would let these through). The sizes are derived
here by hand from the layouts (RFC 8754 §2 SRH: 8 + 16 per entry; the outer IPv6 header: 40; the l2 modes carry the
received Ethernet frame, header included; docs/references.md §1.4 for the reduced modes and iproute2's inline
slot), never from either router's output.

What Linux 6.18 does (measured here, the kernel half): the outer packet is checked in `ip6_forward` against the
egress MTU. At most 1500 bytes: forwarded. More: dropped, and an ICMPv6 Packet Too Big with the link MTU (1500) is
sent to the OUTER source. For encap, encap.red, the l2 modes and End.B6.Encaps that source is the router itself
(its PTB-sent and PTB-received counters rise together; the sender never learns); for inline and End.B6, which keep
the sender's address, it reaches the sender but quotes the packet with the SRH already inserted (a destination the
sender never used) and an MTU that does not make its packet any smaller. IPv4 inside: no ICMPv4 and no
fragmentation, DF or not. End.DX2 drops an inner frame longer than the oif's MTU + 14 silently.

lwt6 (the lwt6 half): the same frames forwarded, byte for byte, at every boundary; every frame over the MTU dropped
`mtu_exceeded` (End.DX2: `seg6local_l2_frame`); for an IPv6 packet a Packet Too Big to the original sender quoting
its packet, with the MTU that lets it through the tunnel, 1500 minus the bytes added (not below 1280): a deliberate
difference (docs/linux-compat.md, difference 1). Nothing to the sender for IPv4, as Linux.

r0 and the sender's s0 take 1600 bytes during this module, so that every frame is received and only the egress
check decides (End.DX2's boundary cannot be reached otherwise).
"""
import struct

import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktnet import in_ns, xfer
from ktpkt import MAC_D0, MAC_R0, MARKER, compare_frames, ip6str, udp4, udp6, with_marker
from ktsrv6 import NH_ETH, eth, frame6, inner6, parse_icmp6, srv6

MTU = 1500
WIDE = 1600            # r0 / s0 during this module
MODES = ["inline", "encap", "encap.red", "l2encap", "l2encap.red"]
V4_MODES = ["encap", "encap.red", "l2encap", "l2encap.red"]   # Linux refuses inline for IPv4
DELTAS = [0, 1, 14]
SIDS = ["fc00::1", "fc00::2"]


def seg6_growth(mode, n):
    """Bytes a seg6 route with n SIDs puts in front of the received packet, by hand."""
    if mode == "inline":
        return 8 + 16 * (n + 1)               # one more slot, for the original destination
    srh = 8 + 16 * n
    if mode.endswith(".red"):
        srh = 0 if n == 1 else srh - 16       # the first SID only in the destination; one SID: no SRH at all
    return 40 + srh + (14 if mode.startswith("l2") else 0)


class Case:
    def __init__(self, kind, idx, delta, mode=None, n=None, inner="v6"):
        self.kind, self.idx, self.delta, self.mode, self.n, self.inner = kind, idx, delta, mode, n, inner
        self.tag = 0x100 + len(CASES)
        what = f"{mode}-{n}sid-{inner}" if kind == "seg6" else kind
        self.id = f"{what}-{'fits' if delta == 0 else f'+{delta}'}"

    @property
    def growth(self):
        return {"seg6": lambda: seg6_growth(self.mode, self.n),
                # End.B6 inserts an SRH [old destination, fc00::c, fc00::b]: 8 + 48
                "end.b6": lambda: 8 + 16 * 3,
                # End.B6.Encaps: an outer IPv6 header and an SRH of the 2 policy SIDs
                "end.b6.encaps": lambda: 40 + 8 + 16 * 2,
                # End.DX2 removes the outer headers: its limit is on the inner frame (MTU + 14)
                "end.dx2": lambda: 0}[self.kind]()

    @property
    def over(self):
        return self.delta > 0

    def frame(self):
        if self.kind == "seg6":
            # The received IPv6 (or IPv4) packet: L bytes, L + growth = 1500 + delta.
            L = MTU - self.growth + self.delta
            if self.inner == "v6":
                return udp6(f"fd00:c{self.idx:x}::1", size=L - 48, tag=self.tag)
            # DF on the packet one byte over, off on the others: Linux drops them alike.
            return udp4(f"10.{200 + self.idx}.0.1", size=L - 28, tag=self.tag, df=self.delta == 1)
        if self.kind == "end.dx2":
            # The inner frame: 14 + 48 + size bytes, 1500 + delta without its Ethernet header.
            return frame6("fc00:1::d2", NH_ETH, self.inner_frame())
        sid = "fc00:1::b6" if self.kind == "end.b6" else "fc00:1::be"
        # The received packet: 40 + SRH (8 + 32) + UDP (8 + size) bytes; + growth = 1500 + delta.
        size = MTU - self.growth + self.delta - 88
        return srv6(sid, ["fd00:2::2", sid], 1, tag=self.tag, size=size)

    def inner_frame(self):
        # To an address nobody has (rcvr, not forwarding, drops it: no port unreachable comes back).
        return eth(MAC_D0, "02:aa:aa:aa:aa:aa") + inner6(dst="fd00:2::99", size=MTU - 48 + self.delta, tag=self.tag)

    def ptb_to_self(self):
        """Linux's error for this frame goes to the router's own address (the outer source)."""
        return self.over and self.kind in ("seg6", "end.b6.encaps") and self.mode != "inline"

    def ptb_to_sender(self):
        """Linux's error reaches the sender (inline and End.B6 keep its source address)."""
        return self.over and (self.mode == "inline" or self.kind == "end.b6")


CASES = []
ROUTES = []
for i, (mode, n, inner) in enumerate([(m, n, "v6") for m in MODES for n in (1, 2)]
                                     + [(m, n, "v4") for m in V4_MODES for n in (1, 2)]):
    pfx = f"-6 route add fd00:c{i:x}::/64" if inner == "v6" else f"-4 route add 10.{200 + i}.0.0/24"
    ROUTES.append(f"{pfx} encap seg6 mode {mode} segs {','.join(SIDS[:n])} dev r1")
    for d in DELTAS:
        CASES.append(Case("seg6", i, d, mode, n, inner))
ROUTES += ["-6 route add fc00:1::b6/128 encap seg6local action End.B6 srh segs fc00::b,fc00::c dev r0",
           "-6 route add fc00:1::be/128 encap seg6local action End.B6.Encaps srh segs fc00::b,fc00::c dev r0",
           "-6 route add fc00:1::d2/128 encap seg6local action End.DX2 oif r1 dev r0"]
for kind in ("end.b6", "end.b6.encaps", "end.dx2"):
    for d in DELTAS:
        CASES.append(Case(kind, None, d))
assert len({c.tag for c in CASES}) == len(CASES)


def tag_of(frame):
    """The tag of the payload a frame carries (forwarded, or quoted by an ICMP error)."""
    at = frame.find(MARKER)
    return None if at < 0 else frame[at + 4] | frame[at + 5] << 8


def with_tag(frames, tag):
    return [f for f in frames if tag_of(f) == tag]


def lwt6_description():
    base = [f"link add r0 address {MAC_R0} mtu {WIDE}" if s.startswith("link add r0 ") else s for s in RTR_BASE]
    assert base != RTR_BASE
    return base + ROUTES


def snmp6(ns):
    """The IPv6 MIB counters of namespace ns (/proc/net/snmp6 read from inside it)."""
    def read():
        with open("/proc/thread-self/net/snmp6") as f:
            return {k: int(v) for k, v in (line.split() for line in f if line.strip())}
    return in_ns(ns, read)


@pytest.fixture(scope="module")
def wide(topo3):
    """s0 and r0 with MTU 1600 for this module, 1500 again afterwards."""
    t = topo3.topo
    try:
        t.ip("sndr", f"link set s0 mtu {WIDE}")
        t.ip("rtr", f"link set r0 mtu {WIDE}")
        yield topo3
    finally:
        t.ip("sndr", f"link set s0 mtu {MTU}", check=False)
        t.ip("rtr", f"link set r0 mtu {MTU}", check=False)


_kernel = {}


def kernel(wide):
    """All frames through the kernel router at once: {"d0": [...], "s0": [...], "snmp": counter deltas}."""
    if not _kernel:
        rtr, ns = wide.rtr, wide.topo.name("rtr")
        frames = [c.frame() for c in CASES]
        want = sum(not c.over for c in CASES) + sum(c.ptb_to_sender() for c in CASES)
        try:
            rtr.apply(ROUTES)
            before = snmp6(ns)
            got = xfer(wide.s0, frames, [wide.d0, wide.s0], expect=want, timeout=2.0, settle=0.3,
                       keep=with_marker)
            after = snmp6(ns)
        finally:
            rtr.undo()
        _kernel.update(d0=got[wide.d0.label], s0=got[wide.s0.label],
                       snmp={k: after[k] - before.get(k, 0) for k in after})
    return _kernel


_lwt6 = {}


def lwt6_run(lwt6):
    if not _lwt6:
        res = lwt6.pcap(render(lwt6_description())[1], [c.frame() for c in CASES], in_dev="r0", label="mtu")
        _lwt6["res"] = res
    return _lwt6["res"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kernel_mtu(wide, case):
    """The kernel half: forwarded at 1500 bytes exactly, dropped above; the PTB to the sender only where the outer
    source is the sender's (inline, End.B6), with MTU 1500 and the packet as it would have left."""
    k = kernel(wide)
    out, back = with_tag(k["d0"], case.tag), with_tag(k["s0"], case.tag)
    if not case.over:
        assert len(out) == 1, f"the kernel forwarded {len(out)} frames"
        assert len(out[0]) == 14 + MTU
        if case.kind == "end.dx2":
            assert out[0] == case.inner_frame(), "End.DX2 sends the inner frame as it is"
        assert back == []
        return
    assert out == [], f"the kernel forwarded a {len(out[0])}-byte frame"
    if not case.ptb_to_sender():
        assert back == [], "no error reaches the sender"
        return
    assert len(back) == 1, back
    ty, code, mtu, quoted, src, dst = parse_icmp6(back[0])
    assert (ty, code, mtu, src, dst) == (2, 0, MTU, "fd00:1::2", "fd00:1::1")
    sent = case.frame()[14:]
    # The quote is the packet after the insertion, hop limit not yet decremented: its destination is the first
    # new segment, its length the received one plus the inserted SRH.
    assert ip6str(quoted[24:40]) == ("fc00::1" if case.kind == "seg6" else "fc00::b")
    assert quoted[7] == sent[7]
    assert struct.unpack(">H", quoted[4:6])[0] + 40 == len(sent) + case.growth
    assert len(back[0]) == 14 + 1280, "cut at the IPv6 minimum MTU"


def test_kernel_sends_its_packet_too_big_errors_to_itself(wide):
    """Every frame over the MTU but End.DX2's makes one PTB; those whose outer source is the router come back to
    it (Icmp6InPktTooBigs), i.e. every one but inline's and End.B6's."""
    s = kernel(wide)["snmp"]
    assert s["Icmp6OutPktTooBigs"] == sum(c.over and c.kind != "end.dx2" for c in CASES), s
    assert s["Icmp6InPktTooBigs"] == sum(c.ptb_to_self() for c in CASES), s


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_lwt6_mtu(wide, lwt6, case):
    """lwt6: the kernel's frames on r1 at every boundary; over the MTU, a PTB to the sender with the tunnel's MTU
    for IPv6 (docs/linux-compat.md, difference 1), nothing for IPv4 and End.DX2."""
    kern = with_tag(kernel(wide)["d0"], case.tag)
    res = lwt6_run(lwt6)
    compare_frames(kern, with_tag(res.on("r1"), case.tag), f"mtu {case.id} on r1")
    back = with_tag(res.on("r0"), case.tag)
    if not case.over or case.inner == "v4" or case.kind == "end.dx2":
        assert back == [], f"{len(back)} frame(s) back to the sender"
        return
    assert len(back) == 1, back
    ty, code, mtu, quoted, src, dst = parse_icmp6(back[0])
    assert (ty, code, src, dst) == (2, 0, "fd00:1::2", "fd00:1::1")
    assert mtu == max(MTU - case.growth, 1280), "the largest packet the tunnel carries in 1500 bytes"
    sent = case.frame()[14:]
    assert quoted[8:24] == sent[8:24] and quoted[4:6] == sent[4:6], "quotes the packet as received"
    assert len(back[0]) == 14 + 1280


def test_lwt6_counts_every_frame(wide, lwt6):
    """One named drop per frame over the MTU; the counters balance."""
    st = lwt6_run(lwt6).stats
    assert st["rx"] == len(CASES), st
    assert st["drops"] == {"mtu_exceeded": sum(c.over and c.kind != "end.dx2" for c in CASES),
                           "seg6local_l2_frame": sum(c.over and c.kind == "end.dx2" for c in CASES)}, st
    assert st["balanced"], st
