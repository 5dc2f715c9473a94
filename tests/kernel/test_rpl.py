"""RPL (RFC 6554): (a) kernel nodes forward lwt6-inserted headers across a chain,
(b) kernel vs lwt6 as RPL intermediate node, byte for byte (maximally compressed inputs only,
where the kernel is correct: docs/references.md §3.4)."""
import pytest

from kttopo import RTR_BASE, chain_addrs
from ktconf import render
from ktnet import xfer
from ktpkt import (MAC_D0, compare_frames, ip6str, parse_rpl, rpl_srh, udp6, udp_over_rh, udp_checksum_ok,
                   with_marker)

# ------------------------------------------------------------------------------------------------
# (a) lwt6 inserts, three kernel RPL nodes forward

MAC_LI = "02:00:00:00:00:21"
K = {n: chain_addrs(n) for n in (1, 2, 3, 9)}      # node -> [fd00:ff::N, fd00:ff:N::1]
VARIANTS = [("cmpr15", 0), ("cmpr5", 1)]           # which of the node addresses the route uses


def inserter_config(chain):
    st = [f"link add li address {MAC_LI} mtu 1500",
          f"link add r1 address {chain.s0_mac} mtu 1500",
          "addr add fd00:b::1/64 dev li",
          "addr add fd00:a0::1/64 dev r1",
          f"neigh add fd00:a0::2 lladdr {chain.k1_mac} dev r1",
          "-6 route add fd00:ff::/32 via fd00:a0::2 dev r1"]
    for _, v in VARIANTS:
        segs = ",".join(K[n][v] for n in (1, 2, 3))
        st.append(f"-6 route add {K[9][v]}/128 encap rpl segs {segs} via fd00:a0::2 dev r1")
    return st


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v[0])
def test_kernel_rpl_chain(chain, variant):
    """Kernel half alone: a header shaped like lwt6's insertion (RFC 6554 + docs/references.md
    §3.3: DA = first segment, list = other segments + original DA, compressed against the new DA)
    crosses k1..k3 and arrives with DA = original destination and SL = 0."""
    _, v = variant
    dst = K[9][v]
    rh = rpl_srh([K[2][v], K[3][v], dst], 3, K[1][v])
    f = udp_over_rh(K[1][v], rh, dst, src="fd00:b::5", hlim=64, size=40, smac=chain.s0_mac, dmac=chain.k1_mac)
    got = xfer(chain.s0, [f], chain.d0, expect=1, keep=with_marker)[chain.d0.label]
    assert len(got) == 1
    r = parse_rpl(got[0][14:])
    assert r["da"] == dst and r["sl"] == 0 and r["addrs"] == [K[1][v], K[2][v], K[3][v]] and r["hlim"] == 61, r
    assert r["len"] == parse_rpl(f[14:])["len"]
    assert udp_checksum_ok(got[0][14:], 40 + r["len"], dst)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v[0])
def test_lwt6_rpl_through_kernel_chain(chain, lwt6, variant):
    _, v = variant
    dst = K[9][v]
    hlims = [64, 5, 255]
    ins = [udp6(dst, src="fd00:b::5", hlim=h, size=10 + 300 * i, tag=i, smac="02:00:00:00:00:55", dmac=MAC_LI)
           for i, h in enumerate(hlims)]
    res = lwt6.pcap(render(inserter_config(chain))[1], ins, in_dev="li", label=f"rpl-insert-{variant[0]}")
    mid = res.on("r1")
    assert len(mid) == len(ins), f"lwt6 emitted {len(mid)} frame(s) on r1; stats {res.stats}"
    for f in mid:
        r = parse_rpl(f[14:])
        assert r is not None, "lwt6 output carries no RPL header"
        assert r["da"] == K[1][v] and r["sl"] == 3 and r["addrs"] == [K[2][v], K[3][v], dst], r
    got = xfer(chain.s0, mid, chain.d0, expect=len(mid), keep=with_marker)[chain.d0.label]
    assert len(got) == len(mid), f"only {len(got)} of {len(mid)} frames crossed k1..k3"
    for h, fin, fo in zip(hlims, ins, got):
        ip6 = fo[14:]
        r = parse_rpl(ip6)
        assert r is not None and r["da"] == dst and r["sl"] == 0, r
        assert r["addrs"] == [K[1][v], K[2][v], K[3][v]], r
        assert ip6[7] == h - 4, "one hop-limit decrement per router (lwt6 + 3 kernel nodes)"
        assert ip6[40 + r["len"]:] == fin[14 + 40:], "UDP header + payload unchanged"
        assert udp_checksum_ok(ip6, 40 + r["len"], dst)


