"""seg6 encapsulation: Linux vs lwt6, byte for byte (modes x segment counts x inner x HMAC)."""
import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktnet import xfer
from ktpkt import (MAC_D0, MAC_R1, compare_frames, parse_srh, srh_hmac, udp4, udp6, with_marker, ip6str)

MODES = ["inline", "encap", "l2encap", "encap.red", "l2encap.red"]
NSEGS = [1, 2, 3, 7, 13, 17]
V4_MODES = ["encap", "encap.red", "l2encap", "l2encap.red"]   # Linux rejects inline for IPv4
SECRET = "mysecret"
TUNSRC = "fc00:ffff::1"


class Case:
    def __init__(self, mode, n, inner, hmac, tunsrc=None, flowlabel=0):
        self.mode, self.n, self.inner, self.hmac, self.tunsrc, self.flowlabel = mode, n, inner, hmac, tunsrc, flowlabel
        self.id = f"{mode}-{n}seg-{inner}-{'hmac' if hmac else 'nohmac'}" + \
            (f"-tunsrc" if tunsrc else "") + (f"-fl{flowlabel}" if flowlabel else "")

    @property
    def segs(self):
        return [f"fc00::{i:x}" for i in range(1, self.n + 1)]

    def statements(self):
        st = [f"sysctl net.ipv6.seg6_flowlabel={self.flowlabel}"]
        if self.hmac:
            st.append(f"sr hmac set 42 sha256 secret {SECRET}")
        if self.tunsrc:
            st.append(f"sr tunsrc set {self.tunsrc}")
        pfx = "-6 route add fd00:99::/64" if self.inner == "v6" else "-4 route add 10.99.0.0/24"
        st.append(f"{pfx} encap seg6 mode {self.mode} segs {','.join(self.segs)}"
                  f"{' hmac 42' if self.hmac else ''} dev r1")
        return st

    def frames(self):
        """Inputs varying flow label, traffic class / TOS, hop limit / TTL and size (valid UDP checksums)."""
        if self.inner == "v6":
            return [udp6("fd00:99::1", fl=0x12345, tc=0xb8, hlim=64, size=5, tag=1),
                    udp6("fd00:99::2", fl=0, tc=0, hlim=2, size=0, tag=2),
                    udp6("fd00:99::abcd", fl=0xFFFFF, tc=0xFF, hlim=255, size=900, tag=3),
                    udp6("fd00:99::1", src="fd00:1::77", fl=1, tc=0x03, hlim=17, size=333, tag=4)]
        return [udp4("10.99.0.1", tos=0xb8, ttl=64, ident=0x4242, size=6, tag=1),
                udp4("10.99.0.2", tos=0, ttl=2, ident=0, df=True, size=0, tag=2),
                udp4("10.99.0.200", tos=0xFF, ttl=255, ident=0xFFFF, size=900, tag=3),
                udp4("10.99.0.1", src="10.1.0.9", tos=0x03, ttl=17, ident=7, df=True, size=333, tag=4)]

    def srh_entries(self):
        if self.mode == "inline":
            return self.n + 1
        if self.mode.endswith(".red"):
            return max(self.n - 1, 1)
        return self.n

    def expect_drop(self):
        # The kernel refuses to compute an HMAC whose text (16+1+1+4+16*entries) is >= 256 bytes.
        return self.hmac and 22 + 16 * self.srh_entries() >= 256


CASES = [Case(m, n, "v6", h) for m in MODES for n in NSEGS for h in (False, True)] + \
        [Case(m, n, "v4", h) for m in V4_MODES for n in NSEGS for h in (False, True)]
EXTRA = [Case("encap", 3, "v6", False, tunsrc=TUNSRC), Case("encap", 3, "v6", True, tunsrc=TUNSRC),
         Case("encap.red", 1, "v6", True, tunsrc=TUNSRC), Case("l2encap.red", 2, "v4", False, tunsrc=TUNSRC),
         Case("encap", 2, "v6", False, flowlabel=-1), Case("inline", 2, "v6", True, tunsrc=TUNSRC)]
ALL = CASES + EXTRA

_kernel_cache = {}


def kernel_output(topo3, case):
    """Install the case on the kernel router, send its frames, return the frames seen at d0 (cached)."""
    if case.id not in _kernel_cache:
        rtr = topo3.rtr
        try:
            rtr.apply(case.statements())
            frames = case.frames()
            got = xfer(topo3.s0, frames, topo3.d0, expect=0 if case.expect_drop() else len(frames),
                       timeout=0.15 if case.expect_drop() else 1.0, keep=with_marker)
        finally:
            rtr.undo()
        _kernel_cache[case.id] = got[topo3.d0.label]
    return _kernel_cache[case.id]


