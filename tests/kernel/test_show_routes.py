"""`lwt6 show routes` against the kernel's `ip route show table all` (issue 11): one description (ktconf.render)
configures a kernel namespace and lwt6; the kernel's routes, as iproute2 prints them, must be what lwt6 prints.

JSON (`-j -s`, IPv6 and IPv4): for each kernel route, lwt6's object restricted to the keys the kernel has equals
the kernel's, and its keys (but lwt6's own `"lwt6"`) are the kernel's keys in the kernel's order. Text (`-s`):
the same lines, with lwt6's `# effective mtu` comment removed and trailing blanks ignored.

Routes are matched by (table, dst, dev, metric) and must come in the kernel's order (its FIB walk order: nested and
same-prefix routes below check it; lwt6 prints IPv6 then IPv4 per table, so each family is compared alone). Kernel
routes lwt6 does not model are left out by one rule (`kernel_only`): the `local` table (local,
broadcast and multicast entries the kernel derives from addresses) and the `fe80::/64` prefix the kernel adds to
every IPv6 interface. Nothing else may differ: a route either side has alone fails the test.
"""
import json
import subprocess

import pytest

from ktconf import KernelRouter, render
from ktlwt6 import lwt6_bin
from ktnet import Topo, run
from ktpkt import MAC_R0, MAC_R1
from kttopo import RTR_BASE

