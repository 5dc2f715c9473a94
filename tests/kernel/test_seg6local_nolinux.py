"""seg6local behaviours this kernel has no reference for (no VRF: End.DT4 / End.DT46; flavours USP, USD and PSP beyond
End; End.B6.Encaps.Red): lwt6's frames against golden bytes derived by hand from the RFC 8986 pseudo-code (and, where
the RFC leaves a choice, from what Linux does for the nearest behaviour it has), plus chains through kernel nodes:
lwt6's output is sent into the kernel router, whose End and End.DX6 SIDs must deliver the inner packet intact.
"""
import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktnet import xfer
from ktpkt import MAC_D0, MAC_R0, MAC_S0, compare_frames, with_marker
from ktsrv6 import (NH_IPV4, NH_IPV6, decap_inner, end, frame6, inner4, inner6, ip6hdr, on_r1, on_r1_v4, pop_srh,
                    srh, srv6)
from test_seg6local import DROP, F, fwd


def b6_encaps_red(frame, new_segs, outer_src):
    """End.B6.Encaps.Red: End on the packet as Linux's End.B6.Encaps does it (SL--, DA := next SID, the inner hop
    limit kept: tests/kernel/test_seg6local.py end-b6-encaps), then H.Encaps.Red (RFC 8986 §5.2): the SRH omits the
    first SID (it is only in the outer DA), so it holds new_segs[1:] reversed, last entry n - 2, SL n - 1, and it is
    left out altogether for a single SID; outer traffic class and flow label copied (seg6_flowlabel 0), hop limit 64 - 1."""
    p = bytearray(frame[14:])
    sl = p[43] - 1
    p[43] = sl
    p[24:40] = p[48 + 16 * sl:64 + 16 * sl]
    tc = ((p[0] & 0x0F) << 4) | (p[1] >> 4)
    fl = int.from_bytes(p[1:4], "big") & 0xFFFFF
    if len(new_segs) == 1:
        return ip6hdr(outer_src, new_segs[0], NH_IPV6, len(p), hlim=63, fl=fl, tc=tc) + bytes(p)
    wire = list(reversed(new_segs[1:]))
    h = srh(wire, len(new_segs) - 1, NH_IPV6, last=len(wire) - 1)
    return ip6hdr(outer_src, new_segs[0], 43, len(h) + len(p), hlim=63, fl=fl, tc=tc) + h + bytes(p)


def g_dt4():
    """RFC 8986 §4.7 End.DT4: decapsulate (SL must be 0), look the inner IPv4 destination up in the table of the
    SID (table 100 here, no VRF device), forward (TTL - 1). No route in that table: dropped."""
    sid = "fc00:1::74"
    f1 = srv6(sid, [sid], 0, upper=inner4(dst="10.77.0.5", tag=1), nh=NH_IPV4)
    f2 = frame6(sid, NH_IPV4, inner4(dst="10.77.0.6", tag=2))
    st = ["-4 route add 10.77.0.0/24 via 10.2.0.2 dev r1 table 100",
          f"-6 route add {sid}/128 encap seg6local action End.DT4 vrftable 100 count dev r0"]
    return "end-dt4-vrftable", st, [
        F("srh-sl0", f1, fwd(on_r1_v4(decap_inner(f1)))),
        F("no-srh", f2, fwd(on_r1_v4(decap_inner(f2)))),
        F("routed-only-in-main", srv6(sid, [sid], 0, upper=inner4(dst="10.2.0.2", tag=3), nh=NH_IPV4), DROP),
        F("inner-ipv6", srv6(sid, [sid], 0, upper=inner6(tag=4), nh=NH_IPV6), DROP),
        F("srh-sl1", srv6(sid, ["fc00::b", sid], 1, upper=inner4(dst="10.77.0.5", tag=5), nh=NH_IPV4), DROP)]


def g_dt46():
    """RFC 8986 §4.8 End.DT46: as End.DT6 or End.DT4 by the inner protocol, in the SID's table (100)."""
    sid = "fc00:1::46"
    f1 = srv6(sid, [sid], 0, upper=inner4(dst="10.77.0.5", tag=1), nh=NH_IPV4)
    f2 = srv6(sid, [sid], 0, upper=inner6(dst="fd00:77::5", tag=2), nh=NH_IPV6)
    f3 = frame6(sid, NH_IPV6, inner6(dst="fd00:77::6", tag=3))
    st = ["-4 route add 10.77.0.0/24 via 10.2.0.2 dev r1 table 100",
          "-6 route add fd00:77::/64 via fd00:2::2 dev r1 table 100",
          f"-6 route add {sid}/128 encap seg6local action End.DT46 vrftable 100 count dev r0"]
    return "end-dt46-vrftable", st, [
        F("inner-ipv4", f1, fwd(on_r1_v4(decap_inner(f1)))),
        F("inner-ipv6", f2, fwd(on_r1(decap_inner(f2)))),
        F("inner-ipv6-no-srh", f3, fwd(on_r1(decap_inner(f3)))),
        F("srh-sl1", srv6(sid, ["fc00::b", sid], 1, upper=inner6(dst="fd00:77::5", tag=4), nh=NH_IPV6), DROP)]