def lwt6_config(case):
    return render(RTR_BASE + case.statements())[1]


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.id)
def test_kernel_seg6(topo3, case):
    """The kernel half alone: right number of frames and the SRH structure of docs/references.md §1.4."""
    out = kernel_output(topo3, case)
    ins = case.frames()
    if case.expect_drop():
        assert out == [], f"kernel unexpectedly forwarded {len(out)} frame(s) with a >=256-byte HMAC text"
        return
    assert len(out) == len(ins), f"kernel forwarded {len(out)} of {len(ins)} frames"
    for fin, fout in zip(ins, out):
        assert fout[:12] == bytes.fromhex(MAC_D0.replace(":", "") + MAC_R1.replace(":", ""))
        ip6 = fout[14:]
        assert ip6[0] >> 4 == 6
        assert ip6str(ip6[24:40]) == "fc00::1", "outer DA must be the first SID"
        src = "fd00:1::1" if case.mode == "inline" else (case.tunsrc or "fd00:2::1")
        if case.mode == "inline" and fin[14] >> 4 == 6:
            src = ip6str(fin[14 + 8:14 + 24])
        assert ip6str(ip6[8:24]) == src
        srh = parse_srh(ip6)
        if case.mode.endswith(".red") and case.n == 1 and not case.hmac:
            assert srh is None, "encap.red with one segment carries no SRH"
            continue
        assert srh is not None
        assert srh["le"] == case.srh_entries() - 1
        assert srh["sl"] == (case.n if case.mode == "inline" else case.n - 1) or (case.n == 1 and srh["sl"] == 0)
        if case.hmac:
            assert srh["flags"] & 0x08
            tlv = srh["tlvs"]
            assert tlv[:8] == bytes.fromhex("05260000 0000002a".replace(" ", ""))
            h = ip6[40:40 + srh["len"]]
            assert tlv[8:40] == srh_hmac(SECRET.encode(), src, h, 42), "kernel HMAC differs from RFC 8754 recomputation"
        inner_off = 40 + srh["len"]
        if case.mode in ("encap", "encap.red"):
            assert ip6[inner_off:] == fin[14:], "inner packet must be carried unchanged"
        elif case.mode.startswith("l2encap"):
            assert ip6[inner_off:] == fin, "inner Ethernet frame must be carried unchanged"


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.id)
def test_lwt6_seg6(topo3, lwt6, case):
    """lwt6 with the same description emits exactly the kernel's frames on r1."""
    kern = kernel_output(topo3, case)
    frames = case.frames()
    res = lwt6.pcap(lwt6_config(case), frames, in_dev="r0", label=f"seg6-{case.id}")
    compare_frames(kern, res.on("r1"), f"seg6 {case.id}")
    assert set(res.devs()) <= {"r1"}, f"lwt6 emitted frames on unexpected devices {res.devs()}"
    if case.expect_drop():
        assert res.drops() == len(frames), f"lwt6 must count {len(frames)} drops, stats: {res.stats}"
    if res.stats:
        assert res.stats.get("rx") == len(frames), res.stats
        assert res.stats.get("tx") == len(kern), res.stats


# Per-route tunsrc (iproute2 6.1 has no keyword for it, so the kernel cannot take it): lwt6 with the route's
# `tunsrc T` (over a different `sr tunsrc`, or alone) must emit exactly the kernel's frames for `sr tunsrc set T`:
# the route's address wins (docs/references.md §1.2) and the HMAC covers it.
PER_ROUTE = [c for c in EXTRA if c.tunsrc and c.mode != "inline"]


def per_route_statements(case, global_src):
    st = [s for s in case.statements() if not s.startswith("sr tunsrc")]
    if global_src:
        st.append(f"sr tunsrc set {global_src}")
    assert st[-2 if global_src else -1].endswith(" dev r1")
    i = -2 if global_src else -1
    st[i] = st[i][:-len(" dev r1")] + f" tunsrc {case.tunsrc} dev r1"
    return st


@pytest.mark.parametrize("global_src", ["fc00:eeee::9", None], ids=["over-sr-tunsrc", "alone"])
@pytest.mark.parametrize("case", PER_ROUTE, ids=lambda c: c.id)
def test_lwt6_seg6_per_route_tunsrc(topo3, lwt6, case, global_src):
    kern = kernel_output(topo3, case)
    assert kern and ip6str(kern[0][14 + 8:14 + 24]) == case.tunsrc
    res = lwt6.pcap(render(RTR_BASE + per_route_statements(case, global_src))[1], case.frames(), in_dev="r0",
                    label=f"seg6-route-tunsrc-{case.id}")
    compare_frames(kern, res.on("r1"), f"seg6 per-route tunsrc {case.id} ({global_src or 'no sr tunsrc'})")
