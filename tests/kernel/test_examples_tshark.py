"""tshark dissects every packet kind lwt6 emits in the examples without an error: SRv6 inline / encap /
encap.red / l2encap / HMAC / IPv4 inner, IOAM inline / encap / transit / overflow, RPL insertion and intermediate
processing, and the ICMPv6 errors (Time Exceeded, Destination Unreachable) lwt6 generates."""
import subprocess
from pathlib import Path

import pytest

from ktlwt6 import lwt6_bin, tshark_problems

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("example", ["seg6", "ioam6", "rpl"])
def test_example_outputs_dissect_cleanly(example, tmp_path):
    ex = ROOT / "examples" / example
    out = tmp_path / f"{example}.pcapng"
    r = subprocess.run([str(lwt6_bin()), "pcap", "-c", str(ex / "router.conf"), "--in-dev", "r0",
                        str(ex / "input.pcap"), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    n = subprocess.run(["tshark", "-n", "-r", str(out)], capture_output=True, text=True)
    frames = [l for l in n.stdout.splitlines() if l.strip()]
    assert len(frames) >= 3, n.stdout
    assert tshark_problems(out) == []
    if example == "seg6":
        # the ICMPv6 errors lwt6 generated are decoded as such, with a good checksum
        v = subprocess.run(["tshark", "-n", "-r", str(out), "-Y", "icmpv6.type < 128", "-T", "fields",
                            "-e", "icmpv6.type", "-e", "icmpv6.checksum.status"], capture_output=True, text=True)
        rows = sorted(v.stdout.split())
        assert rows == ["1", "1", "1", "3"], v.stdout   # types 1 and 3, both checksum status 1 (good)
