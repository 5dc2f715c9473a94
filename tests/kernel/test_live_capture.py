"""The live capture of `lwt6 run` (`lwt6 ctl capture start ... FILE`, `capture stop`, `show capture -j`), read
back with tshark: which interface each frame is on, its direction (pcapng `epb_flags`), the drop reason in a
dropped frame's comment, nothing tshark calls malformed; `count N` ends a capture by itself, `dev` keeps one
device; an existing file is refused (replaced only with `overwrite`), a relative FILE is the client's.

What each frame should be is said here from the frames sent (a forwarded frame goes out of r1 with its hop limit
one less; hop limit 1 and an unrouted destination are dropped, each with an ICMPv6 error back out of r0: RFC 4443
§3.3 type 3, §3.1 type 1), never taken from lwt6's output."""
import json
import os
import subprocess
import time

import pytest

from ktlive import LIVE_BASE, live_topo, LiveRouter, LiveTopo
from ktlwt6 import lwt6_bin, tshark_problems
from ktnet import NetnsError, require_root, xfer
from ktpkt import udp6, with_marker


@pytest.fixture(scope="module")
def live(request):
    return live_topo(request, "cap")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("capture"))


FIELDS = ["frame.interface_name", "frame.packet_flags_direction", "frame.comment", "ipv6.dst", "ipv6.hlim",
          "icmpv6.type"]


def tshark_rows(path):
    """One dict per frame: the FIELDS (first occurrence: an ICMPv6 error's own header, not the one it quotes)."""
    argv = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "occurrence=f"]
    for f in FIELDS:
        argv += ["-e", f]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [dict(zip(FIELDS, line.split("\t"))) for line in r.stdout.splitlines()]


def direction(v):
    """tshark's frame.packet_flags_direction (hex or decimal): 1 inbound, 2 outbound (pcapng §4.3.1)."""
    return int(v, 0) if v else 0


def show_capture(r):
    res = r.ctl("show", "capture", "-j")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("io", ["packet", "xdp"])
def test_capture_live(live, workdir, io):
    """Over AF_PACKET and AF_XDP (the frames lwt6's own XDP program redirects to its workers: all of them here)."""
    workdir = os.path.join(workdir, io)
    os.makedirs(workdir, exist_ok=True)
    live.lwt6_mode()
    r = LiveRouter(live.rns, "\n".join(LIVE_BASE) + "\n", workdir, args=["--io", io], label="capture")
    frames = []
    try:
        assert show_capture(r)["status"] == "off"
        path = os.path.join(workdir, "all.pcapng")
        bad = r.ctl("capture", "start", "count", "0", path)
        assert bad.returncode == 1 and "'0'" in bad.stderr, bad.stderr
        bad = r.ctl("capture", "start", "dev", "nosuch0", path)
        assert bad.returncode == 1 and "'nosuch0'" in bad.stderr, bad.stderr
        ok = r.ctl("capture", "start", path)
        assert ok.returncode == 0, ok.stderr
        busy = r.ctl("capture", "start", os.path.join(workdir, "other.pcapng"))
        assert busy.returncode == 1 and "a capture is running" in busy.stderr, busy.stderr
        fwd = [udp6(f"fc00::{i}", hlim=64, size=16, tag=i) for i in (1, 2, 3)]
        expired = udp6("fc00::99", hlim=1, size=16, tag=4)
        unrouted = udp6("2001:db8::1", hlim=64, size=16, tag=5)
        frames = fwd + [expired, unrouted]
        got = xfer(live.s0, frames, [live.s0, live.d0], timeout=1.0, keep=with_marker)
        assert len(got[live.d0.label]) == 3 and len(got[live.s0.label]) == 2, got
        r.wait_rx(len(frames))
        time.sleep(0.1)
        stop = r.ctl("capture", "stop")
        assert stop.returncode == 0 and stop.stdout.startswith("capture stopped: "), (stop.stdout, stop.stderr)
        doc = show_capture(r)
        assert doc["status"] == "stopped" and doc["lost"] == 0 and doc["file"] == path, doc
        assert r.ctl("capture", "stop").returncode == 1, "nothing left to stop"

        assert tshark_problems(path) == []
        rows = tshark_rows(path)
        assert len(rows) == doc["written"], (len(rows), doc)
        # The frames the sender's kernel sends by itself (MLD, router solicitations) are captured too: multicast,
        # received and dropped by name. Ours are picked by destination.
        def ours(dst):
            return [(x["frame.interface_name"], direction(x["frame.packet_flags_direction"]),
                     x["frame.comment"], x["ipv6.hlim"], x["icmpv6.type"]) for x in rows if x["ipv6.dst"] == dst]
        for i in (1, 2, 3):
            assert ours(f"fc00::{i}") == [("r0", 1, "", "64", ""), ("r1", 2, "", "63", "")], rows
        assert ours("fc00::99") == [("r0", 1, "", "1", ""), ("r0", 1, "dropped: hop_limit_exceeded", "1", "")]
        assert ours("2001:db8::1") == [("r0", 1, "", "64", ""), ("r0", 1, "dropped: no_route", "64", "")]
        # The two ICMPv6 errors, out of r0 to the sender: Time Exceeded (3), Destination Unreachable (1).
        assert sorted(ours("fd00:1::1")) == [("r0", 2, "", "64", "1"), ("r0", 2, "", "64", "3")], rows
        for x in rows:
            if x["frame.comment"]:
                assert x["frame.comment"].startswith("dropped: ") and direction(x["frame.packet_flags_direction"]) == 1

        # count 2, sent frames of r1 only: the capture ends by itself after two; a relative FILE is the client's.
        rel = "r1.pcapng"
        res = subprocess.run([str(lwt6_bin()), "ctl", "--control", r.sock, "capture", "start", "dev", "r1", "tx",
                              "count", "2", rel], capture_output=True, text=True, cwd=workdir)
        assert res.returncode == 0, res.stderr
        path2 = os.path.join(workdir, rel)
        more = [udp6(f"fc00::{i}", hlim=64, size=16, tag=i) for i in range(10, 15)]
        frames += more
        got = xfer(live.s0, more, live.d0, expect=len(more), timeout=1.0, keep=with_marker)
        assert len(got[live.d0.label]) == len(more)
        deadline = time.monotonic() + 5
        while show_capture(r)["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.02)
        doc = show_capture(r)
        assert (doc["status"], doc["written"], doc["count"], doc["file"]) == ("done", 2, 2, path2), doc
        assert doc["filter"] == "dev r1 tx", doc
        assert tshark_problems(path2) == []
        rows = tshark_rows(path2)
        assert [(x["frame.interface_name"], direction(x["frame.packet_flags_direction"]), x["ipv6.dst"])
                for x in rows] == [("r1", 2, "fc00::10"), ("r1", 2, "fc00::11")], rows

        # The file exists now: refused, then replaced with 'overwrite'; a symbolic link is never followed.
        again = r.ctl("capture", "start", path2)
        assert again.returncode == 1 and "exists" in again.stderr, again.stderr
        link = os.path.join(workdir, "link.pcapng")
        os.symlink(path, link)
        refused = r.ctl("capture", "start", "overwrite", link)
        assert refused.returncode == 1 and "symbolic link" in refused.stderr, refused.stderr
        ok = r.ctl("capture", "start", "overwrite", path2)
        assert ok.returncode == 0, ok.stderr
    finally:
        final = r.stop()
    # The router's stop closed the capture left running: a valid (empty of our frames) file.
    assert tshark_problems(path2) == []
    assert final["balanced"] and final["rx"] >= len(frames), final
