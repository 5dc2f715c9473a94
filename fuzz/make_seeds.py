#!/usr/bin/env python3
"""Writes the seed corpora fuzz/seeds/TARGET/ (run from the repository root; the seeds are committed).

    python3 fuzz/make_seeds.py [LWT6_BINARY]

Seeds are the frames of the kernel-made and example captures (tests/data/srh_kernel.pcap, examples/*/*.pcap),
cut into the pieces each wire target takes (IPv6 packet, extension headers, SRH, RPL header with its
destination, IOAM option, ...), the capture files themselves, and the example configurations and their lines.
With an lwt6 binary the frames lwt6 sends for the examples are added too (they carry the headers lwt6 builds:
IOAM options, compressed RPL headers, HMAC TLVs). Seeds only steer the fuzzer; nothing is checked against them.
"""
import glob
import hashlib
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.getcwd()
OUT = os.path.join(ROOT, "fuzz", "seeds")


def pcap_frames(path):
    """Frames of a classic pcap file (either byte order, micro- or nanosecond)."""
    b = open(path, "rb").read()
    magic = b[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        return []
    off, out = 24, []
    while off + 16 <= len(b):
        _, _, incl, _ = struct.unpack(e + "IIII", b[off:off + 16])
        out.append(b[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def ext_headers(pkt):
    """(kind, bytes) of each IPv6 extension header of `pkt` (starting at the IPv6 header)."""
    out = []
    if len(pkt) < 40:
        return out
    nh, off = pkt[6], 40
    while nh in (0, 43, 60, 44) and off + 2 <= len(pkt):
        ln = 8 if nh == 44 else (pkt[off + 1] + 1) * 8
        out.append((nh, pkt[off:off + ln]))
        nh, off = pkt[off], off + ln
    return out


def icmp_error(src, dst, ty, code, field, invoking):
    """An ICMPv6 error message with its checksum (RFC 4443 §2.3)."""
    msg = bytearray(struct.pack(">BBHI", ty, code, 0, field) + invoking[:1232])
    pseudo = src + dst + struct.pack(">I", len(msg)) + b"\0\0\0\x3a"
    data = pseudo + bytes(msg) + (b"\0" if len(msg) % 2 else b"")
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    struct.pack_into(">H", msg, 2, ~s & 0xFFFF)
    return src + dst + bytes(msg)


def inet_sum(data):
    """The Internet checksum (RFC 1071) of `data`."""
    data = data + (b"\0" if len(data) % 2 else b"")
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def neighbour_seeds(ipv4_packets):
    """ARP request and reply (RFC 826), NS and NA with their link-layer options (RFC 4861 §4.3, §4.4), ICMPv4 echo
    requests and the IPv4 datagrams of the captures (as invoking datagrams of ICMPv4 errors)."""
    mac1, mac2 = bytes([2, 0, 0, 0, 1, 1]), bytes([2, 0, 0, 0, 1, 2])
    ip1, ip2 = bytes([10, 1, 0, 1]), bytes([10, 1, 0, 2])
    put("arp", b"\0\x01\x08\x00\x06\x04\x00\x01" + mac1 + ip1 + bytes(6) + ip2)
    put("arp", b"\0\x01\x08\x00\x06\x04\x00\x02" + mac2 + ip2 + mac1 + ip1)
    a1 = bytes.fromhex("fd000001000000000000000000000001")
    a2 = bytes.fromhex("fd000001000000000000000000000002")
    sol = bytes.fromhex("ff0200000000000000000001ff000002")
    for src, dst, ty, flags, opt, mac in ((a1, sol, 135, 0, 1, mac1), (a2, a1, 136, 0x60, 2, mac2),
                                          (bytes(16), sol, 135, 0, None, None)):
        msg = bytearray(struct.pack(">BBHB3x", ty, 0, 0, flags) + a2)
        if opt:
            msg += bytes([opt, 1]) + mac
        pseudo = src + dst + struct.pack(">I", len(msg)) + b"\0\0\0\x3a"
        struct.pack_into(">H", msg, 2, inet_sum(pseudo + bytes(msg)))
        put("ndp", src + dst + bytes(msg))
    echo = bytearray(b"\x08\0\0\0\0\x01\0\x02abcd")
    struct.pack_into(">H", echo, 2, inet_sum(bytes(echo)))
    put("icmpv4", bytes(echo))
    for pkt in ipv4_packets[:8]:
        put("icmpv4", pkt)


def main():
    captures = sorted(glob.glob("examples/*/*.pcap") + glob.glob("tests/data/*.pcap"))
    frames = [f for c in captures for f in pcap_frames(c)]
    if len(sys.argv) > 1:
        with tempfile.TemporaryDirectory() as tmp:
            for ex in ("seg6", "ioam6", "rpl"):
                out = os.path.join(tmp, ex)
                subprocess.run([sys.argv[1], "pcap", "-c", f"examples/{ex}/router.conf", "--in-dev", "r0",
                                f"examples/{ex}/input.pcap", "--out-dir", out], check=True,
                               stdout=subprocess.DEVNULL)
                for p in sorted(glob.glob(out + "/*.pcap")):
                    frames += pcap_frames(p)
    for c in captures:
        put("pcap", open(c, "rb").read())
    sep = b"LWT6"
    for i, f in enumerate(frames):
        put("ethernet", f)
        put("decode", f)
        put("pipeline", bytes([i % 2]) + f)
        ethertype = f[12:14]
        if ethertype == b"\x08\x00":
            put("ipv4", f[14:])
        if ethertype != b"\x86\xdd":
            continue
        pkt = f[14:]
        put("ipv6", pkt)
        put("exthdr", pkt)
        for kind, h in ext_headers(pkt):
            if kind in (0, 60):
                put("hbh", h)
                # The IOAM option (type 0x31) as its own view, if there is one.
                off = 2
                while off + 2 <= len(h):
                    if h[off] == 0:
                        off += 1
                        continue
                    if h[off] == 0x31:
                        put("ioam", h[off:off + 2 + h[off + 1]])
                    off += 2 + h[off + 1]
            if kind == 43 and len(h) > 2 and h[2] == 4:
                put("srh", h)
            if kind == 43 and len(h) > 2 and h[2] == 3:
                put("rpl", pkt[24:40] + h)
        put("icmpv6", icmp_error(pkt[24:40], pkt[8:24], 1, 0, 0, pkt))
        put("icmpv6", icmp_error(pkt[24:40], pkt[8:24], 2, 0, 1280, pkt))
        put("icmpv6", icmp_error(pkt[24:40], pkt[8:24], 4, 0, 42, pkt))
    # A few multi-frame pipeline inputs: every example's frames in one input, from r0 and from r1.
    for dev in (0, 1):
        put("pipeline", bytes([dev]) + (sep + bytes([dev])).join(frames[:15]))
    for c in sorted(glob.glob("examples/*/router.conf")) + ["crates/lab/src/bench/soak.conf"]:
        text = open(c, "rb").read()
        put("config", text)
        for line in text.splitlines():
            if line.strip() and not line.startswith(b"#"):
                put("control", line)
    put("control", b"-6 route del fd00:91::/64\n-6 route add fd00:91::/64 encap seg6 mode encap segs fc00::1 dev r1")
    put("control", b"link add r9\naddr add fd00:9::1/64 dev r9\n-6 route add fd00:99::/64 dev r9 metric 5")
    neighbour_seeds([f[14:] for f in frames if f[12:14] == b"\x08\x00"])


main()
