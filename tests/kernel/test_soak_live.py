"""The live soak, briefly (scripts/soak-live.py; docs/fuzzing.md, *The live soak*): `lwt6 run` on the soak router
over AF_XDP and over AF_PACKET, a few hundred thousand frames of every kind from `lwt6 gen`, 10,000 route changes
per second in batches through the control socket, the router stopped twice for 100 ms so that the kernel's rings
overflow. Every frame must be accounted for: what the sender's kernel took = what lwt6 received + its overload
(counted by the kernel on lwt6's sockets) + what the veth dropped; lwt6's rx = tx + dropped + consumed + pending;
what lwt6 sent on each link = what the host there counted + what the veth dropped. The script checks all of it
and its exit status says so; this test also checks that every kind of frame was seen and that overload happened.
"""
import json
import os
import subprocess
import sys

import pytest

from ktlwt6 import lwt6_bin
from ktnet import require_root

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "soak-live.py")


@pytest.mark.parametrize("io", ["xdp", "packet"])
def test_live_soak_briefly(io):
    require_root()
    prefix = f"l6t-{os.getpid()}-soak{io[0]}-"
    r = subprocess.run([sys.executable, SCRIPT, "--packets", "400000", "--rate", "150000", "--change-rate", "10000",
                        "--pause-every", "1", "--pause-ms", "100", "--max-growth-kib", "2048", "--io", io,
                        "--prefix", prefix, "--bin", str(lwt6_bin()), "--json"],
                       capture_output=True, text=True, timeout=180)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in left, f"namespaces left behind:\n{left}"
    assert r.stdout.strip(), f"no report (exit {r.returncode}): {r.stderr}"
    rep = json.loads(r.stdout)
    failed = [f"{c['check']}: {c['detail']}" for c in rep["checks"] if not c["ok"]]
    assert r.returncode == 0 and not failed, "\n".join(failed) or r.stderr
    f = rep["lwt6"]
    assert f["io"] == {"xdp": "af_xdp", "packet": "af_packet"}[io]
    assert rep["packets_sent"] == 400_000, rep["packets_sent"]
    for kind in ("seg6", "rpl", "ioam6"):
        assert f["encapsulated"].get(kind, 0) > 0, (kind, f["encapsulated"])
    for reason in ("not_for_us", "ipv6_malformed", "hop_limit_exceeded", "no_route", "srh_malformed"):
        assert f["drops"].get(reason, 0) > 0, (reason, f["drops"])
    assert f["ioam_transit_filled"] > 0
    assert f["overload"] > 0, "the router was stopped twice: its rings must have overflowed"
    assert rep["changes"]["applied"] >= 20_000, rep["changes"]
