"""IOAM: (a) transit differential (kernel vs lwt6 filling a pre-allocated trace),
(b) lwt6 inline insertion -> kernel transit -> `lwt6 decode`,
(c) an IOAM domain: lwt6 inserts several traces -> kernel transit -> lwt6 egress removes and exports."""
import json
import struct

import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktnet import xfer
from ktpcap import write_pcap
from ktlwt6 import ioam_traces_from_decode
from ktpkt import (MAC_R0, MAC_S0, compare_frames, ioam_frame, ioam_hbh, nodelen_of, parse_ioam, ts_offsets,
                   udp6, with_marker, type_bits)

NS_DATA, NS_WIDE = 0xDEADBEEF, 0xCAFEC0DEDEADBEEF
NODE_ID, NODE_ID_WIDE = 0x111111, 0x22222222222222
IF_IN, IF_OUT = 0x0A0A, 0x0C0C
IF_IN_W, IF_OUT_W = 0x0B0B0B0B, 0x0D0D0D0D
SCHEMA = b"ABCDEFGH"


def ioam_config(enabled=True):
    return [
        f"ioam namespace add 123 data 0x{NS_DATA:08x} wide 0x{NS_WIDE:016x}",
        "ioam schema add 7 ABCDEFGH",
        "ioam namespace set 123 schema 7",
        "ioam namespace add 200",                       # defaults, no schema
        f"sysctl net.ipv6.ioam6_id=0x{NODE_ID:x}",
        f"sysctl net.ipv6.ioam6_id_wide=0x{NODE_ID_WIDE:x}",
        f"sysctl net.ipv6.conf.r0.ioam6_enabled={1 if enabled else 0}",
        f"sysctl net.ipv6.conf.r0.ioam6_id=0x{IF_IN:04x}",
        f"sysctl net.ipv6.conf.r0.ioam6_id_wide=0x{IF_IN_W:08x}",
        f"sysctl net.ipv6.conf.r1.ioam6_id=0x{IF_OUT:04x}",
        f"sysctl net.ipv6.conf.r1.ioam6_id_wide=0x{IF_OUT_W:08x}",
    ]


