"""SRv6 frames for the endpoint (seg6local / SRH receive) tests, and the expected outputs derived by hand from
RFC 8754 / RFC 8986 (the pseudo-code of each behaviour), independently of lwt6.

Conventions: `segs` is the segment list as it is on the wire (segments[0] = the LAST segment of the path);
frames arrive from sndr (MAC_S0) at the router's r0 (MAC_R0); forwarded frames leave r1 (MAC_R1) for
rcvr (MAC_D0).
"""
import hashlib
import hmac as hmaclib
import struct

from scapy.compat import raw
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, in6_chksum

from ktpkt import MAC_D0, MAC_R0, MAC_R1, MAC_S0, UDP_DPORT, UDP_SPORT, a16, ip6str, payload

NH_UDP, NH_IPV4, NH_IPV6, NH_ETH, NH_RH = 17, 4, 41, 143, 43


def mac(m):
    return bytes.fromhex(m.replace(":", ""))


def eth(dst, src, etype=0x86DD):
    return mac(dst) + mac(src) + struct.pack(">H", etype)


def udp_seg(src, final_dst, size=12, tag=0):
    """A UDP header + payload whose checksum is computed against the FINAL destination (RFC 8200 §8.1)."""
    u = UDP(sport=UDP_SPORT, dport=UDP_DPORT) / payload(size, tag)
    u.chksum = in6_chksum(17, IPv6(src=src, dst=final_dst), raw(u))
    return raw(u)


def inner6(dst="fd00:2::2", src="fd00:1::1", hlim=50, size=12, tag=0, fl=0x54321, tc=0x20):
    """An inner IPv6/UDP packet (no Ethernet)."""
    return raw(IPv6(src=src, dst=dst, hlim=hlim, fl=fl, tc=tc) / UDP(sport=UDP_SPORT, dport=UDP_DPORT)
               / payload(size, tag))


def inner4(dst="10.2.0.2", src="10.1.0.1", ttl=50, size=12, tag=0, tos=0x10):
    return raw(IP(src=src, dst=dst, ttl=ttl, tos=tos, id=0x1234) / UDP(sport=UDP_SPORT, dport=UDP_DPORT)
               / payload(size, tag))


def hmac_tlv(keyid, digest=bytes(32)):
    """RFC 8754 §2.1.2: type 5, length 38, D bit clear + reserved, key id, 32-byte HMAC."""
    return bytes([5, 38, 0, 0]) + struct.pack(">I", keyid) + digest


