"""seg6local lines the kernel refuses: lwt6 refuses them too, naming the line and the offending token
(`lwt6 check`). Lines lwt6 accepts as extensions (flavours Linux does not implement) are listed apart."""
import subprocess

import pytest

from kttopo import RTR_BASE
from ktconf import render
from ktlwt6 import lwt6_bin
from ktnet import run

P = "-6 route add fc00:1::e/128 encap seg6local action"
# (line, the token lwt6 must name)
REFUSED = [
    ("-6 route del fc00:1::99/128", "fc00:1::99/128"),
    (f"{P} End.X count dev r0", "End.X"),                          # nh6 missing
    (f"{P} End.DT4 table 100 dev r0", "table"),                    # End.DT4 needs vrftable
    (f"{P} End.DT6 dev r0", "End.DT6"),                            # table or vrftable missing
    (f"{P} End.BM dev r0", "End.BM"),                              # defined by Linux's uapi, not implemented
    (f"{P} End.Y dev r0", "End.Y"),
    (f"{P} End flavors next-csid lblen 12 dev r0", "12"),          # not a multiple of 8
    (f"{P} End.DX2 oif nosuch dev r0", "nosuch"),
    (f"{P} End.B6 dev r0", "End.B6"),                              # srh missing
    (f"{P} End.DX4 nh4 fd00::1 dev r0", "fd00::1"),
]
# Linux accepts an attribute the action does not take and drops it silently (`ip route show` omits it); lwt6
# refuses the line, naming the attribute (docs/linux-compat.md).
IGNORED_BY_LINUX = [
    (f"{P} End nh6 fd00:2::2 dev r0", "nh6"),
    (f"{P} End.DX6 nh6 fd00:2::2 flavors psp dev r0", "flavors"),
    (f"{P} End.DT6 table 100 nh4 10.2.0.2 dev r0", "nh4"),
]
# Linux 6.18 refuses these (EOPNOTSUPP: USP and PSP on End.X are not implemented); lwt6 implements them
# (tests/kernel/test_seg6local_nolinux.py).
EXTENSIONS = [f"{P} End flavors usp dev r0", f"{P} End.X nh6 fd00:2::2 flavors psp dev r1"]


def lwt6_check(tmp_path, line):
    conf = tmp_path / "router.conf"
    conf.write_text(render(RTR_BASE + [line])[1])
    return subprocess.run([str(lwt6_bin()), "check", "-c", str(conf)], capture_output=True, text=True, timeout=30)


def kernel_refuses(topo3, line):
    t = line.split()
    r = run(["ip", "-n", topo3.rtr.ns] + t, check=False)
    if r.returncode == 0 and t[1:3] == ["route", "add"]:
        run(["ip", "-n", topo3.rtr.ns, "-6", "route", "del", t[3]], check=False)
    return r.returncode != 0


@pytest.mark.parametrize("line,token", REFUSED, ids=[t for _, t in REFUSED])
def test_kernel_refuses(topo3, line, token):
    assert kernel_refuses(topo3, line), f"the kernel accepted `ip {line}`"


@pytest.mark.parametrize("line,token", REFUSED, ids=[t for _, t in REFUSED])
def test_lwt6_refuses_naming_line_and_token(tmp_path, line, token):
    r = lwt6_check(tmp_path, line)
    assert r.returncode != 0, f"lwt6 accepted {line!r}"
    n = len(RTR_BASE) + 1
    assert f"line {n}: '{token}'" in r.stderr, r.stderr


@pytest.mark.parametrize("line", EXTENSIONS)
def test_extensions_kernel_refuses_lwt6_accepts(topo3, tmp_path, line):
    assert kernel_refuses(topo3, line), f"the kernel now accepts `ip {line}`: compare it with lwt6"
    r = lwt6_check(tmp_path, line)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("line,token", IGNORED_BY_LINUX, ids=[t for _, t in IGNORED_BY_LINUX])
def test_attribute_linux_ignores_lwt6_refuses(topo3, tmp_path, line, token):
    ns = topo3.rtr.ns
    r = run(["ip", "-n", ns] + line.split(), check=False)
    try:
        assert r.returncode == 0, f"the kernel now refuses `ip {line}`: {r.stderr}"
        shown = run(["ip", "-n", ns, "-6", "route", "show", "fc00:1::e/128"]).stdout
        assert f" {token} " not in shown, f"the kernel kept {token!r}: {shown}"
    finally:
        run(["ip", "-n", ns, "-6", "route", "del", "fc00:1::e/128"], check=False)
    r = lwt6_check(tmp_path, line)
    assert r.returncode != 0 and f"line {len(RTR_BASE) + 1}: '{token}'" in r.stderr, r.stderr
