"""Minimal pcap writer/reader and pcapng reader (enough to validate lwt6's output structure)."""
import struct

LINKTYPE_ETHERNET = 1


def write_pcap(path, frames):
    """Classic pcap, microsecond timestamps (1 s apart, deterministic), Ethernet link type."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        for i, fr in enumerate(frames):
            fr = bytes(fr)
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


class PcapngError(ValueError):
    pass


def read_pcapng(path):
    """Return [(if_name, frame_bytes)] in file order. Validates the block structure strictly.

    Interfaces without an if_name option get the name '#<index>'.
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 or data[:4] != b"\x0a\x0d\x0d\x0a":
        raise PcapngError(f"{path}: not a pcapng file (no Section Header Block)")
    bom = data[8:12]
    if bom == b"\x4d\x3c\x2b\x1a":
        e = "<"
    elif bom == b"\x1a\x2b\x3c\x4d":
        e = ">"
    else:
        raise PcapngError(f"{path}: bad byte-order magic {bom.hex()}")
    ifaces, out, off = [], [], 0
    while off < len(data):
        if off + 12 > len(data):
            raise PcapngError(f"{path}: truncated block header at {off}")
        btype, blen = struct.unpack(e + "II", data[off:off + 8])
        if blen < 12 or blen % 4 or off + blen > len(data):
            raise PcapngError(f"{path}: bad block length {blen} at offset {off}")
        (trail,) = struct.unpack(e + "I", data[off + blen - 4:off + blen])
        if trail != blen:
            raise PcapngError(f"{path}: trailing length {trail} != {blen} at offset {off}")
        body = data[off + 8:off + blen - 4]
        if btype == 0x0A0D0D0A:
            ifaces = []  # a new section restarts interface numbering
        elif btype == 1:  # IDB
            linktype = struct.unpack(e + "H", body[:2])[0]
            name = f"#{len(ifaces)}"
            o = 8
            while o + 4 <= len(body):
                code, olen = struct.unpack(e + "HH", body[o:o + 4])
                if code == 0:
                    break
                if code == 2:
                    name = body[o + 4:o + 4 + olen].decode()
                o += 4 + ((olen + 3) & ~3)
            ifaces.append((name, linktype))
        elif btype == 6:  # EPB
            ifid, _, _, caplen, _ = struct.unpack(e + "IIIII", body[:20])
            if ifid >= len(ifaces):
                raise PcapngError(f"{path}: packet refers to undeclared interface {ifid}")
            out.append((ifaces[ifid][0], body[20:20 + caplen]))
        elif btype == 3:  # SPB
            if not ifaces:
                raise PcapngError(f"{path}: simple packet block before any interface")
            (orig,) = struct.unpack(e + "I", body[:4])
            out.append((ifaces[0][0], body[4:4 + orig]))
        off += blen
    return out