P = "-6 route add"
L = "encap seg6local action"
# Every seg6 mode (+ hmac), every seg6local action and flavour this kernel and iproute2 6.1 accept (End.DT4,
# End.DT46 and End.DT6 with vrftable need a VRF device, which this machine cannot create; End.B6.Encaps.Red is
# unknown to iproute2 6.1), with `count`; plain, gateway, metric, mtu, IPv4 and table-N routes.
EXTRA = [
    "sr hmac set 255 sha256 secret s3cr3t",
    "sr hmac set 7 sha1 secret other",
    f"{P} fd00:90::/64 encap seg6 mode encap segs fc00::a,fc00::b dev r1",
    f"{P} fd00:91::/64 encap seg6 mode encap segs fc00::a,fc00::b hmac 255 dev r1",
    f"{P} fd00:92::/64 encap seg6 mode inline segs fc00::a hmac 7 dev r1",
    f"{P} fd00:93::/64 encap seg6 mode inline segs fc00::a,fc00::b dev r1",
    f"{P} fd00:94::/64 encap seg6 mode encap.red segs fc00::a,fc00::b,fc00::c dev r1",
    f"{P} fd00:95::/64 encap seg6 mode l2encap segs fc00::a dev r1",
    f"{P} fd00:96::/64 encap seg6 mode l2encap.red segs fc00::a,fc00::c dev r1",
    f"{P} fd00:97::/64 via fd00:2::2 encap seg6 mode encap segs fc00::a dev r1 mtu 1400",
    "-4 route add 10.70.0.0/16 encap seg6 mode encap segs fc00::a dev r1",
    f"{P} fc00:1::e/128 {L} End count dev r0",
    f"{P} fc00:1::f/128 {L} End flavors psp,next-csid dev r0",
    f"{P} fc00:1::10/128 {L} End.X nh6 fd00:2::2 count dev r1",
    f"{P} fc00:1::11/128 {L} End.T table 100 dev r0",
    f"{P} fc00:1::12/128 {L} End.DX2 oif r1 dev r0",
    f"{P} fc00:1::13/128 {L} End.DX6 nh6 fd00:2::2 count dev r1",
    f"{P} fc00:1::14/128 {L} End.DX4 nh4 10.2.0.2 dev r1",
    f"{P} fc00:1::15/128 {L} End.DT6 table 100 count dev r0",
    f"{P} fc00:1::b6/128 {L} End.B6 srh segs fc00::b,fc00::c dev r1",
    f"{P} fc00:1::b7/128 {L} End.B6.Encaps srh segs fc00::b,fc00::c count dev r1",
    f"{P} fc00:1::b8/128 {L} End.B6.Encaps srh segs fc00::b hmac 255 dev r1",
    f"{P} fc00:2::/48 {L} End flavors next-csid lblen 32 nflen 16 count dev r0",
    f"{P} fc00:3::/48 {L} End.X nh6 fd00:2::2 flavors next-csid lblen 16 nflen 16 dev r1",
    f"{P} fd00:5::/64 via fd00:2::2 dev r1 metric 2048 mtu 1300",
    f"{P} fd00:6::/64 table 100 via fd00:2::2 dev r1",
    f"{P} default via fd00:1::1 dev r0",
    "-4 route add 10.9.0.0/16 via 10.2.0.2 dev r1",
    "-4 route add 10.8.0.0/16 table 100 via 10.2.0.2 dev r1 mtu 1400",
    "-4 route add 10.7.0.0/16 dev r1 metric 5",
    # nested and same-prefix routes: the order of the kernel's dump
    f"{P} fd00::/16 via fd00:2::2 dev r1",
    f"{P} fd00:5::/64 via fd00:1::1 dev r0 metric 100",
    f"{P} fc00:1::/64 via fd00:2::2 dev r1",
    "-4 route add default via 10.2.0.2 dev r1",
    "-4 route add 10.0.0.0/8 via 10.2.0.2 dev r1",
    "-4 route add 10.2.0.128/25 via 10.2.0.2 dev r1",
    # routes that drop (issue 24): IPv6 keeps neither dev nor via (`dev lo`), IPv4 takes neither
    f"{P} blackhole fd00:a0::/64",
    f"{P} unreachable fd00:a1::/64 metric 5",
    f"{P} prohibit fd00:a2::/64 table 100",
    f"{P} blackhole fd00:a3::/64 via fd00:2::2 dev r1",
    f"{P} unreachable fd00:a4::/64 mtu 1400",
    f"{P} unreachable fd00:5::/64 metric 4096",
    "-6 route add unreachable default table 200",
    "-4 route add blackhole 10.60.0.0/16",
    "-4 route add unreachable 10.61.0.0/16 metric 7",
    "-4 route add prohibit 10.62.0.0/16 table 100",
    "-4 route add blackhole default table 200",
]
STATEMENTS = RTR_BASE + EXTRA
REJECT = ("blackhole", "unreachable", "prohibit")


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """A kernel namespace with r0 and r1 (one veth pair) carrying STATEMENTS, and lwt6's config of the same."""
    topo = Topo(["show"])
    try:
        topo.veth("show", "r0", MAC_R0, "show", "r1", MAC_R1)
        KernelRouter(topo, "show").apply(STATEMENTS, permanent=True)
        conf = tmp_path_factory.mktemp("show") / "router.conf"
        conf.write_text(render(STATEMENTS)[1])
        yield topo.name("show"), conf
    finally:
        topo.destroy()


def kernel_only(r):
    """Kernel routes lwt6 does not model: the local table, route types other than the reject ones, and the
    link-local prefix of every interface."""
    return r.get("table") == "local" or r.get("type", "blackhole") not in REJECT or (r["dst"] == "fe80::/64" and r.get("protocol") == "kernel")


def key(r):
    return (r.get("table", "main"), r["dst"], r.get("dev"), r.get("metric"))


def kernel_json(ns, fam):
    out = run(["ip", "-n", ns, "-j", "-s", fam, "route", "show", "table", "all"]).stdout
    return [r for r in json.loads(out) if not kernel_only(r)]


