"""Live IOAM export (docs/live.md, *IOAM export*): `lwt6 run` as an IOAM domain's egress exports the traces it
removes to a JSON file and to a real gRPC collector (Python grpcio generated from the collector's proto, run in
the router's namespace) at the same time; the traces equal what `lwt6 pcap` exports offline from the same frames
(expected values: RFC 9197 §4.4.2 field order, the configuration's node id). With the collector stopped, forwarding
goes on and the losses are counted for that exporter; started again, the exporter reconnects."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ktlive import LIVE_BASE, LiveRouter, LiveTopo
from ktnet import NetnsError, require_root, xfer
from ktpkt import MAC_R0, MAC_R1, ioam_frame, ioam_hbh, with_marker
from test_ioam_export import PROTO

NODE_ID = 0x123456
TTYPE = 0x840000  # bits 0 and 5: hop limit and node id, namespace data
DOMAIN = [
    "ioam namespace add 123 data 0xdeadbeef",
    f"sysctl net.ipv6.ioam6_id=0x{NODE_ID:x}",
    "sysctl net.ipv6.conf.r0.ioam6_enabled=1",
    "ioam domain add lab namespace 123 ingress r0 egress r0",
]

COLLECTOR = """
import json, sys
from concurrent import futures
import grpc
from google.protobuf import empty_pb2
sys.path.insert(0, sys.argv[1])
import ioam_api_pb2_grpc

class C(ioam_api_pb2_grpc.IOAMServiceServicer):
    def Report(self, it, context):
        for t in it:
            n = t.Nodes[0]
            print(json.dumps({"ns": t.NamespaceId, "type": t.BitField, "hop_limit": n.HopLimit, "id": n.Id,
                              "ns_data": n.NamespaceData.hex()}), flush=True)
        return empty_pb2.Empty()

s = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
ioam_api_pb2_grpc.add_IOAMServiceServicer_to_server(C(), s)
s.add_insecure_port("127.0.0.1:" + sys.argv[2])
s.start()
print("ready", flush=True)
s.wait_for_termination()
"""


def frames(n, first_hlim):
    """n frames towards fc00::/16 (routed by r1, out of the domain) with a trace of namespace 123 (room for 2
    nodes); hop limits tell the traces apart."""
    return [ioam_frame(ioam_hbh(123, TTYPE, 2 * 2), dst="fc00::9", hlim=first_hlim + i, tag=i) for i in range(n)]


@pytest.fixture(scope="module")
def topo(request):
    try:
        require_root()
        t = LiveTopo("ex")
    except NetnsError as e:
        pytest.fail(f"cannot build the live topology: {e}", pytrace=False)
    request.addfinalizer(t.destroy)
    t.lwt6_mode()
    t.topo.ip(t.r, "link set lo up")
    return t


@pytest.fixture(scope="module")
def api_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ioam_api_live")
    (d / "ioam_api.proto").write_text(PROTO)
    r = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"--python_out={d}",
                        f"--grpc_python_out={d}", str(d / "ioam_api.proto")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (d / "collector.py").write_text(COLLECTOR)
    return d


class Collector:
    """The gRPC collector in the router's namespace; `traces()` reads what it received so far."""

    def __init__(self, ns, api_dir, port):
        self.out = open(api_dir / f"got-{port}-{time.monotonic_ns()}.jsonl", "w+")
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, str(api_dir / "collector.py"),
                                      str(api_dir), str(port)], stdout=self.out, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while "ready" not in self.lines(raw=True):
            assert self.proc.poll() is None, self.proc.stderr.read()
            assert time.monotonic() < deadline, "the collector did not start"
            time.sleep(0.05)

    def lines(self, raw=False):
        self.out.flush()
        with open(self.out.name) as f:
            text = f.read()
        return text if raw else [json.loads(l) for l in text.splitlines() if l.startswith("{")]

    def wait(self, n, timeout=15):
        deadline = time.monotonic() + timeout
        while len(self.lines()) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.lines()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def free_port(ns):
    """A port free in namespace ns (its own loopback: any port is)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exporter(stats, target):
    (e,) = [e for e in stats["ioam_export"] if e["target"] == target]
    return e


def without_time(rec):
    r = dict(rec)
    del r["ts_ns"]
    return r


def test_live_export_json_and_grpc_then_collector_down_and_back(topo, api_dir, tmp_path, lwt6):
    port = free_port(topo.rns)
    jpath = tmp_path / "live.jsonl"
    grpc_target = f"grpc:localhost:{port}"
    conf = "\n".join(LIVE_BASE + DOMAIN) + "\n"
    col = Collector(topo.rns, api_dir, port)
    router = None
    try:
        router = LiveRouter(topo.rns, conf, str(tmp_path), args=["--io", "packet", "--ioam-export", f"json:{jpath}",
                                                                 "--ioam-export", grpc_target], label="exlive")
        sent = frames(20, 10)
        got = xfer(topo.s0, sent, [topo.d0], expect=len(sent), timeout=2, keep=with_marker)
        assert len(got[topo.d0.label]) == 20
        # The traces left with the domain: no Hop-by-Hop header at the receiver (next header UDP).
        assert all(f[14 + 6] == 17 for f in got[topo.d0.label])
        traces = col.wait(20)
        assert len(traces) == 20
        # The router's hop: hop limit decremented (first_hlim + i - 1), its node id, the namespace's data.
        assert [(t["ns"], t["type"], t["hop_limit"], t["id"], t["ns_data"]) for t in traces] == \
            [(123, TTYPE, 10 + i - 1, NODE_ID, "deadbeef") for i in range(20)]

        # The same frames offline: the JSON lines equal, but for the time.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(jpath.read_text().splitlines()) < 20:
            time.sleep(0.05)
        live_json = [json.loads(l) for l in jpath.read_text().splitlines()]
        off = tmp_path / "offline.jsonl"
        offline_conf = conf.replace("link add r0", f"link add r0 address {MAC_R0}").replace(
            "link add r1", f"link add r1 address {MAC_R1}")
        lwt6.pcap(offline_conf, sent, label="ioam-export-offline", extra=["--ioam-export", f"json:{off}"])
        offline_json = [json.loads(l) for l in off.read_text().splitlines()]
        assert [without_time(r) for r in live_json] == [without_time(r) for r in offline_json]

        st = router.stats()
        g = exporter(st, grpc_target)
        assert (g["written"], g["lost"], g["running"]) == (20, 0, True)
        assert exporter(st, f"json:{jpath}")["written"] == 20

        # Collector down: forwarding goes on, the gRPC exporter counts its losses, the JSON one loses nothing.
        col.stop()
        sent = frames(30, 100)
        t0 = time.monotonic()
        got = xfer(topo.s0, sent, [topo.d0], expect=len(sent), timeout=3, keep=with_marker)
        assert len(got[topo.d0.label]) == 30, "forwarding stalled while the collector is down"
        assert time.monotonic() - t0 < 3
        # The first batch is lost after its attempts (0.1 + 0.2 + 0.4 s of backoff); later ones may still be
        # waiting for the collector (backoff up to 5 s) and be delivered when it is back.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            g = exporter(router.stats(), grpc_target)
            if g["lost"] > 0:
                break
            time.sleep(0.1)
        assert g["lost"] > 0 and g["written"] == 20 and g["submitted"] == 50, g
        assert any(f["kind"] == "refused" for f in g["failures"]), g
        shown = router.ctl("show", "stats")
        assert f"ioam export {grpc_target}: traces 50 written 20 lost " in shown.stdout, shown.stdout

        # Collector back on the same port: the exporter reconnects (after its backoff) and delivers again.
        col2 = Collector(topo.rns, api_dir, port)
        try:
            sent = frames(5, 200)
            got = xfer(topo.s0, sent, [topo.d0], expect=len(sent), timeout=2, keep=with_marker)
            assert len(got[topo.d0.label]) == 5
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                late = col2.lines()
                if [t["hop_limit"] for t in late if t["hop_limit"] >= 199] == [200 + i - 1 for i in range(5)]:
                    break
                time.sleep(0.1)
            assert [t["hop_limit"] for t in late if t["hop_limit"] >= 199] == [200 + i - 1 for i in range(5)], late

            # Removed at run time: its final counters stay; the JSON export goes on.
            assert router.ctl("ioam", "export", "del", grpc_target).returncode == 0
            final = router.stop()
            router = None
            g = exporter(final, grpc_target)
            # Every trace handed over is written or lost, and what is written is what the collectors hold.
            assert g["submitted"] == 55 and g["written"] + g["lost"] == 55 and not g["running"], g
            assert g["lost"] > 0
            assert g["written"] == len(col.lines()) + len(col2.lines()), g
            assert exporter(final, f"json:{jpath}")["written"] == 55
            assert len(jpath.read_text().splitlines()) == 55
        finally:
            col2.stop()
    finally:
        if router is not None:
            router.kill()
        col.stop()


SILENT = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
held = []
print("ready", flush=True)
while True:
    c, _ = s.accept()
    held.append(c)  # accepted, never read nor answered
"""


