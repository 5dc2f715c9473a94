"""Fixtures for the lwt6-vs-Linux differential tests (see README.md)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from ktnet import NetnsError, require_root          # noqa: E402
from kttopo import Topo3, ChainTopo                   # noqa: E402
from ktlwt6 import Lwt6, TsharkQueue, lwt6_bin        # noqa: E402


def _build(cls, request):
    """Build a topology or FAIL (never skip) with the reason; always torn down."""
    try:
        require_root()
        t = cls()
    except NetnsError as e:
        pytest.fail(f"cannot build the {cls.__name__} namespace topology: {e}", pytrace=False)
    request.addfinalizer(t.destroy)
    return t


@pytest.fixture(scope="session")
def topo3(request):
    """sndr -- rtr (kernel router) -- rcvr; the router carries kttopo.RTR_BASE."""
    return _build(Topo3, request)


@pytest.fixture(scope="session")
def chain(request):
    """sndr -- k1 -- k2 -- k3 -- rcvr, kernel RPL nodes (rpl_seg_enabled)."""
    return _build(ChainTopo, request)


@pytest.fixture
def rtr(topo3):
    """The kernel router, with every case-specific statement reverted after the test."""
    yield topo3.rtr
    topo3.rtr.undo()


@pytest.fixture(scope="session")
def tshark_queue(tmp_path_factory):
    return TsharkQueue(tmp_path_factory.mktemp("tshark"))


@pytest.fixture(scope="module", autouse=True)
def tshark_check_module(tshark_queue):
    """After each module: every pcap lwt6 wrote is dissected by tshark; Error experts fail."""
    yield
    report = tshark_queue.check()
    if report:
        pytest.fail(report, pytrace=False)


@pytest.fixture(scope="session")
def lwt6(tmp_path_factory, tshark_queue):
    b = lwt6_bin()
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.fail(f"lwt6 binary not found at {b}: build it (`cargo build --release`) or set LWT6_BIN",
                    pytrace=False)
    return Lwt6(b, tmp_path_factory.mktemp("lwt6"), tshark_queue)
