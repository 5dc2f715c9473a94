"""`lwt6 run` as systemd runs it: the service notifications (sd_notify(3)) arrive on a socket named by
NOTIFY_SOCKET at the right moments, and the router runs as an unprivileged user with exactly the capabilities the
shipped unit grants (dist/systemd/lwt6@.service), failing with the missing capability named when one is absent."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from ktlive import LIVE_BASE, LiveTopo
from ktlwt6 import lwt6_bin
from ktnet import NetnsError, require_root

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOBODY = 65534


@pytest.fixture(scope="module")
def live():
    try:
        require_root()
        t = LiveTopo(tag="sdu")
    except NetnsError as e:
        pytest.fail(f"cannot build the live topology: {e}", pytrace=False)
    t.lwt6_mode()
    yield t
    t.destroy()


@pytest.fixture
def workdir():
    # Reachable by `nobody` (the unprivileged router writes its control socket here).
    d = tempfile.mkdtemp(prefix="lwt6-sd-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def unit_capabilities():
    """The capabilities the shipped instance unit grants (AmbientCapabilities=)."""
    with open(os.path.join(REPO, "dist", "systemd", "lwt6@.service")) as f:
        caps = [l.split("=", 1)[1].split() for l in f if l.startswith("AmbientCapabilities=")]
    assert len(caps) == 1, caps
    return caps[0]


class Notifications:
    """A datagram socket standing for systemd's notification socket (a path: abstract names are per network
    namespace, and lwt6 runs in another)."""

    def __init__(self, d):
        self.path = os.path.join(d, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o777)

    def next(self, timeout=10.0):
        """The next notification as {KEY: VALUE} (None on timeout)."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        return dict(l.split("=", 1) for l in data.decode().splitlines())

    def drain(self):
        """Forgets what the last router sent (its STOPPING=1)."""
        while self.next(timeout=0.05) is not None:
            pass

    def close(self):
        self.sock.close()


def ctl(sock, *words):
    return subprocess.run([str(lwt6_bin()), "ctl", "--control", sock] + list(words), capture_output=True, text=True,
                          timeout=10)


def monotonic_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def start(live, d, conf_lines, args=(), prefix=(), env_notify=None, binary=None):
    conf = os.path.join(d, "r.conf")
    with open(conf, "w") as f:
        f.write("\n".join(conf_lines) + "\n")
    os.chmod(conf, 0o644)
    sock = os.path.join(d, "run", "r.sock")
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    if env_notify:
        env["NOTIFY_SOCKET"] = env_notify
    argv = ["ip", "netns", "exec", live.rns] + list(prefix) + [binary or str(lwt6_bin()), "run", "-c", conf,
                                                               "--control", sock, "-j"] + list(args)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    return p, conf, sock


def finish(p, sig=signal.SIGTERM):
    if p.poll() is None:
        p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return out, err


def test_notifications_ready_reload_status_stopping(live, workdir):
    n = Notifications(workdir)
    p, conf, sock = start(live, workdir, LIVE_BASE, ["--io", "packet"], env_notify=n.path)
    try:
        first = n.next()
        assert first is not None, f"no notification within 10 s (exit {p.poll()}): {p.stderr.read() if p.poll() is not None else ''}"
        assert first.get("READY") == "1", first
        # READY=1 means the control socket answers now, not some time later.
        r = ctl(sock, "show", "stats", "-j")
        assert r.returncode == 0, r.stderr
        routes = json.loads(ctl(sock, "show", "routes", "-j").stdout)
        status = first["STATUS"]
        assert status.startswith("forwarding on r0, r1 (af_packet); "), status
        assert f"; {len(routes)} route{'' if len(routes) == 1 else 's'}; 1 worker" in status, (status, routes)

        # SIGHUP with a valid file: RELOADING=1 stamped with CLOCK_MONOTONIC in microseconds, then READY=1.
        with open(conf, "a") as f:
            f.write("-6 route add fc01::/16 via fd00:2::2 dev r1\n")
        before = monotonic_us()
        p.send_signal(signal.SIGHUP)
        m = n.next()
        after = monotonic_us()
        assert m is not None and m.get("RELOADING") == "1", m
        assert before <= int(m["MONOTONIC_USEC"]) <= after, (before, m, after)
        m = n.next()
        assert m is not None and m.get("READY") == "1", m
        routes = json.loads(ctl(sock, "show", "routes", "-j").stdout)
        assert f"; {len(routes)} routes;" in m["STATUS"] and "refused" not in m["STATUS"], (m, len(routes))

        # SIGHUP with an invalid file: still RELOADING=1 then READY=1 (the running configuration serves), and the
        # status says the reload was refused.
        with open(conf, "a") as f:
            f.write("route add bogus\n")
        p.send_signal(signal.SIGHUP)
        m = n.next()
        assert m is not None and m.get("RELOADING") == "1", m
        m = n.next()
        assert m is not None and m.get("READY") == "1" and "reload refused" in m["STATUS"], m

        # A route added over the control socket: STATUS= follows the table (within its 2 s refresh).
        n_routes = len(json.loads(ctl(sock, "show", "routes", "-j").stdout))
        r = ctl(sock, "route", "add", "fc02::/16", "via", "fd00:2::2", "dev", "r1")
        assert r.returncode == 0, r.stderr
        m = n.next(timeout=5)
        assert m is not None and set(m) == {"STATUS"}, m
        assert f"; {n_routes + 1} routes;" in m["STATUS"], (m, n_routes)

        p.send_signal(signal.SIGTERM)
        m = n.next()
        assert m is not None and m.get("STOPPING") == "1", m
        out, err = finish(p)
        assert p.returncode == 0, err
        assert n.next(timeout=0.2) is None, "a notification after STOPPING=1"
    finally:
        finish(p, signal.SIGKILL)
        n.close()