# ------------------------------------------------------------------------------------------------
# (b) kernel vs lwt6 as the intermediate node

RPL_ON = ["sysctl net.ipv6.conf.all.rpl_seg_enabled=1", "sysctl net.ipv6.conf.r0.rpl_seg_enabled=1",
          f"neigh add fd00:2::5 lladdr {MAC_D0} dev r1", f"neigh add fd00:2::100:5 lladdr {MAC_D0} dev r1"]


class RCase:
    def __init__(self, cid, addrs, sl, expect="fwd", enabled=True):
        self.id, self.addrs, self.sl, self.expect, self.enabled = cid, addrs, sl, expect, enabled

    def statements(self):
        st = list(RPL_ON)
        if not self.enabled:
            st += ["sysctl net.ipv6.conf.all.rpl_seg_enabled=0", "sysctl net.ipv6.conf.r0.rpl_seg_enabled=0"]
        return st

    def frames(self):
        rh = rpl_srh(self.addrs, self.sl, "fd00:2::1")
        return [udp_over_rh("fd00:2::1", rh, self.addrs[-1], hlim=h, size=s, tag=i)
                for i, (h, s) in enumerate([(64, 8), (3, 200), (255, 1000)])]


RCASES = [
    RCase("one-addr", ["fd00:2::2"], 1),
    RCase("two-addr-first-hop", ["fd00:2::5", "fd00:2::2"], 2),
    RCase("two-addr-last-hop-cmpr3", ["fd00:1::1", "fd00:2::2"], 1),
    RCase("own-address-twice", ["fd00:2::1", "fd00:2::2"], 2),
    RCase("pad-changes", ["fd00:2::100:5", "fd00:2::7"], 2),
    RCase("five-addr-mixed-prefixes", ["fd00:2::5", "fd00:3::1", "fd00:4::1", "fd00:5::1", "fd00:2::2"], 5),
    RCase("sl0-consumed", ["fd00:2::2"], 0, expect="none"),
    RCase("multicast-next-dropped", ["ff02::1"], 1, expect="none"),
    RCase("rpl-disabled-dropped", ["fd00:2::2"], 1, expect="none", enabled=False),
]

_kcache = {}


def kernel_rpl(topo3, case):
    if case.id not in _kcache:
        try:
            topo3.rtr.apply(case.statements())
            fr = case.frames()
            got = xfer(topo3.s0, fr, topo3.d0, expect=0 if case.expect == "none" else len(fr),
                       timeout=0.15 if case.expect == "none" else 1.0, keep=with_marker)
        finally:
            topo3.rtr.undo()
        _kcache[case.id] = got[topo3.d0.label]
    return _kcache[case.id]


@pytest.mark.parametrize("case", RCASES, ids=lambda c: c.id)
def test_kernel_rpl_intermediate(topo3, case):
    out, ins = kernel_rpl(topo3, case), case.frames()
    if case.expect == "none":
        assert out == []
        return
    assert len(out) == len(ins)
    for fin, fo in zip(ins, out):
        rin, rout = parse_rpl(fin[14:]), parse_rpl(fo[14:])
        assert fo[12:14] == b"\x86\xdd" and fo[14 + 8:14 + 24] == fin[14 + 8:14 + 24], "kernel output corrupted"
        assert rout is not None and rout["len"] == rin["len"], "only same-size recompression is a valid oracle"
        final = rout["da"] if rout["sl"] == 0 else rout["addrs"][-1]
        assert final == case.addrs[-1], rout
        assert rout["da"] == case.addrs[len(case.addrs) - case.sl] or case.id == "own-address-twice", rout
        assert udp_checksum_ok(fo[14:], 40 + rout["len"], case.addrs[-1])


@pytest.mark.parametrize("case", RCASES, ids=lambda c: c.id)
def test_lwt6_rpl_intermediate(topo3, lwt6, case):
    kern = kernel_rpl(topo3, case)
    conf = render(RTR_BASE + case.statements())[1]
    res = lwt6.pcap(conf, case.frames(), in_dev="r0", label=f"rpl-{case.id}")
    compare_frames(kern, res.on("r1"), f"RPL intermediate {case.id}")