def lwt6_show(conf, *args):
    r = subprocess.run([str(lwt6_bin()), "show", "routes", "-c", str(conf), "-s", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def is_family(r, fam):
    """iproute2 gives every IPv6 route, and no IPv4 route, a `pref`."""
    return ("pref" in r) == (fam == "-6")


def lwt6_json(conf, fam):
    return [r for r in json.loads(lwt6_show(conf, "-j")) if is_family(r, fam)]


def compare_json(kernel, mine):
    """Problems, one line each: routes one side has alone, keys or values that differ, keys out of order."""
    problems = []
    k = {key(r): r for r in kernel}
    m = {key(r): r for r in mine}
    assert len(k) == len(kernel) and len(m) == len(mine), "two routes with the same (table, dst, dev, metric)"
    for x in sorted(set(k) - set(m)):
        problems.append(f"only the kernel has {json.dumps(k[x])}")
    for x in sorted(set(m) - set(k)):
        problems.append(f"only lwt6 has {json.dumps(m[x])}")
    for x in sorted(set(k) & set(m)):
        kr, mr = k[x], m[x]
        keys = [n for n in mr if n != "lwt6"]
        restricted = {n: mr.get(n) for n in kr}
        if restricted != kr or keys != list(kr):
            problems.append(f"{x}:\n  kernel {json.dumps(kr)}\n  lwt6   {json.dumps(mr)}")
    if not problems and [key(r) for r in kernel] != [key(r) for r in mine]:
        problems.append(f"order differs:\n  kernel {[key(r) for r in kernel]}\n  lwt6   {[key(r) for r in mine]}")
    return problems


@pytest.mark.parametrize("fam", ["-6", "-4"])
def test_json_as_ip_j(shown, fam):
    ns, conf = shown
    kernel = kernel_json(ns, fam)
    assert len(kernel) > 5, kernel
    problems = compare_json(kernel, lwt6_json(conf, fam))
    assert not problems, "\n".join(problems)


def test_json_lwt6_key_holds_our_fields(shown):
    _, conf = shown
    for r in json.loads(lwt6_show(conf, "-j")):
        assert set(r["lwt6"]) <= {"effective_mtu", "linux_effective_mtu", "line"}, r
        assert "effective_mtu" in r["lwt6"] and "linux_effective_mtu" in r["lwt6"], r


def test_without_s_no_counters(shown):
    """Without `-s` iproute2 shows no `stats64` for `count` routes; neither does lwt6."""
    ns, conf = shown
    kernel = json.loads(run(["ip", "-n", ns, "-j", "-6", "route", "show", "table", "all"]).stdout)
    assert not any("stats64" in r for r in kernel)
    r = subprocess.run([str(lwt6_bin()), "show", "routes", "-c", str(conf), "-j"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "stats64" not in r.stdout, r.stdout


def text_lines(text):
    return [ln.split("  #")[0].rstrip() for ln in text.splitlines() if ln.strip()]


def kernel_text_only(line):
    t = line.split()
    return t[0] in ("local", "broadcast", "multicast", "anycast") or "table local" in line or (
        t[0] == "fe80::/64" and "proto kernel" in line)


@pytest.mark.parametrize("fam", ["-6", "-4"])
def test_text_as_ip_route_show(shown, fam):
    ns, conf = shown
    kernel = [ln for ln in text_lines(run(["ip", "-n", ns, "-s", fam, "route", "show", "table", "all"]).stdout)
              if not kernel_text_only(ln)]
    kernel_json_v = kernel_json(ns, fam)
    assert len(kernel) == len(kernel_json_v)
    # lwt6 prints both families, in the same order in both forms: the JSON form tells the lines apart.
    mine_all = text_lines(lwt6_show(conf))
    objs = json.loads(lwt6_show(conf, "-j"))
    assert len(mine_all) == len(objs)
    mine = [ln for ln, r in zip(mine_all, objs) if is_family(r, fam)]
    assert mine == kernel, "\n".join(
        [f"only the kernel: {ln}" for ln in sorted(set(kernel) - set(mine))]
        + [f"only lwt6:       {ln}" for ln in sorted(set(mine) - set(kernel))])