def test_no_notification_socket_no_notifications(live, workdir):
    """Without NOTIFY_SOCKET nothing is sent (and nothing fails); with an unusable one the router says so once and
    serves."""
    p, conf, sock = start(live, workdir, LIVE_BASE, ["--io", "packet"], env_notify="not-absolute")
    try:
        deadline = time.monotonic() + 10
        while ctl(sock, "show", "stats").returncode != 0:
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() is not None else ""
            time.sleep(0.05)
    finally:
        out, err = finish(p)
    assert p.returncode == 0, err
    assert err.count("NOTIFY_SOCKET=not-absolute") == 1, err


def run_as_nobody(live, workdir, caps, args, binary, n):
    capstr = ",".join("+" + c.lower().removeprefix("cap_") for c in caps) if caps else ""
    drop = "-all" + ("," + capstr if capstr else "")
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", f"--inh-caps={drop}",
              f"--ambient-caps={drop}", f"--bounding-set={drop}"]
    return start(live, workdir, LIVE_BASE, args, prefix=prefix, env_notify=n.path, binary=binary)


def test_runs_unprivileged_with_exactly_the_units_capabilities(live, workdir):
    caps = unit_capabilities()
    assert "CAP_SYS_ADMIN" not in caps, caps
    # A copy of the binary any user may run (the build tree may be in a private directory).
    binary = os.path.join(workdir, "lwt6")
    shutil.copy(lwt6_bin(), binary)
    os.chmod(binary, 0o755)
    rundir = os.path.join(workdir, "run")
    os.mkdir(rundir)
    os.chown(rundir, NOBODY, NOBODY)
    n = Notifications(workdir)
    try:
        # The full set: AF_XDP (the XDP program attached) and --kernel-routes, as user nobody.
        p, conf, sock = run_as_nobody(live, workdir, caps, ["--io", "xdp", "--kernel-routes"], binary, n)
        try:
            m = n.next()
            assert m is not None and m.get("READY") == "1", (m, finish(p))
            st = os.stat(sock)
            assert st.st_uid == NOBODY, "the control socket is not the unprivileged user's"
            status = open(f"/proc/{pid_of(p)}/status").read()
            assert re.search(rf"^Uid:\s+{NOBODY}\s+{NOBODY}\s+{NOBODY}\s+{NOBODY}$", status, re.M), status
            assert "(af_xdp)" in m["STATUS"], m
            # It forwards: a ping from the sender to the receiver goes through lwt6.
            ping = subprocess.run(["ip", "netns", "exec", live.topo.name(live.s), "ping", "-6", "-c", "2", "-i",
                                   "0.2", "-W", "2", "fd00:2::2"], capture_output=True, text=True, timeout=15)
            assert ping.returncode == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
        finally:
            out, err = finish(p)
        assert p.returncode == 0, err
        assert json.loads(out)["io"] == "af_xdp", out
        n.drain()

        # Each capability taken away: refused at once, exit status 4, the missing one named.
        for c in caps:
            rest = [x for x in caps if x != c]
            p, _, _ = run_as_nobody(live, workdir, rest, ["--io", "xdp", "--kernel-routes"], binary, n)
            out, err = p.communicate(timeout=10)
            assert p.returncode == 4 and f"needs the capability {c} (" in err, (c, p.returncode, err)

        # AF_PACKET needs CAP_NET_RAW alone.
        p, _, sock = run_as_nobody(live, workdir, ["CAP_NET_RAW"], ["--io", "packet", "--kernel-routes"], binary, n)
        try:
            m = n.next()
            assert m is not None and m.get("READY") == "1", (m, finish(p))
        finally:
            out, err = finish(p)
        assert p.returncode == 0, err
        n.drain()
        # --io auto without the AF_XDP ones: AF_PACKET, the missing capabilities said.
        p, _, sock = run_as_nobody(live, workdir, ["CAP_NET_RAW"], ["--io", "auto"], binary, n)
        try:
            m = n.next()
            assert m is not None and m.get("READY") == "1", (m, finish(p))
        finally:
            out, err = finish(p)
        assert p.returncode == 0 and json.loads(out)["io"] == "af_packet", err
        assert "AF_XDP not used (lacking CAP_NET_ADMIN" in err and "CAP_BPF" in err and "CAP_IPC_LOCK" in err, err
    finally:
        n.close()