def g_psp_beyond_end():
    """RFC 8986 §4.16.1 PSP on End.X and End.T: when SL becomes 0 the SRH is removed before forwarding (to nh6,
    resp. by table 100); with SL 2 it stays."""
    x, t = "fc00:1::10", "fc00:1::11"
    f1 = srv6(x, ["fc99::b", x], 1, tag=1)
    f2 = srv6(x, ["fc99::c", "fc99::b", x], 2, tag=2)
    f3 = srv6(t, ["fc99::b", t], 1, tag=3)
    f4 = srv6(t, ["fc99::b", t], 1, upper=inner6(dst="fd00:2::2", tag=4), nh=NH_IPV6)
    st = [f"-6 route add {x}/128 encap seg6local action End.X nh6 fd00:2::2 flavors psp count dev r1",
          f"-6 route add {t}/128 encap seg6local action End.T table 100 flavors psp dev r0",
          "-6 route add fc99::/16 via fd00:2::2 dev r1 table 100"]
    return "psp-end-x-end-t", st, [
        F("end-x-sl1-popped", f1, fwd(on_r1(pop_srh(end(f1))))),
        F("end-x-sl2-kept", f2, fwd(on_r1(end(f2)))),
        F("end-t-sl1-popped", f3, fwd(on_r1(pop_srh(end(f3))))),
        F("end-t-sl1-inner-ipv6-popped", f4, fwd(on_r1(pop_srh(end(f4)))))]


def g_usd():
    """RFC 8986 §4.16.3 USD on End: a packet arriving with SL 0 and an inner IPv6 or IPv4 packet is decapsulated
    and the inner packet forwarded by its destination (main table); SL 1 is plain End."""
    sid = "fc00:1::e"
    f1 = srv6(sid, [sid], 0, upper=inner6(dst="fd00:2::2", tag=1), nh=NH_IPV6)
    f2 = srv6(sid, [sid], 0, upper=inner4(dst="10.2.0.2", tag=2), nh=NH_IPV4)
    f3 = srv6(sid, ["fc00::b", sid], 1, tag=3)
    f4 = frame6(sid, NH_IPV6, inner6(dst="fd00:2::2", tag=4))
    return "usd-end", [f"-6 route add {sid}/128 encap seg6local action End flavors usd count dev r0"], [
        F("sl0-inner-ipv6", f1, fwd(on_r1(decap_inner(f1)))),
        F("sl0-inner-ipv4", f2, fwd(on_r1_v4(decap_inner(f2)))),
        F("sl1-plain-end", f3, fwd(on_r1(end(f3)))),
        F("no-srh-inner-ipv6", f4, fwd(on_r1(decap_inner(f4))))]


def g_usp():
    """RFC 8986 §4.16.2 USP on End: with SL 0 the SRH is removed and the next header processed here (a UDP
    datagram for the router: lwt6 delivers nothing locally, a named drop); SL 1 is plain End."""
    sid = "fc00:1::e"
    f1 = srv6(sid, ["fc00::b", sid], 1, tag=1)
    return "usp-end", [f"-6 route add {sid}/128 encap seg6local action End flavors usp count dev r0"], [
        F("sl1-plain-end", f1, fwd(on_r1(end(f1)))),
        F("sl0-udp-for-the-router", srv6(sid, [sid], 0, tag=2), DROP)]


def g_b6_encaps_red():
    sid = "fc00:1::bf"
    f1 = srv6(sid, ["fd00:2::2", sid], 1, tag=1)
    f2 = srv6(sid, ["fd00:2::2", "fc00::9", sid], 2, upper=inner6(tag=2), nh=NH_IPV6)
    f3 = srv6("fc00:1::b1", ["fd00:2::2", "fc00:1::b1"], 1, tag=3)
    st = [f"-6 route add {sid}/128 encap seg6local action End.B6.Encaps.Red srh segs fc00::b,fc00::c,fc00::d "
          "count dev r0",
          "-6 route add fc00:1::b1/128 encap seg6local action End.B6.Encaps.Red srh segs fc00::b dev r0"]
    return "end-b6-encaps-red", st, [
        F("three-sids-sl1", f1, fwd(on_r1(b6_encaps_red(f1, ["fc00::b", "fc00::c", "fc00::d"], "fd00:1::2")))),
        F("three-sids-sl2", f2, fwd(on_r1(b6_encaps_red(f2, ["fc00::b", "fc00::c", "fc00::d"], "fd00:1::2")))),
        F("one-sid-no-srh", f3, fwd(on_r1(b6_encaps_red(f3, ["fc00::b"], "fd00:1::2")))),
        F("sl0", srv6(sid, [sid], 0, tag=4), DROP)]