def srh(segs, sl, nh, tlvs=b"", flags=0, tag=0, last=None):
    """RFC 8754 §2: next header, hdr ext len, type 4, segments left, last entry, flags, tag, segments, TLVs."""
    body = b"".join(a16(s) for s in segs) + tlvs
    assert len(body) % 8 == 0
    last = len(segs) - 1 if last is None else last
    return bytes([nh, len(body) // 8, 4, sl, last, flags]) + struct.pack(">H", tag) + body


def srh_hmac_digest(secret, src, srh_bytes, keyid):
    """RFC 8754 §2.1.2.1: HMAC-SHA256(secret, src | last entry | flags | key id | segments)."""
    le, flags = srh_bytes[4], srh_bytes[5]
    text = a16(src) + bytes([le, flags]) + struct.pack(">I", keyid) + bytes(srh_bytes[8:8 + 16 * (le + 1)])
    return hmaclib.new(secret, text, hashlib.sha256).digest()


def srh_with_hmac(segs, sl, nh, src, keyid, secret, tamper=False):
    """An SRH carrying an HMAC TLV (flags bit H = 0x08 as Linux sets it) computed with `secret`."""
    h = bytearray(srh(segs, sl, nh, tlvs=hmac_tlv(keyid), flags=0x08))
    d = bytearray(srh_hmac_digest(secret, src, h, keyid))
    if tamper:
        d[5] ^= 0x40
    h[-32:] = d
    return bytes(h)


def ip6hdr(src, dst, nh, plen, hlim=64, fl=0x12345, tc=0xB8):
    return struct.pack(">IHBB", (6 << 28) | (tc << 20) | fl, plen, nh, hlim) + a16(src) + a16(dst)


def frame6(dst, nh, rest, src="fd00:1::1", hlim=64, fl=0x12345, tc=0xB8, smac=MAC_S0, dmac=MAC_R0):
    """Ethernet + IPv6 (dst, next header nh) + the raw bytes `rest` (extension headers and upper layer)."""
    return eth(dmac, smac) + ip6hdr(src, dst, nh, len(rest), hlim, fl, tc) + rest


def srv6(dst, segs, sl, upper=None, nh=NH_UDP, src="fd00:1::1", hlim=64, tag=0, size=12, hmac=None,
         fl=0x12345, tc=0xB8):
    """A frame to `dst` with an SRH (segs, sl) followed by `upper` (default: UDP to segs[0]).

    hmac=(keyid, secret[, tamper]) adds an HMAC TLV.
    """
    if upper is None:
        upper = udp_seg(src, segs[0], size, tag)
    if hmac:
        h = srh_with_hmac(segs, sl, nh, src, hmac[0], hmac[1], tamper=len(hmac) > 2 and hmac[2])
    else:
        h = srh(segs, sl, nh)
    return frame6(dst, NH_RH, h + upper, src=src, hlim=hlim, fl=fl, tc=tc)


# ------------------------------------------------------------------------------------------------
# Expected outputs, hand-derived

def on_r1(ip6, dmac=MAC_D0):
    """The IPv6 packet as sent out of r1 to rcvr."""
    return eth(dmac, MAC_R1) + bytes(ip6)


def on_r1_v4(ip4, dmac=MAC_D0):
    return eth(dmac, MAC_R1, 0x0800) + bytes(ip4)


def end(frame, hops=1):
    """RFC 8986 §4.1 End (S14-S16), then forwarding (hop limit - 1): SL--, DA := segments[SL].

    The SRH must follow the IPv6 header directly. Returns the IPv6 packet (no Ethernet)."""
    p = bytearray(frame[14:])
    for _ in range(hops):
        sl = p[43] - 1
        p[43] = sl
        p[24:40] = p[48 + 16 * sl:64 + 16 * sl]
    p[7] -= 1
    return bytes(p)


def pop_srh(ip6):
    """RFC 8986 §4.16.1 PSP: remove the SRH that directly follows the IPv6 header (its next header moves up)."""
    p = bytearray(ip6)
    hlen = (p[41] + 1) * 8
    nh = p[40]
    out = p[:40] + p[40 + hlen:]
    out[6] = nh
    out[4:6] = struct.pack(">H", len(out) - 40)
    return bytes(out)


def decap_inner(frame, decrement=True):
    """RFC 8986 §4.4 End.DX6 / §4.5 End.DX4 (the upper-layer header processing): remove the outer IPv6 header and
    its extension headers; the inner packet is then forwarded (hop limit / TTL - 1, IPv4 checksum updated)."""
    p = frame[14:]
    nh, off = p[6], 40
    while nh == NH_RH:
        nh, off = p[off], off + (p[off + 1] + 1) * 8
    inner = bytearray(p[off:])
    if not decrement:
        return bytes(inner)
    if nh == NH_IPV6:
        inner[7] -= 1
    elif nh == NH_IPV4:
        inner[8] -= 1
        inner[10:12] = b"\0\0"
        s = sum(struct.unpack(">10H", bytes(inner[:20])))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        inner[10:12] = struct.pack(">H", ~s & 0xFFFF)
    return bytes(inner)


def parse_icmp6(frame):
    """(type, code, pointer/mtu word, quoted bytes, ipv6 src, ipv6 dst) of an ICMPv6 error frame, or None."""
    if len(frame) < 62 or frame[12:14] != b"\x86\xdd" or frame[20] != 58:
        return None
    p = frame[14:]
    return p[40], p[41], struct.unpack(">I", p[44:48])[0], bytes(p[48:]), ip6str(p[8:24]), ip6str(p[24:40])
