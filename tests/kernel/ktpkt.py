"""Frame builders and small independent decoders (SRH, RPL, IOAM) used by the kernel tests."""
import hashlib
import hmac as hmaclib
import ipaddress
import struct

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop, HBHOptUnknown, PadN, in6_chksum
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.compat import raw

MAC_S0 = "02:00:00:00:01:01"
MAC_R0 = "02:00:00:00:01:02"
MAC_R1 = "02:00:00:00:02:01"
MAC_D0 = "02:00:00:00:02:02"
UDP_SPORT, UDP_DPORT = 40000, 3333   # 3333: no tshark heuristic claims it (2222 is CIP)
MARKER = b"L6T!"


def a16(addr):
    return ipaddress.IPv6Address(addr).packed


def ip6str(b):
    return str(ipaddress.IPv6Address(bytes(b)))


def payload(n, tag=0):
    """Marker + tag + deterministic filler, n >= 6 bytes."""
    body = MARKER + bytes([tag & 0xFF, (tag >> 8) & 0xFF])
    return (body + bytes((i * 7 + tag) & 0xFF for i in range(max(0, n - len(body)))))[:max(n, len(body))]


def udp6(dst, src="fd00:1::1", fl=0, tc=0, hlim=64, size=16, tag=0, smac=MAC_S0, dmac=MAC_R0):
    return raw(Ether(src=smac, dst=dmac) / IPv6(src=src, dst=dst, fl=fl, tc=tc, hlim=hlim)
               / UDP(sport=UDP_SPORT, dport=UDP_DPORT) / payload(size, tag))


def udp4(dst, src="10.1.0.1", tos=0, ttl=64, ident=1, df=False, size=16, tag=0, smac=MAC_S0, dmac=MAC_R0):
    return raw(Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, tos=tos, ttl=ttl, id=ident, flags="DF" if df else 0)
               / UDP(sport=UDP_SPORT, dport=UDP_DPORT) / payload(size, tag))


def with_marker(frame):
    return MARKER in frame


def hexdump(b, width=16):
    return "\n".join(f"{o:04x}  " + " ".join(f"{x:02x}" for x in b[o:o + width]) for o in range(0, len(b), width))


def hexdiff(expected, got, label_e="kernel", label_g="lwt6", width=16):
    """Row-by-row hex comparison; differing rows are marked and carets point at bytes."""
    out = [f"length {label_e}={len(expected)} {label_g}={len(got)}"]
    first = next((i for i in range(min(len(expected), len(got))) if expected[i] != got[i]),
                 None if len(expected) == len(got) else min(len(expected), len(got)))
    if first is not None:
        out.append(f"first difference at frame byte {first} (0x{first:x})"
                   + (f" = L3 offset {first - 14}" if first >= 14 else " (Ethernet header)"))
    for o in range(0, max(len(expected), len(got)), width):
        e, g = expected[o:o + width], got[o:o + width]
        if e == g:
            out.append(f"  {o:04x}  {' '.join(f'{x:02x}' for x in e)}")
        else:
            out.append(f"! {o:04x}  {label_e:>6}: {' '.join(f'{x:02x}' for x in e)}")
            out.append(f"! {o:04x}  {label_g:>6}: {' '.join(f'{x:02x}' for x in g)}")
            out.append("         " + " " * 8 + " ".join(
                "^^" if i >= len(e) or i >= len(g) or e[i] != g[i] else "  " for i in range(max(len(e), len(g)))))
    return "\n".join(out)


def compare_frames(kernel, lwt6, what):
    """Assert two frame lists are byte-identical, with a readable report of the first mismatch."""
    msgs = []
    if len(kernel) != len(lwt6):
        msgs.append(f"{what}: kernel emitted {len(kernel)} frame(s), lwt6 emitted {len(lwt6)}")
    for i, (k, l) in enumerate(zip(kernel, lwt6)):
        if k != l:
            msgs.append(f"{what}: frame {i} differs\n" + hexdiff(k, l)
                        + f"\nkernel: {Ether(k).summary()}\nlwt6:   {Ether(l).summary()}")
            break
    assert not msgs, "\n\n".join(msgs)


# --------------------------------------------------------------------------------------------
# SRH (RFC 8754) and its HMAC TLV

def parse_srh(ip6):
    """Decode the SRH that directly follows the fixed IPv6 header; None if there is none."""
    if ip6[6] != 43 or ip6[42] != 4:
        return None
    h = ip6[40:]
    hlen = (h[1] + 1) * 8
    le = h[4]
    segs = [ip6str(h[8 + 16 * i:24 + 16 * i]) for i in range(le + 1)]
    return dict(nh=h[0], hdrlen=h[1], sl=h[3], le=le, flags=h[5], tag=int.from_bytes(h[6:8], "big"),
                segs=segs, tlvs=bytes(h[8 + 16 * (le + 1):hlen]), len=hlen)