def test_a_silent_collector_does_not_hold_the_exit(topo, tmp_path):
    """A collector that accepts the connection and never answers (its calls time out after 10 s, its batches are
    retried for 30 s): SIGTERM still ends `lwt6 run` within 2 s, and what the exporter held counts as lost under
    `stopped` (submitted = written + lost)."""
    port = free_port(topo.rns)
    script = tmp_path / "silent.py"
    script.write_text(SILENT)
    silent = subprocess.Popen(["ip", "netns", "exec", topo.rns, sys.executable, str(script), str(port)],
                              stdout=subprocess.PIPE, text=True)
    router = None
    try:
        assert silent.stdout.readline().strip() == "ready"
        target = f"grpc:127.0.0.1:{port}"
        conf = "\n".join(LIVE_BASE + DOMAIN) + "\n"
        router = LiveRouter(topo.rns, conf, str(tmp_path), args=["--io", "packet", "--ioam-export", target],
                            label="exsilent")
        sent = frames(10, 10)
        got = xfer(topo.s0, sent, [topo.d0], expect=len(sent), timeout=2, keep=with_marker)
        assert len(got[topo.d0.label]) == 10, "forwarding stalled behind a silent collector"
        deadline = time.monotonic() + 5
        while exporter(router.stats(), target)["submitted"] < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        t0 = time.monotonic()
        final = router.stop()
        took = time.monotonic() - t0
        router = None
        assert took < 2.0, f"lwt6 run took {took:.2f} s to stop behind a silent collector"
        g = exporter(final, target)
        assert g["submitted"] == 10 and g["written"] == 0 and g["lost"] == 10, g
        assert any(f["kind"] == "stopped" for f in g["failures"]), g
    finally:
        if router is not None:
            router.kill()
        silent.kill()
        silent.wait()


# An OTLP/HTTP receiver decoding with the upstream OpenTelemetry protobuf definitions (the opentelemetry-proto
# package, generated from open-telemetry/opentelemetry-proto): one JSON line per span it received.
OTLP_RECEIVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)


def value(v):
    kind = v.WhichOneof("value")
    return v.bytes_value.hex() if kind == "bytes_value" else getattr(v, kind)


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    print(json.dumps({"path": self.path, "type": self.headers["Content-Type"],
                                      "trace": sp.trace_id.hex(), "parent": sp.parent_span_id.hex(),
                                      "name": sp.name,
                                      "attrs": {kv.key: value(kv.value) for kv in sp.attributes}}), flush=True)
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


s = HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("ready", flush=True)
s.serve_forever()
"""


def test_live_export_otlp(topo, tmp_path):
    """`lwt6 run --ioam-export otlp:http://...` to an OTLP/HTTP receiver that decodes with the upstream
    definitions: POST /v1/traces, protobuf; one trace per removed IOAM option, whose node span carries this
    router's node id and hop limit (RFC 9197 §4.4.2; the values the frames were built with)."""
    port = free_port(topo.rns)
    (tmp_path / "otlp_receiver.py").write_text(OTLP_RECEIVER)
    out = open(tmp_path / "otlp.jsonl", "w+")
    rec = subprocess.Popen(["ip", "netns", "exec", topo.rns, sys.executable, str(tmp_path / "otlp_receiver.py"),
                            str(port)], stdout=out, stderr=subprocess.PIPE, text=True)

    def spans():
        out.flush()
        return [json.loads(l) for l in (tmp_path / "otlp.jsonl").read_text().splitlines() if l.startswith("{")]

    router = None
    try:
        deadline = time.monotonic() + 10
        while "ready" not in (tmp_path / "otlp.jsonl").read_text():
            assert rec.poll() is None, rec.stderr.read()
            assert time.monotonic() < deadline, "the OTLP receiver did not start"
            time.sleep(0.05)
        target = f"otlp:http://127.0.0.1:{port}"
        conf = "\n".join(LIVE_BASE + DOMAIN) + "\n"
        router = LiveRouter(topo.rns, conf, str(tmp_path), args=["--io", "packet", "--ioam-export", target],
                            label="exotlp")
        sent = frames(20, 10)
        got = xfer(topo.s0, sent, [topo.d0], expect=len(sent), timeout=2, keep=with_marker)
        assert len(got[topo.d0.label]) == 20
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len({s["trace"] for s in spans()}) < 20:
            time.sleep(0.05)
        got_spans = spans()
        assert {(s["path"], s["type"]) for s in got_spans} == {("/v1/traces", "application/x-protobuf")}
        assert len({s["trace"] for s in got_spans}) == 20
        nodes = [s for s in got_spans if "ioam.node.id" in s["attrs"]]
        assert sorted((s["attrs"]["ioam.node.id"], s["attrs"]["ioam.node.hop_limit"]) for s in nodes) == \
            [(NODE_ID, 10 + i - 1) for i in range(20)]
        # Each node span hangs under its trace's root span.
        assert all(s["parent"] for s in nodes)
        final = router.stop()
        router = None
        (e,) = [e for e in final["ioam_export"] if e["target"].startswith(target)]
        assert e["written"] == 20 and e["lost"] == 0, final["ioam_export"]
    finally:
        if router is not None:
            router.kill()
        rec.terminate()
        rec.wait(timeout=10)
