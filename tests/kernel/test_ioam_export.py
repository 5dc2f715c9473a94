"""IOAM export (docs/ioam.md): traces removed at a domain's egress, exported as JSON lines and to a real gRPC
server (Python grpcio, generated from the IOAM collector's proto written below) that checks every trace field by
field; an unreachable collector leaves forwarding alone and its losses are counted. No network namespace needed:
lwt6 runs over captures. The expected node values are the configuration's (RFC 9197 §4.4.2 field order)."""
import json
import socket
import subprocess
import sys
import threading
from concurrent import futures

import pytest

from ktpkt import ioam_frame, ioam_hbh

PROTO = """
syntax = "proto3";
package ioam_api;
import "google/protobuf/empty.proto";
message Opaque { uint32 SchemaId = 1; bytes Data = 2; }
message IOAMNode {
  uint32 HopLimit = 1; uint32 Id = 2; uint32 IngressId = 3; uint32 EgressId = 4;
  uint32 TimestampSecs = 5; uint32 TimestampFrac = 6; uint32 TransitDelay = 7; uint32 QueueDepth = 8;
  uint32 CsumComp = 9; uint32 BufferOccupancy = 10; uint32 IngressIdWide = 11; uint32 EgressIdWide = 12;
  uint64 IdWide = 13; bytes NamespaceData = 14; bytes NamespaceDataWide = 15; Opaque OSS = 16;
}
message IOAMTrace { uint32 NamespaceId = 1; fixed32 BitField = 2; repeated IOAMNode Nodes = 3; }
service IOAMService { rpc Report (stream IOAMTrace) returns (google.protobuf.Empty) {} }
"""

NODE_ID, NODE_ID_WIDE = 0x123456, 0x00AB_CDEF_0123_4567
IF_IN, IF_OUT, IF_IN_W, IF_OUT_W = 0x0A0A, 0x0B0B, 0x0A0A_0A0A, 0x0B0B_0B0B
NS_DATA, NS_WIDE = 0xDEADBEEF, 0xCAFE_C0DE_DEAD_BEEF
TTYPE = 0xF3E000          # bits 0-3, 6-10: hop limit/id, if ids, ts sec/frac, queue depth, csum, wide id, wide ifs, wide ns
TTYPE_SIMPLE = 0x840000   # bits 0 and 5
N_FRAMES = 40

CONF = f"""
link add r0 address 02:00:00:00:00:01
link add r1 address 02:00:00:00:00:02
addr add fd00:1::2/64 dev r0
addr add fd00:2::1/64 dev r1
neigh add fd00:1::1 lladdr 02:00:00:00:00:10 dev r0
neigh add fd00:2::2 lladdr 02:00:00:00:00:20 dev r1
sysctl net.ipv6.ioam6_id=0x{NODE_ID:x}
sysctl net.ipv6.ioam6_id_wide=0x{NODE_ID_WIDE:x}
sysctl net.ipv6.conf.r0.ioam6_enabled=1
sysctl net.ipv6.conf.r0.ioam6_id=0x{IF_IN:x}
sysctl net.ipv6.conf.r0.ioam6_id_wide=0x{IF_IN_W:x}
sysctl net.ipv6.conf.r1.ioam6_id=0x{IF_OUT:x}
sysctl net.ipv6.conf.r1.ioam6_id_wide=0x{IF_OUT_W:x}
ioam namespace add 123 data 0x{NS_DATA:x} wide 0x{NS_WIDE:x}
ioam namespace add 124
ioam domain add lab namespace 123,124 ingress r0 egress r0
"""


def frames():
    """Even frames: a trace of TTYPE in namespace 123 (room for 2 nodes); odd ones: TTYPE_SIMPLE in 124.
    Hop limits vary so that every exported trace is told apart."""
    out = []
    for i in range(N_FRAMES):
        if i % 2 == 0:
            hbh = ioam_hbh(123, TTYPE, 2 * 16)
        else:
            hbh = ioam_hbh(124, TTYPE_SIMPLE, 2)
        out.append(ioam_frame(hbh, hlim=10 + i, tag=i, dmac="02:00:00:00:00:01"))
    return out


def check_plain_output(res):
    """Every frame forwarded by r1, its Hop-by-Hop header gone (next header UDP)."""
    out = res.on("r1")
    assert len(out) == N_FRAMES, res.stats
    assert all(f[14 + 6] == 17 for f in out)
    assert res.stats["ioam"]["removed"] == N_FRAMES


