"""Self-checks of the harness: the tshark checker is not vacuous, render() is faithful."""
from ktconf import render
from ktlwt6 import tshark_problems
from ktpcap import write_pcap
from ktpkt import udp6, rpl_srh, udp_over_rh


def test_tshark_checker_flags_malformed_and_passes_clean(tmp_path):
    good = udp6("fd00:99::1", size=20)
    # SRH whose LastEntry (5) points past the header: wireshark reports a malformed packet
    bad = bytearray(good)
    srh = bytes([17, 2, 4, 0, 5, 0, 0, 0]) + bytes(16)
    bad = bytes(bad[:14 + 6]) + bytes([43]) + bytes(bad[14 + 7:14 + 40]) + srh + bytes(bad[14 + 40:])
    bad = bad[:18] + (int.from_bytes(bad[18:20], "big") + len(srh)).to_bytes(2, "big") + bad[20:]
    rpl = udp_over_rh("fd00:2::1", rpl_srh(["fd00:2::5", "fd00:2::2"], 2, "fd00:2::1"), "fd00:2::2")
    write_pcap(tmp_path / "good.pcap", [good, rpl])
    write_pcap(tmp_path / "bad.pcap", [good, bad])
    assert tshark_problems(tmp_path / "good.pcap") == []
    probs = tshark_problems(tmp_path / "bad.pcap")
    assert [n for n, _ in probs] == [2], probs


def test_render_kernel_and_lwt6_from_one_description():
    st = ["ip link add r0 address 02:00:00:00:01:02 mtu 1500", "addr add fd00:1::2/64 dev r0",
          "sr hmac set 42 sha256 secret mysecret", "sysctl net.ipv6.seg6_flowlabel=0",
          "-6 route add fd00:99::/64 encap seg6 mode encap segs fc00::a hmac 42 dev r1"]
    cmds, text = render(st)
    assert text == "".join(s + "\n" for s in st)
    assert cmds[0].argv == ["link", "set", "dev", "r0", "address", "02:00:00:00:01:02", "mtu", "1500", "up"]
    assert cmds[1].argv == ["addr", "replace", "fd00:1::2/64", "dev", "r0", "nodad"]
    assert cmds[2].argv == ["sr", "hmac", "set", "42", "sha256"] and cmds[2].stdin == "mysecret\n"
    assert (cmds[3].kind, cmds[3].key, cmds[3].value) == ("sysctl", "net.ipv6.seg6_flowlabel", "0")
    assert cmds[4].argv == ["-6", "route", "replace", "fd00:99::/64", "encap", "seg6", "mode", "encap", "segs",
                            "fc00::a", "hmac", "42", "dev", "r1"]
    assert cmds[4].undo[0].argv == ["-6", "route", "del", "fd00:99::/64"]


def test_render_seg6local_tables_and_route_changes():
    st = ["-6 route add fc00:1::11/128 encap seg6local action End.T table 100 count dev r0",
          "-6 route add fc99::/16 table 100 via fd00:2::2 dev r1",
          "-6 route replace fc00:1::e/128 encap seg6local action End dev r0",
          "-6 route del fc00:1::e/128"]
    cmds, _ = render(st)
    # End.T's `table` is an argument of the action, not the route's table: the route lives in main
    assert cmds[0].undo[0].argv == ["-6", "route", "del", "fc00:1::11/128"]
    assert cmds[1].argv[:3] == ["-6", "route", "replace"]
    assert cmds[1].undo[0].argv == ["-6", "route", "del", "fc99::/16", "table", "100"]
    assert cmds[2].argv[:4] == ["-6", "route", "replace", "fc00:1::e/128"]
    assert cmds[3].argv == ["-6", "route", "del", "fc00:1::e/128"] and cmds[3].undo == []