def pid_of(p):
    """The pid of lwt6 under `ip netns exec ... setpriv`, which both exec in place."""
    return p.pid


def test_log_lines_journald_priorities_or_time_stamps(live, workdir):
    """Standard error a file: with JOURNAL_STREAM naming that file's device and inode (as systemd sets it for a
    service whose stderr is the journal), lines carry syslog priorities and no time; naming another inode, they
    carry a UTC time stamp and the level word; --log-level warn leaves the info lines out."""

    def run_with(journal, args=()):
        err_path = os.path.join(workdir, "stderr")
        with open(err_path, "w") as err:
            st = os.fstat(err.fileno())
            conf = os.path.join(workdir, "r.conf")
            with open(conf, "w") as f:
                f.write("\n".join(LIVE_BASE) + "\n")
            sock = os.path.join(workdir, "j.sock")
            env = dict(os.environ)
            env.pop("NOTIFY_SOCKET", None)
            env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino if journal else st.st_ino + 1}"
            p = subprocess.Popen(["ip", "netns", "exec", live.rns, str(lwt6_bin()), "run", "-c", conf, "--control",
                                  sock, "--io", "auto", "--workers", "2"] + list(args),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
            deadline = time.monotonic() + 10
            while ctl(sock, "show", "stats").returncode != 0:
                assert p.poll() is None and time.monotonic() < deadline, open(err_path).read()
                time.sleep(0.05)
            finish(p)
        assert p.returncode == 0, open(err_path).read()
        return open(err_path).read().splitlines()

    # --workers 2 on one-queue veths: AF_XDP is not used (a warning), then "running on" (info).
    lines = run_with(journal=True)
    assert any(l.startswith("<4>lwt6: AF_XDP not used (") for l in lines), lines
    assert any(l.startswith("<6>lwt6: running on r0, r1 (af_packet, 2 workers)") for l in lines), lines
    assert all(re.match(r"<[0-7]>lwt6: ", l) for l in lines), lines

    lines = run_with(journal=False)
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    assert any(re.match(stamp + r" WARN  lwt6: AF_XDP not used \(", l) for l in lines), lines
    assert any(re.match(stamp + r" INFO  lwt6: running on r0, r1", l) for l in lines), lines
    # The time stamp is now, in UTC (within a minute: the router ran for under 10 s).
    t = time.strptime(re.match(stamp, lines[-1]).group(0)[:19], "%Y-%m-%dT%H:%M:%S")
    assert abs(time.mktime(t) - time.mktime(time.gmtime())) < 60, lines

    lines = run_with(journal=True, args=["--log-level", "warn"])
    assert any(l.startswith("<4>lwt6: AF_XDP not used") for l in lines), lines
    assert not any("running on" in l for l in lines), lines


def test_log_lines_lost_make_the_run_fail(live, workdir):
    """Standard error /dev/full: the log lines cannot be written, and nothing else could say so; the run exits 1."""
    conf = os.path.join(workdir, "r.conf")
    with open(conf, "w") as f:
        f.write("\n".join(LIVE_BASE) + "\n")
    sock = os.path.join(workdir, "f.sock")
    with open("/dev/full", "w") as full:
        p = subprocess.Popen(["ip", "netns", "exec", live.rns, str(lwt6_bin()), "run", "-c", conf, "--control", sock,
                              "--io", "packet"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=full,
                             text=True)
    deadline = time.monotonic() + 10
    while ctl(sock, "show", "stats").returncode != 0:
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    finish(p)
    assert p.returncode == 1, p.returncode


def test_exit_status_4_only_when_trying_again_cannot_help(live, workdir):
    """The units' RestartPreventExitStatus=4: an invalid or missing configuration file exits 4 (not restarted); an
    interface that is not there (yet) exits 1 (restarted, within StartLimitBurst=)."""
    conf = os.path.join(workdir, "bad.conf")
    sock = os.path.join(workdir, "x.sock")

    def run(lines, path=conf):
        if lines is not None:
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
        return subprocess.run(["ip", "netns", "exec", live.rns, str(lwt6_bin()), "run", "-c", path, "--control", sock,
                               "--io", "packet"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)

    r = run(["link add r0", "route add bogus"])
    assert r.returncode == 4 and "line 2" in r.stderr, (r.returncode, r.stderr)
    r = run(None, path=os.path.join(workdir, "absent.conf"))
    assert r.returncode == 4 and "absent.conf" in r.stderr, (r.returncode, r.stderr)
    r = run(["link add nosuch0"])
    assert r.returncode == 1 and "'nosuch0'" in r.stderr, (r.returncode, r.stderr)


def unit_values(key):
    """The values of every `KEY=` line of the shipped instance unit, in order."""
    with open(os.path.join(REPO, "dist", "systemd", "lwt6@.service")) as f:
        return [l.split("=", 1)[1].strip() for l in f if l.startswith(key + "=")]


def syscall_set(spec):
    """The system calls `systemd-analyze syscall-filter` lists for a filter's words (@groups expanded)."""
    names = set()
    for word in spec.split():
        if not word.startswith("@"):
            names.add(word)
            continue
        out = subprocess.run(["systemd-analyze", "syscall-filter", word], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines()[1:]:
            line = line.strip()
            if line and not line.startswith("#"):
                names |= syscall_set(line) if line.startswith("@") else {line}
    return names


def test_system_calls_and_address_families_within_the_units_filters(live, workdir):
    """Everything `lwt6 run --io xdp --kernel-routes` calls through a start, a control request, a reload and a stop
    (strace -f) is in the unit's SystemCallFilter=, and every socket it opens is of a family in its
    RestrictAddressFamilies=: the sandbox would not kill or refuse it."""
    filters = unit_values("SystemCallFilter")
    assert len(filters) == 1 and not filters[0].startswith("~"), filters
    allowed = syscall_set(filters[0])
    families = set(unit_values("RestrictAddressFamilies")[0].split())
    trace = os.path.join(workdir, "strace.out")
    p, conf, sock = start(live, workdir, LIVE_BASE, ["--io", "xdp", "--kernel-routes"],
                          prefix=["strace", "-f", "-qq", "-o", trace])
    try:
        deadline = time.monotonic() + 20
        while ctl(sock, "show", "stats").returncode != 0:
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() is not None else ""
            time.sleep(0.05)
        # strace's traced child is lwt6.
        children = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
        assert len(children) == 1, children
        lwt6_pid = int(children[0])
        os.kill(lwt6_pid, signal.SIGHUP)
        time.sleep(0.3)
        os.kill(lwt6_pid, signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    finally:
        finish(p, signal.SIGKILL)
    assert p.returncode == 0, err
    text = open(trace).read()
    called = set(re.findall(r"^\d+\s+([a-z_0-9]+)\(", text, re.M))
    assert "bpf" in called and "socket" in called, sorted(called)
    assert called - allowed == set(), f"not in SystemCallFilter={filters[0]}: {sorted(called - allowed)}"
    opened = set(re.findall(r"socket\((AF_[A-Z0-9]+),", text))
    assert "AF_XDP" in opened and "AF_NETLINK" in opened, opened
    assert opened <= families, f"not in RestrictAddressFamilies=: {sorted(opened - families)}"