class TCase:
    """One transit case: a trace header shape and what the kernel should do with it."""

    def __init__(self, cid, ttype, remlen, ns=123, enabled=True, nodelen=None, flags=0, fill=b"", expect="fill"):
        self.id, self.ttype, self.remlen, self.ns, self.enabled = cid, ttype, remlen, ns, enabled
        self.nodelen, self.flags, self.fill, self.expect = nodelen, flags, fill, expect

    def sclen(self):
        if 22 not in type_bits(self.ttype):
            return 0
        return 1 + (len(SCHEMA) // 4 if self.ns == 123 else 0)

    def frames(self):
        hbh = ioam_hbh(self.ns, self.ttype, self.remlen, nodelen=self.nodelen, flags=self.flags, fill=self.fill)
        return [ioam_frame(hbh, hlim=h, size=s, tag=i) for i, (h, s) in enumerate([(64, 8), (2, 100), (255, 700)])]


PREFILLED = bytes.fromhex("3a999999 01020304 77777777")   # an earlier node, bits 0,1,5
TCASES = [
    TCase("basic-c40000", 0xC40000, 6),
    TCase("one-node-odd-remlen-padn", 0xC40000, 3),
    TCase("all-bits-fff002-schema", 0xFFF002, 2 * (15 + 3)),
    TCase("wide-00e000", 0x00E000, 12),
    TCase("timestamps-f00000", 0xF00000, 8),
    TCase("bit22-no-schema", 0x800002, 4, ns=200),
    TCase("second-node-after-prefilled", 0xC40000, 3, fill=PREFILLED),
    TCase("overflow-no-room", 0xC40000, 0, expect="overflow"),
    TCase("overflow-too-small", 0xC40000, 2, expect="overflow"),
    TCase("overflow-flag-already-set", 0xC40000, 6, flags=0x8, expect="same"),
    TCase("unknown-namespace", 0xC40000, 6, ns=124, expect="same"),
    TCase("ioam6-disabled-on-ingress", 0xC40000, 6, enabled=False, expect="same"),
    TCase("inconsistent-nodelen-dropped", 0xC40000, 6, nodelen=2, expect="drop"),
]


def node_start(case, frame):
    """Frame offset where the kernel writes this hop's node (end of the free space)."""
    tr = parse_ioam(frame[14:])[0]
    return 14 + tr["data_off"] + 4 * (case.remlen - nodelen_of(case.ttype) - case.sclen())


def mask_ts(case, frame):
    if case.expect != "fill" or not {2, 3} & set(type_bits(case.ttype)):
        return frame
    b = bytearray(frame)
    for o in ts_offsets(case.ttype, node_start(case, frame)):
        b[o:o + 4] = b"TSTS"
    return bytes(b)


_kcache = {}


def kernel_transit(topo3, case):
    if case.id not in _kcache:
        try:
            topo3.rtr.apply(ioam_config(case.enabled))
            fr = case.frames()
            got = xfer(topo3.s0, fr, topo3.d0, expect=0 if case.expect == "drop" else len(fr),
                       timeout=0.15 if case.expect == "drop" else 1.0, keep=with_marker)
        finally:
            topo3.rtr.undo()
        _kcache[case.id] = got[topo3.d0.label]
    return _kcache[case.id]


@pytest.mark.parametrize("case", TCASES, ids=lambda c: c.id)
def test_kernel_ioam_transit(topo3, case):
    """The kernel half alone, checked against docs/references.md §2.4."""
    out, ins = kernel_transit(topo3, case), case.frames()
    if case.expect == "drop":
        assert out == []
        return
    assert len(out) == len(ins)
    for fin, fo in zip(ins, out):
        tin, tout = parse_ioam(fin[14:])[0], parse_ioam(fo[14:])[0]
        assert fo[14 + 7] == fin[14 + 7] - 1, "forwarded: hop limit decremented"
        if case.expect == "same":
            assert fo[14 + 40:] == fin[14 + 40:], "trace must be untouched"
        elif case.expect == "overflow":
            assert tout["flags"] & 0x8 and tout["data"] == tin["data"] and tout["remlen"] == tin["remlen"]
        else:
            used = nodelen_of(case.ttype) + case.sclen()
            assert tout["remlen"] == case.remlen - used
            node = tout["nodes"][0]
            bits = type_bits(case.ttype)
            if 0 in bits:
                assert (node["hop_limit"], node["node_id"]) == (fin[14 + 7] - 1, NODE_ID)
            if 1 in bits:
                assert (node["ingress_id"], node["egress_id"]) == (IF_IN, IF_OUT)
            if 5 in bits:
                assert node["ns_data"] == (NS_DATA if case.ns == 123 else 0xFFFFFFFF)
            if 9 in bits:
                assert (node["ingress_id_wide"], node["egress_id_wide"]) == (IF_IN_W, IF_OUT_W)
            if 10 in bits:
                assert node["ns_data_wide"] == NS_WIDE
            if 22 in bits:
                assert (node["schema_id"], node["opaque"]) == ((7, SCHEMA) if case.ns == 123 else (0xFFFFFF, b""))
            if case.fill:
                assert tout["nodes"][1]["node_id"] == 0x999999, "earlier node data kept"
            # only the hop limit, the RemainingLen field and the node area changed
            s = node_start(case, fo)
            e = s + 4 * used
            exp = bytearray(fin)
            exp[14 + 7] -= 1
            w = 14 + tin["data_off"] - 6
            exp[w:w + 2] = fo[w:w + 2]
            assert struct.unpack(">H", fo[w:w + 2])[0] & 0x7F == tout["remlen"]
            assert fo[12:s] == bytes(exp[12:s]) and fo[e:] == bytes(exp[e:])


@pytest.mark.parametrize("case", TCASES, ids=lambda c: c.id)
def test_lwt6_ioam_transit(topo3, lwt6, case):
    """lwt6 as IOAM transit router == the kernel, timestamps (bits 2, 3) masked."""
    kern = kernel_transit(topo3, case)
    conf = render(RTR_BASE + ioam_config(case.enabled))[1]
    res = lwt6.pcap(conf, case.frames(), in_dev="r0", label=f"ioam-transit-{case.id}")
    compare_frames([mask_ts(case, f) for f in kern], [mask_ts(case, f) for f in res.on("r1")],
                   f"IOAM transit {case.id}")
    if case.expect == "drop":
        assert res.drops() == len(case.frames()), res.stats


# ------------------------------------------------------------------------------------------------
# (b) lwt6 inserts (inline) -> kernel transit -> lwt6 decode

MAC_LI = "02:00:00:00:00:11"
L_NODE_ID, L_IF_IN, L_IF_OUT, L_NS_DATA = 0x333333, 0x0505, 0x0606, 0x12345678


def inserter_config(ttype, size):
    return [
        f"link add li address {MAC_LI} mtu 1500",
        f"link add r1 address {MAC_S0} mtu 1500",
        "addr add fd00:a::1/64 dev li",
        "addr add fd00:1::1/64 dev r1",
        f"neigh add fd00:1::2 lladdr {MAC_R0} dev r1",
        f"ioam namespace add 123 data 0x{L_NS_DATA:08x}",
        f"sysctl net.ipv6.ioam6_id=0x{L_NODE_ID:x}",
        f"sysctl net.ipv6.conf.li.ioam6_id=0x{L_IF_IN:04x}",
        f"sysctl net.ipv6.conf.r1.ioam6_id=0x{L_IF_OUT:04x}",
        f"-6 route add fd00:2::/64 encap ioam6 mode inline trace prealloc type 0x{ttype:06x} ns 123 size {size} "
        f"via fd00:1::2 dev r1",
    ]


INSERT_CASES = [(0xC40000, 24, True), (0xC4E000, 2 * 4 * 9, True), (0xC40000, 12, False)]


@pytest.mark.parametrize("ttype,size,room", INSERT_CASES,
                         ids=[f"type{t:06x}-size{s}-{'room' if r else 'kernel-overflows'}" for t, s, r in INSERT_CASES])
def test_lwt6_insert_kernel_transit_decode(topo3, rtr, lwt6, tmp_path, ttype, size, room):
    hlims = [64, 10, 255]
    ins = [udp6("fd00:2::2", src="fd00:a::5", hlim=h, size=20 + i * 50, tag=i, smac="02:00:00:00:00:55",
                dmac=MAC_LI) for i, h in enumerate(hlims)]
    res = lwt6.pcap(render(inserter_config(ttype, size))[1], ins, in_dev="li", label=f"ioam-insert-{ttype:x}-{size}")
    mid = res.on("r1")
    assert len(mid) == len(ins), f"lwt6 emitted {len(mid)} frames on r1, stats {res.stats}"
    for f in mid:
        tr = parse_ioam(f[14:])
        assert len(tr) == 1 and tr[0]["ttype"] == ttype, f"lwt6 output lacks the IOAM trace: {tr}"
        assert f[:12] == bytes.fromhex((MAC_R0 + MAC_S0).replace(":", "")), "lwt6 must address k's r0 from r1"
    rtr.apply(ioam_config())
    got = xfer(topo3.s0, mid, topo3.d0, expect=len(mid), keep=with_marker)[topo3.d0.label]
    assert len(got) == len(mid), "kernel did not forward lwt6's IOAM frames"
    cap = tmp_path / "after-kernel.pcap"
    write_pcap(cap, got)
    decoded = lwt6.decode(cap)
    assert isinstance(decoded, list) and len(decoded) == len(got), f"decode returned {decoded!r:.300}"
    for h, fo, dobj in zip(hlims, got, decoded):
        mine = parse_ioam(fo[14:])
        assert len(mine) == 1 and mine[0]["namespace"] == 123
        want = {L_NODE_ID: (h - 1, L_IF_IN, L_IF_OUT)}
        if room:
            want[NODE_ID] = (h - 2, IF_IN, IF_OUT)
        else:
            assert mine[0]["flags"] & 0x8, "no room for the kernel node: overflow flag expected"
        got_nodes = {n["node_id"]: (n["hop_limit"], n["ingress_id"], n["egress_id"]) for n in mine[0]["nodes"]}
        assert got_nodes == want, f"raw trace nodes {got_nodes} != expected {want}"
        traces = ioam_traces_from_decode(dobj)
        assert len(traces) == 1 and traces[0]["namespace"] == 123, f"lwt6 decode: {dobj}"
        dn = {n["node_id"]: (n["hop_limit"], n["ingress_id"], n["egress_id"]) for n in traces[0]["nodes"]}
        assert dn == want, f"lwt6 decode nodes {dn} != expected {want}"
        assert fo[14 + 7] == h - 2


# ------------------------------------------------------------------------------------------------
# (c) an IOAM domain: lwt6 inserts several traces (inline) -> kernel transit fills those whose namespace it
# knows -> lwt6 at the domain's egress fills, removes and exports them (docs/ioam.md)

E_NODE_ID, E_IF_IN, E_IF_OUT, E_NS_DATA = 0x444444, 0x0707, 0x0808, 0x0BADF00D
MULTI = [(123, 0xC40000, 36), (124, 0x800000, 12), (200, 0x840000, 24)]   # (ns, type, size)


def multi_inserter_config():
    traces = " ".join(f"trace prealloc type 0x{t:06x} ns {ns} size {s}" for ns, t, s in MULTI)
    return [
        f"link add li address {MAC_LI} mtu 1500",
        f"link add r1 address {MAC_S0} mtu 1500",
        "addr add fd00:a::1/64 dev li",
        "addr add fd00:1::1/64 dev r1",
        f"neigh add fd00:1::2 lladdr {MAC_R0} dev r1",
        f"ioam namespace add 123 data 0x{L_NS_DATA:08x}",
        f"ioam namespace add 124 data 0x{L_NS_DATA:08x}",
        f"ioam namespace add 200 data 0x{L_NS_DATA:08x}",
        f"sysctl net.ipv6.ioam6_id=0x{L_NODE_ID:x}",
        f"sysctl net.ipv6.conf.li.ioam6_id=0x{L_IF_IN:04x}",
        f"sysctl net.ipv6.conf.r1.ioam6_id=0x{L_IF_OUT:04x}",
        f"-6 route add fd00:2::/64 encap ioam6 mode inline {traces} via fd00:1::2 dev r1",
    ]


def egress_config(ktpkt_mac_d0):
    """The domain's egress: receives on e0 what the kernel sent to d0, forwards fd00:2::2 by e1 (not an egress)."""
    return "\n".join([
        f"link add e0 address {ktpkt_mac_d0}",
        "link add e1 address 02:00:00:00:00:e1",
        "addr add fd00:2::9/64 dev e0",
        "addr add fd00:e::1/64 dev e1",
        "neigh add fd00:e::2 lladdr 02:00:00:00:00:e2 dev e1",
        "-6 route add fd00:2::2/128 via fd00:e::2 dev e1",
        f"ioam namespace add 123 data 0x{E_NS_DATA:08x}",
        f"ioam namespace add 124 data 0x{E_NS_DATA:08x}",
        f"ioam namespace add 200 data 0x{E_NS_DATA:08x}",
        f"sysctl net.ipv6.ioam6_id=0x{E_NODE_ID:x}",
        "sysctl net.ipv6.conf.e0.ioam6_enabled=1",
        f"sysctl net.ipv6.conf.e0.ioam6_id=0x{E_IF_IN:04x}",
        f"sysctl net.ipv6.conf.e1.ioam6_id=0x{E_IF_OUT:04x}",
        "ioam domain add lab namespace 123,124,200 ingress e0 egress e0",
    ]) + "\n"


def test_domain_lwt6_inserts_kernel_fills_lwt6_removes_and_exports(topo3, rtr, lwt6, tmp_path):
    from ktpkt import MAC_D0
    hlims = [64, 20]
    ins = [udp6("fd00:2::2", src="fd00:a::5", hlim=h, size=30 + i * 40, tag=i, smac="02:00:00:00:00:55",
                dmac=MAC_LI) for i, h in enumerate(hlims)]
    res = lwt6.pcap(render(multi_inserter_config())[1], ins, in_dev="li", label="ioam-domain-insert")
    mid = res.on("r1")
    assert len(mid) == len(ins), res.stats
    for f in mid:
        assert [t["namespace"] for t in parse_ioam(f[14:])] == [ns for ns, _, _ in MULTI]
    rtr.apply(ioam_config())
    got = xfer(topo3.s0, mid, topo3.d0, expect=len(mid), keep=with_marker)[topo3.d0.label]
    assert len(got) == len(mid), "kernel did not forward lwt6's IOAM frames"
    # The kernel filled the namespaces it knows (123, 200), not 124.
    for f in got:
        filled = {t["namespace"]: len(t["nodes"]) for t in parse_ioam(f[14:])}
        assert filled == {123: 2, 124: 1, 200: 2}, filled
    jl = tmp_path / "egress.jsonl"
    out = lwt6.pcap(egress_config(MAC_D0), got, in_dev="e0", label="ioam-domain-egress",
                    extra=["--ioam-export", f"json:{jl}"])
    sent = out.on("e1")
    assert len(sent) == len(got), out.stats
    for f, h, orig in zip(sent, hlims, ins):
        # Every option went, and with them the Hop-by-Hop header: the original packet, 3 hops later.
        ip = bytearray(orig[14:])
        ip[7] = h - 3
        assert f[14:] == bytes(ip), "the egress must hand on the packet as it entered the domain"
    recs = [json.loads(x) for x in jl.read_text().splitlines()]
    assert len(recs) == 3 * len(got)
    assert out.stats["ioam"]["removed"] == 3 * len(got) and out.stats["ioam"]["export_lost"] == 0
    for i, h in enumerate(hlims):
        by_ns = {r["namespace"]: r for r in recs[3 * i:3 * i + 3]}
        assert set(by_ns) == {123, 124, 200}
        lw = (h - 1, L_NODE_ID, L_NS_DATA)
        kn = (h - 2, NODE_ID, NS_DATA)
        eg = (h - 3, E_NODE_ID, E_NS_DATA)
        want = {123: [lw, kn, eg], 124: [lw, eg], 200: [lw, (h - 2, NODE_ID, 0xFFFFFFFF), eg]}
        for ns, nodes in want.items():
            r = by_ns[ns]
            assert r["event"] == "egress" and r["out_dev"] == "e1" and r["flow"]["src"] == "fd00:a::5"
            got_nodes = [(n["hop_limit"], n["node_id"], n.get("ns_data", None)) for n in r["nodes"]]
            exp = [(a, b, c if ns != 124 else None) for a, b, c in nodes]
            assert got_nodes == exp, f"ns {ns}: {got_nodes} != {exp}"
        ifs = [(n["ingress_id"], n["egress_id"]) for n in by_ns[123]["nodes"]]
        assert ifs == [(L_IF_IN, L_IF_OUT), (IF_IN, IF_OUT), (E_IF_IN, E_IF_OUT)]


# ------------------------------------------------------------------------------------------------
# (d) lwt6 merges its trace into a Hop-by-Hop header the packet already has (`hbh merge`, docs/ioam.md) -> the
# kernel, as transit node, finds it (4n-aligned, in a valid header) and fills it -> `lwt6 decode`.
# The expected layouts are derived here from RFC 8200 §4.2/§4.3 and RFC 9486 §3, not from lwt6's output.

MERGE_TYPE, MERGE_SIZE = 0xC40000, 24      # bits 0, 1 and 5: NodeLen 3 (12 bytes a node), two nodes of room
EXISTING = [
    # (case id, existing Hop-by-Hop options after Next Header and Hdr Ext Len (6 bytes: one 8-byte header),
    #  where the kept part ends, the head padding that must follow)
    ("router-alert", bytes([5, 2, 0, 0, 1, 0]), 6, bytes([1, 0])),               # RFC 2711, PadN(0)
    ("opt-3-bytes-pad1", bytes([0x1E, 3, 0xA, 0xB, 0xC, 0]), 7, bytes([0])),     # skip-if-unknown option, Pad1
    ("opt-1-byte-padn1", bytes([0x1E, 1, 0xA, 1, 1, 0]), 5, bytes([1, 1, 0])),    # PadN(1): 3 bytes to 8
    ("opt-no-data", bytes([0x1E, 0, 1, 2, 0, 0]), 4, b""),                       # the trace takes the PadN's place
]


def merge_inserter_config():
    conf = inserter_config(MERGE_TYPE, MERGE_SIZE)
    conf[-1] = conf[-1].replace("mode inline", "mode inline hbh merge")
    assert "hbh merge" in conf[-1]
    return conf


def existing_hbh_frame(opts, hlim, i):
    """IPv6 / HbH(next header UDP, `opts`) / UDP from fd00:a::5 to fd00:2::2, as lwt6's li receives it."""
    hbh = bytes([17, 0]) + opts
    return ioam_frame(hbh, dst="fd00:2::2", src="fd00:a::5", hlim=hlim, size=20 + 30 * i, tag=i,
                      smac="02:00:00:00:00:55", dmac=MAC_LI)


@pytest.mark.parametrize("cid,opts,keep,head", EXISTING, ids=[e[0] for e in EXISTING])
def test_lwt6_merges_into_existing_hbh_kernel_transit_fills(topo3, rtr, lwt6, tmp_path, cid, opts, keep, head):
    hlims = [64, 9]
    ins = [existing_hbh_frame(opts, h, i) for i, h in enumerate(hlims)]
    res = lwt6.pcap(render(merge_inserter_config())[1], ins, in_dev="li", label=f"ioam-merge-{cid}")
    mid = res.on("r1")
    assert len(mid) == len(ins), f"lwt6 emitted {len(mid)} frames on r1, stats {res.stats}"
    assert res.stats["ioam"]["merged"] == len(ins), res.stats
    opt_len = 12 + MERGE_SIZE                                   # type, len, reserved, option type, header, data
    opts_at = keep + len(head)
    assert opts_at % 4 == 0
    end = opts_at + opt_len
    tail = b"" if end % 8 == 0 else bytes([1, 2, 0, 0])
    for f, fin in zip(mid, ins):
        ip, ip_in = f[14:], fin[14:]
        hbh = ip[40:40 + (ip[41] + 1) * 8]
        assert len(hbh) == end + len(tail) and len(hbh) % 8 == 0
        assert hbh[0] == 17 and hbh[2:keep] == opts[:keep - 2], "the options already there stay where they were"
        assert hbh[keep:opts_at] == head and hbh[end:] == tail
        assert hbh[opts_at:opts_at + 4] == bytes([0x31, 10 + MERGE_SIZE, 0, 0])
        assert struct.unpack(">H", ip[4:6])[0] == struct.unpack(">H", ip_in[4:6])[0] + len(hbh) - 8
        assert ip[40 + len(hbh):] == ip_in[48:], "the payload is untouched"
    rtr.apply(ioam_config())
    got = xfer(topo3.s0, mid, topo3.d0, expect=len(mid), keep=with_marker)[topo3.d0.label]
    assert len(got) == len(mid), "kernel did not forward lwt6's merged IOAM frames"
    cap = tmp_path / "after-kernel.pcap"
    write_pcap(cap, got)
    decoded = lwt6.decode(cap)
    for h, fo, fm, dobj in zip(hlims, got, mid, decoded):
        tr = parse_ioam(fo[14:])
        assert len(tr) == 1 and tr[0]["namespace"] == 123
        want = {L_NODE_ID: (h - 1, L_IF_IN, L_IF_OUT), NODE_ID: (h - 2, IF_IN, IF_OUT)}
        got_nodes = {n["node_id"]: (n["hop_limit"], n["ingress_id"], n["egress_id"]) for n in tr[0]["nodes"]}
        assert got_nodes == want, f"the kernel must fill the merged trace: {got_nodes} != {want}"
        assert fo[14 + 40:14 + 40 + keep] == fm[14 + 40:14 + 40 + keep], "the kernel leaves the other options"
        traces = ioam_traces_from_decode(dobj)
        assert len(traces) == 1
        dn = {n["node_id"]: (n["hop_limit"], n["ingress_id"], n["egress_id"]) for n in traces[0]["nodes"]}
        assert dn == want


def test_lwt6_without_hbh_merge_skips_packets_with_hbh_as_linux(lwt6):
    """Linux's inline mode inserts nothing into a packet that has a Hop-by-Hop header (docs/references.md §2.3)."""
    ins = [existing_hbh_frame(EXISTING[0][1], 64, 0)]
    res = lwt6.pcap(render(inserter_config(MERGE_TYPE, MERGE_SIZE))[1], ins, in_dev="li", label="ioam-nomerge")
    out = res.on("r1")
    assert len(out) == 1 and out[0][14 + 40:] == ins[0][14 + 40:] and parse_ioam(out[0][14:]) == []
    assert res.stats["ioam"]["not_inserted"] == 1


# ------------------------------------------------------------------------------------------------
# (e) Direct Export (RFC 9326): lwt6 inserts a trace and a DEX option -> the kernel fills the trace and passes the
# DEX option untouched (Linux ignores IOAM option types other than 0) -> lwt6 at the domain's egress exports its
# data for the DEX option and removes both. The DEX bytes are derived here from RFC 9326 §3.2.

DEX_FLOW = 77


def dex_inserter_config():
    conf = inserter_config(0xC40000, 24)
    conf[-1] = conf[-1].replace(" via ", f" dex type 0xc00000 ns 123 flowid {DEX_FLOW} seq via ")
    assert "dex type" in conf[-1]
    return conf


def dex_option(seq):
    # Type 0x31, Opt Data Len 18, Reserved, IOAM Option-Type 4; Namespace-ID 123, Flags 0, Extension-Flags 0xc0
    # (Flow ID, Sequence Number); trace type 0xc00000, Reserved; Flow ID; Sequence Number.
    return bytes([0x31, 18, 0, 4]) + struct.pack(">HBB", 123, 0, 0xC0) + bytes([0xC0, 0, 0, 0]) + \
        struct.pack(">II", DEX_FLOW, seq)


def test_dex_lwt6_inserts_kernel_passes_lwt6_exports(topo3, rtr, lwt6, tmp_path):
    from ktpkt import MAC_D0
    hlims = [64, 30, 12]
    ins = [udp6("fd00:2::2", src="fd00:a::5", hlim=h, size=30 + i * 40, tag=i, smac="02:00:00:00:00:55",
                dmac=MAC_LI) for i, h in enumerate(hlims)]
    jl0 = tmp_path / "encap.jsonl"
    res = lwt6.pcap(render(dex_inserter_config())[1], ins, in_dev="li", label="ioam-dex-insert",
                    extra=["--ioam-export", f"json:{jl0}"])
    mid = res.on("r1")
    assert len(mid) == len(ins), res.stats
    trace_len = 12 + 24
    for i, f in enumerate(mid):
        hbh = f[14 + 40:14 + 40 + (f[14 + 41] + 1) * 8]
        # PadN(0), the trace (36 octets), the DEX option (20 octets): 60, PadN(2) to 64.
        assert len(hbh) == 64 and hbh[2:4] == bytes([1, 0]) and hbh[60:] == bytes([1, 2, 0, 0])
        assert hbh[4 + trace_len:4 + trace_len + 20] == dex_option(i)
    enc = [json.loads(x) for x in jl0.read_text().splitlines()]
    assert [(r["event"], r["seq"], r["flow_id"]) for r in enc] == [("direct_export", i, DEX_FLOW)
                                                                    for i in range(len(ins))]
    assert [(n["hop_limit"], n["node_id"]) for r in enc for n in r["nodes"]] == [(h - 1, L_NODE_ID) for h in hlims]
    rtr.apply(ioam_config())
    got = xfer(topo3.s0, mid, topo3.d0, expect=len(mid), keep=with_marker)[topo3.d0.label]
    assert len(got) == len(mid), "kernel did not forward lwt6's frames with a DEX option"
    for i, (f, h) in enumerate(zip(got, hlims)):
        hbh = f[14 + 40:14 + 40 + 64]
        assert hbh[4 + trace_len:4 + trace_len + 20] == dex_option(i), "the kernel must leave the DEX option alone"
        nodes = {n["node_id"]: n["hop_limit"] for n in parse_ioam(f[14:])[0]["nodes"]}
        assert nodes == {L_NODE_ID: h - 1, NODE_ID: h - 2}, "the kernel fills the trace beside it"
    jl = tmp_path / "egress.jsonl"
    out = lwt6.pcap(egress_config(MAC_D0), got, in_dev="e0", label="ioam-dex-egress",
                    extra=["--ioam-export", f"json:{jl}"])
    assert len(out.on("e1")) == len(got), out.stats
    recs = [json.loads(x) for x in jl.read_text().splitlines()]
    dex = [r for r in recs if r["event"] == "direct_export"]
    assert [(r["seq"], r["flow_id"], r["namespace"]) for r in dex] == [(i, DEX_FLOW, 123) for i in range(len(got))]
    for r, h in zip(dex, hlims):
        assert [(n["hop_limit"], n["node_id"], n["ingress_id"], n["egress_id"]) for n in r["nodes"]] == \
            [(h - 3, E_NODE_ID, E_IF_IN, E_IF_OUT)]
    # Both options of namespace 123 leave the domain at e1: removed and exported.
    egress = [r["option_type"] for r in recs if r["event"] == "egress"]
    assert sorted(egress) == ["direct_export"] * len(got) + ["prealloc_trace"] * len(got), egress
    assert out.stats["ioam"]["removed"] == 2 * len(got)
