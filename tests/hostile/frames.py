"""Byte-level frame builder for the hostile catalogue: an IPv6 or IPv4 packet assembled from explicit parts, so
that any field can be made inconsistent (lengths, versions, next headers) and any frame cut at any byte.

Layouts: Ethernet II; IPv6 RFC 8200 §3; extension headers RFC 8200 §4 (Hop-by-Hop and Destination Options §4.3,
§4.6, TLV options §4.2, Routing §4.4, Fragment §4.5); SRH RFC 8754 §2 (HMAC TLV §2.1.2); RPL SRH RFC 6554 §3;
IOAM pre-allocated trace RFC 9197 §4.4 in a Hop-by-Hop option RFC 9486 §3; IPv4 RFC 791 §3.1; UDP RFC 768.
Every builder takes the case's tag (an integer below 2^16): IPv6 packets carry it in the flow label
(0xA0000 | tag), IPv4 packets in the Identification field, so the kernel runner can tell which case an output
frame belongs to (see `find_tag`).
"""
import hashlib
import hmac as hmaclib
import ipaddress
import struct

MAC_S0 = bytes.fromhex("020000000101")   # sender (tests/kernel/ktpkt.py)
MAC_R0 = bytes.fromhex("020000000102")   # router, ingress
MAC_OTHER = bytes.fromhex("020000000909")
SRC = "fd00:1::1"                         # the sender
LOCAL = "fd00:1::2"                       # the router's address on r0
LOCAL_R1 = "fd00:2::1"                    # the router's address on r1
FAR = "fc00::1"                           # routed via r1 (RTR_BASE: fc00::/16 via fd00:2::2)
FLOW_TAG = 0xA0000

# Protocol numbers (IANA).
HOP, TCP, UDP, IPV4, IPV6, ROUTING, FRAG, ESP, ICMP6, NONE, DST = 0, 6, 17, 4, 41, 43, 44, 50, 58, 59, 60


def a16(addr):
    return ipaddress.IPv6Address(addr).packed


def a4(addr):
    return ipaddress.IPv4Address(addr).packed


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp(src, dst, size=16, tag=0):
    """UDP datagram (RFC 768) with a checksum over the IPv6 pseudo-header (RFC 8200 §8.1) of src/dst."""
    body = b"L6T!" + struct.pack(">H", tag) + bytes((i * 7) & 0xFF for i in range(max(0, size - 6)))
    hdr = struct.pack(">HHHH", 40000, 3333, 8 + len(body), 0)
    pseudo = a16(src) + a16(dst) + struct.pack(">IxxxB", 8 + len(body), UDP)
    c = csum(pseudo + hdr + body) or 0xFFFF
    return hdr[:6] + struct.pack(">H", c) + body


def eth(payload, ethertype=0x86DD, dst=MAC_R0, src=MAC_S0):
    return dst + src + struct.pack(">H", ethertype) + payload


def ext(body, hdrlen=None):
    """An extension header without its Next Header byte (filled in by `ipv6`): Hdr Ext Len + body.
    `body` is everything after the first two bytes; it is padded to 8n - 2 bytes unless hdrlen is given."""
    if hdrlen is None:
        body = body + bytes((-(len(body) + 2)) % 8)
        hdrlen = (len(body) + 2) // 8 - 1
    return bytes([hdrlen]) + body


def opts(*options):
    """Hop-by-Hop / Destination Options body (RFC 8200 §4.2) from raw option bytes, PadN-padded to 8n."""
    body = b"".join(options)
    pad = (-(len(body) + 2)) % 8
    if pad == 1:
        body += b"\x00"
    elif pad:
        body += bytes([1, pad - 2]) + bytes(pad - 2)
    return ext(body)


def srh(segments, sl, last=None, hdrlen=None, flags=0, tag=0, tlvs=b"", rtype=4):
    """SRH (RFC 8754 §2) without its Next Header byte; `segments` in wire order (Segment List[0] first)."""
    segs = b"".join(a16(s) for s in segments)
    if last is None:
        last = len(segments) - 1
    body = bytes([rtype, sl, last, flags]) + struct.pack(">H", tag) + segs + tlvs
    if hdrlen is None:
        hdrlen = (len(body) + 2 + 7) // 8 - 1
        body += bytes((hdrlen + 1) * 8 - 2 - len(body))
    return bytes([hdrlen]) + body


