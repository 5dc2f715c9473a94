#!/usr/bin/env python3
"""Regenerates the example input captures (examples/*/input.pcap) with nothing but the standard library.

Every frame is received by the example router on r0 (MAC 02:00:00:00:01:02) from the sender fd00:1::1 / 10.1.0.1
(MAC 02:00:00:00:01:01). Run: python3 examples/gen_inputs.py
"""
import ipaddress
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
R0 = bytes.fromhex("020000000102")
SNDR = bytes.fromhex("020000000101")


def a6(s):
    return ipaddress.IPv6Address(s).packed


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def udp6(src, dst, sport, dport, payload):
    ln = 8 + len(payload)
    hdr = struct.pack("!HHHH", sport, dport, ln, 0)
    pseudo = a6(src) + a6(dst) + struct.pack("!I3xB", ln, 17)
    c = csum(pseudo + hdr + payload) or 0xFFFF
    return struct.pack("!HHHH", sport, dport, ln, c) + payload


def ipv6(src, dst, nh, payload, hlim=64, tc=0, fl=0):
    first = (6 << 28) | (tc << 20) | fl
    return struct.pack("!IHBB", first, len(payload), nh, hlim) + a6(src) + a6(dst) + payload


def v6_udp(dst, payload=b"hello from fd00:1::1", hlim=64, tc=0, fl=0, ext=b"", ext_nh=None, final_dst=None):
    u = udp6("fd00:1::1", final_dst or dst, 40000, 3333, payload)
    nh = 17 if ext_nh is None else ext_nh
    return eth(ipv6("fd00:1::1", dst, nh, ext + u, hlim, tc, fl))


def v4_udp(dst, payload=b"hello from 10.1.0.1", ttl=64):
    u = struct.pack("!HHHH", 40000, 3333, 8 + len(payload), 0) + payload
    tot = 20 + len(u)
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot, 1, 0, ttl, 17, 0,
                    ipaddress.IPv4Address("10.1.0.1").packed, ipaddress.IPv4Address(dst).packed)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return R0 + SNDR + b"\x08\x00" + h + u


def eth(pkt):
    return R0 + SNDR + b"\x86\xdd" + pkt


def ioam_hbh(ns, trace_type, node_len, remlen, nh=17):
    """A Hop-by-Hop header with PadN(0) then a pre-allocated trace, as Linux lays it out (RFC 9486 / 9197)."""
    data = bytes(4 * remlen)
    opt = bytes([0x31, 10 + 4 * remlen, 0, 0]) + struct.pack("!HH", ns, (node_len << 11) | remlen)
    opt += struct.pack("!I", trace_type << 8) + data
    body = bytes([nh, 0, 1, 0]) + opt
    if len(body) % 8:
        pad = 8 - len(body) % 8
        body += bytes([1, pad - 2]) + bytes(pad - 2) if pad >= 2 else b"\0"
    return bytes([body[0], len(body) // 8 - 1]) + body[2:]


def rpl_srh(addrs, sl, nh=17):
    """An uncompressed (CmprI = CmprE = 0) RPL source routing header (RFC 6554 §3)."""
    body = b"".join(a6(x) for x in addrs)
    return bytes([nh, len(body) // 8, 3, sl, 0, 0, 0, 0]) + body


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1_767_225_600 + i, 1000 * i, len(fr), len(fr)) + fr)
    print(f"{os.path.relpath(path, HERE)}: {len(frames)} frames")


write_pcap(os.path.join(HERE, "seg6", "input.pcap"), [
    v6_udp("fd00:91::1", tc=0xb8, fl=0x12345),   # inline
    v6_udp("fd00:92::1", hlim=50),               # encap
    v6_udp("fd00:93::1"),                        # encap.red
    v6_udp("fd00:94::1"),                        # l2encap
    v6_udp("fd00:95::1"),                        # encap with HMAC
    v4_udp("10.99.0.7"),                         # IPv4 in SRv6
    v6_udp("fd00:92::2", hlim=1),                # hop limit exhausted: Time Exceeded
    v6_udp("2001:db8:dead::1"),                  # no route: Destination Unreachable
    eth(b"\x60\x00\x00\x00\x00\x50\x11\x40"),    # truncated IPv6 header: dropped, named reason
])
write_pcap(os.path.join(HERE, "ioam6", "input.pcap"), [
    v6_udp("fd00:98::1"),                        # inline trace inserted here
    v6_udp("fd00:98::2"),
    v6_udp("fd00:97::1"),                        # encapsulated towards fd00:2::2 with a trace
    v6_udp("fd00:2::2", ext=ioam_hbh(123, 0xC40000, 3, 6), ext_nh=0),  # transit: fill our node data
    v6_udp("fd00:2::2", ext=ioam_hbh(123, 0xC40000, 3, 2), ext_nh=0),  # no room: Overflow flag
    v6_udp("fd00:2::2", ext=ioam_hbh(123, 0xC40000, 5, 6), ext_nh=0),  # NodeLen inconsistent: dropped
])
write_pcap(os.path.join(HERE, "rpl", "input.pcap"), [
    v6_udp("fd00:96::1"),                        # RPL header inserted, compressed
    v6_udp("fd00:2::77"),                        # plain forwarding
    # addressed to us with an RPL header: we are an intermediate node
    v6_udp("fd00:1::2", ext=rpl_srh(["fd00:2::5", "fd00:2::2"], 2), ext_nh=43, final_dst="fd00:2::2"),
    v6_udp("fd00:1::2", ext=rpl_srh(["ff02::1"], 1), ext_nh=43, final_dst="ff02::1"),  # next hop multicast
])
