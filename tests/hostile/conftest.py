"""Fixtures of the hostile catalogue: the namespace topology of tests/kernel (one router, one sender, one
receiver), shared with the kernel differential tests' helpers."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "kernel"))

from ktlwt6 import lwt6_bin                 # noqa: E402
from ktnet import NetnsError, require_root  # noqa: E402
from kttopo import Topo3                    # noqa: E402


@pytest.fixture(scope="session")
def topo3(request):
    """sndr -- rtr (kernel router) -- rcvr; the router carries kttopo.RTR_BASE. Fails (never skips) without root."""
    try:
        require_root()
        t = Topo3()
    except NetnsError as e:
        pytest.fail(f"cannot build the Topo3 namespace topology: {e}", pytrace=False)
    request.addfinalizer(t.destroy)
    return t


@pytest.fixture(scope="session")
def lwt6_path():
    b = lwt6_bin()
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.fail(f"lwt6 binary not found at {b}: build it (`cargo build --release`) or set LWT6_BIN",
                    pytrace=False)
    return str(b)