# ------------------------------------------------------------------------------------------------
# (c) loop detection (docs/references.md §3.4 step 6): kernel vs lwt6, ICMPv6 errors included

# (id, addresses, segments left, expected of the kernel: "loop" = Parameter Problem code 0 pointer 0 back to the
# sender). lwt6 is stricter than the kernel where RFC 6554 §4.2 says so (two own addresses separated by a foreign one
# are a loop: docs/linux-compat.md, difference 24): RFC_LOOPS are loops for lwt6 although the kernel forwards them.
RFC_LOOPS = {"third-local-after-a-local", "two-separated-locals"}
LOOP_CASES = [
    ("local-after-two-locals-and-a-foreign", ["fd00:2::5", "fd00:2::1", "fd00:2::1", "fd00:2::6", "fd00:2::1"], 5,
     "loop"),
    ("local-x-local-y-local-z", ["fd00:2::1", "fd00:2::5", "fd00:2::1", "fd00:2::6", "fd00:2::1", "fd00:2::7"], 6,
     "loop"),
    ("third-local-after-a-local", ["fd00:2::5", "fd00:2::1", "fd00:2::6", "fd00:2::1", "fd00:2::1"], 5, "fwd"),
    ("two-separated-locals", ["fd00:2::5", "fd00:2::1", "fd00:2::6", "fd00:2::1"], 4, "fwd"),
]
_loop_cache = {}


def loop_frames(case):
    _, addrs, sl, _ = case
    return [udp_over_rh("fd00:2::1", rpl_srh(addrs, sl, "fd00:2::1"), addrs[-1], hlim=64, size=8, tag=40)]


def kernel_loop(topo3, case):
    if case[0] not in _loop_cache:
        try:
            topo3.rtr.apply(RPL_ON)
            got = xfer(topo3.s0, loop_frames(case), [topo3.s0, topo3.d0], expect=1, timeout=0.6, keep=with_marker)
        finally:
            topo3.rtr.undo()
        _loop_cache[case[0]] = (got[topo3.s0.label], got[topo3.d0.label])
    return _loop_cache[case[0]]


@pytest.mark.parametrize("case", LOOP_CASES, ids=lambda c: c[0])
def test_kernel_rpl_loop(topo3, case):
    back, out = kernel_loop(topo3, case)
    if case[3] == "loop":
        assert out == [] and len(back) == 1, (back, out)
        ip6 = back[0][14:]
        assert ip6[6] == 58 and ip6str(ip6[24:40]) == "fd00:1::1"
        assert (ip6[40], ip6[41], int.from_bytes(ip6[44:48], "big")) == (4, 0, 0), "Parameter Problem, pointer 0"
    else:
        assert back == [] and len(out) == 1, (back, out)
        assert parse_rpl(out[0][14:])["da"] == case[1][len(case[1]) - case[2]]


@pytest.mark.parametrize("case", LOOP_CASES, ids=lambda c: c[0])
def test_lwt6_rpl_loop(topo3, lwt6, case):
    from test_forbidden import no_icmp_flow_label
    back, out = kernel_loop(topo3, case)
    res = lwt6.pcap(render(RTR_BASE + RPL_ON)[1], loop_frames(case), in_dev="r0", label=f"rpl-loop-{case[0]}")
    if case[0] in RFC_LOOPS:
        # The kernel forwards (checked by test_kernel_rpl_loop); lwt6 answers as for any loop: nothing on r1, one
        # Parameter Problem code 0 pointer 0 to the sender, counted rpl_loop.
        assert res.on("r1") == [] and len(res.on("r0")) == 1, res.stats
        ip6 = res.on("r0")[0][14:]
        assert ip6[6] == 58 and ip6str(ip6[24:40]) == "fd00:1::1"
        assert (ip6[40], ip6[41], int.from_bytes(ip6[44:48], "big")) == (4, 0, 0)
        assert res.stats.get("drops", {}).get("rpl_loop") == 1, res.stats
        return
    compare_frames(out, res.on("r1"), f"RPL loop {case[0]} (r1)")
    compare_frames([no_icmp_flow_label(b) for b in back], [no_icmp_flow_label(b) for b in res.on("r0")],
                   f"RPL loop {case[0]} (ICMPv6 on r0)")
    assert res.drops() == (1 if case[3] == "loop" else 0), res.stats
    if case[3] == "loop":
        assert res.stats.get("drops", {}).get("rpl_loop") == 1, res.stats