def test_json_lines(lwt6, tmp_path):
    path = tmp_path / "traces.jsonl"
    res = lwt6.pcap(CONF, frames(), label="ioam-export-json", extra=["--ioam-export", f"json:{path}"])
    check_plain_output(res)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == N_FRAMES
    for i, t in enumerate(lines):
        assert t["event"] == "egress" and t["in_dev"] == "r0" and t["out_dev"] == "r1"
        assert t["flow"]["src"] == "fd00:1::1" and t["flow"]["dst"] == "fd00:2::2" and t["flow"]["proto"] == 17
        assert t["option_type"] == "prealloc_trace"
        (node,) = t["nodes"]
        assert node["hop_limit"] == 10 + i - 1 and node["node_id"] == NODE_ID
        if i % 2 == 0:
            assert t["namespace"] == 123 and t["trace_type"] == f"{TTYPE:#08x}"
            assert (node["ingress_id"], node["egress_id"]) == (IF_IN, IF_OUT)
            assert (node["ingress_wide"], node["egress_wide"]) == (IF_IN_W, IF_OUT_W)
            assert node["node_id_wide"] == NODE_ID_WIDE and node["ns_data_wide"] == NS_WIDE
            assert (node["ts_sec"], node["ts_frac"]) == (res_ts_secs(i), 0)
        else:
            assert t["namespace"] == 124 and node["ns_data"] == 0xFFFFFFFF


@pytest.fixture(scope="module")
def ioam_api(tmp_path_factory):
    """The collector's messages and service, generated from PROTO with grpc_tools."""
    d = tmp_path_factory.mktemp("ioam_api")
    (d / "ioam_api.proto").write_text(PROTO)
    r = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"--python_out={d}",
                        f"--grpc_python_out={d}", str(d / "ioam_api.proto")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    sys.path.insert(0, str(d))
    import ioam_api_pb2
    import ioam_api_pb2_grpc
    return ioam_api_pb2, ioam_api_pb2_grpc


def test_grpc_collector_receives_every_trace(lwt6, ioam_api):
    import grpc
    from google.protobuf import empty_pb2
    pb2, pb2_grpc = ioam_api
    got, calls = [], []

    class Collector(pb2_grpc.IOAMServiceServicer):
        def Report(self, request_iterator, context):
            calls.append(1)
            for t in request_iterator:
                got.append(t)
            return empty_pb2.Empty()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb2_grpc.add_IOAMServiceServicer_to_server(Collector(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        res = lwt6.pcap(CONF, frames(), label="ioam-export-grpc",
                        extra=["--ioam-export", f"grpc:127.0.0.1:{port}"])
    finally:
        server.stop(None)
    check_plain_output(res)
    assert res.stats["ioam"]["export_lost"] == 0
    assert res.stats["ioam"]["exported"] == N_FRAMES
    assert len(got) == N_FRAMES and calls
    for i, t in enumerate(got):
        (n,) = t.Nodes
        assert n.HopLimit == 10 + i - 1 and n.Id == NODE_ID
        if i % 2 == 0:
            assert (t.NamespaceId, t.BitField) == (123, TTYPE)
            assert (n.IngressId, n.EgressId, n.IngressIdWide, n.EgressIdWide) == (IF_IN, IF_OUT, IF_IN_W, IF_OUT_W)
            assert n.IdWide == NODE_ID_WIDE
            assert n.NamespaceDataWide == NS_WIDE.to_bytes(8, "big")
            assert n.TimestampSecs == res_ts_secs(i) and n.CsumComp == 0xFFFFFFFF
            assert n.QueueDepth == 0 and n.TransitDelay == 0 and not n.HasField("OSS")
        else:
            assert (t.NamespaceId, t.BitField) == (124, TTYPE_SIMPLE)
            assert n.NamespaceData == b"\xff\xff\xff\xff" and n.IngressId == 0


def res_ts_secs(i):
    """ktpcap.write_pcap stamps frame i at 1,700,000,000 + i seconds (and 0 microseconds)."""
    return 1_700_000_000 + i


def test_unreachable_collector_loses_traces_not_packets(lwt6):
    # A port nothing listens on: connections are refused at once.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    # Every trace lost: exit status 3 (docs/ioam.md, *Export*); the outputs are written all the same.
    res = lwt6.pcap(CONF, frames(), label="ioam-export-unreachable",
                    extra=["--ioam-export", f"grpc:127.0.0.1:{port}"], status=3)
    check_plain_output(res)
    assert res.stats["ioam"]["export_lost"] == N_FRAMES
    assert res.stats["ioam"]["exported"] == 0