def srh_hmac(secret, src, srh_bytes, keyid, algo="sha256"):
    """RFC 8754 §2.1.2.1 HMAC over src | last entry | flags | key id | segment list."""
    le, flags = srh_bytes[4], srh_bytes[5]
    text = a16(src) + bytes([le, flags]) + struct.pack(">I", keyid) + bytes(srh_bytes[8:8 + 16 * (le + 1)])
    return hmaclib.new(secret, text, getattr(hashlib, algo)).digest()


# --------------------------------------------------------------------------------------------
# IOAM pre-allocated trace (RFC 9197) in a Hop-by-Hop header

# words per trace-type bit (bit 0 = MSB of the 24-bit type); 12..21 count 1 on receive
_BIT_WORDS = {b: 1 for b in range(22)}
_BIT_WORDS.update({8: 2, 9: 2, 10: 2})


def type_bits(ttype):
    return [b for b in range(24) if ttype & (1 << (23 - b))]


def nodelen_of(ttype):
    """NodeLen (4-byte words) the kernel computes: bits 0-21 except 8-10 count 1, 8-10 count 2."""
    return sum(_BIT_WORDS.get(b, 0) for b in type_bits(ttype))


def ioam_hbh(ns, ttype, remlen, nodelen=None, flags=0, nh=17, fill=b""):
    """HbH with PadN(0) + IOAM pre-allocated trace option (layout of docs/references.md §2.4), data zeroed.

    remlen in words. When 16 + 4*remlen is not a multiple of 8, a trailing PadN(2) is added.
    `fill` (bytes) is written at the end of the data area (already-filled nodes), if given.
    """
    if nodelen is None:
        nodelen = nodelen_of(ttype)
    data = bytearray(4 * remlen) + bytes(fill)
    trace = struct.pack(">HH", ns, (nodelen << 11) | (flags << 7) | (remlen & 0x7F)) + struct.pack(">I", ttype << 8)
    opt = bytes([0x31, 2 + len(trace) + len(data), 0, 0]) + trace + bytes(data)
    body = b"\x01\x00" + opt
    if (2 + len(body)) % 8:
        body += b"\x01\x02\x00\x00"
    assert (2 + len(body)) % 8 == 0
    return bytes([nh, (2 + len(body)) // 8 - 1]) + body


def ioam_frame(hbh, dst="fd00:2::2", src="fd00:1::1", hlim=64, size=24, tag=0, smac=MAC_S0, dmac=MAC_R0):
    """IPv6 / HbH(raw bytes) / UDP with a correct checksum (HbH is not in the pseudo-header)."""
    u = UDP(sport=UDP_SPORT, dport=UDP_DPORT) / payload(size, tag)
    u.chksum = in6_chksum(17, IPv6(src=src, dst=dst), raw(u))
    return raw(Ether(src=smac, dst=dmac) / IPv6(src=src, dst=dst, nh=0, hlim=hlim) / Raw(hbh) / u)


def parse_ioam(ip6):
    """Decode the IOAM pre-allocated traces in the HbH right after the IPv6 header.

    Returns a list of dicts: namespace, nodelen, flags, remlen, ttype, data_off (offset of the
    data area from the IPv6 header start), data (bytes), nodes (list, filled part only, first =
    most recently written), each node: hop_limit, node_id, ingress_id, egress_id (when present).
    """
    if ip6[6] != 0:
        return []
    hlen = (ip6[41] + 1) * 8
    out, o = [], 42
    while o < 40 + hlen:
        t = ip6[o]
        if t == 0:
            o += 1
            continue
        ln = ip6[o + 1]
        if t == 0x31 and ip6[o + 3] == 0:
            ns, w, = struct.unpack(">HH", ip6[o + 4:o + 8])
            ttype = int.from_bytes(ip6[o + 8:o + 11], "big")
            nodelen, flags, remlen = w >> 11, (w >> 7) & 0xF, w & 0x7F
            data_off = o + 12
            data = bytes(ip6[data_off:o + 2 + ln])
            nodes, p = [], 4 * remlen
            bits = type_bits(ttype)
            while nodelen and p + 4 * nodelen <= len(data):
                node = parse_node(data[p:], bits)
                nodes.append(node)
                p += 4 * nodelen + (4 + 4 * node["opaque_words"] if "opaque_words" in node else 0)
            out.append(dict(namespace=ns, nodelen=nodelen, flags=flags, remlen=remlen, ttype=ttype,
                            data_off=data_off, data=data, nodes=nodes))
        o += 2 + ln
    return out


def parse_node(d, bits):
    node, p = {}, 0
    for b in bits:
        if b == 0:
            node["hop_limit"], node["node_id"] = d[p], int.from_bytes(d[p + 1:p + 4], "big")
        elif b == 1:
            node["ingress_id"], node["egress_id"] = struct.unpack(">HH", d[p:p + 4])
        elif b == 2:
            node["ts_sec"] = int.from_bytes(d[p:p + 4], "big")
        elif b == 3:
            node["ts_frac"] = int.from_bytes(d[p:p + 4], "big")
        elif b == 5:
            node["ns_data"] = int.from_bytes(d[p:p + 4], "big")
        elif b == 8:
            node["hop_limit_w"], node["node_id_wide"] = d[p], int.from_bytes(d[p + 1:p + 8], "big")
        elif b == 9:
            node["ingress_id_wide"], node["egress_id_wide"] = struct.unpack(">II", d[p:p + 8])
        elif b == 10:
            node["ns_data_wide"] = int.from_bytes(d[p:p + 8], "big")
        elif b == 22:
            w = int.from_bytes(d[p:p + 4], "big")
            node["opaque_words"], node["schema_id"] = w >> 24, w & 0xFFFFFF
            node["opaque"] = bytes(d[p + 4:p + 4 + 4 * (w >> 24)])
        p += 4 * _BIT_WORDS.get(b, 0) if b != 22 else 4
    return node


def ts_offsets(ttype, node_start):
    """Byte offsets (relative to node_start) of the timestamp words (bits 2 and 3) of one node."""
    offs, p = [], node_start
    for b in type_bits(ttype):
        if b in (2, 3):
            offs.append(p)
        p += 4 * _BIT_WORDS.get(b, 0) if b != 22 else 4
    return offs


# --------------------------------------------------------------------------------------------
# RPL source routing header (RFC 6554)

def _common(a, b):
    n = 0
    while n < 16 and a[n] == b[n]:
        n += 1
    return n


def rpl_srh(addrs, sl, da, nh=17, cmpri=None, cmpre=None):
    """Build a type-3 RH for addrs (in order), maximally compressed against da unless given."""
    a = [a16(x) for x in addrs]
    d = a16(da)
    if cmpri is None:
        cmpri = min([_common(x, d) for x in a[:-1]] + [15]) if len(a) > 1 else 15
    if cmpre is None:
        cmpre = min(_common(a[-1], d), 15)
    body = b"".join(x[cmpri:] for x in a[:-1]) + a[-1][cmpre:]
    pad = (8 - len(body) % 8) % 8
    return bytes([nh, (len(body) + pad) // 8, 3, sl, (cmpri << 4) | cmpre, pad << 4, 0, 0]) + body + bytes(pad)


def parse_rpl(ip6):
    """Decode the type-3 RH right after the IPv6 header, addresses decompressed against the DA."""
    if ip6[6] != 43 or ip6[42] != 3:
        return None
    da, r = bytes(ip6[24:40]), ip6[40:]
    hlen = (r[1] + 1) * 8
    ci, ce, pad = r[4] >> 4, r[4] & 15, r[5] >> 4
    n = (hlen - 8 - pad - (16 - ce)) // (16 - ci)
    addrs, o = [], 8
    for i in range(n + 1):
        c = ci if i < n else ce
        addrs.append(ip6str(da[:c] + bytes(r[o:o + 16 - c])))
        o += 16 - c
    return dict(nh=r[0], hdrlen=r[1], sl=r[3], cmpri=ci, cmpre=ce, pad=pad, addrs=addrs, da=ip6str(da), hlim=ip6[7],
                len=hlen)


def udp_over_rh(da, rh, final_dst, src="fd00:1::1", hlim=64, size=24, tag=0, smac=MAC_S0, dmac=MAC_R0):
    """IPv6(DA=da) / raw RH / UDP whose checksum uses the final destination (RFC 8200 §8.1)."""
    u = UDP(sport=UDP_SPORT, dport=UDP_DPORT) / payload(size, tag)
    u.chksum = in6_chksum(17, IPv6(src=src, dst=final_dst), raw(u))
    return raw(Ether(src=smac, dst=dmac) / IPv6(src=src, dst=da, nh=43, hlim=hlim) / Raw(rh) / u)


def udp_checksum_ok(ip6, upper_off, final_dst):
    """Verify the UDP checksum at upper_off (from the IPv6 start) against final_dst."""
    seg = bytes(ip6[upper_off:])
    u = bytearray(seg)
    got = int.from_bytes(u[6:8], "big")
    u[6:8] = b"\0\0"
    want = in6_chksum(17, IPv6(src=ip6str(ip6[8:24]), dst=final_dst), bytes(u))
    return got == (want or 0xFFFF)