def hmac_tlv(key_id, digest):
    """HMAC TLV (RFC 8754 §2.1.2): type 5, length 38, reserved, key id, 32 bytes."""
    return bytes([5, 38, 0, 0]) + struct.pack(">I", key_id) + digest.ljust(32, b"\0")[:32]


def srh_with_hmac(segments, sl, key_id, secret, src=SRC, algo="sha256", flags=0x08, tlv_len=38, last=None):
    """SRH with an HMAC TLV computed as RFC 8754 §2.1.2.1 defines it (text: source address, Last Entry, flags,
    key id, segment list)."""
    le = len(segments) - 1 if last is None else last
    text = a16(src) + bytes([le, flags]) + struct.pack(">I", key_id) + b"".join(a16(s) for s in segments[:le + 1])
    digest = hmaclib.new(secret, text, getattr(hashlib, algo)).digest() if secret is not None else bytes(32)
    tlv = bytearray(hmac_tlv(key_id, digest))
    tlv[1] = tlv_len
    return srh(segments, sl, last=le, flags=flags, tlvs=bytes(tlv))


def ipv6(dst, chain=(), upper=None, upper_nh=UDP, src=SRC, hlim=64, tag=0, plen=None, version=6, tc=0,
         trailer=b""):
    """IPv6 header + extension headers + upper layer. `chain` is a list of (protocol, header bytes without the
    Next Header byte); each header's Next Header is the next one's protocol (the last one's is `upper_nh`).
    `upper` defaults to a UDP datagram whose checksum uses `dst`; `plen` overrides the Payload Length."""
    if upper is None:
        upper = udp(src, dst, tag=tag) if upper_nh == UDP else b""
    kinds = [k for k, _ in chain] + [upper_nh]
    body = b"".join(bytes([kinds[i + 1]]) + h for i, (_, h) in enumerate(chain)) + upper
    if plen is None:
        plen = len(body)
    fl = FLOW_TAG | tag
    word = (version << 28) | (tc << 20) | fl
    return struct.pack(">IHBB", word, plen & 0xFFFF, kinds[0], hlim) + a16(src) + a16(dst) + body + trailer


def v6(dst, *a, dmac=MAC_R0, **k):
    """Ethernet frame carrying `ipv6(dst, ...)`."""
    return eth(ipv6(dst, *a, **k), dst=dmac)


def ipv4(dst, src="10.1.0.1", ttl=64, tag=0, ihl=5, options=b"", total=None, version=4, bad_csum=False,
         proto=UDP, payload=None, trailer=b"", df=False):
    """IPv4 header (RFC 791 §3.1) + UDP (checksum 0: allowed for IPv4), any field overridable."""
    if payload is None:
        body = b"L6T!" + struct.pack(">H", tag) + bytes(10)
        payload = struct.pack(">HHHH", 40000, 3333, 8 + len(body), 0) + body
    hdr_len = 20 + len(options)
    if total is None:
        total = hdr_len + len(payload)
    h = bytearray(struct.pack(">BBHHHBBH4s4s", (version << 4) | ihl, 0, total & 0xFFFF, tag, 0x4000 if df else 0,
                              ttl, proto, 0,
                              a4(src), a4(dst)) + options)
    c = csum(bytes(h[:max(20, min(len(h), ihl * 4))]))
    struct.pack_into(">H", h, 10, c ^ (0x5555 if bad_csum else 0))
    return bytes(h) + payload + trailer


def v4(dst, **k):
    return eth(ipv4(dst, **k), ethertype=0x0800)


def cut(frame, n):
    """The first n bytes of a frame."""
    return frame[:n]


def find_tag(frame, tags):
    """Which of `tags` (case tags) an output frame belongs to: the flow label of an IPv6 header anywhere after
    the Ethernet header (a forwarded packet, an inner packet, the packet an ICMPv6 error quotes), or the IPv4
    Identification of a forwarded or quoted IPv4 header. None when no tag is found."""
    et = frame[12:14]
    if et == b"\x86\xdd":
        start = 14 + (48 if len(frame) > 54 and frame[20] == ICMP6 else 0)
        for t in tags:
            if frame.find(bytes([0x60, 0x0A]) + struct.pack(">H", t), start) >= 0:
                return t
    elif et == b"\x08\x00" and len(frame) >= 34:
        ihl = (frame[14] & 15) * 4
        for off in (18, 14 + ihl + 8 + 4):
            if len(frame) >= off + 2:
                t = struct.unpack(">H", frame[off:off + 2])[0]
                if t in tags:
                    return t
    return None