GROUPS = [g_dt4(), g_dt46(), g_psp_beyond_end(), g_usd(), g_usp(), g_b6_encaps_red()]


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g[0])
def test_lwt6_seg6local_golden(lwt6, group):
    """lwt6's frames on r1 == the hand-derived ones, in order; a named drop for each frame expected to drop."""
    gid, st, frames = group
    res = lwt6.pcap(render(RTR_BASE + st)[1], [f.frame for f in frames], in_dev="r0", label=f"s6l-golden-{gid}")
    want = [o for f in frames if f.expect[0] == "fwd" for o in f.expect[1]]
    compare_frames(want, res.on("r1"), f"{gid} (expected: hand-derived)")
    assert set(res.devs()) <= {"r1"}, res.devs()
    drops = sum(1 for f in frames if f.expect[0] == "drop")
    assert res.drops() == drops and len(res.stats.get("drops", {})) >= (1 if drops else 0), res.stats


# ------------------------------------------------------------------------------------------------
# Chains: lwt6 output -> kernel End SID -> kernel End.DX6 SID -> the inner packet, intact

KERNEL_SIDS = ["-6 route add fc00:1::e/128 encap seg6local action End dev r0",
               "-6 route add fc00:1::d6/128 encap seg6local action End.DX6 nh6 fd00:2::2 dev r1"]


def to_kernel_r0(frame):
    """An lwt6 output frame, re-addressed from sndr to the kernel router's r0."""
    return bytes.fromhex(MAC_R0.replace(":", "") + MAC_S0.replace(":", "")) + frame[12:]


def chain_cases():
    """(id, lwt6 statements, input frames, inner packet each must deliver (IPv6, without Ethernet), hop limit)."""
    b6 = "fc00:1::bf"
    ins = [srv6(b6, ["fd00:2::2", b6], 1, tag=i, hlim=h) for i, h in enumerate((64, 9))]
    # lwt6 End on the inner packet (SL 1 -> 0, DA fd00:2::2, hop limit kept as Linux keeps it), then the kernel's
    # End.DX6 forwards it (hop limit - 1): together what end() derives.
    want = [on_r1(end(f)) for f in ins]
    red = ("b6-encaps-red", [f"-6 route add {b6}/128 encap seg6local action End.B6.Encaps.Red "
                             "srh segs fc00:1::e,fc00:1::d6 dev r0"], ins, want)
    x = "fc00:1::10"
    ins2 = [srv6(x, ["fc00:1::d6", "fc00:1::e", x], 2, upper=inner6(tag=10 + i), nh=NH_IPV6, hlim=h)
            for i, h in enumerate((64, 3))]
    # lwt6 End.X with PSP on the way: SL 2 -> 1, SRH kept; the kernel End takes it to SL 0 and fc00:1::d6; DX6
    # decapsulates and forwards the inner packet (its hop limit 50 - 1).
    want2 = [on_r1(decap_inner(f)) for f in ins2]
    endx = ("end-x-psp-then-kernel", [f"-6 route add {x}/128 encap seg6local action End.X nh6 fd00:2::2 flavors psp "
                                      "dev r1"], ins2, want2)
    return [red, endx]


@pytest.mark.parametrize("case", chain_cases(), ids=lambda c: c[0])
def test_lwt6_seg6local_through_kernel_sids(topo3, lwt6, case):
    cid, st, ins, want = case
    res = lwt6.pcap(render(RTR_BASE + st)[1], ins, in_dev="r0", label=f"s6l-chain-{cid}")
    mid = res.on("r1")
    assert len(mid) == len(ins), f"lwt6 emitted {len(mid)} of {len(ins)}: {res.stats}"
    try:
        topo3.rtr.apply(KERNEL_SIDS)
        got = xfer(topo3.s0, [to_kernel_r0(f) for f in mid], topo3.d0, expect=len(mid), timeout=1.0,
                   keep=with_marker)[topo3.d0.label]
    finally:
        topo3.rtr.undo()
    compare_frames(want, got, f"{cid}: inner packets delivered by the kernel End + End.DX6 SIDs")
    assert all(f[:6] == bytes.fromhex(MAC_D0.replace(":", "")) for f in got)
